/* Tests of server/dashboard.c: which embedded file a path names, and Accept-Encoding. */
#include "server/codec.h"
#include "server/dashboard.h"
#include "server/dashboard_files.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

static const fj_dash_file *asset(const char *ext)
{
    for (size_t i = 0; i < fj_dash_n_files; i++) {
        const char *p = fj_dash_files[i].path;
        if (strncmp(p, "assets/", 7) == 0 && strcmp(p + strlen(p) - strlen(ext), ext) == 0)
            return &fj_dash_files[i];
    }
    return NULL;
}

Test(dashboard, embeds_the_built_bundle)
{
    const fj_dash_file *page = fj_dash_lookup("/");
    cr_assert_not_null(page);
    cr_assert_str_eq(page->path, "index.html");
    cr_assert_eq(strlen((const char *)page->data), page->len, "NUL-terminated, no NUL inside");
    const fj_dash_file *js = asset(".js"), *css = asset(".css");
    cr_assert(js && css, "a script and a stylesheet under assets/");
    /* the page names exactly these hashed files */
    char want[300];
    snprintf(want, sizeof want, "src=\"/ui/%s\"", js->path);
    cr_assert_not_null(strstr((const char *)page->data, want), "page names %s", js->path);
    snprintf(want, sizeof want, "href=\"/ui/%s\"", css->path);
    cr_assert_not_null(strstr((const char *)page->data, want), "page names %s", css->path);
}

Test(dashboard, paths)
{
    const fj_dash_file *js = asset(".js");
    char path[300];
    snprintf(path, sizeof path, "/ui/%s", js->path);
    cr_assert_eq(fj_dash_lookup(path), js);
    cr_assert_str_eq(fj_dash_lookup("/ui/licenses.txt")->path, "licenses.txt");
    /* a view's address is the page */
    cr_assert_str_eq(fj_dash_lookup("/ui/")->path, "index.html");
    cr_assert_str_eq(fj_dash_lookup("/ui/jobs")->path, "index.html");
    cr_assert_str_eq(fj_dash_lookup("/ui/node/c1-1")->path, "index.html");
    /* an asset that is not here is not the page; nothing outside / and /ui/ */
    cr_assert_null(fj_dash_lookup("/ui/assets/app-OLD.js"));
    cr_assert_null(fj_dash_lookup("/api/v1/jobs"));
    cr_assert_null(fj_dash_lookup("/index.html"));
    cr_assert_null(fj_dash_lookup("/uix/jobs"));
    cr_assert_null(fj_dash_lookup(NULL));
}

Test(dashboard, accept_encoding)
{
    cr_assert(fj_codec_accepts_gzip("gzip"));
    cr_assert(fj_codec_accepts_gzip("gzip, deflate, br, zstd"));
    cr_assert(fj_codec_accepts_gzip("br;q=1.0, GZIP;q=0.8"));
    cr_assert(fj_codec_accepts_gzip("*"));
    cr_assert(fj_codec_accepts_gzip("deflate,gzip;q=0.5"));
    cr_assert_not(fj_codec_accepts_gzip(NULL));
    cr_assert_not(fj_codec_accepts_gzip(""));
    cr_assert_not(fj_codec_accepts_gzip("identity"));
    cr_assert_not(fj_codec_accepts_gzip("gzip;q=0"));
    cr_assert_not(fj_codec_accepts_gzip("gzip;q=0.0, br"));
    cr_assert_not(fj_codec_accepts_gzip("x-gzip2, deflate"));
    cr_assert_not(fj_codec_accepts_gzip("br, deflate;q=0.5"));
}
