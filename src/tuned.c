/* The tables the choice reads (choose.c): the user's tuning database (this device's winners under
 * this driver, and under other driver versions), the read-only system database (the same two),
 * and the built-in table (this model, another model of its architecture, the vendor's defaults).
 * All are read once per context and kept in memory: no SQL on the hot path. */
#include "db.h"
#include "internal.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Winners we ship: src/builtin_table.h, written by `normtune builtin` (docs/tuned/README.md). */
static const clnorm_builtin builtin_table[] = {
/* a_wg ... a_stats: the heuristic's variant the entry's A/B compared it with; a_wg 0 where it had
 * none (against_known 0: choose.c then falls back to same_heuristic) */
#define CLNORM_BUILTIN(vendor_id, device, family, arch, op, dtype, cols, row_class, wg, tpr, vec,  \
                       hold, reduce, stats, rows_lo, rows_hi, a_wg, a_tpr, a_vec, a_hold,          \
                       a_reduce, a_stats)                                                          \
  {vendor_id,                                                                                      \
   device,                                                                                         \
   family,                                                                                         \
   arch,                                                                                           \
   {op,                                                                                            \
    dtype,                                                                                         \
    cols,                                                                                          \
    row_class,                                                                                     \
    {wg, tpr, vec, hold, reduce, stats},                                                           \
    rows_lo,                                                                                       \
    rows_hi,                                                                                       \
    {a_wg, a_tpr, a_vec, a_hold, a_reduce, a_stats},                                               \
    a_wg != 0}},
#include "builtin_table.h"
#undef CLNORM_BUILTIN
    {.device = NULL} /* end */
};

static int tuned_cmp(const void *pa, const void *pb) {
  const clnorm_tuned *a = pa, *b = pb;
  const uint64_t ka[] = {a->op, a->dtype, a->row_class, a->cols};
  const uint64_t kb[] = {b->op, b->dtype, b->row_class, b->cols};
  return clnorm__keys_cmp(ka, kb, 4);
}

/* Replaces table `id` (rows: malloc'd, owned by ctx from now on). Readers copy what they find
 * under the lock, so nobody holds a pointer into the old one. */
static void set_table(clnorm_ctx *ctx, clnorm_table_id id, clnorm_tuned *rows, size_t count) {
  clnorm__mutex_lock(&ctx->lock);
  clnorm_tuned *old = ctx->tables[id].rows;
  ctx->tables[id].rows = rows;
  ctx->tables[id].count = count;
  clnorm__mutex_unlock(&ctx->lock);
  free(old);
}

/* A built-in entry in table order, for choosing one per shape. */
typedef struct ranked {
  clnorm_tuned entry;
  size_t index;
} ranked;

static int ranked_cmp(const void *pa, const void *pb) {
  const ranked *a = pa, *b = pb;
  const int c = tuned_cmp(&a->entry, &b->entry);
  return c ? c : (a->index > b->index) - (a->index < b->index);
}

enum { OWN, SIBLING, VENDOR };

static int builtin_takes(const clnorm_builtin *b, const clnorm_device_info *info, int kind,
                         const char *arch) {
  if (!b->device || b->vendor_id != info->vendor_id || strcmp(b->family, info->family) != 0)
    return 0;
  switch (kind) {
  case OWN:
    return b->device[0] && strcmp(b->device, info->name) == 0;
  case SIBLING:
    return b->device[0] && strcmp(b->device, info->name) != 0 && arch[0] &&
           strcmp(b->arch, arch) == 0;
  default:
    return b->device[0] == '\0';
  }
}

/* Table `id`: the entries of `kind` for this device, one per shape (the first in the table's
 * order: `normtune builtin` sorts by device name). */
static void builtin_select(clnorm_ctx *ctx, const clnorm_builtin *table, size_t count,
                           clnorm_table_id id, int kind, const char *arch) {
  size_t n = 0;
  for (size_t i = 0; i < count; i++)
    n += builtin_takes(&table[i], &ctx->info, kind, arch);
  ranked *r = n ? malloc(n * sizeof *r) : NULL;
  clnorm_tuned *rows = n ? malloc(n * sizeof *rows) : NULL;
  if (!r || !rows) { /* none, or out of memory: the later levels still work */
    free(r);
    free(rows);
    set_table(ctx, id, NULL, 0);
    return;
  }
  n = 0;
  for (size_t i = 0; i < count; i++)
    if (builtin_takes(&table[i], &ctx->info, kind, arch))
      r[n++] = (ranked){table[i].entry, i};
  qsort(r, n, sizeof *r, ranked_cmp);
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (k == 0 || tuned_cmp(&rows[k - 1], &r[i].entry) != 0)
      rows[k++] = r[i].entry;
  free(r);
  set_table(ctx, id, rows, k);
}

void clnorm__builtin_use(clnorm_ctx *ctx, const clnorm_builtin *table, size_t count,
                         const char *arch) {
  if (!arch)
    arch = ctx->info.arch;
  /* CLNORM_NO_BUILTIN (any value but empty or 0): no built-in level, so that a measurement of
   * "no tuning" through the dispatcher (scripts/bench_gpu.sh, ab_builds.sh, env_sweep.sh) is the
   * heuristic's, whatever the shipped table holds. */
  const char *off = getenv("CLNORM_NO_BUILTIN");
  if (off && *off && strcmp(off, "0") != 0) {
    if (count)
      clnorm__log(CLNORM_LOG_INFO, "the built-in table is off (CLNORM_NO_BUILTIN=%s)", off);
    count = 0;
  }
  builtin_select(ctx, table, count, CLNORM_TABLE_BUILTIN, OWN, arch);
  builtin_select(ctx, table, count, CLNORM_TABLE_SIBLING, SIBLING, arch);
  builtin_select(ctx, table, count, CLNORM_TABLE_VENDOR, VENDOR, arch);
}

void clnorm__builtin_load(clnorm_ctx *ctx) {
  clnorm__builtin_use(ctx, builtin_table, sizeof builtin_table / sizeof builtin_table[0] - 1,
                      NULL);
}

/* Trailing zero bits of cols, capped at 4: rows of the same class allow the same vector widths. */
static unsigned divisibility(size_t cols) {
  unsigned d = 0;
  while (d < 4 && cols % ((size_t)2 << d) == 0)
    d++;
  return d;
}

static double log_distance(size_t a, size_t b) {
  double r = (double)a / (double)b;
  if (r < 1.0)
    r = 1.0 / r;
  return r;
}

/* How far a tuned cols may be from the call's when it is the only neighbour on one side: a winner
 * is measured at its own cols, and one beyond the tuned range says nothing of cols far off. */
#define NEAREST_ONE_SIDED_RATIO 2.0

int clnorm__tuned_stands(const clnorm_tuned *t, size_t rows) {
  /* in doubles: rows_hi * ratio must not wrap */
  return (double)rows * CLNORM_ROWS_NEAR_RATIO >= (double)t->rows_lo &&
         (double)rows <= (double)t->rows_hi * CLNORM_ROWS_NEAR_RATIO;
}

int clnorm__tuned_rows_used(const clnorm_tuned *t, size_t *first, size_t *last) {
  const size_t next = clnorm__row_class_first(t->row_class + 1);
  size_t a = clnorm__row_class_first(t->row_class), b = next ? next - 1 : SIZE_MAX;
  const size_t near_lo = (t->rows_lo + CLNORM_ROWS_NEAR_RATIO - 1) / CLNORM_ROWS_NEAR_RATIO;
  const size_t near_hi = t->rows_hi > SIZE_MAX / CLNORM_ROWS_NEAR_RATIO
                             ? SIZE_MAX
                             : t->rows_hi * CLNORM_ROWS_NEAR_RATIO;
  a = near_lo > a ? near_lo : a;
  b = near_hi < b ? near_hi : b;
  *first = a;
  *last = b;
  return a <= b;
}

/* exact: the entry of exactly this shape when it stands at `rows`, else NULL. Otherwise, when the
 * table has no entry of this cols (one that does not stand at these rows makes the call untuned
 * at this level: its own cols says nothing here, its neighbours' less), among the entries of the
 * same op, dtype, row class and divisibility, the neighbours below and above cols, each used only
 * where it stands at `rows`: both present, their entry when the two chose the same variant (the
 * call lies between two tuned cols that agree) and both stand, else NULL, since where they
 * disagree neither was measured to beat the heuristic here (on the H100, LayerNorm f32
 * 512 x 24576 ran 3.5% slower with the winner of 32768 cols than with the heuristic, whose
 * variant had won at 16384); one present, its entry when it stands and its cols is within
 * NEAREST_ONE_SIDED_RATIO of the call's. A winner is measured at its own row counts: on PoCL,
 * RMSNorm 512 x 1024 ran the winner of 2048 rows (the same class) at 0.84x of the heuristic. */
const clnorm_tuned *clnorm__tuned_find(const clnorm_tuned *table, size_t count, clnorm_op op,
                                       clnorm_dtype dtype, size_t cols, size_t rows, int exact) {
  const unsigned row_class = clnorm__row_class(rows);
  const clnorm_tuned key = {.op = op, .dtype = dtype, .cols = cols, .row_class = row_class};
  const clnorm_tuned *own = count ? bsearch(&key, table, count, sizeof *table, tuned_cmp) : NULL;
  if (exact)
    return own && clnorm__tuned_stands(own, rows) ? own : NULL;
  if (own)
    return NULL;
  const unsigned want = divisibility(cols);
  const clnorm_tuned *below = NULL, *above = NULL;
  for (size_t i = 0; i < count; i++) {
    const clnorm_tuned *t = &table[i];
    if (t->op != op || t->dtype != dtype || t->row_class != row_class ||
        divisibility(t->cols) != want)
      continue;
    if (t->cols < cols && (!below || t->cols > below->cols))
      below = t;
    if (t->cols > cols && (!above || t->cols < above->cols))
      above = t;
  }
  if (below && above)
    return clnorm__variant_key(op, dtype, &below->variant) ==
                       clnorm__variant_key(op, dtype, &above->variant) &&
                   clnorm__tuned_stands(below, rows) && clnorm__tuned_stands(above, rows)
               ? (log_distance(below->cols, cols) <= log_distance(above->cols, cols) ? below
                                                                                       : above)
               : NULL;
  const clnorm_tuned *only = below ? below : above;
  return only && log_distance(only->cols, cols) <= NEAREST_ONE_SIDED_RATIO &&
                 clnorm__tuned_stands(only, rows)
             ? only
             : NULL;
}

/* results as a sorted table (malloc'd; NULL when count is 0 or out of memory). */
static clnorm_tuned *to_table(const clnorm_result *results, size_t count) {
  clnorm_tuned *table = count ? malloc(count * sizeof *table) : NULL;
  for (size_t i = 0; table && i < count; i++) {
    table[i].op = results[i].op;
    table[i].dtype = results[i].dtype;
    table[i].cols = (size_t)results[i].cols;
    table[i].row_class = results[i].row_class;
    table[i].variant = results[i].variant;
    table[i].rows_lo = (size_t)results[i].rows_lo;
    table[i].rows_hi = (size_t)results[i].rows_hi;
    table[i].against = results[i].against;
    table[i].against_known = results[i].against_known;
  }
  if (table) /* qsort's array may not be NULL, even for no elements */
    qsort(table, count, sizeof *table, tuned_cmp);
  return table;
}

static int same_shape(const clnorm_result *a, const clnorm_result *b) {
  return a->op == b->op && a->dtype == b->dtype && a->row_class == b->row_class &&
         a->cols == b->cols;
}

/* By shape, then the latest measured first, then the fastest. */
static int newest_cmp(const void *pa, const void *pb) {
  const clnorm_result *a = pa, *b = pb;
  const uint64_t ka[] = {a->op, a->dtype, a->row_class, a->cols};
  const uint64_t kb[] = {b->op, b->dtype, b->row_class, b->cols};
  const int c = clnorm__keys_cmp(ka, kb, 4);
  if (c)
    return c;
  if (a->measured_at != b->measured_at)
    return a->measured_at > b->measured_at ? -1 : 1;
  return (a->median_s > b->median_s) - (a->median_s < b->median_s);
}

/* The winners of this device under other driver versions, per shape the latest measured, as a
 * sorted table in *out (*count entries). */
static clnorm_status read_other_drivers(clnorm_db *db, const clnorm_device_identity *self,
                                        clnorm_tuned **out, size_t *count, char *err,
                                        size_t err_size) {
  *out = NULL;
  *count = 0;
  clnorm_device_identity *devices = NULL;
  size_t device_count = 0;
  const clnorm_kernel_hashes hashes = clnorm__kernel_hashes();
  clnorm_status st =
      clnorm__db_tuned_devices(db, &hashes, &devices, &device_count, NULL, err, err_size);
  clnorm_result *all = NULL;
  size_t n = 0;
  for (size_t i = 0; st == CLNORM_OK && i < device_count; i++) {
    /* the identities stored of this device under other driver versions */
    if (!clnorm__identity_same_device(&devices[i], self) ||
        clnorm__identity_equal(&devices[i], self))
      continue;
    clnorm_result *got = NULL;
    size_t got_n = 0;
    st = clnorm__db_winners(db, &devices[i], &hashes, &got, &got_n, err, err_size);
    clnorm_result *grown = got_n ? realloc(all, (n + got_n) * sizeof *all) : all;
    if (st == CLNORM_OK && !grown)
      st = clnorm__db_error(CLNORM_E_NO_MEMORY, err, err_size, "out of memory");
    if (st == CLNORM_OK && got_n) {
      all = grown;
      memcpy(all + n, got, got_n * sizeof *got);
      n += got_n;
    }
    free(got);
  }
  free(devices);
  if (st != CLNORM_OK || n == 0) {
    free(all);
    return st;
  }
  qsort(all, n, sizeof *all, newest_cmp);
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (k == 0 || !same_shape(&all[k - 1], &all[i]))
      all[k++] = all[i];
  *out = to_table(all, k);
  free(all);
  if (!*out)
    return clnorm__db_error(CLNORM_E_NO_MEMORY, err, err_size, "out of memory");
  *count = k;
  return CLNORM_OK;
}

clnorm_status clnorm__tuning_load(clnorm_ctx *ctx, const char *path) {
  char default_path[4096], err[1024];
  clnorm__clear_error(ctx); /* errmsg speaks of this load only */
  if (!path) {
    if (clnorm__db_default_path(default_path, sizeof default_path, err, sizeof err) != CLNORM_OK)
      return clnorm__fail(ctx, CLNORM_E_DB, "no tuning database path: %s", err);
    path = default_path;
  }
  clnorm_device_identity id;
  clnorm_status st = clnorm__device_identity(ctx->device, &id, err, sizeof err);
  if (st != CLNORM_OK)
    return clnorm__fail(ctx, st, "reading the device identity: %s", err);
  clnorm_db *db = NULL;
  st = clnorm__db_open(path, CLNORM_DB_READ, &db, err, sizeof err);
  if (st != CLNORM_OK)
    return clnorm__fail(ctx, CLNORM_E_DB, "tuning database not used: %s", err);
  /* each op's results of its own family's kernels (clnorm_kernel_hashes): the tables hold no
   * other, so the lookups at a call need not compare hashes */
  const clnorm_kernel_hashes hashes = clnorm__kernel_hashes();
  clnorm_result *results = NULL;
  size_t count = 0;
  st = clnorm__db_winners(db, &id, &hashes, &results, &count, err, sizeof err);
  /* Stale results are not used as this driver's; counting them lets errmsg say why a tuned
   * device falls back. A failure to count only loses that note. */
  char dropped_why[192];
  const uint64_t dropped = clnorm__db_skipped(db, dropped_why, sizeof dropped_why);
  clnorm_db_stale stale = {0, 0};
  char stale_err[256];
  if (st == CLNORM_OK &&
      clnorm__db_stale(db, &id, &hashes, &stale, stale_err, sizeof stale_err) != CLNORM_OK)
    stale.driver_changed = stale.kernels_changed = 0;
  clnorm_tuned *other = NULL;
  size_t other_count = 0;
  if (st == CLNORM_OK)
    st = read_other_drivers(db, &id, &other, &other_count, err, sizeof err);
  clnorm__db_close(db);
  if (st != CLNORM_OK) {
    free(results);
    return clnorm__fail(ctx, st, "tuning database not used: %s", err);
  }
  clnorm_tuned *table = to_table(results, count);
  free(results);
  if (count && !table) {
    free(other);
    return clnorm__fail(ctx, CLNORM_E_NO_MEMORY, "out of host memory loading tuned results");
  }
  set_table(ctx, CLNORM_TABLE_TUNED, table, count);
  set_table(ctx, CLNORM_TABLE_TUNED_OTHER, other, other_count);
  /* Notes on what was not used, in errmsg (the status stays OK) and the log: a warning for
   * results that are no use, the info level for other drivers' (a later level of the choice). */
  char stale_note[320] = "", dropped_note[448] = "";
  if (stale.driver_changed || stale.kernels_changed)
    snprintf(stale_note, sizeof stale_note,
             "; %llu stale results of this device are not used as this driver's (%llu from "
             "another driver version, used for %zu shapes only where this driver has none, as "
             "`tuned (other driver)`; %llu from other kernel sources): run `normtune tune` again",
             (unsigned long long)(stale.driver_changed + stale.kernels_changed),
             (unsigned long long)stale.driver_changed, other_count,
             (unsigned long long)stale.kernels_changed);
  if (dropped)
    snprintf(dropped_note, sizeof dropped_note,
             "; %llu winners of this device dropped as invalid (edited by hand, damaged or from a "
             "newer clnorm; the first: %s), their shapes untuned: run `normtune tune` again",
             (unsigned long long)dropped, dropped_why);
  if (stale_note[0] || dropped_note[0]) {
    clnorm__fail(ctx, CLNORM_OK, "%zu tuned results loaded from '%s'%s%s", count, path,
                 dropped_note, stale_note);
    clnorm__log(dropped || stale.kernels_changed ? CLNORM_LOG_WARN : CLNORM_LOG_INFO, "%s",
                clnorm_ctx_errmsg(ctx));
  }
  return CLNORM_OK;
}

int clnorm__system_db_path(char *buf, size_t size) {
  const char *env = getenv("CLNORM_SYSTEM_DB");
#ifdef CLNORM_SYSTEM_DB_PATH
  const char *path = env ? env : CLNORM_SYSTEM_DB_PATH;
#else
  const char *path = env ? env : "";
#endif
  return path[0] && snprintf(buf, size, "%s", path) < (int)size;
}

void clnorm__system_load(clnorm_ctx *ctx) {
  char path[4096], err[1024];
  if (!clnorm__system_db_path(path, sizeof path))
    return;
  if (!clnorm__path_exists(path)) {
    clnorm__log(CLNORM_LOG_INFO, "no system tuning database at '%s'", path);
    return;
  }
  clnorm_device_identity id;
  clnorm_db *db = NULL;
  clnorm_result *results = NULL;
  size_t count = 0;
  clnorm_tuned *other = NULL;
  size_t other_count = 0;
  const clnorm_kernel_hashes hashes = clnorm__kernel_hashes();
  clnorm_status st = clnorm__device_identity(ctx->device, &id, err, sizeof err);
  if (st == CLNORM_OK)
    st = clnorm__db_open(path, CLNORM_DB_READONLY, &db, err, sizeof err);
  if (st == CLNORM_OK)
    st = clnorm__db_winners(db, &id, &hashes, &results, &count, err, sizeof err);
  if (st == CLNORM_OK)
    st = read_other_drivers(db, &id, &other, &other_count, err, sizeof err);
  clnorm__db_close(db);
  clnorm_tuned *table = st == CLNORM_OK ? to_table(results, count) : NULL;
  free(results);
  if (st == CLNORM_OK && count && !table)
    st = CLNORM_E_NO_MEMORY;
  if (st != CLNORM_OK) {
    free(other);
    clnorm__log(CLNORM_LOG_WARN, "system tuning database '%s' not used: %s", path,
                st == CLNORM_E_NO_MEMORY && !err[0] ? "out of memory" : err);
    return;
  }
  set_table(ctx, CLNORM_TABLE_SYSTEM, table, count);
  set_table(ctx, CLNORM_TABLE_SYSTEM_OTHER, other, other_count);
  clnorm__log(CLNORM_LOG_INFO,
              "%zu results for %s from the system tuning database '%s' (%zu of other driver "
              "versions)",
              count, ctx->info.name, path, other_count);
}

void clnorm__tuning_clear(clnorm_ctx *ctx) {
  set_table(ctx, CLNORM_TABLE_TUNED, NULL, 0);
  set_table(ctx, CLNORM_TABLE_TUNED_OTHER, NULL, 0);
}

void clnorm__tuning_free(clnorm_ctx *ctx) {
  for (int i = 0; i < CLNORM_TABLES; i++)
    free(ctx->tables[i].rows);
}
