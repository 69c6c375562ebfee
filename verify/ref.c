#include "ref.h"

#include <float.h>
#include <math.h>
#include <string.h>

static int row_finite(const float *x, size_t cols) {
  for (size_t i = 0; i < cols; i++)
    if (!isfinite(x[i]))
      return 0;
  return 1;
}

void clnorm_ref_layernorm(size_t rows, size_t cols, const float *x, size_t x_stride,
                          const float *gamma, const float *beta, double eps, double *y,
                          double *mean, double *rstd) {
  for (size_t r = 0; r < rows; r++) {
    const float *xr = x + r * x_stride;
    double *yr = y + r * cols;
    if (!row_finite(xr, cols)) {
      for (size_t i = 0; i < cols; i++)
        yr[i] = NAN;
      if (mean)
        mean[r] = NAN;
      rstd[r] = NAN;
      continue;
    }
    double sum = 0.0;
    for (size_t i = 0; i < cols; i++)
      sum += xr[i];
    const double m = sum / (double)cols;
    double sq = 0.0;
    for (size_t i = 0; i < cols; i++)
      sq += ((double)xr[i] - m) * ((double)xr[i] - m);
    const double rs = 1.0 / sqrt(sq / (double)cols + eps);
    for (size_t i = 0; i < cols; i++)
      yr[i] = ((double)xr[i] - m) * rs * (gamma ? (double)gamma[i] : 1.0) +
              (beta ? (double)beta[i] : 0.0);
    if (mean)
      mean[r] = m;
    rstd[r] = rs;
  }
}

void clnorm_ref_rmsnorm(size_t rows, size_t cols, const float *x, size_t x_stride,
                        const float *gamma, double eps, double *y, double *rstd) {
  for (size_t r = 0; r < rows; r++) {
    const float *xr = x + r * x_stride;
    double *yr = y + r * cols;
    if (!row_finite(xr, cols)) {
      for (size_t i = 0; i < cols; i++)
        yr[i] = NAN;
      rstd[r] = NAN;
      continue;
    }
    double sq = 0.0;
    for (size_t i = 0; i < cols; i++)
      sq += (double)xr[i] * (double)xr[i];
    const double rs = 1.0 / sqrt(sq / (double)cols + eps);
    for (size_t i = 0; i < cols; i++)
      yr[i] = (double)xr[i] * rs * (gamma ? (double)gamma[i] : 1.0);
    rstd[r] = rs;
  }
}

double clnorm_ref_row_error(size_t cols, const float *got, const double *ref) {
  double scale = 0.0;
  for (size_t i = 0; i < cols; i++)
    if (isfinite(ref[i]) && fabs(ref[i]) > scale)
      scale = fabs(ref[i]);
  if (scale < FLT_MIN)
    scale = FLT_MIN;
  double worst = 0.0;
  for (size_t i = 0; i < cols; i++) {
    if (isnan(ref[i])) {
      if (!isnan(got[i]))
        return INFINITY;
      continue;
    }
    if (!isfinite(got[i]))
      return INFINITY;
    const double e = fabs((double)got[i] - ref[i]) / scale;
    if (e > worst)
      worst = e;
  }
  return worst;
}

double clnorm_ref_rel_error(float got, double ref) {
  if (isnan(ref))
    return isnan(got) ? 0.0 : INFINITY;
  if (!isfinite(got))
    return INFINITY;
  const double scale = fabs(ref) > FLT_MIN ? fabs(ref) : FLT_MIN;
  return fabs((double)got - ref) / scale;
}

static uint32_t float_bits(float v) {
  uint32_t b;
  memcpy(&b, &v, sizeof b);
  return b;
}

static float bits_float(uint32_t b) {
  float v;
  memcpy(&v, &b, sizeof v);
  return v;
}

uint16_t clnorm_ref_f16_bits(float v) {
  const uint32_t b = float_bits(v);
  const uint16_t sign = (uint16_t)((b >> 16) & 0x8000u);
  const uint32_t a = b & 0x7FFFFFFFu;
  if (a > 0x7F800000u) /* NaN: quiet, the top of the payload kept */
    return (uint16_t)(sign | 0x7E00u | ((a >> 13) & 0x3FFu));
  if (a >= 0x477FF000u) /* >= 65520, halfway between 65504 and 2^16: Inf (65504 is odd) */
    return (uint16_t)(sign | 0x7C00u);
  if (a >= 0x38800000u) { /* >= 2^-14: a normal half; round off 13 bits, ties to even */
    const uint32_t r = (a + 0xFFFu + ((a >> 13) & 1u)) >> 13;
    return (uint16_t)(sign | (r - (112u << 10))); /* exponent bias 127 -> 15 */
  }
  if (a <= 0x33000000u) /* <= 2^-25, half the smallest subnormal: zero (a tie goes to even 0) */
    return sign;
  /* a subnormal half: the value in units of 2^-24, rounded to nearest even */
  const uint32_t exponent = a >> 23, mantissa = (a & 0x7FFFFFu) | 0x800000u;
  const uint32_t shift = 126u - exponent; /* value = mantissa * 2^(exponent - 150) */
  uint32_t q = mantissa >> shift;
  const uint32_t rest = mantissa & ((1u << shift) - 1u), half = 1u << (shift - 1u);
  if (rest > half || (rest == half && (q & 1u)))
    q++; /* may carry into the smallest normal, whose bits follow on */
  return (uint16_t)(sign | q);
}

float clnorm_ref_f16_value(uint16_t bits) {
  const uint32_t sign = (uint32_t)(bits & 0x8000u) << 16;
  const uint32_t exponent = (bits >> 10) & 0x1Fu, mantissa = bits & 0x3FFu;
  if (exponent == 0) { /* zero or subnormal: mantissa * 2^-24, exact in float */
    const float v = (float)mantissa * (1.0f / 16777216.0f);
    return sign ? -v : v;
  }
  if (exponent == 31)
    return bits_float(sign | 0x7F800000u | (mantissa << 13));
  return bits_float(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

uint16_t clnorm_ref_bf16_bits(float v) {
  const uint32_t b = float_bits(v);
  if ((b & 0x7FFFFFFFu) > 0x7F800000u) /* NaN: quiet, sign and top of the payload kept */
    return (uint16_t)((b >> 16) | 0x0040u);
  /* ties to even; the largest finite values carry into the exponent and give Inf */
  return (uint16_t)((b + 0x7FFFu + ((b >> 16) & 1u)) >> 16);
}

float clnorm_ref_bf16_value(uint16_t bits) { return bits_float((uint32_t)bits << 16); }

/* Fraction bits and the exponent of the smallest normal of each storage type. */
static void dtype_format(int dtype, int *fraction, int *min_exp, double *max_finite) {
  if (dtype == CLNORM_REF_F16) {
    *fraction = 10;
    *min_exp = -14;
    *max_finite = 65504.0;
  } else if (dtype == CLNORM_REF_BF16) {
    *fraction = 7;
    *min_exp = -126;
    *max_finite = ldexp(255.0 / 128.0, 127);
  } else {
    *fraction = 23;
    *min_exp = -126;
    *max_finite = FLT_MAX;
  }
}

double clnorm_ref_ulp(double v, int dtype) {
  int fraction, min_exp;
  double max_finite;
  dtype_format(dtype, &fraction, &min_exp, &max_finite);
  int e = min_exp;
  if (isfinite(v) && v != 0.0) {
    int f_exp;
    frexp(fabs(v), &f_exp); /* |v| = f * 2^f_exp, f in [0.5, 1) */
    e = f_exp - 1 > min_exp ? f_exp - 1 : min_exp;
  }
  return ldexp(1.0, e - fraction);
}

double clnorm_ref_round(double v, int dtype) {
  if (!isfinite(v) || v == 0.0)
    return v;
  int fraction, min_exp;
  double max_finite;
  dtype_format(dtype, &fraction, &min_exp, &max_finite);
  const double q = clnorm_ref_ulp(v, dtype);
  /* v / q is exact (q is a power of two); rint rounds ties to even in the default mode */
  const double r = rint(v / q) * q;
  return fabs(r) > max_finite ? copysign(INFINITY, v) : r;
}

float clnorm_ref_store(float v, int dtype) {
  if (dtype == CLNORM_REF_F16)
    return clnorm_ref_f16_value(clnorm_ref_f16_bits(v));
  if (dtype == CLNORM_REF_BF16)
    return clnorm_ref_bf16_value(clnorm_ref_bf16_bits(v));
  return v;
}

size_t clnorm_ref_dtype_size(int dtype) { return dtype == CLNORM_REF_F32 ? 4 : 2; }

void clnorm_ref_pack(int dtype, const float *src, size_t n, void *dst) {
  if (dtype == CLNORM_REF_F32) {
    memcpy(dst, src, n * sizeof(float));
    return;
  }
  uint16_t *d = dst;
  for (size_t i = 0; i < n; i++)
    d[i] = dtype == CLNORM_REF_F16 ? clnorm_ref_f16_bits(src[i]) : clnorm_ref_bf16_bits(src[i]);
}

void clnorm_ref_unpack(int dtype, const void *src, size_t n, float *dst) {
  if (dtype == CLNORM_REF_F32) {
    memcpy(dst, src, n * sizeof(float));
    return;
  }
  const uint16_t *s = src;
  for (size_t i = 0; i < n; i++)
    dst[i] = dtype == CLNORM_REF_F16 ? clnorm_ref_f16_value(s[i]) : clnorm_ref_bf16_value(s[i]);
}

double clnorm_ref_scaled_error(size_t n, const float *got, const double *ref, int dtype,
                               double ulps, double rel) {
  double scale = 0.0;
  for (size_t i = 0; i < n; i++)
    if (isfinite(ref[i]) && fabs(ref[i]) > scale)
      scale = fabs(ref[i]);
  if (scale < FLT_MIN)
    scale = FLT_MIN;
  double worst = 0.0;
  for (size_t i = 0; i < n; i++) {
    if (isnan(ref[i])) {
      if (!isnan(got[i]))
        return INFINITY;
      continue;
    }
    if (!isfinite(got[i]))
      return INFINITY;
    const double allowance = ulps * clnorm_ref_ulp(ref[i], dtype) + rel * scale;
    const double e = fabs((double)got[i] - ref[i]) / allowance;
    if (e > worst)
      worst = e;
  }
  return worst;
}

double clnorm_ref_dtype_ulps(int dtype) { return dtype == CLNORM_REF_F32 ? 0.0 : 1.0; }

double clnorm_ref_dx_scale(size_t cols, const double *ref, const float *dy, const float *gamma,
                           float rstd) {
  double m = 0.0, gmax = 0.0;
  for (size_t i = 0; i < cols; i++) {
    const double g = fabs((gamma ? (double)gamma[i] : 1.0) * (double)dy[i]);
    m = fabs(ref[i]) > m ? fabs(ref[i]) : m;
    gmax = g > gmax ? g : gmax;
  }
  const double terms = (double)rstd * gmax;
  const double scale = (terms > m ? terms : m) / (m > FLT_MIN ? m : FLT_MIN);
  return isfinite(scale) && scale > 0.0 ? scale : 1.0;
}

double clnorm_ref_dx_error(size_t cols, const float *got, const double *ref, int dtype,
                           const float *dy, const float *gamma, float rstd) {
  return clnorm_ref_scaled_error(cols, got, ref, dtype, clnorm_ref_dtype_ulps(dtype),
                                 CLNORM_TOL_BWD * clnorm_ref_dx_scale(cols, ref, dy, gamma, rstd));
}

void clnorm_ref_add(size_t rows, size_t cols, int dtype, const float *x, size_t x_stride,
                    const float *res, size_t res_stride, float *h) {
  for (size_t r = 0; r < rows; r++)
    for (size_t i = 0; i < cols; i++) {
      /* float32 addition, as the kernels do it (volatile: no wider evaluation, no fusing) */
      volatile float sum = x[r * x_stride + i] + res[r * res_stride + i];
      h[r * cols + i] = clnorm_ref_store(sum, dtype);
    }
}

void clnorm_ref_add_layernorm(size_t rows, size_t cols, int dtype, const float *x, size_t x_stride,
                              const float *res, size_t res_stride, const float *gamma,
                              const float *beta, double eps, float *h, double *y, double *mean,
                              double *rstd) {
  clnorm_ref_add(rows, cols, dtype, x, x_stride, res, res_stride, h);
  clnorm_ref_layernorm(rows, cols, h, cols, gamma, beta, eps, y, mean, rstd);
}

void clnorm_ref_add_rmsnorm(size_t rows, size_t cols, int dtype, const float *x, size_t x_stride,
                            const float *res, size_t res_stride, const float *gamma, double eps,
                            float *h, double *y, double *rstd) {
  clnorm_ref_add(rows, cols, dtype, x, x_stride, res, res_stride, h);
  clnorm_ref_rmsnorm(rows, cols, h, cols, gamma, eps, y, rstd);
}

static void ref_backward(int rms, size_t rows, size_t cols, const float *dy, size_t dy_stride,
                         const float *x, size_t x_stride, const float *gamma, const float *mean,
                         const float *rstd, double *dx, double *dgamma, double *dbeta) {
  for (size_t i = 0; i < cols; i++) {
    if (dgamma)
      dgamma[i] = 0.0;
    if (dbeta)
      dbeta[i] = 0.0;
  }
  for (size_t r = 0; r < rows; r++) {
    const float *xr = x + r * x_stride, *dyr = dy + r * dy_stride;
    const double m = rms ? 0.0 : (double)mean[r], rs = (double)rstd[r];
    double sum_g = 0.0, sum_gx = 0.0;
    for (size_t i = 0; i < cols; i++) {
      const double g = (gamma ? (double)gamma[i] : 1.0) * (double)dyr[i];
      sum_g += g;
      sum_gx += g * (((double)xr[i] - m) * rs);
    }
    const double c1 = sum_gx / (double)cols, c2 = rms ? 0.0 : sum_g / (double)cols;
    for (size_t i = 0; i < cols; i++) {
      const double xhat = ((double)xr[i] - m) * rs;
      const double g = (gamma ? (double)gamma[i] : 1.0) * (double)dyr[i];
      dx[r * cols + i] = rs * (g - c2 - xhat * c1);
      if (dgamma)
        dgamma[i] += (double)dyr[i] * xhat;
      if (dbeta)
        dbeta[i] += (double)dyr[i];
    }
  }
}

void clnorm_ref_layernorm_backward(size_t rows, size_t cols, const float *dy, size_t dy_stride,
                                   const float *x, size_t x_stride, const float *gamma,
                                   const float *mean, const float *rstd, double *dx, double *dgamma,
                                   double *dbeta) {
  ref_backward(0, rows, cols, dy, dy_stride, x, x_stride, gamma, mean, rstd, dx, dgamma, dbeta);
}

void clnorm_ref_rmsnorm_backward(size_t rows, size_t cols, const float *dy, size_t dy_stride,
                                 const float *x, size_t x_stride, const float *gamma,
                                 const float *rstd, double *dx, double *dgamma) {
  ref_backward(1, rows, cols, dy, dy_stride, x, x_stride, gamma, NULL, rstd, dx, dgamma, NULL);
}

void clnorm_rng_seed(clnorm_rng *rng, uint64_t seed) { rng->state = seed; }

uint64_t clnorm_rng_next(clnorm_rng *rng) {
  uint64_t z = (rng->state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

double clnorm_rng_uniform(clnorm_rng *rng) {
  return (double)(clnorm_rng_next(rng) >> 11) * (1.0 / 9007199254740992.0);
}

double clnorm_rng_normal(clnorm_rng *rng) {
  const double u1 = 1.0 - clnorm_rng_uniform(rng); /* (0, 1] */
  const double u2 = clnorm_rng_uniform(rng);
  return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}
