/* 8 threads share one clnorm context, each with its own queue: 200 calls each, mixing ops,
 * shapes, optional gamma/beta/mean/rstd, the dispatcher and forced variants (a pool of variants
 * spread over the list, none built beforehand, so threads build the same and different programs
 * at the same moment). Every result is checked against the float64 reference:
 *   y:    max |y - ref| / max(max |ref| of the row, FLT_MIN) <= 1e-5 per row
 *   mean: |mean - ref| <= 1e-5 * (|ref mean| + 1 / ref rstd); rstd: relative error <= 1e-5
 * Outputs not asked for (mean, rstd NULL) must stay untouched. */
#define _POSIX_C_SOURCE 200809L
#include "harness.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define THREADS 8
#define CALLS 200
#define POOL 12 /* forced variants per op */
#define MAX_ROWS 40

static harness h;
static clnorm_variant pool[2][POOL];
static size_t pool_size[2];
static pthread_barrier_t start;

typedef struct job {
  int id, failures;
  size_t forced, rejected;
} job;

static const char *op_text(clnorm_op op) {
  return op == CLNORM_OP_LAYERNORM ? "layernorm" : "rmsnorm";
}

static void *worker(void *arg) {
  job *j = arg;
  cl_int e;
  cl_command_queue q = clCreateCommandQueue(h.context, h.device, 0, &e);
  if (e != CL_SUCCESS) {
    printf("FAIL: thread %d: clCreateCommandQueue: %d\n", j->id, (int)e);
    j->failures++;
    pthread_barrier_wait(&start);
    return NULL;
  }
  clnorm_rng rng;
  clnorm_rng_seed(&rng, 1000u + (unsigned)j->id);
  pthread_barrier_wait(&start); /* all threads call at once: concurrent builds */
  for (int i = 0; i < CALLS && j->failures < 3; i++) {
    const clnorm_op op = (i + j->id) % 2 ? CLNORM_OP_RMSNORM : CLNORM_OP_LAYERNORM;
    static const size_t cols_set[] = {7, 64, 256, 768, 1000, 4096};
    const size_t cols = cols_set[clnorm_rng_next(&rng) % 6];
    const size_t rows = 1 + clnorm_rng_next(&rng) % MAX_ROWS;
    const size_t n = rows * cols;
    const unsigned opts = (unsigned)(clnorm_rng_next(&rng) % 8); /* gamma/beta, mean, rstd */
    float *x = malloc(n * 4), *y = malloc(n * 4), *gamma = malloc(cols * 4),
          *beta = malloc(cols * 4), mean[MAX_ROWS], rstd[MAX_ROWS];
    double *ref = malloc(n * sizeof(double)), ref_mean[MAX_ROWS], ref_rstd[MAX_ROWS];
    harness_random(&rng, x, n, 0.0);
    for (size_t c = 0; c < cols; c++) {
      gamma[c] = (float)(0.5 + clnorm_rng_uniform(&rng));
      beta[c] = (float)(clnorm_rng_uniform(&rng) - 0.5);
    }
    cl_mem xb = clCreateBuffer(h.context, CL_MEM_COPY_HOST_PTR, n * 4, x, NULL);
    cl_mem yb = clCreateBuffer(h.context, CL_MEM_READ_WRITE, n * 4, NULL, NULL);
    cl_mem gb = clCreateBuffer(h.context, CL_MEM_COPY_HOST_PTR, cols * 4, gamma, NULL);
    cl_mem bb = clCreateBuffer(h.context, CL_MEM_COPY_HOST_PTR, cols * 4, beta, NULL);
    cl_mem mb = clCreateBuffer(h.context, CL_MEM_READ_WRITE, MAX_ROWS * 4, NULL, NULL);
    cl_mem rb = clCreateBuffer(h.context, CL_MEM_READ_WRITE, MAX_ROWS * 4, NULL, NULL);
    const float nan = NAN;
    clEnqueueFillBuffer(q, yb, &nan, 4, 0, n * 4, 0, NULL, NULL);
    clEnqueueFillBuffer(q, mb, &nan, 4, 0, MAX_ROWS * 4, 0, NULL, NULL);
    clEnqueueFillBuffer(q, rb, &nan, 4, 0, MAX_ROWS * 4, 0, NULL, NULL);
    const int affine = opts & 1, want_mean = op == CLNORM_OP_LAYERNORM && (opts & 2),
              want_rstd = (opts & 4) != 0;
    const clnorm_call call = {.op = op,
                              .rows = rows,
                              .cols = cols,
                              .dtype = CLNORM_F32,
                              .eps = 1e-5f,
                              .x = {xb, 0, 0},
                              .y = {yb, 0, 0},
                              .gamma = affine ? gb : NULL,
                              .beta = affine && op == CLNORM_OP_LAYERNORM ? bb : NULL,
                              .mean = want_mean ? mb : NULL,
                              .rstd = want_rstd ? rb : NULL};
    /* every third call forces a variant of the pool that takes the call */
    const clnorm_variant *v = NULL;
    if (i % 3 == 0 && pool_size[op]) {
      for (int tries = 0; tries < 8 && !v; tries++) {
        const clnorm_variant *cand = &pool[op][clnorm_rng_next(&rng) % pool_size[op]];
        if (clnorm_variant_check(h.ctx, &call, cand) == CLNORM_OK)
          v = cand;
        else
          j->rejected++;
      }
      j->forced += v != NULL;
    }
    char text[128] = "dispatcher";
    if (v)
      clnorm_variant_format(v, text, sizeof text);
    clnorm_status st = clnorm_run(h.ctx, q, &call, v, 0, NULL, NULL);
    if (st == CLNORM_OK &&
        (clEnqueueReadBuffer(q, yb, CL_TRUE, 0, n * 4, y, 0, NULL, NULL) != CL_SUCCESS ||
         clEnqueueReadBuffer(q, mb, CL_TRUE, 0, rows * 4, mean, 0, NULL, NULL) != CL_SUCCESS ||
         clEnqueueReadBuffer(q, rb, CL_TRUE, 0, rows * 4, rstd, 0, NULL, NULL) != CL_SUCCESS))
      st = CLNORM_E_OPENCL;
    if (st != CLNORM_OK) {
      printf("FAIL: thread %d call %d %s [%s] rows=%zu cols=%zu: %s: %s\n", j->id, i, op_text(op),
             text, rows, cols, clnorm_status_string(st), clnorm_ctx_errmsg(h.ctx));
      j->failures++;
    } else {
      if (op == CLNORM_OP_LAYERNORM)
        clnorm_ref_layernorm(rows, cols, x, cols, affine ? gamma : NULL, affine ? beta : NULL, 1e-5,
                             ref, ref_mean, ref_rstd);
      else
        clnorm_ref_rmsnorm(rows, cols, x, cols, affine ? gamma : NULL, 1e-5, ref, ref_rstd);
      for (size_t r = 0; r < rows; r++) {
        const double ey = clnorm_ref_row_error(cols, y + r * cols, ref + r * cols);
        const double er = want_rstd ? clnorm_ref_rel_error(rstd[r], ref_rstd[r]) : 0.0;
        const double em = want_mean ? fabs((double)mean[r] - ref_mean[r]) /
                                          (fabs(ref_mean[r]) + 1.0 / ref_rstd[r])
                                    : 0.0;
        if (!(ey <= 1e-5 && er <= 1e-5 && em <= 1e-5)) {
          printf("FAIL: thread %d call %d %s [%s] rows=%zu cols=%zu row %zu: error y %.3g "
                 "mean %.3g rstd %.3g\n",
                 j->id, i, op_text(op), text, rows, cols, r, ey, em, er);
          j->failures++;
          break;
        }
      }
      for (size_t r = 0; r < rows; r++) /* not asked for: still the poison */
        if ((!want_mean && !isnan(mean[r])) || (!want_rstd && !isnan(rstd[r]))) {
          printf("FAIL: thread %d call %d %s [%s]: wrote mean or rstd though not asked\n", j->id, i,
                 op_text(op), text);
          j->failures++;
          break;
        }
    }
    clReleaseMemObject(xb);
    clReleaseMemObject(yb);
    clReleaseMemObject(gb);
    clReleaseMemObject(bb);
    clReleaseMemObject(mb);
    clReleaseMemObject(rb);
    free(x);
    free(y);
    free(gamma);
    free(beta);
    free(ref);
  }
  clReleaseCommandQueue(q);
  return NULL;
}

int main(void) {
  harness_open(&h, "test_threads");
  for (int o = 0; o < 2; o++) {
    const size_t nv = clnorm_variant_list(h.ctx, (clnorm_op)o, CLNORM_F32, NULL, 0);
    clnorm_variant *all = malloc((nv ? nv : 1) * sizeof *all);
    clnorm_variant_list(h.ctx, (clnorm_op)o, CLNORM_F32, all, nv);
    /* spread over the list, which runs from small to large work-groups */
    pool_size[o] = nv < POOL ? nv : POOL;
    for (size_t p = 0; p < pool_size[o]; p++)
      pool[o][p] = all[(p * nv + nv / 2) / pool_size[o]];
    free(all);
    if (nv == 0)
      harness_fail("no %s variants listed", op_text((clnorm_op)o));
  }
  pthread_barrier_init(&start, NULL, THREADS);
  pthread_t tid[THREADS];
  job jobs[THREADS];
  for (int t = 0; t < THREADS; t++) {
    memset(&jobs[t], 0, sizeof jobs[t]);
    jobs[t].id = t;
    pthread_create(&tid[t], NULL, worker, &jobs[t]);
  }
  int failures = harness_failures;
  size_t forced = 0, rejected = 0;
  for (int t = 0; t < THREADS; t++) {
    pthread_join(tid[t], NULL);
    failures += jobs[t].failures;
    forced += jobs[t].forced;
    rejected += jobs[t].rejected;
  }
  pthread_barrier_destroy(&start);
  harness_close(&h);
  printf("test_threads: %d threads x %d calls, %zu with a forced variant (pool of %zu + %zu), "
         "%zu pool variants rejected by variant_check: %s (%d failures)\n",
         THREADS, CALLS, forced, pool_size[0], pool_size[1], rejected, failures ? "FAIL" : "PASS",
         failures);
  return failures ? 1 : 0;
}
