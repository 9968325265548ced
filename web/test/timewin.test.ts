import { test } from "node:test";
import assert from "node:assert/strict";
import { alignWindow, bucketFor, parseDuration, parseTime, rfc3339, windowError, windowOf } from "../src/lib/timewin";

const NOW = 1764064320; // 2025-11-25T09:52:00Z

test("durations as the API takes them", () => {
  assert.equal(parseDuration("90"), 90);
  assert.equal(parseDuration("15m"), 900);
  assert.equal(parseDuration("1.5h"), 5400);
  assert.equal(parseDuration("7d"), 604800);
  assert.equal(parseDuration("2w"), 1209600);
  assert.equal(parseDuration("7x"), null);
  assert.equal(parseDuration(""), null);
});

test("times: now, now-DURATION, epoch seconds, RFC 3339 with offsets", () => {
  assert.equal(parseTime("now", NOW), NOW);
  assert.equal(parseTime("now-1d", NOW), NOW - 86400);
  assert.equal(parseTime("1700000000", NOW), 1700000000);
  assert.equal(parseTime("2025-11-25T09:52:00Z", NOW), NOW);
  assert.equal(parseTime("2025-11-25T10:52:00+01:00", NOW), NOW);
  assert.equal(parseTime("2025-11-25T09:52:00.750Z", NOW), NOW);
  assert.equal(parseTime("yesterday", NOW), null);
  assert.equal(parseTime("2025-11-25", NOW), null);
  assert.equal(rfc3339(NOW), "2025-11-25T09:52:00Z");
});

test("a view's window: the URL's, else a day up to the anchor; a reversed one falls back", () => {
  assert.deepEqual(windowOf(undefined, undefined, NOW, NOW + 999), { from: NOW - 86400, to: NOW });
  assert.deepEqual(windowOf("now-6h", "now", 0, NOW), { from: NOW - 21600, to: NOW });
  assert.deepEqual(windowOf("now-1h", undefined, NOW, NOW + 5), { from: NOW + 5 - 3600, to: NOW });
  assert.deepEqual(windowOf("bad", "1700000000", NOW, NOW), { from: 1700000000 - 86400, to: 1700000000 });
  assert.deepEqual(windowOf("now", "now-1h", NOW, NOW), { from: NOW - 3600 - 86400, to: NOW - 3600 });
});

test("bucket widths round up to whole steps, at least a minute", () => {
  assert.equal(bucketFor({ from: 0, to: 3600 }), 60);
  assert.equal(bucketFor({ from: 0, to: 86400 }), 900); // 720 s rounds up to 15 minutes
  assert.equal(bucketFor({ from: 0, to: 86400 }, 96), 900);
  assert.equal(bucketFor({ from: 0, to: 7 * 86400 }), 7200);
  assert.equal(bucketFor({ from: 0, to: 400 * 86400 }), 604800);
});

test("a bad window is said in words; a good one, in any of the API's forms, is not", () => {
  assert.equal(windowError("now-800d", "now", NOW), null);
  assert.equal(windowError("1700000000", "2025-11-25T09:52:00Z", NOW), null);
  assert.equal(windowError(undefined, undefined, NOW), null);
  assert.match(windowError("yesterday", undefined, NOW) ?? "", /'from' is "yesterday", which is not a time/);
  assert.match(windowError(undefined, "soon", NOW) ?? "", /'to' is "soon"/);
  assert.match(windowError("now", "now-1d", NOW) ?? "", /not before its 'to'/);
});

test("a window widened to whole buckets: the grid's first column is the API's first bucket", () => {
  assert.deepEqual(alignWindow({ from: 3600 * 10 + 120, to: 3600 * 34 + 120 }, 3600), { from: 36000, to: 3600 * 35 });
  assert.deepEqual(alignWindow({ from: 7200, to: 10800 }, 3600), { from: 7200, to: 10800 });
});
