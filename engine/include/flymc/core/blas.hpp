#pragma once
/// @file blas.hpp
/// Thin wrappers over OpenBLAS used outside the per-iteration hot path.
#include <cstddef>

namespace flymc::blas {

/// Pins OpenBLAS to one thread: parallelism comes from oneTBB (chains and data chunks), and
/// OpenBLAS's own pool would oversubscribe the cores. Called once by the engine; idempotent.
void use_single_thread() noexcept;

/// The kernel set OpenBLAS chose for this CPU at run time (e.g. "SkylakeX", "Zen"): its sums
/// round differently from one set to another.
const char* core_name() noexcept;

/// C (d×d, column-major, upper triangle) += alpha·Sᵀ S for S with `rows` rows of `d` entries,
/// `lds` apart.
void syrk_accumulate(const double* s, std::size_t rows, std::size_t d, std::size_t lds, double* c,
                     double alpha = 1.0) noexcept;

/// Rows per call of syrk_scaled_rows that keep its scaled block (rows × lds doubles) in L2.
inline constexpr std::size_t kSyrkRows = 512;

/// C (d×d, column-major, upper triangle) += alpha·Σ_i r_i² x_i x_iᵀ over `rows` rows x_i of `d`
/// entries, `lds` apart: the rows scaled by r_i into `scratch` (rows × lds, padding left as it
/// is), then one SYRK.
void syrk_scaled_rows(const double* x, std::size_t rows, std::size_t d, std::size_t lds,
                      const double* r, double* scratch, double* c, double alpha = 1.0) noexcept;

/// Y = Aᵀ Xᵀ for column-major A (d×d, leading dimension lda) and X with `rows` rows of `d`
/// entries, `ldx` apart: column i of Y (column-major d × rows, leading dimension d) is Aᵀ x_i, so
/// x_iᵀ A x_i = x_i · Y_i.
void gemm_at_xt(const double* a, std::size_t lda, const double* x, std::size_t rows, std::size_t d,
                std::size_t ldx, double* y) noexcept;

/// x_i ← T x_i for `rows` rows x_i of `d` entries, `ldx` apart (in place), T lower triangular
/// (column-major d×d, leading dimension d): one triangular product (TRMM), d²/2 multiply-adds a
/// row.
void trmm_lower_rows(const double* t, std::size_t d, double* x, std::size_t rows,
                     std::size_t ldx) noexcept;

/// The `k` largest eigenvalues of the symmetric d×d matrix A (column-major, upper triangle read;
/// A is overwritten) in ascending order into `values`, and, unless `vectors` is null, their unit
/// eigenvectors as the columns of `vectors` (column-major d×k). LAPACK's DSYEVR (relatively robust
/// representations), which finds a few eigenpairs in a fraction of a full decomposition's time.
/// Returns false if it did not converge.
bool top_eigenpairs(double* a, std::size_t d, std::size_t k, double* values, double* vectors);

}  // namespace flymc::blas
