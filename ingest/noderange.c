/* noderange.c — Slurm-style host range expansion (Sonar HostnameRange) and the host-name check.
 * One pass parses and validates the whole range before anything is generated, so a refused range
 * costs no output memory and a bomb is refused from its arithmetic, not after allocating it. */
#include "noderange.h"

#include "alloc.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_DIGITS = 19, LABEL_MAX = 63, PACK_CHUNK = 16 * 1024 };

static bool host_char(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '.';
}

bool fj_hostname_valid(const char *s)
{
    if (!s)
        return false;
    size_t label = 0, i = 0;
    for (; s[i]; i++) {
        unsigned char c = (unsigned char)s[i];
        if (i >= FJ_HOSTNAME_MAX || !host_char(c))
            return false;
        if (c == '.') {
            if (label == 0)
                return false; /* leading dot or ".." */
            label = 0;
        } else if (++label > LABEL_MAX) {
            return false;
        }
    }
    return i > 0 && label > 0; /* nonempty, no trailing dot */
}

typedef struct item {
    uint64_t lo, hi;
    int width; /* digits written for lo, leading zeros included: Slurm's padding width */
} item;

typedef struct group {
    size_t lit_off, lit_len; /* literal text before this group */
    size_t first, n_items;   /* slice of the items array */
} group;

static int cmp_item(const void *pa, const void *pb)
{
    const item *a = pa, *b = pb;
    return a->lo < b->lo ? -1 : a->lo > b->lo;
}

static const char *show_char(char c, char buf[8])
{
    if (c >= 0x21 && c <= 0x7e)
        snprintf(buf, 8, "'%c'", c);
    else
        snprintf(buf, 8, "0x%02x", (unsigned char)c);
    return buf;
}

/* Reads a decimal number at s[*i]; returns its digit count, 0 if none, -1 if too long. */
static int read_number(const char *s, size_t *i, uint64_t *v)
{
    int nd = 0;
    uint64_t x = 0;
    while (s[*i] >= '0' && s[*i] <= '9') {
        if (++nd > MAX_DIGITS)
            return -1;
        x = x * 10 + (uint64_t)(s[*i] - '0');
        (*i)++;
    }
    *v = x;
    return nd;
}

/* Writes v zero-padded to width into p; returns the number of bytes written. */
static size_t put_number(char *p, uint64_t v, int width)
{
    char tmp[24];
    int n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    size_t o = 0;
    for (int k = n; k < width; k++)
        p[o++] = '0';
    while (n)
        p[o++] = tmp[--n];
    return o;
}

/* Names are packed back to back in arena chunks: the arena rounds every allocation up to 16
 * bytes, which would double the memory of a million short names. */
typedef struct packer {
    fj_arena *a;
    char *cur;
    size_t left;
} packer;

static char *pack(packer *pk, const char *s, size_t n)
{
    if (pk->left < n + 1) {
        size_t sz = n + 1 > PACK_CHUNK ? n + 1 : PACK_CHUNK;
        pk->cur = fj_arena_alloc(pk->a, sz);
        if (!pk->cur)
            return NULL;
        pk->left = sz;
    }
    char *r = pk->cur;
    memcpy(r, s, n);
    r[n] = '\0';
    pk->cur += n + 1;
    pk->left -= n + 1;
    return r;
}

fj_status fj_noderange_expand(fj_arena *a, const char *range, char ***out, size_t *n, fj_err *err)
{
    return fj_noderange_expand_max(a, range, FJ_NODERANGE_MAX_NAMES, out, n, err);
}

fj_status fj_noderange_expand_max(fj_arena *a, const char *range, size_t max_names, char ***out,
                                  size_t *n, fj_err *err)
{
    fj_status st = FJ_OK;
    item *items = NULL, *sorted = NULL;
    group *groups = NULL;
    size_t *cur_item = NULL;
    uint64_t *cur_val = NULL;
    char *buf = NULL;
    char cb[8];

    size_t len = strlen(range);
    if (len == 0)
        return fj_err_set(err, FJ_EINVAL, NULL, "empty node range");

    /* Upper bounds: every item and every group takes at least one byte of input. */
    size_t n_brackets = 0;
    for (size_t i = 0; i < len; i++)
        n_brackets += range[i] == '[';
    items = fj_malloc(sizeof *items * (len + 1));
    groups = fj_malloc(sizeof *groups * (n_brackets + 1));
    if (!items || !groups) {
        st = fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
        goto out;
    }

    size_t n_groups = 0, n_items = 0, lit_off = 0, total = 1;
    size_t i = 0;
    while (i < len) {
        char c = range[i];
        if (c == ']') {
            st = fj_err_set(err, FJ_EINVAL, NULL, "bad node range \"%.64s\": unmatched ']' at offset %zu",
                            range, i);
            goto out;
        }
        if (c != '[') {
            if (!host_char((unsigned char)c)) {
                st = fj_err_set(err, FJ_EINVAL, NULL,
                                "bad node range \"%.64s\": character %s at offset %zu is not allowed in a host name",
                                range, show_char(c, cb), i);
                goto out;
            }
            i++;
            continue;
        }
        /* A bracket group: item (',' item)* ']' */
        group *g = &groups[n_groups];
        g->lit_off = lit_off;
        g->lit_len = i - lit_off;
        g->first = n_items;
        size_t open = i++;
        if (range[i] == ']') {
            st = fj_err_set(err, FJ_EINVAL, NULL, "bad node range \"%.64s\": empty brackets at offset %zu",
                            range, open);
            goto out;
        }
        for (;;) {
            if (i >= len) {
                st = fj_err_set(err, FJ_EINVAL, NULL, "bad node range \"%.64s\": unclosed '[' at offset %zu",
                                range, open);
                goto out;
            }
            c = range[i];
            if (c == '[') {
                st = fj_err_set(err, FJ_EINVAL, NULL, "bad node range \"%.64s\": nested '[' at offset %zu",
                                range, i);
                goto out;
            }
            if (c == ',' || c == ']') {
                st = fj_err_set(err, FJ_EINVAL, NULL, "bad node range \"%.64s\": empty item at offset %zu",
                                range, i);
                goto out;
            }
            item *it = &items[n_items];
            size_t at = i;
            int nd = read_number(range, &i, &it->lo);
            if (nd == 0) {
                st = fj_err_set(err, FJ_EINVAL, NULL,
                                "bad node range \"%.64s\": character %s at offset %zu where a number was expected",
                                range, show_char(c, cb), i);
                goto out;
            }
            if (nd < 0) {
                st = fj_err_set(err, FJ_EINVAL, NULL, "bad node range \"%.64s\": number too long at offset %zu",
                                range, at);
                goto out;
            }
            it->width = nd;
            it->hi = it->lo;
            if (range[i] == '-') {
                i++;
                int nh = read_number(range, &i, &it->hi);
                if (nh == 0) {
                    st = fj_err_set(err, FJ_EINVAL, NULL,
                                    "bad node range \"%.64s\": missing high bound at offset %zu", range, i);
                    goto out;
                }
                if (nh < 0) {
                    st = fj_err_set(err, FJ_EINVAL, NULL,
                                    "bad node range \"%.64s\": number too long at offset %zu", range, at);
                    goto out;
                }
                if (it->lo > it->hi) {
                    st = fj_err_set(err, FJ_EINVAL, NULL,
                                    "bad node range \"%.64s\": %llu-%llu at offset %zu has its low bound above its high bound",
                                    range, (unsigned long long)it->lo, (unsigned long long)it->hi, at);
                    goto out;
                }
            }
            n_items++;
            if (range[i] == ',') {
                i++;
                continue;
            }
            if (range[i] == ']') {
                i++;
                break;
            }
            if (i >= len)
                continue; /* reported as unclosed above */
            if (range[i] == '[') {
                st = fj_err_set(err, FJ_EINVAL, NULL, "bad node range \"%.64s\": nested '[' at offset %zu",
                                range, i);
            } else {
                st = fj_err_set(err, FJ_EINVAL, NULL,
                                "bad node range \"%.64s\": character %s at offset %zu inside brackets",
                                range, show_char(range[i], cb), i);
            }
            goto out;
        }
        g->n_items = n_items - g->first;

        /* Count, refusing before the multiplication can overflow. */
        uint64_t count = 0;
        for (size_t k = g->first; k < n_items; k++) {
            uint64_t span = items[k].hi - items[k].lo;
            if (span >= max_names || count + span + 1 > max_names) {
                count = UINT64_MAX;
                break;
            }
            count += span + 1;
        }
        if (count == UINT64_MAX || total > max_names / count) {
            st = fj_err_set(err, FJ_ETOOBIG, NULL, "node range \"%.64s\" expands to more than %zu names",
                            range, max_names);
            goto out;
        }
        total *= (size_t)count;

        /* No number twice in one bracket (Slurm's rule; also keeps the names distinct). */
        if (g->n_items > 1) {
            if (!sorted && !(sorted = fj_malloc(sizeof *sorted * (len + 1)))) {
                st = fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
                goto out;
            }
            memcpy(sorted, items + g->first, sizeof *sorted * g->n_items);
            qsort(sorted, g->n_items, sizeof *sorted, cmp_item);
            for (size_t k = 1; k < g->n_items; k++) {
                if (sorted[k].lo <= sorted[k - 1].hi) {
                    st = fj_err_set(err, FJ_EINVAL, NULL,
                                    "bad node range \"%.64s\": number %llu repeated in the brackets at offset %zu",
                                    range, (unsigned long long)sorted[k].lo, open);
                    goto out;
                }
            }
        }
        n_groups++;
        lit_off = i;
    }
    size_t tail_off = lit_off, tail_len = len - lit_off;

    /* Generate, first group varying slowest. */
    char **names = fj_arena_alloc(a, sizeof *names * total);
    cur_item = fj_calloc(n_groups + 1, sizeof *cur_item);
    cur_val = fj_calloc(n_groups + 1, sizeof *cur_val);
    if (!names || !cur_item || !cur_val) {
        st = fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
        goto out;
    }
    for (size_t g = 0; g < n_groups; g++)
        cur_val[g] = items[groups[g].first].lo;
    /* A name is the literals plus at most MAX_DIGITS per group: len bounds it. */
    buf = fj_malloc(len + n_groups * MAX_DIGITS + 1);
    if (!buf) {
        st = fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
        goto out;
    }
    packer pk = {a, NULL, 0};
    for (size_t k = 0; k < total; k++) {
        size_t o = 0;
        for (size_t g = 0; g <= n_groups; g++) {
            size_t off = g < n_groups ? groups[g].lit_off : tail_off;
            size_t ll = g < n_groups ? groups[g].lit_len : tail_len;
            memcpy(buf + o, range + off, ll);
            o += ll;
            if (g < n_groups)
                o += put_number(buf + o, cur_val[g], items[groups[g].first + cur_item[g]].width);
        }
        buf[o] = '\0';
        if (!fj_hostname_valid(buf)) {
            st = fj_err_set(err, FJ_EINVAL, NULL,
                            "node range \"%.64s\" yields \"%.64s%s\", which is not a valid host name", range, buf,
                            o > 64 ? "..." : "");
            goto out;
        }
        if (!(names[k] = pack(&pk, buf, o))) {
            st = fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
            goto out;
        }
        /* Odometer step. */
        for (size_t g = n_groups; g-- > 0;) {
            const group *gr = &groups[g];
            if (cur_val[g] < items[gr->first + cur_item[g]].hi) {
                cur_val[g]++;
                break;
            }
            cur_item[g] = cur_item[g] + 1 < gr->n_items ? cur_item[g] + 1 : 0;
            cur_val[g] = items[gr->first + cur_item[g]].lo;
            if (cur_item[g] != 0)
                break;
        }
    }
    *out = names;
    *n = total;
out:
    fj_free(items);
    fj_free(sorted);
    fj_free(groups);
    fj_free(cur_item);
    fj_free(cur_val);
    fj_free(buf);
    return st;
}
