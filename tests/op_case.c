#include "op_case.h"

#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const role_name[OC_MATRICES] = {"x", "y", "residual", "sum_out", "dy"};
static const char *const data_name[OC_DATA_KINDS] = {"normal", "large_mean", "tiny", "huge"};

int oc_is_bwd(clnorm_op op) { return op == CLNORM_OP_LAYERNORM_BWD || op == CLNORM_OP_RMSNORM_BWD; }

int oc_is_add(clnorm_op op) { return op == CLNORM_OP_ADD_LAYERNORM || op == CLNORM_OP_ADD_RMSNORM; }

int oc_is_rms(clnorm_op op) {
  return op == CLNORM_OP_RMSNORM || op == CLNORM_OP_ADD_RMSNORM || op == CLNORM_OP_RMSNORM_BWD;
}

int oc_uses_matrix(clnorm_op op, int role) {
  switch (role) {
  case OC_X:
  case OC_Y:
    return 1;
  case OC_RES:
  case OC_SUM:
    return oc_is_add(op);
  case OC_DY:
    return oc_is_bwd(op);
  }
  return 0;
}

int oc_uses_vector(clnorm_op op, int role) {
  const int bwd = oc_is_bwd(op), rms = oc_is_rms(op);
  switch (role) {
  case OC_GAMMA:
  case OC_RSTD:
    return 1;
  case OC_BETA:
    return !rms && !bwd;
  case OC_MEAN:
    return !rms;
  case OC_DGAMMA:
    return bwd;
  case OC_DBETA:
    return bwd && !rms;
  }
  return 0;
}

/* Whether the vector role may be NULL: the backward ops need the forward's mean and rstd. */
static int optional_vector(clnorm_op op, int role) {
  return !(oc_is_bwd(op) && (role == OC_MEAN || role == OC_RSTD));
}

static int vector_is_output(clnorm_op op, int role) {
  return role == OC_DGAMMA || role == OC_DBETA ||
         (!oc_is_bwd(op) && (role == OC_MEAN || role == OC_RSTD));
}

size_t oc_sub_unit(harness *h, clnorm_dtype dtype) {
  cl_uint bits = 0;
  if (clGetDeviceInfo(h->device, CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof bits, &bits, NULL) !=
          CL_SUCCESS ||
      bits < 8)
    bits = 1024;
  const size_t bytes = bits / 8, es = clnorm_ref_dtype_size((int)dtype);
  return bytes > es ? bytes / es : 1;
}

void oc_default(oc_case *c, clnorm_op op, clnorm_dtype dtype, size_t rows, size_t cols) {
  memset(c, 0, sizeof *c);
  c->op = op;
  c->dtype = dtype;
  c->rows = rows;
  c->cols = cols;
  c->eps = 1e-5f;
  for (int r = 0; r < OC_MATRICES; r++)
    c->m[r].buffer = r;
  c->tail = 3;
  c->data = OC_NORMAL;
  c->bad_row = -1;
  c->data_seed = 1;
}

void oc_alias(oc_case *c, int out, int in) { c->m[out] = c->m[in]; }

void oc_format(const oc_case *c, char *buf, size_t size) {
  size_t used = 0;
#define PUT(...)                                                                                   \
  do {                                                                                             \
    if (used < size)                                                                               \
      used += (size_t)snprintf(buf + used, size - used, __VA_ARGS__);                              \
  } while (0)
  PUT("%s %s rows=%zu cols=%zu eps=%g", clnorm_op_name(c->op), clnorm_dtype_name(c->dtype), c->rows,
      c->cols, (double)c->eps);
  for (int r = 0; r < OC_MATRICES; r++) {
    if (!oc_uses_matrix(c->op, r) || (r == OC_SUM && (c->absent & OC_ABSENT_SUM)))
      continue;
    const oc_place *p = &c->m[r];
    PUT(" %s={buf %d", role_name[r], p->buffer);
    if (p->sub)
      PUT(" sub %zu", p->sub);
    PUT(" off %zu stride %zu}", p->offset, p->stride);
  }
  PUT(" tail=%zu", c->tail);
  static const char *const vec_name[OC_VECTORS] = {"gamma", "beta",   "mean",
                                                   "rstd",  "dgamma", "dbeta"};
  int none = 1;
  for (int v = 0; v < OC_VECTORS; v++)
    if (oc_uses_vector(c->op, v) && optional_vector(c->op, v) && (c->absent & (1u << v))) {
      PUT("%s%s", none ? " NULL:" : ",", vec_name[v]);
      none = 0;
    }
  if (oc_is_add(c->op) && (c->absent & OC_ABSENT_SUM))
    PUT("%ssum_out", none ? " NULL:" : ",");
  PUT(" data=%s", c->extreme == 2 ? "subnormal" : c->extreme ? "extreme" : data_name[c->data]);
  if (c->base)
    PUT(" base=%zu", c->base);
  if (c->bad_row >= 0)
    PUT(" %s at row %ld col %zu of %s",
        c->bad_kind == 0   ? "NaN"
        : c->bad_kind == 1 ? "+Inf"
                           : "-Inf",
        c->bad_row, c->bad_col, c->bad_in_res ? "residual" : "x");
  PUT(" seed=%llu", (unsigned long long)c->data_seed);
  if (c->forced) {
    char text[128];
    clnorm_variant_format(&c->variant, text, sizeof text);
    PUT(" forced [%s]", text);
  } else {
    PUT(" dispatcher");
  }
#undef PUT
}

/* A host image of one device buffer, in storage elements. */
typedef struct image {
  cl_mem buf;
  size_t lead, elems, es;
  unsigned char *host, *before;
} image;

/* lead: elements of the device buffer before the part the host keeps an image of (oc_case.base) */
static int image_make(harness *h, image *im, size_t lead, size_t elems, size_t es) {
  im->lead = lead;
  im->elems = elems;
  im->es = es;
  im->host = malloc(elems * es);
  im->before = malloc(elems * es);
  if (!im->host || !im->before)
    return 0;
  for (size_t i = 0; i < elems * es; i++) /* a fixed non-NaN pattern in the gaps */
    im->host[i] = (unsigned char)(0x35 + i % 7);
  cl_int err;
  im->buf = clCreateBuffer(h->context, CL_MEM_READ_WRITE, (lead + elems) * es, NULL, &err);
  return err == CL_SUCCESS;
}

/* The case oc_run is running in this thread, named when a transfer fails: a kernel that faults
 * on a GPU (CL_OUT_OF_RESOURCES at the next blocking read on NVIDIA's OpenCL) ends the process
 * here, and the log must say which variant it was. */
static _Thread_local const oc_case *running;

static void image_io(harness *h, image *im, int write) {
  const size_t at = im->lead * im->es, bytes = im->elems * im->es;
  const cl_int err =
      write ? clEnqueueWriteBuffer(h->queue, im->buf, CL_TRUE, at, bytes, im->host, 0, NULL, NULL)
            : clEnqueueReadBuffer(h->queue, im->buf, CL_TRUE, at, bytes, im->host, 0, NULL, NULL);
  if (err != CL_SUCCESS) {
    char text[1024] = "(no case)";
    if (running)
      oc_format(running, text, sizeof text);
    printf("op_case: FAIL: clEnqueue%sBuffer of %zu bytes at %zu failed (OpenCL error %d) in %s\n",
           write ? "Write" : "Read", bytes, at, (int)err, text);
    exit(1);
  }
}

static void image_free(image *im) {
  if (im->buf)
    clReleaseMemObject(im->buf);
  free(im->host);
  free(im->before);
}

static void draw_values(clnorm_rng *rng, float *v, size_t n, oc_data kind, clnorm_dtype dtype) {
  const int f16 = dtype == CLNORM_F16;
  switch (kind) {
  case OC_LARGE_MEAN:
    harness_random(rng, v, n, 1e4);
    break;
  case OC_TINY:
  case OC_HUGE: {
    const double scale = kind == OC_TINY ? (f16 ? 1e-6 : 1e-20) : (f16 ? 1e3 : 1e15);
    for (size_t i = 0; i < n; i++)
      v[i] = (float)(scale * clnorm_rng_normal(rng));
    break;
  }
  default:
    harness_random(rng, v, n, 0.0);
    break;
  }
  for (size_t i = 0; i < n; i++)
    v[i] = clnorm_ref_store(v[i], (int)dtype);
}

/* The spread of a row as the op sees it: the standard deviation (RMSNorm: the root mean square). */
static double row_spread(const float *v, size_t n, int rms) {
  double mean = 0.0, sq = 0.0;
  for (size_t i = 0; i < n && !rms; i++)
    mean += v[i];
  mean /= (double)n;
  for (size_t i = 0; i < n; i++)
    sq += ((double)v[i] - mean) * ((double)v[i] - mean);
  return sqrt(sq / (double)n);
}

/* v[i] / top * m in the dtype's values: a row drawn with largest |value| top brought to m */
static void rescale_row(float *v, size_t n, double top, double m, int dt) {
  for (size_t i = 0; i < n; i++)
    v[i] = clnorm_ref_store((float)((double)v[i] / top * m), dt);
}

/* Rows of every magnitude (issue 25): row r's largest |value| is M_r, spaced evenly in log from
 * the dtype's smallest (float32, bfloat16: 1e-38; float16: 6e-8, its smallest subnormal) to its
 * largest (3e38; 65504) over the rows, in four patterns by (r + 1) % 4 (the largest M gets the
 * first): M_r at every fourth element and -M_r elsewhere, whose x - mean overflows (1.5 M_r)
 * where M_r > 2.3e38; N(0,1) scaled to M_r; M_r * (0.75 + 2^-8 N(0,1)), far from zero for its
 * spread; with eps > 0 every value M_r (no spread), with eps == 0 (where that rstd is infinite)
 * M_r at one element and 0 elsewhere. A row whose rstd would exceed 1e37 (eps 0) is scaled up
 * until it does not, or made +-M_r where rounding left it one value: a finite answer needs a
 * finite rstd. The residual of the add ops: N(0,1) scaled to M_r / 16. Values are the dtype's. */
static void extreme_rows(clnorm_rng *rng, const oc_case *c, float *x, float *res) {
  const int dt = (int)c->dtype, rms = oc_is_rms(c->op);
  const double lo = dt == CLNORM_REF_F16 ? 6e-8 : 1e-38, hi = dt == CLNORM_REF_F16 ? 65504.0 : 3e38;
  for (size_t r = 0; r < c->rows; r++) {
    const double m = c->rows > 1 ? lo * pow(hi / lo, (double)r / (double)(c->rows - 1)) : hi;
    float *xr = x + r * c->cols, *rr = res + r * c->cols;
    double top = 0.0;
    for (size_t i = 0; i < c->cols; i++) {
      double z;
      switch ((r + 1) % 4) {
      case 0:
        z = i % 4 ? -1.0 : 1.0;
        break;
      case 1:
        z = clnorm_rng_normal(rng);
        break;
      case 2:
        z = 0.75 + ldexp(clnorm_rng_normal(rng), -8);
        break;
      default:
        z = c->eps > 0.0f || i == r % c->cols ? 1.0 : 0.0;
        break;
      }
      xr[i] = (float)z;
      top = fabs(z) > top ? fabs(z) : top;
    }
    rescale_row(xr, c->cols, top, m, dt);
    const double spread = row_spread(xr, c->cols, rms);
    if (c->eps == 0.0f && spread == 0.0)
      for (size_t i = 0; i < c->cols; i++)
        xr[i] = clnorm_ref_store((float)(i % 2 ? -m : m), dt);
    else if (c->eps == 0.0f && spread < 1e-37)
      for (size_t i = 0; i < c->cols; i++)
        xr[i] = clnorm_ref_store((float)((double)xr[i] * (1e-37 / spread)), dt);
    if (!oc_is_add(c->op))
      continue;
    double rtop = 0.0;
    for (size_t i = 0; i < c->cols; i++) {
      const double z = clnorm_rng_normal(rng);
      rr[i] = (float)z;
      rtop = fabs(z) > rtop ? fabs(z) : rtop;
    }
    rescale_row(rr, c->cols, rtop, m / 16.0, dt);
  }
}

/* Subnormal rows (issue 25, point 4; oc_case.extreme 2), by r % 6, with lo the dtype's smallest
 * subnormal (float32 2^-149, bfloat16 2^-133, float16 2^-24) and sn its smallest normal: every
 * value subnormal, log-uniform in [lo, sn) with random signs; every value subnormal, uniform in
 * (0, sn); a quarter subnormal (every fourth element, the first included: LayerNorm's pivot) among
 * N(0,1); N(0,1) 2^-90 (float16: 2^-18), normal values whose squares underflow; N(0,1) 2^-64
 * (float16: 2^-10), across the bound of the CPU kernels' tiny rows (cl/forward.cl, TINY); every
 * value subnormal but one of 2^-70 (float16: 2^-13). The residual of the add ops: the same
 * pattern, drawn again. */
static double subnormal_value(clnorm_rng *rng, size_t r, size_t i, int dt) {
  const int f16 = dt == CLNORM_REF_F16;
  const double lo = f16 ? 0x1p-24 : dt == CLNORM_REF_BF16 ? 0x1p-133 : 0x1p-149;
  const double sn = f16 ? 0x1p-14 : 0x1p-126;
  const double sub = lo * pow(sn / lo, clnorm_rng_uniform(rng));
  const double sign = clnorm_rng_uniform(rng) < 0.5 ? -1.0 : 1.0;
  switch (r % 6) {
  case 0:
    return sign * sub;
  case 1:
    return sn * clnorm_rng_uniform(rng);
  case 2:
    return i % 4 ? clnorm_rng_normal(rng) : sign * sub;
  case 3:
    return ldexp(clnorm_rng_normal(rng), f16 ? -18 : -90);
  case 4:
    return ldexp(clnorm_rng_normal(rng), f16 ? -10 : -64);
  default:
    return i == r % 7 ? ldexp(sign, f16 ? -13 : -70) : sign * sub;
  }
}

static void subnormal_rows(clnorm_rng *rng, const oc_case *c, float *x, float *res) {
  const int dt = (int)c->dtype;
  for (size_t r = 0; r < c->rows; r++)
    for (size_t i = 0; i < c->cols; i++) {
      x[r * c->cols + i] = clnorm_ref_store((float)subnormal_value(rng, r, i, dt), dt);
      if (oc_is_add(c->op))
        res[r * c->cols + i] = clnorm_ref_store((float)subnormal_value(rng, r, i, dt), dt);
    }
}

static size_t eff_stride(const oc_case *c, int role) {
  return c->m[role].stride ? c->m[role].stride : c->cols;
}

/* The element of the root buffer where the role's matrix starts. */
static size_t root_start(const oc_case *c, int role) { return c->m[role].sub + c->m[role].offset; }

static int inside(size_t i, size_t start, size_t stride, size_t rows, size_t cols) {
  return i >= start && (i - start) / stride < rows && (i - start) % stride < cols;
}

/* The worst element of a row against its reference, for messages. */
static size_t worst_at(size_t n, const float *got, const double *ref) {
  size_t at = 0;
  double worst = -1.0;
  for (size_t i = 0; i < n; i++) {
    const double e = isnan(ref[i])      ? (isnan(got[i]) ? 0.0 : INFINITY)
                     : isfinite(got[i]) ? fabs((double)got[i] - ref[i])
                                        : INFINITY;
    if (e > worst) {
      worst = e;
      at = i;
    }
  }
  return at;
}

typedef struct run_state {
  const oc_case *c;
  char *msg;
  size_t msg_size;
  int failed;
} run_state;

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void
fail(run_state *s, const char *fmt, ...) {
  if (s->failed++) /* the first failure is the message */
    return;
  va_list args;
  va_start(args, fmt);
  vsnprintf(s->msg, s->msg_size, fmt, args);
  va_end(args);
}

oc_result oc_run(harness *h, const oc_case *c, oc_errors *measured, char *msg, size_t msg_size) {
  run_state s = {c, msg, msg_size, 0};
  running = c;
  if (msg_size)
    msg[0] = '\0';
  oc_errors e = {-1.0, -1.0, -1.0, -1.0, -1.0};
  const clnorm_op op = c->op;
  const int bwd = oc_is_bwd(op), add = oc_is_add(op), rms = oc_is_rms(op);
  const int dt = (int)c->dtype;
  const size_t rows = c->rows, cols = c->cols, n = rows * cols;
  const size_t es = clnorm_ref_dtype_size(dt);
  int used[OC_MATRICES], present[OC_VECTORS];
  for (int r = 0; r < OC_MATRICES; r++)
    used[r] = oc_uses_matrix(op, r) && !(r == OC_SUM && (c->absent & OC_ABSENT_SUM));
  for (int v = 0; v < OC_VECTORS; v++)
    present[v] = oc_uses_vector(op, v) && !(optional_vector(op, v) && (c->absent & (1u << v)));
  const int affine = present[OC_GAMMA];

  /* host data: dense rows x cols, the dtype's values as floats */
  float *x = calloc(n, sizeof(float)), *res = calloc(n, sizeof(float));
  float *dy = calloc(n, sizeof(float)), *got = calloc(n, sizeof(float));
  float *hsum = calloc(n, sizeof(float)), *gamma = calloc(cols, sizeof(float));
  float *beta = calloc(cols, sizeof(float)), *fmean = calloc(rows, sizeof(float));
  float *frstd = calloc(rows, sizeof(float));
  float *gotv = calloc(cols > rows ? cols : rows, sizeof(float));
  double *ref = calloc(n, sizeof(double)), *rmean = calloc(rows, sizeof(double));
  double *rrstd = calloc(rows, sizeof(double)), *rdg = calloc(cols, sizeof(double));
  double *rdb = calloc(cols, sizeof(double));
  image mi[OC_MATRICES], vi[OC_VECTORS];
  cl_mem subs[OC_MATRICES];
  memset(mi, 0, sizeof mi);
  memset(vi, 0, sizeof vi);
  memset(subs, 0, sizeof subs);
  oc_result result = OC_PASS;
  if (!x || !res || !dy || !got || !hsum || !gamma || !beta || !fmean || !frstd || !gotv || !ref ||
      !rmean || !rrstd || !rdg || !rdb) {
    fail(&s, "out of host memory");
    goto done;
  }
  clnorm_rng rng;
  clnorm_rng_seed(&rng, c->data_seed);
  draw_values(&rng, x, n, c->data, c->dtype);
  if (add)
    draw_values(&rng, res, n, c->data, c->dtype);
  if (c->extreme == 1)
    extreme_rows(&rng, c, x, res);
  else if (c->extreme == 2)
    subnormal_rows(&rng, c, x, res);
  if (bwd)
    draw_values(&rng, dy, n, OC_NORMAL, c->dtype);
  for (size_t i = 0; i < cols; i++) {
    gamma[i] = clnorm_ref_store((float)(0.5 + clnorm_rng_uniform(&rng)), dt);
    beta[i] = clnorm_ref_store((float)(clnorm_rng_uniform(&rng) - 0.5), dt);
  }
  if (c->bad_row >= 0 && (size_t)c->bad_row < rows && c->bad_col < cols) {
    const float bad = c->bad_kind == 0 ? NAN : c->bad_kind == 1 ? INFINITY : -INFINITY;
    (add && c->bad_in_res ? res : x)[(size_t)c->bad_row * cols + c->bad_col] = bad;
  }

  /* the reference */
  const float *g = affine ? gamma : NULL, *b = present[OC_BETA] ? beta : NULL;
  const double eps = (double)c->eps;
  if (bwd) { /* the forward's float32 mean and rstd, from the float64 reference */
    if (rms)
      clnorm_ref_rmsnorm(rows, cols, x, cols, NULL, eps, ref, rrstd);
    else
      clnorm_ref_layernorm(rows, cols, x, cols, NULL, NULL, eps, ref, rmean, rrstd);
    for (size_t r = 0; r < rows; r++) {
      fmean[r] = (float)rmean[r];
      frstd[r] = (float)rrstd[r];
      /* rows of every magnitude: dy of about 1 / rstd, so that dx is about 1 (float16: dy within
       * [1e-7, 1], so that dx and dgamma stay within its range) */
      const int f16 = c->dtype == CLNORM_F16;
      const double lo = f16 ? 1e-7 : 1e-30, hi = f16 ? 1.0 : 1e30;
      const double want = 1.0 / (double)frstd[r];
      for (size_t i = 0; i < cols && c->extreme; i++)
        dy[r * cols + i] =
            clnorm_ref_store((float)((double)dy[r * cols + i] * (want < lo   ? lo
                                                                 : want > hi ? hi
                                                                             : want)),
                             dt);
    }
    if (rms)
      clnorm_ref_rmsnorm_backward(rows, cols, dy, cols, x, cols, g, frstd, ref, rdg);
    else
      clnorm_ref_layernorm_backward(rows, cols, dy, cols, x, cols, g, fmean, frstd, ref, rdg, rdb);
  } else if (add && rms) {
    clnorm_ref_add_rmsnorm(rows, cols, dt, x, cols, res, cols, g, eps, hsum, ref, rrstd);
  } else if (add) {
    clnorm_ref_add_layernorm(rows, cols, dt, x, cols, res, cols, g, b, eps, hsum, ref, rmean,
                             rrstd);
  } else if (rms) {
    clnorm_ref_rmsnorm(rows, cols, x, cols, g, eps, ref, rrstd);
  } else {
    clnorm_ref_layernorm(rows, cols, x, cols, g, b, eps, ref, rmean, rrstd);
  }

  /* the buffers: sized to their matrices; outputs poisoned, then inputs written (in place, an
   * input's values are what the output's elements hold before the call) */
  size_t elems[OC_MATRICES] = {0};
  for (int r = 0; r < OC_MATRICES; r++) {
    if (!used[r])
      continue;
    const size_t end = root_start(c, r) + (rows - 1) * eff_stride(c, r) + cols;
    const int bi = c->m[r].buffer;
    elems[bi] = end > elems[bi] ? end : elems[bi];
  }
  for (int bi = 0; bi < OC_MATRICES; bi++)
    if (elems[bi] && !image_make(h, &mi[bi], c->base, elems[bi] + c->tail, es)) {
      fail(&s, "allocating a buffer of %zu elements of %zu bytes failed", c->base + elems[bi], es);
      goto done;
    }
  const float nan = NAN;
  for (int r = OC_Y; r <= OC_SUM; r += OC_SUM - OC_Y) {
    if (!used[r])
      continue;
    image *im = &mi[c->m[r].buffer];
    for (size_t row = 0; row < rows; row++)
      for (size_t i = 0; i < cols; i++)
        clnorm_ref_pack(dt, &nan, 1,
                        im->host + (root_start(c, r) + row * eff_stride(c, r) + i) * es);
  }
  const int inputs[3] = {OC_X, OC_RES, OC_DY};
  const float *input_data[3] = {x, res, dy};
  for (int k = 0; k < 3; k++) {
    const int r = inputs[k];
    if (!used[r])
      continue;
    image *im = &mi[c->m[r].buffer];
    for (size_t row = 0; row < rows; row++)
      clnorm_ref_pack(dt, input_data[k] + row * cols, cols,
                      im->host + (root_start(c, r) + row * eff_stride(c, r)) * es);
  }
  for (int v = 0; v < OC_VECTORS; v++) {
    if (!present[v])
      continue;
    const int stats = v == OC_MEAN || v == OC_RSTD;
    const size_t len = stats ? rows : cols, ves = stats ? sizeof(float) : es;
    if (!image_make(h, &vi[v], 0, len + 3, ves)) {
      fail(&s, "allocating a buffer failed");
      goto done;
    }
    const int vdt = stats ? CLNORM_REF_F32 : dt;
    if (vector_is_output(op, v)) {
      for (size_t i = 0; i < len; i++)
        clnorm_ref_pack(vdt, &nan, 1, vi[v].host + i * ves);
    } else {
      const float *src = v == OC_GAMMA ? gamma : v == OC_BETA ? beta : v == OC_MEAN ? fmean : frstd;
      clnorm_ref_pack(vdt, src, len, vi[v].host);
    }
  }
  for (int bi = 0; bi < OC_MATRICES; bi++)
    if (mi[bi].buf) {
      memcpy(mi[bi].before, mi[bi].host, mi[bi].elems * es);
      image_io(h, &mi[bi], 1);
    }
  for (int v = 0; v < OC_VECTORS; v++)
    if (vi[v].buf) {
      memcpy(vi[v].before, vi[v].host, vi[v].elems * vi[v].es);
      image_io(h, &vi[v], 1);
    }

  /* the matrices as the call sees them: the buffer, or a sub-buffer shared by the roles that
   * name the same buffer and origin */
  clnorm_rows rows_arg[OC_MATRICES];
  memset(rows_arg, 0, sizeof rows_arg);
  for (int r = 0; r < OC_MATRICES; r++) {
    if (!used[r])
      continue;
    const oc_place *p = &c->m[r];
    cl_mem handle = mi[p->buffer].buf;
    if (p->sub) {
      for (int q = 0; q < r; q++)
        if (subs[q] && c->m[q].buffer == p->buffer && c->m[q].sub == p->sub)
          handle = subs[q];
      if (handle == mi[p->buffer].buf) {
        const cl_buffer_region region = {(c->base + p->sub) * es,
                                         (mi[p->buffer].elems - p->sub) * es};
        cl_int err;
        subs[r] = clCreateSubBuffer(mi[p->buffer].buf, CL_MEM_READ_WRITE,
                                    CL_BUFFER_CREATE_TYPE_REGION, &region, &err);
        if (err != CL_SUCCESS) {
          fail(&s, "clCreateSubBuffer(origin %zu bytes) failed: %d", region.origin, (int)err);
          goto done;
        }
        handle = subs[r];
      }
    }
    rows_arg[r] = (clnorm_rows){handle, (p->sub ? 0 : c->base) + p->offset, p->stride};
  }
  const clnorm_call call = {.op = op,
                            .rows = rows,
                            .cols = cols,
                            .dtype = c->dtype,
                            .eps = c->eps,
                            .x = rows_arg[OC_X],
                            .y = rows_arg[OC_Y],
                            .gamma = vi[OC_GAMMA].buf,
                            .beta = vi[OC_BETA].buf,
                            .mean = vi[OC_MEAN].buf,
                            .rstd = vi[OC_RSTD].buf,
                            .residual = rows_arg[OC_RES],
                            .sum_out = rows_arg[OC_SUM],
                            .dy = rows_arg[OC_DY],
                            .dgamma = vi[OC_DGAMMA].buf,
                            .dbeta = vi[OC_DBETA].buf};
  clnorm_status st;
  if (c->forced) {
    st = clnorm_variant_check(h->ctx, &call, &c->variant);
    if (st == CLNORM_E_UNSUPPORTED) {
      snprintf(msg, msg_size, "%s", clnorm_ctx_errmsg(h->ctx));
      result = OC_UNSUPPORTED;
      goto done;
    }
    if (st == CLNORM_OK)
      st = clnorm_run(h->ctx, h->queue, &call, &c->variant, 0, NULL, NULL);
  } else if (op == CLNORM_OP_LAYERNORM) {
    st = clnorm_layernorm(h->ctx, h->queue, rows, cols, c->dtype, c->eps, call.x, call.gamma,
                          call.beta, call.y, call.mean, call.rstd, 0, NULL, NULL);
  } else if (op == CLNORM_OP_RMSNORM) {
    st = clnorm_rmsnorm(h->ctx, h->queue, rows, cols, c->dtype, c->eps, call.x, call.gamma, call.y,
                        call.rstd, 0, NULL, NULL);
  } else if (op == CLNORM_OP_ADD_LAYERNORM) {
    st = clnorm_add_layernorm(h->ctx, h->queue, rows, cols, c->dtype, c->eps, call.x, call.residual,
                              call.sum_out, call.gamma, call.beta, call.y, call.mean, call.rstd, 0,
                              NULL, NULL);
  } else if (op == CLNORM_OP_ADD_RMSNORM) {
    st = clnorm_add_rmsnorm(h->ctx, h->queue, rows, cols, c->dtype, c->eps, call.x, call.residual,
                            call.sum_out, call.gamma, call.y, call.rstd, 0, NULL, NULL);
  } else if (op == CLNORM_OP_LAYERNORM_BWD) {
    st = clnorm_layernorm_backward(h->ctx, h->queue, rows, cols, c->dtype, call.dy, call.x,
                                   call.gamma, call.mean, call.rstd, call.y, call.dgamma,
                                   call.dbeta, 0, NULL, NULL);
  } else {
    st = clnorm_rmsnorm_backward(h->ctx, h->queue, rows, cols, c->dtype, call.dy, call.x,
                                 call.gamma, call.rstd, call.y, call.dgamma, 0, NULL, NULL);
  }
  if (st != CLNORM_OK) {
    fail(&s, "the call returned %s: %s", clnorm_status_string(st), clnorm_ctx_errmsg(h->ctx));
    goto done;
  }
  for (int bi = 0; bi < OC_MATRICES; bi++)
    if (mi[bi].buf)
      image_io(h, &mi[bi], 0);
  for (int v = 0; v < OC_VECTORS; v++)
    if (vi[v].buf)
      image_io(h, &vi[v], 0);

  /* y (dx) */
  {
    const image *im = &mi[c->m[OC_Y].buffer];
    for (size_t row = 0; row < rows; row++)
      clnorm_ref_unpack(dt, im->host + (root_start(c, OC_Y) + row * eff_stride(c, OC_Y)) * es, cols,
                        got + row * cols);
    const double ulps = clnorm_ref_dtype_ulps(dt);
    double worst = 0.0;
    for (size_t row = 0; row < rows; row++) {
      const float *gr = got + row * cols;
      const double *rr = ref + row * cols;
      double er;
      if (bwd) /* relative to max(max |dx ref|, rstd * max |gamma * dy|) of the row */
        er = clnorm_ref_dx_error(cols, gr, rr, dt, dy + row * cols, affine ? gamma : NULL,
                                 frstd[row]);
      else
        er = clnorm_ref_scaled_error(cols, gr, rr, dt, ulps, CLNORM_TOL_FWD);
      if (!(er <= 1.0)) {
        const size_t at = worst_at(cols, gr, rr);
        fail(&s, "%s row %zu: error %.3g of the allowance; e.g. col %zu: got %.9g, reference %.9g",
             bwd ? "dx" : "y", row, er, at, (double)gr[at], rr[at]);
      }
      worst = er > worst || isnan(er) ? er : worst;
    }
    e.y = worst;
  }
  /* sum_out: bit-exact */
  if (used[OC_SUM]) {
    const image *im = &mi[c->m[OC_SUM].buffer];
    for (size_t row = 0; row < rows; row++)
      clnorm_ref_unpack(dt, im->host + (root_start(c, OC_SUM) + row * eff_stride(c, OC_SUM)) * es,
                        cols, got + row * cols);
    for (size_t i = 0; i < n; i++)
      if (memcmp(&got[i], &hsum[i], sizeof(float)) != 0 && !(isnan(got[i]) && isnan(hsum[i]))) {
        fail(&s, "sum_out row %zu col %zu: got %.9g, reference h %.9g (x %.9g + residual %.9g)",
             i / cols, i % cols, (double)got[i], (double)hsum[i], (double)x[i], (double)res[i]);
        break;
      }
  }
  /* mean and rstd (forward outputs) */
  if (!bwd && present[OC_RSTD]) {
    double worst = 0.0;
    clnorm_ref_unpack(CLNORM_REF_F32, vi[OC_RSTD].host, rows, gotv);
    for (size_t r = 0; r < rows; r++) {
      const double err = clnorm_ref_rel_error(gotv[r], rrstd[r]) / 1e-5;
      if (!(err <= 1.0))
        fail(&s, "rstd row %zu: got %.9g, reference %.9g (error %.3g of the allowance)", r,
             (double)gotv[r], rrstd[r], err);
      worst = err > worst || isnan(err) ? err : worst;
    }
    e.rstd = worst;
  }
  if (!bwd && present[OC_MEAN]) {
    double worst = 0.0;
    clnorm_ref_unpack(CLNORM_REF_F32, vi[OC_MEAN].host, rows, gotv);
    for (size_t r = 0; r < rows; r++) {
      const double m = rmean[r];
      const double err = isnan(m) ? (isnan(gotv[r]) ? 0.0 : INFINITY)
                                  : fabs((double)gotv[r] - m) / (fabs(m) + 1.0 / rrstd[r]) / 1e-5;
      if (!(err <= 1.0))
        fail(&s, "mean row %zu: got %.9g, reference %.9g (error %.3g of the allowance)", r,
             (double)gotv[r], m, err);
      worst = err > worst || isnan(err) ? err : worst;
    }
    e.mean = worst;
  }
  /* dgamma, dbeta */
  for (int v = OC_DGAMMA; v <= OC_DBETA; v++) {
    if (!present[v])
      continue;
    clnorm_ref_unpack(dt, vi[v].host, cols, gotv);
    const double *want = v == OC_DGAMMA ? rdg : rdb;
    const double err =
        clnorm_ref_scaled_error(cols, gotv, want, dt, c->dtype == CLNORM_F32 ? 0.0 : 1.0, 1e-4);
    if (!(err <= 1.0)) {
      const size_t at = worst_at(cols, gotv, want);
      fail(&s, "%s: error %.3g of the allowance; e.g. col %zu: got %.9g, reference %.9g",
           v == OC_DGAMMA ? "dgamma" : "dbeta", err, at, (double)gotv[at], want[at]);
    }
    if (v == OC_DGAMMA)
      e.dgamma = err;
    else
      e.dbeta = err;
  }
  /* everything outside the outputs unchanged */
  for (int bi = 0; bi < OC_MATRICES; bi++) {
    const image *im = &mi[bi];
    if (!im->buf)
      continue;
    for (size_t i = 0; i < im->elems; i++) {
      int out = 0;
      for (int r = OC_Y; r <= OC_SUM && !out; r += OC_SUM - OC_Y)
        out = used[r] && c->m[r].buffer == bi &&
              inside(i, root_start(c, r), eff_stride(c, r), rows, cols);
      if (!out && memcmp(im->host + i * es, im->before + i * es, es) != 0) {
        int owner = -1;
        for (int r = 0; r < OC_MATRICES; r++)
          if (used[r] && c->m[r].buffer == bi &&
              inside(i, root_start(c, r), eff_stride(c, r), rows, cols))
            owner = r;
        fail(&s, "buffer %d element %zu changed (%s), not an output", bi, i,
             owner >= 0 ? role_name[owner] : "a gap or tail");
        break;
      }
    }
  }
  for (int v = 0; v < OC_VECTORS; v++) {
    const image *im = &vi[v];
    if (!im->buf)
      continue;
    const size_t from = vector_is_output(op, v) ? (v == OC_MEAN || v == OC_RSTD ? rows : cols) : 0;
    if (memcmp(im->host + from * im->es, im->before + from * im->es, (im->elems - from) * im->es)) {
      static const char *const names[OC_VECTORS] = {"gamma", "beta",   "mean",
                                                    "rstd",  "dgamma", "dbeta"};
      fail(&s, "%s's buffer changed %s", names[v], from ? "past its end" : "(an input)");
    }
  }
  if (s.failed)
    result = OC_FAIL;

done:
  if (s.failed)
    result = OC_FAIL;
  for (int r = 0; r < OC_MATRICES; r++)
    if (subs[r])
      clReleaseMemObject(subs[r]);
  for (int bi = 0; bi < OC_MATRICES; bi++)
    image_free(&mi[bi]);
  for (int v = 0; v < OC_VECTORS; v++)
    image_free(&vi[v]);
  free(x), free(res), free(dy), free(got), free(hsum), free(gamma), free(beta), free(fmean);
  free(frstd), free(gotv), free(ref), free(rmean), free(rrstd), free(rdg), free(rdb);
  if (measured)
    *measured = e;
  running = NULL;
  return result;
}
