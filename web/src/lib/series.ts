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
