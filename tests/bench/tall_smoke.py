#!/usr/bin/env python3
"""flymc-bench tall end to end on a small synthetic problem, as tools/main-job.sh runs it: every
row has its end-to-end time (set-up + warm-up + sampling) and the seconds per 1,000 effective
draws derived from it, and --auto's report adds its pilots to the chosen row's end-to-end time;
every row and the default `flymc sample` (auto, --ess) have their time to --time-to-ess.
Both SMH orders have rows: on a loaded machine auto's cost rule may pilot and choose smh-pcn3
(its tensor pass is tiny at d = 5), and the chosen candidate must have a row."""
import json
import math
import os
import subprocess
import sys
import tempfile

FLYMC, BENCH = sys.argv[1], sys.argv[2]


def check(cond, what):
    if not cond:
        sys.exit("FAIL: " + what)


def close(a, b, what):
    check(math.isclose(a, b, rel_tol=1e-9), f"{what}: {a} != {b}")


with tempfile.TemporaryDirectory() as tmp:
    data = os.path.join(tmp, "d.npy")
    subprocess.run([FLYMC, "data", "synth-logistic", "--n", "3000", "--d", "5", "--seed", "1",
                    "--out", data], check=True, capture_output=True)
    out = os.path.join(tmp, "t.json")
    cmd = [BENCH, "tall", "--data", data, "--regular", "nuts,pcn", "--regular-metric", "laplace",
           "--smh", "pcn,pcn3", "--flymc", "nuts", "--flymc-metric", "fly", "--auto",
           "--target-ess", "20", "--max-seconds", "2", "--warmup-regular", "100",
           "--pilot-regular", "200", "--warmup-flymc", "200", "--pilot-flymc", "1000",
           "--warmup-smh", "200", "--pilot-smh", "1000", "--time-to-ess", "200",
           "--json", out]
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp)
    check(p.returncode == 0, "tall failed: " + p.stderr[-2000:])
    check("s/1k ESS" in p.stdout, "the table has no s/1k ESS column")
    d = json.load(open(out))
    rows = {r["algo"]: r for r in d["rows"]}
    check(list(rows) == ["regular-nuts-laplace", "regular-pcn", "smh-pcn", "smh-pcn3",
                         "flymc-nuts-fly"], f"row order {list(rows)}")
    for name, r in rows.items():
        e2e = r["setup_seconds"] + r["warmup_seconds"] + r["seconds"]
        close(r["end_to_end_seconds"], e2e, name + " end_to_end_seconds")
        check(r["min_ess_bulk"] > 0, name + " has no effective draws")
        close(r["seconds_per_1000_ess"], 1000 * e2e / r["min_ess_bulk"],
              name + " seconds_per_1000_ess")
    # What the user waits for: every row's sampler and the default run with --ess 200.
    check(" to target" in p.stdout and "default (auto)" in p.stdout,
          "the table lacks the time-to-target column or the default's row")
    check(d["time_to_ess"] == 200, "time_to_ess")
    for name, r in rows.items():
        t = r["time_to_target_seconds"]
        check(t is not None and t > 0, name + " has no time to target")
    dflt = d["default"]
    check(dflt["time_to_target_seconds"] is not None and
          dflt["time_to_target_seconds"] > dflt["pilot_seconds"] > 0,
          f"the default run's time to target {dflt}")
    check(dflt["chosen"] in rows or dflt["chosen"] in ("regular-nuts", "zigzag-cv"),
          f"the default chose {dflt['chosen']}")
    a = d["auto"]
    chosen = rows.get(a["chosen"])
    check(chosen is not None, f"auto chose {a['chosen']}, which has no row")
    close(a["seconds_per_1000_ess_with_pilots"],
          1000 * (a["pilot_seconds"] + chosen["end_to_end_seconds"]) / chosen["min_ess_bulk"],
          "auto seconds_per_1000_ess_with_pilots")
    check("end to end with the pilots" in p.stdout, "the auto report lacks its end-to-end line")
    # Auto is asked about a run as long as the SMH rows it is compared with.
    check(a["run"] == {"warmup": 200, "iters": 1000}, f"auto was asked about {a['run']}")
print("tall smoke: OK")
