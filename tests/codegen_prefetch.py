#!/usr/bin/env python3
"""The z-sweep's prefetches are in the binary.

GCC 12 deleted every call to the outlined template that issued the z-sweep's prefetches (a
function that only prefetches looks free of side effects to it), so for a while the sweep ran
with none while the docs said its candidates load during the θ-steps. The helpers are now
forced inline; this test disassembles the library and fails if a z-update lost them again.

Usage: codegen_prefetch.py FILE   (the flymc library archive, or any binary linking it)
Exit 0: found; 1: missing; 77: not checkable here (not x86-64, or no objdump).
"""
import platform
import re
import shutil
import subprocess
import sys


def functions(path):
    """{demangled function name: its disassembly lines}."""
    out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", "-C", path], check=True,
                         capture_output=True, text=True).stdout
    funcs, name = {}, None
    for line in out.splitlines():
        m = re.match(r"^[0-9a-f]+ <(.*)>:$", line)
        if m:
            name = m.group(1)
            funcs.setdefault(name, [])
        elif name is not None and line.strip():
            funcs[name].append(line)
    return funcs


def has(lines, insn):
    return any(re.search(r"\s" + insn + r"\b", line) for line in lines)


def main():
    if platform.machine() not in ("x86_64", "AMD64") or shutil.which("objdump") is None:
        print("codegen_prefetch: SKIP (needs x86-64 and objdump)")
        return 77
    funcs = functions(sys.argv[1])
    failures = []
    # Step 5 of the implicit update prefetches the next sweep's candidates into L2.
    updates = [n for n in funcs if "flymc::ImplicitZUpdater::update<" in n]
    if not updates:
        failures.append("no flymc::ImplicitZUpdater::update<...> in " + sys.argv[1])
    failures += [n + ": no prefetcht1 (next sweep's candidates)" for n in updates
                 if not has(funcs[n], "prefetcht1")]
    # The gathered evaluation prefetches each block's rows, bound records and bright bits.
    failures += [n + ": no prefetcht0 (gathered data)" for n in funcs
                 if "flymc::gathered_deltas<" in n and not has(funcs[n], "prefetcht0")]
    for f in failures:
        print("codegen_prefetch: FAIL:", f)
    if not failures:
        print(f"codegen_prefetch: ok ({len(updates)} z-updates checked)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
