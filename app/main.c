/* app/main.c — the fjord command line: serve, migrate, token, import, check, version. */
#include "alloc.h"
#include "api/ccms_query.h"
#include "server/auth.h"
#include "server/config.h"
#include "server/http.h"
#include "log.h"
#include "server/nats.h"
#include "server/udp.h"
#include "redact.h"
#include "app/routes.h"
#include "ingest/sonar.h"
#include "storage/core/store.h"
#include "storage/core/store_ts.h"
#include "storage/core/tokens.h"

#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#ifndef FJ_VERSION
#define FJ_VERSION "dev"
#endif

/* The subcommands: what `fjord --help` lists and `fjord CMD --help` explains; their options come
 * from the option table in config.c, which also parses them. */
typedef struct command {
    const char *name;
    unsigned id; /* FJ_CMD_* */
    const char *synopsis;
    const char *what;
} command;

static const command commands[] = {
    {"serve", FJ_CMD_SERVE, "serve [OPTIONS]", "run the server (default 127.0.0.1:8077, database ./fjord.db)"},
    {"migrate", FJ_CMD_MIGRATE, "migrate up|status|compact [OPTIONS]",
     "apply or show database schema migrations; compact gives a stopped SQLite file's free pages back"},
    {"token", FJ_CMD_TOKEN, "token add CLUSTER [--password P] [--read-only] | list | revoke CLUSTER [OPTIONS]",
     "create or replace a credential (prints the secret once), list credentials (never secrets), revoke one"},
    {"import", FJ_CMD_IMPORT, "import FILE... [OPTIONS]", "load files written by Sonar's directory sink"},
    {"check", FJ_CMD_CHECK, "check FILE...", "validate Sonar files without storing them"},
    {"backup", FJ_CMD_BACKUP, "backup DEST [OPTIONS]",
     "write a consistent copy of a SQLite database to the new file DEST, also while the server runs"},
};

static void usage(FILE *out)
{
    fputs("usage: fjord COMMAND [OPTIONS]\n\n", out);
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].what);
    fprintf(out, "  %-10s %s\n", "version", "print the version");
    fputs("\n`fjord COMMAND --help` lists a command's options. Every option but the command-line flags can also\n"
          "be set in the INI file given with --config; see docs/configuration.md.\n",
          out);
}

static void command_help(const command *c)
{
    printf("usage: fjord %s\n\n%s.\n\noptions:\n", c->synopsis, c->what);
    fj_config_help(stdout, c->id);
}

static const command *find_command(const char *name)
{
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(commands[i].name, name))
            return &commands[i];
    return NULL;
}

static bool asks_help(int argc, char **argv)
{
    for (int i = 0; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
            return true;
    return false;
}

static int fail(const fj_err *err)
{
    fprintf(stderr, "fjord: %s\n", err->message);
    return 1;
}

/* create: whether this command makes a database that does not exist. serve and `migrate up` do;
 * the others only with --create, so that a mistyped --db is an error rather than a new, empty
 * database (a credential added there would work nowhere). */
static fj_status open_store(const fj_config *cfg, fj_store_mode mode, bool migrating, bool create, fj_store **out,
                            fj_err *err)
{
    int64_t metrics_retention_s = 0;
    fj_retention retention = fj_config_retention(cfg, &metrics_retention_s);
    fj_store_opts opts = {
        .mode = mode,
        .create = create || cfg->create,
        .synchronous = cfg->synchronous,
        .job_gap_s = cfg->job_gap_s,
        .retention = retention,
        .migrating = migrating,
        .ts_retention_s = metrics_retention_s,
        .ts_flush_interval_s = cfg->metrics_flush_s,
        .ts_share_interval_s = cfg->metrics_share_s > 0 ? cfg->metrics_share_s : -1,
        .ts_log_keep_s = cfg->request_log_keep_s,
        .ts_seal_age_s = cfg->metrics_seal_age_s,
        .ts_seal_points = cfg->metrics_seal_points,
        .ts_max_buffered_points = cfg->metrics_max_buffered,
        .commit_timeout_s = cfg->commit_timeout_s ? (int64_t)cfg->commit_timeout_s : -1,
        .quota = {.total = {[FJ_QUOTA_SERIES] = cfg->max_series_per_cluster,
                            [FJ_QUOTA_NODES] = cfg->max_nodes_per_cluster},
                  .per_minute = {[FJ_QUOTA_SERIES] = cfg->max_new_series_per_minute,
                                 [FJ_QUOTA_JOBS] = cfg->max_new_jobs_per_minute}},
    };
    fj_status st = fj_store_open(cfg->db, &opts, out, err);
    if (st == FJ_EIO && !opts.create)
        fprintf(stderr, "fjord: a new database is made only by serve, migrate up or with --create\n");
    return st;
}

/* Line-protocol metrics: the engine (catalog, replay) before the writer starts, the optional
 * ClusterCockpit cluster configuration, and the JWT key. */
static fj_status metrics_setup(const fj_config *cfg, fj_store *store, fj_auth *auth, fj_err *err)
{
    fj_status st;
    if (cfg->jwt_public_key[0] && (st = fj_auth_set_jwt_key(auth, cfg->jwt_public_key, err)) != FJ_OK)
        return st;
    if (cfg->cc_cluster_config[0] && (st = fj_ccq_load_config(cfg->cc_cluster_config, err)) != FJ_OK)
        return st;
    char instance[512];
    fj_config_instance(cfg, instance, sizeof instance);
    int64_t metrics_retention_s = 0;
    fj_config_retention(cfg, &metrics_retention_s);
    fj_store_opts opts = {
        .mode = FJ_STORE_WRITE,
        .ts_retention_s = metrics_retention_s,
        .ts_flush_interval_s = cfg->metrics_flush_s,
        .ts_share_interval_s = cfg->metrics_share_s > 0 ? cfg->metrics_share_s : -1,
        .ts_log_keep_s = cfg->request_log_keep_s,
        .ts_seal_age_s = cfg->metrics_seal_age_s,
        .ts_seal_points = cfg->metrics_seal_points,
        .ts_max_buffered_points = cfg->metrics_max_buffered,
        .ts_instance = instance,
    };
    return fj_store_ts_start(store, &opts, err);
}

static void close_stores(fj_store **stores, size_t n)
{
    for (size_t i = 0; i < n; i++)
        fj_store_close(stores[i]);
}

static int cmd_serve(const fj_config *cfg)
{
    fj_err err = {0};
    if (fj_config_check(cfg, &err) != FJ_OK)
        return fail(&err);
    fj_udp_spec udp_specs[FJ_UDP_MAX_LISTENERS];
    size_t n_udp = 0;
    if (fj_udp_parse(cfg->udp, udp_specs, &n_udp, &err) != FJ_OK) /* before anything is opened */
        return fail(&err);
    /* Block the stop signals and SIGHUP (reload the HTTPS certificate) in every thread; the main
     * thread waits for them with sigwait. */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    signal(SIGPIPE, SIG_IGN);
    /* Upload bodies and their decoded records are a few hundred KB to a few MB per request, freed
     * when it ends. glibc would hand such blocks back to the kernel each time (mmap/munmap, heap
     * trimming), and ingest spent a quarter of its CPU faulting fresh zeroed pages back in: keep
     * them in the heap for the next request instead. */
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, 128 << 20);

    /* A writer-mode handle per writer thread (writer.h); the first also holds the metrics engine. */
    fj_store *stores[FJ_WRITERS_MAX] = {0};
    size_t n_stores = fj_config_writers(cfg);
    if (open_store(cfg, FJ_STORE_WRITE, false, true, &stores[0], &err) != FJ_OK)
        return fail(&err);
    fj_store *store = stores[0];
    for (size_t i = 1; i < n_stores; i++)
        if (open_store(cfg, FJ_STORE_WRITE, false, false, &stores[i], &err) != FJ_OK) {
            close_stores(stores, i);
            return fail(&err);
        }
    fj_auth *auth = fj_auth_new(cfg->db, 2);
    fj_server *srv = NULL;
    if (!auth || metrics_setup(cfg, store, auth, &err) != FJ_OK ||
        fj_server_start(cfg, stores, n_stores, auth, fj_routes, &srv, &err) != FJ_OK) {
        close_stores(stores, n_stores);
        fj_auth_free(auth);
        return fail(&err);
    }
    fj_nats *nats = NULL;
    if (cfg->nats[0] && fj_nats_start(cfg->nats, srv, cfg->max_decoded, cfg->metrics_max_future_s, &nats, &err) != FJ_OK) {
        fj_server_stop(srv, 30);
        close_stores(stores, n_stores);
        fj_auth_free(auth);
        return fail(&err);
    }
    fj_udp *udp = NULL;
    if (n_udp && fj_udp_start(cfg->udp, srv, cfg->metrics_max_future_s, &udp, &err) != FJ_OK) {
        fj_nats_stop(nats);
        fj_server_stop(srv, 30);
        close_stores(stores, n_stores);
        fj_auth_free(auth);
        return fail(&err);
    }
    char db_shown[1024];
    fj_info("listening on %s (port %u), database %s%s", cfg->listen, fj_server_port(srv),
            fj_redact_conn(cfg->db, db_shown, sizeof db_shown),
            cfg->dev_mode ? ", dev-mode: unauthenticated requests accepted" : "");
    if (cfg->listen_tls[0]) {
        char tls[512];
        fj_server_tls_describe(srv, tls, sizeof tls);
        fj_info("listening for HTTPS on %s (port %u)%s, certificate %s", cfg->listen_tls, fj_server_tls_port(srv),
                cfg->tls_client_ca[0] ? ", client certificates required" : "", tls);
    }
    int sig = 0;
    while (sigwait(&stop, &sig) == 0 && sig == SIGHUP) {
        fj_err herr = {0};
        if (fj_server_reload_tls(srv, &herr) != FJ_OK)
            fj_error("tls: SIGHUP: keeping the certificate in force: %s", herr.message);
        else if (!cfg->listen_tls[0])
            fj_info("SIGHUP: nothing to reload (no listen-tls)");
    }
    fj_info("signal %d: draining", sig);
    fj_udp_stop(udp);   /* no new datagrams; what it submitted is committed by the writer */
    fj_nats_stop(nats); /* no new messages; what it submitted is committed by the writer */
    fj_server_stop(srv, 30);
    fj_auth_free(auth);
    close_stores(stores, n_stores);
    fj_info("stopped");
    return 0;
}

/* fjord migrate compact: the file's free pages back to the file system (storage/core/store.h,
 * fj_store_compact; a database that manages its own space says so). */
static int migrate_compact(fj_store *s)
{
    fj_err err = {0};
    fj_compact_info c;
    if (fj_store_compact(s, &c, &err) != FJ_OK)
        return fail(&err);
    printf("%s: %lld bytes before, %lld after%s\n", c.rewritten ? "rewritten" : "free pages released",
           (long long)c.bytes_before, (long long)c.bytes_after,
           c.rewritten ? "; freed pages are released by fjord itself from now on" : "");
    return 0;
}

static int cmd_migrate(const fj_config *cfg, const char *what)
{
    fj_err err = {0};
    fj_store *s = NULL;
    if (!what || (strcmp(what, "up") && strcmp(what, "status") && strcmp(what, "compact"))) {
        fputs("usage: fjord migrate up|status|compact [OPTIONS] (fjord migrate --help)\n", stderr);
        return 2;
    }
    if (open_store(cfg, FJ_STORE_WRITE, true, !strcmp(what, "up"), &s, &err) != FJ_OK)
        return fail(&err);
    fj_migration_info info;
    int rc = 0;
    if (!strcmp(what, "compact")) {
        rc = migrate_compact(s);
        fj_store_close(s);
        return rc;
    }
    if (!strcmp(what, "up")) {
        int applied = 0;
        if (fj_store_migrate_up(s, &applied, &err) != FJ_OK)
            rc = fail(&err);
        else
            printf("applied %d migration%s\n", applied, applied == 1 ? "" : "s");
    }
    if (rc == 0 && fj_store_migrate_status(s, &info, &err) == FJ_OK)
        printf("schema version %d of %d (%s)\n", info.current, info.latest,
               info.current == info.latest ? "up to date" : "run `fjord migrate up`");
    else if (rc == 0)
        rc = fail(&err);
    fj_store_close(s);
    return rc;
}

static int cmd_token(const fj_config *cfg, size_t n_pos, char **pos)
{
    const char *password = cfg->password[0] ? cfg->password : NULL;
    fj_err err = {0};
    fj_store *s = NULL;
    const char *what = n_pos > 0 ? pos[0] : NULL;
    if (!what || ((!strcmp(what, "add") || !strcmp(what, "revoke")) && n_pos != 2) ||
        (!strcmp(what, "list") && n_pos != 1) || (strcmp(what, "add") && strcmp(what, "revoke") && strcmp(what, "list"))) {
        fputs("usage: fjord token add CLUSTER [--password P] [--read-only] | list | revoke CLUSTER "
              "(fjord token --help)\n", stderr);
        return 2;
    }
    if (open_store(cfg, FJ_STORE_WRITE, false, false, &s, &err) != FJ_OK)
        return fail(&err);
    int rc = 0;
    if (!strcmp(what, "add")) {
        fj_token_rec t = {.read_only = cfg->read_only, .created = fj_time_now()};
        char secret[65];
        if (strlen(pos[1]) >= sizeof t.cluster || !pos[1][0]) {
            fj_store_close(s);
            fputs("fjord: cluster name empty or too long\n", stderr);
            return 2;
        }
        snprintf(t.cluster, sizeof t.cluster, "%s", pos[1]);
        if (password && strlen(password) >= sizeof secret) {
            fj_store_close(s);
            fputs("fjord: password longer than 64 characters\n", stderr);
            return 2;
        }
        if (password)
            memcpy(secret, password, strlen(password) + 1);
        else
            fj_token_generate(secret);
        fj_token_hash(secret, t.hash);
        if (fj_tokens_put(s, &t, &err) != FJ_OK)
            rc = fail(&err);
        else
            printf("%s\n", secret);
    } else if (!strcmp(what, "list")) {
        fj_token_rec *list = NULL;
        size_t n = 0;
        if (fj_tokens_list(s, &list, &n, &err) != FJ_OK) {
            rc = fail(&err);
        } else {
            for (size_t i = 0; i < n; i++) {
                char t[21];
                fj_time_format(list[i].created, t);
                printf("%s\t%s\t%s\n", list[i].cluster, list[i].read_only ? "read-only" : "upload", t);
            }
        }
        fj_free(list);
    } else {
        if (fj_tokens_revoke(s, pos[1], &err) != FJ_OK)
            rc = fail(&err);
    }
    fj_store_close(s);
    return rc;
}

/* A whole file, or NULL with a reason a user can act on: missing, unreadable, a directory, empty. */
static int cmd_backup(const fj_config *cfg, size_t n_pos, char **pos)
{
    if (n_pos != 1) {
        fputs("usage: fjord backup DEST [--db PATH] (fjord backup --help)\n", stderr);
        return 2;
    }
    fj_err err = {0};
    fj_store *s = NULL;
    if (open_store(cfg, FJ_STORE_READ, false, false, &s, &err) != FJ_OK)
        return fail(&err);
    int rc = 0;
    fj_backup_info info;
    if (fj_store_backup(s, pos[0], &info, &err) != FJ_OK) {
        rc = fail(&err);
    } else {
        printf("%s: %lld bytes, consistent as of the backup's start\n", pos[0], (long long)info.bytes);
    }
    fj_store_close(s);
    return rc;
}

static char *read_file(const char *path, size_t *len, fj_err *err)
{
    struct stat sb;
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) {
        fj_err_set(err, FJ_EINVAL, path, "%s is a directory: name the files in it (e.g. %s/*.json)", path, path);
        return NULL;
    }
    FILE *f = fopen(path, "rb");
    if (!f) {
        fj_err_set(err, FJ_EIO, path, "%s: %s", path, strerror(errno));
        return NULL;
    }
    fj_buf b;
    fj_buf_init(&b, (size_t)4 << 30);
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        if (fj_buf_append(&b, chunk, n) != FJ_OK) {
            fj_err_set(err, FJ_ENOMEM, path, "%s: too large to read", path);
            fj_buf_free(&b);
            fclose(f);
            return NULL;
        }
    bool read_error = ferror(f);
    fclose(f);
    if (read_error) {
        fj_err_set(err, FJ_EIO, path, "%s: cannot read", path);
        fj_buf_free(&b);
        return NULL;
    }
    if (!b.data) {
        fj_err_set(err, FJ_EINVAL, path, "%s is empty: it holds no envelopes", path);
        return NULL;
    }
    return fj_buf_steal(&b, len);
}

typedef struct import_ctx {
    const char *file;
    size_t bad;
} import_ctx;

static void report_item(void *p, size_t index, fj_status st, const fj_err *err, const fj_envelope *env)
{
    import_ctx *c = p;
    if (st != FJ_OK) {
        c->bad++;
        fprintf(stderr, "%s: envelope %zu: %s%s%s\n", c->file, index + 1, err->message, err->path[0] ? " at " : "",
                err->path);
    }
}

/* Takes the envelopes older than their kind's retention out of b, as HTTP ingest refuses them
 * (storage/core/retention.h); returns how many. */
static size_t drop_expired(fj_batch *b, const fj_retention *keep, const char *file)
{
    fj_time now = fj_time_now();
    size_t kept = 0, dropped = 0;
    for (size_t e = 0; e < b->n_envs; e++) {
        fj_err err = {0};
        if (fj_retention_admit(keep, &b->envs[e], now, &err) != FJ_OK) {
            fprintf(stderr, "%s: %s\n", file, err.message);
            dropped++;
            continue;
        }
        b->envs[kept++] = b->envs[e];
    }
    b->n_envs = kept;
    return dropped;
}

/* import (store != NULL, keep its retention) and check (store == NULL) share the decoding path
 * with HTTP ingest. */
static int load_files(fj_store *store, const fj_retention *keep, size_t n_files, char **files)
{
    int rc = 0;
    for (size_t i = 0; i < n_files; i++) {
        fj_err err = {0};
        size_t len;
        char *body = read_file(files[i], &len, &err);
        if (!body) {
            rc = fail(&err);
            continue;
        }
        fj_batch *b = fj_batch_new();
        import_ctx c = {files[i], 0};
        fj_status st = b ? fj_sonar_decode_body(body, len, -1, b, report_item, &c, &err) : FJ_ENOMEM;
        if (b && st == FJ_OK && keep)
            c.bad += drop_expired(b, keep, files[i]);
        if (c.bad || st != FJ_OK)
            rc = 1;
        if (st != FJ_OK && !c.bad) /* the file as a whole, not one envelope: say why */
            fprintf(stderr, "%s: %s%s%s\n", files[i], err.message[0] ? err.message : fj_status_name(st),
                    err.path[0] ? " at " : "", err.path);
        else if (b && st == FJ_OK && !b->n_envs && !c.bad) {
            fprintf(stderr, "%s: no Sonar envelopes in it\n", files[i]);
            rc = 1;
        }
        if (b && b->n_envs && store) {
            fj_write_count *counts = fj_calloc(b->n_envs, sizeof *counts);
            if (counts && fj_store_write(store, &b, 1, counts, &err) == FJ_OK) {
                unsigned long long ins = 0, dup = 0;
                for (size_t e = 0; e < b->n_envs; e++)
                    ins += counts[e].inserted, dup += counts[e].duplicates;
                printf("%s: %zu envelopes, %llu rows added, %llu duplicate rows, %zu rejected\n", files[i],
                       b->n_envs, ins, dup, c.bad);
            } else {
                rc = fail(&err);
            }
            fj_free(counts);
        } else if (b && !store) {
            printf("%s: %zu envelopes valid, %zu rejected\n", files[i], b->n_envs, c.bad);
        }
        fj_batch_free(b);
        fj_free(body);
    }
    return rc;
}

static void set_log_level(const char *level)
{
    if (!strcmp(level, "debug"))
        fj_log_set_level(FJ_LOG_DEBUG);
    else if (!strcmp(level, "warn"))
        fj_log_set_level(FJ_LOG_WARN);
    else if (!strcmp(level, "error"))
        fj_log_set_level(FJ_LOG_ERROR);
}

int main(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (!strcmp(argv[1], "version") || !strcmp(argv[1], "--version")) {
        printf("fjord %s\n", FJ_VERSION);
        return 0;
    }
    bool help = !strcmp(argv[1], "help");
    const char *name = help ? (argc > 2 ? argv[2] : NULL) : argv[1];
    if (help && !name) {
        usage(stdout);
        return 0;
    }
    const command *cmd = find_command(name);
    if (!cmd) {
        fprintf(stderr, "fjord: unknown command '%s'\n\n", name);
        usage(stderr);
        return 2;
    }
    int rest_c = argc - 2;
    char **rest = argv + 2;
    if (help || asks_help(rest_c, rest)) {
        command_help(cmd);
        return 0;
    }
    fj_config cfg;
    fj_config_defaults(&cfg);
    char *pos[4096];
    size_t n_pos = 0;
    fj_err err = {0};
    if (fj_config_parse_args(&cfg, cmd->id, rest_c, rest, pos, sizeof pos / sizeof pos[0], &n_pos, &err) != FJ_OK)
        return fail(&err);
    set_log_level(cfg.log_level);

    switch (cmd->id) {
    case FJ_CMD_SERVE:
        if (n_pos) {
            fprintf(stderr, "fjord: serve takes no argument '%s'\n", pos[0]);
            return 2;
        }
        return cmd_serve(&cfg);
    case FJ_CMD_MIGRATE:
        return cmd_migrate(&cfg, n_pos == 1 ? pos[0] : NULL);
    case FJ_CMD_TOKEN:
        return cmd_token(&cfg, n_pos, pos);
    case FJ_CMD_BACKUP:
        return cmd_backup(&cfg, n_pos, pos);
    case FJ_CMD_CHECK:
    case FJ_CMD_IMPORT: {
        if (!n_pos) {
            fprintf(stderr, "usage: fjord %s FILE... (fjord %s --help)\n", cmd->name, cmd->name);
            return 2;
        }
        if (cmd->id == FJ_CMD_CHECK)
            return load_files(NULL, NULL, n_pos, pos);
        fj_retention keep = fj_config_retention(&cfg, NULL);
        if (fj_retention_check(&keep, &err) != FJ_OK)
            return fail(&err);
        fj_store *s = NULL;
        /* the quotas guard the server from its clients; whoever holds the database imports freely */
        cfg.max_series_per_cluster = cfg.max_new_series_per_minute = 0;
        cfg.max_nodes_per_cluster = cfg.max_new_jobs_per_minute = 0;
        if (open_store(&cfg, FJ_STORE_WRITE, false, false, &s, &err) != FJ_OK)
            return fail(&err);
        int rc = load_files(s, &keep, n_pos, pos);
        fj_store_close(s);
        return rc;
    }
    }
    return 2;
}
