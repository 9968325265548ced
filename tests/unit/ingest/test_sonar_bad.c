/* test_sonar_bad.c — every refused Sonar input in tests/data/bad/NN-name.json goes through
 * fj_sonar_decode_body and must be refused with the expected HTTP status and JSON path.
 *
 * A case file is {"path": "/api/v1/insert/<kind>", "body": <envelope, or the raw body as a string>,
 * "status": 400, "error_path": "..."}; the server integration test POSTs the same files to a real
 * server. An object body is re-serialised (integers exactly, reals with %.17g); a string body is
 * sent as is, for bodies that are not valid JSON. An error_path starting with "line " is a JSON
 * syntax error: only the line is compared, the column being the parser's business. */
#include "arena.h"
#include "buf.h"
#include "json.h"
#include "ingest/records/batch.h"
#include "ingest/sonar.h"

#include <criterion/criterion.h>

#include "../fj_test.h"
#include <criterion/logging.h>

#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BAD_DIR FJ_SOURCE_DIR "/tests/data/bad/"

#define read_file fj_test_read_file

static fj_status write_json(fj_buf *b, const fj_json *v)
{
    fj_status st = FJ_OK;
    switch (v->type) {
    case FJ_JSON_NULL:
        return fj_buf_puts(b, "null");
    case FJ_JSON_FALSE:
        return fj_buf_puts(b, "false");
    case FJ_JSON_TRUE:
        return fj_buf_puts(b, "true");
    case FJ_JSON_INT:
        return fj_buf_printf(b, "%lld", (long long)v->v.i);
    case FJ_JSON_UINT:
        return fj_buf_printf(b, "%llu", (unsigned long long)v->v.u);
    case FJ_JSON_REAL:
        return fj_buf_printf(b, "%.17g", v->v.d);
    case FJ_JSON_STRING:
        return fj_buf_json_str(b, v->v.s);
    case FJ_JSON_ARRAY:
        st = fj_buf_puts(b, "[");
        for (size_t i = 0; st == FJ_OK && i < v->len; i++) {
            if (i)
                st = fj_buf_puts(b, ",");
            if (st == FJ_OK)
                st = write_json(b, &v->v.items[i]);
        }
        return st == FJ_OK ? fj_buf_puts(b, "]") : st;
    case FJ_JSON_OBJECT:
        st = fj_buf_puts(b, "{");
        for (size_t i = 0; st == FJ_OK && i < v->len; i++) {
            if (i)
                st = fj_buf_puts(b, ",");
            if (st == FJ_OK)
                st = fj_buf_json_str(b, v->v.members[i].key);
            if (st == FJ_OK)
                st = fj_buf_puts(b, ":");
            if (st == FJ_OK)
                st = write_json(b, &v->v.members[i].value);
        }
        return st == FJ_OK ? fj_buf_puts(b, "}") : st;
    }
    return FJ_EINTERNAL;
}

static int kind_of_route(const char *path)
{
    const char *prefix = "/api/v1/insert/";
    if (strncmp(path, prefix, strlen(prefix)) != 0)
        return -2;
    for (int k = 0; k < FJ_KIND__COUNT; k++)
        if (strcmp(path + strlen(prefix), fj_kind_name((fj_kind)k)) == 0)
            return k;
    return -2;
}

static bool path_matches(const char *got, const char *want)
{
    if (strncmp(want, "line ", 5) == 0) {
        size_t n = strlen(want);
        return strncmp(got, want, n) == 0 && (got[n] == ',' || got[n] == '\0');
    }
    return strcmp(got, want) == 0;
}

/* Runs one case file; returns false (after logging why) when it does not behave as recorded. */
static bool run_case(const char *file)
{
    const char *name = strrchr(file, '/') + 1;
    size_t len;
    char *text = read_file(file, &len);
    cr_assert_not_null(text, "cannot read %s", file);
    fj_arena *a = fj_arena_create();
    fj_json *doc;
    fj_err err = {0};
    cr_assert_eq(fj_json_parse(a, text, len, NULL, &doc, &err), FJ_OK, "%s: %s: %s", name, err.path, err.message);
    const fj_json *route = fj_json_get(doc, "path"), *body = fj_json_get(doc, "body"),
                  *status = fj_json_get(doc, "status"), *epath = fj_json_get(doc, "error_path");
    cr_assert(route && route->type == FJ_JSON_STRING, "%s: path", name);
    cr_assert(body, "%s: body", name);
    cr_assert(status && status->type == FJ_JSON_UINT, "%s: status", name);
    cr_assert(epath && epath->type == FJ_JSON_STRING, "%s: error_path", name);
    int expect = kind_of_route(route->v.s);
    cr_assert_neq(expect, -2, "%s: unknown route %s", name, route->v.s);

    fj_buf raw;
    fj_buf_init(&raw, 1 << 20);
    const char *bytes;
    size_t n;
    if (body->type == FJ_JSON_STRING) {
        bytes = body->v.s;
        n = body->len;
    } else {
        cr_assert_eq(write_json(&raw, body), FJ_OK);
        bytes = raw.data;
        n = raw.len;
    }

    fj_batch *b = fj_batch_new();
    fj_err derr = {0};
    fj_status st = fj_sonar_decode_body(bytes ? bytes : "", n, expect, b, NULL, NULL, &derr);
    bool ok = true;
    if (fj_status_http(st) != (int)status->v.u) {
        cr_log_error("%s: status %d, want %llu (%s: %s)", name, fj_status_http(st), (unsigned long long)status->v.u,
                     derr.path, derr.message);
        ok = false;
    } else if (!path_matches(derr.path, epath->v.s)) {
        cr_log_error("%s: error path \"%s\", want \"%s\" (%s)", name, derr.path, epath->v.s, derr.message);
        ok = false;
    } else if (derr.message[0] == '\0') {
        cr_log_error("%s: no message", name);
        ok = false;
    } else if (b->n_envs != 0) {
        cr_log_error("%s: %zu envelopes left in the batch", name, b->n_envs);
        ok = false;
    } else {
        cr_log_info("%s: %s: %s", name, derr.path, derr.message); /* shown with --verbose */
    }
    fj_batch_free(b);
    fj_buf_free(&raw);
    fj_arena_destroy(a);
    free(text);
    return ok;
}

Test(sonar_bad, every_case_is_refused_where_recorded)
{
    glob_t g;
    cr_assert_eq(glob(BAD_DIR "*.json", 0, NULL, &g), 0, "no cases in " BAD_DIR);
    size_t failed = 0;
    for (size_t i = 0; i < g.gl_pathc; i++)
        failed += !run_case(g.gl_pathv[i]);
    cr_expect_geq(g.gl_pathc, 40, "at least 40 bad-input cases");
    cr_expect_eq(failed, 0, "%zu of %zu cases misbehaved (see the log above)", failed, g.gl_pathc);
    globfree(&g);
}
