#!/usr/bin/env python3
"""What a new model or sampler costs, measured: the files that name each one.

A model is named by `ModelKind::<name>`, a sampler by `Algo::<name>`. This counts, for every
value, the engine's and tools' files (engine/, kernels/, tools/; not tests/, bench/ or docs/)
whose code (comments aside) names it outside the sampler's own room (its folder under engine/src/mcmc/ and
engine/include/flymc/mcmc/), and fails when a count exceeds its budget below. The budgets are
docs/architecture.md's "Where to add things": a built-in single-index model is its family's
file plus one row of the model table (core/model_table.hpp), so it is named in that table and,
if it reads a run option of its own, in the option table; a sampler is its room plus one row of
the sampler table (core/samplers.hpp) and its options. When a count grows, route the new use
through the tables instead (a property in a row, not a `== Algo::x` test); raise a budget only
with a reason in the commit. Exits 1 listing every excess, 0 otherwise.

    tests/check_names.py [REPO]       # REPO defaults to this file's repository
    tests/check_names.py --self-test  # a planted extra use must be caught
"""
import os
import re
import sys
import tempfile

# name -> (room under mcmc/ whose files are free to name it, or None; the most other files).
MODEL_BUDGET = {
    # Models with bounds of their own: the samplers written for them (SMH's logistic and robust
    # expansions, auto's logistic slack), their options and SBC's simulators name them too.
    "logistic": (None, 8),
    "softmax": (None, 3),
    "robust": (None, 4),
    # Single-index models: the model table, and an option of their own.
    "probit": (None, 1),
    "gaussian": (None, 2),
    # The family given in code: the table and its checks, the run() overloads, and
    # has_global_family (config.hpp), the one test for a family with a global parameter.
    "custom": (None, 5),
}
SAMPLER_BUDGET = {
    # FlyMC and regular MCMC are the θ-kernel chains that run_model (engine/src/mcmc/) runs.
    "flymc": (None, 13),
    "full": (None, 5),
    "minibatch_mh": ("minibatch", 3),
    "sgld": ("minibatch", 2),
    "bps": ("pdmp", 2),
    "lipsbps": ("pdmp", 2),
    "sbps": ("pdmp", 2),
    "psbps": ("pdmp", 2),
    "zigzag_ss": ("pdmp", 1),
    "zigzag_cv": ("pdmp", 1),
    "smh": ("smh", 3),
    "automatic": (None, 7),
}
SCANNED = ("engine", "kernels", "tools")
SOURCE = (".cpp", ".hpp", ".h", ".cc")


def sources(repo):
    for top in SCANNED:
        for dirpath, _, files in os.walk(os.path.join(repo, top)):
            for f in files:
                if f.endswith(SOURCE):
                    path = os.path.join(dirpath, f)
                    yield os.path.relpath(path, repo).replace(os.sep, "/")


def in_room(rel, room):
    return room is not None and (
        rel.startswith("engine/src/mcmc/%s/" % room)
        or rel.startswith("engine/include/flymc/mcmc/%s/" % room)
    )


COMMENT = re.compile(r"//.*$", re.M)


def count(repo, enum, budget):
    """{name: [files whose code (comments aside) names enum::name, outside its room]}."""
    texts = {
        rel: COMMENT.sub("", open(os.path.join(repo, rel), encoding="utf-8").read())
        for rel in sources(repo)
    }
    out = {}
    for name, (room, _) in budget.items():
        pat = re.compile(r"\b%s::%s\b" % (enum, name))
        out[name] = sorted(r for r, t in texts.items() if pat.search(t) and not in_room(r, room))
    return out


def check(repo):
    problems = []
    for enum, budget in (("ModelKind", MODEL_BUDGET), ("Algo", SAMPLER_BUDGET)):
        for name, files in count(repo, enum, budget).items():
            most = budget[name][1]
            if len(files) > most:
                problems.append(
                    "%s::%s is named in %d files, more than its %d:\n    %s"
                    % (enum, name, len(files), most, "\n    ".join(files))
                )
    return problems


def self_test():
    with tempfile.TemporaryDirectory() as repo:
        os.makedirs(os.path.join(repo, "engine/src/mcmc/smh"))
        os.makedirs(os.path.join(repo, "tools"))
        most = SAMPLER_BUDGET["smh"][1]
        for i in range(most):
            with open(os.path.join(repo, "engine/src/f%d.cpp" % i), "w") as f:
                f.write("if (a == Algo::smh) {}\n")
        with open(os.path.join(repo, "engine/src/mcmc/smh/room.cpp"), "w") as f:
            f.write("Algo::smh\n")  # its room: free
        with open(os.path.join(repo, "tools/g.cpp"), "w") as f:
            f.write("Algo::smhx; ModelKind::probit\n")  # another name; probit's one file
        if check(repo):
            print("self-test: a tree within budget was refused: %s" % check(repo))
            return 1
        with open(os.path.join(repo, "tools/h.cpp"), "w") as f:
            f.write("cfg.algo == Algo::smh\n")
        found = check(repo)
        if len(found) != 1 or "Algo::smh is named in %d files" % (most + 1) not in found[0]:
            print("self-test: one file too many naming Algo::smh was not caught: %s" % found)
            return 1
    print("self-test passed")
    return 0


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    repo = argv[1] if len(argv) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    problems = check(repo)
    for p in problems:
        print(p)
    if not problems:
        print("every model and sampler is named within its budget of files")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
