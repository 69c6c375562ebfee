#define _POSIX_C_SOURCE 200809L /* setenv */
#include "harness.h"

#include "internal.h"

#include <ctype.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int harness_failures;

void harness_fail(const char *fmt, ...) {
  va_list args;
  va_start(args, fmt);
  fputs("FAIL: ", stdout);
  vprintf(fmt, args);
  fputc('\n', stdout);
  fflush(stdout);
  va_end(args);
  harness_failures++;
}

clnorm_call harness_call(clnorm_op op, size_t rows, size_t cols) {
  clnorm_call call;
  memset(&call, 0, sizeof call);
  call.op = op;
  call.dtype = CLNORM_F32;
  call.rows = rows;
  call.cols = cols;
  call.eps = 1e-5f;
  return call;
}

clnorm_ctx *harness_ctx_with_db(cl_context context, cl_device_id device, const char *user_db,
                                const char *system_db) {
  setenv("CLNORM_DB", user_db, 1);
  if (system_db)
    setenv("CLNORM_SYSTEM_DB", system_db, 1);
  clnorm_ctx *ctx = NULL;
  const clnorm_status st = clnorm_ctx_create(context, device, &ctx);
  if (st != CLNORM_OK) {
    harness_fail("clnorm_ctx_create (CLNORM_DB=%s, CLNORM_SYSTEM_DB=%s): %s: %s", user_db,
                 system_db ? system_db : "unchanged", clnorm_status_string(st),
                 clnorm_ctx_errmsg(NULL));
    exit(1);
  }
  return ctx;
}

static int contains_nocase(const char *hay, const char *needle) {
  const size_t n = strlen(needle);
  for (; *hay; hay++) {
    size_t i = 0;
    while (i < n && hay[i] && tolower((unsigned char)hay[i]) == tolower((unsigned char)needle[i]))
      i++;
    if (i == n)
      return 1;
  }
  return 0;
}

static int equal_nocase(const char *a, const char *b) {
  for (; *a && *b; a++, b++)
    if (tolower((unsigned char)*a) != tolower((unsigned char)*b))
      return 0;
  return *a == *b;
}

static void die(const char *test, const char *msg, int code) {
  printf("%s: FAIL: %s (OpenCL error %d)\n", test, msg, code);
  exit(1);
}

void harness_open(harness *h, const char *test_name) {
  memset(h, 0, sizeof *h);
  const char *want = getenv("CLNORM_TEST_DEVICE");
  cl_platform_id plats[16];
  cl_uint nplat = 0;
  cl_int e = clGetPlatformIDs(16, plats, &nplat);
  if (e != CL_SUCCESS || nplat == 0)
    die(test_name, "no OpenCL platform found: install one (pocl-opencl-icd) and check clinfo -l",
        e);
  char seen[1024] = ""; /* the devices found, for the message when none matches */
  for (cl_uint p = 0; p < nplat && !h->device; p++) {
    cl_device_id devs[16];
    cl_uint ndev = 0;
    if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 16, devs, &ndev) != CL_SUCCESS)
      continue;
    char pname[256] = "";
    clGetPlatformInfo(plats[p], CL_PLATFORM_NAME, sizeof pname - 1, pname, NULL);
    for (cl_uint d = 0; d < ndev && !h->device; d++) {
      char dname[256] = "";
      cl_device_type type = 0;
      clGetDeviceInfo(devs[d], CL_DEVICE_NAME, sizeof dname - 1, dname, NULL);
      clGetDeviceInfo(devs[d], CL_DEVICE_TYPE, sizeof type, &type, NULL);
      const size_t used = strlen(seen);
      snprintf(seen + used, sizeof seen - used, "%s\"%s\" (%s)", used ? ", " : "", dname, pname);
      const int match = !want || !*want ||
                        (equal_nocase(want, "gpu") && (type & CL_DEVICE_TYPE_GPU)) ||
                        (equal_nocase(want, "cpu") && (type & CL_DEVICE_TYPE_CPU)) ||
                        contains_nocase(dname, want) || contains_nocase(pname, want);
      if (match) {
        h->platform = plats[p];
        h->device = devs[d];
        snprintf(h->name, sizeof h->name, "%s", dname);
      }
    }
  }
  if (!h->device) {
    printf("%s: FAIL: %s; devices found: %s\n", test_name,
           want && *want ? "no OpenCL device matches CLNORM_TEST_DEVICE" : "no OpenCL device",
           *seen ? seen : "none");
    exit(1);
  }
  h->context = clCreateContext(NULL, 1, &h->device, NULL, NULL, &e);
  if (e != CL_SUCCESS)
    die(test_name, "clCreateContext failed", e);
  h->queue = clCreateCommandQueue(h->context, h->device, 0, &e);
  if (e != CL_SUCCESS)
    die(test_name, "clCreateCommandQueue failed", e);
  const clnorm_status st = clnorm_ctx_create(h->context, h->device, &h->ctx);
  if (st != CLNORM_OK) {
    printf("%s: FAIL: clnorm_ctx_create: %s: %s\n", test_name, clnorm_status_string(st),
           clnorm_ctx_errmsg(NULL));
    exit(1);
  }
  char pname[256] = "";
  clGetPlatformInfo(h->platform, CL_PLATFORM_NAME, sizeof pname - 1, pname, NULL);
  printf("%s on %s (%s)%s\n", test_name, h->name, pname,
         h->ctx->info.unaligned ? "" : ", CLNORM_UNALIGNED=0: row starts keep vectors aligned");
  fflush(stdout);
}

int harness_unaligned(const harness *h) { return h->ctx->info.unaligned; }

void harness_close(harness *h) {
  clnorm_ctx_destroy(h->ctx);
  clReleaseCommandQueue(h->queue);
  clReleaseContext(h->context);
}

cl_mem harness_buffer(harness *h, size_t bytes, const void *host) {
  cl_int e;
  cl_mem m = clCreateBuffer(h->context, host ? CL_MEM_COPY_HOST_PTR : CL_MEM_READ_WRITE, bytes,
                            (void *)host, &e);
  if (e != CL_SUCCESS)
    die("harness", "clCreateBuffer failed", e);
  return m;
}

void harness_write(harness *h, cl_mem buf, size_t bytes, const void *host) {
  const cl_int e = clEnqueueWriteBuffer(h->queue, buf, CL_TRUE, 0, bytes, host, 0, NULL, NULL);
  if (e != CL_SUCCESS)
    die("harness", "clEnqueueWriteBuffer failed", e);
}

void harness_read(harness *h, cl_mem buf, size_t bytes, void *host) {
  const cl_int e = clEnqueueReadBuffer(h->queue, buf, CL_TRUE, 0, bytes, host, 0, NULL, NULL);
  if (e != CL_SUCCESS)
    die("harness", "clEnqueueReadBuffer failed", e);
}

void harness_fill(harness *h, cl_mem buf, size_t bytes, float value) {
  const cl_int e =
      clEnqueueFillBuffer(h->queue, buf, &value, sizeof value, 0, bytes, 0, NULL, NULL);
  if (e != CL_SUCCESS)
    die("harness", "clEnqueueFillBuffer failed", e);
}

void harness_random(clnorm_rng *rng, float *x, size_t n, double offset) {
  double shift = 0.0, scale = 1.0;
  for (size_t i = 0; i < n; i++) {
    if (i % 97 == 0) { /* change the row statistics every so often */
      shift = (clnorm_rng_uniform(rng) - 0.5) * 4.0;
      scale = 0.5 + 2.0 * clnorm_rng_uniform(rng);
    }
    x[i] = (float)(offset + shift + scale * clnorm_rng_normal(rng));
  }
}

static double worse(double a, double b) {
  if (isnan(b))
    return INFINITY;
  return b > a ? b : a;
}

clnorm_status harness_check(harness *h, const clnorm_call *call, const clnorm_variant *force,
                            const float *x_host, size_t x_elems, size_t y_elems, const float *gamma,
                            const float *beta, const double *ref_y, const double *ref_mean,
                            const double *ref_rstd, errors *e, int *gaps_ok) {
  (void)gamma;
  (void)beta;
  const size_t rows = call->rows, cols = call->cols;
  const size_t ys = call->y.stride ? call->y.stride : cols;
  const int in_place = call->x.buf == call->y.buf;
  e->y = e->mean = e->rstd = 0.0;
  *gaps_ok = 1;
  /* y's buffer: sentinel in the gaps, NaN over the matrix */
  float *y = malloc(y_elems * sizeof(float));
  if (!y)
    die("harness", "out of host memory", 0);
  if (in_place) {
    memcpy(y, x_host, y_elems * sizeof(float));
  } else {
    for (size_t i = 0; i < y_elems; i++)
      y[i] = SENTINEL;
    for (size_t r = 0; r < rows; r++)
      for (size_t i = 0; i < cols; i++)
        y[call->y.offset + r * ys + i] = NAN;
  }
  harness_write(h, call->y.buf, y_elems * sizeof(float), y);
  if (!in_place && x_host) /* x_host NULL: x is already on the device, unchanged */
    harness_write(h, call->x.buf, x_elems * sizeof(float), x_host);
  if (call->mean)
    harness_fill(h, call->mean, rows * sizeof(float), NAN);
  if (call->rstd)
    harness_fill(h, call->rstd, rows * sizeof(float), NAN);
  /* the dispatcher through the public entry points users call; a forced variant by clnorm_run */
  clnorm_status st;
  if (force)
    st = clnorm_run(h->ctx, h->queue, call, force, 0, NULL, NULL);
  else if (call->op == CLNORM_OP_LAYERNORM)
    st = clnorm_layernorm(h->ctx, h->queue, rows, cols, call->dtype, call->eps, call->x,
                          call->gamma, call->beta, call->y, call->mean, call->rstd, 0, NULL, NULL);
  else
    st = clnorm_rmsnorm(h->ctx, h->queue, rows, cols, call->dtype, call->eps, call->x, call->gamma,
                        call->y, call->rstd, 0, NULL, NULL);
  if (st != CLNORM_OK) {
    free(y);
    return st;
  }
  harness_read(h, call->y.buf, y_elems * sizeof(float), y);
  float *mean = malloc((rows + 1) * sizeof(float)), *rstd = malloc((rows + 1) * sizeof(float));
  if (call->mean)
    harness_read(h, call->mean, rows * sizeof(float), mean);
  if (call->rstd)
    harness_read(h, call->rstd, rows * sizeof(float), rstd);
  float *row = malloc((cols ? cols : 1) * sizeof(float));
  for (size_t r = 0; r < rows; r++) {
    memcpy(row, y + call->y.offset + r * ys, cols * sizeof(float));
    e->y = worse(e->y, clnorm_ref_row_error(cols, row, ref_y + r * cols));
    if (call->rstd)
      e->rstd = worse(e->rstd, clnorm_ref_rel_error(rstd[r], ref_rstd[r]));
    if (call->mean) {
      const double m = ref_mean[r];
      double err = isnan(m) ? (isnan(mean[r]) ? 0.0 : INFINITY)
                            : fabs((double)mean[r] - m) / (fabs(m) + 1.0 / ref_rstd[r]);
      e->mean = worse(e->mean, err);
    }
  }
  /* every element outside the matrix still holds what was there: the sentinel, or x's own
   * value in place (compared bitwise: x may hold NaN) */
  if (in_place || ys != cols || call->y.offset != 0 || y_elems != rows * cols) {
    for (size_t i = 0; i < y_elems && *gaps_ok; i++) {
      const int inside = i >= call->y.offset && (i - call->y.offset) / ys < rows &&
                         (i - call->y.offset) % ys < cols;
      if (inside)
        continue;
      const float want = in_place ? x_host[i] : SENTINEL;
      if (memcmp(&y[i], &want, sizeof want) != 0)
        *gaps_ok = 0;
    }
  }
  free(row);
  free(mean);
  free(rstd);
  free(y);
  return CLNORM_OK;
}

/* The covering subset of a variant list (harness_cover_variants): the parameters' values as small
 * indices, then the pairs of (parameter, value) that the listed variants give, each covered by the
 * first variant chosen that has it. */
#define COVER_PARAMS 6
#define COVER_VALUES 16

static unsigned log2_index(unsigned v) {
  unsigned i = 0;
  while (v > 1 && i + 1 < COVER_VALUES) {
    v >>= 1;
    i++;
  }
  return i;
}

static void cover_values(const clnorm_variant *v, unsigned out[COVER_PARAMS]) {
  out[0] = log2_index(v->wg);
  out[1] = log2_index(v->tpr);
  out[2] = log2_index(v->vec);
  out[3] = v->hold ? 1 + log2_index(v->hold) : 0;
  out[4] = (unsigned)v->reduce % COVER_VALUES;
  out[5] = (unsigned)v->stats % COVER_VALUES;
}

#define PAIR_ID(i, j, a, b)                                                                        \
  ((((size_t)(i)*COVER_PARAMS + (j)) * COVER_VALUES + (a)) * COVER_VALUES + (b))
#define PAIR_IDS (COVER_PARAMS * COVER_PARAMS * COVER_VALUES * COVER_VALUES)
/* and the triple of the parameters that shape a group and its loads: wg, tpr and vec ((wg, tpr,
 * hold) too took 202 of the 556 RMSNorm variants, against 124) */
static const unsigned cover_triples[][3] = {{0, 1, 2}};
#define TRIPLES (sizeof cover_triples / sizeof cover_triples[0])
#define TRIPLE_ID(t, a, b, c)                                                                      \
  (PAIR_IDS + (((size_t)(t)*COVER_VALUES + (a)) * COVER_VALUES + (b)) * COVER_VALUES + (c))
#define COVER_IDS (PAIR_IDS + TRIPLES * COVER_VALUES * COVER_VALUES * COVER_VALUES)

static size_t mark_id(unsigned char *covered, size_t id, int mark) {
  if (covered[id])
    return 0;
  if (mark)
    covered[id] = 1;
  return 1;
}

/* The number of pairs and triples of v that `covered` lacks; with mark, marks them covered. */
static size_t new_pairs(const clnorm_variant *v, unsigned char *covered, int mark) {
  unsigned val[COVER_PARAMS];
  cover_values(v, val);
  size_t n = 0;
  for (unsigned i = 0; i < COVER_PARAMS; i++)
    for (unsigned j = i + 1; j < COVER_PARAMS; j++)
      n += mark_id(covered, PAIR_ID(i, j, val[i], val[j]), mark);
  for (size_t t = 0; t < TRIPLES; t++) {
    const unsigned *c = cover_triples[t];
    n += mark_id(covered, TRIPLE_ID(t, val[c[0]], val[c[1]], val[c[2]]), mark);
  }
  return n;
}

/* harness.h. The loop ends when no variant left adds a pair or triple: every one that some listed
 * variant has is then in a kept one. */
unsigned char *harness_cover_variants(const clnorm_variant *vars, size_t n) {
  unsigned char *covered = calloc(COVER_IDS, 1), *taken = calloc(n ? n : 1, 1);
  if (!covered || !taken) {
    harness_fail("harness_cover_variants: out of memory");
    exit(1);
  }
  for (;;) {
    size_t best = n, best_new = 0;
    for (size_t k = 0; k < n; k++) {
      const size_t m = taken[k] ? 0 : new_pairs(&vars[k], covered, 0);
      if (m > best_new) {
        best_new = m;
        best = k;
      }
    }
    if (best == n)
      break;
    new_pairs(&vars[best], covered, 1);
    taken[best] = 1;
  }
  free(covered);
  return taken;
}
