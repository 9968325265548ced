import { test } from "node:test";
import assert from "node:assert/strict";
import { countStates, heatColor, memPct, nodeState } from "../src/lib/nodes";

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
