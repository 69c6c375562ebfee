#include "ref.h"

#include <float.h>
#include <math.h>

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
