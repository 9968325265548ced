// Errors (Sonar's error records, paged by cursor) and uptime (each node's and GPU's up and down
// intervals, drawn as bars over the window).
import { getJson } from "../api";
import { Status, Time, useLoad, WindowBar } from "../components";
import { axisTimes, fmtDuration, fmtLocal, fmtUtc, naturalCompare } from "../lib/format";
import { queryString } from "../lib/params";
import { epochOf } from "../lib/series";
import { href, navigate } from "../router";
import { PickCluster } from "./clusters";
import { viewWindow } from "./common";

function HostFilter({ p, view }: { p: Record<string, string>; view: string }) {
  return (
    <form class="filters" onSubmit={(e) => {
      e.preventDefault();
      const host = String(new FormData(e.target as HTMLFormElement).get("host") ?? "").trim();
      navigate(href(view, { ...p, host, cursor: undefined, page: undefined }));
    }}>
      <label>nodes <input name="host" value={p.host ?? ""} placeholder="e.g. c1-[1-8], gpu-*" /></label>
      <button type="submit">Show</button>
    </form>
  );
}

export function Errors({ p }: { p: Record<string, string> }) {
  if (!p.cluster) return <><h1>Errors</h1><PickCluster view="errors" /></>;
  const api = `/api/v1/errors${queryString({ cluster: p.cluster, host: p.host, from: p.from, to: p.to, limit: 200, cursor: p.cursor })}`;
  const s = useLoad(api, () => getJson(api));
  return (
    <>
      <h1>Errors of {p.cluster}</h1>
      <HostFilter p={p} view="errors" />
      <Status s={s} />
      {s.data && (s.data.errors.length === 0 ? <p class="muted" id="no-errors">No errors.</p> : (
        <div class="scroll"><table class="data" id="errors"><thead><tr><th>time</th><th>node</th><th>source</th><th>kind</th><th>detail</th></tr></thead>
          <tbody>{s.data.errors.map((e: any) => (
            <tr><td><Time t={e.time} /></td><td>{e.node ? <a href={href("node", { cluster: p.cluster }, e.node)}>{e.node}</a> : ""}</td>
              <td>{e.source}</td><td>{e.kind}</td><td>{e.detail}</td></tr>
          ))}</tbody></table></div>
      ))}
      {s.data?.next && <a id="next" href={href("errors", { ...p, cursor: s.data.next })}>next page</a>}
    </>
  );
}

async function loadUptime(p: Record<string, string>) {
  const w = await viewWindow(p, 7 * 86400);
  const j = await getJson(`/api/v1/uptime${queryString({ cluster: p.cluster, host: p.host, from: w.from, to: w.to, interval: p.interval })}`);
  const rows = new Map<string, any[]>();
  for (const u of j.uptime) {
    const k = `${u.node}\u0000${u.device}`;
    if (!rows.has(k)) rows.set(k, []);
    rows.get(k)!.push(u);
  }
  const list = [...rows.entries()].map(([k, iv]) => ({ node: k.split("\u0000")[0], device: k.split("\u0000")[1], iv }));
  // gpu-2 before gpu-10, and a node's own row before its cards'
  list.sort((a, b) => naturalCompare(a.node, b.node) || (a.device === "node" ? -1 : b.device === "node" ? 1 : naturalCompare(a.device, b.device)));
  return { w, rows: list };
}

/** Ticks over the window for the bars' column: five times, in the tables' format. */
function TimeAxis({ w }: { w: { from: number; to: number } }) {
  const n = 4;
  const ticks = Array.from({ length: n + 1 }, (_, i) => Math.round(w.from + ((w.to - w.from) * i) / n));
  return (
    <div class="time-axis" aria-hidden="true">{axisTimes(ticks).map((t, i) => (
      <span style={{ left: `${(100 * i) / n}%` }} class={i === 0 ? "first" : i === n ? "last" : ""}>{t.replace("\n", " ")}</span>
    ))}</div>
  );
}

export function Uptime({ p }: { p: Record<string, string> }) {
  if (!p.cluster) return <><h1>Uptime</h1><PickCluster view="uptime" /></>;
  const s = useLoad(`uptime${queryString(p)}`, () => loadUptime(p));
  return (
    <>
      <h1>Uptime of {p.cluster}</h1>
      <HostFilter p={p} view="uptime" />
      {s.data && <WindowBar w={s.data.w} params={p} path="/ui/uptime" />}
      <Status s={s} />
      {s.data && (
        <>
        <p class="muted">Bars: green up, red down; blank before a node's first sample (not monitored yet).</p>
        {s.data.rows.length === 0 && <p class="muted" id="no-uptime">No node was monitored in this window.</p>}
        <div class="scroll"><table class="data uptime" id="uptime"><thead><tr><th>node</th><th>device</th><th class="num">up</th><th class="num">down</th>
          <th class="bars">intervals<TimeAxis w={s.data.w} /></th></tr></thead>
          <tbody>{s.data.rows.map((r) => {
            const span = s.data!.w.to - s.data!.w.from;
            const sum = (st: string) => r.iv.filter((x: any) => x.state === st).reduce((a: number, x: any) => a + x.duration_s, 0);
            return (
              <tr data-node={r.node} data-device={r.device}>
                <td><a href={href("node", { cluster: p.cluster }, r.node)}>{r.node}</a></td><td>{r.device}</td>
                <td class="num" data-k="up">{fmtDuration(sum("up"))}</td><td class="num" data-k="down">{fmtDuration(sum("down"))}</td>
                <td class="bars"><div class="track">{r.iv.map((x: any) => (
                  <span class={`iv ${x.state}`} title={`${x.state}: ${fmtLocal(x.start)} – ${fmtLocal(x.end)} (${fmtUtc(x.start)} – ${fmtUtc(x.end)})`}
                    style={{ left: `${(100 * (epochOf(x.start) - s.data!.w.from)) / span}%`, width: `${Math.max(0.2, (100 * x.duration_s) / span)}%` }} />
                ))}</div></td>
              </tr>
            );
          })}</tbody></table></div>
        </>
      )}
    </>
  );
}
