// Nodes: a heatmap of every node's CPU, memory or GPU load over the window, and a table of each
// node's load now (its latest bucket) and over the window; a node's page with its plots, hardware,
// topology, Slurm state and errors.
import { useEffect, useRef, useState } from "preact/hooks";
import { getJson, getText } from "../api";
import { Plot, Section, Status, Time, useLoad, WindowBar } from "../components";
import { plain } from "../lib/bidi";
import { fmtKb, fmtPct, fmtLocal, fmtUtc, sortNatural } from "../lib/format";
import { heatColor, memPct, mergeAliases, nodeState } from "../lib/nodes";
import { align, columnPoints, epochOf, mean } from "../lib/series";
import { alignWindow, bucketFor, rfc3339 } from "../lib/timewin";
import { queryString } from "../lib/params";
import { href, navigate } from "../router";
import { PickCluster } from "./clusters";
import { getClusters, viewWindow } from "./common";

const enc = encodeURIComponent;
type Metric = "cpu" | "mem" | "gpu";
const METRICS: [Metric, string][] = [["cpu", "CPU %"], ["mem", "memory %"], ["gpu", "GPU %"]];

function pointValue(m: Metric, p: any, memoryKb: number | null): number | null {
  if (m === "cpu") return p.cpu_util ?? null;
  // a node without GPUs has no GPU utilisation (null): no count of cards is needed to tell
  if (m === "gpu") return p.gpu_util ?? null;
  return memPct(p.mem_kb, memoryKb);
}

interface NodeRow {
  node: string;
  /** the machine's other name (a Slurm short name), merged into this row */
  aliases: string[];
  state: string;
  info: any;
  points: any[];
  /** the latest 5-minute bucket near the window's end (undefined: none) */
  now?: any;
}

/** "Now" is the node's latest NOW_BUCKET_S bucket in the NOW_SPAN_S before the window's end, not its
 * latest grid column: that is the mean of a whole hour (26 % on a node whose last 5 minutes were 1 %). */
const NOW_BUCKET_S = 300;
const NOW_SPAN_S = 1800;
/** The load columns the grid and the table show. */
const GRID_FIELDS = ["cpu_util", "mem_kb", "gpu_util"];

async function loadNodes(p: Record<string, string>) {
  const shown = await viewWindow(p);
  // a cluster that sends only line protocol (or Chimbuko) has no Sonar nodes to ask for
  const listed = (await getClusters()).find((x) => x.cluster === p.cluster);
  if (listed && !listed.nodes) return { w: shown, bucket: 3600, rows: [] as NodeRow[], cols: [] as number[] };
  // About 24 columns: a day's grid is then in whole hours, which the API reads from its hourly
  // roll-ups; at 15 minutes, a thousand nodes' answer is four times the size (37 MB) and slower.
  const bucket = bucketFor(shown, 24);
  // Whole buckets, so the grid's first column is the API's first bucket (not one before it).
  const w = alignWindow(shown, bucket);
  const c = enc(p.cluster);
  const host = p.host ? `&host=${enc(p.host)}` : "";
  // The grid's answer by columns, and only what the grid and the table show (docs/api.md,
  // layout=columns): a thousand nodes' day is then about a twentieth of the rows answer.
  const grid = `layout=columns&fields=${GRID_FIELDS.join(",")}`;
  const [nodes, load, recent, clusters] = await Promise.all([
    getJson(`/api/v1/nodes?cluster=${c}${host}`),
    // to one second before the window's end: its buckets, not also the one that starts at its end
    getJson(`/api/v1/load/nodes?cluster=${c}${host}&from=${w.from}&to=${w.to - 1}&bucket=${bucket}&${grid}`),
    getJson(`/api/v1/load/nodes?cluster=${c}${host}&from=${shown.to - NOW_SPAN_S}&to=${shown.to}&bucket=${NOW_BUCKET_S}&${grid}`),
    getClusters(),
  ]);
  const nowOf = new Map<string, any>(recent.load.map((l: any) => {
    const pts = columnPoints(l, GRID_FIELDS, shown.to - NOW_SPAN_S, NOW_BUCKET_S);
    return [l.node, pts[pts.length - 1]];
  }));
  const last = clusters.find((x) => x.cluster === p.cluster)?.last_seen ?? null;
  const byNode = new Map<string, any[]>(load.load.map((l: any) => [l.node, columnPoints(l, GRID_FIELDS, w.from, bucket)]));
  const merged: NodeRow[] = mergeAliases(nodes.nodes as any[]).map((n) => {
    const name = [n.node, ...n.aliases].find((x) => byNode.has(x)) ?? n.node;
    return { node: n.node, aliases: n.aliases, info: n, points: byNode.get(name) ?? [], now: nowOf.get(name),
      state: nodeState(n.states, n.last_seen, last) };
  });
  const rows = sortNatural(merged, (r) => r.node);
  const cols: number[] = [];
  for (let t = Math.floor(w.from / bucket) * bucket; t < w.to; t += bucket) cols.push(t);
  return { w, bucket, rows, cols };
}

function Heatmap({ rows, cols, bucket, metric, cluster }: {
  rows: NodeRow[]; cols: number[]; bucket: number; metric: Metric; cluster: string;
}) {
  const ref = useRef<HTMLCanvasElement>(null);
  const [hover, setHover] = useState("");
  const rowH = Math.max(2, Math.min(14, Math.floor(600 / Math.max(1, rows.length))));
  const [labelW, setLabelW] = useState(rowH >= 10 ? 160 : 0);
  const [focus, setFocus] = useState<{ i: number; k: number } | null>(null);
  useEffect(() => {
    const cv = ref.current;
    if (!cv) return;
    const width = Math.max(200, cv.parentElement!.clientWidth);
    // names take at most a third of a narrow screen
    const lw = rowH >= 10 ? Math.min(160, Math.floor(width / 3)) : 0;
    if (lw !== labelW) setLabelW(lw);
    const dpr = window.devicePixelRatio || 1;
    cv.width = width * dpr;
    cv.height = rows.length * rowH * dpr;
    cv.style.width = `${width}px`;
    cv.style.height = `${rows.length * rowH}px`;
    const g = cv.getContext("2d")!;
    g.scale(dpr, dpr);
    const cellW = (width - labelW) / Math.max(1, cols.length);
    const first = cols[0] ?? 0;
    g.font = "11px system-ui, sans-serif";
    g.textBaseline = "middle";
    const fg = getComputedStyle(document.documentElement).getPropertyValue("--fg") || "#222";
    rows.forEach((r, i) => {
      if (labelW) {
        g.fillStyle = fg;
        const name = plain(r.node); // drawn on the canvas, past the vnode hook
        g.fillText(name.length > 22 ? name.slice(0, 21) + "…" : name, 2, i * rowH + rowH / 2);
      }
      g.fillStyle = heatColor(null);
      g.fillRect(labelW, i * rowH, width - labelW, rowH - (rowH > 4 ? 1 : 0));
      for (const pt of r.points) {
        const k = Math.round((epochOf(pt.time) - first) / bucket);
        g.fillStyle = heatColor(pointValue(metric, pt, r.info.memory_kb));
        g.fillRect(labelW + k * cellW, i * rowH, Math.ceil(cellW), rowH - (rowH > 4 ? 1 : 0));
      }
    });
    if (focus) {
      g.strokeStyle = fg;
      g.lineWidth = 2;
      g.strokeRect(labelW + focus.k * cellW + 1, focus.i * rowH + 1, Math.max(2, cellW - 2), Math.max(2, rowH - 2));
    }
  }, [rows, cols, metric, labelW, focus]);
  const describe = (row: NodeRow | undefined, t: number | undefined) => {
    if (!row || t === undefined) return "";
    const pt = row.points.find((p) => epochOf(p.time) === t);
    const v = pt ? pointValue(metric, pt, row.info.memory_kb) : null;
    return `${row.node} · ${fmtLocal(rfc3339(t))} (${fmtUtc(rfc3339(t))}) · ${v === null ? "no data" : fmtPct(v)}`;
  };
  // The keyboard's way in: arrows move a cell, Enter opens its node (the hover line names it).
  const key = (e: KeyboardEvent) => {
    const f = focus ?? { i: 0, k: Math.max(0, cols.length - 1) };
    const moves: Record<string, [number, number]> = { ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1],
      Home: [0, -cols.length], End: [0, cols.length], PageUp: [-10, 0], PageDown: [10, 0] };
    if (e.key === "Enter" && rows[f.i]) return navigate(href("node", { cluster }, rows[f.i].node));
    const m = moves[e.key];
    if (!m) return;
    e.preventDefault();
    const n = { i: Math.min(rows.length - 1, Math.max(0, f.i + m[0])), k: Math.min(cols.length - 1, Math.max(0, f.k + m[1])) };
    setFocus(n);
    setHover(describe(rows[n.i], cols[n.k]));
  };
  const at = (e: MouseEvent) => {
    const cv = ref.current!;
    const b = cv.getBoundingClientRect();
    const i = Math.floor((e.clientY - b.top) / rowH);
    const k = Math.floor(((e.clientX - b.left - labelW) / (b.width - labelW)) * cols.length);
    return { row: rows[i], t: cols[k] };
  };
  return (
    <div class="heatmap">
      <canvas ref={ref} id="heatmap" data-rows={rows.length} data-cols={cols.length} tabIndex={0} role="img"
        aria-label={`${METRICS.find(([m]) => m === metric)?.[1]} of ${rows.length} nodes over ${cols.length} columns; arrow keys move a cell, Enter opens its node`}
        aria-describedby="heatmap-hover"
        onKeyDown={key}
        onFocus={() => !focus && rows.length && setHover(describe(rows[0], cols[cols.length - 1]))}
        onMouseMove={(e) => {
          const { row, t } = at(e);
          setHover(describe(row, t));
        }}
        onMouseLeave={() => setHover("")}
        onClick={(e) => {
          const { row } = at(e);
          if (row) navigate(href("node", { cluster }, row.node));
        }} />
      <div class="muted hover" id="heatmap-hover" aria-live="polite">{hover || "hover a cell (or focus the grid and use the arrow keys); click a row for the node"}</div>
      <div class="legend-scale"><span>0%</span><span class="scale" /><span>100%</span><span class="muted"> grey: no data</span></div>
    </div>
  );
}

export function Nodes({ p }: { p: Record<string, string> }) {
  if (!p.cluster) return <><h1>Nodes</h1><PickCluster view="nodes" /></>;
  const metric = (p.metric as Metric) || "cpu";
  const s = useLoad(`nodes${queryString(p)}`, () => loadNodes(p));
  const set = (k: string, v: string) => navigate(href("nodes", { ...p, [k]: v }));
  return (
    <>
      <h1>Nodes of {p.cluster}</h1>
      <form class="filters" onSubmit={(e) => {
        e.preventDefault();
        set("host", String(new FormData(e.target as HTMLFormElement).get("host") ?? ""));
      }}>
        <label>nodes <input name="host" value={p.host ?? ""} placeholder="e.g. c1-[1-8], gpu-*" /></label>
        <button type="submit">Show</button>
        <span class="seg">{METRICS.map(([m, label]) => (
          <button type="button" aria-pressed={metric === m} onClick={() => set("metric", m)}>{label}</button>
        ))}</span>
      </form>
      {s.data && <WindowBar w={s.data.w} params={p} path="/ui/nodes" />}
      <Status s={s} />
      {s.data && s.data.rows.length === 0 && <p class="muted" id="no-nodes">No node of {p.cluster}{p.host ? ` matches ${p.host}` : " has sent Sonar data"}.
        {" "}Its line-protocol metrics are in <a href={href("metrics", { cluster: p.cluster })}>Metrics</a>.</p>}
      {s.data && s.data.rows.length > 0 && (
        <>
          <Heatmap rows={s.data.rows} cols={s.data.cols} bucket={s.data.bucket} metric={metric} cluster={p.cluster} />
          <div class="scroll"><table class="data" id="nodes">
            <thead><tr><th>node</th><th>state</th><th>Slurm</th><th class="num">cores</th><th class="num">memory</th>
              <th class="num">GPUs</th><th class="num">CPU now</th><th class="num">CPU window</th><th class="num">mem now</th>
              <th class="num">GPU now</th><th>last seen</th></tr></thead>
            <tbody>
              {s.data.rows.map((r) => {
                const last = r.now;
                return (
                  <tr data-node={r.node}>
                    <td><a href={href("node", { cluster: p.cluster }, r.node)}>{r.node}</a>
                      {r.aliases.length > 0 && <span class="muted alias" title="the same node under its Slurm name"> ({r.aliases.join(", ")})</span>}</td>
                    <td class={r.state}>{r.state}</td>
                    <td>{(r.info.states ?? []).join(", ")}</td>
                    <td class="num">{r.info.cores ?? ""}</td>
                    <td class="num">{fmtKb(r.info.memory_kb)}</td>
                    <td class="num">{r.info.gpus ?? ""}</td>
                    <td class="num" data-k="cpu_now">{last ? fmtPct(last.cpu_util) : ""}</td>
                    <td class="num">{fmtPct(mean(r.points.map((x) => x.cpu_util)))}</td>
                    <td class="num" data-k="mem_now">{last ? fmtPct(memPct(last.mem_kb, r.info.memory_kb)) : ""}</td>
                    <td class="num">{last ? fmtPct(last.gpu_util) : ""}</td>
                    <td><Time t={r.info.last_seen} /></td>
                  </tr>
                );
              })}
            </tbody>
          </table></div>
        </>
      )}
    </>
  );
}

/* --- one node ---------------------------------------------------------------------------- */

async function loadNode(p: Record<string, string>, node: string) {
  const w = await viewWindow(p);
  const bucket = bucketFor(w);
  const c = enc(p.cluster);
  const h = enc(node);
  const win = `from=${w.from}&to=${w.to}`;
  const [info, load, gpus, sysinfo, slurm, errors] = await Promise.all([
    getJson(`/api/v1/nodes?cluster=${c}&host=${h}`),
    getJson(`/api/v1/load/nodes?cluster=${c}&host=${h}&${win}&bucket=${bucket}`),
    getJson(`/api/v1/load/gpus?cluster=${c}&host=${h}&${win}&bucket=${bucket}`),
    getJson(`/api/v1/nodes/${h}/sysinfo?cluster=${c}`),
    getJson(`/api/v1/slurm/nodes?cluster=${c}&host=${h}`),
    getJson(`/api/v1/errors?cluster=${c}&host=${h}&limit=50`),
  ]);
  return {
    w, bucket,
    info: info.nodes.find((n: any) => n.node === node),
    points: load.load.find((l: any) => l.node === node)?.points ?? [],
    cards: gpus.load.filter((g: any) => g.node === node),
    sysinfo: sysinfo.sysinfo,
    slurm: slurm.nodes.filter((n: any) => n.node === node),
    errors: errors.errors.filter((e: any) => e.node === node),
  };
}

function Topology({ cluster, node }: { cluster: string; node: string }) {
  const [url, setUrl] = useState<string | null>(null);
  const [err, setErr] = useState("");
  useEffect(() => {
    let u: string | null = null;
    getText(`/api/v1/nodes/${enc(node)}/topology?cluster=${enc(cluster)}`, "image/svg+xml").then((svg) => {
      u = URL.createObjectURL(new Blob([svg], { type: "image/svg+xml" }));
      setUrl(u);
    }, (e) => setErr(e.status === 404 ? "no topology stored" : String(e.message)));
    return () => u && URL.revokeObjectURL(u);
  }, [cluster, node]);
  if (err) return <p class="muted">{err}</p>;
  return url ? <img class="topology" src={url} alt={`topology of ${node}`} /> : <p class="muted">loading…</p>;
}

export function NodePage({ p, node }: { p: Record<string, string>; node: string }) {
  const s = useLoad(`node/${node}${queryString(p)}`, () => loadNode(p, node));
  const d = s.data;
  const path = `/ui/node/${enc(node)}`;
  const zoom = { zoomPath: path, zoomParams: { cluster: p.cluster }, window: d?.w };
  const plot = (title: string, key: string | ((x: any) => number | null), unit = "", fmt?: (v: number) => string) => {
    const a = align([{ label: title, points: d!.points }], (x: any) => epochOf(x.time),
      typeof key === "string" ? (x: any) => x[key] : key);
    return <Plot title={title} x={a.x} series={a.series} unit={unit} fmt={fmt} {...zoom} />;
  };
  const gpuPlot = (title: string, key: string, unit = "", fmt?: (v: number) => string) => {
    const a = align(d!.cards.map((c: any) => ({ label: `gpu${c.card}`, points: c.points })), (x: any) => epochOf(x.time),
      (x: any) => x[key]);
    return <Plot title={title} x={a.x} series={a.series} unit={unit} fmt={fmt} {...zoom} />;
  };
  const kbFmt = (v: number) => fmtKb(v);
  return (
    <>
      <h1>Node {node} <span class="muted">({p.cluster})</span></h1>
      {d && <WindowBar w={d.w} params={p} path={path} />}
      <Status s={s} />
      {d && !d.info && <p class="error">No node {node} in {p.cluster}.</p>}
      {d && d.info && (
        <>
          <dl class="facts" id="node-facts">
            <dt>last seen</dt><dd><Time t={d.info.last_seen} /></dd>
            <dt>CPU</dt><dd>{d.info.cpu_model ?? ""} ({d.info.sockets ?? "?"}×{d.info.cores_per_socket ?? "?"}×{d.info.threads_per_core ?? "?"} = <span data-k="cores">{d.info.cores ?? "?"}</span> threads)</dd>
            <dt>memory</dt><dd data-k="memory">{fmtKb(d.info.memory_kb)}</dd>
            <dt>OS</dt><dd>{d.info.os_name} {d.info.os_release} {d.info.architecture}</dd>
            <dt>GPUs</dt><dd data-k="gpus">{d.info.gpus ?? 0}</dd>
            <dt>Slurm</dt><dd>{d.slurm.length ? d.slurm.map((x: any) => <>{x.states.join(", ")} <Time t={x.time} /></>) : "no Slurm state"}</dd>
            <dt>partitions</dt><dd>{(d.info.partitions ?? []).join(", ")}</dd>
          </dl>
          <Section title="Load">
            {d.points.length === 0 && <p class="muted">No samples in this window.</p>}
            <div class="plots">
              {plot("CPU utilisation", "cpu_util", "%")}
              {plot("memory used", "mem_kb", "", kbFmt)}
              {(() => {
                const a = align(["load1", "load5", "load15"].map((k) => ({ label: k, points: d.points.map((x: any) => ({ t: x.time, v: x[k] })) })),
                  (x: any) => epochOf(x.t), (x: any) => x.v);
                return <Plot title="load average" x={a.x} series={a.series} {...zoom} />;
              })()}
              {d.cards.length > 0 && gpuPlot("GPU utilisation per card", "gpu_util", "%")}
              {d.cards.length > 0 && gpuPlot("GPU memory per card", "gpu_mem_kb", "", kbFmt)}
              {d.cards.length > 0 && gpuPlot("GPU power per card", "gpu_power_w", " W")}
              {d.cards.length > 0 && gpuPlot("GPU temperature per card", "gpu_temp_c", " °C")}
            </div>
          </Section>
          <Section title="GPU cards">
            {(d.info.gpu_cards ?? []).length === 0 ? <p class="muted">none</p> : (
              <div class="scroll"><table class="data" id="gpu-cards"><thead><tr><th>index</th><th>model</th><th>memory</th><th>power limit</th><th>driver</th><th>UUID</th></tr></thead>
                <tbody>{d.info.gpu_cards.map((g: any) => (
                  <tr><td>{g.index}</td><td>{g.model}</td><td>{fmtKb(g.memory_kb)}</td><td>{g.power_limit ?? ""} W</td><td>{g.driver}</td><td class="mono">{g.uuid}</td></tr>
                ))}</tbody></table></div>
            )}
          </Section>
          <Section title="Hardware history (sysinfo)">
            <div class="scroll"><table class="data" id="sysinfo"><thead><tr><th>time</th><th>CPU</th><th class="num">threads</th><th class="num">memory</th><th class="num">GPUs</th><th>kernel</th></tr></thead>
              <tbody>{d.sysinfo.map((x: any) => (
                <tr><td><Time t={x.time} /></td><td>{x.cpu_model}</td><td class="num">{x.cores}</td><td class="num">{fmtKb(x.memory_kb)}</td><td class="num">{x.gpus}</td><td>{x.os_release}</td></tr>
              ))}</tbody></table></div>
          </Section>
          <Section title="Topology">{(d.info.topology ?? []).includes("svg") ? <Topology cluster={p.cluster} node={node} />
            : <p class="muted" id="no-topology">No topology stored for {node}.</p>}</Section>
          <Section title="Errors">
            {d.errors.length === 0 ? <p class="muted">none</p> : (
              <ul>{d.errors.map((e: any) => <li><Time t={e.time} /> {e.source}: {e.detail}</li>)}</ul>
            )}
            <a href={href("errors", { cluster: p.cluster, host: node })}>all errors of {node}</a>
          </Section>
          <p><a href={href("jobs", { cluster: p.cluster, host: node, from: rfc3339(d.w.from), to: rfc3339(d.w.to) })}>jobs on {node} in this window</a>
            {" · "}<a href={href("uptime", { cluster: p.cluster, host: node })}>uptime</a></p>
        </>
      )}
    </>
  );
}
