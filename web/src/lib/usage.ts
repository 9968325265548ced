// The usage view's state and the API query made from it (GET /api/v1/usage; docs/storage.md,
// "Usage and efficiency"), and the efficiency marks shared with the job list. Pure functions.
import type { Params } from "./params";

/** What rows are grouped by, and the time buckets, as the API names them. */
export const USAGE_BY = ["user", "account", "partition", "cluster"];
export const USAGE_BUCKETS = ["none", "day", "week", "month"];

/** The table's columns: the API's figures, with the view's labels. */
export const USAGE_COLUMNS: [string, string][] = [["jobs", "jobs"], ["wall_h", "wall h"],
  ["core_h_alloc", "core-h alloc"], ["core_h_used", "core-h used"], ["cpu_eff", "CPU eff"],
  ["gpu_h_alloc", "GPU-h alloc"], ["gpu_h_used", "GPU-h used"], ["gpu_eff", "GPU eff"],
  ["mem_gib_h_alloc", "mem GiB-h alloc"], ["mem_gib_h_used", "mem GiB-h used"], ["mem_eff", "mem eff"],
  ["energy_kwh", "energy kWh"]];
export const USAGE_SORTS = ["bucket", "group", ...USAGE_COLUMNS.map(([k]) => k)];
export const USAGE_DEFAULT_SORT = "core_h_used";

/** The GET /api/v1/usage parameters of the view's URL state and window (the browser sorts). */
export function usageQuery(p: Params, from: string, to: string): Params {
  const q: Params = { cluster: p.cluster, from, to, by: USAGE_BY.includes(p.by) ? p.by : "user" };
  if (p.bucket && p.bucket !== "none" && USAGE_BUCKETS.includes(p.bucket)) q.bucket = p.bucket;
  for (const k of ["user", "account", "partition"]) if (p[k]) q[k] = p[k];
  return q;
}

/** The problem-jobs report's default ratios (docs/problems.md: cpu_low, mem_low): an efficiency
 * below is marked; GPU takes the CPU's. */
export const EFF_LOW = 0.25;
export function effClass(v: number | null | undefined): string {
  return v === null || v === undefined ? "" : v < EFF_LOW ? "num eff-low" : "num";
}
/** An efficiency as a percentage ("" when unknown). */
export function fmtEff(v: number | null | undefined): string {
  return v === null || v === undefined ? "" : `${(100 * v).toFixed(1)} %`;
}

/** The URL state after clicking a column: the same column flips the order, another starts with the
 * biggest first. */
export function toggleUsageSort(p: Params, key: string): Params {
  const cur = p.sort || USAGE_DEFAULT_SORT;
  const desc = p.order !== "asc";
  return { ...p, sort: key, order: cur === key && desc ? "asc" : "desc" };
}
