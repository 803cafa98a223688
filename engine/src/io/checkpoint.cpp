#include "flymc/io/checkpoint.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bit>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <limits>
#include <type_traits>

#include "flymc/core/atomic_file.hpp"
#include "flymc/core/errors.hpp"
#include "flymc/core/options.hpp"
#include "flymc/core/parallel.hpp"

namespace flymc {

static_assert(std::endian::native == std::endian::little,
              "checkpoint files store the host's little-endian bytes");

namespace {

constexpr char kMagic[8] = {'F', 'L', 'Y', 'M', 'C', 'C', 'K', 'P'};
constexpr std::uint32_t kKindRun = 1, kKindChain = 2;
constexpr std::size_t kHeaderBytes = 8 + 4 + 4 + 8, kTrailerBytes = 8;

std::string errno_text() { return std::strerror(errno); }

// ---------------------------------------------------------------------------------------------
// Payload encoding

class ByteWriter {
 public:
  template <class T>
  void put(const T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    const auto* p = reinterpret_cast<const unsigned char*>(&v);
    out_.insert(out_.end(), p, p + sizeof(T));
  }
  void put_string(const std::string& s) {
    put<std::uint64_t>(s.size());
    out_.insert(out_.end(), s.begin(), s.end());
  }
  template <class T>
  void put_array(const T* v, std::size_t count) {
    put<std::uint64_t>(count);
    if (count == 0) return;
    const auto* p = reinterpret_cast<const unsigned char*>(v);
    out_.insert(out_.end(), p, p + count * sizeof(T));
  }
  std::vector<unsigned char>& bytes() noexcept { return out_; }

 private:
  std::vector<unsigned char> out_;
};

/// Bounds-checked reads; every failure names the file.
class ByteReader {
 public:
  ByteReader(std::span<const unsigned char> bytes, const std::string& name)
      : p_(bytes.data()), end_(bytes.data() + bytes.size()), name_(name) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw ConfigError(name_ + ": " + what + " (not a checkpoint of this run, or damaged)");
  }
  template <class T>
  T get() {
    static_assert(std::is_trivially_copyable_v<T>);
    if (static_cast<std::size_t>(end_ - p_) < sizeof(T)) fail("payload ends early");
    T v;
    std::memcpy(&v, p_, sizeof(T));
    p_ += sizeof(T);
    return v;
  }
  bool get_bool() {
    const auto b = get<std::uint8_t>();
    if (b > 1) fail("invalid flag");
    return b == 1;
  }
  std::uint64_t count(std::size_t elem_size) {
    const auto n = get<std::uint64_t>();
    // The element count must fit in what is left: no allocation from a hostile length.
    if (n > static_cast<std::size_t>(end_ - p_) / elem_size) fail("array length out of range");
    return n;
  }
  std::string get_string() {
    const auto n = count(1);
    std::string s(reinterpret_cast<const char*>(p_), n);
    p_ += n;
    return s;
  }
  template <class T>
  std::vector<T> get_array() {
    const auto n = count(sizeof(T));
    std::vector<T> v(n);
    if (n > 0) std::memcpy(v.data(), p_, n * sizeof(T));  // (memcpy from null is UB even for 0)
    p_ += n * sizeof(T);
    return v;
  }
  void expect_end() const {
    if (p_ != end_) fail("unexpected bytes after the payload");
  }

 private:
  const unsigned char* p_;
  const unsigned char* end_;
  const std::string& name_;
};

/// Wraps a payload in the header and checksum.
std::vector<unsigned char> frame(std::uint32_t kind, const std::vector<unsigned char>& payload) {
  ByteWriter w;
  for (char c : kMagic) w.put(c);
  w.put(kCheckpointFormat);
  w.put(kind);
  w.put<std::uint64_t>(payload.size());
  auto& out = w.bytes();
  out.insert(out.end(), payload.begin(), payload.end());
  const std::uint64_t h = hash_bytes(out.data(), out.size());
  w.put(h);
  return std::move(out);
}

/// Checks the frame and returns the payload.
std::span<const unsigned char> unframe(std::span<const unsigned char> bytes, std::uint32_t kind,
                                       const std::string& name) {
  const auto fail = [&](const std::string& what) -> void { throw ConfigError(name + ": " + what); };
  if (bytes.size() < 8 || std::memcmp(bytes.data(), kMagic, 8) != 0)
    fail("not a flymc checkpoint file (no FLYMCCKP magic)");
  if (bytes.size() < kHeaderBytes + kTrailerBytes)
    fail("truncated checkpoint file (" + std::to_string(bytes.size()) + " bytes)");
  std::uint32_t version, got_kind;
  std::uint64_t length;
  std::memcpy(&version, bytes.data() + 8, 4);
  std::memcpy(&got_kind, bytes.data() + 12, 4);
  std::memcpy(&length, bytes.data() + 16, 8);
  if (version != kCheckpointFormat)
    fail("checkpoint format version " + std::to_string(version) + "; this build reads version " +
         std::to_string(kCheckpointFormat));
  if (got_kind != kind)
    fail(std::string("holds a ") + (got_kind == kKindRun ? "run manifest" : "chain state") +
         ", expected a " + (kind == kKindRun ? "run manifest" : "chain state"));
  if (length != bytes.size() - kHeaderBytes - kTrailerBytes)
    fail("truncated or torn checkpoint file: the header announces " + std::to_string(length) +
         " payload bytes, the file has " +
         std::to_string(bytes.size() - kHeaderBytes - kTrailerBytes));
  std::uint64_t stored;
  std::memcpy(&stored, bytes.data() + bytes.size() - 8, 8);
  if (hash_bytes(bytes.data(), bytes.size() - 8) != stored)
    fail("checksum mismatch: the checkpoint file is corrupted");
  return bytes.subspan(kHeaderBytes, length);
}

/// The run configuration: every option that affects the draws (options.hpp), in the table's
/// order, each as its key then its value (a presence byte first for an automatic option; a
/// choice by its name), so that a stored option can never go missing or be read as another.
void put_config(ByteWriter& w, const RunConfig& c) {
  for_each_option([&](const OptionInfo& o) {
    if (!o.affects_draws) return;
    w.put_string(o.key);
    const OptionValue v = get_value(c, o);
    const bool automatic =
        o.kind() == OptionKind::auto_integer || o.kind() == OptionKind::auto_real;
    if (automatic) w.put<std::uint8_t>(std::holds_alternative<std::monostate>(v) ? 0 : 1);
    if (const auto* b = std::get_if<bool>(&v)) w.put<std::uint8_t>(*b ? 1 : 0);
    if (const auto* i = std::get_if<long long>(&v)) w.put<std::int64_t>(*i);
    if (const auto* u = std::get_if<std::uint64_t>(&v)) w.put(*u);
    if (const auto* d = std::get_if<double>(&v)) w.put(*d);
    if (const auto* s = std::get_if<std::string>(&v)) w.put_string(*s);
  });
}

/// One stored option's value, as put_config() wrote it.
OptionValue get_option_value(ByteReader& r, const OptionInfo& o) {
  switch (o.kind()) {
    case OptionKind::flag:
      return r.get_bool();
    case OptionKind::integer:
    case OptionKind::long_integer:
      return static_cast<long long>(r.get<std::int64_t>());
    case OptionKind::unsigned_integer:
      return r.get<std::uint64_t>();
    case OptionKind::real:
      return r.get<double>();
    case OptionKind::auto_integer:
      if (!r.get_bool()) return std::monostate{};
      return static_cast<long long>(r.get<std::int64_t>());
    case OptionKind::auto_real:
      if (!r.get_bool()) return std::monostate{};
      return r.get<double>();
    case OptionKind::choice:
    case OptionKind::text:
      return r.get_string();
  }
  r.fail("unknown option kind");
}

RunConfig get_config(ByteReader& r) {
  RunConfig c;
  for_each_option([&](const OptionInfo& o) {
    if (!o.affects_draws) return;
    const std::string key = r.get_string();
    if (key != o.key)
      r.fail("the stored configuration holds option '" + key + "' where this build expects '" +
             o.key + "'");
    const OptionValue v = get_option_value(r, o);
    try {
      set_value(c, o, v);
    } catch (const ConfigError& err) {
      r.fail(std::string("invalid option value in the stored configuration: ") + err.what());
    }
  });
  try {
    c.validate();
  } catch (const ConfigError& err) {
    r.fail(std::string("stored configuration is invalid: ") + err.what());
  }
  return c;
}

std::vector<unsigned char> read_file(const std::string& path, bool& missing) {
  missing = false;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) {
      missing = true;
      return {};
    }
    throw ConfigError(path + ": cannot open checkpoint: " + errno_text());
  }
  std::vector<unsigned char> out;
  unsigned char buf[1 << 16];
  while (true) {
    const ssize_t got = ::read(fd, buf, sizeof buf);
    if (got < 0) {
      if (errno == EINTR) continue;
      const std::string err = errno_text();
      ::close(fd);
      throw ConfigError(path + ": cannot read checkpoint: " + err);
    }
    if (got == 0) break;
    out.insert(out.end(), buf, buf + got);
  }
  ::close(fd);
  return out;
}

}  // namespace

// ---------------------------------------------------------------------------------------------

std::vector<unsigned char> encode_checkpoint(const RunManifest& m) {
  ByteWriter w;
  put_config(w, m.config);
  w.put<std::int64_t>(m.checkpoint_every);
  w.put_string(m.data_arg);
  w.put_string(m.data_path);
  w.put(m.n);
  w.put(m.d);
  w.put(m.data_hash);
  w.put_array(m.map.theta.data(), static_cast<std::size_t>(m.map.theta.size()));
  w.put<std::uint64_t>(static_cast<std::uint64_t>(m.map.covariance.rows()));
  w.put_array(m.map.covariance.data(), static_cast<std::size_t>(m.map.covariance.size()));
  w.put(m.map.log_post);
  w.put<std::int64_t>(m.map.iterations);
  w.put(m.map.seconds);
  w.put_array(m.map.lik_curvature.data(), static_cast<std::size_t>(m.map.lik_curvature.size()));
  w.put<std::uint64_t>(m.map.chain_starts.size());
  for (const Vec& s : m.map.chain_starts) w.put_array(s.data(), static_cast<std::size_t>(s.size()));
  w.put(m.setup_seconds);
  w.put_string(m.simd);
  return frame(kKindRun, w.bytes());
}

RunManifest decode_run_manifest(std::span<const unsigned char> bytes, const std::string& name) {
  ByteReader r(unframe(bytes, kKindRun, name), name);
  RunManifest m;
  m.config = get_config(r);
  m.checkpoint_every = r.get<std::int64_t>();
  if (m.checkpoint_every < 0) r.fail("invalid checkpoint interval");
  m.data_arg = r.get_string();
  m.data_path = r.get_string();
  m.n = r.get<std::uint64_t>();
  m.d = r.get<std::uint64_t>();
  m.data_hash = r.get<std::uint64_t>();
  const auto theta = r.get_array<double>();
  // θ has K·D entries: K = 1, or the classes of a softmax model (run_model checks K).
  if (m.d == 0 || theta.empty() || theta.size() % m.d != 0)
    r.fail("MAP point has the wrong dimension");
  const std::uint64_t p = theta.size();
  m.map.theta = Eigen::Map<const Vec>(theta.data(), static_cast<Eigen::Index>(p));
  const auto rows = r.get<std::uint64_t>();
  const auto cov = r.get_array<double>();
  if (rows != p || cov.size() != p * p) r.fail("MAP covariance has the wrong dimension");
  const auto pp = static_cast<Eigen::Index>(p);
  m.map.covariance = Eigen::Map<const Mat>(cov.data(), pp, pp);
  m.map.log_post = r.get<double>();
  m.map.iterations = static_cast<int>(r.get<std::int64_t>());
  m.map.seconds = r.get<double>();
  // SMH builds its statistics from this curvature: a resumed run takes it, not another pass
  // whose sums could differ in their last bits.
  const auto curv = r.get_array<double>();
  if (!curv.empty() && curv.size() != p * p) r.fail("MAP likelihood curvature has the wrong size");
  if (!curv.empty()) m.map.lik_curvature = Eigen::Map<const Mat>(curv.data(), pp, pp);
  const auto starts = r.get<std::uint64_t>();
  if (starts > (1u << 20)) r.fail("too many chain starting points");
  for (std::uint64_t i = 0; i < starts; ++i) {
    const auto s = r.get_array<double>();
    if (s.size() != p) r.fail("a chain's starting point has the wrong dimension");
    m.map.chain_starts.emplace_back(Eigen::Map<const Vec>(s.data(), pp));
  }
  m.setup_seconds = r.get<double>();
  m.simd = r.get_string();
  r.expect_end();
  return m;
}

namespace {

void put_tally(ByteWriter& w, const ChainTally& t) {
  w.put<std::int64_t>(t.iteration);
  w.put<std::int64_t>(t.since_z);
  w.put<std::int64_t>(t.window_steps);
  w.put(t.window_accept);
  w.put(t.accept_sum);
  w.put(t.bright_sum);
  w.put(t.queries_at_sampling);
  w.put(t.queries_at_row);
  w.put(t.divergences_at_sampling);
}

ChainTally get_tally(ByteReader& r) {
  ChainTally t;
  t.iteration = r.get<std::int64_t>();
  t.since_z = r.get<std::int64_t>();
  t.window_steps = r.get<std::int64_t>();
  if (t.iteration < 0 || t.since_z < 0 || t.window_steps < 0) r.fail("negative counter");
  t.window_accept = r.get<double>();
  t.accept_sum = r.get<double>();
  t.bright_sum = r.get<double>();
  t.queries_at_sampling = r.get<std::uint64_t>();
  t.queries_at_row = r.get<std::uint64_t>();
  t.divergences_at_sampling = r.get<std::uint64_t>();
  return t;
}

void put_timers(ByteWriter& w, const ChainTimers& t) {
  for (double v : {t.z_init, t.warmup, t.sampling, t.wall_z_init, t.wall_warmup, t.wall_sampling})
    w.put(v);
}

ChainTimers get_timers(ByteReader& r) {
  ChainTimers t;
  for (double* v :
       {&t.z_init, &t.warmup, &t.sampling, &t.wall_z_init, &t.wall_warmup, &t.wall_sampling})
    *v = r.get<double>();
  return t;
}

}  // namespace

std::vector<unsigned char> encode_checkpoint(const ChainState& c) {
  ByteWriter w;
  w.put<std::int64_t>(c.chain_id);
  w.put<std::uint8_t>(c.finished ? 1 : 0);
  w.put(c.sink_position);
  w.put(c.kept);
  w.put(c.rng);
  w.put_array(c.theta.data(), c.theta.size());
  w.put(c.step_size);
  w.put_array(c.kernel_state.data(), c.kernel_state.size());
  put_tally(w, c.tally);
  c.counters.for_each_count([&](std::uint64_t v) { w.put(v); });
  put_timers(w, c.timers);
  w.put_array(c.bright.data(), c.bright.size());
  w.put_array(c.log_ltilde.data(), c.log_ltilde.size());
  w.put_array(c.grad.data(), c.grad.size());
  w.put_array(c.coefs.data(), c.coefs.size());
  return frame(kKindChain, w.bytes());
}

ChainState decode_chain_checkpoint(std::span<const unsigned char> bytes, const std::string& name) {
  ByteReader r(unframe(bytes, kKindChain, name), name);
  ChainState c;
  const auto id = r.get<std::int64_t>();
  if (id < 1 || id > std::numeric_limits<int>::max()) r.fail("invalid chain id");
  c.chain_id = static_cast<int>(id);
  c.finished = r.get_bool();
  c.sink_position = r.get<std::uint64_t>();
  c.kept = r.get<std::uint64_t>();
  c.rng = r.get<Rng::State>();
  c.theta = r.get_array<double>();
  c.step_size = r.get<double>();
  c.kernel_state = r.get_array<double>();
  c.tally = get_tally(r);
  c.counters.for_each_count([&](std::uint64_t& v) { v = r.get<std::uint64_t>(); });
  c.timers = get_timers(r);
  c.bright = r.get_array<Index>();
  c.log_ltilde = r.get_array<double>();
  if (c.log_ltilde.size() != c.bright.size()) r.fail("cached log L~ does not fit the bright count");
  c.grad = r.get_array<double>();
  c.coefs = r.get_array<double>();
  if (!c.coefs.empty() && (c.bright.empty() || c.coefs.size() % c.bright.size() != 0))
    r.fail("gradient coefficients do not fit the bright count");
  r.expect_end();
  return c;
}

// ---------------------------------------------------------------------------------------------

std::string run_manifest_path(const std::string& dir) { return dir + "/run.ckpt"; }
std::string chain_checkpoint_path(const std::string& dir, int chain_id) {
  return dir + "/chain-" + std::to_string(chain_id) + ".ckpt";
}

void save_run_manifest(const std::string& dir, const RunManifest& m) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw Error(dir + ": cannot create checkpoint directory: " + ec.message(), 73);
  write_file_atomic(run_manifest_path(dir), encode_checkpoint(m));
}

RunManifest load_run_manifest(const std::string& dir) {
  const std::string path = run_manifest_path(dir);
  bool missing = false;
  const auto bytes = read_file(path, missing);
  if (missing)
    throw ConfigError(path +
                      ": no checkpoint to resume (was the run started with "
                      "--checkpoint-every, and did it get past its set-up?)");
  return decode_run_manifest(bytes, path);
}

void save_chain_checkpoint(const std::string& dir, const ChainState& c) {
  write_file_atomic(chain_checkpoint_path(dir, c.chain_id), encode_checkpoint(c));
}

std::optional<ChainState> load_chain_checkpoint(const std::string& dir, int chain_id) {
  const std::string path = chain_checkpoint_path(dir, chain_id);
  bool missing = false;
  const auto bytes = read_file(path, missing);
  if (missing) return std::nullopt;
  ChainState c = decode_chain_checkpoint(bytes, path);
  if (c.chain_id != chain_id)
    throw ConfigError(path + ": holds the state of chain " + std::to_string(c.chain_id));
  return c;
}

void remove_checkpoints(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    const bool ours = name.ends_with(".ckpt") || name.find(".ckpt.tmp.") != std::string::npos;
    if (ours && !fs::remove(e.path(), ec) && ec)
      throw Error(e.path().string() + ": cannot remove stale checkpoint: " + ec.message(), 73);
  }
}

namespace {

class CheckpointDirectory final : public StateStore {
 public:
  explicit CheckpointDirectory(std::string dir) : dir_(std::move(dir)) {}
  void clear() override { remove_checkpoints(dir_); }
  void save_manifest(const RunManifest& m) override { save_run_manifest(dir_, m); }
  RunManifest load_manifest() const override { return load_run_manifest(dir_); }
  void save_chain(const ChainState& c) override { save_chain_checkpoint(dir_, c); }
  std::optional<ChainState> load_chain(int chain_id) const override {
    return load_chain_checkpoint(dir_, chain_id);
  }
  std::string manifest_name() const override { return run_manifest_path(dir_); }
  std::string chain_name(int chain_id) const override {
    return chain_checkpoint_path(dir_, chain_id);
  }

 private:
  std::string dir_;
};

}  // namespace

std::shared_ptr<StateStore> checkpoint_directory(std::string dir) {
  return std::make_shared<CheckpointDirectory>(std::move(dir));
}

}  // namespace flymc
