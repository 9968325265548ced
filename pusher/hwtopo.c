/* hwtopo.c — hwloc loading, CPU facts, and the text/SVG renderings of the topology. */
#include "hwtopo.h"

#include "alloc.h"

#include <hwloc.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct fj_hwtopo {
    hwloc_topology_t topo;
};

/* hwloc dlopens every plugin it finds when the first topology is created: libxml2 (with ICU and
 * libstdc++, which then stays mapped for good), OpenCL, X11/GL and libpciaccess, several MB of
 * resident pages at each sysinfo for nothing we use. Its built-in components cover what we need:
 * the linux component reads CPUs, NUMA and PCI from sysfs, the built-in XML reader takes hwloc's
 * own exports. GPU plugins (nvml, rsmi, levelzero), when installed, still name the GPUs in the
 * pictures. An administrator's own HWLOC_PLUGINS_BLACKLIST is left as it is. */
static void skip_hwloc_plugins(void)
{
    static const char unused[] = "hwloc_xml_libxml,hwloc_opencl,hwloc_gl,hwloc_pci";
    if (!getenv("HWLOC_PLUGINS_BLACKLIST"))
        setenv("HWLOC_PLUGINS_BLACKLIST", unused, 0);
    if (!getenv("HWLOC_PLUGINS_BLOCKLIST")) /* the name in later hwloc releases */
        setenv("HWLOC_PLUGINS_BLOCKLIST", unused, 0);
}

fj_hwtopo *fj_hwtopo_load(const char *xml, char why[160])
{
    why[0] = '\0';
    skip_hwloc_plugins();
    fj_hwtopo *t = fj_calloc(1, sizeof *t);
    if (!t) {
        snprintf(why, 160, "out of memory");
        return NULL;
    }
    if (hwloc_topology_init(&t->topo) != 0) {
        snprintf(why, 160, "hwloc_topology_init failed");
        fj_free(t);
        return NULL;
    }
    if (xml) {
        /* Keep the export's I/O tree exactly as written: bridges are what proximity is made of. */
        hwloc_topology_set_io_types_filter(t->topo, HWLOC_TYPE_FILTER_KEEP_ALL);
        if (hwloc_topology_set_xml(t->topo, xml) != 0) {
            snprintf(why, 160, "cannot use hwloc XML %s", xml);
            goto fail;
        }
    } else {
        hwloc_topology_set_io_types_filter(t->topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
    }
    if (hwloc_topology_load(t->topo) != 0) {
        snprintf(why, 160, "hwloc_topology_load failed%s%s", xml ? " for " : "", xml ? xml : "");
        goto fail;
    }
    return t;
fail:
    hwloc_topology_destroy(t->topo);
    fj_free(t);
    return NULL;
}

void fj_hwtopo_free(fj_hwtopo *t)
{
    if (!t)
        return;
    hwloc_topology_destroy(t->topo);
    fj_free(t);
}

struct hwloc_topology *fj_hwtopo_raw(fj_hwtopo *t)
{
    return t->topo;
}

void fj_hwtopo_cpu_facts(fj_hwtopo *t, fj_arena *a, fj_cpu_facts *f)
{
    int pk = hwloc_get_nbobjs_by_type(t->topo, HWLOC_OBJ_PACKAGE);
    int co = hwloc_get_nbobjs_by_type(t->topo, HWLOC_OBJ_CORE);
    int pu = hwloc_get_nbobjs_by_type(t->topo, HWLOC_OBJ_PU);
    int nn = hwloc_get_nbobjs_by_type(t->topo, HWLOC_OBJ_NUMANODE);
    if (pk < 1)
        pk = 1;
    if (co < 1)
        co = pu > 0 ? pu : 1;
    f->sockets = (unsigned)pk;
    f->cores_per_socket = (unsigned)(co / pk ? co / pk : 1);
    f->threads_per_core = (unsigned)(pu / co ? pu / co : 1);
    f->logical = (unsigned)(pu > 0 ? pu : 0);
    if (nn > 0)
        f->numa_nodes = (unsigned)nn;
    if (!f->model[0]) {
        hwloc_obj_t p = hwloc_get_obj_by_type(t->topo, HWLOC_OBJ_PACKAGE, 0);
        const char *m = p ? hwloc_obj_get_info_by_name(p, "CPUModel") : NULL;
        if (m)
            snprintf(f->model, sizeof f->model, "%s", m);
    }
    if (!f->mem_total_kb)
        f->mem_total_kb = hwloc_get_root_obj(t->topo)->total_memory / 1024;
    /* NUMA distances: the first latency-like matrix over NUMA nodes, rows in os_index order. */
    unsigned nr = 1;
    struct hwloc_distances_s *d = NULL;
    if (nn > 0 && hwloc_distances_get_by_type(t->topo, HWLOC_OBJ_NUMANODE, &nr, &d, 0, 0) == 0 && nr == 1 && d) {
        unsigned n = d->nbobjs;
        uint64_t *m = fj_arena_calloc(a, (size_t)n * n, sizeof *m);
        unsigned order[1024];
        if (m && n <= 1024 && n == (unsigned)nn) {
            for (unsigned i = 0; i < n; i++)
                order[i] = i;
            for (unsigned i = 1; i < n; i++) /* sort object positions by os_index */
                for (unsigned j = i; j > 0 && d->objs[order[j - 1]]->os_index > d->objs[order[j]]->os_index; j--) {
                    unsigned x = order[j];
                    order[j] = order[j - 1];
                    order[j - 1] = x;
                }
            for (unsigned i = 0; i < n; i++)
                for (unsigned j = 0; j < n; j++)
                    m[(size_t)i * n + j] = d->values[(size_t)order[i] * n + order[j]];
            f->distances = m;
        }
        hwloc_distances_release(t->topo, d);
    } else if (d) {
        hwloc_distances_release(t->topo, d);
    }
}

/* "Package L#0", "PU L#3 (P#3)", "PCI 34:00.0 (3D)", "GPU(NVML) nvml0"... */
static void label(hwloc_obj_t o, char *out, size_t n)
{
    char type[64], attr[256];
    hwloc_obj_type_snprintf(type, sizeof type, o, 0);
    attr[0] = '\0';
    hwloc_obj_attr_snprintf(attr, sizeof attr, o, " ", 0);
    switch (o->type) {
    case HWLOC_OBJ_MACHINE:
        snprintf(out, n, "Machine (%lluMB total)", (unsigned long long)(o->total_memory >> 20));
        return;
    case HWLOC_OBJ_PCI_DEVICE:
        snprintf(out, n, "PCI %02x:%02x.%x [%04x:%04x] class %04x", o->attr->pcidev.bus, o->attr->pcidev.dev,
                 o->attr->pcidev.func, o->attr->pcidev.vendor_id, o->attr->pcidev.device_id, o->attr->pcidev.class_id);
        return;
    case HWLOC_OBJ_OS_DEVICE: {
        const char *model = hwloc_obj_get_info_by_name(o, "GPUModel");
        snprintf(out, n, "%s \"%s\"%s%s", type, o->name ? o->name : "", model ? " " : "", model ? model : "");
        return;
    }
    case HWLOC_OBJ_BRIDGE:
        snprintf(out, n, "%s", type);
        return;
    default:
        break;
    }
    int have_l = o->type != HWLOC_OBJ_MACHINE;
    int have_p = o->type == HWLOC_OBJ_PU || o->type == HWLOC_OBJ_NUMANODE;
    char idx[48] = "";
    if (have_l)
        snprintf(idx, sizeof idx, " L#%u", o->logical_index);
    if (have_p && attr[0])
        snprintf(out, n, "%s%s (P#%u %s)", type, idx, o->os_index, attr);
    else if (have_p)
        snprintf(out, n, "%s%s (P#%u)", type, idx, o->os_index);
    else if (attr[0])
        snprintf(out, n, "%s%s (%s)", type, idx, attr);
    else
        snprintf(out, n, "%s%s", type, idx);
}

static fj_status text_rec(hwloc_obj_t o, int depth, fj_buf *out)
{
    char l[512];
    label(o, l, sizeof l);
    fj_status st = fj_buf_printf(out, "%*s%s\n", depth * 2, "", l);
    for (hwloc_obj_t c = o->memory_first_child; c && st == FJ_OK; c = c->next_sibling)
        st = text_rec(c, depth + 1, out);
    for (unsigned i = 0; i < o->arity && st == FJ_OK; i++)
        st = text_rec(o->children[i], depth + 1, out);
    for (hwloc_obj_t c = o->io_first_child; c && st == FJ_OK; c = c->next_sibling)
        st = text_rec(c, depth + 1, out);
    return st;
}

fj_status fj_hwtopo_text(fj_hwtopo *t, fj_buf *out)
{
    return text_rec(hwloc_get_root_obj(t->topo), 0, out);
}

/* --- SVG: each object is a box holding its label and, below it, its children: CPU-side children
 * side by side, memory and I/O children stacked. Sizes are recomputed on the way down (trees are a
 * few thousand objects at most; the picture is drawn once a day). */
enum { CHAR_W = 7, LINE_H = 16, PAD = 4, GAP = 4 };

typedef struct box {
    int w, h;
} box;

static box measure(hwloc_obj_t o)
{
    char l[512];
    label(o, l, sizeof l);
    int lw = (int)strlen(l) * CHAR_W + 2 * PAD;
    int row_w = 0, row_h = 0, col_w = 0, col_h = 0;
    for (hwloc_obj_t c = o->memory_first_child; c; c = c->next_sibling) {
        box b = measure(c);
        col_w = b.w > col_w ? b.w : col_w;
        col_h += b.h + GAP;
    }
    for (unsigned i = 0; i < o->arity; i++) {
        box b = measure(o->children[i]);
        row_w += b.w + GAP;
        row_h = b.h > row_h ? b.h : row_h;
    }
    int io_w = 0, io_h = 0;
    for (hwloc_obj_t c = o->io_first_child; c; c = c->next_sibling) {
        box b = measure(c);
        io_w = b.w > io_w ? b.w : io_w;
        io_h += b.h + GAP;
    }
    box r;
    int inner_w = col_w;
    if (row_w - GAP > inner_w)
        inner_w = row_w - GAP;
    if (io_w > inner_w)
        inner_w = io_w;
    r.w = (lw > inner_w + 2 * PAD ? lw : inner_w + 2 * PAD);
    r.h = LINE_H + PAD + col_h + (row_h ? row_h + GAP : 0) + io_h + PAD;
    return r;
}

static const char *fill(hwloc_obj_t o)
{
    switch (o->type) {
    case HWLOC_OBJ_MACHINE: return "#ffffff";
    case HWLOC_OBJ_PACKAGE: return "#dedede";
    case HWLOC_OBJ_NUMANODE: return "#efdfde";
    case HWLOC_OBJ_CORE: return "#bebebe";
    case HWLOC_OBJ_PU: return "#ffffff";
    case HWLOC_OBJ_GROUP: return "#e6e6e6";
    case HWLOC_OBJ_BRIDGE: return "#ffffff";
    case HWLOC_OBJ_PCI_DEVICE: return "#d7ffd7";
    case HWLOC_OBJ_OS_DEVICE: return "#ffe6c8";
    default: return "#f5f5f5"; /* caches and the rest */
    }
}

static fj_status draw(hwloc_obj_t o, int x, int y, fj_buf *out)
{
    box b = measure(o);
    char l[512];
    label(o, l, sizeof l);
    fj_status st = fj_buf_printf(out, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\" stroke=\"#000\"/>\n"
                                      "<text x=\"%d\" y=\"%d\">",
                                 x, y, b.w, b.h, fill(o), x + PAD, y + LINE_H - 3);
    for (const char *p = l; *p && st == FJ_OK; p++) {
        if (*p == '<')
            st = fj_buf_puts(out, "&lt;");
        else if (*p == '>')
            st = fj_buf_puts(out, "&gt;");
        else if (*p == '&')
            st = fj_buf_puts(out, "&amp;");
        else if (*p == '"')
            st = fj_buf_puts(out, "&quot;");
        else
            st = fj_buf_append(out, p, 1);
    }
    if (st == FJ_OK)
        st = fj_buf_puts(out, "</text>\n");
    int cy = y + LINE_H + PAD;
    for (hwloc_obj_t c = o->memory_first_child; c && st == FJ_OK; c = c->next_sibling) {
        st = draw(c, x + PAD, cy, out);
        cy += measure(c).h + GAP;
    }
    int cx = x + PAD, row_h = 0;
    for (unsigned i = 0; i < o->arity && st == FJ_OK; i++) {
        box cb = measure(o->children[i]);
        st = draw(o->children[i], cx, cy, out);
        cx += cb.w + GAP;
        row_h = cb.h > row_h ? cb.h : row_h;
    }
    if (row_h)
        cy += row_h + GAP;
    for (hwloc_obj_t c = o->io_first_child; c && st == FJ_OK; c = c->next_sibling) {
        st = draw(c, x + PAD, cy, out);
        cy += measure(c).h + GAP;
    }
    return st;
}

fj_status fj_hwtopo_svg(fj_hwtopo *t, fj_buf *out)
{
    hwloc_obj_t root = hwloc_get_root_obj(t->topo);
    box b = measure(root);
    fj_status st = fj_buf_printf(out,
                                 "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                                 "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
                                 "font-family=\"monospace\" font-size=\"12\">\n",
                                 b.w + 2, b.h + 2);
    if (st == FJ_OK)
        st = draw(root, 1, 1, out);
    if (st == FJ_OK)
        st = fj_buf_puts(out, "</svg>\n");
    return st;
}
