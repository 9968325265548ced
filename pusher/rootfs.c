/* rootfs.c — files of /proc and /sys read under a root prefix (rootfs.h). */
#include "rootfs.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int fj_rootpath(char *out, size_t n, const char *root, const char *path)
{
    int r;
    if (!root || !*root || !strcmp(root, "/"))
        r = snprintf(out, n, "%s", path);
    else
        r = snprintf(out, n, "%s%s", root, path);
    return r > 0 && (size_t)r < n;
}

fj_status fj_readfile(const char *root, const char *path, fj_buf *b)
{
    char full[4096];
    fj_buf_reset(b);
    if (!fj_rootpath(full, sizeof full, root, path))
        return FJ_EINVAL;
    int fd = open(full, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT || errno == ENOTDIR ? FJ_ENOTFOUND : FJ_EIO;
    char chunk[8192];
    fj_status st = FJ_OK;
    for (;;) {
        ssize_t r = read(fd, chunk, sizeof chunk);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            st = errno == ESRCH ? FJ_ENOTFOUND : FJ_EIO;
            break;
        }
        if (r == 0)
            break;
        st = fj_buf_append(b, chunk, (size_t)r);
        if (st != FJ_OK)
            break;
    }
    close(fd);
    if (st == FJ_OK && !b->data)
        st = fj_buf_append(b, "", 0); /* an empty file still gives a terminated string */
    return st;
}

int fj_readline(const char *root, const char *path, char *out, size_t n)
{
    char full[4096];
    if (!fj_rootpath(full, sizeof full, root, path))
        return 0;
    FILE *f = fopen(full, "re");
    if (!f)
        return 0;
    int ok = fgets(out, (int)n, f) != NULL;
    fclose(f);
    if (!ok) {
        out[0] = '\0';
        return 0;
    }
    size_t len = strlen(out);
    while (len && isspace((unsigned char)out[len - 1]))
        out[--len] = '\0';
    return 1;
}
