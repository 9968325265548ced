// Aligning the API's per-series points onto one time axis for a chart. Pure functions.

export interface Series {
  label: string;
  values: (number | null)[];
}

/** Epoch seconds of an RFC 3339 time. */
export const epochOf = (iso: string): number => Math.floor(Date.parse(iso) / 1000);

/** The groups' points on one x axis (the union of their times, ascending); a group without a point
 * at a time has null there (a gap in its line, not a zero). */
export function align<P>(groups: { label: string; points: P[] }[], time: (p: P) => number,
  value: (p: P) => number | null | undefined): { x: number[]; series: Series[] } {
  const xs = new Set<number>();
  for (const g of groups) for (const p of g.points) xs.add(time(p));
  const x = [...xs].sort((a, b) => a - b);
  const at = new Map(x.map((t, i) => [t, i] as [number, number]));
  const series = groups.map((g) => {
    const values: (number | null)[] = new Array(x.length).fill(null);
    for (const p of g.points) {
      const v = value(p);
      values[at.get(time(p))!] = v === undefined ? null : v;
    }
    return { label: g.label, values };
  });
  return { x, series };
}

/** cc-metric-store's answer (one result's `data` from `from` in steps of `resolution`) as x values. */
export function ccTimes(from: number, resolution: number, n: number): number[] {
  return Array.from({ length: n }, (_, i) => from + i * resolution);
}

/** The mean of the non-null values (null when there is none). */
export function mean(vals: (number | null | undefined)[]): number | null {
  let s = 0;
  let n = 0;
  for (const v of vals) if (v !== null && v !== undefined && Number.isFinite(v)) (s += v), n++;
  return n ? s / n : null;
}

/** A node's (or card's) buckets of a load answer in `layout=columns` (docs/api.md) as points
 * {time, <field>: value}: slot k is the bucket starting at floor(from / bucket) * bucket + k * bucket;
 * a slot where every field is null is no point (nothing was measured then). */
export function columnPoints(group: Record<string, any>, fields: string[], fromS: number, bucketS: number): any[] {
  const base = Math.floor(fromS / bucketS) * bucketS;
  const n = Math.max(0, ...fields.map((f) => (group[f] ?? []).length));
  const out: any[] = [];
  for (let k = 0; k < n; k++) {
    const p: any = { time: new Date((base + k * bucketS) * 1000).toISOString().replace(/\.\d+Z$/, "Z") };
    let any = false;
    for (const f of fields) {
      const v = group[f]?.[k] ?? null;
      p[f] = v;
      if (v !== null) any = true;
    }
    if (any) out.push(p);
  }
  return out;
}
