#pragma once
/// @file row_fold.hpp
/// Data-wide sums over a data set that may be one part of a larger one (RowShard): each process
/// folds its own chunks and hands the accumulator on in row order, so every process gets the sum
/// one process holding every row would get, bit for bit, whatever the number of parts.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <exception>
#include <string>
#include <utility>
#include <vector>

#include "flymc/core/errors.hpp"
#include "flymc/core/parallel.hpp"
#include "flymc/data/dataset.hpp"

namespace flymc {

namespace detail {

/// A failure travels along the fold in place of the accumulator, so that no process is left
/// waiting for a message that will not come: a negative first value, then the exit code and the
/// message's characters. A healthy accumulator's first value is 0.
inline std::vector<double> failed_fold(const std::exception_ptr& e) {
  std::string what = "a data-wide sum failed";
  int code = 70;
  try {
    std::rethrow_exception(e);
  } catch (const Error& err) {
    what = err.what();
    code = err.exit_code();
  } catch (const std::exception& err) {
    what = err.what();
  } catch (...) {
  }
  std::vector<double> v{-1.0, double(code)};
  for (const char c : what) v.push_back(double(static_cast<unsigned char>(c)));
  return v;
}

/// Throws the failure failed_fold() encoded (every process throws the same Error).
[[noreturn]] inline void throw_failed_fold(const std::vector<double>& v) {
  std::string what;
  for (std::size_t i = 2; i < v.size(); ++i) what += static_cast<char>(int(v[i]));
  throw Error(what, v.size() > 1 ? int(v[1]) : 70);
}

}  // namespace detail

/// Partial sums as doubles, for the processes of a sharded data set (fold_rows' messages):
/// scalars as they are, arrays and matrices behind their sizes, read back by SumsReader in the
/// order written. Every model's partials use this one layout, so a message is checked in one
/// place.
class PackedSums {
 public:
  PackedSums& scalar(double x) {
    v_.push_back(x);
    return *this;
  }
  PackedSums& array(const double* p, std::size_t n) {
    v_.reserve(v_.size() + 1 + n);
    v_.push_back(static_cast<double>(n));
    v_.insert(v_.end(), p, p + n);
    return *this;
  }
  /// A contiguous container of doubles (std::vector, an Eigen vector).
  template <class V>
  PackedSums& array(const V& v) {
    return array(v.data(), static_cast<std::size_t>(v.size()));
  }
  /// A column-major matrix (Eigen's).
  template <class M>
  PackedSums& matrix(const M& m) {
    v_.reserve(v_.size() + 2 + static_cast<std::size_t>(m.size()));
    v_.push_back(static_cast<double>(m.rows()));
    v_.push_back(static_cast<double>(m.cols()));
    v_.insert(v_.end(), m.data(), m.data() + m.size());
    return *this;
  }
  std::vector<double> take() { return std::move(v_); }

 private:
  std::vector<double> v_;
};

/// Reads what PackedSums wrote. A message too short, or with values left over, is an Error
/// naming `what` (a shard's partial sums of the wrong size).
class SumsReader {
 public:
  SumsReader(const std::vector<double>& v, const char* what) : v_(v), what_(what) {}
  double scalar() {
    if (at_ >= v_.size()) fail("too short");
    return v_[at_++];
  }
  std::vector<double> array() {
    const std::size_t n = count();
    need(n);
    std::vector<double> out(v_.begin() + static_cast<std::ptrdiff_t>(at_),
                            v_.begin() + static_cast<std::ptrdiff_t>(at_ + n));
    at_ += n;
    return out;
  }
  template <class M>
  M matrix() {
    const std::size_t rows = count(), cols = count();
    if (cols != 0 && rows > (v_.size() - at_) / cols) fail("too short");
    const std::size_t n = rows * cols;
    M m(static_cast<std::ptrdiff_t>(rows), static_cast<std::ptrdiff_t>(cols));
    std::copy(v_.begin() + static_cast<std::ptrdiff_t>(at_),
              v_.begin() + static_cast<std::ptrdiff_t>(at_ + n), m.data());
    at_ += n;
    return m;
  }
  /// Every value read.
  void end() const {
    if (at_ != v_.size()) fail("too long");
  }

 private:
  /// A size: a whole number no larger than the message.
  std::size_t count() {
    const double n = scalar();
    if (!(n >= 0.0 && n <= static_cast<double>(v_.size())) || n != std::floor(n)) fail("malformed");
    return static_cast<std::size_t>(n);
  }
  void need(std::size_t n) const {
    if (n > v_.size() - at_) fail("too short");
  }
  [[noreturn]] void fail(const char* how) const {
    throw Error(std::string(what_) + ": a shard's partial sums are " + how);
  }
  const std::vector<double>& v_;
  std::size_t at_ = 0;
  const char* what_;
};

/// The link to the other processes holding parts of the data set `ds` is a part of, or null
/// when no other process holds any (not a shard, or a shard of one part).
inline RowLink* shard_link(const Dataset& ds) noexcept {
  const RowShard* s = ds.shard();
  return s != nullptr && s->link->parts() > 1 ? s->link.get() : nullptr;
}

/// deterministic_reduce over the rows of `ds` in chunks of kReduceGrain rows (their indices local
/// to `ds`). On a shard the fold starts from the previous part's accumulator and goes on to the
/// next part; every part returns the last part's result. `pack` turns a T into doubles and
/// `unpack` turns them back, exactly. A shard's process must call this collectively with the
/// other parts' processes; an exception on one of them (in `chunk_fn`, `combine`, `pack` or
/// `unpack`) is thrown on every one, with its message and exit code, instead of leaving the
/// others waiting.
template <class T, class ChunkFn, class Combine, class Pack, class Unpack>
T fold_rows(const Dataset& ds, T init, ChunkFn&& chunk_fn, Combine&& combine, Pack&& pack,
            Unpack&& unpack) {
  const RowShard* s = ds.shard();
  const bool linked = s != nullptr && s->link->parts() > 1;
  if (!linked) {
    T acc = std::move(init);
    for (auto& p : chunk_partials(ds.n(), kReduceGrain, chunk_fn))
      acc = combine(std::move(acc), std::move(p));
    return acc;
  }
  RowLink& link = *s->link;
  std::vector<double> message;  // {0, pack(acc)...} or failed_fold
  bool received = link.part() == 0;
  try {
    auto parts = chunk_partials(ds.n(), kReduceGrain, chunk_fn);  // before waiting for the others
    std::vector<double> previous =
        link.part() > 0 ? link.receive_from_previous() : std::vector{0.0};
    received = true;
    if (previous.empty() || previous[0] != 0.0) {
      message = std::move(previous);  // an earlier part failed: pass it on
    } else {
      T acc = link.part() > 0 ? unpack(std::vector<double>(previous.begin() + 1, previous.end()))
                              : std::move(init);
      for (auto& p : parts) acc = combine(std::move(acc), std::move(p));
      message = {0.0};
      const std::vector<double> packed = pack(acc);
      message.insert(message.end(), packed.begin(), packed.end());
    }
  } catch (...) {
    message = detail::failed_fold(std::current_exception());
  }
  // A part that failed before it received still takes its predecessor's message (and drops it),
  // so that no message is left for a later fold to take.
  if (!received) (void)link.receive_from_previous();
  if (link.part() + 1 < link.parts()) link.send_to_next(message);
  const std::vector<double> result = link.broadcast_from_last(message);
  if (result.empty() || result[0] != 0.0) detail::throw_failed_fold(result);
  return unpack(std::vector<double>(result.begin() + 1, result.end()));
}

/// Runs f() on every process of a shard of `ds` (collectively) and agrees on its outcome: an
/// error on any process is thrown on every one, the first part's in part order, with its message
/// and exit code, so that none goes on to a collective step the others will not reach. Without a
/// shard (or with one part) it is f().
template <class F>
void agree_on_parts(const Dataset& ds, F&& f) {
  const RowShard* s = ds.shard();
  if (s == nullptr || s->link->parts() == 1) return f();
  std::vector<double> mine = {0.0};
  try {
    f();
  } catch (...) {
    mine = detail::failed_fold(std::current_exception());
  }
  mine.insert(mine.begin(), double(mine.size()));  // each part's message behind its length
  const std::vector<double> all = s->link->gather_in_order(mine);
  for (std::size_t at = 0; at < all.size();) {
    const auto len = static_cast<std::size_t>(all[at]);
    if (all[at + 1] != 0.0)
      detail::throw_failed_fold(std::vector<double>(all.begin() + static_cast<long>(at + 1),
                                                    all.begin() + static_cast<long>(at + 1 + len)));
    at += 1 + len;
  }
}

/// fold_rows of partial sums T that write themselves (`void pack(PackedSums&) const`) and read
/// themselves back (`static T unpack(SumsReader&)`, T::kWhat naming them in errors).
template <class T, class ChunkFn, class Combine>
T fold_sums(const Dataset& ds, T init, ChunkFn&& chunk_fn, Combine&& combine) {
  return fold_rows(
      ds, std::move(init), chunk_fn, combine,
      [](const T& t) {
        PackedSums p;
        t.pack(p);
        return p.take();
      },
      [](const std::vector<double>& v) {
        SumsReader r(v, T::kWhat);
        T t = T::unpack(r);
        r.end();
        return t;
      });
}

/// fold_rows of a sum of doubles.
template <class ChunkFn>
double sum_rows(const Dataset& ds, ChunkFn&& chunk_fn) {
  return fold_rows(
      ds, 0.0, chunk_fn, [](double a, double b) { return a + b; },
      [](double v) { return std::vector<double>{v}; },
      [](const std::vector<double>& v) { return v.at(0); });
}

}  // namespace flymc
