// Small pieces every view uses: times with UTC on hover, loading and error states, a data hook,
// the time-window bar, and uPlot charts that zoom into the URL's window.
import { h, ComponentChildren } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import uPlot from "uplot";
import { plain } from "./lib/bidi";
import { fmtLocal, fmtUtc } from "./lib/format";
import { rfc3339, Window } from "./lib/timewin";
import { Series } from "./lib/series";
import { navigate } from "./router";

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
  loading: boolean;
}

/** Runs `load` whenever `key` changes; the answer of an older key is dropped. */
export function useLoad<T>(key: string, load: () => Promise<T>): Loaded<T> {
  const [state, setState] = useState<Loaded<T>>({ loading: true });
  useEffect(() => {
    let live = true;
    setState((s) => ({ data: s.data, loading: true }));
    load().then(
      (data) => live && setState({ data, loading: false }),
      (e) => live && setState({ error: String(e?.message ?? e), loading: false }),
    );
    return () => {
      live = false;
    };
  }, [key]);
  return state;
}

export function Status({ s }: { s: Loaded<unknown> }) {
  if (s.error) return <p class="error" role="alert">{s.error}</p>;
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

/** Quick windows and the window shown; choosing one rewrites the URL's from/to. */
export function WindowBar({ w, params, path }: { w: Window; params: Record<string, string>; path: string }) {
  const go = (from?: string, to?: string) => {
    const q = new URLSearchParams(params);
    q.delete("from");
    q.delete("to");
    q.delete("cursor");
    if (from) q.set("from", from);
    if (to) q.set("to", to);
    navigate(`${path}?${q}`);
  };
  return (
    <div class="windowbar">
      <span>
        <Time t={rfc3339(w.from)} /> – <Time t={rfc3339(w.to)} />
      </span>
      {["1h", "6h", "1d", "7d", "30d"].map((d) => (
        <button type="button" onClick={() => go(`now-${d}`, "now")}>{d}</button>
      ))}
      <button type="button" title="the day up to the cluster's latest sample" onClick={() => go()}>latest</button>
    </div>
  );
}


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
  useEffect(() => {
    if (!ref.current) return;
    const fg = cssVar("--fg", "#222");
    const grid = cssVar("--grid", "rgba(128,128,128,0.2)");
    const axis = { stroke: fg, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid, width: 1 } };
    const opts: uPlot.Options = {
      title: title && plain(title),
      width: Math.max(300, ref.current.clientWidth),
      height,
      series: [
        {},
        ...series.map((s, i) => ({
          label: plain(s.label), // uPlot writes its legend itself, past the vnode hook
          stroke: PALETTE[i % PALETTE.length],
          width: 1.5,
          spanGaps: false,
          value: (_u: uPlot, v: number | null) => (v === null || v === undefined ? "–" : fmt ? fmt(v) : `${+v.toFixed(2)}${unit ?? ""}`),
        })),
      ],
      axes: [axis, { ...axis, size: 80, values: (_u, vals) => vals.map((v) => (fmt ? fmt(v) : `${v}${unit ?? ""}`)) }],
      scales: {
        x: { time: true, range: (_u, min, max) => (win ? [win.from, win.to] : [min, max]) },
        // from zero: a load or a size read against nothing is easy to misjudge
        y: { range: (_u, _min, max) => [0, max > 0 ? max * 1.08 : 1] },
      },
      cursor: { drag: { x: true, y: false } },
      legend: { show: series.length <= 12 },
      hooks: {
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
    const resize = () => ref.current && plot.setSize({ width: Math.max(300, ref.current.clientWidth), height });
    addEventListener("resize", resize);
    return () => {
      removeEventListener("resize", resize);
      plot.destroy();
    };
  }, [title, x, series]);
  return <div class="plot" ref={ref} data-title={title} data-series={series.length} />;
}

