#!/usr/bin/env python3
"""The samplers' prefetches are in the binary.

GCC 12 deleted every call to the outlined template that issued the z-sweep's prefetches (a
function that only prefetches looks free of side effects to it), so for a while the sweep ran
with none while the docs said its candidates load during the θ-steps. The helpers are now
forced inline; this test disassembles the library and fails if a function that prefetches by
design (the z-updates, the gathered evaluations, the PDMP samplers' data-ahead reads) lost its
prefetch instructions again. (The kernels' own prefetches exist on the SIMD paths only.)

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
    # (name fragment, instruction every match must hold, what it prefetches, must exist)
    checks = [
        ("flymc::ImplicitZUpdater::update<", "prefetcht1", "next sweep's candidates", True),
        ("flymc::gathered_deltas<", "prefetcht0", "gathered data", False),
        ("flymc::detail::ZigZagChain::take_datum", "prefetcht0", "data drawn ahead", True),
        ("flymc::detail::BouncyChain::draw_weighted_batch", "prefetcht0", "batch drawn ahead",
         True),
    ]
    for fragment, insn, what, required in checks:
        # A ".cold" clone is the rarely taken part GCC split off; the prefetches stay in the rest.
        names = [n for n in funcs if fragment in n and "[clone .cold" not in n]
        if required and not names:
            failures.append(f"no {fragment}... in {sys.argv[1]} (renamed? update this test)")
        failures += [f"{n}: no {insn} ({what})" for n in names if not has(funcs[n], insn)]
    for f in failures:
        print("codegen_prefetch: FAIL:", f)
    if not failures:
        print(f"codegen_prefetch: ok ({len(checks)} kinds of function checked)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
