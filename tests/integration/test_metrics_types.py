"""InfluxDB's four field types through a real fjord (docs/metrics.md, "Field types"): what Telegraf
sends (floats, `i` integers, strings, booleans) is answered by InfluxQL with its type; a point whose
type is not its series' is refused as InfluxDB's field type conflict, naming its line and field,
the rest of the request stored; strings are re-sent without duplicates; everything survives a
restart (the types too: a conflict is still refused by a server that has not seen the series since
its start); series stored before types (untyped) take numbers and booleans as before. The values
are compared with the lines written, an independent truth."""
import signal
import time
import urllib.parse

from harness import Fjord, check, finish

S = 1700000000
NS = 10**9


def q(f, tok, text, **extra):
    params = dict({"db": "t", "q": text, "u": "t", "p": tok}, **extra)
    r = f.get("/query?" + urllib.parse.urlencode(params))
    check(r.status == 200, "%s answers 200: %d %s" % (text, r.status, r.body[:300]))
    return r.json()["results"][0]


def values(res):
    return [row for s in res.get("series", []) for row in s["values"]]


def write(f, tok, body):
    return f.request("POST", "/write?db=t&u=t&p=%s" % tok, body.encode())


MESSAGES = ['say "hi", a=b', "Tromsø \\ 38 °C", "", "line\nbreak"]


def lines(n):
    out = []
    for k in range(n):
        t = (S + 10 * k) * NS
        msg = MESSAGES[k % len(MESSAGES)].replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
        out.append('system,host=n1 uptime=%di,uptime_format="%d:%02d",load1=%.2f %d' % (1000 + 10 * k, k // 6, k % 6 * 10, k / 4, t))
        out.append('procstat_lookup,host=n1,pattern=slurmd running=%s,pid_count=%di %d' % ("true" if k % 3 else "F", k % 3 and 1, t))
        out.append('syslog,host=n1,appname=cron message="%s",severity_code=%di %d' % (msg, k % 8, t))
    return "\n".join(out) + "\n"


def string_points(f):
    """String points stored: rows, and points packed into chunks."""
    rows = f.query("SELECT count(*) FROM ts_strings")[0][0]
    packed = f.query("SELECT coalesce(sum(count), 0) FROM ts_string_chunk")[0][0]
    return rows + packed


def unpacked(f):
    """Series with two rows or more (what the writer packs; a lone row stays one)."""
    return f.query("SELECT count(*) FROM (SELECT series_id FROM ts_strings GROUP BY series_id HAVING count(*) >= 2) x")[0][0]


def wait_packed(f, label):
    """The writer packs string points older than the flush interval (12 h; these are from 2023)
    soon after its start: a series' rows become a chunk."""
    deadline = time.time() + 15
    while time.time() < deadline and unpacked(f):
        time.sleep(0.2)
    chunks = f.query("SELECT count(*), coalesce(sum(count), 0) FROM ts_string_chunk")[0]
    check(unpacked(f) == 0 and chunks[0] >= 1, "%s: string points packed into chunks (%d series unpacked, chunks %r)"
          % (label, unpacked(f), chunks))


def check_answers(f, tok, n, label):
    keys = q(f, tok, "SHOW FIELD KEYS")
    types = {(s["name"], v[0]): v[1] for s in keys["series"] for v in s["values"] if s["name"] != "newm"}
    check(types == {("system", "uptime"): "integer", ("system", "uptime_format"): "string", ("system", "load1"): "float",
                    ("procstat_lookup", "running"): "boolean", ("procstat_lookup", "pid_count"): "integer",
                    ("syslog", "message"): "string", ("syslog", "severity_code"): "integer"},
          "%s: SHOW FIELD KEYS names every type: %r" % (label, types))
    rows = values(q(f, tok, "SELECT uptime, uptime_format, load1 FROM system WHERE time < %ds" % (S + 10 * n), epoch="s"))
    want = [[S + 10 * k, 1000 + 10 * k, "%d:%02d" % (k // 6, k % 6 * 10), round(k / 4, 2)] for k in range(n)]
    check(rows == want, "%s: integers, strings and floats as written: %r" % (label, rows[:3]))
    check(all(type(r[1]) is int for r in rows), "%s: integers are JSON integers" % label)
    rows = values(q(f, tok, "SELECT running FROM procstat_lookup WHERE time < %ds" % (S + 10 * n), epoch="s"))
    check([r[1] for r in rows] == [bool(k % 3) for k in range(n)], "%s: booleans true/false: %r" % (label, rows[:4]))
    rows = values(q(f, tok, "SELECT message FROM syslog WHERE time < %ds" % (S + 10 * n), epoch="s"))
    check([r[1] for r in rows] == [MESSAGES[k % len(MESSAGES)] for k in range(n)],
          "%s: strings unescaped, quotes, commas, backslashes, non-ASCII, the empty string, a line break: %r"
          % (label, rows[:4]))
    agg = values(q(f, tok, "SELECT count(message), last(message), sum(severity_code), max(uptime) FROM syslog, system "
                      "WHERE time < %ds" % (S + 10 * n)))
    check(len(agg) == 2 and agg[0][1:4] == [n, MESSAGES[(n - 1) % len(MESSAGES)], sum(k % 8 for k in range(n))],
          "%s: count and last of a string, sum of an integer (syslog): %r" % (label, agg))
    check(len(agg) == 2 and agg[1][4] == 1000 + 10 * (n - 1) and type(agg[1][4]) is int,
          "%s: max of an integer is an integer (system): %r" % (label, agg))
    err = q(f, tok, "SELECT mean(message) FROM syslog")
    check(err.get("error") == "unsupported mean iterator type: *query.stringInterruptIterator",
          "%s: the mean of a string refused as InfluxDB: %r" % (label, err))


def main():
    f = Fjord()
    try:
        tok = f.token("t")
        f.start()
        n = 12
        r = write(f, tok, lines(n))
        check(r.status == 204, "typed lines are taken: %d %s" % (r.status, r.body))
        check_answers(f, tok, n, "after the write")

        # the same lines again: nothing added (strings are replaced, not duplicated)
        r = write(f, tok, lines(n))
        check(r.status == 204, "re-sent: %d" % r.status)
        counts = values(q(f, tok, "SELECT count(message) FROM syslog WHERE time < %ds" % (S + 10 * n)))
        check(counts and counts[0][1] == n, "re-sending adds no string point: %r" % counts)
        # a string re-sent with another value replaces it: last write wins
        r = write(f, tok, 'syslog,host=n1,appname=cron message="changed" %d\n' % ((S + 10) * NS))
        check(r.status == 204, "a string replaced: %d" % r.status)
        rows = values(q(f, tok, "SELECT message FROM syslog WHERE time = %ds" % (S + 10)))
        check([x[1] for x in rows] == ["changed"], "the later string wins: %r" % rows)
        write(f, tok, 'syslog,host=n1,appname=cron message="%s" %d\n' % (MESSAGES[1].replace("\\", "\\\\"), (S + 10) * NS))

        # a conflict: uptime is an integer series; a float, a string and a boolean are refused,
        # the other lines and fields of the request are stored, the answer names line and field
        t = (S + 10 * n) * NS
        body = ("system,host=n1 load1=7.5 %d\n"
                "system,host=n1 uptime=1.5 %d\n"
                "syslog,host=n1,appname=cron message=5i %d\n"
                "procstat_lookup,host=n1,pattern=slurmd running=true,pid_count=2i %d\n"
                "procstat_lookup,host=n1,pattern=slurmd running=\"yes\" %d\n" % (t, t, t, t, t + NS))
        r = write(f, tok, body)
        check(r.status == 400, "a field type conflict is 400: %d %s" % (r.status, r.body))
        doc = r.json()
        msg = doc["error"]["message"] if isinstance(doc.get("error"), dict) else doc.get("error", "")
        check(msg.startswith('partial write: field type conflict: input field "uptime" on measurement "system" is '
                             "type float, already exists as type integer dropped=3"),
              "InfluxDB's words, every conflicting point counted: %r" % msg)
        check(doc.get("error", {}).get("path") == "line 2" and doc.get("conflicts") == 3,
              "the first conflict's line and the count: %s" % r.body)
        rows = values(q(f, tok, "SELECT load1, uptime FROM system WHERE time = %dns" % t))
        check(rows and rows[0][1:] == [7.5, None], "the good line of the request is stored: %r" % rows)
        rows = values(q(f, tok, "SELECT running, pid_count FROM procstat_lookup WHERE time >= %dns" % t))
        check([x[1:] for x in rows] == [[True, 2]], "a boolean to a boolean series is no conflict: %r" % rows)
        # within one request: the first point of a new series fixes its type
        r = write(f, tok, "newm,host=n1 x=1i %d\nnewm,host=n1 x=2.5 %d\n" % (t, t + NS))
        check(r.status == 400 and "line 2" in r.body and 'input field \\"x\\" on measurement \\"newm\\" is type float, '
              'already exists as type integer' in r.body, "a conflict inside one request: %d %s" % (r.status, r.body))
        check(values(q(f, tok, "SELECT x FROM newm", epoch="s")) == [[S + 10 * n, 1]], "its first point is stored")

        # a restart: types and values come back from the database, and conflicts are still refused
        check(f.stop() == 0, "fjord stops cleanly")
        f.start()
        wait_packed(f, "after a restart")
        check_answers(f, tok, n, "after a restart, packed")
        check(string_points(f) == 2 * n and f.query("SELECT count(*) FROM ts_strings") == [(0,)],
              "every string point is in a chunk: %d" % string_points(f))
        # strings re-sent at packed times: the rows are the later writes and win over the chunk
        r = write(f, tok, 'syslog,host=n1,appname=cron message="later" %d\nsyslog,host=n1,appname=cron message="x" %d\n'
                  % ((S + 20) * NS, (S + 40) * NS))
        check(r.status == 204, "packed strings re-sent: %d" % r.status)
        rows = values(q(f, tok, "SELECT message FROM syslog WHERE time >= %ds AND time <= %ds" % (S + 10, S + 40)))
        check([x[1] for x in rows] == [MESSAGES[1], "later", MESSAGES[3], "x"], "rows beat their packed points: %r" % rows)
        check(f.stop() == 0, "fjord stops cleanly")
        f.start()
        wait_packed(f, "after a second restart")
        rows = values(q(f, tok, "SELECT message FROM syslog WHERE time >= %ds AND time <= %ds" % (S + 10, S + 40)))
        check([x[1] for x in rows] == [MESSAGES[1], "later", MESSAGES[3], "x"],
              "packed again, merged into the chunk they fell in: %r" % rows)
        check(string_points(f) == 2 * n and f.query("SELECT count(*) FROM ts_strings") == [(0,)],
              "the merge replaced the chunk's points: %d" % string_points(f))
        check(f.query("SELECT count(*) FROM ts_string_chunk c JOIN ts_string_chunk d ON c.series_id = d.series_id"
                      " AND c.t_last < d.t_last AND c.t_last >= d.t_first") == [(0,)], "a series' chunks never overlap")
        write(f, tok, 'syslog,host=n1,appname=cron message="%s" %d\nsyslog,host=n1,appname=cron message="%s" %d\n'
              % (MESSAGES[2], (S + 20) * NS, MESSAGES[0].replace('"', '\\"'), (S + 40) * NS))
        r = write(f, tok, "system,host=n1 uptime_format=3i %d\n" % (t + 2 * NS))
        check(r.status == 400 and "already exists as type string" in r.body,
              "a series not held since the start keeps its type: %d %s" % (r.status, r.body))
        r = write(f, tok, 'system,host=n1 uptime=2000i,uptime_format="later" %d\n' % (t + 3 * NS))
        check(r.status == 204, "the right types are taken after the restart: %d %s" % (r.status, r.body))

        # a series stored before field types (untyped): numbers and booleans as before, floats answered
        check(f.stop() == 0, "fjord stops cleanly")
        f.execute("UPDATE ts_series SET ftype = 4 WHERE metric = 'system.load1'")
        f.start()
        r = write(f, tok, "system,host=n1 load1=3i %d\nsystem,host=n1 load1=true %d\n" % (t + 4 * NS, t + 5 * NS))
        check(r.status == 204, "an untyped series takes integers and booleans: %d %s" % (r.status, r.body))
        keys = q(f, tok, "SHOW FIELD KEYS FROM system")
        check(["load1", "float"] in keys["series"][0]["values"], "an untyped series answers floats: %r" % keys)
        rows = values(q(f, tok, "SELECT load1 FROM system WHERE time >= %dns" % (t + 4 * NS), epoch="ns"))
        check([x[1] for x in rows] == [3, 1], "as numbers: %r" % rows)
        r = write(f, tok, 'system,host=n1 load1="x" %d\n' % (t + 6 * NS))
        check(r.status == 400 and "already exists as type float" in r.body, "but no string: %d %s" % (r.status, r.body))
    finally:
        rc = f.stop()
        f.cleanup()
    check(rc == 0, "fjord exits 0")

    # SIGKILL with points only in the request log, raw bodies kept (request-log-keep): replay
    # decodes the bodies again, and their strings (committed as rows) must not become points
    g = Fjord("--request-log-keep", "1h")
    try:
        tok = g.token("t")
        g.start()
        n = 8
        r = write(g, tok, lines(n))
        check(r.status == 204, "typed lines taken with raw bodies kept: %d %s" % (r.status, r.body))
        g.proc.send_signal(signal.SIGKILL)
        g.proc.wait()
        g.proc = None
        g.start()
        check_answers(g, tok, n, "after SIGKILL and replay of raw bodies")
        check(g.stop() == 0, "fjord stops cleanly after the replay")
        chunks = g.query("SELECT count(*) FROM ts_chunk c JOIN ts_series s ON s.id = c.series_id WHERE s.ftype = 2")
        check(chunks == [(0,)], "no string series has a chunk (its points are rows): %r" % chunks)
    finally:
        g.cleanup()
    finish()


if __name__ == "__main__":
    main()
