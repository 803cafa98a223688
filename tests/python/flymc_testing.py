"""What the Python module's tests share: small seeded data sets, the CSV files `flymc sample`
reads, and a reader of the draw files it writes (docs/output.md).

CTest runs each test file with Debian's python3, PYTHONPATH holding the built module and
FLYMC_CLI naming the built command line (tests/CMakeLists.txt).
"""
import os
import subprocess

import numpy as np


def logistic_data(n=400, d=3, seed=1, zero_one=False):
    """X with a bias column, y in {-1, +1} (or {0, 1}) from a logistic model."""
    rng = np.random.default_rng(seed)
    x = np.column_stack([np.ones(n), rng.normal(size=(n, d - 1))])
    theta = np.linspace(0.5, -1.0, d)
    positive = rng.random(n) < 1.0 / (1.0 + np.exp(-x @ theta))
    return x, np.where(positive, 1.0, 0.0 if zero_one else -1.0)


def softmax_data(n=300, d=3, classes=3, seed=2):
    """y in 0..classes-1 from a softmax model."""
    rng = np.random.default_rng(seed)
    x = np.column_stack([np.ones(n), rng.normal(size=(n, d - 1))])
    w = rng.normal(size=(classes, d))
    p = np.exp(x @ w.T)
    p /= p.sum(axis=1, keepdims=True)
    y = np.array([rng.choice(classes, p=row) for row in p], dtype=float)
    return x, y


def robust_data(n=300, d=3, seed=3):
    """Real responses with Student-t noise."""
    rng = np.random.default_rng(seed)
    x = np.column_stack([np.ones(n), rng.normal(size=(n, d - 1))])
    return x, x @ np.linspace(1.0, -0.5, d) + rng.standard_t(4, size=n)


def write_csv(path, x, y):
    """The data file of `flymc sample --data`: label first; repr() is Python's shortest string
    that reads back to the same double, so the command line reads the very same numbers."""
    with open(path, "w") as f:
        f.write("label," + ",".join(f"x{j + 1}" for j in range(x.shape[1])) + "\n")
        for label, row in zip(y, x):
            f.write(",".join(repr(float(v)) for v in (label, *row)) + "\n")


def run_cli(*args):
    """Runs the built `flymc` with `args`; fails with its stderr if it fails."""
    done = subprocess.run([os.environ["FLYMC_CLI"], *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise AssertionError(f"flymc {' '.join(args)}: exit {done.returncode}\n{done.stderr}")


class DrawFile:
    """A chain-<k>.csv: columns, rows (float64, as written), step size and inverse metric."""

    def __init__(self, path):
        self.columns, rows, self.step_size, self.inv_metric = None, [], None, []
        metric_lines = False
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line.startswith("# Step size ="):
                    self.step_size = float(line.split("=", 1)[1])
                elif line.endswith("inverse mass matrix:"):
                    metric_lines = True
                elif line.startswith("#"):
                    body = line[1:].strip()
                    if metric_lines and body and body[0] in "-+.0123456789":
                        self.inv_metric.append([float(v) for v in body.split(",")])
                    else:
                        metric_lines = False
                elif self.columns is None:
                    self.columns = line.split(",")
                elif line:
                    metric_lines = False
                    rows.append([float(v) for v in line.split(",")])
        self.rows = np.array(rows, dtype=float).reshape(-1, len(self.columns))
