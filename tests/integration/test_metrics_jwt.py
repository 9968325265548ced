"""Ed25519-signed JWTs (--jwt-public-key), as cc-metric-store accepts them: a valid token without a
cluster claim writes and reads any cluster; with a `cluster` claim only that cluster; expired, badly
signed, wrong-alg or foreign-key tokens are refused. Keys and signatures come from openssl."""
import base64
import json
import os
import subprocess
import time

from harness import Fjord, check, finish


def b64url(b):
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()


class Key:
    def __init__(self, tmp, name):
        self.pem = os.path.join(tmp, name + ".pem")
        subprocess.run(["openssl", "genpkey", "-algorithm", "ed25519", "-out", self.pem], check=True, capture_output=True)
        der = subprocess.run(["openssl", "pkey", "-in", self.pem, "-pubout", "-outform", "DER"], check=True,
                             capture_output=True).stdout
        self.public_b64 = base64.b64encode(der[-32:]).decode()
        self.tmp = tmp

    def sign(self, data):
        path = os.path.join(self.tmp, "msg")
        with open(path, "wb") as fh:
            fh.write(data)
        return subprocess.run(["openssl", "pkeyutl", "-sign", "-inkey", self.pem, "-rawin", "-in", path], check=True,
                              capture_output=True).stdout

    def token(self, claims, alg="EdDSA"):
        head = b64url(json.dumps({"alg": alg, "typ": "JWT"}).encode()) + "." + b64url(json.dumps(claims).encode())
        return head + "." + b64url(self.sign(head.encode()))


def write(f, path, tok, header="Authorization", scheme="Bearer "):
    return f.post(path, b"jwt_m,hostname=h value=1 %d\n" % int(time.time()), headers={
        "Content-Type": "text/plain", header: scheme + tok})


def main():
    f = Fjord()
    try:
        key, foreign = Key(f.tmp, "k"), Key(f.tmp, "f")
        f.extra = ["--jwt-public-key", key.public_b64]
        fritz = f.token("fritz")
        f.start()
        now = int(time.time())
        anyc = key.token({"sub": "ccms-writer", "exp": now + 3600, "roles": ["api"] * 20})
        check(len(anyc) > 300, "a realistic token is longer than 255 bytes (%d)" % len(anyc))
        r = write(f, "/api/write?cluster=fritz", anyc)
        check(r.status == 200, "valid token writes (%d %s)" % (r.status, r.body))
        r = write(f, "/api/write?cluster=alex", anyc)
        check(r.status == 200, "a token without cluster claim writes any cluster (%d)" % r.status)
        r = write(f, "/api/write?cluster=alex", anyc, header="X-Auth-Token", scheme="")
        check(r.status == 200, "X-Auth-Token header as cc-metric-store (%d)" % r.status)
        r = f.request("POST", "/api/query", json.dumps({"cluster": "alex", "from": now - 60, "to": now + 60,
                                                        "queries": [{"metric": "jwt_m", "host": "h"}]}),
                      headers={"Authorization": "Bearer " + anyc})
        check(r.status == 200 and r.json()["results"][0][0]["avg"] == 1, "and reads it (%d %s)" % (r.status, r.body))
        r = write(f, "/write?db=alex", anyc, scheme="Token ")
        check(r.status == 204, "InfluxDB Token scheme with a JWT (%d)" % r.status)

        only = key.token({"cluster": "fritz"})
        check(write(f, "/api/write?cluster=fritz", only).status == 200, "cluster claim: its cluster")
        check(write(f, "/api/write?cluster=alex", only).status == 401, "cluster claim: no other cluster")

        check(write(f, "/api/write?cluster=fritz", key.token({"exp": now - 10})).status == 401, "expired: 401")
        check(write(f, "/api/write?cluster=fritz", key.token({"nbf": now + 3600})).status == 401, "not yet valid: 401")
        check(write(f, "/api/write?cluster=fritz", foreign.token({})).status == 401, "another key: 401")
        check(write(f, "/api/write?cluster=fritz", key.token({}, alg="HS256")).status == 401, "alg not EdDSA: 401")
        h, p, s = anyc.split(".")
        tampered = h + "." + b64url(json.dumps({"sub": "x", "cluster": "fritz"}).encode()) + "." + s
        check(write(f, "/api/write?cluster=fritz", tampered).status == 401, "tampered claims: 401")
        check(write(f, "/api/write?cluster=fritz", "a.b").status == 401, "malformed: 401")
        check(f.stop() == 0, "clean stop")

        f.extra = ["--jwt-public-key", "not-base64!"]
        p = subprocess.run([os.environ.get("FJORD_BIN", "build/fjord"), "serve", "--listen", "127.0.0.1:0", "--db", f.db]
                           + f.extra, capture_output=True, text=True, timeout=30)
        check(p.returncode != 0 and "jwt-public-key" in p.stderr, "a bad key is refused at startup: %s" % p.stderr)
    finally:
        f.cleanup()
    finish()


if __name__ == "__main__":
    main()
