#pragma once
// Command-line options generated from the run options' table (flymc/core/options.hpp): the
// option's spelling, type, choices, default and help come from its entry, shared by `flymc
// sample`, `flymc validate sbc` and flymc-profile.
#include <CLI/CLI.hpp>
#include <initializer_list>
#include <map>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>

#include "auto_option.hpp"
#include "flymc/core/options.hpp"

namespace flymc::cli {

/// `--<o.name>` bound to cfg's field: a choice checked against its names, a flag (with
/// `--no-<name>` when it defaults to on), "auto" or a number in the entry's range for an automatic
/// option, a number otherwise (RunConfig::validate() checks its range). `help` replaces the
/// entry's where a command means something narrower.
inline CLI::Option* add_run_option(CLI::App* s, RunConfig& cfg, const OptionInfo& o,
                                   const std::string& help = {}) {
  const std::string flag = std::string("--") + o.name;
  const std::string text = help.empty() ? std::string(o.help) : help;
  return std::visit(
      [&](auto f) -> CLI::Option* {
        using F = decltype(f);
        if constexpr (std::is_same_v<F, ChoiceField>) {
          return s
              ->add_option_function<std::string>(
                  flag, [&cfg, f](const std::string& v) { f.set(cfg, v); }, text)
              ->check(CLI::IsMember(f.names()))
              ->default_str(f.get(cfg));
        } else {
          using T = std::remove_cvref_t<decltype(cfg.*f)>;
          if constexpr (std::is_same_v<T, bool>) {
            return s->add_flag(cfg.*f ? flag + ",!--no-" + o.name : flag, cfg.*f, text);
          } else if constexpr (std::is_same_v<T, std::optional<double>> ||
                               std::is_same_v<T, std::optional<int>>) {
            const AutoRange range = o.range;
            return add_auto_option(
                s, flag, cfg.*f, [range](double x) { return range.contains(x); }, range.text(),
                text);
          } else if constexpr (std::is_same_v<T, std::uint64_t>) {
            // (CLI11 would wrap a negative value around to 2^64 - 1: refused instead.)
            return s->add_option(flag, cfg.*f, text)
                ->check(CLI::NonNegativeNumber)
                ->capture_default_str();
          } else {
            return s->add_option(flag, cfg.*f, text)->capture_default_str();
          }
        }
      },
      o.field);
}

/// The names of enum E mapped to its values (for CLI11's CheckedTransformer).
template <class E>
std::map<std::string, E> enum_map() {
  std::map<std::string, E> out;
  for (const EnumName<E>& n : enum_names(E{})) out.emplace(n.name, n.value);
  return out;
}

/// A command's own variable under a run option's command-line name (a benchmark's per-row value,
/// a validation's setting): the table names it and, unless `help` says what it means here,
/// describes it, so a run option is spelled in one place. tests/test_options.cpp fails on a
/// command that adds a run option's name by hand.
template <class T>
CLI::Option* add_run_named(CLI::App* s, std::string_view name, T& value,
                           const std::string& help = {}) {
  const OptionInfo& o = option(name);
  return s->add_option(std::string("--") + o.name, value,
                       help.empty() ? std::string(o.help) : help);
}

/// add_run_option() for each of the named options (command-line names or keys).
inline void add_run_options(CLI::App* s, RunConfig& cfg, std::initializer_list<const char*> names) {
  for (const char* n : names) add_run_option(s, cfg, option(n));
}

}  // namespace flymc::cli
