// A run's figures as one list of fields (flymc/io/run_record.hpp).
#include "flymc/io/run_record.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "flymc/core/options.hpp"
#include "flymc/core/samplers.hpp"

namespace flymc {

RecordValue RecordValue::of(bool b) {
  RecordValue v;
  v.kind = Kind::boolean;
  v.boolean = b;
  return v;
}
RecordValue RecordValue::of(std::int64_t i) {
  RecordValue v;
  v.kind = Kind::integer;
  v.integer = i;
  return v;
}
RecordValue RecordValue::of(double d) {
  if (!std::isfinite(d)) return null();
  RecordValue v;
  v.kind = Kind::number;
  v.number = d;
  return v;
}
RecordValue RecordValue::of(std::string s) {
  RecordValue v;
  v.kind = Kind::text;
  v.text = std::move(s);
  return v;
}
RecordValue RecordValue::of(std::vector<double> n) {
  RecordValue v;
  v.kind = Kind::numbers;
  v.numbers = std::move(n);
  return v;
}
RecordValue RecordValue::of(std::vector<std::string> t) {
  RecordValue v;
  v.kind = Kind::texts;
  v.texts = std::move(t);
  return v;
}
RecordValue RecordValue::of(std::vector<Record> r) {
  RecordValue v;
  v.kind = Kind::records;
  v.records = std::move(r);
  return v;
}

namespace {

using V = RecordValue;

V count(std::uint64_t n) { return V::of(static_cast<std::int64_t>(n)); }
V integer(long n) { return V::of(static_cast<std::int64_t>(n)); }
/// `v` where `on`, else null.
V only_if(bool on, V v) { return on ? std::move(v) : V::null(); }

/// One of auto's candidates: its set-up, why it was skipped or its pilot and prediction.
Record candidate_record(const AutoCandidate& c) {
  const bool ran = c.skipped.empty();
  return {{"name", V::of(c.name)},
          {"algo", V::of(std::string(to_string(c.config.algo)))},
          {"kernel", V::of(std::string(to_string(c.config.kernel)))},
          {"metric", V::of(std::string(to_string(c.config.resolved_metric())))},
          {"skipped", only_if(!ran, V::of(c.skipped))},
          {"predicted_ess_per_second", only_if(ran, V::of(c.ess_per_second))},
          {"predicted_seconds", only_if(ran, V::of(c.predicted_seconds))},
          {"predicted_core_seconds", only_if(ran, V::of(c.predicted_cost))},
          {"pilot_min_ess", only_if(ran, V::of(c.pilot_ess))},
          {"pilot_iters", only_if(ran, integer(c.pilot_iters))},
          {"pilot_rows", only_if(ran, count(c.pilot_rows))},
          {"pilot_seconds", only_if(ran, V::of(c.pilot_seconds))},
          {"pilot_core_seconds", only_if(ran, V::of(c.pilot_cost))},
          {"rough", only_if(ran, V::of(c.rough))}};
}

/// Auto's fields (all null without a choice).
Record auto_fields(const RunResult& r, const AlgoChoice* c) {
  std::vector<Record> candidates;
  if (c != nullptr)
    for (const AutoCandidate& a : c->candidates) candidates.push_back(candidate_record(a));
  const bool on = c != nullptr;
  const double measured = r.setup_seconds + r.warmup_seconds + r.sampling_seconds;
  return {{"algo_chosen", only_if(on, V::of(std::string(on ? to_string(c->algo()) : "")))},
          {"auto_chosen", only_if(on, V::of(on ? c->best().name : std::string()))},
          {"auto_candidates", only_if(on, V::of(std::move(candidates)))},
          {"predicted_speedup", only_if(on, V::of(on ? c->predicted_speedup : 0.0))},
          {"prediction_rough", only_if(on, V::of(on && c->pilots_short))},
          {"auto_why", only_if(on, V::of(on ? c->why : std::string()))},
          {"auto_pilot_seconds", only_if(on, V::of(on ? c->pilot_seconds : 0.0))},
          {"auto_predicted_seconds", only_if(on, V::of(on ? c->best().predicted_seconds : 0.0))},
          {"auto_measured_seconds", only_if(on, V::of(measured))}};
}

std::vector<Record> phase_records(const std::vector<SetupPhase>& phases) {
  std::vector<Record> out;
  for (const SetupPhase& p : phases)
    out.push_back({{"name", V::of(p.name)},
                   {"seconds", V::of(p.seconds)},
                   {"passes", only_if(p.passes >= 0, integer(p.passes))}});
  return out;
}

/// The smallest bulk and tail ESS and the largest R̂ over the parameters (a value that cannot be
/// computed counts as 0 ESS and an infinite R̂, so that it shows).
struct Extremes {
  double ess_bulk = std::numeric_limits<double>::infinity(), ess_tail = ess_bulk, rhat = 0.0;
};
Extremes extremes(const std::vector<NamedSummary>& params) {
  Extremes e;
  for (const NamedSummary& p : params) {
    e.ess_bulk = std::min(e.ess_bulk, std::isnan(p.s.ess_bulk) ? 0.0 : p.s.ess_bulk);
    e.ess_tail = std::min(e.ess_tail, std::isnan(p.s.ess_tail) ? 0.0 : p.s.ess_tail);
    e.rhat =
        std::max(e.rhat, std::isnan(p.s.rhat) ? std::numeric_limits<double>::infinity() : p.s.rhat);
  }
  return e;
}

/// The run's length and its ESS target's outcome.
Record length_fields(const RunResult& r) {
  const RunConfig& c = r.config;
  const bool target = c.ess > 0.0;
  return {{"n", count(r.n)},
          {"dim", count(r.dim)},
          {"chains", integer(c.chains)},
          {"warmup", integer(c.warmup)},
          {"iters", integer(c.iters)},
          {"ess_target", only_if(target, V::of(c.ess))},
          {"target_reached", only_if(target, V::of(r.target_reached))},
          {"target_timed_out", only_if(target, V::of(r.target_timed_out))}};
}

/// The samplers' resolved settings (null where a sampler has none of them).
Record settings_fields(const RunResult& r) {
  const RunConfig& c = r.config;
  const bool fly = c.algo == Algo::flymc;
  const std::vector<double> pm = r.path_mean();
  return {{"bound_slack", only_if(fly, V::of(r.bound_slack))},
          {"q_dark_to_bright", only_if(fly && c.z == ZUpdate::implicit, V::of(r.q_dark_to_bright))},
          {"path_mean", only_if(!pm.empty(), V::of(pm))},
          {"pdmp_spacing", V::of(r.pdmp_spacing)},
          {"refresh_rate", V::of(r.refresh_rate)},
          {"pdmp_precondition",
           only_if(is_pdmp(c.algo), V::of(std::string(to_string(c.pdmp_precondition))))}};
}

}  // namespace

Record run_record(const RunResult& r, const std::vector<NamedSummary>& params,
                  const AlgoChoice* choice) {
  const Extremes e = extremes(params);
  Record out = {{"algo", V::of(std::string(to_string(r.config.algo)))},
                {"exact", V::of(r.exact())},
                {"batch_mean", V::of(r.batch_mean())}};
  for (auto& f : auto_fields(r, choice)) out.push_back(std::move(f));
  for (auto& f : length_fields(r)) out.push_back(std::move(f));
  Record figures = {{"setup_seconds", V::of(r.setup_seconds)},
                    {"setup_phases", V::of(phase_records(r.setup_phases))},
                    {"warmup_seconds", V::of(r.warmup_seconds)},
                    {"sampling_seconds", V::of(r.sampling_seconds)},
                    {"queries_per_iter", V::of(r.queries_per_iter())},
                    {"bright_mean", V::of(r.bright_mean())},
                    {"accept_rate", V::of(r.accept_rate())},
                    {"min_ess_bulk", V::of(e.ess_bulk)},
                    {"min_ess_tail", V::of(e.ess_tail)},
                    {"max_rhat", V::of(e.rhat)},
                    {"min_ess_bulk_per_second", V::of(e.ess_bulk / r.sampling_seconds)}};
  for (auto& f : figures) out.push_back(std::move(f));
  for (auto& f : settings_fields(r)) out.push_back(std::move(f));
  Record checks = {{"bound_violations", count(r.bound_violations())},
                   {"bound_clamps", count(r.bound_clamps())},
                   {"nonfinite_proposals", count(r.nonfinite())},
                   {"slice_failures", count(r.slice_failures())},
                   {"divergences", count(r.divergences())},
                   {"map_theta", V::of(std::vector<double>(
                                     r.map.theta.data(), r.map.theta.data() + r.map.theta.size()))},
                   {"map_log_post", V::of(r.map.log_post)}};
  for (auto& f : checks) out.push_back(std::move(f));
  out.emplace_back("warnings", V::of(r.warnings));
  return out;
}

}  // namespace flymc
