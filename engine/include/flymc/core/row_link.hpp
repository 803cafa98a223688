#pragma once
/// @file row_link.hpp
/// The messages that let processes holding consecutive parts of one data set compute a data-wide
/// sum exactly as one process would (data/row_fold.hpp): the fold over fixed row chunks passes
/// from each process to the next in row order. flymc::mpi implements it on a communicator; the
/// core stays free of MPI.
#include <vector>

namespace flymc {

/// Links between the processes that hold a data set's parts, part r on process r. Every call is
/// collective in the sense its name gives: a process that sends must be matched by the receiver.
class RowLink {
 public:
  virtual ~RowLink() = default;
  /// This process's part (0-based, in row order) and the number of parts.
  virtual int part() const noexcept = 0;
  virtual int parts() const noexcept = 0;
  /// The values the previous part's process sent with send_to_next (not called on part 0).
  virtual std::vector<double> receive_from_previous() = 0;
  /// Hands `values` to the next part's process (not called on the last part).
  virtual void send_to_next(const std::vector<double>& values) = 0;
  /// Every process: the last part's `values` (its own are ignored elsewhere).
  virtual std::vector<double> broadcast_from_last(const std::vector<double>& values) = 0;
  /// Every process: every part's `values`, concatenated in part order.
  virtual std::vector<double> gather_in_order(const std::vector<double>& values) = 0;
  /// gather_in_order when every process sends the same number of values: one collective call,
  /// for messages sent as often as once per proposal.
  virtual std::vector<double> all_gather(const std::vector<double>& values) = 0;
};

}  // namespace flymc
