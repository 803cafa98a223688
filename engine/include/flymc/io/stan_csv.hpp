#pragma once
/// @file stan_csv.hpp
/// Draw files in the layout Stan's tools write ("Stan CSV"): one file per chain, comment lines
/// starting with `#`, one header row, one row per draw. See docs/output.md.
///
/// Layout written by StanCsvWriter (and read by rstan::read_stan_csv, cmdstanr, posterior, arviz):
///
///     # key=value                     config, in the order given (rstan style)
///     #
///     lp__,accept_stat__,...,beta.1   header row
///     ...                             warm-up rows (if saved)
///     # Adaptation terminated
///     # Step size = 0.143625
///     # Diagonal elements of inverse mass matrix:
///     # 1, 1, 1
///     ...                             kept draws
///     # bound_violations=0            run diagnostics (flymc; write_comments)
///     #
///     #  Elapsed Time: 0.001124 seconds (Warm-up)
///     #                0.000609 seconds (Sampling)
///     #                0.001733 seconds (Total)
///     #
///
/// rstan::read_stan_csv takes `iter` as the total number of iterations *including* warm-up,
/// and reads `warmup`, `save_warmup` (0/1), `thin`, `seed` and `chain_id` from the config.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace flymc {

/// Writes one chain's draws. Rows are formatted with std::to_chars (shortest representation that
/// reads back to the same double; non-finite values as `inf`, `-inf`, `nan`) into a reusable
/// buffer and go through a large stdio buffer: they reach the OS only when the buffer is full or
/// on flush(). The buffer is always handed to the OS at a row boundary, so a killed process
/// leaves a file that ends with whole rows up to the last flush or buffer spill.
///
/// Errors: opening throws flymc::Error with code 73 (EX_CANTCREAT); a failed write, flush or
/// close throws flymc::Error with code 74 (EX_IOERR); misuse (row width differs from the header,
/// anything but the header written first, names containing separators, writes after close())
/// throws flymc::Error with code 70.
///
/// Thread safety: none; one writer per chain, used from one thread at a time.
class StanCsvWriter {
 public:
  /// Opens (truncates) `path` for writing.
  explicit StanCsvWriter(const std::string& path);
  /// Reopens `path`, a file this class wrote, cut back to its first `length` bytes, to append
  /// after them (resuming a checkpointed run). Those bytes must end at a line boundary and hold
  /// the header row, with `columns` columns.
  /// @throw Error 73 if the file cannot be opened, 74 if it cannot be cut.
  static StanCsvWriter reopen(const std::string& path, std::uint64_t length, std::size_t columns);
  ~StanCsvWriter();
  StanCsvWriter(StanCsvWriter&& other) noexcept;
  StanCsvWriter& operator=(StanCsvWriter&& other) noexcept;
  StanCsvWriter(const StanCsvWriter&) = delete;
  StanCsvWriter& operator=(const StanCsvWriter&) = delete;

  /// Writes `# key=value` lines in the given order, a `#` line, then the header row. Called once.
  /// Keys must be non-empty without `=` or line breaks; values without line breaks; column names
  /// non-empty without `,`, `#`, quotes, spaces or line breaks.
  void write_header(const std::vector<std::pair<std::string, std::string>>& config,
                    const std::vector<std::string>& columns);
  /// Writes one draw; `values.size()` must equal the number of columns.
  void write_row(std::span<const double> values);
  /// Writes the end-of-adaptation block: the step size and the inverse metric, its diagonal on
  /// one line, or with `dense` a P×P matrix (P² values, row by row) on P lines, as CmdStan does.
  void write_adaptation(double step_size, std::span<const double> inv_metric, bool dense = false);
  /// Writes the closing Elapsed Time block (seconds in plain decimal notation: rstan strips
  /// everything but digits and '.' from these lines, so exponents must not appear).
  void write_elapsed(double warmup_seconds, double sampling_seconds);
  /// Writes `# key=value` comment lines (after the header; flymc writes its run diagnostics
  /// before the Elapsed Time block). Keys are letters, digits and '_'; values without line
  /// breaks.
  void write_comments(const std::vector<std::pair<std::string, std::string>>& entries);
  /// fflush + fsync: everything written so far survives a kill or a crash of the machine.
  void flush();
  /// Bytes written to the file so far, including those still buffered (the file's length after
  /// the next flush()).
  std::uint64_t size() const noexcept { return size_; }
  /// Flushes, syncs and closes the file. Further writes throw. The destructor closes silently.
  void close();

  const std::string& path() const noexcept { return path_; }

 private:
  StanCsvWriter() = default;
  void put(const char* data, std::size_t size);
  void require_open() const;
  void require_header(const char* what) const;
  void io_error(const char* what) const;

  std::string path_;
  std::FILE* file_ = nullptr;
  std::unique_ptr<char[]> stdio_buffer_;
  std::size_t pending_ = 0;  // bytes in the stdio buffer since the last flush
  std::uint64_t size_ = 0;   // bytes written in total
  std::size_t columns_ = 0;
  bool header_written_ = false;
  std::vector<char> line_;  // reusable row buffer
};

/// The contents of a Stan CSV file (flymc's or Stan's own, rstan or CmdStan flavour).
struct StanCsv {
  std::string path;
  /// `# key=value` (rstan) and `#   key = value (Default)` (CmdStan) lines before the header, in
  /// file order; keys and values trimmed, CmdStan's ` (Default)` suffix removed. CmdStan section
  /// lines without `=` are skipped. Keys are not renamed (CmdStan's chain id is `id`).
  std::vector<std::pair<std::string, std::string>> config;
  std::vector<std::string> columns;
  /// Rows before `# Adaptation terminated` when the config says save_warmup=1 (or true);
  /// otherwise empty. A file without an adaptation block has all its rows in `draws`.
  std::vector<std::vector<double>> warmup;
  /// Kept draws, each `columns.size()` long.
  std::vector<std::vector<double>> draws;
  /// From the adaptation block, if present. `inv_metric` is the diagonal for a diag_e metric
  /// (`# Diagonal elements of inverse mass matrix:`), or the row-major matrix for CmdStan's
  /// dense_e (`# Elements of inverse mass matrix:` followed by one comment line per row).
  double step_size = std::numeric_limits<double>::quiet_NaN();
  std::vector<double> inv_metric;
  /// `# key=value` lines after the header (keys of letters, digits and '_'), in file order:
  /// flymc writes its run diagnostics there (bound_violations, bound_clamps,
  /// nonfinite_proposals, slice_failures).
  std::vector<std::pair<std::string, std::string>> diagnostics;
  /// From the Elapsed Time block, if present.
  double warmup_seconds = std::numeric_limits<double>::quiet_NaN();
  double sampling_seconds = std::numeric_limits<double>::quiet_NaN();
  /// Lines ignored because the file was cut mid-line by a kill (0 or 1): a last line without
  /// a trailing newline that is a comment, or a data row with too few fields or an unreadable
  /// value. (A cut inside the last field's digits with all fields present cannot be detected.)
  int truncated_lines = 0;

  /// The first config value for `key`, or "" if absent.
  std::string config_value(const std::string& key) const;
};

/// Reads a whole Stan CSV file. Throws flymc::DataError naming the file, line and field
/// (`<path>:<line>: field <k> (<column>): <what>`) for a missing or unreadable file, an empty
/// file, no header row, a ragged row, or a value that is not a number. Numbers are parsed with
/// std::from_chars; `inf`, `-inf`, `nan`, `Inf`, `NaN`, `infinity` (any case) are accepted,
/// as are surrounding blanks, a leading '+' and CRLF line ends. Blank lines are skipped.
StanCsv read_stan_csv(const std::string& path);

/// The draw files `dir/chain-<k>.csv` of a run directory (docs/output.md), read in order of k,
/// as `flymc summary` and `flymc report` read a run.
/// @throw UsageError (64) when `dir` is not a directory; DataError (65) when it holds no
/// chain-<k>.csv, when a file is corrupt (read_stan_csv's message), or when the files' columns
/// differ.
std::vector<StanCsv> read_run_chains(const std::string& dir);

}  // namespace flymc
