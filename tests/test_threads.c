/* 8 threads share one clnorm context, each with its own queue: 200 calls each, mixing ops,
 * shapes and forced variants (so programs are built concurrently); every result is checked
 * against the float64 reference (y 1e-5 of the row's largest |y|). */
#include "harness.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define THREADS 8
#define CALLS 200

static harness h;
static clnorm_variant *vars[2];
static size_t nvars[2];

typedef struct job {
  int id, failures;
} job;

static void *worker(void *arg) {
  job *j = arg;
  cl_int e;
  cl_command_queue q = clCreateCommandQueue(h.context, h.device, 0, &e);
  clnorm_rng rng;
  clnorm_rng_seed(&rng, 1000u + (unsigned)j->id);
  for (int i = 0; i < CALLS && j->failures < 3; i++) {
    const clnorm_op op = (i + j->id) % 2 ? CLNORM_OP_RMSNORM : CLNORM_OP_LAYERNORM;
    static const size_t cols_set[] = {7, 64, 256, 768, 1000, 4096};
    const size_t cols = cols_set[clnorm_rng_next(&rng) % 6];
    const size_t rows = 1 + clnorm_rng_next(&rng) % 40;
    const size_t n = rows * cols;
    float *x = malloc(n * 4), *y = malloc(n * 4);
    double *ref = malloc(n * sizeof(double)), *rs = malloc(rows * sizeof(double));
    harness_random(&rng, x, n, 0.0);
    cl_mem xb = clCreateBuffer(h.context, CL_MEM_COPY_HOST_PTR, n * 4, x, &e);
    cl_mem yb = clCreateBuffer(h.context, CL_MEM_READ_WRITE, n * 4, NULL, &e);
    const float nan = NAN;
    clEnqueueFillBuffer(q, yb, &nan, 4, 0, n * 4, 0, NULL, NULL);
    const clnorm_call call = {op, rows, cols, CLNORM_F32, 1e-5f, {xb, 0, 0}, {yb, 0, 0},
                              NULL, NULL, NULL, NULL};
    /* every third call forces a random variant that takes the call */
    const clnorm_variant *v = NULL;
    if (i % 3 == 0) {
      for (int tries = 0; tries < 20 && !v; tries++) {
        const clnorm_variant *cand = &vars[op][clnorm_rng_next(&rng) % nvars[op]];
        if (clnorm_variant_check(h.ctx, &call, cand) == CLNORM_OK)
          v = cand;
      }
    }
    clnorm_status st = clnorm_run(h.ctx, q, &call, v, 0, NULL, NULL);
    if (st == CLNORM_OK && clEnqueueReadBuffer(q, yb, CL_TRUE, 0, n * 4, y, 0, NULL, NULL)) {
      st = CLNORM_E_OPENCL;
    }
    if (st != CLNORM_OK) {
      printf("FAIL: thread %d call %d: %s: %s\n", j->id, i, clnorm_status_string(st),
             clnorm_ctx_errmsg(h.ctx));
      j->failures++;
    } else {
      if (op == CLNORM_OP_LAYERNORM)
        clnorm_ref_layernorm(rows, cols, x, cols, NULL, NULL, 1e-5, ref, NULL, rs);
      else
        clnorm_ref_rmsnorm(rows, cols, x, cols, NULL, 1e-5, ref, rs);
      for (size_t r = 0; r < rows; r++) {
        const double err = clnorm_ref_row_error(cols, y + r * cols, ref + r * cols);
        if (!(err <= 1e-5)) {
          printf("FAIL: thread %d call %d rows=%zu cols=%zu row %zu: error %.3g\n", j->id, i,
                 rows, cols, r, err);
          j->failures++;
          break;
        }
      }
    }
    clReleaseMemObject(xb);
    clReleaseMemObject(yb);
    free(x);
    free(y);
    free(ref);
    free(rs);
  }
  clReleaseCommandQueue(q);
  return NULL;
}

int main(void) {
  harness_open(&h, "test_threads");
  for (int o = 0; o < 2; o++) {
    nvars[o] = clnorm_variant_list(h.ctx, (clnorm_op)o, NULL, 0);
    vars[o] = malloc(nvars[o] * sizeof *vars[o]);
    clnorm_variant_list(h.ctx, (clnorm_op)o, vars[o], nvars[o]);
  }
  pthread_t tid[THREADS];
  job jobs[THREADS];
  for (int t = 0; t < THREADS; t++) {
    jobs[t].id = t;
    jobs[t].failures = 0;
    pthread_create(&tid[t], NULL, worker, &jobs[t]);
  }
  int failures = 0;
  for (int t = 0; t < THREADS; t++) {
    pthread_join(tid[t], NULL);
    failures += jobs[t].failures;
  }
  free(vars[0]);
  free(vars[1]);
  harness_close(&h);
  printf("test_threads: %d threads x %d calls: %s (%d failures)\n", THREADS, CALLS,
         failures ? "FAIL" : "PASS", failures);
  return failures ? 1 : 0;
}
