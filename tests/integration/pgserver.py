"""A throwaway PostgreSQL server for the tests: initdb into a temporary directory, start on a free
127.0.0.1 port, create databases, stop and remove everything afterwards.

Uses Debian's PostgreSQL server binaries (/usr/lib/postgresql/N/bin, or FJ_PG_BIN). When run as
root the server runs as the `postgres` user (PostgreSQL refuses to run as root). Authentication is
`trust` on loopback only: the server is for one test run and listens nowhere else.

As a module:   pg = PgServer().start(); url = pg.create_db(); ...; pg.stop()
As a command:  pgserver.py run -- CMD ARGS...   start, export FJ_TEST_DB_URL (the maintenance
                                                database's URL), run CMD, stop; exits with CMD's code
               pgserver.py start DIR            start in DIR (must not exist) and print the URL
                                                (FJ_PG_DURABLE=1: keep fsync and synchronous
                                                commit on, as a production server, for benchmarks)
               pgserver.py stop DIR             stop the server started in DIR and remove DIR
Only the standard library and psql are used.
"""
import glob
import os
import pwd
import shutil
import socket
import subprocess
import sys
import tempfile
import time

_counter = [0]


def pg_bin_dir():
    d = os.environ.get("FJ_PG_BIN")
    if d:
        return d
    cands = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(p.split("/")[-2]))
    if cands:
        return cands[-1]
    try:
        return subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        raise RuntimeError("no PostgreSQL server binaries (install postgresql or set FJ_PG_BIN)")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PgServer:
    """One PostgreSQL cluster in a temporary directory."""

    def __init__(self, base=None, durable=False):
        self.bin = pg_bin_dir()
        self.base = base
        self.durable = durable
        self.port = None
        self.as_user = None
        if os.geteuid() == 0:
            self.as_user = "postgres"

    def _run(self, args, check=True, **kw):
        """Runs a server binary, as the postgres user when we are root."""
        if self.as_user:
            args = ["runuser", "-u", self.as_user, "--"] + args
        return subprocess.run(args, capture_output=True, text=True, check=check, timeout=120, **kw)

    @property
    def data(self):
        return os.path.join(self.base, "data")

    @property
    def logfile(self):
        return os.path.join(self.base, "server.log")

    def start(self):
        if self.base is None:
            self.base = tempfile.mkdtemp(prefix="fjord-pg-")
        else:
            os.makedirs(self.base)
        if self.as_user:
            pw = pwd.getpwnam(self.as_user)
            os.chown(self.base, pw.pw_uid, pw.pw_gid)
        self._run([os.path.join(self.bin, "initdb"), "-D", self.data, "-U", "postgres", "--auth=trust",
                   "-E", "UTF8", "--no-locale", "--no-sync"])
        self.port = free_port()
        with open(os.path.join(self.data, "postgresql.conf"), "a") as f:
            # A test server: loopback only, socket in our own directory, and (unless durable) no
            # durability work: tests do not survive power loss anyway.
            f.write("\nlisten_addresses = '127.0.0.1'\nport = %d\nunix_socket_directories = '%s'\n"
                    "max_connections = 200\nshared_buffers = 128MB\n" % (self.port, self.base))
            if not self.durable:
                f.write("fsync = off\nsynchronous_commit = off\nfull_page_writes = off\n")
        self.start_server()
        return self

    def start_server(self):
        """Starts (or restarts after stop_server) the server on the same port and data."""
        self._run([os.path.join(self.bin, "pg_ctl"), "-D", self.data, "-l", self.logfile, "-w", "-t", "60",
                   "start"])

    def stop_server(self, mode="fast"):
        """Stops the server but keeps its data (for connection-loss tests)."""
        self._run([os.path.join(self.bin, "pg_ctl"), "-D", self.data, "-w", "-t", "60", "-m", mode, "stop"],
                  check=False)

    def url(self, db="postgres"):
        return "postgres://postgres@127.0.0.1:%d/%s" % (self.port, db)

    def psql(self, sql, db="postgres"):
        """Runs SQL; returns rows as lists of strings (NULL as None)."""
        p = subprocess.run(["psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-F", "\x1f", "-P", "null=\x1e",
                            "-d", self.url(db), "-c", sql],
                           capture_output=True, text=True, timeout=120)
        if p.returncode != 0:
            raise RuntimeError("psql: %s: %s" % (sql, p.stderr.strip()))
        rows = []
        for line in p.stdout.split("\n"):
            if line == "":
                continue
            rows.append([None if v == "\x1e" else v for v in line.split("\x1f")])
        return rows

    def create_db(self, name=None):
        """A new empty database; returns its URL."""
        if name is None:
            _counter[0] += 1
            name = "fjord_%d_%d" % (os.getpid(), _counter[0])
        self.psql('CREATE DATABASE "%s"' % name)
        return self.url(name)

    def add_password_role(self, role, password):
        """A login role that must give its password (scram-sha-256) on 127.0.0.1, owning a new
        database of its own name; returns the URL without the password (the others stay trust)."""
        self.psql("CREATE ROLE \"%s\" LOGIN PASSWORD '%s'" % (role, password.replace("'", "''")))
        self.psql('CREATE DATABASE "%s" OWNER "%s"' % (role, role))
        hba = os.path.join(self.data, "pg_hba.conf")
        with open(hba) as f:
            rules = f.read()
        with open(hba, "w") as f:  # first match wins: the role's rule before the trust lines
            f.write("host all %s 127.0.0.1/32 scram-sha-256\n%s" % (role, rules))
        self._run([os.path.join(self.bin, "pg_ctl"), "-D", self.data, "reload"])
        time.sleep(0.5)  # the postmaster rereads pg_hba.conf on SIGHUP
        return "postgres://%s@127.0.0.1:%d/%s" % (role, self.port, role)

    def stop(self):
        if self.base and os.path.isdir(self.data):
            self.stop_server("immediate")
        if self.base:
            shutil.rmtree(self.base, ignore_errors=True)
        self.base = None


def main(argv):
    if len(argv) >= 2 and argv[1] == "run":
        cmd = argv[2:]
        if cmd and cmd[0] == "--":
            cmd = cmd[1:]
        if not cmd:
            print("usage: pgserver.py run -- CMD ARGS...", file=sys.stderr)
            return 2
        pg = PgServer().start()
        try:
            env = dict(os.environ, FJ_TEST_DB_URL=pg.url(), FJ_TEST_PG_DIR=pg.base)
            return subprocess.run(cmd, env=env).returncode
        finally:
            pg.stop()
    if len(argv) == 3 and argv[1] == "start":
        pg = PgServer(os.path.abspath(argv[2]), durable=os.environ.get("FJ_PG_DURABLE") == "1").start()
        print(pg.url())
        return 0
    if len(argv) == 3 and argv[1] == "stop":
        pg = PgServer(os.path.abspath(argv[2]))
        pg.stop()
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
