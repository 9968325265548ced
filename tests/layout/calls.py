#!/usr/bin/env python3
"""Which source files call which, in every library and program of the tree (common/, ingest/,
storage/, api/, server/, app/, pusher/): read off the object files' symbol tables (nm), so it is
the call graph the linker sees, not what the headers declare. Prints every circle of files that
call each other (a strongly connected component of more than one file) and, with --check, exits
1 if there is one: every file calls down, never back up.

It also holds the folders to their floors (LAYERS): a file calls and includes only files of its
own folder or of folders on a lower floor, never one beside it or above. The tree's libraries
stack app/ > api/ > server/ > storage/ > ingest/ > common/ (the pusher beside ingest/, over
common/ only), and storage/ is stacked inside: core/ (the engine's door and the driver contract)
at the bottom, then ts/, query/, chimbuko/, the backends sqlite/ and pg/ (beside each other), and
backends.c (the choice among them) at the top. Includes are read from the sources (a header
calls nothing the linker sees); an include without a folder (common/'s) names no floor.

    tests/layout/calls.py BUILD_DIR [--check] [--edges]
"""
import os
import re
import subprocess
import sys
from collections import defaultdict


SOURCE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


# The targets' object folders in the build tree and the source folder their paths start from.
TARGETS = [
    ("CMakeFiles/fj_common.dir", ""),
    ("CMakeFiles/fj_ingest.dir", ""),
    ("CMakeFiles/fj_storage.dir", ""),
    ("CMakeFiles/fj_api.dir", ""),
    ("CMakeFiles/fj_server.dir", ""),
    ("CMakeFiles/fjord.dir", ""),
    ("pusher/CMakeFiles/fj_pusher.dir", "pusher/"),
    ("pusher/CMakeFiles/fjord-push.dir", "pusher/"),
]


# The floors, lowest first; folders on one floor may not reach each other.
LAYERS = [
    ["common/"],
    ["ingest/", "pusher/"],
    ["storage/core/"],
    ["storage/ts/"],
    ["storage/query/"],
    ["storage/chimbuko/"],
    ["storage/sqlite/", "storage/pg/"],
    ["storage/backends.c"],
    ["server/"],
    ["api/"],
    ["app/"],
]


def floor_of(path):
    """(floor, folder) of a source path: its longest prefix in LAYERS; None outside them."""
    best = None
    for rank, folders in enumerate(LAYERS):
        for f in folders:
            if path.startswith(f) and (best is None or len(f) > len(best[1])):
                best = (rank, f)
    return best


def layer_breaks(edges_by_path, includes):
    """Every call or include that goes beside or above its file's floor."""
    out = []
    for kind, pairs in (("calls", edges_by_path), ("includes", includes)):
        for a, b in pairs:
            fa, fb = floor_of(a), floor_of(b)
            if not fa or not fb or fa[1] == fb[1]:
                continue
            if fb[0] >= fa[0]:
                out.append("%s %s %s: %s is %s %s" % (a, kind, b, fb[1], "beside" if fb[0] == fa[0] else "above", fa[1]))
    return sorted(set(out))


INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def includes():
    """(source file, header) for every include that names a folder of LAYERS."""
    out = []
    for top in ("common", "ingest", "storage", "server", "api", "app", "pusher"):
        for folder, _, files in os.walk(os.path.join(SOURCE, top)):
            for f in files:
                if not f.endswith((".c", ".h")):
                    continue
                path = os.path.relpath(os.path.join(folder, f), SOURCE)
                with open(os.path.join(SOURCE, path), encoding="utf-8", errors="replace") as fh:
                    for h in INCLUDE.findall(fh.read()):
                        if floor_of(h):
                            out.append((path, h))
    return out


def objects(build):
    """{source path: (defined symbols, undefined symbols)}, from the object files CMake leaves in
    the build tree (an archive would lose their folders)."""
    defs, uses = {}, {}
    for target, prefix in TARGETS:
        top = os.path.join(build, target)
        for folder, _, files in os.walk(top):
            for f in files:
                if not f.endswith(".c.o"):
                    continue
                path = os.path.join(folder, f)
                name = prefix + os.path.relpath(path, top)[: -len(".o")]
                if not os.path.exists(os.path.join(SOURCE, name)):
                    continue  # left in the build tree by a file that has moved or gone
                out = subprocess.run(["nm", path], capture_output=True, text=True, check=True).stdout
                defs[name], uses[name] = set(), set()
                for line in out.splitlines():
                    parts = line.split()
                    if len(parts) == 3 and parts[1] in "TDBR":
                        defs[name].add(parts[2])
                    elif len(parts) == 2 and parts[0] == "U":
                        uses[name].add(parts[1])
    if not any(n.startswith("storage/") for n in defs):
        sys.exit("no object files under %s: build first" % build)
    return defs, uses


def sccs(nodes, edges):
    """Tarjan's strongly connected components."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in nodes:
        if v not in index:
            visit(v)
    return out


def main():
    defs, uses = objects(sys.argv[1])
    owner = {}
    for obj, syms in defs.items():
        for s in syms:
            owner[s] = obj
    names = {obj: obj for obj in defs}
    edges = defaultdict(set)
    for obj, syms in uses.items():
        for s in syms:
            o = owner.get(s)
            if o and o != obj:
                edges[obj].add(o)
    circles = [c for c in sccs(sorted(names), edges) if len(c) > 1]
    breaks = layer_breaks([(a, b) for a in edges for b in edges[a]], includes())
    if "--edges" in sys.argv:
        for a in sorted(edges):
            print("%s -> %s" % (names[a], ", ".join(sorted(names[b] for b in edges[a]))))
    for c in circles:
        print("circle of %d files: %s" % (len(c), " ".join(names[x] for x in c)))
    if not circles:
        print("no circles: each of %d files calls only files that do not call it back" % len(defs))
    for b in breaks:
        print("off its floor: %s" % b)
    if not breaks:
        print("every file calls and includes only its folder and the floors below it")
    sys.exit(1 if (circles or breaks) and "--check" in sys.argv else 0)


main()
