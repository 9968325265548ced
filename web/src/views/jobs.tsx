// Jobs: the job list with the API's filters and sorts, paged by the API's cursor, as CSV too; a job's
// page with its per-host and per-process plots, commands, Slurm record and ClusterCockpit job.
import { download, getJson } from "../api";
import { Plot, Section, Status, Time, Unknown, useLoad, WindowBar } from "../components";
import { fmtDuration, fmtKb, fmtNum } from "../lib/format";
import { JOB_SORTS, jobsQuery, queryString, toggleSort } from "../lib/params";
import { align, epochOf } from "../lib/series";
import { parseTime, windowError } from "../lib/timewin";
import { effClass, fmtEff } from "../lib/usage";
import { href, navigate } from "../router";
import { PickCluster } from "./clusters";

const PAGE = 100;
const enc = encodeURIComponent;

const COLUMNS: [string, string, string?][] = [
  ["id", "id"], ["job", "job", "job"], ["user", "user"], ["hosts", "hosts"], ["start", "start", "start"],
  ["end", "end", "end"], ["duration_s", "duration", "duration"], ["running", "running"],
  ["cpu_avg", "CPU avg %", "cpu_avg"], ["cpu_peak", "CPU peak %", "cpu_peak"], ["mem_peak_kb", "mem peak", "mem_peak_kb"],
  ["gpu_avg", "GPU avg %", "gpu_avg"], ["gpumem_peak_kb", "GPU mem peak", "gpumem_peak_kb"],
  ["cpu_eff", "CPU eff", "cpu_eff"], ["mem_eff", "mem eff", "mem_eff"], ["gpu_eff", "GPU eff", "gpu_eff"], ["state", "Slurm state"],
  ["commands", "commands"],
];

function cell(j: any, k: string, cluster: string) {
  const v = j[k];
  switch (k) {
    case "id": return <a href={href("job", { cluster }, String(v))}>{v}</a>;
    case "hosts": return v.length > 3 ? `${v.slice(0, 3).join(", ")} +${v.length - 3}` : v.join(", ");
    case "start": case "end": return <Time t={v} />;
    case "duration_s": return fmtDuration(v);
    case "running": return v ? "yes" : "no";
    case "mem_peak_kb": case "gpumem_peak_kb": return fmtKb(v);
    case "cpu_avg": case "cpu_peak": case "gpu_avg": return fmtNum(v);
    case "cpu_eff": case "mem_eff": case "gpu_eff": return fmtEff(v);
    case "state": return v ?? <Unknown />;
    case "commands": return <span class="cmds" title={v.join("\n")}>{v.slice(0, 3).join(", ")}{v.length > 3 ? " …" : ""}</span>;
    default: return v ?? "";
  }
}

// Placeholders are examples ("e.g."), set in italics, so an empty field does not read as a filter applied.
const FILTER_FIELDS: [string, string, string][] = [
  ["user", "user", "e.g. alice,bob"], ["host", "nodes", "e.g. c1-[1-8]"], ["job", "job ids", "e.g. 4711"], ["command", "command", "e.g. python*"],
  ["state", "Slurm state", "e.g. COMPLETED"], ["partition", "partition", "e.g. normal"], ["account", "account", ""],
  ["from", "from", "e.g. now-7d"], ["to", "to", "e.g. now"], ["min_runtime", "min runtime", "e.g. 1h"],
  ["max_cpu_eff", "CPU eff at most", "e.g. 0.25"], ["max_mem_eff", "mem eff at most", "e.g. 0.25"],
];

/** The job list's window as the bar shows it: null (all time) without from and to. */
function jobsWindow(p: Record<string, string>) {
  if (!p.from && !p.to) return null;
  const nowS = Math.floor(Date.now() / 1000);
  if (windowError(p.from, p.to, nowS)) return null;
  const to = p.to ? parseTime(p.to, nowS)! : nowS;
  return { from: p.from ? parseTime(p.from, nowS)! : 0, to };
}

export function Jobs({ p }: { p: Record<string, string> }) {
  if (!p.cluster) return <><h1>Jobs</h1><PickCluster view="jobs" /></>;
  const q = jobsQuery(p);
  const limit = Number(p.limit) || PAGE;
  const api = `/api/v1/jobs${queryString({ ...q, limit, cursor: p.cursor })}`;
  const s = useLoad(api, () => getJson(api));
  const submit = (e: Event) => {
    e.preventDefault();
    const f = new FormData(e.target as HTMLFormElement);
    const next: Record<string, string> = { cluster: p.cluster };
    f.forEach((v, k) => { if (String(v).trim()) next[k] = String(v).trim(); });
    if (p.sort) next.sort = p.sort;
    if (p.order) next.order = p.order;
    navigate(href("jobs", next));
  };
  const page = Number(p.page) || 1;
  return (
    <>
      <h1>Jobs of {p.cluster}</h1>
      <form class="filters" id="job-filters" onSubmit={submit}>
        {FILTER_FIELDS.map(([k, label, ph]) => (
          <label>{label} <input name={k} value={p[k] ?? ""} placeholder={ph} /></label>
        ))}
        <label>running <select name="running" value={p.running ?? ""}>
          <option value="">any</option><option value="true">running</option><option value="false">finished</option>
        </select></label>
        <label>GPU <select name="gpu" value={p.gpu ?? ""}>
          <option value="">any</option><option value="some">used a GPU</option><option value="none">no GPU</option>
        </select></label>
        <button type="submit">Filter</button>
        <a href={href("jobs", { cluster: p.cluster })}>clear</a>
        <button type="button" id="csv" onClick={() => download(`/api/v1/jobs${queryString({ ...q, limit: 100000, format: "csv" })}`,
          `jobs-${p.cluster}.csv`)}>CSV</button>
      </form>
      <WindowBar w={jobsWindow(p)} params={p} path="/ui/jobs" />
      <Status s={s} />
      {s.data && (
        <>
          <p class="muted" id="page-info">page {page}: {s.data.jobs.length} job{s.data.jobs.length === 1 ? "" : "s"}{s.data.next ? ", more on the next" : " (last page)"},
            sorted by {q.sort}, {q.order === "asc" ? "oldest or smallest" : "newest or biggest"} first</p>
          <div class="scroll">
            <table class="data" id="jobs">
              <thead><tr>{COLUMNS.map(([k, label, sort]) => (
                <th class={typeof s.data.jobs[0]?.[k] === "number" ? "num" : ""}>
                  {sort && JOB_SORTS[sort] ? (
                    <a href={href("jobs", toggleSort(p, sort))} data-sort={sort}>{label}{q.sort === sort ? (q.order === "asc" ? " ▲" : " ▼") : ""}</a>
                  ) : label}
                </th>
              ))}</tr></thead>
              <tbody>{s.data.jobs.map((j: any) => (
                <tr data-id={j.id}>{COLUMNS.map(([k]) => <td data-k={k} data-v={k.endsWith("_eff") ? j[k] ?? "" : undefined}
                  class={k.endsWith("_eff") ? effClass(j[k]) : typeof j[k] === "number" ? "num" : ""}>{cell(j, k, p.cluster)}</td>)}</tr>
              ))}</tbody>
            </table>
          </div>
          <nav class="pager">
            {page > 1 && <button type="button" id="prev" onClick={() => history.back()}>previous</button>}
            {p.cursor && <a href={href("jobs", { ...p, cursor: undefined, page: undefined })}>first page</a>}
            {s.data.next && <a id="next" href={href("jobs", { ...p, cursor: s.data.next, page: page + 1 })}>next page</a>}
          </nav>
        </>
      )}
    </>
  );
}

/* --- one job ----------------------------------------------------------------------------- */

const SLURM_FIELDS = ["state", "partition", "account", "job_name", "submit_time", "time_limit_s", "exit_code",
  "requested_cpus", "requested_node_count", "requested_memory_per_node_kb", "requested_resources",
  "allocated_resources", "array_job_id", "array_task_id"];

async function loadJob(p: Record<string, string>, id: string) {
  // the API's own answer to /jobs/abc is "no such endpoint", which tells a user nothing
  if (!/^\d+$/.test(id)) throw new Error(`"${id}" is not a job id: a job's id is the number in the job list's first column.`);
  const nowS = Math.floor(Date.now() / 1000);
  const bad = windowError(p.from, p.to, nowS);
  if (bad) throw new Error(bad);
  const c = enc(p.cluster);
  const by = p.by === "process" ? "process" : "host";
  const win = (p.from ? `&from=${enc(p.from)}` : "") + (p.to ? `&to=${enc(p.to)}` : "");
  const [job, profile] = await Promise.all([
    getJson(`/api/v1/jobs/${enc(id)}?cluster=${c}`),
    getJson(`/api/v1/jobs/${enc(id)}/profile?cluster=${c}&by=${by}${win}`),
  ]);
  // The plots' x range: the window asked for, else the job's life with a little room either side.
  // (every form the API takes: RFC 3339, epoch seconds, now, now-800d)
  const start = p.from ? parseTime(p.from, nowS)! : epochOf(job.job.start);
  const end = p.to ? parseTime(p.to, nowS)! : epochOf(job.job.end);
  const pad = Math.max(300, (end - start) * 0.02);
  return { job: job.job, hosts: job.hosts, profile: profile.profile, by, w: { from: start - pad, to: end + pad } };
}

/** Whether a job used a GPU: a figure or a profile point above zero (a job on a node without GPUs
 * has none, and its GPU plots would be flat lines at zero). */
function usedGpu(j: any, profile: any[]): boolean {
  if ((j.gpu_peak ?? 0) > 0 || (j.gpumem_peak_kb ?? 0) > 0) return true;
  return profile.some((x: any) => x.points.some((pt: any) => (pt.gpu ?? 0) > 0 || (pt.gpumem_kb ?? 0) > 0));
}

export function JobPage({ p, id }: { p: Record<string, string>; id: string }) {
  const s = useLoad(`job/${id}${queryString(p)}`, () => loadJob(p, id));
  const d = s.data;
  const path = `/ui/job/${enc(id)}`;
  const label = (x: any) => (d!.by === "host" ? x.host : `${x.host} ${x.pid} ${x.cmd ?? ""}`);
  const plot = (title: string, key: string, fmt?: (v: number) => string, unit = "") => {
    const a = align(d!.profile.map((x: any) => ({ label: label(x), points: x.points })), (x: any) => epochOf(x.time),
      (x: any) => x[key]);
    return <Plot title={title} x={a.x} series={a.series} fmt={fmt} unit={unit} zoomPath={path} window={d!.w}
      zoomParams={{ cluster: p.cluster, by: d!.by }} />;
  };
  const j = d?.job;
  const slurm = j && j.epoch === 0;
  return (
    <>
      <h1>Job {j ? j.job : id} <span class="muted">({p.cluster}, id {id})</span></h1>
      <Status s={s} />
      {j && (
        <>
          <dl class="facts" id="job-facts">
            <dt>user</dt><dd data-k="user">{j.user}</dd>
            <dt>hosts</dt><dd data-k="hosts" class="list">{j.hosts.map((h: string, i: number) => <>{i ? ", " : ""}<a href={href("node", { cluster: p.cluster }, h)}>{h}</a></>)}</dd>
            <dt>time</dt><dd><Time t={j.start} /> – <Time t={j.end} /> ({fmtDuration(j.duration_s)}){j.running ? " running" : ""}</dd>
            <dt>CPU</dt><dd data-k="cpu">avg {fmtNum(j.cpu_avg)}%, peak {fmtNum(j.cpu_peak)}% of one core; CPU time {fmtDuration(j.cpu_time_s)}</dd>
            <dt>memory</dt><dd data-k="mem">avg {fmtKb(j.mem_avg_kb)}, peak {fmtKb(j.mem_peak_kb)}</dd>
            <dt>GPU</dt><dd>avg {fmtNum(j.gpu_avg)}%, peak {fmtNum(j.gpu_peak)}%; memory peak {fmtKb(j.gpumem_peak_kb)}</dd>
            <dt>efficiency</dt><dd data-k="eff">{j.cpu_eff === null && j.mem_eff === null && j.gpu_eff === null
              ? <span class="muted">unknown: no Slurm allocation</span>
              : <>CPU <span class={effClass(j.cpu_eff)}>{fmtEff(j.cpu_eff) || "–"}</span>, memory <span class={effClass(j.mem_eff)}>{fmtEff(j.mem_eff) || "–"}</span>, GPU <span class={effClass(j.gpu_eff)}>{fmtEff(j.gpu_eff) || "–"}</span> of the allocation</>}</dd>
            <dt>processes</dt><dd>{j.processes} at most, {j.samples} node-samples</dd>
            <dt>commands</dt><dd class="cmds">{j.commands.join(", ")}</dd>
          </dl>
          <Section title="Profile">
            <p class="seg">{["host", "process"].map((b) => (
              <a href={href("job", { ...p, by: b }, id)} aria-current={d!.by === b ? "true" : undefined}>per {b}</a>
            ))}{(p.from || p.to) && <a href={href("job", { cluster: p.cluster, by: p.by }, id)}>whole job</a>}</p>
            {d!.profile.length === 0 ? <p class="muted">No samples.</p> : (
              <div class="plots" id="profile" data-series={d!.profile.length}>
                {plot("CPU, % of one core", "cpu", undefined, "%")}
                {plot("resident memory", "mem_kb", (v) => fmtKb(v))}
                {usedGpu(j, d!.profile) && plot("GPU, % of one card", "gpu", undefined, "%")}
                {usedGpu(j, d!.profile) && plot("GPU memory", "gpumem_kb", (v) => fmtKb(v))}
              </div>
            )}
            {d!.profile.length > 0 && !usedGpu(j, d!.profile) && <p class="muted" id="no-gpu">No GPU was used: no GPU plots.</p>}
          </Section>
          <Section title="Per host">
            <div class="scroll"><table class="data" id="job-hosts"><thead><tr><th>host</th><th class="num">samples</th><th>start</th><th>end</th>
              <th class="num">processes</th><th class="num">CPU avg %</th><th class="num">CPU peak %</th><th class="num">mem peak</th>
              <th class="num">GPU avg %</th><th class="num">GPU mem peak</th></tr></thead>
              <tbody>{d!.hosts.map((h: any) => (
                <tr data-host={h.host}><td><a href={href("node", { cluster: p.cluster }, h.host)}>{h.host}</a></td><td class="num">{h.samples}</td>
                  <td><Time t={h.start} /></td><td><Time t={h.end} /></td><td class="num">{h.processes}</td>
                  <td class="num" data-k="cpu_avg">{fmtNum(h.cpu_avg)}</td><td class="num">{fmtNum(h.cpu_peak)}</td>
                  <td class="num" data-k="mem_peak">{fmtKb(h.mem_peak_kb)}</td><td class="num">{fmtNum(h.gpu_avg)}</td><td class="num">{fmtKb(h.gpumem_peak_kb)}</td></tr>
              ))}</tbody></table></div>
          </Section>
          <Section title="Slurm" id="slurm">
            {!slurm && <p class="muted" id="no-slurm">No Slurm record: this job is a process group on {j.node}. What it held
              (cores, memory requested, time limit) is unknown; the figures above are what was measured.</p>}
            <dl class="facts">{SLURM_FIELDS.map((k) => (
              <><dt>{k}</dt><dd data-k={k}>{j[k] === null || j[k] === undefined ? <Unknown /> :
                k.endsWith("_time") ? <Time t={j[k]} /> : k.endsWith("_kb") ? fmtKb(j[k]) : k === "time_limit_s" ? (j[k] < 0 ? "unlimited" : fmtDuration(j[k])) : String(j[k])}</dd></>
            ))}</dl>
          </Section>
          <Section title="ClusterCockpit">
            {j.clustercockpit ? <pre class="mono">{JSON.stringify(j.clustercockpit, null, 1)}</pre> : <p class="muted">No ClusterCockpit job joined.</p>}
          </Section>
        </>
      )}
    </>
  );
}
