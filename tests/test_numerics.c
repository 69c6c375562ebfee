/* Numerics and layouts: rows far from zero, rows whose first element is far from their mean, NaN
 * and Inf rows, constant rows, magnitudes from 1e-15 to 1e15, odd offsets, strides, in place,
 * narrowed vectors; through the dispatcher (clnorm_layernorm / clnorm_rmsnorm) and forced
 * variants. Rows of 1e4 + N(0,1) (cols 1000 and 4096), the pivot-far rows (4096) and the NaN/Inf,
 * constant and magnitude rows of 768 run with every variant that takes the call, at the
 * variant's own vector width (strides multiple of 16), so they reuse the programs test_variants
 * compiled (ctest runs this test after it; PoCL caches programs on disk); with --cover (CI),
 * with the variants of test_variants --cover only (harness_cover_variants).
 * The other layouts narrow the width, and each width is a program of its own: they run the
 * first and the last variant of each family (family() below) that takes the call.
 * Measures as in harness.h:
 *   y:    max |y - ref| / max(max |ref| of the row, FLT_MIN) <= 1e-5 (2e-4 for 1e4 rows)
 *   mean: |mean - ref| / (|ref mean| + 1 / ref rstd) <= 1e-5 (2e-4 for 1e4 rows)
 *   rstd: |rstd - ref| / ref <= 1e-5 (2e-4 for 1e4 rows)
 * Rows holding a NaN or an Inf must give NaN y, mean and rstd (other rows as usual); a row of
 * one value gives y = beta; every element of y's buffer outside the matrix (before the offset,
 * between rows, after the end; in place: x's own values) must be unchanged.
 *
 * Rows of every magnitude (issue 25; op_case.c, extreme_rows): every op and dtype, eps 0 and
 * 1e-5, magnitudes from the dtype's smallest to its largest (float32 and bfloat16: 1e-38 to 3e38,
 * where the float32 sums of squares over- and underflow; float16: 6e-8 to 65504), through the
 * dispatcher and the first or the last variant of each family that takes the call (by turns:
 * each end in every width, in one dtype or another; CLNORM_TEST_BOTH_ENDS=1: both in every
 * dtype), 64 x 768 and 8 x
 * 1001 (vector tails), and 4 x 16384 for the split-row kernels (variants with one row per group).
 * Checked by oc_run with op_case.h's tolerances, forward and backward.
 *
 * Subnormal rows (issue 25, point 4; op_case.c, subnormal_rows): the same, in six patterns of
 * subnormal and tiny values, eps 1e-5 and 1, 24 x 768, 6 x 1001 and 6 x 16384 (split), without
 * beta (beside it, LayerNorm's y of such rows would not count); and for the backward ops 2 x 1001
 * and 2 x 16384, two subnormal rows alone, whose dgamma no normal row outweighs (the tiny rows of
 * cl/backward.cl, BWD_TINY).
 *
 *   test_numerics [--cover]               the layouts above
 *   test_numerics extreme [OP [DTYPE [ROWSxCOLS]]]    rows of every magnitude (of OP, of DTYPE,
 *                                                  in one layout: 64x768, 8x1001 or 4x16384)
 *   test_numerics subnormal [OP [DTYPE [ROWSxCOLS]]]  subnormal rows (24x768, 6x1001, 6x16384,
 *                                                  backward: 2x1001, 2x16384)
 *   test_numerics extreme OP DTYPE ROWSxCOLS VARIANT [plain]
 *       every variant whose clnorm_variant_format contains VARIANT (e.g. "wg=256 tpr=1 vec=16"),
 *       and no dispatcher; "plain": with the default data instead (to tell a kernel that fails on
 *       rare rows from one that fails on any; scripts/gpu_extreme.sh's fifth field) */
#include "harness.h"
#include "op_case.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct layout {
  const char *name;
  size_t rows, cols, x_off, x_stride, y_off, y_stride;
  int in_place;
  double offset; /* added to the data: 1e4 for far-from-zero rows */
  int data;      /* DATA_* below */
  int every_variant;
} layout;

enum {
  DATA_RANDOM,     /* N(0,1) * scale + shift, scale and shift drawn anew every 97 elements */
  DATA_BAD_ROWS,   /* random; row 1 gets a NaN, row 2 an Inf, row 3 a -Inf at the pivot */
  DATA_CONSTANT,   /* each row one value (zero variance; row 0 all zeros): y = beta exactly */
  DATA_MAGNITUDES, /* random rows scaled by 1e-15, 1e-10, ..., 1e15 */
  DATA_PIVOT_FAR,  /* random; row r's first element (the pivot) 1.5 * 2^r: 0.8 to 100 or so
                      standard deviations from the row's mean, so that the kernels whose
                      one-pass variance holds only near the pivot (cl/forward.cl) take their
                      second pass; without it they were 7 to 8 times the tolerance off
                      (docs/PERFORMANCE.md, 2026-11-26) */
};

/* Families of variants: how a row is shared (one work-item, a whole group, part of a group),
 * hold, statistics and reduction. */
#define FAMILIES (3 * 4 * 2 * 3)
static size_t family(const clnorm_variant *v) {
  const size_t shared = v->tpr == 1 ? 0 : v->tpr == v->wg ? 1 : 2;
  const size_t hold = v->hold == 0 ? 0 : v->hold == 1 ? 1 : v->hold <= 4 ? 2 : 3;
  return ((shared * 4 + hold) * 2 + (v->stats == CLNORM_STATS_TWOPASS)) * 3 +
         ((unsigned)v->reduce % 3);
}

static const layout layouts[] = {
    {"far from zero 1000", 16, 1000, 0, 1008, 0, 1008, 0, 1e4, 0, 1},
    {"far from zero 4096", 16, 4096, 0, 0, 0, 0, 0, 1e4, 0, 1},
    {"far from zero 33", 16, 33, 0, 0, 0, 0, 0, 1e4, 0, 0},
    {"NaN and Inf rows", 9, 768, 0, 0, 0, 0, 0, 0.0, 1, 1},
    {"constant rows", 6, 768, 0, 0, 0, 0, 0, 0.0, DATA_CONSTANT, 1},
    {"magnitudes 1e-15 to 1e15", 7, 768, 0, 0, 0, 0, 0, 0.0, DATA_MAGNITUDES, 1},
    {"NaN and Inf rows odd", 9, 4097, 0, 0, 0, 0, 0, 0.0, 1, 0},
    {"odd offsets", 7, 1024, 3, 0, 5, 0, 0, 0.0, 0, 0},
    {"stride > cols", 11, 1000, 0, 1003, 0, 1001, 0, 0.0, 0, 0},
    {"offset and stride", 5, 4096, 1, 4099, 7, 4100, 0, 0.0, 0, 0},
    {"narrowed to 2: offsets 2, 6", 4, 4096, 2, 0, 6, 0, 0, 0.0, 0, 0},
    {"aligned stride", 6, 1024, 4, 1040, 8, 1056, 0, 0.0, 0, 0},
    {"in place", 13, 2880, 0, 0, 0, 0, 1, 0.0, 0, 0},
    {"in place strided", 5, 3584, 2, 3590, 2, 3590, 1, 0.0, 0, 0},
    {"in place far from zero", 8, 4096, 0, 0, 0, 0, 1, 1e4, 0, 0},
    {"one column", 5, 1, 1, 3, 2, 4, 0, 0.0, 0, 0},
    {"pivot far from the mean", 8, 4096, 0, 0, 0, 0, 0, 0.0, DATA_PIVOT_FAR, 1},
};

/* only: NULL, or which variants the layouts of every variant run (--cover) */
static void run_layout(harness *h, clnorm_op op, size_t li, const clnorm_variant *vars, size_t nv,
                       const unsigned char *only, size_t *runs, size_t *variants_run) {
  const layout *l = &layouts[li];
  const size_t xs = l->x_stride ? l->x_stride : l->cols;
  const size_t ys = l->in_place ? xs : (l->y_stride ? l->y_stride : l->cols);
  const size_t y_off = l->in_place ? l->x_off : l->y_off;
  const size_t x_elems = l->x_off + (l->rows - 1) * xs + l->cols + 3;
  const size_t y_elems = l->in_place ? x_elems : y_off + (l->rows - 1) * ys + l->cols + 5;
  float *x = malloc(x_elems * sizeof(float));
  float *gamma = malloc(l->cols * sizeof(float)), *beta = malloc(l->cols * sizeof(float));
  double *ref_y = malloc(l->rows * l->cols * sizeof(double));
  double *ref_mean = malloc(l->rows * sizeof(double)), *ref_rstd = malloc(l->rows * sizeof(double));
  clnorm_rng rng;
  clnorm_rng_seed(&rng, 7 + l->cols);
  harness_random(&rng, x, x_elems, l->offset);
  for (size_t i = 0; i < l->cols; i++) {
    gamma[i] = (float)(0.5 + clnorm_rng_uniform(&rng));
    beta[i] = (float)(clnorm_rng_uniform(&rng) - 0.5);
  }
  if (l->data == DATA_BAD_ROWS) {
    x[l->x_off + 1 * xs + l->cols / 2] = NAN;
    x[l->x_off + 2 * xs + l->cols - 1] = INFINITY;
    x[l->x_off + 3 * xs + 0] = -INFINITY; /* the first element: the kernels' pivot */
  }
  for (size_t r = 0; r < l->rows && l->data == DATA_CONSTANT; r++)
    for (size_t i = 0; i < l->cols; i++)
      x[l->x_off + r * xs + i] = r == 0 ? 0.0f : (float)((double)r * 3.7 - 9.0 + (r % 2) * 1e3);
  for (size_t r = 0; r < l->rows && l->data == DATA_PIVOT_FAR; r++)
    x[l->x_off + r * xs] = (float)(1.5 * pow(2.0, (double)r));
  for (size_t r = 0; r < l->rows && l->data == DATA_MAGNITUDES; r++)
    for (size_t i = 0; i < l->cols; i++)
      x[l->x_off + r * xs + i] *=
          (float)pow(10.0, -15.0 + 30.0 * (double)r / (double)(l->rows - 1));
  if (op == CLNORM_OP_LAYERNORM)
    clnorm_ref_layernorm(l->rows, l->cols, x + l->x_off, xs, gamma, beta, 1e-5, ref_y, ref_mean,
                         ref_rstd);
  else
    clnorm_ref_rmsnorm(l->rows, l->cols, x + l->x_off, xs, gamma, 1e-5, ref_y, ref_rstd);
  cl_mem xb = harness_buffer(h, x_elems * 4, x);
  cl_mem yb = l->in_place ? xb : harness_buffer(h, y_elems * 4, NULL);
  cl_mem gb = harness_buffer(h, l->cols * 4, gamma), bb = harness_buffer(h, l->cols * 4, beta);
  cl_mem mb = harness_buffer(h, l->rows * 4, NULL), rb = harness_buffer(h, l->rows * 4, NULL);
  clnorm_call call = {.op = op,
                      .rows = l->rows,
                      .cols = l->cols,
                      .dtype = CLNORM_F32,
                      .eps = 1e-5f,
                      .x = {xb, l->x_off, l->x_stride},
                      .y = {yb, y_off, l->in_place ? l->x_stride : l->y_stride},
                      .gamma = gb,
                      .rstd = rb};
  if (op == CLNORM_OP_LAYERNORM) {
    call.beta = bb;
    call.mean = mb;
  }
  const double tol = l->offset != 0.0 ? 2e-4 : 1e-5;
  /* which variants run: all (or those of `only`), or the first and the last of each family that
   * take the call */
  unsigned char *chosen = calloc(nv + 1, 1);
  unsigned char first_seen[FAMILIES] = {0}, last_seen[FAMILIES] = {0};
  for (size_t k = 0; k < nv; k++) {
    const size_t f = family(&vars[k]);
    if ((l->every_variant ? !only || only[k] : !first_seen[f]) &&
        clnorm_variant_check(h->ctx, &call, &vars[k]) == CLNORM_OK)
      chosen[k] = first_seen[f] = 1;
  }
  for (size_t k = nv; k-- > 0 && !l->every_variant;) {
    const size_t f = family(&vars[k]);
    if (!last_seen[f] && (chosen[k] || clnorm_variant_check(h->ctx, &call, &vars[k]) == CLNORM_OK))
      chosen[k] = last_seen[f] = 1;
  }
  chosen[nv] = 1; /* the dispatcher */
  for (size_t k = 0; k <= nv; k++) {
    const clnorm_variant *v = k < nv ? &vars[k] : NULL;
    if (!chosen[k])
      continue;
    *variants_run += v != NULL;
    if (l->in_place) /* x was overwritten by the previous run */
      harness_write(h, xb, x_elems * 4, x);
    errors e;
    int gaps_ok;
    const clnorm_status st = harness_check(h, &call, v, l->in_place ? x : NULL, x_elems, y_elems,
                                           gamma, beta, ref_y, ref_mean, ref_rstd, &e, &gaps_ok);
    (*runs)++;
    char text[128] = "dispatcher";
    if (v)
      clnorm_variant_format(v, text, sizeof text);
    const char *opn = op == CLNORM_OP_LAYERNORM ? "layernorm" : "rmsnorm";
    if (st != CLNORM_OK) {
      harness_fail("%s %s [%s]: %s: %s", opn, l->name, text, clnorm_status_string(st),
                   clnorm_ctx_errmsg(h->ctx));
      continue;
    }
    if (!(e.y <= tol && e.mean <= tol && e.rstd <= tol))
      harness_fail("%s %s [%s]: error y %.3g mean %.3g rstd %.3g (tolerance %.0e)", opn, l->name,
                   text, e.y, e.mean, e.rstd, tol);
    if (!gaps_ok)
      harness_fail("%s %s [%s]: an element of y's buffer outside the matrix changed", opn, l->name,
                   text);
  }
  free(chosen);
  if (!l->in_place)
    clReleaseMemObject(yb);
  clReleaseMemObject(xb);
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

/* Rows of every magnitude (kind 1; subnormal rows: kind 2): one layout of one op and dtype,
 * through the dispatcher and the first (ends bit 0) and the last (bit 1) variant of each family
 * that takes it (split: only the variants with one row per group), eps 0 and 1e-5 (subnormal rows:
 * 1 and 1e-5, where float32's y is subnormal too; with eps 0 their rstd may exceed FLT_MAX). */
static void run_extreme(harness *h, clnorm_op op, clnorm_dtype dtype, size_t rows, size_t cols,
                        int split, int kind, int ends, const char *only, int plain, size_t *runs) {
  const float eps1 = kind == 2 ? 1.0f : 0.0f;
  const size_t nv = clnorm_variant_list(h->ctx, op, dtype, NULL, 0);
  clnorm_variant *vars = malloc((nv ? nv : 1) * sizeof *vars);
  clnorm_variant_list(h->ctx, op, dtype, vars, nv);
  unsigned char *chosen = calloc(nv + 1, 1);
  unsigned char first_seen[FAMILIES] = {0}, last_seen[FAMILIES] = {0};
  oc_case c;
  oc_default(&c, op, dtype, rows, cols);
  c.extreme = plain ? 0 : kind;
  if (kind == 2) /* beta would hide LayerNorm's tiny y (y + beta == beta) */
    c.absent |= 1u << OC_BETA;
  size_t variants = 0, failed = 0;
  for (int pass = 0; pass < 2; pass++)
    for (size_t j = 0; j < nv && (only || (ends >> pass & 1)); j++) {
      const size_t k = pass == 0 ? j : nv - 1 - j;
      const size_t f = family(&vars[k]);
      unsigned char *seen = pass == 0 ? first_seen : last_seen;
      char vtext[128];
      clnorm_variant_format(&vars[k], vtext, sizeof vtext);
      if (only ? pass == 1 || !strstr(vtext, only)
               : seen[f] || (split && vars[k].tpr != vars[k].wg))
        continue;
      c.forced = 1;
      c.variant = vars[k];
      for (int e = 0; e < 2; e++) {
        c.eps = e == 0 ? eps1 : 1e-5f;
        char msg[512], text[1024];
        const oc_result res = oc_run(h, &c, NULL, msg, sizeof msg);
        if (res == OC_UNSUPPORTED)
          break;
        seen[f] = 1;
        if (e == 0 && !chosen[k]) {
          chosen[k] = 1;
          variants++;
        }
        (*runs)++;
        if (res != OC_PASS) {
          oc_format(&c, text, sizeof text);
          harness_fail("%s: %s", text, msg);
          failed++;
        }
      }
    }
  if (only && variants == 0)
    harness_fail("test_numerics extreme: no variant of %s %s runs %zux%zu and contains \"%s\"",
                 clnorm_op_name(op), clnorm_dtype_name(dtype), rows, cols, only);
  c.forced = 0;
  for (int e = 0; e < 2 && !only; e++) {
    c.eps = e == 0 ? eps1 : 1e-5f;
    char msg[512], text[1024];
    (*runs)++;
    if (oc_run(h, &c, NULL, msg, sizeof msg) != OC_PASS) {
      oc_format(&c, text, sizeof text);
      harness_fail("%s: %s", text, msg);
      failed++;
    }
  }
  printf("  %-13s %-4s %s %zux%zu%s: %s%zu of %zu variants, eps %g and 1e-5: %zu failed\n",
         clnorm_op_name(op), clnorm_dtype_name(dtype),
         plain       ? "plain data"
         : kind == 2 ? "subnormal"
                     : "every magnitude",
         rows, cols, split ? " (split)" : "", only ? "" : "dispatcher and ", variants, nv,
         (double)eps1, failed);
  fflush(stdout);
  free(chosen);
  free(vars);
}

int main(int argc, char **argv) {
  harness h;
  harness_open(&h, "test_numerics");
  size_t runs = 0;
  /* --cover: the layouts of every variant run test_variants --cover's subset, whose programs
   * that test built (tests/CMakeLists.txt) */
  const int cover = argc == 2 && strcmp(argv[1], "--cover") == 0;
  if (cover)
    printf("--cover: the layouts of every variant run the covering subset "
           "(harness_cover_variants), not every variant\n");
  const int extreme = argc < 2                            ? 0
                      : strcmp(argv[1], "extreme") == 0   ? 1
                      : strcmp(argv[1], "subnormal") == 0 ? 2
                                                          : 0;
  for (int o = 0; o < 2 && !extreme; o++) {
    const clnorm_op op = o == 0 ? CLNORM_OP_LAYERNORM : CLNORM_OP_RMSNORM;
    const size_t nv = clnorm_variant_list(h.ctx, op, CLNORM_F32, NULL, 0);
    clnorm_variant *vars = malloc((nv ? nv : 1) * sizeof *vars);
    clnorm_variant_list(h.ctx, op, CLNORM_F32, vars, nv);
    if (nv == 0)
      harness_fail("no variants listed");
    unsigned char *keep = cover ? harness_cover_variants(vars, nv) : NULL;
    for (size_t i = 0; i < sizeof layouts / sizeof layouts[0]; i++) {
      size_t forced = 0;
      run_layout(&h, op, i, vars, nv, keep, &runs, &forced);
      printf("  %s %-30s rows=%zu cols=%zu: dispatcher and %zu of %zu variants\n",
             op == CLNORM_OP_LAYERNORM ? "layernorm" : "rmsnorm", layouts[i].name, layouts[i].rows,
             layouts[i].cols, forced, nv);
      fflush(stdout);
    }
    free(keep);
    free(vars);
  }
  /* The layouts of `test_numerics extreme` (kind 1) and `test_numerics subnormal` (kind 2). */
  static const struct {
    int kind;
    size_t rows, cols;
    int split;
    int bwd_only; /* the backward's tiny rows alone (cl/backward.cl, BWD_TINY) */
  } extreme_layouts[] = {{1, 64, 768, 0, 0}, {1, 8, 1001, 0, 0}, {1, 4, 16384, 1, 0},
                         {2, 24, 768, 0, 0}, {2, 6, 1001, 0, 0}, {2, 6, 16384, 1, 0},
                         {2, 2, 1001, 0, 1}, {2, 2, 16384, 1, 1}};
  for (int o = 0; o < CLNORM_OP_COUNT && extreme; o++)
    for (int d = 0; d < 3; d++) {
      const clnorm_op op = (clnorm_op)o;
      const clnorm_dtype dtype = (clnorm_dtype)d;
      if ((argc > 2 && strcmp(argv[2], clnorm_op_name(op)) != 0) ||
          (argc > 3 && strcmp(argv[3], clnorm_dtype_name(dtype)) != 0))
        continue;
      for (size_t l = 0; l < sizeof extreme_layouts / sizeof extreme_layouts[0]; l++) {
        const size_t rows = extreme_layouts[l].rows, cols = extreme_layouts[l].cols;
        if (extreme_layouts[l].kind != extreme || (extreme_layouts[l].bwd_only && !oc_is_bwd(op)))
          continue;
        char name[48];
        snprintf(name, sizeof name, "%zux%zu", rows, cols);
        if (argc > 4 && strcmp(argv[4], name) != 0)
          continue;
        /* The first variant of each family in one dtype, the last in the next, by turns, and
         * the other way round in the next width (the same turn for the same width, whose
         * programs the subnormal rows then reuse): each end of each family runs in every width,
         * at half the programs of both ends in every dtype, which PoCL builds in 1-2.5 s each
         * on CI's 2 cores (docs/TESTING.md). CLNORM_TEST_BOTH_ENDS=1 runs both everywhere. */
        const int width = cols == 768 ? 0 : cols == 1001 ? 1 : 2;
        const int ends = getenv("CLNORM_TEST_BOTH_ENDS") ? 3 : (d + width) % 2 == 0 ? 1 : 2;
        run_extreme(&h, op, dtype, rows, cols, extreme_layouts[l].split, extreme, ends,
                    argc > 5 ? argv[5] : NULL, argc > 6 && strcmp(argv[6], "plain") == 0, &runs);
      }
    }
  if (extreme && runs == 0 && argc <= 5) /* with VARIANT: run_extreme says what matched none */
    harness_fail("test_numerics %s: no op, dtype and layout match the arguments",
                 extreme == 2 ? "subnormal" : "extreme");
  harness_close(&h);
  if (extreme)
    printf("test_numerics %s, %zu runs: %s (%d failures)\n",
           extreme == 2 ? "subnormal: subnormal rows" : "extreme: rows of every magnitude", runs,
           harness_failures ? "FAIL" : "PASS", harness_failures);
  else
    printf("test_numerics: %zu layouts x 2 ops, %zu runs: %s (%d failures)\n",
           sizeof layouts / sizeof layouts[0], runs, harness_failures ? "FAIL" : "PASS",
           harness_failures);
  return harness_failures ? 1 : 0;
}
