// The draw files of a run directory, read together (flymc summary, flymc report).
#include <algorithm>
#include <filesystem>
#include <regex>
#include <system_error>

#include "flymc/core/errors.hpp"
#include "flymc/io/stan_csv.hpp"

namespace flymc {

std::vector<StanCsv> read_run_chains(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw UsageError(dir + ": not a directory");
  std::vector<std::pair<int, std::string>> files;
  const std::regex pat("chain-([0-9]+)\\.csv");
  for (const auto& e : fs::directory_iterator(dir)) {
    std::smatch m;
    const std::string name = e.path().filename().string();
    if (std::regex_match(name, m, pat)) files.emplace_back(std::stoi(m[1]), e.path().string());
  }
  if (files.empty()) throw DataError(dir + ": no chain-<k>.csv files");
  std::sort(files.begin(), files.end());
  std::vector<StanCsv> chains;
  for (const auto& f : files) chains.push_back(read_stan_csv(f.second));
  for (const auto& c : chains)
    if (c.columns != chains.front().columns)
      throw DataError(c.path + ": columns differ from " + chains.front().path);
  return chains;
}

}  // namespace flymc
