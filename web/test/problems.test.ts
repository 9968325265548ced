import { test } from "node:test";
import assert from "node:assert/strict";
import { problemsQuery, sortRows, toggleProblemSort } from "../src/lib/problems";

test("the problems query keeps the filters and thresholds, not the view's own state", () => {
  const q = problemsQuery({ cluster: "fox", user: "ann", rule: "gpu_idle,deadweight", gpu_idle: "1h", cpu_ratio: "0.1",
    sort: "for_s", order: "asc", view: "users", from: "now-7d" }, "2026-01-01T00:00:00Z", "2026-01-02T00:00:00Z");
  assert.deepEqual(q, { cluster: "fox", from: "2026-01-01T00:00:00Z", to: "2026-01-02T00:00:00Z", user: "ann",
    rule: "gpu_idle,deadweight", gpu_idle: "1h", cpu_ratio: "0.1" });
});

test("sorting rows: numbers by value, nulls last both ways, ties by job id then rule", () => {
  const rows = [
    { id: 3, rule: "cpu_low", for_s: 7200, used: 1.5, node: null },
    { id: 1, rule: "deadweight", for_s: 14400, used: null, node: "c2" },
    { id: 2, rule: "gpu_idle", for_s: 7200, used: 0, node: "g1" },
    { id: 1, rule: "cpu_low", for_s: 14400, used: 2, node: null },
  ];
  assert.deepEqual(sortRows(rows, "for_s", true).map((r) => [r.id, r.rule]),
    [[1, "cpu_low"], [1, "deadweight"], [2, "gpu_idle"], [3, "cpu_low"]]);
  assert.deepEqual(sortRows(rows, "for_s", false).map((r) => r.id), [2, 3, 1, 1]);
  assert.deepEqual(sortRows(rows, "used", true).map((r) => r.used), [2, 1.5, 0, null]);
  assert.deepEqual(sortRows(rows, "used", false).map((r) => r.used), [0, 1.5, 2, null]);
  assert.deepEqual(sortRows(rows, "node", false).map((r) => r.node), ["c2", "g1", null, null]);
  assert.equal(rows[0].id, 3, "the rows given are not reordered");
});

test("clicking a column: biggest first, the same column flips; the default sort is for_s", () => {
  assert.deepEqual(toggleProblemSort({ cluster: "fox" }, "for_s"), { cluster: "fox", sort: "for_s", order: "asc" });
  assert.deepEqual(toggleProblemSort({ cluster: "fox" }, "used"), { cluster: "fox", sort: "used", order: "desc" });
  const a = toggleProblemSort({ cluster: "fox", sort: "used", order: "desc" }, "used");
  assert.equal(a.order, "asc");
  assert.equal(toggleProblemSort(a, "used").order, "desc");
});
