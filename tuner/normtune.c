/* normtune: searches the variant space per device and shape, verifies every candidate against
 * the float64 reference, times it, and stores each result in the tuning database. */
#define _POSIX_C_SOURCE 200809L
#include "db.h"
#include "internal.h"
#include "ref.h"
#include "tool.h"

#include <errno.h>
#include <pthread.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define EXIT_USAGE 2
#define EXIT_INTERRUPTED 130

static volatile sig_atomic_t interrupted;

static void on_sigint(int sig) {
  (void)sig;
  interrupted = 1;
  signal(SIGINT, SIG_DFL); /* a second Ctrl-C ends at once; every stored result is kept */
}


static void die(int code, const char *fmt, ...) {
  va_list args;
  va_start(args, fmt);
  fputs("normtune: ", stderr);
  vfprintf(stderr, fmt, args);
  fputc('\n', stderr);
  va_end(args);
  exit(code);
}

/* ---- options ---------------------------------------------------------------------------- */

typedef struct options {
  const char *device, *db, *strategy, *file;
  char ops[64], dtypes[64];
  size_t cols[64], ncols, rows[64], nrows;
  double budget;      /* seconds; 0: none */
  double fraction;    /* random / anneal: share of the candidates to evaluate */
  unsigned long seed; /* random / anneal */
  int json, quiet;
} options;

static size_t parse_list(const char *text, size_t *out, size_t cap, const char *what) {
  size_t n = 0;
  const char *p = text;
  while (*p) {
    char *end;
    errno = 0;
    const unsigned long long v = strtoull(p, &end, 10);
    if (end == p || errno || v == 0 || (*end && *end != ','))
      die(EXIT_USAGE, "%s: \"%s\" is not a list of positive integers (e.g. 768,4096)", what,
          text);
    if (n == cap)
      die(EXIT_USAGE, "%s: at most %zu values", what, cap);
    out[n++] = (size_t)v;
    p = *end ? end + 1 : end;
  }
  return n;
}

static int has_word(const char *list, const char *word) {
  const size_t n = strlen(word);
  for (const char *p = list; (p = strstr(p, word)) != NULL; p += n)
    if ((p == list || p[-1] == ',') && (p[n] == '\0' || p[n] == ','))
      return 1;
  return 0;
}

static void check_words(const char *list, const char *const *allowed, const char *what) {
  char copy[64];
  snprintf(copy, sizeof copy, "%s", list);
  for (char *tok = strtok(copy, ","); tok; tok = strtok(NULL, ",")) {
    int ok = 0;
    for (const char *const *a = allowed; *a; a++)
      ok |= strcmp(tok, *a) == 0;
    if (!ok)
      die(EXIT_USAGE, "%s: unknown value \"%s\"", what, tok);
  }
}

static void parse_options(int argc, char **argv, int first, options *o) {
  memset(o, 0, sizeof *o);
  snprintf(o->ops, sizeof o->ops, "layernorm,rmsnorm");
  snprintf(o->dtypes, sizeof o->dtypes, "f32,f16,bf16");
  o->strategy = "anneal";
  o->fraction = 0.3;
  o->seed = 1;
  for (int i = first; i < argc; i++) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
#define TAKE(name)                                                                                 \
  (strcmp(a, name) == 0 && (v ? 1 : (die(EXIT_USAGE, "%s needs a value", name), 0)) && ++i)
    if (TAKE("--device"))
      o->device = v;
    else if (TAKE("--db"))
      o->db = v;
    else if (TAKE("--strategy"))
      o->strategy = v;
    else if (TAKE("--ops"))
      snprintf(o->ops, sizeof o->ops, "%s", v);
    else if (TAKE("--dtypes"))
      snprintf(o->dtypes, sizeof o->dtypes, "%s", v);
    else if (TAKE("--cols"))
      o->ncols = parse_list(v, o->cols, 64, "--cols");
    else if (TAKE("--rows"))
      o->nrows = parse_list(v, o->rows, 64, "--rows");
    else if (TAKE("--budget")) {
      char *end;
      o->budget = strtod(v, &end);
      if (*end || !(o->budget > 0))
        die(EXIT_USAGE, "--budget: \"%s\" is not a positive number of seconds", v);
    } else if (TAKE("--fraction")) {
      char *end;
      o->fraction = strtod(v, &end);
      if (*end || !(o->fraction > 0 && o->fraction <= 1))
        die(EXIT_USAGE, "--fraction: \"%s\" is not in (0, 1]", v);
    } else if (TAKE("--seed"))
      o->seed = strtoul(v, NULL, 10);
    else if (strcmp(a, "--json") == 0)
      o->json = 1;
    else if (strcmp(a, "--quiet") == 0)
      o->quiet = 1;
    else if ((a[0] != '-' || strcmp(a, "-") == 0) && !o->file) /* "-": standard in/out */
      o->file = a;
    else
      die(EXIT_USAGE, "unknown argument \"%s\" (see normtune --help)", a);
#undef TAKE
  }
  static const char *const ops[] = {"layernorm", "rmsnorm", NULL};
  static const char *const dtypes[] = {"f32", "f16", "bf16", NULL};
  static const char *const strategies[] = {"exhaustive", "random", "anneal", NULL};
  check_words(o->ops, ops, "--ops");
  check_words(o->dtypes, dtypes, "--dtypes");
  check_words(o->strategy, strategies, "--strategy");
}

static const char *op_name(clnorm_op op) {
  return op == CLNORM_OP_LAYERNORM ? "layernorm" : "rmsnorm";
}

static const char *dtype_name(clnorm_dtype d) {
  return d == CLNORM_F32 ? "f32" : d == CLNORM_F16 ? "f16" : "bf16";
}

/* ---- database --------------------------------------------------------------------------- */

static void db_path(const options *o, char *buf, size_t size) {
  char err[512];
  if (o->db) {
    snprintf(buf, size, "%s", o->db);
    return;
  }
  if (clnorm__db_default_path(buf, size, err, sizeof err) != CLNORM_OK)
    die(1, "%s (give --db PATH)", err);
}

/* Opens for writing; a corrupt, foreign-schema or newer file is moved aside and recreated. */
static clnorm_db *open_db_write(const char *path) {
  char err[1024], moved[4200];
  clnorm_db *db = NULL;
  if (clnorm__db_open(path, CLNORM_DB_WRITE, &db, err, sizeof err) == CLNORM_OK)
    return db;
  fprintf(stderr, "normtune: %s\n", err);
  if (clnorm__db_repair(path, moved, sizeof moved, err, sizeof err) != CLNORM_OK)
    die(1, "cannot repair the database: %s", err);
  if (moved[0])
    fprintf(stderr, "normtune: moved the bad file to %s and created a fresh database\n", moved);
  if (clnorm__db_open(path, CLNORM_DB_WRITE, &db, err, sizeof err) != CLNORM_OK)
    die(1, "%s", err);
  return db;
}

/* ---- a device session ------------------------------------------------------------------- */

typedef struct session {
  tool_device dev;
  cl_context context;
  cl_command_queue queue;
  clnorm_ctx *ctx;
  clnorm_device_identity identity;
  uint64_t hash;
  cl_ulong max_alloc, global_mem, cache;
} session;

static void session_open(const options *o, session *s) {
  char err[1024];
  memset(s, 0, sizeof *s);
  if (!tool_pick_device(o->device, &s->dev, err, sizeof err))
    die(1, "%s", err);
  if (!tool_open(&s->dev, &s->context, &s->queue, err, sizeof err))
    die(1, "%s", err);
  clnorm_status st = clnorm_ctx_create(s->context, s->dev.device, &s->ctx);
  if (st != CLNORM_OK)
    die(1, "clnorm_ctx_create: %s: %s", clnorm_status_string(st), clnorm_ctx_errmsg(NULL));
  if (clnorm__device_identity(s->dev.device, &s->identity, err, sizeof err) != CLNORM_OK)
    die(1, "%s", err);
  s->hash = clnorm__kernel_hash();
  clGetDeviceInfo(s->dev.device, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof s->max_alloc,
                  &s->max_alloc, NULL);
  clGetDeviceInfo(s->dev.device, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof s->global_mem,
                  &s->global_mem, NULL);
  clGetDeviceInfo(s->dev.device, CL_DEVICE_GLOBAL_MEM_CACHE_SIZE, sizeof s->cache, &s->cache,
                  NULL);
}

static void session_close(session *s) {
  clnorm_ctx_destroy(s->ctx);
  clReleaseCommandQueue(s->queue);
  clReleaseContext(s->context);
}

/* ---- one shape: buffers, reference, verification, timing --------------------------------- */

#define VERIFY_ROWS 40 /* rows of the reduced verification shape, adversarial rows included */
#define MAX_SETS 8     /* input/output sets rotated so large shapes are not timed from cache */

typedef struct shape {
  clnorm_op op;
  clnorm_dtype dtype;
  size_t rows, cols;
  /* verification: host data, reference, device buffers */
  size_t vrows;
  float *vx, *vy, *vmean, *vrstd;
  double *ref_y, *ref_mean, *ref_rstd;
  cl_mem vxb, vyb, vmeanb, vrstdb;
  /* timing */
  size_t sets;
  cl_mem x[MAX_SETS], y[MAX_SETS], mean, rstd;
  cl_mem gamma, beta;
  float *host_gamma, *host_beta;
} shape;

static clnorm_call shape_call(const shape *sh, size_t set, int verify) {
  clnorm_call c;
  memset(&c, 0, sizeof c);
  c.op = sh->op;
  c.dtype = sh->dtype;
  c.rows = verify ? sh->vrows : sh->rows;
  c.cols = sh->cols;
  c.eps = 1e-5f;
  c.x.buf = verify ? sh->vxb : sh->x[set];
  c.y.buf = verify ? sh->vyb : sh->y[set];
  c.gamma = sh->gamma;
  c.beta = sh->op == CLNORM_OP_LAYERNORM ? sh->beta : NULL;
  c.mean = sh->op == CLNORM_OP_LAYERNORM ? (verify ? sh->vmeanb : sh->mean) : NULL;
  c.rstd = verify ? sh->vrstdb : sh->rstd;
  return c;
}

static cl_mem make_buffer(session *s, size_t bytes, const void *host) {
  cl_int e;
  cl_mem m = clCreateBuffer(s->context, host ? CL_MEM_COPY_HOST_PTR : CL_MEM_READ_WRITE, bytes,
                            (void *)host, &e);
  return e == CL_SUCCESS ? m : NULL;
}

static void shape_free(shape *sh) {
  cl_mem all[] = {sh->vxb, sh->vyb, sh->vmeanb, sh->vrstdb, sh->mean, sh->rstd, sh->gamma,
                  sh->beta};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    if (all[i])
      clReleaseMemObject(all[i]);
  for (size_t i = 0; i < MAX_SETS; i++) {
    if (sh->x[i])
      clReleaseMemObject(sh->x[i]);
    if (sh->y[i])
      clReleaseMemObject(sh->y[i]);
  }
  free(sh->vx);
  free(sh->vy);
  free(sh->vmean);
  free(sh->vrstd);
  free(sh->ref_y);
  free(sh->ref_mean);
  free(sh->ref_rstd);
  free(sh->host_gamma);
  free(sh->host_beta);
  memset(sh, 0, sizeof *sh);
}

/* Data for rows [0, rows): N(0,1) with a per-row shift and scale; in the verification set,
 * row 0 is 1e4 + N(0,1) (where E[x^2] - E[x]^2 fails), row 1 holds a NaN and row 2 an Inf. */
static void fill_rows(float *x, size_t rows, size_t cols, clnorm_rng *rng, int adversarial) {
  for (size_t r = 0; r < rows; r++) {
    const double shift = (clnorm_rng_uniform(rng) - 0.5) * 4.0;
    const double scale = 0.5 + 2.0 * clnorm_rng_uniform(rng);
    for (size_t i = 0; i < cols; i++)
      x[r * cols + i] = (float)(shift + scale * clnorm_rng_normal(rng));
  }
  if (adversarial && rows >= 3) {
    for (size_t i = 0; i < cols; i++)
      x[i] = (float)(1e4 + clnorm_rng_normal(rng));
    x[cols + (size_t)(clnorm_rng_uniform(rng) * (double)cols)] = NAN;
    x[2 * cols + (size_t)(clnorm_rng_uniform(rng) * (double)cols)] = INFINITY;
  }
}

/* Sets up a shape; 0 with a message when it does not fit the device. */
static int shape_init(session *s, shape *sh, clnorm_op op, clnorm_dtype dtype, size_t rows,
                      size_t cols, char *why, size_t why_size) {
  memset(sh, 0, sizeof *sh);
  sh->op = op;
  sh->dtype = dtype;
  sh->rows = rows;
  sh->cols = cols;
  const double bytes = (double)rows * (double)cols * 4.0;
  const double budget = (double)s->global_mem * 0.6;
  if (bytes > (double)s->max_alloc || 2.0 * bytes > budget) {
    snprintf(why, why_size, "%zu x %zu needs %.0f MiB per buffer: more than this device allows",
             rows, cols, bytes / 1048576.0);
    return 0;
  }
  /* Enough sets that one pass over them is at least 4x the last-level cache (64 MiB when the
   * device does not say), within the memory budget. */
  const double cache = s->cache > 0 ? (double)s->cache : 64.0 * 1048576.0;
  size_t sets = (size_t)ceil(4.0 * cache / (2.0 * bytes));
  sets = sets < 1 ? 1 : sets > MAX_SETS ? MAX_SETS : sets;
  while (sets > 1 && 2.0 * bytes * (double)sets > budget)
    sets--;
  sh->sets = sets;
  clnorm_rng rng;
  clnorm_rng_seed(&rng, 0x5eed0000u + cols);
  sh->host_gamma = malloc(cols * sizeof(float));
  sh->host_beta = malloc(cols * sizeof(float));
  sh->vrows = rows < VERIFY_ROWS ? (rows < 3 ? 3 : rows) : VERIFY_ROWS;
  const size_t vn = sh->vrows * cols;
  sh->vx = malloc(vn * sizeof(float));
  sh->vy = malloc(vn * sizeof(float));
  sh->vmean = malloc(sh->vrows * sizeof(float));
  sh->vrstd = malloc(sh->vrows * sizeof(float));
  sh->ref_y = malloc(vn * sizeof(double));
  sh->ref_mean = malloc(sh->vrows * sizeof(double));
  sh->ref_rstd = malloc(sh->vrows * sizeof(double));
  float *data = malloc((size_t)bytes);
  if (!sh->host_gamma || !sh->host_beta || !sh->vx || !sh->vy || !sh->vmean || !sh->vrstd ||
      !sh->ref_y || !sh->ref_mean || !sh->ref_rstd || !data) {
    free(data);
    shape_free(sh);
    snprintf(why, why_size, "out of host memory for %zu x %zu", rows, cols);
    return 0;
  }
  for (size_t i = 0; i < cols; i++) {
    sh->host_gamma[i] = (float)(0.5 + clnorm_rng_uniform(&rng));
    sh->host_beta[i] = (float)(clnorm_rng_uniform(&rng) - 0.5);
  }
  fill_rows(sh->vx, sh->vrows, cols, &rng, 1);
  if (op == CLNORM_OP_LAYERNORM)
    clnorm_ref_layernorm(sh->vrows, cols, sh->vx, cols, sh->host_gamma, sh->host_beta, 1e-5,
                         sh->ref_y, sh->ref_mean, sh->ref_rstd);
  else
    clnorm_ref_rmsnorm(sh->vrows, cols, sh->vx, cols, sh->host_gamma, 1e-5, sh->ref_y,
                       sh->ref_rstd);
  fill_rows(data, rows, cols, &rng, 0);
  int ok = (sh->gamma = make_buffer(s, cols * 4, sh->host_gamma)) &&
           (sh->beta = make_buffer(s, cols * 4, sh->host_beta)) &&
           (sh->vxb = make_buffer(s, vn * 4, sh->vx)) && (sh->vyb = make_buffer(s, vn * 4, NULL)) &&
           (sh->vmeanb = make_buffer(s, sh->vrows * 4, NULL)) &&
           (sh->vrstdb = make_buffer(s, sh->vrows * 4, NULL)) &&
           (sh->mean = make_buffer(s, rows * 4, NULL)) &&
           (sh->rstd = make_buffer(s, rows * 4, NULL));
  for (size_t i = 0; ok && i < sets; i++)
    ok = (sh->x[i] = make_buffer(s, (size_t)bytes, data)) &&
         (sh->y[i] = make_buffer(s, (size_t)bytes, NULL));
  free(data);
  if (!ok) {
    shape_free(sh);
    snprintf(why, why_size, "cannot allocate device buffers for %zu x %zu", rows, cols);
    return 0;
  }
  return 1;
}

/* Runs v on the verification set (outputs poisoned with NaN first) and returns the worst error
 * over y, mean and rstd; +INFINITY when a NaN/Inf row is not all NaN or a value is missing. */
static double verify(session *s, shape *sh, const clnorm_variant *v, clnorm_status *st) {
  const float nan = NAN;
  const size_t vn = sh->vrows * sh->cols;
  clEnqueueFillBuffer(s->queue, sh->vyb, &nan, sizeof nan, 0, vn * 4, 0, NULL, NULL);
  clEnqueueFillBuffer(s->queue, sh->vmeanb, &nan, sizeof nan, 0, sh->vrows * 4, 0, NULL, NULL);
  clEnqueueFillBuffer(s->queue, sh->vrstdb, &nan, sizeof nan, 0, sh->vrows * 4, 0, NULL, NULL);
  const clnorm_call call = shape_call(sh, 0, 1);
  *st = clnorm_run(s->ctx, s->queue, &call, v, 0, NULL, NULL);
  if (*st != CLNORM_OK)
    return INFINITY;
  cl_int rc = clEnqueueReadBuffer(s->queue, sh->vyb, CL_TRUE, 0, vn * 4, sh->vy, 0, NULL, NULL);
  rc |= clEnqueueReadBuffer(s->queue, sh->vrstdb, CL_TRUE, 0, sh->vrows * 4, sh->vrstd, 0, NULL,
                           NULL);
  if (sh->op == CLNORM_OP_LAYERNORM)
    rc |= clEnqueueReadBuffer(s->queue, sh->vmeanb, CL_TRUE, 0, sh->vrows * 4, sh->vmean, 0, NULL,
                             NULL);
  if (rc != CL_SUCCESS) {
    *st = CLNORM_E_OPENCL;
    return INFINITY;
  }
  double worst = 0.0;
  for (size_t r = 0; r < sh->vrows; r++) {
    /* y: relative to the row's largest |y| (1e-5; 2e-4 for the row of 1e4 + N(0,1)) */
    double e_y = clnorm_ref_row_error(sh->cols, sh->vy + r * sh->cols, sh->ref_y + r * sh->cols);
    double e_r = clnorm_ref_rel_error(sh->vrstd[r], sh->ref_rstd[r]);
    double e_m = 0.0;
    if (sh->op == CLNORM_OP_LAYERNORM) {
      /* mean: relative to |mean| + standard deviation of the row */
      const double m = sh->ref_mean[r];
      if (isnan(m))
        e_m = isnan(sh->vmean[r]) ? 0.0 : INFINITY;
      else
        e_m = fabs((double)sh->vmean[r] - m) / (fabs(m) + 1.0 / sh->ref_rstd[r]);
    }
    const double tol = r == 0 ? 2e-4 : 1e-5;
    double e = e_y > e_r ? e_y : e_r;
    e = e > e_m ? e : e_m;
    if (!(e <= tol))
      return e > worst || isnan(e) ? (isnan(e) ? INFINITY : e) : worst;
    if (r != 0 && e > worst) /* report the error of the ordinary rows */
      worst = e;
  }
  return worst;
}

typedef struct timing {
  double median, min;
  int slow;
} timing;

/* Median of repeated runs, after warm-up, until the median settles (or 1 s, or 200 runs),
 * rotating the input sets. Cut short when the first runs are more than 3x `best`. */
static clnorm_status time_variant(session *s, shape *sh, const clnorm_variant *v, double best,
                                  timing *out) {
  double times[200], sorted[200];
  size_t n = 0;
  double prev = 0.0;
  const double start = tool_now();
  memset(out, 0, sizeof *out);
  for (size_t i = 0; i < 2 + 200; i++) {
    const clnorm_call call = shape_call(sh, i % sh->sets, 0);
    cl_event ev;
    const clnorm_status st = clnorm_run(s->ctx, s->queue, &call, v, 0, NULL, &ev);
    if (st != CLNORM_OK)
      return st;
    const double t = tool_event_seconds(ev);
    if (t < 0)
      return CLNORM_E_OPENCL;
    if (i < 2)
      continue; /* warm-up */
    times[n++] = t;
    if (n == 3 && best > 0) {
      double m = times[0];
      for (size_t k = 1; k < 3; k++)
        m = times[k] < m ? times[k] : m;
      if (m > 3.0 * best) {
        out->slow = 1;
        out->min = m;
        out->median = m;
        return CLNORM_OK;
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
  memcpy(sorted, times, n * sizeof *times);
  out->median = tool_median(sorted, n);
  out->min = sorted[0];
  return CLNORM_OK;
}

/* ---- the search ------------------------------------------------------------------------- */

typedef struct candidate {
  clnorm_variant v;
  int evaluated;
  double median; /* INFINITY: failed, wrong or cut short */
} candidate;

typedef struct search {
  session *s;
  shape *sh;
  clnorm_db *db;
  candidate *c;
  size_t n, evaluated, best;
  double best_time;
  const options *o;
  double deadline; /* 0: none */
  /* progress */
  size_t shape_index, shape_count;
  double run_start;
  size_t total_evals;
  int tty;
  const double *replay; /* strategies: times measured earlier, per candidate (no device work) */
} search;

static void progress(search *se, const char *last) {
  if (se->o->quiet)
    return;
  char best[160] = "none yet";
  if (se->best_time < INFINITY) {
    const clnorm_call call = shape_call(se->sh, 0, 0);
    char text[128];
    clnorm_variant_format(&se->c[se->best].v, text, sizeof text);
    snprintf(best, sizeof best, "%.1f GB/s (%s)", tool_op_bytes(&call) / se->best_time / 1e9,
             text);
  }
  if (se->tty) {
    const double elapsed = tool_now() - se->run_start;
    const double per_shape = se->shape_index > 0 ? elapsed / (double)se->shape_index : 0.0;
    double eta = per_shape * (double)(se->shape_count - se->shape_index);
    if (se->deadline > 0 && se->deadline - tool_now() < eta)
      eta = se->deadline - tool_now();
    const int width = 24;
    const int filled = (int)((double)width * (double)se->shape_index / (double)se->shape_count);
    fprintf(stderr, "\r\033[K[%.*s%*s] shape %zu/%zu %s %s %zux%zu cand %zu/%zu best %s ETA %.0fs",
            filled, "########################", width - filled, "", se->shape_index + 1,
            se->shape_count, op_name(se->sh->op), dtype_name(se->sh->dtype), se->sh->rows,
            se->sh->cols, se->evaluated, se->n, best, eta > 0 ? eta : 0.0);
    fflush(stderr);
  } else if (last) {
    printf("%s\n", last);
    fflush(stdout);
  }
}

/* Evaluates candidate i (once): from the database when already measured, else verified,
 * timed and stored. Returns its median (INFINITY when it failed). */
static double evaluate(search *se, size_t i) {
  candidate *c = &se->c[i];
  if (c->evaluated)
    return c->median;
  c->evaluated = 1;
  se->evaluated++;
  se->total_evals++;
  if (se->replay) {
    c->median = se->replay[i];
    if (c->median < se->best_time) {
      se->best_time = c->median;
      se->best = i;
    }
    return c->median;
  }
  clnorm_result r;
  memset(&r, 0, sizeof r);
  r.kernel_hash = se->s->hash;
  r.op = se->sh->op;
  r.dtype = se->sh->dtype;
  r.cols = se->sh->cols;
  r.rows = se->sh->rows;
  r.row_class = clnorm__row_class(se->sh->rows);
  r.variant = c->v;
  char err[1024];
  int found = 0;
  clnorm_result stored;
  if (clnorm__db_get(se->db, &se->s->identity, &r, &stored, &found, err, sizeof err) ==
          CLNORM_OK &&
      found) {
    c->median = stored.outcome == CLNORM_OUTCOME_OK ? stored.median_s : INFINITY;
  } else {
    clnorm_status st;
    const double error = verify(se->s, se->sh, &c->v, &st);
    timing t = {NAN, NAN, 0};
    if (st == CLNORM_E_BUILD)
      r.outcome = CLNORM_OUTCOME_BUILD_FAILED;
    else if (st != CLNORM_OK)
      r.outcome = CLNORM_OUTCOME_UNSUPPORTED;
    else if (!(error <= 1e-5))
      r.outcome = CLNORM_OUTCOME_WRONG;
    else if (time_variant(se->s, se->sh, &c->v, se->best_time < INFINITY ? se->best_time : 0,
                          &t) != CLNORM_OK)
      r.outcome = CLNORM_OUTCOME_UNSUPPORTED;
    else
      r.outcome = t.slow ? CLNORM_OUTCOME_SLOW : CLNORM_OUTCOME_OK;
    r.max_err = isfinite(error) ? error : NAN;
    r.median_s = t.median;
    r.min_s = t.min;
    const clnorm_call call = shape_call(se->sh, 0, 0);
    r.gbps = r.outcome == CLNORM_OUTCOME_OK ? tool_op_bytes(&call) / t.median / 1e9 : NAN;
    if (r.outcome == CLNORM_OUTCOME_WRONG) {
      char text[128];
      clnorm_variant_format(&c->v, text, sizeof text);
      fprintf(stderr, "\nnormtune: %s gave a wrong result (error %.3g) on %s %zu x %zu: "
                      "recorded, never chosen\n",
              text, error, op_name(se->sh->op), se->sh->vrows, se->sh->cols);
    }
    if (clnorm__db_put(se->db, &se->s->identity, &r, err, sizeof err) != CLNORM_OK)
      die(1, "storing a result: %s", err);
    c->median = r.outcome == CLNORM_OUTCOME_OK ? t.median : INFINITY;
    if (!se->tty) {
      char text[128], line[400];
      clnorm_variant_format(&c->v, text, sizeof text);
      snprintf(line, sizeof line, "%s %s %zux%zu %s: %s%s%.1f GB/s", op_name(se->sh->op),
               dtype_name(se->sh->dtype), se->sh->rows, se->sh->cols, text,
               clnorm__outcome_name(r.outcome), r.outcome == CLNORM_OUTCOME_OK ? " " : " (",
               r.outcome == CLNORM_OUTCOME_OK ? r.gbps : 0.0);
      if (r.outcome != CLNORM_OUTCOME_OK)
        snprintf(line, sizeof line, "%s %s %zux%zu %s: %s", op_name(se->sh->op),
                 dtype_name(se->sh->dtype), se->sh->rows, se->sh->cols, text,
                 clnorm__outcome_name(r.outcome));
      progress(se, line);
    }
  }
  if (c->median < se->best_time) {
    se->best_time = c->median;
    se->best = i;
  }
  if (se->tty)
    progress(se, NULL);
  return c->median;
}

static int out_of_time(const search *se) {
  return interrupted || (se->deadline > 0 && tool_now() > se->deadline);
}

/* Index of the candidate equal to v, or n. */
static size_t find_candidate(const search *se, const clnorm_variant *v) {
  for (size_t i = 0; i < se->n; i++)
    if (memcmp(&se->c[i].v, v, sizeof *v) == 0)
      return i;
  return se->n;
}

static unsigned differences(const clnorm_variant *a, const clnorm_variant *b) {
  return (a->wg != b->wg) + (a->tpr != b->tpr) + (a->vec != b->vec) + (a->hold != b->hold) +
         (a->reduce != b->reduce) + (a->stats != b->stats);
}

/* Builds every candidate's program on several threads before timing: compilers are slow
 * (a third of a second per program on NVIDIA's), and building is the bulk of an exhaustive run.
 * Build failures are simply remembered by the context and reported when evaluated. */
typedef struct prebuild {
  search *se;
  const clnorm_call *call;
  size_t next;
  pthread_mutex_t lock;
} prebuild;

static void *prebuild_worker(void *arg) {
  prebuild *pb = arg;
  for (;;) {
    pthread_mutex_lock(&pb->lock);
    const size_t i = pb->next++;
    pthread_mutex_unlock(&pb->lock);
    if (i >= pb->se->n || interrupted)
      return NULL;
    clnorm_variant_check(pb->se->s->ctx, pb->call, &pb->se->c[i].v);
  }
}

static void prebuild_all(search *se, const clnorm_call *call) {
  prebuild pb = {se, call, 0, PTHREAD_MUTEX_INITIALIZER};
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  size_t threads = cpus > 1 ? (size_t)cpus : 1;
  threads = threads > 16 ? 16 : threads;
  pthread_t tid[16];
  size_t started = 0;
  for (size_t t = 0; t < threads; t++)
    if (pthread_create(&tid[t], NULL, prebuild_worker, &pb) == 0)
      started++;
  if (started == 0)
    prebuild_worker(&pb);
  for (size_t t = 0; t < started; t++)
    pthread_join(tid[t], NULL);
}

/* The three strategies. Each starts from the heuristic's variant when it is a candidate, so the
 * cut-short threshold is meaningful from the first evaluation. `limit` evaluations at most. */
static void run_exhaustive(search *se, size_t start) {
  if (start < se->n)
    evaluate(se, start);
  for (size_t i = 0; i < se->n && !out_of_time(se); i++)
    evaluate(se, i);
}

static void shuffle(size_t *idx, size_t n, clnorm_rng *rng) {
  for (size_t i = n; i > 1; i--) {
    const size_t j = (size_t)(clnorm_rng_uniform(rng) * (double)i);
    const size_t t = idx[i - 1];
    idx[i - 1] = idx[j];
    idx[j] = t;
  }
}

static void run_random(search *se, size_t start, size_t limit, clnorm_rng *rng) {
  size_t *idx = malloc(se->n * sizeof *idx);
  if (!idx)
    die(1, "out of memory");
  for (size_t i = 0; i < se->n; i++)
    idx[i] = i;
  shuffle(idx, se->n, rng);
  if (start < se->n)
    evaluate(se, start);
  for (size_t k = 0; k < se->n && se->evaluated < limit && !out_of_time(se); k++)
    evaluate(se, idx[k]);
  free(idx);
}

/* Simulated annealing over the parameter grid: a move changes one parameter; a slower
 * neighbour is accepted with probability exp(-(t_new / t_cur - 1) / T), T falling from 0.2 to
 * 0.005 over the evaluations. When every neighbour has been seen, it jumps to a random unseen
 * candidate. */
static void run_anneal(search *se, size_t start, size_t limit, clnorm_rng *rng) {
  size_t *nb = malloc(se->n * sizeof *nb);
  if (!nb)
    die(1, "out of memory");
  size_t cur = start < se->n ? start : (size_t)(clnorm_rng_uniform(rng) * (double)se->n);
  double cur_t = evaluate(se, cur);
  while (se->evaluated < limit && se->evaluated < se->n && !out_of_time(se)) {
    size_t m = 0;
    for (size_t i = 0; i < se->n; i++)
      if (!se->c[i].evaluated && differences(&se->c[i].v, &se->c[cur].v) == 1)
        nb[m++] = i;
    if (m == 0) {
      for (size_t i = 0; i < se->n; i++)
        if (!se->c[i].evaluated)
          nb[m++] = i;
      if (m == 0)
        break;
    }
    const size_t next = nb[(size_t)(clnorm_rng_uniform(rng) * (double)m)];
    const double t = evaluate(se, next);
    const double progress_share = (double)se->evaluated / (double)(limit ? limit : 1);
    const double temperature = 0.2 * pow(0.025, progress_share);
    if (t < cur_t ||
        (isfinite(t) && clnorm_rng_uniform(rng) < exp(-(t / cur_t - 1.0) / temperature))) {
      cur = next;
      cur_t = t;
    }
    if (!isfinite(cur_t) && se->best_time < INFINITY) {
      cur = se->best;
      cur_t = se->best_time;
    }
  }
  free(nb);
}

/* ---- commands --------------------------------------------------------------------------- */

static const size_t default_cols[] = {64,   128,  256,  512,  768,   1024,  1536,  2048,
                                      2560, 3072, 4096, 5120, 6144,  8192,  12288, 14336,
                                      16384, 32768, 65536};
/* A representative row count of each row class (see clnorm__row_class). */
static const size_t class_rows[] = {8, 128, 2048, 16384};

static int cmd_tune(const options *o) {
  session s;
  session_open(o, &s);
  char path[4096], err[1024];
  db_path(o, path, sizeof path);
  clnorm_db *db = open_db_write(path);
  clnorm_db_stale stale;
  if (clnorm__db_stale(db, &s.identity, s.hash, &stale, err, sizeof err) == CLNORM_OK &&
      (stale.driver_changed || stale.kernels_changed))
    fprintf(stderr,
            "normtune: %llu stored results of this device are stale (%llu from another driver "
            "version, %llu from other kernel sources): they are not used; this run replaces "
            "them\n",
            (unsigned long long)(stale.driver_changed + stale.kernels_changed),
            (unsigned long long)stale.driver_changed, (unsigned long long)stale.kernels_changed);

  const size_t *cols = o->ncols ? o->cols : default_cols;
  const size_t ncols = o->ncols ? o->ncols : sizeof default_cols / sizeof default_cols[0];
  const size_t *rows = o->nrows ? o->rows : class_rows;
  const size_t nrows = o->nrows ? o->nrows : sizeof class_rows / sizeof class_rows[0];
  clnorm_op ops[2];
  clnorm_dtype dtypes[3];
  size_t nops = 0, ndtypes = 0;
  if (has_word(o->ops, "layernorm"))
    ops[nops++] = CLNORM_OP_LAYERNORM;
  if (has_word(o->ops, "rmsnorm"))
    ops[nops++] = CLNORM_OP_RMSNORM;
  const char *dnames[] = {"f32", "f16", "bf16"};
  for (int d = 0; d < 3; d++)
    if (has_word(o->dtypes, dnames[d])) {
      /* only the dtypes this build supports are tuned; say which are left out */
      clnorm_call probe;
      memset(&probe, 0, sizeof probe);
      probe.op = CLNORM_OP_LAYERNORM;
      probe.dtype = (clnorm_dtype)d;
      probe.rows = 1;
      probe.cols = 64;
      clnorm_variant v;
      clnorm_heuristic(s.ctx, &probe, &v);
      if (clnorm_variant_check(s.ctx, &probe, &v) == CLNORM_E_UNSUPPORTED && d != 0) {
        if (o->dtypes[0] && strcmp(o->dtypes, "f32,f16,bf16") != 0)
          fprintf(stderr, "normtune: %s is not supported by this build: skipped\n", dnames[d]);
        continue;
      }
      dtypes[ndtypes++] = (clnorm_dtype)d;
    }
  if (nops == 0 || ndtypes == 0)
    die(EXIT_USAGE, "nothing to tune (--ops / --dtypes)");

  signal(SIGINT, on_sigint);
  const size_t nvar = clnorm_variant_list(s.ctx, CLNORM_OP_LAYERNORM, NULL, 0) +
                      clnorm_variant_list(s.ctx, CLNORM_OP_RMSNORM, NULL, 0);
  clnorm_variant *all = malloc(nvar * sizeof *all);
  candidate *cand = malloc(nvar * sizeof *cand);
  if (!all || !cand)
    die(1, "out of memory");
  search se;
  memset(&se, 0, sizeof se);
  se.s = &s;
  se.db = db;
  se.o = o;
  se.tty = isatty(STDERR_FILENO) && !o->quiet;
  se.shape_count = nops * ndtypes * ncols * nrows;
  se.run_start = tool_now();
  se.deadline = o->budget > 0 ? se.run_start + o->budget : 0.0;
  clnorm_rng rng;
  clnorm_rng_seed(&rng, o->seed);
  printf("normtune: tuning %s (%s) into %s: %zu shapes, strategy %s%s\n", s.dev.name,
         s.dev.platform_name, path, se.shape_count, o->strategy,
         o->budget > 0 ? ", with a time budget" : "");
  size_t tuned = 0, skipped = 0;
  for (size_t a = 0; a < nops; a++)
    for (size_t d = 0; d < ndtypes; d++)
      for (size_t ci = 0; ci < ncols; ci++)
        for (size_t ri = 0; ri < nrows; ri++, se.shape_index++) {
          if (out_of_time(&se))
            goto done;
          shape sh;
          char why[256];
          if (!shape_init(&s, &sh, ops[a], dtypes[d], rows[ri], cols[ci], why, sizeof why)) {
            fprintf(stderr, "%snormtune: skipped %s %s: %s\n", se.tty ? "\n" : "",
                    op_name(ops[a]), dtype_name(dtypes[d]), why);
            skipped++;
            continue;
          }
          const clnorm_call call = shape_call(&sh, 0, 0);
          const size_t nv = clnorm_variant_list(s.ctx, ops[a], all, nvar);
          se.n = 0;
          for (size_t i = 0; i < nv; i++) {
            /* the call-level check (the row must fit a held variant) without building */
            if (!clnorm__variant_call_ok(&all[i], call.cols, NULL, 0))
              continue;
            cand[se.n].v = all[i];
            cand[se.n].evaluated = 0;
            cand[se.n].median = INFINITY;
            se.n++;
          }
          se.c = cand;
          se.sh = &sh;
          se.evaluated = 0;
          se.best = 0;
          se.best_time = INFINITY;
          clnorm_variant h;
          clnorm_heuristic(s.ctx, &call, &h);
          size_t start = find_candidate(&se, &h);
          /* the budget left is shared evenly by the shapes left */
          const double shape_deadline_save = se.deadline;
          if (se.deadline > 0)
            se.deadline = tool_now() + (se.deadline - tool_now()) /
                                              (double)(se.shape_count - se.shape_index);
          const size_t limit = (size_t)ceil(o->fraction * (double)se.n);
          if (strcmp(o->strategy, "exhaustive") == 0) {
            prebuild_all(&se, &call);
            run_exhaustive(&se, start);
          }
          else if (strcmp(o->strategy, "random") == 0)
            run_random(&se, start, limit, &rng);
          else
            run_anneal(&se, start, limit, &rng);
          se.deadline = shape_deadline_save;
          if (se.best_time < INFINITY) {
            char text[128], line[400];
            clnorm_variant_format(&se.c[se.best].v, text, sizeof text);
            snprintf(line, sizeof line, "best %s %s %zux%zu: %s %.1f GB/s (%zu of %zu evaluated)",
                     op_name(sh.op), dtype_name(sh.dtype), sh.rows, sh.cols, text,
                     tool_op_bytes(&call) / se.best_time / 1e9, se.evaluated, se.n);
            if (se.tty)
              fprintf(stderr, "\r\033[K%s\n", line);
            else if (!o->quiet)
              printf("%s\n", line);
            tuned++;
          }
          shape_free(&sh);
        }
done:
  if (se.tty)
    fprintf(stderr, "\n");
  printf("normtune: %zu shapes tuned, %zu skipped, %zu evaluations in %.1f s; results in %s\n",
         tuned, skipped, se.total_evals, tool_now() - se.run_start, path);
  free(all);
  free(cand);
  clnorm__db_close(db);
  session_close(&s);
  if (interrupted) {
    printf("normtune: interrupted; every result measured so far is kept: run the same command "
           "again to resume\n");
    return EXIT_INTERRUPTED;
  }
  return 0;
}

static int cmd_devices(void) {
  tool_device devs[64];
  const size_t n = tool_devices(devs, 64);
  if (n == 0) {
    fprintf(stderr, "normtune: no OpenCL platform or device found (check `clinfo -l`; on "
                    "Debian/Ubuntu install pocl-opencl-icd for the CPU)\n");
    return 1;
  }
  printf("index  type  platform / device\n");
  for (size_t i = 0; i < n && i < 64; i++) {
    cl_device_type type = 0;
    cl_uint cu = 0;
    char version[128] = "";
    clGetDeviceInfo(devs[i].device, CL_DEVICE_TYPE, sizeof type, &type, NULL);
    clGetDeviceInfo(devs[i].device, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof cu, &cu, NULL);
    clGetDeviceInfo(devs[i].device, CL_DEVICE_VERSION, sizeof version - 1, version, NULL);
    printf("%5zu  %-4s  %s / %s (%u compute units, %s)\n", i,
           type & CL_DEVICE_TYPE_GPU   ? "GPU"
           : type & CL_DEVICE_TYPE_CPU ? "CPU"
                                       : "ACC",
           devs[i].platform_name, devs[i].name, cu, version);
  }
  printf("select with --device INDEX or --device NAME (a case-insensitive part of the name)\n");
  return 0;
}

typedef struct show_state {
  int json, first;
  const clnorm_device_identity *last;
  char last_name[256], last_driver[256];
} show_state;


/* Writes v as a JSON number, or null when it is not finite. */
static void json_number(const char *format, double v) {
  if (isfinite(v))
    printf(format, v);
  else
    fputs("null", stdout);
}

static int show_row(void *user, const clnorm_device_identity *dev, const clnorm_result *r,
                    int winner) {
  show_state *st = user;
  (void)winner;
  char text[128];
  clnorm_variant_format(&r->variant, text, sizeof text);
  if (st->json) {
    printf("%s{\"device\": ", st->first ? "" : ",\n");
    tool_json_string(dev->name);
    printf(", \"driver\": ");
    tool_json_string(dev->driver_version);
    printf(", \"op\": \"%s\", \"dtype\": \"%s\", \"cols\": %llu, \"row_class\": %u, "
           "\"rows\": %llu, \"variant\": \"%s\", \"median_s\": ",
           op_name(r->op), dtype_name(r->dtype), (unsigned long long)r->cols, r->row_class,
           (unsigned long long)r->rows, text);
    json_number("%.6g", r->median_s);
    printf(", \"gbps\": ");
    json_number("%.1f", r->gbps);
    printf(", \"max_err\": ");
    json_number("%.3g", r->max_err);
    putchar('}');
    st->first = 0;
    return 0;
  }
  if (strcmp(st->last_name, dev->name) != 0 || strcmp(st->last_driver, dev->driver_version) != 0) {
    printf("\n%s (driver %s, %s)\n", dev->name, dev->driver_version, dev->cl_version);
    printf("  %-9s %-5s %8s %5s %8s %10s %9s  %s\n", "op", "dtype", "cols", "class", "rows",
           "median_us", "GB/s", "variant");
    snprintf(st->last_name, sizeof st->last_name, "%s", dev->name);
    snprintf(st->last_driver, sizeof st->last_driver, "%s", dev->driver_version);
  }
  printf("  %-9s %-5s %8llu %5u %8llu %10.2f %9.1f  %s\n", op_name(r->op), dtype_name(r->dtype),
         (unsigned long long)r->cols, r->row_class, (unsigned long long)r->rows,
         r->median_s * 1e6, r->gbps, text);
  return 0;
}

static int cmd_show(const options *o) {
  char path[4096], err[1024];
  db_path(o, path, sizeof path);
  clnorm_db *db = NULL;
  if (clnorm__db_open(path, CLNORM_DB_READ, &db, err, sizeof err) != CLNORM_OK)
    die(1, "%s (run `normtune tune` first, or give --db PATH)", err);
  show_state st;
  memset(&st, 0, sizeof st);
  st.json = o->json;
  st.first = 1;
  clnorm_device_identity id;
  const clnorm_device_identity *filter = NULL;
  uint64_t hash = clnorm__kernel_hash();
  if (o->device) {
    tool_device dev;
    if (!tool_pick_device(o->device, &dev, err, sizeof err))
      die(1, "%s", err);
    if (clnorm__device_identity(dev.device, &id, err, sizeof err) != CLNORM_OK)
      die(1, "%s", err);
    filter = &id;
    clnorm_db_stale stale;
    if (clnorm__db_stale(db, &id, hash, &stale, err, sizeof err) == CLNORM_OK &&
        (stale.driver_changed || stale.kernels_changed) && !o->json)
      printf("%llu results of this device are stale (%llu: driver changed, %llu: kernels "
             "changed) and are not used; run `normtune tune` again\n",
             (unsigned long long)(stale.driver_changed + stale.kernels_changed),
             (unsigned long long)stale.driver_changed, (unsigned long long)stale.kernels_changed);
  }
  if (o->json)
    printf("[\n");
  else
    printf("tuned winners in %s (current kernels only)\n", path);
  if (clnorm__db_list(db, filter, &hash, 1, show_row, &st, err, sizeof err) != CLNORM_OK)
    die(1, "%s", err);
  if (o->json)
    printf("\n]\n");
  clnorm__db_close(db);
  return 0;
}

/* Times one call with a given (or the dispatcher's) variant; verifies the first run. */
static double bench_one(session *s, shape *sh, const clnorm_variant *v, double *error) {
  clnorm_status st;
  *error = verify(s, sh, v, &st);
  if (st != CLNORM_OK)
    return -1.0;
  timing t;
  if (time_variant(s, sh, v, 0, &t) != CLNORM_OK)
    return -1.0;
  return t.median;
}

static int cmd_bench(const options *o) {
  session s;
  session_open(o, &s);
  char path[4096];
  db_path(o, path, sizeof path);
  if (clnorm_ctx_load_tuning(s.ctx, path) != CLNORM_OK)
    fprintf(stderr, "normtune: %s: benchmarking without tuned results\n",
            clnorm_ctx_errmsg(s.ctx));
  static const size_t bench_cols[] = {4096, 65536};
  static const size_t bench_rows[] = {4096, 256};
  const size_t n = o->ncols ? o->ncols : 2;
  char err[512];
  double copy = tool_copy_gbps(s.context, s.queue, s.dev.device, (size_t)256 << 20, err,
                               sizeof err);
  if (copy <= 0)
    die(1, "%s", err);
  int failed = 0;
  if (!o->json) {
    printf("normtune bench on %s (%s); copy bandwidth %.1f GB/s (float4 copy kernel, same run)\n",
           s.dev.name, s.dev.platform_name, copy);
    printf("%-9s %-5s %6s %6s | %9s %6s %-9s | %9s %6s | %s\n", "op", "dtype", "rows", "cols",
           "chosen", "/copy", "why", "heuristic", "/copy", "chosen variant");
  }
  clnorm_op ops[2] = {CLNORM_OP_LAYERNORM, CLNORM_OP_RMSNORM};
  for (int a = 0; a < 2; a++) {
    if (!has_word(o->ops, op_name(ops[a])))
      continue;
    for (size_t i = 0; i < n; i++) {
      const size_t cols = o->ncols ? o->cols[i] : bench_cols[i];
      const size_t rows = o->nrows ? o->rows[i < o->nrows ? i : o->nrows - 1] : bench_rows[i];
      shape sh;
      char why[256];
      if (!shape_init(&s, &sh, ops[a], CLNORM_F32, rows, cols, why, sizeof why)) {
        fprintf(stderr, "normtune: skipped: %s\n", why);
        continue;
      }
      const clnorm_call call = shape_call(&sh, 0, 0);
      clnorm_variant chosen, heur;
      clnorm_choice reason;
      clnorm_choose(s.ctx, &call, &chosen, &reason);
      clnorm_heuristic(s.ctx, &call, &heur);
      double e1, e2;
      const double t1 = bench_one(&s, &sh, NULL, &e1);
      const double t2 = bench_one(&s, &sh, &heur, &e2);
      const double bytes = tool_op_bytes(&call);
      const double g1 = t1 > 0 ? bytes / t1 / 1e9 : 0, g2 = t2 > 0 ? bytes / t2 / 1e9 : 0;
      const int ok = t1 > 0 && t2 > 0 && e1 <= 1e-5 && e2 <= 1e-5;
      failed |= !ok;
      char text[128];
      clnorm_variant_format(&chosen, text, sizeof text);
      if (o->json)
        printf("{\"device\": \"%s\", \"op\": \"%s\", \"dtype\": \"f32\", \"rows\": %zu, "
               "\"cols\": %zu, \"chosen_gbps\": %.1f, \"chosen_why\": \"%s\", "
               "\"heuristic_gbps\": %.1f, \"copy_gbps\": %.1f, \"chosen_ratio\": %.3f, "
               "\"heuristic_ratio\": %.3f, \"variant\": \"%s\", \"max_err\": %.3g, "
               "\"check\": \"%s\"}\n",
               s.dev.name, op_name(ops[a]), rows, cols, g1, clnorm_choice_string(reason), g2,
               copy, g1 / copy, g2 / copy, text, e1 > e2 ? e1 : e2, ok ? "pass" : "FAIL");
      else
        printf("%-9s %-5s %6zu %6zu | %9.1f %6.2f %-9s | %9.1f %6.2f | %s%s\n", op_name(ops[a]),
               "f32", rows, cols, g1, g1 / copy, clnorm_choice_string(reason), g2, g2 / copy,
               text, ok ? "" : "  CHECK FAILED");
      shape_free(&sh);
    }
  }
  session_close(&s);
  return failed ? 1 : 0;
}

static int cmd_export(const options *o) {
  if (!o->file)
    die(EXIT_USAGE, "export needs a FILE (- for standard output)");
  char path[4096], err[1024];
  db_path(o, path, sizeof path);
  clnorm_db *db = NULL;
  if (clnorm__db_open(path, CLNORM_DB_READ, &db, err, sizeof err) != CLNORM_OK)
    die(1, "%s", err);
  FILE *out = strcmp(o->file, "-") == 0 ? stdout : fopen(o->file, "w");
  if (!out)
    die(1, "cannot write %s: %s", o->file, strerror(errno));
  const clnorm_status st = clnorm__db_export(db, out, err, sizeof err);
  if (out != stdout && fclose(out) != 0)
    die(1, "writing %s: %s", o->file, strerror(errno));
  clnorm__db_close(db);
  if (st != CLNORM_OK)
    die(1, "%s", err);
  return 0;
}

static int cmd_import(const options *o) {
  if (!o->file)
    die(EXIT_USAGE, "import needs a FILE");
  FILE *in = strcmp(o->file, "-") == 0 ? stdin : fopen(o->file, "rb");
  if (!in)
    die(1, "cannot read %s: %s", o->file, strerror(errno));
  size_t cap = 1 << 16, len = 0;
  char *text = malloc(cap);
  for (size_t got; text && (got = fread(text + len, 1, cap - len, in)) > 0;) {
    len += got;
    if (len == cap) {
      char *grown = realloc(text, cap *= 2);
      if (!grown)
        free(text);
      text = grown;
    }
  }
  if (in != stdin)
    fclose(in);
  if (!text)
    die(1, "out of memory reading %s", o->file);
  char path[4096], err[1024];
  db_path(o, path, sizeof path);
  clnorm_db *db = open_db_write(path);
  size_t imported = 0, kept = 0;
  const clnorm_status st = clnorm__db_import(db, text, len, &imported, &kept, err, sizeof err);
  free(text);
  clnorm__db_close(db);
  if (st != CLNORM_OK)
    die(1, "%s: %s", o->file, err);
  printf("normtune: imported %zu results into %s (%zu older than the stored ones were not)\n",
         imported, path, kept);
  return 0;
}

/* Replays the search strategies over shapes tuned exhaustively: every candidate's time is
 * already stored, so each strategy is run many times (seeds) with the stored times as the
 * objective, and its best is compared with the true optimum. */
typedef struct replay_group {
  clnorm_op op;
  clnorm_dtype dtype;
  uint64_t cols, rows;
  unsigned row_class;
  clnorm_variant *v;
  double *t;
  size_t n, cap;
} replay_group;

typedef struct replay_state {
  replay_group *g;
  size_t n, cap;
} replay_state;

static int replay_row(void *user, const clnorm_device_identity *dev, const clnorm_result *r,
                      int winner) {
  (void)dev;
  (void)winner;
  replay_state *st = user;
  replay_group *g = st->n ? &st->g[st->n - 1] : NULL;
  if (!g || g->op != r->op || g->dtype != r->dtype || g->cols != r->cols ||
      g->row_class != r->row_class) {
    if (st->n == st->cap) {
      st->cap = st->cap ? 2 * st->cap : 16;
      st->g = realloc(st->g, st->cap * sizeof *st->g);
      if (!st->g)
        die(1, "out of memory");
    }
    g = &st->g[st->n++];
    memset(g, 0, sizeof *g);
    g->op = r->op;
    g->dtype = r->dtype;
    g->cols = r->cols;
    g->rows = r->rows;
    g->row_class = r->row_class;
  }
  if (g->n == g->cap) {
    g->cap = g->cap ? 2 * g->cap : 64;
    g->v = realloc(g->v, g->cap * sizeof *g->v);
    g->t = realloc(g->t, g->cap * sizeof *g->t);
    if (!g->v || !g->t)
      die(1, "out of memory");
  }
  g->v[g->n] = r->variant;
  g->t[g->n] = r->outcome == CLNORM_OUTCOME_OK ? r->median_s : INFINITY;
  g->n++;
  return 0;
}

static int cmd_strategies(const options *o) {
  session s;
  session_open(o, &s);
  char path[4096], err[1024];
  db_path(o, path, sizeof path);
  clnorm_db *db = NULL;
  if (clnorm__db_open(path, CLNORM_DB_READ, &db, err, sizeof err) != CLNORM_OK)
    die(1, "%s", err);
  replay_state st;
  memset(&st, 0, sizeof st);
  const uint64_t hash = s.hash;
  if (clnorm__db_list(db, &s.identity, &hash, 0, replay_row, &st, err, sizeof err) != CLNORM_OK)
    die(1, "%s", err);
  clnorm__db_close(db);
  const size_t nvar = clnorm_variant_list(s.ctx, CLNORM_OP_LAYERNORM, NULL, 0) +
                      clnorm_variant_list(s.ctx, CLNORM_OP_RMSNORM, NULL, 0);
  clnorm_variant *all = malloc(nvar * sizeof *all);
  candidate *cand = malloc(nvar * sizeof *cand);
  double *times = malloc(nvar * sizeof *times);
  if (!all || !cand || !times)
    die(1, "out of memory");
  static const double fractions[] = {0.05, 0.1, 0.2, 0.3};
  const int seeds = 100;
  printf("strategy replay on %s over shapes tuned exhaustively (%d seeds each)\n", s.dev.name,
         seeds);
  printf("%-9s %-5s %7s %6s %5s | %-8s %5s %6s | %10s %10s %12s\n", "op", "dtype", "rows",
         "cols", "cand", "strategy", "frac", "evals", "mean gap", "p90 gap", "within 3%");
  size_t used = 0;
  for (size_t gi = 0; gi < st.n; gi++) {
    replay_group *g = &st.g[gi];
    clnorm_call call;
    memset(&call, 0, sizeof call);
    call.op = g->op;
    call.dtype = g->dtype;
    call.cols = (size_t)g->cols;
    call.rows = (size_t)g->rows;
    const size_t nv = clnorm_variant_list(s.ctx, g->op, all, nvar);
    size_t n = 0, missing = 0;
    double optimum = INFINITY;
    for (size_t i = 0; i < nv; i++) {
      if (!clnorm__variant_call_ok(&all[i], call.cols, NULL, 0))
        continue;
      size_t k = 0;
      while (k < g->n && memcmp(&g->v[k], &all[i], sizeof all[i]) != 0)
        k++;
      if (k == g->n) {
        missing++;
        continue;
      }
      cand[n].v = all[i];
      times[n] = g->t[k];
      optimum = times[n] < optimum ? times[n] : optimum;
      n++;
    }
    /* Slow candidates were cut short, so their stored time is a lower bound: fine for ranking. */
    if (missing > 0 || n < 10 || !isfinite(optimum))
      continue;
    used++;
    clnorm_variant h;
    clnorm_heuristic(s.ctx, &call, &h);
    for (int strat = 0; strat < 2; strat++)
      for (size_t f = 0; f < sizeof fractions / sizeof fractions[0]; f++) {
        double gaps[100];
        int within = 0;
        size_t limit = (size_t)ceil(fractions[f] * (double)n);
        for (int seed = 0; seed < seeds; seed++) {
          search se;
          memset(&se, 0, sizeof se);
          se.s = &s;
          se.o = o;
          se.c = cand;
          se.n = n;
          se.replay = times;
          se.best_time = INFINITY;
          for (size_t i = 0; i < n; i++)
            cand[i].evaluated = 0;
          clnorm_rng rng;
          clnorm_rng_seed(&rng, (uint64_t)seed + 1);
          const size_t start = find_candidate(&se, &h);
          if (strat == 0)
            run_random(&se, start, limit, &rng);
          else
            run_anneal(&se, start, limit, &rng);
          gaps[seed] = se.best_time / optimum - 1.0;
          within += gaps[seed] <= 0.03;
        }
        double mean = 0.0;
        for (int k = 0; k < seeds; k++)
          mean += gaps[k] / seeds;
        const double p90 = (tool_median(gaps, seeds), gaps[(seeds * 9) / 10]);
        printf("%-9s %-5s %7llu %6llu %5zu | %-8s %5.2f %6zu | %9.2f%% %9.2f%% %11d%%\n",
               op_name(g->op), dtype_name(g->dtype), (unsigned long long)g->rows,
               (unsigned long long)g->cols, n, strat == 0 ? "random" : "anneal", fractions[f],
               limit, 100.0 * mean, 100.0 * p90, within * 100 / seeds);
      }
  }
  if (used == 0)
    printf("no shape of this device was tuned exhaustively: run `normtune tune --strategy "
           "exhaustive` on a few shapes first\n");
  for (size_t gi = 0; gi < st.n; gi++) {
    free(st.g[gi].v);
    free(st.g[gi].t);
  }
  free(st.g);
  free(all);
  free(cand);
  free(times);
  session_close(&s);
  return 0;
}

static const char usage[] =
    "usage: normtune COMMAND [OPTIONS]\n"
    "\n"
    "commands:\n"
    "  devices                 list OpenCL platforms and devices with their index\n"
    "  tune                    search the variants and store the winners\n"
    "      [--device NAME|INDEX] [--db PATH] [--ops layernorm,rmsnorm] [--dtypes f32,f16,bf16]\n"
    "      [--cols N,N,...] [--rows N,N,...] [--budget SECONDS]\n"
    "      [--strategy exhaustive|random|anneal] [--fraction F] [--seed N] [--quiet]\n"
    "  show [--db PATH] [--device NAME|INDEX] [--json]   the tuned winners\n"
    "  bench [--device NAME|INDEX] [--db PATH] [--ops ...] [--cols ...] [--rows ...] [--json]\n"
    "                          tuned choice vs heuristic vs copy bandwidth, checked\n"
    "  export FILE [--db PATH] all results as JSON (FILE - : standard output)\n"
    "  import FILE [--db PATH] results exported on another machine\n"
    "  strategies [--device ...] [--db PATH]  replay random and anneal search over shapes\n"
    "                          tuned exhaustively; how close they get for how many evaluations\n"
    "\n"
    "The database is --db, else $CLNORM_DB, else $XDG_CACHE_HOME/clnorm/tuning.db\n"
    "(~/.cache/clnorm/tuning.db); the library reads the same path.\n"
    "The default device is the first GPU, else the first device.\n"
    "tune without --cols/--rows tunes cols 64..65536 (powers of two and common hidden sizes)\n"
    "for rows 8, 128, 2048, 16384 (one per row class). Ctrl-C keeps every result measured so\n"
    "far; the same command resumes. --strategy anneal (default) and random evaluate --fraction\n"
    "(default 0.3) of the candidates of each shape; --budget bounds the whole run.\n"
    "\n"
    "examples:\n"
    "  normtune devices\n"
    "  normtune tune --budget 60\n"
    "  normtune tune --device 1 --ops layernorm --cols 4096 --rows 4096 --strategy exhaustive\n"
    "  normtune show --device gpu\n"
    "  normtune bench --cols 4096,65536 --rows 4096,256\n"
    "\n"
    "exit status: 0 success, 1 failure (message on stderr), 2 bad usage, 130 interrupted\n";

int main(int argc, char **argv) {
  if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
      strcmp(argv[1], "help") == 0) {
    fputs(usage, argc < 2 ? stderr : stdout);
    return argc < 2 ? EXIT_USAGE : 0;
  }
  for (int i = 2; i < argc; i++)
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      fputs(usage, stdout);
      return 0;
    }
  options o;
  parse_options(argc, argv, 2, &o);
  const char *cmd = argv[1];
  if (strcmp(cmd, "devices") == 0)
    return cmd_devices();
  if (strcmp(cmd, "tune") == 0)
    return cmd_tune(&o);
  if (strcmp(cmd, "show") == 0)
    return cmd_show(&o);
  if (strcmp(cmd, "bench") == 0)
    return cmd_bench(&o);
  if (strcmp(cmd, "export") == 0)
    return cmd_export(&o);
  if (strcmp(cmd, "import") == 0)
    return cmd_import(&o);
  if (strcmp(cmd, "strategies") == 0)
    return cmd_strategies(&o);
  die(EXIT_USAGE, "unknown command \"%s\" (see normtune --help)", cmd);
  return EXIT_USAGE;
}
