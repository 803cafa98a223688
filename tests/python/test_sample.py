"""flymc.sample()'s result: shapes, names, sampler columns, run figures, the ArviZ dict's shape
contract (ArviZ itself is not installed: its from_dict takes a dict of (chain, draw, ...) arrays
per group), options read back, reproducibility, and flymc.load()."""
import os
import tempfile
import unittest

import numpy as np

import flymc
import flymc_testing as ft

SMALL = {"algo": "flymc", "chains": 3, "warmup": 100, "iters": 80, "seed": 5}


class Shapes(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.x, cls.y = ft.logistic_data()
        cls.r = flymc.sample(cls.x, cls.y, thin=2, **SMALL)

    def test_draws_and_names(self):
        r = self.r
        self.assertIsInstance(r.draws, np.ndarray)
        self.assertEqual(r.draws.dtype, np.float64)
        self.assertEqual(r.draws.shape, (3, 40, 3))
        self.assertEqual(r.param_names, ["theta.1", "theta.2", "theta.3"])
        self.assertTrue(np.all(np.isfinite(r.draws)))

    def test_sampler_columns_are_the_draw_files(self):
        self.assertEqual(list(self.r.sampler),
                         ["lp__", "accept_stat__", "stepsize__", "n_bright__", "n_queries__"])
        for values in self.r.sampler.values():
            self.assertEqual(values.shape, (3, 40))
        self.assertEqual(self.r.step_size.shape, (3,))
        self.assertEqual(self.r.inv_metric.shape, (3, 3))
        np.testing.assert_array_equal(self.r.sampler["stepsize__"][:, 0], self.r.step_size)

    def test_nuts_columns(self):
        r = flymc.sample(self.x, self.y, **{**SMALL, "algo": "full", "kernel": "nuts",
                                            "metric": "dense"})
        self.assertEqual(list(r.sampler)[3:7],
                         ["treedepth__", "n_leapfrog__", "divergent__", "energy__"])
        self.assertEqual(r.inv_metric.shape, (3, 3, 3))
        stats = r.to_arviz_dict()["sample_stats"]
        for name in ("lp", "acceptance_rate", "step_size", "tree_depth", "n_steps", "diverging",
                     "energy", "n_bright", "n_queries"):
            self.assertIn(name, stats)
        self.assertEqual(stats["diverging"].dtype, np.bool_)

    def test_run_figures_and_summary(self):
        run = self.r.run
        self.assertEqual((run["algo"], run["exact"], run["chains"], run["n"]), ("flymc", True, 3, 400))
        for key in ("setup_seconds", "warmup_seconds", "sampling_seconds", "queries_per_iter",
                    "bright_mean", "accept_rate", "bound_slack", "q_dark_to_bright"):
            self.assertGreaterEqual(run[key], 0.0, key)
        self.assertIsNone(run["batch_mean"])  # FlyMC has a bright set, no batches
        self.assertEqual(run["bound_violations"], 0)
        # A violated bound would raise this (a ValueError, as every flymc error).
        self.assertTrue(issubclass(flymc.BoundViolationError, flymc.Error))
        self.assertEqual(flymc.defaults()["on_bound_violation"], "stop")
        self.assertEqual(run["map_theta"].shape, (3,))
        s = self.r.summary
        self.assertEqual(s["name"], self.r.param_names)
        np.testing.assert_allclose(s["mean"], self.r.draws.mean(axis=(0, 1)), rtol=1e-12)

    def test_arviz_dict(self):
        d = self.r.to_arviz_dict()
        self.assertEqual(set(d), {"posterior", "sample_stats", "attrs"})
        self.assertEqual(list(d["posterior"]), self.r.param_names)
        for group in ("posterior", "sample_stats"):
            for name, values in d[group].items():
                self.assertIsInstance(values, np.ndarray, name)
                self.assertEqual(values.shape, (3, 40), name)  # (chain, draw)
        np.testing.assert_array_equal(d["posterior"]["theta.2"], self.r.draws[:, :, 1])
        np.testing.assert_array_equal(d["sample_stats"]["lp"], self.r.sampler["lp__"])
        attrs = d["attrs"]
        self.assertEqual(attrs["inference_library"], "flymc")
        # netCDF attributes: numbers and strings only.
        for value in attrs.values():
            self.assertIsInstance(value, (int, float, str))


class Options(unittest.TestCase):
    def test_defaults_are_runconfigs(self):
        d = flymc.defaults()
        self.assertEqual((d["model"], d["algo"], d["kernel"], d["chains"], d["ess"]),
                         ("logistic", "auto", "rwmh", 4, 1000.0))
        self.assertIsNone(d["step_size"])  # automatic

    def test_config_reads_back_and_reruns_the_same(self):
        x, y = ft.logistic_data(n=200)
        r = flymc.sample(x, y, kernel="mala", prior="laplace", step_size=0.1, **SMALL)
        cfg = r.config
        self.assertEqual((cfg["kernel"], cfg["prior"], cfg["step_size"]), ("mala", "laplace", 0.1))
        again = flymc.sample(x, y, **cfg)
        np.testing.assert_array_equal(r.draws, again.draws)

    def test_priors_as_written_and_an_intercept(self):
        x, y = ft.logistic_data(n=200)
        d = x.shape[1]
        means = np.linspace(-0.5, 0.5, d)
        r = flymc.sample(x, y, intercept=True, prior_intercept="student_t(3, 0, 2.5)",
                         prior=f"normal({means.tolist()}, 2)", **SMALL)
        self.assertEqual(r.param_names[:2], ["intercept", "theta.1"])
        self.assertEqual(len(r.param_names), d + 1)
        self.assertEqual(r.config["prior_intercept"], "student_t(3, 0, 2.5)")
        with self.assertRaisesRegex(flymc.Error, "lists of 2 values"):
            flymc.sample(x, y, prior="normal([0, 1], 1)", **SMALL)
        with self.assertRaisesRegex(flymc.Error, "unknown distribution 'cauchy'"):
            flymc.sample(x, y, prior="cauchy(0, 1)", **SMALL)

    def test_seed_and_threads(self):
        x, y = ft.logistic_data(n=200)
        a = flymc.sample(x, y, threads=1, **SMALL)
        b = flymc.sample(x, y, threads=2, **SMALL)
        np.testing.assert_array_equal(a.draws, b.draws)  # any thread count, the same draws
        c = flymc.sample(x, y, **{**SMALL, "seed": 6})
        self.assertFalse(np.array_equal(a.draws, c.draws))

    def test_any_array_layout(self):
        # Fortran order, float32 and integer arrays, lists: converted to C-ordered float64.
        x, y = ft.logistic_data(n=200)
        x = np.round(x * 4) / 4  # exact in float32
        a = flymc.sample(x, y, **SMALL)
        for x2, y2 in ((np.asfortranarray(x), y), (x.astype(np.float32), y.astype(np.int64)),
                       (x.tolist(), y.tolist())):
            np.testing.assert_array_equal(flymc.sample(x2, y2, **SMALL).draws, a.draws)

    def test_auto_and_other_models(self):
        x, y = ft.softmax_data()
        r = flymc.sample(x, y, model="softmax", **SMALL)
        self.assertEqual(r.draws.shape, (3, 80, 9))
        self.assertEqual(r.param_names[:2], ["W.1.1", "W.1.2"])
        x, y = ft.logistic_data(n=300)
        # auto chooses each candidate's kernel: a kernel given with it would be ignored
        with self.assertRaises(flymc.UsageError):
            flymc.sample(x, y, **{**SMALL, "algo": "auto", "kernel": "mala"})
        r = flymc.sample(x, y, **{**SMALL, "algo": "auto"})
        self.assertIn(r.run["algo_chosen"], ("flymc", "full", "smh", "zigzag-cv"))
        self.assertEqual(r.config["algo"], r.run["algo_chosen"])
        names = [c["name"] for c in r.run["auto_candidates"]]
        self.assertIn(r.run["auto_chosen"], names)
        self.assertIn("regular-nuts-laplace", names)
        self.assertIsInstance(r.run["prediction_rough"], bool)
        self.assertIsNone(flymc.sample(x, y, **SMALL).run["prediction_rough"])


class Load(unittest.TestCase):
    def test_load_reads_what_the_command_line_reads(self):
        x, y = ft.logistic_data(n=50, zero_one=True)
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "d.csv")
            ft.write_csv(path, x, y)
            x2, y2 = flymc.load(path)
            np.testing.assert_array_equal(x2, x)
            np.testing.assert_array_equal(y2, 2 * y - 1)  # 0/1 read as -1/+1
            np.testing.assert_array_equal(flymc.load(path, model="robust")[1], y)
            with self.assertRaises(flymc.DataError):
                flymc.load(os.path.join(tmp, "missing.csv"))

    def test_load_names_columns_as_the_command_line_does(self):
        # A CSV with a header: features, then trials, the response, a weight and an offset.
        rng = np.random.default_rng(9)
        n = 40
        x = np.c_[np.ones(n), rng.normal(size=n)]
        m = 1.0 + np.arange(n) % 3
        y = np.minimum(m, np.arange(n) % 2)
        w = np.where(np.arange(n) % 4 == 0, 2.0, 1.0)
        off = 0.1 * rng.normal(size=n)
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "d.csv")
            ft.write_csv(path, np.c_[x, m, y, w, off], np.zeros(n))
            x2, y2, extras = flymc.load(path, model="binomial", response="x4", weights="x5",
                                        trials=3, offset="x6")
            np.testing.assert_array_equal(x2, np.c_[np.zeros(n), x])  # the unnamed first column
            np.testing.assert_array_equal(y2, y)
            self.assertEqual(sorted(extras), ["offset", "trials", "weights"])
            np.testing.assert_array_equal(extras["trials"], m)
            np.testing.assert_array_equal(extras["weights"], w)
            np.testing.assert_array_equal(extras["offset"], off)
            # Without weights, trials or offsets: (X, y) as before.
            self.assertEqual(len(flymc.load(path, model="gaussian", response="x4")), 2)
            # A bad or missing column is named, as the command line names it.
            with self.assertRaisesRegex(flymc.DataError, "nope"):
                flymc.load(path, model="binomial", trials="nope")
            w_bad = np.where(np.arange(n) == 7, -1.0, w)
            ft.write_csv(path, np.c_[x, m, y, w_bad, off], np.zeros(n))
            with self.assertRaisesRegex(flymc.DataError, r"d\.csv:9: field 6 \(x5, weight"):
                flymc.load(path, model="binomial", response="x4", weights="x5")
            with self.assertRaises(TypeError):
                flymc.load(path, weights=1.5)



class SingleIndexModels(unittest.TestCase):
    """The single-index models by keyword: probit on the logistic labels, Gaussian regression
    with its noise scale, whose FlyMC bound is exact (no datum ever bright)."""

    def test_probit_and_gaussian_by_keyword(self):
        x, y = ft.logistic_data()
        r = flymc.sample(x, y, model="probit", **SMALL)
        self.assertEqual(r.draws.shape, (3, 80, x.shape[1]))
        self.assertTrue(np.all(np.isfinite(r.draws)))
        g = flymc.sample(x, x @ np.ones(x.shape[1]), model="gaussian", noise_scale=0.5, **SMALL)
        self.assertTrue(np.all(g.sampler["n_bright__"] == 0))

    def test_gaussian_with_sigma_inferred(self):
        x, _ = ft.logistic_data()
        rng = np.random.default_rng(3)
        y = x @ np.linspace(1.0, -1.0, x.shape[1]) + 0.8 * rng.normal(size=x.shape[0])
        small = {**SMALL, "algo": "full", "kernel": "nuts"}
        g = flymc.sample(x, y, model="gaussian", prior_sigma="student_t(3, 0, 2.5)", **small)
        self.assertEqual(g.param_names[-1], "sigma")
        self.assertEqual(g.draws.shape, (3, 80, x.shape[1] + 1))
        self.assertTrue(np.all(g.draws[..., -1] > 0.0))
        self.assertLess(abs(np.mean(g.draws[..., -1]) - 0.8), 0.2)
        with self.assertRaisesRegex(flymc.Error, "with sigma inferred"):
            flymc.sample(x, y, model="gaussian", **SMALL)  # FlyMC

    def test_student_t_with_sigma_inferred(self):
        x, _ = ft.logistic_data()
        rng = np.random.default_rng(4)
        y = x @ np.linspace(1.0, -1.0, x.shape[1]) + 0.8 * rng.standard_t(4, size=x.shape[0])
        small = {**SMALL, "algo": "full", "kernel": "nuts"}
        t = flymc.sample(x, y, model="student_t", student_nu=4.0, prior_sigma="normal(0, 2)",
                         **small)
        self.assertEqual(t.param_names[-1], "sigma")
        self.assertEqual(t.draws.shape, (3, 80, x.shape[1] + 1))
        self.assertTrue(np.all(t.draws[..., -1] > 0.0))
        with self.assertRaisesRegex(flymc.UsageError, "noise_scale|--noise-scale"):
            flymc.sample(x, y, model="student_t", noise_scale=0.8, **small)

    def test_another_models_constant_is_refused(self):
        # --nu is robust regression's: for probit it would be ignored, so it is refused.
        x, y = ft.logistic_data()
        with self.assertRaisesRegex(flymc.UsageError, "student_nu|--nu"):
            flymc.sample(x, y, model="probit", student_nu=3.0, **SMALL)

class RowArrays(unittest.TestCase):
    """weights=, trials= and offset= arrays beside X and y: binomial counts of their trials, each
    datum's weight and offset read as the command line reads its columns."""

    def test_binomial_with_trials_weights_and_offsets(self):
        rng = np.random.default_rng(5)
        n = 300
        x = np.c_[np.ones(n), rng.normal(size=n)]
        off = 0.2 * rng.normal(size=n)
        m = 1 + np.arange(n) % 4
        p = 1.0 / (1.0 + np.exp(-(x @ np.array([0.3, -0.8]) + off)))
        y = rng.binomial(m, p).astype(float)
        w = np.where(np.arange(n) % 3 == 0, 2.0, 1.0)
        r = flymc.sample(x, y, model="binomial", trials=m.astype(float), weights=w, offset=off,
                         **{**SMALL, "kernel": "nuts"})
        self.assertEqual(r.draws.shape, (3, 80, 2))
        self.assertTrue(np.all(np.isfinite(r.draws)))
        # Doubling every weight is the same as every datum twice: a narrower posterior.
        r2 = flymc.sample(x, y, model="binomial", trials=m.astype(float), weights=2 * w,
                          offset=off, **{**SMALL, "kernel": "nuts"})
        self.assertLess(r2.draws[:, :, 1].std(), r.draws[:, :, 1].std())
        with self.assertRaisesRegex(flymc.DataError, "weights has 3 values but X has 300 rows"):
            flymc.sample(x, y, model="binomial", trials=m.astype(float), weights=w[:3], **SMALL)
        with self.assertRaisesRegex(flymc.ConfigError, "does not read per-row weights"):
            flymc.sample(x, y, model="binomial", trials=m.astype(float), algo="bps")


if __name__ == "__main__":
    unittest.main()
