/* ts_series_gen.c — fills a database with many line-protocol series through fjord's own write path
 * (the line-protocol decoder and fj_store_write, as the writer thread runs them; no HTTP), for the
 * start-up benchmark (tests/bench/startup_bench.sh). Series are ClusterCockpit-like: N hosts of one
 * cluster, 100 metrics each at hwthread level over 10 hwthreads, one point each; the clean close
 * seals every buffer, so each series also has a chunk, as series written an hour ago have.
 *
 *   ts_series_gen --db FILE [--series 5000000] [--cluster big]
 */
#include "ingest/cc.h"
#include "storage/core/store.h"
#include "storage/core/store_ts.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PER_BATCH 100000 /* series per transaction */
#define METRICS 100
#define THREADS 10

static const char *arg(int argc, char **argv, const char *name, const char *dflt)
{
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], name))
            return argv[i + 1];
    return dflt;
}

/* Lines for series [from, from + n): series i is host i / 1000, metric i / 10 % 100, thread i % 10. */
static size_t gen(char *out, size_t cap, const char *cluster, long from, long n)
{
    size_t len = 0;
    for (long i = from; i < from + n; i++) {
        int w = snprintf(out + len, cap - len,
                         "m%ld,cluster=%s,hostname=n%06ld,type=hwthread,type-id=%ld value=%ld 1700000000\n",
                         i / THREADS % METRICS, cluster, i / (THREADS * METRICS), i % THREADS, i % 97);
        if (w < 0 || (size_t)w >= cap - len)
            return 0;
        len += (size_t)w;
    }
    return len;
}

int main(int argc, char **argv)
{
    const char *db = arg(argc, argv, "--db", NULL), *cluster = arg(argc, argv, "--cluster", "big");
    long total = atol(arg(argc, argv, "--series", "5000000"));
    if (!db || total <= 0) {
        fprintf(stderr, "usage: ts_series_gen --db FILE [--series N] [--cluster NAME]\n");
        return 2;
    }
    fj_store_opts so = {.mode = FJ_STORE_WRITE, .create = true};
    fj_store *s = NULL;
    fj_err err = {0};
    if (fj_store_open(db, &so, &s, &err) != FJ_OK || fj_store_ts_start(s, &so, &err) != FJ_OK) {
        fprintf(stderr, "ts_series_gen: %s\n", err.message);
        return 1;
    }
    size_t cap = (size_t)PER_BATCH * 128;
    char *text = malloc(cap);
    int rc = 0;
    for (long done = 0; text && done < total && rc == 0; done += PER_BATCH) {
        long n = total - done < PER_BATCH ? total - done : PER_BATCH;
        size_t len = gen(text, cap, cluster, done, n);
        fj_cc_opts o = {.default_cluster = cluster, .unit_ns = 1000000000};
        fj_batch *b = fj_batch_new();
        fj_write_count cnt = {0};
        if (!len || !b || fj_cc_decode(text, len, &o, b, NULL, NULL, NULL, &err) != FJ_OK ||
            fj_store_write(s, &b, 1, &cnt, &err) != FJ_OK) {
            fprintf(stderr, "ts_series_gen: at %ld: %s\n", done, err.message);
            rc = 1;
        }
        fj_batch_free(b);
        if ((done / PER_BATCH) % 10 == 9)
            fprintf(stderr, "%ld series\n", done + n);
    }
    free(text);
    fj_store_close(s); /* seals every buffer: a chunk per series */
    return rc;
}
