// Problems: the problem-jobs report (GET /api/v1/problems; docs/problems.md), the jobs that held
// resources without using them, filterable by user and rule, with the thresholds as the API takes
// them, sorted by clicking a column (in the browser: the API answers every row at once), as CSV
// too; and the same summed per user (GET /api/v1/problems/users).
import { download, getJson } from "../api";
import { Section, Status, Time, useLoad, WindowBar } from "../components";
import { fmtDuration, fmtKb, fmtNum } from "../lib/format";
import { queryString } from "../lib/params";
import { PROBLEM_DEFAULT_SORT, PROBLEM_RULES, PROBLEM_SORTS, PROBLEM_THRESHOLDS, problemsQuery, sortRows,
  toggleProblemSort } from "../lib/problems";
import { rfc3339 } from "../lib/timewin";
import { href, navigate } from "../router";
import { PickCluster } from "./clusters";
import { viewWindow } from "./common";

async function loadProblems(p: Record<string, string>) {
  const w = await viewWindow(p);
  const q = problemsQuery(p, rfc3339(w.from), rfc3339(w.to));
  const [rows, users] = await Promise.all([getJson(`/api/v1/problems${queryString(q)}`),
    getJson(`/api/v1/problems/users${queryString(q)}`)]);
  return { w, q, problems: rows.problems as any[], users: users.users as any[] };
}

const COLUMNS: [string, string][] = [["rule", "rule"], ["job", "job"], ["user", "user"], ["node", "node"],
  ["card", "card"], ["nodes", "nodes"], ["start", "start"], ["end", "end"], ["for_s", "for"], ["used", "used"], ["held", "held"],
  ["ratio", "used / held"], ["detail", "finding"]];

/** used and held in the rule's unit: cores, memory, GPU cards. */
function amount(r: any, v: number | null) {
  if (v === null || v === undefined) return "";
  if (r.rule === "mem_low") return fmtKb(v);
  if (r.rule === "cpu_low") return `${fmtNum(v, 2)} cores`;
  return `${fmtNum(v, 0)} GPU${v === 1 ? "" : "s"}`;
}

function cell(r: any, k: string, p: Record<string, string>) {
  const v = r[k];
  switch (k) {
    case "job": return <a href={r.url} data-id={r.id}>{v}</a>;
    case "user": return v ? <a href={href("problems", { ...p, user: v })}>{v}</a> : "";
    case "node": return v ? <a href={href("node", { cluster: p.cluster }, v)}>{v}</a> : <span class="muted">all</span>;
    case "start": case "end": return <Time t={v} />;
    case "card": return v ?? "";
    case "for_s": return fmtDuration(v);
    case "used": case "held": return amount(r, v);
    case "ratio": return v === null ? "" : `${fmtNum(100 * v, 1)} %`;
    default: return v ?? "";
  }
}

export function Problems({ p }: { p: Record<string, string> }) {
  if (!p.cluster) return <><h1>Problem jobs</h1><PickCluster view="problems" /></>;
  const s = useLoad(`problems${queryString(p)}`, () => loadProblems(p));
  const sort = PROBLEM_SORTS.includes(p.sort) ? p.sort : PROBLEM_DEFAULT_SORT;
  const desc = p.order !== "asc";
  const submit = (e: Event) => {
    e.preventDefault();
    const f = new FormData(e.target as HTMLFormElement);
    const next: Record<string, string> = { cluster: p.cluster };
    f.forEach((v, k) => { if (String(v).trim()) next[k] = String(v).trim(); });
    if (p.sort) next.sort = p.sort;
    if (p.order) next.order = p.order;
    navigate(href("problems", next));
  };
  const rows = s.data ? sortRows(s.data.problems, sort, desc) : [];
  return (
    <>
      <h1>Problem jobs of {p.cluster}</h1>
      <p class="muted">Jobs that held resources without using them (rules and thresholds: docs/problems.md).</p>
      <form class="filters" id="problem-filters" onSubmit={submit}>
        <label>user <input name="user" value={p.user ?? ""} placeholder="alice,bob" /></label>
        <label>rule <select name="rule" value={p.rule ?? ""}>
          <option value="">all</option>
          {PROBLEM_RULES.map(([k, label]) => <option value={k}>{k}: {label}</option>)}
        </select></label>
        <label>from <input name="from" value={p.from ?? ""} placeholder="now-1d" /></label>
        <label>to <input name="to" value={p.to ?? ""} placeholder="now" /></label>
        {PROBLEM_THRESHOLDS.map(([k, def]) => (
          <label>{k} <input name={k} value={p[k] ?? ""} placeholder={def} size={5} /></label>
        ))}
        <button type="submit">Filter</button>
        <a href={href("problems", { cluster: p.cluster })}>clear</a>
        {s.data && <button type="button" id="csv" onClick={() => download(
          `/api/v1/problems${queryString({ ...s.data!.q, format: "csv" })}`, `problems-${p.cluster}.csv`)}>CSV</button>}
      </form>
      {s.data && <WindowBar w={s.data.w} params={p} path="/ui/problems" />}
      <Status s={s} />
      {s.data && (
        <>
          <Section title={`Problems (${rows.length})`} id="problem-list">
            {rows.length === 0 ? <p class="muted" id="no-problems">No problem jobs in the window.</p> : (
              <div class="scroll">
                <table class="data" id="problems">
                  <thead><tr>{COLUMNS.map(([k, label]) => (
                    <th class={["card", "nodes", "for_s", "used", "held", "ratio", "job"].includes(k) ? "num" : ""}>
                      {PROBLEM_SORTS.includes(k) ? (
                        <a href={href("problems", toggleProblemSort(p, k))} data-sort={k}>
                          {label}{sort === k ? (desc ? " ▼" : " ▲") : ""}</a>
                      ) : label}
                    </th>
                  ))}</tr></thead>
                  <tbody>{rows.map((r) => (
                    <tr data-id={r.id} data-rule={r.rule}>{COLUMNS.map(([k]) => (
                      <td data-k={k} class={typeof r[k] === "number" ? "num" : ""}>{cell(r, k, p)}</td>
                    ))}</tr>
                  ))}</tbody>
                </table>
              </div>
            )}
          </Section>
          <Section title="Per user" id="problem-users">
            <div class="scroll"><table class="data" id="problem-users-table">
              <thead><tr><th>user</th><th class="num">jobs</th><th class="num">problems</th>
                {PROBLEM_RULES.map(([k]) => <th class="num">{k}</th>)}
                <th class="num">idle core-hours</th><th class="num">idle GPU-hours</th></tr></thead>
              <tbody>{sortRows(s.data.users, "problems", true).map((u) => (
                <tr data-user={u.user}>
                  <td><a href={href("problems", { ...p, user: u.user })}>{u.user ?? ""}</a></td>
                  <td class="num">{u.jobs}</td><td class="num">{u.problems}</td>
                  {PROBLEM_RULES.map(([k]) => <td class="num" data-k={k}>{u[k]}</td>)}
                  <td class="num">{fmtNum(u.idle_core_hours, 1)}</td><td class="num">{fmtNum(u.idle_gpu_hours, 1)}</td>
                </tr>
              ))}</tbody>
            </table></div>
          </Section>
        </>
      )}
    </>
  );
}
