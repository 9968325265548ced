// Metrics: ClusterCockpit/line-protocol metrics of nodes through cc-metric-store's query
// (POST /api/query): one chart per metric, one line per node (for-all-nodes when no node is named).
import { getJson, postJson } from "../api";
import { Plot, Status, useLoad, WindowBar } from "../components";
import { fmtNum } from "../lib/format";
import { queryString } from "../lib/params";
import { ccTimes } from "../lib/series";
import { bucketFor } from "../lib/timewin";
import { href, navigate } from "../router";
import { PickCluster } from "./clusters";
import { viewWindow } from "./common";

/** ClusterCockpit's usual names, offered while the cluster's own catalogue is not known. */
const COMMON = ["cpu_load", "cpu_user", "mem_used", "flops_any", "mem_bw", "net_bw", "ib_recv", "ib_xmit",
  "nfs4_read", "nfs4_write", "acc_utilization", "acc_mem_used", "acc_power", "clock", "cpu_power"];

async function load(p: Record<string, string>) {
  const w = await viewWindow(p);
  const metrics = (p.metric || "cpu_load").split(",").map((m) => m.trim()).filter(Boolean);
  const resolution = Number(p.resolution) || bucketFor(w);
  const hosts = p.host ? p.host.split(",").map((x) => x.trim()).filter(Boolean) : [];
  const req = hosts.length
    ? { cluster: p.cluster, from: w.from, to: w.to, queries: metrics.flatMap((m) => hosts.map((h) => ({ metric: m, host: h, resolution }))) }
    : { cluster: p.cluster, from: w.from, to: w.to, queries: [], "for-all-nodes": metrics };
  const ans = await postJson("/api/query", req);
  // hosts × metrics, in the order of ans.queries
  const charts = metrics.map((m) => {
    const idx = ans.queries.map((q: any, i: number) => (q.metric === m ? i : -1)).filter((i: number) => i >= 0);
    // a host whose every value in the window is null has no line to draw (and "–" legends say nothing)
    const results = idx.map((i: number) => ({ host: ans.queries[i].host, r: ans.results[i]?.[0] }))
      .filter((x: any) => x.r && !x.r.error && (x.r.data ?? []).some((v: any) => v !== null));
    const first = results[0]?.r;
    const x = first ? ccTimes(first.from, first.resolution, first.data.length) : [];
    return {
      metric: m, x,
      series: results.map((x: any) => ({ label: x.host, values: x.r.data.map((v: any) => (v === null ? null : Number(v))) })),
      stats: results.map((x: any) => ({ host: x.host, avg: x.r.avg, min: x.r.min, max: x.r.max })),
    };
  });
  return { w, charts };
}

export function Metrics({ p }: { p: Record<string, string> }) {
  if (!p.cluster) return <><h1>Metrics</h1><PickCluster view="metrics" /></>;
  const s = useLoad(`metrics${queryString(p)}`, () => load(p));
  // the metrics the cluster has sent (GET /api/v1/metrics/catalog), with their units and scopes
  const cat = useLoad(`metric-catalog/${p.cluster}`, () =>
    getJson(`/api/v1/metrics/catalog${queryString({ cluster: p.cluster })}`).then((d: any) => d.metrics as any[]));
  const names: [string, string][] = cat.data?.length
    ? cat.data.map((m: any) => [m.metric, [m.unit, m.scopes.join(", "), m.frequency_s ? `every ${m.frequency_s} s` : "",
      `${m.n_hosts} host${m.n_hosts === 1 ? "" : "s"}`].filter(Boolean).join(" · ")])
    : COMMON.map((m) => [m, ""]);
  return (
    <>
      <h1>Metrics of {p.cluster}</h1>
      <form class="filters" onSubmit={(e) => {
        e.preventDefault();
        const f = new FormData(e.target as HTMLFormElement);
        const next: Record<string, string> = { ...p };
        for (const k of ["metric", "host", "resolution"]) next[k] = String(f.get(k) ?? "").trim();
        navigate(href("metrics", next));
      }}>
        <label>metrics <input name="metric" list="metric-names" value={p.metric ?? "cpu_load"} placeholder="cpu_load,mem_used" /></label>
        <datalist id="metric-names" data-from={cat.data?.length ? "catalog" : "common"}>
          {names.map(([m, what]) => <option value={m} label={what || undefined} />)}</datalist>
        <label>nodes <input name="host" value={p.host ?? ""} placeholder="every node with the metric" /></label>
        <label>resolution (s) <input name="resolution" value={p.resolution ?? ""} placeholder="auto" size={6} /></label>
        <button type="submit">Show</button>
      </form>
      {s.data && <WindowBar w={s.data.w} params={p} path="/ui/metrics" />}
      <Status s={s} />
      {s.data?.charts.map((c) => (
        <section class="metric" data-metric={c.metric}>
          {c.series.length === 0 ? <p class="muted no-data">No data of {c.metric} in this window: choose another (the bar above),
            or check the metric's name.</p> : (
            <>
              <Plot title={c.metric} x={c.x} series={c.series} window={s.data!.w} zoomPath="/ui/metrics" zoomParams={{ cluster: p.cluster, metric: p.metric ?? "", host: p.host ?? "" }} />
              <div class="scroll"><table class="data stats"><thead><tr><th>node</th><th class="num">avg</th><th class="num">min</th><th class="num">max</th></tr></thead>
                <tbody>{c.stats.map((x: any) => <tr data-host={x.host}><td>{x.host}</td><td class="num" data-k="avg">{fmtNum(x.avg, 3)}</td><td class="num">{fmtNum(x.min, 3)}</td><td class="num">{fmtNum(x.max, 3)}</td></tr>)}</tbody></table></div>
            </>
          )}
        </section>
      ))}
    </>
  );
}
