/* config.c — one option table drives the INI reader, the flag parser and the usage text, so an
 * option cannot exist in one and be missing from the other. */
#include "config.h"

#include "alloc.h"

#include <ini.h>

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

typedef enum { OPT_STR, OPT_DURATION, OPT_SIZE, OPT_BOOL, OPT_PROCS, OPT_AUTH, OPT_LOGLEVEL } opt_type;

typedef struct opt {
    const char *section, *key;
    opt_type type;
    size_t off;
    const char *help;
} opt;

#define O(sec, key, type, field, help) {sec, key, type, offsetof(fj_push_config, field), help}
static const opt options[] = {
    O("push", "cluster", OPT_STR, cluster, "cluster name written into every envelope"),
    O("push", "node", OPT_STR, node, "node name (default: the host name)"),
    O("push", "url", OPT_STR, url, "fjord ingest URL, e.g. https://fjord.example:8443/ingest"),
    O("push", "measurements_url", OPT_STR, measurements_url,
      "aicr measurements URL (default: <url's origin>/api/v1/ingest/measurements)"),
    O("push", "auth_file", OPT_STR, auth_file, "file holding user:password (Basic) or a token (Bearer)"),
    O("push", "auth_type", OPT_AUTH, auth_type, "auto|basic|bearer|none (auto: Basic when the file has a colon)"),
    O("push", "ca_file", OPT_STR, ca_file, "CA bundle to verify the server's certificate (default: the system's CAs)"),
    O("push", "client_cert", OPT_STR, client_cert, "PEM client certificate to present over HTTPS (needs client_key)"),
    O("push", "client_key", OPT_STR, client_key, "PEM private key of client_cert"),
    O("push", "timeout", OPT_DURATION, timeout, "per-request timeout (default 10s)"),
    O("push", "spool_dir", OPT_STR, spool_dir, "directory for unsent data (default /var/lib/fjord-push)"),
    O("push", "spool_max", OPT_SIZE, spool_max, "spool size cap, compressed bytes (default 64M)"),
    O("collect", "root", OPT_STR, root, "prefix for /proc and /sys (fixtures; default /)"),
    O("collect", "nvml_library", OPT_STR, nvml_library, "NVML to dlopen (default libnvidia-ml.so.1; none = off)"),
    O("collect", "amd", OPT_BOOL, amd, "read AMD GPUs from amdgpu sysfs (default true; --no-amd)"),
    O("collect", "processes", OPT_PROCS, processes, "none|gpu|all: which processes go in samples (default gpu)"),
    O("collect", "hwloc_xml", OPT_STR, hwloc_xml, "read the CPU/PCI topology from this hwloc XML export"),
    O("collect", "topology_selector", OPT_STR, topology_selector,
      "NetworkTopology nodeSelector (default kubernetes.io/hostname=<node>)"),
    O("collect", "north_south", OPT_STR, north_south, "comma-separated NIC names (netdev or rdma) that are north-south"),
    O("collect", "east_west", OPT_STR, east_west, "comma-separated NIC names (netdev or rdma) that are east-west"),
    O("schedule", "sample_interval", OPT_DURATION, sample_interval, "sample cadence, clock-aligned (default 30s)"),
    O("schedule", "sysinfo_interval", OPT_DURATION, sysinfo_interval, "sysinfo cadence (default 24h)"),
    O("schedule", "topology_interval", OPT_DURATION, topology_interval,
      "how often to look for a topology change (default 1h)"),
    O("schedule", "send_jitter", OPT_DURATION, send_jitter, "random delay before sending (default 10s)"),
    O("log", "level", OPT_LOGLEVEL, log_level, "debug|info|warn|error (default info)"),
};
#undef O
enum { NOPTS = sizeof options / sizeof options[0] };

long fj_parse_duration(const char *s)
{
    if (!s || !*s)
        return -1;
    errno = 0;
    char *end;
    long long v = strtoll(s, &end, 10);
    if (errno || v < 0 || end == s)
        return -1;
    long long mul = 1;
    if (*end) {
        switch (*end) {
        case 's': mul = 1; break;
        case 'm': mul = 60; break;
        case 'h': mul = 3600; break;
        case 'd': mul = 86400; break;
        default: return -1;
        }
        if (end[1])
            return -1;
    }
    if (v > LONG_MAX / mul)
        return -1;
    return (long)(v * mul);
}

uint64_t fj_parse_size(const char *s)
{
    if (!s || !*s || *s == '-')
        return UINT64_MAX;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s)
        return UINT64_MAX;
    unsigned shift = 0;
    if (*end) {
        switch (toupper((unsigned char)*end)) {
        case 'K': shift = 10; break;
        case 'M': shift = 20; break;
        case 'G': shift = 30; break;
        default: return UINT64_MAX;
        }
        if (end[1] && !(toupper((unsigned char)end[1]) == 'B' && !end[2]))
            return UINT64_MAX;
    }
    if (v > (UINT64_MAX >> shift))
        return UINT64_MAX;
    return (uint64_t)v << shift;
}

static fj_status set_str(char **dst, const char *v)
{
    char *p = fj_strdup(v);
    if (!p)
        return FJ_ENOMEM;
    fj_free(*dst);
    *dst = p;
    return FJ_OK;
}

static int parse_bool(const char *v)
{
    if (!strcasecmp(v, "true") || !strcasecmp(v, "yes") || !strcasecmp(v, "on") || !strcmp(v, "1"))
        return 1;
    if (!strcasecmp(v, "false") || !strcasecmp(v, "no") || !strcasecmp(v, "off") || !strcmp(v, "0"))
        return 0;
    return -1;
}

/* Sets one option from its text; FJ_EINVAL with a message when the value is bad. */
static fj_status set_opt(fj_push_config *c, const opt *o, const char *v, fj_err *err)
{
    char *base = (char *)c + o->off;
    switch (o->type) {
    case OPT_STR:
        return set_str((char **)base, v);
    case OPT_DURATION: {
        long d = fj_parse_duration(v);
        if (d < 0)
            return fj_err_set(err, FJ_EINVAL, o->key, "bad duration '%s' (use 30s, 5m, 24h)", v);
        *(long *)base = d;
        return FJ_OK;
    }
    case OPT_SIZE: {
        uint64_t n = fj_parse_size(v);
        if (n == UINT64_MAX)
            return fj_err_set(err, FJ_EINVAL, o->key, "bad size '%s' (use 64M, 1G)", v);
        *(uint64_t *)base = n;
        return FJ_OK;
    }
    case OPT_BOOL: {
        int b = parse_bool(v);
        if (b < 0)
            return fj_err_set(err, FJ_EINVAL, o->key, "bad boolean '%s'", v);
        *(int *)base = b;
        return FJ_OK;
    }
    case OPT_PROCS:
        if (!strcmp(v, "none"))
            c->processes = FJ_PROCS_NONE;
        else if (!strcmp(v, "gpu"))
            c->processes = FJ_PROCS_GPU;
        else if (!strcmp(v, "all"))
            c->processes = FJ_PROCS_ALL;
        else
            return fj_err_set(err, FJ_EINVAL, o->key, "processes must be none, gpu or all, not '%s'", v);
        return FJ_OK;
    case OPT_AUTH:
        if (!strcmp(v, "auto"))
            c->auth_type = FJ_AUTH_AUTO;
        else if (!strcmp(v, "basic"))
            c->auth_type = FJ_AUTH_BASIC;
        else if (!strcmp(v, "bearer"))
            c->auth_type = FJ_AUTH_BEARER;
        else if (!strcmp(v, "none"))
            c->auth_type = FJ_AUTH_NONE;
        else
            return fj_err_set(err, FJ_EINVAL, o->key, "auth_type must be auto, basic, bearer or none");
        return FJ_OK;
    case OPT_LOGLEVEL: {
        static const char *names[] = {"debug", "info", "warn", "error"};
        for (int i = 0; i < 4; i++)
            if (!strcmp(v, names[i])) {
                c->log_level = (fj_log_level)i;
                return FJ_OK;
            }
        return fj_err_set(err, FJ_EINVAL, o->key, "bad log level '%s'", v);
    }
    }
    return FJ_EINTERNAL;
}

fj_status fj_push_config_init(fj_push_config *c)
{
    memset(c, 0, sizeof *c);
    c->auth_type = FJ_AUTH_AUTO;
    c->timeout = 10;
    c->spool_max = 64u << 20;
    c->amd = 1;
    c->processes = FJ_PROCS_GPU;
    c->sample_interval = 30;
    c->sysinfo_interval = 86400;
    c->topology_interval = 3600;
    c->send_jitter = 10;
    c->log_level = FJ_LOG_INFO;
    c->what = FJ_WHAT_ALL;
    char host[256];
    if (gethostname(host, sizeof host) != 0)
        strcpy(host, "localhost");
    host[sizeof host - 1] = '\0';
    if (set_str(&c->node, host) || set_str(&c->root, "/") || set_str(&c->nvml_library, "libnvidia-ml.so.1") ||
        set_str(&c->spool_dir, "/var/lib/fjord-push"))
        return FJ_ENOMEM;
    return FJ_OK;
}

void fj_push_config_free(fj_push_config *c)
{
    for (size_t i = 0; i < NOPTS; i++)
        if (options[i].type == OPT_STR) {
            char **p = (char **)((char *)c + options[i].off);
            fj_free(*p);
            *p = NULL;
        }
}

struct ini_ctx {
    fj_push_config *c;
    fj_err *err;
    const char *path;
    fj_status st;
};

static int on_ini(void *user, const char *section, const char *name, const char *value)
{
    struct ini_ctx *x = user;
    if (x->st != FJ_OK)
        return 0;
    for (size_t i = 0; i < NOPTS; i++) {
        if (strcmp(options[i].section, section) || strcmp(options[i].key, name))
            continue;
        x->st = set_opt(x->c, &options[i], value, x->err);
        if (x->st != FJ_OK && x->err)
            snprintf(x->err->path, sizeof x->err->path, "%s [%s] %s", x->path, section, name);
        return x->st == FJ_OK;
    }
    x->st = fj_err_set(x->err, FJ_EINVAL, NULL, "unknown option [%s] %s", section, name);
    if (x->err)
        snprintf(x->err->path, sizeof x->err->path, "%s [%s] %s", x->path, section, name);
    return 0;
}

fj_status fj_push_config_load(fj_push_config *c, const char *path, fj_err *err)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return fj_err_set(err, FJ_EIO, path, "cannot open config: %s", strerror(errno));
    struct ini_ctx x = {c, err, path, FJ_OK};
    int r = ini_parse_file(f, on_ini, &x);
    fclose(f);
    if (x.st != FJ_OK)
        return x.st;
    if (r != 0) {
        fj_status st = fj_err_set(err, FJ_EINVAL, NULL, "syntax error");
        if (err)
            snprintf(err->path, sizeof err->path, "%s:%d", path, r);
        return st;
    }
    return FJ_OK;
}

/* Flag name for an option key: underscores become dashes. */
static int flag_matches(const char *key, const char *flag, size_t flen)
{
    size_t i = 0;
    for (; key[i] && i < flen; i++)
        if (!(key[i] == flag[i] || (key[i] == '_' && flag[i] == '-')))
            return 0;
    return !key[i] && i == flen;
}

static fj_status parse_only(fj_push_config *c, const char *v, fj_err *err)
{
    unsigned what = 0;
    char tmp[128];
    snprintf(tmp, sizeof tmp, "%s", v);
    for (char *save = NULL, *t = strtok_r(tmp, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (!strcmp(t, "sample"))
            what |= FJ_WHAT_SAMPLE;
        else if (!strcmp(t, "sysinfo"))
            what |= FJ_WHAT_SYSINFO;
        else if (!strcmp(t, "topology"))
            what |= FJ_WHAT_TOPOLOGY;
        else
            return fj_err_set(err, FJ_EINVAL, "only", "--only takes sample,sysinfo,topology, not '%s'", t);
    }
    if (!what)
        return fj_err_set(err, FJ_EINVAL, "only", "--only needs at least one kind");
    c->what = what;
    return FJ_OK;
}

fj_status fj_push_config_args(fj_push_config *c, int argc, char **argv, fj_err *err)
{
    /* The file first, so flags override it wherever --config stands. */
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *path = NULL;
        if (!strcmp(a, "--config") || !strcmp(a, "-c")) {
            if (i + 1 >= argc)
                return fj_err_set(err, FJ_EINVAL, "config", "--config needs a file");
            path = argv[++i];
        } else if (!strncmp(a, "--config=", 9)) {
            path = a + 9;
        }
        if (path) {
            fj_status st = fj_push_config_load(c, path, err);
            if (st != FJ_OK)
                return st;
        }
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--config") || !strcmp(a, "-c")) {
            i++;
            continue;
        }
        if (!strncmp(a, "--config=", 9))
            continue;
        if (!strcmp(a, "--once")) {
            c->once = 1;
            continue;
        }
        if (!strcmp(a, "--stdout")) {
            c->to_stdout = 1;
            continue;
        }
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            c->show_help = 1;
            continue;
        }
        if (!strcmp(a, "--version")) {
            c->show_version = 1;
            continue;
        }
        if (strncmp(a, "--", 2))
            return fj_err_set(err, FJ_EINVAL, a, "unexpected argument '%s'", a);
        const char *name = a + 2;
        const char *eq = strchr(name, '=');
        size_t nlen = eq ? (size_t)(eq - name) : strlen(name);
        const char *value = eq ? eq + 1 : NULL;
        int negated = 0;
        if (nlen > 3 && !strncmp(name, "no-", 3)) {
            negated = 1;
        }
        if ((nlen == 4 && !strncmp(name, "only", 4)) || (nlen == 9 && !strncmp(name, "fake-time", 9))) {
            if (!value) {
                if (i + 1 >= argc)
                    return fj_err_set(err, FJ_EINVAL, a, "%s needs a value", a);
                value = argv[++i];
            }
            if (name[0] == 'o') {
                fj_status st = parse_only(c, value, err);
                if (st != FJ_OK)
                    return st;
            } else {
                char *end;
                c->fixed_time = strtoll(value, &end, 10);
                if (*end || c->fixed_time <= 0)
                    return fj_err_set(err, FJ_EINVAL, "fake-time", "--fake-time takes epoch seconds");
            }
            continue;
        }
        const opt *o = NULL;
        for (size_t k = 0; k < NOPTS && !o; k++) {
            if (flag_matches(options[k].key, name, nlen))
                o = &options[k];
            else if (negated && options[k].type == OPT_BOOL && flag_matches(options[k].key, name + 3, nlen - 3))
                o = &options[k];
        }
        if (!o)
            return fj_err_set(err, FJ_EINVAL, a, "unknown flag '%.*s' (see --help)", (int)nlen + 2, a);
        if (o->type == OPT_BOOL && !value) {
            *(int *)((char *)c + o->off) = !negated;
            continue;
        }
        if (!value) {
            if (i + 1 >= argc)
                return fj_err_set(err, FJ_EINVAL, a, "%s needs a value", a);
            value = argv[++i];
        }
        fj_status st = set_opt(c, o, value, err);
        if (st != FJ_OK)
            return st;
    }
    return FJ_OK;
}

fj_status fj_push_config_check(const fj_push_config *c, fj_err *err)
{
    if (!c->node || !*c->node)
        return fj_err_set(err, FJ_EINVAL, "node", "node name is empty");
    if (!c->to_stdout) {
        if (!c->cluster || !*c->cluster)
            return fj_err_set(err, FJ_EINVAL, "cluster", "cluster is required (--cluster or [push] cluster)");
        if (!c->url || !*c->url)
            return fj_err_set(err, FJ_EINVAL, "url", "url is required unless --stdout");
        if (strncmp(c->url, "http://", 7) && strncmp(c->url, "https://", 8))
            return fj_err_set(err, FJ_EINVAL, "url", "url must start with http:// or https://");
        if (!c->client_cert != !c->client_key || (c->client_cert && !*c->client_cert != !*c->client_key))
            return fj_err_set(err, FJ_EINVAL, c->client_cert && *c->client_cert ? "client_key" : "client_cert",
                              "client_cert and client_key go together");
    }
    if (c->sample_interval <= 0 || c->sysinfo_interval <= 0 || c->topology_interval <= 0)
        return fj_err_set(err, FJ_EINVAL, "schedule", "intervals must be positive");
    if (c->timeout <= 0)
        return fj_err_set(err, FJ_EINVAL, "timeout", "timeout must be positive");
    return FJ_OK;
}

const char *fj_push_usage(void)
{
    static char text[6144];
    if (text[0])
        return text;
    size_t n = (size_t)snprintf(text, sizeof text,
        "usage: fjord-push [--config FILE] [--once] [--stdout] [--only sample,sysinfo,topology] [options]\n"
        "\n"
        "  --config FILE   INI file; every [section] key below is also a --key flag\n"
        "  --once          collect once, send (or print with --stdout) and exit\n"
        "  --stdout        print the envelopes instead of sending them\n"
        "  --only KINDS    what to collect with --once: sample, sysinfo, topology\n"
        "  --fake-time T   collection time in epoch seconds (reproducible output for tests)\n"
        "  --help, --version\n\n");
    const char *section = "";
    for (size_t i = 0; i < NOPTS && n < sizeof text; i++) {
        if (strcmp(section, options[i].section)) {
            section = options[i].section;
            n += (size_t)snprintf(text + n, sizeof text - n, "[%s]\n", section);
        }
        char flag[64];
        snprintf(flag, sizeof flag, "%s", options[i].key);
        for (char *p = flag; *p; p++)
            if (*p == '_')
                *p = '-';
        if (n < sizeof text)
            n += (size_t)snprintf(text + n, sizeof text - n, "  --%-18s %s\n", flag, options[i].help);
    }
    return text;
}
