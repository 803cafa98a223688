#include "flymc/io/output.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>

#include "flymc/core/errors.hpp"
#include "flymc/core/format.hpp"
#include "flymc/core/options.hpp"
#include "flymc/io/stan_csv.hpp"

namespace flymc {
namespace {

/// Stan CSV file of one chain; flushes (fflush + fsync) at adaptation, every few seconds, at
/// each checkpoint (sync) and at the end. The file is opened by begin() (truncated) or by
/// resume() (cut back to a checkpointed length and appended to), not before.
class StanCsvSink final : public DrawSink {
 public:
  /// @param events_path the chain's events file, or empty for none.
  StanCsvSink(std::string path, std::vector<std::pair<std::string, std::string>> config,
              std::string events_path = {})
      : path_(std::move(path)), events_path_(std::move(events_path)), config_(std::move(config)) {}
  void begin(const std::vector<std::string>& columns) override {
    writer_.emplace(path_);
    writer_->write_header(config_, columns);
    if (events_path_.empty()) return;
    std::vector<std::string> ev{"time__", "kind__", "coordinate__"};
    for (const std::string& c : columns)
      if (c.size() < 2 || c.compare(c.size() - 2, 2, "__") != 0) ev.push_back(c);
    events_.emplace(events_path_);
    events_->write_header(config_, ev);
    event_row_.resize(ev.size());
  }
  void path_event(double time, int kind, int coordinate, const double* theta,
                  std::size_t p) override {
    if (!events_) return;
    event_row_[0] = time;
    event_row_[1] = kind;
    event_row_[2] = coordinate;
    std::copy(theta, theta + std::min(p, event_row_.size() - 3), event_row_.begin() + 3);
    events_->write_row(event_row_);
  }
  void adaptation(double step_size, const std::vector<double>& inv_metric, bool dense) override {
    writer_->write_adaptation(step_size, inv_metric, dense);
    writer_->flush();
    last_flush_ = std::chrono::steady_clock::now();
  }
  void row(const std::vector<double>& values) override {
    writer_->write_row(values);
    if ((++rows_ & 255) == 0) {
      const auto now = std::chrono::steady_clock::now();
      if (now - last_flush_ > std::chrono::seconds(5)) {
        writer_->flush();
        last_flush_ = now;
      }
    }
  }
  void end(double warmup_seconds, double sampling_seconds, const Counters& counters) override {
    // Diagnostics first: the Elapsed Time block stays the file's last lines (rstan looks for it
    // there), and it is the only part that differs between an uninterrupted and a resumed run.
    writer_->write_comments({{"bound_violations", std::to_string(counters.bound_violations)},
                             {"bound_clamps", std::to_string(counters.bound_clamps)},
                             {"nonfinite_proposals", std::to_string(counters.nonfinite)},
                             {"slice_failures", std::to_string(counters.slice_failures)}});
    writer_->write_elapsed(warmup_seconds, sampling_seconds);
    writer_->close();
    if (events_) events_->close();
    closed_ = true;
  }
  std::uint64_t sync() override {
    if (!closed_) writer_->flush();
    return writer_->size();
  }
  std::vector<std::vector<double>> resume(const std::vector<std::string>& columns,
                                          std::uint64_t position) override {
    struct stat st {};
    if (::stat(path_.c_str(), &st) != 0)
      throw ConfigError(path_ + ": cannot resume: the draw file is missing (" +
                        std::strerror(errno) + ")");
    if (static_cast<std::uint64_t>(st.st_size) < position)
      throw ConfigError(path_ + ": cannot resume: the draw file has " + std::to_string(st.st_size) +
                        " bytes, fewer than the " + std::to_string(position) +
                        " its checkpoint records (cut or replaced since)");
    writer_ = StanCsvWriter::reopen(path_, position, columns.size());
    StanCsv csv = read_stan_csv(path_);
    if (csv.columns != columns)
      throw ConfigError(path_ + ": cannot resume: its columns differ from the run's");
    if (csv.truncated_lines != 0)
      throw ConfigError(path_ + ": cannot resume: the checkpointed length ends inside a line");
    return std::move(csv.draws);
  }

 private:
  std::string path_, events_path_;
  std::vector<std::pair<std::string, std::string>> config_;
  std::optional<StanCsvWriter> writer_, events_;
  std::vector<double> event_row_;
  bool closed_ = false;
  std::chrono::steady_clock::time_point last_flush_ = std::chrono::steady_clock::now();
  unsigned long rows_ = 0;
};

}  // namespace

namespace {
/// The sampler_t comment: the algorithm and its moves.
std::string sampler_name(const RunConfig& cfg) {
  const SamplerInfo& s = sampler_info(cfg.algo);
  std::string out = s.title;
  if (s.kind == SamplerKind::theta_kernel) out += std::string("(") + to_string(cfg.kernel) + ")";
  if (s.kind == SamplerKind::smh) out += std::string("(") + to_string(cfg.proposal) + ")";
  return out;
}
}  // namespace

SinkFactory stan_csv_sinks(const std::string& dir, const RunConfig& cfg,
                           std::vector<std::pair<std::string, std::string>> extra_config) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw Error(dir + ": cannot create output directory: " + ec.message(), 73);
  return [dir, cfg, extra_config](int chain_id) -> std::unique_ptr<DrawSink> {
    // Every option that affects the draws (options.hpp's table, under the keys CmdStan and
    // earlier files used where they differ), then what is not an option. rstan::read_stan_csv
    // reads iter (total, warm-up included), warmup, save_warmup, thin, seed and chain_id.
    std::vector<std::pair<std::string, std::string>> c = {{"flymc_version", "0.1.0"}};
    for (auto& kv : header_config(cfg)) c.push_back(std::move(kv));
    c.emplace_back("sampler_t", sampler_name(cfg));
    c.emplace_back("exact", is_exact(cfg.algo) ? "true" : "false");
    c.emplace_back("chain_id", std::to_string(chain_id));
    c.emplace_back("iter", std::to_string(cfg.warmup + cfg.iters));
    c.emplace_back("save_warmup", "0");
    for (const auto& kv : extra_config) c.push_back(kv);
    const std::string id = std::to_string(chain_id);
    const std::string events =
        is_pdmp(cfg.algo) && cfg.save_events ? dir + "/events-" + id + ".csv" : std::string();
    return std::make_unique<StanCsvSink>(dir + "/chain-" + id + ".csv", std::move(c), events);
  };
}

std::vector<NamedSummary> summarize_params(const RunResult& r) {
  std::vector<NamedSummary> out;
  for (std::size_t j = 0; j < r.dim; ++j)
    out.push_back({j < r.names.size() ? r.names[j] : "theta." + std::to_string(j + 1),
                   summarize(r.coordinate(j))});
  return out;
}

std::vector<NamedSummary> summarize_columns(const std::vector<std::string>& columns,
                                            const std::vector<ChainDraws>& per_column) {
  std::vector<NamedSummary> out;
  for (std::size_t k = 0; k < columns.size(); ++k) {
    const std::string& name = columns[k];
    if (name.size() >= 2 && name.compare(name.size() - 2, 2, "__") == 0) continue;
    out.push_back({name, summarize(per_column[k])});
  }
  return out;
}

}  // namespace flymc
