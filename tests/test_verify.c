/* The verification module (verify/ref.c) that normtune and every test hold results to: its
 * tolerance rules, on rows built by hand. No device: these are the rules themselves.
 *
 * The all-zero dx row is the case the tuner and the tests once measured differently: normtune
 * allowed 1e-4 * FLT_MIN where the reference dx of a row is all zero (cols 1), the tests 1e-4 *
 * rstd * max |gamma * dy|. A kernel's dx of such a row keeps its terms' rounding, so under the
 * old tuner rule `zero_dx_row` below fails; under the one rule all share it passes. */
#include "ref.h"

#include <float.h>
#include <math.h>
#include <stdio.h>

static int failures;

#define EXPECT(cond, ...)                                                                          \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      fprintf(stderr, "test_verify: %s:%d: ", __FILE__, __LINE__);                                 \
      fprintf(stderr, __VA_ARGS__);                                                                \
      fprintf(stderr, "\n");                                                                       \
      failures++;                                                                                  \
    }                                                                                              \
  } while (0)

/* cols 1: dx = rstd * (g - mean(g) - xhat * mean(g * xhat)) is exactly 0 in float64, but a
 * float32 kernel leaves a trace of the terms rstd * gamma * dy. */
static void zero_dx_row(void) {
  const float x = 0.7f, dy = 0.3f, gamma = 1.3f, mean = 0.7f, rstd = 316.2f;
  double ref;
  clnorm_ref_layernorm_backward(1, 1, &dy, 1, &x, 1, &gamma, &mean, &rstd, &ref, NULL, NULL);
  EXPECT(ref == 0.0, "cols 1: reference dx %.17g, not 0", ref);
  const double terms = (double)rstd * (double)gamma * (double)dy;
  const double scale = clnorm_ref_dx_scale(1, &ref, &dy, &gamma, rstd);
  EXPECT(fabs(scale * FLT_MIN - terms) <= 1e-12 * terms, "cols 1: scale %.6g x FLT_MIN, terms %.6g",
         scale, terms);
  /* a trace of 1e-7 of the terms (float32's rounding of a product): within the allowance */
  const float trace = (float)(1e-7 * terms);
  const double err = clnorm_ref_dx_error(1, &trace, &ref, CLNORM_REF_F32, &dy, &gamma, rstd);
  EXPECT(err <= 1.0, "cols 1: dx %.3g against 0 is %.3g of the allowance", trace, err);
  /* the old tuner rule: 1e-4 * max(M, FLT_MIN) with M = 0 */
  const double old = fabs((double)trace) / (CLNORM_TOL_BWD * FLT_MIN);
  EXPECT(old > 1.0, "cols 1: the old tuner rule would pass %.3g (%.3g)", trace, old);
  /* twice the allowance fails */
  const float far = (float)(2.0 * CLNORM_TOL_BWD * terms);
  EXPECT(clnorm_ref_dx_error(1, &far, &ref, CLNORM_REF_F32, &dy, &gamma, rstd) > 1.0,
         "cols 1: dx %.3g passes against 0", far);
  /* gamma NULL: ones */
  const float one = 1.0f;
  EXPECT(clnorm_ref_dx_scale(1, &ref, &dy, NULL, rstd) ==
             clnorm_ref_dx_scale(1, &ref, &dy, &one, rstd),
         "gamma NULL is not gamma 1");
}

/* dy all zero: dx and its terms are 0, so only an exact 0 passes (within 1e-4 * FLT_MIN). */
static void zero_terms_row(void) {
  const float x[2] = {1.0f, -1.0f}, dy[2] = {0.0f, 0.0f}, mean = 0.0f, rstd = 1.0f;
  double ref[2];
  clnorm_ref_layernorm_backward(1, 2, dy, 2, x, 2, NULL, &mean, &rstd, ref, NULL, NULL);
  const float zero[2] = {0.0f, 0.0f}, tiny[2] = {0.0f, 1e-30f};
  EXPECT(clnorm_ref_dx_scale(2, ref, dy, NULL, rstd) == 1.0, "zero terms: scale not 1");
  EXPECT(clnorm_ref_dx_error(2, zero, ref, CLNORM_REF_F32, dy, NULL, rstd) == 0.0,
         "zero terms: exact 0 fails");
  EXPECT(clnorm_ref_dx_error(2, tiny, ref, CLNORM_REF_F32, dy, NULL, rstd) > 1.0,
         "zero terms: 1e-30 passes");
}

/* A row whose terms exceed its dx: the allowance is 1e-4 of the terms, not of dx. */
static void cancelling_row(void) {
  const float x[3] = {1.0f, 3.0f, 2.5f}, dy[3] = {1000.0f, 1000.5f, 999.0f}, mean = 2.0f;
  const float rstd = 1.0f;
  double ref[3];
  clnorm_ref_layernorm_backward(1, 3, dy, 3, x, 3, NULL, &mean, &rstd, ref, NULL, NULL);
  double m = 0.0;
  for (int i = 0; i < 3; i++)
    m = fabs(ref[i]) > m ? fabs(ref[i]) : m;
  EXPECT(m > 1.0 && m < 1000.5, "cancelling: M %.9g", m);
  const double scale = clnorm_ref_dx_scale(3, ref, dy, NULL, rstd);
  EXPECT(fabs(scale * m - 1000.5) <= 1e-9, "cancelling: scale %.9g x M %.9g, terms 1000.5", scale,
         m);
  const float near[3] = {(float)(ref[0] + 0.05), (float)ref[1], (float)ref[2]};
  const float off[3] = {(float)(ref[0] + 0.2), (float)ref[1], (float)ref[2]};
  EXPECT(clnorm_ref_dx_error(3, near, ref, CLNORM_REF_F32, dy, NULL, rstd) <= 1.0,
         "cancelling: 0.05 off fails");
  EXPECT(clnorm_ref_dx_error(3, off, ref, CLNORM_REF_F32, dy, NULL, rstd) > 1.0,
         "cancelling: 0.2 off passes");
}

/* The NaN rules and the 16-bit types' ulp. */
static void nan_and_ulps(void) {
  const double ref[2] = {NAN, 1.0};
  const float dy[2] = {1.0f, 1.0f}, nan_got[2] = {NAN, 1.0f}, num_got[2] = {0.0f, 1.0f};
  EXPECT(clnorm_ref_dx_error(2, nan_got, ref, CLNORM_REF_F32, dy, NULL, 1.0f) == 0.0,
         "NaN where the reference is NaN fails");
  EXPECT(isinf(clnorm_ref_dx_error(2, num_got, ref, CLNORM_REF_F32, dy, NULL, 1.0f)),
         "a number where the reference is NaN passes");
  EXPECT(clnorm_ref_dtype_ulps(CLNORM_REF_F32) == 0.0 &&
             clnorm_ref_dtype_ulps(CLNORM_REF_F16) == 1.0 &&
             clnorm_ref_dtype_ulps(CLNORM_REF_BF16) == 1.0,
         "ulps per dtype");
  const double one = 1.0;
  const float up = clnorm_ref_bf16_value(clnorm_ref_bf16_bits(1.0078125f)), d1 = 1.0f;
  EXPECT(clnorm_ref_dx_error(1, &up, &one, CLNORM_REF_BF16, &d1, NULL, 1.0f) <= 1.0,
         "bfloat16: 1 ulp off fails");
  EXPECT(clnorm_ref_dx_error(1, &up, &one, CLNORM_REF_F32, &d1, NULL, 1.0f) > 1.0,
         "float32: 2^-7 off passes");
}

int main(void) {
  zero_dx_row();
  zero_terms_row();
  cancelling_row();
  nan_and_ulps();
  if (failures) {
    fprintf(stderr, "test_verify: %d failure(s)\n", failures);
    return 1;
  }
  printf("test_verify: ok\n");
  return 0;
}
