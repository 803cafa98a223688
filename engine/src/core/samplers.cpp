#include "flymc/core/samplers.hpp"

namespace flymc {
namespace {
constexpr bool in_algo_order() {
  for (std::size_t i = 0; i < std::size(kSamplers); ++i)
    if (static_cast<std::size_t>(kSamplers[i].algo) != i) return false;
  return static_cast<std::size_t>(Algo::automatic) + 1 == std::size(kSamplers);
}
static_assert(in_algo_order(), "kSamplers must hold every Algo value, in the enum's order");
constexpr bool in_model_order() {
  for (std::size_t i = 0; i < std::size(kModels); ++i)
    if (static_cast<std::size_t>(kModels[i].kind) != i) return false;
  return static_cast<std::size_t>(ModelKind::custom) + 1 == std::size(kModels);
}
static_assert(in_model_order(), "kModels must hold every ModelKind value, in the enum's order");
}  // namespace

std::string algo_names(AlgoMask m) {
  std::string out;
  for (const SamplerInfo& s : kSamplers)
    if ((m & algo_bit(s.algo)) != 0) out += (out.empty() ? "" : ", ") + std::string(s.name);
  return out;
}

}  // namespace flymc
