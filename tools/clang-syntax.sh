#!/usr/bin/env bash
# A second compiler's front end over every translation unit, in minutes rather than the sanitizer
# builds' half hour: configures a clang build tree as CI's sanitizer steps do (warnings as errors)
# and runs `clang++ -fsyntax-only` on each entry of its compile database. It catches what GCC
# accepts and clang rejects (e.g. a lambda capturing a structured binding) before a CI run does.
#   tools/clang-syntax.sh              # every translation unit
#   tools/clang-syntax.sh smh tests/   # only files whose path contains one of the words
# Environment: CLANG_SYNTAX_DIR (build tree, default /tmp/flymc-clang-syntax).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${CLANG_SYNTAX_DIR:-/tmp/flymc-clang-syntax}
cmake -S . -B "$dir" -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS="-D_GLIBCXX_ASSERTIONS" -DFLYMC_WERROR=ON -DFLYMC_SANITIZE=address,undefined \
  -DFLYMC_BUILD_BENCH=OFF -DFLYMC_FUZZ=ON -DCMAKE_EXPORT_COMPILE_COMMANDS=ON >/dev/null
# The one generated source: docs/models.md's snippets.
cmake -D IN="$PWD/docs/models.md" -D OUT="$dir/tests/models_md_snippets.cpp" \
  -D HARNESS="$PWD/tests/docs/models_harness.hpp" -P tests/docs/extract_snippets.cmake
python3 - "$dir/compile_commands.json" "$(nproc)" "$@" <<'PY'
import json, shlex, subprocess, sys
from concurrent.futures import ThreadPoolExecutor
entries = json.load(open(sys.argv[1]))
words = sys.argv[3:]
entries = [e for e in entries if not words or any(w in e["file"] for w in words)]
def check(e):
    args = e["arguments"] if "arguments" in e else shlex.split(e["command"])
    keep, skip = [], False
    for a in args:
        if skip:
            skip = False
        elif a == "-o":
            skip = True
        elif a != "-c":
            keep.append(a)
    r = subprocess.run(keep + ["-fsyntax-only"], cwd=e["directory"], capture_output=True, text=True)
    return e["file"], r.returncode, r.stderr
failed = 0
with ThreadPoolExecutor(int(sys.argv[2])) as pool:
    for path, rc, err in pool.map(check, entries):
        if rc or err:
            failed += 1
            print(f"== {path}\n{err}", end="")
print(f"clang -fsyntax-only: {len(entries) - failed}/{len(entries)} translation units clean")
sys.exit(1 if failed else 0)
PY
