/* dashboard.h — the web dashboard (web/, docs/dashboard.md), served from the files embedded at build
 * time: the page at / and everything under /ui/. Open routes (no credential: the page asks for one
 * and sends it with its API calls); they take no body.
 *
 *   /ui/assets/NAME   a hashed bundle file: cached for a year, immutable
 *   /ui/FILE          another embedded file (licences): revalidated
 *   / and /ui/...     anything else is the page itself (index.html), whose script routes the view
 *
 * Every answer carries a strict Content-Security-Policy (scripts and styles only from the bundle) and
 * is gzip-compressed when the client accepts it (compressed once, on first use). */
#ifndef FJ_DASHBOARD_H
#define FJ_DASHBOARD_H

#include "server/dashboard_files.h"
#include "server/http.h"

#include <stdbool.h>

/* The route handler for "/" and the "/ui/" prefix. */
void fj_route_dashboard(fj_http_req *r);

/* The embedded file a request path names ("/ui/assets/app-1A2B.js" -> "assets/app-1A2B.js"), the
 * page for "/" and for /ui/ paths outside assets/ that name no file, or NULL (a missing asset). */
const fj_dash_file *fj_dash_lookup(const char *path);

#endif
