// `flymc data fmnist|synth-logistic|synth-robust ...`: build a data set and write it as CSV or NPY.
#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <memory>
#include <string>

#include "commands.hpp"
#include "flymc/core/errors.hpp"
#include "flymc/data/loaders.hpp"
#include "flymc/datagen/datagen.hpp"

namespace flymc::cli {

namespace {

/// Lower-case extension of `path` including the dot ("" if none).
std::string extension(const std::string& path) {
  const std::size_t dot = path.find_last_of('.');
  const std::size_t slash = path.find_last_of('/');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return {};
  std::string ext = path.substr(dot);
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return ext;
}

/// Accepts output paths ending in .csv or .npy.
CLI::Validator data_file_validator() {
  return CLI::Validator(
      [](std::string& path) -> std::string {
        const std::string ext = extension(path);
        if (ext == ".csv" || ext == ".npy") return {};
        return "output file '" + path + "' must end in .csv or .npy";
      },
      "FILE.csv|FILE.npy", "DataFile");
}

void write_dataset(const Dataset& ds, const std::string& out) {
  const std::string ext = extension(out);
  if (ext == ".csv") {
    save_csv(ds, out);
  } else if (ext == ".npy") {
    save_npy(ds, out);
  } else {
    throw UsageError("output file '" + out + "' must end in .csv or .npy");
  }
  std::printf("wrote %s: %zu rows x %zu columns (label + %zu features)\n", out.c_str(), ds.n(),
              ds.d() + 1, ds.d());
  std::fflush(stdout);
}

struct SynthArgs {
  std::size_t n = 0, d = 0;
  std::uint64_t seed = 0;
  std::string out;
};

struct SynthRobustArgs {
  SynthArgs base;
  double nu = 4.0, noise_scale = 1.0;
};

struct FmnistArgs {
  FmnistOptions opt;
  std::string out;
};

}  // namespace

void add_data_command(CLI::App& app) {
  CLI::App* data = app.add_subcommand(
      "data", "Build a data set (Fashion-MNIST with PCA, synthetic logistic or robust regression)");
  data->require_subcommand(1);

  auto fm = std::make_shared<FmnistArgs>();
  CLI::App* fcmd = data->add_subcommand(
      "fmnist",
      "Fashion-MNIST classes projected on their top principal components (each scaled to unit "
      "variance on the training rows) plus a bias column; 2 classes are labelled +1/-1, more "
      "0..K-1");
  fcmd->add_option("--classes", fm->opt.classes,
                   "Classes to keep, comma-separated (2 classes: first -> +1, second -> -1)")
      ->delimiter(',')
      ->check(CLI::Range(0, 9))
      ->capture_default_str();
  fcmd->add_option("--pca", fm->opt.pca, "Number of principal components")
      ->check(CLI::Range(1, 784))
      ->capture_default_str();
  fcmd->add_option("--split", fm->opt.split,
                   "train, test (t10k images with the training PCA and scales), or all (train "
                   "then test)")
      ->check(CLI::IsMember({"train", "test", "all"}))
      ->capture_default_str();
  fcmd->add_option("--augment", fm->opt.augment,
                   "K: add K randomly deformed copies of every image (small affine move and "
                   "elastic distortion), n*(K+1) rows: the images, then copy 1 of each, ...")
      ->capture_default_str();
  add_run_named(fcmd, "seed", fm->opt.seed, "Random seed of the deformations")
      ->capture_default_str();
  fcmd->add_option("--out", fm->out, "Output file (.csv or .npy)")
      ->required()
      ->check(data_file_validator());
  fcmd->add_option("--dir", fm->opt.dir,
                   "Directory of the IDX .gz files (default: $FLYMC_FMNIST_DIR if set, else "
                   "/usr/share/datasets/fashion-mnist)");
  fcmd->callback([fm] {
    // Streamed: the rows are written as they are made, so --augment needs no memory per row.
    const std::size_t n = write_fmnist(fm->opt, fm->out);
    const auto d = static_cast<std::size_t>(fm->opt.pca) + 1;
    std::printf("wrote %s: %zu rows x %zu columns (label + %zu features)\n", fm->out.c_str(), n,
                d + 1, d);
    std::fflush(stdout);
  });

  auto sl = std::make_shared<SynthArgs>();
  constexpr std::size_t max_rows = std::numeric_limits<Index>::max();
  CLI::App* scmd = data->add_subcommand(
      "synth-logistic",
      "Synthetic logistic regression: x ~ N(0, I) plus a bias column, theta ~ N(0, I/d), "
      "y = +1 with probability sigmoid(x . theta), else -1");
  scmd->add_option("--n", sl->n, "Number of rows")
      ->required()
      ->check(CLI::Range(std::size_t{1}, max_rows));
  scmd->add_option("--d", sl->d, "Number of features, including the bias column")
      ->required()
      ->check(CLI::Range(std::size_t{1}, max_rows));
  add_run_named(scmd, "seed", sl->seed, "Random seed")->capture_default_str();
  scmd->add_option("--out", sl->out, "Output file (.csv or .npy)")
      ->required()
      ->check(data_file_validator());
  scmd->callback([sl] { write_dataset(synth_logistic(sl->n, sl->d, sl->seed), sl->out); });

  auto sr = std::make_shared<SynthRobustArgs>();
  CLI::App* rcmd = data->add_subcommand(
      "synth-robust",
      "Synthetic robust regression (the FlyMC paper's 1.8M x 57 OPV analogue: --n 1800000 --d 57 "
      "--seed 1): d-1 correlated unit-variance features from ceil((d-1)/8) latent factors plus a "
      "bias column, sparse true weights (20% non-zero, N(0,1)), y = x . theta + noise-scale * "
      "Student-t(nu) noise");
  rcmd->add_option("--n", sr->base.n, "Number of rows")
      ->required()
      ->check(CLI::Range(std::size_t{1}, max_rows));
  rcmd->add_option("--d", sr->base.d, "Number of features, including the bias column")
      ->required()
      ->check(CLI::Range(std::size_t{1}, max_rows));
  add_run_named(rcmd, "seed", sr->base.seed, "Random seed")->capture_default_str();
  add_run_named(rcmd, "nu", sr->nu, "Student-t degrees of freedom of the noise")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  add_run_named(rcmd, "noise-scale", sr->noise_scale, "Scale of the Student-t noise")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  rcmd->add_option("--out", sr->base.out, "Output file (.csv or .npy)")
      ->required()
      ->check(data_file_validator());
  rcmd->callback([sr] {
    write_dataset(synth_robust(sr->base.n, sr->base.d, sr->base.seed, sr->nu, sr->noise_scale),
                  sr->base.out);
  });
}

}  // namespace flymc::cli
