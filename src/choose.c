/* The choice of a variant for a call: the chain of fallback levels (forced, tuned, nearest tuned,
 * tuned under another driver, system database, built-in for the model, its sibling and its
 * vendor, heuristic), and the set of variants that failed at launch, which the chain skips. */
#include "internal.h"
#include "names.h"

#include <stdint.h>
#include <stdio.h>

/* The key of a program in a row class, in the set of variants that failed at launch. */
static uint64_t unusable_key(const clnorm_call *call, uint64_t program_key) {
  return 1ull << 63 | program_key << 2 | clnorm__row_class(call->rows);
}

/* Whether the program failed at launch before in this call's row class; *err: with what. */
int clnorm__unusable_find(clnorm_ctx *ctx, const clnorm_call *call, uint64_t program_key,
                          cl_int *err) {
  if (atomic_load_explicit(&ctx->unusable_count, memory_order_acquire) == 0)
    return 0; /* the usual case: no lock */
  const uint64_t key = unusable_key(call, program_key);
  int found = 0;
  clnorm__mutex_lock(&ctx->lock);
  const size_t n = atomic_load_explicit(&ctx->unusable_count, memory_order_relaxed);
  for (size_t i = 0; i < n && !found; i++)
    if (ctx->unusable[i].key == key) {
      *err = ctx->unusable[i].err;
      found = 1;
    }
  clnorm__mutex_unlock(&ctx->lock);
  return found;
}

/* Remembers a launch failure: 1 when added, 2 when another thread's call had added it, 0 when
 * the set is full (the call then gives up rather than retry without remembering). */
int clnorm__unusable_add(clnorm_ctx *ctx, const clnorm_call *call, uint64_t program_key,
                         cl_int err) {
  const uint64_t key = unusable_key(call, program_key);
  int added = 0;
  clnorm__mutex_lock(&ctx->lock);
  const size_t n = atomic_load_explicit(&ctx->unusable_count, memory_order_relaxed);
  for (size_t i = 0; i < n; i++)
    if (ctx->unusable[i].key == key)
      added = 2;
  if (!added && n < CLNORM_UNUSABLE) {
    ctx->unusable[n] = (clnorm_unusable){key, err};
    atomic_store_explicit(&ctx->unusable_count, n + 1, memory_order_release);
    added = 1;
  }
  clnorm__mutex_unlock(&ctx->lock);
  return added;
}

void clnorm__unusable_remove(clnorm_ctx *ctx, const clnorm_call *call, uint64_t program_key) {
  const uint64_t key = unusable_key(call, program_key);
  clnorm__mutex_lock(&ctx->lock);
  const size_t n = atomic_load_explicit(&ctx->unusable_count, memory_order_relaxed);
  for (size_t i = 0; i < n; i++)
    if (ctx->unusable[i].key == key) {
      ctx->unusable[i] = ctx->unusable[n - 1];
      atomic_store_explicit(&ctx->unusable_count, n - 1, memory_order_release);
      break;
    }
  clnorm__mutex_unlock(&ctx->lock);
}

const char *clnorm_choice_string(clnorm_choice why) {
  return clnorm__name_of(clnorm__choice_names, CLNORM__CHOICE_COUNT, (int)why, "unknown");
}

/* The variant as this call runs it: the vector width narrowed to what the call can run
 * (clnorm__call_vec), with the row's private-memory budget (hold * vec floats) kept. */
static clnorm_variant effective(const clnorm_device_info *info, const clnorm_call *call,
                                const clnorm_variant *v) {
  clnorm_variant e = *v;
  e.vec = clnorm__call_vec(info, call, v->vec);
  e.hold = v->hold * (v->vec / e.vec);
  return e;
}

/* Checks `v` against the device and the call; on success *eff is what runs. */
static clnorm_status usable(clnorm_ctx *ctx, const clnorm_call *call, const clnorm_variant *v,
                            clnorm_variant *eff) {
  char why[160], text[128];
  if (!clnorm__variant_device_ok(&ctx->info, call->op, v, why, sizeof why)) {
    clnorm_variant_format(v, text, sizeof text);
    return clnorm__fail(ctx, CLNORM_E_UNSUPPORTED, "variant %s cannot run on %s: %s", text,
                        ctx->info.name, why);
  }
  *eff = effective(&ctx->info, call, v);
  if (!clnorm__variant_call_ok(eff, call->cols, why, sizeof why)) {
    clnorm_variant_format(eff, text, sizeof text);
    return clnorm__fail(ctx, CLNORM_E_UNSUPPORTED, "variant %s cannot run cols=%zu: %s", text,
                        call->cols, why);
  }
  return CLNORM_OK;
}

/* A variant the dispatcher may choose: usable(), built, and not failed at launch before in this
 * call's row class. */
static clnorm_status candidate(clnorm_ctx *ctx, const clnorm_call *call, const clnorm_variant *v,
                               clnorm_variant *eff, clnorm_program **prog) {
  clnorm_status st = usable(ctx, call, v, eff);
  if (st == CLNORM_OK)
    st = clnorm__program_get(ctx, call->op, call->dtype, eff, 0, prog);
  cl_int err;
  if (st == CLNORM_OK && clnorm__unusable_find(ctx, call, (*prog)->key, &err)) {
    char text[128];
    clnorm_variant_format(eff, text, sizeof text);
    st = clnorm__fail(ctx, CLNORM_E_UNSUPPORTED,
                      "variant %s failed at launch earlier with %s (%d): not used again for %s %s "
                      "in this row class",
                      text, clnorm__cl_error_name(err), (int)err, clnorm_op_name(call->op),
                      clnorm_dtype_name(call->dtype));
  }
  return st;
}

/* The heuristic's variant, falling back to safer ones when its build fails, the built kernel
 * cannot take its work-group size (register pressure can lower that limit) or it failed at
 * launch before. */
clnorm_status clnorm__heuristic_pick(clnorm_ctx *ctx, const clnorm_call *call, clnorm_variant *eff,
                                     clnorm_program **prog) {
  /* The heuristic's variant; then the same re-reading the row (no private array); then smaller
   * work-groups (a driver may refuse large ones after the build: NVIDIA's caps every clnorm
   * kernel at 256); last, one work-item per row, which every device runs. */
  clnorm_variant candidates[16];
  size_t n = 0;
  clnorm__heuristic(&ctx->info, call, &candidates[n++]);
  const clnorm_variant first = candidates[0];
  candidates[n] = first;
  candidates[n].hold = 0;
  candidates[n++].stats = CLNORM_STATS_WELFORD;
  for (unsigned wg = first.wg / 2; wg >= 32 && n < 15; wg /= 2) {
    candidates[n] = candidates[1];
    candidates[n].wg = wg;
    candidates[n].tpr = first.tpr < wg ? first.tpr : wg;
    if (candidates[n].reduce == CLNORM_REDUCE_SUBGROUP && candidates[n].tpr != wg)
      candidates[n].reduce = CLNORM_REDUCE_LOCAL;
    n++;
  }
  candidates[n++] = (clnorm_variant){1, 1, 4, 0, CLNORM_REDUCE_LOCAL, CLNORM_STATS_WELFORD};
  clnorm_status st = CLNORM_E_UNSUPPORTED;
  for (size_t i = 0; i < n; i++) {
    st = candidate(ctx, call, &candidates[i], eff, prog);
    if (st == CLNORM_OK || (st != CLNORM_E_UNSUPPORTED && st != CLNORM_E_BUILD))
      break;
    clnorm__log(CLNORM_LOG_WARN, "falling back from a heuristic candidate: %s",
                clnorm_ctx_errmsg(ctx));
  }
  return st;
}

/* A winner was compared with the heuristic's variant of the row counts where it won (rows[0] to
 * rows[1]); at a row count whose heuristic variant is another (a CPU's forward: its rows per
 * work-group follow the rows) nothing compared the two, and the winner is not used there: on
 * PoCL, the RMSNorm winner of 256 x 1024 ran at 0.92-0.95x of the heuristic at 128 rows, whose
 * variant has half the rows per group. The same test as tune's for a row class's edges. `key`:
 * clnorm__variant_key of the heuristic's variant at call->rows. */
static int same_heuristic(const clnorm_ctx *ctx, const clnorm_call *call, uint64_t key,
                          const size_t rows[2]) {
  clnorm_variant there;
  for (int i = 0; i < 2; i++) {
    if (rows[i] == call->rows)
      return 1;
    clnorm_call at = *call;
    at.rows = rows[i];
    clnorm__heuristic(&ctx->info, &at, &there);
    if (clnorm__variant_key(call->op, call->dtype, &there) == key)
      return 1;
  }
  return 0;
}

/* Whether `key` is not yet in the set of logged lines (ctx->logged), adding it: a line logged
 * once per context. A full set or a collision only leaves a line out. */
static int log_first(clnorm_ctx *ctx, uint64_t key) {
  key = key ? key : 1;
  int fresh = 0;
  clnorm__mutex_lock(&ctx->lock);
  for (size_t i = key % CLNORM_LOGGED, n = 0; n < CLNORM_LOGGED; i = (i + 1) % CLNORM_LOGGED, n++) {
    if (ctx->logged[i] == key)
      break;
    if (ctx->logged[i] == 0) {
      ctx->logged[i] = key;
      fresh = 1;
      break;
    }
  }
  clnorm__mutex_unlock(&ctx->lock);
  return fresh;
}

/* The logged set's key of a line about variant `v` at a call's shape class (op, dtype, cols, row
 * class); `tag` tells the lines apart: a choice's `why` (clnorm__log_choice), CLNORM__CHOICE_COUNT
 * + `why` an entry not used (log_stale). */
static uint64_t log_key(const clnorm_call *call, const clnorm_variant *v, uint64_t tag) {
  const uint64_t shape = (uint64_t)call->cols << 8 | (uint64_t)call->op << 5 |
                         (uint64_t)call->dtype << 2 | clnorm__row_class(call->rows);
  /* The tag in bits of its own: added to the variant's key (whose lowest bit is the stats), the
   * forced two-pass variant's line and the tuned Welford one's shared a key, and the second was
   * never logged. The key uses 29 bits; the multiplication by an odd number keeps it unique. */
  _Static_assert(2 * CLNORM__CHOICE_COUNT <= 32, "log_key keeps the tag in 5 bits");
  return shape ^ (clnorm__variant_key(call->op, call->dtype, v) << 5 | tag) * 0x9e3779b97f4a7c15ull;
}

/* The info line, once per shape class and entry, of a table's entry `v` not used because its A/B
 * compared it with the heuristic's variant `against` (at the row counts `rows`), not the one of
 * this call: the heuristic's variant changes with the rows (a CPU's forward), or the heuristic
 * changed since the tuning (src/variants.c), and what beat the old one may lose to the new one. */
static void log_stale(clnorm_ctx *ctx, const clnorm_call *call, clnorm_choice why,
                      const clnorm_variant *v, const clnorm_variant *against,
                      const size_t rows[2]) {
  if (clnorm__log_level() < CLNORM_LOG_INFO)
    return; /* the set is not taken on every call where nothing is logged */
  if (!log_first(ctx, log_key(call, v, CLNORM__CHOICE_COUNT + (uint64_t)why)))
    return;
  const uint64_t was_key = clnorm__variant_key(call->op, call->dtype, against);
  int moved = 0; /* the heuristic still gives `against` where the A/B ran */
  for (int i = 0; i < 2; i++) {
    clnorm_call at = *call;
    at.rows = rows[i];
    clnorm_variant there;
    clnorm__heuristic(&ctx->info, &at, &there);
    const clnorm_variant run = effective(&ctx->info, &at, &there);
    moved |= clnorm__variant_key(call->op, call->dtype, &there) == was_key ||
             clnorm__variant_key(call->op, call->dtype, &run) == was_key;
  }
  char text[128], was[128], now[128];
  clnorm_variant here;
  clnorm__heuristic(&ctx->info, call, &here);
  clnorm_variant_format(v, text, sizeof text);
  clnorm_variant_format(against, was, sizeof was);
  clnorm_variant_format(&here, now, sizeof now);
  clnorm__log(CLNORM_LOG_INFO,
              "%s %s rows=%zu cols=%zu on %s: the %s entry %s not used: its A/B compared it with "
              "the heuristic's %s, the heuristic's variant here is %s (%s)",
              clnorm_op_name(call->op), clnorm_dtype_name(call->dtype), call->rows, call->cols,
              ctx->info.name, clnorm_choice_string(why), text, was, now,
              moved ? "another than at the row counts it was compared at"
                    : "the heuristic changed since it was tuned");
}

/* The levels of the choice that read a table, in the order they are tried, each table (tuned.c)
 * for the exact shape, then the nearest one: this device's results in the user's database under
 * this driver, then under other driver versions (re-measured by the next `normtune tune`); the
 * same two of the system database; the built-in table's entries for this model, then for
 * another model of the same architecture, then the vendor's defaults. The heuristic is the last
 * level (clnorm__heuristic_pick). */
static const struct {
  clnorm_table_id table;
  clnorm_choice why[2]; /* of its exact shape, of its nearest */
} levels[] = {
    {CLNORM_TABLE_TUNED, {CLNORM_CHOICE_TUNED, CLNORM_CHOICE_NEAREST}},
    {CLNORM_TABLE_TUNED_OTHER,
     {CLNORM_CHOICE_TUNED_OTHER_DRIVER, CLNORM_CHOICE_TUNED_OTHER_DRIVER}},
    {CLNORM_TABLE_SYSTEM, {CLNORM_CHOICE_SYSTEM, CLNORM_CHOICE_SYSTEM}},
    {CLNORM_TABLE_SYSTEM_OTHER,
     {CLNORM_CHOICE_SYSTEM_OTHER_DRIVER, CLNORM_CHOICE_SYSTEM_OTHER_DRIVER}},
    {CLNORM_TABLE_BUILTIN, {CLNORM_CHOICE_BUILTIN, CLNORM_CHOICE_BUILTIN}},
    {CLNORM_TABLE_SIBLING, {CLNORM_CHOICE_BUILTIN_SIBLING, CLNORM_CHOICE_BUILTIN_SIBLING}},
    {CLNORM_TABLE_VENDOR, {CLNORM_CHOICE_BUILTIN_VENDOR, CLNORM_CHOICE_BUILTIN_VENDOR}}};
/* Each table is looked up twice, its exact shape, then its nearest (clnorm__tuned_find's `exact`):
 * lookup l is table l / 2, exact when l is even. */
#define LEVELS (int)(2 * (sizeof levels / sizeof levels[0]))

/* The variant to run and its built program. A forced variant is used as given or refused; a
 * chosen one falls back, in order, to safer variants when its build fails, the built kernel
 * cannot take its work-group size (register pressure can lower that limit) or it failed at
 * launch before in this row class (clnorm_run). */
clnorm_status clnorm__choose(clnorm_ctx *ctx, const clnorm_call *call, const clnorm_variant *force,
                             clnorm_variant *eff, clnorm_choice *why, clnorm_program **prog) {
  if (force) {
    *why = CLNORM_CHOICE_FORCED;
    clnorm_status st = usable(ctx, call, force, eff);
    return st != CLNORM_OK ? st : clnorm__program_get(ctx, call->op, call->dtype, eff, 0, prog);
  }
  /* The table levels, in order; each entry re-checked against the device and the call. Entries
   * are copied under the lock: the table may be replaced meanwhile. */
  clnorm_variant found[LEVELS], against[LEVELS];
  size_t won_rows[LEVELS][2];
  int have[LEVELS] = {0}, against_known[LEVELS];
  clnorm__mutex_lock(&ctx->lock); /* one lock for all lookups; the entries are copied out */
  for (int l = 0; l < LEVELS; l++) {
    const clnorm_table *table = &ctx->tables[levels[l / 2].table];
    const clnorm_tuned *t = clnorm__tuned_find(table->rows, table->count, call->op, call->dtype,
                                               call->cols, call->rows, l % 2 == 0);
    if (t) {
      found[l] = t->variant;
      won_rows[l][0] = t->rows_lo;
      won_rows[l][1] = t->rows_hi;
      against[l] = t->against;
      against_known[l] = t->against_known;
      have[l] = 1;
    }
  }
  clnorm__mutex_unlock(&ctx->lock);
  /* the heuristic's variant at the call's rows, taken once, where a table has an entry: as the
   * heuristic gives it, and as this call runs it (tune's A/B stored clnorm_heuristic's, which is
   * the latter for tune's packed rows) */
  uint64_t here = 0, here_run = 0;
  int have_here = 0;
  for (int l = 0; l < LEVELS; l++) {
    if (!have[l])
      continue;
    if (!have_here) {
      clnorm_variant v;
      clnorm__heuristic(&ctx->info, call, &v);
      here = clnorm__variant_key(call->op, call->dtype, &v);
      const clnorm_variant run = effective(&ctx->info, call, &v);
      here_run = clnorm__variant_key(call->op, call->dtype, &run);
      have_here = 1;
    }
    if (against_known[l]) {
      const uint64_t key = clnorm__variant_key(call->op, call->dtype, &against[l]);
      if (key != here && key != here_run) {
        log_stale(ctx, call, levels[l / 2].why[l % 2], &found[l], &against[l], won_rows[l]);
        continue;
      }
    } else if (!same_heuristic(ctx, call, here, won_rows[l])) {
      continue;
    }
    *why = levels[l / 2].why[l % 2];
    if (candidate(ctx, call, &found[l], eff, prog) == CLNORM_OK)
      return CLNORM_OK;
    clnorm__log(CLNORM_LOG_WARN, "the %s variant cannot run this call, falling back: %s",
                clnorm_choice_string(*why), clnorm_ctx_errmsg(ctx));
  }
  *why = CLNORM_CHOICE_HEURISTIC;
  return clnorm__heuristic_pick(ctx, call, eff, prog);
}

/* The info log: one line per op, dtype, cols, row class and choice (a winner stands only near
 * the row counts where it won, so two row counts of a class may be chosen differently: each
 * choice is named once); again: the choice after a launch failure, printed whatever was printed
 * before. */
void clnorm__log_choice(clnorm_ctx *ctx, const clnorm_call *call, const clnorm_variant *v,
                        clnorm_choice why, int again) {
  const int fresh = log_first(ctx, log_key(call, v, (uint64_t)why));
  if (!fresh && !again)
    return;
  char text[128];
  clnorm_variant_format(v, text, sizeof text);
  clnorm__log(CLNORM_LOG_INFO, "%s %s rows=%zu cols=%zu on %s: %s (%s)", clnorm_op_name(call->op),
              clnorm_dtype_name(call->dtype), call->rows, call->cols, ctx->info.name, text,
              clnorm_choice_string(why));
}
