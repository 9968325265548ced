#!/usr/bin/env python3
"""Which source files call which, in every library and program of the tree (common/, ingest/,
storage/, api/, server/, app/, pusher/): read off the object files' symbol tables (nm), so it is
the call graph the linker sees, not what the headers declare. Prints every circle of files that
call each other (a strongly connected component of more than one file) and, with --check, exits
1 if there is one: every file calls down, never back up.

    tests/layout/calls.py BUILD_DIR [--check] [--edges]
"""
import os
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
    if "--edges" in sys.argv:
        for a in sorted(edges):
            print("%s -> %s" % (names[a], ", ".join(sorted(names[b] for b in edges[a]))))
    for c in circles:
        print("circle of %d files: %s" % (len(c), " ".join(names[x] for x in c)))
    if not circles:
        print("no circles: each of %d files calls only files that do not call it back" % len(defs))
    sys.exit(1 if circles and "--check" in sys.argv else 0)


main()
