// The problem-jobs view's state and the API query made from it, and the table's client-side sort
// (the API answers one row per problem, unpaged, so the browser sorts). Pure functions.
import type { Params } from "./params";

/** The rules (GET /api/v1/problems's `rule`), in the API's order, with the view's labels. */
export const PROBLEM_RULES: [string, string][] = [["gpu_idle", "GPUs left idle"], ["gpu_unused", "GPU node, no GPU"],
  ["cpu_low", "few of its cores used"], ["mem_low", "little of its memory used"], ["deadweight", "no activity"]];

/** The thresholds the view offers, each passed to the API as it stands, with the API's default. */
export const PROBLEM_THRESHOLDS: [string, string][] = [["gpu_idle", "2h"], ["gpu_unused", "1h"], ["cpu_ratio", "0.25"],
  ["cpu_min", "2h"], ["mem_ratio", "0.25"], ["mem_min", "1h"], ["mem_min_request", "1G"], ["deadweight", "4h"]];

/** The view's URL parameters that are the API's (the window apart: the view resolves it). */
const PASSED = ["user", "rule", ...PROBLEM_THRESHOLDS.map(([k]) => k)];

/** The GET /api/v1/problems (and /problems/users) parameters of the view's URL state and window. */
export function problemsQuery(p: Params, from: string, to: string): Params {
  const q: Params = { cluster: p.cluster, from, to };
  for (const k of PASSED) if (p[k]) q[k] = p[k];
  return q;
}

/** Columns the problem table sorts by, and the default: the longest-lasting problems first. */
export const PROBLEM_SORTS = ["rule", "job", "user", "node", "card", "nodes", "start", "end", "for_s", "used", "held", "ratio"];
export const PROBLEM_DEFAULT_SORT = "for_s";

/** Rows sorted by `key` (a copy): numbers by value, texts byte-wise; nulls last either way; ties
 * by job id, then rule, so the order is stable whatever the answer's. */
export function sortRows<T extends Record<string, any>>(rows: T[], key: string, desc: boolean): T[] {
  const dir = desc ? -1 : 1;
  const cmp = (a: any, b: any): number => {
    if (a === b) return 0;
    if (a === null || a === undefined) return 1;
    if (b === null || b === undefined) return -1;
    if (typeof a === "number" && typeof b === "number") return dir * (a - b);
    return dir * (String(a) < String(b) ? -1 : 1);
  };
  return rows.slice().sort((a, b) => cmp(a[key], b[key]) || (a.id ?? 0) - (b.id ?? 0) ||
    (String(a.rule) < String(b.rule) ? -1 : String(a.rule) > String(b.rule) ? 1 : 0));
}

/** The URL state after clicking a column: the same column flips the order, another starts with the
 * biggest first. */
export function toggleProblemSort(p: Params, key: string): Params {
  const cur = p.sort || PROBLEM_DEFAULT_SORT;
  const desc = p.order !== "asc";
  return { ...p, sort: key, order: cur === key && desc ? "asc" : "desc" };
}
