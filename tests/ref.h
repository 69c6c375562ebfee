/* The float64 reference of every operation, and the test data generator. Used by the tests,
 * the demo and normtune's verification. No OpenCL here. */
#ifndef CLNORM_REF_H
#define CLNORM_REF_H

#include <stddef.h>
#include <stdint.h>

/* x: rows x cols floats, row r at x + r * x_stride. gamma/beta may be NULL (ones/zeros).
 * y: rows * cols doubles, dense; mean and rstd: rows doubles (mean may be NULL). A row holding
 * a NaN or Inf gives NaN y, mean and rstd (the library's contract). */
void clnorm_ref_layernorm(size_t rows, size_t cols, const float *x, size_t x_stride,
                          const float *gamma, const float *beta, double eps, double *y,
                          double *mean, double *rstd);
void clnorm_ref_rmsnorm(size_t rows, size_t cols, const float *x, size_t x_stride,
                        const float *gamma, double eps, double *y, double *rstd);

/* The error of one row: max over the row of |got - ref| / max(max |ref| of the row, FLT_MIN).
 * Where ref is NaN, got must be NaN; where ref is finite, got must be finite and close; a
 * violation gives +INFINITY. */
double clnorm_ref_row_error(size_t cols, const float *got, const double *ref);

/* Relative error of a scalar (|got - ref| / max(|ref|, FLT_MIN)); NaN rules as above. */
double clnorm_ref_rel_error(float got, double ref);

/* A small deterministic generator: splitmix64 and Box-Muller normals. */
typedef struct clnorm_rng {
  uint64_t state;
} clnorm_rng;
void clnorm_rng_seed(clnorm_rng *rng, uint64_t seed);
uint64_t clnorm_rng_next(clnorm_rng *rng);
double clnorm_rng_uniform(clnorm_rng *rng); /* [0, 1) */
double clnorm_rng_normal(clnorm_rng *rng);  /* N(0, 1) */

#endif
