/* rootfs.h — files read under a root prefix, so that tests point the pusher's readers (procfs.h,
 * container.h, the GPU and topology readers) at fixture trees. Nothing here keeps state. */
#ifndef FJ_PUSH_ROOTFS_H
#define FJ_PUSH_ROOTFS_H

#include "buf.h"
#include "fj_status.h"

#include <stddef.h>

/* Reads root/path (path starts with '/') into b (reset first), at most b->cap bytes.
 * FJ_ENOTFOUND when missing, FJ_EIO when unreadable, FJ_ETOOBIG past the cap. */
fj_status fj_readfile(const char *root, const char *path, fj_buf *b);

/* root/path joined into out (size n); 0 when it did not fit. */
int fj_rootpath(char *out, size_t n, const char *root, const char *path);

/* First line of root/path with trailing whitespace removed, into out (size n). 0 when unreadable. */
int fj_readline(const char *root, const char *path, char *out, size_t n);

#endif
