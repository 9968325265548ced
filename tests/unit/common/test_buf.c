/* Tests of common/buf.c and common/arena.c: caps are hard, nothing is truncated. */
#include "alloc.h"
#include "arena.h"
#include "buf.h"

#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

Test(buf, cap_is_hard_and_leaves_contents)
{
    fj_buf b;
    fj_buf_init(&b, 10);
    cr_assert_eq(fj_buf_puts(&b, "12345"), FJ_OK);
    cr_assert_eq(fj_buf_puts(&b, "67890"), FJ_OK);
    cr_assert_eq(b.len, 10);
    cr_assert_eq(fj_buf_append(&b, "x", 1), FJ_ETOOBIG);
    cr_assert_eq(b.len, 10);
    cr_assert_str_eq(b.data, "1234567890");
    fj_buf_free(&b);
}

/* A document written piece by piece must not come out with a piece missing: once an append
 * failed, a later shorter one that would fit fails too, until reset. */
Test(buf, errors_are_sticky_until_reset)
{
    fj_buf b;
    fj_buf_init(&b, 10);
    cr_assert_eq(fj_buf_puts(&b, "{\"h\":"), FJ_OK);
    cr_assert_eq(fj_buf_json_str(&b, "far too long a value"), FJ_ETOOBIG);
    cr_assert_eq(fj_buf_puts(&b, "}"), FJ_ETOOBIG);
    cr_assert_eq(fj_buf_printf(&b, "%d", 1), FJ_ETOOBIG);
    cr_assert_eq(fj_buf_status(&b), FJ_ETOOBIG);
    cr_assert(b.len <= 10 && !strchr(b.data, '}'), "nothing appended after the failure: %s", b.data);
    fj_buf_reset(&b);
    cr_assert_eq(fj_buf_status(&b), FJ_OK);
    cr_assert_eq(fj_buf_puts(&b, "ok"), FJ_OK);
    cr_assert_str_eq(b.data, "ok");
    fj_buf_free(&b);
}

Test(buf, json_strings_are_escaped)
{
    fj_buf b;
    fj_buf_init(&b, 1024);
    fj_buf_json_str(&b, "a\"b\\c\n\x01é");
    cr_assert_str_eq(b.data, "\"a\\\"b\\\\c\\n\\u0001é\"");
    fj_buf_free(&b);
}

Test(buf, out_of_memory_is_reported)
{
    fj_buf b;
    fj_buf_init(&b, 1 << 20);
    fj_alloc_fail_after(0);
    fj_status st = fj_buf_puts(&b, "hello");
    fj_alloc_fail_after(-1);
    cr_assert_eq(st, FJ_ENOMEM);
    cr_assert_eq(b.len, 0);
    fj_buf_free(&b);
}

Test(arena, allocations_are_aligned_and_independent)
{
    fj_arena *a = fj_arena_create();
    char *big = fj_arena_alloc(a, 300 * 1024); /* a chunk of its own */
    memset(big, 'x', 300 * 1024);
    for (int i = 0; i < 10000; i++) {
        double *d = fj_arena_alloc(a, sizeof(double) * 3);
        cr_assert_eq((uintptr_t)d % 16, 0);
        d[0] = d[1] = d[2] = i;
    }
    char *s = fj_arena_printf(a, "%s-%d", "node", 7);
    cr_assert_str_eq(s, "node-7");
    cr_assert_eq(big[300 * 1024 - 1], 'x');
    cr_assert_geq(fj_arena_used(a), 300 * 1024 + 10000 * 32);
    fj_arena_destroy(a);
}
