// Formatting of the API's figures for display. Pure functions (unit-tested in test/format.test.ts).

const KIB_UNITS = ["KiB", "MiB", "GiB", "TiB", "PiB"];

/** A size given in kibibytes (the API's `_kb` columns) as "1.5 GiB"; "" for null. */
export function fmtKb(kb: number | null | undefined): string {
  if (kb === null || kb === undefined || !Number.isFinite(kb)) return "";
  let v = kb;
  let u = 0;
  while (Math.abs(v) >= 1024 && u < KIB_UNITS.length - 1) {
    v /= 1024;
    u++;
  }
  // below 10 KiB a fraction is kept ("0.5 KiB"), else a plot's small ticks all read "1 KiB"
  if (u === 0 && !Number.isInteger(v) && Math.abs(v) < 10) return `${Number(v.toFixed(1))} KiB`;
  return `${u === 0 || v >= 100 ? Math.round(v) : v.toFixed(1)} ${KIB_UNITS[u]}`;
}

/** A number with at most `digits` decimals, no trailing zeros; "" for null. */
export function fmtNum(v: number | null | undefined, digits = 1): string {
  if (v === null || v === undefined || !Number.isFinite(v)) return "";
  return String(Number(v.toFixed(digits)));
}

/** A percentage ("12.5%"); "" for null. */
export function fmtPct(v: number | null | undefined, digits = 1): string {
  const s = fmtNum(v, digits);
  return s === "" ? "" : `${s}%`;
}

/** Seconds as "3d 4h", "2h 05m", "4m 10s", "12s". */
export function fmtDuration(s: number | null | undefined): string {
  if (s === null || s === undefined || !Number.isFinite(s)) return "";
  const t = Math.max(0, Math.round(s));
  const d = Math.floor(t / 86400);
  const h = Math.floor((t % 86400) / 3600);
  const m = Math.floor((t % 3600) / 60);
  const sec = t % 60;
  const two = (n: number) => String(n).padStart(2, "0");
  if (d) return `${d}d ${h}h`;
  if (h) return `${h}h ${two(m)}m`;
  if (m) return `${m}m ${two(sec)}s`;
  return `${sec}s`;
}

/** Formatters by time zone: making one costs far more than using it, and a thousand-row table
 * formats a thousand times. */
const formatters = new Map<string, Intl.DateTimeFormat>();
function formatter(tz?: string): Intl.DateTimeFormat {
  const key = tz ?? "";
  let f = formatters.get(key);
  if (!f) {
    f = new Intl.DateTimeFormat("en-CA", {
      timeZone: tz,
      year: "numeric",
      month: "2-digit",
      day: "2-digit",
      hour: "2-digit",
      minute: "2-digit",
      second: "2-digit",
      hourCycle: "h23",
    });
    formatters.set(key, f);
  }
  return f;
}

/** An RFC 3339 time in the browser's time zone ("2025-11-25 10:52:00"), or with `tz` in another. */
export function fmtLocal(iso: string | null | undefined, tz?: string): string {
  if (!iso) return "";
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  const parts = formatter(tz).formatToParts(d);
  const p = (t: string) => parts.find((x) => x.type === t)?.value ?? "";
  return `${p("year")}-${p("month")}-${p("day")} ${p("hour")}:${p("minute")}:${p("second")}`;
}

/** The same time in UTC, as shown on hover ("2025-11-25 09:52:00 UTC"). */
export function fmtUtc(iso: string | null | undefined): string {
  if (!iso) return "";
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  return d.toISOString().replace("T", " ").replace(/\.\d+Z$/, " UTC").replace(/Z$/, " UTC");
}

/** "5m ago", "3h ago", "2d ago" of a time relative to `nowMs`. */
export function fmtAgo(iso: string | null | undefined, nowMs: number): string {
  if (!iso) return "never";
  const s = (nowMs - new Date(iso).getTime()) / 1000;
  if (s < 0) return "in the future";
  if (s < 90) return `${Math.round(s)}s ago`;
  if (s < 5400) return `${Math.round(s / 60)}m ago`;
  if (s < 172800) return `${Math.round(s / 3600)}h ago`;
  return `${Math.round(s / 86400)}d ago`;
}

/** Compares names as people read them: digit runs as numbers (gpu-2 before gpu-10). */
export function naturalCompare(a: string, b: string): number {
  return comparePieces(pieces(a), pieces(b));
}

/** A name cut into its digit runs and the rest, for naturalCompare (sortNatural cuts once per name). */
function pieces(s: string): string[] {
  return s.match(/\d+|\D+/g) ?? [];
}

/** Sorts by a name as people read them, cutting each name once (a thousand nodes: a thousand cuts, not
 * twenty thousand). */
export function sortNatural<T>(list: T[], name: (x: T) => string): T[] {
  const keyed = list.map((x) => ({ x, k: pieces(name(x)) }));
  keyed.sort((a, b) => comparePieces(a.k, b.k));
  return keyed.map((e) => e.x);
}

function comparePieces(ra: string[], rb: string[]): number {
  for (let i = 0; i < Math.min(ra.length, rb.length); i++) {
    const x = ra[i], y = rb[i];
    if (x === y) continue;
    const nx = /^\d/.test(x), ny = /^\d/.test(y);
    if (nx && ny) {
      const d = Number(x) - Number(y);
      if (d) return d;
    }
    return x < y ? -1 : 1;
  }
  return ra.length - rb.length;
}

/** A plot's time-axis ticks (epoch seconds) in the tables' format: "HH:MM", with the date
 * ("YYYY-MM-DD") under the first tick and under each tick where the day changes. */
export function axisTimes(ticks: number[], tz?: string): string[] {
  let day = "";
  return ticks.map((s) => {
    const [d, t] = fmtLocal(new Date(s * 1000).toISOString(), tz).split(" ");
    const hm = t.slice(0, 5);
    if (d === day) return hm;
    day = d;
    return `${hm}\n${d}`;
  });
}
