#include "flymc/blas.hpp"

#include <cblas.h>

#include <mutex>

namespace flymc::blas {

void use_single_thread() noexcept {
  static std::once_flag once;
  std::call_once(once, [] { openblas_set_num_threads(1); });
}

void syrk_accumulate(const double* s, std::size_t rows, std::size_t d, std::size_t lds,
                     double* c) noexcept {
  if (rows == 0) return;
  // Row-major S (rows × d, leading dimension lds) is column-major Sᵀ; C = Sᵀ S is d × d.
  cblas_dsyrk(CblasColMajor, CblasUpper, CblasNoTrans, static_cast<int>(d), static_cast<int>(rows),
              1.0, s, static_cast<int>(lds), 1.0, c, static_cast<int>(d));
}

}  // namespace flymc::blas
