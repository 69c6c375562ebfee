/* Subnormal inputs against normal ones (issue 25, point 4), a measurement, not part of the
 * library: each op in f32, f16 and bf16 through the public API on the CPU device (PoCL), with
 *   normal  x, residual, dy ~ N(0,1)
 *   sub     every element subnormal in its dtype (f32: 1e-42..1e-39, bf16: 2^-133..2^-127,
 *           f16: 2^-24..2^-14, log-uniform, random sign)
 *   subx    x subnormal, residual and dy normal (the add and backward ops only)
 *   mixed   N(0,1) with a quarter of each row's elements subnormal (the same places in x,
 *           residual and dy)
 * timed call by call (enqueue to clFinish, wall clock) in alternation, mode after mode, and
 * each output checked against a float64 reference of the same stored inputs: the largest error
 * over (1 ulp of the dtype at the reference + tol * the row's largest |reference|), tol 1e-5
 * forward and 1e-4 backward (the tests' bound), and the count of NaN/Inf. gamma = 1 + N(0,0.1),
 * beta = N(0,0.1), eps 1e-5 (EPS=...). SUBRANGE=LO,HI: the "sub" magnitudes log-uniform in
 * 10^LO..10^HI instead (e.g. -30,-20: tiny normal values). Backward: mean and rstd from the forward call on the same
 * x.
 *   subn [ROWSxCOLS [REPS [OPS [DTYPES]]]]     (OPS, DTYPES: comma lists; defaults: all)
 * Prints one line per op, dtype and mode: median us, min-max, the ratio of medians to normal
 * and the range of the per-repetition ratios. */
#define _POSIX_C_SOURCE 200809L
#define CL_TARGET_OPENCL_VERSION 120
#include "clnorm.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHECK(e)                                                                                   \
  do {                                                                                             \
    cl_int err_ = (e);                                                                             \
    if (err_ != CL_SUCCESS) {                                                                      \
      fprintf(stderr, "%s:%d: OpenCL error %d\n", __FILE__, __LINE__, err_);                      \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)
#define CHECKN(e)                                                                                  \
  do {                                                                                             \
    clnorm_status st_ = (e);                                                                       \
    if (st_ != CLNORM_OK) {                                                                        \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, clnorm_status_string(st_),          \
              clnorm_ctx_errmsg(cn));                                                              \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

enum { NMODES = 4, MAXREPS = 101 };
static const char *mode_name[NMODES] = {"normal", "sub", "subx", "mixed"};
static const char *op_name[6] = {"layernorm",     "rmsnorm",       "add_layernorm",
                                 "add_rmsnorm",   "layernorm_bwd", "rmsnorm_bwd"};
static const char *dt_name[3] = {"f32", "f16", "bf16"};

static cl_context ctx;
static cl_command_queue q;
static clnorm_ctx *cn;
static size_t rows, cols;
static float eps = 1e-5f;

/* ---- storage types ---- */
static float f16_to_f(uint16_t h) {
  _Float16 v;
  memcpy(&v, &h, 2);
  return (float)v;
}
static uint16_t f_to_f16(float f) {
  _Float16 v = (_Float16)f;
  uint16_t h;
  memcpy(&h, &v, 2);
  return h;
}
static float bf16_to_f(uint16_t b) {
  uint32_t u = (uint32_t)b << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}
static uint16_t f_to_bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  if (isnan(f))
    return (uint16_t)((u | 0x00400000u) >> 16);
  return (uint16_t)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}
static size_t esize(int dt) { return dt == 0 ? 4 : 2; }
static float get(int dt, const void *p, size_t i) {
  if (dt == 0)
    return ((const float *)p)[i];
  uint16_t b = ((const uint16_t *)p)[i];
  return dt == 1 ? f16_to_f(b) : bf16_to_f(b);
}
static void put(int dt, void *p, size_t i, float v) {
  if (dt == 0)
    ((float *)p)[i] = v;
  else if (dt == 1)
    ((uint16_t *)p)[i] = f_to_f16(v);
  else
    ((uint16_t *)p)[i] = f_to_bf16(v);
}
static float round_dt(int dt, float v) {
  char b[4];
  put(dt, b, 0, v);
  return get(dt, b, 0);
}
/* one unit in the last place of the dtype at |v| (subnormal spacing below the normal range) */
static double ulp_dt(int dt, double v) {
  const int mant = dt == 0 ? 23 : dt == 1 ? 10 : 7;
  const int emin = dt == 1 ? -14 : -126;
  int e;
  frexp(fabs(v), &e);
  e -= 1; /* v in [2^e, 2^(e+1)) */
  if (v == 0.0 || e < emin)
    e = emin;
  return ldexp(1.0, e - mant);
}

/* ---- random values ---- */
static uint64_t rng = 88172645463325252ull;
static double urand(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (double)(rng >> 11) * (1.0 / 9007199254740992.0);
}
static double nrand(void) {
  double u = urand(), v = urand();
  return sqrt(-2.0 * log(u + 1e-300)) * cos(6.283185307179586 * v);
}
static float subrand(int dt) {
  double lo, hi; /* log2 of the magnitudes */
  if (dt == 0)
    lo = log2(1e-42), hi = log2(1e-39);
  else if (dt == 2)
    lo = -133.0, hi = -127.0;
  else
    lo = -24.0, hi = -14.0;
  const char *range = getenv("SUBRANGE"); /* "LO,HI": log10 of the magnitudes, every dtype */
  double l10, h10;
  if (range && sscanf(range, "%lf,%lf", &l10, &h10) == 2)
    lo = l10 * 3.321928094887362, hi = h10 * 3.321928094887362;
  double m = exp2(lo + (hi - lo) * urand());
  return (float)(urand() < 0.5 ? -m : m);
}
/* n elements of dtype dt for mode `mode` (which: 0 x, 1 residual, 2 dy) */
static void fill(int dt, void *p, int mode, int which, const unsigned char *pattern) {
  const int sub = mode == 1 || (mode == 2 && which == 0);
  for (size_t i = 0; i < rows * cols; i++) {
    float v = (sub || (mode == 3 && pattern[i])) ? subrand(dt) : (float)nrand();
    put(dt, p, i, v);
  }
}

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec * 1e-3;
}
static int cmpd(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}
static cl_mem mk(size_t bytes, const void *host) {
  cl_int err;
  cl_mem m = clCreateBuffer(ctx, CL_MEM_READ_WRITE | (host ? CL_MEM_COPY_HOST_PTR : 0), bytes,
                            (void *)host, &err);
  CHECK(err);
  return m;
}
static void rd(cl_mem m, size_t bytes, void *host) {
  CHECK(clEnqueueReadBuffer(q, m, CL_TRUE, 0, bytes, host, 0, NULL, NULL));
}

typedef struct {
  cl_mem x, res, dy, mean, rstd; /* inputs of one mode (mean, rstd: the forward's, backward) */
  void *hx, *hres, *hdy;
} mode_set;

static cl_mem g_buf, b_buf, y_buf, s_buf, m_out, r_out, dg_buf, db_buf;
static void *hg, *hb;

static void call(int op, int dt, const mode_set *m) {
  clnorm_rows X = {m->x, 0, 0}, R = {m->res, 0, 0}, Y = {y_buf, 0, 0}, S = {s_buf, 0, 0},
              DY = {m->dy, 0, 0};
  switch (op) {
  case 0:
    CHECKN(clnorm_layernorm(cn, q, rows, cols, dt, eps, X, g_buf, b_buf, Y, m_out, r_out, 0, NULL,
                            NULL));
    break;
  case 1:
    CHECKN(clnorm_rmsnorm(cn, q, rows, cols, dt, eps, X, g_buf, Y, r_out, 0, NULL, NULL));
    break;
  case 2:
    CHECKN(clnorm_add_layernorm(cn, q, rows, cols, dt, eps, X, R, S, g_buf, b_buf, Y, m_out, r_out,
                                0, NULL, NULL));
    break;
  case 3:
    CHECKN(clnorm_add_rmsnorm(cn, q, rows, cols, dt, eps, X, R, S, g_buf, Y, r_out, 0, NULL, NULL));
    break;
  case 4:
    CHECKN(clnorm_layernorm_backward(cn, q, rows, cols, dt, DY, X, g_buf, m->mean, m->rstd, Y,
                                     dg_buf, db_buf, 0, NULL, NULL));
    break;
  case 5:
    CHECKN(clnorm_rmsnorm_backward(cn, q, rows, cols, dt, DY, X, g_buf, m->rstd, Y, dg_buf, 0,
                                   NULL, NULL));
    break;
  }
}

/* the largest error of y in units of (ulp + tol * row max |ref|), and the non-finite count */
static void verify(int op, int dt, const mode_set *m, double *worst, long *nonfinite,
                   long *subout) {
  const size_t n = rows * cols, es = esize(dt);
  void *hy = malloc(n * es);
  float *mean = malloc(rows * 4), *rstd = malloc(rows * 4);
  rd(y_buf, n * es, hy);
  if (op >= 4) {
    rd(m->mean, rows * 4, mean);
    rd(m->rstd, rows * 4, rstd);
  }
  double *h = malloc(cols * sizeof(double)), *ref = malloc(cols * sizeof(double));
  *worst = 0;
  *nonfinite = 0;
  *subout = 0;
  const int rms = op == 1 || op == 3 || op == 5;
  for (size_t r = 0; r < rows; r++) {
    for (size_t c = 0; c < cols; c++) {
      const size_t i = r * cols + c;
      float v = get(dt, m->hx, i);
      if (op == 2 || op == 3)
        v = round_dt(dt, v + get(dt, m->hres, i));
      h[c] = v;
    }
    if (op < 4) {
      double mu = 0, ss = 0;
      if (!rms) {
        for (size_t c = 0; c < cols; c++)
          mu += h[c];
        mu /= cols;
      }
      for (size_t c = 0; c < cols; c++)
        ss += (h[c] - mu) * (h[c] - mu);
      const double rs = 1.0 / sqrt(ss / cols + eps);
      for (size_t c = 0; c < cols; c++) {
        ref[c] = (h[c] - mu) * rs * get(dt, hg, c);
        if (!rms)
          ref[c] += get(dt, hb, c);
      }
    } else {
      const double mu = rms ? 0.0 : mean[r], rs = rstd[r];
      double c1 = 0, c2 = 0;
      for (size_t c = 0; c < cols; c++) {
        const double g = get(dt, hg, c) * (double)get(dt, m->hdy, r * cols + c);
        c1 += g * (h[c] - mu) * rs;
        c2 += g;
      }
      c1 /= cols;
      c2 = rms ? 0.0 : c2 / cols;
      for (size_t c = 0; c < cols; c++) {
        const double g = get(dt, hg, c) * (double)get(dt, m->hdy, r * cols + c);
        ref[c] = rs * (g - c2 - (h[c] - mu) * rs * c1);
      }
    }
    double rmax = 0;
    for (size_t c = 0; c < cols; c++)
      rmax = fmax(rmax, fabs(ref[c]));
    const double tol = op < 4 ? 1e-5 : 1e-4;
    for (size_t c = 0; c < cols; c++) {
      const double o = get(dt, hy, r * cols + c);
      if (!isfinite(o)) {
        (*nonfinite)++;
        continue;
      }
      if (o != 0.0 && fabs(o) < (dt == 1 ? 6.103515625e-05 : 1.1754943508222875e-38))
        (*subout)++;
      const double e = fabs(o - ref[c]) / (ulp_dt(dt, ref[c]) + tol * rmax);
      if (e > *worst)
        *worst = e;
    }
  }
  free(h);
  free(ref);
  free(hy);
  free(mean);
  free(rstd);
}

static int in_list(const char *list, const char *name) {
  if (!list || !*list || strcmp(list, "all") == 0)
    return 1;
  size_t n = strlen(name);
  for (const char *p = list; (p = strstr(p, name)); p += n)
    if ((p == list || p[-1] == ',') && (p[n] == ',' || p[n] == '\0'))
      return 1;
  return 0;
}

int main(int argc, char **argv) {
  rows = 512, cols = 4096;
  int reps = 7;
  if (argc > 1 && sscanf(argv[1], "%zux%zu", &rows, &cols) != 2)
    return 2;
  if (argc > 2)
    reps = atoi(argv[2]);
  if (reps < 1 || reps > MAXREPS)
    return 2;
  const char *ops = argc > 3 ? argv[3] : NULL, *dts = argc > 4 ? argv[4] : NULL;
  if (getenv("EPS"))
    eps = (float)atof(getenv("EPS"));

  cl_platform_id plats[8];
  cl_uint np;
  CHECK(clGetPlatformIDs(8, plats, &np));
  cl_device_id dev = NULL;
  for (cl_uint i = 0; i < np && !dev; i++) {
    char name[256];
    clGetPlatformInfo(plats[i], CL_PLATFORM_NAME, sizeof name, name, NULL);
    if (strstr(name, "Portable"))
      CHECK(clGetDeviceIDs(plats[i], CL_DEVICE_TYPE_CPU, 1, &dev, NULL));
  }
  if (!dev) {
    fprintf(stderr, "no PoCL CPU device\n");
    return 1;
  }
  char dname[256], drv[64];
  cl_device_fp_config fp;
  clGetDeviceInfo(dev, CL_DEVICE_NAME, sizeof dname, dname, NULL);
  clGetDeviceInfo(dev, CL_DRIVER_VERSION, sizeof drv, drv, NULL);
  clGetDeviceInfo(dev, CL_DEVICE_SINGLE_FP_CONFIG, sizeof fp, &fp, NULL);
  printf("# %s, driver %s, CL_FP_DENORM %s; %zux%zu, %d reps, eps %g\n", dname, drv,
         (fp & CL_FP_DENORM) ? "yes" : "no", rows, cols, reps, eps);
  cl_int err;
  ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
  CHECK(err);
  q = clCreateCommandQueue(ctx, dev, 0, &err);
  CHECK(err);
  CHECKN(clnorm_ctx_create(ctx, dev, &cn));

  const size_t n = rows * cols;
  unsigned char *pattern = malloc(n);
  for (size_t i = 0; i < n; i++)
    pattern[i] = urand() < 0.25;
  printf("%-14s %-5s %-6s %10s %21s %7s %15s %9s %6s %8s\n", "op", "dtype", "mode", "median_us",
         "min-max_us", "ratio", "ratio_range", "maxerr", "nonfin", "sub_out");
  for (int dt = 0; dt < 3; dt++) {
    if (!in_list(dts, dt_name[dt]))
      continue;
    const size_t es = esize(dt);
    hg = malloc(cols * es);
    hb = malloc(cols * es);
    for (size_t c = 0; c < cols; c++) {
      put(dt, hg, c, (float)(1.0 + 0.1 * nrand()));
      put(dt, hb, c, (float)(0.1 * nrand()));
    }
    g_buf = mk(cols * es, hg);
    b_buf = mk(cols * es, hb);
    y_buf = mk(n * es, NULL);
    s_buf = mk(n * es, NULL);
    m_out = mk(rows * 4, NULL);
    r_out = mk(rows * 4, NULL);
    dg_buf = mk(cols * es, NULL);
    db_buf = mk(cols * es, NULL);
    mode_set ms[NMODES];
    for (int m = 0; m < NMODES; m++) {
      ms[m].hx = malloc(n * es);
      ms[m].hres = malloc(n * es);
      ms[m].hdy = malloc(n * es);
      fill(dt, ms[m].hx, m, 0, pattern);
      fill(dt, ms[m].hres, m, 1, pattern);
      fill(dt, ms[m].hdy, m, 2, pattern);
      ms[m].x = mk(n * es, ms[m].hx);
      ms[m].res = mk(n * es, ms[m].hres);
      ms[m].dy = mk(n * es, ms[m].hdy);
      ms[m].mean = mk(rows * 4, NULL);
      ms[m].rstd = mk(rows * 4, NULL);
    }
    for (int op = 0; op < 6; op++) {
      if (!in_list(ops, op_name[op]))
        continue;
      int modes[NMODES], nm = 0;
      for (int m = 0; m < NMODES; m++)
        if (m != 2 || op >= 2) /* subx == sub without a residual or dy */
          modes[nm++] = m;
      if (op >= 4) /* the forward's statistics of each mode's x */
        for (int k = 0; k < nm; k++) {
          const int m = modes[k];
          clnorm_rows X = {ms[m].x, 0, 0}, Y = {y_buf, 0, 0};
          if (op == 4)
            CHECKN(clnorm_layernorm(cn, q, rows, cols, dt, eps, X, g_buf, b_buf, Y, ms[m].mean,
                                    ms[m].rstd, 0, NULL, NULL));
          else
            CHECKN(clnorm_rmsnorm(cn, q, rows, cols, dt, eps, X, g_buf, Y, ms[m].rstd, 0, NULL,
                                  NULL));
        }
      for (int k = 0; k < nm; k++) /* builds, caches */
        call(op, dt, &ms[modes[k]]);
      CHECK(clFinish(q));
      double t[NMODES][MAXREPS];
      for (int r = 0; r < reps; r++)
        for (int k = 0; k < nm; k++) {
          const int m = modes[(k + r) % nm];
          const double t0 = now_us();
          call(op, dt, &ms[m]);
          CHECK(clFinish(q));
          t[m][r] = now_us() - t0;
        }
      double ratio[MAXREPS], med[NMODES];
      for (int k = 0; k < nm; k++) {
        const int m = modes[k];
        double s[MAXREPS];
        memcpy(s, t[m], reps * sizeof(double));
        qsort(s, reps, sizeof(double), cmpd);
        med[m] = s[reps / 2];
        for (int r = 0; r < reps; r++)
          ratio[r] = t[m][r] / t[0][r];
        qsort(ratio, reps, sizeof(double), cmpd);
        call(op, dt, &ms[m]);
        CHECK(clFinish(q));
        double worst;
        long nonfinite, subout;
        verify(op, dt, &ms[m], &worst, &nonfinite, &subout);
        char mm[32], rr[32];
        snprintf(mm, sizeof mm, "%.0f-%.0f", s[0], s[reps - 1]);
        snprintf(rr, sizeof rr, "%.2f-%.2f", ratio[0], ratio[reps - 1]);
        printf("%-14s %-5s %-6s %10.0f %21s %7.2f %15s %9.3f %6ld %8ld\n", op_name[op],
               dt_name[dt], mode_name[m], med[m], mm, med[m] / med[0], rr, worst, nonfinite,
               subout);
        fflush(stdout);
      }
    }
    for (int m = 0; m < NMODES; m++) {
      clReleaseMemObject(ms[m].x);
      clReleaseMemObject(ms[m].res);
      clReleaseMemObject(ms[m].dy);
      clReleaseMemObject(ms[m].mean);
      clReleaseMemObject(ms[m].rstd);
      free(ms[m].hx);
      free(ms[m].hres);
      free(ms[m].hdy);
    }
    cl_mem all[] = {g_buf, b_buf, y_buf, s_buf, m_out, r_out, dg_buf, db_buf};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
      clReleaseMemObject(all[i]);
    free(hg);
    free(hb);
  }
  clnorm_ctx_destroy(cn);
  clReleaseCommandQueue(q);
  clReleaseContext(ctx);
  free(pattern);
  return 0;
}
