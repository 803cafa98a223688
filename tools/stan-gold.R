#!/usr/bin/env Rscript
# The Stan reference posterior ("gold") of flymc's logistic regression on a data file, for
# tools/stan-gold-check.py (docs/validation.md, "Against Stan"). Debian's r-cran-rstan
# (FLYMC_DEPS_STAN=1 tools/install-deps.sh) fits the same model flymc samples:
#
#   y_n ∈ {−1, +1},  p(y_n | x_n, θ) = σ(y_n x_n·θ),  θ ~ N(0, prior_sd² I)
#
# with Stan's NUTS and its adapted diagonal metric, and writes every coefficient's posterior
# mean, sd, Monte Carlo standard error of the mean, bulk effective sample size and R-hat (rstan's
# monitor) as JSON, named as flymc's summary.json names them (theta.1 ... theta.D).
#
# Usage: Rscript tools/stan-gold.R DATA.csv OUT.json [prior_sd chains warmup iter seed]
# DATA.csv: flymc's CSV (a header, the label first, then the features; no bias is added).
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
if (length(args) < 2) stop("usage: stan-gold.R DATA.csv OUT.json [prior_sd chains warmup iter seed]")
num <- function(i, default) if (length(args) >= i) as.numeric(args[[i]]) else default
prior_sd <- num(3, 1)
chains <- as.integer(num(4, 4))
warmup <- as.integer(num(5, 1000))
iter <- as.integer(num(6, 4000))
seed <- as.integer(num(7, 1))

d <- as.matrix(read.csv(args[[1]], header = TRUE))
y <- d[, 1]
if (!all(y == 1 | y == -1)) stop(args[[1]], ": labels must be -1 or +1")
x <- d[, -1, drop = FALSE]

model <- "
data {
  int<lower=1> N;
  int<lower=1> D;
  matrix[N, D] X;
  int<lower=0, upper=1> y01[N];
  real<lower=0> prior_sd;
}
parameters {
  vector[D] theta;
}
model {
  theta ~ normal(0, prior_sd);
  y01 ~ bernoulli_logit(X * theta);
}
"
fit <- stan(model_code = model,
            data = list(N = nrow(x), D = ncol(x), X = x, y01 = as.integer((y + 1) / 2),
                        prior_sd = prior_sd),
            chains = chains, warmup = warmup, iter = warmup + iter, seed = seed,
            cores = min(chains, parallel::detectCores()), refresh = 0)
sims <- as.array(fit)[, , seq_len(ncol(x)), drop = FALSE]
mon <- monitor(sims, warmup = 0, print = FALSE)
times <- get_elapsed_time(fit)

f <- function(v) trimws(formatC(v, digits = 17, format = "g"))
rows <- vapply(seq_len(ncol(x)), function(j) {
  sprintf('{"name": "theta.%d", "mean": %s, "sd": %s, "mcse_mean": %s, "ess_bulk": %s, "rhat": %s}',
          j, f(mon[j, "mean"]), f(mon[j, "sd"]), f(mon[j, "se_mean"]), f(mon[j, "Bulk_ESS"]),
          f(mon[j, "Rhat"]))
}, "")
json <- paste0(
  '{"source": "rstan ', as.character(packageVersion("rstan")), ' NUTS, diagonal metric",\n',
  ' "data": "', basename(args[[1]]), '", "n": ', nrow(x), ', "d": ', ncol(x), ',\n',
  ' "prior_sd": ', f(prior_sd), ', "chains": ', chains, ', "warmup": ', warmup,
  ', "iter": ', iter, ', "seed": ', seed, ',\n',
  ' "sampling_seconds": ', f(sum(times[, "sample"])), ',\n',
  ' "params": [\n  ', paste(rows, collapse = ",\n  "), "\n ]}\n")
writeLines(json, args[[2]], sep = "")
cat(sprintf("stan-gold: %s: min bulk ESS %.0f, max R-hat %.4f -> %s\n", args[[1]],
            min(mon[, "Bulk_ESS"]), max(mon[, "Rhat"]), args[[2]]))
