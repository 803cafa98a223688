"""Bad input raises ValueError (flymc.DataError, flymc.ConfigError) carrying the library's own
message, never a crash; wrong types and unknown options raise TypeError; the module stays usable."""
import unittest

import numpy as np

import flymc
import flymc_testing as ft


class Errors(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.x, cls.y = ft.logistic_data(n=100)

    def raises(self, kind, message, x=None, y=None, **options):
        x = self.x if x is None else x
        y = self.y if y is None else y
        with self.assertRaises(kind) as caught:
            flymc.sample(x, y, **{"algo": "flymc", "chains": 1, "warmup": 10, "iters": 10,
                                  **options})
        self.assertIn(message, str(caught.exception))
        return caught.exception

    def test_errors_are_value_errors(self):
        self.assertTrue(issubclass(flymc.Error, ValueError))
        for cls in (flymc.DataError, flymc.ConfigError, flymc.UsageError):
            self.assertTrue(issubclass(cls, flymc.Error))

    def test_bad_data(self):
        y = self.y.copy()
        y[7] = 2.0
        self.raises(flymc.DataError, "X, y: row 7: field 1 (label): label 2 is not a binary label",
                    y=y)
        x = self.x.copy()
        x[3, 1] = np.nan
        self.raises(flymc.DataError, "X, y: row 3: field 3 (x2): NaN is not allowed", x=x)
        self.raises(flymc.DataError, "X, y: row 0: field 1 (label): Inf is not allowed",
                    y=np.r_[np.inf, self.y[1:]], model="robust")
        self.raises(flymc.DataError, "X must be 2-D", x=self.x[:, 0])
        self.raises(flymc.DataError, "y must be 1-D", y=self.y[:, None])
        self.raises(flymc.DataError, "X has 100 rows but y has 99 labels", y=self.y[1:])
        self.raises(flymc.DataError, "needs at least one row and one feature", x=self.x[:0],
                    y=self.y[:0])
        self.raises(flymc.DataError, "row 0: field 1 (label): label -1 is not a class index", y=self.y, model="softmax")

    def test_bad_options(self):
        self.raises(flymc.ConfigError, "algo='gibbs' is not one of: flymc, full", algo="gibbs")
        self.raises(flymc.ConfigError, "kernel='x' is not one of: rwmh, mala", kernel="x")
        self.raises(flymc.ConfigError, "--chains must be in [1,", chains=0)
        self.raises(flymc.ConfigError, "--thin must be in [1,", thin=0)
        self.raises(flymc.ConfigError, "seed must be an integer in [0, 2**64 - 1]", seed=-1)
        self.raises(flymc.ConfigError, "a single-index family", algo="sgld",
                    model="softmax", y=(self.y > 0).astype(float))

    def test_wrong_types(self):
        self.raises(TypeError, "unexpected keyword argument 'chain'", chain=2)
        self.raises(TypeError, "iters must be an integer", iters=10.5)
        self.raises(TypeError, "adapt_metric must be True or False", adapt_metric=1)
        self.raises(TypeError, "y must be an array of numbers", y=np.array(["a"] * 100))

    def test_usable_after_errors(self):
        with self.assertRaises(ValueError):
            flymc.sample(self.x, self.y, kernel="nope")
        r = flymc.sample(self.x, self.y, algo="flymc", chains=1, warmup=10, iters=10)
        self.assertEqual(r.draws.shape, (1, 10, 3))


if __name__ == "__main__":
    unittest.main()
