/* Measuring one shape: the host data and its float64 reference checks (verify/ref.h), a checked
 * run of a variant, timing, and a small thread pool for work that runs on every core. */
#define _POSIX_C_SOURCE 200809L
#include "normtune.h"

int uses_matrix(clnorm_op op, int m) {
  if (m == MAT_RES || m == MAT_SUM)
    return clnorm__op_add(op);
  if (m == MAT_DY)
    return clnorm__op_backward(op);
  return 1;
}

int is_input(int m) { return m == MAT_X || m == MAT_RES || m == MAT_DY; }

int has_beta(clnorm_op op) { return !clnorm__op_rms(op) && !clnorm__op_backward(op); }

int has_mean(clnorm_op op) { return !clnorm__op_rms(op); }

void host_data_free(host_data *hd) {
  free(hd->x);
  free(hd->res);
  free(hd->dy);
  free(hd->gamma);
  free(hd->beta);
  free(hd->mean);
  free(hd->rstd);
  memset(hd, 0, sizeof *hd);
}

/* Rows of N(0,1) with a per-row shift and scale, each element drawn. The verification set's
 * rows 0..2 are adversarial: row 0 is 1e4 + N(0,1) (where E[x^2] - E[x]^2 fails); with
 * `special`, row 1 holds a NaN and row 2 an Inf. */
static void fill_rows(float *x, size_t rows, size_t cols, clnorm_rng *rng, int adversarial,
                      int special) {
  for (size_t r = 0; r < rows; r++) {
    const double shift = (clnorm_rng_uniform(rng) - 0.5) * 4.0;
    const double scale = 0.5 + 2.0 * clnorm_rng_uniform(rng);
    for (size_t i = 0; i < cols; i++)
      x[r * cols + i] = (float)(shift + scale * clnorm_rng_normal(rng));
  }
  if (adversarial && rows >= 3) {
    for (size_t i = 0; i < cols; i++)
      x[i] = (float)(1e4 + clnorm_rng_normal(rng));
    if (special) {
      x[cols + (size_t)(clnorm_rng_uniform(rng) * (double)cols)] = NAN;
      x[2 * cols + (size_t)(clnorm_rng_uniform(rng) * (double)cols)] = INFINITY;
    }
  }
}

/* The same kind of rows for large matrices, from a pool of normals at a random start per row:
 * drawing every element (a logarithm and a cosine each) would take seconds per matrix. */
static void fill_rows_pooled(float *x, size_t rows, size_t cols, clnorm_rng *rng,
                             const float *pool) {
  for (size_t r = 0; r < rows; r++) {
    const double shift = (clnorm_rng_uniform(rng) - 0.5) * 4.0;
    const double scale = 0.5 + 2.0 * clnorm_rng_uniform(rng);
    const size_t start = (size_t)(clnorm_rng_next(rng) & (POOL_SIZE - 1));
    float *row = x + r * cols;
    for (size_t i = 0; i < cols; i++)
      row[i] = (float)(shift + scale * (double)pool[(start + i) & (POOL_SIZE - 1)]);
  }
}

static void store_all(float *v, size_t n, clnorm_dtype dtype) {
  if (dtype != CLNORM_F32)
    for (size_t i = 0; i < n; i++)
      v[i] = clnorm_ref_store(v[i], dtype);
}

int host_data_make(host_data *hd, clnorm_dtype dtype, size_t rows, size_t cols, int want_res,
                   int want_dy, uint64_t seed, int verification, int special) {
  memset(hd, 0, sizeof *hd);
  hd->dtype = dtype;
  hd->rows = rows;
  hd->cols = cols;
  const size_t n = rows * cols;
  hd->x = malloc(n * sizeof(float));
  hd->res = want_res ? malloc(n * sizeof(float)) : NULL;
  hd->dy = want_dy ? malloc(n * sizeof(float)) : NULL;
  hd->gamma = malloc(cols * sizeof(float));
  hd->beta = malloc(cols * sizeof(float));
  float *pool = verification ? NULL : malloc(POOL_SIZE * sizeof(float));
  if (!hd->x || (want_res && !hd->res) || (want_dy && !hd->dy) || !hd->gamma || !hd->beta ||
      (!verification && !pool)) {
    free(pool);
    host_data_free(hd);
    return 0;
  }
  clnorm_rng rng;
  clnorm_rng_seed(&rng, seed);
  for (size_t i = 0; i < cols; i++) {
    hd->gamma[i] = (float)(0.5 + clnorm_rng_uniform(&rng));
    hd->beta[i] = (float)(clnorm_rng_uniform(&rng) - 0.5);
  }
  if (verification) {
    fill_rows(hd->x, rows, cols, &rng, 1, special);
    if (hd->res)
      fill_rows(hd->res, rows, cols, &rng, 0, 0);
    if (hd->dy)
      fill_rows(hd->dy, rows, cols, &rng, 0, 0);
  } else {
    for (size_t i = 0; i < POOL_SIZE; i++)
      pool[i] = (float)clnorm_rng_normal(&rng);
    fill_rows_pooled(hd->x, rows, cols, &rng, pool);
    if (hd->res)
      fill_rows_pooled(hd->res, rows, cols, &rng, pool);
    if (hd->dy)
      fill_rows_pooled(hd->dy, rows, cols, &rng, pool);
    free(pool);
  }
  store_all(hd->x, n, dtype);
  if (hd->res)
    store_all(hd->res, n, dtype);
  if (hd->dy)
    store_all(hd->dy, n, dtype);
  store_all(hd->gamma, cols, dtype);
  store_all(hd->beta, cols, dtype);
  return 1;
}

static size_t ref_block_rows(size_t cols) {
  const size_t block = ((size_t)1 << 20) / cols;
  return block ? block : 1;
}

int host_stats(host_data *hd, int rms) {
  if (hd->stats == (rms ? 2 : 1))
    return 1;
  const size_t rows = hd->rows, cols = hd->cols, block = ref_block_rows(cols);
  if (!hd->mean)
    hd->mean = malloc(rows * sizeof(float));
  if (!hd->rstd)
    hd->rstd = malloc(rows * sizeof(float));
  double *y = malloc((block < rows ? block : rows) * cols * sizeof(double));
  double *mean = malloc(block * sizeof(double)), *rstd = malloc(block * sizeof(double));
  const int ok = hd->mean && hd->rstd && y && mean && rstd;
  for (size_t r0 = 0; ok && r0 < rows; r0 += block) {
    const size_t n = rows - r0 < block ? rows - r0 : block;
    if (rms)
      clnorm_ref_rmsnorm(n, cols, hd->x + r0 * cols, cols, NULL, 1e-5, y, rstd);
    else
      clnorm_ref_layernorm(n, cols, hd->x + r0 * cols, cols, NULL, NULL, 1e-5, y, mean, rstd);
    for (size_t k = 0; k < n; k++) {
      hd->mean[r0 + k] = rms ? 0.0f : (float)mean[k];
      hd->rstd[r0 + k] = (float)rstd[k];
    }
  }
  free(y);
  free(mean);
  free(rstd);
  hd->stats = ok ? (rms ? 2 : 1) : 0;
  return ok;
}

/* dgamma (and dbeta) of the whole of hd, in float64, in blocks of rows. 0 when out of memory. */
static int ref_weight_grads(clnorm_op op, const host_data *hd, double *dgamma, double *dbeta) {
  const size_t rows = hd->rows, cols = hd->cols, block = ref_block_rows(cols);
  const int rms = clnorm__op_rms(op);
  double *dx = malloc((block < rows ? block : rows) * cols * sizeof(double));
  double *dg = malloc(cols * sizeof(double)), *db = malloc(cols * sizeof(double));
  const int ok = dx && dg && db;
  for (size_t i = 0; ok && i < cols; i++) {
    dgamma[i] = 0.0;
    if (dbeta)
      dbeta[i] = 0.0;
  }
  for (size_t r0 = 0; ok && r0 < rows; r0 += block) {
    const size_t n = rows - r0 < block ? rows - r0 : block;
    const size_t at = r0 * cols;
    if (rms)
      clnorm_ref_rmsnorm_backward(n, cols, hd->dy + at, cols, hd->x + at, cols, hd->gamma,
                                  hd->rstd + r0, dx, dg);
    else
      clnorm_ref_layernorm_backward(n, cols, hd->dy + at, cols, hd->x + at, cols, hd->gamma,
                                    hd->mean + r0, hd->rstd + r0, dx, dg, db);
    for (size_t i = 0; i < cols; i++) {
      dgamma[i] += dg[i];
      if (dbeta)
        dbeta[i] += db[i];
    }
  }
  free(dx);
  free(dg);
  free(db);
  return ok;
}

static void note(errors *e, double rel, double scaled, const char *what, int count_rel) {
  rel = isnan(rel) ? INFINITY : rel;
  scaled = isnan(scaled) ? INFINITY : scaled;
  if (count_rel && rel > e->rel)
    e->rel = rel;
  if (scaled > e->scaled) {
    e->scaled = scaled;
    e->what = what;
  }
}

/* Checks n rows of outputs against the float64 reference of the same rows' inputs (dense,
 * n x cols; fmean/frstd: the backward's inputs of these rows). got_* are NULL where the op has
 * no such output. The measures (verify/ref.h, as the tests; M: the row's largest |ref|):
 *   y:          |y - ref| <= TOL_FWD * M (float32); 1 ulp of the dtype at ref + TOL_FWD * M
 *               (float16, bfloat16: the float32 result rounded once, plus float32's error)
 *   dx:         clnorm_ref_dx_error: the same with TOL_BWD relative to max(M, rstd * max
 *               |gamma * dy|) of the row, the one rule, all-zero rows included
 *   mean, rstd: relative error <= TOL_FWD
 *   sum_out:    bit-exact against the reference h = x + residual rounded to dtype
 * adversarial: row 0 is the row of 1e4 + N(0,1), held to TOL_ADV and left out of e->rel.
 * e->rel is |got - ref| over the scale above (M, or dx's scale). 0 when out of memory. */
static int check_rows(clnorm_op op, clnorm_dtype dtype, size_t n, size_t cols, const float *x,
                      const float *res, const float *dy, const float *gamma, const float *beta,
                      const float *fmean, const float *frstd, const float *got_y,
                      const float *got_sum, const float *got_mean, const float *got_rstd,
                      int adversarial, errors *e) {
  const int bwd = clnorm__op_backward(op), add = clnorm__op_add(op), rms = clnorm__op_rms(op);
  const double ulps = clnorm_ref_dtype_ulps(dtype);
  double *ref = malloc(n * cols * sizeof(double));
  double *ref_mean = malloc(n * sizeof(double)), *ref_rstd = malloc(n * sizeof(double));
  float *h = add ? malloc(n * cols * sizeof(float)) : NULL;
  if (!ref || !ref_mean || !ref_rstd || (add && !h)) {
    free(ref);
    free(ref_mean);
    free(ref_rstd);
    free(h);
    return 0;
  }
  if (bwd && rms)
    clnorm_ref_rmsnorm_backward(n, cols, dy, cols, x, cols, gamma, frstd, ref, NULL);
  else if (bwd)
    clnorm_ref_layernorm_backward(n, cols, dy, cols, x, cols, gamma, fmean, frstd, ref, NULL, NULL);
  else if (add && rms)
    clnorm_ref_add_rmsnorm(n, cols, dtype, x, cols, res, cols, gamma, 1e-5, h, ref, ref_rstd);
  else if (add)
    clnorm_ref_add_layernorm(n, cols, dtype, x, cols, res, cols, gamma, beta, 1e-5, h, ref,
                             ref_mean, ref_rstd);
  else if (rms)
    clnorm_ref_rmsnorm(n, cols, x, cols, gamma, 1e-5, ref, ref_rstd);
  else
    clnorm_ref_layernorm(n, cols, x, cols, gamma, beta, 1e-5, ref, ref_mean, ref_rstd);
  for (size_t r = 0; r < n; r++) {
    const int adv = adversarial && r == 0;
    const double tol = adv ? CLNORM_TOL_ADV : CLNORM_TOL_FWD;
    const float *got = got_y + r * cols;
    const double *want = ref + r * cols;
    if (bwd) {
      const double scale = clnorm_ref_dx_scale(cols, want, dy + r * cols, gamma, frstd[r]);
      note(e, clnorm_ref_scaled_error(cols, got, want, dtype, 0.0, scale),
           clnorm_ref_dx_error(cols, got, want, dtype, dy + r * cols, gamma, frstd[r]), "dx", 1);
      continue;
    }
    note(e, clnorm_ref_scaled_error(cols, got, want, dtype, 0.0, 1.0),
         clnorm_ref_scaled_error(cols, got, want, dtype, ulps, tol), "y", !adv);
    if (got_sum) {
      /* bit-exact: err/tol is 0, or 1 + the ulps it is off (NaN where the reference is not) */
      double worst = 0.0, largest = 0.0, diff = 0.0;
      for (size_t i = 0; i < cols; i++) {
        const float g = got_sum[r * cols + i], w = h[r * cols + i];
        largest = isfinite(w) && fabs(w) > largest ? fabs(w) : largest;
        if (memcmp(&g, &w, sizeof g) == 0 || (isnan(g) && isnan(w)))
          continue;
        const double off = fabs((double)g - (double)w);
        diff = off > diff || isnan(off) ? off : diff;
        const double ulps_off = 1.0 + off / clnorm_ref_ulp(w, dtype);
        worst = ulps_off > worst || isnan(ulps_off) ? ulps_off : worst;
      }
      note(e, diff / (largest > 0.0 ? largest : 1.0), worst, "sum_out", !adv);
    }
    if (got_rstd) {
      const double err = clnorm_ref_rel_error(got_rstd[r], ref_rstd[r]);
      note(e, err, err / tol, "rstd", !adv);
    }
    if (got_mean) {
      /* relative to |mean| + the row's standard deviation */
      const double m = ref_mean[r];
      const double err = isnan(m) ? (isnan(got_mean[r]) ? 0.0 : INFINITY)
                                  : fabs((double)got_mean[r] - m) / (fabs(m) + 1.0 / ref_rstd[r]);
      note(e, err, err / tol, "mean", !adv);
    }
  }
  free(ref);
  free(ref_mean);
  free(ref_rstd);
  free(h);
  return 1;
}

clnorm_status run_checked(session *s, const shape *sh, const operands *o, const clnorm_variant *v,
                          const host_data *in, const size_t *idx, size_t n, int adversarial,
                          errors *e) {
  const clnorm_op op = sh->op;
  const clnorm_dtype dtype = sh->dtype;
  const int bwd = clnorm__op_backward(op), add = clnorm__op_add(op);
  const size_t cols = sh->cols, rows = o->rows;
  e->rel = 0.0;
  e->scaled = 0.0;
  e->what = "none";
  cl_int err = poison(s, o->mat[MAT_Y], dtype, rows * cols);
  err |= poison(s, o->mat[MAT_SUM], dtype, rows * cols);
  if (!bwd) {
    err |= poison(s, o->mean, CLNORM_F32, rows);
    err |= poison(s, o->rstd, CLNORM_F32, rows);
  }
  err |= poison(s, o->dgamma, dtype, cols);
  err |= poison(s, o->dbeta, dtype, cols);
  if (err != CL_SUCCESS)
    return CLNORM_E_OPENCL;
  const clnorm_call call = call_of(sh, o);
  clnorm_status st = clnorm_run(s->ctx, s->queue, &call, v, 0, NULL, NULL);
  if (st != CLNORM_OK)
    return st;
  int fail = 0;
  float *got_y = malloc(n * cols * sizeof(float));
  float *got_sum = add ? malloc(n * cols * sizeof(float)) : NULL;
  float *stats = malloc(rows * sizeof(float) * 2);
  float *got_mean = malloc(n * sizeof(float)), *got_rstd = malloc(n * sizeof(float));
  float *fmean = malloc(n * sizeof(float)), *frstd = malloc(n * sizeof(float));
  float *x = idx ? gather(in->x, cols, idx, n, &fail) : NULL;
  float *res = idx ? gather(in->res, cols, idx, n, &fail) : NULL;
  float *dy = idx ? gather(in->dy, cols, idx, n, &fail) : NULL;
  float *got_w = bwd ? malloc(cols * sizeof(float)) : NULL;
  double *ref_dg = bwd ? malloc(cols * sizeof(double)) : NULL;
  double *ref_db = bwd ? malloc(cols * sizeof(double)) : NULL;
  fail |= !got_y || (add && !got_sum) || !stats || !got_mean || !got_rstd || !fmean || !frstd ||
          (bwd && (!got_w || !ref_dg || !ref_db));
  if (fail) {
    st = CLNORM_E_NO_MEMORY;
    goto done;
  }
  err = read_rows(s, o->mat[MAT_Y], dtype, cols, idx, n, got_y);
  if (add)
    err |= read_rows(s, o->mat[MAT_SUM], dtype, cols, idx, n, got_sum);
  if (o->mean)
    err |= clEnqueueReadBuffer(s->queue, o->mean, CL_TRUE, 0, rows * 4, stats, 0, NULL, NULL);
  if (o->rstd)
    err |=
        clEnqueueReadBuffer(s->queue, o->rstd, CL_TRUE, 0, rows * 4, stats + rows, 0, NULL, NULL);
  if (err != CL_SUCCESS) {
    st = CLNORM_E_OPENCL;
    goto done;
  }
  for (size_t k = 0; k < n; k++) {
    const size_t r = idx ? idx[k] : k;
    got_mean[k] = stats[r];
    got_rstd[k] = stats[rows + r];
    fmean[k] = in->mean ? in->mean[r] : 0.0f;
    frstd[k] = in->rstd ? in->rstd[r] : 0.0f;
  }
  if (!check_rows(op, dtype, n, cols, idx ? x : in->x, idx ? res : in->res, idx ? dy : in->dy,
                  in->gamma, has_beta(op) ? in->beta : NULL, fmean, frstd, got_y, got_sum,
                  !bwd && o->mean ? got_mean : NULL, !bwd ? got_rstd : NULL, adversarial, e)) {
    st = CLNORM_E_NO_MEMORY;
    goto done;
  }
  if (bwd) {
    if (!ref_weight_grads(op, in, ref_dg, o->dbeta ? ref_db : NULL)) {
      st = CLNORM_E_NO_MEMORY;
      goto done;
    }
    const double ulps = dtype == CLNORM_F32 ? 0.0 : 1.0;
    const cl_mem w[2] = {o->dgamma, o->dbeta};
    const double *ref_w[2] = {ref_dg, ref_db};
    for (int i = 0; i < 2; i++) {
      if (!w[i])
        continue;
      if (read_rows(s, w[i], dtype, cols, NULL, 1, got_w) != CL_SUCCESS) {
        st = CLNORM_E_OPENCL;
        goto done;
      }
      note(e, clnorm_ref_scaled_error(cols, got_w, ref_w[i], dtype, 0.0, 1.0),
           clnorm_ref_scaled_error(cols, got_w, ref_w[i], dtype, ulps, CLNORM_TOL_BWD),
           i == 0 ? "dgamma" : "dbeta", 1);
    }
  }
done:
  free(got_y);
  free(got_sum);
  free(stats);
  free(got_mean);
  free(got_rstd);
  free(fmean);
  free(frstd);
  free(x);
  free(res);
  free(dy);
  free(got_w);
  free(ref_dg);
  free(ref_db);
  return st;
}

/* A shape only planned (shape_plan) has no buffers: measuring it is a bug of the caller. */
static void need_loaded(const shape *sh, const char *what) {
  if (!sh->loaded)
    die(1, "internal error: %s of %s %s %zu x %zu before its buffers were made (shape_load)", what,
        op_name(sh->op), dtype_name(sh->dtype), sh->rows, sh->cols);
}

clnorm_status verify(session *s, shape *sh, const clnorm_variant *v, errors *e) {
  need_loaded(sh, "verify");
  return run_checked(s, sh, &sh->vset, v, &sh->vdata, NULL, sh->vset.rows, 1, e);
}

/* The test hook of docs/TESTING.md: NORMTUNE_TEST_TIMES=ROWS:RATIO[:NOISE],... gives every
 * timing of a shape of those row counts a forced time, and runs nothing: 1 ms for the
 * heuristic's variant, RATIO ms for any other, times 1 + NOISE and 1 - NOISE in turn. The A/B
 * logic (a winner must beat the heuristic by more than the noise, at every row count tuned) is
 * then tested deterministically on a CPU whose real timings move by 10-20 %. Returns 0 when the
 * shape's rows are not listed (or the variable is not set). */
static int forced_time(session *s, const shape *sh, const clnorm_variant *v, timing *out) {
  const char *spec = getenv("NORMTUNE_TEST_TIMES");
  static unsigned flips;
  while (spec && *spec) {
    char *end = NULL;
    const unsigned long long rows = strtoull(spec, &end, 10);
    double ratio = 0.0, noise = 0.0;
    if (end && *end == ':')
      ratio = strtod(end + 1, &end);
    if (end && *end == ':')
      noise = strtod(end + 1, &end);
    if (rows == sh->rows && ratio > 0) {
      const clnorm_call call = shape_call(sh, 0);
      clnorm_variant h, chosen;
      clnorm_choice why;
      clnorm_heuristic(s->ctx, &call, &h);
      if (!v && clnorm_choose(s->ctx, &call, &chosen, &why) == CLNORM_OK)
        v = &chosen;
      double t = 1e-3;
      if (!v || differences(v, &h) != 0)
        t *= ratio * (flips++ % 2 ? 1.0 - noise : 1.0 + noise);
      memset(out, 0, sizeof *out);
      out->median = out->min = out->own = t;
      return 1;
    }
    spec = end ? strchr(end, ',') : NULL;
    spec = spec ? spec + 1 : NULL;
  }
  return 0;
}

void session_fall_back(session *s, const char *why) {
  if (s->events_only)
    die(1,
        "the profiling events of %s (%s) cannot be believed: %s. `normtune tune` ranks and "
        "stores kernel times and refuses to tune this device; `normtune bench` and `verify` "
        "time it by the wall clock",
        s->dev.name, s->dev.platform_name, why);
  if (!s->clock.wall)
    fprintf(stderr,
            "normtune: timing by the wall clock (enqueue to completion, launch latency "
            "included): the profiling events of %s (%s) cannot be believed: %s\n",
            s->dev.name, s->dev.platform_name, why);
  tool_clock_fall_back(&s->clock, why);
}

/* One run of call: seconds by its events (span from the first kernel's start, *own the last
 * kernel's own), or by the wall clock; *wall the wall time, enqueue to completion. Negative on a
 * failed event (a profiling readers' code, tool_profiling_error), with *st CLNORM_OK. */
static double run_once(session *s, const clnorm_call *call, const clnorm_variant *v, double *own,
                       double *wall, clnorm_status *st) {
  cl_event ev, first;
  const double start = tool_now();
  *st = clnorm_run_span(s->ctx, s->queue, call, v, 0, NULL, &first, &ev);
  if (*st != CLNORM_OK)
    return 0.0;
  double t;
  if (s->clock.wall) {
    clReleaseEvent(first);
    if (clWaitForEvents(1, &ev) != CL_SUCCESS)
      *st = CLNORM_E_OPENCL;
    clReleaseEvent(ev);
    t = *own = tool_now() - start;
  } else {
    clRetainEvent(ev);
    *own = tool_event_seconds(ev); /* releases the reference just taken */
    t = tool_call_seconds(first, ev);
    if (*own < 0)
      t = *own;
  }
  *wall = tool_now() - start;
  return t;
}

clnorm_status time_variant(session *s, shape *sh, const clnorm_variant *v, double best,
                           timing *out) {
  if (forced_time(s, sh, v, out))
    return CLNORM_OK;
  need_loaded(sh, "time_variant");
  double times[200], owns[200], walls[200], sorted[200];
  char why[256];
again:;
  size_t n = 0;
  double prev = 0.0;
  const double start = tool_now();
  memset(out, 0, sizeof *out);
  for (size_t i = 0; i < 2 + 200; i++) {
    const clnorm_call call = shape_call(sh, i % sh->sets);
    double own, wall;
    clnorm_status st;
    const double t = run_once(s, &call, v, &own, &wall, &st);
    if (st != CLNORM_OK)
      return st;
    if (t < 0) {
      session_fall_back(s, tool_profiling_error(t));
      goto again;
    }
    if (i < 2)
      continue; /* warm-up */
    owns[n] = own;
    walls[n] = wall;
    times[n++] = t;
    if (n == 3 && best > 0) {
      double m = times[0];
      for (size_t k = 1; k < 3; k++)
        m = times[k] < m ? times[k] : m;
      if (m > 3.0 * best) {
        out->slow = 1;
        out->min = m;
        out->median = m;
        out->own = tool_median(owns, n);
        break;
      }
    }
    if (n >= 10 && n % 5 == 0) {
      memcpy(sorted, times, n * sizeof *times);
      const double med = tool_median(sorted, n);
      if (fabs(med - prev) <= 0.01 * med || tool_now() - start > 1.0)
        break;
      prev = med;
    }
  }
  if (!out->slow) {
    memcpy(sorted, times, n * sizeof *times);
    out->median = tool_median(sorted, n);
    out->min = sorted[0];
    out->own = tool_median(owns, n);
  }
  const clnorm_call call = shape_call(sh, 0);
  memcpy(sorted, times, n * sizeof *times);
  const double median = tool_median(sorted, n);
  if (!s->clock.wall && !tool_time_plausible(median, tool_median(walls, n), tool_op_bytes(&call),
                                             s->copy_gbps, why, sizeof why)) {
    session_fall_back(s, why);
    goto again;
  }
  return CLNORM_OK;
}

double wall_per_call(session *s, shape *sh, size_t calls) {
  if (!s->plain) {
    cl_int e;
    s->plain = clCreateCommandQueue(s->context, s->dev.device, 0, &e);
    if (e != CL_SUCCESS) {
      s->plain = NULL;
      return -1.0;
    }
  }
  if (clFinish(s->queue) != CL_SUCCESS)
    return -1.0;
  for (size_t i = 0; i < 5; i++) {
    const clnorm_call call = shape_call(sh, i % sh->sets);
    if (clnorm_run(s->ctx, s->plain, &call, NULL, 0, NULL, NULL) != CLNORM_OK)
      return -1.0;
  }
  if (clFinish(s->plain) != CL_SUCCESS)
    return -1.0;
  const double start = tool_now();
  for (size_t i = 0; i < calls; i++) {
    const clnorm_call call = shape_call(sh, i % sh->sets);
    if (clnorm_run(s->ctx, s->plain, &call, NULL, 0, NULL, NULL) != CLNORM_OK)
      return -1.0;
  }
  if (clFinish(s->plain) != CL_SUCCESS)
    return -1.0;
  return (tool_now() - start) / (double)calls;
}

/* Runs fn(user, i) for i in [0, n) on up to 16 threads (the CPU count). */
typedef struct parallel {
  void (*fn)(void *user, size_t i);
  void *user;
  size_t n, next;
  clnorm_mutex lock;
} parallel;

static void parallel_worker(void *arg) {
  parallel *p = arg;
  for (;;) {
    clnorm__mutex_lock(&p->lock);
    const size_t i = p->next++;
    clnorm__mutex_unlock(&p->lock);
    if (i >= p->n || interrupted)
      return;
    p->fn(p->user, i);
  }
}

void parallel_for(size_t n, void (*fn)(void *user, size_t i), void *user) {
  parallel p = {fn, user, n, 0, CLNORM_MUTEX_INIT};
  size_t threads = clnorm__cpu_count();
  threads = threads > 16 ? 16 : threads;
  clnorm_thread tid[16];
  size_t started = 0;
  for (size_t t = 0; t < threads; t++)
    if (clnorm__thread_create(&tid[started], parallel_worker, &p) == 0)
      started++;
  if (started == 0)
    parallel_worker(&p);
  for (size_t t = 0; t < started; t++)
    clnorm__thread_join(tid[t]);
}

typedef struct build_job {
  clnorm_ctx *ctx;
  const clnorm_call *calls;
  size_t call_step;
  const clnorm_variant *variants;
  clnorm_status *status;
} build_job;

static void build_one(void *user, size_t i) {
  const build_job *b = user;
  const clnorm_call *call = &b->calls[i * b->call_step];
  const clnorm_status st = b->variants ? clnorm_variant_check(b->ctx, call, &b->variants[i])
                                       : clnorm_choose(b->ctx, call, NULL, NULL);
  if (b->status)
    b->status[i] = st;
}

void build_all(clnorm_ctx *ctx, const clnorm_call *calls, size_t call_step,
               const clnorm_variant *variants, size_t n, clnorm_status *status) {
  build_job b = {ctx, calls, call_step, variants, status};
  parallel_for(n, build_one, &b);
}
