/* Tests of storage/core/write_values.c: what record fields become as stored values, the same for both
 * writers (absent numbers, ExtendedUint, note details cut at a UTF-8 boundary, varints, the NUMA
 * distance matrix, blobs, repeated processes of a job, Slurm array and het fields). */
#include "storage/core/write_values.h"

#include <criterion/criterion.h>
#include <string.h>

Test(write_values, zero_means_absent)
{
    cr_assert_eq(fj_wv_nz(0).type, FJ_WV_NULL);
    cr_assert_eq(fj_wv_nz(5).type, FJ_WV_U64);
    cr_assert_eq(fj_wv_id(0).type, FJ_WV_NULL);
    cr_assert_eq(fj_wv_id(7).u.i, 7);
    cr_assert_eq(fj_wv_text(NULL).type, FJ_WV_NULL);
    cr_assert_eq(fj_wv_text("abc").u.s.n, 3);
}

Test(write_values, extended_uint)
{
    cr_assert_eq(fj_wv_xu(FJ_XU_UNSET).type, FJ_WV_NULL);
    cr_assert_eq(fj_wv_xu(0).type, FJ_WV_NULL);
    fj_wval inf = fj_wv_xu(FJ_XU_INFINITE);
    cr_assert_eq(inf.type, FJ_WV_INT);
    cr_assert_eq(inf.u.i, -1);
    cr_assert_eq(fj_wv_xu(3600).u.u, 3600);
}

Test(write_values, note_detail_cut_at_a_character_boundary)
{
    char detail[300];
    memset(detail, 'a', 199);
    strcpy(detail + 199, "\xc3\xa9tail"); /* a two-byte character across byte 200 */
    fj_envelope e = {.kind = FJ_KIND_SAMPLE, .time = 10};
    fj_note n = {.path = "data.x", .kind = NULL, .detail = detail};
    fj_wval v[FJ_WV_NOTE_N];
    fj_wv_note(v, &e, &n);
    cr_assert_eq(v[4].type, FJ_WV_TEXT);
    cr_assert_eq(v[4].u.s.n, 199, "the character is left out whole");
    cr_assert_str_eq(v[3].u.s.p, "", "a note without a kind has an empty one");
    n.detail = "short";
    fj_wv_note(v, &e, &n);
    cr_assert_eq(v[4].u.s.n, 5);
    n.detail = NULL;
    fj_wv_note(v, &e, &n);
    cr_assert_eq(v[4].type, FJ_WV_NULL);
}

Test(write_values, varints)
{
    uint64_t v[] = {0, 127, 128, 300};
    unsigned char out[FJ_WV_VARINTS_MAX(4)];
    size_t n = fj_wv_varints(out, v, 4);
    const unsigned char want[] = {0x00, 0x7f, 0x80, 0x01, 0xac, 0x02};
    cr_assert_eq(n, sizeof want);
    cr_assert_eq(memcmp(out, want, n), 0);
}

Test(write_values, distance_matrix_as_json)
{
    uint64_t d[] = {10, 20, 20, 10};
    fj_sysinfo si = {.distances = d, .distances_dim = 2};
    fj_buf b;
    fj_err err = {0};
    cr_assert_eq(fj_wv_distances_json(&si, &b, &err), FJ_OK);
    cr_assert_eq(b.len, strlen("[[10,20],[20,10]]"));
    cr_assert_eq(memcmp(b.data, "[[10,20],[20,10]]", b.len), 0);
    fj_buf_free(&b);
    si.distances = NULL;
    cr_assert_eq(fj_wv_distances_json(&si, &b, &err), FJ_OK);
    cr_assert_eq(b.len, 0);
    fj_buf_free(&b);
}

Test(write_values, blob_round_trip)
{
    char text[4000];
    for (size_t i = 0; i < sizeof text; i++)
        text[i] = "<svg/>"[i % 6];
    fj_wv_blob b;
    cr_assert_eq(fj_wv_blob_pack(&b, text, sizeof text), FJ_OK);
    cr_assert_str_eq(b.codec, "zstd", "repetitive text compresses");
    cr_assert(b.len < sizeof text);
    cr_assert(fj_wv_blob_equals(b.codec, b.data, b.len, text, sizeof text));
    cr_assert_not(fj_wv_blob_equals(b.codec, b.data, b.len, text, sizeof text - 1));
    fj_wv_blob_free(&b);
    cr_assert_eq(fj_wv_blob_pack(&b, "x", 1), FJ_OK);
    cr_assert_str_eq(b.codec, "none");
    cr_assert(fj_wv_blob_equals(b.codec, b.data, b.len, "x", 1));
    fj_wv_blob_free(&b);
}

Test(write_values, repeated_processes_first_wins)
{
    fj_wv_pkey pk[] = {{5, 1, 9, 0}, {3, 1, 9, 1}, {5, 1, 9, 2}, {5, 1, 8, 3}};
    cr_assert_eq(fj_wv_pkeys_sort(pk, 4), 3);
    cr_assert_eq(pk[0].idx, 1);
    cr_assert_eq(pk[1].idx, 3);
    cr_assert_eq(pk[2].idx, 0, "of two equal keys the first listed comes first");
    cr_assert(fj_wv_pkey_same(&pk[2], &pk[3]));
    cr_assert_eq(fj_wv_pkeys_sort(pk, 0), 0);
}

Test(write_values, slurm_array_task_zero_is_real)
{
    fj_slurm_job j = {.job_id = 7, .array_job_id = 6, .array_task_id = 0};
    fj_wval v[FJ_WV_SLURM_N];
    fj_wv_slurm(v, &j);
    cr_assert_str_eq(v[1].u.s.p, "", "no step is the job itself");
    cr_assert_eq(v[5].type, FJ_WV_U64);
    cr_assert_eq(v[6].type, FJ_WV_U64, "task 0 of an array job is stored");
    cr_assert_eq(v[7].type, FJ_WV_NULL, "no het job");
    cr_assert_eq(v[8].type, FJ_WV_NULL, "so no offset");
    cr_assert_eq(v[FJ_WV_SLURM_N - 1].type, FJ_WV_NULL, "no sacct");
}
