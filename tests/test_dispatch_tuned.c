/* The dispatcher's use of the tuning database: what `normtune tune` stored is what the library
 * runs, and a bad database never breaks a call. Driven by the scripts in tests/tuner/.
 *
 *   test_dispatch_tuned tuned DB [SHOW_JSON]
 *       DB holds verified winners of this device (checked through db.h, independently of the
 *       library); a context loading DB chooses each winner for its shape (`tuned`), the nearest
 *       winner for a neighbouring cols of the same divisibility and row class (`nearest`), and
 *       neither for another row class; every call matches the float64 reference. SHOW_JSON:
 *       the output of `normtune show --json`, which must list exactly these winners.
 *   test_dispatch_tuned fallback DB WORD[|WORD...] [GOOD_DB]
 *       Loading DB fails with CLNORM_E_DB or loads no winner, errmsg names the cause (one of
 *       the words, case-insensitive), a context created with $CLNORM_DB=DB works, and calls
 *       still match the reference. GOOD_DB: a context that loaded it keeps its table when
 *       loading DB fails.
 *   test_dispatch_tuned count DB
 *       Prints "results N winners M": every stored result and winner, all devices.
 *
 * The device is the one normtune picks by default (first GPU, else first device), or
 * $CLNORM_TEST_DEVICE. Exit status 0 pass, 1 fail, 2 usage. */
#define _POSIX_C_SOURCE 200809L
#include "db.h"
#include "harness.h"
#include "internal.h"
#include "names.h"
#include "ref.h"
#include "tool.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOLERANCE 1e-5

static int failures;

#define EXPECT(cond, ...)                                                                          \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      failures++;                                                                                  \
      fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                                         \
      fprintf(stderr, __VA_ARGS__);                                                                \
      fputc('\n', stderr);                                                                         \
    }                                                                                              \
  } while (0)

typedef struct env {
  tool_device dev;
  cl_context context;
  cl_command_queue queue;
  clnorm_device_identity identity;
} env;

static const char *op_name(clnorm_op op) {
  return op == CLNORM_OP_LAYERNORM ? "layernorm" : "rmsnorm";
}

static void open_env(env *e) {
  char err[1024];
  if (!tool_pick_device(getenv("CLNORM_TEST_DEVICE"), &e->dev, err, sizeof err) ||
      !tool_open(&e->dev, &e->context, &e->queue, err, sizeof err)) {
    fprintf(stderr, "FAIL: no OpenCL device: %s\n", err);
    exit(1);
  }
  if (clnorm__device_identity(e->dev.device, &e->identity, err, sizeof err) != CLNORM_OK) {
    fprintf(stderr, "FAIL: reading the device identity: %s\n", err);
    exit(1);
  }
  printf("device: %s (%s), driver %s\n", e->dev.name, e->dev.platform_name,
         e->identity.driver_version);
}

static void close_env(env *e) {
  clReleaseCommandQueue(e->queue);
  clReleaseContext(e->context);
}

/* A context created while $CLNORM_DB names `db_path` (what clnorm_ctx_create loads). */
static clnorm_ctx *make_ctx(env *e, const char *db_path) {
  return harness_ctx_with_db(e->context, e->dev.device, db_path, NULL);
}


/* Trailing zero bits of cols capped at 4, as the dispatcher's nearest search groups them. */
static unsigned divisibility(size_t cols) {
  unsigned d = 0;
  while (d < 4 && cols % ((size_t)2 << d) == 0)
    d++;
  return d;
}

/* The variant as the dispatcher runs it for `call` (vector width narrowed to what the call can
 * run on the context's device). */
static clnorm_variant effective(const clnorm_ctx *ctx, const clnorm_call *call,
                                const clnorm_variant *v) {
  clnorm_variant e = *v;
  e.vec = clnorm__call_vec(&ctx->info, call, v->vec);
  e.hold = v->hold * (v->vec / e.vec);
  return e;
}

static cl_mem buffer(env *e, size_t bytes, const void *host) {
  cl_int err;
  cl_mem m = clCreateBuffer(e->context, host ? CL_MEM_COPY_HOST_PTR : CL_MEM_READ_WRITE, bytes,
                            (void *)host, &err);
  if (err != CL_SUCCESS) {
    fprintf(stderr, "FAIL: clCreateBuffer(%zu bytes): %d\n", bytes, (int)err);
    exit(1);
  }
  return m;
}

/* Runs op on rows x cols through the public entry point (the dispatcher chooses), outputs
 * poisoned with NaN first, and compares y, mean and rstd with the float64 reference. Row 1
 * holds a NaN: its outputs must be NaN, the other rows unaffected. */
static void run_checked(env *e, clnorm_ctx *ctx, clnorm_op op, size_t rows, size_t cols,
                        const char *label) {
  const size_t n = rows * cols;
  float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
  float *gamma = malloc(cols * sizeof *gamma), *beta = malloc(cols * sizeof *beta);
  float *mean = malloc(rows * sizeof *mean), *rstd = malloc(rows * sizeof *rstd);
  double *ref_y = malloc(n * sizeof *ref_y), *ref_mean = malloc(rows * sizeof *ref_mean);
  double *ref_rstd = malloc(rows * sizeof *ref_rstd);
  if (!x || !y || !gamma || !beta || !mean || !rstd || !ref_y || !ref_mean || !ref_rstd) {
    fprintf(stderr, "FAIL: out of host memory\n");
    exit(1);
  }
  clnorm_rng rng;
  clnorm_rng_seed(&rng, 0x7e57u + rows * 131 + cols);
  for (size_t r = 0; r < rows; r++) {
    const double shift = (clnorm_rng_uniform(&rng) - 0.5) * 4.0;
    const double scale = 0.5 + 2.0 * clnorm_rng_uniform(&rng);
    for (size_t i = 0; i < cols; i++)
      x[r * cols + i] = (float)(shift + scale * clnorm_rng_normal(&rng));
  }
  if (rows > 1)
    x[cols + cols / 3] = NAN;
  for (size_t i = 0; i < cols; i++) {
    gamma[i] = (float)(0.5 + clnorm_rng_uniform(&rng));
    beta[i] = (float)(clnorm_rng_uniform(&rng) - 0.5);
  }
  const int ln = op == CLNORM_OP_LAYERNORM;
  if (ln)
    clnorm_ref_layernorm(rows, cols, x, cols, gamma, beta, 1e-5, ref_y, ref_mean, ref_rstd);
  else
    clnorm_ref_rmsnorm(rows, cols, x, cols, gamma, 1e-5, ref_y, ref_rstd);

  cl_mem xb = buffer(e, n * 4, x), yb = buffer(e, n * 4, NULL);
  cl_mem gb = buffer(e, cols * 4, gamma), bb = buffer(e, cols * 4, beta);
  cl_mem mb = buffer(e, rows * 4, NULL), rb = buffer(e, rows * 4, NULL);
  const float nan = NAN;
  cl_int err = clEnqueueFillBuffer(e->queue, yb, &nan, sizeof nan, 0, n * 4, 0, NULL, NULL);
  err |= clEnqueueFillBuffer(e->queue, mb, &nan, sizeof nan, 0, rows * 4, 0, NULL, NULL);
  err |= clEnqueueFillBuffer(e->queue, rb, &nan, sizeof nan, 0, rows * 4, 0, NULL, NULL);
  EXPECT(err == CL_SUCCESS, "%s: poisoning the outputs failed", label);
  const clnorm_rows xr = {xb, 0, 0}, yr = {yb, 0, 0};
  const clnorm_status st = ln ? clnorm_layernorm(ctx, e->queue, rows, cols, CLNORM_F32, 1e-5f, xr,
                                                 gb, bb, yr, mb, rb, 0, NULL, NULL)
                              : clnorm_rmsnorm(ctx, e->queue, rows, cols, CLNORM_F32, 1e-5f, xr, gb,
                                               yr, rb, 0, NULL, NULL);
  EXPECT(st == CLNORM_OK, "%s: %s %zu x %zu: %s: %s", label, op_name(op), rows, cols,
         clnorm_status_string(st), clnorm_ctx_errmsg(ctx));
  if (st == CLNORM_OK) {
    err = clEnqueueReadBuffer(e->queue, yb, CL_TRUE, 0, n * 4, y, 0, NULL, NULL);
    err |= clEnqueueReadBuffer(e->queue, rb, CL_TRUE, 0, rows * 4, rstd, 0, NULL, NULL);
    if (ln)
      err |= clEnqueueReadBuffer(e->queue, mb, CL_TRUE, 0, rows * 4, mean, 0, NULL, NULL);
    EXPECT(err == CL_SUCCESS, "%s: reading the results failed", label);
    double worst = 0.0;
    for (size_t r = 0; r < rows; r++) {
      double err_row = clnorm_ref_row_error(cols, y + r * cols, ref_y + r * cols);
      const double e_r = clnorm_ref_rel_error(rstd[r], ref_rstd[r]);
      err_row = e_r > err_row || isnan(e_r) ? e_r : err_row;
      if (ln) {
        const double m = ref_mean[r];
        const double e_m = isnan(m) ? (isnan(mean[r]) ? 0.0 : INFINITY)
                                    : fabs((double)mean[r] - m) / (fabs(m) + 1.0 / ref_rstd[r]);
        err_row = e_m > err_row || isnan(e_m) ? e_m : err_row;
      }
      EXPECT(err_row <= TOLERANCE, "%s: %s %zu x %zu row %zu: error %.3g > %.0e", label,
             op_name(op), rows, cols, r, err_row, TOLERANCE);
      worst = err_row > worst ? err_row : worst;
    }
    printf("  %s: %s %zu x %zu matches the reference (max error %.2g)\n", label, op_name(op), rows,
           cols, worst);
  }
  clReleaseMemObject(xb);
  clReleaseMemObject(yb);
  clReleaseMemObject(gb);
  clReleaseMemObject(bb);
  clReleaseMemObject(mb);
  clReleaseMemObject(rb);
  free(x);
  free(y);
  free(gamma);
  free(beta);
  free(mean);
  free(rstd);
  free(ref_y);
  free(ref_mean);
  free(ref_rstd);
}

/* This device's winners for the current kernels, read through db.h (not through the library). */
static clnorm_result *read_winners(const env *e, const char *path, size_t *count) {
  char err[1024];
  clnorm_db *db = NULL;
  clnorm_status st = clnorm__db_open(path, CLNORM_DB_READ, &db, err, sizeof err);
  if (st != CLNORM_OK) {
    fprintf(stderr, "FAIL: opening %s: %s\n", path, err);
    exit(1);
  }
  clnorm_result *w = NULL;
  const clnorm_kernel_hashes hashes = clnorm__kernel_hashes();
  st = clnorm__db_winners(db, &e->identity, &hashes, &w, count, err, sizeof err);
  clnorm__db_close(db);
  if (st != CLNORM_OK) {
    fprintf(stderr, "FAIL: reading the winners of %s: %s\n", path, err);
    exit(1);
  }
  return w;
}

static char *read_text(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "FAIL: cannot read %s\n", path);
    exit(1);
  }
  size_t cap = 4096, len = 0;
  char *text = malloc(cap);
  for (size_t got; text && (got = fread(text + len, 1, cap - len - 1, f)) > 0;) {
    len += got;
    if (len + 1 == cap) {
      char *grown = realloc(text, cap *= 2);
      if (!grown)
        free(text);
      text = grown;
    }
  }
  fclose(f);
  if (!text) {
    fprintf(stderr, "FAIL: out of memory reading %s\n", path);
    exit(1);
  }
  text[len] = '\0';
  return text;
}

/* `normtune show --json` prints one object per line; counts this device's lines and checks
 * that each winner is among them. */
static void check_show_json(const env *e, const char *path, const clnorm_result *w, size_t n) {
  char *text = read_text(path);
  char dev[600];
  snprintf(dev, sizeof dev, "\"device\": \"%s\", \"driver\": \"%s\"", e->identity.name,
           e->identity.driver_version);
  size_t lines = 0;
  for (const char *p = text; (p = strstr(p, dev)) != NULL; p++)
    lines++;
  EXPECT(lines == n, "%s lists %zu winners of this device, the database %zu", path, lines, n);
  for (size_t i = 0; i < n; i++) {
    char variant[128], want[1024];
    clnorm_variant_format(&w[i].variant, variant, sizeof variant);
    snprintf(want, sizeof want,
             "%s, \"op\": \"%s\", \"dtype\": \"f32\", \"cols\": %llu, \"row_class\": %u, "
             "\"rows\": %llu, \"variant\": \"%s\"",
             dev, op_name(w[i].op), (unsigned long long)w[i].cols, w[i].row_class,
             (unsigned long long)w[i].rows, variant);
    EXPECT(strstr(text, want) != NULL, "%s does not list the winner {%s}", path, want);
  }
  free(text);
}

/* The winner the nearest search must find for cols (src/tuned.c states the rule; written here
 * again, on the database's winners, as the test's own expectation): of the same op, dtype, row
 * class and divisibility, the tuned cols just below and just above; both there, the nearer one's
 * winner (the smaller cols on a tie) when the two winners are the same variant, else none; one
 * there, its winner when its cols is within a factor 2. NULL when there is none. */
static const clnorm_result *expected_nearest(const clnorm_result *w, size_t n,
                                             const clnorm_result *like, size_t cols) {
  const clnorm_result *lo = NULL, *hi = NULL;
  for (size_t i = 0; i < n; i++) {
    if (w[i].op != like->op || w[i].dtype != like->dtype || w[i].row_class != like->row_class ||
        w[i].cols == cols || divisibility((size_t)w[i].cols) != divisibility(cols))
      continue;
    if (w[i].cols < cols && (!lo || w[i].cols > lo->cols))
      lo = &w[i];
    if (w[i].cols > cols && (!hi || w[i].cols < hi->cols))
      hi = &w[i];
  }
  if (lo && hi) {
    if (!clnorm__variant_same(&lo->variant, &hi->variant))
      return NULL;
    return (double)cols / (double)lo->cols <= (double)hi->cols / (double)cols ? lo : hi;
  }
  const clnorm_result *one = lo ? lo : hi;
  if (!one)
    return NULL;
  const double ratio = one == lo ? (double)cols / (double)one->cols : (double)one->cols / (double)cols;
  return ratio <= 2.0 ? one : NULL;
}

static int is_tuned_cols(const clnorm_result *w, size_t n, const clnorm_result *like, size_t cols) {
  for (size_t i = 0; i < n; i++)
    if (w[i].op == like->op && w[i].dtype == like->dtype && w[i].row_class == like->row_class &&
        w[i].cols == cols)
      return 1;
  return 0;
}

static int cmd_tuned(const char *path, const char *show_json) {
  env e;
  open_env(&e);
  size_t n = 0;
  clnorm_result *w = read_winners(&e, path, &n);
  EXPECT(n > 0, "%s holds no winner of this device for the current kernels", path);
  for (size_t i = 0; i < n; i++) {
    char text[128];
    clnorm_variant_format(&w[i].variant, text, sizeof text);
    printf("winner: %s f32 cols %llu row class %u (rows %llu): %s, %.3g s, error %.2g\n",
           op_name(w[i].op), (unsigned long long)w[i].cols, w[i].row_class,
           (unsigned long long)w[i].rows, text, w[i].median_s, w[i].max_err);
    EXPECT(w[i].outcome == CLNORM_OUTCOME_OK && isfinite(w[i].median_s) && w[i].median_s > 0 &&
               w[i].max_err <= TOLERANCE,
           "winner %zu is not a verified, timed result (%s, median %g, error %g)", i,
           clnorm__outcome_name(w[i].outcome), w[i].median_s, w[i].max_err);
    EXPECT(w[i].dtype == CLNORM_F32, "winner %zu has a dtype this build cannot run", i);
  }
  if (show_json)
    check_show_json(&e, show_json, w, n);

  /* clnorm_ctx_create loads $CLNORM_DB by itself. */
  clnorm_ctx *ctx = make_ctx(&e, path);
  EXPECT(clnorm_ctx_tuned_count(ctx) == n,
         "clnorm_ctx_create with CLNORM_DB=%s loaded %zu tuned results, the database holds %zu",
         path, clnorm_ctx_tuned_count(ctx), n);
  clnorm_ctx_destroy(ctx);

  /* A context without tuning data, then clnorm_ctx_load_tuning. */
  char absent[4200];
  snprintf(absent, sizeof absent, "%s.absent", path);
  ctx = make_ctx(&e, absent);
  EXPECT(clnorm_ctx_tuned_count(ctx) == 0, "a context without a database has %zu tuned results",
         clnorm_ctx_tuned_count(ctx));
  clnorm_status st = clnorm_ctx_load_tuning(ctx, path);
  EXPECT(st == CLNORM_OK, "clnorm_ctx_load_tuning(%s): %s: %s", path, clnorm_status_string(st),
         clnorm_ctx_errmsg(ctx));
  EXPECT(clnorm_ctx_tuned_count(ctx) == n,
         "clnorm_ctx_load_tuning loaded %zu results, the database holds %zu winners",
         clnorm_ctx_tuned_count(ctx), n);

  size_t nearest_checked = 0, refused_checked = 0;
  for (size_t i = 0; i < n; i++) {
    if (w[i].dtype != CLNORM_F32)
      continue;
    const size_t cols = (size_t)w[i].cols, rows = (size_t)w[i].rows;
    char text[128], got_text[128];
    clnorm_variant v;
    clnorm_choice why = CLNORM_CHOICE_HEURISTIC;

    /* the tuned shape: exactly the stored winner */
    clnorm_call call = harness_call(w[i].op, rows, cols);
    clnorm_variant want = effective(ctx, &call, &w[i].variant);
    st = clnorm_choose(ctx, &call, &v, &why);
    clnorm_variant_format(&want, text, sizeof text);
    clnorm_variant_format(&v, got_text, sizeof got_text);
    EXPECT(st == CLNORM_OK && why == CLNORM_CHOICE_TUNED && clnorm__variant_same(&v, &want),
           "%s %zu x %zu: chose %s (%s), want the tuned winner %s", op_name(w[i].op), rows, cols,
           got_text, clnorm_choice_string(why), text);
    printf("  tuned shape %s %zu x %zu: %s (%s)\n", op_name(w[i].op), rows, cols, got_text,
           clnorm_choice_string(why));
    run_checked(&e, ctx, w[i].op, rows, cols, "tuned");

    /* a neighbour: another cols of the same divisibility and row class */
    static const size_t num[] = {3, 5, 1, 3, 2, 7, 9};
    static const size_t den[] = {4, 4, 2, 2, 1, 8, 8};
    int found = 0, refused = 0; /* a neighbour that ran a winner; one where none may run */
    for (size_t k = 0; k < sizeof num / sizeof num[0] && !found; k++) {
      if ((cols * num[k]) % den[k] != 0)
        continue;
      const size_t near_cols = cols * num[k] / den[k];
      if (near_cols == 0 || divisibility(near_cols) != divisibility(cols) ||
          is_tuned_cols(w, n, &w[i], near_cols))
        continue;
      const clnorm_result *src = expected_nearest(w, n, &w[i], near_cols);
      call = harness_call(w[i].op, rows, near_cols);
      if (!src) {
        /* between two tuned cols whose winners differ, or too far beyond the tuned range: no
         * neighbour's winner may be used here; the next level decides */
        if (refused)
          continue;
        refused = 1;
        st = clnorm_choose(ctx, &call, &v, &why);
        clnorm_variant_format(&v, got_text, sizeof got_text);
        EXPECT(st == CLNORM_OK && why != CLNORM_CHOICE_TUNED && why != CLNORM_CHOICE_NEAREST,
               "%s %zu x %zu: chose %s (%s), but no tuned neighbour's winner may be used here",
               op_name(w[i].op), rows, near_cols, got_text, clnorm_choice_string(why));
        printf("  neighbour %s %zu x %zu: %s (%s, tuned neighbours disagree)\n",
               op_name(w[i].op), rows, near_cols, got_text, clnorm_choice_string(why));
        run_checked(&e, ctx, w[i].op, rows, near_cols, "no nearest");
        refused_checked++;
        continue;
      }
      /* the winner of another cols may not fit this one (a held row too long): then the
       * dispatcher rightly falls back; look for a neighbour where it fits */
      if (!clnorm__variant_call_ok(&src->variant, near_cols, NULL, 0) ||
          clnorm_variant_check(ctx, &call, &src->variant) != CLNORM_OK)
        continue;
      found = 1;
      want = effective(ctx, &call, &src->variant);
      st = clnorm_choose(ctx, &call, &v, &why);
      clnorm_variant_format(&want, text, sizeof text);
      clnorm_variant_format(&v, got_text, sizeof got_text);
      EXPECT(st == CLNORM_OK && why == CLNORM_CHOICE_NEAREST && clnorm__variant_same(&v, &want),
             "%s %zu x %zu: chose %s (%s), want the winner of cols %llu, %s (nearest)",
             op_name(w[i].op), rows, near_cols, got_text, clnorm_choice_string(why),
             (unsigned long long)src->cols, text);
      printf("  neighbour %s %zu x %zu: %s (%s, from cols %llu)\n", op_name(w[i].op), rows,
             near_cols, got_text, clnorm_choice_string(why), (unsigned long long)src->cols);
      run_checked(&e, ctx, w[i].op, rows, near_cols, "nearest");
      nearest_checked++;
    }
    EXPECT(found || refused,
           "%s cols %zu: no neighbouring cols to check the nearest rule on; give the test "
           "another tuned cols",
           op_name(w[i].op), cols);

    /* another row class of the same cols, not tuned: the winner is not used */
    const size_t other_rows = w[i].row_class == 0 ? 300 : 2;
    const unsigned other_class = clnorm__row_class(other_rows);
    int other_tuned = 0;
    for (size_t k = 0; k < n; k++)
      other_tuned |=
          w[k].op == w[i].op && w[k].dtype == w[i].dtype && w[k].row_class == other_class;
    if (!other_tuned) {
      call = harness_call(w[i].op, other_rows, cols);
      st = clnorm_choose(ctx, &call, &v, &why);
      EXPECT(st == CLNORM_OK && why != CLNORM_CHOICE_TUNED && why != CLNORM_CHOICE_NEAREST,
             "%s %zu x %zu (row class %u, none tuned): chose a %s variant", op_name(w[i].op),
             other_rows, cols, other_class, clnorm_choice_string(why));
      printf("  other row class %s %zu x %zu: %s\n", op_name(w[i].op), other_rows, cols,
             clnorm_choice_string(why));
      run_checked(&e, ctx, w[i].op, other_rows, cols, "other row class");
    }
  }
  /* the outermost tuned cols always have a neighbour within 2x beyond the range */
  EXPECT(nearest_checked > 0, "no neighbour ran a tuned neighbour's winner (%zu refused)",
         refused_checked);
  printf("%zu tuned shapes, %zu neighbours checked, %zu where the winners disagree\n", n,
         nearest_checked, refused_checked);
  clnorm_ctx_destroy(ctx);
  free(w);
  close_env(&e);
  return failures ? 1 : 0;
}

/* One of the |-separated words in errmsg. */
static int names_cause(const char *msg, const char *words) {
  char copy[512];
  snprintf(copy, sizeof copy, "%s", words);
  for (char *save = NULL, *word = strtok_r(copy, "|", &save); word;
       word = strtok_r(NULL, "|", &save))
    if (tool_contains_nocase(msg, word))
      return 1;
  return 0;
}

static void check_untuned_calls(env *e, clnorm_ctx *ctx, const char *label) {
  static const size_t shapes[][2] = {{64, 256}, {64, 192}, {5, 768}};
  for (int op = 0; op < 2; op++)
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
      const clnorm_call call = harness_call((clnorm_op)op, shapes[s][0], shapes[s][1]);
      clnorm_choice why = CLNORM_CHOICE_TUNED;
      const clnorm_status st = clnorm_choose(ctx, &call, NULL, &why);
      EXPECT(st == CLNORM_OK && why != CLNORM_CHOICE_TUNED && why != CLNORM_CHOICE_NEAREST,
             "%s: %s %zu x %zu: %s, chose a %s variant from a database that was not loaded", label,
             op_name((clnorm_op)op), call.rows, call.cols, clnorm_status_string(st),
             clnorm_choice_string(why));
      run_checked(e, ctx, (clnorm_op)op, call.rows, call.cols, label);
    }
}

static int cmd_fallback(const char *path, const char *words, const char *good) {
  env e;
  open_env(&e);
  /* clnorm_ctx_create with the bad database as $CLNORM_DB still gives a working context */
  clnorm_ctx *ctx = make_ctx(&e, path);
  EXPECT(clnorm_ctx_tuned_count(ctx) == 0, "a context created on %s has %zu tuned results", path,
         clnorm_ctx_tuned_count(ctx));
  EXPECT(clnorm_ctx_errmsg(ctx)[0] == '\0', "clnorm_ctx_create left an error message: %s",
         clnorm_ctx_errmsg(ctx));
  const clnorm_status st = clnorm_ctx_load_tuning(ctx, path);
  const char *msg = clnorm_ctx_errmsg(ctx);
  printf("clnorm_ctx_load_tuning: %s, %zu tuned results; errmsg: \"%s\"\n",
         clnorm_status_string(st), clnorm_ctx_tuned_count(ctx), msg);
  EXPECT(st == CLNORM_E_DB || (st == CLNORM_OK && clnorm_ctx_tuned_count(ctx) == 0),
         "clnorm_ctx_load_tuning(%s) gave %s with %zu tuned results; want CLNORM_E_DB or none",
         path, clnorm_status_string(st), clnorm_ctx_tuned_count(ctx));
  EXPECT(msg[0] != '\0', "clnorm_ctx_load_tuning(%s) gave %s and no message saying why", path,
         clnorm_status_string(st));
  EXPECT(names_cause(msg, words), "the message does not name the cause (%s): \"%s\"", words, msg);
  check_untuned_calls(&e, ctx, "fallback");
  clnorm_ctx_destroy(ctx);

  if (good) {
    /* a failed load leaves the table that was loaded before */
    ctx = make_ctx(&e, good);
    const size_t before = clnorm_ctx_tuned_count(ctx);
    EXPECT(before > 0, "%s gave no tuned results", good);
    const clnorm_status again = clnorm_ctx_load_tuning(ctx, path);
    if (again == CLNORM_E_DB)
      EXPECT(clnorm_ctx_tuned_count(ctx) == before,
             "a failed clnorm_ctx_load_tuning(%s) changed the table: %zu tuned results, %zu before",
             path, clnorm_ctx_tuned_count(ctx), before);
    printf("after a good database, clnorm_ctx_load_tuning(%s): %s, %zu tuned results (%zu "
           "before)\n",
           path, clnorm_status_string(again), clnorm_ctx_tuned_count(ctx), before);
    run_checked(&e, ctx, CLNORM_OP_LAYERNORM, 64, 256, "after a good database");
    clnorm_ctx_destroy(ctx);
  }
  close_env(&e);
  return failures ? 1 : 0;
}

typedef struct counts {
  unsigned long long results, winners;
} counts;

static int count_row(void *user, const clnorm_device_identity *device, const clnorm_result *result,
                     int winner) {
  counts *c = user;
  c->results++;
  c->winners += winner != 0;
  return 0;
}

static int cmd_count(const char *path) {
  char err[1024];
  clnorm_db *db = NULL;
  if (clnorm__db_open(path, CLNORM_DB_READ, &db, err, sizeof err) != CLNORM_OK) {
    fprintf(stderr, "FAIL: %s\n", err);
    return 1;
  }
  counts c = {0, 0};
  const clnorm_status st = clnorm__db_list(db, NULL, NULL, 0, count_row, &c, err, sizeof err);
  clnorm__db_close(db);
  if (st != CLNORM_OK) {
    fprintf(stderr, "FAIL: listing %s: %s\n", path, err);
    return 1;
  }
  printf("results %llu winners %llu\n", c.results, c.winners);
  return 0;
}

int main(int argc, char **argv) {
  if (argc >= 3 && argc <= 4 && strcmp(argv[1], "tuned") == 0)
    return cmd_tuned(argv[2], argc == 4 ? argv[3] : NULL);
  if (argc >= 4 && argc <= 5 && strcmp(argv[1], "fallback") == 0)
    return cmd_fallback(argv[2], argv[3], argc == 5 ? argv[4] : NULL);
  if (argc == 3 && strcmp(argv[1], "count") == 0)
    return cmd_count(argv[2]);
  fprintf(stderr, "usage: test_dispatch_tuned tuned DB [SHOW_JSON]\n"
                  "       test_dispatch_tuned fallback DB WORD[|WORD...] [GOOD_DB]\n"
                  "       test_dispatch_tuned count DB\n");
  return 2;
}
