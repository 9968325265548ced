/* test_config.c — option parsing: durations, sizes, the INI file, flags overriding it. */
#include "config.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

Test(config, durations_and_sizes)
{
    cr_assert_eq(fj_parse_duration("30s"), 30);
    cr_assert_eq(fj_parse_duration("5m"), 300);
    cr_assert_eq(fj_parse_duration("24h"), 86400);
    cr_assert_eq(fj_parse_duration("2d"), 172800);
    cr_assert_eq(fj_parse_duration("45"), 45);
    cr_assert_eq(fj_parse_duration("x"), -1);
    cr_assert_eq(fj_parse_duration("5q"), -1);
    cr_assert_eq(fj_parse_duration("5ss"), -1);
    cr_assert_eq(fj_parse_duration("-5"), -1);
    cr_assert_eq(fj_parse_size("64M"), 64ull << 20);
    cr_assert_eq(fj_parse_size("1G"), 1ull << 30);
    cr_assert_eq(fj_parse_size("512k"), 512ull << 10);
    cr_assert_eq(fj_parse_size("100"), 100);
    cr_assert_eq(fj_parse_size("2MB"), 2ull << 20);
    cr_assert_eq(fj_parse_size("12X"), UINT64_MAX);
    cr_assert_eq(fj_parse_size(""), UINT64_MAX);
}

Test(config, defaults)
{
    fj_push_config c;
    cr_assert_eq(fj_push_config_init(&c), FJ_OK);
    cr_assert_eq(c.sample_interval, 30);
    cr_assert_eq(c.sysinfo_interval, 86400);
    cr_assert_eq(c.processes, FJ_PROCS_GPU);
    cr_assert_str_eq(c.nvml_library, "libnvidia-ml.so.1");
    cr_assert_str_eq(c.root, "/");
    cr_assert(c.amd);
    cr_assert_eq(c.what, FJ_WHAT_ALL);
    fj_push_config_free(&c);
}

static char *write_ini(const char *text)
{
    static char path[64];
    snprintf(path, sizeof path, "/tmp/fj-config-XXXXXX");
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    return path;
}

Test(config, ini_then_flags)
{
    char *path = write_ini("[push]\ncluster = from-file\nurl = http://127.0.0.1:9/ingest\nspool_max = 8M\n"
                           "[collect]\nprocesses = all\namd = false\n[schedule]\nsample_interval = 1m\n[log]\nlevel = debug\n");
    fj_push_config c;
    fj_push_config_init(&c);
    char *argv[] = {"fjord-push", "--cluster", "from-flag", "--config", path, "--send-jitter=3s", "--amd", "--once", NULL};
    fj_err err = {.code = ""};
    cr_assert_eq(fj_push_config_args(&c, 8, argv, &err), FJ_OK, "%s", err.message);
    cr_assert_str_eq(c.cluster, "from-flag"); /* a flag wins wherever --config stands */
    cr_assert_str_eq(c.url, "http://127.0.0.1:9/ingest");
    cr_assert_eq(c.spool_max, 8u << 20);
    cr_assert_eq(c.processes, FJ_PROCS_ALL);
    cr_assert(c.amd);
    cr_assert_eq(c.sample_interval, 60);
    cr_assert_eq(c.send_jitter, 3);
    cr_assert_eq(c.log_level, FJ_LOG_DEBUG);
    cr_assert(c.once);
    cr_assert_eq(fj_push_config_check(&c, &err), FJ_OK);
    fj_push_config_free(&c);
    unlink(path);
}

Test(config, errors)
{
    fj_push_config c;
    fj_err err = {.code = ""};
    fj_push_config_init(&c);
    char *bad_flag[] = {"fjord-push", "--colour", "red", NULL};
    cr_assert_eq(fj_push_config_args(&c, 3, bad_flag, &err), FJ_EINVAL);
    char *bad_value[] = {"fjord-push", "--sample-interval", "soon", NULL};
    cr_assert_eq(fj_push_config_args(&c, 3, bad_value, &err), FJ_EINVAL);
    char *bad_procs[] = {"fjord-push", "--processes=some", NULL};
    cr_assert_eq(fj_push_config_args(&c, 2, bad_procs, &err), FJ_EINVAL);
    char *bad_only[] = {"fjord-push", "--only", "jobs", NULL};
    cr_assert_eq(fj_push_config_args(&c, 3, bad_only, &err), FJ_EINVAL);
    char *path = write_ini("[push]\nnope = 1\n");
    cr_assert_eq(fj_push_config_load(&c, path, &err), FJ_EINVAL);
    cr_assert(strstr(err.message, "nope"));
    unlink(path);
    cr_assert_eq(fj_push_config_load(&c, "/nonexistent.ini", &err), FJ_EIO);
    /* Sending needs a cluster and a URL; printing does not. */
    cr_assert_eq(fj_push_config_check(&c, &err), FJ_EINVAL);
    c.to_stdout = 1;
    cr_assert_eq(fj_push_config_check(&c, &err), FJ_OK);
    fj_push_config_free(&c);
}

Test(config, only_and_usage)
{
    fj_push_config c;
    fj_err err = {.code = ""};
    fj_push_config_init(&c);
    char *argv[] = {"fjord-push", "--only", "sample,topology", "--no-amd", "--fake-time", "1700000000", NULL};
    cr_assert_eq(fj_push_config_args(&c, 6, argv, &err), FJ_OK, "%s", err.message);
    cr_assert_eq(c.what, FJ_WHAT_SAMPLE | FJ_WHAT_TOPOLOGY);
    cr_assert(!c.amd);
    cr_assert_eq(c.fixed_time, 1700000000);
    /* Every INI option is documented as a flag. */
    const char *u = fj_push_usage();
    const char *flags[] = {"--cluster", "--url", "--auth-file", "--auth-type", "--ca-file", "--spool-dir", "--spool-max",
                           "--root", "--nvml-library", "--amd", "--processes", "--hwloc-xml", "--sample-interval",
                           "--sysinfo-interval", "--topology-interval", "--send-jitter", "--north-south", "--east-west"};
    for (size_t i = 0; i < sizeof flags / sizeof *flags; i++)
        cr_assert(strstr(u, flags[i]), "usage lacks %s", flags[i]);
    fj_push_config_free(&c);
}
