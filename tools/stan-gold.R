#!/usr/bin/env Rscript
# The Stan reference posterior ("gold") of a flymc model on a data file, for
# tools/stan-gold-check.py (docs/validation.md, "Against Stan"). Debian's r-cran-rstan
# (FLYMC_DEPS_STAN=1 tools/install-deps.sh) fits the same model flymc samples, with Stan's NUTS
# and its adapted diagonal metric, and writes every parameter's posterior mean, sd, Monte Carlo
# standard error of the mean, bulk effective sample size and R-hat (rstan's monitor) as JSON,
# named as flymc's summary.json names them (theta.1 ... theta.D, then phi or sigma). MODEL:
#
#   logistic  y_n ∈ {−1, +1}, p(y_n | x_n, θ) = σ(y_n x_n·θ)
#   poisson   y_n ~ Poisson(e^{x_n·θ + o_n})                        (flymc --model poisson)
#   negbin    y_n ~ NegBinomial2(e^{x_n·θ + o_n}, φ), φ ~ exponential(phi_rate) on φ > 0
#                                                  (flymc --model negbin --prior-phi 'exponential(R)')
#   negbin-known  the same with φ = phi_rate given   (flymc --model negbin --dispersion R)
#   binomial  y_n ~ Binomial(m_n, σ(x_n·θ))          (flymc --model binomial --trials 1)
#   student_t y_n ~ Student-t(nu, x_n·θ + o_n, σ), σ ~ exponential(phi_rate) on σ > 0
#                        (flymc --model student_t --nu NU --prior-sigma 'exponential(R)')
#
# each with θ ~ N(0, prior_sd² I) (flymc's default prior, --prior-sd).
#
# Usage: Rscript tools/stan-gold.R DATA.csv OUT.json [prior_sd chains warmup iter seed MODEL
#                                                      phi_rate nu]
# DATA.csv: flymc's CSV (a header, the response first, then the features; no bias is added);
# for poisson, the negbins and student_t the second column is the offset o_n (flymc --offset 1), for binomial
# the trials m_n (flymc --trials 1).
suppressPackageStartupMessages(library(rstan))

# Debian's r-cran-bh leaves Boost in /usr/include (libboost-dev) and ships no include directory,
# which rstan looks for: a private copy of the package whose include/ holds only a link to the
# system Boost (a link to /usr/include itself would put it on the compiler's -I path and break
# the C++ library's #include_next).
if (!nzchar(system.file("include", "boost", package = "BH")) && dir.exists("/usr/include/boost")) {
  lib <- file.path(tempdir(), "bh-lib")
  dir.create(lib, showWarnings = FALSE)
  file.copy(system.file(package = "BH"), lib, recursive = TRUE)
  dir.create(file.path(lib, "BH", "include"), showWarnings = FALSE)
  file.symlink("/usr/include/boost", file.path(lib, "BH", "include", "boost"))
  .libPaths(c(lib, .libPaths()))
}

args <- commandArgs(trailingOnly = TRUE)
if (length(args) < 2) {
  stop("usage: stan-gold.R DATA.csv OUT.json [prior_sd chains warmup iter seed MODEL phi_rate nu]")
}
num <- function(i, default) if (length(args) >= i) as.numeric(args[[i]]) else default
prior_sd <- num(3, 1)
chains <- as.integer(num(4, 4))
warmup <- as.integer(num(5, 1000))
iter <- as.integer(num(6, 4000))
seed <- as.integer(num(7, 1))
family <- if (length(args) >= 8) args[[8]] else "logistic"
phi_rate <- num(9, 0.01)
nu <- num(10, 4)

d <- as.matrix(read.csv(args[[1]], header = TRUE))
y <- d[, 1]
counts <- family %in% c("poisson", "negbin", "negbin-known", "binomial")
offsets <- family %in% c("poisson", "negbin", "negbin-known", "student_t")
offset <- if (offsets) d[, 2] else rep(0, nrow(d))
trials <- if (family == "binomial") as.integer(d[, 2]) else rep(0L, nrow(d))
x <- d[, -(if (counts || offsets) 1:2 else 1), drop = FALSE]
if (family == "logistic" && !all(y == 1 | y == -1)) stop(args[[1]], ": labels must be -1 or +1")
if (counts && !all(y >= 0 & y == round(y))) stop(args[[1]], ": responses must be counts")

likelihood <- switch(family,
  logistic = "  y01 ~ bernoulli_logit(X * theta);",
  poisson = "  ycount ~ poisson_log(X * theta + off);",
  negbin = "  phi ~ exponential(phi_rate);\n  ycount ~ neg_binomial_2_log(X * theta + off, phi);",
  "negbin-known" = "  ycount ~ neg_binomial_2_log(X * theta + off, phi_rate);",
  binomial = "  ycount ~ binomial_logit(trials, X * theta);",
  student_t = "  sigma ~ exponential(phi_rate);\n  yreal ~ student_t(nu, X * theta + off, sigma);",
  stop("MODEL must be logistic, poisson, negbin, negbin-known, binomial or student_t, got ",
       family))
model <- paste0("
data {
  int<lower=1> N;
  int<lower=1> D;
  matrix[N, D] X;
  int<lower=0, upper=1> y01[N];
  int<lower=0> ycount[N];
  int<lower=0> trials[N];
  vector[N] yreal;
  vector[N] off;
  real<lower=0> prior_sd;
  real<lower=0> phi_rate;
  real<lower=0> nu;
}
parameters {
  vector[D] theta;
", if (family == "negbin") "  real<lower=0> phi;\n" else "",
if (family == "student_t") "  real<lower=0> sigma;\n" else "", "}
model {
  theta ~ normal(0, prior_sd);
", likelihood, "
}
")
fit <- stan(model_code = model,
            data = list(N = nrow(x), D = ncol(x), X = x,
                        y01 = if (family == "logistic") as.integer((y + 1) / 2) else rep(0L, nrow(x)),
                        ycount = if (counts) as.integer(y) else rep(0L, nrow(x)),
                        trials = trials, yreal = if (counts) rep(0, nrow(x)) else y,
                        off = offset, prior_sd = prior_sd, phi_rate = phi_rate, nu = nu),
            chains = chains, warmup = warmup, iter = warmup + iter, seed = seed,
            cores = min(chains, parallel::detectCores()), refresh = 0)
names <- c(sprintf("theta.%d", seq_len(ncol(x))), if (family == "negbin") "phi",
           if (family == "student_t") "sigma")
sims <- as.array(fit)[, , seq_along(names), drop = FALSE]
mon <- monitor(sims, warmup = 0, print = FALSE)
times <- get_elapsed_time(fit)

f <- function(v) trimws(formatC(v, digits = 17, format = "g"))
rows <- vapply(seq_along(names), function(j) {
  sprintf('{"name": "%s", "mean": %s, "sd": %s, "mcse_mean": %s, "ess_bulk": %s, "rhat": %s}',
          names[[j]], f(mon[j, "mean"]), f(mon[j, "sd"]), f(mon[j, "se_mean"]),
          f(mon[j, "Bulk_ESS"]), f(mon[j, "Rhat"]))
}, "")
json <- paste0(
  '{"source": "rstan ', as.character(packageVersion("rstan")), ' NUTS, diagonal metric",\n',
  ' "model": "', family, '", "data": "', basename(args[[1]]), '", "n": ', nrow(x),
  ', "d": ', ncol(x), ',\n',
  ' "prior_sd": ', f(prior_sd), if (startsWith(family, "negbin")) paste0(', "phi_rate": ', f(phi_rate)) else "",
  if (family == "student_t") paste0(', "sigma_rate": ', f(phi_rate), ', "nu": ', f(nu)) else "",
  ', "chains": ', chains, ', "warmup": ', warmup,
  ', "iter": ', iter, ', "seed": ', seed, ',\n',
  ' "sampling_seconds": ', f(sum(times[, "sample"])), ',\n',
  ' "params": [\n  ', paste(rows, collapse = ",\n  "), "\n ]}\n")
writeLines(json, args[[2]], sep = "")
cat(sprintf("stan-gold: %s: min bulk ESS %.0f, max R-hat %.4f -> %s\n", args[[1]],
            min(mon[, "Bulk_ESS"]), max(mon[, "Rhat"]), args[[2]]))
