// Tests of build_fmnist and write_fmnist (on the Debian package dataset-fashion-mnist, a declared
// dependency, and on small IDX files made here, corrupt or not), of the image deformations that
// grow Fashion-MNIST, and of synth_logistic.
#include <doctest/doctest.h>
#include <tbb/global_control.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "flymc/core/errors.hpp"
#include "flymc/data/dataset.hpp"
#include "flymc/data/loaders.hpp"
#include "flymc/datagen/datagen.hpp"

namespace {

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

/// Directory of the Fashion-MNIST files the tests use ($FLYMC_FMNIST_DIR or the Debian path).
std::string fmnist_dir() {
  const char* env = std::getenv("FLYMC_FMNIST_DIR");
  return env != nullptr && *env != '\0' ? env : flymc::FmnistOptions{}.dir;
}

/// Fails the test with a clear message when the Fashion-MNIST files are absent.
void require_fmnist() {
  const std::string dir = fmnist_dir();
  for (const char* f : {"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
                        "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"}) {
    const std::string path = dir + "/" + f;
    REQUIRE_MESSAGE(std::filesystem::exists(path),
                    "Fashion-MNIST file " << path
                                          << " is missing: install the Debian package "
                                             "dataset-fashion-mnist (a declared dependency, see "
                                             "tools/install-deps.sh) or set FLYMC_FMNIST_DIR");
  }
}

template <class E>
std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  return "<no exception of the expected type>";
}

/// A scratch directory removed at the end of the test.
struct TempDir {
  std::filesystem::path dir;
  TempDir() {
    static int counter = 0;
    dir = std::filesystem::temp_directory_path() /
          ("flymc_test_datagen_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    std::filesystem::create_directories(dir);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
  std::string operator/(const std::string& name) const { return (dir / name).string(); }
};

void put_be32(std::string& s, std::uint32_t v) {
  for (int sh = 24; sh >= 0; sh -= 8) s += static_cast<char>((v >> sh) & 0xff);
}

/// IDX label file content: magic 0x801, count, labels.
std::string idx_labels(const std::vector<unsigned char>& labels, std::uint32_t magic = 0x801,
                       std::uint32_t count = 0xffffffff) {
  std::string s;
  put_be32(s, magic);
  put_be32(s, count == 0xffffffff ? static_cast<std::uint32_t>(labels.size()) : count);
  s.append(labels.begin(), labels.end());
  return s;
}

/// IDX image file content: magic 0x803, count, 28, 28, then `count` images (pixel = index % 251).
std::string idx_images(std::uint32_t count, std::uint32_t magic = 0x803, std::size_t drop = 0) {
  std::string s;
  put_be32(s, magic);
  put_be32(s, count);
  put_be32(s, 28);
  put_be32(s, 28);
  for (std::size_t i = 0; i < std::size_t{count} * 784; ++i)
    s += static_cast<char>((i * 7 + i / 784) % 251);
  s.resize(s.size() - drop);
  return s;
}

/// Writes `content` to `path` as is: zlib's gzread reads non-gzip files transparently, so plain
/// files named *.gz exercise the IDX validation.
void write_file(const std::string& path, const std::string& content) {
  std::ofstream out(path, std::ios::binary);
  out << content;
}

std::string fmnist_error(const std::string& dir, std::vector<int> classes = {0, 1}) {
  flymc::FmnistOptions o;
  o.dir = dir;
  o.classes = std::move(classes);
  o.pca = 2;
  return error_of<flymc::DataError>([&] { (void)flymc::build_fmnist(o); });
}

void check_standardized(const flymc::Dataset& ds, std::size_t k) {
  const auto n = static_cast<double>(ds.n());
  for (std::size_t c = 0; c < k; ++c) {
    double s = 0.0;
    for (std::size_t i = 0; i < ds.n(); ++i) s += ds.row(i)[c];
    const double mean = s / n;
    double ss = 0.0;
    for (std::size_t i = 0; i < ds.n(); ++i) ss += (ds.row(i)[c] - mean) * (ds.row(i)[c] - mean);
    CAPTURE(c);
    CHECK(std::abs(mean) < 1e-8);
    CHECK(std::abs(ss / n - 1.0) < 1e-8);
  }
}

/// Bitwise equality of `count` rows (labels and features) of `a` from row `a0` and of `b` from
/// row `b0`.
bool same_rows(const flymc::Dataset& a, std::size_t a0, const flymc::Dataset& b, std::size_t b0,
               std::size_t count) {
  if (a.d() != b.d() || a0 + count > a.n() || b0 + count > b.n()) return false;
  for (std::size_t i = 0; i < count; ++i) {
    if (std::bit_cast<std::uint64_t>(a.y()[a0 + i]) != std::bit_cast<std::uint64_t>(b.y()[b0 + i]))
      return false;
    for (std::size_t j = 0; j < a.d(); ++j)
      if (std::bit_cast<std::uint64_t>(a.row(a0 + i)[j]) !=
          std::bit_cast<std::uint64_t>(b.row(b0 + i)[j]))
        return false;
  }
  return true;
}

std::string file_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

/// Small IDX files in `dir`: `ntrain` training and `ntest` test images (idx_images' pattern),
/// labels alternating 0, 1. Options for classes 0,1 and 2 components on them.
flymc::FmnistOptions tiny_fmnist(const TempDir& dir, std::uint32_t ntrain, std::uint32_t ntest) {
  for (const auto& [prefix, count] : {std::pair<std::string, std::uint32_t>{"train", ntrain},
                                      std::pair<std::string, std::uint32_t>{"t10k", ntest}}) {
    std::vector<unsigned char> labels(count);
    for (std::size_t i = 0; i < count; ++i) labels[i] = static_cast<unsigned char>(i % 2);
    write_file(dir / (prefix + "-labels-idx1-ubyte.gz"), idx_labels(labels));
    write_file(dir / (prefix + "-images-idx3-ubyte.gz"), idx_images(count));
  }
  flymc::FmnistOptions o;
  o.dir = dir.dir.string();
  o.classes = {0, 1};
  o.pca = 2;
  return o;
}

/// A 28 x 28 test card: a bright disc with a dark bar through it on a black background.
std::vector<double> test_card() {
  std::vector<double> img(784, 0.0);
  for (int r = 0; r < 28; ++r)
    for (int c = 0; c < 28; ++c) {
      const double dr = r - 13.5, dc = c - 11.0;
      if (dr * dr + dc * dc < 81.0) img[static_cast<std::size_t>(r * 28 + c)] = 0.9;
      if (r >= 12 && r <= 15 && c >= 4 && c <= 20) img[static_cast<std::size_t>(r * 28 + c)] = 0.2;
    }
  return img;
}

double squared_distance(const double* a, const double* b, std::size_t d) {
  double s = 0.0;
  for (std::size_t j = 0; j < d; ++j) s += (a[j] - b[j]) * (a[j] - b[j]);
  return s;
}

}  // namespace

TEST_SUITE("unit") {
  TEST_CASE("build_fmnist: classes 7,9 train -> 12000 x 51, standardized components, bias") {
    require_fmnist();
    const flymc::Dataset ds = flymc::build_fmnist({});
    REQUIRE(ds.n() == 12000);
    REQUIRE(ds.d() == 51);
    std::size_t plus = 0, minus = 0;
    for (double y : ds.y()) {
      if (y == 1.0) ++plus;
      if (y == -1.0) ++minus;
    }
    CHECK(plus == 6000);
    CHECK(minus == 6000);
    check_standardized(ds, 50);
    bool bias_ok = true, pad_ok = true;
    for (std::size_t i = 0; i < ds.n(); ++i) {
      bias_ok = bias_ok && ds.row(i)[50] == 1.0;
      for (std::size_t j = ds.d(); j < ds.stride(); ++j) pad_ok = pad_ok && ds.row(i)[j] == 0.0;
    }
    CHECK(bias_ok);
    CHECK(pad_ok);
    // Components are ordered by decreasing variance before scaling; the sign convention makes the
    // result deterministic: two builds agree exactly.
    flymc::FmnistOptions o;
    o.pca = 3;
    const flymc::Dataset small = flymc::build_fmnist(o);
    for (std::size_t i = 0; i < 100; ++i)
      for (std::size_t c = 0; c < 3; ++c) CHECK(std::abs(small.row(i)[c] - ds.row(i)[c]) < 1e-9);
  }

  TEST_CASE("build_fmnist: test split uses the training basis; K > 2 classes are 0..K-1") {
    require_fmnist();
    flymc::FmnistOptions o;
    o.split = "test";
    const flymc::Dataset te = flymc::build_fmnist(o);
    REQUIRE(te.n() == 2000);
    REQUIRE(te.d() == 51);
    std::size_t plus = 0;
    for (double y : te.y()) plus += y == 1.0 ? 1 : 0;
    CHECK(plus == 1000);
    // Training scales applied to test rows: variance near (not exactly) 1, bias still 1.
    double ss = 0.0;
    for (std::size_t i = 0; i < te.n(); ++i) ss += te.row(i)[0] * te.row(i)[0];
    CHECK(ss / 2000.0 > 0.5);
    CHECK(ss / 2000.0 < 2.0);
    CHECK(te.row(1999)[50] == 1.0);

    flymc::FmnistOptions k3;
    k3.classes = {2, 0, 5};
    k3.pca = 4;
    k3.split = "test";
    const flymc::Dataset t3 = flymc::build_fmnist(k3);
    REQUIRE(t3.n() == 3000);
    REQUIRE(t3.d() == 5);
    std::size_t count[3] = {0, 0, 0};
    for (double y : t3.y()) {
      REQUIRE((y == 0.0 || y == 1.0 || y == 2.0));
      ++count[static_cast<int>(y)];
    }
    CHECK(count[0] == 1000);
    CHECK(count[1] == 1000);
    CHECK(count[2] == 1000);
  }

  TEST_CASE("build_fmnist: invalid options are ConfigErrors") {
    auto config_error = [](auto edit) {
      flymc::FmnistOptions o;
      o.dir = "/nonexistent";  // options are checked before any file is opened
      edit(o);
      return error_of<flymc::ConfigError>([&] { (void)flymc::build_fmnist(o); });
    };
    CHECK(contains(config_error([](auto& o) { o.pca = 0; }), "pca = 0 outside 1..784"));
    CHECK(contains(config_error([](auto& o) { o.pca = 785; }), "pca = 785 outside 1..784"));
    CHECK(contains(config_error([](auto& o) { o.classes = {7, 10}; }), "unknown class 10"));
    CHECK(contains(config_error([](auto& o) { o.classes = {-1, 3}; }), "unknown class -1"));
    CHECK(contains(config_error([](auto& o) { o.classes = {7, 7}; }), "class 7 listed twice"));
    CHECK(contains(config_error([](auto& o) { o.classes = {7}; }), "at least 2 classes"));
    CHECK(contains(config_error([](auto& o) { o.classes = {}; }), "at least 2 classes"));
    CHECK(contains(config_error([](auto& o) { o.split = "val"; }), "split 'val'"));
  }

  TEST_CASE("build_fmnist: pca beyond the rank of the training images is a ConfigError") {
    require_fmnist();
    flymc::FmnistOptions o;
    o.pca = 784;
    CHECK(contains(error_of<flymc::ConfigError>([&] { (void)flymc::build_fmnist(o); }),
                   "exceeds the numerical rank"));
  }

  TEST_CASE("build_fmnist: FLYMC_FMNIST_DIR overrides the default directory only") {
    TempDir tmp;
    const char* old = std::getenv("FLYMC_FMNIST_DIR");
    const std::string saved = old != nullptr ? old : "";
    ::setenv("FLYMC_FMNIST_DIR", tmp.dir.c_str(), 1);
    flymc::FmnistOptions o;
    const auto msg = error_of<flymc::DataError>([&] { (void)flymc::build_fmnist(o); });
    o.dir = (tmp.dir / "explicit").string();
    const auto msg2 = error_of<flymc::DataError>([&] { (void)flymc::build_fmnist(o); });
    if (old != nullptr) {
      ::setenv("FLYMC_FMNIST_DIR", saved.c_str(), 1);
    } else {
      ::unsetenv("FLYMC_FMNIST_DIR");
    }
    CHECK(contains(msg, tmp / "train-labels-idx1-ubyte.gz: cannot open: No such file"));
    CHECK(contains(msg2, tmp / "explicit/train-labels-idx1-ubyte.gz: cannot open"));
  }

  TEST_CASE("build_fmnist: corrupt IDX files are DataErrors naming file and byte offset") {
    TempDir tmp;
    const std::string lab = tmp / "train-labels-idx1-ubyte.gz";
    const std::string img = tmp / "train-images-idx3-ubyte.gz";
    const std::vector<unsigned char> labels = {0, 1, 0, 1, 1, 0};

    SUBCASE("bad label magic") {
      write_file(lab, idx_labels(labels, 0x803));
      CHECK(contains(fmnist_error(tmp.dir), lab + ": byte offset 0 (decompressed): bad IDX magic"));
    }
    SUBCASE("truncated labels") {
      write_file(lab, idx_labels(labels, 0x801, 10));
      const auto msg = fmnist_error(tmp.dir);
      CHECK(contains(msg, lab + ": byte offset 14 (decompressed): truncated label data"));
      CHECK(contains(msg, "expected 10 bytes"));
    }
    SUBCASE("label outside 0..9") {
      write_file(lab, idx_labels({0, 1, 12, 1}));
      CHECK(contains(fmnist_error(tmp.dir), lab + ": byte offset 10 (decompressed): label 12"));
    }
    SUBCASE("bad image magic") {
      write_file(lab, idx_labels(labels));
      write_file(img, idx_images(6, 0x801));
      CHECK(contains(fmnist_error(tmp.dir), img + ": byte offset 0 (decompressed): bad IDX magic"));
    }
    SUBCASE("image count differs from label count") {
      write_file(lab, idx_labels(labels));
      write_file(img, idx_images(5));
      const auto msg = fmnist_error(tmp.dir);
      CHECK(contains(msg, img + ": byte offset 4 (decompressed): 5 images"));
      CHECK(contains(msg, "has 6 labels"));
    }
    SUBCASE("truncated images") {
      write_file(lab, idx_labels(labels));
      write_file(img, idx_images(6, 0x803, 100));
      const auto msg = fmnist_error(tmp.dir);
      CHECK(contains(msg, img + ": byte offset 4620 (decompressed): truncated image data"));
      CHECK(contains(msg, "expected 4704 bytes from offset 16"));
    }
    SUBCASE("trailing data") {
      write_file(lab, idx_labels(labels) + "xx");
      CHECK(contains(fmnist_error(tmp.dir), lab + ": byte offset 14 (decompressed): unexpected"));
    }
    SUBCASE("corrupt gzip stream") {
      // A gzip member header followed by bytes that are not a valid deflate stream.
      std::string gz = "\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03";
      gz += std::string(64, '\xff');
      write_file(lab, gz);
      CHECK(contains(fmnist_error(tmp.dir), lab + ": byte offset 0 (decompressed): corrupt"));
    }
    SUBCASE("valid tiny files build") {
      write_file(lab, idx_labels(labels));
      write_file(img, idx_images(6));
      flymc::FmnistOptions o;
      o.dir = tmp.dir.string();
      o.classes = {1, 0};
      o.pca = 2;
      const auto ds = flymc::build_fmnist(o);
      REQUIRE(ds.n() == 6);
      REQUIRE(ds.d() == 3);
      CHECK(ds.y()[0] == -1.0);  // class 0 is listed second
      CHECK(ds.y()[1] == 1.0);
      check_standardized(ds, 2);
    }
  }

  TEST_CASE("synth_logistic: shape, bias column, determinism, thread independence" *
            doctest::test_suite("threaded")) {
    const std::size_t n = 150000, d = 6;  // 3 blocks of 65536 rows
    const flymc::Dataset a = flymc::synth_logistic(n, d, 42);
    REQUIRE(a.n() == n);
    REQUIRE(a.d() == d);
    const flymc::Dataset b = flymc::synth_logistic(n, d, 42);
    flymc::Dataset serial;
    {
      tbb::global_control one(tbb::global_control::max_allowed_parallelism, 1);
      serial = flymc::synth_logistic(n, d, 42);
    }
    const std::size_t bytes = n * a.stride() * sizeof(double);
    CHECK(std::memcmp(a.data(), b.data(), bytes) == 0);
    CHECK(std::memcmp(a.data(), serial.data(), bytes) == 0);
    CHECK(std::memcmp(a.y().data(), serial.y().data(), n * sizeof(double)) == 0);
    const flymc::Dataset c = flymc::synth_logistic(n, d, 43);
    CHECK(std::memcmp(a.data(), c.data(), bytes) != 0);

    bool bias_ok = true, labels_ok = true;
    double sum = 0.0, sumsq = 0.0;
    for (std::size_t i = 0; i < n; ++i) {
      bias_ok = bias_ok && a.row(i)[d - 1] == 1.0;
      labels_ok = labels_ok && (a.y()[i] == 1.0 || a.y()[i] == -1.0);
      sum += a.row(i)[0];
      sumsq += a.row(i)[0] * a.row(i)[0];
    }
    CHECK(bias_ok);
    CHECK(labels_ok);
    CHECK(std::abs(sum / n) < 0.02);
    CHECK(std::abs(sumsq / n - 1.0) < 0.02);
  }

  TEST_CASE("synth_logistic: label frequency matches sigmoid(x . theta_true)") {
    const std::size_t n = 100000, d = 4;
    const flymc::Dataset ds = flymc::synth_logistic(n, d, 7);
    const std::vector<double> theta = flymc::synth_logistic_theta(d, 7);
    REQUIRE(theta.size() == d);
    double expected = 0.0, var = 0.0, observed = 0.0;
    for (std::size_t i = 0; i < n; ++i) {
      double a = 0.0;
      for (std::size_t j = 0; j < d; ++j) a += ds.row(i)[j] * theta[j];
      const double p = 1.0 / (1.0 + std::exp(-a));
      expected += p;
      var += p * (1.0 - p);
      observed += ds.y()[i] == 1.0 ? 1.0 : 0.0;
    }
    CHECK(std::abs(observed - expected) < 5.0 * std::sqrt(var));
    CHECK(observed > 0.05 * n);  // both classes present
    CHECK(observed < 0.95 * n);
  }

  TEST_CASE("synth_logistic: n or d of 0 is a ConfigError") {
    CHECK_THROWS_AS((void)flymc::synth_logistic(0, 3, 1), flymc::ConfigError);
    CHECK_THROWS_AS((void)flymc::synth_logistic(3, 0, 1), flymc::ConfigError);
    const flymc::Dataset one = flymc::synth_logistic(5, 1, 1);  // bias only
    CHECK(one.row(4)[0] == 1.0);
  }
}

TEST_SUITE("unit") {
  TEST_CASE("ImageDeformer: small, non-trivial, in [0, 1]; no deformation is the identity") {
    const std::vector<double> card = test_card();
    const flymc::ImageDeformer deform;
    std::vector<double> out(784);
    double total_change = 0.0;
    bool in_range = true, all_changed = true;
    constexpr int copies = 200;
    for (int c = 0; c < copies; ++c) {
      flymc::Rng rng(11, static_cast<std::uint64_t>(c));
      deform(card.data(), out.data(), rng);
      double change = 0.0;
      for (std::size_t j = 0; j < 784; ++j) {
        change += std::abs(out[j] - card[j]);
        in_range = in_range && out[j] >= 0.0 && out[j] <= 1.0;
      }
      all_changed = all_changed && change > 0.0;
      total_change += change / 784.0;
    }
    const double mean_change = total_change / copies;
    // The yardstick: the card moved 4 pixels to the right.
    double moved = 0.0;
    for (std::size_t r = 0; r < 28; ++r)
      for (std::size_t c = 0; c < 28; ++c)
        moved += std::abs((c >= 4 ? card[r * 28 + c - 4] : 0.0) - card[r * 28 + c]) / 784.0;
    INFO("mean absolute pixel change " << mean_change << ", card moved by 4 pixels " << moved);
    CHECK(in_range);
    CHECK(all_changed);
    CHECK(mean_change > 0.1 * moved);
    CHECK(mean_change < 0.75 * moved);

    flymc::Deformation none;
    none.max_rotation = none.max_scale = none.max_shear = none.max_shift = 0.0;
    none.elastic_alpha = 0.0;
    const flymc::ImageDeformer identity(none);
    flymc::Rng rng(3, 4);
    identity(card.data(), out.data(), rng);
    CHECK(out == card);
    // A pure shift t shows the card at q - t, its 4th and 5th draws (after θ, s, h).
    flymc::Deformation shift = none;
    shift.max_shift = 2.0;
    const flymc::ImageDeformer shifted(shift);
    flymc::Rng r1(5, 6), r2(5, 6);
    shifted(card.data(), out.data(), r1);
    for (int i = 0; i < 3; ++i) r2.uniform();
    const double tx = (2.0 * r2.uniform() - 1.0) * 2.0, ty = (2.0 * r2.uniform() - 1.0) * 2.0;
    // out(r, c) = card(r - ty, c - tx), interpolated bilinearly, 0 outside the card.
    const auto at = [&](double r, double c) {
      const int r0 = static_cast<int>(std::floor(r)), c0 = static_cast<int>(std::floor(c));
      const double ar = r - r0, ac = c - c0;
      auto px = [&](int rr, int cc) {
        return rr < 0 || rr > 27 || cc < 0 || cc > 27
                   ? 0.0
                   : card[static_cast<std::size_t>(rr * 28 + cc)];
      };
      return (1 - ar) * ((1 - ac) * px(r0, c0) + ac * px(r0, c0 + 1)) +
             ar * ((1 - ac) * px(r0 + 1, c0) + ac * px(r0 + 1, c0 + 1));
    };
    double worst = 0.0;
    for (int r = 0; r < 28; ++r)
      for (int c = 0; c < 28; ++c)
        worst = std::max(worst,
                         std::abs(out[static_cast<std::size_t>(r * 28 + c)] - at(r - ty, c - tx)));
    CHECK(worst < 1e-12);
  }

  TEST_CASE("ImageDeformer: bad parameters are ConfigErrors naming them") {
    auto deform_error = [](auto edit) {
      flymc::Deformation d;
      edit(d);
      return error_of<flymc::ConfigError>([&] { (void)flymc::ImageDeformer(d); });
    };
    CHECK(contains(deform_error([](auto& d) { d.max_scale = 0.7; }), "max_scale = 0.7 outside"));
    CHECK(contains(deform_error([](auto& d) { d.max_rotation = -1; }), "max_rotation = -1"));
    CHECK(contains(deform_error([](auto& d) { d.elastic_sigma = std::nan(""); }),
                   "elastic_sigma = nan"));
    CHECK(contains(deform_error([](auto& d) { d.elastic_alpha = 1e9; }), "elastic_alpha"));
    CHECK(contains(deform_error([](auto& d) { d.max_shift = 20; }), "max_shift"));
    CHECK(contains(deform_error([](auto& d) { d.max_shear = 2; }), "max_shear"));
  }

  TEST_CASE("build_fmnist / write_fmnist: bad --augment or output path are ConfigErrors") {
    auto config_error = [](auto edit) {
      flymc::FmnistOptions o;
      o.dir = "/nonexistent";  // options are checked before any file is opened
      edit(o);
      return error_of<flymc::ConfigError>([&] { (void)flymc::build_fmnist(o); });
    };
    CHECK(contains(config_error([](auto& o) { o.augment = -1; }), "--augment -1"));
    CHECK(contains(config_error([](auto& o) { o.augment = 4294967295; }), "--augment 4294967295"));
    CHECK(contains(config_error([](auto& o) { o.deform.max_shift = -2; }), "max_shift = -2"));
    TempDir tmp;
    CHECK(contains(error_of<flymc::ConfigError>(
                       [&] { (void)flymc::write_fmnist(flymc::FmnistOptions{}, tmp / "x.txt"); }),
                   "must end in .csv or .npy"));
    // n·(K + 1) rows must fit: 64 images with 2^26 copies each make 2^32 + 64 rows.
    flymc::FmnistOptions o = tiny_fmnist(tmp, 64, 2);
    o.augment = std::int64_t{1} << 26;
    const std::string msg =
        error_of<flymc::ConfigError>([&] { (void)flymc::write_fmnist(o, tmp / "big.npy"); });
    CHECK(contains(msg, "--augment 67108864 makes 64 x 67108865 rows"));
    CHECK_FALSE(std::filesystem::exists(tmp / "big.npy"));
  }
}

TEST_SUITE("unit") {
  TEST_CASE("write_fmnist: K = 0 is build_fmnist's file byte for byte; split all is train + test") {
    require_fmnist();
    TempDir tmp;
    flymc::FmnistOptions o;
    o.pca = 4;
    const flymc::Dataset train = flymc::build_fmnist(o);
    flymc::save_npy(train, tmp / "saved.npy");
    CHECK(flymc::write_fmnist(o, tmp / "streamed.npy") == 12000);
    CHECK(file_bytes(tmp / "streamed.npy") == file_bytes(tmp / "saved.npy"));

    o.split = "test";
    const flymc::Dataset test = flymc::build_fmnist(o);
    o.split = "all";
    const flymc::Dataset all = flymc::build_fmnist(o);
    REQUIRE(all.n() == 14000);
    CHECK(same_rows(all, 0, train, 0, 12000));
    CHECK(same_rows(all, 12000, test, 0, 2000));
    flymc::save_csv(all, tmp / "saved.csv");
    CHECK(flymc::write_fmnist(o, tmp / "streamed.csv") == 14000);
    CHECK(file_bytes(tmp / "streamed.csv") == file_bytes(tmp / "saved.csv"));
  }

  TEST_CASE("build_fmnist --augment: originals first and unchanged, copies near their image") {
    require_fmnist();
    flymc::FmnistOptions o;
    o.max_images = 300;
    const flymc::Dataset base = flymc::build_fmnist(o);
    REQUIRE(base.n() == 300);
    o.augment = 3;
    o.seed = 5;
    const flymc::Dataset aug = flymc::build_fmnist(o);
    const std::size_t n = 300, d = aug.d();
    REQUIRE(aug.n() == n * 4);
    REQUIRE(d == 51);
    CHECK(same_rows(aug, 0, base, 0, n));
    // Copy c of image i is row c·n + i, labelled as image i, with the bias.
    bool labels_ok = true, bias_ok = true, all_differ = true;
    std::size_t same_class = 0;
    double own = 0.0, other = 0.0;
    for (std::size_t c = 1; c <= 3; ++c)
      for (std::size_t i = 0; i < n; ++i) {
        const double* row = aug.row(c * n + i);
        labels_ok = labels_ok && aug.y()[c * n + i] == base.y()[i];
        bias_ok = bias_ok && row[d - 1] == 1.0;
        const double d_own = squared_distance(row, base.row(i), d);
        all_differ = all_differ && d_own > 1e-6;
        own += std::sqrt(d_own);
        other += std::sqrt(squared_distance(row, base.row((i + 1 + 7 * c) % n), d));
        // The class of the nearest other image: a copy must still look like its class.
        double best = INFINITY;
        std::size_t nearest = 0;
        for (std::size_t j = 0; j < n; ++j) {
          const double dj = j == i ? INFINITY : squared_distance(row, base.row(j), d);
          if (dj < best) best = dj, nearest = j;
        }
        same_class += base.y()[nearest] == base.y()[i] ? 1 : 0;
      }
    CHECK(labels_ok);
    CHECK(bias_ok);
    CHECK(all_differ);
    const double agree = static_cast<double>(same_class) / (3.0 * n);
    std::size_t base_same = 0;
    for (std::size_t i = 0; i < n; ++i) {
      double best = INFINITY;
      std::size_t nearest = 0;
      for (std::size_t j = 0; j < n; ++j) {
        const double dj = j == i ? INFINITY : squared_distance(base.row(i), base.row(j), d);
        if (dj < best) best = dj, nearest = j;
      }
      base_same += base.y()[nearest] == base.y()[i] ? 1 : 0;
    }
    const double base_agree = static_cast<double>(base_same) / static_cast<double>(n);
    INFO("mean distance to own image " << own / (3 * n) << ", to another " << other / (3 * n)
                                       << "; nearest image of the same class for " << agree
                                       << " of the copies, " << base_agree << " of the images");
    // Recognisable: nearer their own image than another one, and nearly as often as the images
    // themselves nearest to an image of their class. (In these whitened components a copy is not
    // much nearer its own image than another: the small components, scaled up to unit variance,
    // record detail that any deformation moves.)
    CHECK(own < 0.95 * other);
    CHECK(agree > base_agree - 0.15);
  }

  TEST_CASE("write_fmnist: deterministic for a seed at any thread count; prefixes are smaller K" *
            doctest::test_suite("threaded")) {
    TempDir tmp;
    flymc::FmnistOptions o = tiny_fmnist(tmp, 64, 10);
    o.split = "all";
    o.augment = 3;
    o.seed = 9;
    CHECK(flymc::write_fmnist(o, tmp / "a.npy") == 74 * 4);
    {
      tbb::global_control one(tbb::global_control::max_allowed_parallelism, 1);
      CHECK(flymc::write_fmnist(o, tmp / "serial.npy") == 74 * 4);
    }
    {
      tbb::global_control two(tbb::global_control::max_allowed_parallelism, 2);
      CHECK(flymc::write_fmnist(o, tmp / "two.npy") == 74 * 4);
    }
    const std::string a = file_bytes(tmp / "a.npy");
    CHECK(a == file_bytes(tmp / "serial.npy"));
    CHECK(a == file_bytes(tmp / "two.npy"));
    const flymc::Dataset built = flymc::build_fmnist(o);
    const flymc::Dataset loaded = flymc::load_npy(tmp / "a.npy", flymc::LabelDomain::binary);
    CHECK(same_rows(loaded, 0, built, 0, built.n()));

    o.seed = 10;
    flymc::write_fmnist(o, tmp / "b.npy");
    const flymc::Dataset other = flymc::load_npy(tmp / "b.npy", flymc::LabelDomain::binary);
    CHECK(same_rows(other, 0, loaded, 0, 74));  // the images themselves do not depend on the seed
    CHECK_FALSE(same_rows(other, 74, loaded, 74, 74));
    // Copies depend on (seed, image, copy) alone: K = 1 is the first two rounds of K = 3, and
    // the test images and their copies are the same rows in split "test" as in split "all".
    o.seed = 9;
    o.augment = 1;
    const flymc::Dataset k1 = flymc::build_fmnist(o);
    REQUIRE(k1.n() == 148);
    CHECK(same_rows(loaded, 0, k1, 0, 148));
    o.split = "test";
    const flymc::Dataset test = flymc::build_fmnist(o);
    REQUIRE(test.n() == 20);
    CHECK(same_rows(test, 0, k1, 64, 10));
    CHECK(same_rows(test, 10, k1, 74 + 64, 10));
  }
}
