/* The tuning database (see db.h): opening, migrating and repairing the file, the messages and the
 * validation the other db_*.c files share. The db_*.c files are the only ones that talk to
 * SQLite. */
#define _POSIX_C_SOURCE 200809L
#include "db_private.h"
#include "platform.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define APPLICATION_ID 0x434c4e4d /* "CLNM" in the file header: tells our files from others' */
#define BUSY_TIMEOUT_MS 5000
#define BUSY_RETRIES 12 /* a writer waits up to about a minute for another process's commit */

/* Migrations, in order: migrations[i] takes schema version i to i + 1. Never edit a released
 * entry; append a new one and raise CLNORM_DB_SCHEMA. Enumerations are stored by name and not
 * constrained in SQL, so a new op, dtype or reduction needs no migration. */
#define OLDEST_READABLE                                                                            \
  1 /* readers (the library) need no migration from this version on; raise                         \
       it when a migration changes what the queries read */
/* The columns of a measured variant, shared by the results and heuristic tables (the SQL is
 * the same text as when each was written out). */
#define RESULT_COLUMNS                                                                             \
  " id INTEGER PRIMARY KEY,"                                                                       \
  " device_id INTEGER NOT NULL REFERENCES devices (id),"                                           \
  " kernel_hash TEXT NOT NULL, op TEXT NOT NULL, dtype TEXT NOT NULL,"                             \
  " cols INTEGER NOT NULL, row_class INTEGER NOT NULL,"                                            \
  " wg INTEGER NOT NULL, tpr INTEGER NOT NULL, vec INTEGER NOT NULL, hold INTEGER NOT NULL,"       \
  " reduce TEXT NOT NULL, stats TEXT NOT NULL,"                                                    \
  " rows INTEGER NOT NULL, status TEXT NOT NULL,"                                                  \
  " median_s REAL, min_s REAL, gbps REAL, max_err REAL,"                                           \
  " measured_at INTEGER NOT NULL, clnorm_version TEXT NOT NULL,"
static const char *const migrations[] = {
    "CREATE TABLE devices ("
    " id INTEGER PRIMARY KEY,"
    " vendor_id INTEGER NOT NULL,"
    " vendor TEXT NOT NULL,"
    " name TEXT NOT NULL,"
    " driver_version TEXT NOT NULL,"
    " opencl_version TEXT NOT NULL,"
    " compute_units INTEGER NOT NULL,"
    " max_clock_mhz INTEGER NOT NULL,"
    " local_mem INTEGER NOT NULL,"
    " UNIQUE (vendor_id, vendor, name, driver_version, opencl_version, compute_units,"
    "         max_clock_mhz, local_mem));"
    "CREATE TABLE results (" RESULT_COLUMNS
    " UNIQUE (device_id, kernel_hash, op, dtype, cols, row_class, wg, tpr, vec, hold, reduce,"
    "         stats));",
    /* 1 -> 2: each shape's results in winner order, so loading the winners needs no sort */
    "CREATE INDEX IF NOT EXISTS results_winners ON results (device_id, kernel_hash, op, dtype,"
    " cols, row_class, median_s, min_s, id) WHERE status = 'ok' AND median_s IS NOT NULL;",
    /* 2 -> 3: what a report draws beside the winners: the device's copy bandwidth, and the
     * heuristic's (untuned) variant of each shape with its measured figures. The library reads
     * neither table, so OLDEST_READABLE stays; the queries of these tables read nothing from a
     * database without them. */
    "CREATE TABLE IF NOT EXISTS copy_bandwidth ("
    " device_id INTEGER PRIMARY KEY REFERENCES devices (id),"
    " gbps REAL NOT NULL,"
    " bytes INTEGER NOT NULL,"
    " measured_at INTEGER NOT NULL,"
    " clnorm_version TEXT NOT NULL);"
    "CREATE TABLE IF NOT EXISTS heuristic (" RESULT_COLUMNS
    " UNIQUE (device_id, kernel_hash, op, dtype, cols, row_class));",
    /* 3 -> 4: the interleaved A/B of each shape's best candidate against the heuristic's
     * variant, per row count tuned; the winners query reads it where it exists (a database
     * without it is read as before, so OLDEST_READABLE stays). */
    "CREATE TABLE IF NOT EXISTS ab ("
    " id INTEGER PRIMARY KEY,"
    " device_id INTEGER NOT NULL REFERENCES devices (id),"
    " kernel_hash TEXT NOT NULL, op TEXT NOT NULL, dtype TEXT NOT NULL,"
    " cols INTEGER NOT NULL, row_class INTEGER NOT NULL, rows INTEGER NOT NULL,"
    " wg INTEGER NOT NULL, tpr INTEGER NOT NULL, vec INTEGER NOT NULL, hold INTEGER NOT NULL,"
    " reduce TEXT NOT NULL, stats TEXT NOT NULL,"
    " h_wg INTEGER NOT NULL, h_tpr INTEGER NOT NULL, h_vec INTEGER NOT NULL,"
    " h_hold INTEGER NOT NULL, h_reduce TEXT NOT NULL, h_stats TEXT NOT NULL,"
    " candidate_s REAL NOT NULL, heuristic_s REAL NOT NULL, noise REAL NOT NULL,"
    " rounds INTEGER NOT NULL, verdict TEXT NOT NULL,"
    " measured_at INTEGER NOT NULL, clnorm_version TEXT NOT NULL,"
    " UNIQUE (device_id, kernel_hash, op, dtype, cols, row_class, rows));",
};
_Static_assert(COUNT(migrations) == CLNORM_DB_SCHEMA, "one migration per schema version");

/* Why a database could not be opened, for clnorm__db_repair. */
typedef enum problem { P_NONE, P_OTHER, P_CORRUPT, P_NEWER, P_FOREIGN } problem;

static clnorm_status failv(clnorm_status status, char *err, size_t err_size, const char *fmt,
                           va_list args) {
  if (err && err_size)
    vsnprintf(err, err_size, fmt, args);
  return status;
}

clnorm_status clnorm__db_error(clnorm_status status, char *err, size_t err_size, const char *fmt,
                               ...) {
  va_list args;
  va_start(args, fmt);
  failv(status, err, err_size, fmt, args);
  va_end(args);
  return status;
}

void clnorm__db_clear(char *err, size_t err_size) {
  if (err && err_size)
    err[0] = '\0';
}

static int is_corrupt(int rc) {
  return (rc & 0xff) == SQLITE_CORRUPT || (rc & 0xff) == SQLITE_NOTADB;
}

static const char *rc_kind(int rc) {
  switch (rc & 0xff) {
  case SQLITE_CORRUPT:
  case SQLITE_NOTADB:
    return "is corrupt";
  case SQLITE_BUSY:
  case SQLITE_LOCKED:
    return "is locked by another process";
  case SQLITE_READONLY:
    return "is read-only";
  case SQLITE_CANTOPEN:
    return "cannot be opened";
  case SQLITE_FULL:
    return "cannot grow (disk full)";
  case SQLITE_IOERR:
    return "could not be read or written";
  case SQLITE_PERM:
  case SQLITE_AUTH:
    return "is not accessible (permission denied)";
  case SQLITE_NOMEM:
    return "ran out of memory";
  }
  return "failed";
}

/* The errno of the last failed system call on the database, its WAL or its journal (0: none
 * known). sqlite3_system_errno() alone often says 0: SQLite reads errno after later calls of its
 * own have overwritten it, while each file keeps the errno of its own failure. */
static int system_error(sqlite3 *sql) {
  int e = sql ? sqlite3_system_errno(sql) : 0;
  sqlite3_file *journal = NULL;
  if (!e && sql &&
      sqlite3_file_control(sql, "main", SQLITE_FCNTL_JOURNAL_POINTER, &journal) == SQLITE_OK &&
      journal && journal->pMethods &&
      journal->pMethods->xFileControl(journal, SQLITE_FCNTL_LAST_ERRNO, &e) != SQLITE_OK)
    e = 0;
  if (!e && sql && sqlite3_file_control(sql, "main", SQLITE_FCNTL_LAST_ERRNO, &e) != SQLITE_OK)
    e = 0;
  return e;
}

/* SQLite's message of the failure rc, where the connection still holds it: a later call that
 * succeeded (a ROLLBACK after the failure) leaves "not an error", its message of SQLITE_OK. */
static const char *rc_message(sqlite3 *sql, int rc) {
  return sql && sqlite3_errcode(sql) == (rc & 0xff) ? sqlite3_errmsg(sql) : sqlite3_errstr(rc);
}

/* "tuning database 'PATH' is corrupt: reading the schema: file is not a database"; detail NULL:
 * SQLite's message of rc. */
static clnorm_status sql_fail_with(const char *path, sqlite3 *sql, int rc, const char *doing,
                                   const char *detail, char *err, size_t err_size) {
  if (!detail)
    detail = rc_message(sql, rc);
  /* "disk I/O error" alone does not tell a full disk or file-size limit (EFBIG) from a failing
   * device: add what the system said */
  const int os_error = system_error(sql);
  const int io =
      (rc & 0xff) == SQLITE_IOERR || (rc & 0xff) == SQLITE_FULL || (rc & 0xff) == SQLITE_CANTOPEN;
  return clnorm__db_error((rc & 0xff) == SQLITE_NOMEM ? CLNORM_E_NO_MEMORY : CLNORM_E_DB, err,
                          err_size, "tuning database '%s' %s: %s: %s%s%s%s", path, rc_kind(rc),
                          doing, detail, io && os_error ? " (" : "",
                          io && os_error ? strerror(os_error) : "", io && os_error ? ")" : "");
}

static clnorm_status sql_fail(const char *path, sqlite3 *sql, int rc, const char *doing, char *err,
                              size_t err_size) {
  return sql_fail_with(path, sql, rc, doing, NULL, err, err_size);
}

clnorm_status clnorm__db_sql_error(clnorm_db *db, int rc, const char *doing, char *err,
                                   size_t err_size) {
  return sql_fail(db->path, db->sql, rc, doing, err, err_size);
}

clnorm_status clnorm__db_end_listing(clnorm_db *db, sqlite3_stmt *st, int rc, const char *doing,
                                     char *err, size_t err_size) {
  sqlite3_finalize(st);
  return rc == SQLITE_DONE ? CLNORM_OK : clnorm__db_sql_error(db, rc, doing, err, err_size);
}

const char *clnorm__outcome_name(clnorm_outcome outcome) {
  return clnorm__name_of(clnorm__outcome_names, CLNORM__OUTCOME_COUNT, (int)outcome, "?");
}

void clnorm__db_hash_text(uint64_t hash, char out[17]) {
  snprintf(out, 17, "%016llx", (unsigned long long)hash);
}

int clnorm__db_parse_hash(const char *text, uint64_t *out) {
  uint64_t v = 0;
  size_t n = 0;
  for (; text[n]; n++) {
    const char c = text[n];
    const int digit = c >= '0' && c <= '9'   ? c - '0'
                      : c >= 'a' && c <= 'f' ? c - 'a' + 10
                      : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                             : -1;
    if (digit < 0 || n >= 16)
      return 0;
    v = (v << 4) | (uint64_t)digit;
  }
  *out = v;
  return n > 0;
}

static int why(char *buf, size_t size, const char *fmt, ...) CLNORM_DB_PRINTF(3, 4);
static int why(char *buf, size_t size, const char *fmt, ...) {
  va_list args;
  va_start(args, fmt);
  if (buf && size)
    vsnprintf(buf, size, fmt, args);
  va_end(args);
  return 0;
}

static int text_ok(const char *text, size_t size) {
  const size_t len = strnlen(text, size);
  if (len >= size || len > CLNORM_DB_TEXT_MAX)
    return 0;
  for (size_t i = 0; i < len; i++)
    if ((unsigned char)text[i] < 0x20)
      return 0;
  return 1;
}

int clnorm__db_device_valid(const clnorm_device_identity *d, char *buf, size_t size) {
  if (!text_ok(d->vendor, sizeof d->vendor))
    return why(buf, size, "vendor: not a string of at most %d printable bytes", CLNORM_DB_TEXT_MAX);
  if (!text_ok(d->name, sizeof d->name))
    return why(buf, size, "name: not a string of at most %d printable bytes", CLNORM_DB_TEXT_MAX);
  if (!text_ok(d->driver_version, sizeof d->driver_version))
    return why(buf, size, "driver_version: not a string of at most %d printable bytes",
               CLNORM_DB_TEXT_MAX);
  if (!text_ok(d->cl_version, sizeof d->cl_version))
    return why(buf, size, "opencl_version: not a string of at most %d printable bytes",
               CLNORM_DB_TEXT_MAX);
  if (d->local_mem > (cl_ulong)INT64_MAX)
    return why(buf, size, "local_mem: out of range");
  return 1;
}

static int time_ok(double t) { return isnan(t) || t >= 0; }

int clnorm__db_key_valid(clnorm_op op, clnorm_dtype dtype, uint64_t cols, unsigned row_class,
                         uint64_t rows, const clnorm_variant *v, char *buf, size_t size) {
  if ((unsigned)op >= COUNT(clnorm__op_names))
    return why(buf, size, "op: unknown value %d", (int)op);
  if ((unsigned)dtype >= COUNT(clnorm__dtype_names))
    return why(buf, size, "dtype: unknown value %d", (int)dtype);
  if (cols < 1 || cols > CLNORM_DB_MAX_COLS)
    return why(buf, size, "cols: %llu is not from 1 to %llu", (unsigned long long)cols,
               (unsigned long long)CLNORM_DB_MAX_COLS);
  if (row_class > CLNORM_DB_MAX_ROW_CLASS)
    return why(buf, size, "row_class: %u is above %d", row_class, CLNORM_DB_MAX_ROW_CLASS);
  if (rows > CLNORM_DB_MAX_ROWS)
    return why(buf, size, "rows: out of range");
  return clnorm__db_variant_valid(v, buf, size);
}

int clnorm__db_variant_valid(const clnorm_variant *v, char *buf, size_t size) {
  if (v->wg < 1 || v->wg > CLNORM_DB_MAX_WG)
    return why(buf, size, "wg: %u is not from 1 to %u", v->wg, CLNORM_DB_MAX_WG);
  if (v->tpr < 1 || v->tpr > v->wg)
    return why(buf, size, "tpr: %u is not from 1 to wg (%u)", v->tpr, v->wg);
  if (v->vec != 1 && v->vec != 2 && v->vec != 4 && v->vec != 8 && v->vec != 16)
    return why(buf, size, "vec: %u is not 1, 2, 4, 8 or 16", v->vec);
  if (v->hold > CLNORM_DB_MAX_HOLD)
    return why(buf, size, "hold: %u is above %d", v->hold, CLNORM_DB_MAX_HOLD);
  if ((unsigned)v->reduce >= COUNT(clnorm__reduce_names))
    return why(buf, size, "reduce: unknown value %d", (int)v->reduce);
  if ((unsigned)v->stats >= COUNT(clnorm__stats_names))
    return why(buf, size, "stats: unknown value %d", (int)v->stats);
  return 1;
}

int clnorm__db_result_valid(const clnorm_result *r, char *buf, size_t size) {
  if (!clnorm__db_key_valid(r->op, r->dtype, r->cols, r->row_class, r->rows, &r->variant, buf,
                            size))
    return 0;
  if ((unsigned)r->outcome >= COUNT(clnorm__outcome_names))
    return why(buf, size, "status: unknown value %d", (int)r->outcome);
  if (!time_ok(r->median_s) || !time_ok(r->min_s) || !time_ok(r->gbps) || !time_ok(r->max_err))
    return why(buf, size, "median_s, min_s, gbps and max_err must be >= 0 or NaN");
  if (r->outcome == CLNORM_OUTCOME_OK &&
      !(isfinite(r->median_s) && r->median_s > 0 && isfinite(r->min_s) && r->min_s > 0))
    return why(buf, size, "an \"ok\" result needs finite median_s and min_s above 0");
  if (r->measured_at < 0)
    return why(buf, size, "measured_at: negative");
  if (!text_ok(r->clnorm_version, sizeof r->clnorm_version))
    return why(buf, size, "clnorm_version: not a string of at most %d bytes",
               (int)sizeof r->clnorm_version - 1);
  return 1;
}

clnorm_status clnorm__db_default_path(char *buf, size_t size, char *err, size_t err_size) {
  clnorm__db_clear(err, err_size);
  const char *db = getenv("CLNORM_DB");
  char cache[4096];
  const char *names;
  int n;
  if (db && *db)
    n = snprintf(buf, size, "%s", db);
  else if (clnorm__cache_home(cache, sizeof cache, &names))
    n = snprintf(buf, size, "%s/clnorm/tuning.db", cache);
  else
    return clnorm__db_error(CLNORM_E_DB, err, err_size,
                            "no tuning database path: none of CLNORM_DB, %s is set", names);
  if (n < 0 || (size_t)n >= size)
    return clnorm__db_error(CLNORM_E_DB, err, err_size, "the tuning database path is too long");
  return CLNORM_OK;
}

/* The directory part of path ("." when it has none) into buf. */
static void dir_of(const char *path, char *buf, size_t size) {
  const char *slash = clnorm__last_path_sep(path);
  if (!slash)
    snprintf(buf, size, ".");
  else if (slash == path)
    snprintf(buf, size, "/");
  else
    snprintf(buf, size, "%.*s", (int)(slash - path), path);
}

/* mkdir -p of path's directory. */
static clnorm_status make_parents(const char *path, char *err, size_t err_size) {
  char dir[4096];
  dir_of(path, dir, sizeof dir);
  if (strlen(dir) + 1 >= sizeof dir)
    return clnorm__db_error(CLNORM_E_DB, err, err_size, "tuning database path '%s' is too long",
                            path);
  if (!clnorm__make_dirs(dir))
    return clnorm__db_error(CLNORM_E_DB, err, err_size,
                            "cannot create directory '%s' for the tuning database: %s", dir,
                            strerror(errno));
  return CLNORM_OK;
}

/* "file:" URI of path with immutable=1: reads a database whose directory we cannot write (no
 * -shm file can be made), which SQLite refuses for WAL databases otherwise. Nobody can be writing
 * there either: a writer would need the same directory. */
static char *immutable_uri(const char *path) {
  static const char hex[] = "0123456789ABCDEF";
  const size_t len = strlen(path);
  char *uri = malloc(len * 3 + 32);
  if (!uri)
    return NULL;
  char *o = uri + sprintf(uri, "file:");
  for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
    if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
        strchr("/-._~", *p)) {
      *o++ = (char)*p;
    } else {
      *o++ = '%';
      *o++ = hex[*p >> 4];
      *o++ = hex[*p & 15];
    }
  }
  strcpy(o, "?immutable=1");
  return uri;
}

int clnorm__db_exec(sqlite3 *sql, const char *text) {
  return sqlite3_exec(sql, text, NULL, NULL, NULL);
}

int clnorm__db_pragma_int(sqlite3 *sql, const char *text, sqlite3_int64 *out) {
  sqlite3_stmt *st = NULL;
  int rc = sqlite3_prepare_v2(sql, text, -1, &st, NULL);
  if (rc == SQLITE_OK) {
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
      *out = sqlite3_column_int64(st, 0);
      rc = SQLITE_OK;
    } else if (rc == SQLITE_DONE) {
      *out = 0;
      rc = SQLITE_OK;
    }
  }
  sqlite3_finalize(st);
  return rc;
}

/* Begins a write transaction, waiting (busy timeout, then retries) while another connection
 * holds the write lock: taking the lock up front means the transaction never fails half-way for
 * a concurrent writer. */
int clnorm__db_begin_write(sqlite3 *sql) {
  int rc = SQLITE_BUSY;
  for (int attempt = 0; attempt <= BUSY_RETRIES; attempt++) {
    rc = clnorm__db_exec(sql, "BEGIN IMMEDIATE");
    if ((rc & 0xff) != SQLITE_BUSY)
      break;
    clnorm__sleep_ms(10 + 37 * attempt);
  }
  return rc;
}

/* Reads the header fields that tell what the file is. On a failure *what says which step and
 * detail holds SQLite's message (the ROLLBACK after it clears the connection's). */
static int inspect(sqlite3 *sql, sqlite3_int64 *app_id, sqlite3_int64 *version,
                   sqlite3_int64 *objects, const char **what, char *detail, size_t detail_size) {
  /* One read transaction: the three reads see one snapshot. Read one by one, another writer's
   * schema creation could commit between them, and a fresh database under construction would
   * look like a foreign one (user_version 0, tables present). */
  *what = "reading the schema version";
  int rc = sqlite3_exec(sql, "BEGIN", NULL, NULL, NULL);
  if (rc != SQLITE_OK) {
    snprintf(detail, detail_size, "%s", rc_message(sql, rc));
    return rc;
  }
  rc = clnorm__db_pragma_int(sql, "PRAGMA application_id", app_id);
  if (rc == SQLITE_OK)
    rc = clnorm__db_pragma_int(sql, "PRAGMA user_version", version);
  if (rc == SQLITE_OK) {
    *what = "reading the schema";
    rc = clnorm__db_pragma_int(sql, "SELECT count(*) FROM sqlite_master", objects);
  }
  if (rc != SQLITE_OK)
    snprintf(detail, detail_size, "%s", rc_message(sql, rc));
  sqlite3_exec(sql, rc == SQLITE_OK ? "COMMIT" : "ROLLBACK", NULL, NULL, NULL);
  return rc;
}

/* Integrity check; a bad file gives SQLITE_CORRUPT and the first problem in detail. */
static int quick_check(sqlite3 *sql, char *detail, size_t size) {
  sqlite3_stmt *st = NULL;
  int rc = sqlite3_prepare_v2(sql, "PRAGMA quick_check(1)", -1, &st, NULL);
  if (rc == SQLITE_OK) {
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
      const char *text = (const char *)sqlite3_column_text(st, 0);
      if (text && strcmp(text, "ok") == 0) {
        rc = SQLITE_OK;
      } else {
        snprintf(detail, size, "%s", text ? text : "integrity check failed");
        rc = SQLITE_CORRUPT;
      }
    }
  }
  if (rc != SQLITE_OK && rc != SQLITE_CORRUPT)
    snprintf(detail, size, "%s", sqlite3_errmsg(sql));
  sqlite3_finalize(st);
  return rc;
}

static int migrate(sqlite3 *sql) {
  int rc = clnorm__db_begin_write(sql);
  if (rc != SQLITE_OK)
    return rc;
  /* Another process may have migrated since we looked: read the version again under the lock. */
  sqlite3_int64 version = 0;
  rc = clnorm__db_pragma_int(sql, "PRAGMA user_version", &version);
  if (rc == SQLITE_OK && version < 0) /* migrations[version] would be out of bounds */
    rc = SQLITE_CORRUPT;
  for (sqlite3_int64 v = version; rc == SQLITE_OK && v < CLNORM_DB_SCHEMA; v++)
    rc = clnorm__db_exec(sql, migrations[v]);
  if (rc == SQLITE_OK && version < CLNORM_DB_SCHEMA) {
    char text[96];
    snprintf(text, sizeof text, "PRAGMA user_version = %d; PRAGMA application_id = %d",
             CLNORM_DB_SCHEMA, APPLICATION_ID);
    rc = clnorm__db_exec(sql, text);
  }
  if (rc == SQLITE_OK)
    rc = clnorm__db_exec(sql, "COMMIT");
  if (rc != SQLITE_OK)
    clnorm__db_exec(sql, "ROLLBACK");
  return rc;
}

static int set_wal(sqlite3 *sql) {
  int rc = SQLITE_OK;
  for (int attempt = 0; attempt <= BUSY_RETRIES; attempt++) {
    sqlite3_stmt *st = NULL;
    rc = sqlite3_prepare_v2(sql, "PRAGMA journal_mode = WAL", -1, &st, NULL);
    if (rc == SQLITE_OK) {
      rc = sqlite3_step(st);
      if (rc == SQLITE_ROW) {
        const char *mode = (const char *)sqlite3_column_text(st, 0);
        rc = mode && strcmp(mode, "wal") == 0 ? SQLITE_OK : SQLITE_BUSY;
      }
    }
    sqlite3_finalize(st);
    if ((rc & 0xff) != SQLITE_BUSY)
      break;
    clnorm__sleep_ms(10 + 37 * attempt);
  }
  return rc;
}

static clnorm_status open_db(const char *path, int mode, clnorm_db **out, problem *kind, char *err,
                             size_t err_size) {
  *out = NULL;
  *kind = P_OTHER;
  clnorm__db_clear(err, err_size);
  if (!path || !*path)
    return clnorm__db_error(CLNORM_E_INVALID_ARG, err, err_size, "no tuning database path given");
  if (mode != CLNORM_DB_READ && mode != CLNORM_DB_WRITE && mode != CLNORM_DB_READONLY)
    return clnorm__db_error(CLNORM_E_INVALID_ARG, err, err_size, "unknown database open mode %d",
                            mode);
  const int writing = mode == CLNORM_DB_WRITE;

  struct stat st;
  const int exists = stat(path, &st) == 0;
  if (!exists && errno == ENOENT && !writing)
    return clnorm__db_error(CLNORM_E_DB, err, err_size, "no tuning database at '%s'", path);
  if ((!exists && errno != ENOENT) || (exists && access(path, R_OK) != 0))
    return clnorm__db_error(CLNORM_E_DB, err, err_size,
                            "tuning database '%s' is not accessible: %s", path, strerror(errno));
  if (exists && !S_ISREG(st.st_mode))
    return clnorm__db_error(CLNORM_E_DB, err, err_size,
                            "tuning database '%s' is not a regular file", path);
  if (writing) {
    char dir[4096];
    clnorm_status s = make_parents(path, err, err_size);
    if (s != CLNORM_OK)
      return s;
    dir_of(path, dir, sizeof dir);
    if (exists && access(path, W_OK) != 0)
      return clnorm__db_error(CLNORM_E_DB, err, err_size,
                              "tuning database '%s' is read-only (%s): cannot store results", path,
                              strerror(errno));
    /* SQLite creates the database, its -wal and -shm files beside it */
    if (access(dir, W_OK) != 0)
      return clnorm__db_error(
          CLNORM_E_DB, err, err_size,
          "directory '%s' of the tuning database is read-only (%s): cannot store "
          "results",
          dir, strerror(errno));
  }

  clnorm_db *db = calloc(1, sizeof *db);
  if (!db || !(db->path = strdup(path))) {
    free(db);
    return clnorm__db_error(CLNORM_E_NO_MEMORY, err, err_size, "out of memory opening '%s'", path);
  }
  db->writable = writing;
  /* A reader that may write the file opens it read-write (and query_only): as the last
   * connection, it then removes the -wal and -shm files on closing instead of leaving them. */
  const int flags = writing ? SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE
                    : mode == CLNORM_DB_READ && access(path, W_OK) == 0 ? SQLITE_OPEN_READWRITE
                                                                        : SQLITE_OPEN_READONLY;
  const char *what = "opening";
  char inspected[512] = ""; /* SQLite's message of a failed inspect() */
  sqlite3_int64 app_id = 0, version = 0, objects = 0;
  /* The system database is opened as immutable: nothing, not even a -shm file, is written
   * beside it (it is installed whole, checkpointed, as normtune leaves a database it closes). */
  char *system_uri = mode == CLNORM_DB_READONLY ? immutable_uri(path) : NULL;
  int rc = sqlite3_open_v2(system_uri ? system_uri : path, &db->sql,
                           system_uri ? flags | SQLITE_OPEN_URI : flags, NULL);
  free(system_uri);
  if (rc == SQLITE_OK) {
    sqlite3_busy_timeout(db->sql, BUSY_TIMEOUT_MS);
    sqlite3_extended_result_codes(db->sql, 1);
    if (!writing)
      clnorm__db_exec(db->sql, "PRAGMA query_only = 1");
    rc = inspect(db->sql, &app_id, &version, &objects, &what, inspected, sizeof inspected);
  }
  if (!writing && rc != SQLITE_OK && !is_corrupt(rc) && (rc & 0xff) != SQLITE_BUSY) {
    /* A WAL database in a directory we cannot write: read it as immutable. */
    char *uri = immutable_uri(path);
    if (uri) {
      sqlite3_close(db->sql);
      db->sql = NULL;
      inspected[0] = '\0';
      rc = sqlite3_open_v2(uri, &db->sql, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, NULL);
      free(uri);
      if (rc == SQLITE_OK) {
        sqlite3_extended_result_codes(db->sql, 1);
        rc = inspect(db->sql, &app_id, &version, &objects, &what, inspected, sizeof inspected);
      }
    }
  }
  clnorm_status status = CLNORM_OK;
  if (rc != SQLITE_OK) {
    status = sql_fail_with(path, db->sql, rc, what, inspected[0] ? inspected : NULL, err, err_size);
    *kind = is_corrupt(rc) ? P_CORRUPT : P_OTHER;
  } else if (app_id != 0 && app_id != APPLICATION_ID) {
    status = clnorm__db_error(
        CLNORM_E_DB, err, err_size,
        "'%s' is another application's SQLite database (application_id 0x%llx), not a "
        "clnorm tuning database",
        path, (unsigned long long)app_id);
    *kind = P_FOREIGN;
  } else if (version < 0) {
    /* clnorm never writes one: changed by hand or damaged, or not ours at all */
    status = clnorm__db_error(
        CLNORM_E_DB, err, err_size,
        app_id == APPLICATION_ID
            ? "tuning database '%s' is corrupt: negative schema version %lld"
            : "'%s' is an SQLite database with user_version %lld, not a clnorm tuning "
              "database",
        path, (long long)version);
    *kind = app_id == APPLICATION_ID ? P_CORRUPT : P_FOREIGN;
  } else if (version > CLNORM_DB_SCHEMA) {
    status =
        clnorm__db_error(CLNORM_E_DB, err, err_size,
                         "tuning database '%s' has schema version %lld, newer than this clnorm "
                         "(" THIS_VERSION ", schema %d) knows; it was left untouched",
                         path, (long long)version, CLNORM_DB_SCHEMA);
    *kind = P_NEWER;
  } else if (version == 0 && objects > 0) {
    status =
        clnorm__db_error(CLNORM_E_DB, err, err_size,
                         "'%s' is an SQLite database without a clnorm schema, not a clnorm tuning "
                         "database",
                         path);
    *kind = P_FOREIGN;
  } else if (!writing && version < OLDEST_READABLE) {
    status =
        clnorm__db_error(CLNORM_E_DB, err, err_size,
                         version == 0 ? "tuning database '%s' is empty (schema version %lld)"
                                      : "tuning database '%s' has the older schema version %lld: "
                                        "storing a result with normtune upgrades it",
                         path, (long long)version);
  }
  if (status == CLNORM_OK && writing) {
    if (sqlite3_db_readonly(db->sql, "main") == 1) {
      status = clnorm__db_error(CLNORM_E_DB, err, err_size,
                                "tuning database '%s' is read-only: cannot store results", path);
    } else {
      char detail[512] = "";
      rc = objects > 0 ? quick_check(db->sql, detail, sizeof detail) : SQLITE_OK;
      what = "setting WAL mode";
      if (rc == SQLITE_OK && (rc = set_wal(db->sql)) == SQLITE_OK) {
        /* in WAL mode NORMAL loses no commit when the process dies, only on power loss */
        clnorm__db_exec(db->sql, "PRAGMA synchronous = NORMAL");
        what = "creating or upgrading the schema";
        rc = migrate(db->sql);
      }
      if (rc != SQLITE_OK && detail[0]) {
        status = clnorm__db_error(CLNORM_E_DB, err, err_size,
                                  "tuning database '%s' %s: integrity check: %s", path, rc_kind(rc),
                                  detail);
      } else if (rc != SQLITE_OK) {
        status = sql_fail(path, db->sql, rc, what, err, err_size);
      }
      *kind = is_corrupt(rc) ? P_CORRUPT : P_OTHER;
    }
  }
  if (status != CLNORM_OK) {
    clnorm__db_close(db);
    return status;
  }
  clnorm__db_exec(db->sql, "PRAGMA foreign_keys = ON");
  *kind = P_NONE;
  *out = db;
  return CLNORM_OK;
}

clnorm_status clnorm__db_open(const char *path, int mode, clnorm_db **out, char *err,
                              size_t err_size) {
  problem kind;
  clnorm_db *db = NULL;
  const clnorm_status status = open_db(path, mode, &db, &kind, err, err_size);
  if (out)
    *out = db;
  else
    clnorm__db_close(db);
  return status;
}

/* Whether the database file was renamed over or removed while this connection had it open, and
 * the -wal file at the path is still this connection's own. */
static int wal_orphaned(sqlite3 *sql) {
  int moved = 0, wal_moved = 1;
  sqlite3_file *wal = NULL;
  if (!sql || sqlite3_file_control(sql, "main", SQLITE_FCNTL_HAS_MOVED, &moved) != SQLITE_OK ||
      !moved)
    return 0;
  if (sqlite3_file_control(sql, "main", SQLITE_FCNTL_JOURNAL_POINTER, &wal) != SQLITE_OK || !wal ||
      !wal->pMethods ||
      wal->pMethods->xFileControl(wal, SQLITE_FCNTL_HAS_MOVED, &wal_moved) != SQLITE_OK)
    return 0;
  return !wal_moved;
}

void clnorm__db_close(clnorm_db *db) {
  if (!db)
    return;
  for (int i = 0; i < ST_COUNT; i++)
    sqlite3_finalize(db->stmt[i]);
  /* SQLite skips the checkpoint on closing a database that was renamed over or removed, and
   * leaves its -wal file, named after the path: the next connection would replay it into the
   * file there now, overwriting that file's pages with the lost one's. It belongs to the file
   * that is gone: remove it, and its -shm index. */
  const int orphaned = wal_orphaned(db->sql);
  sqlite3_close(db->sql);
  if (orphaned) {
    static const char *const suffixes[] = {"-wal", "-shm"};
    const size_t len = strlen(db->path);
    char *name = malloc(len + 5);
    for (size_t i = 0; name && i < COUNT(suffixes); i++) {
      memcpy(name, db->path, len);
      strcpy(name + len, suffixes[i]);
      unlink(name);
    }
    free(name);
  }
  free(db->path);
  free(db);
}

/* Renames from to to when from exists. */
static int move_if_present(const char *from, const char *to) {
  const int exists = clnorm__path_exists(from);
  return exists <= 0 ? exists : clnorm__rename_over(from, to);
}

clnorm_status clnorm__db_repair(const char *path, char *moved_to, size_t moved_size, char *err,
                                size_t err_size) {
  if (moved_to && moved_size)
    moved_to[0] = '\0';
  clnorm_db *db = NULL;
  problem kind;
  clnorm_status status = open_db(path, CLNORM_DB_WRITE, &db, &kind, err, err_size);
  clnorm__db_close(db);
  if (status == CLNORM_OK || (kind != P_CORRUPT && kind != P_NEWER))
    return status;

  const size_t len = strlen(path);
  char *bad = malloc(len + 64), *from = malloc(len + 8), *to = malloc(len + 72);
  if (!bad || !from || !to) {
    free(bad), free(from), free(to);
    return clnorm__db_error(CLNORM_E_NO_MEMORY, err, err_size, "out of memory");
  }
  /* a second repair within the same second must not overwrite the first one's file */
  const long long now = (long long)time(NULL);
  sprintf(bad, "%s.bad-%lld", path, now);
  for (int n = 1; clnorm__path_exists(bad) == 1 && n < 1000; n++)
    sprintf(bad, "%s.bad-%lld.%d", path, now, n);
  /* the -wal file belongs to the bad database: left in place, SQLite would replay it into the
   * fresh one */
  int failed = clnorm__rename_over(path, bad) != 0;
  static const char *const suffixes[] = {"-wal", "-shm"};
  for (size_t i = 0; !failed && i < COUNT(suffixes); i++) {
    sprintf(from, "%s%s", path, suffixes[i]);
    sprintf(to, "%s%s", bad, suffixes[i]);
    failed = move_if_present(from, to) != 0;
  }
  if (failed) {
    status = clnorm__db_error(CLNORM_E_DB, err, err_size,
                              "cannot move the bad tuning database '%s' aside: %s", path,
                              strerror(errno));
  } else {
    status = open_db(path, CLNORM_DB_WRITE, &db, &kind, err, err_size);
    clnorm__db_close(db);
    if (moved_to && moved_size)
      snprintf(moved_to, moved_size, "%s", bad);
  }
  free(bad), free(from), free(to);
  return status;
}

clnorm_status clnorm__db_schema(clnorm_db *db, int *version, char *err, size_t err_size) {
  clnorm__db_clear(err, err_size);
  if (!db || !version)
    return clnorm__db_error(CLNORM_E_INVALID_ARG, err, err_size, "%s is NULL",
                            !db ? "db" : "version");
  sqlite3_int64 v = 0;
  const int rc = clnorm__db_pragma_int(db->sql, "PRAGMA user_version", &v);
  *version = (int)v;
  return rc == SQLITE_OK
             ? CLNORM_OK
             : clnorm__db_sql_error(db, rc, "reading the schema version", err, err_size);
}

const char *clnorm__db_path(const clnorm_db *db) { return db->path; }

int clnorm__db_writable(const clnorm_db *db) { return db->writable; }
