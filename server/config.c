/* config.c — option table shared by the INI reader and the flag parser, so an option cannot
 * exist in one and be missing from the other. */
#include "server/config.h"

#include "server/proxy.h"
#include "server/tls.h"

#include <ctype.h>
#include <errno.h>
#include <ini.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef enum { OPT_STR, OPT_SIZE, OPT_UINT, OPT_I64, OPT_BOOL } opt_type;

typedef struct option_def {
    const char *name;
    opt_type type;
    size_t offset;
    size_t size;      /* for strings */
    unsigned cmds;    /* FJ_CMD_* that read it */
    bool cli_only;    /* a flag of one command run, never an INI key */
    const char *arg;  /* what the value looks like, for --help */
    const char *help; /* one line for --help; docs/configuration.md has the whole story */
} option_def;

#define SERVE FJ_CMD_SERVE
#define WRITES (FJ_CMD_SERVE | FJ_CMD_IMPORT)
#define OPENS_DB (FJ_CMD_SERVE | FJ_CMD_MIGRATE | FJ_CMD_TOKEN | FJ_CMD_IMPORT | FJ_CMD_BACKUP)
#define ALL (OPENS_DB | FJ_CMD_CHECK)

#define STR(n, f, cmds, arg, help) {n, OPT_STR, offsetof(fj_config, f), sizeof(((fj_config *)0)->f), cmds, false, arg, help}
#define NUM(n, t, f, cmds, arg, help) {n, t, offsetof(fj_config, f), 0, cmds, false, arg, help}
#define BOOL(n, f, cmds, help) {n, OPT_BOOL, offsetof(fj_config, f), 0, cmds, false, "[true|false]", help}

static const option_def options[] = {
    STR("listen", listen, SERVE, "HOST:PORT", "address and port to listen on (port 0 picks a free one)"),
    STR("listen-tls", listen_tls, SERVE, "HOST:PORT", "HTTPS listener beside the plain one (needs tls-cert, tls-key)"),
    STR("tls-cert", tls_cert, SERVE, "FILE", "PEM certificate chain for HTTPS, server certificate first (reloaded on SIGHUP)"),
    STR("tls-key", tls_key, SERVE, "FILE", "PEM private key of tls-cert (reloaded on SIGHUP)"),
    STR("tls-client-ca", tls_client_ca, SERVE, "FILE", "HTTPS clients must present a certificate signed by this CA"),
    STR("tls-priorities", tls_priorities, SERVE, "STRING", "GnuTLS priority string (TLS versions and ciphers)"),
    STR("trusted-proxies", trusted_proxies, SERVE, "ADDRS",
        "proxy addresses/CIDR ranges whose forwarded-header names the client"),
    STR("forwarded-header", forwarded_header, SERVE, "NAME", "X-Forwarded-For or Forwarded: the header trusted proxies set"),
    STR("db", db, OPENS_DB, "PATH|URL", "SQLite file, or a postgres:// URL (docs/postgres.md)"),
    STR("synchronous", synchronous, WRITES, "OFF|NORMAL|FULL", "SQLite durability: FULL also survives power loss"),
    NUM("job-gap", OPT_I64, job_gap_s, WRITES, "DURATION", "records of a non-Slurm job further apart start a new job"),
    NUM("retention", OPT_I64, retention_s, WRITES, "DURATION",
        "the older setting: both retention-process-samples and retention-node-samples"),
    NUM("retention-process-samples", OPT_I64, retention_process_samples_s, WRITES, "DURATION",
        "drop processes and job samples older than this; job summaries stay; 0 keeps all (default: retention)"),
    NUM("retention-node-samples", OPT_I64, retention_node_samples_s, WRITES, "DURATION",
        "drop node samples (load, GPUs, disks, envelopes, node states) older than this; hourly roll-ups stay "
        "(default: retention)"),
    NUM("retention-errors", OPT_I64, retention_errors_s, WRITES, "DURATION",
        "drop Sonar error records older than this; 0 keeps all"),
    NUM("retention-slurm", OPT_I64, retention_slurm_s, WRITES, "DURATION",
        "drop Slurm job steps whose latest record is older than this; 0 keeps all"),
    NUM("retention-metrics", OPT_I64, retention_metrics_s, SERVE, "DURATION",
        "drop line-protocol metric chunks older than this; 0 keeps all (default: metrics-retention)"),
    NUM("max-body", OPT_SIZE, max_body, SERVE, "SIZE", "largest request body as sent (413 beyond)"),
    NUM("max-decoded", OPT_SIZE, max_decoded, SERVE, "SIZE", "largest body after gzip/zstd decoding"),
    NUM("threads", OPT_UINT, threads, SERVE, "N", "HTTP worker threads"),
    NUM("max-connections", OPT_UINT, max_connections, SERVE, "N", "concurrent connections in total"),
    NUM("max-per-ip", OPT_UINT, max_per_ip, SERVE, "N", "concurrent connections per client address"),
    NUM("timeout", OPT_UINT, timeout_s, SERVE, "SECONDS", "idle connection timeout"),
    NUM("header-timeout", OPT_UINT, header_timeout_s, SERVE, "SECONDS", "request headers complete within this after accept (0 = off)"),
    NUM("body-timeout", OPT_UINT, body_timeout_s, SERVE, "SECONDS", "a whole request body arrives within this (0 = off)"),
    NUM("keepalive-timeout", OPT_UINT, keepalive_timeout_s, SERVE, "SECONDS",
        "a kept-alive connection idle between requests is closed after this (announced as Keep-Alive: timeout=)"),
    NUM("linger-timeout", OPT_UINT, linger_timeout_s, SERVE, "SECONDS",
        "after an answer sent before its body was read, keep reading and discarding it this long (0 = off)"),
    NUM("linger-bytes", OPT_SIZE, linger_bytes, SERVE, "SIZE", "and at most this much of it"),
    NUM("body-min-rate", OPT_SIZE, body_min_rate, SERVE, "SIZE", "bytes a second a slow body must average (0 = off)"),
    NUM("body-memory", OPT_SIZE, body_memory, SERVE, "SIZE", "all request bodies in flight together (503 beyond)"),
    NUM("commit-timeout", OPT_UINT, commit_timeout_s, SERVE, "SECONDS",
        "PostgreSQL: answer 503 when a write's commit waits this long for a synchronous standby (0 = wait)"),
    NUM("query-timeout", OPT_UINT, query_timeout_s, SERVE, "SECONDS",
        "a read (query, export) still running this long after its headers is stopped (0 = no deadline)"),
    NUM("query-memory", OPT_SIZE, query_memory, SERVE, "SIZE", "memory one read may hold (its working memory and answer)"),
    NUM("query-memory-total", OPT_SIZE, query_memory_total, SERVE, "SIZE", "memory all reads in flight may hold together"),
    NUM("read-threads", OPT_UINT, read_threads, SERVE, "N", "reads running at once (on threads of their own)"),
    NUM("read-queue", OPT_UINT, read_queue, SERVE, "N", "reads waiting for a read thread; beyond, 503"),
    NUM("auth-fail-burst", OPT_UINT, auth_fail_burst, SERVE, "N", "failed authentications per address or user name at once"),
    NUM("auth-fail-rate", OPT_UINT, auth_fail_rate, SERVE, "N", "then this many a minute; beyond, 429 (0 = no limit)"),
    NUM("auth-fail-delay-ms", OPT_UINT, auth_fail_delay_ms, SERVE, "MS", "how long a failure over the limit waits for its 429"),
    NUM("refusal-log-burst", OPT_UINT, refusal_log_burst, SERVE, "N", "refusal log lines per address and reason a minute (0 = all)"),
    BOOL("log-requests", log_requests, SERVE, "a request-log line (level info) for every request, not only refusals"),
    STR("log-request-format", log_request_format, SERVE, "logfmt|json", "the request log's lines: logfmt, or one JSON object a line"),
    STR("metrics-token", metrics_token, SERVE, "SECRET", "Bearer secret for GET /metrics (Prometheus), besides read credentials"),
    NUM("connection-memory", OPT_SIZE, conn_memory, SERVE, "SIZE", "per-connection buffer for headers"),
    NUM("queue-max", OPT_SIZE, queue_max, SERVE, "N", "queued write batches beyond which ingest answers 503"),
    NUM("group-commit-ms", OPT_UINT, group_commit_ms, SERVE, "MS|auto",
        "how long the writer gathers requests into one commit; auto: 2 where commits wait for the disk "
        "(PostgreSQL, synchronous=FULL), else 0"),
    NUM("writers", OPT_UINT, writers, SERVE, "N|auto",
        "writer threads, a database connection each (1-16; SQLite: 1); auto: 2 on PostgreSQL, 1 on SQLite"),
    BOOL("dev-mode", dev_mode, SERVE, "accept requests without credentials (loopback listener only)"),
    STR("log-level", log_level, ALL, "debug|info|warn|error", "what is logged to stderr"),
    NUM("metrics-retention", OPT_I64, metrics_retention_s, SERVE, "DURATION", "the older name of retention-metrics"),
    NUM("metrics-flush-interval", OPT_I64, metrics_flush_s, SERVE, "DURATION", "seal every open metric buffer this often"),
    NUM("metrics-share-interval", OPT_I64, metrics_share_s, SERVE, "DURATION",
        "PostgreSQL, while other servers run: store new points where they read them this often (0 = never)"),
    NUM("request-log-keep", OPT_I64, request_log_keep_s, SERVE, "DURATION", "keep line-protocol request-log rows this long once durable"),
    NUM("metrics-seal-age", OPT_I64, metrics_seal_age_s, SERVE, "DURATION", "seal a metric buffer after this much data time"),
    NUM("metrics-seal-points", OPT_UINT, metrics_seal_points, SERVE, "N", "seal a metric buffer at this many points"),
    NUM("metrics-max-buffered", OPT_SIZE, metrics_max_buffered, SERVE, "N", "open buffers' memory before early seals, in points of 16 bytes"),
    NUM("metrics-max-future", OPT_I64, metrics_max_future_s, SERVE, "DURATION", "refuse points later than arrival plus this"),
    NUM("max-series-per-cluster", OPT_UINT, max_series_per_cluster, SERVE, "N",
        "line-protocol series one cluster may hold; new ones beyond are dropped (0 = no limit)"),
    NUM("max-new-series-per-minute", OPT_UINT, max_new_series_per_minute, SERVE, "N",
        "new line-protocol series one cluster may create a minute (a minute's worth at once; 0 = no limit)"),
    NUM("max-nodes-per-cluster", OPT_UINT, max_nodes_per_cluster, SERVE, "N",
        "Sonar nodes one cluster may hold; envelopes naming new ones beyond are refused (0 = no limit)"),
    NUM("max-new-jobs-per-minute", OPT_UINT, max_new_jobs_per_minute, SERVE, "N",
        "new Sonar jobs one cluster may start a minute (a minute's worth at once; 0 = no limit)"),
    STR("cc-cluster-config", cc_cluster_config, SERVE, "FILE", "cc-backend cluster.json or cc-metric-store config.json"),
    STR("carbon-intensity", carbon_intensity, SERVE, "CLUSTER:G,...",
        "g CO2e per kWh of each cluster named, for the jobs' co2e_kg (docs/energy.md)"),
    STR("pue", pue, SERVE, "FACTOR", "power usage effectiveness applied to job energy before carbon (default 1.0)"),
    STR("jwt-public-key", jwt_public_key, SERVE, "BASE64", "Ed25519 key: accept EdDSA-signed JWTs"),
    STR("nats", nats, SERVE, "URL", "nats:// server to subscribe to for line protocol"),
    STR("udp", udp, SERVE, "LISTENERS",
        "line protocol over UDP: HOST:PORT cluster=NAME allow=ADDRS[ precision=P], several separated by ';'"),
    STR("instance", instance, SERVE, "NAME", "this server's identity among servers sharing a PostgreSQL database"),
    {"create", OPT_BOOL, offsetof(fj_config, create), 0, FJ_CMD_MIGRATE | FJ_CMD_TOKEN | FJ_CMD_IMPORT, true,
     "[true|false]", "make a new database if --db names none (serve and migrate up always do)"},
    {"password", OPT_STR, offsetof(fj_config, password), sizeof(((fj_config *)0)->password), FJ_CMD_TOKEN, true, "P",
     "token add: this secret instead of a random one (up to 64 characters)"},
    {"read-only", OPT_BOOL, offsetof(fj_config, read_only), 0, FJ_CMD_TOKEN, true, "[true|false]",
     "token add: a credential that reads every cluster and writes none"},
};

void fj_config_defaults(fj_config *c)
{
    memset(c, 0, sizeof *c);
    snprintf(c->listen, sizeof c->listen, "127.0.0.1:8077");
    snprintf(c->db, sizeof c->db, "./fjord.db");
    snprintf(c->tls_priorities, sizeof c->tls_priorities, "%s", FJ_TLS_DEFAULT_PRIORITIES);
    snprintf(c->forwarded_header, sizeof c->forwarded_header, "X-Forwarded-For");
    snprintf(c->synchronous, sizeof c->synchronous, "NORMAL");
    c->job_gap_s = 6 * 3600;
    c->retention_process_samples_s = c->retention_node_samples_s = -1; /* unset: `retention` */
    c->retention_metrics_s = -1;                                       /* unset: `metrics-retention` */
    c->max_body = 64u << 20;
    c->max_decoded = 256u << 20;
    c->threads = 4;
    c->max_connections = 1024;
    c->max_per_ip = 64;
    c->timeout_s = 30;
    c->header_timeout_s = 10;
    c->body_timeout_s = 300;
    c->keepalive_timeout_s = 60;
    c->linger_timeout_s = 5;
    c->linger_bytes = (size_t)8 << 20;
    c->body_min_rate = 4096;
    c->body_memory = (size_t)256 << 20;
    c->query_timeout_s = 60;
    c->query_memory = (size_t)512 << 20;
    c->query_memory_total = (size_t)2 << 30;
    c->read_threads = 4;
    c->read_queue = 64;
    c->auth_fail_burst = 20;
    c->auth_fail_rate = 60;
    c->auth_fail_delay_ms = 1000;
    c->refusal_log_burst = 5;
    snprintf(c->log_request_format, sizeof c->log_request_format, "logfmt");
    c->conn_memory = 64 * 1024;
    c->queue_max = 256;
    c->group_commit_ms = FJ_GROUP_COMMIT_AUTO;
    c->writers = FJ_WRITERS_AUTO;
    c->dev_mode = false;
    snprintf(c->log_level, sizeof c->log_level, "info");
    c->metrics_flush_s = 12 * 3600;
    c->metrics_share_s = 1;
    c->commit_timeout_s = 10;
    c->metrics_seal_age_s = 12 * 3600;
    c->metrics_seal_points = 720;
    c->metrics_max_buffered = (size_t)16 << 20;
    c->metrics_max_future_s = 3600;
    /* docs/security.md, "Quotas", says how these were chosen and how to size them */
    c->max_series_per_cluster = 3000000;
    c->max_new_series_per_minute = 3000000;
    c->max_nodes_per_cluster = 200000;
    c->max_new_jobs_per_minute = 200000;
}

static int same_name(const char *a, const char *b)
{
    for (; *a && *b; a++, b++) {
        char x = *a == '_' ? '-' : (char)tolower((unsigned char)*a);
        char y = *b == '_' ? '-' : (char)tolower((unsigned char)*b);
        if (x != y)
            return 0;
    }
    return *a == *b;
}

/* Sizes accept a k/M/G suffix (powers of 1024), as operators write them. */
static int parse_size(const char *v, unsigned long long *out)
{
    char *end;
    errno = 0;
    unsigned long long n = strtoull(v, &end, 10);
    if (end == v || errno || *v == '-')
        return 0;
    unsigned shift = 0;
    switch (*end) {
    case 'k': case 'K': shift = 10; end++; break;
    case 'm': case 'M': shift = 20; end++; break;
    case 'g': case 'G': shift = 30; end++; break;
    }
    if (*end == 'B' || *end == 'b')
        end++;
    if (*end || (shift && n > (~0ULL >> shift)))
        return 0;
    *out = n << shift;
    return 1;
}

static const option_def *find_option(const char *name)
{
    for (size_t i = 0; i < sizeof options / sizeof options[0]; i++)
        if (same_name(options[i].name, name))
            return &options[i];
    return NULL;
}

static fj_status set_option(fj_config *c, const option_def *o, const char *name, const char *value, fj_err *err)
{
    char *field = (char *)c + o->offset;
    unsigned long long n;
    char *end;
    switch (o->type) {
    case OPT_STR:
        if (strlen(value) >= o->size)
            return fj_err_set(err, FJ_EINVAL, name, "value of %s is too long", name);
        memcpy(field, value, strlen(value) + 1);
        return FJ_OK;
    case OPT_SIZE:
        if (!parse_size(value, &n))
            return fj_err_set(err, FJ_EINVAL, name, "%s: '%s' is not a size (e.g. 64M)", name, value);
        *(size_t *)(void *)field = (size_t)n;
        return FJ_OK;
    case OPT_UINT:
        if (o->arg && strstr(o->arg, "auto") && !strcmp(value, "auto")) {
            *(unsigned *)(void *)field = UINT_MAX; /* an option whose arg names auto (FJ_GROUP_COMMIT_AUTO) */
            return FJ_OK;
        }
        if (!parse_size(value, &n) || n >= 0xffffffffULL)
            return fj_err_set(err, FJ_EINVAL, name, "%s: '%s' is not a count", name, value);
        *(unsigned *)(void *)field = (unsigned)n;
        return FJ_OK;
    case OPT_I64: {
        errno = 0;
        long long v = strtoll(value, &end, 10);
        long long mult = 1;
        if (*end == 's') end++;
        else if (*end == 'm') mult = 60, end++;
        else if (*end == 'h') mult = 3600, end++;
        else if (*end == 'd') mult = 86400, end++;
        if (end == value || *end || errno || v < 0)
            return fj_err_set(err, FJ_EINVAL, name, "%s: '%s' is not a duration (e.g. 6h)", name, value);
        *(int64_t *)(void *)field = v * mult;
        return FJ_OK;
    }
    case OPT_BOOL:
        if (!strcmp(value, "1") || !strcasecmp(value, "true") || !strcasecmp(value, "yes") || !strcasecmp(value, "on"))
            *(bool *)(void *)field = true;
        else if (!strcmp(value, "0") || !strcasecmp(value, "false") || !strcasecmp(value, "no") || !strcasecmp(value, "off"))
            *(bool *)(void *)field = false;
        else
            return fj_err_set(err, FJ_EINVAL, name, "%s: '%s' is not a boolean", name, value);
        return FJ_OK;
    }
    return fj_err_set(err, FJ_EINTERNAL, name, "option %s has no type", name);
}

fj_status fj_config_set(fj_config *c, const char *name, const char *value, fj_err *err)
{
    const option_def *o = find_option(name);
    if (!o)
        return fj_err_set(err, FJ_EINVAL, name, "unknown option '%s'", name);
    return set_option(c, o, name, value, err);
}

struct ini_ctx {
    fj_config *c;
    fj_err *err;
    fj_status st;
    const char *path;
};

static int on_ini_entry(void *user, const char *section, const char *name, const char *value)
{
    struct ini_ctx *ctx = user;
    fj_err e = {0};
    (void)section; /* sections group options for readers; names are unique across them */
    const option_def *o = find_option(name);
    if (o && o->cli_only) {
        ctx->st = fj_err_set(ctx->err, FJ_EINVAL, ctx->path, "%s: [%s] %s is a command-line flag, not a setting",
                             ctx->path, section, name);
        return 0;
    }
    if (fj_config_set(ctx->c, name, value, &e) != FJ_OK) {
        ctx->st = fj_err_set(ctx->err, FJ_EINVAL, ctx->path, "%s: [%s] %s", ctx->path, section, e.message);
        return 0;
    }
    return 1;
}

fj_status fj_config_load_file(fj_config *c, const char *path, fj_err *err)
{
    struct ini_ctx ctx = {c, err, FJ_OK, path};
    int rc = ini_parse(path, on_ini_entry, &ctx);
    if (rc < 0)
        return fj_err_set(err, FJ_EINVAL, path, "cannot read config file %s", path);
    if (ctx.st != FJ_OK)
        return ctx.st;
    if (rc > 0)
        return fj_err_set(err, FJ_EINVAL, path, "%s: syntax error on line %d", path, rc);
    return FJ_OK;
}

static const char *command_name(unsigned cmd)
{
    switch (cmd) {
    case FJ_CMD_SERVE: return "serve";
    case FJ_CMD_MIGRATE: return "migrate";
    case FJ_CMD_TOKEN: return "token";
    case FJ_CMD_IMPORT: return "import";
    case FJ_CMD_CHECK: return "check";
    case FJ_CMD_BACKUP: return "backup";
    }
    return "this command";
}

fj_status fj_config_parse_args(fj_config *c, unsigned cmd, int argc, char **argv, char **positional, size_t max_pos,
                               size_t *n_pos, fj_err *err)
{
    *n_pos = 0;
    for (int i = 0; i < argc; i++) { /* --config first, so flags override the file */
        const char *file = NULL;
        if (!strcmp(argv[i], "--config") && i + 1 < argc)
            file = argv[i + 1];
        else if (!strncmp(argv[i], "--config=", 9))
            file = argv[i] + 9;
        if (file) {
            fj_status st = fj_config_load_file(c, file, err);
            if (st != FJ_OK)
                return st;
        }
    }
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (strncmp(a, "--", 2) != 0) {
            if (*n_pos >= max_pos)
                return fj_err_set(err, FJ_EINVAL, a, "unexpected argument '%s'", a);
            positional[(*n_pos)++] = argv[i];
            continue;
        }
        char name[64];
        const char *eq = strchr(a + 2, '=');
        size_t n = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
        if (n >= sizeof name)
            return fj_err_set(err, FJ_EINVAL, a, "unknown option '%s'", a);
        memcpy(name, a + 2, n);
        name[n] = '\0';
        if (!strcmp(name, "config")) {
            if (!eq && ++i >= argc)
                return fj_err_set(err, FJ_EINVAL, name, "option --config needs a value");
            continue;
        }
        const option_def *o = find_option(name);
        if (!o)
            return fj_err_set(err, FJ_EINVAL, name, "unknown option '--%s' (fjord %s --help lists them)", name,
                              command_name(cmd));
        if (!(o->cmds & cmd))
            return fj_err_set(err, FJ_EINVAL, name, "fjord %s does not use --%s", command_name(cmd), name);
        const char *value;
        if (eq)
            value = eq + 1;
        else if (o->type == OPT_BOOL) /* a flag alone, or the literal true/false after it */
            value = i + 1 < argc && (!strcmp(argv[i + 1], "true") || !strcmp(argv[i + 1], "false")) ? argv[++i] : "true";
        else if (i + 1 < argc)
            value = argv[++i];
        else
            return fj_err_set(err, FJ_EINVAL, name, "option --%s needs a value (%s)", name, o->arg);
        fj_status st = set_option(c, o, name, value, err);
        if (st != FJ_OK)
            return st;
    }
    return FJ_OK;
}

/* A default as an operator would write it back: 6h, 64M, NORMAL. */
static void format_default(const option_def *o, const fj_config *d, char *out, size_t cap)
{
    const char *field = (const char *)d + o->offset;
    unsigned long long n = 0;
    switch (o->type) {
    case OPT_STR:
        snprintf(out, cap, "%s", field);
        return;
    case OPT_BOOL:
        snprintf(out, cap, "%s", *(const bool *)(const void *)field ? "true" : "false");
        return;
    case OPT_UINT:
        if (*(const unsigned *)(const void *)field == UINT_MAX)
            snprintf(out, cap, "auto");
        else
            snprintf(out, cap, "%u", *(const unsigned *)(const void *)field);
        return;
    case OPT_SIZE: {
        n = *(const size_t *)(const void *)field;
        static const char units[] = "kMG";
        int u = -1;
        while (u < 2 && n && n % 1024 == 0)
            n /= 1024, u++;
        if (u >= 0)
            snprintf(out, cap, "%llu%c", n, units[u]);
        else
            snprintf(out, cap, "%llu", n);
        return;
    }
    case OPT_I64: {
        long long v = (long long)*(const int64_t *)(const void *)field;
        if (v < 0) { /* unset: the help text names the option it follows */
            out[0] = '\0';
            return;
        }
        if (v && v % 86400 == 0)
            snprintf(out, cap, "%lldd", v / 86400);
        else if (v && v % 3600 == 0)
            snprintf(out, cap, "%lldh", v / 3600);
        else if (v && v % 60 == 0)
            snprintf(out, cap, "%lldm", v / 60);
        else
            snprintf(out, cap, "%lld%s", v, v ? "s" : "");
        return;
    }
    }
    out[0] = '\0';
}

void fj_config_help(FILE *out, unsigned cmd)
{
    fj_config d;
    fj_config_defaults(&d);
    fprintf(out, "  %-34s %s\n", "--config FILE", "read options from an INI file first (flags win)");
    for (size_t i = 0; i < sizeof options / sizeof options[0]; i++) {
        const option_def *o = &options[i];
        if (!(o->cmds & cmd))
            continue;
        char left[64], def[64];
        snprintf(left, sizeof left, "--%s %s", o->name, o->arg);
        format_default(o, &d, def, sizeof def);
        bool show_default = def[0] && !o->cli_only && !(o->type == OPT_BOOL && !strcmp(def, "false"));
        fprintf(out, "  %-34s %s%s%s%s\n", left, o->help, show_default ? " (default " : "", show_default ? def : "",
                show_default ? ")" : "");
    }
}

fj_status fj_config_split_addr(const char *name, const char *value, char *host, size_t host_len, unsigned *port,
                               fj_err *err)
{
    const char *colon = strrchr(value, ':');
    if (!colon || colon == value)
        return fj_err_set(err, FJ_EINVAL, name, "%s address '%s' is not HOST:PORT", name, value);
    const char *h = value;
    size_t hn = (size_t)(colon - h);
    if (h[0] == '[' && colon[-1] == ']') { /* [::1]:8077 */
        h++;
        hn -= 2;
    }
    if (hn >= host_len)
        return fj_err_set(err, FJ_EINVAL, name, "%s host too long", name);
    memcpy(host, h, hn);
    host[hn] = '\0';
    char *end;
    unsigned long p = strtoul(colon + 1, &end, 10);
    if (*end || p > 65535 || end == colon + 1)
        return fj_err_set(err, FJ_EINVAL, name, "%s port in '%s' is not 0-65535", name, value);
    *port = (unsigned)p;
    return FJ_OK;
}

fj_status fj_config_listen_addr(const fj_config *c, char *host, size_t host_len, unsigned *port, fj_err *err)
{
    return fj_config_split_addr("listen", c->listen, host, host_len, port, err);
}

static bool is_loopback_host(const char *host)
{
    return !strcmp(host, "127.0.0.1") || !strcmp(host, "::1") || !strcmp(host, "localhost");
}

/* HTTPS and proxy options: each needs its partners, and dev mode must stay reachable from this
 * host only (docs/security.md, "Behind a reverse proxy"). */
static fj_status check_tls_and_proxies(const fj_config *c, fj_err *err)
{
    char host[256];
    unsigned port;
    fj_status st;
    if (c->listen_tls[0]) {
        if ((st = fj_config_split_addr("listen-tls", c->listen_tls, host, sizeof host, &port, err)) != FJ_OK)
            return st;
        if (!c->tls_cert[0] || !c->tls_key[0])
            return fj_err_set(err, FJ_EINVAL, c->tls_cert[0] ? "tls-key" : "tls-cert",
                              "listen-tls needs tls-cert (the certificate chain) and tls-key (its private key)");
        if (c->dev_mode && !is_loopback_host(host))
            return fj_err_set(err, FJ_EINVAL, "dev-mode",
                              "dev-mode accepts unauthenticated requests and is allowed only on loopback listeners, "
                              "not listen-tls '%s'", host);
    } else if (c->tls_cert[0] || c->tls_key[0] || c->tls_client_ca[0]) {
        return fj_err_set(err, FJ_EINVAL, "listen-tls",
                          "tls-cert, tls-key and tls-client-ca are for the HTTPS listener: set listen-tls too");
    }
    fj_proxies px = {0};
    if ((st = fj_proxies_set_header(&px, c->forwarded_header, err)) != FJ_OK ||
        (st = fj_proxies_parse(c->trusted_proxies, &px, err)) != FJ_OK)
        return st;
    if (c->dev_mode && px.n)
        return fj_err_set(err, FJ_EINVAL, "dev-mode",
                          "dev-mode cannot be used with trusted-proxies: a proxy would open it to whoever reaches "
                          "the proxy");
    return FJ_OK;
}

fj_retention fj_config_retention(const fj_config *c, int64_t *metrics_s)
{
    if (metrics_s)
        *metrics_s = c->retention_metrics_s >= 0 ? c->retention_metrics_s : c->metrics_retention_s;
    return (fj_retention){
        .process_samples_s = c->retention_process_samples_s >= 0 ? c->retention_process_samples_s : c->retention_s,
        .node_samples_s = c->retention_node_samples_s >= 0 ? c->retention_node_samples_s : c->retention_s,
        .errors_s = c->retention_errors_s,
        .slurm_s = c->retention_slurm_s,
    };
}

/* The two names of the metrics' retention must agree; process samples hang off node samples. */
static fj_status check_retention(const fj_config *c, fj_err *err)
{
    if (c->retention_metrics_s >= 0 && c->metrics_retention_s && c->metrics_retention_s != c->retention_metrics_s)
        return fj_err_set(err, FJ_EINVAL, "retention-metrics",
                          "retention-metrics and its older name metrics-retention are both set, to different values");
    fj_retention r = fj_config_retention(c, NULL);
    return fj_retention_check(&r, err);
}

static bool is_postgres(const fj_config *c)
{
    return !strncmp(c->db, "postgres://", 11) || !strncmp(c->db, "postgresql://", 13);
}

/* Walks carbon-intensity's entries: each (cluster, its length, g per kWh) to f until it returns
 * true; false when an entry is malformed (*bad points to it). */
static bool carbon_each(const char *list, bool (*f)(void *ud, const char *name, size_t len, double g), void *ud,
                        const char **bad)
{
    const char *p = list;
    while (*p) {
        const char *end = strchr(p, ','), *colon = strchr(p, ':');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (!colon || colon > p + len || colon == p) {
            *bad = p;
            return false;
        }
        char num[64];
        size_t nl = (size_t)(p + len - (colon + 1));
        if (nl == 0 || nl >= sizeof num) {
            *bad = p;
            return false;
        }
        memcpy(num, colon + 1, nl);
        num[nl] = '\0';
        char *stop = NULL;
        double g = strtod(num, &stop);
        if (*stop || !(g >= 0) || g > 1e6) {
            *bad = p;
            return false;
        }
        if (f && f(ud, p, (size_t)(colon - p), g))
            return true;
        if (!end)
            break;
        p = end + 1;
    }
    return true;
}

typedef struct carbon_find {
    const char *cluster;
    double g;
    bool found;
} carbon_find;

static bool carbon_match(void *ud, const char *name, size_t len, double g)
{
    carbon_find *cf = ud;
    if (strlen(cf->cluster) == len && memcmp(cf->cluster, name, len) == 0) {
        cf->g = g;
        cf->found = true;
        return true;
    }
    return false;
}

bool fj_config_carbon(const fj_config *c, const char *cluster, double *g_per_kwh)
{
    carbon_find cf = {cluster ? cluster : "", 0, false};
    const char *bad = NULL;
    if (!cluster || !carbon_each(c->carbon_intensity, carbon_match, &cf, &bad) || !cf.found)
        return false;
    *g_per_kwh = cf.g;
    return true;
}

double fj_config_pue(const fj_config *c)
{
    char *stop = NULL;
    double v = c->pue[0] ? strtod(c->pue, &stop) : 1.0;
    return c->pue[0] && (*stop || !(v >= 1.0) || v > 10) ? 1.0 : v;
}

fj_status fj_config_check(const fj_config *c, fj_err *err)
{
    const char *bad = NULL;
    if (!carbon_each(c->carbon_intensity, NULL, NULL, &bad))
        return fj_err_set(err, FJ_EINVAL, "carbon-intensity",
                          "carbon-intensity takes CLUSTER:G_PER_KWH entries separated by commas, not '%s'", bad);
    if (c->pue[0]) {
        char *stop = NULL;
        double v = strtod(c->pue, &stop);
        if (*stop || !(v >= 1.0) || v > 10)
            return fj_err_set(err, FJ_EINVAL, "pue", "pue must be a number from 1 to 10, not '%s'", c->pue);
    }

    char host[256];
    unsigned port;
    fj_status st = fj_config_listen_addr(c, host, sizeof host, &port, err);
    if (st != FJ_OK)
        return st;
    if (c->dev_mode && !is_loopback_host(host))
        return fj_err_set(err, FJ_EINVAL, "dev-mode",
                          "dev-mode accepts unauthenticated requests and is allowed only on a loopback listener, not '%s'",
                          host);
    if (strcmp(c->log_request_format, "logfmt") && strcmp(c->log_request_format, "json"))
        return fj_err_set(err, FJ_EINVAL, "log-request-format", "log-request-format must be logfmt or json");
    if (c->metrics_token[0] && strlen(c->metrics_token) < 16)
        return fj_err_set(err, FJ_EINVAL, "metrics-token", "metrics-token must be at least 16 characters");
    if (strcasecmp(c->synchronous, "OFF") && strcasecmp(c->synchronous, "NORMAL") && strcasecmp(c->synchronous, "FULL"))
        return fj_err_set(err, FJ_EINVAL, "synchronous", "synchronous must be OFF, NORMAL or FULL");
    if (c->threads < 1 || c->threads > 256)
        return fj_err_set(err, FJ_EINVAL, "threads", "threads must be 1-256");
    if (c->max_body == 0 || c->max_decoded < c->max_body)
        return fj_err_set(err, FJ_EINVAL, "max-decoded", "max-decoded must be at least max-body");
    if (c->body_memory < c->max_body)
        return fj_err_set(err, FJ_EINVAL, "body-memory", "body-memory must be at least max-body");
    if (c->query_memory < ((size_t)1 << 20))
        return fj_err_set(err, FJ_EINVAL, "query-memory", "query-memory must be at least 1M");
    if (c->query_memory_total < c->query_memory)
        return fj_err_set(err, FJ_EINVAL, "query-memory-total", "query-memory-total must be at least query-memory");
    if (c->read_threads < 1 || c->read_threads > 256)
        return fj_err_set(err, FJ_EINVAL, "read-threads", "read-threads must be 1-256");
    if (c->writers != FJ_WRITERS_AUTO && (c->writers < 1 || c->writers > FJ_WRITERS_MAX))
        return fj_err_set(err, FJ_EINVAL, "writers", "writers must be 1-%d or auto", FJ_WRITERS_MAX);
    if (c->writers != FJ_WRITERS_AUTO && c->writers > 1 && !is_postgres(c))
        return fj_err_set(err, FJ_EINVAL, "writers", "SQLite has one writer: writers must be 1 (or auto)");
    /* Announced to clients as Keep-Alive: timeout=N; fjord-push keeps a margin of a few seconds
     * below it (docs/pusher.md), which a value under 2 would leave no room for. */
    if (c->keepalive_timeout_s < 2 || c->keepalive_timeout_s > 3600)
        return fj_err_set(err, FJ_EINVAL, "keepalive-timeout", "keepalive-timeout must be 2-3600 seconds");
    /* docs/metrics.md: a point is read through every server within this plus about 2 s */
    if (c->metrics_share_s < 0 || c->metrics_share_s > 60)
        return fj_err_set(err, FJ_EINVAL, "metrics-share-interval", "metrics-share-interval must be 0-60 seconds");
    if (c->linger_timeout_s > 300)
        return fj_err_set(err, FJ_EINVAL, "linger-timeout", "linger-timeout must be 0-300 seconds");
    if (c->auth_fail_rate && c->auth_fail_burst < 1)
        return fj_err_set(err, FJ_EINVAL, "auth-fail-burst", "auth-fail-burst must be at least 1");
    if ((st = check_retention(c, err)) != FJ_OK)
        return st;
    return check_tls_and_proxies(c, err);
}

void fj_config_instance(const fj_config *c, char *out, size_t cap)
{
    if (c->instance[0]) {
        snprintf(out, cap, "%s", c->instance);
        return;
    }
    char host[256] = "";
    if (gethostname(host, sizeof host - 1) != 0 || !host[0])
        snprintf(host, sizeof host, "localhost");
    const char *port = strrchr(c->listen, ':'); /* "[::1]:8077" and "0.0.0.0:8077" alike */
    snprintf(out, cap, "%s:%s", host, port ? port + 1 : c->listen);
}

unsigned fj_config_group_commit_ms(const fj_config *c)
{
    if (c->group_commit_ms != FJ_GROUP_COMMIT_AUTO)
        return c->group_commit_ms;
    return is_postgres(c) || !strcasecmp(c->synchronous, "FULL") ? 2 : 0;
}

unsigned fj_config_writers(const fj_config *c)
{
    if (c->writers != FJ_WRITERS_AUTO)
        return c->writers;
    return is_postgres(c) ? 2 : 1;
}
