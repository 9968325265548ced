import { test } from "node:test";
import assert from "node:assert/strict";
import { align, ccTimes, columnPoints, epochOf, mean } from "../src/lib/series";

test("series on one time axis: the union of times, gaps as null", () => {
  const a = align(
    [
      { label: "h1", points: [{ time: "2025-11-25T10:00:00Z", cpu: 1 }, { time: "2025-11-25T10:02:00Z", cpu: 3 }] },
      { label: "h2", points: [{ time: "2025-11-25T10:01:00Z", cpu: 2 }, { time: "2025-11-25T10:00:00Z", cpu: null }] },
    ],
    (p) => epochOf(p.time),
    (p) => p.cpu,
  );
  const t0 = epochOf("2025-11-25T10:00:00Z");
  assert.deepEqual(a.x, [t0, t0 + 60, t0 + 120]);
  assert.deepEqual(a.series, [{ label: "h1", values: [1, null, 3] }, { label: "h2", values: [null, 2, null] }]);
});

test("cc-metric-store's data from `from` in steps of the resolution", () => {
  assert.deepEqual(ccTimes(1699999980, 60, 4), [1699999980, 1700000040, 1700000100, 1700000160]);
});

test("mean skips what was not measured", () => {
  assert.equal(mean([1, null, 3, undefined]), 2);
  assert.equal(mean([null]), null);
  assert.equal(mean([]), null);
});

test("a load answer by columns as points: slot times from the grid, empty slots dropped", () => {
  const g = { node: "a", cpu_util: [10, null, 30], mem_kb: [100, null, null] };
  assert.deepEqual(columnPoints(g, ["cpu_util", "mem_kb"], 3610, 3600), [
    { time: "1970-01-01T01:00:00Z", cpu_util: 10, mem_kb: 100 },
    { time: "1970-01-01T03:00:00Z", cpu_util: 30, mem_kb: null },
  ]);
  assert.deepEqual(columnPoints({ node: "b" }, ["cpu_util"], 0, 60), []);
});
