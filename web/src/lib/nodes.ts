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
  const v = Math.min(100, Math.max(0, pct)) / 100;
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
