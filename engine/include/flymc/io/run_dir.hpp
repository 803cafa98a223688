#pragma once
/// @file run_dir.hpp
/// A run owns its output directory. RunDirLock takes an exclusive lock on `DIR/.lock` before the
/// run touches anything else in DIR, and holds it for its lifetime; the kernel releases it when
/// the process ends, even by SIGKILL, so a killed run never leaves a stale lock behind. A second
/// run into a live run's directory fails at once (exit 73) and changes nothing there. A new run in
/// a directory that holds an earlier, finished or abandoned run first removes that run's files
/// (clear_run_outputs), so the two are never mixed.
#include <string>

namespace flymc {

class RunDirLock {
 public:
  /// Creates `dir` if needed and locks it; records this process's id in the lock file.
  /// @throw Error 73 if another process holds the lock (naming it when it recorded its id), or if
  /// the directory or the lock file cannot be created.
  explicit RunDirLock(const std::string& dir);
  ~RunDirLock();
  RunDirLock(const RunDirLock&) = delete;
  RunDirLock& operator=(const RunDirLock&) = delete;

  /// The lock file of `dir`.
  static std::string path(const std::string& dir);

 private:
  int fd_ = -1;
};

/// Removes what a flymc run writes in `dir`: its draw files (chain-<k>.csv), summary.json, the
/// checkpoint directory's states and manifest, and their temporary files; any other file is left
/// alone. Call it with the directory's lock held. @throw Error 73 if a file cannot be removed.
void clear_run_outputs(const std::string& dir);

}  // namespace flymc
