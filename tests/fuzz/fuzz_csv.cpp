// libFuzzer target: the CSV loader (flymc::parse_csv, the code behind load_csv) with every label
// domain and with default and tiny piece sizes. See fuzz_common.hpp for the checks and
// tools/fuzz.sh for running it.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  flymc::fuzz::check_input(
      text,
      [](std::string_view t, const std::string& n, flymc::LabelDomain d,
         const flymc::detail::LoaderBlocks& b) {
        return flymc::detail::parse_csv_blocks(t, n, d, b);
      },
      [](std::string_view t, const std::string& n, flymc::LabelDomain d) {
        return flymc::parse_csv(t, n, d);
      });
  return 0;
}
