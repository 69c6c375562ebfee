/* Every variant the device accepts, on the cols and rows sets of the core issue, against the
 * float64 reference. Usage: test_variants layernorm|rmsnorm.
 * Tolerances (measures in harness.h): y 1e-5 of the row's largest |y|; mean 1e-5 of
 * |mean| + standard deviation; rstd 1e-5 relative.
 * Trimmed for time, never by family: rows 1000 only for cols <= 4097; cols >= 65536 only with
 * rows 1 and 3. */
#include "harness.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const size_t cols_set[] = {1,    2,    3,    7,    31,   32,    33,    127,    128,
                                  768,  1000, 1024, 2880, 3584, 4096,  4097,  65536, 1048577};
static const size_t rows_set[] = {1, 3, 64, 1000};

typedef struct prebuild {
  harness *h;
  const clnorm_call *call;
  const clnorm_variant *v;
  size_t n, next;
  pthread_mutex_t lock;
} prebuild;

/* Building is most of the cost on slow compilers: build every variant on all cores first. */
static void *prebuild_worker(void *arg) {
  prebuild *pb = arg;
  for (;;) {
    pthread_mutex_lock(&pb->lock);
    const size_t i = pb->next++;
    pthread_mutex_unlock(&pb->lock);
    if (i >= pb->n)
      return NULL;
    clnorm_variant_check(pb->h->ctx, pb->call, &pb->v[i]);
  }
}

int main(int argc, char **argv) {
  const clnorm_op op = argc > 1 && strcmp(argv[1], "rmsnorm") == 0 ? CLNORM_OP_RMSNORM
                                                                    : CLNORM_OP_LAYERNORM;
  const char *op_name = op == CLNORM_OP_LAYERNORM ? "layernorm" : "rmsnorm";
  char title[64];
  snprintf(title, sizeof title, "test_variants %s", op_name);
  harness h;
  harness_open(&h, title);
  const size_t nv = clnorm_variant_list(h.ctx, op, NULL, 0);
  clnorm_variant *vars = malloc(nv * sizeof *vars);
  clnorm_variant_list(h.ctx, op, vars, nv);
  if (nv == 0)
    harness_fail("no variants listed for %s", op_name);

  {
    cl_mem probe = harness_buffer(&h, 4096 * 4, NULL);
    const clnorm_call call = {op, 1, 4096, CLNORM_F32, 1e-5f, {probe, 0, 0}, {probe, 0, 0},
                              NULL, NULL, NULL, NULL};
    prebuild pb = {&h, &call, vars, nv, 0, PTHREAD_MUTEX_INITIALIZER};
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    size_t threads = cpus > 1 ? (size_t)cpus : 1;
    threads = threads > 16 ? 16 : threads;
    pthread_t tid[16];
    for (size_t t = 0; t < threads; t++)
      pthread_create(&tid[t], NULL, prebuild_worker, &pb);
    for (size_t t = 0; t < threads; t++)
      pthread_join(tid[t], NULL);
    clReleaseMemObject(probe);
  }

  size_t runs = 0, rejected = 0, shapes = 0;
  double worst_y = 0, worst_mean = 0, worst_rstd = 0;
  char reasons[8][200];
  size_t nreasons = 0;
  unsigned char *ran = calloc(nv, 1);
  clnorm_rng rng;
  clnorm_rng_seed(&rng, 42);
  for (size_t ci = 0; ci < sizeof cols_set / sizeof cols_set[0]; ci++)
    for (size_t ri = 0; ri < sizeof rows_set / sizeof rows_set[0]; ri++) {
      const size_t cols = cols_set[ci], rows = rows_set[ri];
      if ((rows == 1000 && cols > 4097) || (cols >= 65536 && rows > 3))
        continue;
      shapes++;
      const size_t n = rows * cols;
      float *x = malloc(n * sizeof(float));
      float *gamma = malloc(cols * sizeof(float)), *beta = malloc(cols * sizeof(float));
      double *ref_y = malloc(n * sizeof(double));
      double *ref_mean = malloc(rows * sizeof(double)), *ref_rstd = malloc(rows * sizeof(double));
      harness_random(&rng, x, n, 0.0);
      for (size_t i = 0; i < cols; i++) {
        gamma[i] = (float)(0.5 + clnorm_rng_uniform(&rng));
        beta[i] = (float)(clnorm_rng_uniform(&rng) - 0.5);
      }
      /* gamma/beta given on some shapes, NULL (ones/zeros) on others; mean NULL on some */
      const int with_affine = (ci + ri) % 2 == 0;
      const int with_mean = op == CLNORM_OP_LAYERNORM && (ci + ri) % 3 != 1;
      if (op == CLNORM_OP_LAYERNORM)
        clnorm_ref_layernorm(rows, cols, x, cols, with_affine ? gamma : NULL,
                             with_affine ? beta : NULL, 1e-5, ref_y, ref_mean, ref_rstd);
      else
        clnorm_ref_rmsnorm(rows, cols, x, cols, with_affine ? gamma : NULL, 1e-5, ref_y,
                           ref_rstd);
      cl_mem xb = harness_buffer(&h, n * 4, x), yb = harness_buffer(&h, n * 4, NULL);
      cl_mem gb = harness_buffer(&h, cols * 4, gamma), bb = harness_buffer(&h, cols * 4, beta);
      cl_mem mb = harness_buffer(&h, rows * 4, NULL), rb = harness_buffer(&h, rows * 4, NULL);
      clnorm_call call = {op, rows, cols, CLNORM_F32, 1e-5f, {xb, 0, 0}, {yb, 0, 0},
                          with_affine ? gb : NULL, NULL, NULL, rb};
      if (op == CLNORM_OP_LAYERNORM) {
        call.beta = with_affine ? bb : NULL;
        call.mean = with_mean ? mb : NULL;
      }
      for (size_t k = 0; k <= nv; k++) {
        const clnorm_variant *v = k < nv ? &vars[k] : NULL; /* and the dispatcher's own */
        if (v) {
          const clnorm_status cs = clnorm_variant_check(h.ctx, &call, v);
          if (cs == CLNORM_E_UNSUPPORTED) {
            rejected++;
            const char *msg = clnorm_ctx_errmsg(h.ctx);
            const char *colon = strrchr(msg, ':');
            int seen = 0;
            for (size_t r = 0; r < nreasons; r++)
              seen |= colon && strcmp(reasons[r], colon) == 0;
            if (!seen && colon && nreasons < 8)
              snprintf(reasons[nreasons++], sizeof reasons[0], "%s", colon);
            continue;
          }
          if (cs != CLNORM_OK) {
            char text[128];
            clnorm_variant_format(v, text, sizeof text);
            harness_fail("%s %s rows=%zu cols=%zu: variant_check %s: %s", op_name, text, rows,
                         cols, clnorm_status_string(cs), clnorm_ctx_errmsg(h.ctx));
            continue;
          }
        }
        errors e;
        int gaps_ok;
        const clnorm_status st = harness_check(&h, &call, v, NULL, n, n, gamma, beta, ref_y,
                                               ref_mean, ref_rstd, &e, &gaps_ok);
        runs++;
        if (v)
          ran[k] = 1;
        char text[128] = "dispatcher";
        if (v)
          clnorm_variant_format(v, text, sizeof text);
        if (st != CLNORM_OK) {
          harness_fail("%s %s rows=%zu cols=%zu: %s: %s", op_name, text, rows, cols,
                       clnorm_status_string(st), clnorm_ctx_errmsg(h.ctx));
          continue;
        }
        if (!(e.y <= 1e-5 && e.mean <= 1e-5 && e.rstd <= 1e-5))
          harness_fail("%s %s rows=%zu cols=%zu affine=%d: error y %.3g mean %.3g rstd %.3g",
                       op_name, text, rows, cols, with_affine, e.y, e.mean, e.rstd);
        worst_y = e.y > worst_y ? e.y : worst_y;
        worst_mean = e.mean > worst_mean ? e.mean : worst_mean;
        worst_rstd = e.rstd > worst_rstd ? e.rstd : worst_rstd;
        if (harness_failures > 20) {
          printf("too many failures: stopping\n");
          return 1;
        }
      }
      clReleaseMemObject(xb);
      clReleaseMemObject(yb);
      clReleaseMemObject(gb);
      clReleaseMemObject(bb);
      clReleaseMemObject(mb);
      clReleaseMemObject(rb);
      free(x);
      free(gamma);
      free(beta);
      free(ref_y);
      free(ref_mean);
      free(ref_rstd);
    }
  size_t never = 0;
  for (size_t k = 0; k < nv; k++)
    if (!ran[k]) {
      char text[128];
      clnorm_variant_format(&vars[k], text, sizeof text);
      harness_fail("variant %s ran on no shape", text);
      never++;
    }
  printf("%s: %zu variants, %zu shapes, %zu runs, %zu (variant, shape) pairs rejected by "
         "variant_check, worst error y %.3g mean %.3g rstd %.3g\n",
         title, nv, shapes, runs, rejected, worst_y, worst_mean, worst_rstd);
  for (size_t r = 0; r < nreasons; r++)
    printf("  rejection reason seen:%s\n", reasons[r]);
  free(ran);
  free(vars);
  harness_close(&h);
  printf("%s: %s (%d failures)\n", title, harness_failures ? "FAIL" : "PASS", harness_failures);
  return harness_failures ? 1 : 0;
}
