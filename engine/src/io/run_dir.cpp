#include "flymc/io/run_dir.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>
#include <system_error>

#include "flymc/core/atomic_file.hpp"
#include "flymc/core/errors.hpp"
#include "flymc/io/checkpoint.hpp"

namespace flymc {
namespace {

/// The process id recorded in an open lock file, or "" if none is readable.
std::string recorded_pid(int fd) {
  char buf[32] = {};
  const ssize_t got = ::pread(fd, buf, sizeof buf - 1, 0);
  if (got <= 0) return "";
  std::string s(buf, static_cast<std::size_t>(got));
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s.find_first_not_of("0123456789") == std::string::npos ? s : "";
}

bool is_run_output(const std::string& name) {
  const bool chain_csv =
      name.starts_with("chain-") && (name.ends_with(".csv") || name.ends_with(".csv.tmp"));
  return chain_csv || name == "summary.json" || is_atomic_temporary(name, "summary.json");
}

void remove_or_throw(const std::filesystem::path& p) {
  std::error_code ec;
  if (!std::filesystem::remove(p, ec) && ec)
    throw Error(p.string() + ": cannot remove the earlier run's file: " + ec.message(), 73);
}

}  // namespace

std::string RunDirLock::path(const std::string& dir) { return dir + "/.lock"; }

RunDirLock::RunDirLock(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw Error(dir + ": cannot create the output directory: " + ec.message(), 73);
  const std::string file = path(dir);
  fd_ = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) throw Error(file + ": cannot create the lock file: " + std::strerror(errno), 73);
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const std::string pid = recorded_pid(fd_);
    ::close(fd_);
    throw Error(dir + ": another flymc run is writing this directory" +
                    (pid.empty() ? std::string() : " (process " + pid + ")") +
                    "; wait for it to end, or choose another --out",
                73);
  }
  // Who holds it, for the message above; the lock itself is the flock, not the contents.
  const std::string me = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd_, 0) == 0) {
    const ssize_t ignored = ::pwrite(fd_, me.data(), me.size(), 0);
    (void)ignored;
  }
}

RunDirLock::~RunDirLock() { ::close(fd_); }

void clear_run_outputs(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (is_run_output(e.path().filename().string())) remove_or_throw(e.path());
  remove_checkpoints(dir + "/checkpoint");
}

}  // namespace flymc
