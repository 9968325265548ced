import { test } from "node:test";
import assert from "node:assert/strict";
import { axisTimes, fmtAgo, fmtDuration, fmtKb, fmtLocal, fmtNum, fmtPct, fmtUtc, naturalCompare, sortNatural } from "../src/lib/format";

test("sizes in kibibytes read in binary units", () => {
  assert.equal(fmtKb(0), "0 KiB");
  assert.equal(fmtKb(512), "512 KiB");
  assert.equal(fmtKb(1536), "1.5 MiB");
  assert.equal(fmtKb(130950172), "125 GiB"); // ml1's installed memory
  assert.equal(fmtKb(11534336), "11.0 GiB");
  assert.equal(fmtKb(null), "");
});

test("numbers and percentages drop trailing zeros; null is empty", () => {
  assert.equal(fmtNum(101.94), "101.9");
  assert.equal(fmtNum(80), "80");
  assert.equal(fmtPct(61.849), "61.8%");
  assert.equal(fmtPct(undefined), "");
  assert.equal(fmtNum(NaN), "");
});

test("durations", () => {
  assert.equal(fmtDuration(0), "0s");
  assert.equal(fmtDuration(250), "4m 10s");
  assert.equal(fmtDuration(7500), "2h 05m");
  assert.equal(fmtDuration(3 * 86400 + 4 * 3600 + 59), "3d 4h");
});

test("times in a given zone, UTC on hover", () => {
  assert.equal(fmtLocal("2025-11-25T09:52:00Z", "Europe/Oslo"), "2025-11-25 10:52:00");
  assert.equal(fmtLocal("2025-07-01T09:52:00Z", "Europe/Oslo"), "2025-07-01 11:52:00"); // summer time
  assert.equal(fmtUtc("2025-11-25T09:52:00Z"), "2025-11-25 09:52:00 UTC");
  assert.equal(fmtLocal(null), "");
});

test("ago", () => {
  const now = Date.parse("2025-11-25T12:00:00Z");
  assert.equal(fmtAgo("2025-11-25T11:59:30Z", now), "30s ago");
  assert.equal(fmtAgo("2025-11-25T11:00:00Z", now), "60m ago");
  assert.equal(fmtAgo("2025-11-23T13:00:00Z", now), "47h ago");
  assert.equal(fmtAgo("2025-11-20T12:00:00Z", now), "5d ago");
  assert.equal(fmtAgo(null, now), "never");
});

test("names as people read them: gpu-2 before gpu-10", () => {
  const names = ["gpu-10", "gpu-2", "c1-10", "c1-9", "gpu-1", "c1-10.fox", "bigmem-1"];
  assert.deepEqual([...names].sort(naturalCompare), ["bigmem-1", "c1-9", "c1-10", "c1-10.fox", "gpu-1", "gpu-2", "gpu-10"]);
  assert.deepEqual(sortNatural(names.map((node) => ({ node })), (x) => x.node).map((x) => x.node), [...names].sort(naturalCompare));
});

test("a plot's time axis in the tables' format, the date under the first tick and where it changes", () => {
  const t0 = Date.parse("2025-01-06T00:00:00Z") / 1000;
  assert.deepEqual(axisTimes([t0, t0 + 43200, t0 + 86400], "UTC"), ["00:00\n2025-01-06", "12:00", "00:00\n2025-01-07"]);
  assert.deepEqual(axisTimes([t0 - 3600], "Europe/Oslo"), ["00:00\n2025-01-06"]);
});

test("small sizes keep their fraction, so a plot's small ticks differ", () => {
  assert.equal(fmtKb(0.5), "0.5 KiB");
  assert.equal(fmtKb(1), "1 KiB");
  assert.equal(fmtKb(1.25), "1.3 KiB");
});

test("times in two zones from the one formatter per zone", () => {
  const a = fmtLocal("2025-11-25T09:52:00Z", "Europe/Oslo");
  assert.equal(a, "2025-11-25 10:52:00");
  assert.equal(fmtLocal("2025-11-25T09:52:00Z", "Europe/Oslo"), a);
  assert.equal(fmtLocal("2025-11-25T09:52:00Z", "UTC"), "2025-11-25 09:52:00");
});
