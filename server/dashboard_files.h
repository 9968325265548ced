/* dashboard_files.h — the web dashboard's built files (web/dist), embedded into the binary at build
 * time by cmake/embed_files.cmake. Immutable, static, readable from any thread. */
#ifndef FJ_DASHBOARD_FILES_H
#define FJ_DASHBOARD_FILES_H

#include <stddef.h>

typedef struct fj_dash_file {
    const char *path;           /* relative to web/dist: "index.html", "assets/app-HASH.js" */
    const unsigned char *data;  /* the bytes (followed by a NUL not counted in len) */
    size_t len;
} fj_dash_file;

extern const fj_dash_file fj_dash_files[];
extern const size_t fj_dash_n_files;

#endif
