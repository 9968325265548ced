"""Shared by the query API's integration tests (test_api_*.py): a real fjord with every real Sonar
envelope of shared/data/sonar posted over HTTP, a read-only credential, and small helpers."""
import copy
import csv
import io
import json
import os
import time
from datetime import datetime, timezone

from harness import Fjord, check, envelope_cluster, sonar_files, split_envelopes, SHARED

SONAR = os.path.join(SHARED, "data", "sonar")


def epoch(ts):
    """Epoch seconds of an RFC 3339 time as Sonar writes it."""
    return int(datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp())


def rfc(t):
    return datetime.fromtimestamp(t, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def envelope(path, index=0):
    return split_envelopes(open(os.path.join(SONAR, path)).read())[index]


class Api:
    """A started fjord holding the real envelopes; .get() reads with a read-only credential."""

    def __init__(self, extra_clusters=()):
        self.f = Fjord()
        self.files = sonar_files()
        clusters = {envelope_cluster(e) for p in self.files for e in split_envelopes(open(p).read())} - {None}
        clusters |= set(extra_clusters)
        # credentials first: the server reads them at start
        self.tokens = {c: self.f.token(c) for c in sorted(clusters)}
        self.reader = self.f.token("reader", "--read-only")
        self.f.start()
        for p in self.files:
            cluster = None
            for env in split_envelopes(open(p).read()):
                cluster = envelope_cluster(env) or cluster
                self.post(env, cluster)

    def post(self, env, cluster=None):
        cluster = cluster or envelope_cluster(env)
        r = self.f.post("/api/v1/ingest/sonar", json.dumps(env), auth=(cluster, self.tokens[cluster]))
        check(r.status == 200, "posted %s: %d %s" % (cluster, r.status, r.body[:300]))
        return r

    def get(self, path, headers=None, auth=None):
        return self.f.get(path, headers=headers, auth=auth or ("reader", self.reader))

    def json(self, path):
        r = self.get(path)
        check(r.status == 200, "GET %s: %d %s" % (path, r.status, r.body[:300]))
        return r.json() if r.status == 200 else {}

    def bad(self, path, param, why=None):
        """GET path must answer 400 naming param (error.path and the message)."""
        r = self.get(path)
        ok = r.status == 400
        err = {}
        if ok:
            err = r.json().get("error", {})
            ok = err.get("path") == param and param in err.get("message", "")
            if why:
                ok = ok and why in err.get("message", "")
        check(ok, "GET %s: want 400 naming %s%s, got %d %s" % (path, param, " (%s)" % why if why else "",
                                                                r.status, r.body[:300]))

    def csv(self, path, accept=False):
        r = self.get(path, headers={"Accept": "text/csv"}) if accept else self.get(path + "&format=csv")
        check(r.status == 200 and r.headers.get("Content-Type", "").startswith("text/csv"),
              "CSV %s: %d %s %s" % (path, r.status, r.headers.get("Content-Type"), r.body[:200]))
        return list(csv.DictReader(io.StringIO(r.body)))

    def close(self):
        check(self.f.stop() == 0, "SIGTERM exits 0")
        self.f.cleanup()


def shifted(env, seconds, **changes):
    """A copy of a sample envelope moved in time (and its system values changed), for cases the
    real files do not cover: a later sample, a counter that went down, a node that stopped."""
    e = copy.deepcopy(env)
    a = e["data"]["attributes"]
    a["time"] = rfc(epoch(a["time"]) + seconds)
    for k, v in changes.items():
        a["system"][k] = v
    return e
