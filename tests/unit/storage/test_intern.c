/* Tests of storage/core/intern.c: the writers' (namespace, bytes) -> id map. */
#include "storage/core/intern.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

Test(intern, get_put_replace_clear)
{
    fj_intern m = {0};
    cr_assert_eq(fj_intern_get(&m, 0, "a", 1), 0, "an empty map holds nothing");
    cr_assert_eq(fj_intern_put(&m, 0, "a", 1, 7), FJ_OK);
    cr_assert_eq(fj_intern_put(&m, 1, "a", 1, 8), FJ_OK);
    cr_assert_eq(fj_intern_put(&m, 0, "ab", 2, 9), FJ_OK);
    cr_assert_eq(fj_intern_get(&m, 0, "a", 1), 7);
    cr_assert_eq(fj_intern_get(&m, 1, "a", 1), 8, "namespaces keep equal keys apart");
    cr_assert_eq(fj_intern_get(&m, 0, "ab", 2), 9);
    cr_assert_eq(fj_intern_get(&m, 0, "abc", 2), 9, "the key is len bytes");
    cr_assert_eq(fj_intern_get(&m, 2, "a", 1), 0);
    cr_assert_eq(fj_intern_put(&m, 0, "a", 1, -1), FJ_OK);
    cr_assert_eq(fj_intern_get(&m, 0, "a", 1), -1, "put replaces");
    cr_assert_eq(m.n, 3);
    fj_intern_clear(&m);
    cr_assert_eq(m.n, 0);
    cr_assert_eq(fj_intern_get(&m, 0, "ab", 2), 0);
    cr_assert_eq(fj_intern_put(&m, 0, "ab", 2, 3), FJ_OK, "usable after clear");
    cr_assert_eq(fj_intern_get(&m, 0, "ab", 2), 3);
    fj_intern_clear(&m);
}

Test(intern, grows_and_keeps_every_key)
{
    fj_intern m = {0};
    char key[32];
    for (int i = 0; i < 5000; i++) {
        int n = snprintf(key, sizeof key, "node-%d", i);
        cr_assert_eq(fj_intern_put(&m, i % 3, key, (size_t)n, i + 1), FJ_OK);
    }
    cr_assert_eq(m.n, 5000);
    cr_assert_leq(2 * m.n, m.cap, "at most half full");
    for (int i = 0; i < 5000; i++) {
        int n = snprintf(key, sizeof key, "node-%d", i);
        cr_assert_eq(fj_intern_get(&m, i % 3, key, (size_t)n), i + 1);
        cr_assert_eq(fj_intern_get(&m, i % 3 + 1, key, (size_t)n), 0);
    }
    /* binary keys: the writers intern structs of integers */
    int64_t k[2] = {0, 0};
    cr_assert_eq(fj_intern_put(&m, 0, k, sizeof k, 42), FJ_OK);
    cr_assert_eq(fj_intern_get(&m, 0, k, sizeof k), 42);
    k[1] = 1;
    cr_assert_eq(fj_intern_get(&m, 0, k, sizeof k), 0);
    fj_intern_clear(&m);
}
