/* The listings of the tuning database: every result or a shape's winner, the winners as a table,
 * the heuristic's results, stale counts, the copy bandwidth and the stored devices (what the
 * tables, normtune's reports and diagnostics read). */
#define _POSIX_C_SOURCE 200809L
#include "db_private.h"
#include "internal.h" /* clnorm__op_backward: the families of the ops */

#include <math.h>
#include <stdlib.h>
#include <string.h>

void clnorm__db_family_hash(char *buf, size_t size, const char *alias) {
  size_t n = (size_t)snprintf(buf, size, "CASE WHEN %sop IN (", alias);
  const char *sep = "";
  for (int op = 0; op < CLNORM_OP_COUNT && n < size; op++)
    if (clnorm__op_backward((clnorm_op)op)) {
      n += (size_t)snprintf(buf + n, size - n, "%s'%s'", sep, clnorm__op_names[op]);
      sep = ", ";
    }
  if (n < size)
    snprintf(buf + n, size - n, ") THEN ?3 ELSE ?2 END");
}

void clnorm__db_current(char *buf, size_t size, const char *alias) {
  char family[256];
  clnorm__db_family_hash(family, sizeof family, alias);
  snprintf(buf, size, " AND %skernel_hash IN (?2, ?3) AND %skernel_hash = %s", alias, alias,
           family);
}

void clnorm__db_bind_hashes(sqlite3_stmt *st, const clnorm_kernel_hashes *hashes,
                            char text[2][17]) {
  clnorm__db_hash_text(hashes->forward, text[0]);
  clnorm__db_hash_text(hashes->backward, text[1]);
  sqlite3_bind_text(st, 2, text[0], -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 3, text[1], -1, SQLITE_STATIC);
}

int clnorm__db_prepare_listing(clnorm_db *db, const char *text, int by_device, sqlite3_int64 id,
                               const clnorm_kernel_hashes *hashes, char hash[2][17],
                               sqlite3_stmt **st) {
  const int rc = sqlite3_prepare_v2(db->sql, text, -1, st, NULL);
  if (rc != SQLITE_OK)
    return rc;
  if (by_device)
    sqlite3_bind_int64(*st, 1, id);
  if (hashes)
    clnorm__db_bind_hashes(*st, hashes, hash);
  return SQLITE_OK;
}

/* Steps st to its next row that this build can read, into device and result: SQLITE_ROW, else
 * SQLite's result code (SQLITE_DONE at the end). A row it cannot read is counted in db->skipped
 * (the first one's reason kept; the caller zeroes both before the listing) and passed over. */
static int next_row(clnorm_db *db, sqlite3_stmt *st, clnorm_device_identity *device,
                    clnorm_result *result) {
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    char reason[sizeof db->skipped_why];
    if (clnorm__db_read_row(st, device, result, reason, sizeof reason))
      break;
    if (db->skipped++ == 0)
      snprintf(db->skipped_why, sizeof db->skipped_why, "%s", reason);
  }
  return rc;
}

clnorm_status clnorm__db_list(clnorm_db *db, const clnorm_device_identity *device,
                              const clnorm_kernel_hashes *hashes, int winners_only,
                              clnorm_db_row_fn fn, void *user, char *err, size_t err_size) {
  clnorm__db_clear(err, err_size);
  if (!db || !fn)
    return clnorm__db_error(CLNORM_E_INVALID_ARG, err, err_size, "%s is NULL", !db ? "db" : "fn");
  sqlite3_int64 id = -1;
  if (device) {
    char reason[160];
    if (!clnorm__db_device_valid(device, reason, sizeof reason))
      return clnorm__db_error(CLNORM_E_INVALID_ARG, err, err_size, "device identity: %s", reason);
    const int rc = clnorm__db_device_id(db, device, 0, &id);
    if (rc != SQLITE_OK)
      return clnorm__db_sql_error(db, rc, "looking up the device", err, err_size);
    if (id < 0)
      return CLNORM_OK;
  }
  /* A shape's fastest "ok" row (m): with exactly one min() in the query, SQLite takes the bare
   * columns from that row. The filters are spelled out (not "?1 IS NULL OR ...") so that SQLite
   * can search the results_winners index. Where the shape has A/B results (schema 4), its winner
   * is the variant they chose (a): the heuristic's of the latest that kept it, else the
   * candidate of the latest (max() picks that row, whose bare columns come with it). A winner's
   * row is checked again: w reads only that index, which a damaged file's may contradict
   * (readers run no integrity check). */
  int with_ab = 0;
  if (clnorm__db_has_table(db->sql, "ab", &with_ab) != SQLITE_OK)
    with_ab = 0; /* listed as a database without A/B results */
  const char *const device_filter = device ? " AND device_id = ?1" : "";
  char hash_filter[320] = "", r_hash_filter[320] = "";
  if (hashes) {
    clnorm__db_current(hash_filter, sizeof hash_filter, "");
    clnorm__db_current(r_hash_filter, sizeof r_hash_filter, "r.");
  }
  /* a: per shape, the variant its A/B results chose; w: that variant's result, else m's */
  static const char ab_choice[] =
      ", a AS (SELECT device_id, kernel_hash, op, dtype, cols, row_class,"
      " CASE WHEN verdict = 'heuristic' THEN h_wg ELSE wg END AS wg,"
      " CASE WHEN verdict = 'heuristic' THEN h_tpr ELSE tpr END AS tpr,"
      " CASE WHEN verdict = 'heuristic' THEN h_vec ELSE vec END AS vec,"
      " CASE WHEN verdict = 'heuristic' THEN h_hold ELSE hold END AS hold,"
      " CASE WHEN verdict = 'heuristic' THEN h_reduce ELSE reduce END AS reduce,"
      " CASE WHEN verdict = 'heuristic' THEN h_stats ELSE stats END AS stats,"
      " max((verdict = 'heuristic') * 4611686018427387904 + id) FROM ab WHERE 1%s%s"
      " GROUP BY device_id, kernel_hash, op, dtype, cols, row_class),"
      " w AS (SELECT coalesce(k.id, m.id) AS id FROM m LEFT JOIN a ON a.device_id = m.device_id"
      " AND a.kernel_hash = m.kernel_hash AND a.op = m.op AND a.dtype = m.dtype"
      " AND a.cols = m.cols AND a.row_class = m.row_class"
      " LEFT JOIN results k ON k.device_id = a.device_id AND k.kernel_hash = a.kernel_hash"
      " AND k.op = a.op AND k.dtype = a.dtype AND k.cols = a.cols AND k.row_class = a.row_class"
      " AND k.wg = a.wg AND k.tpr = a.tpr AND k.vec = a.vec AND k.hold = a.hold"
      " AND k.reduce = a.reduce AND k.stats = a.stats AND k.status = 'ok'"
      " AND k.median_s IS NOT NULL)";
  char chosen[3584] = ", w AS (SELECT id FROM m)";
  if (with_ab)
    snprintf(chosen, sizeof chosen, ab_choice, device_filter, hash_filter);
  char text[7168];
  snprintf(text, sizeof text,
           "WITH m AS (SELECT id, device_id, kernel_hash, op, dtype, cols, row_class,"
           " min(median_s) FROM results WHERE status = 'ok' AND median_s IS NOT NULL%s%s"
           " GROUP BY device_id, kernel_hash, op, dtype, cols, row_class)%s"
           " SELECT d.vendor_id, d.vendor, d.name, d.driver_version, d.opencl_version,"
           " d.compute_units, d.max_clock_mhz, d.local_mem, r.kernel_hash, r.op, r.dtype,"
           " r.cols, r.row_class, r.rows" CLNORM_VARIANT_SQL_R_COLUMNS
           ", r.status, r.median_s, r.min_s, r.gbps, r.max_err, r.measured_at,"
           " r.clnorm_version, %s AS winner FROM %s JOIN devices d ON d.id = r.device_id"
           " WHERE 1%s%s%s ORDER BY d.id, r.kernel_hash, r.op, r.dtype, r.cols, r.row_class,"
           " winner DESC, r.median_s IS NULL, r.median_s, r.min_s, r.id",
           device_filter, hash_filter, chosen,
           winners_only ? "1" : "r.status = 'ok' AND r.id IN (SELECT id FROM w)",
           winners_only ? "w CROSS JOIN results r ON r.id = w.id" : "results r",
           device ? " AND r.device_id = ?1" : "", r_hash_filter,
           winners_only ? " AND r.status = 'ok'" : "");
  sqlite3_stmt *st = NULL;
  char hash[2][17];
  int rc = clnorm__db_prepare_listing(db, text, device != NULL, id, hashes, hash, &st);
  if (rc != SQLITE_OK)
    return clnorm__db_sql_error(db, rc, "listing results", err, err_size);
  db->skipped = 0;
  db->skipped_why[0] = '\0';
  clnorm_device_identity d;
  clnorm_result r;
  while ((rc = next_row(db, st, &d, &r)) == SQLITE_ROW)
    if (fn(user, &d, &r, sqlite3_column_int(st, 27) != 0)) {
      rc = SQLITE_DONE;
      break;
    }
  return clnorm__db_end_listing(db, st, rc, "listing results", err, err_size);
}

/* An array that listings append to: items of `size` bytes, `count` of them in room for `cap`. */
typedef struct collected {
  void *items;
  size_t size, count, cap;
  int no_memory;
} collected;

/* Appends a copy of item (grown by doubling); 1 (stop the listing) when out of memory. */
static int append(collected *c, const void *item) {
  if (c->count == c->cap) {
    const size_t cap = c->cap ? c->cap * 2 : 64;
    void *items = realloc(c->items, cap * c->size);
    if (!items) {
      c->no_memory = 1;
      return 1;
    }
    c->items = items;
    c->cap = cap;
  }
  memcpy((char *)c->items + c->count++ * c->size, item, c->size);
  return 0;
}

static int collect(void *user, const clnorm_device_identity *device, const clnorm_result *result,
                   int winner) {
  return append(user, result);
}

static int shape_cmp(const void *pa, const void *pb) {
  const clnorm_result *a = pa, *b = pb;
  const uint64_t ka[] = {a->op, a->dtype, a->cols, a->row_class};
  const uint64_t kb[] = {b->op, b->dtype, b->cols, b->row_class};
  return clnorm__keys_cmp(ka, kb, 4);
}

clnorm_status clnorm__db_winners(clnorm_db *db, const clnorm_device_identity *device,
                                 const clnorm_kernel_hashes *hashes, clnorm_result **out,
                                 size_t *count, char *err, size_t err_size) {
  if (out)
    *out = NULL;
  if (count)
    *count = 0;
  if (!device || !hashes || !out || !count)
    return clnorm__db_error(CLNORM_E_INVALID_ARG, err, err_size, "%s is NULL",
                            !device   ? "device"
                            : !hashes ? "hashes"
                            : !out    ? "out"
                                      : "count");
  collected c = {NULL, sizeof(clnorm_result), 0, 0, 0};
  clnorm_status status = clnorm__db_list(db, device, hashes, 1, collect, &c, err, err_size);
  if (status == CLNORM_OK && c.no_memory)
    status =
        clnorm__db_error(CLNORM_E_NO_MEMORY, err, err_size, "out of memory reading tuned results");
  if (status != CLNORM_OK) {
    free(c.items);
    return status;
  }
  if (c.count > 1)
    qsort(c.items, c.count, c.size, shape_cmp);
  status = clnorm__db_winner_rows(db, device, c.items, c.count, err, err_size);
  if (status != CLNORM_OK) {
    free(c.items);
    return status;
  }
  *out = c.items;
  *count = c.count;
  return CLNORM_OK;
}

clnorm_status clnorm__db_earlier(clnorm_db *db, const clnorm_device_identity *device,
                                 const clnorm_result *shape, size_t max, clnorm_result *out,
                                 size_t *count, char *err, size_t err_size) {
  if (count)
    *count = 0;
  clnorm_status status = clnorm__db_check_device(db, device, !shape || (max && !out) || !count,
                                                 "shape, out or count", err, err_size);
  if (status != CLNORM_OK)
    return status;
  sqlite3_int64 id = -1;
  int rc = clnorm__db_device_id(db, device, 0, &id);
  if (rc != SQLITE_OK)
    return clnorm__db_sql_error(db, rc, "looking up the device", err, err_size);
  if (id < 0 || max == 0)
    return CLNORM_OK;
  /* h: the device's kernel hashes, one index seek each (a skip-scan: scanning the device's rows
   * for them took 60 ms a shape on the H200's 283,000 results, this 1 ms); e: for each but the
   * current, the newest timed row of the shape; then the rows of the newest such hash: "ok"
   * first, then those cut short as slow (their time a bound from below), each fastest first */
  static const char text[] =
      "WITH RECURSIVE h(k) AS (SELECT min(kernel_hash) FROM results WHERE device_id = ?1"
      " UNION ALL SELECT (SELECT min(kernel_hash) FROM results WHERE device_id = ?1"
      " AND kernel_hash > h.k) FROM h WHERE h.k IS NOT NULL),"
      " e(k, t) AS (SELECT k, (SELECT max(measured_at) FROM results WHERE device_id = ?1"
      " AND kernel_hash = h.k AND op = ?3 AND dtype = ?4 AND cols = ?5 AND row_class = ?6"
      " AND status IN ('ok', 'slow') AND median_s IS NOT NULL) FROM h"
      " WHERE k IS NOT NULL AND k <> ?2)"
      " SELECT d.vendor_id, d.vendor, d.name, d.driver_version, d.opencl_version,"
      " d.compute_units, d.max_clock_mhz, d.local_mem, r.kernel_hash, r.op, r.dtype, r.cols,"
      " r.row_class, r.rows" CLNORM_VARIANT_SQL_R_COLUMNS
      ", r.status, r.median_s, r.min_s, r.gbps, r.max_err, r.measured_at, r.clnorm_version"
      " FROM results r JOIN devices d ON d.id = r.device_id"
      " WHERE r.device_id = ?1 AND r.op = ?3 AND r.dtype = ?4 AND r.cols = ?5"
      " AND r.row_class = ?6 AND r.status IN ('ok', 'slow') AND r.median_s IS NOT NULL"
      " AND r.kernel_hash = (SELECT k FROM e WHERE t IS NOT NULL ORDER BY t DESC, k LIMIT 1)"
      " ORDER BY r.status <> 'ok', r.median_s, r.min_s, r.id LIMIT ?7";
  sqlite3_stmt *st = NULL;
  rc = sqlite3_prepare_v2(db->sql, text, -1, &st, NULL);
  if (rc != SQLITE_OK)
    return clnorm__db_sql_error(db, rc, "listing earlier kernels' results", err, err_size);
  clnorm__db_bind_shape(st, id, shape->kernel_hash, shape->op, shape->dtype, shape->cols,
                        shape->row_class);
  sqlite3_bind_int64(st, 7, max > (size_t)INT64_MAX ? INT64_MAX : (sqlite3_int64)max);
  db->skipped = 0;
  db->skipped_why[0] = '\0';
  clnorm_device_identity d;
  while (*count < max && (rc = next_row(db, st, &d, &out[*count])) == SQLITE_ROW)
    ++*count;
  if (rc == SQLITE_ROW)
    rc = SQLITE_DONE;
  return clnorm__db_end_listing(db, st, rc, "listing earlier kernels' results", err, err_size);
}

/* Steps st, a prepared SELECT count(*) (rc: what its preparation returned), for the count in
 * *out (0 where it fails) and finalizes it: SQLite's result code. */
static int count_rows(int rc, sqlite3_stmt *st, uint64_t *out) {
  *out = 0;
  if (rc == SQLITE_OK) {
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
      *out = (uint64_t)sqlite3_column_int64(st, 0);
      rc = SQLITE_OK;
    }
  }
  sqlite3_finalize(st);
  return rc;
}

uint64_t clnorm__db_skipped(const clnorm_db *db, char *reason, size_t reason_size) {
  if (reason_size)
    snprintf(reason, reason_size, "%s", db && db->skipped ? db->skipped_why : "");
  return db ? db->skipped : 0;
}

clnorm_status clnorm__db_stale(clnorm_db *db, const clnorm_device_identity *device,
                               const clnorm_kernel_hashes *hashes, clnorm_db_stale *out, char *err,
                               size_t err_size) {
  const clnorm_status st =
      clnorm__db_check_null(db, device, !hashes || !out, !hashes ? "hashes" : "out", err, err_size);
  if (st != CLNORM_OK)
    return st;
  memset(out, 0, sizeof *out);
  char family[256], other_kernels[384];
  clnorm__db_family_hash(family, sizeof family, "");
  snprintf(other_kernels, sizeof other_kernels,
           "SELECT count(*) FROM results WHERE device_id = ?1 AND kernel_hash <> %s", family);
  sqlite3_int64 id = -1;
  sqlite3_stmt *q = NULL;
  int rc = sqlite3_prepare_v2(db->sql,
                              "SELECT count(*) FROM results r JOIN devices d ON d.id = r.device_id"
                              " WHERE d.vendor_id = ?1 AND d.vendor = ?2 AND d.name = ?3"
                              " AND d.driver_version <> ?4",
                              -1, &q, NULL);
  if (rc == SQLITE_OK) {
    sqlite3_bind_int64(q, 1, device->vendor_id);
    sqlite3_bind_text(q, 2, device->vendor, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 3, device->name, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 4, device->driver_version, -1, SQLITE_STATIC);
  }
  rc = count_rows(rc, q, &out->driver_changed);
  if (rc == SQLITE_OK)
    rc = clnorm__db_device_id(db, device, 0, &id);
  if (rc == SQLITE_OK && id >= 0) {
    char hash[2][17];
    q = NULL;
    rc = clnorm__db_prepare_listing(db, other_kernels, 1, id, hashes, hash, &q);
    rc = count_rows(rc, q, &out->kernels_changed);
  }
  return rc == SQLITE_OK ? CLNORM_OK
                         : clnorm__db_sql_error(db, rc, "counting stale results", err, err_size);
}

clnorm_status clnorm__db_device_in(clnorm_db *db, const char *table,
                                   const clnorm_device_identity *device, sqlite3_int64 *id,
                                   const char *doing, char *err, size_t err_size) {
  int present = 0;
  *id = -1;
  int rc = clnorm__db_has_table(db->sql, table, &present);
  if (rc == SQLITE_OK && present)
    rc = clnorm__db_device_id(db, device, 0, id);
  return rc == SQLITE_OK ? CLNORM_OK : clnorm__db_sql_error(db, rc, doing, err, err_size);
}

int clnorm__db_has_table(sqlite3 *sql, const char *name, int *yes) {
  sqlite3_stmt *st = NULL;
  int rc = sqlite3_prepare_v2(sql,
                              "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND"
                              " name = ?1",
                              -1, &st, NULL);
  if (rc == SQLITE_OK)
    sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
  uint64_t n = 0;
  rc = count_rows(rc, st, &n);
  *yes = n > 0;
  return rc;
}

clnorm_status clnorm__db_list_heuristic(clnorm_db *db, const clnorm_device_identity *device,
                                        const clnorm_kernel_hashes *hashes, clnorm_db_row_fn fn,
                                        void *user, char *err, size_t err_size) {
  clnorm__db_clear(err, err_size);
  if (!db || !fn)
    return clnorm__db_error(CLNORM_E_INVALID_ARG, err, err_size, "%s is NULL", !db ? "db" : "fn");
  int present = 0;
  int rc = clnorm__db_has_table(db->sql, "heuristic", &present);
  if (rc != SQLITE_OK)
    return clnorm__db_sql_error(db, rc, "reading the schema", err, err_size);
  if (!present)
    return CLNORM_OK;
  sqlite3_int64 id = -1;
  if (device) {
    char reason[160];
    if (!clnorm__db_device_valid(device, reason, sizeof reason))
      return clnorm__db_error(CLNORM_E_INVALID_ARG, err, err_size, "device identity: %s", reason);
    if ((rc = clnorm__db_device_id(db, device, 0, &id)) != SQLITE_OK)
      return clnorm__db_sql_error(db, rc, "looking up the device", err, err_size);
    if (id < 0)
      return CLNORM_OK;
  }
  char hash_filter[320] = "";
  if (hashes)
    clnorm__db_current(hash_filter, sizeof hash_filter, "r.");
  char text[1536];
  snprintf(text, sizeof text,
           "SELECT d.vendor_id, d.vendor, d.name, d.driver_version, d.opencl_version,"
           " d.compute_units, d.max_clock_mhz, d.local_mem, r.kernel_hash, r.op, r.dtype,"
           " r.cols, r.row_class, r.rows" CLNORM_VARIANT_SQL_R_COLUMNS
           ", r.status, r.median_s, r.min_s, r.gbps, r.max_err, r.measured_at,"
           " r.clnorm_version FROM heuristic r JOIN devices d ON d.id = r.device_id"
           " WHERE 1%s%s ORDER BY d.id, r.kernel_hash, r.op, r.dtype, r.cols, r.row_class",
           device ? " AND r.device_id = ?1" : "", hash_filter);
  sqlite3_stmt *st = NULL;
  char hash[2][17];
  if ((rc = clnorm__db_prepare_listing(db, text, device != NULL, id, hashes, hash, &st)) !=
      SQLITE_OK)
    return clnorm__db_sql_error(db, rc, "listing the heuristic's results", err, err_size);
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    clnorm_device_identity d;
    clnorm_result r;
    char reason[192];
    if (clnorm__db_read_row(st, &d, &r, reason, sizeof reason) && fn(user, &d, &r, 0)) {
      rc = SQLITE_DONE;
      break;
    }
  }
  sqlite3_finalize(st);
  return rc == SQLITE_DONE
             ? CLNORM_OK
             : clnorm__db_sql_error(db, rc, "listing the heuristic's results", err, err_size);
}

clnorm_status clnorm__db_copy_gbps(clnorm_db *db, const clnorm_device_identity *device,
                                   double *gbps, uint64_t *bytes, int64_t *measured_at, char *err,
                                   size_t err_size) {
  const clnorm_status bad = clnorm__db_check_null(db, device, !gbps, "gbps", err, err_size);
  if (bad != CLNORM_OK)
    return bad;
  *gbps = NAN;
  if (bytes)
    *bytes = 0;
  if (measured_at)
    *measured_at = 0;
  sqlite3_int64 id;
  const clnorm_status found = clnorm__db_device_in(db, "copy_bandwidth", device, &id,
                                                   "reading the copy bandwidth", err, err_size);
  if (found != CLNORM_OK || id < 0)
    return found;
  sqlite3_stmt *st = NULL;
  int rc = sqlite3_prepare_v2(
      db->sql, "SELECT gbps, bytes, measured_at FROM copy_bandwidth WHERE device_id = ?1", -1, &st,
      NULL);
  if (rc == SQLITE_OK) {
    sqlite3_bind_int64(st, 1, id);
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
      const double v = clnorm__db_column_double(st, 0);
      *gbps = isfinite(v) && v > 0 ? v : NAN;
      if (bytes)
        *bytes = (uint64_t)(sqlite3_column_int64(st, 1) > 0 ? sqlite3_column_int64(st, 1) : 0);
      if (measured_at)
        *measured_at = sqlite3_column_int64(st, 2);
      rc = SQLITE_OK;
    } else if (rc == SQLITE_DONE) {
      rc = SQLITE_OK;
    }
  }
  sqlite3_finalize(st);
  return rc == SQLITE_OK
             ? CLNORM_OK
             : clnorm__db_sql_error(db, rc, "reading the copy bandwidth", err, err_size);
}

clnorm_status clnorm__db_devices(clnorm_db *db, const clnorm_kernel_hashes *hashes,
                                 clnorm_db_device_fn fn, void *user, char *err, size_t err_size) {
  clnorm__db_clear(err, err_size);
  if (!db || !hashes || !fn)
    return clnorm__db_error(CLNORM_E_INVALID_ARG, err, err_size, "%s is NULL",
                            !db       ? "db"
                            : !hashes ? "hashes"
                                      : "fn");
  char current[320], text[1536];
  clnorm__db_current(current, sizeof current, "r.");
  snprintf(text, sizeof text,
           "SELECT d.vendor_id, d.vendor, d.name, d.driver_version, d.opencl_version,"
           " d.compute_units, d.max_clock_mhz, d.local_mem,"
           " (SELECT count(*) FROM results r WHERE r.device_id = d.id),"
           " (SELECT count(*) FROM results r WHERE r.device_id = d.id%s),"
           " (SELECT count(*) FROM (SELECT DISTINCT op, dtype, cols, row_class FROM results r"
           "  WHERE r.device_id = d.id%s AND r.status = 'ok' AND r.median_s IS NOT NULL))"
           " FROM devices d ORDER BY d.id",
           current, current);
  sqlite3_stmt *st = NULL;
  char hash[2][17];
  int rc = clnorm__db_prepare_listing(db, text, 0, 0, hashes, hash, &st);
  if (rc != SQLITE_OK)
    return clnorm__db_sql_error(db, rc, "listing devices", err, err_size);
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    clnorm_device_identity d;
    clnorm_db_device_counts c;
    memset(&c, 0, sizeof c);
    if (clnorm__db_read_device(st, &d) >= 0)
      continue;
    c.results = (uint64_t)sqlite3_column_int64(st, 8);
    c.current = (uint64_t)sqlite3_column_int64(st, 9);
    c.shapes = (uint64_t)sqlite3_column_int64(st, 10);
    if (fn(user, &d, &c)) {
      rc = SQLITE_DONE;
      break;
    }
  }
  return clnorm__db_end_listing(db, st, rc, "listing devices", err, err_size);
}

typedef struct tuned_devices {
  collected devices;
  uint64_t other_kernels;
} tuned_devices;

static int add_tuned(void *user, const clnorm_device_identity *device,
                     const clnorm_db_device_counts *counts) {
  tuned_devices *t = user;
  t->other_kernels += counts->results - counts->current;
  return counts->shapes > 0 ? append(&t->devices, device) : 0;
}

clnorm_status clnorm__db_tuned_devices(clnorm_db *db, const clnorm_kernel_hashes *hashes,
                                       clnorm_device_identity **out, size_t *count,
                                       uint64_t *other_kernels, char *err, size_t err_size) {
  tuned_devices t = {{NULL, sizeof(clnorm_device_identity), 0, 0, 0}, 0};
  clnorm_status st = clnorm__db_devices(db, hashes, add_tuned, &t, err, err_size);
  if (st == CLNORM_OK && t.devices.no_memory)
    st = clnorm__db_error(CLNORM_E_NO_MEMORY, err, err_size, "out of memory");
  if (st != CLNORM_OK) {
    free(t.devices.items);
    t.devices.items = NULL;
    t.devices.count = 0;
  }
  *out = t.devices.items;
  *count = t.devices.count;
  if (other_kernels)
    *other_kernels = t.other_kernels;
  return st;
}
