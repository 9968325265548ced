/* hwtopo.h — the node's hardware topology through hwloc: CPU facts for sysinfo, the text and SVG
 * pictures sent as topo_text/topo_svg (rendered here, so no lstopo binary is needed), and the PCI
 * tree for the network topology. Loaded from the live system or from an hwloc XML export (tests,
 * or nodes where an administrator keeps a reviewed export). Not thread-safe. */
#ifndef FJ_PUSH_HWTOPO_H
#define FJ_PUSH_HWTOPO_H

#include "arena.h"
#include "buf.h"
#include "procfs.h"

struct hwloc_topology;
typedef struct fj_hwtopo fj_hwtopo;

/* xml NULL: the live system, with important I/O devices. NULL with why filled on failure. */
fj_hwtopo *fj_hwtopo_load(const char *xml, char why[160]);
void fj_hwtopo_free(fj_hwtopo *t);

/* Overwrites sockets, cores per socket, threads per core, NUMA node count and distances (and the
 * model and memory when they are still empty) with what hwloc knows. */
void fj_hwtopo_cpu_facts(fj_hwtopo *t, fj_arena *a, fj_cpu_facts *f);

/* Human-readable tree, one object per line, two spaces per level (lstopo's console style). */
fj_status fj_hwtopo_text(fj_hwtopo *t, fj_buf *out);

/* A self-contained SVG drawing of nested boxes (lstopo's style, simplified). */
fj_status fj_hwtopo_svg(fj_hwtopo *t, fj_buf *out);

/* The hwloc topology itself, for pcitree.c. */
struct hwloc_topology *fj_hwtopo_raw(fj_hwtopo *t);

#endif
