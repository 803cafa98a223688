#pragma once
/// @file blas.hpp
/// Thin wrappers over OpenBLAS used outside the per-iteration hot path.
#include <cstddef>

namespace flymc::blas {

/// Pins OpenBLAS to one thread: parallelism comes from oneTBB (chains and data chunks), and
/// OpenBLAS's own pool would oversubscribe the cores. Called once by the engine; idempotent.
void use_single_thread() noexcept;

/// C (d×d, column-major, upper triangle) += Sᵀ S for S with `rows` rows of `d` entries, `lds`
/// apart.
void syrk_accumulate(const double* s, std::size_t rows, std::size_t d, std::size_t lds,
                     double* c) noexcept;

}  // namespace flymc::blas
