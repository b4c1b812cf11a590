#!/usr/bin/env python3
"""Import cycles between sibling modules of a Rust crate (docs/build.md).

Reads every .rs file under SRC (the crate's src/ directory), resolves each
`crate::…`, `super::…` and `self::…` path (in `use` items and in code) to
the module it names, follows `use`/`pub use` re-exports of a child module's
items one step (so `super::Flow` re-exported from `flows` counts as an edge
to `flows`), and lifts every reference to the two sibling modules under the
modules' lowest common ancestor. A strongly connected component of more
than one sibling is a cycle; each is printed with the references making it.
A test module (`tests`, `#[cfg(test)] mod …` inline) is left out: it may
use anything. A module declared with `#[path = "…"]` is placed where its
declaration puts it, not where its file lies (`#[path = "uet/mod.rs"] pub
mod uet;` in `wire/registry.rs` is `wire::registry::uet`, and so are the
files under `wire/uet/`); a path naming it where its file lies (through a
re-export) resolves to it.

    scripts/module-cycles.py userspace/src [ebpf/rocescope-ebpf/src ...]
    scripts/module-cycles.py --edges userspace/src     (every sibling edge)

Exit status 1 when any cycle is found.
"""

import os
import re
import sys
from collections import defaultdict

ROOTS = ("lib.rs", "main.rs")


def module_of(src, path):
    rel = os.path.relpath(path, src)[:-3].split(os.sep)
    if rel[-1] in ("lib", "main") and len(rel) == 1:
        return ()
    if rel[-1] == "mod":
        rel = rel[:-1]
    return tuple(rel)


PATH_ATTR = re.compile(
    r'#\[path\s*=\s*"([^"]+)"\]\s*(?:#\[[^\]]*\]\s*)*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;'
)


def relocations(src, raw):
    """Default module (where the file lies) -> module its `#[path]`
    declaration makes it, for every file so declared. A path is relative to
    the directory of the file declaring it."""
    moved = {}

    def real(mod):
        for k in range(len(mod), 0, -1):
            if mod[:k] in moved:
                return moved[mod[:k]] + mod[k:]
        return mod

    for _ in range(8):  # declarations inside relocated files: to a fixpoint
        before = dict(moved)
        for p, text in raw.items():
            code = re.sub(r"//[^\n]*", "", text)
            for m in PATH_ATTR.finditer(code):
                target = os.path.normpath(os.path.join(os.path.dirname(p), m.group(1)))
                moved[module_of(src, target)] = real(module_of(src, p)) + (m.group(2),)
        if moved == before:
            break
    return moved, real


def strip(text):
    """Code without comments, strings and inline #[cfg(test)] modules."""
    text = re.sub(r"//[^\n]*", "", text)
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    text = re.sub(r'"(?:\\.|[^"\\])*"', '""', text)
    out, i = [], 0
    for m in re.finditer(r"#\[cfg\(test\)\]\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+\w+\s*\{", text):
        if m.start() < i:
            continue
        out.append(text[i : m.start()])
        depth, j = 1, m.end()
        while j < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[j], 0)
            j += 1
        i = j
    out.append(text[i:])
    return "".join(out)


def use_trees(text):
    """(prefix path, leaf name) of every `use` item, braces expanded."""
    for m in re.finditer(r"\buse\s+([^;]+);", text):
        yield from expand(m.group(1).replace("\n", " ").replace(" ", ""), [])


def expand(tree, prefix):
    if "{" not in tree:
        parts = tree.split("as")[0] if "::" not in tree.split("as")[-1] else tree
        parts = re.split(r"::", re.sub(r"as\w+$", "", tree))
        yield prefix + parts
        return
    head, _, rest = tree.partition("{")
    inner = rest[: rest.rfind("}")]
    base = prefix + [p for p in head.split("::") if p]
    depth, cur = 0, ""
    for ch in inner + ",":
        if ch == "," and depth == 0:
            if cur:
                yield from expand(cur, base)
            cur = ""
            continue
        depth += {"{": 1, "}": -1}.get(ch, 0)
        cur += ch


def main(argv):
    show_edges = "--edges" in argv
    srcs = [a for a in argv if not a.startswith("--")]
    found = False
    for src in srcs:
        raw = {}
        for d, _, names in os.walk(src):
            for n in names:
                if n.endswith(".rs"):
                    p = os.path.join(d, n)
                    raw[p] = open(p, encoding="utf-8").read()
        moved, real = relocations(src, raw)
        files = {}
        for p, text in raw.items():
            mod = real(module_of(src, p))
            if "tests" in mod:
                continue
            files[mod] = strip(text)
        modules = set(files)
        # Where a relocated module's file lies: a path naming it there (a
        # re-export keeps such paths working) means the module itself.
        aliases = {d: r for d, r in moved.items() if d not in modules and r in modules}
        # Imports: item name in module M -> the module it comes from (a
        # child's item, or a `use crate::…`/`super::…` one), followed below
        # when another module names the item through M.
        reexport = defaultdict(dict)
        for mod, text in files.items():
            for path in use_trees(text):
                if len(path) < 2 or path[-1] in ("self", "*"):
                    continue
                if mod + (path[0],) in modules:
                    reexport[mod][path[-1]] = mod + (path[0],)
                elif path[0] in ("crate", "super", "self"):
                    reexport[mod][path[-1]] = tuple(path[:-1])  # resolved later
        for mod in list(reexport):
            for name, target in list(reexport[mod].items()):
                if target and target[0] in ("crate", "super", "self"):
                    cur = () if target[0] == "crate" else mod
                    for part in target:
                        if part == "super":
                            cur = cur[:-1]
                        elif part in ("crate", "self"):
                            continue
                        elif cur + (part,) in modules:
                            cur = cur + (part,)
                        else:
                            break
                    reexport[mod][name] = cur

        def resolve(mod, path):
            if not path:
                return None
            if path[0] == "crate":
                cur, rest = (), path[1:]
            elif path[0] in ("super", "self"):
                cur, rest = mod, path
                while rest and rest[0] in ("super", "self"):
                    if rest[0] == "super":
                        cur = cur[:-1]
                    rest = rest[1:]
            else:
                return None
            for name in rest:
                if cur + (name,) in modules:
                    cur = cur + (name,)
                elif cur + (name,) in aliases:
                    cur = aliases[cur + (name,)]
                elif name in reexport.get(cur, {}) and reexport[cur][name] != cur:
                    return reexport[cur][name]
                else:
                    break
            return cur

        refs = defaultdict(set)
        for mod, text in files.items():
            paths = [p for p in use_trees(text)]
            for m in re.finditer(r"\b((?:crate|super|self)(?:::\w+)+)", text):
                paths.append(m.group(1).split("::"))
            for p in paths:
                target = resolve(mod, p)
                if target is None or target == mod:
                    continue
                k = 0
                while k < min(len(mod), len(target)) and mod[k] == target[k]:
                    k += 1
                if k == len(mod) or k == len(target):
                    continue  # a module and its own ancestor or descendant
                parent = mod[:k]
                refs[(parent, mod[k], target[k])].add(("::".join(mod) or "crate", "::".join(target)))

        graph = defaultdict(set)
        for parent, a, b in refs:
            graph[parent, a].add((parent, b))
        if show_edges:
            for parent, a, b in sorted(refs):
                print(f"{src}: {'::'.join(parent) or 'crate'}: {a} -> {b}")
        # Tarjan's strongly connected components over the sibling edges.
        index, low, stack, on, sccs, counter = {}, {}, [], set(), [], [0]

        def visit(v):
            index[v] = low[v] = counter[0]
            counter[0] += 1
            stack.append(v)
            on.add(v)
            for w in graph[v]:
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
                if len(comp) > 1:
                    sccs.append(sorted(comp))

        sys.setrecursionlimit(10000)
        for v in list(graph):
            if v not in index:
                visit(v)
        for comp in sccs:
            found = True
            parent = comp[0][0]
            names = [c[1] for c in comp]
            print(f"{src}: cycle under {'::'.join(parent) or 'crate'}: {' <-> '.join(names)}")
            for a in names:
                for b in names:
                    for frm, to in sorted(refs.get((parent, a, b), ())):
                        print(f"    {frm} uses {to}")
        if not sccs:
            print(f"{src}: no cycles ({len(modules)} modules)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
