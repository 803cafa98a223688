"""flymc.sample() draws what `flymc sample` writes, bit for bit: the same data (written to CSV at
full precision) and options give equal draw files' rows, column names, step sizes and inverse
metrics, for every model and every family of samplers (their columns differ)."""
import os
import tempfile
import unittest

import numpy as np

import flymc
import flymc_testing as ft

# Small runs of each sampler family: FlyMC with RW-MH (its defaults), with HMC and a dense metric,
# regular NUTS (Stan's NUTS columns), the approximate samplers (batch__), a piecewise-deterministic
# one (n_events__), and the other two models.
CASES = [
    ("logistic", {"algo": "flymc"}),
    ("logistic", {"algo": "flymc", "kernel": "hmc", "metric": "dense", "hmc_steps": 5}),
    ("logistic", {"algo": "full", "kernel": "nuts"}),
    ("logistic", {"algo": "minibatch-mh", "batch_size": 50}),
    ("logistic", {"algo": "zigzag-cv"}),
    ("softmax", {"algo": "flymc", "kernel": "mala"}),
    ("robust", {"algo": "full", "kernel": "slice"}),
]

DATA = {"logistic": ft.logistic_data(zero_one=True), "softmax": ft.softmax_data(),
        "robust": ft.robust_data()}


def cli_args(model, options):
    """`flymc sample`'s options for the Python keyword arguments (option names with dashes)."""
    args = ["--model", model]
    for key, value in options.items():
        args += ["--" + key.replace("_", "-"), str(value)]
    return args


class CliEquality(unittest.TestCase):
    def test_draws_equal_the_command_lines(self):
        common = {"chains": 2, "warmup": 150, "iters": 120, "thin": 2, "seed": 11}
        for model, options in CASES:
            with self.subTest(model=model, **options), tempfile.TemporaryDirectory() as tmp:
                x, y = DATA[model]
                data = os.path.join(tmp, "data.csv")
                ft.write_csv(data, x, y)
                out = os.path.join(tmp, "run")
                ft.run_cli("sample", "--data", data, "--out", out, "--quiet",
                           *cli_args(model, {**common, **options}))
                r = flymc.sample(x, y, model=model, **common, **options)
                self.assertEqual(r.draws.shape[:2], (2, 60))
                for k in range(2):
                    f = ft.DrawFile(os.path.join(out, f"chain-{k + 1}.csv"))
                    self.assertEqual(f.columns, list(r.sampler) + r.param_names)
                    mine = np.column_stack([*(v[k] for v in r.sampler.values()), r.draws[k]])
                    self.assertEqual(mine.shape, f.rows.shape)
                    # Exact: the draw files hold the shortest strings that read back the same.
                    np.testing.assert_array_equal(mine, f.rows)
                    self.assertEqual(r.step_size[k], f.step_size)
                    np.testing.assert_array_equal(
                        r.inv_metric[k].ravel(), np.concatenate(f.inv_metric))

    def test_run_figures_are_summary_jsons(self):
        """Result.run and summary.json's run object are written from one record
        (io/run_record.hpp): the same fields, and the same values where no clock enters, for a
        run of fixed length and for the default (auto, an ESS target)."""
        import json

        x, y = DATA["logistic"]
        clocked = ("seconds", "per_second", "auto_why")
        for options in ({"algo": "flymc", "chains": 2, "warmup": 100, "iters": 100, "seed": 3},
                        {"chains": 2, "ess": 100, "seed": 3}):
            with self.subTest(**options), tempfile.TemporaryDirectory() as tmp:
                data = os.path.join(tmp, "data.csv")
                ft.write_csv(data, x, y)
                out = os.path.join(tmp, "run")
                ft.run_cli("sample", "--data", data, "--out", out, "--quiet",
                           *cli_args("logistic", options))
                with open(os.path.join(out, "summary.json")) as f:
                    cli = json.load(f)["run"]
                mine = flymc.sample(x, y, model="logistic", **options).run
                self.assertEqual(sorted(cli), sorted(mine))
                for key, value in cli.items():
                    if any(c in key for c in clocked) or isinstance(value, (list, dict)):
                        continue
                    with self.subTest(key=key):
                        self.assertEqual(value, mine[key])


if __name__ == "__main__":
    unittest.main()
