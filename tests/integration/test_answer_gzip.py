"""Answers in gzip for clients that take it (browsers, Grafana's and Telegraf's Go clients, curl
--compressed): a JSON or CSV answer of 1 KiB or more is gzipped when Accept-Encoding takes gzip,
says so (Content-Encoding, Vary) and unpacks to the very bytes the same request gets without it;
small answers, gzip refused with q=0, and the dashboard's already gzipped files are sent as they
are (never gzipped twice)."""
import gzip
import http.client
import json
import os

from harness import Fjord, SHARED, check, finish

SAMPLE = os.path.join(SHARED, "data", "sonar", "real", "0+sample-ml1.hpc.uio.no.json")


def get(f, path, accept=None, auth=None):
    c = http.client.HTTPConnection("127.0.0.1", f.port, timeout=30)
    try:
        h = {}
        if accept is not None:
            h["Accept-Encoding"] = accept
        if auth:
            h["Authorization"] = "Bearer " + auth
        c.request("GET", path, headers=h)
        r = c.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        c.close()


def main():
    f = Fjord().start()
    try:
        secret = f.token("mlx.hpc.uio.no")
        reader = f.token("analysts", "--read-only")
        r = f.post("/api/v1/insert/sample", open(SAMPLE).read(), auth=("mlx.hpc.uio.no", secret))
        check(r.status == 200, "sample stored: %d %s" % (r.status, r.body[:200]))
        for path in ("/api/v1/openapi.json", "/api/v1/jobs?cluster=mlx.hpc.uio.no&from=2000-01-01T00:00:00Z",
                     "/api/v1/jobs?cluster=mlx.hpc.uio.no&from=2000-01-01T00:00:00Z&format=csv"):
            st, h, plain = get(f, path, auth=reader)
            check(st == 200 and "content-encoding" not in h and len(plain) >= 1024,
                  "%s without Accept-Encoding: %d, %d bytes, %s" % (path, st, len(plain), h.get("content-encoding")))
            check(h.get("vary") == "Accept-Encoding", "%s says it varies by Accept-Encoding: %s" % (path, h.get("vary")))
            st, h, packed = get(f, path, "gzip, deflate, br", auth=reader)
            check(st == 200 and h.get("content-encoding") == "gzip" and h.get("vary") == "Accept-Encoding",
                  "%s with gzip taken: %d %s" % (path, st, h))
            check(int(h.get("content-length", "-1")) == len(packed) and len(packed) < len(plain),
                  "%s: %d bytes gzipped of %d" % (path, len(packed), len(plain)))
            check(gzip.decompress(packed) == plain, "%s unpacks to the same answer" % path)
            st, h, same = get(f, path, "gzip;q=0, identity", auth=reader)
            check(st == 200 and "content-encoding" not in h and same == plain, "%s with gzip;q=0: as it is" % path)
        # a small answer goes as it is, and so does an error
        st, h, body = get(f, "/api/v1/health", "gzip")
        check(st == 200 and "content-encoding" not in h and json.loads(body)["status"] == "ok",
              "small answer not gzipped: %s" % h)
        st, h, body = get(f, "/api/v1/jobs?cluster=mlx.hpc.uio.no", "gzip")
        check(st == 401 and "content-encoding" not in h and b"credential" in body, "401 as it is: %d %s" % (st, h))
        # the dashboard's page is gzipped once (its own copy), not twice
        st, h, page = get(f, "/", "gzip")
        check(st == 200 and h.get("content-encoding") == "gzip" and gzip.decompress(page).lstrip().lower()
              .startswith(b"<!doctype html"), "the dashboard's page: gzipped once: %s" % h)
    finally:
        f.cleanup()
    finish()


if __name__ == "__main__":
    main()
