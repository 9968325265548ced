// Small pieces every view uses: times with UTC on hover, loading and error states, a data hook,
// the time-window bar, and uPlot charts that zoom into the URL's window.
import { h, ComponentChildren } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import uPlot from "uplot";
import { ApiError } from "./api";
import { plain } from "./lib/bidi";
import { axisTimes, fmtAgo, fmtLocal, fmtUtc } from "./lib/format";
import { parseDuration, rfc3339, Window } from "./lib/timewin";
import { Series } from "./lib/series";
import { navigate } from "./router";
import { getClusters } from "./views/common";

export function Time({ t }: { t: string | null | undefined }) {
  if (!t) return <span class="muted">–</span>;
  return <time dateTime={t} title={fmtUtc(t)}>{fmtLocal(t)}</time>;
}

export function Unknown({ what }: { what?: string }) {
  return <span class="unknown" title={what ?? "not known: no Slurm record"}>unknown</span>;
}

export interface Loaded<T> {
  data?: T;
  error?: string;
  /** the server did not answer at all (stopped, restarting, network down) */
  offline?: boolean;
  loading: boolean;
  /** loads again (the error's "retry") */
  retry: () => void;
}

/** How often a view retries by itself while the server does not answer. */
const OFFLINE_RETRY_MS = 5000;

/** Runs `load` whenever `key` changes; the answer of an older key is dropped. While the server does
 * not answer, it tries again every few seconds, so the view recovers by itself when it is back. */
export function useLoad<T>(key: string, load: () => Promise<T>): Loaded<T> {
  const [tries, setTries] = useState(0);
  const retry = () => setTries((n) => n + 1);
  const [state, setState] = useState<Omit<Loaded<T>, "retry">>({ loading: true });
  useEffect(() => {
    let live = true;
    let timer: ReturnType<typeof setTimeout> | undefined;
    setState((s) => ({ data: s.data, loading: true }));
    load().then(
      (data) => live && setState({ data, loading: false }),
      (e) => {
        if (!live) return;
        const offline = e instanceof ApiError && e.status === 0;
        setState({ error: String(e?.message ?? e), offline, loading: false });
        if (offline) timer = setTimeout(retry, OFFLINE_RETRY_MS);
      },
    );
    return () => {
      live = false;
      if (timer) clearTimeout(timer);
    };
  }, [key, tries]);
  return { ...state, retry };
}

/** Loading, or what went wrong in words, with a retry (and, when the server did not answer, the
 * note that the view tries again by itself). */
export function Status({ s }: { s: Loaded<unknown> }) {
  if (s.error)
    return (
      <div class="failure" role="alert">
        <p class="error">{s.error}</p>
        {s.offline && <p class="muted">Trying again every {OFFLINE_RETRY_MS / 1000} s; the view comes back by itself when the server answers.</p>}
        <button type="button" class="retry" onClick={s.retry}>Retry</button>
      </div>
    );
  if (s.loading) return <p class="muted loading">loading…</p>;
  return null;
}

export function Section({ title, children, id }: { title: string; children: ComponentChildren; id?: string }) {
  return (
    <section id={id}>
      <h2>{title}</h2>
      {children}
    </section>
  );
}

/** How long after a cluster's latest sample its data counts as stopped (the window bar says so). */
const STOPPED_AFTER_S = 15 * 60;

/** Quick windows and the window shown; choosing one rewrites the URL's from/to. When the cluster's
 * data stopped (its latest sample is older than a quarter of an hour), the bar says when, and its
 * windows end at that latest sample: counted back from the clock they would show nothing. */
export function WindowBar({ w, params, path }: { w: Window | null; params: Record<string, string>; path: string }) {
  const c = useLoad(`windowbar-clusters`, getClusters);
  const latest = c.data?.find((x) => x.cluster === params.cluster)?.last_seen ?? null;
  const latestS = latest ? Math.ceil(Date.parse(latest) / 1000) : null;
  const nowS = Math.floor(Date.now() / 1000);
  const stopped = latestS !== null && nowS - latestS > STOPPED_AFTER_S;
  const go = (from?: string, to?: string) => {
    const q = new URLSearchParams(params);
    q.delete("from");
    q.delete("to");
    q.delete("cursor");
    if (from) q.set("from", from);
    if (to) q.set("to", to);
    navigate(`${path}?${q}`);
  };
  const span = (d: string) => {
    if (!stopped) return go(`now-${d}`, "now");
    const end = latestS! + 60;
    go(rfc3339(end - (parseDuration(d) ?? 86400)), rfc3339(end));
  };
  return (
    <div class="windowbar" role="group" aria-label="time window">
      <span class="shown">
        {w ? <><Time t={rfc3339(w.from)} /> – <Time t={rfc3339(w.to)} /></> : "all time"}
      </span>
      {["1h", "6h", "1d", "7d", "30d"].map((d) => (
        <button type="button" title={stopped ? `the ${d} up to the cluster's latest sample` : `the last ${d}`}
          onClick={() => span(d)}>{d}</button>
      ))}
      <button type="button" title={w ? "the day up to the cluster's latest sample" : "no window: all time"} onClick={() => go()}>{w ? "latest" : "all"}</button>
      {stopped && <>
        <button type="button" title="counted back from the clock" onClick={() => go("now-1d", "now")}>up to now</button>
        <span class="muted stopped" id="data-stopped">Data stopped {fmtAgo(latest, nowS * 1000)}, at <Time t={latest} />: the
          windows end there.</span>
      </>}
    </div>
  );
}

/** A time-series chart's x axis in the tables' time format (the browser's zone, 24-hour). */
function timeAxis(fg: string, grid: string): uPlot.Axis {
  return { stroke: fg, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid, width: 1 }, size: 44,
    values: (_u, ticks) => axisTimes(ticks) };
}

/** Above this many series a legend is a wall: the plot names the line nearest the pointer instead. */
const LEGEND_MAX = 12;

const PALETTE = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
  "#9c755f", "#bab0ac"];

function cssVar(name: string, fallback: string): string {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim() || fallback;
}

/** A time-series chart (uPlot): x in epoch seconds, shown in the browser's time zone. Dragging over it
 * zooms into that range by rewriting the URL's window (the API then answers finer buckets);
 * `zoomParams` are the URL parameters kept. */
export function Plot({ title, x, series, unit, height = 200, zoomPath, zoomParams, fmt, window: win }: {
  title: string;
  /** the x range shown (the view's window), so a few points sit where they belong in it */
  window?: Window;
  x: number[];
  series: Series[];
  unit?: string;
  height?: number;
  zoomPath?: string;
  zoomParams?: Record<string, string>;
  fmt?: (v: number) => string;
}) {
  const ref = useRef<HTMLDivElement>(null);
  const readout = useRef<HTMLDivElement>(null);
  useEffect(() => {
    if (!ref.current) return;
    const many = series.length > LEGEND_MAX;
    const show = (v: number | null | undefined) => (v === null || v === undefined ? "–" : fmt ? fmt(v) : `${+v.toFixed(2)}${unit ?? ""}`);
    const fg = cssVar("--fg", "#222");
    const grid = cssVar("--grid", "rgba(128,128,128,0.2)");
    const axis = { stroke: fg, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid, width: 1 } };
    const opts: uPlot.Options = {
      title: title && plain(title),
      width: Math.max(200, ref.current.clientWidth),
      height,
      series: [
        { value: (_u: uPlot, v: number | null) => (v === null || v === undefined ? "–" : fmtLocal(rfc3339(v))) },
        ...series.map((s, i) => ({
          label: plain(s.label), // uPlot writes its legend itself, past the vnode hook
          stroke: PALETTE[i % PALETTE.length],
          width: 1.5,
          spanGaps: false,
          value: (_u: uPlot, v: number | null) => show(v),
        })),
      ],
      axes: [timeAxis(fg, grid), { ...axis, size: 80, values: (_u, vals) => vals.map((v) => (fmt ? fmt(v) : `${v}${unit ?? ""}`)) }],
      scales: {
        x: { time: true, range: (_u, min, max) => (win ? [win.from, win.to] : [min, max]) },
        // from zero: a load or a size read against nothing is easy to misjudge
        y: { range: (_u, _min, max) => [0, max > 0 ? max * 1.08 : 1] },
      },
      cursor: { drag: { x: true, y: false } },
      legend: { show: !many },
      hooks: {
        // with many series: the line nearest the pointer, named under the plot
        setCursor: [
          (u) => {
            if (!many || !readout.current) return;
            const i = u.cursor.idx;
            const top = u.cursor.top;
            if (i === null || i === undefined || top === undefined || top < 0) {
              readout.current.textContent = `${series.length} lines: point at one to name it`;
              return;
            }
            const y = u.posToVal(top, "y");
            let best = -1;
            let dist = Infinity;
            series.forEach((s, k) => {
              const v = s.values[i];
              if (v !== null && v !== undefined && Math.abs(v - y) < dist) (dist = Math.abs(v - y)), (best = k);
            });
            readout.current.textContent = best < 0 ? `${fmtLocal(rfc3339(x[i]))}: no value`
              : `${plain(series[best].label)}: ${show(series[best].values[i])} at ${fmtLocal(rfc3339(x[i]))}`;
          },
        ],
        setSelect: [
          (u) => {
            if (!zoomPath || u.select.width < 5) return;
            const a = Math.floor(u.posToVal(u.select.left, "x"));
            const b = Math.ceil(u.posToVal(u.select.left + u.select.width, "x"));
            const q = new URLSearchParams(zoomParams ?? {});
            q.set("from", rfc3339(a));
            q.set("to", rfc3339(b));
            navigate(`${zoomPath}?${q}`);
          },
        ],
      },
    };
    const plot = new uPlot(opts, [x, ...series.map((s) => s.values)] as uPlot.AlignedData, ref.current);
    if (many && readout.current) readout.current.textContent = `${series.length} lines: point at one to name it`;
    const resize = () => ref.current && plot.setSize({ width: Math.max(200, ref.current.clientWidth), height });
    addEventListener("resize", resize);
    return () => {
      removeEventListener("resize", resize);
      plot.destroy();
    };
  }, [title, x, series]);
  return (
    <div class="plot-box">
      <div class="plot" ref={ref} data-title={title} data-series={series.length} role="img"
        aria-label={`${title}: ${series.length} line${series.length === 1 ? "" : "s"}`} />
      {series.length > LEGEND_MAX && <div class="plot-readout muted" ref={readout} aria-live="polite" />}
    </div>
  );
}

