import { test } from "node:test";
import assert from "node:assert/strict";
import { cursorOf, jobsQuery, nextPage, prevPage, queryString, readParams, toggleSort } from "../src/lib/params";

test("the URL's parameters; empty ones dropped", () => {
  assert.deepEqual(readParams("?cluster=fox&user=&host=c1-%5B1-8%5D"), { cluster: "fox", host: "c1-[1-8]" });
  assert.equal(queryString({ a: "1", b: "", c: undefined, d: 0, e: false }), "?a=1&d=0&e=false");
  assert.equal(queryString({}), "");
});

test("the job list's API query keeps its filters and sort, not the view's own state", () => {
  const q = jobsQuery({ cluster: "fox", user: "alice", host: "c1-*", running: "true", sort: "cpu_avg", order: "desc",
    cursor: "abc", page: "2", metric: "gpu" });
  assert.deepEqual(q, { cluster: "fox", user: "alice", host: "c1-*", running: "true", sort: "cpu_avg", order: "desc" });
});

test("sorting by a column: descending first, the same column flips, the cursor goes", () => {
  const a = toggleSort({ cluster: "fox", cursor: "x" }, "cpu_avg");
  assert.deepEqual(a, { cluster: "fox", sort: "cpu_avg", order: "desc" });
  assert.equal(toggleSort(a, "cpu_avg").order, "asc");
  assert.equal(toggleSort(toggleSort(a, "cpu_avg"), "cpu_avg").order, "desc");
  assert.equal(toggleSort(a, "start").order, "desc");
  // the list opens sorted by start, newest first: the first click on start flips it to oldest first
  assert.equal(toggleSort({ cluster: "fox" }, "start").order, "asc");
});

test("the job list opens newest first", () => {
  assert.deepEqual(jobsQuery({ cluster: "fox" }), { cluster: "fox", sort: "start", order: "desc" });
  assert.deepEqual(jobsQuery({ cluster: "fox", sort: "end" }), { cluster: "fox", sort: "end", order: "desc" });
});

test("cursor paging forwards and back", () => {
  let pg = { cursors: [] as string[], page: 0 };
  assert.equal(cursorOf(pg), undefined);
  pg = nextPage(pg, "c1");
  pg = nextPage(pg, "c2");
  assert.equal(cursorOf(pg), "c2");
  pg = prevPage(pg);
  assert.equal(cursorOf(pg), "c1");
  pg = nextPage(pg, "c2b"); // a new next from page 1 replaces what followed
  assert.deepEqual(pg, { cursors: ["c1", "c2b"], page: 2 });
  assert.equal(cursorOf(prevPage(prevPage(prevPage(pg)))), undefined);
});
