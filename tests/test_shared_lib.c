/* The shared library as users link it: clnorm_version() is "MAJOR.MINOR.PATCH" and matches the
 * header, the public functions come from libclnorm.so (not a static copy), internal clnorm__
 * symbols are hidden, and one small LayerNorm and RMSNorm are right (y 1e-5 of the row's
 * largest |y|, rstd 1e-5 relative, mean 1e-5 of |mean| + standard deviation). */
#define _GNU_SOURCE
#include "harness.h"

#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void check_version(void) {
  const char *v = clnorm_version();
  unsigned major, minor, patch;
  char tail;
  if (!v || sscanf(v, "%u.%u.%u%c", &major, &minor, &patch, &tail) != 3) {
    harness_fail("clnorm_version() is \"%s\", not MAJOR.MINOR.PATCH", v ? v : "(null)");
    return;
  }
  if (major != CLNORM_VERSION_MAJOR || minor != CLNORM_VERSION_MINOR ||
      patch != CLNORM_VERSION_PATCH)
    harness_fail("clnorm_version() is %s but clnorm.h says %d.%d.%d", v, CLNORM_VERSION_MAJOR,
                 CLNORM_VERSION_MINOR, CLNORM_VERSION_PATCH);
  printf("  clnorm_version() = %s\n", v);
}

static void check_linkage(void) {
  Dl_info info;
  if (!dladdr((void *)(size_t)&clnorm_version, &info) || !info.dli_fname) {
    harness_fail("dladdr cannot place clnorm_version");
    return;
  }
  if (!strstr(info.dli_fname, "libclnorm.so"))
    harness_fail("clnorm_version comes from %s, not libclnorm.so", info.dli_fname);
  printf("  clnorm_version is in %s\n", info.dli_fname);
  void *self = dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD);
  if (!self) {
    harness_fail("dlopen(%s, RTLD_NOLOAD) failed: %s", info.dli_fname, dlerror());
    return;
  }
  if (!dlsym(self, "clnorm_layernorm") || !dlsym(self, "clnorm_run"))
    harness_fail("public symbols are not exported by %s", info.dli_fname);
  static const char *const internal[] = {"clnorm__validate", "clnorm__fail", "clnorm__heuristic",
                                         "clnorm__program_get"};
  for (size_t i = 0; i < sizeof internal / sizeof internal[0]; i++)
    if (dlsym(self, internal[i]))
      harness_fail("internal symbol %s is exported by %s", internal[i], info.dli_fname);
  dlclose(self);
}

static void check_small(harness *h, clnorm_op op) {
  enum { ROWS = 5, COLS = 300 };
  static float x[ROWS * COLS], gamma[COLS], beta[COLS], y[ROWS * COLS], mean[ROWS], rstd[ROWS];
  static double ref_y[ROWS * COLS], ref_mean[ROWS], ref_rstd[ROWS];
  clnorm_rng rng;
  clnorm_rng_seed(&rng, 11);
  harness_random(&rng, x, ROWS * COLS, 0.0);
  for (size_t i = 0; i < COLS; i++) {
    gamma[i] = (float)(0.5 + clnorm_rng_uniform(&rng));
    beta[i] = (float)(clnorm_rng_uniform(&rng) - 0.5);
  }
  cl_mem xb = harness_buffer(h, sizeof x, x), yb = harness_buffer(h, sizeof y, NULL);
  cl_mem gb = harness_buffer(h, sizeof gamma, gamma), bb = harness_buffer(h, sizeof beta, beta);
  cl_mem mb = harness_buffer(h, sizeof mean, NULL), rb = harness_buffer(h, sizeof rstd, NULL);
  harness_fill(h, yb, sizeof y, NAN);
  harness_fill(h, mb, sizeof mean, NAN);
  harness_fill(h, rb, sizeof rstd, NAN);
  const clnorm_rows xr = {xb, 0, 0}, yr = {yb, 0, 0};
  cl_event done = NULL;
  clnorm_status st;
  if (op == CLNORM_OP_LAYERNORM) {
    st = clnorm_layernorm(h->ctx, h->queue, ROWS, COLS, CLNORM_F32, 1e-5f, xr, gb, bb, yr, mb, rb,
                          0, NULL, &done);
    clnorm_ref_layernorm(ROWS, COLS, x, COLS, gamma, beta, 1e-5, ref_y, ref_mean, ref_rstd);
  } else {
    st = clnorm_rmsnorm(h->ctx, h->queue, ROWS, COLS, CLNORM_F32, 1e-5f, xr, gb, yr, rb, 0, NULL,
                        &done);
    clnorm_ref_rmsnorm(ROWS, COLS, x, COLS, gamma, 1e-5, ref_y, ref_rstd);
  }
  const char *name = op == CLNORM_OP_LAYERNORM ? "layernorm" : "rmsnorm";
  if (st != CLNORM_OK) {
    harness_fail("%s rows=%d cols=%d: %s: %s", name, ROWS, COLS, clnorm_status_string(st),
                 clnorm_ctx_errmsg(h->ctx));
  } else {
    if (clWaitForEvents(1, &done) != CL_SUCCESS)
      harness_fail("%s: the call's event did not complete", name);
    clReleaseEvent(done);
    harness_read(h, yb, sizeof y, y);
    harness_read(h, mb, sizeof mean, mean);
    harness_read(h, rb, sizeof rstd, rstd);
    double worst = 0.0;
    for (size_t r = 0; r < ROWS; r++) {
      const double ey = clnorm_ref_row_error(COLS, y + r * COLS, ref_y + r * COLS);
      const double er = clnorm_ref_rel_error(rstd[r], ref_rstd[r]);
      double em = 0.0;
      if (op == CLNORM_OP_LAYERNORM)
        em = fabs((double)mean[r] - ref_mean[r]) / (fabs(ref_mean[r]) + 1.0 / ref_rstd[r]);
      if (!(ey <= 1e-5 && er <= 1e-5 && em <= 1e-5))
        harness_fail("%s rows=%d cols=%d row %zu: error y %.3g mean %.3g rstd %.3g", name, ROWS,
                     COLS, r, ey, em, er);
      worst = ey > worst ? ey : worst;
    }
    printf("  %s rows=%d cols=%d: worst y error %.3g\n", name, ROWS, COLS, worst);
  }
  clReleaseMemObject(xb);
  clReleaseMemObject(yb);
  clReleaseMemObject(gb);
  clReleaseMemObject(bb);
  clReleaseMemObject(mb);
  clReleaseMemObject(rb);
}

int main(void) {
  harness h;
  harness_open(&h, "test_shared_lib");
  check_version();
  check_linkage();
  check_small(&h, CLNORM_OP_LAYERNORM);
  check_small(&h, CLNORM_OP_RMSNORM);
  harness_close(&h);
  printf("test_shared_lib: %s (%d failures)\n", harness_failures ? "FAIL" : "PASS",
         harness_failures);
  return harness_failures ? 1 : 0;
}
