/* Every variant the device accepts, on the cols and rows sets of the core issue, against the
 * float64 reference. Usage: test_variants layernorm|rmsnorm.
 * Tolerances (measures in harness.h), per row:
 *   y:    max |y - ref| / max(max |ref| of the row, FLT_MIN) <= 1e-5
 *   mean: |mean - ref| <= 1e-5 * (|ref mean| + 1 / ref rstd), i.e. of |mean| + std deviation
 *   rstd: |rstd - ref| / ref <= 1e-5
 * Trimmed for time, never by variant (every variant runs; only its shapes are trimmed):
 * - rows 1000 only for cols <= 4097; cols >= 65536 only with rows 1 and 3;
 * - a call narrows the vector width to what it can run (cols 1, 2, 3, 7; odd strides too where the
 *   device's kernels need aligned rows: CLNORM_UNALIGNED=0, GPUs), and each width is a program of
 * its own, which PoCL builds and first runs in 0.3-1 s. A variant runs the shapes of its own width,
 * and a sixth of the variants (and those too short for any shape at their own width) also those of
 * one narrower width, assigned in turn among those its shapes give; the other widths' shapes are
 * left to the variants around it in the list;
 * - heavy (variant, shape) pairs (more than HEAVY_ELEMS elements, HEAVY_ITEMS work-items or
 *   HEAVY_GROUPS work-groups launched: PoCL pays for each) run with every HEAVY_STEP-th variant,
 *   and those of LARGE_GRID work-items or more (PoCL compiles a kernel anew for them) with every
 *   LARGE_STEP-th, starting at a different one for each shape; a variant that cannot take the
 *   shape passes its turn on.
 * The dispatcher's own choice runs every shape.
 * With --cover (what CI runs: tests/CMakeLists.txt), a covering subset of the variants, not
 * every one: each value of each parameter (wg, tpr, vec, hold, reduce, stats) beside each value
 * of every other parameter, and each (wg, tpr, vec) the list has, in some
 * variant run (greedy: the variant that adds the most of them not yet covered, then the next;
 * harness_cover_variants), and a narrower width for every other one.
 * PoCL builds a program in 1-2.5 s on CI's 2 cores and every variant is one at least: the
 * 1,028 LayerNorm variants alone took 2,320 s there (docs/TESTING.md). The run of every variant
 * (without --cover) is the `every_variant` label's.
 * Environment: CLNORM_TEST_QUICK=1 shrinks the sets (development only; the default is the full
 * run); CLNORM_TEST_VERBOSE=1 prints one line per shape; CLNORM_TEST_EXHAUSTIVE=1 runs every
 * shape with every variant (slow: no trimming). */
#define _POSIX_C_SOURCE 200809L
#include "harness.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const size_t cols_full[] = {1,   2,    3,    7,    31,   32,   33,   127,   128,
                                   768, 1000, 1024, 2880, 3584, 4096, 4097, 65536, 1048577};
static const size_t rows_full[] = {1, 3, 64, 1000};
static const size_t cols_quick[] = {1, 2, 7, 33, 128, 1000, 4097, 65536};
static const size_t rows_quick[] = {1, 3, 64};

#define HEAVY_ELEMS ((size_t)1 << 18)
#define HEAVY_ITEMS ((size_t)1 << 14)
#define HEAVY_GROUPS 256
#define HEAVY_STEP 3
#define LARGE_GRID ((size_t)1 << 16)
#define LARGE_STEP 8
#define MAX_PRINTED_FAILURES 40
#define MAX_REASONS 12
#define MAX_SHAPES 80

typedef struct shape {
  size_t rows, cols;
} shape;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Whether the context's kernels keep the width whatever the alignment (harness_unaligned). */
static int unaligned;

/* The vector width a dense call (offsets 0, strides cols) runs `v` at: the widest one <= v->vec
 * that is <= cols and, unless the kernels take unaligned rows, divides the strides when rows > 1,
 * as the library narrows it. */
static unsigned call_width(const clnorm_variant *v, const shape *s) {
  unsigned w = v->vec;
  while (w > 1 && ((!unaligned && s->rows > 1 && s->cols % w != 0) || w > s->cols))
    w >>= 1;
  return w;
}

/* Whether the row fits the variant's private memory at width w (the library's rule; here only
 * to choose which shapes to try: variant_check has the last word). */
static int fits(const clnorm_variant *v, const shape *s, unsigned w) {
  if (v->hold == 0)
    return 1;
  const size_t per_item = (s->cols / w + v->tpr - 1) / v->tpr;
  return per_item <= (size_t)v->hold * (v->vec / w);
}

/* The narrower width variant k also runs at: for a sixth of the variants (drawn by a hash of k;
 * every other one with --cover),
 * and for those no shape runs at their own width (a short held row: tpr=1 vec=8 hold=1 takes at
 * most 8 columns), one of the widths below its own that its shapes give, in turn (mixed so that
 * neighbours in the list get different ones); 0 for none. */
static unsigned narrow_width(const clnorm_variant *v, size_t k, const shape *shapes, size_t nshapes,
                             int cover_mode) {
  int own_width = 0;
  for (size_t i = 0; i < nshapes && !own_width; i++)
    own_width = call_width(v, &shapes[i]) == v->vec && fits(v, &shapes[i], v->vec);
  if (own_width && (cover_mode ? k % 2 != 0 : (((uint32_t)k * 2654435761u) >> 16) % 6 != 0))
    return 0;
  unsigned widths[5], count = 0;
  for (unsigned w = 1; w < v->vec; w <<= 1)
    for (size_t i = 0; i < nshapes; i++)
      if (call_width(v, &shapes[i]) == w && fits(v, &shapes[i], w)) {
        widths[count++] = w;
        break;
      }
  return count ? widths[(k + k / 8) % count] : 0;
}

/* 1 for a pair every variant runs, else the step of the variants that run it. */
static size_t pair_step(const clnorm_variant *v, const shape *s) {
  const size_t rows_per_group = v->wg / v->tpr;
  const size_t groups = (s->rows + rows_per_group - 1) / rows_per_group;
  if (groups * v->wg >= LARGE_GRID)
    return LARGE_STEP;
  if (s->rows * s->cols > HEAVY_ELEMS || groups * v->wg > HEAVY_ITEMS || groups > HEAVY_GROUPS)
    return HEAVY_STEP;
  return 1;
}

typedef struct prebuild {
  harness *h;
  clnorm_op op;
  const clnorm_variant *v;
  const unsigned *narrow;
  size_t n, next;
  int exhaustive;
  pthread_mutex_t lock;
} prebuild;

/* Compiling is most of the cost on PoCL (the build, then code generation at the first run):
 * build and run every variant once on all cores first, at each width it will run at (a call of
 * 1, 2, 4, 8 or 16 columns runs at that width). */
static void *prebuild_worker(void *arg) {
  prebuild *pb = arg;
  cl_int e;
  cl_command_queue q = clCreateCommandQueue(pb->h->context, pb->h->device, 0, &e);
  cl_mem probe = clCreateBuffer(pb->h->context, CL_MEM_READ_WRITE, 64 * 4, NULL, &e);
  const float zero = 0.0f;
  clEnqueueFillBuffer(q, probe, &zero, sizeof zero, 0, 64 * 4, 0, NULL, NULL);
  for (;;) {
    pthread_mutex_lock(&pb->lock);
    const size_t i = pb->next++;
    pthread_mutex_unlock(&pb->lock);
    if (i >= pb->n)
      break;
    for (unsigned w = 1; w <= pb->v[i].vec; w *= 2) {
      if (!pb->exhaustive && w != pb->v[i].vec && w != pb->narrow[i])
        continue;
      const clnorm_call call = {.op = pb->op,
                                .rows = 1,
                                .cols = w,
                                .dtype = CLNORM_F32,
                                .eps = 1e-5f,
                                .x = {probe, 0, 0},
                                .y = {probe, 32, 0}};
      if (clnorm_variant_check(pb->h->ctx, &call, &pb->v[i]) == CLNORM_OK)
        clnorm_run(pb->h->ctx, q, &call, &pb->v[i], 0, NULL, NULL);
    }
    clFinish(q);
  }
  clReleaseMemObject(probe);
  clReleaseCommandQueue(q);
  return NULL;
}

typedef struct tally {
  size_t runs, rejected, failed, trimmed;
  double worst[3]; /* y, mean, rstd */
  char worst_case[3][200];
  char reasons[MAX_REASONS][240];
  size_t reason_count[MAX_REASONS], nreasons;
} tally;

static void note_reason(tally *t, const char *variant, const char *msg) {
  const char *colon = strrchr(msg, ':');
  const char *reason = colon ? colon + 2 : msg;
  for (size_t r = 0; r < t->nreasons; r++)
    if (strncmp(t->reasons[r], reason, strlen(reason)) == 0) {
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

static size_t min_size(size_t a, size_t b) { return a < b ? a : b; }

int main(int argc, char **argv) {
  const clnorm_op op =
      argc > 1 && strcmp(argv[1], "rmsnorm") == 0 ? CLNORM_OP_RMSNORM : CLNORM_OP_LAYERNORM;
  const char *op_name = op == CLNORM_OP_LAYERNORM ? "layernorm" : "rmsnorm";
  const int quick = getenv("CLNORM_TEST_QUICK") && atoi(getenv("CLNORM_TEST_QUICK")) > 0;
  const int verbose = getenv("CLNORM_TEST_VERBOSE") != NULL;
  const int exhaustive = getenv("CLNORM_TEST_EXHAUSTIVE") != NULL;
  const int cover_mode = argc > 2 && strcmp(argv[2], "--cover") == 0;
  if (argc > 3 || (argc > 2 && !cover_mode) ||
      (argc > 1 && strcmp(argv[1], "rmsnorm") != 0 && strcmp(argv[1], "layernorm") != 0)) {
    fprintf(stderr, "usage: test_variants layernorm|rmsnorm [--cover] (not \"%s\")\n",
            argc > 3                  ? argv[3]
            : argc > 2 && !cover_mode ? argv[2]
                                      : argv[1]);
    return 2;
  }
  const size_t *cols_set = quick ? cols_quick : cols_full;
  const size_t *rows_set = quick ? rows_quick : rows_full;
  const size_t ncols =
      quick ? sizeof cols_quick / sizeof cols_quick[0] : sizeof cols_full / sizeof cols_full[0];
  const size_t nrows =
      quick ? sizeof rows_quick / sizeof rows_quick[0] : sizeof rows_full / sizeof rows_full[0];
  shape shapes[MAX_SHAPES];
  size_t nshapes = 0;
  for (size_t ci = 0; ci < ncols; ci++)
    for (size_t ri = 0; ri < nrows; ri++) {
      const size_t cols = cols_set[ci], rows = rows_set[ri];
      if ((rows == 1000 && cols > 4097) || (cols >= 65536 && rows > 3))
        continue;
      shapes[nshapes++] = (shape){rows, cols};
    }

  char title[64];
  snprintf(title, sizeof title, "test_variants %s%s", op_name, cover_mode ? " --cover" : "");
  harness h;
  harness_open(&h, title);
  unaligned = harness_unaligned(&h);
  if (quick)
    printf("CLNORM_TEST_QUICK: reduced shape sets (not the full test)\n");
  if (exhaustive)
    printf("CLNORM_TEST_EXHAUSTIVE: every variant on every shape\n");
  const double t0 = now();
  const size_t listed = clnorm_variant_list(h.ctx, op, CLNORM_F32, NULL, 0);
  clnorm_variant *vars = malloc((listed ? listed : 1) * sizeof *vars);
  unsigned *narrow = malloc((listed ? listed : 1) * sizeof *narrow);
  clnorm_variant_list(h.ctx, op, CLNORM_F32, vars, listed);
  if (listed == 0)
    harness_fail("no variants listed for %s", op_name);
  /* CLNORM_TEST_VARIANT_STEP=N: every N-th variant only (scripts/check_tools.sh: the pre-build's
   * threads under ThreadSanitizer need many programs, not all of them). */
  const char *step_env = getenv("CLNORM_TEST_VARIANT_STEP");
  const size_t variant_step = step_env && atoi(step_env) > 1 ? (size_t)atoi(step_env) : 1;
  size_t kept = 0;
  for (size_t k = 0; k < listed; k += variant_step)
    vars[kept++] = vars[k];
  if (cover_mode) {
    const size_t before = kept;
    unsigned char *keep = harness_cover_variants(vars, kept);
    kept = 0;
    for (size_t k = 0; k < before; k++)
      if (keep[k])
        vars[kept++] = vars[k];
    free(keep);
    printf("--cover: %zu of %zu variants, every pair of parameter values and every (wg, tpr, "
           "vec) among them (not every "
           "variant: the every_variant label's run)\n",
           kept, before);
  }
  const size_t nv = kept;
  if (variant_step > 1)
    printf("CLNORM_TEST_VARIANT_STEP: every %zu-th variant, %zu of %zu (not the full test)\n",
           variant_step, nv, listed);
  for (size_t k = 0; k < nv; k++)
    narrow[k] = narrow_width(&vars[k], k, shapes, nshapes, cover_mode);

  {
    prebuild pb = {&h, op, vars, narrow, nv, 0, exhaustive, PTHREAD_MUTEX_INITIALIZER};
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
  printf("%zu variants listed, built and first run in %.1f s\n", nv, t_build);
  fflush(stdout);

  tally t;
  memset(&t, 0, sizeof t);
  size_t *ran = calloc(nv ? nv : 1, sizeof *ran), *ran_heavy = calloc(nv ? nv : 1, sizeof(size_t));
  size_t *ran_narrow = calloc(nv ? nv : 1, sizeof *ran_narrow);
  clnorm_rng rng;
  clnorm_rng_seed(&rng, 42);
  for (size_t si = 0; si < nshapes; si++) {
    const size_t cols = shapes[si].cols, rows = shapes[si].rows;
    const double ts = now();
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
    /* gamma/beta given on some shapes, NULL (ones/zeros) on others; mean and rstd NULL on some
     * (the kernels skip those stores) */
    const int with_affine = si % 2 == 0;
    const int with_mean = op == CLNORM_OP_LAYERNORM && si % 3 != 1;
    const int with_rstd = si % 5 != 3;
    /* the reference once per shape, shared by every variant */
    if (op == CLNORM_OP_LAYERNORM)
      clnorm_ref_layernorm(rows, cols, x, cols, with_affine ? gamma : NULL,
                           with_affine ? beta : NULL, 1e-5, ref_y, ref_mean, ref_rstd);
    else
      clnorm_ref_rmsnorm(rows, cols, x, cols, with_affine ? gamma : NULL, 1e-5, ref_y, ref_rstd);
    cl_mem xb = harness_buffer(&h, n * 4, x), yb = harness_buffer(&h, n * 4, NULL);
    cl_mem gb = harness_buffer(&h, cols * 4, gamma), bb = harness_buffer(&h, cols * 4, beta);
    cl_mem mb = harness_buffer(&h, rows * 4, NULL), rb = harness_buffer(&h, rows * 4, NULL);
    clnorm_call call = {.op = op,
                        .rows = rows,
                        .cols = cols,
                        .dtype = CLNORM_F32,
                        .eps = 1e-5f,
                        .x = {xb, 0, 0},
                        .y = {yb, 0, 0},
                        .gamma = with_affine ? gb : NULL,
                        .rstd = with_rstd ? rb : NULL};
    if (op == CLNORM_OP_LAYERNORM) {
      call.beta = with_affine ? bb : NULL;
      call.mean = with_mean ? mb : NULL;
    }
    size_t shape_runs = 0, shape_rejected = 0;
    int owed = 0; /* a heavy turn passed on by a variant that cannot take the shape */
    for (size_t k = 0; k <= nv; k++) {
      const clnorm_variant *v = k < nv ? &vars[k] : NULL; /* and the dispatcher's own */
      char text[128] = "dispatcher";
      int heavy = 0, narrowed = 0;
      if (v) {
        clnorm_variant_format(v, text, sizeof text);
        const unsigned w = call_width(v, &shapes[si]);
        narrowed = w < v->vec;
        if (!exhaustive && w != v->vec && w != narrow[k]) {
          t.trimmed++;
          continue;
        }
        const size_t step = exhaustive ? 1 : pair_step(v, &shapes[si]);
        heavy = step > 1;
        if (heavy && !owed && (k + si) % step != 0) {
          t.trimmed++;
          continue;
        }
        const clnorm_status cs = clnorm_variant_check(h.ctx, &call, v);
        if (cs == CLNORM_E_UNSUPPORTED) {
          t.rejected++;
          shape_rejected++;
          note_reason(&t, text, clnorm_ctx_errmsg(h.ctx));
          owed = heavy;
          continue;
        }
        if (cs != CLNORM_OK) {
          t.failed++;
          harness_fail("%s %s rows=%zu cols=%zu: variant_check %s: %s", op_name, text, rows, cols,
                       clnorm_status_string(cs), clnorm_ctx_errmsg(h.ctx));
          continue;
        }
      }
      owed = 0;
      errors e;
      int gaps_ok;
      const clnorm_status st = harness_check(&h, &call, v, NULL, n, n, gamma, beta, ref_y, ref_mean,
                                             ref_rstd, &e, &gaps_ok);
      t.runs++;
      shape_runs++;
      if (v) {
        ran[k]++;
        ran_heavy[k] += heavy;
        ran_narrow[k] += narrowed;
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
                       op_name, where, with_affine ? "given" : "NULL", call.mean ? "given" : "NULL",
                       call.rstd ? "given" : "NULL", e.y, e.mean, e.rstd,
                       gaps_ok ? "" : "; wrote outside the matrix");
        else
          harness_failures++;
      }
      note_error(&t, 0, e.y, where);
      note_error(&t, 1, e.mean, where);
      note_error(&t, 2, e.rstd, where);
    }
    if (verbose)
      printf("  rows=%zu cols=%zu: %zu runs, %zu rejected, %.2f s\n", rows, cols, shape_runs,
             shape_rejected, now() - ts);
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
  size_t variants_run = 0, min_shapes = (size_t)-1, min_narrow = (size_t)-1, device_refused = 0;
  size_t heavy_runs = 0;
  for (size_t k = 0; k < nv; k++) {
    heavy_runs += ran_heavy[k];
    if (ran[k]) {
      variants_run++;
      min_shapes = min_size(min_shapes, ran[k]);
      if (narrow[k])
        min_narrow = min_size(min_narrow, ran_narrow[k]);
      continue;
    }
    char text[128];
    clnorm_variant_format(&vars[k], text, sizeof text);
    /* A variant whose built kernel the device refuses (CL_KERNEL_WORK_GROUP_SIZE below its
     * work-group size) is not one the device accepts: report it, do not count it as a miss. A
     * call whose row fits any hold checks it: one row of tpr * vec * max(hold, 1) elements. */
    cl_mem probe_buf = harness_buffer(&h, (size_t)vars[k].tpr * vars[k].vec * 16 * 4, NULL);
    const clnorm_call probe = {.op = op,
                               .rows = 1,
                               .cols = (size_t)vars[k].tpr * vars[k].vec *
                                       (vars[k].hold ? vars[k].hold : 1),
                               .dtype = CLNORM_F32,
                               .eps = 1e-5f,
                               .x = {probe_buf, 0, 0},
                               .y = {probe_buf, 0, 0}};
    const clnorm_status ps = clnorm_variant_check(h.ctx, &probe, &vars[k]);
    const int refused_after_build =
        ps == CLNORM_E_UNSUPPORTED && strstr(clnorm_ctx_errmsg(h.ctx), "built kernel allows");
    if (refused_after_build) {
      clReleaseMemObject(probe_buf);
      device_refused++;
      continue;
    }
    if (ps == CLNORM_OK) {
      /* the trimming left it no shape: run it on the probe shape, three rows, checked */
      const size_t pc = probe.cols, pr = 3, pn = pr * pc;
      float *px = malloc(pn * sizeof(float));
      double *pref = malloc(pn * sizeof(double)), pmean[3], prstd[3];
      harness_random(&rng, px, pn, 0.0);
      cl_mem pxb = harness_buffer(&h, pn * 4, px), pyb = harness_buffer(&h, pn * 4, NULL);
      clnorm_call pcall = probe;
      pcall.rows = pr;
      pcall.x.buf = pxb;
      pcall.y.buf = pyb;
      if (op == CLNORM_OP_LAYERNORM)
        clnorm_ref_layernorm(pr, pc, px, pc, NULL, NULL, 1e-5, pref, pmean, prstd);
      else
        clnorm_ref_rmsnorm(pr, pc, px, pc, NULL, 1e-5, pref, prstd);
      errors pe;
      int pgaps;
      const clnorm_status rs = harness_check(&h, &pcall, &vars[k], NULL, pn, pn, NULL, NULL, pref,
                                             pmean, prstd, &pe, &pgaps);
      if (rs != CLNORM_OK || !(pe.y <= 1e-5 && pe.mean <= 1e-5 && pe.rstd <= 1e-5))
        harness_fail("%s %s rows=%zu cols=%zu (probe): %s, error y %.3g", op_name, text, pr, pc,
                     clnorm_status_string(rs), pe.y);
      variants_run++;
      clReleaseMemObject(pxb);
      clReleaseMemObject(pyb);
      clReleaseMemObject(probe_buf);
      free(px);
      free(pref);
      continue;
    }
    clReleaseMemObject(probe_buf);
    harness_fail("%s variant %s ran on no shape", op_name, text);
  }
  if (device_refused)
    printf("%s: %zu variants listed are refused by the device after their build (the built "
           "kernel's CL_KERNEL_WORK_GROUP_SIZE is below their work-group size)\n",
           title, device_refused);
  if (!variants_run)
    min_shapes = 0;
  if (min_narrow == (size_t)-1)
    min_narrow = 0;
  printf("%s: %zu variants listed, %zu run (each on >= %zu shapes, >= %zu of them at a "
         "narrowed width); %zu shapes; %zu (variant, shape) runs (%zu heavy), %zu pairs rejected "
         "by clnorm_variant_check, %zu trimmed for time; %zu failed runs; build %.1f s, "
         "total %.1f s\n",
         title, nv, variants_run, min_shapes, min_narrow, nshapes, t.runs, heavy_runs, t.rejected,
         t.trimmed, t.failed, t_build, now() - t0);
  static const char *const measure[3] = {"y", "mean", "rstd"};
  for (int m = 0; m < 3; m++)
    printf("  worst %s error %.3g%s%s\n", measure[m], t.worst[m], t.worst_case[m][0] ? " at " : "",
           t.worst_case[m]);
  for (size_t r = 0; r < t.nreasons; r++)
    printf("  rejected %zu times: %s\n", t.reason_count[r], t.reasons[r]);
  free(ran);
  free(ran_heavy);
  free(ran_narrow);
  free(narrow);
  free(vars);
  harness_close(&h);
  printf("%s: %s (%d failures)\n", title, harness_failures ? "FAIL" : "PASS", harness_failures);
  return harness_failures ? 1 : 0;
}
