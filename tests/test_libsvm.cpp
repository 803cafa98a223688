// Tests of the libsvm / svmlight reader (loaders.hpp): densified rows, comments, label codings,
// messages naming file, line and field, and the same data set (so the same draws) as the CSV of
// the same data.
#include <doctest/doctest.h>

#include <bit>
#include <charconv>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "flymc/core/errors.hpp"
#include "flymc/data/loaders.hpp"
#include "flymc/datagen/datagen.hpp"
#include "flymc/mcmc/sampler.hpp"
#include "test_util.hpp"

namespace {

using flymc::LabelDomain;

std::string libsvm_error(const std::string& text, LabelDomain dom = LabelDomain::any) {
  try {
    flymc::parse_libsvm(text, "f.svm", dom);
  } catch (const flymc::DataError& e) {
    return e.what();
  }
  return "<no DataError thrown>";
}

/// `ds` written as libsvm text: every nonzero feature, the shortest round-trip decimals.
std::string to_libsvm(const flymc::Dataset& ds) {
  std::string s = "# written by the test\n";
  for (std::size_t i = 0; i < ds.n(); ++i) {
    s += ds.y()[i] > 0 ? "+1" : "-1";
    for (std::size_t j = 0; j < ds.d(); ++j) {
      if (ds.row(i)[j] == 0.0) continue;
      char buf[32];
      const auto r = std::to_chars(buf, buf + sizeof buf, ds.row(i)[j]);
      s += ' ';
      s += std::to_string(j + 1);
      s += ':';
      s.append(buf, r.ptr);
    }
    s += i % 2 ? "\r\n" : "  # a comment\n";
  }
  return s;
}

}  // namespace

TEST_SUITE("unit") {
  TEST_CASE("libsvm: sparse rows are densified to the largest index, comments and blanks skipped") {
    const auto ds =
        flymc::parse_libsvm("# header comment\n+1 1:0.5 3:-2\n\n-1\t2:1e-3   # note\r\n+1 4:7\n",
                            "f.svm", LabelDomain::binary);
    REQUIRE(ds.n() == 3);
    REQUIRE(ds.d() == 4);
    CHECK(ds.y()[0] == 1.0);
    CHECK(ds.y()[1] == -1.0);
    CHECK(ds.row(0)[0] == 0.5);
    CHECK(ds.row(0)[1] == 0.0);
    CHECK(ds.row(0)[2] == -2.0);
    CHECK(ds.row(1)[1] == 1e-3);
    CHECK(ds.row(2)[3] == 7.0);
    for (std::size_t j = ds.d(); j < ds.stride(); ++j) CHECK(ds.row(2)[j] == 0.0);
  }

  TEST_CASE("libsvm: {0,1} labels map to {-1,+1}; class ids for softmax") {
    const auto b = flymc::parse_libsvm("0 1:1\n1 1:2\n", "f.svm", LabelDomain::binary);
    CHECK(b.y()[0] == -1.0);
    CHECK(b.y()[1] == 1.0);
    const auto c = flymc::parse_libsvm("2 1:1\n0 2:1\n", "f.svm", LabelDomain::categorical);
    CHECK(c.y()[0] == 2.0);
    CHECK(c.d() == 2);
  }

  TEST_CASE("libsvm errors name the file, line and field") {
    CHECK(libsvm_error("+1 2:1 2:3\n") ==
          "f.svm:1: field 3 (x2): index 2 does not increase (after 2)");
    CHECK(libsvm_error("+1 1:1\n-1 0:3\n") ==
          "f.svm:2: field 2 (feature): index is not a positive integer: '0'");
    CHECK(libsvm_error("+1 1:1 7\n") ==
          "f.svm:1: field 3 (feature): expected index:value, got '7'");
    CHECK(libsvm_error("+1 3:nan\n") == "f.svm:1: field 2 (x3): not finite: 'nan'");
    CHECK(libsvm_error("+1 3:abc\n") == "f.svm:1: field 2 (x3): not a number: 'abc'");
    CHECK(libsvm_error("x 3:1\n") == "f.svm:1: field 1 (label): not a number: 'x'");
    CHECK(libsvm_error("1 qid:3 1:2\n").find("(qid is not supported)") != std::string::npos);
    CHECK(libsvm_error("# only a comment\n\n") == "f.svm: no data rows");
    CHECK(libsvm_error("1\n-1\n") ==
          "f.svm: no feature appears in any row (every row has only a label)");
    // The label check names the file line, past blank and comment lines.
    CHECK(libsvm_error("# c\n+1 1:1\n\n2 1:1\n", LabelDomain::binary) ==
          "f.svm:4: field 1 (label): label 2 is not a binary label (expected all labels in "
          "{-1,+1} or all in {0,1})");
    CHECK(libsvm_error("+1 99999999999:1\n").find("index exceeds the largest supported") !=
          std::string::npos);
    CHECK_THROWS_AS(
        flymc::detail::parse_libsvm_limited("1 1000:1\n1 1:1\n", "f", LabelDomain::any, 1500),
        flymc::DataError);
  }

  TEST_CASE("libsvm: a data set's libsvm file gives the CSV's data set and the same draws") {
    const auto tmp = flymc::test::TempDir("libsvm");
    flymc::Dataset ds = flymc::synth_logistic(300, 6, 5);
    for (std::size_t i = 0; i < ds.n(); i += 3) ds.mutable_row(i)[1] = 0.0;  // some sparsity
    const std::string csv = tmp.path() + "/d.csv", svm = tmp.path() + "/d.svm";
    flymc::save_csv(ds, csv);
    std::ofstream(svm) << to_libsvm(ds);
    auto from_csv = flymc::load_dataset(csv, LabelDomain::binary);
    auto from_svm = flymc::load_dataset(svm, LabelDomain::binary);
    REQUIRE(flymc::test::identical(from_csv, from_svm));
    flymc::RunConfig cfg = flymc::test::fixed_config();
    cfg.chains = 2;
    cfg.warmup = 200;
    cfg.iters = 300;
    const auto a = flymc::run(cfg, std::make_shared<const flymc::Dataset>(std::move(from_csv)));
    const auto b = flymc::run(cfg, std::make_shared<const flymc::Dataset>(std::move(from_svm)));
    CHECK(a.chains[0].draws == b.chains[0].draws);
    CHECK(a.chains[1].draws == b.chains[1].draws);
  }
}
