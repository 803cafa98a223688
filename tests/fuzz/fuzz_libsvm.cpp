// libFuzzer target: the libsvm / svmlight reader (flymc::parse_libsvm, the code behind
// load_libsvm) with every label domain. The dense size is capped far below the default so that a
// short input naming a huge index is refused rather than allocated. See fuzz_common.hpp for the
// checks and tools/fuzz.sh for running it.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz_common.hpp"

namespace {
constexpr std::size_t kMaxValues = std::size_t{1} << 22;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  flymc::fuzz::check_input(
      text,
      [](std::string_view t, const std::string& n, flymc::LabelDomain d,
         const flymc::detail::LoaderBlocks&) {
        return flymc::detail::parse_libsvm_limited(t, n, d, kMaxValues);
      },
      [](std::string_view t, const std::string& n, flymc::LabelDomain d) {
        return flymc::detail::parse_libsvm_limited(t, n, d, kMaxValues);
      });
  return 0;
}
