#include "flymc/core/blas.hpp"

#include <cblas.h>

#include <algorithm>
#include <mutex>
#include <vector>

// LAPACK's Fortran interface, exported by OpenBLAS (Debian's package ships no lapacke.h with it).
// The trailing lengths are the hidden lengths of the three one-character arguments.
extern "C" void dsyevr_(const char* jobz, const char* range, const char* uplo, const int* n,
                        double* a, const int* lda, const double* vl, const double* vu,
                        const int* il, const int* iu, const double* abstol, int* m, double* w,
                        double* z, const int* ldz, int* isuppz, double* work, const int* lwork,
                        int* iwork, const int* liwork, int* info, std::size_t, std::size_t,
                        std::size_t);

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

void trmm_lower_rows(const double* t, std::size_t d, double* x, std::size_t rows,
                     std::size_t ldx) noexcept {
  if (rows == 0) return;
  // Row-major X (rows × d, leading dimension ldx) is column-major Xᵀ (d × rows): Xᵀ ← T·Xᵀ.
  cblas_dtrmm(CblasColMajor, CblasLeft, CblasLower, CblasNoTrans, CblasNonUnit, static_cast<int>(d),
              static_cast<int>(rows), 1.0, t, static_cast<int>(d), x, static_cast<int>(ldx));
}

bool top_eigenpairs(double* a, std::size_t d, std::size_t k, double* values, double* vectors) {
  if (k == 0 || k > d) return false;
  const int n = static_cast<int>(d), il = n - static_cast<int>(k) + 1, iu = n;
  const char jobz = vectors != nullptr ? 'V' : 'N', range = 'I', uplo = 'U';
  const double unused = 0.0, abstol = 0.0;
  int m = 0, info = 0, lwork = -1, liwork = -1, iwork_size = 0;
  double work_size = 0.0;
  std::vector<int> isuppz(2 * k);
  double dummy_z = 0.0;
  double* z = vectors != nullptr ? vectors : &dummy_z;
  const int ldz = vectors != nullptr ? n : 1;
  // The first call asks for the workspace sizes, the second does the work.
  dsyevr_(&jobz, &range, &uplo, &n, a, &n, &unused, &unused, &il, &iu, &abstol, &m, values, z, &ldz,
          isuppz.data(), &work_size, &lwork, &iwork_size, &liwork, &info, 1, 1, 1);
  if (info != 0) return false;
  lwork = std::max(1, static_cast<int>(work_size));
  liwork = std::max(1, iwork_size);
  std::vector<double> work(static_cast<std::size_t>(lwork));
  std::vector<int> iwork(static_cast<std::size_t>(liwork));
  dsyevr_(&jobz, &range, &uplo, &n, a, &n, &unused, &unused, &il, &iu, &abstol, &m, values, z, &ldz,
          isuppz.data(), work.data(), &lwork, iwork.data(), &liwork, &info, 1, 1, 1);
  return info == 0 && m == static_cast<int>(k);
}

}  // namespace flymc::blas
