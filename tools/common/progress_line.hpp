#pragma once
/// @file progress_line.hpp
/// The progress display of `flymc sample`: it polls the run's ChainGauges from a thread of its
/// own and shows the phase (set-up, warm-up, sampling), iterations done of the total, iterations
/// per second, the time left, the bright count and the acceptance rate. On a terminal one line
/// is redrawn in place; anywhere else (a batch log, CI) a plain line is written every tenth of
/// the run or every 30 s, never a carriage return, so that logs stay readable. The chains only
/// store a few relaxed atomics every few iterations; all the arithmetic happens here.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>

#include "flymc/mcmc/sampler.hpp"

namespace flymc::cli {

/// The watched chains' gauges summed at one moment.
struct ProgressSnapshot {
  bool started = false;               ///< set-up is over
  const char* setup_phase = nullptr;  ///< the set-up phase under way (null: not begun)
  long done = 0;                      ///< iterations finished, warm-up included
  double accept_sum = 0.0;            ///< acceptance probabilities summed ...
  long accept_steps = 0;    ///< ... over this many steps (0: the sampler has no acceptance)
  double bright_sum = 0.0;  ///< current bright counts summed ...
  int bright_chains = 0;    ///< ... over this many chains (0: no bright set)
  /// A run to an ESS target: the smaller of min bulk and min tail ESS at the last block's end
  /// (NaN before the first).
  double ess_now = NAN;
};

inline ProgressSnapshot take_snapshot(const Progress& p, std::size_t chains) {
  ProgressSnapshot s;
  s.started = p.chains_started.load(std::memory_order_relaxed);
  s.setup_phase = p.setup_phase.load(std::memory_order_relaxed);
  s.ess_now = p.ess_now.load(std::memory_order_relaxed);
  for (std::size_t c = 0; c < std::min(chains, p.chains.size()); ++c) {
    const ChainGauge& g = p.chains[c];
    s.done += g.done.load(std::memory_order_relaxed);
    s.accept_sum += g.accept_sum.load(std::memory_order_relaxed);
    s.accept_steps += g.accept_steps.load(std::memory_order_relaxed);
    const double b = g.bright.load(std::memory_order_relaxed);
    if (std::isfinite(b)) {
      s.bright_sum += b;
      ++s.bright_chains;
    }
  }
  return s;
}

/// What the display is about: the watched chains' iteration budget.
struct ProgressPlan {
  long warmup = 0;  ///< warm-up iterations summed over the watched chains
  long total = 0;   ///< warm-up and sampling iterations summed over the watched chains
  /// A run to an ESS target (RunConfig::ess): the target; `total` is then only an upper limit,
  /// and the line shows the ESS reached against the target instead of a share of `total`.
  double ess = 0.0;
};

/// "1:05" or "2:03:07".
inline std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const long s = std::lround(seconds);
  char buf[32];
  if (s >= 3600)
    std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", s / 3600, s / 60 % 60, s % 60);
  else
    std::snprintf(buf, sizeof buf, "%ld:%02ld", s / 60, s % 60);
  return buf;
}

/// One progress line (no line end) at snapshot `now`: the acceptance shown is the one since the
/// earlier snapshot `before` (or over the whole run when no step was taken in between); `rate`
/// is the iterations per second the time left is estimated from (NaN: not known yet).
inline std::string format_progress(const ProgressPlan& plan, const ProgressSnapshot& now,
                                   const ProgressSnapshot& before, double rate) {
  char buf[256];
  if (!now.started) {
    std::snprintf(buf, sizeof buf, "set-up: %s",
                  now.setup_phase != nullptr ? now.setup_phase : "theta_MAP, bounds");
    return buf;
  }
  const char* phase = now.done < plan.warmup ? "warm-up" : "sampling";
  char speed[32] = "? it/s";
  if (std::isfinite(rate)) std::snprintf(speed, sizeof speed, "%.0f it/s", rate);
  int n = 0;
  if (plan.ess > 0.0 && now.done >= plan.warmup) {
    // Sized in effective draws: the ESS of the last block's end against the target.
    char ess[48] = "?";
    if (std::isfinite(now.ess_now)) std::snprintf(ess, sizeof ess, "%.0f", now.ess_now);
    n = std::snprintf(buf, sizeof buf, "%s | ESS %s/%.0f | %ld it | %s", phase, ess, plan.ess,
                      now.done, speed);
  } else {
    const long total = plan.ess > 0.0 ? plan.warmup : plan.total;  // ESS runs: the warm-up's
    const double pct = total > 0 ? 100.0 * double(now.done) / double(total) : 100.0;
    const double eta = rate > 0 ? double(total - now.done) / rate : NAN;
    n = std::snprintf(buf, sizeof buf, "%s %5.1f%% | %ld/%ld it | %s | ETA %s", phase, pct,
                      now.done, total, speed, format_duration(eta).c_str());
  }
  if (now.bright_chains > 0)
    n += std::snprintf(buf + n, sizeof buf - std::size_t(n), " | bright %.1f",
                       now.bright_sum / now.bright_chains);
  const long steps = now.accept_steps - before.accept_steps;
  const double acc = steps > 0              ? (now.accept_sum - before.accept_sum) / double(steps)
                     : now.accept_steps > 0 ? now.accept_sum / double(now.accept_steps)
                                            : NAN;
  if (std::isfinite(acc))
    std::snprintf(buf + n, sizeof buf - std::size_t(n), " | accept %.3f", acc);
  return buf;
}

/// Plain mode: whether a new line is due, given the tenths of the run reached at the last line
/// and now, and the seconds since the last line.
inline bool plain_line_due(int tenth_at_last, int tenth_now, double since_last) {
  return tenth_now > tenth_at_last || since_last >= 30.0;
}

/// Shows the progress of a run until stop() (or destruction). Construct it just before run().
class ProgressDisplay {
 public:
  enum class Mode { live, plain };

  ProgressDisplay(const Progress& progress, std::size_t chains, ProgressPlan plan, Mode mode,
                  std::FILE* out)
      : progress_(progress), chains_(chains), plan_(plan), mode_(mode), out_(out) {
    thread_ = std::thread([this] { loop(); });
  }
  ProgressDisplay(const ProgressDisplay&) = delete;
  ProgressDisplay& operator=(const ProgressDisplay&) = delete;
  ~ProgressDisplay() { stop(); }

  /// Ends the display: the live line is erased, the plain mode writes nothing more.
  void stop() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

 private:
  using Clock = std::chrono::steady_clock;
  static double seconds(Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double>(b - a).count();
  }
  int tenth(const ProgressSnapshot& s) const {
    if (!s.started) return -1;
    if (plan_.ess > 0.0)  // tenths of the target's ESS
      return std::isfinite(s.ess_now) ? int(10.0 * std::min(1.0, s.ess_now / plan_.ess)) : 0;
    return plan_.total > 0 ? int(10 * s.done / plan_.total) : 10;
  }

  /// Polls every 250 ms until stop(). The rate is measured from the last poll before the chains
  /// started.
  void loop() {
    const Clock::time_point t0 = created_;
    Clock::time_point prev_tick = t0, base_t = t0, last_line = t0;
    // Constructed before the run: whatever this thread sees first, the set-up came before it.
    ProgressSnapshot now, before;
    long base_done = 0;
    int tenth_at_last = tenth(now);
    std::size_t width = 0;
    double rate = NAN;
    std::unique_lock lock(mutex_);
    while (!wake_.wait_for(lock, std::chrono::milliseconds(250), [this] { return stopping_; })) {
      const Clock::time_point t = Clock::now();
      const bool was_started = now.started;
      now = take_snapshot(progress_, chains_);
      if (now.started && !was_started) {
        base_t = prev_tick;
        base_done = was_started ? now.done : 0;
        if (mode_ == Mode::plain) std::fprintf(out_, "flymc: set-up %.1f s\n", seconds(t0, t));
      }
      prev_tick = t;
      const double dt = seconds(base_t, t);
      rate = now.started && dt > 0 ? double(now.done - base_done) / dt : NAN;
      const std::string line = format_progress(plan_, now, before, rate);
      if (mode_ == Mode::live) {
        const int pad = int(width > line.size() ? width - line.size() : 0);
        std::fprintf(out_, "\r%s%*s", line.c_str(), pad, "");
        width = line.size();
        before = now;
      } else if (plain_line_due(tenth_at_last, tenth(now), seconds(last_line, t))) {
        std::fprintf(out_, "flymc: %s\n", line.c_str());
        tenth_at_last = tenth(now);
        last_line = t;
        before = now;
      }
      std::fflush(out_);
    }
    finish(width, before, tenth_at_last, rate, now.started);
  }

  /// The live line is erased; a log gets the last line when the run ended between two polls, and
  /// its set-up line when the whole run ended before the first poll (`setup_seen` false).
  void finish(std::size_t width, const ProgressSnapshot& before, int tenth_at_last, double rate,
              bool setup_seen) {
    if (mode_ == Mode::live && width > 0) std::fprintf(out_, "\r%*s\r", int(width), "");
    const ProgressSnapshot end = take_snapshot(progress_, chains_);
    if (mode_ == Mode::plain && end.started && !setup_seen)
      std::fprintf(out_, "flymc: set-up under %.1f s (the run ended before the first poll)\n",
                   seconds(created_, Clock::now()));
    if (mode_ == Mode::plain && tenth(end) == 10 && tenth_at_last < 10)
      std::fprintf(out_, "flymc: %s\n", format_progress(plan_, end, before, rate).c_str());
    std::fflush(out_);
  }

  const Clock::time_point created_ = Clock::now();
  const Progress& progress_;
  const std::size_t chains_;
  const ProgressPlan plan_;
  const Mode mode_;
  std::FILE* out_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace flymc::cli
