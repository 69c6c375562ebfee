/* The verification module: the float64 reference of every operation, the tolerances a result
 * is held to, and the test data generator. Used by the tests, the demo and normtune's
 * verification, so a variant the tuner records as correct is one the tests accept. No OpenCL
 * here. */
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

/* Storage types, numbered as clnorm_dtype (this header needs no OpenCL): float32, IEEE
 * binary16 and bfloat16 (the upper 16 bits of a float32). */
#define CLNORM_REF_F32 0
#define CLNORM_REF_F16 1
#define CLNORM_REF_BF16 2

/* Conversions between float and the 16-bit formats' bits: round to nearest, ties to even;
 * overflow gives Inf (f16: |v| >= 65520); f16 subnormals are kept; a NaN gives a quiet NaN of
 * the same sign. The *_value functions are exact. */
uint16_t clnorm_ref_f16_bits(float v);
float clnorm_ref_f16_value(uint16_t bits);
uint16_t clnorm_ref_bf16_bits(float v);
float clnorm_ref_bf16_value(uint16_t bits);

/* The value of `dtype` nearest to v (ties to even, overflow to +-Inf, NaN kept): rounded once
 * from the double, never through a float. */
double clnorm_ref_round(double v, int dtype);

/* The value a float becomes when stored as `dtype` (float32: itself). */
float clnorm_ref_store(float v, int dtype);

/* The spacing of dtype's values at |v|: 2^(e - p) for |v| in [2^e, 2^(e+1)) with p fraction
 * bits (23, 10, 7), and the subnormal spacing below the smallest normal. */
double clnorm_ref_ulp(double v, int dtype);

/* Element size in bytes (4 or 2), and conversions between floats and stored elements (n
 * elements; `pack` rounds as a kernel's store does). */
size_t clnorm_ref_dtype_size(int dtype);
void clnorm_ref_pack(int dtype, const float *src, size_t n, void *dst);
void clnorm_ref_unpack(int dtype, const void *src, size_t n, float *dst);

/* The error of n results against the reference, in units of the allowance
 *   ulps * ulp_dtype(ref_i) + rel * max(max |ref| over the n values, FLT_MIN):
 * max over i of |got_i - ref_i| / allowance_i, so <= 1 passes. NaN rules as
 * clnorm_ref_row_error (+INFINITY on a violation). For float32 results the tests use ulps 0
 * and rel their relative tolerance, which makes this clnorm_ref_row_error / rel. */
double clnorm_ref_scaled_error(size_t n, const float *got, const double *ref, int dtype,
                               double ulps, double rel);

/* The tolerances, relative to a scale (see each use): forward outputs (y, mean, rstd), the
 * same for the adversarial row of 1e4 + N(0,1) (its float32 mean is rounded by half an ulp of
 * 1e4), and backward outputs (dx, dgamma, dbeta; float32 sums over up to 1M terms). */
#define CLNORM_TOL_FWD 1e-5
#define CLNORM_TOL_ADV 2e-4
#define CLNORM_TOL_BWD 1e-4

/* The ulps of the storage type allowed beyond the float32 tolerance: 0 for float32, 1 for
 * float16 and bfloat16 (the float32 result is rounded once when stored). */
double clnorm_ref_dtype_ulps(int dtype);

/* The scale of one row of dx, as the multiple of max(M, FLT_MIN) that clnorm_ref_scaled_error
 * uses (M: the row's largest |ref|): max(M, rstd * max |gamma * dy|) / max(M, FLT_MIN). dx =
 * rstd * (g - mean(g) - xhat * mean(g * xhat)) cancels, so float32's error is relative to the
 * terms, not to dx; a row whose dx is exactly 0 (cols 1) still carries the terms' rounding
 * (contracted products keep a product's error). 1 where that scale is 0 or not finite.
 * gamma may be NULL (ones). */
double clnorm_ref_dx_scale(size_t cols, const double *ref, const float *dy, const float *gamma,
                           float rstd);

/* The error of one row of dx in units of its allowance (<= 1 passes): clnorm_ref_scaled_error
 * with clnorm_ref_dtype_ulps(dtype) and CLNORM_TOL_BWD * clnorm_ref_dx_scale. */
double clnorm_ref_dx_error(size_t cols, const float *got, const double *ref, int dtype,
                           const float *dy, const float *gamma, float rstd);

/* Fused residual add: h = x + res in float32, rounded to dtype (as the kernels must); h is
 * rows x cols, dense. Then y, mean, rstd as clnorm_ref_layernorm / clnorm_ref_rmsnorm of h.
 * x and res are the dtype's values as floats. */
void clnorm_ref_add(size_t rows, size_t cols, int dtype, const float *x, size_t x_stride,
                    const float *res, size_t res_stride, float *h);
void clnorm_ref_add_layernorm(size_t rows, size_t cols, int dtype, const float *x, size_t x_stride,
                              const float *res, size_t res_stride, const float *gamma,
                              const float *beta, double eps, float *h, double *y, double *mean,
                              double *rstd);
void clnorm_ref_add_rmsnorm(size_t rows, size_t cols, int dtype, const float *x, size_t x_stride,
                            const float *res, size_t res_stride, const float *gamma, double eps,
                            float *h, double *y, double *rstd);

/* Backward passes in float64, from the float inputs the kernels get (dy and x rows at their
 * strides, gamma or NULL for ones, and the forward's float32 mean and rstd): with
 * xhat = (x - mean) * rstd (RMSNorm: x * rstd) and g = gamma * dy,
 *   LayerNorm: dx = rstd * (g - mean_row(g) - xhat * mean_row(g * xhat))
 *   RMSNorm:   dx = rstd * (g - xhat * mean_row(g * xhat))
 * dx: rows * cols, dense. dgamma = sum over rows of dy * xhat and dbeta = sum over rows of dy
 * (cols values each; either may be NULL). */
void clnorm_ref_layernorm_backward(size_t rows, size_t cols, const float *dy, size_t dy_stride,
                                   const float *x, size_t x_stride, const float *gamma,
                                   const float *mean, const float *rstd, double *dx, double *dgamma,
                                   double *dbeta);
void clnorm_ref_rmsnorm_backward(size_t rows, size_t cols, const float *dy, size_t dy_stride,
                                 const float *x, size_t x_stride, const float *gamma,
                                 const float *rstd, double *dx, double *dgamma);

/* A small deterministic generator: splitmix64 and Box-Muller normals. */
typedef struct clnorm_rng {
  uint64_t state;
} clnorm_rng;
void clnorm_rng_seed(clnorm_rng *rng, uint64_t seed);
uint64_t clnorm_rng_next(clnorm_rng *rng);
double clnorm_rng_uniform(clnorm_rng *rng); /* [0, 1) */
double clnorm_rng_normal(clnorm_rng *rng);  /* N(0, 1) */

#endif
