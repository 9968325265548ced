import { test } from "node:test";
import assert from "node:assert/strict";
import { href, parseRoute } from "../src/router";

test("views and their state from the address", () => {
  assert.deepEqual(parseRoute("/", ""), { view: "clusters", params: {} });
  assert.deepEqual(parseRoute("/ui/jobs", "?cluster=fox&user=alice"), { view: "jobs", id: undefined, params: { cluster: "fox", user: "alice" } });
  assert.deepEqual(parseRoute("/ui/node/c1-1.fox", "?cluster=fox"), { view: "node", id: "c1-1.fox", params: { cluster: "fox" } });
  assert.deepEqual(parseRoute("/ui/node/gpu%2F1", ""), { view: "node", id: "gpu/1", params: {} });
});

test("links hold the state and round-trip", () => {
  const h = href("jobs", { cluster: "fox", user: "alice", cursor: undefined, host: "c1-[1-8]" });
  assert.equal(h, "/ui/jobs?cluster=fox&user=alice&host=c1-%5B1-8%5D");
  const [path, search] = h.split("?");
  assert.deepEqual(parseRoute(path, "?" + search).params, { cluster: "fox", user: "alice", host: "c1-[1-8]" });
  assert.equal(href("node", { cluster: "fox" }, "gpu/1"), "/ui/node/gpu%2F1?cluster=fox");
});
