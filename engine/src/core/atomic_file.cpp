#include "flymc/core/atomic_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

#include "flymc/core/errors.hpp"

namespace flymc {
namespace {
constexpr int kCantCreate = 73;  // EX_CANTCREAT
constexpr int kIoError = 74;     // EX_IOERR
constexpr std::string_view kSuffix = ".tmp.";
constexpr std::size_t kRandomChars = 6;  // mkstemp's XXXXXX

std::string errno_text(int err) { return std::strerror(err); }

/// fsync of the directory holding `path`: a rename is durable only once its entry is on disk.
void sync_parent(const std::string& path) {
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  const std::string dir = parent.empty() ? std::string(".") : parent.string();
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0)
    throw Error(dir + ": cannot open directory to sync it: " + errno_text(errno), kIoError);
  const bool synced = ::fsync(dfd) == 0 || errno == EINVAL;
  const int err = errno;
  ::close(dfd);
  if (!synced) throw Error(dir + ": fsync of the directory failed: " + errno_text(err), kIoError);
}
}  // namespace

bool is_atomic_temporary(std::string_view name, std::string_view base) {
  return name.size() == base.size() + kSuffix.size() + kRandomChars && name.starts_with(base) &&
         name.substr(base.size(), kSuffix.size()) == kSuffix;
}

AtomicFile::AtomicFile(std::string path, bool durable)
    : path_(std::move(path)), tmp_(path_ + std::string(kSuffix) + "XXXXXX"), durable_(durable) {
  std::vector<char> name(tmp_.begin(), tmp_.end());
  name.push_back('\0');
  const int fd = ::mkostemp(name.data(), O_CLOEXEC);
  if (fd < 0)
    throw Error(path_ + ": cannot create a temporary file beside it: " + errno_text(errno),
                kCantCreate);
  tmp_.assign(name.data());
  ::fchmod(fd, 0644);  // mkstemp's 0600 would make reports unreadable to the group
  fp_ = ::fdopen(fd, "wb");
  if (fp_ == nullptr) {
    const int err = errno;
    ::close(fd);
    ::unlink(tmp_.c_str());
    throw Error(path_ + ": cannot open '" + tmp_ + "': " + errno_text(err), kCantCreate);
  }
}

AtomicFile::~AtomicFile() {
  if (fp_ != nullptr) {
    std::fclose(fp_);
    ::unlink(tmp_.c_str());
  }
}

void AtomicFile::fail(const std::string& what, int err) {
  if (fp_ != nullptr) std::fclose(fp_);
  fp_ = nullptr;
  ::unlink(tmp_.c_str());
  throw Error(path_ + ": " + what + ": " + errno_text(err), kIoError);
}

void AtomicFile::write(const void* data, std::size_t bytes) {
  if (bytes != 0 && std::fwrite(data, 1, bytes, fp_) != bytes) fail("write error", errno);
}

void AtomicFile::commit() {
  if (std::fflush(fp_) != 0) fail("write error", errno);
  if (durable_ && ::fsync(::fileno(fp_)) != 0) fail("fsync failed", errno);
  const int rc = std::fclose(fp_);
  fp_ = nullptr;
  if (rc != 0) fail("write error", errno);
  if (std::rename(tmp_.c_str(), path_.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp_.c_str());
    throw Error(path_ + ": cannot rename '" + tmp_ + "' into place: " + errno_text(err), kIoError);
  }
  if (durable_) sync_parent(path_);
}

void write_file_atomic(const std::string& path, std::span<const unsigned char> bytes) {
  AtomicFile f(path, true);
  f.write(bytes.data(), bytes.size());
  f.commit();
}

void write_text_atomic(const std::string& path, std::string_view text) {
  AtomicFile f(path);
  f.write(text);
  f.commit();
}

}  // namespace flymc
