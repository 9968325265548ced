#!/usr/bin/env python3
"""Which files of storage/ call which: read off the built library's symbol tables (nm), so it is
the call graph the linker sees, not what the headers declare. Prints every circle of files that
call each other (a strongly connected component of more than one file) and, with --check, exits
1 if there is one: each room of storage/ calls down, never back up.

    tests/layout/calls.py BUILD_DIR [--check] [--edges]
"""
import os
import subprocess
import sys
from collections import defaultdict


SOURCE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def objects(build):
    """{source path under storage/: (defined symbols, undefined symbols)}, from the object files
    CMake leaves in the build tree (the archive would lose their folders)."""
    top = os.path.join(build, "CMakeFiles", "fj_storage.dir", "storage")
    defs, uses = {}, {}
    for folder, _, files in os.walk(top):
        for f in files:
            if not f.endswith(".c.o"):
                continue
            path = os.path.join(folder, f)
            name = "storage/" + os.path.relpath(path, top)[: -len(".o")]
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
    if not defs:
        sys.exit("no object files under %s: build first" % top)
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
        print("no circles: every file of storage/ calls only files that do not call it back")
    sys.exit(1 if circles and "--check" in sys.argv else 0)


main()
