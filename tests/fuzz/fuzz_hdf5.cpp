// libFuzzer target: the HDF5 data set reader (flymc::load_hdf5) on the datasets libhdf5 writes:
// the input chooses an element type, a rank and a shape, and its remaining bytes are the values,
// so the reader's shape, type, conversion, finiteness and label checks meet arbitrary datasets.
// (Malformed HDF5 files themselves would fuzz libhdf5, which is not this project's code.) The
// oracle is fuzz_common.hpp's; tools/fuzz.sh runs it.
#include <hdf5.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "flymc/hdf5/hdf5.hpp"
#include "fuzz_common.hpp"

namespace {

const hid_t* element_type(std::uint8_t b) {
  static const hid_t types[] = {H5T_NATIVE_DOUBLE, H5T_NATIVE_FLOAT, H5T_NATIVE_INT32,
                                H5T_NATIVE_INT64, H5T_NATIVE_UINT8};
  return &types[b % 5];
}

/// Writes the dataset the input describes to `path`; false if the input is too short.
bool write_input(std::string_view in, const std::string& path) {
  if (in.size() < 4) return false;
  const hid_t type = *element_type(static_cast<std::uint8_t>(in[0]));
  const int rank = 1 + static_cast<std::uint8_t>(in[1]) % 3;
  hsize_t dims[3] = {1 + static_cast<std::uint8_t>(in[2]) % 64u,
                     static_cast<std::uint8_t>(in[3]) % 8u, 2};
  std::size_t count = 1;
  for (int i = 0; i < rank; ++i) count *= dims[i];
  const std::size_t size = H5Tget_size(type);
  std::vector<unsigned char> values(count * size, 0);
  if (!values.empty())
    std::memcpy(values.data(), in.data() + 4, std::min(values.size(), in.size() - 4));
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  const hid_t f = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  const hid_t s = H5Screate_simple(rank, dims, nullptr);
  const hid_t d = H5Dcreate2(f, "/d", type, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  if (count > 0) H5Dwrite(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data());
  H5Dclose(d);
  H5Sclose(s);
  H5Fclose(f);
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::string path = "/tmp/flymc-fuzz-hdf5-" + std::to_string(::getpid()) + ".h5";
  if (!write_input(std::string_view(reinterpret_cast<const char*>(data), size), path)) return 0;
  const auto load = [](std::string_view, const std::string&, flymc::LabelDomain d) {
    return flymc::load_hdf5(path + ":/d", d);
  };
  flymc::fuzz::check_input(
      std::string_view{},
      [&](std::string_view t, const std::string& n, flymc::LabelDomain d,
          const flymc::detail::LoaderBlocks&) { return load(t, n, d); },
      load, path + ":/d");
  return 0;
}
