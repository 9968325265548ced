/* noderange.c — Slurm-style host range expansion (Sonar HostnameRange) and the host-name check.
 * One pass parses and validates the whole range before anything is generated, so a refused range
 * costs no output memory and a bomb is refused from its arithmetic, not after allocating it. */
#include "ingest/noderange.h"

#include "alloc.h"
#include "buf.h"

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

/* --- compression: the inverse of expansion ------------------------------------------------- */

/* A name split around its last run of digits. */
typedef struct cname {
    const char *s;
    size_t len;
    size_t pre;    /* bytes before the number; len when there is none */
    size_t digits; /* 0: no number (or one too long to be a range bound) */
    uint64_t v;
    size_t layer;  /* how many names of the group have this number already (n1 with n01) */
} cname;

static int cmp_bytes(const char *a, size_t na, const char *b, size_t nb)
{
    int c = memcmp(a, b, na < nb ? na : nb);
    return c ? c : (na > nb) - (na < nb);
}

/* Group key (text before and after the number, numbered or not), then number, then width. */
static int cmp_cname(const void *pa, const void *pb)
{
    const cname *a = pa, *b = pb;
    int c = cmp_bytes(a->s, a->pre, b->s, b->pre);
    if (c)
        return c;
    size_t ta = a->pre + a->digits, tb = b->pre + b->digits;
    if ((c = cmp_bytes(a->s + ta, a->len - ta, b->s + tb, b->len - tb)))
        return c;
    if ((a->digits > 0) != (b->digits > 0))
        return a->digits > 0 ? 1 : -1;
    if (a->v != b->v)
        return a->v < b->v ? -1 : 1;
    return (a->digits > b->digits) - (a->digits < b->digits);
}

static bool same_group(const cname *a, const cname *b)
{
    return a->digits && b->digits && a->pre == b->pre && memcmp(a->s, b->s, a->pre) == 0 &&
           a->len - a->pre - a->digits == b->len - b->pre - b->digits &&
           memcmp(a->s + a->pre + a->digits, b->s + b->pre + b->digits, a->len - a->pre - a->digits) == 0;
}

static int count_digits(uint64_t v)
{
    int n = 1;
    while (v >= 10) {
        v /= 10;
        n++;
    }
    return n;
}

/* Does the number of c print as written when padded to width (Slurm's rule: the low bound's
 * width pads every number of the item)? */
static bool fits_width(const cname *c, size_t width)
{
    size_t natural = (size_t)count_digits(c->v);
    return c->digits == (natural > width ? natural : width);
}

static fj_status put_bytes(fj_buf *b, const char *s, size_t n)
{
    return n ? fj_buf_append(b, s, n) : FJ_OK;
}

/* Writes one group's names of one layer (sorted by number) as an item. */
static fj_status put_layer(fj_buf *b, const cname *const *v, size_t n)
{
    const cname *f = v[0];
    fj_status st = b->len ? fj_buf_puts(b, ",") : FJ_OK;
    if (st)
        return st;
    if (n == 1)
        return put_bytes(b, f->s, f->len);
    if ((st = put_bytes(b, f->s, f->pre)) || (st = fj_buf_puts(b, "[")))
        return st;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j + 1 < n && v[j + 1]->v == v[j]->v + 1 && fits_width(v[j + 1], v[i]->digits))
            j++;
        if (i && (st = fj_buf_puts(b, ",")))
            return st;
        if ((st = put_bytes(b, v[i]->s + v[i]->pre, v[i]->digits)))
            return st;
        if (j > i && ((st = fj_buf_puts(b, "-")) || (st = put_bytes(b, v[j]->s + v[j]->pre, v[j]->digits))))
            return st;
        i = j + 1;
    }
    size_t tail = f->pre + f->digits;
    if ((st = fj_buf_puts(b, "]")) || (st = put_bytes(b, f->s + tail, f->len - tail)))
        return st;
    return FJ_OK;
}

fj_status fj_noderange_compress(fj_arena *a, const char *const *names, size_t n, char **out, fj_err *err)
{
    fj_status st = FJ_OK;
    cname *c = NULL;
    const cname **layer = NULL;
    fj_buf b;
    fj_buf_init(&b, SIZE_MAX / 2);

    if (n && (!(c = fj_malloc(sizeof *c * n)) || !(layer = fj_malloc(sizeof *layer * n)))) {
        st = fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        const char *s = names[i];
        if (!fj_hostname_valid(s)) {
            st = fj_err_set(err, FJ_EINVAL, NULL, "\"%.64s\" is not a valid host name", s ? s : "(null)");
            goto out;
        }
        cname *x = &c[i];
        memset(x, 0, sizeof *x);
        x->s = s;
        x->len = x->pre = strlen(s);
        size_t end = x->len;
        while (end > 0 && !(s[end - 1] >= '0' && s[end - 1] <= '9'))
            end--;
        size_t start = end;
        while (start > 0 && s[start - 1] >= '0' && s[start - 1] <= '9')
            start--;
        if (end > start && end - start <= MAX_DIGITS) { /* longer runs cannot be range bounds */
            x->pre = start;
            x->digits = end - start;
            for (size_t k = start; k < end; k++)
                x->v = x->v * 10 + (uint64_t)(s[k] - '0');
        }
    }
    if (n)
        qsort(c, n, sizeof *c, cmp_cname);
    /* Duplicates sort next to their twin. */
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (!m || c[i].len != c[m - 1].len || memcmp(c[i].s, c[m - 1].s, c[i].len) != 0)
            c[m++] = c[i];

    for (size_t i = 0; i < m;) {
        if (!c[i].digits) {
            if ((b.len && (st = fj_buf_puts(&b, ","))) || (st = put_bytes(&b, c[i].s, c[i].len)))
                goto out;
            i++;
            continue;
        }
        /* One group [i, j). A number met again (n1, n01) goes one layer up; each layer is an item,
         * since a bracket may not hold a number twice. */
        size_t j = i + 1, n_layers = 1;
        c[i].layer = 0;
        for (; j < m && same_group(&c[i], &c[j]); j++) {
            c[j].layer = c[j].v == c[j - 1].v ? c[j - 1].layer + 1 : 0;
            if (c[j].layer + 1 > n_layers)
                n_layers = c[j].layer + 1;
        }
        for (size_t l = 0; l < n_layers; l++) {
            size_t k = 0;
            for (size_t x = i; x < j; x++)
                if (c[x].layer == l)
                    layer[k++] = &c[x];
            if ((st = put_layer(&b, layer, k)))
                goto out;
        }
        i = j;
    }
    char *r = fj_arena_strndup(a, b.data ? b.data : "", b.len);
    if (!r)
        st = FJ_ENOMEM;
    else
        *out = r;
out:
    if (st != FJ_OK && st != FJ_EINVAL)
        st = fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
    fj_buf_free(&b);
    fj_free(c);
    fj_free(layer);
    return st;
}

fj_status fj_noderange_expand_list(fj_arena *a, const char *list, size_t max_names, char ***out, size_t *n,
                                   fj_err *err)
{
    char **all = NULL;
    size_t total = 0, cap = 0;
    const char *p = list;
    while (*p) { /* "" (what compressing no names gives) is no names */
        /* One item: up to the next comma outside brackets. */
        const char *q = p;
        int depth = 0;
        while (*q && !(*q == ',' && depth == 0)) {
            depth += *q == '[' ? 1 : *q == ']' ? -1 : 0;
            q++;
        }
        if (q == p)
            return fj_err_set(err, FJ_EINVAL, NULL, "bad node list \"%.64s\": empty item at offset %zu", list,
                              (size_t)(p - list));
        char *one = fj_arena_strndup(a, p, (size_t)(q - p));
        if (!one)
            return fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
        char **names;
        size_t k;
        fj_status st = total < max_names ? fj_noderange_expand_max(a, one, max_names - total, &names, &k, err)
                                         : FJ_ETOOBIG;
        if (st == FJ_ETOOBIG)
            return fj_err_set(err, FJ_ETOOBIG, NULL, "node list \"%.64s\" expands to more than %zu names", list,
                              max_names);
        if (st)
            return st;
        if (total + k > cap) {
            size_t nc = cap ? cap * 2 : 16;
            while (nc < total + k)
                nc *= 2;
            char **v = fj_arena_alloc(a, sizeof *v * nc);
            if (!v)
                return fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
            if (total)
                memcpy(v, all, sizeof *v * total);
            all = v;
            cap = nc;
        }
        memcpy(all + total, names, sizeof *names * k);
        total += k;
        if (!*q)
            break;
        if (!q[1])
            return fj_err_set(err, FJ_EINVAL, NULL, "bad node list \"%.64s\": empty item at its end", list);
        p = q + 1;
    }
    *out = all;
    *n = total;
    return FJ_OK;
}
