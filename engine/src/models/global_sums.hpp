#pragma once
// Private: one chunk's (or the whole data's) share of the per-row terms, and their derivatives,
// of a model with a global parameter beside its coefficients (Student-t and negative binomial
// regression with σ or φ inferred, a global family given in code), as doubles for the processes
// of a sharded data set too (row_fold.hpp).
#include <vector>

#include "flymc/data/row_fold.hpp"
#include "flymc/models/model.hpp"

namespace flymc::detail {

struct GlobalSums {
  double f = 0.0;
  Vec g;     // the gradient, where asked for
  Mat h, e;  // the Hessian, and a stand-in for it (an expected information), where asked for

  GlobalSums& operator+=(const GlobalSums& o) {
    f += o.f;
    if (g.size() > 0) g += o.g;
    if (h.size() > 0) h += o.h;
    if (e.size() > 0) e += o.e;
    return *this;
  }
  static constexpr const char* kWhat = "a model with a global parameter";
  void pack(PackedSums& p) const { p.scalar(f).array(g).matrix(h).matrix(e); }
  static GlobalSums unpack(SumsReader& r) {
    GlobalSums s;
    s.f = r.scalar();
    const std::vector<double> g = r.array();
    s.g = Eigen::Map<const Vec>(g.data(), static_cast<Eigen::Index>(g.size()));
    s.h = r.matrix<Mat>();
    s.e = r.matrix<Mat>();
    return s;
  }
};

}  // namespace flymc::detail
