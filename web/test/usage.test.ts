import { test } from "node:test";
import assert from "node:assert/strict";
import { effClass, fmtEff, toggleUsageSort, usageQuery } from "../src/lib/usage";

test("the usage query: by and bucket checked, the filters passed, the view's sort left to the browser", () => {
  const w = ["2026-01-01T00:00:00Z", "2026-01-08T00:00:00Z"] as const;
  assert.deepEqual(usageQuery({ cluster: "fox", by: "account", bucket: "day", user: "ann", sort: "cpu_eff", order: "asc" },
    ...w), { cluster: "fox", from: w[0], to: w[1], by: "account", bucket: "day", user: "ann" });
  assert.deepEqual(usageQuery({ cluster: "fox", by: "node", bucket: "none" }, ...w),
    { cluster: "fox", from: w[0], to: w[1], by: "user" });
});

test("efficiencies: a percentage, marked below the problem jobs' 25 %, nothing when unknown", () => {
  assert.equal(fmtEff(0.2468), "24.7 %");
  assert.equal(fmtEff(null), "");
  assert.equal(effClass(0.2499), "num eff-low");
  assert.equal(effClass(0.25), "num");
  assert.equal(effClass(null), "");
});

test("clicking a usage column: biggest first, the same column flips", () => {
  assert.deepEqual(toggleUsageSort({ cluster: "fox" }, "core_h_used"), { cluster: "fox", sort: "core_h_used", order: "asc" });
  assert.deepEqual(toggleUsageSort({ cluster: "fox" }, "jobs"), { cluster: "fox", sort: "jobs", order: "desc" });
});
