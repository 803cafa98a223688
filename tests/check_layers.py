#!/usr/bin/env python3
"""Layers point down: no room of the engine includes a room above it.

The order is read from docs/architecture.md's diagram, top to bottom: the libraries over the core
(lines "┌── flymc::<name> ..."), then the core's rooms (lines "│  <room>   <what it holds>"), down to
kernels/. A room is a folder: engine/include/flymc/<room>/ and engine/src/<room>/ (subfolders such
as mcmc/pdmp belong to their room), and kernels/ for the SIMD kernels. Every
`#include "flymc/<room>/..."` (and a private include that resolves into another room's folder) must name the room itself or one
below it. Exits 1 listing every violation, 0 otherwise.

    tests/check_layers.py [REPO]      # REPO defaults to this file's repository
    tests/check_layers.py --self-test # plants an upward include in a scratch tree: must be caught
"""
import os
import re
import sys
import tempfile

LIB = re.compile(r"^\s*┌[─ ]*flymc::(\w+)")
ROOM = re.compile(r"^\s*│\s{2}(\w+)/?\s{2,}\S")
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]')


def layer_order(architecture_md):
    """Rooms from the bottom (index 0) to the top, as the diagram draws them."""
    top_down = []
    in_diagram = False
    for line in open(architecture_md, encoding="utf-8"):
        if line.startswith("```"):
            if in_diagram:
                break
            in_diagram = True
            continue
        if not in_diagram:
            continue
        m = LIB.match(line) or ROOM.match(line)
        if m and m.group(1) != "flymc":  # flymc::flymc is the box of rooms below it
            top_down.append(m.group(1))
    return list(reversed(top_down))


def room_of(relpath):
    parts = relpath.split("/")
    if parts[0] == "kernels":
        return "kernels"
    if parts[0] == "engine" and len(parts) > 3 and parts[1] == "include":
        return parts[3] if len(parts) > 4 else None  # flymc/flymc.hpp: the umbrella, above all
    if parts[0] == "engine" and len(parts) > 3 and parts[1] == "src":
        return parts[2]
    return None


def included_room(include, here, repo, rank):
    parts = include.split("/")
    if parts[0] == "flymc" and len(parts) > 2:
        return parts[1] if parts[1] in rank else None
    # A private header beside the source, or reached through a relative path.
    target = os.path.normpath(os.path.join(os.path.dirname(here), include))
    rel = os.path.relpath(target, repo)
    return room_of(rel) if os.path.exists(target) else None


def self_test():
    """A scratch repository with one upward include (mcmc -> io) and one downward one."""
    diagram = ("```\n  ┌── flymc::report (page) ──┐\n  ┌── flymc::flymc (core) ──┐\n"
               "  │  io            files  │\n  │  mcmc          chains  │\n"
               "  │  core          config  │\n  │  kernels/      SIMD  │\n```\n")
    files = {"docs/architecture.md": diagram,
             "engine/src/mcmc/chain.cpp": '#include "flymc/core/config.hpp"\n'
                                          '#include "flymc/io/checkpoint.hpp"\n',
             "engine/src/io/out.cpp": '#include "flymc/mcmc/chain.hpp"\n',
             "engine/src/report/page.cpp": '#include "flymc/io/out.hpp"\n',
             "kernels/src/k.cpp": "#include <cmath>\n"}
    with tempfile.TemporaryDirectory() as tmp:
        for rel, text in files.items():
            os.makedirs(os.path.dirname(os.path.join(tmp, rel)), exist_ok=True)
            with open(os.path.join(tmp, rel), "w", encoding="utf-8") as f:
                f.write(text)
        violations, order = check(tmp)
    ok = order == ["kernels", "core", "mcmc", "io", "report"] and len(violations) == 1 \
        and "chain.cpp:2" in violations[0]
    print("check_layers self-test:", "passed" if ok else f"FAILED: {order} {violations}")
    return 0 if ok else 1


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    repo = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(__file__))
    violations, order = check(os.path.abspath(repo))
    if order is None:
        return 1
    for v in violations:
        print(v)
    print(f"check_layers: layers bottom to top: {' < '.join(order)}; "
          f"{len(violations)} violation(s)")
    return 1 if violations else 0


def check(repo):
    """(violations, order); order is None when the diagram cannot be read."""
    order = layer_order(os.path.join(repo, "docs", "architecture.md"))
    if "kernels" not in order or "core" not in order or "mcmc" not in order:
        print("check_layers: could not read the layer order from docs/architecture.md:", order)
        return [], None
    rank = {room: i for i, room in enumerate(order)}
    violations = []
    for top in ("engine", "kernels"):
        for root, _, names in os.walk(os.path.join(repo, top)):
            for name in sorted(names):
                if not name.endswith((".hpp", ".cpp", ".h")):
                    continue
                path = os.path.join(root, name)
                rel = os.path.relpath(path, repo)
                here = room_of(rel)
                if here is None:
                    continue
                if here not in rank:
                    violations.append(f"{rel}: room '{here}' is not in docs/architecture.md")
                    continue
                for lineno, line in enumerate(open(path, encoding="utf-8"), 1):
                    m = INCLUDE.match(line)
                    if not m:
                        continue
                    there = included_room(m.group(1), path, repo, rank)
                    if there is not None and rank[there] > rank[here]:
                        violations.append(f"{rel}:{lineno}: {here} includes {m.group(1)} "
                                          f"({there} is above {here})")
    return violations, order


if __name__ == "__main__":
    sys.exit(main())
