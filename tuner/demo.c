/* clnorm_demo: normalizes a random matrix on the default device with the library's own dispatch,
 * checks the result against the float64 reference, and compares its GB/s with the device's copy
 * bandwidth measured in the same run. The ops and the copy kernel are timed in interleaved
 * rounds, so that a device shared with other work slows all of them alike. */
#define _POSIX_C_SOURCE 200809L
#include "ref.h"
#include "tool.h"
#include "tool_access.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define EXIT_USAGE 2
#define TOLERANCE 1e-5
#define WARMUP_RUNS 3
#define MAX_RUNS 50
#define MIN_RUNS 10
#define TIME_BUDGET_S 3.0 /* stop after MIN_RUNS rounds once this much wall time has passed */
#define MAX_PAIRS 256
#define MIN_COPY_BYTES ((size_t)64 << 20)

typedef struct options {
  const char *device;
  size_t rows, cols;
  int json;
} options;

static const char usage[] =
    "usage: clnorm_demo [--device NAME] [--rows N] [--cols N] [--json]\n"
    "\n"
    "Normalizes a rows x cols float32 matrix (default 4096 x 4096) with LayerNorm and RMSNorm\n"
    "on one OpenCL device, as the library's dispatcher chooses; checks y, mean and rstd against\n"
    "the float64 reference (per-row error <= 1e-5); prints the device, the variant chosen and\n"
    "why, and the GB/s of each op next to the device's copy bandwidth measured in the same run.\n"
    "\n"
    "  --device NAME  a case-insensitive part of the device or platform name, an index in\n"
    "                 `normtune devices` order, or gpu / cpu: the first device of that type\n"
    "                 (default: the first GPU, else the first device)\n"
    "  --rows N       rows of the matrix (default 4096)\n"
    "  --cols N       elements per row (default 4096)\n"
    "  --json         one JSON object per line instead of the table\n"
    "\n"
    "exit status: 0 all checks passed, 1 a check failed or no OpenCL device, 2 bad usage\n";

static void die(int code, const char *fmt, ...) {
  va_list args;
  va_start(args, fmt);
  fputs("clnorm_demo: ", stderr);
  vfprintf(stderr, fmt, args);
  fputc('\n', stderr);
  va_end(args);
  exit(code);
}

static size_t parse_size(const char *name, const char *text) {
  char *end = NULL;
  errno = 0;
  const unsigned long long v = text ? strtoull(text, &end, 10) : 0;
  if (!text || end == text || *end || errno || v == 0 || text[0] == '-')
    die(EXIT_USAGE, "%s needs a positive integer (got \"%s\")", name, text ? text : "");
  return (size_t)v;
}

static void parse_options(int argc, char **argv, options *o) {
  o->device = NULL;
  o->rows = 4096;
  o->cols = 4096;
  o->json = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      fputs(usage, stdout);
      exit(0);
    } else if (strcmp(a, "--json") == 0) {
      o->json = 1;
    } else if (strcmp(a, "--device") == 0 && v) {
      o->device = v;
      i++;
    } else if (strcmp(a, "--rows") == 0) {
      o->rows = parse_size(a, v);
      i++;
    } else if (strcmp(a, "--cols") == 0) {
      o->cols = parse_size(a, v);
      i++;
    } else {
      fprintf(stderr, "clnorm_demo: unknown or incomplete option \"%s\"\n%s", a, usage);
      exit(EXIT_USAGE);
    }
  }
}

/* Everything one run of the demo holds on the device. */
typedef struct demo {
  tool_device dev;
  cl_context context;
  cl_command_queue queue;
  clnorm_ctx *ctx;
  size_t rows, cols, pairs;
  cl_mem *x, *y; /* `pairs` of each */
  cl_mem gamma, beta, mean, rstd;
  float *x_host, *gamma_host, *beta_host;
  size_t copy_bytes, copy_pairs, cache_bytes;
  cl_mem *copy_src, *copy_dst; /* `copy_pairs` of each */
  cl_kernel copy_kernel;
  tool_copy_kind copy_kind; /* the fastest copy kernel on this device (tool_copy_gbps) */
  tool_clock clock;         /* profiling events, or the wall clock where they are implausible */
} demo;

/* One row of the table: an op as the dispatcher runs it, or the heuristic's variant forced. */
typedef struct result {
  const char *op;
  clnorm_op kind;
  int forced;
  clnorm_variant variant;
  char variant_text[128];
  const char *why;
  double y_err, mean_err, rstd_err;
  int passed;
  double times[MAX_RUNS], walls[MAX_RUNS]; /* walls: enqueue to completion */
  size_t runs;
  double median_s, gbps;
} result;

static void check_cl(cl_int err, const char *what) {
  if (err != CL_SUCCESS)
    die(1, "%s failed (OpenCL error %d)", what, (int)err);
}

static cl_mem make_buffer(demo *d, size_t bytes, const void *host) {
  cl_int err;
  cl_mem buf = clCreateBuffer(d->context, CL_MEM_READ_WRITE, bytes, NULL, &err);
  check_cl(err, "clCreateBuffer");
  if (host)
    check_cl(clEnqueueWriteBuffer(d->queue, buf, CL_TRUE, 0, bytes, host, 0, NULL, NULL),
             "clEnqueueWriteBuffer");
  return buf;
}

/* n buffers of `bytes`, each copied from host (NULL: none), then filled with the byte `fill`
 * unless it is negative. */
static cl_mem *buffer_set(demo *d, size_t n, size_t bytes, const void *host, int fill) {
  cl_mem *set = calloc(n, sizeof *set);
  if (!set)
    die(1, "out of host memory");
  const cl_uchar value = (cl_uchar)(fill < 0 ? 0 : fill);
  for (size_t p = 0; p < n; p++) {
    set[p] = make_buffer(d, bytes, host);
    if (fill >= 0)
      check_cl(clEnqueueFillBuffer(d->queue, set[p], &value, 1, 0, bytes, 0, NULL, NULL),
               "clEnqueueFillBuffer");
  }
  return set;
}

/* Enough x/y pairs that the pairs together exceed 4x the device's last-level cache, so timed
 * runs read x from memory, not from cache; bounded by the device's memory. */
static size_t pair_count(const demo *d, size_t matrix_bytes) {
  const cl_ulong cache = d->cache_bytes;
  cl_ulong global = 0;
  clGetDeviceInfo(d->dev.device, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof global, &global, NULL);
  const double pair_bytes = 2.0 * (double)matrix_bytes;
  size_t pairs = (size_t)ceil(4.0 * (double)cache / pair_bytes);
  if (pairs < 1)
    pairs = 1;
  if (pairs > MAX_PAIRS)
    pairs = MAX_PAIRS;
  while (pairs > 1 && (double)pairs * pair_bytes > 0.5 * (double)global)
    pairs--;
  return pairs;
}

static void demo_open(demo *d, const options *o) {
  char err[512];
  memset(d, 0, sizeof *d);
  d->rows = o->rows;
  d->cols = o->cols;
  if (!tool_pick_device(o->device, &d->dev, err, sizeof err))
    die(1, "%s", err);
  if (!tool_open(&d->dev, &d->context, &d->queue, err, sizeof err))
    die(1, "%s on %s", err, d->dev.name);
  const clnorm_status st = clnorm_ctx_create(d->context, d->dev.device, &d->ctx);
  if (st != CLNORM_OK)
    die(1, "clnorm_ctx_create: %s: %s", clnorm_status_string(st), clnorm_ctx_errmsg(NULL));

  if (d->rows > SIZE_MAX / sizeof(float) / d->cols)
    die(EXIT_USAGE, "%zu x %zu floats do not fit in memory", d->rows, d->cols);
  const size_t elems = d->rows * d->cols, bytes = elems * sizeof(float);
  cl_ulong cache = 0, max_alloc = 0;
  clGetDeviceInfo(d->dev.device, CL_DEVICE_GLOBAL_MEM_CACHE_SIZE, sizeof cache, &cache, NULL);
  clGetDeviceInfo(d->dev.device, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof max_alloc, &max_alloc, NULL);
  if (bytes > max_alloc)
    die(1,
        "a %zu x %zu float32 matrix (%zu MiB) exceeds the device's largest buffer "
        "(CL_DEVICE_MAX_MEM_ALLOC_SIZE, %llu MiB)",
        d->rows, d->cols, bytes >> 20, (unsigned long long)(max_alloc >> 20));
  d->x_host = malloc(bytes);
  d->gamma_host = malloc(d->cols * sizeof(float));
  d->beta_host = malloc(d->cols * sizeof(float));
  if (!d->x_host || !d->gamma_host || !d->beta_host)
    die(1, "out of host memory for a %zu x %zu matrix", d->rows, d->cols);
  /* Rows of N(0,1) with a per-row scale and shift, so every row has its own mean and rstd. */
  clnorm_rng rng;
  clnorm_rng_seed(&rng, 20261122);
  for (size_t r = 0; r < d->rows; r++) {
    const double scale = 0.5 + 2.0 * clnorm_rng_uniform(&rng);
    const double shift = 4.0 * clnorm_rng_uniform(&rng) - 2.0;
    for (size_t c = 0; c < d->cols; c++)
      d->x_host[r * d->cols + c] = (float)(shift + scale * clnorm_rng_normal(&rng));
  }
  for (size_t c = 0; c < d->cols; c++) {
    d->gamma_host[c] = (float)(1.0 + 0.25 * clnorm_rng_normal(&rng));
    d->beta_host[c] = (float)(0.25 * clnorm_rng_normal(&rng));
  }

  d->cache_bytes = (size_t)cache;
  d->pairs = pair_count(d, bytes);
  /* Outputs are filled once here: a buffer's first write costs the page faults of its memory on
   * CPU devices (PoCL maps it lazily), and with more pairs than timed rounds every timed run
   * would be a first write (copy 0.65 GB/s on a 2-core PoCL that copies 25 GB/s). */
  d->x = buffer_set(d, d->pairs, bytes, d->x_host, -1);
  d->y = buffer_set(d, d->pairs, bytes, NULL, 0);
  /* The copy kernel: at least 64 MiB each way, rotated like x and y. */
  d->copy_bytes = bytes > MIN_COPY_BYTES ? bytes : MIN_COPY_BYTES;
  if (d->copy_bytes > max_alloc)
    d->copy_bytes = (size_t)max_alloc;
  d->copy_bytes = d->copy_bytes / 64 * 64;
  d->copy_pairs = pair_count(d, d->copy_bytes);
  d->copy_src = buffer_set(d, d->copy_pairs, d->copy_bytes, NULL, 1);
  d->copy_dst = buffer_set(d, d->copy_pairs, d->copy_bytes, NULL, 0);
  check_cl(clFinish(d->queue), "clFinish");
  cl_int err_cl;
  /* The yardstick, not a library kernel: the fastest of the copy kernels over 64 MiB (streaming
   * stores among them where the norms use them: docs/DEVICES.md), then timed with the ops */
  char copy_err[256];
  if (tool_copy_gbps(d->context, d->queue, d->dev.device,
                     d->copy_bytes < MIN_COPY_BYTES ? d->copy_bytes : MIN_COPY_BYTES,
                     clnorm__ctx_stream_stores(d->ctx), &d->copy_kind, &d->clock, copy_err,
                     sizeof copy_err) <= 0)
    die(1, "%s", copy_err);
  d->copy_kernel = tool_copy_kernel(d->context, d->dev.device, d->copy_kind, &err_cl);
  check_cl(err_cl, "building the copy kernel");

  d->gamma = make_buffer(d, d->cols * sizeof(float), d->gamma_host);
  d->beta = make_buffer(d, d->cols * sizeof(float), d->beta_host);
  d->mean = make_buffer(d, d->rows * sizeof(float), NULL);
  d->rstd = make_buffer(d, d->rows * sizeof(float), NULL);
}

static void demo_close(demo *d) {
  for (size_t p = 0; p < d->pairs; p++) {
    clReleaseMemObject(d->x[p]);
    clReleaseMemObject(d->y[p]);
  }
  for (size_t p = 0; p < d->copy_pairs; p++) {
    clReleaseMemObject(d->copy_src[p]);
    clReleaseMemObject(d->copy_dst[p]);
  }
  clReleaseKernel(d->copy_kernel);
  free(d->copy_src);
  free(d->copy_dst);
  clReleaseMemObject(d->gamma);
  clReleaseMemObject(d->beta);
  clReleaseMemObject(d->mean);
  clReleaseMemObject(d->rstd);
  clnorm_ctx_destroy(d->ctx);
  clReleaseCommandQueue(d->queue);
  clReleaseContext(d->context);
  free(d->x);
  free(d->y);
  free(d->x_host);
  free(d->gamma_host);
  free(d->beta_host);
}

static clnorm_call make_call(const demo *d, clnorm_op op, size_t pair) {
  clnorm_call call;
  memset(&call, 0, sizeof call);
  call.op = op;
  call.rows = d->rows;
  call.cols = d->cols;
  call.dtype = CLNORM_F32;
  call.eps = 1e-5f;
  call.x = (clnorm_rows){d->x[pair], 0, 0};
  call.y = (clnorm_rows){d->y[pair], 0, 0};
  call.gamma = d->gamma;
  call.beta = op == CLNORM_OP_LAYERNORM ? d->beta : NULL;
  call.mean = op == CLNORM_OP_LAYERNORM ? d->mean : NULL;
  call.rstd = d->rstd;
  return call;
}

/* The public entry points, as an application calls them; force (for the heuristic's row when
 * a tuned result was chosen) goes through clnorm_run. */
static clnorm_status run_op(demo *d, const clnorm_call *c, const clnorm_variant *force,
                            cl_event *event) {
  if (force)
    return clnorm_run(d->ctx, d->queue, c, force, 0, NULL, event);
  if (c->op == CLNORM_OP_LAYERNORM)
    return clnorm_layernorm(d->ctx, d->queue, c->rows, c->cols, c->dtype, c->eps, c->x, c->gamma,
                            c->beta, c->y, c->mean, c->rstd, 0, NULL, event);
  return clnorm_rmsnorm(d->ctx, d->queue, c->rows, c->cols, c->dtype, c->eps, c->x, c->gamma, c->y,
                        c->rstd, 0, NULL, event);
}

static double worse(double a, double b) { return isnan(b) || b > a ? b : a; }

/* Poisons the outputs with NaN, runs once on pair 0, and compares y, mean and rstd with the
 * reference in blocks of rows (the measures of tests/harness.h). */
static void check_op(demo *d, result *res) {
  const clnorm_op op = res->kind;
  const clnorm_call call = make_call(d, op, 0);
  const size_t rows = d->rows, cols = d->cols, bytes = rows * cols * sizeof(float);
  const float nan_value = NAN;
  check_cl(
      clEnqueueFillBuffer(d->queue, d->y[0], &nan_value, sizeof nan_value, 0, bytes, 0, NULL, NULL),
      "clEnqueueFillBuffer");
  check_cl(clEnqueueFillBuffer(d->queue, d->mean, &nan_value, sizeof nan_value, 0,
                               rows * sizeof(float), 0, NULL, NULL),
           "clEnqueueFillBuffer");
  check_cl(clEnqueueFillBuffer(d->queue, d->rstd, &nan_value, sizeof nan_value, 0,
                               rows * sizeof(float), 0, NULL, NULL),
           "clEnqueueFillBuffer");
  const clnorm_status st = run_op(d, &call, res->forced ? &res->variant : NULL, NULL);
  if (st != CLNORM_OK)
    die(1, "%s: %s: %s", res->op, clnorm_status_string(st), clnorm_ctx_errmsg(d->ctx));
  float *y = malloc(bytes), *mean = malloc(rows * sizeof(float)),
        *rstd = malloc(rows * sizeof(float));
  if (!y || !mean || !rstd)
    die(1, "out of host memory");
  check_cl(clEnqueueReadBuffer(d->queue, d->y[0], CL_FALSE, 0, bytes, y, 0, NULL, NULL),
           "clEnqueueReadBuffer");
  check_cl(clEnqueueReadBuffer(d->queue, d->mean, CL_FALSE, 0, rows * sizeof(float), mean, 0, NULL,
                               NULL),
           "clEnqueueReadBuffer");
  check_cl(
      clEnqueueReadBuffer(d->queue, d->rstd, CL_TRUE, 0, rows * sizeof(float), rstd, 0, NULL, NULL),
      "clEnqueueReadBuffer");

  enum { BLOCK = 64 };
  double *ref_y = malloc(BLOCK * cols * sizeof(double)), ref_mean[BLOCK], ref_rstd[BLOCK];
  if (!ref_y)
    die(1, "out of host memory");
  res->y_err = res->mean_err = res->rstd_err = 0.0;
  for (size_t r0 = 0; r0 < rows; r0 += BLOCK) {
    const size_t n = rows - r0 < BLOCK ? rows - r0 : BLOCK;
    const float *xb = d->x_host + r0 * cols;
    if (op == CLNORM_OP_LAYERNORM)
      clnorm_ref_layernorm(n, cols, xb, cols, d->gamma_host, d->beta_host, call.eps, ref_y,
                           ref_mean, ref_rstd);
    else
      clnorm_ref_rmsnorm(n, cols, xb, cols, d->gamma_host, call.eps, ref_y, ref_rstd);
    for (size_t i = 0; i < n; i++) {
      const size_t r = r0 + i;
      res->y_err = worse(res->y_err, clnorm_ref_row_error(cols, y + r * cols, ref_y + i * cols));
      res->rstd_err = worse(res->rstd_err, clnorm_ref_rel_error(rstd[r], ref_rstd[i]));
      if (op == CLNORM_OP_LAYERNORM) /* relative to |mean| + standard deviation */
        res->mean_err = worse(res->mean_err, fabs((double)mean[r] - ref_mean[i]) /
                                                 (fabs(ref_mean[i]) + 1.0 / ref_rstd[i]));
    }
  }
  res->passed = res->y_err <= TOLERANCE && res->mean_err <= TOLERANCE && res->rstd_err <= TOLERANCE;
  free(ref_y);
  free(y);
  free(mean);
  free(rstd);
}

/* Seconds of one run, by its event or by the wall clock from start; *wall the wall time. A
 * failed event (tool_profiling_error's code) returns negative. */
static double seconds_of(demo *d, cl_event event, double start, double *wall) {
  double t;
  if (d->clock.wall) {
    check_cl(clWaitForEvents(1, &event), "clWaitForEvents");
    clReleaseEvent(event);
    t = tool_now() - start;
  } else {
    t = tool_event_seconds(event);
  }
  *wall = tool_now() - start;
  return t;
}

/* Seconds of one copy over copy pair `pair`. */
static double time_copy(demo *d, size_t pair, double *wall) {
  const size_t vectors = d->copy_bytes / (4 * d->copy_kind.width);
  check_cl(clSetKernelArg(d->copy_kernel, 0, sizeof(cl_mem), &d->copy_src[pair]), "clSetKernelArg");
  check_cl(clSetKernelArg(d->copy_kernel, 1, sizeof(cl_mem), &d->copy_dst[pair]), "clSetKernelArg");
  cl_event event;
  const double start = tool_now();
  check_cl(
      clEnqueueNDRangeKernel(d->queue, d->copy_kernel, 1, NULL, &vectors, NULL, 0, NULL, &event),
      "clEnqueueNDRangeKernel(copy4)");
  return seconds_of(d, event, start, wall);
}

/* Seconds of one run of `res`'s op over pair `pair`. */
static double time_op(demo *d, result *res, size_t pair, double *wall) {
  const clnorm_call call = make_call(d, res->kind, pair);
  cl_event event;
  const double start = tool_now();
  const clnorm_status st = run_op(d, &call, res->forced ? &res->variant : NULL, &event);
  if (st != CLNORM_OK)
    die(1, "%s: %s: %s", res->op, clnorm_status_string(st), clnorm_ctx_errmsg(d->ctx));
  return seconds_of(d, event, start, wall);
}

/* Rounds of: every op once, then the copy once, each on the next buffer pair in rotation and each
 * timed by its own profiling event (or the wall clock); the first rounds warm up. Medians; GB/s
 * from the bytes each moves. 0 with the reason in why when an event fails or a median fails
 * tool_time_plausible. */
static int time_all(demo *d, result *res, size_t n, result *copy, char *why, size_t why_size) {
  const double start = tool_now();
  size_t next = 0; /* consecutive runs take different pairs: no run reads what the last wrote */
  copy->runs = 0;
  for (size_t i = 0; i < n; i++)
    res[i].runs = 0;
  for (size_t round = 0; round < WARMUP_RUNS + MAX_RUNS; round++) {
    const int keep = round >= WARMUP_RUNS;
    for (size_t i = 0; i < n + 1; i++) {
      result *r = i < n ? &res[i] : copy;
      double wall;
      const double t = i < n ? time_op(d, r, next++ % d->pairs, &wall)
                             : time_copy(d, round % d->copy_pairs, &wall);
      if (t < 0) {
        snprintf(why, why_size, "%s (%s)", tool_profiling_error(t), r->op);
        return 0;
      }
      if (keep) {
        r->walls[r->runs] = wall;
        r->times[r->runs++] = t;
      }
    }
    if (copy->runs >= MIN_RUNS && tool_now() - start > TIME_BUDGET_S)
      break;
  }
  copy->median_s = tool_median(copy->times, copy->runs);
  copy->gbps = 2.0 * (double)d->copy_bytes / copy->median_s / 1e9;
  for (size_t i = 0; i < n + 1; i++) {
    result *r = i < n ? &res[i] : copy;
    double bytes = 2.0 * (double)d->copy_bytes;
    if (i < n) {
      const clnorm_call c = make_call(d, r->kind, 0);
      bytes = tool_op_bytes(&c);
    }
    r->median_s = tool_median(r->times, r->runs);
    r->gbps = bytes / r->median_s / 1e9;
    char what[256];
    if (!d->clock.wall && !tool_time_plausible(r->median_s, tool_median(r->walls, r->runs), bytes,
                                               i < n ? copy->gbps : 0.0, what, sizeof what)) {
      snprintf(why, why_size, "%s (%s)", what, r->op);
      return 0;
    }
  }
  return 1;
}

/* The variant for `kind` (the dispatcher's choice, or the heuristic's forced), and the check. */
static void prepare(demo *d, clnorm_op kind, int heuristic, result *res) {
  memset(res, 0, sizeof *res);
  res->kind = kind;
  res->forced = heuristic;
  const clnorm_call call = make_call(d, kind, 0);
  clnorm_choice why = CLNORM_CHOICE_HEURISTIC;
  const clnorm_status st = heuristic ? clnorm_heuristic(d->ctx, &call, &res->variant)
                                     : clnorm_choose(d->ctx, &call, &res->variant, &why);
  if (st != CLNORM_OK)
    die(1, "choosing a variant: %s: %s", clnorm_status_string(st), clnorm_ctx_errmsg(d->ctx));
  clnorm_variant_format(&res->variant, res->variant_text, sizeof res->variant_text);
  res->why = clnorm_choice_string(why);
  if (heuristic)
    res->op = kind == CLNORM_OP_LAYERNORM ? "layernorm (heuristic)" : "rmsnorm (heuristic)";
  else
    res->op = kind == CLNORM_OP_LAYERNORM ? "layernorm" : "rmsnorm";
  check_op(d, res);
}

int main(int argc, char **argv) {
  options o;
  parse_options(argc, argv, &o);
  demo d;
  demo_open(&d, &o);

  static result results[4], copy;
  size_t n = 0;
  const clnorm_op ops[2] = {CLNORM_OP_LAYERNORM, CLNORM_OP_RMSNORM};
  for (int i = 0; i < 2; i++) {
    prepare(&d, ops[i], 0, &results[n]);
    /* After `normtune tune` the dispatcher may choose a tuned variant: show the heuristic too. */
    if (strcmp(results[n++].why, "heuristic") != 0)
      prepare(&d, ops[i], 1, &results[n++]);
  }
  copy.op = "copy";
  char why[320];
  if (!time_all(&d, results, n, &copy, why, sizeof why)) {
    /* implausible events: every op and the copy again, by the wall clock */
    tool_clock_fall_back(&d.clock, why);
    if (!time_all(&d, results, n, &copy, why, sizeof why))
      die(1, "timing by the wall clock failed: %s", why);
  }
  const double copy_gbps = copy.gbps;
  int failed = 0;
  for (size_t i = 0; i < n; i++)
    failed |= !results[i].passed;

  if (o.json) {
    for (size_t i = 0; i < n; i++) {
      const result *r = &results[i];
      printf("{\"op\": ");
      tool_json_string(r->op);
      printf(", \"device\": ");
      tool_json_string(d.dev.name);
      printf(", \"platform\": ");
      tool_json_string(d.dev.platform_name);
      printf(", \"dtype\": \"f32\", \"rows\": %zu, \"cols\": %zu, \"variant\": \"%s\", "
             "\"why\": \"%s\", \"runs\": %zu, \"median_us\": %.2f, \"gbps\": %.2f, "
             "\"copy_gbps\": %.2f, \"ratio\": %.3f, \"clock\": \"%s\", \"y_err\": %.3g, ",
             d.rows, d.cols, r->variant_text, r->why, r->runs, r->median_s * 1e6, r->gbps,
             copy_gbps, r->gbps / copy_gbps, tool_clock_name(&d.clock), r->y_err);
      if (r->kind == CLNORM_OP_LAYERNORM)
        printf("\"mean_err\": %.3g, ", r->mean_err);
      printf("\"rstd_err\": %.3g, \"tolerance\": %g, \"check\": \"%s\"}\n", r->rstd_err, TOLERANCE,
             r->passed ? "pass" : "FAIL");
    }
    printf("{\"op\": \"copy\", \"device\": ");
    tool_json_string(d.dev.name);
    printf(", \"platform\": ");
    tool_json_string(d.dev.platform_name);
    printf(", \"bytes\": %zu, \"runs\": %zu, \"median_us\": %.2f, \"gbps\": %.2f, "
           "\"ratio\": 1.000, \"clock\": \"%s\", \"clock_why\": ",
           d.copy_bytes, copy.runs, copy.median_s * 1e6, copy_gbps, tool_clock_name(&d.clock));
    tool_json_string(d.clock.wall ? d.clock.why : "");
    printf("}\n");
  } else {
    printf("clnorm %s demo: %zu x %zu float32, eps 1e-5\n", clnorm_version(), d.rows, d.cols);
    printf("device:   %s\nplatform: %s\n\n", d.dev.name, d.dev.platform_name);
    for (size_t i = 0; i < n; i++) {
      const result *r = &results[i];
      char mean_text[32] = "";
      if (r->kind == CLNORM_OP_LAYERNORM)
        snprintf(mean_text, sizeof mean_text, ", mean %.2e", r->mean_err);
      printf("%-21s %s (%s)\n", r->op, r->variant_text, r->why);
      printf("%-21s %s: y %.2e%s, rstd %.2e (worst row; tolerance %.0e)\n", "",
             r->passed ? "PASS" : "FAIL", r->y_err, mean_text, r->rstd_err, TOLERANCE);
    }
    printf("\n%-21s %10s %9s %8s\n", "op", "median_us", "GB/s", "/copy");
    for (size_t i = 0; i < n; i++)
      printf("%-21s %10.1f %9.2f %8.2f\n", results[i].op, results[i].median_s * 1e6,
             results[i].gbps, results[i].gbps / copy_gbps);
    printf("%-21s %10.1f %9.2f %8.2f\n", "copy", copy.median_s * 1e6, copy_gbps, 1.0);
    printf(
        "\nmedians of %zu interleaved rounds after %d warm-up rounds, each run timed by %s;"
        "\nGB/s: bytes read + written once per run (norms: x, y, gamma, beta, "
        "mean, rstd; copy: the fastest\nof %d copy kernels, here the %s, over %zu MiB);\n%zu x/y "
        "pair%s and %zu copy pair%s in rotation (device cache: %zu MiB)\n",
        copy.runs, WARMUP_RUNS,
        d.clock.wall ? "the wall clock, enqueue to completion" : "its profiling event",
        clnorm__ctx_stream_stores(d.ctx) ? 4 : 2, tool_copy_name(d.copy_kind), d.copy_bytes >> 20,
        d.pairs, d.pairs == 1 ? "" : "s", d.copy_pairs, d.copy_pairs == 1 ? "" : "s",
        d.cache_bytes >> 20);
    if (d.clock.wall)
      printf("timed by the wall clock: the profiling events of this device cannot be believed: "
             "%s\n",
             d.clock.why);
    printf("\n%s\n", failed ? "FAIL" : "PASS");
  }
  demo_close(&d);
  return failed ? 1 : 0;
}
