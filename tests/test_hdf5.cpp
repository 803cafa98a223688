// Tests of HDF5 data sets (flymc::hdf5): the spec syntax, the same data set as the CSV of the
// same data, messages naming file, dataset, row and field, and the command line giving the same
// draws from a CSV, a libsvm and an HDF5 file of one data set.
#include <doctest/doctest.h>
#include <hdf5.h>
#include <sys/wait.h>

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "flymc/core/errors.hpp"
#include "flymc/core/parallel.hpp"
#include "flymc/data/loaders.hpp"
#include "flymc/datagen/datagen.hpp"
#include "flymc/hdf5/hdf5.hpp"
#include "flymc/io/stan_csv.hpp"
#include "test_util.hpp"

namespace {

using flymc::LabelDomain;

std::string h5_error(const std::string& spec, LabelDomain dom = LabelDomain::any) {
  try {
    flymc::load_hdf5(spec, dom);
  } catch (const flymc::DataError& e) {
    return e.what();
  }
  return "<no DataError thrown>";
}

/// Writes a dataset of `rank` dimensions and native type `type` (for shapes and types the
/// library's save_hdf5 does not write).
void write_raw(const std::string& file, const std::string& name, int rank, const hsize_t* dims,
               hid_t type, const void* values) {
  const hid_t f = H5Fcreate(file.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  const hid_t s = H5Screate_simple(rank, dims, nullptr);
  const hid_t d = H5Dcreate2(f, name.c_str(), type, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  H5Dwrite(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, values);
  H5Dclose(d);
  H5Sclose(s);
  H5Fclose(f);
}

/// The draws of chain 1 of a CLI run on `data` (in its own output directory).
std::vector<std::vector<double>> cli_draws(const std::string& data, const std::string& dir,
                                           const std::string& out) {
  const std::string cmd = "cd '" + dir + "' && " + std::string(FLYMC_CLI_PATH) +
                          " sample --quiet --data '" + data +
                          "' --algo flymc --chains 1 --warmup 200 --iters 300 --seed 4 --out " +
                          out + " >/dev/null 2>" + out + ".err";
  const int st = std::system(cmd.c_str());
  const bool ok = WIFEXITED(st) && WEXITSTATUS(st) == 0;
  REQUIRE_MESSAGE(ok, data);
  return flymc::read_stan_csv(dir + "/" + out + "/chain-1.csv").draws;
}

}  // namespace

TEST_SUITE("unit") {
  TEST_CASE("hdf5_location splits file.h5:/dataset and nothing else") {
    const auto a = flymc::hdf5_location("dir/x.H5:/g/data");
    REQUIRE(a);
    CHECK(a->file == "dir/x.H5");
    CHECK(a->dataset == "/g/data");
    CHECK(flymc::hdf5_location("c:/x.hdf5:/d")->file == "c:/x.hdf5");
    CHECK_FALSE(flymc::hdf5_location("data.csv"));
    CHECK_FALSE(flymc::hdf5_location("x.h5"));
    CHECK_FALSE(flymc::hdf5_location("a:/b.csv"));
  }

  TEST_CASE("an HDF5 file of a data set loads as its CSV does, integers converted") {
    const flymc::test::TempDir tmp("hdf5");
    const auto ds = flymc::test::logistic_data(200, 4, 3);
    flymc::save_csv(*ds, tmp.path() + "/d.csv");
    flymc::save_hdf5(*ds, {tmp.path() + "/d.h5", "/group/train"});
    const auto a = flymc::load_data(tmp.path() + "/d.csv", LabelDomain::binary);
    const auto b = flymc::load_data(tmp.path() + "/d.h5:/group/train", LabelDomain::binary);
    REQUIRE(b.n() == a.n());
    REQUIRE(b.d() == a.d());
    CHECK(b.source() == tmp.path() + "/d.h5:/group/train");
    for (std::size_t i = 0; i < a.n(); ++i) {
      CHECK(b.y()[i] == a.y()[i]);
      for (std::size_t j = 0; j < a.stride(); ++j) CHECK(b.row(i)[j] == a.row(i)[j]);
    }
    const std::int32_t ints[6] = {0, 5, -2, 1, 7, 3};
    const hsize_t dims[2] = {2, 3};
    write_raw(tmp.path() + "/i.h5", "/x", 2, dims, H5T_NATIVE_INT32, ints);
    const auto c = flymc::load_hdf5(tmp.path() + "/i.h5:/x", LabelDomain::binary);
    CHECK(c.y()[0] == -1.0);  // {0,1} labels mapped
    CHECK(c.row(1)[1] == 3.0);
  }

  TEST_CASE("HDF5 errors name the file, the dataset, the row and the field") {
    const flymc::test::TempDir tmp("hdf5-bad");
    const std::string p = tmp.path();
    CHECK(h5_error(p + "/none.h5:/d") == p + "/none.h5: cannot open: No such file or directory");
    std::ofstream(p + "/text.h5") << "not hdf5\n";
    CHECK(h5_error(p + "/text.h5:/d") == p + "/text.h5: not an HDF5 file");
    const double v1[3] = {1, 2, 3};
    const hsize_t d1[1] = {3};
    write_raw(p + "/one.h5", "/v", 1, d1, H5T_NATIVE_DOUBLE, v1);
    CHECK(h5_error(p + "/one.h5:/w") == p + "/one.h5:/w: no dataset '/w' in the file");
    CHECK(h5_error(p + "/one.h5:/v") ==
          p + "/one.h5:/v: expected a 2-D dataset (rows x (label + features)), got 1-D");
    const double v2[6] = {1, 0.5, 2, 1, std::nan(""), 4};
    const hsize_t d2[2] = {2, 3};
    write_raw(p + "/nan.h5", "/d", 2, d2, H5T_NATIVE_DOUBLE, v2);
    CHECK(h5_error(p + "/nan.h5:/d") == p + "/nan.h5:/d: row 1: field 2 (x1): not finite (nan)");
    const double v3[4] = {1, 0.5, 2, 1};
    const hsize_t d3[2] = {2, 2};
    write_raw(p + "/lab.h5", "/d", 2, d3, H5T_NATIVE_DOUBLE, v3);
    CHECK(h5_error(p + "/lab.h5:/d", LabelDomain::binary)
              .rfind(p + "/lab.h5:/d: row 1: field 1", 0) == 0);
  }

  TEST_CASE("load_hdf5_part: the parts are load_hdf5's rows, read by hyperslab, bad rows named") {
    // The HDF5 twin of load_npy_part (an MPI process's rows, --shard-data).
    const flymc::test::TempDir tmp("hdf5-part");
    const std::string spec = tmp.path() + "/d.h5:/g/d";
    const std::size_t n = 5 * flymc::kReduceGrain + 17;  // six chunks, the last short
    flymc::Dataset ds = flymc::synth_logistic(n, 4, 3);
    for (double& y : ds.mutable_y()) y = y > 0.0 ? 1.0 : 0.0;  // the {0,1} coding
    flymc::save_hdf5(ds, *flymc::hdf5_location(spec));
    const flymc::Dataset whole = flymc::load_hdf5(spec, LabelDomain::binary);
    for (const int parts : {1, 3, 7}) {
      CAPTURE(parts);
      std::size_t next = 0;
      for (int p = 0; p < parts; ++p) {
        const flymc::FilePart part = flymc::load_data_part(spec, LabelDomain::binary, p, parts);
        const auto [first, last] = flymc::shard_rows(n, p, parts);
        CHECK(part.first_row == first);
        CHECK(first == next);
        CHECK(part.file_rows == n);
        REQUIRE(part.data.n() == last - first);
        for (std::size_t i = 0; i < part.data.n(); ++i) {
          CHECK(part.data.y()[i] == whole.y()[first + i]);
          for (std::size_t j = 0; j < ds.stride(); ++j)
            REQUIRE(part.data.row(i)[j] == whole.row(first + i)[j]);
        }
        CHECK((part.data.n() == 0 || part.first_zero != flymc::none_row));
        next = last;
      }
      CHECK(next == n);
    }
    // Float storage: the part's rows rounded as the whole file's are.
    const flymc::FilePart f32 =
        flymc::load_hdf5_part(spec, LabelDomain::binary, 1, 3, flymc::Storage::f32);
    CHECK(f32.data.storage() == flymc::Storage::f32);
    CHECK(f32.data.value(5, 2) ==
          static_cast<double>(static_cast<float>(whole.value(f32.first_row + 5, 2))));
    // A bad value is named by the file's row (0-based, as load_hdf5 names it).
    ds.mutable_row(4 * flymc::kReduceGrain + 3)[1] = NAN;
    flymc::save_hdf5(ds, *flymc::hdf5_location(spec));
    std::string error;
    try {
      (void)flymc::load_hdf5_part(spec, LabelDomain::binary, 2, 3);
    } catch (const flymc::DataError& e) {
      error = e.what();
    }
    CHECK(error == spec + ": row " + std::to_string(4 * flymc::kReduceGrain + 3) +
                       ": field 3 (x2): not finite (nan)");
    // CSV rows cannot be found without reading all before them: refused, named.
    flymc::save_csv(whole, tmp.path() + "/d.csv");
    try {
      (void)flymc::load_data_part(tmp.path() + "/d.csv", LabelDomain::binary, 0, 2);
      error.clear();
    } catch (const flymc::DataError& e) {
      error = e.what();
    }
    CHECK(error.rfind(tmp.path() + "/d.csv: a process reads its own rows from .npy files", 0) == 0);
  }

  TEST_CASE("flymc sample draws the same from a data set's CSV, libsvm and HDF5 files" *
            doctest::test_suite("threaded")) {
    const flymc::test::TempDir tmp("hdf5-cli");
    const auto ds = flymc::test::logistic_data(400, 3, 8);
    flymc::save_csv(*ds, tmp.path() + "/d.csv");
    flymc::save_hdf5(*ds, {tmp.path() + "/d.h5", "/d"});
    std::ofstream svm(tmp.path() + "/d.svm");
    for (std::size_t i = 0; i < ds->n(); ++i) {
      svm << (ds->y()[i] > 0 ? "+1" : "-1");
      for (std::size_t j = 0; j < ds->d(); ++j) {
        char buf[32];
        const auto r = std::to_chars(buf, buf + sizeof buf, ds->row(i)[j]);
        svm << ' ' << j + 1 << ':' << std::string(buf, r.ptr);
      }
      svm << '\n';
    }
    svm.close();
    const auto a = cli_draws(tmp.path() + "/d.csv", tmp.path(), "csv");
    CHECK(a.size() == 300);
    CHECK(cli_draws(tmp.path() + "/d.svm", tmp.path(), "svm") == a);
    CHECK(cli_draws(tmp.path() + "/d.h5:/d", tmp.path(), "h5") == a);
  }
}
