#pragma once
/// @file options.hpp
/// The run options: one table with an entry per RunConfig field (its command-line and keyword
/// names, type, help, the samplers that read it), from which the command line, the Python module,
/// the draw-file header, summary.json and the checkpoint are generated, so that they cannot drift
/// apart. Adding an option is a RunConfig field, one entry in run_options() and its use; the
/// `options` unit test fails while any place lacks it.
#include <array>
#include <cstdint>
#include <iterator>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "flymc/core/config.hpp"
#include "flymc/core/samplers.hpp"

namespace flymc {

/// One value of an enum and its name (as the command line, Python and every output spell it).
template <class E>
struct EnumName {
  E value;
  const char* name;
};

// One name table per enum: parsing and to_string() both read it.
/// The samplers' names are their table's (samplers.hpp).
inline constexpr auto kAlgoNames = [] {
  std::array<EnumName<Algo>, std::size(kSamplers)> names{};
  for (std::size_t i = 0; i < names.size(); ++i) names[i] = {kSamplers[i].algo, kSamplers[i].name};
  return names;
}();
inline constexpr EnumName<BoundTuning> kBoundTuningNames[] = {{BoundTuning::map, "map"},
                                                              {BoundTuning::untuned, "untuned"}};
inline constexpr EnumName<ZUpdate> kZUpdateNames[] = {{ZUpdate::implicit, "implicit"},
                                                      {ZUpdate::explicit_, "explicit"}};
inline constexpr EnumName<KernelKind> kKernelNames[] = {
    {KernelKind::rwmh, "rwmh"},   {KernelKind::mala, "mala"}, {KernelKind::hmc, "hmc"},
    {KernelKind::slice, "slice"}, {KernelKind::nuts, "nuts"}, {KernelKind::pcn, "pcn"},
    {KernelKind::imh, "imh"}};
inline constexpr EnumName<Init> kInitNames[] = {{Init::map, "map"}, {Init::prior, "prior"}};
inline constexpr EnumName<Link> kLinkNames[] = {{Link::logit, "logit"}, {Link::probit, "probit"}};
inline constexpr EnumName<OnViolation> kOnViolationNames[] = {{OnViolation::stop, "stop"},
                                                              {OnViolation::finish, "finish"}};
inline constexpr EnumName<Metric> kMetricNames[] = {{Metric::automatic, "auto"},
                                                    {Metric::identity, "identity"},
                                                    {Metric::diag, "diag"},
                                                    {Metric::dense, "dense"},
                                                    {Metric::fly, "fly"}};
/// The models' names are their table's (model_table.hpp).
inline constexpr auto kModelNames = [] {
  std::array<EnumName<ModelKind>, std::size(kModels)> names{};
  for (std::size_t i = 0; i < names.size(); ++i) names[i] = {kModels[i].kind, kModels[i].name};
  return names;
}();
inline constexpr EnumName<PriorKind> kPriorNames[] = {{PriorKind::gaussian, "normal"},
                                                      {PriorKind::laplace, "laplace"},
                                                      {PriorKind::student_t, "student_t"},
                                                      {PriorKind::flat, "flat"}};
inline constexpr EnumName<SliceMode> kSliceModeNames[] = {{SliceMode::direction, "direction"},
                                                          {SliceMode::coordinate, "coordinate"}};
inline constexpr EnumName<SoftmaxBoundKind> kSoftmaxBoundNames[] = {
    {SoftmaxBoundKind::tight, "tight"}, {SoftmaxBoundKind::bohning, "bohning"}};
inline constexpr EnumName<SmhProposal> kSmhProposalNames[] = {{SmhProposal::pcn, "pcn"},
                                                              {SmhProposal::rw, "rw"}};
inline constexpr EnumName<PdmpPrecondition> kPdmpPreconditionNames[] = {
    {PdmpPrecondition::laplace, "laplace"},
    {PdmpPrecondition::laplace_diag, "laplace-diag"},
    {PdmpPrecondition::none, "none"}};
inline constexpr EnumName<Storage> kStorageNames[] = {{Storage::f64, "f64"}, {Storage::f32, "f32"}};

/// The name table of enum E (the argument only selects the overload).
constexpr std::span<const EnumName<Algo>> enum_names(Algo) noexcept { return kAlgoNames; }
constexpr std::span<const EnumName<BoundTuning>> enum_names(BoundTuning) noexcept {
  return kBoundTuningNames;
}
constexpr std::span<const EnumName<ZUpdate>> enum_names(ZUpdate) noexcept { return kZUpdateNames; }
constexpr std::span<const EnumName<KernelKind>> enum_names(KernelKind) noexcept {
  return kKernelNames;
}
constexpr std::span<const EnumName<Init>> enum_names(Init) noexcept { return kInitNames; }
constexpr std::span<const EnumName<Link>> enum_names(Link) noexcept { return kLinkNames; }
constexpr std::span<const EnumName<OnViolation>> enum_names(OnViolation) noexcept {
  return kOnViolationNames;
}
constexpr std::span<const EnumName<Metric>> enum_names(Metric) noexcept { return kMetricNames; }
constexpr std::span<const EnumName<ModelKind>> enum_names(ModelKind) noexcept {
  return kModelNames;
}
constexpr std::span<const EnumName<PriorKind>> enum_names(PriorKind) noexcept {
  return kPriorNames;
}
constexpr std::span<const EnumName<SliceMode>> enum_names(SliceMode) noexcept {
  return kSliceModeNames;
}
constexpr std::span<const EnumName<SoftmaxBoundKind>> enum_names(SoftmaxBoundKind) noexcept {
  return kSoftmaxBoundNames;
}
constexpr std::span<const EnumName<SmhProposal>> enum_names(SmhProposal) noexcept {
  return kSmhProposalNames;
}
constexpr std::span<const EnumName<PdmpPrecondition>> enum_names(PdmpPrecondition) noexcept {
  return kPdmpPreconditionNames;
}

constexpr std::span<const EnumName<Storage>> enum_names(Storage) noexcept { return kStorageNames; }

/// The name of `v`, "?" for a value outside the table.
template <class E>
constexpr const char* enum_name(E v) noexcept {
  for (const EnumName<E>& n : enum_names(E{}))
    if (n.value == v) return n.name;
  return "?";
}
/// The value named `s`, or nullopt.
template <class E>
constexpr std::optional<E> parse_enum(std::string_view s) noexcept {
  for (const EnumName<E>& n : enum_names(E{}))
    if (s == n.name) return n.value;
  return std::nullopt;
}
/// Every name of enum E, in the table's order.
template <class E>
std::vector<std::string> enum_name_list() {
  std::vector<std::string> out;
  for (const EnumName<E>& n : enum_names(E{})) out.emplace_back(n.name);
  return out;
}

/// An enum field, reached through its names (the table holds fields of several enum types).
struct ChoiceField {
  const char* (*get)(const RunConfig&);
  bool (*set)(RunConfig&, std::string_view);  ///< false: no value has that name
  std::vector<std::string> (*names)();
};

/// Where an entry's value lives in RunConfig.
using OptionField =
    std::variant<bool RunConfig::*, int RunConfig::*, long RunConfig::*, std::uint64_t RunConfig::*,
                 double RunConfig::*, std::optional<int> RunConfig::*,
                 std::optional<double> RunConfig::*, ChoiceField, std::string RunConfig::*>;

enum class OptionKind {
  flag,
  integer,
  long_integer,
  unsigned_integer,
  real,
  auto_integer,
  auto_real,
  choice,
  text  ///< a string taken as given (a column name)
};

/// The models that read an option: a bit per ModelKind value.
using ModelMask = std::uint32_t;
constexpr ModelMask model_bit(ModelKind m) noexcept {
  return ModelMask{1} << static_cast<unsigned>(m);
}
inline constexpr ModelMask kAllModels = (ModelMask{1} << std::size(kModels)) - 1;

/// The values an automatic option takes besides "auto" (RunConfig::validate() has the same
/// ranges; the command line checks them as it reads the option).
struct AutoRange {
  double lo = 0.0, hi = 0.0;
  bool lo_open = false, hi_open = false;
  bool contains(double x) const noexcept {
    return (lo_open ? x > lo : x >= lo) && (hi_open ? x < hi : x <= hi);
  }
  /// E.g. "in (0, 1]" or "> 0" for an unbounded top.
  std::string text() const;
};

/// One run option.
struct OptionInfo {
  const char* name;  ///< command-line spelling without the dashes: "q-dark-to-bright"
  const char* key;   ///< RunConfig's field name: the Python keyword, the summary.json key
  OptionField field;
  const char* help;  ///< ASCII, as `flymc sample --help` shows it
  AlgoMask read_by = kAllAlgos;
  /// threads and profile change neither the draws nor the run's identity: not in the draw-file
  /// header (a run resumed on another thread count has the same files) nor in a checkpoint.
  bool affects_draws = true;
  bool in_python = true;  ///< a keyword of flymc.sample()
  AutoRange range{};      ///< automatic options only
  /// The draw-file header's key where it differs from `key` (CmdStan's names and the ones the
  /// header had before the table).
  const char* header_key = nullptr;
  /// The header shows the value resolved for the run ("auto" settled by the kernel) where set.
  std::string (*resolved)(const RunConfig&) = nullptr;
  bool in_cli = true;  ///< an option of `flymc sample`
  /// The models that read it (a model's own constants: --nu, --softmax-bound, …).
  ModelMask models = kAllModels;
  /// --algo auto sets or tunes it for each candidate, so a user's value would be ignored there.
  bool chosen_by_auto = false;

  OptionKind kind() const noexcept { return static_cast<OptionKind>(field.index()); }
  bool reads(Algo a) const noexcept { return (read_by & algo_bit(a)) != 0; }
  bool reads(ModelKind m) const noexcept { return (models & model_bit(m)) != 0; }
  const char* header_name() const noexcept { return header_key != nullptr ? header_key : key; }
};

/// Every run option, in RunConfig's field order.
std::span<const OptionInfo> run_options() noexcept;
/// The option with this command-line name or key; nullptr if none.
const OptionInfo* find_option(std::string_view name_or_key) noexcept;
/// As find_option(), but a missing name is a programming error.
/// @throw std::logic_error
const OptionInfo& option(std::string_view name_or_key);

/// A value of any option: unset automatic (monostate), a flag, an integer, a seed, a real, or a
/// choice's name.
using OptionValue =
    std::variant<std::monostate, bool, long long, std::uint64_t, double, std::string>;
OptionValue get_value(const RunConfig& cfg, const OptionInfo& o);
/// @throw ConfigError naming the option when the value has the wrong type, an unknown name, or
/// does not fit the field's type (RunConfig::validate() checks the meaningful ranges).
void set_value(RunConfig& cfg, const OptionInfo& o, const OptionValue& v);

/// The value as text: "auto" when unset, flags 1 or 0, numbers that read back exactly.
std::string format_value(const RunConfig& cfg, const OptionInfo& o);
/// The value given as text (format_value()'s spellings; flags also true/false).
/// @throw ConfigError naming the option.
void parse_value(RunConfig& cfg, const OptionInfo& o, std::string_view text);

/// The samplers that read `o`, by their --algo names ("flymc, full").
std::string reader_names(const OptionInfo& o);
/// The options given (on the command line, or as Python keywords) against the sampler that runs:
/// an option it does not read would be silently ignored, so it is refused.
/// @throw UsageError naming the first such option, `algo`, and the samplers that read it.
void check_read_by(Algo algo, std::span<const OptionInfo* const> given);
/// The options given against the model: one it does not read (another model's constant) would
/// be silently ignored, so it is refused.
/// @throw UsageError naming the first such option, `model`, and the models that read it.
void check_model_reads(ModelKind model, std::span<const OptionInfo* const> given);
/// `--algo auto` with options given: the samplers that read every one of them (the candidates
/// of other samplers are skipped), and in `why` the options that restrict them ("" if none).
/// @throw UsageError for an option that is OptionInfo::chosen_by_auto.
AlgoMask auto_readers(std::span<const OptionInfo* const> given, std::string& why);

/// The draw-file header's config lines: every option that affects the draws, resolved where the
/// entry says so, in the table's order.
std::vector<std::pair<std::string, std::string>> header_config(const RunConfig& cfg);

/// Calls `visit(option)` for every run option, in the table's order.
template <class Visitor>
void for_each_option(Visitor&& visit) {
  for (const OptionInfo& o : run_options()) visit(o);
}

/// The number of RunConfig's fields, counted by aggregate initialization (the `options` test
/// compares it with the table's size plus kCodeOnlyFields).
namespace detail {
// Converts to any scalar: std::optional fields then take it through their converting
// constructor (a conversion to optional itself would be ambiguous with that constructor); to a
// string (the column names); and to the families, fields given only in code.
struct AnyField {
  template <class T>
  requires std::is_arithmetic_v<T> || std::is_enum_v<T>
  operator T() const;  // never defined: only in unevaluated contexts
  operator std::string() const;
  operator std::shared_ptr<const SingleIndexFamily>() const;
  operator std::shared_ptr<const PositiveGlobalFamily>() const;
};
template <class T, class... A>
constexpr std::size_t field_count() {
  if constexpr (requires { T{A{}..., AnyField{}}; })
    return field_count<T, A..., AnyField>();
  else
    return sizeof...(A);
}
}  // namespace detail
/// RunConfig's fields that are not options, given only in code: `family`, `global_family`,
/// `give_up_cost`, `max_cost`.
inline constexpr std::size_t kCodeOnlyFields = 4;
template <class T>
constexpr std::size_t aggregate_field_count() {
  return detail::field_count<T>();
}

}  // namespace flymc
