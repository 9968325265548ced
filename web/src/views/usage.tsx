// Usage: per user, account, partition or the cluster, and per day, week or month, the core-, GPU-
// and memory-hours allocated and used and the efficiencies (GET /api/v1/usage), sorted by clicking
// a column (in the browser: the API answers every row at once), as CSV too.
import { download, getJson } from "../api";
import { Section, Status, Time, useLoad, WindowBar } from "../components";
import { fmtNum } from "../lib/format";
import { queryString } from "../lib/params";
import { sortRows } from "../lib/problems";
import { rfc3339 } from "../lib/timewin";
import { effClass, fmtEff, toggleUsageSort, USAGE_BUCKETS, USAGE_BY, USAGE_COLUMNS, USAGE_DEFAULT_SORT, USAGE_SORTS,
  usageQuery } from "../lib/usage";
import { href, navigate } from "../router";
import { PickCluster } from "./clusters";
import { viewWindow } from "./common";

async function loadUsage(p: Record<string, string>) {
  const w = await viewWindow(p, 7 * 86400);
  const q = usageQuery(p, rfc3339(w.from), rfc3339(w.to));
  const doc = await getJson(`/api/v1/usage${queryString(q)}`);
  return { w, q, rows: doc.usage as any[] };
}

/** A group's jobs: the job list filtered by the group (users and accounts and partitions). */
function groupLink(p: Record<string, string>, by: string, g: string | null) {
  if (g === null || g === undefined) return <span class="muted">{by === "user" ? "unknown" : "none"}</span>;
  if (by === "cluster") return g;
  return <a href={href("jobs", { cluster: p.cluster, [by]: g, from: p.from, to: p.to })}>{g}</a>;
}

export function Usage({ p }: { p: Record<string, string> }) {
  if (!p.cluster) return <><h1>Usage</h1><PickCluster view="usage" /></>;
  const s = useLoad(`usage${queryString(p)}`, () => loadUsage(p));
  const sort = USAGE_SORTS.includes(p.sort) ? p.sort : USAGE_DEFAULT_SORT;
  const desc = p.order !== "asc";
  const by = s.data?.q.by ?? "user";
  const bucketed = !!s.data?.q.bucket;
  const submit = (e: Event) => {
    e.preventDefault();
    const f = new FormData(e.target as HTMLFormElement);
    const next: Record<string, string> = { cluster: p.cluster };
    f.forEach((v, k) => { if (String(v).trim()) next[k] = String(v).trim(); });
    if (p.sort) next.sort = p.sort;
    if (p.order) next.order = p.order;
    navigate(href("usage", next));
  };
  // buckets in time order, the chosen figure within each
  const rows = s.data ? sortRows(s.data.rows, sort, desc).sort((a, b) =>
    sort === "bucket" ? 0 : String(a.bucket ?? "") < String(b.bucket ?? "") ? -1 : String(a.bucket ?? "") > String(b.bucket ?? "") ? 1 : 0) : [];
  const th = (k: string, label: string) => (
    <th class={k === "group" || k === "bucket" ? "" : "num"}>
      <a href={href("usage", toggleUsageSort(p, k))} data-sort={k}>{label}{sort === k ? (desc ? " ▼" : " ▲") : ""}</a>
    </th>
  );
  return (
    <>
      <h1>Usage of {p.cluster}</h1>
      <p class="muted">Allocated (Slurm) and used (samples) per group; efficiencies over the jobs whose allocation
        is known (docs/storage.md, "Usage and efficiency"). Marked: below {fmtEff(0.25)}.</p>
      <form class="filters" id="usage-filters" onSubmit={submit}>
        <label>by <select name="by" value={by}>{USAGE_BY.map((b) => <option value={b}>{b}</option>)}</select></label>
        <label>per <select name="bucket" value={p.bucket ?? "none"}>
          {USAGE_BUCKETS.map((b) => <option value={b}>{b === "none" ? "whole window" : b}</option>)}</select></label>
        <label>user <input name="user" value={p.user ?? ""} placeholder="e.g. alice,bob" /></label>
        <label>account <input name="account" value={p.account ?? ""} placeholder="" /></label>
        <label>partition <input name="partition" value={p.partition ?? ""} placeholder="" /></label>
        <label>from <input name="from" value={p.from ?? ""} placeholder="now-7d" /></label>
        <label>to <input name="to" value={p.to ?? ""} placeholder="now" /></label>
        <button type="submit">Show</button>
        <a href={href("usage", { cluster: p.cluster })}>clear</a>
        {s.data && <button type="button" id="csv" onClick={() => download(
          `/api/v1/usage${queryString({ ...s.data!.q, format: "csv" })}`, `usage-${p.cluster}.csv`)}>CSV</button>}
      </form>
      {s.data && <WindowBar w={s.data.w} params={p} path="/ui/usage" />}
      <Status s={s} />
      {s.data && (
        <Section title={`Per ${by} (${rows.length})`} id="usage-list">
          {rows.length === 0 ? <p class="muted" id="no-usage">No jobs in the window.</p> : (
            <div class="scroll">
              <table class="data" id="usage">
                <thead><tr>{bucketed && th("bucket", "from")}{th("group", by)}
                  {USAGE_COLUMNS.map(([k, label]) => th(k, label))}</tr></thead>
                <tbody>{rows.map((r) => (
                  <tr data-group={r.group ?? ""} data-bucket={r.bucket ?? ""}>
                    {bucketed && <td data-k="bucket"><Time t={r.bucket} /></td>}
                    <td data-k="group">{groupLink(p, by, r.group)}</td>
                    {USAGE_COLUMNS.map(([k]) => k.endsWith("_eff")
                      ? <td data-k={k} data-v={r[k] ?? ""} class={effClass(r[k])}>{fmtEff(r[k])}</td>
                      : <td data-k={k} data-v={r[k] ?? ""} class="num">{k === "jobs" ? r[k] : r[k] === null ? "" : fmtNum(r[k], 1)}</td>)}
                  </tr>
                ))}</tbody>
              </table>
            </div>
          )}
        </Section>
      )}
    </>
  );
}
