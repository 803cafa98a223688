#pragma once
// Files that appear whole or not at all: written under a temporary name beside their path and
// renamed onto it. The temporary's name is unique (mkstemp), so two writers of one path (two
// `flymc data` runs, or two validations with one --json) never write into each other's file:
// each rename replaces the file with one complete version.
#include <cstddef>
#include <cstdio>
#include <span>
#include <string>
#include <string_view>

namespace flymc {

/// True for the names AtomicFile gives its temporaries of `base` ("base.tmp.XXXXXX").
bool is_atomic_temporary(std::string_view name, std::string_view base);

class AtomicFile {
 public:
  /// Creates `path.tmp.XXXXXX` in path's directory. `durable`: commit() fsyncs the file and the
  /// directory, so a reported write survives a crash of the machine.
  /// @throw Error (73) if the temporary cannot be created.
  explicit AtomicFile(std::string path, bool durable = false);
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  /// Removes the temporary unless committed.
  ~AtomicFile();

  /// @throw Error (74) on a write error.
  void write(const void* data, std::size_t bytes);
  void write(std::string_view text) { write(text.data(), text.size()); }
  /// Flushes, closes and renames the temporary onto the path. @throw Error (74).
  void commit();

 private:
  [[noreturn]] void fail(const std::string& what, int err);
  std::string path_, tmp_;
  std::FILE* fp_ = nullptr;
  bool durable_;
};

/// Replaces `path` by `bytes` atomically and durably.
void write_file_atomic(const std::string& path, std::span<const unsigned char> bytes);
/// Replaces `path` by `text` atomically (not fsynced: reports and data files).
void write_text_atomic(const std::string& path, std::string_view text);

}  // namespace flymc
