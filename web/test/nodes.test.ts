import { test } from "node:test";
import assert from "node:assert/strict";
import { countStates, heatColor, memPct, mergeAliases, nodeState } from "../src/lib/nodes";

const LAST = "2025-11-25T10:00:00Z";

test("a node is down by its Slurm states, silent after 15 minutes without a sample, else up", () => {
  assert.equal(nodeState([], "2025-11-25T09:50:00Z", LAST), "up");
  assert.equal(nodeState(null, "2025-11-25T09:45:00Z", LAST), "up"); // exactly 15 minutes
  assert.equal(nodeState([], "2025-11-25T09:44:59Z", LAST), "silent");
  assert.equal(nodeState(["IDLE"], null, LAST), "silent");
  assert.equal(nodeState(["DOWN*"], "2025-11-25T10:00:00Z", LAST), "down");
  assert.equal(nodeState(["MIXED", "DRAIN"], "2025-11-25T10:00:00Z", LAST), "down");
  assert.equal(nodeState(["mixed"], "2025-11-25T10:00:00Z", null), "up");
  assert.deepEqual(countStates(["up", "down", "up", "silent"]), { up: 2, down: 1, silent: 1 });
});

test("heat colours run from blue through yellow to red; no data is grey", () => {
  assert.equal(heatColor(0), "rgb(70,130,180)");
  assert.equal(heatColor(50), "rgb(250,210,60)");
  assert.equal(heatColor(100), "rgb(215,40,40)");
  assert.equal(heatColor(150), heatColor(100));
  assert.match(heatColor(null), /^rgba\(128,128,128/);
});

test("memory percent needs both figures", () => {
  assert.equal(memPct(50, 200), 25);
  assert.equal(memPct(0, 200), 0);
  assert.equal(memPct(null, 200), null);
  assert.equal(memPct(50, null), null);
});

test("a Slurm short name and a sampled full name are one node", () => {
  const got = mergeAliases([
    { node: "c1-10", last_seen: null, states: ["MIXED"], partitions: ["normal"] },
    { node: "c1-10.fox", last_seen: "2026-01-28T08:22:48Z", states: [], partitions: [] },
    { node: "c1-11", last_seen: null, states: ["IDLE"], partitions: ["normal"] },
    { node: "gpu-1.fox", last_seen: null, states: [], partitions: [] },
  ]);
  assert.deepEqual(got.map((n) => [n.node, n.states, n.partitions, n.last_seen, n.aliases]), [
    ["c1-10.fox", ["MIXED"], ["normal"], "2026-01-28T08:22:48Z", ["c1-10"]],
    ["c1-11", ["IDLE"], ["normal"], null, []],
    ["gpu-1.fox", [], [], null, []],
  ]);
  // the short name keeps the row when only it has samples
  const s = mergeAliases([{ node: "a", last_seen: "2025-01-01T00:00:00Z" }, { node: "a.x", last_seen: null }]);
  assert.deepEqual(s.map((n) => [n.node, n.aliases]), [["a", ["a.x"]]]);
  // both sampled: both shown
  const b = mergeAliases([{ node: "ml1", last_seen: "2025-01-01T00:00:00Z" }, { node: "ml1.x", last_seen: "2025-01-01T00:00:00Z" }]);
  assert.deepEqual(b.map((n) => n.node), ["ml1", "ml1.x"]);
});
