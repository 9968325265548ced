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

Test(intern, replace_changes_only_a_present_key)
{
    fj_intern m = {0};
    cr_assert_not(fj_intern_replace(&m, 0, "a", 1, 5), "an empty map has no key to replace");
    /* fill to the point where one more put would grow the table: replace must not need that */
    char key[32];
    size_t i = 0;
    do {
        int n = snprintf(key, sizeof key, "k%zu", i++);
        cr_assert_eq(fj_intern_put(&m, 0, key, (size_t)n, -1), FJ_OK);
    } while ((m.n + 1) * 2 <= m.cap);
    size_t cap = m.cap, n = m.n;
    cr_assert(fj_intern_replace(&m, 0, "k0", 2, 7));
    cr_assert_eq(fj_intern_get(&m, 0, "k0", 2), 7);
    cr_assert_eq(m.cap, cap, "no growth");
    cr_assert_eq(m.n, n, "no new entry");
    cr_assert_not(fj_intern_replace(&m, 0, "absent", 6, 7));
    cr_assert_not(fj_intern_replace(&m, 1, "k0", 2, 7), "another namespace");
    cr_assert_eq(fj_intern_get(&m, 0, "absent", 6), 0);
    fj_intern_clear(&m);
}

Test(intern, keys_inline_and_apart_alike)
{
    /* keys up to FJ_INTERN_INLINE bytes live in the slot, longer ones apart: both kinds, at the
     * edge and across a growth, are found, told apart by their last byte, and freed by clear */
    fj_intern m = {0};
    char key[64];
    memset(key, 'x', sizeof key);
    for (size_t len = 0; len < sizeof key; len++)
        cr_assert_eq(fj_intern_put(&m, 5, key, len, (int64_t)len + 1), FJ_OK);
    for (int i = 0; i < 600; i++) /* past the first growth (256 slots) */
        cr_assert_eq(fj_intern_put(&m, 6, &i, sizeof i, i + 1), FJ_OK);
    for (size_t len = 0; len < sizeof key; len++) {
        cr_assert_eq(fj_intern_get(&m, 5, key, len), (int64_t)len + 1, "key of %zu bytes", len);
        if (len == 0)
            continue;
        key[len - 1] = 'y';
        cr_assert_eq(fj_intern_get(&m, 5, key, len), 0, "a key of %zu bytes differing in its last byte", len);
        key[len - 1] = 'x';
    }
    cr_assert_eq(fj_intern_get(&m, 5, key, FJ_INTERN_INLINE), FJ_INTERN_INLINE + 1);
    cr_assert_eq(fj_intern_get(&m, 5, key, FJ_INTERN_INLINE + 1), FJ_INTERN_INLINE + 2);
    fj_intern_clear(&m);
}
