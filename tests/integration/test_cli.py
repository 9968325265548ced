"""The command line as a new user meets it: --help on every command lists what parses (the option
table in server/config.c is the one source), boolean flags take a literal true/false and nothing
else, files that cannot be loaded say why, and only serve and `migrate up` make a database that
does not exist unless --create is given."""
import os
import re

from harness import Fjord, SOURCE, SHARED, check, finish, run_cli, fresh_db, PG

SAMPLE = os.path.join(SHARED, "data", "sonar", "real", "0+sample-ml1.hpc.uio.no.json")
COMMANDS = ["serve", "migrate", "token", "import", "check"]


def documented_options():
    """Every option in docs/configuration.md's table: serve must list each one in its --help."""
    text = open(os.path.join(SOURCE, "docs", "configuration.md")).read()
    return set(re.findall(r"^\| `([a-z-]+)` \|", text, re.M))


def test_help():
    for cmd in COMMANDS:
        for flag in ("--help", "-h"):
            r = run_cli(cmd, flag, check_rc=False)
            check(r.returncode == 0 and r.stdout.startswith("usage: fjord " + cmd),
                  "%s %s prints its usage: rc %d %r" % (cmd, flag, r.returncode, (r.stdout + r.stderr)[:200]))
        r = run_cli("help", cmd, check_rc=False)
        check(r.returncode == 0 and "--config FILE" in r.stdout, "fjord help %s: %r" % (cmd, r.stdout[:200]))
    serve = run_cli("serve", "--help").stdout
    for name in sorted(documented_options()):
        check("--%s " % name in serve, "serve --help lists documented option --%s" % name)
    check("(default 127.0.0.1:8077)" in serve and "(default 64M)" in serve and "(default 6h)" in serve,
          "serve --help shows defaults as an operator writes them")
    token = run_cli("token", "--help").stdout
    check("--password P" in token and "--read-only" in token and "--listen" not in token,
          "token --help lists its own flags and not serve's: %r" % token)
    check("--db" not in run_cli("check", "--help").stdout, "check opens no database and lists no --db")
    # Each option listed by a command's help is accepted by that command's parser, and no other.
    r = run_cli("token", "list", "--listen", "127.0.0.1:1", check_rc=False)
    check(r.returncode != 0 and "does not use --listen" in r.stderr, "token refuses serve's option: %r" % r.stderr)
    r = run_cli("serve", "--no-such-thing", "1", check_rc=False)
    check(r.returncode != 0 and "unknown option '--no-such-thing'" in r.stderr, "unknown option named: %r" % r.stderr)
    r = run_cli("bogus", check_rc=False)
    check(r.returncode == 2 and "unknown command 'bogus'" in r.stderr, "unknown command: %r" % r.stderr)


def test_bool_flags():
    f = Fjord()
    try:
        for extra in (["--dev-mode", "true"], ["--dev-mode"], ["--dev-mode", "false"], ["--dev-mode=yes"]):
            g = Fjord(*extra, db=fresh_db(f.tmp, "b%d.db" % len(extra[0])) if not PG else None, tmp=f.tmp)
            g.start()
            r = g.get("/api/v1/jobs?cluster=x")
            want_open = extra != ["--dev-mode", "false"]
            check((r.status != 401) == want_open, "%s: dev mode %s (%d)" % (" ".join(extra), want_open, r.status))
            g.stop()
        r = run_cli("serve", "--dev-mode", "yes", "--listen", "127.0.0.1:0", check_rc=False)
        check(r.returncode == 2 and "takes no argument 'yes'" in r.stderr,
              "a boolean flag takes only a literal true/false after it: %r" % r.stderr)
        conf = os.path.join(f.tmp, "bad.ini")
        with open(conf, "w") as out:
            out.write("[token]\npassword = hunter2\n")
        r = run_cli("token", "list", "--config", conf, check_rc=False)
        check(r.returncode != 0 and "command-line flag" in r.stderr, "INI refuses a command-line flag: %r" % r.stderr)
    finally:
        f.cleanup()


def test_files():
    f = Fjord()
    try:
        empty = os.path.join(f.tmp, "empty.json")
        open(empty, "w").close()
        blank = os.path.join(f.tmp, "blank.json")
        with open(blank, "w") as out:
            out.write("\n\n")
        for cmd in ("check", "import"):
            extra = ["--create"] if cmd == "import" else []
            r = run_cli(cmd, f.tmp, *extra, db=f.db if cmd == "import" else None, check_rc=False)
            check(r.returncode == 1 and "is a directory" in r.stderr, "%s DIR says why: %r" % (cmd, r.stderr))
            r = run_cli(cmd, empty, *extra, db=f.db if cmd == "import" else None, check_rc=False)
            check(r.returncode == 1 and "is empty" in r.stderr, "%s EMPTYFILE says why: %r" % (cmd, r.stderr))
            r = run_cli(cmd, blank, *extra, db=f.db if cmd == "import" else None, check_rc=False)
            check(r.returncode == 1 and r.stderr.strip(), "%s of blank lines says why: %r" % (cmd, r.stderr))
            r = run_cli(cmd, os.path.join(f.tmp, "missing.json"), *extra, db=f.db if cmd == "import" else None,
                        check_rc=False)
            check(r.returncode == 1 and "No such file" in r.stderr, "%s MISSING says why: %r" % (cmd, r.stderr))
        r = run_cli("check", SAMPLE, empty, check_rc=False)
        check(r.returncode == 1 and "1 envelopes valid" in r.stdout and "is empty" in r.stderr,
              "one bad file among good ones: the good one is still checked: %r %r" % (r.stdout, r.stderr))
    finally:
        f.cleanup()


def test_missing_database():
    if PG:
        print("database files are SQLite's; PostgreSQL databases are made by their administrator")
        return
    f = Fjord()
    try:
        typo = os.path.join(f.tmp, "typo.db")
        for args in (["token", "add", "c1"], ["token", "list"], ["migrate", "status"], ["migrate", "compact"],
                     ["import", SAMPLE]):
            r = run_cli(*args, db=typo, check_rc=False)
            check(r.returncode != 0 and "--create" in r.stderr, "%s on a missing database refused: %r"
                  % (" ".join(args), r.stderr))
            check(not os.path.exists(typo), "%s made no file" % " ".join(args))
        secret = run_cli("token", "add", "c1", "--create", db=typo).stdout.strip()
        check(len(secret) == 64 and os.path.exists(typo), "--create makes the database")
        check("c1\t" in run_cli("token", "list", db=typo).stdout, "an existing database needs no --create")
        other = os.path.join(f.tmp, "new.db")
        out = run_cli("migrate", "up", db=other).stdout
        check("up to date" in out and os.path.exists(other), "migrate up makes a new database: %r" % out)
    finally:
        f.cleanup()


test_help()
test_bool_flags()
test_files()
test_missing_database()
finish()
