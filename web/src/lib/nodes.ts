// A cluster's nodes as the clusters and nodes views count and colour them. Pure functions.

export type NodeState = "up" | "down" | "silent";

/** Slurm states that mean the node cannot run jobs. */
const DOWN_STATES = ["DOWN", "DRAIN", "DRAINED", "DRAINING", "FAIL", "FAILING", "NOT_RESPONDING", "POWERED_DOWN",
  "INVALID", "UNKNOWN"];

/** How long without a sample before a node counts as silent. */
export const SILENT_AFTER_S = 15 * 60;

/** A node's state: down when its Slurm states say so; silent when its last sample is more than
 * SILENT_AFTER_S older than the cluster's latest (so a cluster whose data is old still tells its
 * nodes apart); else up. */
export function nodeState(states: string[] | null | undefined, lastSeen: string | null | undefined,
  clusterLast: string | null | undefined): NodeState {
  const s = (states ?? []).map((x) => x.toUpperCase().replace(/[*~#!%$@^-]+$/, ""));
  if (s.some((x) => DOWN_STATES.includes(x))) return "down";
  if (!lastSeen) return "silent";
  const ref = clusterLast ? Date.parse(clusterLast) : Date.parse(lastSeen);
  return ref - Date.parse(lastSeen) > SILENT_AFTER_S * 1000 ? "silent" : "up";
}

export function countStates(list: NodeState[]): Record<NodeState, number> {
  const c = { up: 0, down: 0, silent: 0 };
  for (const s of list) c[s]++;
  return c;
}

/** A heatmap colour for a load of 0..100 percent (null: no data): from a pale blue through
 * yellow to red, readable on light and dark backgrounds. */
export function heatColor(pct: number | null | undefined): string {
  if (pct === null || pct === undefined || !Number.isFinite(pct)) return "rgba(128,128,128,0.15)";
  // whole percents are all the eye tells apart: 101 colours, each made once
  const whole = Math.round(Math.min(100, Math.max(0, pct)));
  return (HEAT[whole] ??= heatOf(whole));
}

const HEAT: string[] = [];

function heatOf(pct: number): string {
  const v = pct / 100;
  const stops = [[70, 130, 180], [250, 210, 60], [215, 40, 40]];
  const i = v < 0.5 ? 0 : 1;
  const f = v < 0.5 ? v * 2 : (v - 0.5) * 2;
  const c = stops[i].map((a, k) => Math.round(a + (stops[i + 1][k] - a) * f));
  return `rgb(${c[0]},${c[1]},${c[2]})`;
}

/** Memory in use as a percentage of installed memory (null when either is unknown). */
export function memPct(usedKb: number | null | undefined, totalKb: number | null | undefined): number | null {
  if (!usedKb && usedKb !== 0) return null;
  if (!totalKb) return null;
  return (100 * usedKb) / totalKb;
}

export interface NamedNode {
  node: string;
  last_seen?: string | null;
  states?: string[] | null;
  partitions?: string[] | null;
}

/** One row per machine. Slurm names a node by its short name ("c1-10", from the cluster envelope)
 * while Sonar's samples may carry the full one ("c1-10.fox"): the API lists both. A node whose
 * first label is another node's whole name is that node: the two are merged into the one that has
 * samples (else the longer name), which takes the other's Slurm states and partitions when it has
 * none of its own and keeps the other's name in `aliases`. Two names that both have samples stay
 * two rows. */
export function mergeAliases<T extends NamedNode>(nodes: T[]): (T & { aliases: string[] })[] {
  const byName = new Map(nodes.map((n) => [n.node, n]));
  const gone = new Set<string>();
  const merged = new Map<string, T & { aliases: string[] }>();
  for (const n of nodes) {
    const dot = n.node.indexOf(".");
    const short = dot > 0 ? byName.get(n.node.slice(0, dot)) : undefined;
    // both sampled: two series in the store, both shown (merging would hide one's samples)
    if (!short || gone.has(short.node) || (n.last_seen && short.last_seen)) continue;
    const [keep, drop] = !n.last_seen && short.last_seen ? [short, n] : [n, short];
    gone.add(drop.node);
    const last = [keep.last_seen, drop.last_seen].filter(Boolean).sort().pop() ?? null;
    merged.set(keep.node, {
      ...keep,
      last_seen: last,
      states: keep.states?.length ? keep.states : drop.states ?? [],
      partitions: keep.partitions?.length ? keep.partitions : drop.partitions ?? [],
      aliases: [drop.node],
    });
  }
  return nodes.filter((n) => !gone.has(n.node)).map((n) => merged.get(n.node) ?? { ...n, aliases: [] });
}
