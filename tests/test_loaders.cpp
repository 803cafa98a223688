// Tests of load_csv / load_npy / load_dataset / save_csv / save_npy. Fixtures live in
// tests/data (good_*) and tests/data/bad; tests/data/make_loader_fixtures.py regenerates them.
#include <doctest/doctest.h>
#include <unistd.h>

#include <bit>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "flymc/core/errors.hpp"
#include "flymc/core/parallel.hpp"
#include "flymc/data/dataset.hpp"
#include "flymc/data/loaders.hpp"
#include "flymc/datagen/datagen.hpp"
#include "test_util.hpp"

namespace {

using flymc::LabelDomain;

std::string fixture(const std::string& rel) { return std::string(FLYMC_TEST_DATA_DIR) + "/" + rel; }

/// The message of the DataError thrown by f, or a marker string if none was thrown.
std::string data_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const flymc::DataError& e) {
    return e.what();
  }
  return "<no DataError thrown>";
}

std::string csv_error(const std::string& rel, LabelDomain dom = LabelDomain::any) {
  return data_error([&] { (void)flymc::load_csv(fixture(rel), dom); });
}
std::string npy_error(const std::string& rel, LabelDomain dom = LabelDomain::any) {
  return data_error([&] { (void)flymc::load_npy(fixture(rel), dom); });
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

/// A scratch directory removed at the end of the test.
struct TempDir {
  std::filesystem::path dir;
  TempDir() {
    static int counter = 0;
    dir = std::filesystem::temp_directory_path() /
          ("flymc_test_loaders_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    std::filesystem::create_directories(dir);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
  std::string operator/(const std::string& name) const { return (dir / name).string(); }
};

/// Values that are hard to round-trip through text.
flymc::Dataset awkward_dataset() {
  const double vals[] = {0.1,
                         1.0 / 3.0,
                         -0.0,
                         5e-324,
                         DBL_MAX,
                         -DBL_MIN,
                         1e-310,
                         123456789.123456789,
                         -2.5e-300,
                         1e300,
                         0.30000000000000004,
                         -7.0,
                         6.02214076e23};
  constexpr std::size_t nv = sizeof vals / sizeof vals[0];
  flymc::Dataset ds(9, 11, "mem");
  for (std::size_t i = 0; i < ds.n(); ++i) {
    ds.mutable_y()[i] = vals[(i * 5) % nv];
    for (std::size_t j = 0; j < ds.d(); ++j) ds.mutable_row(i)[j] = vals[(i * 7 + j * 3) % nv];
  }
  return ds;
}

}  // namespace

TEST_SUITE("unit") {
  // ------------------------------------------------------------------ good CSV
  TEST_CASE("load_csv: header detection, CRLF, spaces, '+' and trailing blank lines") {
    const auto ds = flymc::load_csv(fixture("good_header_crlf.csv"), LabelDomain::binary);
    REQUIRE(ds.n() == 3);
    REQUIRE(ds.d() == 2);
    CHECK(ds.source() == fixture("good_header_crlf.csv"));
    CHECK(ds.y()[0] == 1.0);
    CHECK(ds.y()[1] == -1.0);
    CHECK(ds.row(0)[0] == 0.5);
    CHECK(ds.row(0)[1] == -2.0);
    CHECK(ds.row(1)[0] == 1.25e-3);
    CHECK(ds.row(2)[1] == 8.0);
    for (std::size_t i = 0; i < ds.n(); ++i)
      for (std::size_t j = ds.d(); j < ds.stride(); ++j) CHECK(ds.row(i)[j] == 0.0);
  }

  TEST_CASE("load_csv: a numeric first line is data, not a header") {
    const auto ds = flymc::load_csv(fixture("good_noheader.csv"), LabelDomain::binary);
    REQUIRE(ds.n() == 2);
    CHECK(ds.y()[0] == 1.0);
    CHECK(ds.row(0)[0] == 0.5);
  }

  TEST_CASE("load_csv: binary labels {0,1} are mapped to {-1,+1}") {
    const auto ds = flymc::load_csv(fixture("good_01.csv"), LabelDomain::binary);
    REQUIRE(ds.n() == 3);
    CHECK(ds.y()[0] == -1.0);
    CHECK(ds.y()[1] == 1.0);
    CHECK(ds.y()[2] == -1.0);
    // LabelDomain::any keeps them.
    const auto raw = flymc::load_csv(fixture("good_01.csv"), LabelDomain::any);
    CHECK(raw.y()[0] == 0.0);
  }

  TEST_CASE("load_csv: categorical labels") {
    const auto ds = flymc::load_csv(fixture("good_categorical.csv"), LabelDomain::categorical);
    REQUIRE(ds.n() == 4);
    CHECK(ds.y()[1] == 2.0);
    CHECK(ds.d() == 1);
  }

  TEST_CASE(
      "dataset_from_arrays: rows padded, values checked and labels recoded as the loaders do") {
    const std::vector<double> x = {1.0, 2.0, 3.0, 4.0, 5.0, 6.0}, y01 = {0.0, 1.0, 0.0};
    const auto ds = flymc::dataset_from_arrays(x, y01, 2, LabelDomain::binary, "arrays");
    REQUIRE(ds.n() == 3);
    CHECK(ds.d() == 2);
    CHECK(ds.source() == "arrays");
    CHECK(ds.row(2)[1] == 6.0);
    CHECK(ds.row(2)[2] == 0.0);  // padding
    CHECK(ds.y()[0] == -1.0);
    CHECK(ds.y()[1] == 1.0);
    const std::vector<double> y_bad = {1.0, -1.0, 2.0};
    CHECK(data_error(
              [&] { flymc::dataset_from_arrays(x, y_bad, 2, LabelDomain::binary, "arrays"); }) ==
          "arrays: row 2: field 1 (label): label 2 is not a binary label (expected all "
          "labels in {-1,+1} or all in {0,1})");
    const std::vector<double> x_nan = {1.0, 2.0, 3.0, std::nan(""), 5.0, 6.0};
    CHECK(data_error([&] {
            flymc::dataset_from_arrays(x_nan, y01, 2, LabelDomain::binary, "arrays");
          }) == "arrays: row 1: field 3 (x2): NaN is not allowed");
    const std::vector<double> y_inf = {1.0, -HUGE_VAL, 0.0};
    CHECK(data_error([&] {
            flymc::dataset_from_arrays(x, y_inf, 2, LabelDomain::any, "arrays");
          }) == "arrays: row 1: field 1 (label): Inf is not allowed");
    CHECK(contains(
        data_error([&] { flymc::dataset_from_arrays(x, y01, 3, LabelDomain::any, "arrays"); }),
        "arrays: 6 feature values for 3 rows of 3 features"));
  }

  // ------------------------------------------------------------------ CSV errors
  TEST_CASE("load_csv error: missing file names the file and the OS reason") {
    const auto msg = csv_error("bad/does_not_exist.csv");
    CHECK(contains(msg, fixture("bad/does_not_exist.csv") + ": cannot open: "));
    CHECK(contains(msg, "No such file or directory"));
  }

  TEST_CASE("load_csv error: a directory is not readable as a file") {
    const auto msg = csv_error("bad");
    CHECK(contains(msg, fixture("bad")));
    CHECK(contains(msg, "Is a directory"));
  }

  TEST_CASE("load_csv error: empty file") {
    CHECK(contains(csv_error("bad/empty.csv"), fixture("bad/empty.csv") + ": empty file"));
    CHECK(contains(csv_error("bad/blank_only.csv"), "empty file"));
    // A character device is read through the non-regular-file path.
    CHECK(contains(data_error([] { (void)flymc::load_csv("/dev/null", LabelDomain::any); }),
                   "/dev/null: empty file"));
  }

  TEST_CASE("load_csv error: header only") {
    CHECK(contains(csv_error("bad/header_only.csv"),
                   fixture("bad/header_only.csv") + ": no data rows"));
  }

  TEST_CASE("load_csv error: non-numeric field names line, field and name") {
    const auto msg = csv_error("bad/non_numeric.csv");
    CHECK(contains(msg, fixture("bad/non_numeric.csv") + ":3: field 3 (x2): not a number: 'abc'"));
  }

  TEST_CASE("load_csv error: empty field") {
    CHECK(contains(csv_error("bad/empty_field.csv"), ":2: field 2 (x1): empty field"));
  }

  TEST_CASE("load_csv error: NaN") {
    CHECK(contains(csv_error("bad/nan.csv"),
                   fixture("bad/nan.csv") + ":3: field 2 (x1): NaN or Inf is not allowed"));
  }

  TEST_CASE("load_csv error: Inf") {
    CHECK(contains(csv_error("bad/inf.csv"),
                   fixture("bad/inf.csv") + ":2: field 3 (x2): NaN or Inf is not allowed: '-inf'"));
  }

  TEST_CASE("load_csv error: number outside the range of double") {
    CHECK(contains(csv_error("bad/overflow.csv"), ":1: field 2 (x1): number out of the range"));
  }

  TEST_CASE("load_csv error: ragged row, too few fields") {
    CHECK(contains(csv_error("bad/ragged_short.csv"),
                   fixture("bad/ragged_short.csv") + ":3: expected 3 fields, found 2"));
  }

  TEST_CASE("load_csv error: ragged row, too many fields") {
    CHECK(contains(csv_error("bad/ragged_long.csv"),
                   fixture("bad/ragged_long.csv") + ":3: expected 3 fields, found 4"));
  }

  TEST_CASE("load_csv error: fewer than 2 columns") {
    CHECK(contains(csv_error("bad/one_column.csv"), "need at least 2"));
  }

  TEST_CASE("load_csv error: blank line between rows") {
    CHECK(contains(csv_error("bad/blank_middle.csv"), ":3: blank line"));
  }

  TEST_CASE("load_csv error: binary label 2") {
    const auto msg = csv_error("bad/label_2.csv", LabelDomain::binary);
    CHECK(contains(msg, fixture("bad/label_2.csv") + ":4: field 1 (label): label 2 is not"));
    // The same file is fine for regression.
    CHECK(flymc::load_csv(fixture("bad/label_2.csv"), LabelDomain::any).n() == 3);
  }

  TEST_CASE("load_csv error: binary label 0.5") {
    CHECK(contains(csv_error("bad/label_half.csv", LabelDomain::binary),
                   ":3: field 1 (label): label 0.5 is not"));
  }

  TEST_CASE("load_csv error: binary labels mixing {-1,+1} and {0,1}") {
    const auto msg = csv_error("bad/label_mixed.csv", LabelDomain::binary);
    CHECK(contains(msg, ":4: field 1 (label): label 0 mixes"));
    CHECK(contains(msg, "line 2"));
  }

  TEST_CASE("load_csv error: categorical label negative or fractional") {
    CHECK(contains(csv_error("bad/label_negative_class.csv", LabelDomain::categorical),
                   ":3: field 1 (label): label -1 is not a class index"));
    CHECK(contains(csv_error("bad/label_fractional_class.csv", LabelDomain::categorical),
                   ":3: field 1 (label): label 1.5 is not a class index"));
  }

  TEST_CASE("load_csv error: line numbers stay right deep inside a large, multi-block file" *
            doctest::test_suite("threaded")) {
    TempDir tmp;
    const auto ds = flymc::synth_logistic(60000, 4, 11);
    const std::string path = tmp / "big.csv";
    flymc::save_csv(ds, path);
    {
      std::ofstream out(path, std::ios::app);
      out << "1,2,3\n";
    }
    // header is line 1, rows are lines 2..60001, the bad row is line 60002.
    CHECK(contains(data_error([&] { (void)flymc::load_csv(path, LabelDomain::binary); }),
                   path + ":60002: expected 5 fields, found 3"));
  }

  // ------------------------------------------------------------------ round trips
  TEST_CASE("save_csv -> load_csv is bit-identical") {
    TempDir tmp;
    const auto ds = awkward_dataset();
    const std::string path = tmp / "rt.csv";
    flymc::save_csv(ds, path);
    std::ifstream in(path);
    std::string head;
    std::getline(in, head);
    CHECK(head == "label,x1,x2,x3,x4,x5,x6,x7,x8,x9,x10,x11");
    const auto back = flymc::load_csv(path, LabelDomain::any);
    CHECK(flymc::test::identical(ds, back));
    CHECK(back.source() == path);
    CHECK(std::distance(std::filesystem::directory_iterator(tmp.dir),
                        std::filesystem::directory_iterator()) == 1);  // no temporary left
  }

  TEST_CASE("save_npy -> load_npy is bit-identical") {
    TempDir tmp;
    const auto ds = awkward_dataset();
    const std::string path = tmp / "rt.npy";
    flymc::save_npy(ds, path);
    CHECK(std::filesystem::file_size(path) % 8 == 0);
    const auto back = flymc::load_npy(path, LabelDomain::any);
    CHECK(flymc::test::identical(ds, back));
  }

  TEST_CASE("round trip of a large data set through both formats (parallel paths)" *
            doctest::test_suite("threaded")) {
    TempDir tmp;
    const auto ds = flymc::synth_logistic(120000, 9, 5);
    flymc::save_csv(ds, tmp / "big.csv");
    flymc::save_npy(ds, tmp / "big.npy");
    CHECK(flymc::test::identical(ds, flymc::load_dataset(tmp / "big.csv", LabelDomain::binary)));
    CHECK(flymc::test::identical(ds, flymc::load_dataset(tmp / "big.npy", LabelDomain::binary)));
  }

  TEST_CASE("load_dataset dispatches on the extension") {
    CHECK(flymc::load_dataset(fixture("good_noheader.csv"), LabelDomain::binary).n() == 2);
    CHECK(flymc::load_dataset(fixture("good_f8.npy"), LabelDomain::binary).n() == 2);
    const auto msg =
        data_error([] { (void)flymc::load_dataset(fixture("good.txt"), LabelDomain::any); });
    CHECK(contains(msg, "good.txt: unknown data file type '.txt'"));
  }

  TEST_CASE("save_csv / save_npy report an uncreatable file as EX_CANTCREAT (73)") {
    const auto ds = awkward_dataset();
    for (const char* path : {"/nonexistent-dir/x.csv", "/nonexistent-dir/x.npy"}) {
      try {
        if (std::string(path).ends_with(".csv")) {
          flymc::save_csv(ds, path);
        } else {
          flymc::save_npy(ds, path);
        }
        FAIL("no exception");
      } catch (const flymc::Error& e) {
        CHECK(e.exit_code() == 73);
        CHECK(contains(e.what(), path));
      }
    }
  }

  // ------------------------------------------------------------------ good NPY
  TEST_CASE("load_npy: float64, versions 1.0, 2.0 and 3.0") {
    for (const char* name : {"good_f8.npy", "good_v2.npy", "good_v3.npy"}) {
      CAPTURE(name);
      const auto ds = flymc::load_npy(fixture(name), LabelDomain::binary);
      REQUIRE(ds.n() == 2);
      REQUIRE(ds.d() == 2);
      CHECK(ds.y()[0] == 1.0);
      CHECK(ds.y()[1] == -1.0);
      CHECK(ds.row(0)[0] == 0.5);
      CHECK(ds.row(0)[1] == -2.0);
      CHECK(ds.row(1)[0] == 1.25e-3);
      CHECK(ds.row(1)[1] == 3.0);
      CHECK(ds.row(1)[2] == 0.0);  // padding
    }
  }

  TEST_CASE("load_npy: float32 is widened exactly") {
    const auto ds = flymc::load_npy(fixture("good_f4.npy"), LabelDomain::binary);
    REQUIRE(ds.n() == 2);
    CHECK(ds.row(1)[0] == static_cast<double>(1.25e-3f));
    CHECK(ds.row(0)[1] == -2.0);
  }

  TEST_CASE("load_npy: binary labels {0,1} are mapped to {-1,+1}") {
    const auto ds = flymc::load_npy(fixture("good_01.npy"), LabelDomain::binary);
    CHECK(ds.y()[0] == -1.0);
    CHECK(ds.y()[1] == 1.0);
  }

  // ------------------------------------------------------------------ NPY errors
  TEST_CASE("load_npy error: missing file") {
    const auto msg = npy_error("bad/does_not_exist.npy");
    CHECK(contains(msg, fixture("bad/does_not_exist.npy") + ": cannot open: No such file"));
  }

  TEST_CASE("load_npy error: empty file") {
    CHECK(contains(npy_error("bad/empty.npy"), fixture("bad/empty.npy") + ": empty file"));
  }

  TEST_CASE("load_npy error: bad magic") {
    CHECK(contains(npy_error("bad/bad_magic.npy"), "byte offset 0: bad magic"));
    CHECK(contains(npy_error("bad/short.npy"), "bad magic"));
    CHECK(contains(npy_error("good_noheader.csv"), "bad magic"));
  }

  TEST_CASE("load_npy error: unsupported version") {
    CHECK(contains(npy_error("bad/version_4.npy"), "unsupported NPY format version 4.0"));
  }

  TEST_CASE("load_npy error: unsupported dtype") {
    CHECK(contains(npy_error("bad/dtype_i8.npy"), "unsupported dtype '<i8'"));
    CHECK(contains(npy_error("bad/dtype_big_endian.npy"), "unsupported dtype '>f8'"));
  }

  TEST_CASE("load_npy error: Fortran order") {
    CHECK(contains(npy_error("bad/fortran.npy"), "unsupported fortran_order True"));
  }

  TEST_CASE("load_npy error: unsupported ndim") {
    CHECK(contains(npy_error("bad/ndim1.npy"), "unsupported ndim 1 (shape (6,))"));
    CHECK(contains(npy_error("bad/ndim3.npy"), "unsupported ndim 3 (shape (2, 2, 2))"));
  }

  TEST_CASE("load_npy error: fewer than 2 columns, no rows") {
    CHECK(contains(npy_error("bad/one_column.npy"), "fewer than 2 columns"));
    CHECK(contains(npy_error("bad/zero_rows.npy"), "no data rows"));
  }

  TEST_CASE("load_npy error: header parse errors name the byte offset") {
    const auto garbage = npy_error("bad/header_garbage.npy");
    CHECK(contains(garbage, fixture("bad/header_garbage.npy") + ": byte offset "));
    CHECK(contains(garbage, "NPY header: expected '}'"));
    CHECK(contains(npy_error("bad/header_missing_key.npy"), "no 'fortran_order' key"));
    CHECK(contains(npy_error("bad/header_unterminated.npy"),
                   "byte offset 20: NPY header: unterminated string"));
  }

  TEST_CASE("load_npy error: truncated header") {
    CHECK(contains(npy_error("bad/header_truncated.npy"),
                   "byte offset 10: truncated NPY header (header length 118, but only 30 bytes"));
  }

  TEST_CASE("load_npy error: truncated data names offset and expected size") {
    CHECK(contains(npy_error("bad/truncated_data.npy"),
                   "truncated data: expected 72 bytes of data at byte offset 128"));
    CHECK(contains(npy_error("bad/trailing_bytes.npy"), "byte offset 200: 8 unexpected trailing"));
  }

  TEST_CASE("load_npy error: NaN and Inf name the row and field") {
    CHECK(contains(npy_error("bad/nan.npy"),
                   fixture("bad/nan.npy") + ": row 1: field 3 (x2): NaN is not allowed"));
    CHECK(contains(npy_error("bad/inf_f4.npy"), ": row 1: field 1 (label): Inf is not allowed"));
  }

  TEST_CASE("load_npy error: label outside the domain") {
    CHECK(contains(npy_error("bad/label_2.npy", LabelDomain::binary),
                   ": row 1: field 1 (label): label 2 is not a binary label"));
    // 1 and 2 are valid class indices.
    CHECK(flymc::load_npy(fixture("bad/label_2.npy"), LabelDomain::categorical).n() == 2);
  }

  // ------------------------------------------------------------------ in memory, piece sizes
  TEST_CASE("parse_csv / parse_npy read text in memory exactly as the file loaders read files") {
    namespace fs = std::filesystem;
    const fs::path dir(FLYMC_TEST_DATA_DIR);
    int compared = 0;
    for (const auto& entry : fs::recursive_directory_iterator(dir)) {
      const std::string path = entry.path().string(), ext = entry.path().extension().string();
      if (ext != ".csv" && ext != ".npy") continue;
      if (entry.path().filename() == "stan-csv-example.csv") continue;
      CAPTURE(path);
      std::ifstream f(path, std::ios::binary);
      const std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
      for (LabelDomain dom : {LabelDomain::any, LabelDomain::binary, LabelDomain::categorical}) {
        const bool csv = ext == ".csv";
        std::string file_error, mem_error, tiny_error;
        std::optional<flymc::Dataset> from_file, from_mem, from_tiny;
        flymc::detail::LoaderBlocks tiny;
        tiny.io_bytes = 5;
        tiny.parse_bytes = 2;
        tiny.npy_bytes = 1;
        file_error = data_error([&] {
          from_file.emplace(csv ? flymc::load_csv(path, dom) : flymc::load_npy(path, dom));
        });
        mem_error = data_error([&] {
          from_mem.emplace(csv ? flymc::parse_csv(text, path, dom)
                               : flymc::parse_npy(text, path, dom));
        });
        tiny_error = data_error([&] {
          from_tiny.emplace(csv ? flymc::detail::parse_csv_blocks(text, path, dom, tiny)
                                : flymc::detail::parse_npy_blocks(text, path, dom, tiny));
        });
        CHECK(mem_error == file_error);
        CHECK(tiny_error == file_error);
        REQUIRE(from_mem.has_value() == from_file.has_value());
        REQUIRE(from_tiny.has_value() == from_file.has_value());
        if (from_file) {
          CHECK(flymc::test::identical(*from_mem, *from_file));
          CHECK(flymc::test::identical(*from_tiny, *from_file));
        }
        ++compared;
      }
    }
    CHECK(compared >= 3 * 40);  // the fixtures of tests/data and tests/data/bad, 3 domains each
  }

  TEST_CASE("CSV and NPY parsed in pieces of a few bytes give the same data set" *
            doctest::test_suite("threaded")) {
    // Larger than a few pieces: every block, carry-over and parallel-chunk boundary is crossed.
    TempDir tmp;
    const auto ds = awkward_dataset();
    flymc::save_csv(ds, tmp / "a.csv");
    flymc::save_npy(ds, tmp / "a.npy");
    for (const std::string name : {"a.csv", "a.npy"}) {
      CAPTURE(name);
      std::ifstream f(tmp / name, std::ios::binary);
      const std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
      for (std::size_t io : {1, 3, 64, 1000}) {
        for (std::size_t piece : {1, 7, 100}) {
          flymc::detail::LoaderBlocks b;
          b.io_bytes = io;
          b.parse_bytes = piece;
          b.npy_bytes = piece * 8;
          const auto got = name == "a.csv"
                               ? flymc::detail::parse_csv_blocks(text, "mem", LabelDomain::any, b)
                               : flymc::detail::parse_npy_blocks(text, "mem", LabelDomain::any, b);
          CHECK(flymc::test::identical(got, ds));
        }
      }
    }
  }

  TEST_CASE("load_csv error: a long first line and many short rows do not allocate N x D first") {
    // 20000 fields on line 1, then 200001 more lines: N x D would be 200002 x 19999 doubles
    // (32 GB) if it were allocated before parsing. The rows are malformed, so the loader must
    // report the first bad row instead, without allocating it.
    std::string text = "1";
    for (int i = 1; i < 20000; ++i) text += ",1";
    text += '\n';
    std::string blank = text + std::string(200000, '\n') + "1,2\n";
    CHECK(data_error([&] { (void)flymc::parse_csv(blank, "big.csv", LabelDomain::any); }) ==
          "big.csv:2: blank line between data rows");
    std::string short_rows = text;
    for (int i = 0; i < 200001; ++i) short_rows += "1,2\n";
    CHECK(data_error([&] { (void)flymc::parse_csv(short_rows, "big.csv", LabelDomain::any); }) ==
          "big.csv:2: expected 20000 fields, found 2");
    // An empty field in an otherwise full row also makes a row shorter than 2·ncols − 1 bytes.
    std::string empty_field = "1,2,3\n4,,6\n" + std::string(40, '\n') + "7,8,9\n";
    CHECK(data_error([&] { (void)flymc::parse_csv(empty_field, "e.csv", LabelDomain::any); }) ==
          "e.csv:2: field 2 (x1): empty field");
  }
}

TEST_SUITE("unit") {
  TEST_CASE("DataWriter: rows appended in uneven blocks are the bytes save_csv / save_npy write") {
    TempDir tmp;
    const std::size_t n = 20000, d = 3;  // CSV: more than one batch of parallel pieces
    flymc::Dataset ds(n, d, "mem");
    for (std::size_t i = 0; i < n; ++i) {
      ds.mutable_y()[i] = i % 3 == 0 ? 1.0 : -1.0;
      for (std::size_t j = 0; j < d; ++j) ds.mutable_row(i)[j] = std::sin(double(i * d + j)) / 7.0;
    }
    auto bytes = [](const std::string& path) {
      std::ifstream f(path, std::ios::binary);
      return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
    };
    for (const flymc::DataFormat format : {flymc::DataFormat::csv, flymc::DataFormat::npy}) {
      const bool csv = format == flymc::DataFormat::csv;
      CAPTURE(csv);
      const std::string whole = tmp / (csv ? "whole.csv" : "whole.npy");
      const std::string streamed = tmp / (csv ? "streamed.CSV" : "streamed.NPY");
      csv ? flymc::save_csv(ds, whole) : flymc::save_npy(ds, whole);
      REQUIRE(flymc::data_format_of(streamed) == format);
      {
        flymc::DataWriter w(streamed, format, n, d);
        std::size_t done = 0;
        for (std::size_t count :
             {std::size_t{1}, std::size_t{0}, std::size_t{8191}, std::size_t{70}, n - 8262}) {
          w.append(ds.y().data() + done, ds.row(done), ds.stride(), count);
          done += count;
        }
        CHECK_THROWS_AS(w.append(ds.y().data(), ds.row(0), ds.stride(), 1), std::logic_error);
        w.commit();
      }
      CHECK(bytes(streamed) == bytes(whole));
    }
    // Nothing appears under the path until commit; a short file is never committed.
    const std::string partial = tmp / "partial.npy";
    {
      flymc::DataWriter w(partial, flymc::DataFormat::npy, n, d);
      w.append(ds.y().data(), ds.row(0), ds.stride(), 10);
      CHECK_FALSE(std::filesystem::exists(partial));
      CHECK_THROWS_AS(w.commit(), std::logic_error);
    }
    CHECK_FALSE(std::filesystem::exists(partial));
    CHECK(std::distance(std::filesystem::directory_iterator(tmp.dir),
                        std::filesystem::directory_iterator()) == 4);
    CHECK_FALSE(flymc::data_format_of("dir.npy/file").has_value());
    CHECK_FALSE(flymc::data_format_of("file.txt").has_value());
  }
}

TEST_SUITE("unit") {
  TEST_CASE("load_npy_part: the parts are load_npy's rows, dealt in whole reduction chunks") {
    TempDir tmp;
    const std::size_t n = 5 * flymc::kReduceGrain + 17;  // six chunks, the last short
    flymc::Dataset ds = flymc::synth_logistic(n, 4, 3);
    for (double& y : ds.mutable_y()) y = y > 0.0 ? 1.0 : 0.0;  // the {0,1} coding
    flymc::save_npy(ds, tmp / "d.npy");
    const flymc::Dataset whole = flymc::load_npy(tmp / "d.npy", LabelDomain::binary);
    for (const int parts : {1, 2, 4, 7}) {
      CAPTURE(parts);
      std::size_t next = 0;
      for (int p = 0; p < parts; ++p) {
        const flymc::FilePart part =
            flymc::load_npy_part(tmp / "d.npy", LabelDomain::binary, p, parts);
        const auto [first, last] = flymc::shard_rows(n, p, parts);
        CHECK(part.first_row == first);
        CHECK(first == next);  // contiguous, in part order
        CHECK((first % flymc::kReduceGrain == 0 || first == n));
        CHECK(part.file_rows == n);
        REQUIRE(part.data.n() == last - first);
        for (std::size_t i = 0; i < part.data.n(); ++i) {
          CHECK(part.data.y()[i] == whole.y()[first + i]);  // 0 recoded to -1 within the part
          for (std::size_t j = 0; j < ds.stride(); ++j)
            REQUIRE(part.data.row(i)[j] == whole.row(first + i)[j]);
        }
        // The file's first label 0 in the part is reported (its -1s come from recoding).
        CHECK((part.data.n() == 0 || part.first_zero != flymc::none_row));
        CHECK(part.first_minus == flymc::none_row);
        next = last;
      }
      CHECK(next == n);
    }
    // 7 parts of six chunks: one part is empty; the chunk counts differ by at most one.
    CHECK(flymc::shard_rows(n, 6, 7).first == flymc::shard_rows(n, 6, 7).second);
    CHECK(flymc::shard_rows(n, 0, 4).second == 2 * flymc::kReduceGrain);
    // A bad value is named by the file's row number, not the part's.
    ds.mutable_row(4 * flymc::kReduceGrain + 3)[1] = NAN;
    flymc::save_npy(ds, tmp / "bad.npy");
    CHECK(data_error([&] {
            (void)flymc::load_npy_part(tmp / "bad.npy", LabelDomain::binary, 2, 3);
          }) == tmp / "bad.npy" + ": row " + std::to_string(4 * flymc::kReduceGrain + 3) +
                    ": field 3 (x2): NaN is not allowed");
    // A shard must start on a chunk and hold whole chunks unless it is the last part.
    struct NoLink final : flymc::RowLink {
      explicit NoLink(int n) : n_parts(n) {}
      int n_parts;
      int part() const noexcept override { return n_parts - 1; }
      int parts() const noexcept override { return n_parts; }
      std::vector<double> receive_from_previous() override { return {}; }
      void send_to_next(const std::vector<double>&) override {}
      std::vector<double> broadcast_from_last(const std::vector<double>& v) override { return v; }
      std::vector<double> gather_in_order(const std::vector<double>& v) override { return v; }
      std::vector<double> all_gather(const std::vector<double>& v) override { return v; }
    };
    const auto link = std::make_shared<NoLink>(2), alone = std::make_shared<NoLink>(1);
    flymc::Dataset rows(10, 2, "s");
    CHECK_THROWS_AS(rows.set_shard({5, 100, link}), flymc::ConfigError);       // not on a chunk
    CHECK_THROWS_AS(rows.set_shard({0, 100, link}), flymc::ConfigError);       // a short inner part
    CHECK_THROWS_AS(rows.set_shard({4096, 4100, link}), flymc::ConfigError);   // past the end
    CHECK_THROWS_AS(rows.set_shard({0, 10, nullptr}), flymc::ConfigError);     // no link
    CHECK_THROWS_AS(rows.set_shard({4096, 4106, alone}), flymc::ConfigError);  // not all rows
    flymc::Dataset none(0, 2, "s");
    none.set_shard({4106, 4106, link});  // an empty last part (more parts than chunks)
    rows.set_shard({4096, 4106, link});  // the last part
    CHECK(rows.total_n() == 4106);
    CHECK(rows.shard()->first_row == 4096);
  }
}
