/* The tuned table (winners read from the tuning database once per context) and the built-in
 * table (winners shipped for known devices). Both are kept in memory: no SQL on the hot path. */
#include "db.h"
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Winners we ship, from `normtune tune` runs written down in docs/PERFORMANCE.md. */
static const clnorm_builtin builtin_table[] = {
#include "builtin_table.h"
    {NULL, {CLNORM_OP_LAYERNORM, CLNORM_F32, 0, 0, {0, 0, 0, 0, CLNORM_REDUCE_LOCAL,
                                                    CLNORM_STATS_WELFORD}}} /* end */
};

static int tuned_cmp(const void *pa, const void *pb) {
  const clnorm_tuned *a = pa, *b = pb;
  const uint64_t ka[] = {a->op, a->dtype, a->row_class, a->cols};
  const uint64_t kb[] = {b->op, b->dtype, b->row_class, b->cols};
  return clnorm__keys_cmp(ka, kb, 4);
}

/* A table key names devices by a part of their name, or by its start when it begins with '^'
 * ("^pthread-" is every CPU of PoCL 1-4, "^cpu-" of PoCL 5 on: PoCL names a CPU device
 * "<driver>-<LLVM CPU>-<model>"). */
static int builtin_matches(const char *key, const char *name) {
  if (!key)
    return 0;
  if (key[0] == '^')
    return strncmp(name, key + 1, strlen(key + 1)) == 0;
  return strstr(name, key) != NULL;
}

void clnorm__builtin_load(clnorm_ctx *ctx) {
  const size_t n = sizeof builtin_table / sizeof builtin_table[0];
  size_t mine = 0;
  for (size_t i = 0; i < n; i++)
    mine += builtin_matches(builtin_table[i].device, ctx->info.name);
  if (mine == 0)
    return;
  clnorm_tuned *t = malloc(mine * sizeof *t);
  if (!t)
    return; /* the heuristic still works */
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (builtin_matches(builtin_table[i].device, ctx->info.name))
      t[k++] = builtin_table[i].entry;
  qsort(t, k, sizeof *t, tuned_cmp);
  ctx->builtin_own = t;
  ctx->builtin = t;
  ctx->builtin_count = k;
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

/* exact: the entry of exactly this shape, or NULL. Otherwise the entry of the same op, dtype,
 * row class and divisibility with the nearest cols (by ratio; the first such on a tie). */
const clnorm_tuned *clnorm__tuned_find(const clnorm_tuned *table, size_t count, clnorm_op op,
                                       clnorm_dtype dtype, size_t cols, unsigned row_class,
                                       int exact) {
  const clnorm_tuned key = {op, dtype, cols, row_class, {0, 0, 0, 0, 0, 0}};
  if (exact)
    return count ? bsearch(&key, table, count, sizeof *table, tuned_cmp) : NULL;
  const unsigned want = divisibility(cols);
  const clnorm_tuned *best = NULL;
  double best_d = 0.0;
  for (size_t i = 0; i < count; i++) {
    const clnorm_tuned *t = &table[i];
    if (t->op != op || t->dtype != dtype || t->row_class != row_class || t->cols == cols ||
        divisibility(t->cols) != want)
      continue;
    const double d = log_distance(t->cols, cols);
    if (!best || d < best_d) {
      best = t;
      best_d = d;
    }
  }
  return best;
}

/* Replaces the tuned table (table: malloc'd, owned by ctx from now on). Readers copy what they
 * find under the lock, so nobody holds a pointer into the old one. */
static void set_tuned(clnorm_ctx *ctx, clnorm_tuned *table, size_t count) {
  clnorm__mutex_lock(&ctx->lock);
  clnorm_tuned *old = ctx->tuned;
  ctx->tuned = table;
  ctx->tuned_count = count;
  clnorm__mutex_unlock(&ctx->lock);
  free(old);
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
  clnorm_result *results = NULL;
  size_t count = 0;
  st = clnorm__db_winners(db, &id, clnorm__kernel_hash(), &results, &count, err, sizeof err);
  /* Stale results are not used; counting them lets errmsg say why a tuned device falls back.
   * A failure to count only loses that note. */
  char dropped_why[192];
  const uint64_t dropped = clnorm__db_skipped(db, dropped_why, sizeof dropped_why);
  clnorm_db_stale stale = {0, 0};
  char stale_err[256];
  if (st == CLNORM_OK &&
      clnorm__db_stale(db, &id, clnorm__kernel_hash(), &stale, stale_err, sizeof stale_err) !=
          CLNORM_OK)
    stale.driver_changed = stale.kernels_changed = 0;
  clnorm__db_close(db);
  if (st != CLNORM_OK)
    return clnorm__fail(ctx, st, "tuning database not used: %s", err);
  clnorm_tuned *table = count ? malloc(count * sizeof *table) : NULL;
  if (count && !table) {
    free(results);
    return clnorm__fail(ctx, CLNORM_E_NO_MEMORY, "out of host memory loading tuned results");
  }
  for (size_t i = 0; i < count; i++) {
    table[i].op = results[i].op;
    table[i].dtype = results[i].dtype;
    table[i].cols = (size_t)results[i].cols;
    table[i].row_class = results[i].row_class;
    table[i].variant = results[i].variant;
  }
  free(results);
  if (count) /* qsort's array may not be NULL, even for no elements */
    qsort(table, count, sizeof *table, tuned_cmp);
  set_tuned(ctx, table, count);
  /* Notes on what was not used, in errmsg (the status stays OK) and the info log. */
  char stale_note[256] = "", dropped_note[448] = "";
  if (stale.driver_changed || stale.kernels_changed)
    snprintf(stale_note, sizeof stale_note,
             "; %llu stale results of this device are not used (%llu from another driver "
             "version, %llu from other kernel sources): run `normtune tune` again",
             (unsigned long long)(stale.driver_changed + stale.kernels_changed),
             (unsigned long long)stale.driver_changed, (unsigned long long)stale.kernels_changed);
  if (dropped)
    snprintf(dropped_note, sizeof dropped_note,
             "; %llu winners of this device dropped as invalid (edited by hand, damaged or from a "
             "newer clnorm; the first: %s), their shapes untuned: run `normtune tune` again",
             (unsigned long long)dropped, dropped_why);
  if (stale_note[0] || dropped_note[0]) {
    clnorm__fail(ctx, CLNORM_OK, "%zu tuned results loaded from '%s'%s%s", count, path,
                 dropped_note, stale_note);
    clnorm__log(CLNORM_LOG_WARN, "%s", clnorm_ctx_errmsg(ctx));
  }
  return CLNORM_OK;
}

void clnorm__tuning_clear(clnorm_ctx *ctx) { set_tuned(ctx, NULL, 0); }

void clnorm__tuning_free(clnorm_ctx *ctx) {
  free(ctx->tuned);
  free(ctx->builtin_own);
}
