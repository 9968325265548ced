// Time windows as the URL holds them: `from` and `to` in the API's own forms (RFC 3339, epoch
// seconds, `now`, `now-7d`), so a shared link means what the API makes of it. Pure functions.

const UNIT_S: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86400, w: 604800 };

/** A duration ("90", "15m", "1.5h", "7d") in seconds, or null when it is not one. */
export function parseDuration(text: string): number | null {
  const m = /^\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*$/.exec(text);
  if (!m) return null;
  return Number(m[1]) * (m[2] ? UNIT_S[m[2]] : 1);
}

/** A time parameter in epoch seconds, relative to `nowS` for `now` and `now-DURATION`; null if bad. */
export function parseTime(text: string, nowS: number): number | null {
  const t = text.trim();
  if (t === "now") return nowS;
  const rel = /^now-(.+)$/.exec(t);
  if (rel) {
    const d = parseDuration(rel[1]);
    return d === null ? null : nowS - d;
  }
  if (/^\d+$/.test(t)) return Number(t);
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/.test(t)) return null;
  const ms = Date.parse(t);
  return Number.isNaN(ms) ? null : Math.floor(ms / 1000);
}

/** Epoch seconds as the API's RFC 3339 UTC form ("2025-11-25T09:52:00Z"). */
export function rfc3339(s: number): string {
  return new Date(s * 1000).toISOString().replace(/\.\d+Z$/, "Z");
}

export interface Window {
  from: number;
  to: number;
}

/** The window a view shows: the URL's `from`/`to` when given, else `span` seconds up to `anchorS`
 * (the cluster's latest sample: a cluster that stopped reporting still shows its last day). */
export function windowOf(from: string | undefined, to: string | undefined, anchorS: number, nowS: number,
  span = 86400): Window {
  const t = (to ? parseTime(to, nowS) : null) ?? anchorS;
  const f = (from ? parseTime(from, nowS) : null) ?? t - span;
  return f < t ? { from: f, to: t } : { from: t - span, to: t };
}

/** A bucket width that gives about `n` buckets over the window, rounded to a whole minute, hour
 * or day, at least 60 s (the API's own default is span / 120). */
export function bucketFor(w: Window, n = 120): number {
  const raw = Math.max(60, (w.to - w.from) / n);
  const steps = [60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400, 604800];
  return steps.find((s) => s >= raw) ?? Math.ceil(raw / 86400) * 86400;
}

export const TIME_FORMS = "RFC 3339 (2025-11-25T09:52:00Z), epoch seconds, now or now-DURATION (now-7d)";

/** What is wrong with the URL's window, in words, or null when both ends are times the API takes. */
export function windowError(from: string | undefined, to: string | undefined, nowS: number): string | null {
  for (const [name, v] of [["from", from], ["to", to]] as const)
    if (v !== undefined && v !== "" && parseTime(v, nowS) === null)
      return `The window's '${name}' is "${v}", which is not a time: give ${TIME_FORMS}.`;
  if (from && to && parseTime(from, nowS)! >= parseTime(to, nowS)!)
    return `The window's 'from' (${from}) is not before its 'to' (${to}).`;
  return null;
}

/** The window widened to whole buckets (from down, to up), so a grid's columns and the API's
 * buckets are the same: the first column is the bucket holding `from`, and the API answers it. */
export function alignWindow(w: Window, bucket: number): Window {
  return { from: Math.floor(w.from / bucket) * bucket, to: Math.ceil(w.to / bucket) * bucket };
}
