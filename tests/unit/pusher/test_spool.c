/* test_spool.c — the unsent-data queue: order, cap, persistence across restarts. */
#include "spool.h"

#include "alloc.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void put_n(fj_spool *s, int n, size_t len)
{
    for (int i = 0; i < n; i++) {
        char buf[256];
        memset(buf, 'a' + i, sizeof buf);
        cr_assert_eq(fj_spool_put(s, i % 2 ? FJ_ITEM_MEASUREMENT : FJ_ITEM_SONAR, buf, len), FJ_OK);
    }
}

static char first_byte(fj_spool *s, fj_item_kind *kind, uint64_t *id)
{
    char *d;
    size_t len;
    cr_assert_eq(fj_spool_peek(s, id, kind, &d, &len), FJ_OK);
    char c = d[0];
    fj_free(d);
    return c;
}

Test(spool, memory_cap_drops_oldest)
{
    fj_spool *s;
    cr_assert_eq(fj_spool_open(NULL, 250, &s, NULL), FJ_OK);
    put_n(s, 3, 100);
    cr_assert_eq(fj_spool_count(s), 2);
    cr_assert_eq(fj_spool_bytes(s), 200);
    cr_assert_eq(fj_spool_dropped(s), 1);
    fj_item_kind k;
    uint64_t id;
    cr_assert_eq(first_byte(s, &k, &id), 'b');
    cr_assert_eq(k, FJ_ITEM_MEASUREMENT);
    fj_spool_remove(s, id);
    cr_assert_eq(first_byte(s, &k, &id), 'c');
    fj_spool_remove(s, id);
    char *d;
    size_t len;
    cr_assert_eq(fj_spool_peek(s, &id, &k, &d, &len), FJ_ENOTFOUND);
    char big[300] = {0};
    cr_assert_eq(fj_spool_put(s, FJ_ITEM_SONAR, big, sizeof big), FJ_ETOOBIG);
    fj_spool_close(s);
}

Test(spool, directory_survives_restart)
{
    char dir[] = "/tmp/fj-spool-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char sub[64];
    snprintf(sub, sizeof sub, "%s/q", dir); /* created by open */
    fj_spool *s;
    fj_err err = {.code = ""};
    cr_assert_eq(fj_spool_open(sub, 1 << 20, &s, &err), FJ_OK, "%s", err.message);
    put_n(s, 4, 50);
    fj_spool_close(s);
    cr_assert_eq(fj_spool_open(sub, 1 << 20, &s, &err), FJ_OK);
    cr_assert_eq(fj_spool_count(s), 4);
    cr_assert_eq(fj_spool_bytes(s), 200);
    fj_item_kind k;
    uint64_t id;
    cr_assert_eq(first_byte(s, &k, &id), 'a');
    cr_assert_eq(k, FJ_ITEM_SONAR);
    fj_spool_remove(s, id);
    put_n(s, 1, 10); /* new ids continue after the old ones */
    fj_spool_close(s);
    cr_assert_eq(fj_spool_open(sub, 120, &s, &err), FJ_OK); /* a smaller cap applies on the next put */
    cr_assert_eq(fj_spool_count(s), 4);
    cr_assert_eq(first_byte(s, &k, &id), 'b');
    put_n(s, 1, 10); /* 160 + 10 > 120: 'b' goes, 110 + 10 fits */
    cr_assert_eq(fj_spool_count(s), 4);
    cr_assert_eq(fj_spool_dropped(s), 1);
    cr_assert_eq(first_byte(s, &k, &id), 'c');
    fj_spool_close(s);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}

Test(spool, unusable_directory)
{
    fj_spool *s;
    fj_err err = {.code = ""};
    cr_assert_eq(fj_spool_open("/proc/fj-no-such-dir", 100, &s, &err), FJ_EIO);
    cr_assert_null(s);
}
