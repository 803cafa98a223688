// The one layout of partial sums between the processes of a sharded data set
// (flymc/data/row_fold.hpp): what PackedSums writes, SumsReader reads back exactly, and a message
// of the wrong size is an error naming whose sums they are. (tests/mpi runs the folds across
// processes.)
#include <doctest/doctest.h>

#include <Eigen/Dense>
#include <limits>
#include <vector>

#include "flymc/core/errors.hpp"
#include "flymc/data/row_fold.hpp"

using flymc::Error;
using flymc::PackedSums;
using flymc::SumsReader;

TEST_SUITE("unit") {
  TEST_CASE("packed sums: scalars, arrays and matrices read back bit for bit, in order") {
    Eigen::MatrixXd m(2, 3);
    m << 1.0, -0.0, 3.5, std::numeric_limits<double>::denorm_min(), 1e300, -7.25;
    const std::vector<double> g = {0.1, 0.2, 0.3};
    PackedSums p;
    p.scalar(-2.5).array(g).matrix(m).matrix(Eigen::MatrixXd()).array(std::vector<double>{});
    const std::vector<double> v = p.take();
    SumsReader r(v, "test sums");
    CHECK(r.scalar() == -2.5);
    CHECK(r.array() == g);
    const Eigen::MatrixXd back = r.matrix<Eigen::MatrixXd>();
    CHECK(back.rows() == 2);
    CHECK(back.cols() == 3);
    CHECK((back.array() == m.array()).all());
    CHECK(r.matrix<Eigen::MatrixXd>().size() == 0);
    CHECK(r.array().empty());
    CHECK_NOTHROW(r.end());
  }

  TEST_CASE("packed sums: a message too short, too long or malformed names whose sums") {
    PackedSums p;
    p.scalar(1.0).array(std::vector<double>{1.0, 2.0});
    std::vector<double> v = p.take();
    {
      std::vector<double> shorter(v.begin(), v.end() - 1);
      SumsReader r(shorter, "robust regression");
      r.scalar();
      CHECK_THROWS_WITH_AS(r.array(), "robust regression: a shard's partial sums are too short",
                           Error);
    }
    {
      std::vector<double> longer = v;
      longer.push_back(9.0);
      SumsReader r(longer, "probit");
      r.scalar();
      r.array();
      CHECK_THROWS_WITH_AS(r.end(), "probit: a shard's partial sums are too long", Error);
    }
    for (const double bad_size : {-1.0, 0.5, 1e300, std::numeric_limits<double>::quiet_NaN()}) {
      CAPTURE(bad_size);
      const std::vector<double> w = {bad_size, 1.0};
      SumsReader r(w, "m");
      CHECK_THROWS_WITH_AS(r.array(), "m: a shard's partial sums are malformed", Error);
    }
    // A matrix larger than the message is refused before it is allocated.
    const std::vector<double> huge = {4.0, 4.0, 0.0, 0.0};
    SumsReader r(huge, "m");
    CHECK_THROWS_AS(r.matrix<Eigen::MatrixXd>(), Error);
  }
}
