/* The result store of the tuning database: prepared statements, a result's row both ways (bound
 * to a statement, read back), put, get and the import's store. The listings are db_query.c's. */
#define _POSIX_C_SOURCE 200809L
#include "db_private.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *const statements[ST_COUNT] = {
    [ST_FIND_DEVICE] = "SELECT id FROM devices WHERE vendor_id = ?1 AND vendor = ?2 AND name = ?3"
                       " AND driver_version = ?4 AND opencl_version = ?5 AND compute_units = ?6"
                       " AND max_clock_mhz = ?7 AND local_mem = ?8",
    [ST_ADD_DEVICE] = "INSERT OR IGNORE INTO devices (vendor_id, vendor, name, driver_version,"
                      " opencl_version, compute_units, max_clock_mhz, local_mem)"
                      " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    [ST_PUT] =
        "INSERT OR REPLACE INTO results (device_id, kernel_hash, op, dtype, cols, "
        "row_class" CLNORM_VARIANT_SQL_COLUMNS ", rows, status, median_s, min_s, gbps, max_err,"
        " measured_at, clnorm_version) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10,"
        " ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20)",
    [ST_GET] = "SELECT d.vendor_id, d.vendor, d.name, d.driver_version, d.opencl_version,"
               " d.compute_units, d.max_clock_mhz, d.local_mem, r.kernel_hash, r.op, r.dtype,"
               " r.cols, r.row_class, r.rows" CLNORM_VARIANT_SQL_R_COLUMNS
               ", r.status, r.median_s, r.min_s, r.gbps, r.max_err, r.measured_at,"
               " r.clnorm_version FROM results r JOIN devices d ON d.id = r.device_id"
               " WHERE r.device_id = ?1 AND r.kernel_hash = ?2 AND r.op = ?3 AND r.dtype = ?4"
               " AND r.cols = ?5 AND r.row_class = ?6 AND r.wg = ?7 AND r.tpr = ?8"
               " AND r.vec = ?9 AND r.hold = ?10 AND r.reduce = ?11 AND r.stats = ?12",
    /* an import replaces a stored result only with a later measurement */
    [ST_IMPORT] = "INSERT INTO results (device_id, kernel_hash, op, dtype, cols, "
                  "row_class" CLNORM_VARIANT_SQL_COLUMNS ", rows, status, median_s, min_s, gbps,"
                  " max_err, measured_at, clnorm_version) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7,"
                  " ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20)"
                  " ON CONFLICT (device_id, kernel_hash, op, dtype, cols, "
                  "row_class" CLNORM_VARIANT_SQL_COLUMNS ") DO UPDATE SET rows = excluded.rows,"
                  " status = excluded.status, median_s = excluded.median_s,"
                  " min_s = excluded.min_s, gbps = excluded.gbps, max_err = excluded.max_err,"
                  " measured_at = excluded.measured_at,"
                  " clnorm_version = excluded.clnorm_version"
                  " WHERE excluded.measured_at > results.measured_at",
    [ST_PUT_HEURISTIC] = "INSERT OR REPLACE INTO heuristic (device_id, kernel_hash, op, dtype,"
                         " cols, row_class" CLNORM_VARIANT_SQL_COLUMNS ", rows, status,"
                         " median_s, min_s, gbps, max_err, measured_at, clnorm_version) VALUES"
                         " (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15,"
                         " ?16, ?17, ?18, ?19, ?20)",
    [ST_PUT_AB] = "INSERT OR REPLACE INTO ab (device_id, kernel_hash, op, dtype, cols, row_class,"
                  " rows" CLNORM_VARIANT_SQL_COLUMNS ", h_wg, h_tpr, h_vec, h_hold, h_reduce,"
                  " h_stats, candidate_s, heuristic_s, noise, rounds, verdict, measured_at,"
                  " clnorm_version) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12,"
                  " ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26)",
    [ST_PUT_COPY] = ("INSERT OR REPLACE INTO copy_bandwidth (device_id, gbps, bytes, measured_at,"
                     " clnorm_version) VALUES (?1, ?2, ?3, ?4, ?5)"),
    /* only a refusal: a measured result is never forgotten */
    [ST_FORGET_REFUSAL] = "DELETE FROM results WHERE device_id = ?1 AND kernel_hash = ?2"
                          " AND op = ?3 AND dtype = ?4 AND cols = ?5 AND row_class = ?6"
                          " AND wg = ?7 AND tpr = ?8 AND vec = ?9 AND hold = ?10"
                          " AND reduce = ?11 AND stats = ?12 AND status = 'unsupported'",
};

/* The cached statement `which`, reset and unbound. */
static int stmt(clnorm_db *db, int which, sqlite3_stmt **out) {
  if (!db->stmt[which]) {
    const int rc = sqlite3_prepare_v2(db->sql, statements[which], -1, &db->stmt[which], NULL);
    if (rc != SQLITE_OK)
      return rc;
  }
  sqlite3_reset(db->stmt[which]);
  sqlite3_clear_bindings(db->stmt[which]);
  *out = db->stmt[which];
  return SQLITE_OK;
}

static void bind_device(sqlite3_stmt *st, const clnorm_device_identity *d) {
  sqlite3_bind_int64(st, 1, d->vendor_id);
  sqlite3_bind_text(st, 2, d->vendor, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 3, d->name, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 4, d->driver_version, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 5, d->cl_version, -1, SQLITE_STATIC);
  sqlite3_bind_int64(st, 6, d->compute_units);
  sqlite3_bind_int64(st, 7, d->max_clock_mhz);
  sqlite3_bind_int64(st, 8, (sqlite3_int64)d->local_mem);
}

int clnorm__db_device_id(clnorm_db *db, const clnorm_device_identity *d, int create,
                         sqlite3_int64 *id) {
  if (db->cached && clnorm__identity_equal(&db->cached_device, d)) {
    *id = db->cached_id;
    return SQLITE_OK;
  }
  sqlite3_stmt *st;
  int rc;
  if (create) {
    if ((rc = stmt(db, ST_ADD_DEVICE, &st)) != SQLITE_OK)
      return rc;
    bind_device(st, d);
    rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE)
      return rc;
  }
  if ((rc = stmt(db, ST_FIND_DEVICE, &st)) != SQLITE_OK)
    return rc;
  bind_device(st, d);
  rc = sqlite3_step(st);
  *id = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : -1;
  sqlite3_reset(st);
  if (rc != SQLITE_ROW && rc != SQLITE_DONE)
    return rc;
  /* Devices are never deleted, so a found id stays valid for the life of the handle. */
  if (*id >= 0) {
    db->cached = 1;
    db->cached_device = *d;
    db->cached_id = *id;
  }
  return SQLITE_OK;
}

static void bind_double(sqlite3_stmt *st, int index, double v) {
  if (isnan(v))
    sqlite3_bind_null(st, index);
  else
    sqlite3_bind_double(st, index, v);
}

void clnorm__db_bind_variant(sqlite3_stmt *st, int first, const clnorm_variant *v) {
  sqlite3_bind_int64(st, first, v->wg);
  sqlite3_bind_int64(st, first + 1, v->tpr);
  sqlite3_bind_int64(st, first + 2, v->vec);
  sqlite3_bind_int64(st, first + 3, v->hold);
  sqlite3_bind_text(st, first + 4, clnorm__reduce_names[v->reduce], -1, SQLITE_STATIC);
  sqlite3_bind_text(st, first + 5, clnorm__stats_names[v->stats], -1, SQLITE_STATIC);
}

void clnorm__db_bind_shape(sqlite3_stmt *st, sqlite3_int64 device, uint64_t kernel_hash,
                           clnorm_op op, clnorm_dtype dtype, uint64_t cols, unsigned row_class) {
  char hash[17];
  clnorm__db_hash_text(kernel_hash, hash);
  sqlite3_bind_int64(st, 1, device);
  sqlite3_bind_text(st, 2, hash, -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st, 3, clnorm__op_names[op], -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 4, clnorm__dtype_names[dtype], -1, SQLITE_STATIC);
  sqlite3_bind_int64(st, 5, (sqlite3_int64)cols);
  sqlite3_bind_int64(st, 6, row_class);
}

/* Binds the key of r (after ?1, the device id) as ?2..?12. */
static void bind_key(sqlite3_stmt *st, sqlite3_int64 device, const clnorm_result *r) {
  clnorm__db_bind_shape(st, device, r->kernel_hash, r->op, r->dtype, r->cols, r->row_class);
  clnorm__db_bind_variant(st, 7, &r->variant);
}

static void bind_result(sqlite3_stmt *st, sqlite3_int64 device, const clnorm_result *r) {
  bind_key(st, device, r);
  sqlite3_bind_int64(st, 13, (sqlite3_int64)r->rows);
  sqlite3_bind_text(st, 14, clnorm__outcome_names[r->outcome], -1, SQLITE_STATIC);
  bind_double(st, 15, r->median_s);
  bind_double(st, 16, r->min_s);
  bind_double(st, 17, r->gbps);
  bind_double(st, 18, r->max_err);
  sqlite3_bind_int64(st, 19, r->measured_at ? r->measured_at : (sqlite3_int64)time(NULL));
  sqlite3_bind_text(st, 20, r->clnorm_version[0] ? r->clnorm_version : THIS_VERSION, -1,
                    SQLITE_TRANSIENT);
}

/* Only a text without a NUL inside: a blob or a longer text that reads as the same string would
 * be a second row of one key (two winners of one shape) that SQLite's UNIQUE cannot see. */
static int column_text(sqlite3_stmt *st, int col, char *out, size_t size) {
  if (sqlite3_column_type(st, col) != SQLITE_TEXT)
    return 0;
  const char *text = (const char *)sqlite3_column_text(st, col);
  const size_t bytes = (size_t)sqlite3_column_bytes(st, col);
  if (!text || bytes >= size || strlen(text) != bytes)
    return 0;
  memcpy(out, text, bytes + 1);
  return 1;
}

/* NULL reads as NaN. A text or blob reads as -1, which every check rejects: SQLite would parse
 * one as a number, which then compares differently in SQL (min, ORDER BY) than in C. */
double clnorm__db_column_double(sqlite3_stmt *st, int col) {
  const int type = sqlite3_column_type(st, col);
  if (type == SQLITE_NULL)
    return NAN;
  return type == SQLITE_INTEGER || type == SQLITE_FLOAT ? sqlite3_column_double(st, col) : -1.0;
}

int clnorm__db_column_uint(sqlite3_stmt *st, int col, uint64_t max, uint64_t *out) {
  const sqlite3_int64 v = sqlite3_column_int64(st, col);
  if (sqlite3_column_type(st, col) != SQLITE_INTEGER || v < 0 || (uint64_t)v > max)
    return 0;
  *out = (uint64_t)v;
  return 1;
}

/* A name of names[count] in column col: its index, or -1 (another type, or not one of them). */
static int column_name(sqlite3_stmt *st, int col, const char *const *names, size_t count) {
  char text[32];
  return column_text(st, col, text, sizeof text) ? clnorm__name_index(names, count, text) : -1;
}

int clnorm__db_read_hash(sqlite3_stmt *st, int col, uint64_t *hash) {
  char text[32];
  return column_text(st, col, text, sizeof text) && clnorm__db_parse_hash(text, hash);
}

int clnorm__db_read_shape(sqlite3_stmt *st, int first, clnorm_op *op, clnorm_dtype *dtype,
                          uint64_t *cols, unsigned *row_class, uint64_t *rows) {
  const int op_i = column_name(st, first, clnorm__op_names, COUNT(clnorm__op_names));
  const int dtype_i = column_name(st, first + 1, clnorm__dtype_names, COUNT(clnorm__dtype_names));
  uint64_t row_class_u;
  if (op_i < 0 || dtype_i < 0)
    return op_i < 0 ? first : first + 1;
  if (!clnorm__db_column_uint(st, first + 2, CLNORM_DB_MAX_COLS, cols))
    return first + 2;
  if (!clnorm__db_column_uint(st, first + 3, CLNORM_DB_MAX_ROW_CLASS, &row_class_u))
    return first + 3;
  if (!clnorm__db_column_uint(st, first + 4, CLNORM_DB_MAX_ROWS, rows))
    return first + 4;
  *op = (clnorm_op)op_i;
  *dtype = (clnorm_dtype)dtype_i;
  *row_class = (unsigned)row_class_u;
  return -1;
}

int clnorm__db_read_variant(sqlite3_stmt *st, int first, clnorm_variant *v) {
  for (int i = 0; i < CLNORM_VARIANT_PARAMS; i++) {
    const clnorm_variant_param *p = &clnorm__variant_params[i];
    uint64_t value;
    if (p->names) {
      const int index = column_name(st, first + i, p->names, p->count);
      if (index < 0)
        return first + i;
      value = (uint64_t)index;
    } else if (!clnorm__db_column_uint(st, first + i, p->max, &value)) {
      return first + i;
    }
    clnorm__variant_set_param(v, i, (unsigned)value);
  }
  return -1;
}

/* The select list's column names, for the reason a row is skipped. */
#define PARAM_NAME(field, names, count, min, max) #field,
static const char *const row_columns[27] = {"vendor_id",
                                            "vendor",
                                            "name",
                                            "driver_version",
                                            "opencl_version",
                                            "compute_units",
                                            "max_clock_mhz",
                                            "local_mem",
                                            "kernel_hash",
                                            "op",
                                            "dtype",
                                            "cols",
                                            "row_class",
                                            "rows",
                                            CLNORM_VARIANT_PARAM_MAP(PARAM_NAME) "status",
                                            "median_s",
                                            "min_s",
                                            "gbps",
                                            "max_err",
                                            "measured_at",
                                            "clnorm_version"};

/* Sets bad to i and is 0 where check fails: the first column out of range or of the wrong type. */
#define COL(i, check) ((check) || (bad = (i), 0))

int clnorm__db_read_device(sqlite3_stmt *st, clnorm_device_identity *d) {
  memset(d, 0, sizeof *d);
  uint64_t v[4];
  int bad = -1;
  if (COL(0, clnorm__db_column_uint(st, 0, UINT32_MAX, &v[0])) &&
      COL(1, column_text(st, 1, d->vendor, sizeof d->vendor)) &&
      COL(2, column_text(st, 2, d->name, sizeof d->name)) &&
      COL(3, column_text(st, 3, d->driver_version, sizeof d->driver_version)) &&
      COL(4, column_text(st, 4, d->cl_version, sizeof d->cl_version)) &&
      COL(5, clnorm__db_column_uint(st, 5, UINT32_MAX, &v[1])) &&
      COL(6, clnorm__db_column_uint(st, 6, UINT32_MAX, &v[2])) &&
      COL(7, clnorm__db_column_uint(st, 7, INT64_MAX, &v[3]))) {
    d->vendor_id = (cl_uint)v[0];
    d->compute_units = (cl_uint)v[1];
    d->max_clock_mhz = (cl_uint)v[2];
    d->local_mem = (cl_ulong)v[3];
  }
  return bad;
}

int clnorm__db_read_row(sqlite3_stmt *st, clnorm_device_identity *d, clnorm_result *r, char *reason,
                        size_t reason_size) {
  memset(r, 0, sizeof *r);
  uint64_t measured_at;
  int bad = clnorm__db_read_device(st, d); /* the first column out of range or of the wrong type */
  if (bad < 0 && !clnorm__db_read_hash(st, 8, &r->kernel_hash))
    bad = 8;
  if (bad < 0)
    bad = clnorm__db_read_shape(st, 9, &r->op, &r->dtype, &r->cols, &r->row_class, &r->rows);
  if (bad < 0)
    bad = clnorm__db_read_variant(st, 14, &r->variant);
  if (bad < 0) {
    const int outcome = column_name(st, 20, clnorm__outcome_names, COUNT(clnorm__outcome_names));
    r->outcome = (clnorm_outcome)outcome;
    bad = outcome < 0                                                         ? 20
          : !clnorm__db_column_uint(st, 25, INT64_MAX, &measured_at)          ? 25
          : !column_text(st, 26, r->clnorm_version, sizeof r->clnorm_version) ? 26
                                                                              : -1;
  }
  if (bad >= 0) {
    snprintf(reason, reason_size,
             "%s is out of range, of the wrong type or a name this build does not know",
             row_columns[bad]);
    return 0;
  }
  r->median_s = clnorm__db_column_double(st, 21);
  r->min_s = clnorm__db_column_double(st, 22);
  r->gbps = clnorm__db_column_double(st, 23);
  r->max_err = clnorm__db_column_double(st, 24);
  r->measured_at = (int64_t)measured_at;
  return clnorm__db_device_valid(d, reason, reason_size) &&
         clnorm__db_result_valid(r, reason, reason_size);
}

clnorm_status clnorm__db_check_null(const clnorm_db *db, const void *device, int what_null,
                                    const char *what, char *err, size_t err_size) {
  clnorm__db_clear(err, err_size);
  if (!db || !device || what_null)
    return clnorm__db_error(CLNORM_E_INVALID_ARG, err, err_size, "%s is NULL",
                            !db       ? "db"
                            : !device ? "device"
                                      : what);
  return CLNORM_OK;
}

clnorm_status clnorm__db_check_device(const clnorm_db *db, const clnorm_device_identity *device,
                                      int what_null, const char *what, char *err, size_t err_size) {
  const clnorm_status st = clnorm__db_check_null(db, device, what_null, what, err, err_size);
  char reason[160];
  if (st == CLNORM_OK && !clnorm__db_device_valid(device, reason, sizeof reason))
    return clnorm__db_error(CLNORM_E_INVALID_ARG, err, err_size, "device identity: %s", reason);
  return st;
}

static clnorm_status check_args(clnorm_db *db, const clnorm_device_identity *d,
                                const clnorm_result *r, char *err, size_t err_size) {
  clnorm_status st = clnorm__db_check_device(db, d, !r, "result", err, err_size);
  char reason[160];
  if (st == CLNORM_OK && !clnorm__db_result_valid(r, reason, sizeof reason))
    st = clnorm__db_error(CLNORM_E_INVALID_ARG, err, err_size, "result: %s", reason);
  return st;
}

/* CLNORM_E_DB with a message when the file this handle writes is no longer the database at its
 * path: renamed over or removed (what SQLite's handle writes then goes to a file nobody will
 * read, while the -wal file, named after the path, would be replayed into the file there now),
 * or overwritten in place by another program. SQLite checks neither in WAL mode. Called inside
 * a write transaction, before anything is written. */
static clnorm_status check_file(clnorm_db *db, char *err, size_t err_size) {
  int moved = 0;
  if (sqlite3_file_control(db->sql, "main", SQLITE_FCNTL_HAS_MOVED, &moved) == SQLITE_OK && moved)
    return clnorm__db_error(
        CLNORM_E_DB, err, err_size,
        "tuning database '%s' was replaced or removed while this process was writing to "
        "it: nothing more is stored (the results stored since it was opened went to the "
        "file that is gone)",
        db->path);
  /* read through SQLite's own handle; a file shorter than 16 bytes (a new database whose pages
   * are all in the WAL) gives SQLITE_IOERR_SHORT_READ and passes */
  sqlite3_file *file = NULL;
  char magic[16];
  if (sqlite3_file_control(db->sql, "main", SQLITE_FCNTL_FILE_POINTER, &file) == SQLITE_OK &&
      file && file->pMethods && file->pMethods->xRead(file, magic, 16, 0) == SQLITE_OK &&
      memcmp(magic, "SQLite format 3", 16) != 0)
    return clnorm__db_error(
        CLNORM_E_DB, err, err_size,
        "tuning database '%s' was overwritten by another program while this process "
        "was writing to it: nothing more is stored",
        db->path);
  return CLNORM_OK;
}

/* Begins a write transaction of a writable handle on the file still at its path (check_file):
 * CLNORM_OK inside it, else an error saying it cannot `doing`, outside any transaction. */
static clnorm_status begin_store(clnorm_db *db, const char *doing, char *err, size_t err_size) {
  if (!db->writable)
    return clnorm__db_error(CLNORM_E_DB, err, err_size,
                            "tuning database '%s' was opened for reading: cannot %s", db->path,
                            doing);
  const int rc = clnorm__db_begin_write(db->sql);
  if (rc != SQLITE_OK)
    return clnorm__db_sql_error(db, rc, "starting a write transaction", err, err_size);
  const clnorm_status status = check_file(db, err, err_size);
  if (status != CLNORM_OK)
    clnorm__db_exec(db->sql, "ROLLBACK");
  return status;
}

/* Stores result (ST_PUT, ST_PUT_HEURISTIC: a clnorm_result; ST_PUT_AB: a clnorm_ab) or the copy
 * bandwidth (ST_PUT_COPY: copy_gbps, bytes) of device in one transaction. */
clnorm_status clnorm__db_put_row(clnorm_db *db, int which, const clnorm_device_identity *device,
                                 const void *result, double copy_gbps, uint64_t bytes, char *err,
                                 size_t err_size) {
  clnorm_status status = begin_store(db, "store results", err, err_size);
  if (status != CLNORM_OK)
    return status;
  sqlite3_int64 id = -1;
  sqlite3_stmt *st = NULL;
  const char *what = "storing the device";
  int rc = clnorm__db_device_id(db, device, 1, &id);
  if (rc == SQLITE_OK) {
    what = which == ST_PUT_COPY ? "storing the copy bandwidth" : "storing the result";
    rc = stmt(db, which, &st);
  }
  if (rc == SQLITE_OK) {
    if (which == ST_PUT_COPY) {
      sqlite3_bind_int64(st, 1, id);
      sqlite3_bind_double(st, 2, copy_gbps);
      sqlite3_bind_int64(st, 3, (sqlite3_int64)bytes);
      sqlite3_bind_int64(st, 4, (sqlite3_int64)time(NULL));
      sqlite3_bind_text(st, 5, THIS_VERSION, -1, SQLITE_STATIC);
    } else if (which == ST_PUT_AB) {
      clnorm__db_bind_ab(st, id, result);
    } else {
      bind_result(st, id, result);
    }
    rc = sqlite3_step(st);
    rc = rc == SQLITE_DONE ? SQLITE_OK : rc;
    sqlite3_reset(st);
  }
  if (rc == SQLITE_OK) {
    what = "committing";
    rc = clnorm__db_exec(db->sql, "COMMIT");
  }
  if (rc != SQLITE_OK) {
    status = clnorm__db_sql_error(db, rc, what, err, err_size);
    clnorm__db_exec(db->sql, "ROLLBACK");
    db->cached = 0; /* the device row may have been rolled back */
  }
  return status;
}

/* Checks and stores result with the statement `which` (ST_PUT, ST_PUT_HEURISTIC). */
static clnorm_status put_result(clnorm_db *db, int which, const clnorm_device_identity *device,
                                const clnorm_result *result, char *err, size_t err_size) {
  const clnorm_status status = check_args(db, device, result, err, err_size);
  return status != CLNORM_OK ? status
                             : clnorm__db_put_row(db, which, device, result, 0.0, 0, err, err_size);
}

clnorm_status clnorm__db_put(clnorm_db *db, const clnorm_device_identity *device,
                             const clnorm_result *result, char *err, size_t err_size) {
  return put_result(db, ST_PUT, device, result, err, err_size);
}

clnorm_status clnorm__db_put_heuristic(clnorm_db *db, const clnorm_device_identity *device,
                                       const clnorm_result *result, char *err, size_t err_size) {
  return put_result(db, ST_PUT_HEURISTIC, device, result, err, err_size);
}

clnorm_status clnorm__db_put_copy(clnorm_db *db, const clnorm_device_identity *device, double gbps,
                                  uint64_t bytes, char *err, size_t err_size) {
  clnorm__db_clear(err, err_size);
  if (!db || !device)
    return clnorm__db_error(CLNORM_E_INVALID_ARG, err, err_size, "%s is NULL",
                            !db ? "db" : "device");
  char reason[160];
  if (!clnorm__db_device_valid(device, reason, sizeof reason))
    return clnorm__db_error(CLNORM_E_INVALID_ARG, err, err_size, "device identity: %s", reason);
  if (!(isfinite(gbps) && gbps > 0) || bytes == 0 || bytes > (uint64_t)INT64_MAX)
    return clnorm__db_error(CLNORM_E_INVALID_ARG, err, err_size,
                            "copy bandwidth: %g GB/s over %llu bytes is not a measurement", gbps,
                            (unsigned long long)bytes);
  return clnorm__db_put_row(db, ST_PUT_COPY, device, NULL, gbps, bytes, err, err_size);
}

clnorm_status clnorm__db_get(clnorm_db *db, const clnorm_device_identity *device,
                             const clnorm_result *key, clnorm_result *out, int *found, char *err,
                             size_t err_size) {
  if (found)
    *found = 0;
  /* only the key fields matter */
  clnorm_status status = clnorm__db_check_device(db, device, !key, "result", err, err_size);
  char invalid[160];
  if (status == CLNORM_OK && !clnorm__db_key_valid(key->op, key->dtype, key->cols, key->row_class,
                                                   0, &key->variant, invalid, sizeof invalid))
    status = clnorm__db_error(CLNORM_E_INVALID_ARG, err, err_size, "result: %s", invalid);
  if (status != CLNORM_OK)
    return status;
  if (!found)
    return clnorm__db_error(CLNORM_E_INVALID_ARG, err, err_size, "found is NULL");
  sqlite3_int64 id;
  sqlite3_stmt *st;
  int rc = clnorm__db_device_id(db, device, 0, &id);
  if (rc == SQLITE_OK && id < 0)
    return CLNORM_OK;
  if (rc == SQLITE_OK && (rc = stmt(db, ST_GET, &st)) == SQLITE_OK) {
    bind_key(st, id, key);
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
      clnorm_device_identity d;
      clnorm_result r;
      char reason[192];
      if (clnorm__db_read_row(st, &d, &r, reason, sizeof reason)) {
        *found = 1;
        if (out)
          *out = r;
      }
      rc = SQLITE_OK;
    } else if (rc == SQLITE_DONE) {
      rc = SQLITE_OK;
    }
    sqlite3_reset(st);
  }
  return rc == SQLITE_OK ? CLNORM_OK
                         : clnorm__db_sql_error(db, rc, "looking up a result", err, err_size);
}

clnorm_status clnorm__db_forget_refusals(clnorm_db *db, const clnorm_device_identity *device,
                                         const clnorm_result *keys, size_t count, char *err,
                                         size_t err_size) {
  clnorm_status status = CLNORM_OK;
  for (size_t i = 0; i < count && status == CLNORM_OK; i++)
    status = check_args(db, device, &keys[i], err, err_size);
  if (status != CLNORM_OK || count == 0 ||
      (status = begin_store(db, "forget results", err, err_size)) != CLNORM_OK)
    return status;
  sqlite3_int64 id = -1;
  sqlite3_stmt *st = NULL;
  int rc = clnorm__db_device_id(db, device, 0, &id);
  if (rc == SQLITE_OK && id >= 0)
    rc = stmt(db, ST_FORGET_REFUSAL, &st);
  for (size_t i = 0; rc == SQLITE_OK && id >= 0 && i < count; i++) {
    bind_key(st, id, &keys[i]);
    rc = sqlite3_step(st);
    rc = rc == SQLITE_DONE ? SQLITE_OK : rc;
    sqlite3_reset(st);
  }
  if (rc == SQLITE_OK)
    rc = clnorm__db_exec(db->sql, "COMMIT");
  if (rc != SQLITE_OK) {
    status = clnorm__db_sql_error(db, rc, "forgetting refusals", err, err_size);
    clnorm__db_exec(db->sql, "ROLLBACK");
  }
  return status;
}

clnorm_status clnorm__db_import_rows(clnorm_db *db, const clnorm_device_identity *devices,
                                     size_t device_count, const clnorm_db_import_row *rows,
                                     size_t row_count, size_t *imported, size_t *kept, char *err,
                                     size_t err_size) {
  sqlite3_int64 *ids = calloc(device_count ? device_count : 1, sizeof *ids);
  if (!ids)
    return clnorm__db_error(CLNORM_E_NO_MEMORY, err, err_size, "import: out of memory");
  int rc = clnorm__db_begin_write(db->sql);
  if (rc != SQLITE_OK) {
    free(ids);
    return clnorm__db_sql_error(db, rc, "starting a write transaction", err, err_size);
  }
  const clnorm_status lost = check_file(db, err, err_size);
  if (lost != CLNORM_OK) {
    clnorm__db_exec(db->sql, "ROLLBACK");
    free(ids);
    return lost;
  }
  const char *what = "storing the imported devices";
  for (size_t i = 0; rc == SQLITE_OK && i < device_count; i++)
    rc = clnorm__db_device_id(db, &devices[i], 1, &ids[i]);
  if (rc == SQLITE_OK)
    what = "storing the imported results";
  for (size_t i = 0; rc == SQLITE_OK && i < row_count; i++) {
    sqlite3_stmt *st;
    if ((rc = stmt(db, ST_IMPORT, &st)) != SQLITE_OK)
      break;
    bind_result(st, ids[rows[i].device], &rows[i].result);
    rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc == SQLITE_DONE) {
      rc = SQLITE_OK;
      if (sqlite3_changes(db->sql) > 0)
        ++*imported;
      else
        ++*kept;
    }
  }
  if (rc == SQLITE_OK) {
    what = "committing the import";
    rc = clnorm__db_exec(db->sql, "COMMIT");
  }
  free(ids);
  if (rc != SQLITE_OK) {
    const clnorm_status status = clnorm__db_sql_error(db, rc, what, err, err_size);
    clnorm__db_exec(db->sql, "ROLLBACK");
    db->cached = 0;
    *imported = *kept = 0;
    return status;
  }
  return CLNORM_OK;
}
