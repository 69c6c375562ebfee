/* The fallback levels of the choice (src/choose.c, src/tuned.c; docs/TUNING.md, "Where a choice
 * comes from"). Results are written through db.h, not tuned, so the cases take seconds; each
 * stored variant is a verified-usable one unlike the heuristic's, so a level that is skipped or
 * taken from the wrong table shows.
 *
 *   test_fallback
 *     other driver: the user's database holds this device's results under other driver versions
 *       only: `tuned (other driver)` with the latest measured of them, named so by the info log,
 *       and the call matches the reference; a result of this driver for another shape: `tuned`.
 *     system: the system database ($CLNORM_SYSTEM_DB) is consulted after the user's: a shape in
 *       both runs the user's variant, a shape only in the system one `system`, this device under
 *       another driver in the system one `system (other driver)`; the file is left unchanged.
 *     damaged: a garbage, a truncated and a missing system database: the context is created, a
 *       warning names the damaged file (none for the missing one), calls match the reference.
 *     nearest: a table with winners at 256 (variant A), 1024 and 2048 cols (B) of one row class:
 *       between two tuned cols whose winners agree (1536) their variant, between two that
 *       disagree (512) the heuristic; beyond the tuned range, the end's winner up to a factor 2
 *       away (128, 4096), the heuristic further (64, 8192).
 *     rows: a backward winner (its heuristic does not change with the rows) that won its A/B at
 *       64 rows is used within a factor 2 of 64 rows (32, 128), not at 256 rows of its class (the
 *       next level, a built-in entry that won at 256 rows) nor at 17 (the heuristic); the info
 *       log names each choice. A forward winner of 64 rows at 128 rows: used only where the
 *       heuristic's variant at 128 rows is the one at 64 (a GPU), else the heuristic (a CPU).
 *     against: an entry whose A/B compared it with a variant the heuristic no longer gives at the
 *       call (a built-in entry; the user's winner, its A/B in the database) is not used, the
 *       next level is, and the info log says why once; compared with the heuristic's variant of
 *       the call, each is used.
 *   test_fallback builtin TABLE_H ARCH
 *     TABLE_H: written by `normtune builtin` (tests/tuner/builtin.sh) from results of this
 *     device renamed as another model of architecture ARCH, and marked as its vendor's default.
 *     Matched as this device with architecture ARCH: `builtin (sibling)` with each entry's
 *     variant; as another architecture: `builtin (vendor)`; the entries under this device's own
 *     name: `builtin`, and the heuristic where each entry's A/B heuristic variant is changed. */
#define _POSIX_C_SOURCE 200809L
#include "db.h"
#include "internal.h"
#include "names.h"
#include "op_case.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static harness h;
static char tmp_dir[256];
static clnorm_device_identity self;

#define EXPECT(cond, ...)                                                                          \
  do {                                                                                             \
    if (!(cond))                                                                                   \
      harness_fail(__VA_ARGS__);                                                                   \
  } while (0)

/* The library's log lines at info and warn, collected through the callback. */
static char log_text[65536];
static size_t log_len;

static void collect_line(clnorm_log_level level, const char *line, void *user) {
  (void)user;
  if (level > CLNORM_LOG_INFO)
    return;
  const int n = snprintf(log_text + log_len, sizeof log_text - log_len, "%s: %s\n",
                         level == CLNORM_LOG_WARN ? "warn" : "info", line);
  if (n > 0 && log_len + (size_t)n < sizeof log_text)
    log_len += (size_t)n;
}

static void log_clear(void) {
  log_len = 0;
  log_text[0] = '\0';
}

#define ROWS 64
#define COLS 256
/* The end of an entry whose A/B results are not known (its `against`) */
#define NO_AB {0, 0, 0, 0, CLNORM_REDUCE_LOCAL, CLNORM_STATS_WELFORD}, 0

/* Variants of op that run ROWS x COLS here, unlike the heuristic's and each other: out[0..n). */
static void pick_variants(clnorm_op op, clnorm_variant *out, size_t n) {
  const clnorm_call call = harness_call(op, ROWS, COLS);
  clnorm_variant heuristic, all[1024];
  if (clnorm_heuristic(h.ctx, &call, &heuristic) != CLNORM_OK) {
    harness_fail("clnorm_heuristic: %s", clnorm_ctx_errmsg(h.ctx));
    exit(1);
  }
  const size_t count = clnorm_variant_list(h.ctx, op, CLNORM_F32, all, 1024);
  size_t got = 0;
  for (size_t i = 0; i < count && got < n; i++)
    if (!clnorm__variant_same(&all[i], &heuristic) && COLS % all[i].vec == 0 &&
        clnorm_variant_check(h.ctx, &call, &all[i]) == CLNORM_OK)
      out[got++] = all[i];
  if (got < n) {
    harness_fail("only %zu variants of %s besides the heuristic's run here", got,
                 clnorm_op_name(op));
    exit(1);
  }
}

/* Stores `v` as the winner of op at ROWS x COLS for `device`, measured at `when` (unix time). */
static void put(const char *path, const clnorm_device_identity *device, clnorm_op op,
                const clnorm_variant *v, int64_t when) {
  clnorm_db *db = NULL;
  char err[1024];
  const clnorm_kernel_hashes build = clnorm__kernel_hashes();
  clnorm_result r;
  memset(&r, 0, sizeof r);
  r.kernel_hash = clnorm__kernel_hash_of(&build, op);
  r.op = op;
  r.dtype = CLNORM_F32;
  r.cols = COLS;
  r.rows = ROWS;
  r.row_class = clnorm__row_class(ROWS);
  r.variant = *v;
  r.outcome = CLNORM_OUTCOME_OK;
  r.median_s = r.min_s = 1e-5;
  r.gbps = 1.0;
  r.max_err = 1e-7;
  r.measured_at = when;
  if (clnorm__db_open(path, CLNORM_DB_WRITE, &db, err, sizeof err) != CLNORM_OK ||
      clnorm__db_put(db, device, &r, err, sizeof err) != CLNORM_OK) {
    harness_fail("storing into %s: %s", path, err);
    exit(1);
  }
  clnorm__db_close(db);
}

/* A context created while $CLNORM_DB and $CLNORM_SYSTEM_DB name these files ("" for none). */
static clnorm_ctx *make_ctx(const char *user_db, const char *system_db) {
  return harness_ctx_with_db(h.context, h.device, user_db, system_db);
}

/* The dispatcher's choice for op at rows x cols must be `why` with variant `want` (NULL: any). */
static void expect_choice(const char *label, clnorm_ctx *ctx, clnorm_op op, size_t rows,
                          size_t cols, clnorm_choice why, const clnorm_variant *want) {
  const clnorm_call call = harness_call(op, rows, cols);
  clnorm_variant got;
  clnorm_choice got_why = CLNORM_CHOICE_FORCED;
  const clnorm_status st = clnorm_choose(ctx, &call, &got, &got_why);
  char got_text[128], want_text[128] = "any";
  clnorm_variant_format(&got, got_text, sizeof got_text);
  if (want)
    clnorm_variant_format(want, want_text, sizeof want_text);
  EXPECT(st == CLNORM_OK && got_why == why && (!want || clnorm__variant_same(&got, want)),
         "%s: %s %zux%zu chose %s (%s), want %s (%s)%s%s", label, clnorm_op_name(op), rows, cols,
         got_text, clnorm_choice_string(got_why), want_text, clnorm_choice_string(why),
         st == CLNORM_OK ? "" : ": ", st == CLNORM_OK ? "" : clnorm_ctx_errmsg(ctx));
}

/* Runs op at ROWS x COLS through the dispatcher on ctx, checked against the reference. */
static void run_checked(const char *label, clnorm_ctx *ctx, clnorm_op op) {
  oc_case c;
  oc_default(&c, op, CLNORM_F32, ROWS, COLS);
  char msg[1024] = "";
  clnorm_ctx *own = h.ctx;
  h.ctx = ctx;
  const oc_result r = oc_run(&h, &c, NULL, msg, sizeof msg);
  h.ctx = own;
  EXPECT(r == OC_PASS, "%s: the call failed its check: %s", label, msg);
}

static void other_driver_case(const clnorm_variant *ln, const clnorm_variant *rms) {
  char user[300];
  snprintf(user, sizeof user, "%s/other_driver.db", tmp_dir);
  clnorm_device_identity old = self, older = self;
  snprintf(old.driver_version, sizeof old.driver_version, "0.0-clnorm-test-old-driver");
  snprintf(older.driver_version, sizeof older.driver_version, "0.0-clnorm-test-older-driver");
  const int64_t now = (int64_t)time(NULL);
  put(user, &old, CLNORM_OP_LAYERNORM, &ln[0], now - 100);
  put(user, &older, CLNORM_OP_LAYERNORM, &ln[1], now - 1000); /* an earlier driver: not used */
  put(user, &old, CLNORM_OP_RMSNORM, &rms[1], now - 100);
  put(user, &self, CLNORM_OP_RMSNORM, &rms[0], now - 200); /* this driver's beats the newer */
  log_clear();
  clnorm_ctx *ctx = make_ctx(user, "");
  EXPECT(clnorm_ctx_tuned_count(ctx) == 1, "other driver: %zu results of this driver, want 1",
         clnorm_ctx_tuned_count(ctx));
  expect_choice("other driver", ctx, CLNORM_OP_LAYERNORM, ROWS, COLS,
                CLNORM_CHOICE_TUNED_OTHER_DRIVER, &ln[0]);
  expect_choice("other driver", ctx, CLNORM_OP_RMSNORM, ROWS, COLS, CLNORM_CHOICE_TUNED, &rms[0]);
  /* another row class: no table has it */
  expect_choice("other driver", ctx, CLNORM_OP_LAYERNORM, 8, COLS, CLNORM_CHOICE_HEURISTIC, NULL);
  run_checked("other driver", ctx, CLNORM_OP_LAYERNORM);
  char text[128], line[512];
  clnorm_variant_format(&ln[0], text, sizeof text);
  snprintf(line, sizeof line, "info: layernorm f32 rows=%d cols=%d on %s: %s (tuned (other driver))",
           ROWS, COLS, h.ctx->info.name, text);
  EXPECT(strstr(log_text, line), "other driver: the log lacks \"%s\"; it was:\n%s", line,
         log_text);
  EXPECT(strstr(log_text, "used for 2 shapes only where this driver has none"),
         "other driver: the load's note does not say the other driver's results are used:\n%s",
         log_text);
  clnorm_ctx_destroy(ctx);
}

static void file_state(const char *path, struct stat *st) {
  if (stat(path, st) != 0) {
    harness_fail("stat %s failed", path);
    memset(st, 0, sizeof *st);
  }
}

static void system_case(const clnorm_variant *ln, const clnorm_variant *rms) {
  char user[300], sys[300], other_user[300], shm[320];
  snprintf(user, sizeof user, "%s/user.db", tmp_dir);
  snprintf(sys, sizeof sys, "%s/system.db", tmp_dir);
  snprintf(other_user, sizeof other_user, "%s/other_driver.db", tmp_dir);
  const int64_t now = (int64_t)time(NULL);
  put(user, &self, CLNORM_OP_RMSNORM, &rms[0], now);
  put(sys, &self, CLNORM_OP_RMSNORM, &rms[1], now); /* the user's wins */
  put(sys, &self, CLNORM_OP_LAYERNORM, &ln[1], now);
  struct stat before, after;
  file_state(sys, &before);
  clnorm_ctx *ctx = make_ctx(user, sys);
  expect_choice("system", ctx, CLNORM_OP_RMSNORM, ROWS, COLS, CLNORM_CHOICE_TUNED, &rms[0]);
  expect_choice("system", ctx, CLNORM_OP_LAYERNORM, ROWS, COLS, CLNORM_CHOICE_SYSTEM, &ln[1]);
  /* the nearest cols of the same divisibility in the system table */
  expect_choice("system", ctx, CLNORM_OP_LAYERNORM, ROWS, 2 * COLS, CLNORM_CHOICE_SYSTEM, &ln[1]);
  run_checked("system", ctx, CLNORM_OP_LAYERNORM);
  clnorm_ctx_destroy(ctx);
  /* the user's other driver comes before the system database's */
  ctx = make_ctx(other_user, sys);
  expect_choice("system after other driver", ctx, CLNORM_OP_LAYERNORM, ROWS, COLS,
                CLNORM_CHOICE_TUNED_OTHER_DRIVER, &ln[0]);
  clnorm_ctx_destroy(ctx);
  /* the system database's results of another driver */
  char sys_old[300];
  snprintf(sys_old, sizeof sys_old, "%s/system_old.db", tmp_dir);
  clnorm_device_identity old = self;
  snprintf(old.driver_version, sizeof old.driver_version, "0.0-clnorm-test-old-driver");
  put(sys_old, &old, CLNORM_OP_LAYERNORM, &ln[2], now);
  ctx = make_ctx(user, sys_old);
  expect_choice("system, other driver", ctx, CLNORM_OP_LAYERNORM, ROWS, COLS,
                CLNORM_CHOICE_SYSTEM_OTHER_DRIVER, &ln[2]);
  clnorm_ctx_destroy(ctx);
  file_state(sys, &after);
  EXPECT(before.st_size == after.st_size && before.st_mtime == after.st_mtime,
         "system: reading changed the system database");
  snprintf(shm, sizeof shm, "%s-shm", sys);
  EXPECT(access(shm, F_OK) != 0, "system: reading left %s behind", shm);
}

static void damaged_case(void) {
  char garbage[300], truncated[300], missing[300], user[300];
  snprintf(garbage, sizeof garbage, "%s/garbage.db", tmp_dir);
  snprintf(truncated, sizeof truncated, "%s/truncated.db", tmp_dir);
  snprintf(missing, sizeof missing, "%s/no-such-dir/tuning.db", tmp_dir);
  snprintf(user, sizeof user, "%s/no-user.db", tmp_dir);
  FILE *f = fopen(garbage, "wb");
  for (int i = 0; f && i < 512; i++)
    fputs("not a tuning database ", f);
  if (f)
    fclose(f);
  /* the first 2 KiB of a real system database */
  char sys[300];
  snprintf(sys, sizeof sys, "%s/system.db", tmp_dir);
  FILE *in = fopen(sys, "rb"), *out = fopen(truncated, "wb");
  char page[2048];
  const size_t n = in ? fread(page, 1, sizeof page, in) : 0;
  if (out)
    fwrite(page, 1, n, out);
  if (in)
    fclose(in);
  if (out)
    fclose(out);
  EXPECT(n == sizeof page, "damaged: no system database to truncate");
  const char *const paths[] = {garbage, truncated, missing};
  for (int i = 0; i < 3; i++) {
    log_clear();
    clnorm_ctx *ctx = make_ctx(user, paths[i]);
    char warning[400];
    snprintf(warning, sizeof warning, "warn: system tuning database '%s' not used: ", paths[i]);
    if (i < 2)
      EXPECT(strstr(log_text, warning), "damaged: no warning \"%s...\"; the log:\n%s", warning,
             log_text);
    else
      EXPECT(!strstr(log_text, "warn: "), "damaged: a missing system database warns:\n%s",
             log_text);
    expect_choice("damaged", ctx, CLNORM_OP_LAYERNORM, ROWS, COLS, CLNORM_CHOICE_HEURISTIC, NULL);
    run_checked(paths[i], ctx, CLNORM_OP_LAYERNORM);
    clnorm_ctx_destroy(ctx);
  }
}

/* A C string literal of the generated header at *p (escapes: \" \\ \ooo) into out. */
static int parse_string(const char **p, char *out, size_t size) {
  const char *s = *p;
  while (*s == ' ' || *s == ',')
    s++;
  if (*s++ != '"')
    return 0;
  size_t n = 0;
  while (*s && *s != '"' && n + 1 < size) {
    if (*s == '\\' && s[1] >= '0' && s[1] <= '7') {
      out[n++] = (char)strtol((char[]){s[1], s[2], s[3], 0}, NULL, 8);
      s += 4;
    } else if (*s == '\\') {
      out[n++] = s[1];
      s += 2;
    } else {
      out[n++] = *s++;
    }
  }
  out[n] = '\0';
  if (*s != '"')
    return 0;
  *p = s + 1;
  return 1;
}

/* An enumerator or a number of the generated header at *p. */
static int parse_value(const char **p, unsigned long *out) {
  const char *s = *p;
  while (*s == ' ' || *s == ',')
    s++;
#define ENUM_VALUE(name, value, text)                                                              \
  if (strncmp(s, #name, strlen(#name)) == 0 && !(s[strlen(#name)] == '_' ||                       \
                                                 (s[strlen(#name)] >= 'A' && s[strlen(#name)] <= 'Z'))) { \
    *out = value;                                                                                  \
    *p = s + strlen(#name);                                                                        \
    return 1;                                                                                      \
  }
  CLNORM_OP_MAP(ENUM_VALUE)
  CLNORM_DTYPE_MAP(ENUM_VALUE)
  CLNORM_REDUCE_MAP(ENUM_VALUE)
  CLNORM_STATS_MAP(ENUM_VALUE)
  char *end;
  *out = strtoul(s, &end, 0);
  if (end == s)
    return 0;
  *p = end + (*end == 'u');
  return 1;
}

typedef struct parsed {
  clnorm_builtin b;
  char device[256], family[32], arch[32];
} parsed;

/* The entries of a generated builtin_table.h (at most cap). */
static size_t parse_table(const char *path, parsed *out, size_t cap) {
  FILE *f = fopen(path, "r");
  if (!f) {
    harness_fail("cannot read %s", path);
    exit(1);
  }
  char line[2048];
  size_t n = 0;
  while (n < cap && fgets(line, sizeof line, f)) {
    if (strncmp(line, "CLNORM_BUILTIN(", 15) != 0)
      continue;
    const char *p = line + 15;
    parsed *e = &out[n];
    unsigned long v[19];
    int ok = parse_value(&p, &v[0]) && parse_string(&p, e->device, sizeof e->device) &&
             parse_string(&p, e->family, sizeof e->family) &&
             parse_string(&p, e->arch, sizeof e->arch);
    for (int i = 1; ok && i < 19; i++)
      ok = parse_value(&p, &v[i]);
    EXPECT(ok, "%s: cannot parse the line %s", path, line);
    if (!ok)
      continue;
    e->b = (clnorm_builtin){(cl_uint)v[0],
                            e->device,
                            e->family,
                            e->arch,
                            {(clnorm_op)v[1],
                             (clnorm_dtype)v[2],
                             v[3],
                             (unsigned)v[4],
                             {(unsigned)v[5], (unsigned)v[6], (unsigned)v[7], (unsigned)v[8],
                              (clnorm_reduce)v[9], (clnorm_stats)v[10]},
                             v[11],
                             v[12],
                             {(unsigned)v[13], (unsigned)v[14], (unsigned)v[15], (unsigned)v[16],
                              (clnorm_reduce)v[17], (clnorm_stats)v[18]},
                             v[13] != 0}};
    n++;
  }
  fclose(f);
  return n;
}

/* Variants of op with unheld rows (they run any cols) that pass the check at every cols of
 * `cols` here, unlike each other: out[0..n). */
static void pick_unheld(clnorm_op op, const size_t *cols, size_t ncols, clnorm_variant *out,
                        size_t n) {
  clnorm_variant all[1024];
  const size_t count = clnorm_variant_list(h.ctx, op, CLNORM_F32, all, 1024);
  size_t got = 0;
  for (size_t i = 0; i < count && got < n; i++) {
    int ok = all[i].hold == 0;
    for (size_t c = 0; c < ncols && ok; c++) {
      const clnorm_call call = harness_call(op, ROWS, cols[c]);
      ok = cols[c] % all[i].vec == 0 && clnorm_variant_check(h.ctx, &call, &all[i]) == CLNORM_OK;
    }
    if (ok)
      out[got++] = all[i];
  }
  if (got < n) {
    harness_fail("only %zu unheld variants of %s run every cols here", got, clnorm_op_name(op));
    exit(1);
  }
}

static void nearest_case(void) {
  static const size_t cols[] = {64, 128, 256, 512, 1024, 1536, 2048, 4096, 8192};
  clnorm_variant v[2];
  pick_unheld(CLNORM_OP_LAYERNORM, cols, sizeof cols / sizeof cols[0], v, 2);
  const unsigned row_class = clnorm__row_class(ROWS);
  const clnorm_builtin table[] = {
      {self.vendor_id,
       h.ctx->info.name,
       h.ctx->info.family,
       "",
       {CLNORM_OP_LAYERNORM, CLNORM_F32, 256, row_class, v[0], ROWS, ROWS, NO_AB}},
      {self.vendor_id,
       h.ctx->info.name,
       h.ctx->info.family,
       "",
       {CLNORM_OP_LAYERNORM, CLNORM_F32, 1024, row_class, v[1], ROWS, ROWS, NO_AB}},
      {self.vendor_id,
       h.ctx->info.name,
       h.ctx->info.family,
       "",
       {CLNORM_OP_LAYERNORM, CLNORM_F32, 2048, row_class, v[1], ROWS, ROWS, NO_AB}}};
  char no_user[300];
  snprintf(no_user, sizeof no_user, "%s/no-user.db", tmp_dir);
  clnorm_ctx *ctx = make_ctx(no_user, "");
  clnorm__builtin_use(ctx, table, sizeof table / sizeof table[0], NULL);
  const clnorm_op op = CLNORM_OP_LAYERNORM;
  expect_choice("nearest, tuned", ctx, op, ROWS, 256, CLNORM_CHOICE_BUILTIN, &v[0]);
  expect_choice("nearest, neighbours agree", ctx, op, ROWS, 1536, CLNORM_CHOICE_BUILTIN, &v[1]);
  expect_choice("nearest, neighbours disagree", ctx, op, ROWS, 512, CLNORM_CHOICE_HEURISTIC, NULL);
  expect_choice("nearest, below the range", ctx, op, ROWS, 128, CLNORM_CHOICE_BUILTIN, &v[0]);
  expect_choice("nearest, far below", ctx, op, ROWS, 64, CLNORM_CHOICE_HEURISTIC, NULL);
  expect_choice("nearest, above the range", ctx, op, ROWS, 4096, CLNORM_CHOICE_BUILTIN, &v[1]);
  expect_choice("nearest, far above", ctx, op, ROWS, 8192, CLNORM_CHOICE_HEURISTIC, NULL);
  /* CLNORM_NO_BUILTIN: the same table is not used; "0" is not "off" */
  setenv("CLNORM_NO_BUILTIN", "1", 1);
  clnorm__builtin_use(ctx, table, sizeof table / sizeof table[0], NULL);
  expect_choice("CLNORM_NO_BUILTIN=1, tuned", ctx, op, ROWS, 256, CLNORM_CHOICE_HEURISTIC, NULL);
  expect_choice("CLNORM_NO_BUILTIN=1, nearest", ctx, op, ROWS, 1536, CLNORM_CHOICE_HEURISTIC, NULL);
  setenv("CLNORM_NO_BUILTIN", "0", 1);
  clnorm__builtin_use(ctx, table, sizeof table / sizeof table[0], NULL);
  expect_choice("CLNORM_NO_BUILTIN=0, tuned", ctx, op, ROWS, 256, CLNORM_CHOICE_BUILTIN, &v[0]);
  unsetenv("CLNORM_NO_BUILTIN");
  clnorm_ctx_destroy(ctx);
}

/* Stores an A/B of op at `rows` x COLS for `device`: `candidate` won against the heuristic's
 * variant, `heuristic` (NULL: the one the heuristic gives there now). */
static void put_ab_won(const char *path, clnorm_op op, const clnorm_variant *candidate, size_t rows,
                       const clnorm_variant *heuristic) {
  const clnorm_call call = harness_call(op, rows, COLS);
  const clnorm_kernel_hashes build = clnorm__kernel_hashes();
  clnorm_ab ab;
  memset(&ab, 0, sizeof ab);
  ab.kernel_hash = clnorm__kernel_hash_of(&build, op);
  ab.op = op;
  ab.dtype = CLNORM_F32;
  ab.cols = COLS;
  ab.row_class = clnorm__row_class(rows);
  ab.rows = rows;
  ab.candidate = *candidate;
  ab.candidate_s = 1e-5;
  ab.heuristic_s = 1.2e-5;
  ab.noise = 0.01;
  ab.rounds = 6;
  ab.kept_heuristic = 0;
  clnorm_db *db = NULL;
  char err[1024];
  if (heuristic)
    ab.heuristic = *heuristic;
  if ((!heuristic && clnorm_heuristic(h.ctx, &call, &ab.heuristic) != CLNORM_OK) ||
      clnorm__db_open(path, CLNORM_DB_WRITE, &db, err, sizeof err) != CLNORM_OK ||
      clnorm__db_put_ab(db, &self, &ab, err, sizeof err) != CLNORM_OK) {
    harness_fail("storing an A/B into %s: %s", path, err);
    exit(1);
  }
  clnorm__db_close(db);
}

/* A context whose user database (tmp_dir/name; no system database) holds `winner` as op's winner
 * of ROWS x COLS and its A/B won at ROWS rows: the start of each case of the size rule. */
static clnorm_ctx *rows_ctx(const char *name, clnorm_op op, const clnorm_variant *winner) {
  char user[300];
  snprintf(user, sizeof user, "%s/%s", tmp_dir, name);
  put(user, &self, op, winner, 1000);
  put_ab_won(user, op, winner, ROWS, NULL);
  return make_ctx(user, "");
}

/* rows: the user's winner of ROWS x COLS won its A/B at ROWS rows (64: row class 17-256); a
 * built-in entry of the same shape (another variant) did not lose at 256 rows. The user's winner
 * stands within a factor 2 of 64 rows, the built-in one within 2x of 256; at 256 rows the call
 * falls to the built-in entry, at 17 rows to the heuristic, and the info log names each. */
static void rows_case(const clnorm_variant *ln) {
  const clnorm_op op = CLNORM_OP_LAYERNORM_BWD;
  clnorm_ctx *ctx = rows_ctx("rows.db", op, &ln[0]);
  const clnorm_builtin table[] = {
      {self.vendor_id,
       h.ctx->info.name,
       h.ctx->info.family,
       "",
       {op, CLNORM_F32, COLS, clnorm__row_class(ROWS), ln[1], 256, 256, NO_AB}}};
  clnorm__builtin_use(ctx, table, 1, NULL);
  expect_choice("rows, where it won", ctx, op, ROWS, COLS, CLNORM_CHOICE_TUNED, &ln[0]);
  expect_choice("rows, 2x above", ctx, op, 2 * ROWS, COLS, CLNORM_CHOICE_TUNED, &ln[0]);
  expect_choice("rows, 2x below", ctx, op, ROWS / 2, COLS, CLNORM_CHOICE_TUNED, &ln[0]);
  expect_choice("rows, 4x above: the next level", ctx, op, 4 * ROWS, COLS,
                CLNORM_CHOICE_BUILTIN, &ln[1]);
  expect_choice("rows, 3.8x below: no level", ctx, op, 17, COLS, CLNORM_CHOICE_HEURISTIC, NULL);
  log_clear();
  const size_t logged_rows[] = {ROWS, 4 * ROWS, 17};
  const char *const logged_why[] = {"tuned", "builtin", "heuristic"};
  for (int i = 0; i < 3; i++) {
    oc_case c;
    oc_default(&c, op, CLNORM_F32, logged_rows[i], COLS);
    char msg[1024] = "";
    clnorm_ctx *own = h.ctx;
    h.ctx = ctx;
    const oc_result r = oc_run(&h, &c, NULL, msg, sizeof msg);
    h.ctx = own;
    EXPECT(r == OC_PASS, "rows: the call at %zu rows failed its check: %s", logged_rows[i], msg);
    char line[512];
    snprintf(line, sizeof line, "info: layernorm_bwd f32 rows=%zu cols=%d on %s: ", logged_rows[i],
             COLS, h.ctx->info.name);
    const char *at = strstr(log_text, line);
    char why[64];
    snprintf(why, sizeof why, "(%s)\n", logged_why[i]);
    EXPECT(at && strstr(at, why) && strstr(at, why) < strchr(at, '\n') + 1,
           "rows: the log does not name the choice at %zu rows \"%s\"; it was:\n%s",
           logged_rows[i], logged_why[i], log_text);
  }
  clnorm_ctx_destroy(ctx);
}

/* rows, forward: the forward's winner of ROWS rows (won there, no A/B elsewhere) at 2 * ROWS is
 * used only where the heuristic's variant there is the one at ROWS (a GPU); on a CPU the
 * heuristic's rows per group double with the rows: nothing compared the winner with that
 * variant, and the heuristic runs. */
static void rows_heuristic_case(const clnorm_variant *ln) {
  const clnorm_op op = CLNORM_OP_LAYERNORM;
  clnorm_ctx *ctx = rows_ctx("rows_fwd.db", op, &ln[0]);
  const clnorm_call here = harness_call(op, ROWS, COLS), twice = harness_call(op, 2 * ROWS, COLS);
  clnorm_variant h_here, h_twice;
  clnorm__heuristic(&ctx->info, &here, &h_here);
  clnorm__heuristic(&ctx->info, &twice, &h_twice);
  const int same = clnorm__variant_same(&h_here, &h_twice);
  printf("  rows, forward: the heuristic's variant at %d and %d rows is %s\n", ROWS, 2 * ROWS,
         same ? "the same" : "not the same");
  expect_choice("rows, forward, where it won", ctx, op, ROWS, COLS, CLNORM_CHOICE_TUNED, &ln[0]);
  expect_choice("rows, forward, 2x above", ctx, op, 2 * ROWS, COLS,
                same ? CLNORM_CHOICE_TUNED : CLNORM_CHOICE_HEURISTIC, same ? &ln[0] : NULL);
  clnorm_ctx_destroy(ctx);
}

/* The number of times `what` occurs in the collected log. */
static int log_count(const char *what) {
  int n = 0;
  for (const char *at = strstr(log_text, what); at; at = strstr(at + 1, what))
    n++;
  return n;
}

/* against: an entry is used only where the heuristic's variant at the call is the one its A/B
 * compared it with (`against`), else the next level; as after a change of the heuristic, the
 * entries here were compared with ln[2], which the heuristic does not give here (pick_variants).
 * A built-in entry compared with ln[2]: the heuristic, said once by the info log; with the
 * heuristic's variant here: used. The user's winner whose A/B (in the database) was against
 * ln[2]: the built-in entry, the next level; its A/B against the heuristic's variant here: used. */
static void against_case(const clnorm_variant *ln) {
  const clnorm_op op = CLNORM_OP_LAYERNORM;
  const clnorm_call call = harness_call(op, ROWS, COLS);
  clnorm_variant now;
  if (clnorm_heuristic(h.ctx, &call, &now) != CLNORM_OK) {
    harness_fail("clnorm_heuristic: %s", clnorm_ctx_errmsg(h.ctx));
    return;
  }
  clnorm_builtin table[] = {
      {self.vendor_id,
       h.ctx->info.name,
       h.ctx->info.family,
       "",
       {op, CLNORM_F32, COLS, clnorm__row_class(ROWS), ln[0], ROWS, ROWS, ln[2], 1}}};
  char user[300];
  snprintf(user, sizeof user, "%s/no-user.db", tmp_dir);
  clnorm_ctx *ctx = make_ctx(user, "");
  clnorm__builtin_use(ctx, table, 1, NULL);
  log_clear();
  expect_choice("against another heuristic's variant", ctx, op, ROWS, COLS, CLNORM_CHOICE_HEURISTIC,
                NULL);
  expect_choice("against another heuristic's variant, again", ctx, op, ROWS, COLS,
                CLNORM_CHOICE_HEURISTIC, NULL);
  EXPECT(log_count("its A/B compared it with the heuristic's") == 1 &&
             log_count("(the heuristic changed since it was tuned)") == 1,
         "against: the log does not say once why the built-in entry is not used:\n%s", log_text);
  table[0].entry.against = now;
  clnorm__builtin_use(ctx, table, 1, NULL);
  expect_choice("against the heuristic's variant", ctx, op, ROWS, COLS, CLNORM_CHOICE_BUILTIN,
                &ln[0]);
  clnorm_ctx_destroy(ctx);

  snprintf(user, sizeof user, "%s/against.db", tmp_dir);
  put(user, &self, op, &ln[1], 1000);
  put_ab_won(user, op, &ln[1], ROWS, &ln[2]);
  ctx = make_ctx(user, "");
  clnorm__builtin_use(ctx, table, 1, NULL);
  expect_choice("against, the database's A/B with another heuristic's variant", ctx, op, ROWS, COLS,
                CLNORM_CHOICE_BUILTIN, &ln[0]);
  clnorm_ctx_destroy(ctx);
  put_ab_won(user, op, &ln[1], ROWS, NULL);
  ctx = make_ctx(user, "");
  clnorm__builtin_use(ctx, table, 1, NULL);
  expect_choice("against, the database's A/B with the heuristic's variant", ctx, op, ROWS, COLS,
                CLNORM_CHOICE_TUNED, &ln[1]);
  clnorm_ctx_destroy(ctx);
}

/* Each entry whose device is `device` ("" the vendor's defaults) must be chosen as `why`: its
 * variant, or where `why` is the heuristic, the heuristic's (which is the entry's only where its
 * A/B kept the heuristic: a tune on PoCL stores either). */
static size_t expect_entries(const char *label, clnorm_ctx *ctx, const parsed *p, size_t n,
                             const char *device, clnorm_choice why) {
  size_t checked = 0;
  for (size_t i = 0; i < n; i++) {
    if (strcmp(p[i].device, device) != 0)
      continue;
    const clnorm_tuned *t = &p[i].b.entry;
    expect_choice(label, ctx, t->op, t->rows_lo, t->cols, why,
                  why == CLNORM_CHOICE_HEURISTIC ? NULL : &t->variant);
    checked++;
  }
  return checked;
}

static int builtin_case(const char *table_path, const char *arch) {
  static parsed p[4096];
  const size_t n = parse_table(table_path, p, 4096);
  static clnorm_builtin table[4096];
  size_t named = 0, defaults = 0;
  const char *sibling = NULL;
  for (size_t i = 0; i < n; i++) {
    table[i] = p[i].b;
    if (p[i].device[0]) {
      sibling = p[i].device;
      named++;
    } else {
      defaults++;
    }
  }
  printf("%s: %zu entries (%zu of \"%s\", %zu vendor defaults)\n", table_path, n, named,
         sibling ? sibling : "", defaults);
  EXPECT(named > 0 && defaults == named && strcmp(sibling, h.ctx->info.name) != 0,
         "%s: want entries of a sibling and as many vendor defaults", table_path);
  for (size_t i = 0; i < n; i++)
    EXPECT(p[i].b.vendor_id == self.vendor_id && strcmp(p[i].family, h.ctx->info.family) == 0 &&
               (!p[i].device[0] || strcmp(p[i].arch, arch) == 0),
           "%s: entry %zu is of vendor 0x%x family \"%s\" arch \"%s\", this device 0x%x \"%s\"",
           table_path, i, p[i].b.vendor_id, p[i].family, p[i].arch, self.vendor_id,
           h.ctx->info.family);
  char no_user[300];
  snprintf(no_user, sizeof no_user, "%s/no-user.db", tmp_dir);
  clnorm_ctx *ctx = make_ctx(no_user, "");
  clnorm__builtin_use(ctx, table, n, arch);
  EXPECT(expect_entries("sibling", ctx, p, n, sibling, CLNORM_CHOICE_BUILTIN_SIBLING) == named,
         "sibling: not every entry checked");
  clnorm__builtin_use(ctx, table, n, "clnorm-test-other-arch");
  expect_entries("vendor", ctx, p, n, sibling, CLNORM_CHOICE_BUILTIN_VENDOR);
  /* the same entries under this device's own name */
  for (size_t i = 0; i < n; i++)
    table[i].device = p[i].device[0] ? h.ctx->info.name : "";
  clnorm__builtin_use(ctx, table, n, "clnorm-test-other-arch");
  expect_entries("own", ctx, p, n, sibling, CLNORM_CHOICE_BUILTIN);
  /* each entry carries its A/B's heuristic variant; compared with another one (as after a change
   * of the heuristic), none is used */
  for (size_t i = 0; i < n; i++) {
    clnorm_tuned *t = &table[i].entry;
    EXPECT(t->against_known, "%s: entry %zu has no heuristic variant of its A/B", table_path, i);
    t->against.stats =
        t->against.stats == CLNORM_STATS_WELFORD ? CLNORM_STATS_TWOPASS : CLNORM_STATS_WELFORD;
  }
  clnorm__builtin_use(ctx, table, n, "clnorm-test-other-arch");
  for (size_t i = 0; i < n; i++)
    if (p[i].device[0])
      expect_choice("own, against another heuristic's variant", ctx, table[i].entry.op,
                    table[i].entry.rows_lo, table[i].entry.cols, CLNORM_CHOICE_HEURISTIC, NULL);
  /* and none of another vendor */
  for (size_t i = 0; i < n; i++)
    table[i].vendor_id = self.vendor_id + 1;
  clnorm__builtin_use(ctx, table, n, arch);
  expect_entries("other vendor", ctx, p, n, sibling, CLNORM_CHOICE_HEURISTIC);
  clnorm_ctx_destroy(ctx);
  return n > 0;
}

int main(int argc, char **argv) {
  harness_open(&h, "test_fallback");
  char err[1024];
  if (clnorm__device_identity(h.device, &self, err, sizeof err) != CLNORM_OK) {
    harness_fail("reading the device identity: %s", err);
    return 1;
  }
  snprintf(tmp_dir, sizeof tmp_dir, "%s/clnorm-fallback.XXXXXX",
           getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  if (!mkdtemp(tmp_dir)) {
    harness_fail("mkdtemp failed");
    return 1;
  }
  clnorm_set_log_callback(collect_line, NULL);
  clnorm_set_log_level(CLNORM_LOG_INFO);
  if (argc == 4 && strcmp(argv[1], "builtin") == 0) {
    builtin_case(argv[2], argv[3]);
  } else if (argc == 1) {
    clnorm_variant ln[3], rms[2];
    pick_variants(CLNORM_OP_LAYERNORM, ln, 3);
    pick_variants(CLNORM_OP_RMSNORM, rms, 2);
    other_driver_case(ln, rms);
    system_case(ln, rms);
    damaged_case();
    nearest_case();
    clnorm_variant bwd[2];
    pick_variants(CLNORM_OP_LAYERNORM_BWD, bwd, 2);
    rows_case(bwd);
    rows_heuristic_case(ln);
    against_case(ln);
  } else {
    fprintf(stderr, "usage: test_fallback [builtin TABLE_H ARCH]\n");
    return 2;
  }
  clnorm_set_log_callback(NULL, NULL);
  char cmd[400];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp_dir);
  if (harness_failures == 0 && system(cmd) != 0)
    fprintf(stderr, "could not remove %s\n", tmp_dir);
  harness_close(&h);
  printf("test_fallback: %s\n", harness_failures ? "FAIL" : "pass");
  return harness_failures ? 1 : 0;
}
