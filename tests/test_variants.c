/* Every variant the device accepts, on the cols and rows sets of the core issue, against the
 * float64 reference. Usage: test_variants layernorm|rmsnorm.
 * Tolerances (measures in harness.h), per row:
 *   y:    max |y - ref| / max(max |ref| of the row, FLT_MIN) <= 1e-5
 *   mean: |mean - ref| <= 1e-5 * (|ref mean| + 1 / ref rstd), i.e. of |mean| + std deviation
 *   rstd: |rstd - ref| / ref <= 1e-5
 * Trimmed for time, never by family: rows 1000 only for cols <= 4097; cols >= 65536 only with
 * rows 1 and 3. Every variant runs every shape of up to BIG_ELEMS elements; the larger shapes
 * are shared out among the variants (each variant runs at least BIG_PER_VARIANT of them, each
 * big shape gets every BIG_STEP-th variant plus the dispatcher's choice), and the shapes a
 * variant cannot take are made up by its neighbours in the list, which differ in one parameter.
 * Environment: CLNORM_TEST_QUICK=1 shrinks the sets (development only; the default is the full
 * run); CLNORM_TEST_VERBOSE=1 prints one line per shape; CLNORM_TEST_ALL_BIG=1 runs every big
 * shape with every variant (slow). */
#include "harness.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const size_t cols_full[] = {1,    2,    3,    7,    31,   32,    33,    127,    128,
                                   768,  1000, 1024, 2880, 3584, 4096,  4097,  65536, 1048577};
static const size_t rows_full[] = {1, 3, 64, 1000};
static const size_t cols_quick[] = {1, 7, 33, 128, 1000, 4097, 65536};
static const size_t rows_quick[] = {1, 3, 64};

#define BIG_ELEMS ((size_t)1 << 18) /* shapes above this many elements are "big" */
#define BIG_STEP 3
#define MAX_PRINTED_FAILURES 40
#define MAX_REASONS 12

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct prebuild {
  harness *h;
  clnorm_op op;
  const clnorm_variant *v;
  size_t n, next;
  pthread_mutex_t lock;
} prebuild;

/* Building is most of the cost on slow compilers: build every variant on all cores first, at
 * each vector width a call may narrow it to (cols 1, 2, 4, 8 and 16 give widths 1 to 16). */
static void *prebuild_worker(void *arg) {
  prebuild *pb = arg;
  cl_int e;
  cl_mem probe = clCreateBuffer(pb->h->context, CL_MEM_READ_WRITE, 64 * 4, NULL, &e);
  for (;;) {
    pthread_mutex_lock(&pb->lock);
    const size_t i = pb->next++;
    pthread_mutex_unlock(&pb->lock);
    if (i >= pb->n)
      break;
    for (size_t cols = 1; cols <= 16 && cols <= pb->v[i].vec; cols *= 2) {
      const clnorm_call call = {pb->op, 1,    cols, CLNORM_F32, 1e-5f, {probe, 0, 0},
                                {probe, 32, 0}, NULL, NULL,       NULL,  NULL};
      clnorm_variant_check(pb->h->ctx, &call, &pb->v[i]);
    }
  }
  clReleaseMemObject(probe);
  return NULL;
}

typedef struct tally {
  size_t runs, rejected, failed;
  double worst[3]; /* y, mean, rstd */
  char worst_case[3][200];
  char reasons[MAX_REASONS][240];
  size_t reason_count[MAX_REASONS], nreasons;
} tally;

static void note_reason(tally *t, const char *variant, const char *msg) {
  const char *colon = strrchr(msg, ':');
  const char *reason = colon ? colon + 2 : msg;
  for (size_t r = 0; r < t->nreasons; r++)
    if (strstr(t->reasons[r], reason)) {
      t->reason_count[r]++;
      return;
    }
  if (t->nreasons < MAX_REASONS) {
    snprintf(t->reasons[t->nreasons], sizeof t->reasons[0], "%s (e.g. %s)", reason, variant);
    t->reason_count[t->nreasons++] = 1;
  }
}

static void note_error(tally *t, int which, double err, const char *text) {
  if (err > t->worst[which] || isnan(err)) {
    t->worst[which] = isnan(err) ? INFINITY : err;
    snprintf(t->worst_case[which], sizeof t->worst_case[0], "%s", text);
  }
}

int main(int argc, char **argv) {
  const clnorm_op op = argc > 1 && strcmp(argv[1], "rmsnorm") == 0 ? CLNORM_OP_RMSNORM
                                                                    : CLNORM_OP_LAYERNORM;
  const char *op_name = op == CLNORM_OP_LAYERNORM ? "layernorm" : "rmsnorm";
  const int quick = getenv("CLNORM_TEST_QUICK") && atoi(getenv("CLNORM_TEST_QUICK")) > 0;
  const int verbose = getenv("CLNORM_TEST_VERBOSE") != NULL;
  const int all_big = getenv("CLNORM_TEST_ALL_BIG") != NULL;
  const size_t *cols_set = quick ? cols_quick : cols_full;
  const size_t *rows_set = quick ? rows_quick : rows_full;
  const size_t ncols = quick ? sizeof cols_quick / sizeof cols_quick[0]
                             : sizeof cols_full / sizeof cols_full[0];
  const size_t nrows = quick ? sizeof rows_quick / sizeof rows_quick[0]
                             : sizeof rows_full / sizeof rows_full[0];
  char title[64];
  snprintf(title, sizeof title, "test_variants %s", op_name);
  harness h;
  harness_open(&h, title);
  if (quick)
    printf("CLNORM_TEST_QUICK: reduced shape sets (not the full test)\n");
  const double t0 = now();
  const size_t nv = clnorm_variant_list(h.ctx, op, NULL, 0);
  clnorm_variant *vars = malloc((nv ? nv : 1) * sizeof *vars);
  clnorm_variant_list(h.ctx, op, vars, nv);
  if (nv == 0)
    harness_fail("no variants listed for %s", op_name);

  {
    prebuild pb = {&h, op, vars, nv, 0, PTHREAD_MUTEX_INITIALIZER};
    const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    size_t threads = cpus > 1 ? (size_t)cpus : 1;
    threads = threads > 16 ? 16 : threads;
    pthread_t tid[16];
    for (size_t t = 0; t < threads; t++)
      pthread_create(&tid[t], NULL, prebuild_worker, &pb);
    for (size_t t = 0; t < threads; t++)
      pthread_join(tid[t], NULL);
  }
  const double t_build = now() - t0;
  printf("%zu variants listed, built in %.1f s\n", nv, t_build);
  fflush(stdout);

  tally t;
  memset(&t, 0, sizeof t);
  size_t shapes = 0, big_index = 0;
  size_t *ran = calloc(nv ? nv : 1, sizeof *ran), *ran_big = calloc(nv ? nv : 1, sizeof *ran_big);
  clnorm_rng rng;
  clnorm_rng_seed(&rng, 42);
  for (size_t ci = 0; ci < ncols; ci++)
    for (size_t ri = 0; ri < nrows; ri++) {
      const size_t cols = cols_set[ci], rows = rows_set[ri];
      if ((rows == 1000 && cols > 4097) || (cols >= 65536 && rows > 3))
        continue;
      shapes++;
      const double ts = now();
      const size_t n = rows * cols;
      const int big = n > BIG_ELEMS && !all_big;
      const size_t this_big = big ? big_index++ : 0;
      float *x = malloc(n * sizeof(float));
      float *gamma = malloc(cols * sizeof(float)), *beta = malloc(cols * sizeof(float));
      double *ref_y = malloc(n * sizeof(double));
      double *ref_mean = malloc(rows * sizeof(double)), *ref_rstd = malloc(rows * sizeof(double));
      harness_random(&rng, x, n, 0.0);
      for (size_t i = 0; i < cols; i++) {
        gamma[i] = (float)(0.5 + clnorm_rng_uniform(&rng));
        beta[i] = (float)(clnorm_rng_uniform(&rng) - 0.5);
      }
      /* gamma/beta given on some shapes, NULL (ones/zeros) on others; mean and rstd NULL on
       * some (the kernels skip those stores) */
      const size_t pattern = ci + ri;
      const int with_affine = pattern % 2 == 0;
      const int with_mean = op == CLNORM_OP_LAYERNORM && pattern % 3 != 1;
      const int with_rstd = pattern % 4 != 3;
      /* the reference once per shape, shared by every variant */
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
                          with_affine ? gb : NULL, NULL, NULL, with_rstd ? rb : NULL};
      if (op == CLNORM_OP_LAYERNORM) {
        call.beta = with_affine ? bb : NULL;
        call.mean = with_mean ? mb : NULL;
      }
      size_t shape_runs = 0, shape_rejected = 0;
      /* a big shape: every BIG_STEP-th variant, starting at a different one for each shape; a
       * variant that cannot take it passes its turn to the next one that can */
      int owed = 0;
      for (size_t k = 0; k <= nv; k++) {
        const clnorm_variant *v = k < nv ? &vars[k] : NULL; /* and the dispatcher's own */
        char text[128] = "dispatcher";
        if (v)
          clnorm_variant_format(v, text, sizeof text);
        if (v && big && !owed && (k + this_big) % BIG_STEP != 0)
          continue;
        if (v) {
          const clnorm_status cs = clnorm_variant_check(h.ctx, &call, v);
          if (cs == CLNORM_E_UNSUPPORTED) {
            t.rejected++;
            shape_rejected++;
            note_reason(&t, text, clnorm_ctx_errmsg(h.ctx));
            owed = big;
            continue;
          }
          if (cs != CLNORM_OK) {
            t.failed++;
            harness_fail("%s %s rows=%zu cols=%zu: variant_check %s: %s", op_name, text, rows,
                         cols, clnorm_status_string(cs), clnorm_ctx_errmsg(h.ctx));
            continue;
          }
        }
        owed = 0;
        errors e;
        int gaps_ok;
        const clnorm_status st = harness_check(&h, &call, v, NULL, n, n, gamma, beta, ref_y,
                                               ref_mean, ref_rstd, &e, &gaps_ok);
        t.runs++;
        shape_runs++;
        if (v) {
          ran[k]++;
          ran_big[k] += big;
        }
        char where[200];
        snprintf(where, sizeof where, "%s rows=%zu cols=%zu", text, rows, cols);
        if (st != CLNORM_OK) {
          if (++t.failed <= MAX_PRINTED_FAILURES)
            harness_fail("%s %s: %s: %s", op_name, where, clnorm_status_string(st),
                         clnorm_ctx_errmsg(h.ctx));
          else
            harness_failures++;
          continue;
        }
        if (!(e.y <= 1e-5 && e.mean <= 1e-5 && e.rstd <= 1e-5) || !gaps_ok) {
          if (++t.failed <= MAX_PRINTED_FAILURES)
            harness_fail("%s %s gamma/beta=%s mean=%s rstd=%s: error y %.3g mean %.3g "
                         "rstd %.3g%s",
                         op_name, where, with_affine ? "given" : "NULL",
                         call.mean ? "given" : "NULL", call.rstd ? "given" : "NULL", e.y, e.mean,
                         e.rstd, gaps_ok ? "" : "; wrote outside the matrix");
          else
            harness_failures++;
        }
        note_error(&t, 0, e.y, where);
        note_error(&t, 1, e.mean, where);
        note_error(&t, 2, e.rstd, where);
      }
      if (verbose)
        printf("  rows=%zu cols=%zu%s: %zu runs, %zu rejected, %.2f s\n", rows, cols,
               big ? " (big, shared out)" : "", shape_runs, shape_rejected, now() - ts);
      fflush(stdout);
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
  size_t variants_run = 0, min_shapes = (size_t)-1, min_big = (size_t)-1;
  for (size_t k = 0; k < nv; k++) {
    if (ran[k]) {
      variants_run++;
      min_shapes = ran[k] < min_shapes ? ran[k] : min_shapes;
      min_big = ran_big[k] < min_big ? ran_big[k] : min_big;
      continue;
    }
    char text[128];
    clnorm_variant_format(&vars[k], text, sizeof text);
    harness_fail("%s variant %s ran on no shape", op_name, text);
  }
  if (!variants_run)
    min_shapes = min_big = 0;
  printf("%s: %zu variants listed, %zu run (each on >= %zu shapes, >= %zu of them big), "
         "%zu shapes, %zu (variant, shape) runs, %zu (variant, shape) pairs rejected by "
         "clnorm_variant_check, %zu failed runs; build %.1f s, total %.1f s\n",
         title, nv, variants_run, min_shapes, min_big, shapes, t.runs, t.rejected, t.failed,
         t_build, now() - t0);
  static const char *const measure[3] = {"y", "mean", "rstd"};
  for (int m = 0; m < 3; m++)
    printf("  worst %s error %.3g%s%s\n", measure[m], t.worst[m], t.worst_case[m][0] ? " at " : "",
           t.worst_case[m]);
  for (size_t r = 0; r < t.nreasons; r++)
    printf("  rejected %zu times: %s\n", t.reason_count[r], t.reasons[r]);
  free(ran);
  free(ran_big);
  free(vars);
  harness_close(&h);
  printf("%s: %s (%d failures)\n", title, harness_failures ? "FAIL" : "PASS", harness_failures);
  return harness_failures ? 1 : 0;
}
