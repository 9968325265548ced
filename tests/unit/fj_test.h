/* fj_test.h — small helpers shared by the unit tests. FJ_SOURCE_DIR and FJ_SHARED_DIR are defined
 * by tests/CMakeLists.txt (the checkout and the shared data beside it). */
#ifndef FJ_TEST_H
#define FJ_TEST_H

#include <stdio.h>
#include <stdlib.h>

/* The whole file, NUL-terminated, in malloc'd memory (free with free()); NULL if unreadable. */
static inline char *fj_test_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    if (buf) {
        buf[n] = '\0';
        *len = (size_t)n;
    }
    return buf;
}

#endif
