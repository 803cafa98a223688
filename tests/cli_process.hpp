#pragma once
// Helpers of the end-to-end tests that start processes (the `flymc` binary, or mpirun running
// it): a temporary directory per test, start a process with its output in files, wait for it,
// compare two runs' files.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "test_util.hpp"

namespace flymc::test {

namespace fs = std::filesystem;

/// A fresh directory for one test: CTest runs tests in parallel, so each has its own.
inline fs::path temp_dir(const std::string& prefix, const std::string& name) {
  const fs::path d = fs::temp_directory_path() / (prefix + name + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

/// `flymc sample ARGS` as the tests written before `--algo auto --ess 1000` became the default
/// meant it: FlyMC for 1,000 sampling iterations, wherever ARGS name no sampler or length (a
/// resumed run takes its options from its checkpoint). Other commands pass unchanged.
inline std::string with_fixed_defaults(const std::string& args) {
  const bool sample = args.rfind("sample", 0) == 0 || args.find(" sample ") != std::string::npos;
  if (!sample || args.find("--resume") != std::string::npos ||
      args.find("--help") != std::string::npos)
    return args;
  std::string out = args;
  if (out.find("--algo") == std::string::npos) out += " --algo flymc";
  if (out.find("--iters") == std::string::npos && out.find("--ess") == std::string::npos)
    out += " --iters 1000";
  return out;
}

inline std::vector<std::string> split_words(const std::string& args) {
  std::istringstream in(args);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

/// Starts `program args...` with stdout and stderr in dir/stdout.txt and dir/stderr.txt.
inline pid_t spawn_process(const std::string& program, const std::string& args,
                           const fs::path& dir) {
  std::vector<std::string> words = split_words(args);
  words.insert(words.begin(), program);
  std::vector<char*> argv;
  for (auto& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  const std::string out = (dir / "stdout.txt").string(), err = (dir / "stderr.txt").string();
  const pid_t pid = ::fork();
  if (pid == 0) {  // only async-signal-safe calls until exec
    const int o = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int e = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (o < 0 || e < 0 || ::dup2(o, 1) < 0 || ::dup2(e, 2) < 0) ::_exit(126);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  REQUIRE(pid > 0);
  return pid;
}

struct Status {
  int code = -1;   // exit code, or -1 if killed by a signal
  int signal = 0;  // the signal that killed it
  std::string out, err;
};

inline std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

inline Status wait_for(pid_t pid, const fs::path& dir) {
  int st = 0;
  while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  Status s;
  if (WIFEXITED(st)) s.code = WEXITSTATUS(st);
  if (WIFSIGNALED(st)) s.signal = WTERMSIG(st);
  s.out = slurp(dir / "stdout.txt");
  s.err = slurp(dir / "stderr.txt");
  return s;
}

/// Draw files equal up to their Elapsed Time lines, and summary.json's params equal.
inline void check_same_run(const fs::path& a, const fs::path& b, int chains) {
  for (int c = 1; c <= chains; ++c) {
    CAPTURE(c);
    const std::string name = "chain-" + std::to_string(c) + ".csv";
    const std::string ta = read_without_timing((a / name).string());
    REQUIRE(ta.size() > 1000);
    CHECK(ta == read_without_timing((b / name).string()));
  }
  const auto ja = nlohmann::json::parse(slurp(a / "summary.json"));
  const auto jb = nlohmann::json::parse(slurp(b / "summary.json"));
  CHECK(ja["params"] == jb["params"]);
  CHECK(ja["run"]["queries_per_iter"] == jb["run"]["queries_per_iter"]);
  CHECK(ja["run"]["accept_rate"] == jb["run"]["accept_rate"]);
}

}  // namespace flymc::test
