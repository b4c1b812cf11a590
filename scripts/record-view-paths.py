#!/usr/bin/env python3
"""Rewrites reads and writes of the fields that left `PacketRecord` for its
transport block (docs/build.md, "The record") to the views' paths, from the
compiler's own errors: `rec.psn` → `rec.roce().psn`, `rec.psn = x` →
`rec.roce_mut().psn = x`, `rec.pfc_quanta` → `rec.link_control().pfc_quanta`,
and struct literals' fields into `..PacketRecord::default().with_roce(RoceView
{ … })`. For merging a branch written against the flat record.

    scripts/record-view-paths.py build -p rocescope --all-targets

Review the result: a write through `roce_mut()` makes a record RoCE's, so a
write meant only for RoCE records (masking the ICRC of every record, say)
needs a check of `rec.transport()` first.
"""
import collections
import json
import subprocess
import sys

ROCE = set(
    "reth_va atomic_va atomic_swap_add atomic_compare atomic_orig dest_qp psn "
    "aeth_msn reth_rkey reth_len imm ieth_rkey deth_qkey deth_src_qp atomic_rkey "
    "icrc pkey opcode pad_count tver aeth_syndrome".split()
)
LINK = set("pfc_quanta pause_quanta pfc_enable".split())


def diagnostics(args, code):
    p = subprocess.run(["cargo"] + args + ["--message-format=json"], capture_output=True, text=True)
    for line in p.stdout.splitlines():
        try:
            m = json.loads(line)
        except ValueError:
            continue
        if m.get("reason") != "compiler-message":
            continue
        msg = m["message"]
        if (msg.get("code") or {}).get("code") == code and "PacketRecord" in msg["message"]:
            yield msg


def is_write(rest):
    rest = rest.lstrip()
    if rest.startswith(b"=") and not rest.startswith((b"==", b"=>")):
        return True
    return rest[:2] in (b"+=", b"-=", b"|=", b"&=", b"^=") or rest.startswith(b".iter_mut(")


def field_paths(args):
    """E0609 (no field on PacketRecord): insert the view's accessor."""
    while True:
        edits = collections.defaultdict(set)
        for msg in diagnostics(args, "E0609"):
            field = msg["message"].split("`")[1]
            view = "roce" if field in ROCE else "link_control" if field in LINK else None
            for sp in msg["spans"]:
                if view and sp["is_primary"]:
                    edits[sp["file_name"]].add((sp["byte_start"], view))
        if not edits:
            return
        for fn, es in edits.items():
            b = open(fn, "rb").read()
            for start, view in sorted(es, reverse=True):
                end = start
                while end < len(b) and (chr(b[end]).isalnum() or b[end] == ord("_")):
                    end += 1
                ins = (view + ("_mut" if is_write(b[end : end + 40]) else "") + "().").encode()
                b = b[:start] + ins + b[start:]
            open(fn, "wb").write(b)


def literals(args):
    """E0560 (no field named … in a PacketRecord literal): one field a line,
    moved into the view's literal on the `..PacketRecord::default()` line."""
    locs = collections.defaultdict(set)
    for msg in diagnostics(args, "E0560"):
        for sp in msg["spans"]:
            if sp["is_primary"]:
                locs[sp["file_name"]].add(sp["line_start"])
    for fn, lines in locs.items():
        src = open(fn).read().split("\n")
        prefix = "crate::" if fn.startswith("userspace/src/") else "rocescope::"
        groups = collections.defaultdict(list)
        for ln in lines:
            j = ln - 1
            while "PacketRecord {" not in src[j]:
                j -= 1
            groups[j].append(ln - 1)
        for _, idxs in sorted(groups.items(), reverse=True):
            k = max(idxs)
            while "..PacketRecord::default()" not in src[k]:
                k += 1
            views = {"RoceView": [], "LinkControlView": []}
            for i in sorted(idxs):
                t = src[i].strip().rstrip(",")
                name = t.split(":")[0].strip()
                views["RoceView" if name in ROCE else "LinkControlView"].append(t)
            base = "..PacketRecord::default()"
            for view, method in (("RoceView", "with_roce"), ("LinkControlView", "with_link_control")):
                if views[view]:
                    base += ".%s(%s%s { %s, ..%s%s::default() })" % (
                        method, prefix, view, ", ".join(views[view]), prefix, view)
            src[k] = src[k].replace("..PacketRecord::default()", base)
            for i in sorted(idxs, reverse=True):
                del src[i]
        open(fn, "w").write("\n".join(src))


if __name__ == "__main__":
    args = sys.argv[1:] or ["build", "-p", "rocescope", "--all-targets"]
    field_paths(args)
    literals(args)
    field_paths(args)
