// AtomicFile: files appear whole or not at all, and concurrent writers of one path do not mix.
#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "flymc/core/atomic_file.hpp"
#include "flymc/core/errors.hpp"

using namespace flymc;
namespace fs = std::filesystem;

namespace {
fs::path fresh_dir(const std::string& name) {
  const fs::path dir =
      fs::temp_directory_path() / ("flymc-atomic-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::string read_all(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

std::vector<std::string> names_in(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  return out;
}
}  // namespace

TEST_SUITE("unit") {
  // Replays a bug: every writer used `<path>.tmp`, so a second `flymc data` (or validate --json)
  // into the same path truncated the first's temporary, and the first's rename left the second
  // nothing to rename.
  TEST_CASE("two writers of one path keep their own temporaries; the last commit wins whole") {
    const fs::path dir = fresh_dir("two");
    const std::string path = (dir / "out.json").string();
    AtomicFile a(path), b(path);
    a.write("first writer, ");
    b.write("second writer, ");
    a.write("done\n");
    b.write("done too\n");
    a.commit();
    CHECK(read_all(path) == "first writer, done\n");
    b.commit();
    CHECK(read_all(path) == "second writer, done too\n");
    CHECK(names_in(dir) == std::vector<std::string>{"out.json"});
    fs::remove_all(dir);
  }

  TEST_CASE("an uncommitted file leaves the old version and no temporary") {
    const fs::path dir = fresh_dir("abandon");
    const std::string path = (dir / "data.csv").string();
    write_text_atomic(path, "old\n");
    {
      AtomicFile f(path, true);
      f.write("half of a new ver");
      CHECK(names_in(dir).size() == 2);
      CHECK(is_atomic_temporary(
          names_in(dir)[0] == "data.csv" ? names_in(dir)[1] : names_in(dir)[0], "data.csv"));
    }
    CHECK(read_all(path) == "old\n");
    CHECK(names_in(dir) == std::vector<std::string>{"data.csv"});
    CHECK_FALSE(is_atomic_temporary("data.csv.tmp", "data.csv"));
    CHECK_FALSE(is_atomic_temporary("other.csv.tmp.abcdef", "data.csv"));
    fs::remove_all(dir);
  }

  TEST_CASE("a file that cannot be created is refused with 73, naming it") {
    const std::string path = "/nonexistent-dir/out.json";
    try {
      AtomicFile f(path);
      FAIL("no exception");
    } catch (const Error& e) {
      CHECK(e.exit_code() == 73);
      CHECK(std::string(e.what()).find(path) != std::string::npos);
    }
  }
}
