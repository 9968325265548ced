/* Tests of server/config.c: defaults, INI file, flags overriding the file, errors that say where. */
#include "server/config.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

Test(config, defaults_are_documented_values)
{
    fj_config c;
    fj_config_defaults(&c);
    cr_assert_str_eq(c.listen, "127.0.0.1:8077");
    cr_assert_str_eq(c.db, "./fjord.db");
    cr_assert_eq(c.job_gap_s, 6 * 3600);
    cr_assert_eq(fj_config_check(&c, NULL), FJ_OK);
}

Test(config, file_then_flags)
{
    char path[] = "/tmp/fjord-config-XXXXXX";
    int fd = mkstemp(path);
    FILE *f = fdopen(fd, "w");
    fputs("[server]\nlisten = 127.0.0.1:9000\nthreads = 2\n[limits]\nmax-body = 1M\n[rectification]\njob_gap = 2h\n", f);
    fclose(f);
    fj_config c;
    fj_config_defaults(&c);
    char *argv[] = {"--config", path, "--listen", "127.0.0.1:9100", "--dev-mode", "extra"};
    char *pos[4];
    size_t n_pos;
    fj_err err = {0};
    cr_assert_eq(fj_config_parse_args(&c, FJ_CMD_SERVE, 6, argv, pos, 4, &n_pos, &err), FJ_OK, "%s", err.message);
    unlink(path);
    cr_assert_str_eq(c.listen, "127.0.0.1:9100");
    cr_assert_eq(c.threads, 2);
    cr_assert_eq(c.max_body, 1u << 20);
    cr_assert_eq(c.job_gap_s, 7200);
    cr_assert(c.dev_mode);
    cr_assert_eq(n_pos, 1);
    cr_assert_str_eq(pos[0], "extra");
}

Test(config, errors_name_the_option)
{
    fj_config c;
    fj_config_defaults(&c);
    fj_err err = {0};
    cr_assert_eq(fj_config_set(&c, "max-body", "lots", &err), FJ_EINVAL);
    cr_assert(strstr(err.message, "max-body"));
    cr_assert_eq(fj_config_set(&c, "no-such", "1", &err), FJ_EINVAL);
    cr_assert(strstr(err.message, "no-such"));
    cr_assert_eq(fj_config_set(&c, "job-gap", "-5", &err), FJ_EINVAL);
}

Test(config, dev_mode_only_on_loopback)
{
    fj_config c;
    fj_config_defaults(&c);
    c.dev_mode = true;
    fj_err err = {0};
    cr_assert_eq(fj_config_check(&c, &err), FJ_OK);
    strcpy(c.listen, "0.0.0.0:8077");
    cr_assert_eq(fj_config_check(&c, &err), FJ_EINVAL);
    cr_assert(strstr(err.message, "loopback"));
    strcpy(c.listen, "[::1]:8077");
    cr_assert_eq(fj_config_check(&c, &err), FJ_OK);
}

Test(config, listen_address_forms)
{
    fj_config c;
    fj_config_defaults(&c);
    char host[64];
    unsigned port;
    strcpy(c.listen, "[::1]:80");
    cr_assert_eq(fj_config_listen_addr(&c, host, sizeof host, &port, NULL), FJ_OK);
    cr_assert_str_eq(host, "::1");
    cr_assert_eq(port, 80);
    strcpy(c.listen, "127.0.0.1:99999");
    cr_assert_eq(fj_config_listen_addr(&c, host, sizeof host, &port, NULL), FJ_EINVAL);
    strcpy(c.listen, "nocolon");
    cr_assert_eq(fj_config_listen_addr(&c, host, sizeof host, &port, NULL), FJ_EINVAL);
}

/* The older retention settings map onto the per-kind ones: `retention` is both sample kinds'
 * default, `metrics-retention` the older name of `retention-metrics`; a per-kind setting wins. */
Test(config, retention_old_names_map)
{
    fj_config c;
    fj_config_defaults(&c);
    int64_t metrics = -1;
    fj_retention r = fj_config_retention(&c, &metrics);
    cr_assert(r.process_samples_s == 0 && r.node_samples_s == 0 && r.errors_s == 0 && r.slurm_s == 0 && metrics == 0,
              "nothing set keeps everything");
    fj_err err = {0};
    cr_assert_eq(fj_config_set(&c, "retention", "90d", &err), FJ_OK);
    cr_assert_eq(fj_config_set(&c, "metrics-retention", "7d", &err), FJ_OK);
    r = fj_config_retention(&c, &metrics);
    cr_assert_eq(r.process_samples_s, 90 * 86400);
    cr_assert_eq(r.node_samples_s, 90 * 86400);
    cr_assert_eq(metrics, 7 * 86400);
    cr_assert_eq(fj_config_check(&c, NULL), FJ_OK);
    cr_assert_eq(fj_config_set(&c, "retention-process-samples", "30d", &err), FJ_OK);
    cr_assert_eq(fj_config_set(&c, "retention_errors", "14d", &err), FJ_OK);
    cr_assert_eq(fj_config_set(&c, "retention-metrics", "7d", &err), FJ_OK);
    r = fj_config_retention(&c, &metrics);
    cr_assert_eq(r.process_samples_s, 30 * 86400);
    cr_assert_eq(r.node_samples_s, 90 * 86400, "retention still sets node samples");
    cr_assert_eq(r.errors_s, 14 * 86400);
    cr_assert_eq(metrics, 7 * 86400);
    cr_assert_eq(fj_config_check(&c, &err), FJ_OK, "%s", err.message);
}

Test(config, retention_contradictions_refused)
{
    fj_config c;
    fj_config_defaults(&c);
    fj_err err = {0};
    fj_config_set(&c, "retention-node-samples", "30d", &err);
    fj_config_set(&c, "retention-process-samples", "40d", &err);
    cr_assert_eq(fj_config_check(&c, &err), FJ_EINVAL);
    cr_assert_str_eq(err.path, "retention-process-samples");
    fj_config_set(&c, "retention-process-samples", "0", &err); /* forever, beyond 30 days */
    cr_assert_eq(fj_config_check(&c, &err), FJ_EINVAL);
    fj_config_set(&c, "retention-process-samples", "30d", &err);
    cr_assert_eq(fj_config_check(&c, &err), FJ_OK, "%s", err.message);
    fj_config_set(&c, "metrics-retention", "7d", &err);
    fj_config_set(&c, "retention-metrics", "8d", &err);
    cr_assert_eq(fj_config_check(&c, &err), FJ_EINVAL);
    cr_assert_str_eq(err.path, "retention-metrics");
}

/* group-commit-ms = auto (the default) waits only where a commit waits for the disk. */
Test(config, group_commit_auto_waits_where_commits_reach_the_disk)
{
    fj_config c;
    fj_config_defaults(&c);
    cr_assert_eq(c.group_commit_ms, FJ_GROUP_COMMIT_AUTO);
    cr_assert_eq(fj_config_group_commit_ms(&c), 0, "SQLite, synchronous=NORMAL: no wait");
    fj_err err = {0};
    cr_assert_eq(fj_config_set(&c, "synchronous", "FULL", &err), FJ_OK, "%s", err.message);
    cr_assert_eq(fj_config_group_commit_ms(&c), 2, "SQLite, synchronous=FULL: 2 ms");
    cr_assert_eq(fj_config_set(&c, "synchronous", "NORMAL", &err), FJ_OK);
    cr_assert_eq(fj_config_set(&c, "db", "postgresql://fjord@127.0.0.1/fjord", &err), FJ_OK);
    cr_assert_eq(fj_config_group_commit_ms(&c), 2, "PostgreSQL: 2 ms");
    cr_assert_eq(fj_config_set(&c, "group-commit-ms", "5", &err), FJ_OK);
    cr_assert_eq(fj_config_group_commit_ms(&c), 5, "a number set is kept");
    cr_assert_eq(fj_config_set(&c, "group-commit-ms", "auto", &err), FJ_OK);
    cr_assert_eq(c.group_commit_ms, FJ_GROUP_COMMIT_AUTO);
    cr_assert_eq(fj_config_set(&c, "group-commit-ms", "4294967295", &err), FJ_EINVAL, "auto's value is not a count");
    cr_assert_eq(fj_config_set(&c, "threads", "auto", &err), FJ_EINVAL, "only an option that names auto takes it");
}

/* writers = auto (the default): two writer connections on PostgreSQL, SQLite's one; SQLite takes
 * no more than one. */
Test(config, writers_auto_two_on_postgres_one_on_sqlite)
{
    fj_config c;
    fj_config_defaults(&c);
    fj_err err = {0};
    cr_assert_eq(c.writers, FJ_WRITERS_AUTO);
    cr_assert_eq(fj_config_writers(&c), 1, "SQLite: one writer");
    cr_assert_eq(fj_config_set(&c, "writers", "2", &err), FJ_OK, "%s", err.message);
    cr_assert_eq(fj_config_check(&c, &err), FJ_EINVAL, "SQLite refuses a second writer");
    cr_assert_str_eq(err.path, "writers");
    cr_assert_eq(fj_config_set(&c, "db", "postgres://fjord@127.0.0.1/fjord", &err), FJ_OK);
    cr_assert_eq(fj_config_check(&c, &err), FJ_OK, "%s", err.message);
    cr_assert_eq(fj_config_writers(&c), 2, "a number set is kept");
    cr_assert_eq(fj_config_set(&c, "writers", "auto", &err), FJ_OK);
    cr_assert_eq(fj_config_writers(&c), 2, "PostgreSQL: two writers");
    cr_assert_eq(fj_config_set(&c, "writers", "17", &err), FJ_OK);
    cr_assert_eq(fj_config_check(&c, &err), FJ_EINVAL, "at most 16");
    cr_assert_eq(fj_config_set(&c, "writers", "0", &err), FJ_OK);
    cr_assert_eq(fj_config_check(&c, &err), FJ_EINVAL, "at least 1");
}

Test(config, keepalive_and_linger)
{
    fj_config c;
    fj_config_defaults(&c);
    cr_assert_eq(c.keepalive_timeout_s, 60);
    cr_assert_eq(c.linger_timeout_s, 5);
    cr_assert_eq(c.linger_bytes, (size_t)8 << 20);
    fj_err err = {0};
    cr_assert_eq(fj_config_set(&c, "keepalive-timeout", "75", &err), FJ_OK);
    cr_assert_eq(fj_config_set(&c, "linger-bytes", "2M", &err), FJ_OK);
    cr_assert_eq(c.linger_bytes, (size_t)2 << 20);
    cr_assert_eq(fj_config_check(&c, &err), FJ_OK, "%s", err.message);
    /* fjord-push keeps a margin below the announced limit: 1 s leaves none */
    cr_assert_eq(fj_config_set(&c, "keepalive-timeout", "1", &err), FJ_OK);
    cr_assert_eq(fj_config_check(&c, &err), FJ_EINVAL);
    cr_assert(strstr(err.message, "keepalive-timeout"));
    cr_assert_eq(fj_config_set(&c, "keepalive-timeout", "60", &err), FJ_OK);
    cr_assert_eq(fj_config_set(&c, "linger-timeout", "0", &err), FJ_OK); /* off */
    cr_assert_eq(fj_config_check(&c, &err), FJ_OK);
    cr_assert_eq(fj_config_set(&c, "linger-timeout", "301", &err), FJ_OK);
    cr_assert_eq(fj_config_check(&c, &err), FJ_EINVAL);
}
