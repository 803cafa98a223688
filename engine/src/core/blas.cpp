#include "flymc/core/blas.hpp"

#include <cblas.h>

#include <mutex>

namespace flymc::blas {

void use_single_thread() noexcept {
  static std::once_flag once;
  std::call_once(once, [] { openblas_set_num_threads(1); });
}

const char* core_name() noexcept { return openblas_get_corename(); }

void syrk_accumulate(const double* s, std::size_t rows, std::size_t d, std::size_t lds, double* c,
                     double alpha) noexcept {
  if (rows == 0) return;
  // Row-major S (rows × d, leading dimension lds) is column-major Sᵀ; C = Sᵀ S is d × d.
  cblas_dsyrk(CblasColMajor, CblasUpper, CblasNoTrans, static_cast<int>(d), static_cast<int>(rows),
              alpha, s, static_cast<int>(lds), 1.0, c, static_cast<int>(d));
}

void syrk_scaled_rows(const double* x, std::size_t rows, std::size_t d, std::size_t lds,
                      const double* r, double* scratch, double* c, double alpha) noexcept {
  for (std::size_t i = 0; i < rows; ++i) {
    const double* xi = x + i * lds;
    double* si = scratch + i * lds;
    for (std::size_t j = 0; j < d; ++j) si[j] = r[i] * xi[j];
  }
  syrk_accumulate(scratch, rows, d, lds, c, alpha);
}

void gemm_at_xt(const double* a, std::size_t lda, const double* x, std::size_t rows, std::size_t d,
                std::size_t ldx, double* y) noexcept {
  if (rows == 0) return;
  // Row-major X (rows × d, leading dimension ldx) is column-major Xᵀ (d × rows).
  cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, static_cast<int>(d), static_cast<int>(rows),
              static_cast<int>(d), 1.0, a, static_cast<int>(lda), x, static_cast<int>(ldx), 0.0, y,
              static_cast<int>(d));
}

}  // namespace flymc::blas
