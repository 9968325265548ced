// The dashboard in a real browser (Debian's chromium, driven by playwright-core) against a real
// fjord that run_e2e.py started and loaded: every view opens and shows what the API answers, filters,
// sorts, paging, links and the CSV download work, a bad credential is refused. Screenshots of every
// view go to $FJ_E2E_OUT. Exits non-zero on any failed check.
//   FJ_URL, FJ_READER (a read-only secret): the server; FJ_E2E_OUT: where screenshots go.
import { chromium } from "playwright-core";
import { mkdtempSync, mkdirSync, rmSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const BASE = process.env.FJ_URL;
const SECRET = process.env.FJ_READER;
const OUT = process.env.FJ_E2E_OUT ?? "e2e-out";
const CHROMIUM = process.env.FJ_CHROMIUM ?? "/usr/bin/chromium";
if (!BASE || !SECRET) throw new Error("FJ_URL and FJ_READER are needed (run_e2e.py sets them)");
mkdirSync(OUT, { recursive: true });

let passed = 0;
let failed = 0;
function check(cond, what) {
  if (cond) passed++;
  else {
    failed++;
    console.log(`FAIL: ${what}`);
  }
}

const AUTH = { Authorization: `Basic ${Buffer.from(`reader:${SECRET}`).toString("base64")}` };
async function api(path, headers = {}) {
  const r = await fetch(BASE + path, { headers: { ...AUTH, ...headers } });
  if (!r.ok) throw new Error(`${path}: ${r.status} ${await r.text()}`);
  return (headers.Accept ?? "").includes("csv") ? r.text() : r.json();
}
const enc = encodeURIComponent;
// "3d 4h", "2h 05m", "4m 10s", "12s" (the dashboard's durations) in seconds
const parseDur = (t) => {
  let s = 0;
  for (const [, n, u] of t.matchAll(/(\d+)([dhms])/g)) s += Number(n) * { d: 86400, h: 3600, m: 60, s: 1 }[u];
  return s;
};
const pct = (v) => (v === null || v === undefined ? "" : `${Number(v.toFixed(1))}%`);

// Independent of the dashboard's code: a node is down by its Slurm states, silent when its last
// sample is more than 15 minutes older than the cluster's latest, else up.
const DOWN = /^(DOWN|DRAIN|DRAINED|DRAINING|FAIL|FAILING|NOT_RESPONDING|POWERED_DOWN|INVALID|UNKNOWN)/;
function expectedStates(nodes, clusterLast) {
  const c = { up: 0, down: 0, silent: 0 };
  for (const n of nodes) {
    if ((n.states ?? []).some((s) => DOWN.test(s.toUpperCase()))) c.down++;
    else if (!n.last_seen) c.silent++;
    else if (Date.parse(clusterLast ?? n.last_seen) - Date.parse(n.last_seen) > 900e3) c.silent++;
    else c.up++;
  }
  return c;
}

// One node per machine, worked out here: a name whose first label is another node's name, where one
// of the two has no sample, is that node (Slurm's c1-10 and the sampled c1-10.fox); the Slurm states
// and partitions go to the row that has the samples.
function merged(nodes) {
  const by = new Map(nodes.map((n) => [n.node, n]));
  const drop = new Set();
  const out = new Map();
  for (const n of nodes) {
    const s = n.node.includes(".") ? by.get(n.node.split(".")[0]) : null;
    if (!s || (n.last_seen && s.last_seen)) continue;
    const [keep, other] = !n.last_seen && s.last_seen ? [s, n] : [n, s];
    drop.add(other.node);
    out.set(keep.node, { ...keep, last_seen: keep.last_seen ?? other.last_seen,
      states: keep.states?.length ? keep.states : other.states });
  }
  return nodes.filter((n) => !drop.has(n.node)).map((n) => out.get(n.node) ?? n);
}

const profile = mkdtempSync(join(tmpdir(), "fjord-e2e-chromium-"));
const ctx = await chromium.launchPersistentContext(profile, {
  executablePath: CHROMIUM,
  headless: true,
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  viewport: { width: 1280, height: 900 },
  acceptDownloads: true,
  timezoneId: "Europe/Oslo",
});
const page = ctx.pages()[0] ?? (await ctx.newPage());
const consoleErrors = [];
page.on("console", (m) => m.type() === "error" && consoleErrors.push(m.text()));
page.on("pageerror", (e) => consoleErrors.push(String(e)));
page.setDefaultTimeout(15000);

// Full-page screenshots as the test's artefacts; with FJ_E2E_DOCS, also the first screen of each view
// there (docs/dashboard/ is made so).
const DOCS = process.env.FJ_E2E_DOCS;
const shot = async (name) => {
  await page.screenshot({ path: join(OUT, `${name}.png`), fullPage: true });
  if (DOCS && !name.startsWith("failed-")) await page.screenshot({ path: join(DOCS, `${name}.png`) });
};
const texts = (sel) => page.$$eval(sel, (els) => els.map((e) => e.textContent.trim()));
const idle = async () => {
  // A client-side navigation starts its fetch in an effect after the URL changed, and the load
  // state of the document stays "networkidle" meanwhile: let the page run its effects (two
  // animation frames) before waiting for the view to finish loading.
  await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
  await page.waitForLoadState("networkidle");
  await page.waitForFunction(() => !document.querySelector(".loading"));
};
// A view re-renders after its fetch, which a client-side navigation may start after the network
// looked idle: wait (bounded) until the element shows what the API says, then check that.
const shows = (sel, attr, want) =>
  page
    .waitForFunction(([s, a, w]) => document.querySelector(s)?.getAttribute(a) === w, [sel, attr, String(want)], {
      timeout: 10000,
    })
    .then(() => true, () => false);

// Pixels of a plot's first line colour (#4e79a7) on its canvas: a plot with axes and no line has none.
const linePixels = (sel) => page.$eval(`${sel} canvas`, (c) => {
  const d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
  let n = 0;
  for (let i = 0; i < d.length; i += 4) if (Math.abs(d[i] - 78) < 20 && Math.abs(d[i + 1] - 121) < 20 && Math.abs(d[i + 2] - 167) < 20) n++;
  return n;
});
// The page fits the window: no page-wide horizontal scroll (a table may scroll inside itself).
const pageWidth = () => page.evaluate(() => ({ scroll: document.documentElement.scrollWidth, inner: innerWidth }));
// Every view at a width and in a theme. In CI each view is seen once (VIEW_LOOKS picks its width and
// theme, so both widths and both themes are covered); FJ_E2E_MATRIX=1 sees every view in all four.
const WIDTHS = [1366, 400];
const THEMES = ["light", "dark"];
const MATRIX = process.env.FJ_E2E_MATRIX === "1";
const layoutFigures = [];
async function looks(name, url, ready, pick) {
  const combos = MATRIX ? WIDTHS.flatMap((w) => THEMES.map((t) => [w, t])) : [pick];
  for (const [w, theme] of combos) {
    await page.setViewportSize({ width: w, height: 900 });
    await page.emulateMedia({ colorScheme: theme });
    const t0 = Date.now();
    await page.goto(BASE + url);
    await page.waitForSelector(ready);
    await idle();
    const ms = Date.now() - t0;
    const { scroll, inner } = await pageWidth();
    layoutFigures.push({ view: name, width: w, theme, page_px: scroll, ms });
    check(scroll <= inner, `${name} at ${w} px (${theme}): the page is ${scroll} px wide in a ${inner} px window`);
    const bg = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
    check(bg === (theme === "dark" ? "rgb(21, 23, 26)" : "rgb(251, 251, 250)"), `${name} ${theme} background: ${bg}`);
    // keyboard: Tab reaches the view's own content (a link, button, field or the heatmap in main)
    await page.evaluate(() => document.activeElement?.blur());
    let inMain = false;
    for (let i = 0; i < 40 && !inMain; i++) {
      await page.keyboard.press("Tab");
      inMain = await page.evaluate(() => !!document.activeElement?.closest("main"));
    }
    check(inMain, `${name}: the keyboard reaches the view's content`);
    if (!MATRIX || (w === 1366 && theme === "light")) await shot(`look-${name}-${w}-${theme}`);
  }
  await page.setViewportSize({ width: 1280, height: 900 });
  await page.emulateMedia({ colorScheme: "light" });
}

async function step(name, fn) {
  try {
    await fn();
  } catch (e) {
    failed++;
    console.log(`FAIL: ${name}: ${e.stack ?? e}`);
    await shot(`failed-${name}`).catch(() => {});
  }
}

try {
  await step("open routes", async () => {
    // The page and its assets need no credential; the API does.
    const r = await fetch(BASE + "/", { headers: { "Accept-Encoding": "gzip" } });
    const html = await r.text();
    check(r.status === 200 && r.headers.get("content-type").startsWith("text/html"), "/ is the page");
    const csp = r.headers.get("content-security-policy") ?? "";
    check(csp.includes("script-src 'self'") && !csp.includes("unsafe-inline"), `strict CSP: ${csp}`);
    check(!/<script>|<script [^>]*>[^<]/.test(html), "no inline script in the page");
    const js = /src="(\/ui\/assets\/app-[A-Z0-9]+\.js)"/.exec(html)?.[1];
    check(js, "the page names a hashed script");
    const a = await fetch(BASE + js, { headers: { "Accept-Encoding": "gzip" } });
    check(a.status === 200 && /immutable/.test(a.headers.get("cache-control") ?? ""), "hashed asset cached as immutable");
    check(a.headers.get("content-encoding") === "gzip", "asset sent gzip-compressed");
    const stale = await fetch(BASE + "/ui/assets/app-OLDHASH.js");
    check(stale.status === 404, `a missing asset is 404, not the page: ${stale.status}`);
    const view = await fetch(BASE + "/ui/jobs?cluster=x");
    check(view.status === 200 && (await view.text()) === (await (await fetch(BASE + "/")).text()), "a view's address is the page");
    const lic = await fetch(BASE + "/ui/licenses.txt");
    const lt = await lic.text();
    check(lic.status === 200 && lt.includes("preact") && lt.includes("uplot"), "licence notices served");
    const noauth = await fetch(BASE + "/api/v1/clusters");
    check(noauth.status === 401, `the API still needs a credential: ${noauth.status}`);
    const body = await fetch(BASE + "/ui/x", { method: "GET", headers: { "Content-Length": "0" } });
    check(body.status === 200, "a GET without a body is served");
  });

  await step("bad credential", async () => {
    await page.goto(BASE + "/");
    await page.waitForSelector("form[aria-label=login]");
    await shot("login");
    await page.fill("input[name=user]", "reader");
    await page.fill("input[name=secret]", "not-the-secret");
    await page.click("button[type=submit]");
    await page.waitForSelector(".error");
    check((await page.textContent(".error")).includes("refused"), "a wrong secret is refused");
    check(await page.evaluate(() => sessionStorage.length === 0), "a refused credential is not kept");
    await page.click("text=Token");
    await page.fill("input[name=token]", "bogus");
    await page.click("button[type=submit]");
    await page.waitForSelector(".error");
    check(await page.isVisible("form[aria-label=login]"), "a wrong token is refused");
  });

  await step("token login", async () => {
    await page.fill("input[name=token]", SECRET);
    await page.click("button[type=submit]");
    await page.waitForSelector("#clusters");
    check(true, "a token signs in");
    await page.click("button.forget");
    await page.waitForSelector("form[aria-label=login]");
    check(await page.evaluate(() => sessionStorage.length === 0), "forget removes the credential");
  });

  await step("clusters", async () => {
    await page.click("text=Cluster (or reader) and secret");
    await page.fill("input[name=user]", "reader");
    await page.fill("input[name=secret]", SECRET);
    await page.click("button[type=submit]");
    await page.waitForSelector("#clusters");
    await idle();
    const want = (await api("/api/v1/clusters")).clusters;
    const rows = await page.$$("#clusters tbody tr");
    check(rows.length === want.length, `clusters: ${rows.length} rows, API ${want.length}`);
    for (const c of want) {
      const row = `#clusters tr[data-cluster="${c.cluster}"]`;
      const nodes = c.nodes ? merged((await api(`/api/v1/nodes?cluster=${enc(c.cluster)}`)).nodes) : [];
      const got = Number(await page.textContent(`${row} [data-k=nodes]`));
      check(got === nodes.length, `${c.cluster}: ${got} nodes, API ${c.nodes} names, ${nodes.length} machines`);
      const e = expectedStates(nodes, c.last_seen);
      for (const k of ["up", "down", "silent"]) {
        const v = Number(await page.textContent(`${row} [data-k=${k}]`));
        check(v === e[k], `${c.cluster}: ${k} ${v}, expected ${e[k]}`);
      }
    }
    const title = await page.getAttribute("#clusters time", "title");
    check(/ UTC$/.test(title ?? ""), `times show UTC on hover: ${title}`);
    await shot("clusters");
  });

  await step("nodes", async () => {
    await page.click('#clusters a:text-is("mlx.hpc.uio.no")');
    await page.waitForSelector("#nodes");
    await idle();
    check(page.url().includes("/ui/nodes?cluster=mlx.hpc.uio.no"), `cluster link opens its nodes: ${page.url()}`);
    const nodes = (await api("/api/v1/nodes?cluster=mlx.hpc.uio.no")).nodes;
    const rows = await texts("#nodes tbody tr td:first-child a");
    const machines = merged(nodes);
    check(rows.length === machines.length && machines.every((n) => rows.includes(n.node)), `node table: ${rows}`);
    check(Number(await page.getAttribute("#heatmap", "data-rows")) === machines.length, "a heatmap row per node");
    // The window in the URL: the same numbers the API gives for it.
    const from = "2025-11-25T00:00:00Z", to = "2025-11-25T10:00:00Z";
    await page.goto(`${BASE}/ui/nodes?cluster=mlx.hpc.uio.no&from=${from}&to=${to}`);
    await page.waitForSelector("#nodes");
    await idle();
    // "CPU now": the node's latest 5-minute bucket in the half hour before the window's end
    const toS = Date.parse(to) / 1000;
    const load = (await api(`/api/v1/load/nodes?cluster=mlx.hpc.uio.no&from=${toS - 1800}&to=${toS}&bucket=300`)).load;
    let compared = 0;
    for (const l of load) {
      const last = l.points[l.points.length - 1];
      if (!last) continue;
      const got = await page.textContent(`#nodes tr[data-node="${l.node}"] [data-k=cpu_now]`);
      check(got === pct(last.cpu_util), `${l.node} CPU now: page ${got}, API ${pct(last.cpu_util)}`);
      compared++;
    }
    check(compared > 0, `nodes with load compared: ${compared}`);
    await page.click("button:text('GPU %')");
    await page.waitForURL(/metric=gpu/);
    check(page.url().includes(`from=${enc(from)}`) || page.url().includes(`from=${from}`), "the metric switch keeps the window");
    await shot("nodes");
  });

  await step("node page", async () => {
    await page.click('#nodes a:text-is("ml1")');
    await page.waitForSelector("#node-facts");
    await idle();
    check(page.url().includes("/ui/node/ml1"), `node link: ${page.url()}`);
    const n = (await api("/api/v1/nodes?cluster=mlx.hpc.uio.no&host=ml1")).nodes.find((x) => x.node === "ml1");
    check((await page.textContent("#node-facts [data-k=cores]")) === String(n.cores), "node cores");
    check((await page.textContent("#node-facts [data-k=gpus]")) === String(n.gpus), "node GPUs");
    check((await page.$$("#gpu-cards tbody tr")).length === n.gpu_cards.length, "a row per GPU card");
    const plots = await page.$$eval(".plot", (els) => els.map((e) => e.dataset.title));
    check(plots.includes("CPU utilisation") && plots.includes("GPU utilisation per card"), `node plots: ${plots}`);
    const sys = (await api("/api/v1/nodes/ml1/sysinfo?cluster=mlx.hpc.uio.no")).sysinfo;
    check((await page.$$("#sysinfo tbody tr")).length === sys.length, "sysinfo history rows");
    const topo = await fetch(`${BASE}/api/v1/nodes/ml1/topology?cluster=mlx.hpc.uio.no`, { headers: AUTH });
    if (topo.status === 200) {
      await page.waitForSelector("img.topology");
      const ok = await page.$eval("img.topology", (img) => img.complete && img.naturalWidth > 0);
      check(ok, "topology SVG shown");
    }
    await shot("node");
  });

  await step("jobs", async () => {
    const cluster = "mlx.hpc.uio.no";
    await page.goto(`${BASE}/ui/jobs?cluster=${cluster}`);
    await page.waitForSelector("#jobs");
    await idle();
    // the list opens newest first (issue: it opened oldest first over all time)
    const all = (await api(`/api/v1/jobs?cluster=${cluster}&sort=start&order=desc&limit=100`)).jobs;
    const ids = await page.$$eval("#jobs tbody tr", (r) => r.map((x) => Number(x.dataset.id)));
    check(JSON.stringify(ids) === JSON.stringify(all.map((j) => j.id)), `job list = API's first page, newest first (${ids.length} jobs)`);
    check(await page.isVisible(".windowbar"), "the job list has a window bar");
    check((await page.textContent("#page-info")).includes("newest or biggest first"), "the list says how it is sorted");
    await shot("jobs");
    // a filter
    const user = all.find((j) => j.user)?.user;
    await page.fill("#job-filters input[name=user]", user);
    await page.click("#job-filters button[type=submit]");
    await page.waitForURL(/user=/);
    await idle();
    const mine = (await api(`/api/v1/jobs?cluster=${cluster}&user=${enc(user)}&sort=start&order=desc&limit=100`)).jobs;
    const users = await texts("#jobs tbody td[data-k=user]");
    check(users.length === mine.length && users.every((u) => u === user), `user filter: ${users.length} rows, API ${mine.length}`);
    // a sort, by clicking its column
    await page.goto(`${BASE}/ui/jobs?cluster=${cluster}`);
    await page.waitForSelector("#jobs");
    await page.click("a[data-sort=cpu_avg]");
    await page.waitForURL(/sort=cpu_avg/);
    await idle();
    check(page.url().includes("order=desc"), "a sort starts descending");
    const sorted = (await api(`/api/v1/jobs?cluster=${cluster}&sort=cpu_avg&order=desc&limit=100`)).jobs;
    const sids = await page.$$eval("#jobs tbody tr", (r) => r.map((x) => Number(x.dataset.id)));
    check(JSON.stringify(sids) === JSON.stringify(sorted.map((j) => j.id)), "sorted by CPU, as the API sorts");
    // paging with the cursor, and back
    await page.goto(`${BASE}/ui/jobs?cluster=${cluster}&limit=5`);
    await page.waitForSelector("#jobs");
    await idle();
    const p1 = await api(`/api/v1/jobs?cluster=${cluster}&sort=start&order=desc&limit=5`);
    await page.click("#next");
    await page.waitForURL(/cursor=/);
    await idle();
    const p2 = await api(`/api/v1/jobs?cluster=${cluster}&sort=start&order=desc&limit=5&cursor=${enc(p1.next)}`);
    const p2ids = await page.$$eval("#jobs tbody tr", (r) => r.map((x) => Number(x.dataset.id)));
    check(JSON.stringify(p2ids) === JSON.stringify(p2.jobs.map((j) => j.id)), "page 2 = the API's page 2");
    await page.click("#prev");
    await page.waitForFunction(() => !location.search.includes("cursor="));
    await idle();
    const back = await page.$$eval("#jobs tbody tr", (r) => r.map((x) => Number(x.dataset.id)));
    check(JSON.stringify(back) === JSON.stringify(p1.jobs.map((j) => j.id)), "previous goes back to page 1");
    // CSV download of the filtered list
    const [dl] = await Promise.all([page.waitForEvent("download"), page.click("#csv")]);
    const csv = readFileSync(await dl.path(), "utf8");
    const want = await api(`/api/v1/jobs?cluster=${cluster}&sort=start&order=desc&limit=100000`, { Accept: "text/csv" });
    check(dl.suggestedFilename() === `jobs-${cluster}.csv` && csv === want, `CSV download = the API's CSV (${csv.length} bytes)`);
  });

  await step("job page", async () => {
    const cluster = "mlx.hpc.uio.no";
    const list = (await api(`/api/v1/jobs?cluster=${cluster}&sort=cpu_avg&order=desc&limit=1`)).jobs;
    await page.goto(`${BASE}/ui/jobs?cluster=${cluster}&sort=cpu_avg&order=desc`);
    await page.waitForSelector("#jobs");
    await page.click(`#jobs tr[data-id="${list[0].id}"] td[data-k=id] a`);
    await page.waitForSelector("#job-facts");
    await idle();
    const d = await api(`/api/v1/jobs/${list[0].id}?cluster=${cluster}`);
    check(page.url().includes(`/ui/job/${list[0].id}`), "job link");
    check((await page.textContent("#job-facts [data-k=user]")) === d.job.user, "job user");
    const hosts = await page.$$eval("#job-hosts tbody tr", (r) => r.map((x) => x.dataset.host));
    check(JSON.stringify(hosts) === JSON.stringify(d.hosts.map((h) => h.host)), "a row per host");
    for (const h of d.hosts) {
      const got = await page.textContent(`#job-hosts tr[data-host="${h.host}"] [data-k=cpu_avg]`);
      check(got === String(Number(h.cpu_avg.toFixed(1))), `${h.host} CPU avg ${got} = API ${h.cpu_avg}`);
    }
    const prof = (await api(`/api/v1/jobs/${list[0].id}/profile?cluster=${cluster}&by=host`)).profile;
    check(await shows("#profile", "data-series", prof.length), "a profile series per host");
    const gpu = (d.job.gpu_peak ?? 0) > 0 || (d.job.gpumem_peak_kb ?? 0) > 0;
    check((await page.$$("#profile .plot")).length === (gpu ? 4 : 2), `CPU and memory plots${gpu ? ", GPU and GPU memory" : " (no GPU used: no GPU plots)"}`);
    if (d.job.epoch !== 0) {
      check(await page.isVisible("#no-slurm"), "a job without Slurm says what is unknown");
      check((await page.textContent("#slurm [data-k=state]")) === "unknown", "its Slurm state is unknown");
    }
    await shot("job");
    await page.click("a:text('per process')");
    await page.waitForURL(/by=process/);
    await idle();
    const pp = (await api(`/api/v1/jobs/${list[0].id}/profile?cluster=${cluster}&by=process`)).profile;
    check(await shows("#profile", "data-series", pp.length), "a profile series per process");
  });

  await step("slurm job", async () => {
    const jobs = (await api("/api/v1/jobs?cluster=fox.educloud.no&limit=1000")).jobs.filter((j) => j.epoch === 0 && j.state);
    if (!jobs.length) return;
    await page.goto(`${BASE}/ui/job/${jobs[0].id}?cluster=fox.educloud.no`);
    await page.waitForSelector("#job-facts");
    await idle();
    check((await page.textContent("#slurm [data-k=state]")) === jobs[0].state, "Slurm state shown");
    check(!(await page.isVisible("#no-slurm")), "a Slurm job has no 'unknown' notice");
  });

  await step("problems", async () => {
    // The real data's jobs are short: thresholds of 0 make every job-node deadweight and every job
    // below its cores, so the view has rows to show, sort and filter.
    const cluster = "mlx.hpc.uio.no";
    const q = `cluster=${cluster}&from=2020-01-01T00:00:00Z&to=2030-01-01T00:00:00Z&deadweight=0&cpu_min=0&cpu_ratio=1`;
    await page.goto(`${BASE}/ui/problems?${q}`);
    await page.waitForSelector("#problems");
    await idle();
    const want = (await api(`/api/v1/problems?${q}`)).problems;
    const key = (r) => `${r.id}/${r.rule}/${r.node ?? ""}`;
    const rows = await page.$$eval("#problems tbody tr", (r) => r.map((x) => ({ id: Number(x.dataset.id), rule: x.dataset.rule,
      node: x.querySelector("td[data-k=node] a")?.textContent ?? "" })));
    check(want.length > 0 && JSON.stringify(rows.map(key).sort()) === JSON.stringify(want.map(key).sort()),
      `problem rows = the API's (${rows.length} of ${want.length})`);
    const byId = new Map(want.map((r) => [key(r), r]));
    const forS = rows.map((r) => byId.get(key(r))?.for_s ?? -1);
    check(forS.every((v, i) => i === 0 || forS[i - 1] >= v), "longest problems first");
    await shot("problems");
    // a sort, by clicking its column
    await page.click("a[data-sort=used]");
    await page.waitForURL(/sort=used/);
    await idle();
    check(page.url().includes("order=desc"), "a sort starts descending");
    const used = (await page.$$eval("#problems tbody tr", (r) => r.map((x) => ({ id: Number(x.dataset.id),
      rule: x.dataset.rule, node: x.querySelector("td[data-k=node] a")?.textContent ?? "" }))))
      .map((r) => byId.get(key(r))?.used);
    const nums = used.filter((v) => v !== null && v !== undefined);
    check(nums.every((v, i) => i === 0 || nums[i - 1] >= v) && used.slice(nums.length).every((v) => v === null),
      "sorted by used, biggest first, nulls last");
    // the per-user summary, and a user's filter from it
    const users = (await api(`/api/v1/problems/users?${q}`)).users;
    check((await page.$$("#problem-users-table tbody tr")).length === users.length, `per user: ${users.length} rows`);
    const user = users[0]?.user;
    await page.fill("#problem-filters input[name=user]", user);
    await page.click("#problem-filters button[type=submit]");
    await page.waitForURL(/user=/);
    await idle();
    const mine = (await api(`/api/v1/problems?${q}&user=${enc(user)}`)).problems;
    const shown = await texts("#problems tbody td[data-k=user]");
    check(shown.length === mine.length && shown.every((u) => u === user), `user filter: ${shown.length} rows, API ${mine.length}`);
    // a rule's filter
    await page.selectOption("#problem-filters select[name=rule]", "cpu_low");
    await page.click("#problem-filters button[type=submit]");
    await page.waitForURL(/rule=cpu_low/);
    await idle();
    const rules = await page.$$eval("#problems tbody tr", (r) => r.map((x) => x.dataset.rule));
    check(rules.length > 0 && rules.every((r) => r === "cpu_low"), `rule filter: ${rules.length} rows`);
    // CSV download of the filtered report
    const [dl] = await Promise.all([page.waitForEvent("download"), page.click("#csv")]);
    const csv = readFileSync(await dl.path(), "utf8");
    const wantCsv = await api(`/api/v1/problems?${q}&user=${enc(user)}&rule=cpu_low`, { Accept: "text/csv" });
    check(dl.suggestedFilename() === `problems-${cluster}.csv` && csv === wantCsv, `CSV download = the API's CSV (${csv.length} bytes)`);
  });

  await step("usage", async () => {
    // usage per user and account over all of the real data (docs/storage.md, "Usage and efficiency")
    const cluster = "fox.educloud.no";
    const q = `cluster=${cluster}&from=2020-01-01T00:00:00Z&to=2030-01-01T00:00:00Z`;
    await page.goto(`${BASE}/ui/usage?${q}&by=user`);
    await page.waitForSelector("#usage");
    await idle();
    const want = (await api(`/api/v1/usage?${q}&by=user`)).usage;
    const rows = await page.$$eval("#usage tbody tr", (r) => r.map((x) => ({ group: x.dataset.group,
      used: x.querySelector("td[data-k=core_h_used]").dataset.v, eff: x.querySelector("td[data-k=cpu_eff]").dataset.v })));
    const byGroup = new Map(want.map((r) => [r.group ?? "", r]));
    check(want.length > 0 && rows.length === want.length && rows.every((r) => byGroup.has(r.group)),
      `usage rows = the API's groups (${rows.length} of ${want.length})`);
    check(rows.every((r) => Number(r.used) === byGroup.get(r.group).core_h_used
      && (r.eff === "" ? byGroup.get(r.group).cpu_eff === null : Number(r.eff) === byGroup.get(r.group).cpu_eff)),
      "core-hours used and CPU efficiency as the API answers");
    const used = rows.map((r) => Number(r.used));
    check(used.every((v, i) => i === 0 || used[i - 1] >= v), "most core-hours used first");
    await shot("usage");
    await page.click("a[data-sort=jobs]");
    await page.waitForURL(/sort=jobs/);
    check(page.url().includes("order=desc"), "a sort starts descending");
    // by account, and its CSV
    await page.selectOption("#usage-filters select[name=by]", "account");
    await page.click("#usage-filters button[type=submit]");
    await page.waitForURL(/by=account/);
    await idle();
    const accts = (await api(`/api/v1/usage?${q}&by=account`)).usage.map((r) => r.group ?? "").sort();
    const shown = (await page.$$eval("#usage tbody tr", (r) => r.map((x) => x.dataset.group))).sort();
    check(JSON.stringify(shown) === JSON.stringify(accts), `by account: ${shown.length} rows as the API's`);
    const [dl] = await Promise.all([page.waitForEvent("download"), page.click("#csv")]);
    const csv = readFileSync(await dl.path(), "utf8");
    const wantCsv = await api(`/api/v1/usage?${q}&by=account`, { Accept: "text/csv" });
    check(dl.suggestedFilename() === `usage-${cluster}.csv` && csv === wantCsv, `usage CSV = the API's CSV (${csv.length} bytes)`);
    // the job list's efficiency columns, the low ones marked
    await page.goto(`${BASE}/ui/jobs?cluster=${cluster}`);
    await page.waitForSelector("#jobs");
    await idle();
    const jobs = (await api(`/api/v1/jobs?cluster=${cluster}&sort=start&order=desc&limit=100`)).jobs;
    const effs = await page.$$eval("#jobs tbody td[data-k=cpu_eff]", (t) => t.map((x) => ({ v: x.dataset.v,
      low: x.classList.contains("eff-low") })));
    check(effs.length === jobs.length && effs.every((e, i) => (e.v === "" ? jobs[i].cpu_eff === null
      : Number(e.v) === jobs[i].cpu_eff) && e.low === (jobs[i].cpu_eff !== null && jobs[i].cpu_eff < 0.25)),
      `CPU efficiency per job as the API's, below 25 % marked (${effs.filter((e) => e.low).length} marked)`);
  });

  await step("metrics", async () => {
    const from = 1700000000, to = 1700000400;
    await page.goto(`${BASE}/ui/metrics?cluster=fritz&metric=cpu_load,mem_used&from=${from}&to=${to}`);
    await page.waitForSelector("section.metric");
    await idle();
    const ans = await (await fetch(BASE + "/api/query", { method: "POST", headers: { ...AUTH, "Content-Type": "application/json" },
      body: JSON.stringify({ cluster: "fritz", from, to, queries: [], "for-all-nodes": ["cpu_load"] }) })).json();
    for (let i = 0; i < ans.queries.length; i++) {
      const h = ans.queries[i].host;
      const got = await page.textContent(`section[data-metric=cpu_load] tr[data-host="${h}"] [data-k=avg]`);
      check(got === String(Number(ans.results[i][0].avg.toFixed(3))), `cpu_load avg of ${h}: ${got}`);
    }
    check((await page.$$("section.metric .plot")).length === 2, "a chart per metric");
    // the metric names offered are the cluster's catalogue (GET /api/v1/metrics/catalog)
    const cat = (await api("/api/v1/metrics/catalog?cluster=fritz")).metrics.map((m) => m.metric);
    await page.waitForSelector("#metric-names[data-from=catalog]", { state: "attached" });
    const offered = await page.$$eval("#metric-names option", (o) => o.map((x) => x.value));
    check(cat.length > 0 && JSON.stringify(offered) === JSON.stringify(cat), `metric names from the catalogue (${cat.length})`);
    await shot("metrics");
  });

  await step("errors", async () => {
    await page.goto(`${BASE}/ui/errors?cluster=fox.educloud.no`);
    await page.waitForSelector("#errors");
    const want = (await api("/api/v1/errors?cluster=fox.educloud.no&limit=200")).errors;
    check((await page.$$("#errors tbody tr")).length === want.length, `errors: ${want.length} rows`);
    await shot("errors");
  });

  await step("uptime", async () => {
    const from = "2025-11-25T09:00:00Z", to = "2025-11-25T10:30:00Z";
    await page.goto(`${BASE}/ui/uptime?cluster=mlx.hpc.uio.no&from=${from}&to=${to}`);
    await page.waitForSelector("#uptime");
    await idle();
    const up = (await api(`/api/v1/uptime?cluster=mlx.hpc.uio.no&from=${from}&to=${to}`)).uptime;
    const keys = new Set(up.map((u) => `${u.node}/${u.device}`));
    check((await page.$$("#uptime tbody tr")).length === keys.size, `uptime: a row per node and device (${keys.size})`);
    check((await page.$$("#uptime .iv")).length === up.length, "a bar per interval");
    await shot("uptime");
  });

  await step("chimbuko", async () => {
    await page.goto(`${BASE}/ui/chimbuko?cluster=hpc1`);
    await page.waitForSelector("#chimbuko-runs");
    await idle();
    const runs = (await api("/api/v1/chimbuko/runs?cluster=hpc1")).runs;
    check((await page.textContent("#chimbuko-runs [data-k=packets]")) === String(runs[0].packets), "Chimbuko packets");
    const top = await api("/api/v1/chimbuko/top?cluster=hpc1&from=0&to=now&limit=20");
    check((await texts("#chimbuko-ranks [data-k=anomalies]")).join() === top.ranks.map((r) => r.anomalies).join(), "ranks' anomalies");
    await shot("chimbuko");
    await page.goto(`${BASE}/ui/chimbuko?cluster=mlx.hpc.uio.no`);
    await page.waitForSelector("#no-chimbuko");
    check(true, "a cluster without Chimbuko says so");
  });


  await step("dark theme", async () => {
    await page.emulateMedia({ colorScheme: "dark" });
    await page.goto(`${BASE}/ui/node/ml1?cluster=mlx.hpc.uio.no`);
    await page.waitForSelector("#node-facts");
    await idle();
    const bg = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
    check(bg === "rgb(21, 23, 26)", `dark background follows the system: ${bg}`);
    await shot("node-dark");
    await page.emulateMedia({ colorScheme: "light" });
  });

  // --- the defects of issue 35, each a case that failed on the dashboard before its fix ---------

  await step("relative window on a job page", async () => {
    // (1) /ui/job/N?from=now-800d drew axes and no lines: the view read now-800d as NaN
    const job = (await api("/api/v1/jobs?cluster=mlx.hpc.uio.no&sort=cpu_avg&order=desc&limit=1")).jobs[0];
    await page.goto(`${BASE}/ui/job/${job.id}?cluster=mlx.hpc.uio.no&from=now-800d&to=now`);
    await page.waitForSelector("#profile .plot canvas");
    await idle();
    const px = await linePixels('#profile .plot[data-title^="CPU"]');
    check(px > 0, `a relative window draws the job's CPU line (${px} pixels of it)`);
    // (7) the plot's times in the tables' format: the cursor's time in the legend
    const box = await page.$eval('#profile .plot[data-title^="CPU"] .u-over', (e) => { const b = e.getBoundingClientRect(); return [b.x, b.y, b.width, b.height]; });
    await page.mouse.move(box[0] + box[2] / 2, box[1] + box[3] / 2);
    const xval = await page.textContent('#profile .plot[data-title^="CPU"] .u-legend .u-series:first-child .u-value');
    check(/^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d|–)$/.test(xval.trim()), `the plot's time reads as the tables' do: "${xval}"`);
    check(await page.title() === `Job ${job.id} · mlx.hpc.uio.no · fjord`, `the title names the job: ${await page.title()}`);
    // a window that is not a time is said so, on the job page as on the others
    await page.goto(`${BASE}/ui/job/${job.id}?cluster=mlx.hpc.uio.no&from=last-tuesday`);
    await page.waitForSelector(".failure");
    check((await page.textContent(".failure")).includes("not a time"), "a garbage window on the job page is named");
  });

  await step("wrapping lists", async () => {
    // (2) partitions were links with no space between them: one cell wider than its column
    await page.setViewportSize({ width: 1366, height: 900 });
    await page.goto(`${BASE}/ui/clusters`);
    await page.waitForSelector("#clusters");
    await idle();
    const { scroll, inner } = await pageWidth();
    check(scroll <= inner, `clusters at 1366 px: ${scroll} px wide`);
    const over = await page.$eval('#clusters tr[data-cluster="fox.educloud.no"] td.partitions', (td) => td.scrollWidth - td.clientWidth);
    check(over <= 1, `fox's partitions wrap in their cell (${over} px over)`);
    await page.setViewportSize({ width: 1280, height: 900 });
  });

  await step("clusters without Sonar data", async () => {
    // (3) a line-protocol-only cluster was missing; a Chimbuko-only one said "0 nodes" and "-"
    await page.goto(`${BASE}/ui/clusters`);
    await page.waitForSelector("#clusters");
    await idle();
    check(await page.isVisible('#clusters tr[data-cluster="fritz"]'), "the line-protocol-only cluster fritz is listed");
    check(await page.isVisible('#clusters tr[data-cluster="fritz"] a[data-view=metrics]'), "fritz links to its metrics");
    check(await page.isVisible('#clusters tr[data-cluster="hpc1"] a[data-view=chimbuko]'), "hpc1 links to its Chimbuko data");
    await page.goto(`${BASE}/ui/metrics`);
    await page.waitForSelector("ul.pick");
    check((await texts("ul.pick a")).includes("fritz"), "fritz is in the cluster picker");
    await page.goto(`${BASE}/ui/metrics?cluster=fritz`);
    await page.waitForSelector("section.metric");
    await idle();
    check(await page.isVisible("section.metric .no-data"), "an empty window of fritz's metrics says there is no data in it");
    await page.goto(`${BASE}/ui/nodes?cluster=fritz`);
    await page.waitForSelector("#no-nodes");
    check(true, "fritz's nodes view says it has no Sonar nodes");
  });

  await step("uptime before monitoring", async () => {
    // (4) every node was "down" for the days before its first sample
    const from = "2025-11-20T00:00:00Z", to = "2025-11-26T00:00:00Z";
    await page.goto(`${BASE}/ui/uptime?cluster=mlx.hpc.uio.no&host=ml1&from=${from}&to=${to}`);
    await page.waitForSelector("#uptime");
    await idle();
    const first = Date.parse((await api("/api/v1/nodes?cluster=mlx.hpc.uio.no&host=ml1")).nodes.find((n) => n.node === "ml1").last_seen);
    const down = await page.textContent('#uptime tr[data-node="ml1"][data-device="node"] [data-k=down]');
    // ml1 has one sample: down from just after it to the window's end, never before it
    const wantS = (Date.parse(to) - first) / 1000;
    check(Math.abs(parseDur(down) - wantS) <= 3600 + 60, `ml1 down ${down}, from its sample on (~${Math.round(wantS / 3600)}h), not before it`);
    check((await page.$$("#uptime .time-axis span")).length === 5, "the bars have a time axis");
  });

  await step("node grid first column and CPU now", async () => {
    // (5) the grid's first column was grey: the view drew the bucket before the window's start
    const from = "2025-11-25T09:53:00Z", to = "2025-11-26T09:53:00Z";
    await page.goto(`${BASE}/ui/nodes?cluster=mlx.hpc.uio.no&metric=mem&from=${from}&to=${to}`);
    await page.waitForSelector("#heatmap");
    await idle();
    const rows = await page.$$eval("#nodes tbody tr", (r) => r.map((x) => x.dataset.node));
    const i = rows.indexOf("ml1");
    const b = await page.$eval("#heatmap", (c) => { const r = c.getBoundingClientRect(); return [r.x, r.y, r.width, r.height]; });
    const n = rows.length;
    const rowH = b[3] / n;
    await page.mouse.move(b[0] + b[2] - 2, b[1] + rowH * i + rowH / 2); // the last column first: hover changes
    await page.mouse.move(b[0] + Math.min(160, Math.floor(b[2] / 3)) + 2, b[1] + rowH * i + rowH / 2);
    const hover = await page.textContent("#heatmap-hover");
    check(hover.startsWith("ml1") && !hover.includes("no data"), `ml1's first column, its sample at 09:52 in the 09:00 bucket: "${hover}"`);
    // (10) the heatmap by keyboard, with a label; nodes sorted as people read them
    const label = await page.getAttribute("#heatmap", "aria-label");
    check(/nodes/.test(label ?? "") && (await page.getAttribute("#heatmap", "tabindex")) === "0", `the heatmap is focusable and labelled: ${label}`);
    await page.focus("#heatmap");
    await page.keyboard.press("ArrowDown");
    const kb = await page.textContent("#heatmap-hover");
    check(kb.startsWith(rows[1]), `arrow keys move over the grid: "${kb}"`);
    // (10) one node shown twice, as c1-10 (Slurm) and c1-10.fox (its samples): one row now
    await page.goto(`${BASE}/ui/nodes?cluster=fox.educloud.no`);
    await page.waitForSelector("#nodes");
    await idle();
    const fox = await texts("#nodes tbody tr td:first-child a");
    check(fox.includes("c1-10.fox") && !fox.includes("c1-10"), "c1-10 and c1-10.fox are one row");
    const states = await page.textContent('#nodes tr[data-node="c1-10.fox"] td:nth-child(3)');
    check(states.includes("MIXED"), `that row has c1-10's Slurm states: ${states}`);
    await page.goto(`${BASE}/ui/nodes?cluster=fox.educloud.no&host=gpu-*`);
    await page.waitForSelector("#nodes");
    await idle();
    const gpus = await texts("#nodes tbody td:first-child a");
    const num = (x) => Number(/\d+/.exec(x)?.[0]);
    check(gpus.length > 2 && gpus.every((x, k) => k === 0 || num(gpus[k - 1]) <= num(x)), `gpu nodes in number order: ${gpus.slice(0, 4)}`);
  });

  await step("data stopped", async () => {
    // (6) windows counted back from the clock show nothing on a cluster whose data stopped
    await page.goto(`${BASE}/ui/nodes?cluster=mlx.hpc.uio.no`);
    await page.waitForSelector("#nodes");
    await idle();
    check(await page.isVisible("#data-stopped"), "the window bar says the cluster's data stopped");
    await page.click(".windowbar button:text-is('6h')");
    await page.waitForURL(/from=/);
    await idle();
    const u = new URL(page.url());
    const last = Date.parse((await api("/api/v1/clusters")).clusters.find((c) => c.cluster === "mlx.hpc.uio.no").last_seen);
    const to = Date.parse(u.searchParams.get("to"));
    check(to >= last && to - last <= 120e3, `6h ends at the cluster's latest sample: ${u.searchParams.get("to")}`);
    const nowCells = (await texts("#nodes td[data-k=cpu_now], #nodes td[data-k=mem_now]")).filter(Boolean);
    check(nowCells.length > 0, `nodes show their load in that window (${nowCells.length})`);
  });

  await step("legends and GPU plots", async () => {
    // (7) above 12 lines no legend: the line nearest the pointer is named instead
    let many = null;
    for (const j of (await api("/api/v1/jobs?cluster=mlx.hpc.uio.no&limit=1000")).jobs.filter((x) => x.processes > 12)) {
      if ((await api(`/api/v1/jobs/${j.id}/profile?cluster=mlx.hpc.uio.no&by=process`)).profile.length > 12) {
        many = j;
        break;
      }
    }
    check(many !== null, "a job of more than 12 processes in the data");
    await page.goto(`${BASE}/ui/job/${many.id}?cluster=mlx.hpc.uio.no&by=process`);
    await page.waitForSelector("#profile .plot canvas");
    await idle();
    const sel = '#profile .plot[data-title^="CPU"]';
    check(Number(await page.getAttribute(sel, "data-series")) > 12, `job ${many.id}: more than 12 lines`);
    check(!(await page.isVisible(`${sel} .u-legend`)), "no legend wall above 12 lines");
    const box = await page.$eval(`${sel} .u-over`, (e) => { const b = e.getBoundingClientRect(); return [b.x, b.y, b.width, b.height]; });
    await page.mouse.move(box[0] + box[2] * 0.5, box[1] + box[3] * 0.9);
    await page.mouse.move(box[0] + box[2] * 0.5 + 1, box[1] + box[3] * 0.9);
    const said = await page.$eval(sel, (e) => e.parentElement.querySelector(".plot-readout")?.textContent ?? "");
    check(/^.+ \d+ .*: .+ at \d{4}-\d\d-\d\d /.test(said) || said.includes(": no value"), `the hovered line is named: "${said}"`);
    // a job that used no GPU has no GPU plots
    const nogpu = (await api("/api/v1/jobs?cluster=mlx.hpc.uio.no&limit=1000")).jobs.find((j) => !j.gpu_peak && !j.gpumem_peak_kb);
    await page.goto(`${BASE}/ui/job/${nogpu.id}?cluster=mlx.hpc.uio.no`);
    await page.waitForSelector("#job-facts");
    await idle();
    const titles = await page.$$eval("#profile .plot", (e) => e.map((x) => x.dataset.title));
    check(!titles.some((t) => t.startsWith("GPU")) && (await page.isVisible("#no-gpu")), `no GPU plots for a job without GPU: ${titles}`);
  });

  await step("every view at its width and theme", async () => {
    // (8) at 400 px only the job list fitted; every view checked for width, theme and keyboard
    const job = (await api("/api/v1/jobs?cluster=mlx.hpc.uio.no&limit=1")).jobs[0];
    const views = [
      ["clusters", "/ui/clusters", "#clusters", [400, "light"]],
      ["nodes", "/ui/nodes?cluster=fox.educloud.no", "#nodes", [400, "dark"]],
      ["node", "/ui/node/ml1?cluster=mlx.hpc.uio.no", "#node-facts", [400, "light"]],
      ["jobs", "/ui/jobs?cluster=mlx.hpc.uio.no", "#jobs", [1366, "dark"]],
      ["job", `/ui/job/${job.id}?cluster=mlx.hpc.uio.no`, "#job-facts", [400, "dark"]],
      ["problems", "/ui/problems?cluster=mlx.hpc.uio.no&from=2020-01-01T00:00:00Z&to=2030-01-01T00:00:00Z&deadweight=0&cpu_min=0&cpu_ratio=1", "#problems", [400, "light"]],
      ["usage", "/ui/usage?cluster=fox.educloud.no&from=2020-01-01T00:00:00Z&to=2030-01-01T00:00:00Z&bucket=month", "#usage", [400, "dark"]],
      ["metrics", "/ui/metrics?cluster=fritz&metric=cpu_load,mem_used&from=1700000000&to=1700000400", "section.metric", [1366, "light"]],
      ["errors", "/ui/errors?cluster=fox.educloud.no", "#errors", [400, "dark"]],
      ["uptime", "/ui/uptime?cluster=mlx.hpc.uio.no", "#uptime", [400, "light"]],
      ["chimbuko", "/ui/chimbuko?cluster=hpc1", "#chimbuko-runs", [1366, "dark"]],
    ];
    for (const [name, url, ready, pick] of views) await looks(name, url, ready, pick);
    if (MATRIX) console.log(`layout: ${JSON.stringify(layoutFigures)}`);
  });

  await step("failure states", async () => {
    // (9) a non-numeric job id showed the API's "no such endpoint"
    await page.goto(`${BASE}/ui/job/abc?cluster=mlx.hpc.uio.no`);
    await page.waitForSelector(".failure");
    check((await page.textContent(".failure")).includes("not a job id"), "a job id that is not a number is named");
    // a garbage window became an empty view on one page and a message on another
    await page.goto(`${BASE}/ui/nodes?cluster=mlx.hpc.uio.no&from=garbage`);
    await page.waitForSelector(".failure");
    check((await page.textContent(".failure")).includes('"garbage", which is not a time'), "a garbage window is named");
    // the server not answering: a message, a retry, and the view back by itself when it answers
    await page.goto(`${BASE}/ui/errors?cluster=fox.educloud.no`);
    await page.waitForSelector("#errors");
    await page.route("**/api/v1/**", (r) => r.abort());
    await page.click("header nav a:text-is('Uptime')");
    await page.waitForSelector(".failure");
    const msg = await page.textContent(".failure");
    check(msg.includes("did not answer") && !msg.includes("Failed to fetch") && (await page.isVisible(".failure button.retry")),
      `no answer: said in words, with a retry: "${msg}"`);
    await page.unroute("**/api/v1/**");
    await page.waitForSelector("#uptime", { timeout: 15000 });
    check(true, "the view comes back by itself when the server answers");
  });

  await step("revoked credential", async () => {
    // (9) a credential revoked while the tab held it: the login page says why
    await page.goto(`${BASE}/ui/clusters`);
    await page.waitForSelector("#clusters");
    await page.route("**/api/v1/**", (r) => r.fulfill({ status: 401, contentType: "application/json",
      body: JSON.stringify({ error: { code: "unauthorized", message: "credential not accepted" } }) }));
    await page.goto(`${BASE}/ui/errors?cluster=fox.educloud.no`);
    await page.waitForSelector("form[aria-label=login]");
    const why = await page.textContent("#login-reason").catch(() => "");
    check(/revoked/.test(why), `the login page says why it is back: "${why}"`);
    await page.unroute("**/api/v1/**");
  });

  // Answers refused on purpose (the wrong credentials, the revoked one) and the answers held back on
  // purpose (the server not answering) show as failed loads; anything else in the console is an
  // error (a topology the node never sent is no longer asked for: no 404).
  const scriptErrors = consoleErrors.filter((e) => !/^Failed to load resource: (the server responded with a status of 401|net::ERR_FAILED)/.test(e));
  check(scriptErrors.length === 0, `no script errors: ${scriptErrors.join(" | ")}`);
} finally {
  await ctx.close();
  rmSync(profile, { recursive: true, force: true });
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
