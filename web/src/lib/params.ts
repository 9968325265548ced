// A view's state in the URL's query string, and the API queries made from it. Pure functions.

export type Params = Record<string, string>;

/** The query string's parameters (the last of a repeated name wins; empty values are dropped). */
export function readParams(search: string): Params {
  const out: Params = {};
  new URLSearchParams(search).forEach((v, k) => {
    if (v !== "") out[k] = v;
  });
  return out;
}

/** A query string ("?a=1&b=2", or "") of the non-empty values, in the order given. */
export function queryString(p: Record<string, string | number | boolean | null | undefined>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(p)) if (v !== undefined && v !== null && v !== "") q.set(k, String(v));
  const s = q.toString();
  return s ? `?${s}` : "";
}

/** The job list's filters the view offers, each passed to GET /api/v1/jobs as it stands. */
export const JOB_FILTERS = ["user", "host", "job", "command", "state", "partition", "account", "running", "gpu",
  "from", "to", "min_runtime", "min_cpu_avg", "min_mem_peak_kb", "min_gpu_avg", "max_cpu_eff", "max_mem_eff",
  "max_gpu_eff"] as const;
/** The job list's sort keys (GET /api/v1/jobs's `sort`) and the column each sorts by. */
export const JOB_SORTS: Record<string, string> = { start: "start", end: "end", duration: "duration_s", job: "job",
  cpu_avg: "cpu_avg", cpu_peak: "cpu_peak", mem_avg_kb: "mem_avg_kb", mem_peak_kb: "mem_peak_kb", gpu_avg: "gpu_avg",
  gpu_peak: "gpu_peak", gpumem_avg_kb: "gpumem_avg_kb", gpumem_peak_kb: "gpumem_peak_kb", cpu_eff: "cpu_eff",
  mem_eff: "mem_eff", gpu_eff: "gpu_eff" };

/** The URL state after clicking a column's sort: the same key flips the order, another starts
 * descending (the biggest first is what one looks for); the cursor is dropped (a new listing). */
export function toggleSort(p: Params, key: string): Params {
  const q: Params = { ...p, sort: key };
  delete q.cursor;
  delete q.page;
  q.order = (p.sort || "start") === key && p.order !== "asc" ? "asc" : "desc";
  return q;
}

/** The GET /api/v1/jobs parameters of the job list view's URL state (cursor and limit apart). The
 * list opens newest first (the API's own default is oldest first: a page of jobs from years ago). */
export function jobsQuery(p: Params): Params {
  const q: Params = { cluster: p.cluster };
  for (const f of JOB_FILTERS) if (p[f]) q[f] = p[f];
  q.sort = p.sort || "start";
  q.order = p.order || "desc";
  return q;
}

/** Paging by the API's cursor: the cursors of the pages before the current one, so "previous" works
 * too. `cursors[i]` opens page i + 1 (page 0 needs none). */
export interface Paging {
  cursors: string[];
  page: number;
}
export function nextPage(pg: Paging, next: string): Paging {
  const cursors = pg.cursors.slice(0, pg.page);
  cursors.push(next);
  return { cursors, page: pg.page + 1 };
}
export function prevPage(pg: Paging): Paging {
  return { cursors: pg.cursors, page: Math.max(0, pg.page - 1) };
}
export function cursorOf(pg: Paging): string | undefined {
  return pg.page === 0 ? undefined : pg.cursors[pg.page - 1];
}
