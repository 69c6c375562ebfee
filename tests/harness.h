/* Test harness: the device under test, buffers, and checks against the float64 reference. */
#ifndef CLNORM_TEST_HARNESS_H
#define CLNORM_TEST_HARNESS_H

#include "clnorm_variant.h"
#include "ref.h"

#include <stddef.h>

typedef struct harness {
  cl_platform_id platform;
  cl_device_id device;
  cl_context context;
  cl_command_queue queue;
  clnorm_ctx *ctx;
  char name[256];
} harness;

/* Opens the device named by $CLNORM_TEST_DEVICE (a case-insensitive part of the device or
 * platform name, or "gpu"/"cpu"; unset: the first device). Exits with status 1 and a message
 * when no OpenCL platform or device is found: tests fail, never skip, without OpenCL. */
void harness_open(harness *h, const char *test_name);
void harness_close(harness *h);
/* 1 where the context's kernels keep a call's vector width whatever its row alignment
 * (CLNORM_UNALIGNED, CPU devices by default), 0 where the width narrows to the alignment. */
int harness_unaligned(const harness *h);

/* A float32 call of op on rows x cols with eps 1e-5, no buffers. */
clnorm_call harness_call(clnorm_op op, size_t rows, size_t cols);
/* A context on device created while $CLNORM_DB names user_db and, unless system_db is NULL,
 * $CLNORM_SYSTEM_DB names system_db ("" for none): what clnorm_ctx_create loads. Exits with
 * status 1 and a message when the creation fails. */
clnorm_ctx *harness_ctx_with_db(cl_context context, cl_device_id device, const char *user_db,
                                const char *system_db);

cl_mem harness_buffer(harness *h, size_t bytes, const void *host);
void harness_write(harness *h, cl_mem buf, size_t bytes, const void *host);
void harness_read(harness *h, cl_mem buf, size_t bytes, void *host);
void harness_fill(harness *h, cl_mem buf, size_t bytes, float value); /* e.g. NaN poison */

/* Random data: N(0,1) * scale + shift, with scale and shift drawn anew every 97 elements;
 * `offset` adds a common shift (1e4 for the rows where E[x^2] - E[x]^2 fails). */
void harness_random(clnorm_rng *rng, float *x, size_t n_elems, double offset);

/* The errors of one run against the reference, in the measures the tests state:
 *   y:    max over rows of max |y - ref| / max(max |ref| of the row, FLT_MIN)
 *   mean: |mean - ref| / (|ref mean| + 1 / ref rstd)      (relative to |mean| + std dev)
 *   rstd: |rstd - ref| / ref
 * Rows whose reference is NaN must be NaN everywhere; a violation is +INFINITY. */
typedef struct errors {
  double y, mean, rstd;
} errors;

/* Runs `call` (force: a variant, run by clnorm_run; NULL: the dispatcher, through the public
 * clnorm_layernorm / clnorm_rmsnorm) on host data x (rows x cols at
 * x_stride within x_elems elements written to call->x.buf, unless x_host is NULL and x is
 * already there; for in-place calls x_host is required; y poisoned with NaN and its gaps
 * filled with a sentinel first), reads y, mean, rstd back and compares with the reference.
 * Returns the clnorm status; *e receives the errors; *gaps_ok is 0 when an element of y's
 * buffer outside the matrix changed (in place: an element of x's buffer outside the matrix). */
clnorm_status harness_check(harness *h, const clnorm_call *call, const clnorm_variant *force,
                            const float *x_host, size_t x_elems, size_t y_elems, const float *gamma,
                            const float *beta, const double *ref_y, const double *ref_mean,
                            const double *ref_rstd, errors *e, int *gaps_ok);

/* A covering subset of vars[0..n) for CI (test_variants --cover, test_numerics --cover): 1 in the
 * returned array (n entries, to free) for each variant kept. Each value of each parameter (wg,
 * tpr, vec, hold, reduce, stats) beside each value of every other one, and each (wg, tpr, vec),
 * that the list has is in a kept variant; greedy, in list order, so that the same list gives the
 * same subset (and the same programs, which the tests then share through the caches). */
unsigned char *harness_cover_variants(const clnorm_variant *vars, size_t n);

/* Fails the test (counts it, prints the message with the case). */
extern int harness_failures;
void harness_fail(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

#define SENTINEL 12345.5f

#endif
