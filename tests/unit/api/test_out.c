/* Tests of api/out.c: JSON and CSV from the same rows; CSV quoting (RFC 4180); grouped tables nest
 * points; a single-object table; meta members; nulls. */
#include "json.h"
#include "api/out.h"

#include <criterion/criterion.h>
#include <string.h>

static const fj_qcol cols[] = {
    {"name", FJ_VT_TEXT, ""}, {"n", FJ_VT_INT, ""},   {"x", FJ_VT_REAL, ""},
    {"ok", FJ_VT_BOOL, ""},   {"t", FJ_VT_TIME, ""},  {"hosts", FJ_VT_LIST, ""},
    {"raw", FJ_VT_JSON, ""},
};
static const fj_qtable flat = {"rows", cols, 7, 0};
static const fj_qtable grouped = {"series", cols, 7, 2};

static void row(fj_out *o, const char *name, int64_t n, double x, const char *const *hosts, size_t nh)
{
    fj_value v[7] = {
        {.t = name ? FJ_VT_TEXT : FJ_VT_NULL, .s = name},
        {.t = FJ_VT_INT, .i = n},
        {.t = FJ_VT_REAL, .d = x},
        {.t = FJ_VT_BOOL, .i = n & 1},
        {.t = FJ_VT_TIME, .i = 1764064320},
        {.t = FJ_VT_LIST, .list = hosts, .n = nh},
        {.t = FJ_VT_JSON, .s = "[[10,21],[21,10]]"},
    };
    cr_assert_eq(o->sink.row(&o->sink, v), FJ_OK);
}

Test(out, csv_quotes_what_needs_it)
{
    fj_buf b;
    fj_buf_init(&b, 1 << 20);
    cr_assert_eq(fj_csv_cell(&b, "plain"), FJ_OK);
    cr_assert_eq(fj_csv_cell(&b, "a,b"), FJ_OK);
    cr_assert_eq(fj_csv_cell(&b, "say \"hi\""), FJ_OK);
    cr_assert_eq(fj_csv_cell(&b, "two\nlines"), FJ_OK);
    cr_assert_eq(fj_csv_cell(&b, "cr\r"), FJ_OK);
    cr_assert_str_eq(b.data, "plain\"a,b\"\"say \"\"hi\"\"\"\"two\nlines\"\"cr\r\"");
    fj_buf_free(&b);
}

Test(out, csv_rows)
{
    fj_buf b;
    fj_buf_init(&b, 1 << 20);
    fj_out o;
    fj_out_init(&o, &b, true);
    const char *h[] = {"c1", "c2"};
    cr_assert_eq(o.sink.table(&o.sink, &flat), FJ_OK);
    row(&o, "a,\"b\"", 3, 12.3000001, h, 2);
    row(&o, NULL, 4, 0.5, NULL, 0);
    cr_assert_eq(fj_out_meta_int(&o, "ignored", 1), FJ_OK);
    cr_assert_eq(fj_out_finish(&o, true, "CURSOR"), FJ_OK);
    cr_assert_str_eq(b.data, "name,n,x,ok,t,hosts,raw\r\n"
                             "\"a,\"\"b\"\"\",3,12.3,true,2025-11-25T09:52:00Z,\"c1,c2\",\"[[10,21],[21,10]]\"\r\n"
                             ",4,0.5,false,2025-11-25T09:52:00Z,,\"[[10,21],[21,10]]\"\r\n");
    fj_out_free(&o);
    fj_buf_free(&b);
}

Test(out, csv_text_never_becomes_a_formula)
{
    fj_buf b;
    fj_buf_init(&b, 1 << 20);
    const char *cells[] = {"=1+2", "+cmd", "-2+3+cmd|' /C calc'!A0", "@SUM(A1)", "\tx", "\rx",
                           "=HYPERLINK(\"http://x\",\"y\")", "-5", "+1.5", "2e-3", "-", "a=b", "", NULL};
    for (size_t i = 0; cells[i]; i++) {
        cr_assert_eq(fj_csv_text(&b, cells[i]), FJ_OK);
        cr_assert_eq(fj_buf_puts(&b, "|"), FJ_OK);
    }
    cr_assert_str_eq(b.data, "'=1+2|'+cmd|'-2+3+cmd|' /C calc'!A0|'@SUM(A1)|'\tx|\"'\rx\"|"
                             "\"'=HYPERLINK(\"\"http://x\"\",\"\"y\"\")\"|-5|+1.5|2e-3|'-|a=b||");
    fj_buf_free(&b);
}

Test(out, csv_neutralises_text_cells_not_numbers)
{
    fj_buf b;
    fj_buf_init(&b, 1 << 20);
    fj_out o;
    fj_out_init(&o, &b, true);
    const char *h[] = {"=evil", "c2"};
    cr_assert_eq(o.sink.table(&o.sink, &flat), FJ_OK);
    row(&o, "@user", -5, -2.5, h, 2);
    cr_assert_eq(fj_out_finish(&o, false, NULL), FJ_OK);
    cr_assert_str_eq(b.data, "name,n,x,ok,t,hosts,raw\r\n"
                             "'@user,-5,-2.5,true,2025-11-25T09:52:00Z,\"'=evil,c2\",\"[[10,21],[21,10]]\"\r\n");
    fj_out_free(&o);
    fj_buf_free(&b);
}

Test(out, json_rows_parse_back)
{
    fj_buf b;
    fj_buf_init(&b, 1 << 20);
    fj_out o;
    fj_out_init(&o, &b, false);
    const char *h[] = {"c\"1"};
    cr_assert_eq(o.sink.table(&o.sink, &flat), FJ_OK);
    row(&o, "x", 1, 1.0 / 3, h, 1);
    row(&o, NULL, 2, -0.0, NULL, 0);
    cr_assert_eq(fj_out_meta_int(&o, "bucket_s", 60), FJ_OK);
    cr_assert_eq(fj_out_finish(&o, true, NULL), FJ_OK);
    cr_assert_str_eq(b.data,
                     "{\"rows\":[{\"name\":\"x\",\"n\":1,\"x\":0.333,\"ok\":true,\"t\":\"2025-11-25T09:52:00Z\","
                     "\"hosts\":[\"c\\\"1\"],\"raw\":[[10,21],[21,10]]},{\"name\":null,\"n\":2,\"x\":0,\"ok\":false,"
                     "\"t\":\"2025-11-25T09:52:00Z\",\"hosts\":[],\"raw\":[[10,21],[21,10]]}],\"bucket_s\":60,"
                     "\"next\":null}\n");
    fj_arena *a = fj_arena_create();
    fj_json *doc;
    fj_err err = {0};
    cr_assert_eq(fj_json_parse(a, b.data, b.len, NULL, &doc, &err), FJ_OK, "%s", err.message);
    fj_arena_destroy(a);
    fj_out_free(&o);
    fj_buf_free(&b);
}

Test(out, grouped_tables_nest_points)
{
    fj_buf b;
    fj_buf_init(&b, 1 << 20);
    fj_out o;
    fj_out_init(&o, &b, false);
    cr_assert_eq(o.sink.table(&o.sink, &grouped), FJ_OK);
    row(&o, "a", 1, 1, NULL, 0);
    row(&o, "a", 1, 2, NULL, 0);
    row(&o, "a", 2, 3, NULL, 0);
    row(&o, "b", 2, 4, NULL, 0);
    cr_assert_eq(fj_out_finish(&o, false, NULL), FJ_OK);
    fj_arena *a = fj_arena_create();
    fj_json *doc;
    fj_err err = {0};
    cr_assert_eq(fj_json_parse(a, b.data, b.len, NULL, &doc, &err), FJ_OK, "%s: %s", err.message, b.data);
    const fj_json *s = fj_json_get(doc, "series");
    cr_assert(s && s->type == FJ_JSON_ARRAY);
    cr_assert_eq(s->len, 3, "three keys: %s", b.data);
    const fj_json *pts = fj_json_get(&s->v.items[0], "points");
    cr_assert_eq(pts->len, 2);
    cr_assert(fj_json_get(&pts->v.items[0], "x"));
    cr_assert(!fj_json_get(&pts->v.items[0], "name"), "key columns are not repeated in points");
    cr_assert_str_eq(fj_json_get(&s->v.items[2], "name")->v.s, "b");
    cr_assert(!fj_json_get(doc, "next"), "not paged");
    fj_arena_destroy(a);
    fj_out_free(&o);
    fj_buf_free(&b);
}

Test(out, single_object_and_second_table)
{
    fj_buf b;
    fj_buf_init(&b, 1 << 20);
    fj_out o;
    fj_out_init(&o, &b, false);
    o.single = "job";
    cr_assert_eq(o.sink.table(&o.sink, &flat), FJ_OK);
    row(&o, "j", 7, 1, NULL, 0);
    cr_assert_eq(o.sink.table(&o.sink, &grouped), FJ_OK);
    cr_assert_eq(fj_out_finish(&o, false, NULL), FJ_OK);
    cr_assert(strncmp(b.data, "{\"job\":{\"name\":\"j\"", 18) == 0, "%s", b.data);
    cr_assert(strstr(b.data, ",\"series\":[]}"), "%s", b.data);
    fj_out_free(&o);
    fj_buf_free(&b);
}

Test(out, empty_single_is_null_and_caps_hold)
{
    fj_buf b;
    fj_buf_init(&b, 40);
    fj_out o;
    fj_out_init(&o, &b, false);
    o.single = "job";
    cr_assert_eq(o.sink.table(&o.sink, &flat), FJ_OK);
    cr_assert_eq(fj_out_finish(&o, false, NULL), FJ_OK);
    cr_assert_str_eq(b.data, "{\"job\":null}\n");
    fj_out_free(&o);
    fj_buf_free(&b);
    fj_buf_init(&b, 40);
    fj_out_init(&o, &b, false);
    cr_assert_eq(o.sink.table(&o.sink, &flat), FJ_OK);
    fj_value v[7] = {{.t = FJ_VT_TEXT, .s = "a long name that does not fit forty bytes of buffer"}};
    cr_assert_eq(o.sink.row(&o.sink, v), FJ_ETOOBIG);
    cr_assert_eq(fj_out_finish(&o, false, NULL), FJ_ETOOBIG, "the failure sticks");
    fj_out_free(&o);
    fj_buf_free(&b);
}

/* The columns layout: per group an array per column over the query's bucket grid, null where the
 * group has no row, the time column left out; fields picks the columns. */
static const fj_qcol grid_cols[] = {
    {"node", FJ_VT_TEXT, ""}, {"time", FJ_VT_TIME, ""}, {"v", FJ_VT_INT, ""}, {"w", FJ_VT_REAL, ""}};
static const fj_qtable grid_table = {"load", grid_cols, 4, 1};

static void grid_row(fj_out *o, const char *node, fj_time t, int64_t v)
{
    fj_value r[4] = {{.t = FJ_VT_TEXT, .s = node}, {.t = FJ_VT_TIME, .i = t}, {.t = FJ_VT_INT, .i = v},
                     {.t = FJ_VT_REAL, .d = 0.5}};
    cr_assert_eq(o->sink.row(&o->sink, r), FJ_OK);
}

Test(out, columns_layout_over_the_bucket_grid)
{
    fj_buf b;
    fj_buf_init(&b, 1 << 20);
    fj_out o;
    fj_out_init(&o, &b, false);
    /* from and to inside their buckets: the grid is the three buckets 3600, 7200, 10800 */
    fj_query q = {.from = 3600 + 10, .to = 10800 + 5, .bucket_s = 3600};
    static const char *const only_v[] = {"v"};
    fj_out_fields(&o, only_v, 1);
    fj_out_columns(&o, &q);
    cr_assert_eq(o.sink.table(&o.sink, &grid_table), FJ_OK);
    grid_row(&o, "a", 3600, 1);
    grid_row(&o, "a", 10800, 3);
    grid_row(&o, "b", 7200, 2);
    cr_assert_eq(fj_out_finish(&o, false, NULL), FJ_OK);
    cr_assert_str_eq(b.data, "{\"load\":[{\"node\":\"a\",\"v\":[1,null,3]},{\"node\":\"b\",\"v\":[null,2,null]}]}\n");
    fj_out_free(&o);
    fj_buf_free(&b);
}

Test(out, fields_pick_columns_and_keep_key_and_time)
{
    fj_buf b;
    fj_buf_init(&b, 1 << 20);
    fj_out o;
    fj_out_init(&o, &b, true);
    static const char *const only_w[] = {"w"};
    fj_out_fields(&o, only_w, 1);
    cr_assert_eq(o.sink.table(&o.sink, &grid_table), FJ_OK);
    grid_row(&o, "a", 3600, 1);
    cr_assert_eq(fj_out_finish(&o, false, NULL), FJ_OK);
    cr_assert_str_eq(b.data, "node,time,w\r\na,1970-01-01T01:00:00Z,0.5\r\n");
    fj_out_free(&o);
    fj_buf_free(&b);
}
