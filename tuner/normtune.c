/* normtune: searches the variant space per device and shape, verifies every candidate against
 * the float64 reference, times it, and stores each result in the tuning database. */
#define _POSIX_C_SOURCE 200809L
#include "db.h"
#include "db_json.h"
#include "doctor.h"
#include "internal.h"
#include "ref.h"
#include "report.h"
#include "tool.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define EXIT_USAGE 2
#define EXIT_INTERRUPTED 130
#define EXIT_DB 6 /* tune: storing failed (disk full, I/O error, the file replaced) */

static volatile sig_atomic_t interrupted;

static void on_sigint(int sig) {
  (void)sig;
  interrupted = 1;
  signal(SIGINT, SIG_DFL); /* a second Ctrl-C ends at once; every stored result is kept */
}


/* The database tune writes, closed by die(): closing checkpoints into the file SQLite has open
 * and removes its -wal and -shm files, where exit() would leave them behind, and the WAL of a
 * database replaced under tune would then be replayed into the file now at the path. */
static clnorm_db *writing_db;

static void die(int code, const char *fmt, ...) {
  if (writing_db) {
    clnorm__db_close(writing_db);
    writing_db = NULL;
  }
  va_list args;
  va_start(args, fmt);
  fputs("normtune: ", stderr);
  vfprintf(stderr, fmt, args);
  fputc('\n', stderr);
  va_end(args);
  exit(code);
}

/* ---- options ---------------------------------------------------------------------------- */

#define DTYPE_COUNT 3
#define ALL_OPS ((1u << CLNORM_OP_COUNT) - 1u)
#define ALL_DTYPES ((1u << DTYPE_COUNT) - 1u)
#define NORM_OPS ((1u << CLNORM_OP_LAYERNORM) | (1u << CLNORM_OP_RMSNORM))
#define MAX_GRID 64

typedef struct options {
  const char *device, *db, *strategy, *file, *out;
  const char *c_table; /* show --c-table KEY: lines for src/builtin_table.h */
  unsigned ops, dtypes; /* bit 1 << op, 1 << dtype; 0: not given (each command has a default) */
  size_t cols[64], ncols, rows[64], nrows;
  size_t grid_rows[MAX_GRID], grid_cols[MAX_GRID], ngrid; /* bench --grid */
  const char *grid;
  double budget;      /* seconds; 0: none */
  double fraction;    /* random / anneal: share of the candidates to evaluate */
  unsigned long seed; /* random / anneal */
  int json, quiet;
  unsigned given; /* OPT_* bits of the options on the command line */
} options;

/* Every option, as a bit: each command says which it takes (command_options). */
enum {
  OPT_DEVICE = 1u << 0,
  OPT_DB = 1u << 1,
  OPT_OUT = 1u << 2,
  OPT_STRATEGY = 1u << 3,
  OPT_OPS = 1u << 4,
  OPT_DTYPES = 1u << 5,
  OPT_COLS = 1u << 6,
  OPT_ROWS = 1u << 7,
  OPT_GRID = 1u << 8,
  OPT_C_TABLE = 1u << 9,
  OPT_BUDGET = 1u << 10,
  OPT_FRACTION = 1u << 11,
  OPT_SEED = 1u << 12,
  OPT_JSON = 1u << 13,
  OPT_QUIET = 1u << 14,
  OPT_FILE = 1u << 15, /* the FILE argument of export and import */
};
static const char *const option_names[] = {
    "--device", "--db",      "--out",    "--strategy", "--ops",  "--dtypes", "--cols",  "--rows",
    "--grid",   "--c-table", "--budget", "--fraction", "--seed", "--json",   "--quiet", "FILE"};

/* A count: decimal digits only, at least 1, at most max. */
static int parse_count(const char *text, char **end, unsigned long long max,
                       unsigned long long *out) {
  return tool_parse_uint(text, end, out) && *out >= 1 && *out <= max;
}

static size_t parse_list(const char *text, size_t *out, size_t cap, const char *what) {
  size_t n = 0;
  const char *p = text;
  do {
    char *end;
    unsigned long long v;
    if (!parse_count(p, &end, SIZE_MAX, &v) || (*end && (*end != ',' || !end[1])))
      die(EXIT_USAGE, "%s: \"%s\" is not a list of positive integers (e.g. 768,4096)", what,
          text);
    if (n == cap)
      die(EXIT_USAGE, "%s: at most %zu values", what, cap);
    out[n++] = (size_t)v;
    p = *end ? end + 1 : end;
  } while (*p);
  return n;
}

static const char *op_name(clnorm_op op) { return clnorm_op_name(op); }

static const char *dtype_name(clnorm_dtype d) { return clnorm_dtype_name(d); }

static const char *op_name_at(int i) { return clnorm_op_name((clnorm_op)i); }

static const char *dtype_name_at(int i) { return clnorm_dtype_name((clnorm_dtype)i); }

/* tool_parse_names, exiting with the usage status and its message on a bad list. */
static unsigned parse_names(const char *text, const char *(*name)(int), int count,
                            const char *what) {
  unsigned mask;
  char err[640];
  if (!tool_parse_names(text, name, count, what, &mask, err, sizeof err))
    die(EXIT_USAGE, "%s", err);
  return mask;
}

/* The shapes of `bench --grid gpu` (rows x cols): a transformer's inference and training
 * shapes, from one row to 64M-element matrices, short rows to 4M-element rows. */
static const size_t gpu_grid[][2] = {
    {1, 4096},     {8, 1024},     {32, 2048},     {128, 4096},   {512, 256},  {512, 1024},
    {512, 4096},   {1024, 1024},  {4096, 768},    {4096, 4096},  {8192, 8192}, {16384, 4096},
    {32768, 1024}, {65536, 512},  {4096, 16384},  {256, 65536},  {16, 4194304}};

/* --grid gpu, or a list ROWSxCOLS,ROWSxCOLS,... */
static void parse_grid(const char *text, options *o) {
  o->grid = text;
  o->ngrid = 0;
  if (strcmp(text, "gpu") == 0) {
    for (size_t i = 0; i < sizeof gpu_grid / sizeof gpu_grid[0]; i++) {
      o->grid_rows[i] = gpu_grid[i][0];
      o->grid_cols[i] = gpu_grid[i][1];
    }
    o->ngrid = sizeof gpu_grid / sizeof gpu_grid[0];
    return;
  }
  const char *p = text;
  do {
    char *end;
    unsigned long long rows, cols;
    if (!parse_count(p, &end, SIZE_MAX, &rows) || *end != 'x' ||
        !parse_count(end + 1, &end, SIZE_MAX, &cols) || (*end && (*end != ',' || !end[1])))
      die(EXIT_USAGE, "--grid: \"%s\" is neither gpu nor a list ROWSxCOLS,... (e.g. 64x1024)",
          text);
    if (o->ngrid == MAX_GRID)
      die(EXIT_USAGE, "--grid: at most %d shapes", MAX_GRID);
    o->grid_rows[o->ngrid] = (size_t)rows;
    o->grid_cols[o->ngrid++] = (size_t)cols;
    p = *end ? end + 1 : end;
  } while (*p);
}

/* A number of seconds or a share: finite, nothing after it. */
static double parse_real(const char *name, const char *text, double above, double at_most,
                         const char *expect) {
  char *end;
  errno = 0;
  const double v = strtod(text, &end);
  if (end == text || *end || errno || !isfinite(v) || !(v > above && v <= at_most) ||
      isspace((unsigned char)text[0]))
    die(EXIT_USAGE, "%s: \"%s\" is not %s", name, text, expect);
  return v;
}

static void parse_options(int argc, char **argv, int first, options *o) {
  memset(o, 0, sizeof *o);
  o->strategy = "anneal";
  o->fraction = 0.3;
  o->seed = 1;
  for (int i = first; i < argc; i++) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    unsigned bit = 0;
    for (size_t k = 0; k + 1 < sizeof option_names / sizeof option_names[0]; k++)
      if (strcmp(a, option_names[k]) == 0)
        bit = 1u << k;
    if (!bit && (a[0] != '-' || strcmp(a, "-") == 0) && !o->file) { /* "-": standard in/out */
      o->file = a;
      o->given |= OPT_FILE;
      continue;
    }
    if (!bit)
      die(EXIT_USAGE, "unknown argument \"%s\" (see normtune --help)", a);
    o->given |= bit;
    if (bit == OPT_JSON) {
      o->json = 1;
      continue;
    }
    if (bit == OPT_QUIET) {
      o->quiet = 1;
      continue;
    }
    if (!v)
      die(EXIT_USAGE, "%s needs a value", a);
    i++;
    switch (bit) {
    case OPT_DEVICE: {
      /* an index must be one: "-1" or an index past 2^64 is no device name either */
      char *end;
      unsigned long long index;
      if (((v[0] == '-' || v[0] == '+') && isdigit((unsigned char)v[1])) ||
          (isdigit((unsigned char)v[0]) && strspn(v, "0123456789") == strlen(v) &&
           !tool_parse_uint(v, &end, &index)))
        die(EXIT_USAGE,
            "--device: \"%s\" is not an index of `normtune devices`, gpu, cpu or a "
            "part of a device name",
            v);
      o->device = v;
      break;
    }
    case OPT_DB:
      o->db = v;
      break;
    case OPT_OUT:
      o->out = v;
      break;
    case OPT_STRATEGY:
      o->strategy = v;
      break;
    case OPT_OPS:
      o->ops = parse_names(v, op_name_at, CLNORM_OP_COUNT, "--ops");
      break;
    case OPT_DTYPES:
      o->dtypes = parse_names(v, dtype_name_at, DTYPE_COUNT, "--dtypes");
      break;
    case OPT_COLS:
      o->ncols = parse_list(v, o->cols, 64, "--cols");
      break;
    case OPT_ROWS:
      o->nrows = parse_list(v, o->rows, 64, "--rows");
      break;
    case OPT_GRID:
      parse_grid(v, o);
      break;
    case OPT_C_TABLE:
      o->c_table = v;
      break;
    case OPT_BUDGET:
      o->budget = parse_real("--budget", v, 0.0, 1e9, "a positive number of seconds");
      break;
    case OPT_FRACTION:
      o->fraction = parse_real("--fraction", v, 0.0, 1.0, "in (0, 1]");
      break;
    case OPT_SEED: {
      char *end;
      unsigned long long seed;
      if (!tool_parse_uint(v, &end, &seed) || *end || seed > ULONG_MAX)
        die(EXIT_USAGE, "--seed: \"%s\" is not an integer from 0 to %lu", v, ULONG_MAX);
      o->seed = (unsigned long)seed;
      break;
    }
    }
  }
  if (strcmp(o->strategy, "exhaustive") != 0 && strcmp(o->strategy, "random") != 0 &&
      strcmp(o->strategy, "anneal") != 0)
    die(EXIT_USAGE, "--strategy: unknown value \"%s\" (known: exhaustive, random, anneal)",
        o->strategy);
}

/* The options each command takes; any other is a usage error. */
static unsigned command_options(const char *cmd, const options *o) {
  const unsigned select = OPT_DEVICE | OPT_DB | OPT_OPS | OPT_DTYPES;
  if (strcmp(cmd, "tune") == 0)
    return select | OPT_COLS | OPT_ROWS | OPT_BUDGET | OPT_STRATEGY | OPT_QUIET |
           (strcmp(o->strategy, "exhaustive") != 0 ? OPT_FRACTION | OPT_SEED : 0);
  if (strcmp(cmd, "show") == 0)
    return OPT_DB | OPT_DEVICE | (o->given & OPT_C_TABLE ? OPT_C_TABLE : OPT_JSON);
  if (strcmp(cmd, "bench") == 0)
    return select | OPT_JSON | (o->given & OPT_GRID ? OPT_GRID | OPT_QUIET : OPT_COLS | OPT_ROWS);
  if (strcmp(cmd, "report") == 0)
    return OPT_OUT | OPT_DB | OPT_QUIET;
  if (strcmp(cmd, "doctor") == 0)
    return OPT_DB;
  if (strcmp(cmd, "export") == 0 || strcmp(cmd, "import") == 0)
    return OPT_FILE | OPT_DB;
  if (strcmp(cmd, "strategies") == 0)
    return select;
  return 0; /* devices */
}

/* Refuses an option the command does not take, saying why where the reason is another option. */
static void check_command_options(const char *cmd, const options *o) {
  const unsigned extra = o->given & ~command_options(cmd, o);
  if (!extra)
    return;
  unsigned k = 0;
  while (!(extra & (1u << k)))
    k++;
  const unsigned bit = 1u << k;
  if (bit == OPT_FILE)
    die(EXIT_USAGE, "unexpected argument \"%s\": %s takes no FILE (see normtune help %s)", o->file,
        cmd, cmd);
  if (strcmp(cmd, "tune") == 0 && (bit == OPT_FRACTION || bit == OPT_SEED))
    die(EXIT_USAGE,
        "%s applies to --strategy random and anneal, not exhaustive (every "
        "candidate)",
        option_names[k]);
  if (strcmp(cmd, "show") == 0 && (bit == OPT_JSON || bit == OPT_C_TABLE))
    die(EXIT_USAGE, "show takes --json or --c-table, not both");
  if (strcmp(cmd, "bench") == 0 && o->given & OPT_GRID && (bit == OPT_COLS || bit == OPT_ROWS))
    die(EXIT_USAGE, "bench --grid takes its shapes from --grid, not from %s", option_names[k]);
  if (strcmp(cmd, "bench") == 0 && bit == OPT_QUIET)
    die(EXIT_USAGE, "--quiet belongs to bench --grid (bench without it prints no progress)");
  die(EXIT_USAGE, "%s does not take %s (see normtune help %s)", cmd, option_names[k], cmd);
}

/* The most variants any op and dtype has on this device: room for one list. */
static size_t variant_capacity(const clnorm_ctx *ctx) {
  size_t most = 0;
  for (int op = 0; op < CLNORM_OP_COUNT; op++)
    for (int d = 0; d <= CLNORM_BF16; d++) {
      const size_t n = clnorm_variant_list(ctx, (clnorm_op)op, (clnorm_dtype)d, NULL, 0);
      most = n > most ? n : most;
    }
  return most;
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
  cl_command_queue queue; /* profiling on: every timing */
  cl_command_queue plain; /* profiling off, made on first use: bench's back-to-back wall time */
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
  if (s->plain)
    clReleaseCommandQueue(s->plain);
  clReleaseCommandQueue(s->queue);
  clReleaseContext(s->context);
}

/* ---- one shape: data, buffers, reference checks, timing ---------------------------------- */

#define VERIFY_ROWS 40  /* rows of the reduced verification shape, adversarial rows included */
#define MAX_SETS 8      /* input/output sets rotated so large shapes are not timed from cache */
#define POOL_SIZE 65536 /* normals drawn once to fill large matrices from; a power of 2 */

/* The matrices of a call. */
enum { MAT_X, MAT_Y, MAT_RES, MAT_SUM, MAT_DY, MATS };

static int uses_matrix(clnorm_op op, int m) {
  if (m == MAT_RES || m == MAT_SUM)
    return clnorm__op_add(op);
  if (m == MAT_DY)
    return clnorm__op_backward(op);
  return 1;
}

static int is_input(int m) { return m == MAT_X || m == MAT_RES || m == MAT_DY; }

static int has_beta(clnorm_op op) { return !clnorm__op_rms(op) && !clnorm__op_backward(op); }

static int has_mean(clnorm_op op) { return !clnorm__op_rms(op); }

/* Inputs of one shape on the host, as the dtype's values held in floats: what the device gets
 * and what the reference reads. */
typedef struct host_data {
  clnorm_dtype dtype;
  size_t rows, cols;
  float *x, *res, *dy; /* rows x cols, dense; res and dy NULL when not made */
  float *gamma, *beta; /* cols */
  float *mean, *rstd;  /* backward inputs: the float64 forward's statistics as float32 */
  int stats;           /* which statistics mean/rstd hold: 0 none, 1 LayerNorm, 2 RMSNorm */
} host_data;

static void host_data_free(host_data *hd) {
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

/* Makes x (and residual and dy when asked), gamma and beta for rows x cols of dtype. gamma and
 * beta depend on seed and cols alone. verification: every element drawn, adversarial rows
 * (NaN and Inf rows only for forward ops: `special`); else pooled. 0 when out of memory. */
static int host_data_make(host_data *hd, clnorm_dtype dtype, size_t rows, size_t cols,
                          int want_res, int want_dy, uint64_t seed, int verification,
                          int special) {
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

/* The backward's inputs mean and rstd: the float64 forward reference of x (LayerNorm, or
 * RMSNorm when rms) rounded to float32, in blocks of rows. 0 when out of memory. */
static int host_stats(host_data *hd, int rms) {
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

/* The worst errors of one checked run. */
typedef struct errors {
  double rel;       /* worst error relative to its scale (see check_rows): reported, stored */
  double scaled;    /* worst error in units of its allowance: <= 1 passes */
  const char *what; /* the output of the worst scaled error */
} errors;

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
    clnorm_ref_layernorm_backward(n, cols, dy, cols, x, cols, gamma, fmean, frstd, ref, NULL,
                                  NULL);
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

/* The buffers of one call. */
typedef struct operands {
  size_t rows;
  cl_mem mat[MATS];
  cl_mem mean, rstd, dgamma, dbeta;
} operands;

typedef struct shape {
  clnorm_op op;
  clnorm_dtype dtype;
  size_t rows, cols, es;
  cl_mem gamma, beta;
  /* the verification set (tune; bench without --grid): a reduced shape, adversarial rows */
  host_data vdata;
  operands vset;
  /* the timing sets: own matrices, shared vectors */
  size_t sets;
  operands tset[MAX_SETS];
} shape;

static clnorm_call call_of(const shape *sh, const operands *o) {
  clnorm_call c;
  memset(&c, 0, sizeof c);
  c.op = sh->op;
  c.dtype = sh->dtype;
  c.rows = o->rows;
  c.cols = sh->cols;
  c.eps = clnorm__op_backward(sh->op) ? 0.0f : 1e-5f;
  c.x.buf = o->mat[MAT_X];
  c.y.buf = o->mat[MAT_Y];
  c.residual.buf = o->mat[MAT_RES];
  c.sum_out.buf = o->mat[MAT_SUM];
  c.dy.buf = o->mat[MAT_DY];
  c.gamma = sh->gamma;
  c.beta = has_beta(sh->op) ? sh->beta : NULL;
  c.mean = o->mean;
  c.rstd = o->rstd;
  c.dgamma = o->dgamma;
  c.dbeta = o->dbeta;
  return c;
}

/* The call of timing set `set`. */
static clnorm_call shape_call(const shape *sh, size_t set) { return call_of(sh, &sh->tset[set]); }

static cl_mem make_buffer(session *s, size_t bytes, const void *host) {
  cl_int e;
  cl_mem m = clCreateBuffer(s->context, host ? CL_MEM_COPY_HOST_PTR : CL_MEM_READ_WRITE, bytes,
                            (void *)host, &e);
  return e == CL_SUCCESS ? m : NULL;
}

/* A buffer holding v[0..n) stored as dtype. */
static cl_mem upload(session *s, clnorm_dtype dtype, const float *v, size_t n) {
  if (dtype == CLNORM_F32)
    return make_buffer(s, n * sizeof(float), v);
  void *packed = malloc(n * 2);
  if (!packed)
    return NULL;
  clnorm_ref_pack(dtype, v, n, packed);
  cl_mem m = make_buffer(s, n * 2, packed);
  free(packed);
  return m;
}

static void release(cl_mem m) {
  if (m)
    clReleaseMemObject(m);
}

static void operands_free(operands *o, int vectors) {
  for (int m = 0; m < MATS; m++)
    release(o->mat[m]);
  if (vectors) {
    release(o->mean);
    release(o->rstd);
    release(o->dgamma);
    release(o->dbeta);
  }
  memset(o, 0, sizeof *o);
}

static void shape_free(shape *sh) {
  release(sh->gamma);
  release(sh->beta);
  operands_free(&sh->vset, 1);
  for (size_t i = 0; i < MAX_SETS; i++)
    operands_free(&sh->tset[i], i == 0); /* the timing sets share set 0's vectors */
  host_data_free(&sh->vdata);
  memset(sh, 0, sizeof *sh);
}

/* Device bytes of one set of a shape's matrices, and of everything with `sets` sets (vectors,
 * and the backward's scratch for its partial weight-gradient sums: at most 256 MiB). */
static double set_bytes(clnorm_op op, clnorm_dtype dtype, size_t rows, size_t cols) {
  double bytes = 0.0;
  for (int m = 0; m < MATS; m++)
    bytes += uses_matrix(op, m) ? (double)rows * (double)cols * (double)clnorm__dtype_size(dtype)
                                : 0.0;
  return bytes;
}

static double shape_bytes(clnorm_op op, clnorm_dtype dtype, size_t rows, size_t cols,
                          size_t sets) {
  const double scratch = clnorm__op_backward(op)
                             ? fmin(256.0 * 1048576.0, 8.0 * (double)rows * (double)cols)
                             : 0.0;
  return (double)sets * set_bytes(op, dtype, rows, cols) + scratch +
         6.0 * (double)cols * 4.0 + 2.0 * (double)rows * 4.0;
}

/* Whether a shape's buffers fit the device (one timing set); else 0 with the reason in why. */
static int shape_fits(const session *s, clnorm_op op, clnorm_dtype dtype, size_t rows,
                      size_t cols, char *why, size_t why_size) {
  const double matrix = (double)rows * (double)cols * (double)clnorm__dtype_size(dtype);
  const double budget = (double)s->global_mem * 0.6;
  const double need = shape_bytes(op, dtype, rows, cols, 1);
  if (matrix > (double)s->max_alloc) {
    snprintf(why, why_size,
             "%s %s %zu x %zu: one matrix is %.0f MiB, more than the device allocates at once "
             "(CL_DEVICE_MAX_MEM_ALLOC_SIZE %.0f MiB)",
             op_name(op), dtype_name(dtype), rows, cols, matrix / 1048576.0,
             (double)s->max_alloc / 1048576.0);
    return 0;
  }
  if (need > budget) {
    snprintf(why, why_size,
             "%s %s %zu x %zu needs %.0f MiB of device buffers, more than 60%% of the device's "
             "memory (CL_DEVICE_GLOBAL_MEM_SIZE %.0f MiB)",
             op_name(op), dtype_name(dtype), rows, cols, need / 1048576.0,
             (double)s->global_mem / 1048576.0);
    return 0;
  }
  return 1;
}

/* Uploads the inputs of `in` (rows x cols) and makes the outputs of o. Vectors: mean and rstd
 * (outputs, or the backward's inputs), dgamma and dbeta; left NULL with `vectors` 0. */
static int operands_make(session *s, const shape *sh, operands *o, const host_data *in,
                         const void *const packed[MATS], int vectors) {
  const clnorm_op op = sh->op;
  const size_t rows = in->rows, bytes = rows * sh->cols * sh->es;
  const int bwd = clnorm__op_backward(op);
  o->rows = rows;
  for (int m = 0; m < MATS; m++) {
    if (!uses_matrix(op, m))
      continue;
    o->mat[m] = make_buffer(s, bytes, is_input(m) ? packed[m] : NULL);
    if (!o->mat[m])
      return 0;
  }
  if (!vectors)
    return 1;
  if (has_mean(op) && !(o->mean = make_buffer(s, rows * 4, bwd ? in->mean : NULL)))
    return 0;
  if (!(o->rstd = make_buffer(s, rows * 4, bwd ? in->rstd : NULL)))
    return 0;
  if (bwd && !(o->dgamma = make_buffer(s, sh->cols * sh->es, NULL)))
    return 0;
  if (bwd && has_mean(op) && !(o->dbeta = make_buffer(s, sh->cols * sh->es, NULL)))
    return 0;
  return 1;
}

/* The inputs of `in` stored as dtype: packed[m] for x, residual, dy (pointing into `in` for
 * float32; otherwise malloc'ed, freed by packed_free). 0 when out of memory. */
static int packed_make(const shape *sh, const host_data *in, const void *packed[MATS]) {
  const float *const src[MATS] = {in->x, NULL, in->res, NULL, in->dy};
  const size_t n = in->rows * in->cols;
  for (int m = 0; m < MATS; m++)
    packed[m] = NULL;
  for (int m = 0; m < MATS; m++) {
    if (!src[m] || !uses_matrix(sh->op, m))
      continue;
    if (sh->dtype == CLNORM_F32) {
      packed[m] = src[m];
      continue;
    }
    void *p = malloc(n * 2);
    if (!p)
      return 0;
    clnorm_ref_pack(sh->dtype, src[m], n, p);
    packed[m] = p;
  }
  return 1;
}

static void packed_free(const shape *sh, const void *packed[MATS]) {
  if (sh->dtype != CLNORM_F32)
    for (int m = 0; m < MATS; m++)
      free((void *)packed[m]);
}

static cl_int poison(session *s, cl_mem buf, clnorm_dtype dtype, size_t n);

/* Sets up a shape: timing sets from `data` (rows x cols inputs of op and dtype; NULL: made
 * here), and with `with_vset` the verification set. 0 with a message in why when it does not
 * fit the device (never silently) or memory runs out. */
static int shape_init(session *s, shape *sh, clnorm_op op, clnorm_dtype dtype, size_t rows,
                      size_t cols, host_data *data, int with_vset, char *why, size_t why_size) {
  memset(sh, 0, sizeof *sh);
  sh->op = op;
  sh->dtype = dtype;
  sh->rows = rows;
  sh->cols = cols;
  sh->es = clnorm__dtype_size(dtype);
  const int bwd = clnorm__op_backward(op), add = clnorm__op_add(op);
  const double budget = (double)s->global_mem * 0.6;
  if (!shape_fits(s, op, dtype, rows, cols, why, why_size))
    return 0;
  /* Enough sets that one pass over them is at least 4x the last-level cache (64 MiB when the
   * device does not say), within the memory budget. */
  const double cache = s->cache > 0 ? (double)s->cache : 64.0 * 1048576.0;
  size_t sets = (size_t)ceil(4.0 * cache / set_bytes(op, dtype, rows, cols));
  sets = sets < 1 ? 1 : sets > MAX_SETS ? MAX_SETS : sets;
  while (sets > 1 && shape_bytes(op, dtype, rows, cols, sets) > budget)
    sets--;
  sh->sets = sets;
  const uint64_t seed = 0x5eed0000u + cols;
  host_data own;
  host_data *in = data;
  const void *packed[MATS] = {NULL, NULL, NULL, NULL, NULL};
  int ok = 1;
  if (!in) {
    ok = host_data_make(&own, dtype, rows, cols, add, bwd, seed, 0, 0);
    in = ok ? &own : NULL;
  }
  ok = ok && (!bwd || host_stats(in, clnorm__op_rms(op)));
  ok = ok && packed_make(sh, in, packed);
  ok = ok && (sh->gamma = upload(s, dtype, in->gamma, cols)) != NULL &&
       (!has_beta(op) || (sh->beta = upload(s, dtype, in->beta, cols)) != NULL);
  for (size_t i = 0; ok && i < sets; i++) {
    ok = operands_make(s, sh, &sh->tset[i], in, packed, i == 0);
    sh->tset[i].mean = sh->tset[0].mean;
    sh->tset[i].rstd = sh->tset[0].rstd;
    sh->tset[i].dgamma = sh->tset[0].dgamma;
    sh->tset[i].dbeta = sh->tset[0].dbeta;
  }
  packed_free(sh, packed);
  /* Write every output matrix once now: the first write to a fresh buffer pays its page faults
   * (CPU devices) or lazy allocation, which would otherwise land in the timed runs of whichever
   * variant is measured first (tune: the heuristic's) as it reaches each timing set. */
  for (size_t i = 0; ok && i < sets; i++)
    ok = poison(s, sh->tset[i].mat[MAT_Y], dtype, rows * cols) == CL_SUCCESS &&
         poison(s, sh->tset[i].mat[MAT_SUM], dtype, rows * cols) == CL_SUCCESS;
  ok = ok && clFinish(s->queue) == CL_SUCCESS;
  if (ok && with_vset) {
    /* the same gamma and beta as the timing sets */
    const size_t vrows = rows < VERIFY_ROWS ? (rows < 3 ? 3 : rows) : VERIFY_ROWS;
    ok = host_data_make(&sh->vdata, dtype, vrows, cols, add, bwd, seed, 1, !bwd);
    if (ok) {
      memcpy(sh->vdata.gamma, in->gamma, cols * sizeof(float));
      memcpy(sh->vdata.beta, in->beta, cols * sizeof(float));
    }
    ok = ok && (!bwd || host_stats(&sh->vdata, clnorm__op_rms(op)));
    if (ok) {
      ok = packed_make(sh, &sh->vdata, packed) &&
           operands_make(s, sh, &sh->vset, &sh->vdata, packed, 1);
      packed_free(sh, packed);
    }
  }
  if (!data && in)
    host_data_free(&own);
  if (!ok) {
    shape_free(sh);
    snprintf(why, why_size, "%s %s %zu x %zu: cannot allocate its host or device buffers",
             op_name(op), dtype_name(dtype), rows, cols);
    return 0;
  }
  return 1;
}

/* Fills n elements of dtype with NaN, so that an element the kernel does not write fails. */
static cl_int poison(session *s, cl_mem buf, clnorm_dtype dtype, size_t n) {
  if (!buf)
    return CL_SUCCESS;
  const float nan32 = NAN;
  const cl_ushort nan16 = dtype == CLNORM_F16 ? 0x7E00u : 0x7FC0u;
  if (dtype == CLNORM_F32)
    return clEnqueueFillBuffer(s->queue, buf, &nan32, sizeof nan32, 0, n * 4, 0, NULL, NULL);
  return clEnqueueFillBuffer(s->queue, buf, &nan16, sizeof nan16, 0, n * 2, 0, NULL, NULL);
}

/* Reads rows idx[0..n) (idx NULL: rows 0..n-1) of a rows x cols matrix of dtype into floats. */
static cl_int read_rows(session *s, cl_mem buf, clnorm_dtype dtype, size_t cols,
                        const size_t *idx, size_t n, float *out) {
  const size_t es = clnorm__dtype_size(dtype), row = cols * es;
  void *tmp = malloc(idx ? row : n * row);
  if (!tmp)
    return CL_OUT_OF_HOST_MEMORY;
  cl_int err = CL_SUCCESS;
  if (!idx) {
    err = clEnqueueReadBuffer(s->queue, buf, CL_TRUE, 0, n * row, tmp, 0, NULL, NULL);
    if (err == CL_SUCCESS)
      clnorm_ref_unpack(dtype, tmp, n * cols, out);
  }
  for (size_t k = 0; idx && k < n && err == CL_SUCCESS; k++) {
    err = clEnqueueReadBuffer(s->queue, buf, CL_TRUE, idx[k] * row, row, tmp, 0, NULL, NULL);
    if (err == CL_SUCCESS)
      clnorm_ref_unpack(dtype, tmp, cols, out + k * cols);
  }
  free(tmp);
  return err;
}

/* Rows idx[0..n) of a dense matrix (m NULL: NULL), as a new dense array; *fail on no memory. */
static float *gather(const float *m, size_t cols, const size_t *idx, size_t n, int *fail) {
  if (!m)
    return NULL;
  float *out = malloc(n * cols * sizeof(float));
  if (!out) {
    *fail = 1;
    return NULL;
  }
  for (size_t k = 0; k < n; k++)
    memcpy(out + k * cols, m + idx[k] * cols, cols * sizeof(float));
  return out;
}

/* Runs v (NULL: the dispatcher's choice) on the buffers o with every output poisoned first,
 * reads rows idx[0..n) (idx NULL: all) of the outputs back, and checks them (check_rows)
 * against the reference of the same rows of `in`, the inputs o holds; dgamma and dbeta against
 * the reference over all rows. adversarial: see check_rows. */
static clnorm_status run_checked(session *s, const shape *sh, const operands *o,
                                 const clnorm_variant *v, const host_data *in, const size_t *idx,
                                 size_t n, int adversarial, errors *e) {
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
    err |= clEnqueueReadBuffer(s->queue, o->rstd, CL_TRUE, 0, rows * 4, stats + rows, 0, NULL,
                               NULL);
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

/* Checks v on the verification set. */
static clnorm_status verify(session *s, shape *sh, const clnorm_variant *v, errors *e) {
  return run_checked(s, sh, &sh->vset, v, &sh->vdata, NULL, sh->vset.rows, 1, e);
}

typedef struct timing {
  double median, min;
  double own; /* median of the returned event's own start-to-end (see time_variant) */
  int slow;
} timing;

/* Median of repeated runs, after warm-up, until the median settles (or 1 s, or 200 runs),
 * rotating the input sets. Cut short when the first runs are more than 3x `best`. A run is
 * timed from a marker enqueued just before the call to the end of the call's event, as CUDA
 * events around the call would time it: a call may enqueue several kernels (backward: the row
 * pass and the weight-gradient reduction; few long rows: split-row statistics, then the
 * normalization) and its event is the last one's, whose own start-to-end (`own`) covers the
 * whole call only when it enqueued one kernel. */
static clnorm_status time_variant(session *s, shape *sh, const clnorm_variant *v, double best,
                                  timing *out) {
  double times[200], owns[200], sorted[200];
  size_t n = 0;
  double prev = 0.0;
  const double start = tool_now();
  memset(out, 0, sizeof *out);
  for (size_t i = 0; i < 2 + 200; i++) {
    const clnorm_call call = shape_call(sh, i % sh->sets);
    cl_event ev, before;
    if (clEnqueueMarkerWithWaitList(s->queue, 0, NULL, &before) != CL_SUCCESS)
      return CLNORM_E_OPENCL;
    const clnorm_status st = clnorm_run(s->ctx, s->queue, &call, v, 0, NULL, &ev);
    if (st != CLNORM_OK) {
      clReleaseEvent(before);
      return st;
    }
    double own = 0.0;
    const double t = tool_span_seconds(before, ev, &own);
    if (t < 0)
      return CLNORM_E_OPENCL;
    if (i < 2)
      continue; /* warm-up */
    owns[n] = own;
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
  out->own = tool_median(owns, n);
  return CLNORM_OK;
}

/* Wall time per call of `calls` calls through the dispatcher enqueued back to back on a queue
 * without profiling, then clFinish: what an application's stream of small calls costs, launch
 * overhead included. Negative on failure. */
static double wall_per_call(session *s, shape *sh, size_t calls) {
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

static void parallel_for(size_t n, void (*fn)(void *user, size_t i), void *user) {
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
  size_t measured; /* candidates of this shape measured by this run (not read back) */
  int tty;
  const double *replay; /* strategies: times measured earlier, per candidate (no device work) */
} search;

static void progress(search *se, const char *last) {
  if (se->o->quiet)
    return;
  char best[160] = "none yet";
  if (se->best_time < INFINITY) {
    const clnorm_call call = shape_call(se->sh, 0);
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

/* The key of variant v on the search's shape in r, every measure NaN. */
static void result_key(const search *se, const clnorm_variant *v, clnorm_result *r) {
  memset(r, 0, sizeof *r);
  r->kernel_hash = se->s->hash;
  r->op = se->sh->op;
  r->dtype = se->sh->dtype;
  r->cols = se->sh->cols;
  r->rows = se->sh->rows;
  r->row_class = clnorm__row_class(se->sh->rows);
  r->variant = *v;
  r->median_s = r->min_s = r->gbps = r->max_err = NAN;
}

/* Verifies and times r->variant on the search's shape (cut short at 3x best when best > 0):
 * fills r's outcome and measures; e receives the errors of the check. */
static void measure(search *se, clnorm_result *r, double best, errors *e) {
  const clnorm_status st = verify(se->s, se->sh, &r->variant, e);
  timing t = {NAN, NAN, NAN, 0};
  if (st == CLNORM_E_BUILD)
    r->outcome = CLNORM_OUTCOME_BUILD_FAILED;
  else if (st != CLNORM_OK)
    r->outcome = CLNORM_OUTCOME_UNSUPPORTED;
  else if (!(e->scaled <= 1.0))
    r->outcome = CLNORM_OUTCOME_WRONG;
  else if (time_variant(se->s, se->sh, &r->variant, best, &t) != CLNORM_OK)
    r->outcome = CLNORM_OUTCOME_UNSUPPORTED;
  else
    r->outcome = t.slow ? CLNORM_OUTCOME_SLOW : CLNORM_OUTCOME_OK;
  r->max_err = st == CLNORM_OK && isfinite(e->rel) ? e->rel : NAN;
  r->median_s = t.median;
  r->min_s = t.min;
  const clnorm_call call = shape_call(se->sh, 0);
  r->gbps = r->outcome == CLNORM_OUTCOME_OK ? tool_op_bytes(&call) / t.median / 1e9 : NAN;
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
  result_key(se, &c->v, &r);
  char err[1024];
  int found = 0;
  clnorm_result stored;
  if (clnorm__db_get(se->db, &se->s->identity, &r, &stored, &found, err, sizeof err) ==
          CLNORM_OK &&
      found) {
    c->median = stored.outcome == CLNORM_OUTCOME_OK ? stored.median_s : INFINITY;
  } else {
    errors e;
    measure(se, &r, se->best_time < INFINITY ? se->best_time : 0, &e);
    se->measured++;
    const timing t = {r.median_s, r.min_s, NAN, 0};
    if (r.outcome == CLNORM_OUTCOME_WRONG) {
      char text[128];
      clnorm_variant_format(&c->v, text, sizeof text);
      fprintf(stderr, "%snormtune: %s gave a wrong result (%s: %.3g of its tolerance) on %s %s "
                      "%zu x %zu: recorded, never chosen\n",
              se->tty ? "\n" : "", text, e.what, e.scaled, op_name(se->sh->op),
              dtype_name(se->sh->dtype), se->sh->vset.rows, se->sh->cols);
    }
    if (clnorm__db_put(se->db, &se->s->identity, &r, err, sizeof err) != CLNORM_OK)
      die(EXIT_DB, "storing a result: %s; the same command resumes from what the database holds",
          err);
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
} prebuild;

static void prebuild_one(void *user, size_t i) {
  const prebuild *pb = user;
  clnorm_variant_check(pb->se->s->ctx, pb->call, &pb->se->c[i].v);
}

static void prebuild_all(search *se, const clnorm_call *call) {
  prebuild pb = {se, call};
  parallel_for(se->n, prebuild_one, &pb);
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

/* Stores what the heuristic's variant h (candidate `start`, or none when start is se->n)
 * gives on the shape, for `normtune report`: the candidate's stored result when the search
 * evaluated it, else a measurement made here. Nothing when the run was interrupted first. */
#define CONFIRM_TOP 3    /* the fastest candidates timed again, with the heuristic's */
#define CONFIRM_ROUNDS 2 /* rounds over them, interleaved */

/* The confirmation round of a shape this run measured: the fastest CONFIRM_TOP candidates and
 * the heuristic's (index h, when it ran) are timed again, CONFIRM_ROUNDS rounds in turn, so that
 * a burst of other work on the machine during one candidate's timing does not crown it (on a
 * shared CPU one variant's median moves by 10-20 % between runs). Each keeps the median of its
 * timings, stored over its first result; the winner is the lowest. Skipped when nothing was
 * measured (a resumed shape keeps what it had) or on Ctrl-C; not for an exhausted --budget:
 * the shape whose search used the last of it is the one most likely to have a noisy winner
 * (main.sh's 60 s run stored RMSNorm 256 x 65536 at 0.50 of copy over the heuristic's 0.84),
 * and the round is bounded (at most 8 timings). */
static void confirm(search *se, size_t h) {
  if (se->measured == 0 || se->replay || interrupted)
    return;
  size_t pick[CONFIRM_TOP + 1], n = 0;
  for (size_t i = 0; i < se->n; i++) {
    if (!(se->c[i].median < INFINITY))
      continue;
    if (n < CONFIRM_TOP) {
      pick[n++] = i;
    } else if (se->c[i].median < se->c[pick[n - 1]].median) {
      pick[n - 1] = i;
    } else {
      continue;
    }
    for (size_t k = n - 1; k > 0 && se->c[pick[k]].median < se->c[pick[k - 1]].median; k--) {
      const size_t t = pick[k];
      pick[k] = pick[k - 1];
      pick[k - 1] = t;
    }
  }
  if (h < se->n && se->c[h].median < INFINITY) {
    int in = 0;
    for (size_t k = 0; k < n; k++)
      in |= pick[k] == h;
    if (!in)
      pick[n++] = h;
  }
  if (n < 2)
    return;
  double times[CONFIRM_TOP + 1][CONFIRM_ROUNDS + 1];
  for (size_t k = 0; k < n; k++)
    times[k][0] = se->c[pick[k]].median;
  size_t rounds = 0;
  for (; rounds < CONFIRM_ROUNDS && !interrupted; rounds++)
    for (size_t k = 0; k < n; k++) {
      timing t;
      if (time_variant(se->s, se->sh, &se->c[pick[k]].v, 0, &t) != CLNORM_OK || !(t.median > 0))
        return; /* leave every first result as it was */
      times[k][rounds + 1] = t.median;
    }
  if (rounds == 0)
    return;
  char err[1024];
  const clnorm_call call = shape_call(se->sh, 0);
  for (size_t k = 0; k < n; k++) {
    double *v = times[k];
    const double median = tool_median(v, rounds + 1); /* sorts v: v[0] is the fastest */
    clnorm_result r, stored;
    int found = 0;
    result_key(se, &se->c[pick[k]].v, &r);
    if (clnorm__db_get(se->db, &se->s->identity, &r, &stored, &found, err, sizeof err) !=
            CLNORM_OK ||
        !found || stored.outcome != CLNORM_OUTCOME_OK)
      continue;
    stored.median_s = median;
    stored.min_s = fmin(stored.min_s, v[0]);
    stored.gbps = tool_op_bytes(&call) / median / 1e9;
    if (clnorm__db_put(se->db, &se->s->identity, &stored, err, sizeof err) != CLNORM_OK)
      die(EXIT_DB, "storing a result: %s; the same command resumes from what the database holds",
          err);
    se->c[pick[k]].median = median;
  }
  se->best_time = INFINITY;
  for (size_t k = 0; k < n; k++)
    if (se->c[pick[k]].median < se->best_time) {
      se->best_time = se->c[pick[k]].median;
      se->best = pick[k];
    }
}

/* Stores the heuristic's figures for the report. When its variant is not among the search's
 * candidates (start == se->n) it is measured here, and stored as a result too, so that it
 * competes for the winner: a short search that never met a variant as fast as the default
 * must not store a slower one (main.sh's 60 s run on PoCL stored LayerNorm 256 x 65536 at 2.8
 * GB/s beside the heuristic's 14.1). Returns that median when it was measured here and "ok",
 * else INFINITY. */
static double record_heuristic(search *se, const clnorm_variant *h, size_t start) {
  clnorm_result r;
  char err[1024];
  int found = 0;
  result_key(se, h, &r);
  if (start < se->n && !se->c[start].evaluated)
    return INFINITY;
  if (start < se->n) {
    if (clnorm__db_get(se->db, &se->s->identity, &r, &r, &found, err, sizeof err) != CLNORM_OK ||
        !found)
      return INFINITY;
  } else {
    if (interrupted)
      return INFINITY;
    if (clnorm__db_get(se->db, &se->s->identity, &r, &r, &found, err, sizeof err) != CLNORM_OK ||
        !found) {
      errors e;
      measure(se, &r, 0, &e);
      if (clnorm__db_put(se->db, &se->s->identity, &r, err, sizeof err) != CLNORM_OK)
        die(EXIT_DB, "storing the heuristic's result: %s", err);
      if (!se->tty) {
        char text[128];
        clnorm_variant_format(h, text, sizeof text);
        printf("%s %s %zux%zu %s: %s %.1f GB/s (the heuristic's variant)\n", op_name(se->sh->op),
               dtype_name(se->sh->dtype), se->sh->rows, se->sh->cols, text,
               clnorm__outcome_name(r.outcome),
               r.outcome == CLNORM_OUTCOME_OK ? r.gbps : 0.0);
      }
    }
  }
  if (clnorm__db_put_heuristic(se->db, &se->s->identity, &r, err, sizeof err) != CLNORM_OK)
    die(EXIT_DB, "storing the heuristic's result: %s", err);
  return start >= se->n && r.outcome == CLNORM_OUTCOME_OK ? r.median_s : INFINITY;
}

/* Measures the device's copy bandwidth and stores it when it beats `before` (GB/s; 0: none yet),
 * for `normtune report`: over four times the device's cache, kept within 64 to 256 MiB and what
 * one buffer may hold. tune measures it at the start and again at the end, keeping the higher:
 * on a shared machine one measurement can fall in a burst of other work. Returns the GB/s
 * stored (before when the new figure is lower or not measured). */
static double record_copy(session *s, clnorm_db *db, double before) {
  char err[1024];
  double bytes = fmax(64.0 * 1048576.0, 4.0 * (double)s->cache);
  bytes = fmin(bytes, 256.0 * 1048576.0);
  bytes = fmin(bytes, (double)s->max_alloc / 2.0);
  const size_t size = (size_t)bytes & ~(size_t)15;
  const double gbps = tool_copy_gbps(s->context, s->queue, s->dev.device, size,
                                     s->ctx->info.stream_stores, NULL, err, sizeof err);
  if (!(gbps > 0)) {
    if (before == 0)
      fprintf(stderr,
              "normtune: the copy bandwidth was not measured (%s): `normtune report` will "
              "draw no copy line for this device\n",
              err);
    return before;
  }
  if (gbps <= before)
    return before;
  if (clnorm__db_put_copy(db, &s->identity, gbps, size, err, sizeof err) != CLNORM_OK)
    die(EXIT_DB, "storing the copy bandwidth: %s", err);
  return gbps;
}

/* ---- commands --------------------------------------------------------------------------- */

static const size_t default_cols[] = {64,   128,  256,  512,  768,   1024,  1536,  2048,
                                      2560, 3072, 4096, 5120, 6144,  8192,  12288, 14336,
                                      16384, 32768, 65536};
/* A representative row count of each row class (see clnorm__row_class). */
static const size_t class_rows[] = {8, 128, 2048, 16384};

/* The ops and dtypes of a mask, in enum order; returns how many. */
static size_t mask_ops(unsigned mask, clnorm_op *out) {
  size_t n = 0;
  for (int i = 0; i < CLNORM_OP_COUNT; i++)
    if (mask & (1u << i))
      out[n++] = (clnorm_op)i;
  return n;
}

static size_t mask_dtypes(unsigned mask, clnorm_dtype *out) {
  size_t n = 0;
  for (int i = 0; i < DTYPE_COUNT; i++)
    if (mask & (1u << i))
      out[n++] = (clnorm_dtype)i;
  return n;
}

/* Candidates stay out of the program-binary cache (hundreds of programs, some 60 KB each on
 * PoCL); the winners enter it when an application first builds them. CLNORM_NO_BINARY_CACHE set
 * by the user (0 included) is left as it is. */
static void no_candidate_cache(void) {
  if (!getenv("CLNORM_NO_BINARY_CACHE"))
    clnorm__setenv("CLNORM_NO_BINARY_CACHE", "1");
}

static int cmd_tune(const options *o) {
  session s;
  no_candidate_cache();
  session_open(o, &s);
  char path[4096], err[1024];
  db_path(o, path, sizeof path);
  clnorm_db *db = open_db_write(path);
  writing_db = db;
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
  /* defaults: LayerNorm and RMSNorm forward in float32, the tuning time of earlier releases */
  clnorm_op ops[CLNORM_OP_COUNT];
  clnorm_dtype dtypes[DTYPE_COUNT];
  const size_t nops = mask_ops(o->ops ? o->ops : NORM_OPS, ops);
  const size_t ndtypes = mask_dtypes(o->dtypes ? o->dtypes : 1u << CLNORM_F32, dtypes);

  signal(SIGINT, on_sigint);
  const size_t nvar = variant_capacity(s.ctx);
  clnorm_variant *all = malloc((nvar ? nvar : 1) * sizeof *all);
  candidate *cand = malloc((nvar ? nvar : 1) * sizeof *cand);
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
  const double copy_start = tool_now();
  const double copy_gbps = record_copy(&s, db, 0.0);
  const double copy_seconds = tool_now() - copy_start;
  /* resumed: shapes whose every candidate was read back from the database */
  size_t tuned = 0, skipped = 0, resumed = 0;
  int budget_out = 0;
  for (size_t a = 0; a < nops; a++)
    for (size_t d = 0; d < ndtypes; d++)
      for (size_t ci = 0; ci < ncols; ci++)
        for (size_t ri = 0; ri < nrows; ri++, se.shape_index++) {
          if (out_of_time(&se)) {
            budget_out = !interrupted;
            goto done;
          }
          shape sh;
          char why[512];
          if (!shape_init(&s, &sh, ops[a], dtypes[d], rows[ri], cols[ci], NULL, 1, why,
                          sizeof why)) {
            fprintf(stderr, "%snormtune: skipped %s\n", se.tty ? "\n" : "", why);
            skipped++;
            continue;
          }
          const clnorm_call call = shape_call(&sh, 0);
          const size_t nv = clnorm_variant_list(s.ctx, ops[a], dtypes[d], all, nvar);
          se.n = 0;
          for (size_t i = 0; i < nv && i < nvar; i++) {
            /* the call-level check (the row must fit a held variant) without building */
            if (!clnorm__variant_call_ok(&all[i], call.cols, NULL, 0))
              continue;
            cand[se.n].v = all[i];
            cand[se.n].evaluated = 0;
            cand[se.n].median = INFINITY;
            se.n++;
          }
          if (se.n == 0) {
            fprintf(stderr, "%snormtune: skipped %s %s %zu x %zu: no variant of it runs on this "
                            "device\n",
                    se.tty ? "\n" : "", op_name(ops[a]), dtype_name(dtypes[d]), rows[ri],
                    cols[ci]);
            skipped++;
            shape_free(&sh);
            continue;
          }
          se.c = cand;
          se.sh = &sh;
          se.evaluated = 0;
          se.measured = 0;
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
          confirm(&se, start); /* against the whole run's deadline: the search used the shape's */
          const double heuristic_time = record_heuristic(&se, &h, start);
          if (se.best_time < INFINITY || heuristic_time < INFINITY) {
            const int heuristic_best = heuristic_time < se.best_time;
            char text[128], line[400];
            clnorm_variant_format(heuristic_best ? &h : &se.c[se.best].v, text, sizeof text);
            snprintf(line, sizeof line, "best %s %s %zux%zu: %s %.1f GB/s (%zu of %zu evaluated)",
                     op_name(sh.op), dtype_name(sh.dtype), sh.rows, sh.cols, text,
                     tool_op_bytes(&call) / (heuristic_best ? heuristic_time : se.best_time) / 1e9,
                     se.evaluated, se.n);
            if (se.tty)
              fprintf(stderr, "\r\033[K%s\n", line);
            else if (!o->quiet)
              printf("%s\n", line);
            tuned++;
            resumed += se.measured == 0;
          }
          shape_free(&sh);
        }
done:
  if (!interrupted)
    record_copy(&s, db, copy_gbps);
  if (se.tty)
    fprintf(stderr, "\n");
  printf("normtune: %zu shapes tuned, %zu skipped, %zu evaluations in %.1f s (shapes: %zu "
         "measured by this run, %zu read back from the database); results in %s\n",
         tuned, skipped, se.total_evals, tool_now() - se.run_start, tuned - resumed, resumed, path);
  if (budget_out && tuned == resumed)
    printf("normtune: the --budget of %g s ran out before this run measured anything (%zu of "
           "%zu shapes not reached; the copy bandwidth took %.1f s of it): give a larger "
           "--budget\n",
           o->budget, se.shape_count - se.shape_index, se.shape_count, copy_seconds);
  else if (budget_out)
    printf("normtune: the --budget of %g s ran out with %zu of %zu shapes not reached: the same "
           "command goes on from the results stored\n",
           o->budget, se.shape_count - se.shape_index, se.shape_count);
  free(all);
  free(cand);
  writing_db = NULL;
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
  printf("select with --device INDEX, --device gpu or cpu (the first of that type), or --device "
         "NAME (a case-insensitive part of the name)\n");
  return 0;
}

typedef struct show_state {
  int json, first;
  const char *c_table;
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

static void upper_copy(char *out, size_t size, const char *name) {
  size_t i = 0;
  for (; name[i] && i + 1 < size; i++)
    out[i] = (char)toupper((unsigned char)name[i]);
  out[i] = '\0';
}

static int show_row(void *user, const clnorm_device_identity *dev, const clnorm_result *r,
                    int winner) {
  show_state *st = user;
  (void)winner;
  char text[128], range[64];
  clnorm_variant_format(&r->variant, text, sizeof text);
  report_row_range(r->row_class, range, sizeof range);
  if (st->c_table) { /* a line of src/builtin_table.h, with the figure it was chosen on */
    /* the enumerators are the library's names in capitals: CLNORM_OP_ADD_RMSNORM, CLNORM_BF16 */
    char op[32], dtype[8];
    upper_copy(op, sizeof op, clnorm_op_name(r->op));
    upper_copy(dtype, sizeof dtype, clnorm_dtype_name(r->dtype));
    static const char *const reduce[] = {"LOCAL", "SUBGROUP", "NVSHFL"};
    printf("{\"%s\", {CLNORM_OP_%s, CLNORM_%s, %llu, %u, {%u, %u, %u, %u, CLNORM_REDUCE_%s, "
           "CLNORM_STATS_%s}}}, /* %.1f GB/s at %llu rows (row class %s) */\n",
           st->c_table, op, dtype, (unsigned long long)r->cols, r->row_class, r->variant.wg,
           r->variant.tpr, r->variant.vec, r->variant.hold, reduce[r->variant.reduce],
           r->variant.stats == CLNORM_STATS_TWOPASS ? "TWOPASS" : "WELFORD", r->gbps,
           (unsigned long long)r->rows, range);
    return 0;
  }
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
    printf(", \"row_range\": \"%s\"}", range);
    st->first = 0;
    return 0;
  }
  if (strcmp(st->last_name, dev->name) != 0 || strcmp(st->last_driver, dev->driver_version) != 0) {
    printf("\n%s (driver %s, %s)\n", dev->name, dev->driver_version, dev->cl_version);
    printf("  %-13s %-5s %8s %-10s %8s %10s %9s  %s\n", "op", "dtype", "cols", "row class", "rows",
           "median_us", "GB/s", "variant");
    snprintf(st->last_name, sizeof st->last_name, "%s", dev->name);
    snprintf(st->last_driver, sizeof st->last_driver, "%s", dev->driver_version);
  }
  printf("  %-13s %-5s %8llu %-10s %8llu %10.2f %9.1f  %s\n", op_name(r->op), dtype_name(r->dtype),
         (unsigned long long)r->cols, range, (unsigned long long)r->rows, r->median_s * 1e6,
         r->gbps, text);
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
  st.c_table = o->c_table;
  st.first = 1;
  if (st.c_table && (strchr(st.c_table, '"') || strchr(st.c_table, '\\') || !o->device))
    die(EXIT_USAGE, "--c-table: needs --device, and a KEY without quotes or backslashes");
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
        (stale.driver_changed || stale.kernels_changed) && !o->json && !o->c_table)
      printf("%llu results of this device are stale (%llu: driver changed, %llu: kernels "
             "changed) and are not used; run `normtune tune` again\n",
             (unsigned long long)(stale.driver_changed + stale.kernels_changed),
             (unsigned long long)stale.driver_changed, (unsigned long long)stale.kernels_changed);
  }
  if (o->c_table)
    printf("/* normtune show --device \"%s\" --c-table \"%s\" (database %s) */\n", o->device,
           o->c_table, path);
  else if (o->json)
    printf("[\n");
  else
    printf("tuned winners in %s (current kernels only)\n", path);
  if (clnorm__db_list(db, filter, &hash, 1, show_row, &st, err, sizeof err) != CLNORM_OK)
    die(1, "%s", err);
  if (o->json && !o->c_table)
    printf("\n]\n");
  clnorm__db_close(db);
  return 0;
}

/* bench without --grid: each variant timed in BENCH_ROUNDS rounds, the dispatcher's choice and
 * the heuristic's in alternation, so that a busy device slows both alike; the spread of the
 * rounds shows how far one figure can be trusted. */
#define BENCH_ROUNDS 5

typedef struct bench_side {
  double us, us_min, us_max, gbps, ratio; /* NaN: not measured */
  errors e;
  clnorm_status st;
} bench_side;

static void bench_side_finish(bench_side *b, double *times, size_t n, double bytes, double copy) {
  b->us = b->us_min = b->us_max = b->gbps = b->ratio = NAN;
  if (b->st != CLNORM_OK || n == 0)
    return;
  b->us = tool_median(times, n) * 1e6; /* sorts: times[0] is the least */
  b->us_min = times[0] * 1e6;
  b->us_max = times[n - 1] * 1e6;
  b->gbps = bytes / b->us / 1e3;
  b->ratio = b->gbps / copy;
}

/* Half the range of the rounds over their median, in percent. */
static double bench_spread(const bench_side *b) { return 50.0 * (b->us_max - b->us_min) / b->us; }

static void bench_json_side(const char *prefix, const bench_side *b) {
  static const char *const names[] = {"us", "us_min", "us_max", "gbps", "ratio"};
  const double values[] = {b->us, b->us_min, b->us_max, b->gbps, b->ratio};
  static const char *const formats[] = {"%.3f", "%.3f", "%.3f", "%.1f", "%.3f"};
  for (size_t i = 0; i < 5; i++) {
    printf(", \"%s%s\": ", prefix, names[i]);
    json_number(formats[i], values[i]);
  }
  printf(", \"%smax_err\": ", prefix);
  json_number("%.3g", b->st == CLNORM_OK ? b->e.rel : NAN);
}

/* The dispatcher's choice (tuned when the database has it) against the heuristic's variant on
 * every op x dtype x cols x rows. */
static int bench_pairs(const options *o, session *s, double copy, const char *copy_kernel) {
  static const size_t bench_cols[] = {4096, 65536};
  static const size_t bench_rows[] = {256};
  const size_t *cols = o->ncols ? o->cols : bench_cols;
  const size_t ncols = o->ncols ? o->ncols : sizeof bench_cols / sizeof bench_cols[0];
  const size_t *rows = o->nrows ? o->rows : bench_rows;
  const size_t nrows = o->nrows ? o->nrows : sizeof bench_rows / sizeof bench_rows[0];
  clnorm_op ops[CLNORM_OP_COUNT];
  clnorm_dtype dtypes[DTYPE_COUNT];
  const size_t nops = mask_ops(o->ops ? o->ops : NORM_OPS, ops);
  const size_t ndtypes = mask_dtypes(o->dtypes ? o->dtypes : 1u << CLNORM_F32, dtypes);
  int failed = 0;
  if (!o->json) {
    printf("normtune bench on %s (%s); copy bandwidth %.1f GB/s (%s, same run)\n",
           s->dev.name, s->dev.platform_name, copy, copy_kernel);
    printf("GB/s: median of %d rounds, the chosen variant and the heuristic's in alternation; "
           "+-: half the range of the rounds, in %% of the median\n\n",
           BENCH_ROUNDS);
    printf("%-13s %-5s %6s %6s | %9s %5s %6s %-9s | %9s %5s %6s | %s\n", "op", "dtype", "rows",
           "cols", "chosen", "+-%", "/copy", "why", "heuristic", "+-%", "/copy", "chosen variant");
  }
  for (size_t a = 0; a < nops; a++)
    for (size_t d = 0; d < ndtypes; d++)
      for (size_t ci = 0; ci < ncols; ci++)
        for (size_t ri = 0; ri < nrows; ri++) {
          shape sh;
          char why[512];
          if (!shape_init(s, &sh, ops[a], dtypes[d], rows[ri], cols[ci], NULL, 1, why,
                          sizeof why)) {
            fprintf(stderr, "normtune: skipped %s\n", why);
            continue;
          }
          const clnorm_call call = shape_call(&sh, 0);
          clnorm_variant chosen, heur;
          clnorm_choice reason = CLNORM_CHOICE_HEURISTIC;
          memset(&chosen, 0, sizeof chosen);
          memset(&heur, 0, sizeof heur);
          clnorm_choose(s->ctx, &call, &chosen, &reason);
          clnorm_heuristic(s->ctx, &call, &heur);
          /* the same variant twice would only measure noise: it is timed once, for both */
          const int same = differences(&chosen, &heur) == 0;
          bench_side c, h;
          c.st = verify(s, &sh, NULL, &c.e);
          h = c;
          if (!same)
            h.st = verify(s, &sh, &heur, &h.e);
          double tc[BENCH_ROUNDS], th[BENCH_ROUNDS];
          size_t nc = 0, nh = 0;
          for (int r = 0; r < BENCH_ROUNDS && (c.st == CLNORM_OK || h.st == CLNORM_OK); r++) {
            timing t;
            if (c.st == CLNORM_OK && (c.st = time_variant(s, &sh, NULL, 0, &t)) == CLNORM_OK)
              tc[nc++] = t.median;
            if (!same && h.st == CLNORM_OK &&
                (h.st = time_variant(s, &sh, &heur, 0, &t)) == CLNORM_OK)
              th[nh++] = t.median;
          }
          const double bytes = tool_op_bytes(&call);
          bench_side_finish(&c, tc, nc, bytes, copy);
          if (same)
            h = c;
          else
            bench_side_finish(&h, th, nh, bytes, copy);
          const int ok =
              c.st == CLNORM_OK && h.st == CLNORM_OK && c.e.scaled <= 1.0 && h.e.scaled <= 1.0;
          failed |= !ok;
          char text[128], heur_text[128], reason_text[600] = "";
          clnorm_variant_format(&chosen, text, sizeof text);
          clnorm_variant_format(&heur, heur_text, sizeof heur_text);
          if (c.st != CLNORM_OK || h.st != CLNORM_OK)
            snprintf(reason_text, sizeof reason_text, "%s: %s",
                     clnorm_status_string(c.st != CLNORM_OK ? c.st : h.st),
                     clnorm_ctx_errmsg(s->ctx));
          else if (!ok)
            snprintf(reason_text, sizeof reason_text, "%s: error %.3g of its tolerance",
                     c.e.scaled > 1.0 ? c.e.what : h.e.what,
                     c.e.scaled > 1.0 ? c.e.scaled : h.e.scaled);
          if (o->json) {
            printf("{\"device\": ");
            tool_json_string(s->dev.name);
            printf(", \"op\": \"%s\", \"dtype\": \"%s\", \"rows\": %zu, \"cols\": %zu, "
                   "\"copy_gbps\": %.1f, \"bytes\": %.0f, \"rounds\": %d",
                   op_name(ops[a]), dtype_name(dtypes[d]), rows[ri], cols[ci], copy, bytes,
                   BENCH_ROUNDS);
            bench_json_side("", &c);
            printf(", \"variant\": \"%s\", \"why\": \"%s\"", text, clnorm_choice_string(reason));
            bench_json_side("heuristic_", &h);
            printf(", \"heuristic_variant\": \"%s\", \"heuristic_same\": %s, \"check\": \"%s\", "
                   "\"reason\": ",
                   heur_text, same ? "true" : "false", ok ? "pass" : "FAIL");
            tool_json_string(reason_text);
            printf("}\n");
          } else {
            char heur_cols[64];
            if (same)
              snprintf(heur_cols, sizeof heur_cols, "%9s %5s %6s", "same", "", "");
            else
              snprintf(heur_cols, sizeof heur_cols, "%9.1f %5.1f %6.2f", h.gbps, bench_spread(&h),
                       h.ratio);
            printf("%-13s %-5s %6zu %6zu | %9.1f %5.1f %6.2f %-9s | %s | %s%s%s%s\n",
                   op_name(ops[a]), dtype_name(dtypes[d]), rows[ri], cols[ci], c.gbps,
                   bench_spread(&c), c.ratio, clnorm_choice_string(reason), heur_cols, text,
                   same ? " (the heuristic's own variant)" : "",
                   ok ? "" : "  CHECK FAILED: ", reason_text);
          }
          fflush(stdout);
          shape_free(&sh);
        }
  return failed;
}

/* ---- bench --grid ------------------------------------------------------------------------ */

#define CHECK_SAMPLE 64                  /* rows checked of a large matrix */
#define CHECK_ALL ((size_t)1 << 22)      /* matrices up to this many elements: every row */
#define WALL_BELOW ((size_t)1 << 20)     /* shapes below this many elements: wall time too */
#define WALL_CALLS 200

/* The rows a grid run checks: all (NULL) when rows <= CHECK_SAMPLE or rows x cols <= CHECK_ALL,
 * else CHECK_SAMPLE rows spread evenly, the first and the last included. */
static const size_t *sample_rows(size_t rows, size_t cols, size_t idx[CHECK_SAMPLE], size_t *n) {
  if (rows <= CHECK_SAMPLE || rows * cols <= CHECK_ALL) {
    *n = rows;
    return NULL;
  }
  for (size_t k = 0; k < CHECK_SAMPLE; k++)
    idx[k] = (size_t)((double)k * (double)(rows - 1) / (double)(CHECK_SAMPLE - 1) + 0.5);
  *n = CHECK_SAMPLE;
  return idx;
}

/* One line of the grid's output. */
typedef struct grid_row {
  clnorm_op op;
  clnorm_dtype dtype;
  size_t rows, cols, rows_checked;
  const char *check; /* "pass", "FAIL" or "skipped" */
  char reason[512];  /* why, when not "pass" */
  double us, event_us, gbps, ratio, bytes, wall_us, max_err, err_tol; /* NaN: none */
  const char *why, *worst;
  char variant[128];
} grid_row;

static void grid_print(const options *o, const session *s, const grid_row *g, double copy) {
  if (o->json) {
    printf("{\"device\": ");
    tool_json_string(s->dev.name);
    printf(", \"op\": \"%s\", \"dtype\": \"%s\", \"rows\": %zu, \"cols\": %zu, \"us\": ",
           op_name(g->op), dtype_name(g->dtype), g->rows, g->cols);
    json_number("%.3f", g->us);
    printf(", \"event_us\": ");
    json_number("%.3f", g->event_us);
    printf(", \"gbps\": ");
    json_number("%.1f", g->gbps);
    printf(", \"copy_gbps\": %.1f, \"ratio\": ", copy);
    json_number("%.3f", g->ratio);
    printf(", \"bytes\": ");
    json_number("%.0f", g->bytes);
    printf(", \"wall_us\": ");
    json_number("%.3f", g->wall_us);
    printf(", \"variant\": ");
    tool_json_string(g->variant);
    printf(", \"why\": ");
    tool_json_string(g->why ? g->why : "");
    printf(", \"max_err\": ");
    json_number("%.3g", g->max_err);
    printf(", \"err_tol\": ");
    json_number("%.3g", g->err_tol);
    printf(", \"worst\": ");
    tool_json_string(g->worst ? g->worst : "");
    printf(", \"rows_checked\": %zu, \"check\": \"%s\", \"reason\": ", g->rows_checked,
           g->check);
    tool_json_string(g->reason);
    printf("}\n");
  } else if (strcmp(g->check, "skipped") == 0) {
    printf("%-13s %-4s %6zu %8zu  skipped: %s\n", op_name(g->op), dtype_name(g->dtype), g->rows,
           g->cols, g->reason);
  } else {
    char wall[32] = "-";
    if (isfinite(g->wall_us))
      snprintf(wall, sizeof wall, "%.2f", g->wall_us);
    printf("%-13s %-4s %6zu %8zu %10.2f %8.1f %5.2f %9s %9.2e %7.3f %-4s %-9s %s%s%s\n",
           op_name(g->op), dtype_name(g->dtype), g->rows, g->cols, g->us, g->gbps, g->ratio, wall,
           g->max_err, g->err_tol, g->check, g->why ? g->why : "-", g->variant,
           g->reason[0] ? "  " : "", g->reason);
  }
  fflush(stdout);
}

/* One op on one shape and dtype of the grid: choose, check, time. */
static void grid_item(session *s, host_data *data, clnorm_op op, double copy, grid_row *g) {
  memset(g, 0, sizeof *g);
  g->op = op;
  g->dtype = data->dtype;
  g->rows = data->rows;
  g->cols = data->cols;
  g->us = g->event_us = g->gbps = g->ratio = g->bytes = g->wall_us = NAN;
  g->max_err = g->err_tol = NAN;
  g->check = "FAIL";
  shape sh;
  if (!shape_init(s, &sh, op, data->dtype, data->rows, data->cols, data, 0, g->reason,
                  sizeof g->reason)) {
    g->check = "skipped";
    return;
  }
  const clnorm_call call = shape_call(&sh, 0);
  g->bytes = tool_op_bytes(&call);
  clnorm_variant chosen;
  clnorm_choice why = CLNORM_CHOICE_HEURISTIC;
  clnorm_status st = clnorm_choose(s->ctx, &call, &chosen, &why);
  if (st == CLNORM_OK) {
    clnorm_variant_format(&chosen, g->variant, sizeof g->variant);
    g->why = clnorm_choice_string(why);
  }
  size_t idx_buf[CHECK_SAMPLE];
  const size_t *idx = sample_rows(data->rows, data->cols, idx_buf, &g->rows_checked);
  errors e;
  if (st == CLNORM_OK)
    st = run_checked(s, &sh, &sh.tset[0], NULL, data, idx, g->rows_checked, 0, &e);
  timing t;
  if (st == CLNORM_OK) {
    g->max_err = e.rel;
    g->err_tol = e.scaled;
    g->worst = e.what;
    st = time_variant(s, &sh, NULL, 0, &t);
  }
  if (st == CLNORM_OK) {
    g->us = t.median * 1e6;
    g->event_us = t.own * 1e6;
    g->gbps = g->bytes / t.median / 1e9;
    g->ratio = g->gbps / copy;
    if (data->rows * data->cols < WALL_BELOW) {
      const double wall = wall_per_call(s, &sh, WALL_CALLS);
      if (wall > 0)
        g->wall_us = wall * 1e6;
      else
        snprintf(g->reason, sizeof g->reason, "the back-to-back loop failed: %s",
                 clnorm_ctx_errmsg(s->ctx));
    }
    if (e.scaled <= 1.0 && !g->reason[0])
      g->check = "pass";
    else if (!g->reason[0])
      snprintf(g->reason, sizeof g->reason, "%s: error %.3g of its tolerance", e.what, e.scaled);
  } else {
    snprintf(g->reason, sizeof g->reason, "%s: %s", clnorm_status_string(st),
             clnorm_ctx_errmsg(s->ctx));
  }
  shape_free(&sh);
}

/* Builds the kernels of every call of the grid on several threads first: on NVIDIA's compiler
 * a third of a second each, one after another, would be minutes. */
typedef struct grid_build {
  clnorm_ctx *ctx;
  const clnorm_call *calls;
} grid_build;

static void grid_build_one(void *user, size_t i) {
  const grid_build *gb = user;
  clnorm_choose(gb->ctx, &gb->calls[i], NULL, NULL);
}

static void grid_prebuild(session *s, const options *o, const clnorm_op *ops, size_t nops,
                          const clnorm_dtype *dtypes, size_t ndtypes) {
  const size_t count = o->ngrid * ndtypes * nops;
  clnorm_call *calls = calloc(count, sizeof *calls);
  cl_mem dummy = make_buffer(s, 64, NULL); /* the vector width depends on which matrices exist */
  if (!calls || !dummy) {
    free(calls);
    release(dummy);
    return;
  }
  size_t k = 0;
  for (size_t g = 0; g < o->ngrid; g++)
    for (size_t d = 0; d < ndtypes; d++)
      for (size_t a = 0; a < nops; a++, k++) {
        shape sh;
        operands ops_dummy;
        memset(&sh, 0, sizeof sh);
        memset(&ops_dummy, 0, sizeof ops_dummy);
        sh.op = ops[a];
        sh.dtype = dtypes[d];
        sh.cols = o->grid_cols[g];
        sh.gamma = dummy;
        sh.beta = dummy;
        ops_dummy.rows = o->grid_rows[g];
        for (int m = 0; m < MATS; m++)
          ops_dummy.mat[m] = uses_matrix(ops[a], m) ? dummy : NULL;
        ops_dummy.mean = has_mean(ops[a]) ? dummy : NULL;
        ops_dummy.rstd = dummy;
        ops_dummy.dgamma = clnorm__op_backward(ops[a]) ? dummy : NULL;
        ops_dummy.dbeta = clnorm__op_backward(ops[a]) && has_mean(ops[a]) ? dummy : NULL;
        calls[k] = call_of(&sh, &ops_dummy);
      }
  const double start = tool_now();
  if (!o->quiet)
    fprintf(stderr, "normtune: building the kernels the dispatcher chooses for %zu calls\n",
            count);
  grid_build gb = {s->ctx, calls};
  parallel_for(count, grid_build_one, &gb);
  if (!o->quiet)
    fprintf(stderr, "normtune: built in %.1f s\n", tool_now() - start);
  release(dummy);
  free(calls);
}

static int bench_grid(const options *o, session *s, double copy, const char *copy_kernel) {
  clnorm_op ops[CLNORM_OP_COUNT];
  clnorm_dtype dtypes[DTYPE_COUNT];
  const size_t nops = mask_ops(o->ops ? o->ops : ALL_OPS, ops);
  const size_t ndtypes = mask_dtypes(o->dtypes ? o->dtypes : ALL_DTYPES, dtypes);
  const size_t count = o->ngrid * ndtypes * nops;
  int want_res = 0, want_dy = 0;
  for (size_t a = 0; a < nops; a++) {
    want_res |= clnorm__op_add(ops[a]);
    want_dy |= clnorm__op_backward(ops[a]);
  }
  grid_prebuild(s, o, ops, nops, dtypes, ndtypes);
  static const char check_note[] =
      "outputs poisoned with NaN, one run through the dispatcher, compared with the float64 "
      "reference: every row when rows <= 64 or rows x cols <= 4M elements, else 64 rows spread "
      "evenly (first and last included); dgamma/dbeta over all rows. max_err: |got - ref| over "
      "the row's largest |ref| (dx: over max(that, rstd * max |gamma * dy|)); err/tol <= 1 "
      "passes: f32 1e-5 (backward 1e-4) of that, f16/bf16 1 ulp of the dtype more; mean, rstd "
      "1e-5; sum_out bit-exact";
  static const char timing_note[] =
      "median kernel time from OpenCL profiling events after 2 warm-up runs (10 to 200 runs, "
      "until the median settles or about 1 s), rotating buffer sets to exceed 4x the device "
      "cache; a run lasts from a marker enqueued just before the call to the end of the call's "
      "event (a call may enqueue several kernels; event_us: that event's own start to end); "
      "GB/s: each input read once, each output written once; wall: 200 calls back to back on "
      "a queue without profiling, then clFinish, per call (shapes below 1M elements)";
  if (o->json) {
    printf("{\"header\": \"normtune bench --grid\", \"device\": ");
    tool_json_string(s->dev.name);
    printf(", \"platform\": ");
    tool_json_string(s->dev.platform_name);
    printf(", \"grid\": ");
    tool_json_string(o->grid);
    printf(", \"copy_gbps\": %.1f, \"copy_kernel\": ", copy);
    tool_json_string(copy_kernel);
    printf(", \"check\": ");
    tool_json_string(check_note);
    printf(", \"timing\": ");
    tool_json_string(timing_note);
    printf("}\n");
  } else {
    printf("normtune bench --grid %s on %s (%s)\n", o->grid, s->dev.name, s->dev.platform_name);
    printf("copy bandwidth %.1f GB/s (%s; 256 MiB, same run)\n", copy, copy_kernel);
    printf("check: %s\n", check_note);
    printf("timing: %s\n\n", timing_note);
    printf("%-13s %-4s %6s %8s %10s %8s %5s %9s %9s %7s %-4s %-9s %s\n", "op", "dtype", "rows",
           "cols", "median_us", "GB/s", "/copy", "wall_us", "max_err", "err/tol", "check", "why",
           "variant");
  }
  fflush(stdout);
  size_t done = 0, failed = 0, skipped = 0;
  const double start = tool_now();
  for (size_t gi = 0; gi < o->ngrid; gi++)
    for (size_t d = 0; d < ndtypes; d++) {
      const size_t rows = o->grid_rows[gi], cols = o->grid_cols[gi];
      /* host data only when at least one op fits the device */
      int any = 0;
      char why[512];
      for (size_t a = 0; a < nops && !any; a++)
        any = shape_fits(s, ops[a], dtypes[d], rows, cols, why, sizeof why);
      host_data data;
      memset(&data, 0, sizeof data);
      const int made = any && host_data_make(&data, dtypes[d], rows, cols, want_res, want_dy,
                                             0x9e1d0000u + gi * 8 + d, 0, 0);
      for (size_t a = 0; a < nops; a++) {
        grid_row g;
        if (made) {
          grid_item(s, &data, ops[a], copy, &g);
        } else {
          memset(&g, 0, sizeof g);
          g.op = ops[a];
          g.dtype = dtypes[d];
          g.rows = rows;
          g.cols = cols;
          g.us = g.event_us = g.gbps = g.ratio = g.bytes = g.wall_us = NAN;
          g.max_err = g.err_tol = NAN;
          g.check = "skipped";
          if (any)
            snprintf(g.reason, sizeof g.reason,
                     "%s %s %zu x %zu: out of host memory for its inputs", op_name(ops[a]),
                     dtype_name(dtypes[d]), rows, cols);
          else
            shape_fits(s, ops[a], dtypes[d], rows, cols, g.reason, sizeof g.reason);
        }
        done++;
        failed += strcmp(g.check, "FAIL") == 0;
        skipped += strcmp(g.check, "skipped") == 0;
        grid_print(o, s, &g, copy);
        if (!o->quiet) {
          if (strcmp(g.check, "skipped") == 0)
            fprintf(stderr, "normtune: [%zu/%zu] skipped: %s\n", done, count, g.reason);
          else
            fprintf(stderr, "normtune: [%zu/%zu] %s %s %zux%zu: %.1f GB/s (%.2f of copy), %s%s%s "
                            "(%.0f s)\n",
                    done, count, op_name(g.op), dtype_name(g.dtype), rows, cols, g.gbps, g.ratio,
                    g.check, g.reason[0] ? ": " : "", g.reason, tool_now() - start);
        }
      }
      host_data_free(&data);
    }
  if (!o->json)
    printf("\n%zu results: %zu passed, %zu FAILED, %zu skipped (each with its reason)\n", done,
           done - failed - skipped, failed, skipped);
  if (!o->quiet)
    fprintf(stderr, "normtune: %zu results, %zu failed, %zu skipped, in %.0f s\n", done, failed,
            skipped, tool_now() - start);
  return failed > 0;
}

static int cmd_bench(const options *o) {
  session s;
  session_open(o, &s);
  char path[4096];
  db_path(o, path, sizeof path);
  if (clnorm_ctx_load_tuning(s.ctx, path) != CLNORM_OK) {
    /* the context loaded the default database when it was created: without this, a --db that
     * cannot be read would bench that database's winners */
    clnorm__tuning_clear(s.ctx);
    fprintf(stderr, "normtune: %s: benchmarking without tuned results\n",
            clnorm_ctx_errmsg(s.ctx));
  }
  char err[512];
  tool_copy_kind kind;
  const double copy = tool_copy_gbps(s.context, s.queue, s.dev.device, (size_t)256 << 20,
                                     s.ctx->info.stream_stores, &kind, err, sizeof err);
  if (copy <= 0)
    die(1, "%s", err);
  char copy_kernel[96];
  snprintf(copy_kernel, sizeof copy_kernel, "%s, the fastest of %d copy kernels",
           tool_copy_name(kind), s.ctx->info.stream_stores ? 4 : 2);
  const int failed = o->ngrid ? bench_grid(o, &s, copy, copy_kernel)
                              : bench_pairs(o, &s, copy, copy_kernel);
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
  no_candidate_cache();
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
  const size_t nvar = variant_capacity(s.ctx);
  clnorm_variant *all = malloc(nvar * sizeof *all);
  candidate *cand = malloc(nvar * sizeof *cand);
  double *times = malloc(nvar * sizeof *times);
  if (!all || !cand || !times)
    die(1, "out of memory");
  static const double fractions[] = {0.05, 0.1, 0.2, 0.3};
  const int seeds = 100;
  printf("strategy replay on %s over shapes tuned exhaustively (%d seeds each)\n", s.dev.name,
         seeds);
  printf("%-13s %-5s %7s %6s %5s | %-8s %5s %6s | %10s %10s %12s\n", "op", "dtype", "rows",
         "cols", "cand", "strategy", "frac", "evals", "mean gap", "p90 gap", "within 3%");
  size_t used = 0;
  const unsigned ops = o->ops ? o->ops : ALL_OPS, dtypes = o->dtypes ? o->dtypes : ALL_DTYPES;
  for (size_t gi = 0; gi < st.n; gi++) {
    replay_group *g = &st.g[gi];
    if (!(ops & (1u << g->op)) || !(dtypes & (1u << g->dtype)))
      continue;
    clnorm_call call;
    memset(&call, 0, sizeof call);
    call.op = g->op;
    call.dtype = g->dtype;
    call.cols = (size_t)g->cols;
    call.rows = (size_t)g->rows;
    const size_t nv = clnorm_variant_list(s.ctx, g->op, g->dtype, all, nvar);
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
        printf("%-13s %-5s %7llu %6llu %5zu | %-8s %5.2f %6zu | %9.2f%% %9.2f%% %11d%%\n",
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

/* ---- help --------------------------------------------------------------------------------- */

static const char usage[] =
    "usage: normtune COMMAND [OPTIONS]\n"
    "       normtune help COMMAND   (or normtune COMMAND --help): one command, with examples\n"
    "       normtune --version      the version of normtune and its library\n"
    "\n"
    "commands:\n"
    "  devices                 list OpenCL platforms and devices with their index\n"
    "  tune                    search the variants and store the winners\n"
    "      [--device NAME|INDEX|gpu|cpu] [--db PATH] [--ops OP,...] [--dtypes f32,f16,bf16]\n"
    "      [--cols N,N,...] [--rows N,N,...] [--budget SECONDS]\n"
    "      [--strategy exhaustive|random|anneal] [--fraction F] [--seed N] [--quiet]\n"
    "  show [--db PATH] [--device ...] [--json | --c-table KEY]   the tuned winners\n"
    "  bench [--device ...] [--db PATH] [--ops ...] [--dtypes ...] [--cols ...]\n"
    "      [--rows ...] [--json]\n"
    "                          tuned choice vs heuristic vs copy bandwidth, checked, in 5\n"
    "                          rounds with their spread\n"
    "  bench --grid gpu|ROWSxCOLS,... [--device ...] [--db PATH] [--ops ...] [--dtypes ...]\n"
    "      [--json] [--quiet]  every op x dtype x shape of the grid through the dispatcher:\n"
    "                          kernel time, GB/s, ratio to copy, wall time per call, checked\n"
    "  report --out FILE.svg|FILE.html [--db PATH] [--quiet]\n"
    "                          charts of the database: GB/s against cols per device, op\n"
    "                          and row count,\n"
    "                          tuned vs heuristic per dtype, with the copy bandwidth\n"
    "  doctor [--db PATH]      OpenCL platforms, ICD files, database and binary cache: what\n"
    "                          to check when clnorm is slow or fails\n"
    "  export FILE [--db PATH] all results as JSON (FILE - : standard output)\n"
    "  import FILE [--db PATH] results exported on another machine\n"
    "  strategies [--device ...] [--db PATH] [--ops ...] [--dtypes ...]  replay random and\n"
    "                          anneal search over shapes tuned exhaustively; how close they\n"
    "                          get for how many evaluations\n"
    "\n"
    "OP: layernorm, rmsnorm, add_layernorm, add_rmsnorm, layernorm_bwd, rmsnorm_bwd, or all;\n"
    "dtypes: f32, f16, bf16, or all. Defaults: tune and bench --ops layernorm,rmsnorm\n"
    "--dtypes f32; bench --grid every op and dtype; strategies every op and dtype stored.\n"
    "--grid gpu: 17 shapes from 1x4096 to 16x4194304 (see docs/TUNING.md).\n"
    "The database is --db, else $CLNORM_DB, else $XDG_CACHE_HOME/clnorm/tuning.db\n"
    "(~/.cache/clnorm/tuning.db); the library reads the same path.\n"
    "The default device is the first GPU, else the first device; --device gpu or cpu: the\n"
    "first of that type. tune and bench take every --cols with every --rows (4 shapes for\n"
    "--cols 768,4096 --rows 256,4096). tune without --cols/--rows tunes cols 64..65536 (powers\n"
    "of two and common hidden sizes) for rows 8, 128, 2048, 16384 (one per row class); bench\n"
    "without them runs cols 4096 and 65536 at rows 256. Ctrl-C keeps every result measured so\n"
    "far; the same command resumes. --strategy anneal (default) and random evaluate --fraction\n"
    "(default 0.3) of the candidates of each shape; --budget bounds the whole run.\n"
    "\n"
    "examples:\n"
    "  normtune devices\n"
    "  normtune tune --budget 60\n"
    "  normtune tune --device 1 --ops layernorm --cols 4096 --rows 4096 --strategy exhaustive\n"
    "  normtune tune --ops add_rmsnorm,rmsnorm_bwd --dtypes f16,bf16 --cols 4096 --rows 2048\n"
    "  normtune show --device gpu\n"
    "  normtune bench --cols 4096,65536 --rows 256\n"
    "  normtune bench --grid gpu --device NVIDIA --json > clnorm.json\n"
    "  normtune report --out report.svg\n"
    "  normtune doctor\n"
    "\n"
    "Options a command does not take, and numbers that are negative, too large or followed by\n"
    "anything, are bad usage.\n"
    "\n"
    "exit status: 0 success, 1 failure (message on stderr), 2 bad usage, 3 nothing to report\n"
    "(report) or a warning (doctor), 4 no OpenCL platform or device (doctor), 5 the database\n"
    "cannot be read (doctor), 6 the database cannot be written (tune: disk full, I/O error,\n"
    "the file replaced or overwritten), 130 interrupted (tune)\n";

#define HELP_DB                                                                                    \
  "  --db PATH             the tuning database (default: $CLNORM_DB, else\n"                       \
  "                        $XDG_CACHE_HOME/clnorm/tuning.db, else ~/.cache/clnorm/tuning.db)\n"
#define HELP_DEVICE                                                                                \
  "  --device D            an index of `normtune devices`; gpu or cpu: the first device of\n"      \
  "                        that type; else a case-insensitive part of the device or platform\n"    \
  "                        name (default: the first GPU, else device 0)\n"
#define HELP_OPS_DTYPES                                                                            \
  "  --ops OP,...          layernorm, rmsnorm, add_layernorm, add_rmsnorm, layernorm_bwd,\n"       \
  "                        rmsnorm_bwd, or all\n"                                                  \
  "  --dtypes D,...        f32, f16, bf16, or all\n"
#define HELP_EXIT_COMMON                                                                           \
  "exit status: 0 success, 1 failure (the message says what to do), 2 bad usage\n"

typedef struct command_help {
  const char *name, *text;
} command_help;

static const command_help helps[] = {
    {"devices",
     "usage: normtune devices\n"
     "\n"
     "Lists every OpenCL device of every platform with the index --device takes, its type,\n"
     "compute units and OpenCL version.\n"
     "\n"
     "examples:\n"
     "  normtune devices\n"
     "  normtune tune --device 1        # then tune the second device listed\n"
     "\n"
     "exit status: 0 success, 1 no OpenCL platform or device (see normtune doctor)\n"},
    {"tune",
     "usage: normtune tune [--device D] [--db PATH] [--ops OP,...] [--dtypes D,...]\n"
     "                     [--cols N,N,...] [--rows N,N,...] [--budget SECONDS]\n"
     "                     [--strategy exhaustive|random|anneal] [--fraction F] [--seed N]\n"
     "                     [--quiet]\n"
     "\n"
     "Searches the kernel variants of each shape (op x dtype x cols x rows: every value of\n"
     "each list with every value of the others), verifies each candidate against a float64\n"
     "reference, times it, and stores every result in the database, one transaction each;\n"
     "then times the three fastest and the heuristic's choice again, in turn, and keeps each\n"
     "one's median (a confirmation round against noise). Also stores the device's copy\n"
     "bandwidth and what the heuristic (the untuned choice) gives on each shape, for\n"
     "`normtune report`.\n"
     "\n" HELP_DEVICE HELP_DB HELP_OPS_DTYPES
     "                        (default: --ops layernorm,rmsnorm --dtypes f32)\n"
     "  --cols N,...          row lengths (default: 64..65536, powers of two and common sizes)\n"
     "  --rows N,...          row counts (default: 8, 128, 2048, 16384: one per row class)\n"
     "  --budget SECONDS      stop after this long; the time is shared by the shapes left\n"
     "                        (a run whose budget ends before it measured anything says so)\n"
     "  --strategy S          exhaustive (every candidate), random, or anneal (default)\n"
     "  --fraction F          random and anneal only: share of the candidates (default 0.3)\n"
     "  --seed N              random and anneal only: the seed, 0 or more (default 1)\n"
     "  --quiet               no progress lines\n"
     "\n"
     "Ctrl-C keeps every result measured so far; the same command resumes.\n"
     "\n"
     "examples:\n"
     "  normtune tune --budget 600\n"
     "  normtune tune --device H100 --cols 4096,8192 --rows 16384\n"
     "  normtune tune --ops all --dtypes all --cols 4096 --budget 1800\n"
     "  normtune tune --ops layernorm --cols 4096 --rows 4096 --strategy exhaustive\n"
     "\n"
     "exit status: 0 success, 1 failure (the message says what to do), 2 bad usage,\n"
     "6 the database cannot be written (disk full, I/O error, the file replaced or\n"
     "overwritten; the same command resumes from what it holds), 130 interrupted (results\n"
     "kept; run the same command to resume)\n"},
    {"show",
     "usage: normtune show [--db PATH] [--device D] [--json | --c-table KEY]\n"
     "\n"
     "Prints the tuned winner of each shape (current kernels only): op, dtype, cols, row class\n"
     "(the row counts it covers: 1-16, 17-256, 257-4096, 4097+), the rows it was tuned at,\n"
     "median time, GB/s and variant. With --device, only that device, and how many of its\n"
     "results are stale.\n"
     "\n" HELP_DB HELP_DEVICE "  --json                one JSON array\n"
     "  --c-table KEY         lines for src/builtin_table.h (the winners shipped in the\n"
     "                        library), keyed by KEY: a part of the device name, or its\n"
     "                        start when KEY begins with ^ (needs --device)\n"
     "\n"
     "examples:\n"
     "  normtune show\n"
     "  normtune show --device gpu --json > winners.json\n"
     "  normtune show --device H100 --c-table H100 >> src/builtin_table.h\n"
     "\n" HELP_EXIT_COMMON},
    {"bench",
     "usage: normtune bench [--device D] [--db PATH] [--ops ...] [--dtypes ...]\n"
     "                      [--cols N,...] [--rows N,...] [--json]\n"
     "       normtune bench --grid gpu|ROWSxCOLS,... [--device D] [--db PATH] [--ops ...]\n"
     "                      [--dtypes ...] [--json] [--quiet]\n"
     "\n"
     "Without --grid: per shape (op x dtype x cols x rows, every value with every other), the\n"
     "GB/s of the dispatcher's choice (tuned when the database has it) and of the heuristic,\n"
     "each as a share of the copy bandwidth, both checked against the reference: the median of\n"
     "5 rounds, the two in alternation, with the spread of the rounds (+-, half their range in %\n"
     "of the median). When the choice is the heuristic's own variant it is timed once and\n"
     "the line says so. With --grid: every op x dtype x shape through the dispatcher: kernel\n"
     "time, GB/s, ratio to copy, wall time per call, checked. Both --json forms name the same\n"
     "things alike (us, gbps, ratio, variant, why, max_err, check, reason).\n"
     "\n" HELP_DEVICE HELP_DB HELP_OPS_DTYPES
     "  --cols N,...          row lengths (default: 4096,65536)\n"
     "  --rows N,...          row counts (default: 256)\n"
     "  --grid gpu|RxC,...    17 transformer shapes (gpu), or a list such as 64x1024,8x4096\n"
     "  --json                one JSON object per line\n"
     "  --quiet               --grid: no progress lines on stderr\n"
     "\n"
     "examples:\n"
     "  normtune bench --cols 4096,65536 --rows 256\n"
     "  normtune bench --grid gpu --device NVIDIA --json > clnorm.json\n"
     "  normtune bench --grid 64x1024,8x4096 --ops rmsnorm --dtypes bf16\n"
     "\n"
     "exit status: 0 every check passed, 1 a check failed or a failure, 2 bad usage\n"},
    {"report",
     "usage: normtune report --out FILE.svg|FILE.html|- [--db PATH] [--quiet]\n"
     "\n"
     "Draws the database as charts: one panel per device, op and row count (a line never\n"
     "joins two row counts), GB/s against cols on a log scale, one line per dtype for the\n"
     "tuned winner (solid, dots) and the heuristic's variant (dashed, squares), and the\n"
     "device's copy bandwidth (dotted). Only measured figures are drawn: a database tuned\n"
     "before clnorm stored the heuristic and the copy bandwidth shows the winners alone (tune\n"
     "again to add them). FILE.html holds the SVG in a minimal page; - writes the SVG to\n"
     "standard output. Hovering a point shows its variant and time. The database is not\n"
     "changed.\n"
     "\n" HELP_DB "  --out FILE            the file to write (.svg, .html or .htm, or -)\n"
     "  --quiet               no summary line on stderr\n"
     "\n"
     "examples:\n"
     "  normtune report --out report.svg\n"
     "  normtune tune --dtypes all --cols 64,256,1024,4096,16384 --rows 1024 --budget 600 &&\n"
     "    normtune report --out report.html\n"
     "  normtune report --db results/h100.db --out h100.svg\n"
     "\n"
     "exit status: 0 written, 1 failure (database missing or unreadable, file not writable),\n"
     "2 bad usage, 3 the database holds no tuned result of this clnorm's kernels\n"},
    {"doctor",
     "usage: normtune doctor [--db PATH]\n"
     "\n"
     "Prints what to check when clnorm is slow or fails: the ICD files the OpenCL loader reads\n"
     "(OCL_ICD_VENDORS, else /etc/OpenCL/vendors/*.icd) and the libraries they name; every\n"
     "platform and device with its versions; the tuning database (path, whether it exists and\n"
     "can be read and written, results per device, stale results: driver or kernels changed);\n"
     "the program-binary cache's directory and size. Each warning and problem has a line\n"
     "saying what to do.\n"
     "\n" HELP_DB "\n"
     "examples:\n"
     "  normtune doctor\n"
     "  CLNORM_DB=/srv/clnorm/tuning.db normtune doctor\n"
     "\n"
     "exit status (the most serious finding):\n"
     "  0  all fine\n"
     "  3  a warning: clnorm runs untuned or partly (no database, no results for a device\n"
     "     here, stale results, a database normtune tune cannot write)\n"
     "  4  no OpenCL platform or device: clnorm cannot run\n"
     "  5  the database cannot be read (permissions, corrupt, not a clnorm database, newer\n"
     "     schema): the library ignores it and runs untuned\n"
     "  2  bad usage\n"},
    {"export",
     "usage: normtune export FILE|- [--db PATH]\n"
     "\n"
     "Writes every device's results as JSON (format clnorm-tuning, see docs/TUNING.md) to FILE,\n"
     "or to standard output with -.\n"
     "\n" HELP_DB "\n"
     "examples:\n"
     "  normtune export results.json\n"
     "  normtune export - | gzip > results.json.gz\n"
     "\n" HELP_EXIT_COMMON},
    {"import",
     "usage: normtune import FILE|- [--db PATH]\n"
     "\n"
     "Merges results exported on another machine: each field is checked and any error rejects\n"
     "the whole file; a result replaces a stored one only when it was measured later.\n"
     "\n" HELP_DB "\n"
     "examples:\n"
     "  normtune import results.json\n"
     "  gunzip -c results.json.gz | normtune import - --db /srv/clnorm/tuning.db\n"
     "\n" HELP_EXIT_COMMON},
    {"strategies",
     "usage: normtune strategies [--device D] [--db PATH] [--ops ...] [--dtypes ...]\n"
     "\n"
     "Replays random and anneal search, 100 seeds each, over the shapes of this device tuned\n"
     "with --strategy exhaustive, using the stored times: how close each gets to the optimum\n"
     "for how many evaluations. Runs no kernel.\n"
     "\n" HELP_DEVICE HELP_DB HELP_OPS_DTYPES "\n"
     "examples:\n"
     "  normtune tune --ops layernorm --cols 4096 --rows 4096 --strategy exhaustive\n"
     "  normtune strategies --ops layernorm\n"
     "\n" HELP_EXIT_COMMON},
    {"help", "usage: normtune help [COMMAND]\n"
             "\n"
             "Without COMMAND, the list of commands; with one, its options and examples.\n"
             "\n"
             "examples:\n"
             "  normtune help tune\n"
             "  normtune report --help\n"
             "\n"
             "exit status: 0, or 2 for an unknown command\n"},
};

static const command_help *find_help(const char *cmd) {
  for (size_t i = 0; i < sizeof helps / sizeof helps[0]; i++)
    if (strcmp(helps[i].name, cmd) == 0)
      return &helps[i];
  return NULL;
}

static const char *command_names(void) {
  static char names[256];
  if (!names[0])
    for (size_t i = 0; i < sizeof helps / sizeof helps[0]; i++)
      snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? ", " : "",
               helps[i].name);
  return names;
}

/* normtune help [CMD], normtune CMD --help. */
static int print_help(const char *cmd) {
  if (!cmd) {
    fputs(usage, stdout);
    return 0;
  }
  const command_help *h = find_help(cmd);
  if (!h)
    die(EXIT_USAGE, "unknown command \"%s\" (commands: %s; see normtune --help)", cmd,
        command_names());
  fputs(h->text, stdout);
  return 0;
}

static int cmd_report(const options *o) {
  if (!o->out)
    die(EXIT_USAGE, "report needs --out FILE.svg or FILE.html (- : SVG on standard output), "
                    "e.g. normtune report --out report.svg");
  const size_t len = strlen(o->out);
  const int html = (len > 5 && strcmp(o->out + len - 5, ".html") == 0) ||
                   (len > 4 && strcmp(o->out + len - 4, ".htm") == 0);
  if (!html && strcmp(o->out, "-") != 0 && !(len > 4 && strcmp(o->out + len - 4, ".svg") == 0))
    die(EXIT_USAGE,
        "--out: \"%s\" should end in .svg, .html or .htm (or be - for standard "
        "output)",
        o->out);
  char path[4096];
  db_path(o, path, sizeof path);
  return report_write(path, o->out, html, clnorm__kernel_hash(), o->quiet);
}

int main(int argc, char **argv) {
  if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
    fputs(usage, argc < 2 ? stderr : stdout);
    return argc < 2 ? EXIT_USAGE : 0;
  }
  if (strcmp(argv[1], "--version") == 0) {
    if (argc > 2)
      die(EXIT_USAGE, "--version takes no argument");
    /* the kernel hash keys the database's results: it says which results this build uses */
    printf("normtune (clnorm) %s\nkernel sources %016llx\n", clnorm_version_string(),
           (unsigned long long)clnorm__kernel_hash());
    return 0;
  }
  if (strcmp(argv[1], "help") == 0) {
    if (argc > 3)
      die(EXIT_USAGE, "help takes one command at most (e.g. normtune help tune)");
    return print_help(argc > 2 ? argv[2] : NULL);
  }
  for (int i = 2; i < argc; i++)
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
      return print_help(argv[1]);
  const char *cmd = argv[1];
  if (!find_help(cmd))
    die(EXIT_USAGE, "unknown command \"%s\" (commands: %s; see normtune --help)", cmd,
        command_names());
  options o;
  parse_options(argc, argv, 2, &o);
  check_command_options(cmd, &o);
  if (strcmp(cmd, "devices") == 0)
    return cmd_devices();
  if (strcmp(cmd, "tune") == 0)
    return cmd_tune(&o);
  if (strcmp(cmd, "show") == 0)
    return cmd_show(&o);
  if (strcmp(cmd, "bench") == 0)
    return cmd_bench(&o);
  if (strcmp(cmd, "report") == 0)
    return cmd_report(&o);
  if (strcmp(cmd, "doctor") == 0)
    return doctor_run(o.db, clnorm__kernel_hash());
  if (strcmp(cmd, "export") == 0)
    return cmd_export(&o);
  if (strcmp(cmd, "import") == 0)
    return cmd_import(&o);
  if (strcmp(cmd, "strategies") == 0)
    return cmd_strategies(&o);
  die(EXIT_USAGE, "unknown command \"%s\" (see normtune --help)", cmd);
  return EXIT_USAGE;
}
