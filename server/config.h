/* config.h — fjord's settings: defaults, an INI file (libinih), then command-line flags, in that
 * order of precedence. Every option has one name used in all three places: the INI key
 * `listen` in section [server] is the flag `--listen`. docs/configuration.md lists them all. */
#ifndef FJ_CONFIG_H
#define FJ_CONFIG_H

#include "fj_status.h"
#include "storage/core/retention.h"

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

typedef struct fj_config {
    char listen[256];          /* HOST:PORT */
    char listen_tls[256];      /* HOST:PORT of the HTTPS listener; "" = none */
    char tls_cert[1024];       /* PEM certificate chain (server certificate first) */
    char tls_key[1024];        /* PEM private key of tls_cert */
    char tls_client_ca[1024];  /* PEM CA: HTTPS clients must present a certificate it signed; "" = not asked */
    char tls_priorities[512];  /* GnuTLS priority string */
    char trusted_proxies[1024]; /* addresses and CIDR ranges whose forwarded-client header is believed */
    char forwarded_header[32]; /* X-Forwarded-For or Forwarded */
    char db[1024];             /* SQLite path or postgres:// URL */
    char synchronous[16];      /* SQLite synchronous: OFF, NORMAL, FULL */
    int64_t job_gap_s;         /* rectification gap for non-Slurm jobs */
    /* Retention (docs/storage.md, "Retention"): seconds each kind of raw data is kept, 0 forever.
     * The per-kind settings are -1 until set: fj_config_retention resolves them from the older
     * `retention` (both sample kinds) and `metrics-retention`. */
    int64_t retention_s;       /* the older setting: process and node samples alike */
    int64_t retention_process_samples_s, retention_node_samples_s, retention_errors_s, retention_slurm_s;
    int64_t retention_metrics_s;
    size_t max_body;           /* bytes of a request body as received */
    size_t max_decoded;        /* bytes of a body after gzip/zstd decoding */
    unsigned threads;          /* HTTP worker threads */
    unsigned max_connections;  /* global */
    unsigned max_per_ip;       /* per client address */
    unsigned timeout_s;        /* idle connection timeout (headers and body) */
    unsigned header_timeout_s; /* a request's headers complete within this (0 = off) */
    unsigned body_timeout_s;   /* a request's whole body arrives within this (0 = off) */
    unsigned keepalive_timeout_s; /* a kept-alive connection idle between requests is closed after this */
    unsigned linger_timeout_s; /* lingering close after an early answer (0 = off) */
    size_t linger_bytes;       /* and the most it reads and discards */
    size_t body_min_rate;      /* bytes/s a body must average after header_timeout_s (0 = off) */
    size_t body_memory;        /* all request bodies buffered at once, together */
    /* Reads (docs/security.md "Reads"): each runs on a read thread under a deadline and a memory
     * budget of its own and one shared by all reads in flight. */
    unsigned query_timeout_s;  /* a read is stopped this long after its headers (0 = no deadline) */
    size_t query_memory;       /* what one read may hold: its arena and its answer */
    size_t query_memory_total; /* what all reads in flight may hold together */
    unsigned read_threads;     /* reads running at once */
    unsigned read_queue;       /* reads waiting beyond them; more get 503 */
    unsigned auth_fail_burst;  /* failed authentications per address or name at once... */
    unsigned auth_fail_rate;   /* ...then this many a minute (0 = no limit) */
    unsigned auth_fail_delay_ms; /* a failure over the limit is answered after this long */
    unsigned refusal_log_burst; /* refusal log lines per address and reason a minute (0 = all) */
    bool log_requests;         /* a request-log line for every request, not only refusals */
    char log_request_format[16]; /* the request log's lines: logfmt or json */
    char metrics_token[256];   /* a Bearer secret for GET /metrics besides read credentials; "" = none */
    size_t conn_memory;        /* libmicrohttpd per-connection memory limit */
    size_t queue_max;          /* writer queue length past which ingest answers 503 */
    unsigned group_commit_ms;  /* how long the writer waits to gather more batches; FJ_GROUP_COMMIT_AUTO:
                                * fj_config_group_commit_ms decides */
    unsigned writers;          /* writer threads (connections); FJ_WRITERS_AUTO: fj_config_writers decides */
    bool dev_mode;             /* accept unauthenticated requests (loopback listener only) */
    char log_level[16];        /* debug, info, warn, error */
    /* Line-protocol metrics (docs/metrics.md) */
    int64_t metrics_retention_s;   /* drop chunks older than this; 0 = keep forever */
    int64_t metrics_flush_s;       /* seal every open buffer this often */
    unsigned commit_timeout_s;     /* PostgreSQL: 503 after a write group's COMMIT waited this long; 0: wait */
    int64_t metrics_share_s;       /* PostgreSQL: share new points with the other servers this often; 0: never */
    int64_t request_log_keep_s;    /* keep request-log rows this long once durable */
    int64_t metrics_seal_age_s;    /* seal a buffer after this much data time */
    unsigned metrics_seal_points;  /* seal a buffer at this many points */
    size_t metrics_max_buffered;   /* open buffers' memory before early seals, in points of 16 bytes */
    int64_t metrics_max_future_s;  /* refuse points later than arrival + this */
    /* Per-cluster quotas (storage/core/quota.h, docs/security.md "Quotas"); 0: no limit. */
    unsigned max_series_per_cluster;    /* line-protocol series a cluster may hold */
    unsigned max_new_series_per_minute; /* new series a cluster may create a minute */
    unsigned max_nodes_per_cluster;     /* Sonar nodes a cluster may hold */
    unsigned max_new_jobs_per_minute;   /* new Sonar jobs a cluster may start a minute */
    char cc_cluster_config[1024];  /* cc-backend cluster.json or cc-metric-store config.json */
    char jwt_public_key[256];      /* base64 Ed25519 key: accept EdDSA-signed JWTs */
    char nats[1024];               /* nats:// URL to subscribe to; "" = off */
    char udp[4096];                /* UDP line-protocol listeners (server/udp.h); "" = none */
    char instance[256];            /* this server among those sharing a database; "" = host:port */
    /* Job energy's carbon (docs/energy.md): g CO2e per kWh per cluster ("fox:120,saga:30"), and the
     * power usage effectiveness applied first ("" = 1.0) */
    char carbon_intensity[1024];
    char pue[32];
    /* Command-line only (never read from the INI file) */
    bool create;                   /* a command other than serve/migrate up may make a new database */
    char password[256];            /* token add: the chosen secret instead of a random one */
    bool read_only;                /* token add: a credential that reads every cluster, writes none */
} fj_config;

/* The subcommands as a set: each option names the commands that read it, so `fjord CMD --help`
 * lists exactly those and a command refuses an option it would ignore. */
enum {
    FJ_CMD_SERVE = 1u << 0,
    FJ_CMD_MIGRATE = 1u << 1,
    FJ_CMD_TOKEN = 1u << 2,
    FJ_CMD_IMPORT = 1u << 3,
    FJ_CMD_CHECK = 1u << 4,
    FJ_CMD_BACKUP = 1u << 5,
};

/* Fills c with the documented defaults. */
void fj_config_defaults(fj_config *c);

/* group-commit-ms = auto (the default). */
#define FJ_GROUP_COMMIT_AUTO UINT_MAX

/* The writer's group-commit wait in milliseconds: the setting, or for auto 2 where a commit waits
 * for the disk (PostgreSQL, SQLite with synchronous=FULL), so that concurrent requests share that
 * wait, and 0 elsewhere, where waiting only holds the request threads back (docs/benchmarks.md,
 * "The group-commit wait"). */
unsigned fj_config_group_commit_ms(const fj_config *c);

/* writers = auto (the default); the most writers a server takes. */
#define FJ_WRITERS_AUTO UINT_MAX
#define FJ_WRITERS_MAX 16

/* Writer threads, each with a connection of its own: the setting, or for auto 2 on PostgreSQL
 * (a second transaction runs while the first waits on its statements: docs/postgres.md, "Writer
 * connections") and 1 on SQLite, which has one writer. */
unsigned fj_config_writers(const fj_config *c);

/* Reads an INI file into c. FJ_EINVAL names the file, line and key on a bad entry. */
fj_status fj_config_load_file(fj_config *c, const char *path, fj_err *err);

/* Sets one option by its name ("listen", "db", "max-body"...; '_' and '-' are the same). */
fj_status fj_config_set(fj_config *c, const char *name, const char *value, fj_err *err);

/* Parses the arguments after the subcommand cmd (one FJ_CMD_*) into c: `--name value`,
 * `--name=value`, and for a boolean `--flag` alone or followed by a literal `true` or `false`.
 * `--config FILE` is loaded first wherever it appears, so flags win over the file. An option that
 * cmd does not read is refused, naming the command. Positional arguments are collected into
 * positional (up to max_pos; the count goes to *n_pos). */
fj_status fj_config_parse_args(fj_config *c, unsigned cmd, int argc, char **argv, char **positional, size_t max_pos,
                               size_t *n_pos, fj_err *err);

/* Writes the options that cmd reads, each with its argument, default and meaning, from the same
 * table that parses them. */
void fj_config_help(FILE *out, unsigned cmd);

/* This server's identity for line-protocol metrics on a shared database (PostgreSQL): `instance`
 * when set, else "<host name>:<listen port>", stable across restarts as long as both are. */
void fj_config_instance(const fj_config *c, char *out, size_t cap);

/* Checks cross-option rules (dev mode needs loopback listeners and no trusted proxies, TLS
 * needs a certificate and key...). */
fj_status fj_config_check(const fj_config *c, fj_err *err);

/* The carbon intensity of cluster (g CO2e per kWh) from carbon-intensity: false when the cluster
 * is not named (or the option unset). */
bool fj_config_carbon(const fj_config *c, const char *cluster, double *g_per_kwh);
/* pue as a number (1.0 when unset). */
double fj_config_pue(const fj_config *c);

/* The retention of each kind of raw data, the older options mapped: `retention` is the default of
 * both sample kinds, `metrics-retention` another name of `retention-metrics` (*metrics_s). */
fj_retention fj_config_retention(const fj_config *c, int64_t *metrics_s);

/* Splits c->listen into host and port. */
fj_status fj_config_listen_addr(const fj_config *c, char *host, size_t host_len, unsigned *port, fj_err *err);

/* The same for another HOST:PORT option (`name` for the error: "listen-tls"). */
fj_status fj_config_split_addr(const char *name, const char *value, char *host, size_t host_len, unsigned *port,
                               fj_err *err);

#endif
