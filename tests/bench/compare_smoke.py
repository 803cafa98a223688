#!/usr/bin/env python3
"""flymc-bench compare end to end on a small synthetic problem: the JSON rows carry the documented
keys, exact and approximate samplers are labelled as such, the exact rows agree with the reference
posterior, minibatch MH's calibrated tests read about the requested number of data, a saved
reference is read back instead of re-run, and a corrupt reference file is refused with its name."""
import json
import math
import os
import subprocess
import sys
import tempfile

BENCH = sys.argv[1]
KEYS = ["algo", "exact", "ess_per_second_min", "queries_per_ess", "mean_error_sd_max",
        "sd_error_rel_max", "batch_mean", "bound_violations"]


def compare(tmp, extra, algos="regular-nuts,flymc-mala,minibatch-mh,sgld,zigzag-cv"):
    cmd = [BENCH, "compare", "--synth-n", "3000", "--synth-d", "5", "--budget", "0.4",
           "--reference-seconds", "1.5", "--chains", "2", "--warmup", "400", "--algos", algos,
           "--reference", os.path.join(tmp, "ref.json")] + extra
    return subprocess.run(cmd, capture_output=True, text=True, cwd=tmp)


def check(cond, what):
    if not cond:
        sys.exit("FAIL: " + what)


with tempfile.TemporaryDirectory() as tmp:
    out = os.path.join(tmp, "c.json")
    p = compare(tmp, ["--json", out])
    check(p.returncode == 0, "compare failed: " + p.stderr[-2000:])
    d = json.load(open(out))
    rows = {r["algo"]: r for r in d["rows"]}
    check(list(rows) == ["regular-nuts", "flymc-mala", "minibatch-mh", "sgld", "zigzag-cv"],
          "row order")
    for r in d["rows"]:
        for k in KEYS:
            check(k in r, f"{r['algo']} lacks {k}")
        check(r["ess_per_second_min"] > 0, f"{r['algo']}: no effective draws")
    check(all(rows[a]["exact"] for a in ["regular-nuts", "flymc-mala", "zigzag-cv"]), "exact rows")
    check(rows["zigzag-cv"]["bound_violations"] == 0, "an exact bound was violated")
    check(not rows["minibatch-mh"]["exact"] and not rows["sgld"]["exact"], "approximate rows")
    ref = d["reference"]
    check(ref["max_rhat"] < 1.05 and ref["min_ess"] > 200, "reference run too short")
    # Exact rows: Monte Carlo error only, a few / sqrt(min ESS) reference sds at most.
    for a in ["regular-nuts", "flymc-mala", "zigzag-cv"]:
        r = rows[a]
        bound = 5.0 / math.sqrt(min(r["min_ess_bulk"], ref["min_ess"]))
        check(r["mean_error_sd_max"] < bound,
              f"{a}: mean error {r['mean_error_sd_max']:.3f} sd over {bound:.3f}")
    b = rows["minibatch-mh"]["batch_mean"]
    check(100 <= b <= 400, f"minibatch-mh reads {b} data per test, asked for about 200")
    check(rows["sgld"]["batch_mean"] is None, "batch_mean is for minibatch-mh only")

    # The saved reference is read back: no reference run, the same figures.
    p = compare(tmp, ["--json", out], "flymc-mala")
    check(p.returncode == 0, "second run failed: " + p.stderr[-2000:])
    check("compare: reference" not in p.stderr, "the saved reference was run again")
    check(json.load(open(out))["reference"] == ref, "reference changed on reload")

    with open(os.path.join(tmp, "ref.json"), "w") as f:
        f.write("{\"names\": [1, 2")
    p = compare(tmp, [])
    check(p.returncode == 65 and "ref.json" in p.stderr, "corrupt reference: " + p.stderr)
print("compare smoke: ok")
