/* Every op in every storage type against the float64 reference (verify/ref.c), through the
 * public entry points (the dispatcher) and through one forced variant of each family (family()
 * as in test_numerics.c). Usage: test_ops forward|add|backward|strips|store.
 * Measures (<= 1 passes; M = the row's max |ref|, or for dgamma/dbeta the max |ref| over cols):
 *   f32 y, sum-free forward: |y - ref| <= 1e-5 * M (as test_numerics)
 *   f32 dx:                  |dx - ref| <= 1e-4 * max(M, rstd * max |gamma * dy|) of the row:
 *                            dx = rstd * (g - mean(g) - xhat * mean(g * xhat)) cancels (cols 1
 *                            and 2 give dx ~ eps-sized), so float32 error is relative to the
 *                            terms, not to dx; 1e-4 covers float32 sums over up to 1M terms
 *   f32 dgamma, dbeta:       |got - ref| <= 1e-4 * M (M over cols)
 *   f16/bf16 outputs:        |got - ref| <= 1 ulp of the dtype at ref + the same floor
 *                            (1e-5 * M forward, 1e-4 * M backward): the float32 result rounded
 *                            once is within 1/2 ulp + the float32 error; the floor covers
 *                            values so small that the float32 error exceeds their ulp
 *   mean, rstd: as harness.h, <= 1e-5; sum_out: bit-exact against the reference h.
 * Outputs are poisoned with NaN, gaps of strided buffers and unaliased inputs must be unchanged
 * (bitwise). */
#define _POSIX_C_SOURCE 200809L
#include "harness.h"
#include "internal.h" /* clnorm__row_buffer (large_groups), clnorm__split_count */
#include <float.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static harness h;
static clnorm_rng rng;
static double worst_seen;
static char worst_case[240];

static const size_t cols_set[] = {1,   2,    3,    7,    31,   32,   33,   127,   128,
                                  768, 1000, 1024, 2880, 3584, 4096, 4097, 65536, 1048577};
static const size_t rows_set[] = {1, 3, 64, 1000};

static int is_bwd(clnorm_op op) { return op >= CLNORM_OP_LAYERNORM_BWD; }
static int is_add(clnorm_op op) {
  return op == CLNORM_OP_ADD_LAYERNORM || op == CLNORM_OP_ADD_RMSNORM;
}
static int is_rms(clnorm_op op) {
  return op == CLNORM_OP_RMSNORM || op == CLNORM_OP_ADD_RMSNORM || op == CLNORM_OP_RMSNORM_BWD;
}

/* The layout of one run: every matrix at `off` with `stride` (0: cols) in its own buffer,
 * except in place: y (dx) shares x's buffer (fwd/add) or dy's (bwd), sum_out the residual's. */
typedef struct layout {
  size_t off, stride;
  int in_place;
  int optional; /* bits: which optional buffers are left out (see run) */
} layout;

enum { NO_AFFINE = 1, NO_STATS = 2, NO_SUM = 4, NO_DGAMMA = 8, NO_DBETA = 16, IN_PLACE_X = 32 };

/* A host image of a device buffer, in storage elements. */
typedef struct image {
  cl_mem buf;
  size_t elems, es;
  unsigned char *host, *before;
} image;

static void image_make(image *im, size_t elems, int dtype) {
  im->elems = elems;
  im->es = clnorm_ref_dtype_size(dtype);
  im->host = malloc(elems * im->es);
  im->before = malloc(elems * im->es);
  im->buf = harness_buffer(&h, elems * im->es, NULL);
  /* gap sentinel: a fixed non-NaN pattern */
  for (size_t i = 0; i < elems * im->es; i++)
    im->host[i] = (unsigned char)(0x35 + i % 7);
}

static void image_free(image *im) {
  clReleaseMemObject(im->buf);
  free(im->host);
  free(im->before);
}

static void put_matrix(image *im, int dtype, size_t off, size_t stride, size_t rows, size_t cols,
                       const float *v) {
  for (size_t r = 0; r < rows; r++)
    clnorm_ref_pack(dtype, v + r * cols, cols, im->host + (off + r * stride) * im->es);
}

static void poison_matrix(image *im, int dtype, size_t off, size_t stride, size_t rows,
                          size_t cols) {
  const float nan = NAN;
  for (size_t r = 0; r < rows; r++)
    for (size_t i = 0; i < cols; i++)
      clnorm_ref_pack(dtype, &nan, 1, im->host + (off + r * stride + i) * im->es);
}

static void get_matrix(const image *im, int dtype, size_t off, size_t stride, size_t rows,
                       size_t cols, float *v) {
  for (size_t r = 0; r < rows; r++)
    clnorm_ref_unpack(dtype, im->host + (off + r * stride) * im->es, cols, v + r * cols);
}

/* Whether every element outside the matrix (all of it when rows == 0) is as before. */
static int gaps_unchanged(const image *im, size_t off, size_t stride, size_t rows, size_t cols) {
  for (size_t i = 0; i < im->elems; i++) {
    const int inside = rows && i >= off && (i - off) / stride < rows && (i - off) % stride < cols;
    if (!inside && memcmp(im->host + i * im->es, im->before + i * im->es, im->es) != 0)
      return 0;
  }
  return 1;
}

static void random_values(float *v, size_t n, int dtype, double offset) {
  harness_random(&rng, v, n, offset);
  for (size_t i = 0; i < n; i++)
    v[i] = clnorm_ref_store(v[i], dtype);
}

static double tol_of(clnorm_op op) { return is_bwd(op) ? CLNORM_TOL_BWD : CLNORM_TOL_FWD; }

/* The error of n results, in units of the allowance stated at the top. */
static double measure(clnorm_op op, int dtype, size_t n, const float *got, const double *ref) {
  return clnorm_ref_scaled_error(n, got, ref, dtype, dtype == CLNORM_F32 ? 0.0 : 1.0, tol_of(op));
}

static void note(double err, const char *where) {
  if (err > worst_seen || isnan(err)) {
    worst_seen = isnan(err) ? INFINITY : err;
    snprintf(worst_case, sizeof worst_case, "%s", where);
  }
}

/* Runs op on random data (nan_row >= 0: that row gets a NaN), checks every output. Returns 0
 * when the variant could not take the call (forced only), 1 when it ran. */
/* Set by run() when a forced variant was refused because its built kernel cannot take its
 * work-group size (NVIDIA's driver caps clnorm's kernels at 256: docs/DEVICES.md). */
static int refused_after_build;

static int run(clnorm_op op, clnorm_dtype dtype, size_t rows, size_t cols, const layout *l,
               const clnorm_variant *force, long nan_row, const char *label) {
  const size_t stride = l->stride ? l->stride : cols, off = l->off;
  const size_t elems = off + (rows - 1) * stride + cols + 5;
  const int bwd = is_bwd(op), add = is_add(op), rms = is_rms(op);
  const int affine = !(l->optional & NO_AFFINE);
  const size_t n = rows * cols;
  float *x = malloc(n * sizeof(float)), *res = malloc(n * sizeof(float));
  float *dy = malloc(n * sizeof(float)), *got = malloc(n * sizeof(float));
  float *gamma = malloc(cols * sizeof(float)), *beta = malloc(cols * sizeof(float));
  float *hsum = malloc(n * sizeof(float)), *fmean = malloc(rows * sizeof(float));
  float *frstd = malloc(rows * sizeof(float)), *gotv = malloc((cols + rows) * sizeof(float));
  double *ref = malloc(n * sizeof(double)), *rmean = malloc(rows * sizeof(double));
  double *rrstd = malloc(rows * sizeof(double)), *rdg = malloc(cols * sizeof(double));
  double *rdb = malloc(cols * sizeof(double));
  random_values(x, n, dtype, 0.0);
  random_values(res, n, dtype, 0.0);
  random_values(dy, n, dtype, 0.0);
  for (size_t i = 0; i < cols; i++) {
    gamma[i] = clnorm_ref_store((float)(0.5 + clnorm_rng_uniform(&rng)), dtype);
    beta[i] = clnorm_ref_store((float)(clnorm_rng_uniform(&rng) - 0.5), dtype);
  }
  if (nan_row >= 0 && (size_t)nan_row < rows)
    x[(size_t)nan_row * cols + cols / 2] = NAN;
  /* reference */
  const float *g = affine ? gamma : NULL, *b = affine ? beta : NULL;
  if (bwd) { /* the forward's float32 mean and rstd, from the float64 reference */
    clnorm_ref_layernorm(rows, cols, x, cols, NULL, NULL, 1e-5, ref, rmean, rrstd);
    if (rms)
      clnorm_ref_rmsnorm(rows, cols, x, cols, NULL, 1e-5, ref, rrstd);
    for (size_t r = 0; r < rows; r++) {
      fmean[r] = (float)rmean[r];
      frstd[r] = (float)rrstd[r];
    }
    if (rms)
      clnorm_ref_rmsnorm_backward(rows, cols, dy, cols, x, cols, g, frstd, ref, rdg);
    else
      clnorm_ref_layernorm_backward(rows, cols, dy, cols, x, cols, g, fmean, frstd, ref, rdg, rdb);
  } else if (add) {
    if (rms)
      clnorm_ref_add_rmsnorm(rows, cols, dtype, x, cols, res, cols, g, 1e-5, hsum, ref, rrstd);
    else
      clnorm_ref_add_layernorm(rows, cols, dtype, x, cols, res, cols, g, b, 1e-5, hsum, ref, rmean,
                               rrstd);
  } else if (rms) {
    clnorm_ref_rmsnorm(rows, cols, x, cols, g, 1e-5, ref, rrstd);
  } else {
    clnorm_ref_layernorm(rows, cols, x, cols, g, b, 1e-5, ref, rmean, rrstd);
  }
  /* buffers: 0 x, 1 y/dx, 2 residual, 3 sum_out, 4 dy; 5 gamma 6 beta 7 mean 8 rstd 9 dgamma
   * 10 dbeta */
  image im[11];
  memset(im, 0, sizeof im);
  image_make(&im[0], elems, dtype);
  put_matrix(&im[0], dtype, off, stride, rows, cols, x);
  if (bwd) {
    image_make(&im[4], elems, dtype);
    put_matrix(&im[4], dtype, off, stride, rows, cols, dy);
  }
  if (add) {
    image_make(&im[2], elems, dtype);
    put_matrix(&im[2], dtype, off, stride, rows, cols, res);
  }
  /* the output matrices: own buffers, or in place */
  int y_img = 1, s_img = 3;
  if (l->in_place)
    y_img =
        bwd ? ((l->optional & IN_PLACE_X) ? 0 : 4) : ((add && (l->optional & IN_PLACE_X)) ? 2 : 0);
  else
    image_make(&im[1], elems, dtype);
  const int want_sum = add && !(l->optional & NO_SUM);
  if (want_sum) {
    if (l->in_place)
      s_img = y_img == 0 ? 2 : 0;
    else
      image_make(&im[3], elems, dtype);
  }
  if (y_img == 1)
    poison_matrix(&im[1], dtype, off, stride, rows, cols);
  if (want_sum && s_img == 3)
    poison_matrix(&im[3], dtype, off, stride, rows, cols);
  if (affine) {
    image_make(&im[5], cols + 3, dtype);
    put_matrix(&im[5], dtype, 0, cols, 1, cols, gamma);
    if (!rms && !bwd) {
      image_make(&im[6], cols + 3, dtype);
      put_matrix(&im[6], dtype, 0, cols, 1, cols, beta);
    }
  }
  const int want_stats = bwd || !(l->optional & NO_STATS);
  if (want_stats) {
    if (!rms) {
      image_make(&im[7], rows + 2, CLNORM_F32);
      if (bwd)
        put_matrix(&im[7], CLNORM_F32, 0, rows, 1, rows, fmean);
      else
        poison_matrix(&im[7], CLNORM_F32, 0, rows, 1, rows);
    }
    image_make(&im[8], rows + 2, CLNORM_F32);
    if (bwd)
      put_matrix(&im[8], CLNORM_F32, 0, rows, 1, rows, frstd);
    else
      poison_matrix(&im[8], CLNORM_F32, 0, rows, 1, rows);
  }
  const int want_dg = bwd && !(l->optional & NO_DGAMMA);
  const int want_db = bwd && !rms && !(l->optional & NO_DBETA);
  if (want_dg) {
    image_make(&im[9], cols + 3, dtype);
    poison_matrix(&im[9], dtype, 0, cols, 1, cols);
  }
  if (want_db) {
    image_make(&im[10], cols + 3, dtype);
    poison_matrix(&im[10], dtype, 0, cols, 1, cols);
  }
  for (int i = 0; i < 11; i++)
    if (im[i].buf) {
      memcpy(im[i].before, im[i].host, im[i].elems * im[i].es);
      harness_write(&h, im[i].buf, im[i].elems * im[i].es, im[i].host);
    }
  const clnorm_rows xr = {im[0].buf, off, l->stride}, yr = {im[y_img].buf, off, l->stride};
  const clnorm_rows rr = {add ? im[2].buf : NULL, add ? off : 0, add ? l->stride : 0};
  const clnorm_rows sr = {want_sum ? im[s_img].buf : NULL, want_sum ? off : 0,
                          want_sum ? l->stride : 0};
  const clnorm_rows dr = {bwd ? im[4].buf : NULL, bwd ? off : 0, bwd ? l->stride : 0};
  clnorm_call call = {.op = op,
                      .rows = rows,
                      .cols = cols,
                      .dtype = dtype,
                      .eps = bwd ? 0.0f : 1e-5f,
                      .x = xr,
                      .y = yr,
                      .gamma = im[5].buf,
                      .beta = im[6].buf,
                      .mean = im[7].buf,
                      .rstd = im[8].buf,
                      .residual = rr,
                      .sum_out = sr,
                      .dy = dr,
                      .dgamma = im[9].buf,
                      .dbeta = im[10].buf};
  char where[240], vtext[128] = "dispatcher";
  if (force)
    clnorm_variant_format(force, vtext, sizeof vtext);
  snprintf(where, sizeof where, "%s %s rows=%zu cols=%zu off=%zu stride=%zu%s opt=%d [%s]%s%s",
           clnorm_op_name(op), clnorm_dtype_name(dtype), rows, cols, off, l->stride,
           l->in_place ? " in place" : "", l->optional, vtext, label ? " " : "",
           label ? label : "");
  clnorm_status st;
  int ran = 1;
  refused_after_build = 0;
  if (force && clnorm_variant_check(h.ctx, &call, force) == CLNORM_E_UNSUPPORTED) {
    refused_after_build = strstr(clnorm_ctx_errmsg(h.ctx), "built kernel allows") != NULL;
    ran = 0;
    goto done;
  }
  if (force)
    st = clnorm_run(h.ctx, h.queue, &call, force, 0, NULL, NULL);
  else if (op == CLNORM_OP_LAYERNORM)
    st = clnorm_layernorm(h.ctx, h.queue, rows, cols, dtype, call.eps, call.x, call.gamma,
                          call.beta, call.y, call.mean, call.rstd, 0, NULL, NULL);
  else if (op == CLNORM_OP_RMSNORM)
    st = clnorm_rmsnorm(h.ctx, h.queue, rows, cols, dtype, call.eps, call.x, call.gamma, call.y,
                        call.rstd, 0, NULL, NULL);
  else if (op == CLNORM_OP_ADD_LAYERNORM)
    st = clnorm_add_layernorm(h.ctx, h.queue, rows, cols, dtype, call.eps, call.x, call.residual,
                              call.sum_out, call.gamma, call.beta, call.y, call.mean, call.rstd, 0,
                              NULL, NULL);
  else if (op == CLNORM_OP_ADD_RMSNORM)
    st = clnorm_add_rmsnorm(h.ctx, h.queue, rows, cols, dtype, call.eps, call.x, call.residual,
                            call.sum_out, call.gamma, call.y, call.rstd, 0, NULL, NULL);
  else if (op == CLNORM_OP_LAYERNORM_BWD)
    st = clnorm_layernorm_backward(h.ctx, h.queue, rows, cols, dtype, call.dy, call.x, call.gamma,
                                   call.mean, call.rstd, call.y, call.dgamma, call.dbeta, 0, NULL,
                                   NULL);
  else
    st = clnorm_rmsnorm_backward(h.ctx, h.queue, rows, cols, dtype, call.dy, call.x, call.gamma,
                                 call.rstd, call.y, call.dgamma, 0, NULL, NULL);
  if (st != CLNORM_OK) {
    harness_fail("%s: %s: %s", where, clnorm_status_string(st), clnorm_ctx_errmsg(h.ctx));
    goto done;
  }
  for (int i = 0; i < 11; i++)
    if (im[i].buf)
      harness_read(&h, im[i].buf, im[i].elems * im[i].es, im[i].host);
  /* main output */
  get_matrix(&im[y_img], dtype, off, stride, rows, cols, got);
  double e = 0.0;
  for (size_t r = 0; r < rows; r++) {
    double er;
    if (bwd) { /* relative to max(max |dx ref|, rstd * max |g|) of the row: see the top */
      er = clnorm_ref_dx_error(cols, got + r * cols, ref + r * cols, dtype, dy + r * cols,
                               affine ? gamma : NULL, frstd[r]);
    } else {
      er = measure(op, dtype, cols, got + r * cols, ref + r * cols);
    }
    e = er > e || isnan(er) ? er : e;
  }
  note(e, where);
  if (!(e <= 1.0))
    harness_fail("%s: %s error %.3g of the allowance", where, bwd ? "dx" : "y", e);
  if (nan_row >= 0 && !bwd)
    for (size_t i = 0; i < cols; i++)
      if (!isnan(got[(size_t)nan_row * cols + i])) {
        harness_fail("%s: NaN row %ld: y[%zu] = %g, not NaN", where, nan_row, i,
                     got[(size_t)nan_row * cols + i]);
        break;
      }
  if (want_sum) {
    get_matrix(&im[s_img], dtype, off, stride, rows, cols, got);
    for (size_t i = 0; i < n; i++)
      if (memcmp(&got[i], &hsum[i], sizeof(float)) != 0 && !(isnan(got[i]) && isnan(hsum[i]))) {
        harness_fail("%s: sum_out[%zu] = %.9g, reference h %.9g (x %.9g + res %.9g)", where, i,
                     got[i], hsum[i], x[i], res[i]);
        break;
      }
  }
  if (!bwd && want_stats) {
    get_matrix(&im[8], CLNORM_F32, 0, rows, 1, rows, gotv);
    double es = 0.0;
    for (size_t r = 0; r < rows; r++) {
      const double err = clnorm_ref_rel_error(gotv[r], rrstd[r]);
      es = err > es || isnan(err) ? err : es;
    }
    if (!rms) {
      get_matrix(&im[7], CLNORM_F32, 0, rows, 1, rows, gotv);
      for (size_t r = 0; r < rows; r++) {
        const double m = rmean[r];
        const double err = isnan(m) ? (isnan(gotv[r]) ? 0.0 : INFINITY)
                                    : fabs((double)gotv[r] - m) / (fabs(m) + 1.0 / rrstd[r]);
        es = err > es || isnan(err) ? err : es;
      }
    }
    if (!(es <= 1e-5))
      harness_fail("%s: mean/rstd error %.3g (tolerance 1e-5)", where, es);
  }
  if (want_dg || want_db) {
    for (int w = 0; w < 2; w++) {
      if (!(w == 0 ? want_dg : want_db))
        continue;
      get_matrix(&im[w == 0 ? 9 : 10], dtype, 0, cols, 1, cols, gotv);
      const double ew = measure(op, dtype, cols, gotv, w == 0 ? rdg : rdb);
      note(ew, where);
      if (!(ew <= 1.0))
        harness_fail("%s: %s error %.3g of the allowance", where, w == 0 ? "dgamma" : "dbeta", ew);
    }
  }
  /* everything else unchanged: gaps of outputs, inputs that are not outputs, vectors' pads */
  for (int i = 0; i < 11; i++) {
    if (!im[i].buf)
      continue;
    const int out_matrix = i == y_img || (want_sum && i == s_img);
    const int out_vec = (!bwd && (i == 7 || i == 8)) || i == 9 || i == 10;
    int ok;
    if (out_matrix)
      ok = gaps_unchanged(&im[i], off, stride, rows, cols);
    else if (out_vec)
      ok = gaps_unchanged(&im[i], 0, i >= 9 ? cols : rows, 1, i >= 9 ? cols : rows);
    else
      ok = gaps_unchanged(&im[i], 0, 1, 0, 0);
    if (!ok)
      harness_fail("%s: buffer %d changed outside its output", where, i);
  }
done:
  for (int i = 0; i < 11; i++)
    if (im[i].buf)
      image_free(&im[i]);
  free(x), free(res), free(dy), free(got), free(gamma), free(beta), free(hsum), free(fmean);
  free(frstd), free(gotv), free(ref), free(rmean), free(rrstd), free(rdg), free(rdb);
  return ran;
}

#define FAMILIES (3 * 4 * 2 * 3)
/* Elements of a row a variant can take: tpr * vec * hold when it holds the row, else any. */
static unsigned long capacity(const clnorm_variant *v) {
  return v->hold ? (unsigned long)v->tpr * v->vec * v->hold : 1ul << 30;
}

static size_t family(const clnorm_variant *v) {
  const size_t shared = v->tpr == 1 ? 0 : v->tpr == v->wg ? 1 : 2;
  const size_t hold = v->hold == 0 ? 0 : v->hold == 1 ? 1 : v->hold <= 4 ? 2 : 3;
  return ((shared * 4 + hold) * 2 + (v->stats == CLNORM_STATS_TWOPASS)) * 3 +
         ((unsigned)v->reduce % 3);
}

/* The sweep of one op and dtype: every shape through the dispatcher, layouts, NaN rows, and
 * one variant of each family on a few shapes. */
static void sweep(clnorm_op op, clnorm_dtype dtype) {
  size_t k = 0, runs = 0;
  for (size_t ci = 0; ci < sizeof cols_set / sizeof cols_set[0]; ci++)
    for (size_t ri = 0; ri < sizeof rows_set / sizeof rows_set[0]; ri++, k++) {
      const size_t cols = cols_set[ci], rows = rows_set[ri];
      if ((rows == 1000 && cols > 4097) || (cols >= 65536 && rows > 3))
        continue;
      layout l = {0, 0, 0,
                  (int)(k % 7 == 3 ? NO_AFFINE : 0) | (k % 5 == 2 ? NO_STATS : 0) |
                      (k % 3 == 1 ? NO_SUM : 0) | (k % 4 == 1 ? NO_DGAMMA : 0) |
                      (k % 6 == 2 ? NO_DBETA : 0) | (k % 11 == 5 ? 24 : 0)};
      run(op, dtype, rows, cols, &l, NULL, -1, NULL);
      runs++;
    }
  static const layout layouts[] = {
      {3, 1003, 0, 0},       /* odd offset, stride > cols */
      {16, 1024, 0, 0},      /* aligned offset and stride */
      {0, 0, 1, 0},          /* in place: y == x, sum_out == residual, dx == dy */
      {5, 1001, 1, 0},       /* in place, strided */
      {0, 0, 1, IN_PLACE_X}, /* y == residual, sum_out == x; dx == x */
      {1, 1002, 1, IN_PLACE_X},
  };
  for (size_t i = 0; i < sizeof layouts / sizeof layouts[0]; i++) {
    run(op, dtype, 7, 1000, &layouts[i], NULL, -1, NULL);
    run(op, dtype, 3, 33, &layouts[i], NULL, -1, NULL);
    runs += 2;
  }
  if (!is_bwd(op)) {
    const layout dense = {0, 0, 0, 0};
    run(op, dtype, 5, 768, &dense, NULL, 2, "NaN row 2");
    run(op, dtype, 3, 4097, &dense, NULL, 0, "NaN row 0");
    runs += 2;
  }
  /* forced: one variant of each family (the one with the largest row capacity), on shapes at
   * its own width and one odd-offset shape (width 1) */
  const size_t nv = clnorm_variant_list(h.ctx, op, dtype, NULL, 0);
  clnorm_variant *vars = malloc((nv ? nv : 1) * sizeof *vars);
  clnorm_variant_list(h.ctx, op, dtype, vars, nv);
  if (!nv)
    harness_fail("%s %s: no variants listed", clnorm_op_name(op), clnorm_dtype_name(dtype));
  /* Per family, the variants in order of row capacity, largest first: the first one the device
   * accepts after its build is run. */
  size_t *order = malloc((nv ? nv : 1) * sizeof *order);
  for (size_t i = 0; i < nv; i++)
    order[i] = i;
  for (size_t i = 1; i < nv; i++) /* insertion sort by capacity, descending, stable */
    for (size_t j = i; j > 0 && capacity(&vars[order[j]]) > capacity(&vars[order[j - 1]]); j--) {
      const size_t t = order[j];
      order[j] = order[j - 1];
      order[j - 1] = t;
    }
  size_t families = 0, forced = 0, refused = 0;
  for (size_t f = 0; f < FAMILIES; f++) {
    int listed = 0, done = 0;
    for (size_t o = 0; o < nv && !done; o++) {
      const clnorm_variant *v = &vars[order[o]];
      if (family(v) != f)
        continue;
      listed = 1;
      const size_t cap = v->hold ? (size_t)v->tpr * v->vec * v->hold : 4096;
      const size_t c1 = cap < 768 ? cap : 768;
      const layout dense = {0, 0, 0, 0}, aligned = {16, c1 + 16, 0, 0}, inplace = {0, 0, 1, 0};
      const layout odd = {1, (cap < 31 ? cap : 31) + 2, 0, 0};
      size_t ok = (size_t)run(op, dtype, 64, c1, &dense, v, -1, NULL);
      if (!ok && refused_after_build) {
        refused++;
        continue;
      }
      ok += (size_t)run(op, dtype, 1, (cap < 33 ? cap : 33) + (v->vec > 1 ? v->vec - 1 : 0) / 2,
                        &dense, v, -1, "tail");
      ok += (size_t)run(op, dtype, 5, c1, &aligned, v, -1, NULL);
      ok += (size_t)run(op, dtype, 3, cap < 4096 ? cap : 4096, &inplace, v, -1, NULL);
      ok += (size_t)run(op, dtype, 3, cap < 31 ? cap : 31, &odd, v, -1, NULL);
      if (!ok) {
        char text[128];
        clnorm_variant_format(v, text, sizeof text);
        harness_fail("%s %s: variant %s took no shape", clnorm_op_name(op),
                     clnorm_dtype_name(dtype), text);
      }
      forced += ok;
      done = 1;
    }
    families += (size_t)done;
    if (listed && !done)
      printf("  %s %s: family %zu: every listed variant refused by the device after its build\n",
             clnorm_op_name(op), clnorm_dtype_name(dtype), f);
  }
  free(order);
  if (refused)
    printf("  %s %s: %zu variants refused by the device after their build (skipped for the next "
           "of their family)\n",
           clnorm_op_name(op), clnorm_dtype_name(dtype), refused);
  free(vars);
  printf("  %s %s: %zu dispatcher runs, %zu forced runs over %zu families\n", clnorm_op_name(op),
         clnorm_dtype_name(dtype), runs, forced, families);
  fflush(stdout);
}

static double loss(int rms, size_t rows, size_t cols, const double *xd, const float *dy,
                   const double *gd, const double *bd) {
  double out = 0.0;
  for (size_t r = 0; r < rows; r++) {
    const double *xr = xd + r * cols;
    double m = 0.0, v = 0.0;
    for (size_t i = 0; i < cols; i++)
      m += xr[i];
    m = rms ? 0.0 : m / (double)cols;
    for (size_t i = 0; i < cols; i++)
      v += (xr[i] - m) * (xr[i] - m);
    const double rs = 1.0 / sqrt(v / (double)cols + 1e-5);
    for (size_t i = 0; i < cols; i++)
      out += dy[r * cols + i] * ((xr[i] - m) * rs * gd[i] + (rms ? 0.0 : bd[i]));
  }
  return out;
}

/* Central differences of the float64 forward: loss = sum(dy * y); d loss / d x, gamma, beta
 * against the kernels' dx, dgamma, dbeta (float32 outputs). */
static void finite_differences(clnorm_op op, size_t rows, size_t cols) {
  const int rms = is_rms(op);
  const size_t n = rows * cols;
  float *x = malloc(n * 4), *dy = malloc(n * 4), *gamma = malloc(cols * 4),
        *beta = malloc(cols * 4);
  random_values(x, n, CLNORM_F32, 0.0);
  random_values(dy, n, CLNORM_F32, 0.0);
  for (size_t i = 0; i < cols; i++) {
    gamma[i] = (float)(0.5 + clnorm_rng_uniform(&rng));
    beta[i] = (float)(clnorm_rng_uniform(&rng) - 0.5);
  }
  /* forward in float64 with double parameters */
  double *xd = malloc(n * 8), *gd = malloc(cols * 8), *bd = malloc(cols * 8);
  for (size_t i = 0; i < n; i++)
    xd[i] = x[i];
  for (size_t i = 0; i < cols; i++)
    gd[i] = gamma[i], bd[i] = beta[i];
  double *fdx = malloc(n * 8), *fdg = malloc(cols * 8), *fdb = malloc(cols * 8);
  const double step = 1e-6;
  double lp, lm;
  for (size_t i = 0; i < n; i++) {
    const double keep = xd[i];
    xd[i] = keep + step;
    lp = loss(rms, rows, cols, xd, dy, gd, bd);
    xd[i] = keep - step;
    lm = loss(rms, rows, cols, xd, dy, gd, bd);
    xd[i] = keep;
    fdx[i] = (lp - lm) / (2 * step);
  }
  for (size_t i = 0; i < cols; i++) {
    double keep = gd[i];
    gd[i] = keep + step;
    lp = loss(rms, rows, cols, xd, dy, gd, bd);
    gd[i] = keep - step;
    lm = loss(rms, rows, cols, xd, dy, gd, bd);
    gd[i] = keep;
    fdg[i] = (lp - lm) / (2 * step);
    keep = bd[i];
    bd[i] = keep + step;
    lp = loss(rms, rows, cols, xd, dy, gd, bd);
    bd[i] = keep - step;
    lm = loss(rms, rows, cols, xd, dy, gd, bd);
    bd[i] = keep;
    fdb[i] = (lp - lm) / (2 * step);
  }
  /* the kernels, with the forward's mean and rstd from the library itself */
  cl_mem xb = harness_buffer(&h, n * 4, x), dyb = harness_buffer(&h, n * 4, dy);
  cl_mem gb = harness_buffer(&h, cols * 4, gamma), bb = harness_buffer(&h, cols * 4, beta);
  cl_mem yb = harness_buffer(&h, n * 4, NULL), mb = harness_buffer(&h, rows * 4, NULL);
  cl_mem rb = harness_buffer(&h, rows * 4, NULL), dxb = harness_buffer(&h, n * 4, NULL);
  cl_mem dgb = harness_buffer(&h, cols * 4, NULL), dbb = harness_buffer(&h, cols * 4, NULL);
  const clnorm_rows xr = {xb, 0, 0}, yr = {yb, 0, 0}, dyr = {dyb, 0, 0}, dxr = {dxb, 0, 0};
  clnorm_status st;
  if (rms) {
    st = clnorm_rmsnorm(h.ctx, h.queue, rows, cols, CLNORM_F32, 1e-5f, xr, gb, yr, rb, 0, NULL,
                        NULL);
    if (st == CLNORM_OK)
      st = clnorm_rmsnorm_backward(h.ctx, h.queue, rows, cols, CLNORM_F32, dyr, xr, gb, rb, dxr,
                                   dgb, 0, NULL, NULL);
  } else {
    st = clnorm_layernorm(h.ctx, h.queue, rows, cols, CLNORM_F32, 1e-5f, xr, gb, bb, yr, mb, rb, 0,
                          NULL, NULL);
    if (st == CLNORM_OK)
      st = clnorm_layernorm_backward(h.ctx, h.queue, rows, cols, CLNORM_F32, dyr, xr, gb, mb, rb,
                                     dxr, dgb, dbb, 0, NULL, NULL);
  }
  if (st != CLNORM_OK) {
    harness_fail("finite differences %s: %s: %s", clnorm_op_name(op), clnorm_status_string(st),
                 clnorm_ctx_errmsg(h.ctx));
  } else {
    float *dx = malloc(n * 4), dg[64], db[64];
    harness_read(&h, dxb, n * 4, dx);
    harness_read(&h, dgb, cols * 4, dg);
    if (!rms)
      harness_read(&h, dbb, cols * 4, db);
    /* central differences of step 1e-6 in float64: truncation ~1e-12 * f''', rounding ~1e-10;
     * float32 mean and rstd feed the kernels: 1e-4 of the row's / vector's max covers both */
    double e = 0.0;
    for (size_t r = 0; r < rows; r++) {
      const double er = clnorm_ref_scaled_error(cols, dx + r * cols, fdx + r * cols, 0, 0.0, 1e-4);
      e = er > e ? er : e;
    }
    const double eg = clnorm_ref_scaled_error(cols, dg, fdg, 0, 0.0, 1e-4);
    const double eb = rms ? 0.0 : clnorm_ref_scaled_error(cols, db, fdb, 0, 0.0, 1e-4);
    if (!(e <= 1.0 && eg <= 1.0 && eb <= 1.0))
      harness_fail("finite differences %s rows=%zu cols=%zu: dx %.3g dgamma %.3g dbeta %.3g of "
                   "1e-4 of the max",
                   clnorm_op_name(op), rows, cols, e, eg, eb);
    printf("  finite differences %s rows=%zu cols=%zu: dx %.2g dgamma %.2g dbeta %.2g (x 1e-4)\n",
           clnorm_op_name(op), rows, cols, e, eg, eb);
    free(dx);
  }
  cl_mem all[] = {xb, dyb, gb, bb, yb, mb, rb, dxb, dgb, dbb};
  for (size_t i = 0; i < 10; i++)
    clReleaseMemObject(all[i]);
  free(x), free(dy), free(gamma), free(beta), free(xd), free(gd), free(bd), free(fdx), free(fdg);
  free(fdb);
}

/* The split backward's second kernel with row lanes (cl/backward.cl ROWL: one vector of the tile
 * per work-item and 128 or more work-items, the GPUs' split variants): forced split variants on
 * shapes with a partial last tile and a tail of columns past the last whole vector, each checked
 * to take the split path. */
static void split_row_lanes(void) {
  static const clnorm_variant vars[] = {
      {256, 256, 4, 0, CLNORM_REDUCE_LOCAL, CLNORM_STATS_WELFORD},
      {128, 128, 8, 0, CLNORM_REDUCE_LOCAL, CLNORM_STATS_WELFORD}};
  /* columns: a partial last tile, then a tail past the last whole vector; widened (same
   * remainders) until the call splits on this device (a CPU splits from two tiles per compute
   * unit, clnorm__split_count) */
  static const size_t shapes[][2] = {{9, 8200}, {37, 4099}};
  const layout dense = {0, 0, 0, 0};
  size_t runs = 0;
  for (int o = CLNORM_OP_LAYERNORM_BWD; o <= CLNORM_OP_RMSNORM_BWD; o++)
    for (int d = 0; d <= 2; d += 2)
      for (size_t v = 0; v < sizeof vars / sizeof vars[0]; v++)
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
          clnorm_call call = {.op = (clnorm_op)o,
                              .dtype = (clnorm_dtype)d,
                              .rows = shapes[s][0],
                              .cols = shapes[s][1]};
          if (vars[v].wg > h.ctx->info.max_wg)
            continue;
          while (clnorm__split_count(&h.ctx->info, &call, &vars[v]) < 2 && call.cols < (1u << 20))
            call.cols = 2 * call.cols - call.cols % 4096;
          if (clnorm__split_count(&h.ctx->info, &call, &vars[v]) < 2)
            harness_fail("split_row_lanes: %zux%zu wg=%u is not split on this device", call.rows,
                         call.cols, vars[v].wg);
          run((clnorm_op)o, (clnorm_dtype)d, call.rows, call.cols, &dense, &vars[v], -1,
              "split row lanes");
          runs++;
        }
  printf("  split row lanes: %zu forced runs\n", runs);
}

static void determinism(clnorm_op op, clnorm_dtype dtype, size_t rows, size_t cols);

/* The backward's column strips (cl/strip.cl, CLNORM_BWD_STRIP): switched on for these calls
 * only (on for all of them where the environment has it), through the dispatcher's variant and
 * forced ones (a GPU's 256 and 128 work-items with row lanes, a CPU's one work-item), on shapes
 * with a partial last strip, a tail of columns past the last whole vector, row ranges of unequal
 * length and the weight gradients absent; each checked to take the strip path. */
static void strip_path(void) {
  static const clnorm_variant vars[] = {{256, 256, 4, 0, CLNORM_REDUCE_LOCAL, CLNORM_STATS_WELFORD},
                                        {128, 128, 8, 0, CLNORM_REDUCE_LOCAL, CLNORM_STATS_WELFORD},
                                        {1, 1, 16, 0, CLNORM_REDUCE_LOCAL, CLNORM_STATS_WELFORD}};
  static const size_t shapes[][2] = {{37, 16387}, {3, 16384}, {70, 20000}};
  const layout dense = {0, 0, 0, 0}, strided = {5, 20007, 0, 0}, in_place = {0, 0, 1, 0};
  const layout no_w = {0, 0, 0, NO_DGAMMA | NO_DBETA}, no_b = {0, 0, 0, NO_DBETA};
  /* and the row ranges of a GPU of 132 compute units (clnorm__bwd_strip_ranges): several a call,
   * some empty, where this device's few would give one */
  const int was = h.ctx->info.bwd_strip;
  const cl_uint units = h.ctx->info.compute_units;
  h.ctx->info.bwd_strip = 1;
  h.ctx->info.compute_units = 132;
  size_t runs = 0;
  for (int o = CLNORM_OP_LAYERNORM_BWD; o <= CLNORM_OP_RMSNORM_BWD; o++)
    for (int d = 0; d <= 2; d++)
      for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const clnorm_call call = {.op = (clnorm_op)o,
                                  .dtype = (clnorm_dtype)d,
                                  .rows = shapes[s][0],
                                  .cols = shapes[s][1]};
        const layout *l = s == 0 ? &dense : s == 1 ? (d == 1 ? &no_w : &in_place) : &strided;
        if (s == 2 && d == 0)
          l = &no_b;
        if (run((clnorm_op)o, (clnorm_dtype)d, call.rows, call.cols, l, NULL, -1, "strips"))
          runs++;
        for (size_t v = 0; v < sizeof vars / sizeof vars[0]; v++) {
          if (vars[v].wg > h.ctx->info.max_wg)
            continue;
          if (clnorm__bwd_strip_ranges(&h.ctx->info, &call, &vars[v]) < 2)
            harness_fail("strip_path: %zux%zu wg=%u takes no strips or one row range", call.rows,
                         call.cols, vars[v].wg);
          runs += (size_t)run((clnorm_op)o, (clnorm_dtype)d, call.rows, call.cols,
                              v == 0 ? l : &dense, &vars[v], -1, "strips");
        }
      }
  /* their partial rows added in a fixed order: the same bits on a second run */
  for (int o = CLNORM_OP_LAYERNORM_BWD; o <= CLNORM_OP_RMSNORM_BWD; o++)
    for (int d = 0; d <= 2; d++)
      determinism((clnorm_op)o, (clnorm_dtype)d, 70, 20000);
  h.ctx->info.bwd_strip = was;
  h.ctx->info.compute_units = units;
  printf("  column strips: %zu runs\n", runs);
}

/* The backward pass twice on the same inputs: the same bits of dx, dgamma, dbeta. */
static void determinism(clnorm_op op, clnorm_dtype dtype, size_t rows, size_t cols) {
  const size_t es = clnorm_ref_dtype_size(dtype), n = rows * cols;
  float *v = malloc(n * 4);
  unsigned char *x = malloc(n * es), *dy = malloc(n * es), *out[2][3];
  random_values(v, n, dtype, 0.0);
  clnorm_ref_pack(dtype, v, n, x);
  random_values(v, n, dtype, 0.0);
  clnorm_ref_pack(dtype, v, n, dy);
  float *mean = malloc(rows * 4), *rstd = malloc(rows * 4);
  for (size_t r = 0; r < rows; r++)
    mean[r] = 0.01f * (float)(r % 7), rstd[r] = 1.0f + 0.001f * (float)(r % 13);
  cl_mem xb = harness_buffer(&h, n * es, x), dyb = harness_buffer(&h, n * es, dy);
  cl_mem mb = harness_buffer(&h, rows * 4, mean), rb = harness_buffer(&h, rows * 4, rstd);
  cl_mem dxb = harness_buffer(&h, n * es, NULL), dgb = harness_buffer(&h, cols * es, NULL);
  cl_mem dbb = harness_buffer(&h, cols * es, NULL);
  for (int t = 0; t < 2; t++) {
    harness_fill(&h, dxb, n * es, NAN);
    const clnorm_rows dyr = {dyb, 0, 0}, xr = {xb, 0, 0}, dxr = {dxb, 0, 0};
    const clnorm_status st =
        op == CLNORM_OP_LAYERNORM_BWD
            ? clnorm_layernorm_backward(h.ctx, h.queue, rows, cols, dtype, dyr, xr, NULL, mb, rb,
                                        dxr, dgb, dbb, 0, NULL, NULL)
            : clnorm_rmsnorm_backward(h.ctx, h.queue, rows, cols, dtype, dyr, xr, NULL, rb, dxr,
                                      dgb, 0, NULL, NULL);
    if (st != CLNORM_OK)
      harness_fail("determinism %s: %s", clnorm_op_name(op), clnorm_status_string(st));
    out[t][0] = malloc(n * es);
    out[t][1] = malloc(cols * es);
    out[t][2] = calloc(cols, es);
    harness_read(&h, dxb, n * es, out[t][0]);
    harness_read(&h, dgb, cols * es, out[t][1]);
    if (op == CLNORM_OP_LAYERNORM_BWD)
      harness_read(&h, dbb, cols * es, out[t][2]);
  }
  if (memcmp(out[0][0], out[1][0], n * es) || memcmp(out[0][1], out[1][1], cols * es) ||
      memcmp(out[0][2], out[1][2], cols * es))
    harness_fail("determinism %s %s rows=%zu cols=%zu: two runs differ", clnorm_op_name(op),
                 clnorm_dtype_name(dtype), rows, cols);
  for (int t = 0; t < 2; t++)
    for (int i = 0; i < 3; i++)
      free(out[t][i]);
  cl_mem all[] = {xb, dyb, mb, rb, dxb, dgb, dbb};
  for (size_t i = 0; i < 7; i++)
    clReleaseMemObject(all[i]);
  free(v), free(x), free(dy), free(mean), free(rstd);
}

/* Stores of values halfway between two of the dtype's values, and beyond its range: dgamma of
 * rmsnorm_backward with rows 1, dy 1, x 2^j and rstd t stores exactly 2^j * t (every float32
 * product and sum is exact), rounded as the store must; sum_out of the add ops stores x + res. */
static void store_rounding(clnorm_dtype dtype) {
  static const float ts[] = {1.0f + 0x1p-11f,
                             1.0f + 0x1p-10f + 0x1p-11f,
                             1.0f + 0x1p-8f,
                             1.0f + 0x1p-7f + 0x1p-8f,
                             1.0f + 0x1p-8f + 0x1p-20f,
                             3.0f * 0x1p-25f,
                             0x1p-25f,
                             65520.0f / 16.0f,
                             -1.0f - 0x1p-11f,
                             NAN};
  const size_t cols = 40;
  float x[40], ones[40], dg[40];
  for (size_t i = 0; i < cols; i++) {
    x[i] = ldexpf(1.0f, (int)i - 20); /* 2^-20 .. 2^19, all exact in f16 except the ends */
    x[i] = clnorm_ref_store(x[i], dtype) == x[i] ? x[i] : 1.0f;
    ones[i] = 1.0f;
  }
  const size_t es = clnorm_ref_dtype_size(dtype);
  unsigned char bx[160], bo[160], bg[160];
  clnorm_ref_pack(dtype, x, cols, bx);
  clnorm_ref_pack(dtype, ones, cols, bo);
  cl_mem xb = harness_buffer(&h, cols * es, bx), dyb = harness_buffer(&h, cols * es, bo);
  cl_mem dxb = harness_buffer(&h, cols * es, NULL), dgb = harness_buffer(&h, cols * es, NULL);
  cl_mem rb = harness_buffer(&h, 4, NULL);
  size_t checked = 0;
  for (size_t t = 0; t < sizeof ts / sizeof ts[0]; t++) {
    harness_write(&h, rb, 4, &ts[t]);
    const clnorm_rows dyr = {dyb, 0, 0}, xr = {xb, 0, 0}, dxr = {dxb, 0, 0};
    const clnorm_status st = clnorm_rmsnorm_backward(h.ctx, h.queue, 1, cols, dtype, dyr, xr, NULL,
                                                     rb, dxr, dgb, 0, NULL, NULL);
    if (st != CLNORM_OK) {
      harness_fail("store rounding %s: %s", clnorm_dtype_name(dtype), clnorm_status_string(st));
      continue;
    }
    harness_read(&h, dgb, cols * es, bg);
    clnorm_ref_unpack(dtype, bg, cols, dg);
    for (size_t i = 0; i < cols; i++) {
      volatile float exact = x[i] * ts[t];
      const float want = clnorm_ref_store(exact, dtype);
      checked++;
      if (memcmp(&want, &dg[i], 4) != 0 && !(isnan(want) && isnan(dg[i])))
        harness_fail("store rounding %s: dgamma of %.10g stored as %.10g, expected %.10g",
                     clnorm_dtype_name(dtype), (double)exact, (double)dg[i], (double)want);
    }
  }
  cl_mem all[] = {xb, dyb, dxb, dgb, rb};
  for (size_t i = 0; i < 5; i++)
    clReleaseMemObject(all[i]);
  /* sum_out ties and overflow, vector stores (cols 32) */
  float xs[32], rs[32], hs[32], got[32];
  for (size_t i = 0; i < 32; i++) {
    const int e = (int)(i % 8) - 4;
    xs[i] = ldexpf(i % 2 ? 1.0f + 0x1p-7f : 1.0f, e);
    rs[i] = ldexpf(dtype == CLNORM_F16 ? 0x1p-11f : 0x1p-8f, e) * (i % 4 >= 2 ? -1.0f : 1.0f);
    if (dtype == CLNORM_F16 && i >= 28)
      xs[i] = 65504.0f, rs[i] = i % 2 ? 16.0f : 15.0f; /* 65520 (tie: Inf), 65519 */
  }
  for (size_t i = 0; i < 32; i++)
    xs[i] = clnorm_ref_store(xs[i], dtype), rs[i] = clnorm_ref_store(rs[i], dtype);
  clnorm_ref_add(1, 32, dtype, xs, 32, rs, 32, hs);
  unsigned char b1[128], b2[128];
  clnorm_ref_pack(dtype, xs, 32, b1);
  clnorm_ref_pack(dtype, rs, 32, b2);
  cl_mem ab = harness_buffer(&h, 32 * es, b1), resb = harness_buffer(&h, 32 * es, b2);
  cl_mem sb = harness_buffer(&h, 32 * es, NULL), yb = harness_buffer(&h, 32 * es, NULL);
  const clnorm_rows a = {ab, 0, 0}, r = {resb, 0, 0}, s = {sb, 0, 0}, y = {yb, 0, 0};
  const clnorm_status st = clnorm_add_rmsnorm(h.ctx, h.queue, 1, 32, dtype, 1e-5f, a, r, s, NULL, y,
                                              NULL, 0, NULL, NULL);
  if (st != CLNORM_OK)
    harness_fail("sum_out rounding %s: %s", clnorm_dtype_name(dtype), clnorm_status_string(st));
  harness_read(&h, sb, 32 * es, b1);
  clnorm_ref_unpack(dtype, b1, 32, got);
  for (size_t i = 0; i < 32; i++)
    if (memcmp(&got[i], &hs[i], 4) != 0)
      harness_fail("sum_out rounding %s: %.10g + %.10g stored as %.10g, expected %.10g",
                   clnorm_dtype_name(dtype), (double)xs[i], (double)rs[i], (double)got[i],
                   (double)hs[i]);
  clReleaseMemObject(ab), clReleaseMemObject(resb), clReleaseMemObject(sb);
  clReleaseMemObject(yb);
  printf("  store rounding %s: %zu dgamma stores and 32 sum_out stores checked\n",
         clnorm_dtype_name(dtype), checked);
}

/* The reference's conversions: float -> 16 bits against clnorm_ref_round (two independent
 * roundings) on a stride through all float bit patterns, and every 16-bit pattern round trip. */
static void conversions(void) {
  size_t bad = 0;
  for (uint64_t u = 0; u <= 0xFFFFFFFFull; u += 65521) {
    const uint32_t b = (uint32_t)u;
    float v;
    memcpy(&v, &b, 4);
    for (int d = 1; d <= 2; d++) {
      const double want = clnorm_ref_round((double)v, d);
      const float got = clnorm_ref_store(v, d);
      if (!(isnan(v) ? isnan(got) : (double)got == want) && bad++ < 5)
        harness_fail("conversion %s of %08x: %.10g, rounded %.10g", d == 1 ? "f16" : "bf16",
                     (unsigned)b, (double)got, want);
    }
  }
  for (uint32_t b = 0; b < 65536; b++) {
    const float f = clnorm_ref_f16_value((uint16_t)b), g = clnorm_ref_bf16_value((uint16_t)b);
    if ((!isnan(f) && clnorm_ref_f16_bits(f) != b) || (!isnan(g) && clnorm_ref_bf16_bits(g) != b))
      if (bad++ < 5)
        harness_fail("16-bit pattern %04x does not round-trip", (unsigned)b);
  }
}

/* rows == 0: the weight gradients are sums over no rows, zeros; dx is untouched. */
static void zero_rows_backward(clnorm_op op, clnorm_dtype dtype) {
  const size_t cols = 37, es = dtype == CLNORM_F32 ? 4 : 2;
  unsigned char poison[37 * 4];
  memset(poison, 0x7f, sizeof poison); /* NaN-ish bits in every dtype */
  cl_mem x = harness_buffer(&h, cols * es, poison), dy = harness_buffer(&h, cols * es, poison);
  cl_mem stat = harness_buffer(&h, 4, poison);
  cl_mem dg = harness_buffer(&h, cols * es, poison), db = harness_buffer(&h, cols * es, poison);
  const clnorm_rows xr = {x, 0, 0}, dyr = {dy, 0, 0}, dxr = {dy, 0, 0};
  cl_event done = NULL;
  const clnorm_status st =
      op == CLNORM_OP_LAYERNORM_BWD
          ? clnorm_layernorm_backward(h.ctx, h.queue, 0, cols, dtype, dyr, xr, NULL, stat, stat,
                                      dxr, dg, db, 0, NULL, &done)
          : clnorm_rmsnorm_backward(h.ctx, h.queue, 0, cols, dtype, dyr, xr, NULL, stat, dxr, dg, 0,
                                    NULL, &done);
  if (st != CLNORM_OK || !done)
    harness_fail("%s %s rows=0: %s", clnorm_op_name(op), clnorm_dtype_name(dtype),
                 clnorm_status_string(st));
  if (done) {
    clWaitForEvents(1, &done);
    clReleaseEvent(done);
  }
  unsigned char got[37 * 4];
  harness_read(&h, dg, cols * es, got);
  for (size_t i = 0; i < cols * es; i++)
    if (got[i] != 0) {
      harness_fail("%s %s rows=0: dgamma byte %zu is %02x, not 0", clnorm_op_name(op),
                   clnorm_dtype_name(dtype), i, got[i]);
      break;
    }
  harness_read(&h, db, cols * es, got);
  const int want_zero = op == CLNORM_OP_LAYERNORM_BWD;
  for (size_t i = 0; i < cols * es; i++)
    if (got[i] != (want_zero ? 0 : 0x7f)) {
      harness_fail("%s %s rows=0: dbeta byte %zu is %02x", clnorm_op_name(op),
                   clnorm_dtype_name(dtype), i, got[i]);
      break;
    }
  harness_read(&h, dy, cols * es, got);
  if (memcmp(got, poison, cols * es) != 0)
    harness_fail("%s %s rows=0: dx was written", clnorm_op_name(op), clnorm_dtype_name(dtype));
  clReleaseMemObject(x);
  clReleaseMemObject(dy);
  clReleaseMemObject(stat);
  clReleaseMemObject(dg);
  clReleaseMemObject(db);
}

/* The fused add with one work-item per row in work-groups of every size the device lists for
 * it, 16-bit rows: on PoCL's CPU device these kernels keep each row in a private buffer, and PoCL
 * gives every work-item of a group its own copy on one thread's stack. With 8192 floats a
 * work-item, a group of 256 overflowed the 8 MiB stack (SIGSEGV, test_random --seed 3 case 221 of
 * random_aligned, 2026-11-25); the buffer is now sized from the group (clnorm__row_buffer). Each
 * group size runs rows of the longest the buffer takes, one element more (which the buffer does
 * not take), and 8192 elements, the most any buffer takes. */
static void large_groups(void) {
  for (int o = CLNORM_OP_ADD_LAYERNORM; o <= CLNORM_OP_ADD_RMSNORM; o++)
    for (int d = 1; d <= 2; d++) {
      const clnorm_op op = (clnorm_op)o;
      const clnorm_dtype dtype = (clnorm_dtype)d;
      const size_t nv = clnorm_variant_list(h.ctx, op, dtype, NULL, 0);
      clnorm_variant *vars = malloc((nv ? nv : 1) * sizeof *vars);
      if (!vars) {
        fprintf(stderr, "test_ops: out of memory\n");
        exit(1);
      }
      clnorm_variant_list(h.ctx, op, dtype, vars, nv);
      size_t runs = 0;
      for (size_t i = 0; i < nv; i++) {
        const clnorm_variant *v = &vars[i];
        if (v->tpr != 1 || v->hold != 0 || v->vec != 16 || v->wg < 64)
          continue;
        if (op == CLNORM_OP_ADD_LAYERNORM && v->stats != CLNORM_STATS_TWOPASS)
          continue;
        const layout dense = {0, 0, 0, 0};
        const size_t rows = (v->wg < 256 ? v->wg : 256) + 1;
        const size_t fit = clnorm__row_buffer(&h.ctx->info, v->wg);
        const size_t cols[3] = {fit ? fit : 250, fit + 1, CLNORM_ROW_BUFFER_SIZE};
        for (int c = 0; c < 3; c++) {
          char label[80];
          snprintf(label, sizeof label, "wg=%u, row buffer of %zu floats", v->wg, fit);
          run(op, dtype, rows, cols[c], &dense, v, c == 1 ? 1 : -1, label);
          runs++;
        }
      }
      free(vars);
      printf("  %s %s: %zu runs in work-groups of 64 or more work-items, one per row\n",
             clnorm_op_name(op), clnorm_dtype_name(dtype), runs);
    }
}

/* The first of n elements of `dtype` at a and b that differ other than by both being NaN (a
 * NaN's sign and payload are not specified); n when none. */
static size_t first_difference(const unsigned char *a, const unsigned char *b, size_t n,
                               int dtype) {
  const size_t es = clnorm_ref_dtype_size(dtype);
  for (size_t i = 0; i < n; i++) {
    float u, v;
    clnorm_ref_unpack(dtype, a + i * es, 1, &u);
    clnorm_ref_unpack(dtype, b + i * es, 1, &v);
    if (memcmp(&u, &v, sizeof u) != 0 && !(isnan(u) && isnan(v)))
      return i;
  }
  return n;
}

/* Settings that change how a kernel moves or converts 16-bit elements but not the values: every
 * output of every op must be the same from a context with the setting off (k = 0) and one with it
 * on (k = 1), through the dispatcher and through forced variants, on rows with the largest and the
 * smallest values, subnormals, a NaN and an Inf (NaN payloads exempt).
 * - CLNORM_HW_HALF: float16 through x86's F16C instructions (PoCL on x86, where the kernel compiler
 *   has them) against OpenCL's vload_half / vstore_half_rte (PoCL 3.1's vstore_half_rte writes a
 *   NaN as 7fff where vcvtps2ph writes 7e00). Forced: a variant of 16 and one of 8 lanes with one
 *   work-item per row, row re-read. Where the compiler has no F16C (Oclgrind, GPUs) both contexts
 *   run the same code and the check holds trivially.
 * - CLNORM_RAW16: rows as vectors of uint, converted in registers (NVIDIA's default), against the
 *   built-ins, both with aligned rows and plain stores (the path a GPU takes). Forced: variants of
 *   several work-items per row, held and re-read, of 8 and 16 lanes, and one work-item per row. */
typedef struct {
  const char *label;
  const char *env[3]; /* settings of both contexts, NAME=VALUE */
  const char *name;   /* the setting compared: 0 in the first context, 1 in the second */
  clnorm_dtype dtype;
  int gpu_shapes; /* forced variants of several work-items per row, not one */
} same_bits_case;

/* NAME=VALUE into the environment; the old value (or its absence) kept in *old */
typedef struct {
  char name[64], value[64];
  int was_set;
} env_saved;

static void env_push(const char *assign, env_saved *old) {
  const char *eq = strchr(assign, '=');
  snprintf(old->name, sizeof old->name, "%.*s", (int)(eq - assign), assign);
  const char *was = getenv(old->name);
  old->was_set = was != NULL;
  snprintf(old->value, sizeof old->value, "%s", was ? was : "");
  setenv(old->name, eq + 1, 1);
}

static void env_pop(const env_saved *old) {
  if (old->was_set)
    setenv(old->name, old->value, 1);
  else
    unsetenv(old->name);
}

static void same_bits(const same_bits_case *sc) {
  clnorm_ctx *c[2] = {NULL, NULL};
  for (int k = 0; k < 2; k++) {
    env_saved old[4];
    int n = 0;
    for (; n < 3 && sc->env[n]; n++)
      env_push(sc->env[n], &old[n]);
    char assign[80];
    snprintf(assign, sizeof assign, "%s=%d", sc->name, k);
    env_push(assign, &old[n++]);
    if (clnorm_ctx_create(h.context, h.device, &c[k]) != CLNORM_OK)
      harness_fail("%s: clnorm_ctx_create failed", sc->label);
    while (n > 0)
      env_pop(&old[--n]);
  }
  const clnorm_dtype dt = sc->dtype;
  /* GPU-shaped variants: rows of whole vectors that fit a held variant, and one row of 1003
   * columns, whose last 3 take the scalar tail at 8 lanes */
  static const size_t cpu_shapes[][2] = {{7, 1000}, {3, 4101}, {64, 512}};
  static const size_t gpu_shapes[][2] = {{7, 1000}, {3, 2056}, {1, 1003}};
  const size_t(*shapes)[2] = sc->gpu_shapes ? gpu_shapes : cpu_shapes;
  const size_t es = 2;
  size_t compared = 0, runs = 0;
  for (size_t sh = 0; sh < 3 && c[0] && c[1]; sh++) {
    const size_t rows = shapes[sh][0], cols = shapes[sh][1], n = rows * cols;
    float *v = malloc(n * sizeof(float));
    unsigned char *bytes = malloc(n * es), *got[2] = {malloc(n * es), malloc(n * es)};
    if (!v || !bytes || !got[0] || !got[1]) {
      harness_fail("%s: out of memory", sc->label);
      free(v), free(bytes), free(got[0]), free(got[1]);
      break;
    }
    cl_mem in[4]; /* x, residual, dy, gamma and beta (cols elements of the same) */
    for (int b = 0; b < 3; b++) {
      random_values(v, n, dt, b == 0 ? 3.0 : 0.0);
      if (b == 0) { /* the largest and the smallest halves, subnormals; NaN and Inf rows */
        if (dt == CLNORM_F16) {
          v[0] = 65504.0f, v[1] = -65504.0f, v[2] = 0x1p-24f, v[3] = -3.0f * 0x1p-24f;
          v[4] = 1023.0f * 0x1p-24f, v[cols - 1] = 0x1p-14f;
        } else {
          v[0] = 0x1.fep127f, v[1] = -0x1.fep127f, v[2] = 0x1p-133f, v[3] = -3.0f * 0x1p-133f;
          v[4] = 127.0f * 0x1p-133f, v[cols - 1] = 0x1p-126f;
        }
        if (rows > 1) /* a NaN row and an Inf row, where the shape has them */
          v[cols + 7] = NAN;
        if (rows > 2)
          v[2 * cols + 1] = INFINITY;
      }
      clnorm_ref_pack(dt, v, n, bytes);
      in[b] = harness_buffer(&h, n * es, bytes);
    }
    random_values(v, cols, dt, 0.0);
    clnorm_ref_pack(dt, v, cols, bytes);
    in[3] = harness_buffer(&h, cols * es, bytes);
    /* outputs: sizes rounded up to 4 bytes, which the NaN fill (a float pattern) needs */
    const size_t ny = (n * es + 3) / 4 * 4, ng = (cols * es + 3) / 4 * 4;
    cl_mem y = harness_buffer(&h, ny, NULL), sum = harness_buffer(&h, ny, NULL);
    cl_mem mean = harness_buffer(&h, rows * 4, NULL), rstd = harness_buffer(&h, rows * 4, NULL);
    cl_mem dg = harness_buffer(&h, ng, NULL), db = harness_buffer(&h, ng, NULL);
    for (int o = 0; o <= 5; o++) {
      const clnorm_op op = (clnorm_op)o;
      clnorm_call call = {.op = op, .rows = rows, .cols = cols, .dtype = dt, .eps = 1e-5f};
      call.x = (clnorm_rows){in[0], 0, 0};
      call.y = (clnorm_rows){y, 0, 0};
      call.gamma = in[3];
      call.beta = is_rms(op) ? NULL : in[3];
      if (is_bwd(op)) { /* the statistics of x, from the forward of the context with it off */
        clnorm_call fwd = call;
        fwd.op = is_rms(op) ? CLNORM_OP_RMSNORM : CLNORM_OP_LAYERNORM;
        fwd.mean = is_rms(op) ? NULL : mean;
        fwd.rstd = rstd;
        if (clnorm_run(c[0], h.queue, &fwd, NULL, 0, NULL, NULL) != CLNORM_OK)
          harness_fail("%s: the forward before %s failed", sc->label, clnorm_op_name(op));
        call.beta = NULL;
        call.dy = (clnorm_rows){in[2], 0, 0};
        call.mean = is_rms(op) ? NULL : mean;
        call.rstd = rstd;
        call.dgamma = dg;
        call.dbeta = is_rms(op) ? NULL : db;
      } else {
        call.mean = is_rms(op) ? NULL : mean;
        call.rstd = rstd;
      }
      if (is_add(op)) {
        call.residual = (clnorm_rows){in[1], 0, 0};
        call.sum_out = (clnorm_rows){sum, 0, 0};
      }
      /* the dispatcher's choice, then the forced variants of the case: GPU-shaped ones (128
       * work-items per row at 8 lanes, 4 vectors held; 64 at 16 lanes, re-read; one work-item
       * per row at 8 lanes), or one work-item per row at 16 and at 8 lanes, re-read */
      static const clnorm_variant cpu_want[] = {{2, 1, 16, 0, CLNORM_REDUCE_LOCAL, 0},
                                                {2, 1, 8, 0, CLNORM_REDUCE_LOCAL, 0}};
      static const clnorm_variant gpu_want[] = {{128, 128, 8, 4, CLNORM_REDUCE_LOCAL, 0},
                                                {64, 64, 16, 0, CLNORM_REDUCE_LOCAL, 0},
                                                {2, 1, 8, 0, CLNORM_REDUCE_LOCAL, 0}};
      const clnorm_variant *want = sc->gpu_shapes ? gpu_want : cpu_want;
      const int nwant = sc->gpu_shapes ? 3 : 2;
      clnorm_variant pick[4];
      int np = 1;
      for (int w = 0; w < nwant; w++) {
        pick[np] = want[w];
        if (clnorm_variant_check(c[1], &call, &pick[np]) != CLNORM_OK)
          harness_fail("%s: %s: the wanted variant %d is not in the space: %s", sc->label,
                       clnorm_op_name(op), w, clnorm_ctx_errmsg(c[1]));
        else
          np++;
      }
      for (int p = 0; p < np; p++) {
        /* what each context wrote: y (dx), then sum_out, dgamma, dbeta, mean, rstd */
        cl_mem outs[6] = {y,
                          is_add(op) ? sum : NULL,
                          is_bwd(op) ? dg : NULL,
                          is_bwd(op) && !is_rms(op) ? db : NULL,
                          !is_bwd(op) && !is_rms(op) ? mean : NULL,
                          !is_bwd(op) ? rstd : NULL};
        const size_t out_bytes[6] = {n * es, n * es, cols * es, cols * es, rows * 4, rows * 4};
        unsigned char *first[6] = {NULL};
        for (int k = 0; k < 2; k++) {
          for (int b = 0; b < 6; b++)
            if (outs[b])
              harness_fill(&h, outs[b], b < 2 ? ny : b < 4 ? ng : rows * 4, NAN);
          const clnorm_status st =
              clnorm_run(c[k], h.queue, &call, p ? &pick[p] : NULL, 0, NULL, NULL);
          if (st != CLNORM_OK) {
            harness_fail("%s: %s %zux%zu %s with %s=%d: %s", sc->label, clnorm_op_name(op), rows,
                         cols, p ? "forced" : "dispatcher", sc->name, k, clnorm_ctx_errmsg(c[k]));
            break;
          }
          for (int b = 0; b < 6; b++) {
            if (!outs[b])
              continue;
            unsigned char *buf = k ? got[1] : malloc(out_bytes[b]);
            if (!buf) {
              harness_fail("%s: out of memory", sc->label);
              continue;
            }
            harness_read(&h, outs[b], out_bytes[b], buf);
            if (k == 0) {
              first[b] = buf;
            } else if (first[b]) {
              const int odt = b < 4 ? (int)dt : CLNORM_F32; /* mean and rstd: float */
              const size_t on = out_bytes[b] / clnorm_ref_dtype_size(odt);
              const size_t at = first_difference(first[b], buf, on, odt);
              if (at < on)
                harness_fail("%s: %s %zux%zu (%s, vec %u tpr %u hold %u): output %d differs at "
                             "element %zu between %s=0 and 1",
                             sc->label, clnorm_op_name(op), rows, cols, p ? "forced" : "dispatcher",
                             p ? pick[p].vec : 0u, p ? pick[p].tpr : 0u, p ? pick[p].hold : 0u, b,
                             at, sc->name);
              compared += out_bytes[b];
            }
          }
        }
        for (int b = 0; b < 6; b++)
          free(first[b]);
        runs++;
      }
    }
    cl_mem all[] = {in[0], in[1], in[2], in[3], y, sum, mean, rstd, dg, db};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
      clReleaseMemObject(all[i]);
    free(v), free(bytes), free(got[0]), free(got[1]);
  }
  for (int k = 0; k < 2; k++)
    if (c[k])
      clnorm_ctx_destroy(c[k]);
  printf("  %s with and without %s: %zu runs, %zu output bytes the same\n", sc->label, sc->name,
         runs, compared);
  if (runs < (sc->gpu_shapes ? 3 * 6 * 4 : 3 * 6 * 3))
    harness_fail("%s: only %zu runs (3 shapes x 6 ops x the dispatcher and forced variants)",
                 sc->label, runs);
}

static void same_bits_all(void) {
  static const same_bits_case cases[] = {
      {"hw half", {NULL}, "CLNORM_HW_HALF", CLNORM_F16, 0},
      {"raw16 f16",
       {"CLNORM_UNALIGNED=0", "CLNORM_STREAM_STORES=0", NULL},
       "CLNORM_RAW16",
       CLNORM_F16,
       1},
      {"raw16 bf16",
       {"CLNORM_UNALIGNED=0", "CLNORM_STREAM_STORES=0", NULL},
       "CLNORM_RAW16",
       CLNORM_BF16,
       1},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
    same_bits(&cases[i]);
}

/* The parts of the suite, one ctest each (tests/CMakeLists.txt); a name not among them is refused,
 * so that a mistyped part cannot run another part and pass. */
static const char *const parts[] = {"forward",         "add",    "backward",
                                    "backward_reduce", "strips", "store"};

int main(int argc, char **argv) {
  const char *part = argc > 1 ? argv[1] : "forward";
  int known = 0;
  for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
    known |= strcmp(part, parts[i]) == 0;
  if (argc > 2 || !known) {
    fprintf(stderr, "usage: test_ops [");
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
      fprintf(stderr, "%s%s", i ? "|" : "", parts[i]);
    fprintf(stderr, "] (not \"%s\")\n", argc > 2 ? argv[2] : part);
    return 2;
  }
  char title[64];
  snprintf(title, sizeof title, "test_ops %s", part);
  harness_open(&h, title);
  clnorm_rng_seed(&rng, 11);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  if (strcmp(part, "forward") == 0) {
    for (int d = 1; d <= 2; d++) {
      sweep(CLNORM_OP_LAYERNORM, (clnorm_dtype)d);
      sweep(CLNORM_OP_RMSNORM, (clnorm_dtype)d);
    }
  } else if (strcmp(part, "add") == 0) {
    for (int d = 0; d <= 2; d++) {
      sweep(CLNORM_OP_ADD_LAYERNORM, (clnorm_dtype)d);
      sweep(CLNORM_OP_ADD_RMSNORM, (clnorm_dtype)d);
    }
    large_groups();
  } else if (strcmp(part, "backward") == 0) {
    for (int d = 0; d <= 2; d++) {
      sweep(CLNORM_OP_LAYERNORM_BWD, (clnorm_dtype)d);
      sweep(CLNORM_OP_RMSNORM_BWD, (clnorm_dtype)d);
    }
    split_row_lanes();
  } else if (strcmp(part, "backward_reduce") == 0) {
    /* ops_backward_gpu_reduce (CLNORM_REDUCE_VEC=1): the column reduction's store in each dtype
     * and of each op once, half the sweeps of "backward", each a program per width with the
     * reduction's build option (CI's time, docs/TESTING.md); "backward" with the variable set
     * runs all six. */
    sweep(CLNORM_OP_LAYERNORM_BWD, CLNORM_F32);
    sweep(CLNORM_OP_LAYERNORM_BWD, CLNORM_BF16);
    sweep(CLNORM_OP_RMSNORM_BWD, CLNORM_F16);
    split_row_lanes();
  } else if (strcmp(part, "strips") == 0) {
    strip_path();
  } else { /* store */
    conversions();
    for (int o = 4; o <= 5; o++) {
      finite_differences((clnorm_op)o, 3, 7);
      finite_differences((clnorm_op)o, 3, 33);
      for (int d = 0; d <= 2; d++) {
        determinism((clnorm_op)o, (clnorm_dtype)d, 1000, 1024);
        /* NVIDIA: LayerNorm's 16-bit weight-gradient sums in local memory (cl/backward.cl
         * BWD_LACC) */
        determinism((clnorm_op)o, (clnorm_dtype)d, 1000, 4096);
        determinism((clnorm_op)o, (clnorm_dtype)d, 3, 65536);
      }
    }
    for (int d = 1; d <= 2; d++)
      store_rounding((clnorm_dtype)d);
    same_bits_all();
    for (int d = 0; d <= 2; d++) {
      zero_rows_backward(CLNORM_OP_LAYERNORM_BWD, (clnorm_dtype)d);
      zero_rows_backward(CLNORM_OP_RMSNORM_BWD, (clnorm_dtype)d);
    }
  }
  clock_gettime(CLOCK_MONOTONIC, &t1);
  harness_close(&h);
  printf("%s: worst error %.3g of the allowance at %s; %.1f s: %s (%d failures)\n", title,
         worst_seen, worst_case[0] ? worst_case : "-",
         (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec),
         harness_failures ? "FAIL" : "PASS", harness_failures);
  return harness_failures ? 1 : 0;
}
