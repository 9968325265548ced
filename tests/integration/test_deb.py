"""The Debian packages (scripts/build-deb.sh): built from this build tree, installed with dpkg into a
throwaway root (its own dpkg database; the maintainer scripts run against it through DPKG_ROOT),
the installed binaries run, the service users and the state directory exist, and a purge takes
everything but the users away again."""
import os
import shutil
import subprocess
import tempfile

from harness import FJORD, SOURCE, check, finish

BUILD = os.path.dirname(os.path.abspath(FJORD))


def dpkg(root, *args):
    return subprocess.run(["dpkg", "--root=" + root, "--force-script-chrootless", "--log=/dev/null"] + list(args),
                          capture_output=True, text=True, timeout=120)


def run(*cmd, **kw):
    return subprocess.run(list(cmd), capture_output=True, text=True, timeout=120, **kw)


def test_package():
    tmp = tempfile.mkdtemp(prefix="fjord-deb-")
    try:
        out = os.path.join(tmp, "dist")
        r = run(os.path.join(SOURCE, "scripts", "build-deb.sh"), out, BUILD)
        debs = sorted(f for f in os.listdir(out) if f.endswith(".deb")) if os.path.isdir(out) else []
        check(r.returncode == 0 and len(debs) == 2, "two packages built: %r %s" % (debs, r.stderr[-500:]))
        if len(debs) != 2:
            return
        paths = [os.path.join(out, d) for d in debs]
        server = [p for p in paths if os.path.basename(p).startswith("fjord_")][0]
        info = run("dpkg-deb", "-I", server).stdout
        check("libmicrohttpd" in info and "libsqlite3" in info and "libpcre2-8" in info,
              "the server's libraries are its dependencies")
        listing = run("dpkg-deb", "-c", server).stdout
        for f in ("./usr/bin/fjord", "./lib/systemd/system/fjord.service", "./usr/lib/sysusers.d/fjord.conf",
                  "./usr/lib/tmpfiles.d/fjord.conf", "./etc/fjord/fjord.ini", "./usr/share/doc/fjord/deploy.md"):
            check(f in listing, "fjord package holds %s" % f)

        root = os.path.join(tmp, "root")
        for d in ("var/lib/dpkg/info", "var/lib/dpkg/updates", "etc"):
            os.makedirs(os.path.join(root, d))
        open(os.path.join(root, "var/lib/dpkg/status"), "w").close()
        # --force-depends: the throwaway root's dpkg database knows none of the libraries; the
        # binaries run here against this machine's.
        r = dpkg(root, "--force-depends", "-i", *paths)
        check(r.returncode == 0, "dpkg -i succeeds: %s" % r.stderr[-800:])
        passwd = open(os.path.join(root, "etc/passwd")).read() if os.path.exists(os.path.join(root, "etc/passwd")) else ""
        check("\nfjord:" in "\n" + passwd and "\nfjord-push:" in "\n" + passwd,
              "the service users are created: %r" % passwd)
        state = os.path.join(root, "var/lib/fjord")
        uid = [l.split(":")[2] for l in passwd.splitlines() if l.startswith("fjord:")]
        check(os.path.isdir(state) and uid and str(os.stat(state).st_uid) == uid[0],
              "/var/lib/fjord exists, owned by the fjord user")
        unit = open(os.path.join(root, "lib/systemd/system/fjord.service")).read()
        check("ExecStart=/usr/bin/fjord serve" in unit and "User=fjord" in unit, "the unit runs the installed binary")
        r = run(os.path.join(root, "usr/bin/fjord"), "version")
        check(r.returncode == 0 and r.stdout.startswith("fjord "), "installed fjord runs: %r" % r.stdout)
        r = run(os.path.join(root, "usr/bin/fjord"), "serve", "--help")
        check(r.returncode == 0 and "--listen" in r.stdout, "installed fjord has its help")
        r = run(os.path.join(root, "usr/bin/fjord-push"), "--help")
        check("usage" in (r.stdout + r.stderr).lower(), "installed fjord-push runs: %r" % (r.stdout + r.stderr)[:200])
        # The installed server serves its example configuration's database in the state folder.
        db = os.path.join(tmp, "probe.db")
        r = run(os.path.join(root, "usr/bin/fjord"), "migrate", "up", "--db", db)
        check(r.returncode == 0, "installed fjord makes a database: %s" % r.stderr)

        r = dpkg(root, "-P", "fjord", "fjord-push")
        check(r.returncode == 0, "dpkg -P succeeds: %s" % r.stderr[-500:])
        for f in ("usr/bin/fjord", "usr/bin/fjord-push", "etc/fjord/fjord.ini", "lib/systemd/system/fjord.service"):
            check(not os.path.exists(os.path.join(root, f)), "purged: %s" % f)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


test_package()
finish()
