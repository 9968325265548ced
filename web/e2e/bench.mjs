// Dashboard rendering benchmark (not a test): times, in headless Chromium, from asking for a view to
// its content drawn, on the query benchmark's database (tests/bench/dashboard_bench.sh starts the
// server and passes FJ_URL, FJ_READER and GEN_JSON, api_gen's closing line).
//   - the job list's first page with every job of the window (all of api_gen's days) in it, and
//     every following page, by the page's "next page" link
//   - the node grid (heatmap and table) of all nodes over one day
//   - the 64-node job's page: its profile plots of one series per host over its life
//   - the other views: clusters, a node's page, problems, uptime, errors, Chimbuko, a sorted job list
// Prints one JSON line per measurement: median and max over REPEATS runs, in milliseconds.
import { chromium } from "playwright-core";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const BASE = process.env.FJ_URL;
const SECRET = process.env.FJ_READER;
const GEN = JSON.parse(process.env.GEN_JSON);
const REPEATS = Number(process.env.REPEATS ?? 5);
const AUTH = { Authorization: `Bearer ${SECRET}` };
const api = async (p) => (await fetch(BASE + p, { headers: AUTH })).json();

const c = GEN.cluster;
const bigJob = (await api(`/api/v1/jobs?cluster=${c}&job=${GEN.big_job}`)).jobs[0];
const inWindow = (await api(`/api/v1/jobs?cluster=${c}&from=${GEN.from}&to=${GEN.to}&limit=100000`)).jobs.length;

const profile = mkdtempSync(join(tmpdir(), "fjord-bench-chromium-"));
const ctx = await chromium.launchPersistentContext(profile, {
  executablePath: process.env.FJ_CHROMIUM ?? "/usr/bin/chromium",
  headless: true,
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  viewport: { width: 1280, height: 900 },
});
const page = ctx.pages()[0] ?? (await ctx.newPage());
page.setDefaultTimeout(60000);
await page.goto(BASE + "/");
await page.click("text=Token");
await page.fill("input[name=token]", SECRET);
await page.click("button[type=submit]");
await page.waitForSelector("#clusters");

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
// Each timed load also notes, from the page's own resource timing, how long its API calls took (from
// the first call's start to the last answer's end: api_ms) and so what the browser spent besides
// (loading the bundle, drawing: browser_ms = the view's time - api_ms).
let splits = [];
function report(what, times, extra = {}) {
  const s = splits.length === times.length ? splits : [];
  const split = s.length ? { api_ms: Math.round(median(s.map((x) => x.api))), browser_ms: Math.round(median(s.map((x) => x.total - x.api))),
    api_bytes: s[0].bytes } : {};
  console.log(JSON.stringify({ what, median_ms: Math.round(median(times)), max_ms: Math.round(Math.max(...times)), runs: times.length, ...split, ...extra }));
  splits = [];
}

/** Loads url as a fresh page (the bundle from the cache, as a returning user has it) and waits
 * until `done` holds in the page; the time from the navigation's start. */
async function timeView(url, done, arg) {
  await page.goto("about:blank");
  const t0 = Date.now();
  await page.goto(BASE + url);
  await page.waitForFunction(done, arg, { polling: "raf" });
  const ms = Date.now() - t0;
  splits.push(await page.evaluate(() => {
    const api = performance.getEntriesByType("resource").filter((e) => new URL(e.name).pathname.startsWith("/api/"));
    const start = Math.min(...api.map((e) => e.startTime));
    const end = Math.max(...api.map((e) => e.responseEnd));
    return { api: api.length ? end - start : 0, total: performance.now(), bytes: api.reduce((a, e) => a + (e.encodedBodySize || 0), 0) };
  }));
  return ms;
}

const firstPage = [];
for (let i = 0; i < REPEATS; i++) {
  firstPage.push(await timeView(`/ui/jobs?cluster=${c}&from=${GEN.from}&to=${GEN.to}`,
    () => document.querySelectorAll("#jobs tbody tr").length === 100 && !document.querySelector(".loading")));
}
report("job list, first page (100 rows) of all jobs in the window", firstPage, { jobs_in_window: inWindow });

const firstPage1000 = [];
for (let i = 0; i < REPEATS; i++) {
  firstPage1000.push(await timeView(`/ui/jobs?cluster=${c}&from=${GEN.from}&to=${GEN.to}&limit=1000`,
    () => document.querySelectorAll("#jobs tbody tr").length === 1000 && !document.querySelector(".loading")));
}
report("job list, first page of 1,000 rows", firstPage1000, { jobs_in_window: inWindow });

// Paging through every job, 100 at a time, by the "next page" link (client-side navigation).
await timeView(`/ui/jobs?cluster=${c}&from=${GEN.from}&to=${GEN.to}`,
  () => document.querySelectorAll("#jobs tbody tr").length === 100 && !document.querySelector(".loading"));
const pages = [];
let seen = 0;
for (;;) {
  const ids = await page.$$eval("#jobs tbody tr", (r) => r.map((x) => x.dataset.id));
  seen += ids.length;
  if (!(await page.$("#next"))) break;
  const t0 = Date.now();
  await page.click("#next");
  await page.waitForFunction((prev) => {
    const first = document.querySelector("#jobs tbody tr");
    return first && first.dataset.id !== prev && !document.querySelector(".loading");
  }, ids[0], { polling: "raf" });
  pages.push(Date.now() - t0);
  if (pages.length > 1000) break;
}
splits = [];
report("job list, each following page by 'next page'", pages, { pages: pages.length + 1, jobs_seen: seen });

const grid = [];
const day = GEN.big_start ?? GEN.from + 86400;
for (let i = 0; i < REPEATS; i++) {
  grid.push(await timeView(`/ui/nodes?cluster=${c}&from=${day}&to=${day + 86400}`,
    (n) => Number(document.querySelector("#heatmap")?.dataset.rows) === n &&
      document.querySelectorAll("#nodes tbody tr").length === n && !document.querySelector(".loading"), GEN.nodes));
}
report(`node grid of ${GEN.nodes} nodes, one day`, grid);

const prof = [];
for (let i = 0; i < REPEATS; i++) {
  prof.push(await timeView(`/ui/job/${bigJob.id}?cluster=${c}`,
    // CPU and memory, and GPU and GPU memory when the job used a GPU
    () => document.querySelectorAll("#profile .plot canvas").length >= 2 && !document.querySelector(".loading")));
}
const series = await page.getAttribute("#profile", "data-series");
report(`profile of the ${bigJob.hosts.length}-node job, per host, its whole life`, prof, { series: Number(series) });

// The other views, each until its content is drawn.
const ready = (sel) => (s) => !!document.querySelector(s) && !document.querySelector(".loading");
const views = [
  ["clusters", "/ui/clusters", "#clusters tbody tr"],
  ["node page (one day)", `/ui/node/${encodeURIComponent(bigJob.hosts[0])}?cluster=${c}&from=${day}&to=${day + 86400}`, "#node-facts"],
  ["problems (one day)", `/ui/problems?cluster=${c}&from=${day}&to=${day + 86400}`, "#problem-list"],
  ["uptime (one week)", `/ui/uptime?cluster=${c}&from=${GEN.to - 7 * 86400}&to=${GEN.to}`, "#uptime tbody tr"],
  ["errors", `/ui/errors?cluster=${c}`, "#errors, #no-errors"],
  ["chimbuko", `/ui/chimbuko?cluster=${c}`, "#chimbuko-runs, #no-chimbuko"],
  ["job list sorted by CPU", `/ui/jobs?cluster=${c}&from=${GEN.from}&to=${GEN.to}&sort=cpu_avg&order=desc`, "#jobs tbody tr"],
];
for (const [name, url, sel] of views) {
  const t = [];
  for (let i = 0; i < REPEATS; i++) t.push(await timeView(url, ready(sel), sel));
  report(name, t);
}

await ctx.close();
rmSync(profile, { recursive: true, force: true });
