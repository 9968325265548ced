/* pusher_bench.c — what one sample costs fjord-push in steady state: the daemon's collector is
 * reused, each iteration collects a sample (/proc + GPUs), writes the Sonar JSON and compresses it
 * with zstd, exactly as the daemon does before queueing it. Reports CPU time per sample and the
 * process's peak RSS. Usage: pusher_bench N [fjord-push flags...] (run by tests/bench/pusher_bench.sh). */
#include "collect.h"
#include "config.h"
#include "send.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static double cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec +
           ((double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_usec) / 1e6;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: pusher_bench N [fjord-push flags]\n");
        return 2;
    }
    long n = atol(argv[1]);
    fj_push_config cfg;
    fj_err err = {.code = ""};
    fj_push_config_init(&cfg);
    argv[1] = argv[0];
    if (fj_push_config_args(&cfg, argc - 1, argv + 1, &err) != FJ_OK) {
        fprintf(stderr, "pusher_bench: %s\n", err.message);
        return 2;
    }
    fj_collector *c = fj_collector_new(&cfg);
    fj_buf json, z;
    fj_buf_init(&json, 64u << 20);
    fj_buf_init(&z, 64u << 20);
    /* one warm-up sample: library loading and first-touch allocations are not per-sample costs */
    if (fj_collect_sample(c, &json, &err) != FJ_OK) {
        fprintf(stderr, "pusher_bench: %s\n", err.message);
        return 1;
    }
    double t0 = cpu_s();
    struct timespec w0, w1;
    clock_gettime(CLOCK_MONOTONIC, &w0);
    size_t bytes = 0, zbytes = 0;
    for (long i = 0; i < n; i++) {
        fj_buf_reset(&json);
        fj_buf_reset(&z);
        if (fj_collect_sample(c, &json, &err) != FJ_OK || fj_zstd_compress(json.data, json.len, &z) != FJ_OK) {
            fprintf(stderr, "pusher_bench: sample failed: %s\n", err.message);
            return 1;
        }
        bytes += json.len;
        zbytes += z.len;
    }
    double t1 = cpu_s();
    clock_gettime(CLOCK_MONOTONIC, &w1);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double wall = (double)(w1.tv_sec - w0.tv_sec) + (double)(w1.tv_nsec - w0.tv_nsec) / 1e9;
    printf("samples %ld\ncpu_ms_per_sample %.3f\nwall_ms_per_sample %.3f\npeak_rss_kb %ld\n"
           "json_bytes_per_sample %zu\nzstd_bytes_per_sample %zu\n",
           n, (t1 - t0) * 1000.0 / (double)n, wall * 1000.0 / (double)n, ru.ru_maxrss, bytes / (size_t)n,
           zbytes / (size_t)n);
    /* Split of the resident set: the program's own memory versus mapped shared-library pages. */
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "VmHWM:", 6) || !strncmp(line, "RssAnon:", 8) || !strncmp(line, "RssFile:", 8))
            fputs(line, stdout);
    if (f)
        fclose(f);
    fj_buf_free(&json);
    fj_buf_free(&z);
    fj_collector_free(c);
    fj_push_config_free(&cfg);
    return 0;
}
