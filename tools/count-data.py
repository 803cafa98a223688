#!/usr/bin/python3
"""Count (and Student-t) responses for the tall benchmarks (docs/bench/notes.md) and the Stan golds
(docs/validation.md), from a labelled NPY file whose first column is the label and the rest
features (data/fmnist-7v9-1e6.npy and -1e7.npy).

Writes columns (y, offset, features): exposures t_n ~ U(0.5, 2), offsets log t_n,
theta_j ~ N(0, 0.5^2/50) on the features and 0.3 on the last (the bias column), and
  poisson:  y_n ~ Poisson(t_n e^{x_n theta})                            (seed 53)
  negbin:   y_n ~ Poisson(G_n), G_n ~ Gamma(r, t_n e^{x_n theta} / r)   (seed 54, r = 2)
  student:  y_n = x_n theta + log t_n + s e_n, e_n ~ Student-t(nu)    (seed 55, s = 0.5, nu = 4)
so y_n has mean mu_n = t_n e^{x_n theta} and, for negbin, variance mu_n + mu_n^2 / r.
  /usr/bin/python3 tools/count-data.py poisson data/fmnist-7v9-1e6.npy data/poisson-7v9-1e6.npy
The first N rows of such a file as CSV with a header (y, offset, x1, ...; a file named binom*
has trials in its second column), for Stan
(tools/stan-gold.R) and flymc alike:
  /usr/bin/python3 tools/count-data.py csv data/negbin-7v9-1e6.npy data/negbin-7v9-3000.csv 3000
"""
import sys

import numpy as np

FAMILIES = {"poisson": 53, "negbin": 54, "student": 55}
DISPERSION = 2.0
SCALE, NU = 0.5, 4.0


def main(family, src, dst):
    a = np.load(src, mmap_mode="r")
    n, c = a.shape
    rng = np.random.default_rng(FAMILIES[family])
    theta = rng.normal(0, 0.5 / np.sqrt(50), size=c - 1)
    theta[-1] = 0.3
    out = np.lib.format.open_memmap(dst, mode="w+", dtype=np.float64, shape=(n, c + 1))
    total = 0.0
    for lo in range(0, n, 500000):
        x = np.asarray(a[lo:lo + 500000, 1:])
        off = np.log(rng.uniform(0.5, 2.0, size=len(x)))
        if family == "student":
            y = x @ theta + off + SCALE * rng.standard_t(NU, size=len(x))
        else:
            mu = np.exp(x @ theta + off)
            if family == "negbin":
                mu = rng.gamma(DISPERSION, mu / DISPERSION)
            y = rng.poisson(mu)
        out[lo:lo + len(x), 0] = y
        out[lo:lo + len(x), 1] = off
        out[lo:lo + len(x), 2:] = x
        total += y.sum()
    out.flush()
    print(dst, n, "rows, mean response", total / n)


def head_csv(src, dst, rows):
    a = np.asarray(np.load(src, mmap_mode="r")[:int(rows)])
    second = "trials" if "binom" in src else "offset"
    header = ",".join(["y", second] + ["x%d" % j for j in range(1, a.shape[1] - 1)])
    np.savetxt(dst, a, delimiter=",", header=header, comments="", fmt="%.17g")
    print(dst, len(a), "rows")


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "csv":
        head_csv(*sys.argv[2:])
    elif len(sys.argv) == 4 and sys.argv[1] in FAMILIES:
        main(*sys.argv[1:])
    else:
        sys.exit(__doc__)
