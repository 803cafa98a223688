#!/usr/bin/env python3
"""Writes docs/benchmarks.md's tables from benchmark JSON files, so that no figure is pasted by hand.

    tools/bench-report.py --out docs/benchmarks.md docs/bench/*.json
    tools/bench-report.py --self-test

Inputs: the JSON of `flymc-bench table1|tall|compare|scaling|storage|chains --json F` (a "benchmark" key names which;
older files are recognised by their keys) and Google Benchmark's `--benchmark_format=json` output
of `flymc_bm`. The hand-written text of the page lives in docs/bench/intro.md (placed first) and
docs/bench/notes.md (placed last), if present. Python 3 standard library only.
"""
import argparse
import json
import os
import sys


def fmt(v, digits=3):
    """A number for a table: integers with thousands separators, others to `digits` significant."""
    if v is None:
        return "–"
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, int):
        return f"{v:,}"
    if v != v:  # NaN
        return "–"
    if v == 0:
        return "0"
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    return f"{v:.{digits}g}"


def table(headers, rows):
    out = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out)


def kind_of(doc):
    if "benchmark" in doc:
        return doc["benchmark"]
    if "benchmarks" in doc and "context" in doc:
        return "micro"
    rows = doc.get("rows", [])
    if rows and "dataset" in rows[0]:
        return "table1"
    if rows and "ratio_to_one_chain" in rows[0]:
        return "chains"
    if rows and "n" in rows[0]:
        return "scaling"
    return None


def machine_line(doc):
    m = doc.get("machine")
    if not m:
        return ""
    return (f"Machine: {m.get('cpu', '?')}, {m.get('cores', '?')} cores, {m.get('simd', '?')} "
            f"kernels, {m.get('blas', '?')}, {m.get('build_type', '?')} build, commit "
            f"`{m.get('git_sha', '?')}`.")


def table1_section(doc, name):
    parts = []
    groups = []  # (dataset, protocol) in order of first appearance: softmax runs two protocols
    for r in doc["rows"]:
        key = (r["dataset"], r.get("protocol", ""))
        if key not in groups:
            groups.append(key)
    for ds, protocol in groups:
        rows = [r for r in doc["rows"]
                if r["dataset"] == ds and r.get("protocol", "") == protocol]
        first = rows[0]
        title = f"{ds}, {protocol} protocol" if protocol else ds
        parts.append(f"#### Table 1: {title} ({first['model']}, {first['kernel']} kernel, "
                     f"N = {first['n']:,}, D = {first['d']})")
        # A row whose kernel differs from the table's (another metric) names its own.
        parts.append(table(
            ["algorithm", "queries/iter", "bright", "ESS/1000 iters (min)", "min ESS/s",
             "speedup (queries)", "speedup (wall)", "µs/iter", "chains × iters"],
            [[r["algo"] + ("" if r["kernel"] == first["kernel"] else f" ({r['kernel']})"),
              fmt(r["queries_per_iter"]), fmt(r["bright_mean"]),
              fmt(r["ess_per_1000_min"]), fmt(r["ess_per_second_min"]),
              fmt(r["speedup_queries"]), fmt(r["speedup_wall"]),
              fmt(1e6 * r["seconds_per_iter"]), f"{r['chains']} × {r['iters']:,}"] for r in rows]))
    parts.append(f"Source: `{name}`. " + machine_line(doc))
    return "\n\n".join(parts)


def scaling_section(doc, name):
    rows = doc["rows"]
    e2e = all("seconds_per_1000_ess" in r for r in rows)  # files from before it lack the column
    body = table(
        ["N", "algorithm", "µs/iter", "queries/iter", "bright", "min ESS/s", "speedup (wall)",
         "q", "set-up s"] + (["end-to-end s per 1,000 ESS"] if e2e else []),
        [[fmt(r["n"]), r["algo"], fmt(1e6 * r["seconds_per_iter"]), fmt(r["queries_per_iter"]),
          fmt(r["bright_mean"]), fmt(r["ess_per_second_min"]), fmt(r.get("speedup_wall")),
          fmt(r.get("q_dark_to_bright")), fmt(r["setup_seconds"])]
         + ([fmt(r["seconds_per_1000_ess"])] if e2e else []) for r in rows])
    note = (" End to end: set-up, warm-up and sampling of the run (the data generated in memory "
            "before it) per 1,000 min bulk effective draws." if e2e else "")
    return "#### Tall synthetic data: cost as N grows\n\n" + body + \
        f"\n\nSource: `{name}`." + note + " " + machine_line(doc)


def chains_section(doc, name):
    rows = doc["rows"]
    body = table(
        ["chains", "min ESS", "min ESS/s", "ratio to 1 chain", "iterations/s",
         "rate ratio to 1 chain"],
        [[fmt(r["chains"]), fmt(r["min_ess"]), fmt(r["ess_per_second_min"]),
          fmt(r["ratio_to_one_chain"]), fmt(r["iterations_per_second"]),
          fmt(r["rate_ratio_to_one_chain"])] for r in rows])
    return "#### Concurrent chains\n\n" + body + f"\n\nSource: `{name}`. " + machine_line(doc)


def micro_section(doc, name):
    ctx = doc.get("context", {})
    rows = []
    for b in doc["benchmarks"]:
        if b.get("run_type", "iteration") != "iteration":
            continue
        unit = b.get("time_unit", "ns")
        extra = ""
        if "bytes_per_second" in b:
            extra = f"{b['bytes_per_second'] / 1e9:.1f} GB/s"
        elif "items_per_second" in b:
            extra = f"{b['items_per_second'] / 1e6:.1f} M items/s"
        rows.append([f"`{b['name']}`", f"{fmt(b['real_time'])} {unit}",
                     f"{fmt(b['cpu_time'])} {unit}", extra])
    head = (f"#### Micro-benchmarks (`flymc_bm`)\n\n"
            f"{ctx.get('num_cpus', '?')} CPUs at {ctx.get('mhz_per_cpu', '?')} MHz, "
            f"{ctx.get('date', '')}.\n\n")
    return head + table(["benchmark", "real time", "CPU time", "throughput"], rows) + \
        f"\n\nSource: `{name}`."


def metric_label(row):
    """The row's metric, and whether warm-up re-estimated it (older files do not say)."""
    metric = row.get("metric", "?")
    if metric == "dense" and "metric_adapted" in row:
        return "dense, adapted" if row["metric_adapted"] else "dense, fixed"
    return metric


def tall_section(doc, name):
    rows = doc["rows"]
    first = rows[0]
    e2e = all("seconds_per_1000_ess" in r for r in rows)  # files from before it lack the column
    to_target = all("time_to_target_seconds" in r for r in rows)
    body = table(
        ["algorithm", "metric", "queries/iter", "bright", "min ESS", "max R̂", "min ESS/s",
         "× best regular", "µs/iter"] + (["s per 1,000 ESS"] if e2e else [])
        + (["s to target"] if to_target else []) + ["mean z", "chains × iters"],
        [[r["algo"], metric_label(r), fmt(r["queries_per_iter"]), fmt(r["bright_mean"]),
          fmt(r["min_ess_bulk"]), fmt(r["max_rhat"], 4), fmt(r["ess_per_second_min"]),
          fmt(r["speedup_vs_best_regular"]), fmt(1e6 * r["seconds_per_iter"])]
         + ([fmt(r["seconds_per_1000_ess"])] if e2e else [])
         + ([target_cell(r)] if to_target else [])
         + [fmt(r.get("max_mean_z_vs_best_regular")), f"{r['chains']} × {r['iters']:,}"]
         for r in rows])
    dflt = doc.get("default")
    if to_target and dflt:
        body += (f"\n\nThe default `flymc sample` (`--algo auto --ess {fmt(doc.get('time_to_ess'))}`) "
                 f"chose {dflt['chosen']} and reached the target {target_cell(dflt)} s after the "
                 f"data were read, its pilots ({fmt(dflt['pilot_seconds'])} s) included. "
                 "`s to target`: seconds from the data's reading to min bulk and tail ESS ≥ "
                 f"{fmt(doc.get('time_to_ess'))} and R̂ ≤ 1.01, each row's sampler run with "
                 "`--ess`; ~: the run reached its cap first and its sampling is projected at "
                 "its ESS rate so far.")
    model = doc.get("model", "logistic")
    if doc.get("model_options"):
        model += f" `{doc['model_options']}`"
    per_1000 = (" `s per 1,000 ESS`: wall seconds of the row's set-up, warm-up and sampling "
                "per 1,000 min bulk effective draws." if e2e else "")
    return (f"#### Tall data: {doc.get('dataset', '?')}, {model} (N = {first['n']:,}, "
            f"D = {first['d']})\n\n" + body + "\n\n`mean z`: the largest |difference of "
            "posterior means| / combined MCSE against the best regular-MCMC row." + per_1000 + " "
            + auto_table(doc.get("auto", [])) + f"Source: `{name}`. " + machine_line(doc))


def target_cell(r):
    """Seconds to the ESS target, ~ marking a projection past the run's cap."""
    t = r.get("time_to_target_seconds")
    return ("~" if r.get("time_to_target_projected") else "") + fmt(t)


def cost_model_section(doc, name):
    rows = doc["rows"]
    body = table(
        ["candidate", "data", "N", "p", "iterations", "queries", "gradients", "core-s",
         "priced", "priced / measured", "statistics s", "priced"],
        [[r["name"], os.path.basename(r.get("data", "?")), fmt(r["n"]), fmt(r["p"]),
          fmt(r["iterations"]), fmt(r["queries"]), fmt(r["grads"]), fmt(r["core_seconds"]),
          fmt(r["predicted_core_seconds"]),
          fmt(r["predicted_core_seconds"] / r["core_seconds"] if r["core_seconds"] else None),
          fmt(r["statistics_seconds"]), fmt(r["predicted_statistics_seconds"])] for r in rows])
    return ("#### Auto's cost model against measured runs\n\n" + body + "\n\nEvery candidate "
            "of `--algo auto` run for a fixed length (`flymc-bench cost-model`): its chains' "
            "counted work, their own timers added up (core-s), and the cost model's price of the "
            "same work (docs/math.md §3.3), which auto ranks by instead of a clock. "
            f"Source: `{name}`. " + machine_line(doc))


def auto_table(autos):
    """`--algo auto`'s pilots against the measured rows: one chooser over every exact candidate
    (a dict, since the chooser weighs them all), or older files' one pilot pair per kernel (a
    list)."""
    if not autos:
        return ""
    if isinstance(autos, dict):
        rows = [[c["name"], "skipped" if c.get("skipped") else
                 ("chosen" if c["name"] == autos["chosen"] else ""),
                 fmt(c.get("predicted_ess_per_second")), fmt(c.get("measured_ess_per_second")),
                 fmt(c.get("pilot_seconds"))] for c in autos["candidates"]]
        return ("\n\n`--algo auto` (its candidates' predicted min ESS/s beside the measured rows "
                f"of the same name; the choice measured {fmt(autos.get('auto_vs_best'))} × the "
                "best measured exact row by min ESS/s"
                + (f" and {fmt(autos['auto_vs_best_end_to_end'])} × the best by seconds per "
                   "1,000 effective draws end to end"
                   if autos.get("auto_vs_best_end_to_end") is not None else "")
                + (f"; asked about a run of {autos['run']['warmup']:,} + "
                   f"{autos['run']['iters']:,} iterations" if autos.get("run") else "")
                + f"; pilots {fmt(autos['pilot_seconds'])} s"
                + (", rough" if autos.get("rough") else "")
                + (f"; {fmt(autos['seconds_per_1000_ess_with_pilots'])} s per 1,000 effective "
                   "draws end to end with the pilots"
                   if autos.get("seconds_per_1000_ess_with_pilots") is not None else "")
                + "):\n\n"
                + table(["candidate", "", "predicted", "measured", "pilot s"], rows) + "\n\n")
    rows = [[a["kernel"], a.get("flymc_row") or "", a["chosen"],
             fmt(a["predicted_flymc_ess_per_second"]), fmt(a["predicted_regular_ess_per_second"]),
             fmt(a["predicted_speedup"]), fmt(a.get("measured_speedup")),
             fmt(a.get("auto_vs_better")), fmt(a["pilot_seconds"])] for a in autos]
    return ("\n\n`--algo auto` with the same kernel (its pilots' predicted min ESS/s, FlyMC over "
            "regular predicted and measured, and the chosen algorithm's measured min ESS/s over "
            "the better one's):\n\n" + table(
                ["kernel", "FlyMC row", "chose", "pred. FlyMC", "pred. regular", "pred. ×",
                 "measured ×", "auto / better", "pilot s"], rows) + "\n\n")


def compare_section(doc, name):
    ref = doc["reference"]
    body = table(
        ["algorithm", "exact", "min ESS/s", "queries / ESS", "mean error (sd)", "mean z",
         "sd error (rel.)", "min ESS", "max R̂", "data / test", "bound violations",
         "chains × iters"],
        [[r["algo"], "yes" if r["exact"] else "no", fmt(r["ess_per_second_min"]),
          fmt(r["queries_per_ess"]), fmt(r["mean_error_sd_max"]), fmt(r.get("mean_z_max")),
          fmt(r["sd_error_rel_max"]),
          fmt(r["min_ess_bulk"]), fmt(r.get("max_rhat"), 4), fmt(r.get("batch_mean")),
          str(r.get("bound_violations", 0)), f"{r['chains']} × {r['iters']:,}"]
         for r in doc["rows"]])
    return (f"#### Every sampler at {fmt(doc['budget_seconds'])} s of sampling: "
            f"{doc.get('dataset', '?')} (N = {doc['n']:,}, D = {doc['d']})\n\n" + body +
            "\n\nErrors against a held-back reference (regular NUTS, min ESS "
            f"{fmt(ref['min_ess'])}, max R̂ {fmt(ref['max_rhat'], 4)}): the largest |mean − "
            "reference mean| in reference sds, the same in combined MCSEs of the row and the "
            "reference (`mean z`; the largest of D standard normals is about 2.5–3.5 for D = "
            "11–51), and the largest |sd / reference sd − 1| over the "
            "parameters. An exact sampler's error is Monte Carlo error (about 1/√ESS); an "
            f"approximate one's also holds its bias. Source: `{name}`. " + machine_line(doc))


def storage_section(doc, name):
    runs = [r for r in doc["rows"] if "storage" in r]
    shifts = {r["algo"]: r["max_mean_z_f32_vs_f64"] for r in doc["rows"]
              if "max_mean_z_f32_vs_f64" in r}
    body = table(
        ["algorithm", "storage", "round", "data GB", "read s", "set-up s", "sampling s",
         "µs/iter", "min ESS", "max R̂", "min ESS/s", "total s"],
        [[r["algo"], r["storage"], str(r["round"]), fmt(r["data_bytes"] / 1e9),
          fmt(r["read_seconds"]), fmt(r["setup_seconds"]), fmt(r["sampling_seconds"]),
          fmt(r["us_per_iter"]), fmt(r["min_ess_bulk"]), fmt(r["max_rhat"], 4),
          fmt(r["min_ess_per_second"]), fmt(r["end_to_end_seconds"])] for r in runs])
    shift = "; ".join(f"{a} {fmt(z)}" for a, z in shifts.items())
    return (f"#### Float storage against float64: {doc.get('dataset', '?')} "
            f"({doc['chains']} chains, {doc['warmup']:,} + {doc['iters']:,} iterations)\n\n" +
            body + "\n\nThe same seed on both storages, in alternating order over the rounds. "
            "Posterior shift of f32 (largest |mean difference| / combined MCSE over the "
            f"parameters, last round): {shift}. total s: reading, set-up, warm-up and sampling. "
            f"Source: `{name}`. " + machine_line(doc))


SECTIONS = {"table1": table1_section, "scaling": scaling_section, "chains": chains_section,
            "tall": tall_section, "compare": compare_section, "micro": micro_section,
            "storage": storage_section, "cost-model": cost_model_section}
ORDER = ["table1", "tall", "cost-model", "compare", "scaling", "storage", "chains", "micro"]


def report(files, intro="", notes=""):
    docs = []
    for path in files:
        with open(path) as f:
            doc = json.load(f)
        kind = kind_of(doc)
        if kind not in SECTIONS:
            raise SystemExit(f"{path}: not a flymc-bench or flymc_bm JSON file")
        docs.append((kind, os.path.basename(path), doc))
    docs.sort(key=lambda d: (ORDER.index(d[0]), d[1]))
    out = ["# Benchmarks", "",
           "Generated by `tools/bench-report.py` from the JSON files in `docs/bench/`; do not "
           "edit the tables by hand. To regenerate after new runs: "
           "`tools/bench-report.py --out docs/benchmarks.md docs/bench/*.json`.", ""]
    if intro:
        out += [intro.strip(), ""]
    for kind, name, doc in docs:
        out += [SECTIONS[kind](doc, name), ""]
    if notes:
        out += [notes.strip(), ""]
    return "\n".join(out)


def self_test():
    t1 = {"benchmark": "table1", "machine": {"cpu": "Test CPU", "cores": 2, "simd": "avx512",
                                             "blas": "OpenBLAS x", "build_type": "Release",
                                             "git_sha": "abc1234"},
          "rows": [{"dataset": "fmnist-7v9", "model": "logistic", "kernel": "rwmh",
                    "algo": "regular", "n": 12000, "d": 51, "queries_per_iter": 12000.0,
                    "bright_mean": 12000.0, "ess_per_1000_min": 0.2, "ess_per_second_min": 2.5,
                    "ess_per_query_min": 1e-8, "speedup_queries": 1.0, "speedup_wall": 1.0,
                    "accept_rate": 0.23, "step_size": 0.1, "seconds_per_iter": 8.1e-5,
                    "setup_seconds": 0.2, "iters": 400000, "chains": 4,
                    "sampling_seconds": 30.0}]}
    soft = dict(t1["rows"][0], dataset="fmnist-3class", model="softmax", kernel="mala", n=18000,
                d=257, protocol="paper")
    t1["rows"] += [soft, dict(soft, protocol="strong", kernel="mala-dense"),
                   dict(soft, protocol="strong", kernel="mala-fly", algo="flymc-map-fly")]
    micro = {"context": {"num_cpus": 2, "mhz_per_cpu": 2600, "date": "today"},
             "benchmarks": [{"name": "BM_X", "run_type": "iteration", "real_time": 2.5,
                             "cpu_time": 2.4, "time_unit": "us"}]}
    tall = {"benchmark": "tall", "dataset": "tall.npy", "machine": t1["machine"],
            "rows": [{"algo": "flymc-hmc", "metric": "dense", "n": 1000000, "d": 51,
                      "queries_per_iter": 1500.0, "bright_mean": 80.0, "min_ess_bulk": 160.0,
                      "max_rhat": 1.002, "ess_per_second_min": 300.0,
                      "speedup_vs_best_regular": 280.0, "seconds_per_iter": 2e-5,
                      "max_mean_z_vs_best_regular": 1.5, "chains": 2, "iters": 50000}],
            "auto": [{"kernel": "nuts", "flymc_row": "flymc-nuts-fly", "chosen": "flymc",
                      "predicted_flymc_ess_per_second": 200.0,
                      "predicted_regular_ess_per_second": 1.25, "predicted_speedup": 160.0,
                      "measured_speedup": 250.0, "auto_vs_better": 1.0, "pilot_seconds": 15.0}]}
    tall2 = dict(tall, dataset="tall2.npy",
                 auto={"chosen": "smh-pcn", "pilot_seconds": 10.0, "rough": False,
                       "auto_vs_best": 1.0, "auto_vs_best_end_to_end": 0.9,
                       "run": {"warmup": 2000, "iters": 20000},
                       "predicted_speedup": 100.0,
                       "candidates": [{"name": "smh-pcn", "skipped": None,
                                       "predicted_ess_per_second": 5000.0,
                                       "measured_ess_per_second": 4000.0, "pilot_seconds": 2.0},
                                      {"name": "zigzag-cv", "skipped": "too many coefficients",
                                       "predicted_ess_per_second": None,
                                       "measured_ess_per_second": None, "pilot_seconds": 0.0}]})
    cmp = {"benchmark": "compare", "dataset": "synthetic", "machine": t1["machine"], "n": 1000,
           "d": 5, "budget_seconds": 30.0,
           "reference": {"min_ess": 5000.0, "max_rhat": 1.001},
           "rows": [{"algo": "minibatch-mh", "exact": False, "ess_per_second_min": 0.5,
                     "queries_per_ess": 2.5e6, "mean_error_sd_max": 0.9, "mean_z_max": 4.5,
                     "sd_error_rel_max": 0.2, "min_ess_bulk": 15.0, "max_rhat": 1.1,
                     "batch_mean": 210.0, "bound_violations": 0, "chains": 2, "iters": 1000}]}
    sto = {"benchmark": "storage", "dataset": "s.npy", "machine": t1["machine"], "chains": 2,
           "warmup": 1000, "iters": 4000,
           "rows": [{"algo": "smh", "storage": "f32", "round": 1, "data_bytes": 2.0e9,
                     "read_seconds": 1.5, "setup_seconds": 3.0, "sampling_seconds": 0.5,
                     "us_per_iter": 100.0, "min_ess_bulk": 4000.0, "max_rhat": 1.001,
                     "min_ess_per_second": 8000.0, "end_to_end_seconds": 5.0},
                    {"algo": "smh", "max_mean_z_f32_vs_f64": 1.25}]}
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        paths = []
        for name, doc in (("t1.json", t1), ("bm.json", micro), ("tall.json", tall),
                          ("tall2.json", tall2), ("cmp.json", cmp), ("sto.json", sto)):
            paths.append(os.path.join(d, name))
            with open(paths[-1], "w") as f:
                json.dump(doc, f)
        text = report(paths, "Intro.", "Notes.")
    checks = [
        "| regular | 12,000 | 12,000 | 0.2 | 2.5 | 1 | 1 | 81 | 4 × 400,000 |" in text,
        "commit `abc1234`" in text,
        "| smh-pcn | chosen | 5,000 | 4,000 | 2 |" in text,
        "0.9 × the best by seconds per 1,000 effective draws end to end" in text,
        "asked about a run of 2,000 + 20,000 iterations" in text,
        "| zigzag-cv | skipped | – | – | 0 |" in text,
        "| `BM_X` | 2.5 us | 2.4 us |  |" in text,
        text.index("#### Table 1") < text.index("#### Tall data") < text.index("#### Micro"),
        "| flymc-hmc | dense | 1,500 | 80 | 160 | 1.002 | 300 | 280 | 20 | 1.5 | 2 × 50,000 |"
        in text,
        text.index("Intro.") < text.index("#### Table 1") < text.index("Notes."),
        "| nuts | flymc-nuts-fly | flymc | 200 | 1.25 | 160 | 250 | 1 | 15 |" in text,
        "#### Table 1: fmnist-3class, paper protocol (softmax, mala kernel," in text,
        "#### Table 1: fmnist-3class, strong protocol (softmax, mala-dense kernel," in text,
        "| flymc-map-fly (mala-fly) | 12,000 |" in text,
        "| minibatch-mh | no | 0.5 | 2,500,000 | 0.9 | 4.5 | 0.2 | 15 | 1.1 | 210 | 0 | 2 × 1,000 |"
        in text,
        text.index("#### Tall data") < text.index("#### Every sampler") < text.index("#### Micro"),
        "| smh | f32 | 1 | 2 | 1.5 | 3 | 0.5 | 100 | 4,000 | 1.001 | 8,000 | 5 |" in text,
        "last round): smh 1.25." in text,
    ]
    if not all(checks):
        print(text)
        print("bench-report self-test FAILED:", checks)
        return 1
    print("bench-report self-test passed")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="*", help="benchmark JSON files")
    ap.add_argument("--out", help="markdown file to write (default: stdout)")
    ap.add_argument("--self-test", action="store_true", help="check the script on built-in data")
    a = ap.parse_args()
    if a.self_test:
        return self_test()
    if not a.files:
        ap.error("no JSON files given")
    here = os.path.dirname(os.path.abspath(a.files[0]))

    def read(name):
        p = os.path.join(here, name)
        return open(p).read() if os.path.exists(p) else ""

    text = report(a.files, read("intro.md"), read("notes.md"))
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
