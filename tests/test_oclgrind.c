/* The kernels under Oclgrind, a simulator that reports out-of-bounds accesses, data races
 * (global and local memory, across work-items and work-groups), uses of uninitialized values and
 * OpenCL API misuse. tests/oclgrind.sh runs every case of this program in its own oclgrind
 * process and fails on any report; each case's outputs are also checked against the float64
 * reference (tests/op_case.h).
 *
 * The cases, per kernel family (the six ops) and dtype, are a subset of the variants the device
 * lists (clnorm_variant_list), chosen from the list itself so that it follows the variant space:
 *   - pairwise coverage: every pair of values of two of the features shape (one work-item per
 *     row; one row per group, tpr == wg; several rows per group), hold (0, 1, 4, 16), statistics
 *     (Welford, two-pass), vector width and reduction (local tree, sub-group, warp shuffle) that
 *     occurs together in the list occurs in a chosen variant; greedily, fewest work-items first
 *     (the simulator's cost), so every reduction strategy, statistics mode, width and hold value
 *     the device lists is covered;
 *   - for each statistics mode, the variant of the deepest reduction tree (the largest tpr,
 *     then the fewest work-items);
 *   - forward ops: split rows (cl/split.cl), see choose();
 *   - backward ops: the column strips (cl/strip.cl), see choose();
 *   - the dispatcher.
 * Each chosen variant runs two shapes: one at its own vector width (offset 16, stride a multiple
 * of 16 above cols, so the vector loop and the scalar tail both run), with rows over two
 * work-groups, the last one partly idle (backward: more row blocks than its persistent grid has
 * groups); and one rotating among odd offset and odd stride (width 1), in place, cols 1 and 7,
 * and the fixed grid of PoCL before 6 (CLNORM_FIXED_GRID=1: groups stride over the row
 * blocks). Data kinds, NaN/Inf rows and NULL optional operands rotate too. Cols are 1, 7, 33 and
 * 130, capped by what a held row fits.
 *
 * Usage: test_oclgrind --count | --list | --checks | --case N | --all [--any-device]
 * (--checks: per case, 1 when its uninitialized-value check is trustworthy; see main)
 * The device must be Oclgrind's (CLNORM_TEST_DEVICE=oclgrind, under `oclgrind`), unless
 * --any-device: then the same cases run on the test device (a quick check of the case list). */
#define _POSIX_C_SOURCE 200809L
#include "internal.h" /* clnorm__split_count, clnorm__bwd_strip_ranges, the context's info */
#include "op_case.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_CASES 4096

typedef struct og_case {
  oc_case c;
  int fixed_grid; /* run with CLNORM_FIXED_GRID=1 */
  int split;      /* chosen for the split-row kernels */
  int strip;      /* chosen for the backward's column strips, run as on a GPU of STRIP_UNITS */
} og_case;

/* The compute units the column-strip cases run as (their row ranges follow from them:
 * src/variants.c): Oclgrind's one would give one range. */
#define STRIP_UNITS 132

static og_case cases[MAX_CASES];
static size_t ncases;
/* coverage, for --list: [op][dtype][feature][value] */
static unsigned listed[CLNORM_OP_COUNT][3][5][5], chosen[CLNORM_OP_COUNT][3][5][5];

static unsigned log2u(unsigned v) {
  unsigned l = 0;
  while (v > 1) {
    v >>= 1;
    l++;
  }
  return l;
}

/* The features of a variant: shape, hold, stats, vec, reduce (values 0..4). */
static void features(const clnorm_variant *v, unsigned f[5]) {
  f[0] = v->tpr == 1 ? 0 : v->tpr == v->wg ? 1 : 2;
  f[1] = v->hold == 0 ? 0 : v->hold == 1 ? 1 : v->hold <= 4 ? 2 : 3;
  f[2] = (unsigned)v->stats;
  f[3] = log2u(v->vec);
  f[4] = (unsigned)v->reduce;
}

#define NPAIRS 10 /* feature pairs (a < b) of 5 features */
static size_t pair_index(int a, int b, unsigned va, unsigned vb) {
  static const int base[5][5] = {{0, 0, 1, 2, 3}, {0, 0, 4, 5, 6}, {0, 0, 0, 7, 8},
                                 {0, 0, 0, 0, 9}, {0, 0, 0, 0, 0}};
  return ((size_t)base[a][b] * 5 + va) * 5 + vb;
}

/* want, or what a held row fits: all of it, or (odd k) one element less, so that the last
 * vector is partial and the scalar tail runs */
static size_t cols_cap(const clnorm_variant *v, size_t want, size_t k) {
  if (!v || v->hold == 0)
    return want;
  const size_t cap = (size_t)v->tpr * v->vec * v->hold;
  return cap >= want ? want : k % 2 && cap > v->vec ? cap - 1 : cap;
}

/* Appends one case of `v` (NULL: the dispatcher) on shape `kind` (0: own width; 1..5 the
 * rotation), with data and options from k. */
static void add_case(clnorm_op op, clnorm_dtype dtype, const clnorm_variant *v, int kind,
                     size_t k) {
  if (ncases >= MAX_CASES)
    return;
  og_case *g = &cases[ncases++];
  oc_case *c = &g->c;
  static const size_t cols_of[4] = {1, 7, 33, 130};
  const size_t rpg = v ? v->wg / v->tpr : 1;
  size_t rows = 3, cols = cols_cap(v, cols_of[2 + k % 2], k / 2);
  if (kind == 0 || kind == 3) {
    /* two groups, the last partly idle; backward and the fixed grid: more row blocks than the
     * grid's at most 8 groups (Oclgrind has one compute unit), so groups take several blocks */
    rows = oc_is_bwd(op) || kind == 3 ? 9 * rpg + 1 : rpg + 1;
    if (rows * cols > 4096)
      cols = cols_cap(v, 33, k / 2);
    while (rows * cols > 4096 && rows > 2)
      rows /= 2;
  } else if (kind == 4) {
    cols = cols_cap(v, cols_of[k % 2], 0); /* 1 or 7: only the scalar tail */
  }
  oc_default(c, op, dtype, rows, cols);
  c->data_seed = 1000 + k;
  c->data = (oc_data)(k % OC_DATA_KINDS);
  if (v) {
    c->forced = 1;
    c->variant = *v;
  }
  /* NULL optional operands on every third case, rotating */
  if (k % 3 == 1)
    c->absent = 1u << (k / 3 % OC_VECTORS);
  if (oc_is_add(op) && k % 4 == 2)
    c->absent |= OC_ABSENT_SUM;
  if (k % 5 == 3 && rows > 1) {
    c->bad_row = (long)(rows - 1);
    c->bad_col = cols / 2;
    c->bad_kind = (int)(k % 3);
    c->bad_in_res = oc_is_add(op) && k % 2;
  }
  const int matrices[3] = {OC_X, oc_is_add(op) ? OC_RES : OC_DY, OC_Y};
  switch (kind) {
  case 0: /* own width: aligned offsets, strides a multiple of 16 above cols */
    for (int r = 0; r < OC_MATRICES; r++) {
      c->m[r].offset = 16;
      c->m[r].stride = (cols + 15) / 16 * 16 + 16;
    }
    c->tail = 0;
    break;
  case 1: /* odd offset and odd stride: width 1 */
    for (int i = 0; i < 3; i++) {
      c->m[matrices[i]].offset = 1 + 2 * (size_t)i;
      c->m[matrices[i]].stride = cols + 1 + (size_t)i;
    }
    break;
  case 2: /* in place: y == x (add: sum_out == residual too), dx == dy */
    oc_alias(c, OC_Y, oc_is_bwd(op) ? OC_DY : OC_X);
    if (oc_is_add(op) && !(c->absent & OC_ABSENT_SUM))
      oc_alias(c, OC_SUM, OC_RES);
    break;
  case 3: /* the fixed grid */
    g->fixed_grid = 1;
    break;
  default: /* dense, tail only */
    break;
  }
}

/* The subset of one op and dtype (see the top). */
static void choose(harness *h, clnorm_op op, clnorm_dtype dtype, size_t *k) {
  const size_t nv = clnorm_variant_list(h->ctx, op, dtype, NULL, 0);
  clnorm_variant *vars = malloc((nv ? nv : 1) * sizeof *vars);
  clnorm_variant_list(h->ctx, op, dtype, vars, nv);
  unsigned char need[NPAIRS * 25];
  memset(need, 0, sizeof need);
  for (size_t i = 0; i < nv; i++) {
    unsigned f[5];
    features(&vars[i], f);
    for (int a = 0; a < 5; a++) {
      listed[op][dtype][a][f[a]] = 1;
      for (int b = a + 1; b < 5; b++)
        need[pair_index(a, b, f[a], f[b])] = 1;
    }
  }
  size_t picked = 0;
  for (;;) {
    long best = -1;
    size_t best_gain = 0, best_cost = 0;
    for (size_t i = 0; i < nv; i++) {
      unsigned f[5];
      features(&vars[i], f);
      size_t gain = 0;
      for (int a = 0; a < 5; a++)
        for (int b = a + 1; b < 5; b++)
          gain += need[pair_index(a, b, f[a], f[b])];
      const size_t cost = vars[i].wg;
      if (gain > best_gain || (gain == best_gain && gain > 0 && cost < best_cost)) {
        best = (long)i;
        best_gain = gain;
        best_cost = cost;
      }
    }
    if (best < 0)
      break;
    unsigned f[5];
    features(&vars[best], f);
    for (int a = 0; a < 5; a++) {
      chosen[op][dtype][a][f[a]] = 1;
      for (int b = a + 1; b < 5; b++)
        need[pair_index(a, b, f[a], f[b])] = 0;
    }
    add_case(op, dtype, &vars[best], 0, (*k)++);
    add_case(op, dtype, &vars[best], 1 + (int)(picked % 4), (*k)++);
    picked++;
  }
  /* the deepest reduction tree of each statistics mode: the largest tpr, then the fewest
   * work-items, then the largest row capacity */
  for (int stats = 0; stats < 2; stats++) {
    long deep = -1;
    for (size_t i = 0; i < nv; i++) {
      const clnorm_variant *v = &vars[i], *d = deep >= 0 ? &vars[deep] : NULL;
      if ((int)v->stats != stats)
        continue;
      const size_t cap = v->hold ? (size_t)v->tpr * v->vec * v->hold : (size_t)1 << 30;
      const size_t dcap = d && d->hold ? (size_t)d->tpr * d->vec * d->hold : (size_t)1 << 30;
      if (!d || v->tpr > d->tpr || (v->tpr == d->tpr && v->wg < d->wg) ||
          (v->tpr == d->tpr && v->wg == d->wg && cap > dcap))
        deep = (long)i;
    }
    if (deep >= 0) {
      add_case(op, dtype, &vars[deep], 0, (*k)++);
      add_case(op, dtype, &vars[deep], 1 + (int)(picked++ % 4), (*k)++);
    }
  }
  /* split rows (cl/split.cl; the end of cl/backward.cl): one or two long rows of a variant with
   * one row per group; the dispatcher splits a row over 2^s groups while rows * 2^(s+1) <= the
   * groups that fill the device (at most 8 on Oclgrind's one compute unit) and each chunk keeps
   * >= 4 vectors per work-item (src/variants.c): cols >= 16 * wg * vec gives 4 groups a row for
   * one row. A backward call splits only where its second kernel has enough column tiles of
   * at most 1024 elements (2 * rows on a GPU, 2 per compute unit on a CPU such as Oclgrind's):
   * cols = 2048 * rows + 7 gives at least 3 (1 row) and 5 (2 rows), the last tile partly idle,
   * and the columns past the last whole vector; run_case checks that these cases split. The cheapest such variant
   * per statistics mode, re-reading and holding the row (backward: the split kernels take
   * neither, one variant). */
  for (int stats = 0; stats < 2; stats++)
    for (int held = 0; held < 2; held++) {
      if (oc_is_bwd(op) && (stats || held))
        continue;
      long best = -1;
      for (size_t i = 0; i < nv; i++) {
        const clnorm_variant *v = &vars[i];
        const size_t cap = (size_t)v->tpr * v->vec * v->hold;
        if (v->tpr != v->wg || v->wg < 4 || (int)v->stats != stats || (v->hold > 0) != held ||
            (held && cap < 8 * (size_t)v->wg * v->vec))
          continue;
        if (best < 0 || v->wg * v->vec < vars[best].wg * vars[best].vec)
          best = (long)i;
      }
      if (best < 0)
        continue;
      const clnorm_variant *v = &vars[best];
      const size_t cap = v->hold ? (size_t)v->tpr * v->vec * v->hold : (size_t)1 << 30;
      for (int shape = 0; shape < 2; shape++) {
        const size_t want =
            oc_is_bwd(op) ? 2048 * (size_t)(shape + 1) + 7 : 16 * (size_t)v->wg * v->vec + 3;
        add_case(op, dtype, v, shape ? 1 : 4, (*k)++);
        oc_case *c = &cases[ncases - 1].c;
        c->rows = shape ? 2 : 1;
        c->cols = want < cap ? want : cap;
        for (int r = 0; r < OC_MATRICES; r++) /* odd strides (shape 1) above the new cols */
          if (c->m[r].stride)
            c->m[r].stride = c->cols + 1 + (size_t)r % 3;
        cases[ncases - 1].split = 1;
      }
    }
  /* the backward's column strips (cl/strip.cl): 3 rows of 16387 columns (the rule's least is
   * 16384: CLNORM_BWD_STRIP_MIN_COLS), so a partial last strip and the columns past the last whole
   * vector, as on a GPU of STRIP_UNITS compute units: 3 row ranges (run_case checks). One row a
   * group, not held, vectors of 4: 16 work-items (TILE 16, no row lanes) or 256 (TILE 1, 4 row
   * lanes, their sums added behind a barrier), by op and dtype in turn. */
  if (oc_is_bwd(op)) {
    const unsigned wg = ((int)op + (int)dtype) % 2 ? 256 : 16;
    long pick = -1;
    for (size_t i = 0; i < nv; i++) {
      const clnorm_variant *v = &vars[i];
      if (v->wg == wg && v->tpr == wg && v->vec == 4 && v->hold == 0 &&
          v->reduce == CLNORM_REDUCE_LOCAL)
        pick = (long)i;
    }
    if (pick >= 0) {
      /* 256 at its own width (the row lanes need TILE 1: vectors of 4), 16 in the rotation */
      const int kind = wg == 256 ? 0 : 1 + (int)dtype % 2;
      add_case(op, dtype, &vars[pick], kind, (*k)++);
      oc_case *c = &cases[ncases - 1].c;
      c->rows = 3;
      c->cols = 16387;
      for (int r = 0; r < OC_MATRICES; r++) /* strides above the new cols: aligned, or odd */
        if (c->m[r].stride)
          c->m[r].stride = kind == 0 ? (c->cols + 15) / 16 * 16 + 16 * ((size_t)r % 3)
                                     : c->cols + 1 + (size_t)r % 3;
      cases[ncases - 1].strip = 1;
    }
  }
  /* the dispatcher */
  add_case(op, dtype, NULL, 0, (*k)++);
  add_case(op, dtype, NULL, 1 + (int)(picked % 4), (*k)++);
  free(vars);
}

static void make_cases(harness *h) {
  size_t k = 0;
  for (int op = 0; op < CLNORM_OP_COUNT; op++)
    for (int d = 0; d < 3; d++)
      choose(h, (clnorm_op)op, (clnorm_dtype)d, &k);
}

static void print_coverage(void) {
  static const char *const names[5][5] = {{"tpr=1", "tpr=wg", "rows/group>1", "", ""},
                                          {"hold=0", "hold=1", "hold=4", "hold=16", ""},
                                          {"welford", "twopass", "", "", ""},
                                          {"vec=1", "vec=2", "vec=4", "vec=8", "vec=16"},
                                          {"local", "subgroup", "nvshfl", "", ""}};
  for (int op = 0; op < CLNORM_OP_COUNT; op++)
    for (int d = 0; d < 3; d++) {
      printf("  %s %s: covered", clnorm_op_name((clnorm_op)op),
             clnorm_dtype_name((clnorm_dtype)d));
      for (int a = 0; a < 5; a++)
        for (int v = 0; v < 5; v++)
          if (chosen[op][d][a][v])
            printf(" %s", names[a][v]);
      printf("; not listed by this device:");
      for (int v = 0; v < 3; v++)
        if (!listed[op][d][4][v])
          printf(" reduce=%s", names[4][v]);
      printf("\n");
    }
}

/* The vector width the case's kernel runs at: the dispatcher's choice, or the forced variant's
 * width narrowed as the library does: the widest width <= vec that is <= cols and, unless the
 * kernels take unaligned rows (harness_unaligned), divides every matrix's offset, and stride
 * when rows > 1. */
static unsigned case_width(harness *h, const oc_case *c) {
  clnorm_variant v = c->variant;
  if (!c->forced) {
    /* clnorm_choose reads only the layout; one small buffer stands for every matrix */
    cl_mem any = harness_buffer(h, 64, NULL);
    clnorm_call call = {.op = c->op, .rows = c->rows, .cols = c->cols, .dtype = c->dtype,
                        .eps = c->eps};
    clnorm_rows *m[OC_MATRICES] = {&call.x, &call.y, &call.residual, &call.sum_out, &call.dy};
    for (int r = 0; r < OC_MATRICES; r++)
      if (oc_uses_matrix(c->op, r) && !(r == OC_SUM && (c->absent & OC_ABSENT_SUM)))
        *m[r] = (clnorm_rows){any, c->m[r].offset, c->m[r].stride};
    const clnorm_status st = clnorm_choose(h->ctx, &call, &v, NULL);
    clReleaseMemObject(any);
    return st == CLNORM_OK ? v.vec : 16;
  }
  size_t bits = 0;
  for (int r = 0; r < OC_MATRICES; r++)
    if (oc_uses_matrix(c->op, r) && !(r == OC_SUM && (c->absent & OC_ABSENT_SUM)))
      bits |= c->m[r].offset | (c->rows > 1 ? (c->m[r].stride ? c->m[r].stride : c->cols) : 0);
  if (harness_unaligned(h))
    bits = 0;
  unsigned w = v.vec;
  while (w > 1 && ((bits & (w - 1)) != 0 || w > c->cols))
    w >>= 1;
  return w;
}

static int any_device; /* --any-device: the cases on the test device, not Oclgrind's */

static int run_case(harness *h, size_t i) {
  char text[1400], msg[1024];
  oc_format(&cases[i].c, text, sizeof text);
  if (cases[i].split && !any_device) {
    /* the case was made for Oclgrind's one compute unit: it must take the split-row path */
    const oc_case *c = &cases[i].c;
    clnorm_variant v = c->variant;
    v.vec = case_width(h, c);
    const clnorm_call call = {.op = c->op, .rows = c->rows, .cols = c->cols, .dtype = c->dtype};
    if (clnorm__split_count(&h->ctx->info, &call, &v) < 2) {
      printf("FAIL: case %zu: %s: made for split rows, but its rows run whole\n", i, text);
      return 1;
    }
  }
  const int strip_was = h->ctx->info.bwd_strip;
  const cl_uint units_was = h->ctx->info.compute_units;
  if (cases[i].strip) {
    /* CLNORM_BWD_STRIP=1 for this case, on STRIP_UNITS compute units; it must take the strips
     * in several row ranges */
    const oc_case *c = &cases[i].c;
    h->ctx->info.bwd_strip = 1;
    h->ctx->info.compute_units = STRIP_UNITS;
    clnorm_variant v = c->variant;
    v.vec = case_width(h, c);
    const clnorm_call call = {.op = c->op, .rows = c->rows, .cols = c->cols, .dtype = c->dtype};
    const unsigned ranges = clnorm__bwd_strip_ranges(&h->ctx->info, &call, &v);
    if (ranges < 2) {
      printf("FAIL: case %zu: %s: made for column strips of several row ranges, but takes %u\n", i,
             text, ranges);
      h->ctx->info.bwd_strip = strip_was;
      h->ctx->info.compute_units = units_was;
      return 1;
    }
  }
  const oc_result r = oc_run(h, &cases[i].c, NULL, msg, sizeof msg);
  h->ctx->info.bwd_strip = strip_was;
  h->ctx->info.compute_units = units_was;
  if (r == OC_PASS)
    return 0;
  printf("FAIL: case %zu%s: %s: %s%s\n", i, cases[i].fixed_grid ? " (fixed grid)" : "", text,
         r == OC_UNSUPPORTED ? "variant refused: " : "", msg);
  return 1;
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "--all";
  long only = -1;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--any-device") == 0)
      any_device = 1;
    else if (strcmp(argv[i], "--case") == 0 && i + 1 < argc)
      only = strtol(argv[++i], NULL, 10);
  }
  if (only >= 0 && getenv("CLNORM_FIXED_GRID") == NULL) {
    /* the case list does not depend on the grid; the context must be made under it */
    harness probe;
    harness_open(&probe, "test_oclgrind (case list)");
    make_cases(&probe);
    harness_close(&probe);
    if ((size_t)only < ncases && cases[only].fixed_grid)
      setenv("CLNORM_FIXED_GRID", "1", 1);
    ncases = 0;
    memset(listed, 0, sizeof listed);
    memset(chosen, 0, sizeof chosen);
  }
  harness h;
  harness_open(&h, "test_oclgrind");
  char pname[256] = "";
  clGetPlatformInfo(h.platform, CL_PLATFORM_NAME, sizeof pname - 1, pname, NULL);
  if (!any_device && !strstr(pname, "Oclgrind")) {
    printf("test_oclgrind: FAIL: the device is %s (%s), not Oclgrind's: run through "
           "tests/oclgrind.sh (oclgrind ... test_oclgrind, CLNORM_TEST_DEVICE=oclgrind)\n",
           h.name, pname);
    return 1;
  }
  make_cases(&h);
  int failures = 0;
  if (strcmp(mode, "--count") == 0) {
    printf("%zu\n", ncases);
  } else if (strcmp(mode, "--checks") == 0) {
    /* Oclgrind 21.10's uninitialized-value plugin reports fully initialized float16 values
     * after the sums of their quarters ((v.lo.lo + v.lo.hi) + (v.hi.lo + v.hi.hi), HSUM at
     * VEC 16): cases at width 16 run without --uninitialized (races, bounds and API checks
     * still on) */
    for (size_t i = 0; i < ncases; i++)
      printf("%zu %d\n", i, case_width(&h, &cases[i].c) < 16);
  } else if (strcmp(mode, "--list") == 0) {
    for (size_t i = 0; i < ncases; i++) {
      char text[1400];
      oc_format(&cases[i].c, text, sizeof text);
      printf("%zu%s%s%s: %s (width %u)\n", i, cases[i].fixed_grid ? " (fixed grid)" : "",
             cases[i].split ? " (split rows)" : "", cases[i].strip ? " (column strips)" : "", text,
             case_width(&h, &cases[i].c));
    }
    print_coverage();
  } else if (only >= 0) {
    if ((size_t)only >= ncases) {
      printf("test_oclgrind: FAIL: case %ld does not exist (%zu cases)\n", only, ncases);
      return 1;
    }
    failures = run_case(&h, (size_t)only);
  } else {
    for (size_t i = 0; i < ncases; i++)
      failures += run_case(&h, i);
    printf("test_oclgrind: %zu cases, %d failed\n", ncases, failures);
  }
  harness_close(&h);
  return failures ? 1 : 0;
}
