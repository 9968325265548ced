/* config.h — fjord-push settings: defaults, the INI file (libinih) and the command line, where every
 * INI option is also a flag (`[section] key` is `--key`). Later sources override earlier ones:
 * defaults, then the file named by --config, then the other flags.
 * Strings are owned by the config (fj_strdup) and freed by fj_push_config_free. Not thread-safe. */
#ifndef FJ_PUSH_CONFIG_H
#define FJ_PUSH_CONFIG_H

#include "fj_status.h"
#include "log.h"

#include <stdint.h>

typedef enum { FJ_PROCS_NONE, FJ_PROCS_GPU, FJ_PROCS_ALL } fj_procs_mode;
typedef enum { FJ_AUTH_AUTO, FJ_AUTH_BASIC, FJ_AUTH_BEARER, FJ_AUTH_NONE } fj_auth_type;

/* What one run collects (bit set). */
enum { FJ_WHAT_SAMPLE = 1, FJ_WHAT_SYSINFO = 2, FJ_WHAT_TOPOLOGY = 4, FJ_WHAT_ALL = 7 };

typedef struct fj_push_config {
    /* [push] identity and transport */
    char *cluster;          /* required unless --stdout */
    char *node;             /* default: gethostname() */
    char *url;              /* Sonar envelopes: http(s)://host:port/ingest */
    char *measurements_url; /* default: derived from url, /api/v1/ingest/measurements */
    char *auth_file;        /* "user:password" (Basic) or a token (Bearer) */
    fj_auth_type auth_type;
    char *ca_file;          /* CA bundle for the server's certificate; NULL: the system's CAs */
    char *client_cert;      /* PEM certificate presented to the server (its tls-client-ca) */
    char *client_key;       /* its private key */
    long timeout;           /* seconds per HTTP request */
    char *spool_dir;        /* NULL: unsent data is kept in memory only */
    uint64_t spool_max;     /* bytes, compressed */
    /* [collect] */
    char *root;             /* prefix for /proc and /sys ("/" on a real node) */
    char *nvml_library;     /* dlopen name or path; "" or "none" disables NVML */
    int amd;                /* read amdgpu sysfs */
    fj_procs_mode processes;
    char *hwloc_xml;        /* topology from an hwloc XML export instead of the live system */
    char *topology_selector;/* NetworkTopology identity.nodeSelector; default kubernetes.io/hostname=<node> */
    char *north_south;      /* comma-separated netdev/rdma names forced north-south */
    char *east_west;        /* comma-separated netdev/rdma names forced east-west */
    /* [schedule] seconds */
    long sample_interval, sysinfo_interval, topology_interval, send_jitter;
    /* [log] */
    fj_log_level log_level;
    /* command line only */
    int once, to_stdout;
    unsigned what;          /* FJ_WHAT_* */
    int64_t fixed_time;     /* --fake-time: collection time for reproducible output (tests); 0 = now */
    int show_help, show_version;
} fj_push_config;

/* Fills defaults (allocates the default strings). FJ_ENOMEM on failure. */
fj_status fj_push_config_init(fj_push_config *c);

/* Reads an INI file over the current values. FJ_EINVAL with err->path "FILE:LINE" for an unknown key
 * or a bad value, FJ_EIO when the file cannot be read. */
fj_status fj_push_config_load(fj_push_config *c, const char *path, fj_err *err);

/* Applies argv: --config FILE first (wherever it is), then every other flag in order. */
fj_status fj_push_config_args(fj_push_config *c, int argc, char **argv, fj_err *err);

/* Checks the combination (cluster present, URL scheme, intervals > 0...). */
fj_status fj_push_config_check(const fj_push_config *c, fj_err *err);

void fj_push_config_free(fj_push_config *c);

/* Usage text for --help. */
const char *fj_push_usage(void);

/* "30s", "5m", "24h", "2d" or plain seconds; -1 when malformed. */
long fj_parse_duration(const char *s);
/* "512", "64K", "64M", "1G" (powers of 1024); UINT64_MAX when malformed. */
uint64_t fj_parse_size(const char *s);

#endif
