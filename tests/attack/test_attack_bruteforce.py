# attack: sqlite only (the HTTP layer, not storage)
"""Brute force: failed authentications are limited per client address and per user name (429 with
Retry-After, the answer held back auth-fail-delay-ms), a correct credential is never refused,
from the guessing address or any other, and failures are logged through the refusal log,
rate-limited with counts of what was suppressed. docs/security.md, "Authentication failures".
"""
import base64
import http.client
import os
import re
import statistics
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
from harness import Fjord, check, finish  # noqa: E402

BURST = 10
DELAY_MS = 300


def basic(user, pw):
    return "Basic " + base64.b64encode(("%s:%s" % (user, pw)).encode()).decode()


def get(port, src, authz, path="/api/v1/clusters"):
    """(status, headers, seconds) of one GET from source address src on a new connection."""
    t0 = time.time()
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10, source_address=(src, 0))
    c.request("GET", path, headers={"Authorization": authz})
    r = c.getresponse()
    r.read()
    c.close()
    return r.status, dict(r.getheaders()), time.time() - t0


def main():
    f = Fjord("--auth-fail-burst", str(BURST), "--auth-fail-rate", "6", "--auth-fail-delay-ms", str(DELAY_MS),
              "--refusal-log-burst", "3").start()
    try:
        secret = f.token("c1")
        f.token("c2")
        good = basic("c1", secret)

        # One address guessing c1's secret: the first BURST failures are 401s, then 429s.
        first = [get(f.port, "127.0.0.50", basic("c1", "guess%d" % i)) for i in range(BURST)]
        check(all(s == 401 for s, _, _ in first), "first %d failures: 401 (%s)" % (BURST, [s for s, _, _ in first]))
        later = [get(f.port, "127.0.0.50", basic("c1", "guess-more%d" % i)) for i in range(5)]
        check(all(s == 429 for s, _, _ in later), "failures past the burst: 429 (%s)" % [s for s, _, _ in later])
        ra = [h.get("Retry-After") for _, h, _ in later]
        check(all(v and v.isdigit() and int(v) >= 1 for v in ra), "429 carries Retry-After in seconds (%s)" % ra)
        held = min(t for _, _, t in later)
        print("limited failures answered after %.0f ms (auth-fail-delay-ms %d)" % (held * 1000, DELAY_MS))
        check(held >= DELAY_MS / 1000.0 * 0.9, "a limited failure's answer is held back (%.3f s)" % held)

        # The right secret is never refused: not from the limited address, not from another.
        s, _, _ = get(f.port, "127.0.0.50", good)
        check(s == 200, "the right secret from the limited address: 200 (%d)" % s)
        s, _, _ = get(f.port, "127.0.0.51", good)
        check(s == 200, "the right secret from another address: 200 (%d)" % s)
        s, _, _ = get(f.port, "127.0.0.50", "Bearer " + secret)
        check(s == 200, "the right secret as a Bearer token from the limited address: 200 (%d)" % s)

        # Guessing c2's secret from many addresses, one guess each: the name's own limit applies.
        statuses = [get(f.port, "127.0.1.%d" % i, basic("c2", "x%d" % i))[0] for i in range(1, BURST + 6)]
        check(statuses[:BURST] == [401] * BURST and statuses[BURST:] == [429] * 5,
              "one guess per address for one name: 401 x %d then 429 (%s)" % (BURST, statuses))
        s, _, _ = get(f.port, "127.0.1.200", basic("c2", f.token("c2")))
        check(s == 200, "a right (new) secret of the guessed name from a fresh address: 200 (%d)" % s)

        # A parallel guesser is slowed down to what the held answers allow; a good client is not.
        stop = threading.Event()
        counts = {"tries": 0}

        def guesser(src):
            i = 0
            while not stop.is_set():
                get(f.port, src, basic("c1", "p%d" % i))
                counts["tries"] += 1
                i += 1

        ts = [threading.Thread(target=guesser, args=("127.0.3.%d" % (i + 1),), daemon=True) for i in range(8)]
        for t in ts:
            t.start()
        good_times = []
        for _ in range(10):
            s, _, t = get(f.port, "127.0.0.60", good)
            check(s == 200, "the right secret during a parallel guess: 200 (%d)" % s)
            good_times.append(t)
            time.sleep(0.2)
        stop.set()
        for t in ts:
            t.join(10)
        print("8 parallel guessers: %d guesses in ~2 s; right secret median %.1f ms"
              % (counts["tries"], statistics.median(good_times) * 1000))

        # Unknown user and wrong secret of a known user (c3, not guessed before): the same answer;
        # the timing is printed (one hash each: a dummy one for the unknown name).
        f.token("c3")

        def median_of(authz, net):
            return statistics.median(get(f.port, "127.0.%d.%d" % (net, i + 1), authz)[2] for i in range(BURST - 2))
        s1, _, _ = get(f.port, "127.0.4.1", basic("c3", "wrong"))
        s2, _, _ = get(f.port, "127.0.4.2", basic("no-such-cluster", "wrong"))
        check(s1 == s2 == 401, "wrong secret and unknown name answer alike (%d, %d)" % (s1, s2))
        print("median answer: wrong secret %.2f ms, unknown name %.2f ms, right %.2f ms (HTTP round trips)"
              % (median_of(basic("c3", "w"), 5) * 1000, median_of(basic("nobody", "w"), 6) * 1000,
                 median_of(good, 7) * 1000))
    finally:
        rc = f.stop()
    check(rc == 0, "fjord exits 0 (%d)" % rc)
    log = open(f.log).read()
    lines = [l for l in log.splitlines() if "refused client=127.0.0.50 " in l]
    print("refusal lines for 127.0.0.50: %d" % len(lines))
    check(any("credential=c1" in l and "status=401" in l and "reason=unauthorized" in l for l in lines),
          "a failure is logged with who, from where, status and reason")
    unauth = [l for l in lines if "reason=unauthorized" in l and "suppressed=" not in l.split("reason=")[0]]
    check(len([l for l in unauth if "status=" in l]) <= 3, "at most 3 lines per address and reason a minute (%d)"
          % len(unauth))
    m = [int(x) for x in re.findall(r"refused client=127\.0\.0\.50 reason=unauthorized suppressed=(\d+)", log)]
    check(m and m[0] == BURST - 3, "the suppressed count is reported (%s, want %d)" % (m, BURST - 3))
    check(any("reason=rate_limited" in l for l in lines), "limited failures are logged as rate_limited")
    finish()


if __name__ == "__main__":
    main()
