/* Memory per context: contexts created and destroyed many times, with and without a call, must
 * not grow the process. A context alone must cost nothing that stays; with a call, what stays is
 * the OpenCL runtime's (PoCL keeps the LLVM metadata of every program it loads from a binary and
 * of every kernel it compiles for a launch: about 1.2 kB a cycle on PoCL 3.1, docs/DEVICES.md),
 * bounded here well above that and far below a leaked program or context of clnorm's. Under
 * AddressSanitizer, whose quarantine holds freed memory, the cycles run for LeakSanitizer and the
 * bounds are not checked. The last call's output is checked against the reference. */
#define _POSIX_C_SOURCE 200809L
#include "harness.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#if defined(__SANITIZE_ADDRESS__)
#define ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ASAN 1
#endif
#endif
#ifndef ASAN
#define ASAN 0
#endif

#define ROWS 4
#define COLS 256

static harness h;
static cl_mem xb, yb, rb;

/* Resident memory in kB, after returning the allocator's free pages to the system. */
static long resident_kb(void) {
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
  long pages = 0, resident = 0;
  FILE *f = fopen("/proc/self/statm", "r");
  if (!f || fscanf(f, "%ld %ld", &pages, &resident) != 2) {
    harness_fail("cannot read /proc/self/statm");
    resident = 0;
  }
  if (f)
    fclose(f);
  return resident * 4;
}

static void cycle(int with_call) {
  clnorm_ctx *ctx = NULL;
  clnorm_status st = clnorm_ctx_create(h.context, h.device, &ctx);
  if (st == CLNORM_OK && with_call) {
    const clnorm_rows x = {xb, 0, 0}, y = {yb, 0, 0};
    st = clnorm_rmsnorm(ctx, h.queue, ROWS, COLS, CLNORM_F32, 1e-5f, x, NULL, y, rb, 0, NULL, NULL);
    clFinish(h.queue);
  }
  if (st != CLNORM_OK)
    harness_fail("a cycle failed: %s: %s", clnorm_status_string(st),
                 clnorm_ctx_errmsg(ctx ? ctx : NULL));
  clnorm_ctx_destroy(ctx);
}

/* Runs `warm` cycles, then `count` more; fails when those grew the process by more than
 * `bound_kb` a cycle. */
static void measure(const char *what, int with_call, int warm, int count, double bound_kb) {
  for (int i = 0; i < warm; i++)
    cycle(with_call);
  const long before = resident_kb();
  for (int i = 0; i < count && !harness_failures; i++)
    cycle(with_call);
  const long after = resident_kb();
  const double per_cycle = (double)(after - before) / count;
  printf("%s: %d cycles, resident %ld -> %ld kB, %.3f kB a cycle (bound %.1f%s)\n", what, count,
         before, after, per_cycle, bound_kb, ASAN ? ", not checked under AddressSanitizer" : "");
  if (!ASAN && per_cycle > bound_kb)
    harness_fail("%s: %.3f kB a cycle, more than %.1f", what, per_cycle, bound_kb);
}

int main(void) {
  harness_open(&h, "test_memory");
  float x[ROWS * COLS], y[ROWS * COLS];
  clnorm_rng rng;
  clnorm_rng_seed(&rng, 25);
  harness_random(&rng, x, ROWS * COLS, 0.0);
  xb = harness_buffer(&h, sizeof x, x);
  yb = harness_buffer(&h, sizeof y, NULL);
  rb = harness_buffer(&h, ROWS * sizeof(float), NULL);

  /* 2000 cycles: a page of 4 kB in all is 2 bytes a cycle */
  measure("context alone", 0, 200, 2000, 0.1);
  measure("context and one call", 1, 100, 400, 4.0);

  harness_fill(&h, yb, sizeof y, NAN);
  cycle(1);
  harness_read(&h, yb, sizeof y, y);
  double ref[ROWS * COLS], rstd[ROWS];
  clnorm_ref_rmsnorm(ROWS, COLS, x, COLS, NULL, 1e-5, ref, rstd);
  for (size_t r = 0; r < ROWS; r++) {
    const double err = clnorm_ref_row_error(COLS, y + r * COLS, ref + r * COLS);
    if (!(err <= 1e-5))
      harness_fail("row %zu: error %.3g against the reference (tolerance 1e-5)", r, err);
  }
  clReleaseMemObject(xb);
  clReleaseMemObject(yb);
  clReleaseMemObject(rb);
  harness_close(&h);
  printf("test_memory: %s (%d failures)\n", harness_failures ? "FAIL" : "PASS", harness_failures);
  return harness_failures ? 1 : 0;
}
