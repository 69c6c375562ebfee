/* The A/B results of the tuning database (see db.h, clnorm_ab): storing and listing them. What
 * they decide, the winners, is read by db_store.c's listing. */
#define _POSIX_C_SOURCE 200809L
#include "db_private.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int clnorm__db_ab_same_shape(const clnorm_ab *a, const clnorm_ab *b) {
  return a->op == b->op && a->dtype == b->dtype && a->cols == b->cols &&
         a->row_class == b->row_class && a->rows == b->rows;
}

int clnorm__db_ab_valid(const clnorm_ab *ab, char *buf, size_t size) {
  char reason[160];
  if (!clnorm__db_key_valid(ab->op, ab->dtype, ab->cols, ab->row_class, ab->rows, &ab->candidate,
                            buf, size))
    return 0;
  if (!clnorm__db_variant_valid(&ab->heuristic, reason, sizeof reason))
    return snprintf(buf, size, "heuristic: %s", reason), 0;
  if (!(isfinite(ab->candidate_s) && ab->candidate_s > 0 && isfinite(ab->heuristic_s) &&
        ab->heuristic_s > 0 && isfinite(ab->noise) && ab->noise >= 0))
    return snprintf(buf, size, "candidate_s, heuristic_s: finite and above 0; noise >= 0"), 0;
  if (ab->rounds > 1000 || ab->measured_at < 0 || (ab->rounds == 0 && !ab->kept_heuristic))
    return snprintf(buf, size,
                    "rounds: at most 1000 (0: the candidate is the heuristic's variant, kept); "
                    "measured_at: not negative"),
           0;
  return 1;
}

void clnorm__db_bind_ab(sqlite3_stmt *st, sqlite3_int64 device, const clnorm_ab *ab) {
  clnorm__db_bind_shape(st, device, ab->kernel_hash, ab->op, ab->dtype, ab->cols, ab->row_class);
  sqlite3_bind_int64(st, 7, (sqlite3_int64)ab->rows);
  clnorm__db_bind_variant(st, 8, &ab->candidate);
  clnorm__db_bind_variant(st, 14, &ab->heuristic);
  sqlite3_bind_double(st, 20, ab->candidate_s);
  sqlite3_bind_double(st, 21, ab->heuristic_s);
  sqlite3_bind_double(st, 22, ab->noise);
  sqlite3_bind_int64(st, 23, ab->rounds);
  sqlite3_bind_text(st, 24, ab->kept_heuristic ? "heuristic" : "tuned", -1, SQLITE_STATIC);
  sqlite3_bind_int64(st, 25, ab->measured_at ? ab->measured_at : (sqlite3_int64)time(NULL));
  sqlite3_bind_text(st, 26, THIS_VERSION, -1, SQLITE_STATIC);
}

clnorm_status clnorm__db_put_ab(clnorm_db *db, const clnorm_device_identity *device,
                                const clnorm_ab *ab, char *err, size_t err_size) {
  clnorm_status st = clnorm__db_check_device(db, device, !ab, "ab", err, err_size);
  char reason[192];
  if (st == CLNORM_OK && !clnorm__db_ab_valid(ab, reason, sizeof reason))
    st = clnorm__db_error(CLNORM_E_INVALID_ARG, err, err_size, "A/B result: %s", reason);
  return st == CLNORM_OK ? clnorm__db_put_row(db, ST_PUT_AB, device, ab, 0.0, 0, err, err_size)
                         : st;
}

/* The columns of the listing, in the order read_ab reads them; %s: the kernel hashes' filter. */
#define AB_SELECT                                                                                  \
  "SELECT op, dtype, cols, row_class, rows" CLNORM_VARIANT_SQL_COLUMNS                             \
  ", h_wg, h_tpr, h_vec, h_hold, h_reduce, h_stats, candidate_s, heuristic_s, noise, rounds,"      \
  " verdict, measured_at, kernel_hash FROM ab WHERE device_id = ?1%s"                              \
  " ORDER BY kernel_hash, op, dtype, cols, row_class, rows"

static int read_ab(sqlite3_stmt *st, clnorm_ab *ab) {
  memset(ab, 0, sizeof *ab);
  if (!clnorm__db_read_hash(st, 23, &ab->kernel_hash))
    return 0;
  const char *verdict =
      sqlite3_column_type(st, 21) == SQLITE_TEXT ? (const char *)sqlite3_column_text(st, 21) : "";
  ab->kept_heuristic = strcmp(verdict, "heuristic") == 0 ? 1
                       : strcmp(verdict, "tuned") == 0   ? 0
                                                         : -1;
  int bad = clnorm__db_read_shape(st, 0, &ab->op, &ab->dtype, &ab->cols, &ab->row_class, &ab->rows);
  if (bad < 0)
    bad = clnorm__db_read_variant(st, 5, &ab->candidate);
  if (bad < 0)
    bad = clnorm__db_read_variant(st, 11, &ab->heuristic);
  uint64_t rounds, measured_at;
  if (bad >= 0 || ab->kept_heuristic < 0 || !clnorm__db_column_uint(st, 20, 1000, &rounds) ||
      !clnorm__db_column_uint(st, 22, INT64_MAX, &measured_at))
    return 0;
  ab->rounds = (unsigned)rounds;
  ab->measured_at = (int64_t)measured_at;
  ab->candidate_s = sqlite3_column_double(st, 17);
  ab->heuristic_s = sqlite3_column_double(st, 18);
  ab->noise = sqlite3_column_double(st, 19);
  char reason[192];
  return clnorm__db_ab_valid(ab, reason, sizeof reason);
}

clnorm_status clnorm__db_list_ab(clnorm_db *db, const clnorm_device_identity *device,
                                 const clnorm_kernel_hashes *hashes, clnorm_db_ab_fn fn, void *user,
                                 char *err, size_t err_size) {
  const clnorm_status bad = clnorm__db_check_null(db, device, !fn, "fn", err, err_size);
  if (bad != CLNORM_OK)
    return bad;
  sqlite3_int64 id;
  const clnorm_status found =
      clnorm__db_device_in(db, "ab", device, &id, "listing the A/B results", err, err_size);
  if (found != CLNORM_OK || id < 0)
    return found;
  char current[320] = "", text[1280];
  if (hashes)
    clnorm__db_current(current, sizeof current, "");
  snprintf(text, sizeof text, AB_SELECT, current);
  sqlite3_stmt *st = NULL;
  char hash[2][17];
  int rc = clnorm__db_prepare_listing(db, text, 1, id, hashes, hash, &st);
  if (rc == SQLITE_OK) {
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
      clnorm_ab ab;
      if (read_ab(st, &ab) && fn(user, &ab)) {
        rc = SQLITE_DONE;
        break;
      }
    }
  }
  return clnorm__db_end_listing(db, st, rc, "listing the A/B results", err, err_size);
}

/* The winners whose rows clnorm__db_winner_rows sets. */
typedef struct winner_rows {
  clnorm_result *winners;
  size_t count;
} winner_rows;

static int winner_key_cmp(const void *pa, const void *pb) {
  const clnorm_result *a = pa, *b = pb;
  const uint64_t ka[] = {a->op, a->dtype, a->cols, a->row_class};
  const uint64_t kb[] = {b->op, b->dtype, b->cols, b->row_class};
  for (int i = 0; i < 4; i++)
    if (ka[i] != kb[i])
      return ka[i] < kb[i] ? -1 : 1;
  return 0;
}

static int widen_rows(void *user, const clnorm_ab *ab) {
  const winner_rows *w = user;
  clnorm_result key;
  memset(&key, 0, sizeof key);
  key.op = ab->op;
  key.dtype = ab->dtype;
  key.cols = ab->cols;
  key.row_class = ab->row_class;
  clnorm_result *r = bsearch(&key, w->winners, w->count, sizeof *r, winner_key_cmp);
  if (!r || r->kernel_hash != ab->kernel_hash ||
      !clnorm__variant_same(&r->variant, ab->kept_heuristic ? &ab->heuristic : &ab->candidate))
    return 0;
  /* A/Bs at row counts the heuristic gives different variants (a CPU's forward, two row counts
   * of the class tuned) leave it not known (-1 until the end): the dispatcher then tests the
   * heuristic's variants of rows_lo and rows_hi instead */
  if (r->against_known == 0) {
    r->against = ab->heuristic;
    r->against_known = 1;
  } else if (!clnorm__variant_same(&r->against, &ab->heuristic)) {
    r->against_known = -1;
  }
  if (r->rows_lo == 0 || ab->rows < r->rows_lo)
    r->rows_lo = ab->rows;
  if (ab->rows > r->rows_hi)
    r->rows_hi = ab->rows;
  return 0;
}

clnorm_status clnorm__db_winner_rows(clnorm_db *db, const clnorm_device_identity *device,
                                     clnorm_result *winners, size_t count, char *err,
                                     size_t err_size) {
  for (size_t i = 0; i < count; i++) {
    winners[i].rows_lo = winners[i].rows_hi = 0;
    memset(&winners[i].against, 0, sizeof winners[i].against);
    winners[i].against_known = 0;
  }
  winner_rows w = {winners, count};
  /* of any kernel hash: widen_rows takes an A/B of its winner's own (the winners of two families
   * hold two) */
  const clnorm_status st =
      count ? clnorm__db_list_ab(db, device, NULL, widen_rows, &w, err, err_size) : CLNORM_OK;
  for (size_t i = 0; i < count; i++) {
    if (winners[i].rows_lo == 0) /* no A/B chose it: where it was measured */
      winners[i].rows_lo = winners[i].rows_hi = winners[i].rows;
    if (winners[i].against_known < 0)
      winners[i].against_known = 0;
  }
  return st;
}
