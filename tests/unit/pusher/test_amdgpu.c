/* test_amdgpu.c — AMD cards from the amdgpu sysfs fixture tests/data/pusher/node-amd. */
#include "amdgpu.h"

#include <criterion/criterion.h>
#include <string.h>

#define ROOT FJ_SOURCE_DIR "/tests/data/pusher/node-amd"

Test(amdgpu, cards)
{
    fj_arena *a = fj_arena_create();
    fj_gpu_card *c;
    size_t n;
    fj_gpu_errs e = {.n = 0};
    cr_assert_eq(fj_amd_cards(ROOT, "n1", a, &c, &n, &e), FJ_OK);
    cr_assert_eq(n, 2); /* the Intel display card is not an amdgpu card */
    /* PCI address order: 41:00.0 (no readings) before c1:00.0 */
    cr_assert_str_eq(c[0].address, "0000:41:00.0");
    cr_assert_eq(c[0].failing, 1);
    cr_assert_str_eq(c[0].uuid, "SYN-n1-amd-0000:41:00.0");
    cr_assert_eq(c[1].index, 1);
    cr_assert_str_eq(c[1].uuid, "AMD-0x5e2a1f3c4b5d6e7f");
    cr_assert_str_eq(c[1].manufacturer, "AMD");
    cr_assert_str_eq(c[1].model, "AMD Instinct MI300X");
    cr_assert_str_eq(c[1].architecture, "GC 9.4.3");
    cr_assert_str_eq(c[1].driver, "6.7.0");
    cr_assert_str_eq(c[1].firmware, "113-M3000100-102");
    cr_assert_eq(c[1].memory_kb, 206141652992ull / 1024);
    cr_assert_eq(c[1].power_limit, 750);
    cr_assert_eq(c[1].max_power_limit, 750);
    cr_assert_eq(c[1].max_ce_clock, 2100);
    cr_assert_eq(c[1].max_memory_clock, 1300);
    cr_assert_eq(e.n, 1);
    fj_arena_destroy(a);
}

Test(amdgpu, sample)
{
    fj_arena *a = fj_arena_create();
    fj_gpu_state *s;
    size_t n;
    fj_gpu_errs e = {.n = 0};
    cr_assert_eq(fj_amd_sample(ROOT, "n1", a, &s, &n, NULL, &e), FJ_OK);
    cr_assert_eq(n, 2);
    cr_assert_eq(s[0].failing, 1);
    cr_assert_eq(s[1].failing, 0);
    cr_assert_eq(s[1].ce_util, 73);
    cr_assert_eq(s[1].memory_util, 12);
    cr_assert_eq(s[1].memory_kb, 10485760);
    cr_assert_eq(s[1].temperature, 47);
    cr_assert_eq(s[1].power, 350);
    cr_assert_eq(s[1].power_limit, 750);
    cr_assert_eq(s[1].perf_state, 1);
    cr_assert_eq(s[1].ce_clock, 1300);
    cr_assert_eq(s[1].memory_clock, 1300);
    fj_arena_destroy(a);
}

Test(amdgpu, no_cards)
{
    fj_arena *a = fj_arena_create();
    fj_gpu_card *c;
    size_t n = 99;
    cr_assert_eq(fj_amd_cards(FJ_SOURCE_DIR "/tests/data/pusher/node-x86", "n1", a, &c, &n, NULL), FJ_OK);
    cr_assert_eq(n, 0);
    fj_arena_destroy(a);
}
