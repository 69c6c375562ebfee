/* The tuning database (see db.h): the only file of clnorm that talks to SQLite. */
#define _POSIX_C_SOURCE 200809L
#include "db.h"
#include "names.h"
#include "platform.h"

#include <sqlite3.h>

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
#define TEXT_MAX 255    /* longest identity string (the struct's arrays hold 256 bytes) */
#define MAX_COLS (UINT64_C(1) << 40)
#define MAX_ROWS (UINT64_C(1) << 62)
#define MAX_ROW_CLASS 255
#define MAX_WG (1u << 20)
#define MAX_HOLD 4096

#define STR2(x) #x
#define STR(x) STR2(x)
#define THIS_VERSION                                                                               \
  STR(CLNORM_VERSION_MAJOR) "." STR(CLNORM_VERSION_MINOR) "." STR(CLNORM_VERSION_PATCH)
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* Migrations, in order: migrations[i] takes schema version i to i + 1. Never edit a released
 * entry; append a new one and raise CLNORM_DB_SCHEMA. Enumerations are stored by name and not
 * constrained in SQL, so a new op, dtype or reduction needs no migration. */
#define OLDEST_READABLE                                                                            \
  1 /* readers (the library) need no migration from this version on; raise                         \
       it when a migration changes what the queries read */
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
    "CREATE TABLE results ("
    " id INTEGER PRIMARY KEY,"
    " device_id INTEGER NOT NULL REFERENCES devices (id),"
    " kernel_hash TEXT NOT NULL,"
    " op TEXT NOT NULL,"
    " dtype TEXT NOT NULL,"
    " cols INTEGER NOT NULL,"
    " row_class INTEGER NOT NULL,"
    " wg INTEGER NOT NULL,"
    " tpr INTEGER NOT NULL,"
    " vec INTEGER NOT NULL,"
    " hold INTEGER NOT NULL,"
    " reduce TEXT NOT NULL,"
    " stats TEXT NOT NULL,"
    " rows INTEGER NOT NULL,"
    " status TEXT NOT NULL,"
    " median_s REAL,"
    " min_s REAL,"
    " gbps REAL,"
    " max_err REAL,"
    " measured_at INTEGER NOT NULL,"
    " clnorm_version TEXT NOT NULL,"
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
    "CREATE TABLE IF NOT EXISTS heuristic ("
    " id INTEGER PRIMARY KEY,"
    " device_id INTEGER NOT NULL REFERENCES devices (id),"
    " kernel_hash TEXT NOT NULL,"
    " op TEXT NOT NULL,"
    " dtype TEXT NOT NULL,"
    " cols INTEGER NOT NULL,"
    " row_class INTEGER NOT NULL,"
    " wg INTEGER NOT NULL,"
    " tpr INTEGER NOT NULL,"
    " vec INTEGER NOT NULL,"
    " hold INTEGER NOT NULL,"
    " reduce TEXT NOT NULL,"
    " stats TEXT NOT NULL,"
    " rows INTEGER NOT NULL,"
    " status TEXT NOT NULL,"
    " median_s REAL,"
    " min_s REAL,"
    " gbps REAL,"
    " max_err REAL,"
    " measured_at INTEGER NOT NULL,"
    " clnorm_version TEXT NOT NULL,"
    " UNIQUE (device_id, kernel_hash, op, dtype, cols, row_class));",
};
_Static_assert(COUNT(migrations) == CLNORM_DB_SCHEMA, "one migration per schema version");

enum {
  ST_FIND_DEVICE,
  ST_ADD_DEVICE,
  ST_PUT,
  ST_GET,
  ST_IMPORT,
  ST_PUT_HEURISTIC,
  ST_PUT_COPY,
  ST_COUNT
};

struct clnorm_db {
  sqlite3 *sql;
  char *path;
  int writable;
  sqlite3_stmt *stmt[ST_COUNT];
  /* the device last looked up: a tuning run stores thousands of results of one device */
  int cached;
  clnorm_device_identity cached_device;
  sqlite3_int64 cached_id;
  /* rows the last listing could not use, and why the first of them was skipped */
  uint64_t skipped;
  char skipped_why[192];
};

/* Why a database could not be opened, for clnorm__db_repair. */
typedef enum problem { P_NONE, P_OTHER, P_CORRUPT, P_NEWER, P_FOREIGN } problem;

/* ---- messages */

static clnorm_status failv(clnorm_status status, char *err, size_t err_size, const char *fmt,
                           va_list args) {
  if (err && err_size)
    vsnprintf(err, err_size, fmt, args);
  return status;
}

#if defined(__GNUC__)
#define PRINTF(a, b) __attribute__((format(CLNORM_PRINTF_FORMAT, a, b)))
#else
#define PRINTF(a, b)
#endif

static clnorm_status fail(clnorm_status status, char *err, size_t err_size, const char *fmt, ...)
    PRINTF(4, 5);
static clnorm_status fail(clnorm_status status, char *err, size_t err_size, const char *fmt, ...) {
  va_list args;
  va_start(args, fmt);
  failv(status, err, err_size, fmt, args);
  va_end(args);
  return status;
}

static void clear(char *err, size_t err_size) {
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
  return fail((rc & 0xff) == SQLITE_NOMEM ? CLNORM_E_NO_MEMORY : CLNORM_E_DB, err, err_size,
              "tuning database '%s' %s: %s: %s%s%s%s", path, rc_kind(rc), doing, detail,
              io && os_error ? " (" : "", io && os_error ? strerror(os_error) : "",
              io && os_error ? ")" : "");
}

static clnorm_status sql_fail(const char *path, sqlite3 *sql, int rc, const char *doing, char *err,
                              size_t err_size) {
  return sql_fail_with(path, sql, rc, doing, NULL, err, err_size);
}

static clnorm_status db_fail(clnorm_db *db, int rc, const char *doing, char *err, size_t err_size) {
  return sql_fail(db->path, db->sql, rc, doing, err, err_size);
}

const char *clnorm__outcome_name(clnorm_outcome outcome) {
  return clnorm__name_of(clnorm__outcome_names, CLNORM__OUTCOME_COUNT, (int)outcome, "?");
}

static void hash_text(uint64_t hash, char out[17]) {
  snprintf(out, 17, "%016llx", (unsigned long long)hash);
}

static int parse_hash(const char *text, uint64_t *out) {
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

/* ---- validation, shared by put, import and reading */

static int why(char *buf, size_t size, const char *fmt, ...) PRINTF(3, 4);
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
  if (len >= size || len > TEXT_MAX)
    return 0;
  for (size_t i = 0; i < len; i++)
    if ((unsigned char)text[i] < 0x20)
      return 0;
  return 1;
}

static int device_valid(const clnorm_device_identity *d, char *buf, size_t size) {
  if (!text_ok(d->vendor, sizeof d->vendor))
    return why(buf, size, "vendor: not a string of at most %d printable bytes", TEXT_MAX);
  if (!text_ok(d->name, sizeof d->name))
    return why(buf, size, "name: not a string of at most %d printable bytes", TEXT_MAX);
  if (!text_ok(d->driver_version, sizeof d->driver_version))
    return why(buf, size, "driver_version: not a string of at most %d printable bytes", TEXT_MAX);
  if (!text_ok(d->cl_version, sizeof d->cl_version))
    return why(buf, size, "opencl_version: not a string of at most %d printable bytes", TEXT_MAX);
  if (d->local_mem > (cl_ulong)INT64_MAX)
    return why(buf, size, "local_mem: out of range");
  return 1;
}

static int time_ok(double t) { return isnan(t) || t >= 0; }

static int result_valid(const clnorm_result *r, char *buf, size_t size) {
  const clnorm_variant *v = &r->variant;
  if ((unsigned)r->op >= COUNT(clnorm__op_names))
    return why(buf, size, "op: unknown value %d", (int)r->op);
  if ((unsigned)r->dtype >= COUNT(clnorm__dtype_names))
    return why(buf, size, "dtype: unknown value %d", (int)r->dtype);
  if (r->cols < 1 || r->cols > MAX_COLS)
    return why(buf, size, "cols: %llu is not from 1 to %llu", (unsigned long long)r->cols,
               (unsigned long long)MAX_COLS);
  if (r->row_class > MAX_ROW_CLASS)
    return why(buf, size, "row_class: %u is above %d", r->row_class, MAX_ROW_CLASS);
  if (r->rows > MAX_ROWS)
    return why(buf, size, "rows: out of range");
  if (v->wg < 1 || v->wg > MAX_WG)
    return why(buf, size, "wg: %u is not from 1 to %u", v->wg, MAX_WG);
  if (v->tpr < 1 || v->tpr > v->wg)
    return why(buf, size, "tpr: %u is not from 1 to wg (%u)", v->tpr, v->wg);
  if (v->vec != 1 && v->vec != 2 && v->vec != 4 && v->vec != 8 && v->vec != 16)
    return why(buf, size, "vec: %u is not 1, 2, 4, 8 or 16", v->vec);
  if (v->hold > MAX_HOLD)
    return why(buf, size, "hold: %u is above %d", v->hold, MAX_HOLD);
  if ((unsigned)v->reduce >= COUNT(clnorm__reduce_names))
    return why(buf, size, "reduce: unknown value %d", (int)v->reduce);
  if ((unsigned)v->stats >= COUNT(clnorm__stats_names))
    return why(buf, size, "stats: unknown value %d", (int)v->stats);
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

/* ---- files and paths */

clnorm_status clnorm__db_default_path(char *buf, size_t size, char *err, size_t err_size) {
  clear(err, err_size);
  const char *db = getenv("CLNORM_DB");
  char cache[4096];
  const char *names;
  int n;
  if (db && *db)
    n = snprintf(buf, size, "%s", db);
  else if (clnorm__cache_home(cache, sizeof cache, &names))
    n = snprintf(buf, size, "%s/clnorm/tuning.db", cache);
  else
    return fail(CLNORM_E_DB, err, err_size, "no tuning database path: none of CLNORM_DB, %s is set",
                names);
  if (n < 0 || (size_t)n >= size)
    return fail(CLNORM_E_DB, err, err_size, "the tuning database path is too long");
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
    return fail(CLNORM_E_DB, err, err_size, "tuning database path '%s' is too long", path);
  if (!clnorm__make_dirs(dir))
    return fail(CLNORM_E_DB, err, err_size,
                "cannot create directory '%s' for the tuning database: %s", dir, strerror(errno));
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

/* ---- opening */

static int exec(sqlite3 *sql, const char *text) {
  return sqlite3_exec(sql, text, NULL, NULL, NULL);
}

static int pragma_int(sqlite3 *sql, const char *text, sqlite3_int64 *out) {
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
static int begin_write(sqlite3 *sql) {
  int rc = SQLITE_BUSY;
  for (int attempt = 0; attempt <= BUSY_RETRIES; attempt++) {
    rc = exec(sql, "BEGIN IMMEDIATE");
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
  rc = pragma_int(sql, "PRAGMA application_id", app_id);
  if (rc == SQLITE_OK)
    rc = pragma_int(sql, "PRAGMA user_version", version);
  if (rc == SQLITE_OK) {
    *what = "reading the schema";
    rc = pragma_int(sql, "SELECT count(*) FROM sqlite_master", objects);
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
  int rc = begin_write(sql);
  if (rc != SQLITE_OK)
    return rc;
  /* Another process may have migrated since we looked: read the version again under the lock. */
  sqlite3_int64 version = 0;
  rc = pragma_int(sql, "PRAGMA user_version", &version);
  if (rc == SQLITE_OK && version < 0) /* migrations[version] would be out of bounds */
    rc = SQLITE_CORRUPT;
  for (sqlite3_int64 v = version; rc == SQLITE_OK && v < CLNORM_DB_SCHEMA; v++)
    rc = exec(sql, migrations[v]);
  if (rc == SQLITE_OK && version < CLNORM_DB_SCHEMA) {
    char text[96];
    snprintf(text, sizeof text, "PRAGMA user_version = %d; PRAGMA application_id = %d",
             CLNORM_DB_SCHEMA, APPLICATION_ID);
    rc = exec(sql, text);
  }
  if (rc == SQLITE_OK)
    rc = exec(sql, "COMMIT");
  if (rc != SQLITE_OK)
    exec(sql, "ROLLBACK");
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
  clear(err, err_size);
  if (!path || !*path)
    return fail(CLNORM_E_INVALID_ARG, err, err_size, "no tuning database path given");
  if (mode != CLNORM_DB_READ && mode != CLNORM_DB_WRITE)
    return fail(CLNORM_E_INVALID_ARG, err, err_size, "unknown database open mode %d", mode);
  const int writing = mode == CLNORM_DB_WRITE;

  struct stat st;
  const int exists = stat(path, &st) == 0;
  if (!exists && errno == ENOENT && !writing)
    return fail(CLNORM_E_DB, err, err_size, "no tuning database at '%s'", path);
  if ((!exists && errno != ENOENT) || (exists && access(path, R_OK) != 0))
    return fail(CLNORM_E_DB, err, err_size, "tuning database '%s' is not accessible: %s", path,
                strerror(errno));
  if (exists && !S_ISREG(st.st_mode))
    return fail(CLNORM_E_DB, err, err_size, "tuning database '%s' is not a regular file", path);
  if (writing) {
    char dir[4096];
    clnorm_status s = make_parents(path, err, err_size);
    if (s != CLNORM_OK)
      return s;
    dir_of(path, dir, sizeof dir);
    if (exists && access(path, W_OK) != 0)
      return fail(CLNORM_E_DB, err, err_size,
                  "tuning database '%s' is read-only (%s): cannot store results", path,
                  strerror(errno));
    /* SQLite creates the database, its -wal and -shm files beside it */
    if (access(dir, W_OK) != 0)
      return fail(CLNORM_E_DB, err, err_size,
                  "directory '%s' of the tuning database is read-only (%s): cannot store "
                  "results",
                  dir, strerror(errno));
  }

  clnorm_db *db = calloc(1, sizeof *db);
  if (!db || !(db->path = strdup(path))) {
    free(db);
    return fail(CLNORM_E_NO_MEMORY, err, err_size, "out of memory opening '%s'", path);
  }
  db->writable = writing;
  /* A reader that may write the file opens it read-write (and query_only): as the last
   * connection, it then removes the -wal and -shm files on closing instead of leaving them. */
  const int flags = writing                   ? SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE
                    : access(path, W_OK) == 0 ? SQLITE_OPEN_READWRITE
                                              : SQLITE_OPEN_READONLY;
  const char *what = "opening";
  char inspected[512] = ""; /* SQLite's message of a failed inspect() */
  sqlite3_int64 app_id = 0, version = 0, objects = 0;
  int rc = sqlite3_open_v2(path, &db->sql, flags, NULL);
  if (rc == SQLITE_OK) {
    sqlite3_busy_timeout(db->sql, BUSY_TIMEOUT_MS);
    sqlite3_extended_result_codes(db->sql, 1);
    if (!writing)
      exec(db->sql, "PRAGMA query_only = 1");
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
    status = fail(CLNORM_E_DB, err, err_size,
                  "'%s' is another application's SQLite database (application_id 0x%llx), not a "
                  "clnorm tuning database",
                  path, (unsigned long long)app_id);
    *kind = P_FOREIGN;
  } else if (version < 0) {
    /* clnorm never writes one: changed by hand or damaged, or not ours at all */
    status = fail(CLNORM_E_DB, err, err_size,
                  app_id == APPLICATION_ID
                      ? "tuning database '%s' is corrupt: negative schema version %lld"
                      : "'%s' is an SQLite database with user_version %lld, not a clnorm tuning "
                        "database",
                  path, (long long)version);
    *kind = app_id == APPLICATION_ID ? P_CORRUPT : P_FOREIGN;
  } else if (version > CLNORM_DB_SCHEMA) {
    status = fail(CLNORM_E_DB, err, err_size,
                  "tuning database '%s' has schema version %lld, newer than this clnorm "
                  "(" THIS_VERSION ", schema %d) knows; it was left untouched",
                  path, (long long)version, CLNORM_DB_SCHEMA);
    *kind = P_NEWER;
  } else if (version == 0 && objects > 0) {
    status = fail(CLNORM_E_DB, err, err_size,
                  "'%s' is an SQLite database without a clnorm schema, not a clnorm tuning "
                  "database",
                  path);
    *kind = P_FOREIGN;
  } else if (!writing && version < OLDEST_READABLE) {
    status = fail(CLNORM_E_DB, err, err_size,
                  version == 0 ? "tuning database '%s' is empty (schema version %lld)"
                               : "tuning database '%s' has the older schema version %lld: "
                                 "storing a result with normtune upgrades it",
                  path, (long long)version);
  }
  if (status == CLNORM_OK && writing) {
    if (sqlite3_db_readonly(db->sql, "main") == 1) {
      status = fail(CLNORM_E_DB, err, err_size,
                    "tuning database '%s' is read-only: cannot store results", path);
    } else {
      char detail[512] = "";
      rc = objects > 0 ? quick_check(db->sql, detail, sizeof detail) : SQLITE_OK;
      what = "setting WAL mode";
      if (rc == SQLITE_OK && (rc = set_wal(db->sql)) == SQLITE_OK) {
        /* in WAL mode NORMAL loses no commit when the process dies, only on power loss */
        exec(db->sql, "PRAGMA synchronous = NORMAL");
        what = "creating or upgrading the schema";
        rc = migrate(db->sql);
      }
      if (rc != SQLITE_OK && detail[0]) {
        status = fail(CLNORM_E_DB, err, err_size, "tuning database '%s' %s: integrity check: %s",
                      path, rc_kind(rc), detail);
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
  exec(db->sql, "PRAGMA foreign_keys = ON");
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
    return fail(CLNORM_E_NO_MEMORY, err, err_size, "out of memory");
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
    status = fail(CLNORM_E_DB, err, err_size, "cannot move the bad tuning database '%s' aside: %s",
                  path, strerror(errno));
  } else {
    status = open_db(path, CLNORM_DB_WRITE, &db, &kind, err, err_size);
    clnorm__db_close(db);
    if (moved_to && moved_size)
      snprintf(moved_to, moved_size, "%s", bad);
  }
  free(bad), free(from), free(to);
  return status;
}

/* ---- statements and rows */

static const char *const statements[ST_COUNT] = {
    [ST_FIND_DEVICE] = "SELECT id FROM devices WHERE vendor_id = ?1 AND vendor = ?2 AND name = ?3"
                       " AND driver_version = ?4 AND opencl_version = ?5 AND compute_units = ?6"
                       " AND max_clock_mhz = ?7 AND local_mem = ?8",
    [ST_ADD_DEVICE] = "INSERT OR IGNORE INTO devices (vendor_id, vendor, name, driver_version,"
                      " opencl_version, compute_units, max_clock_mhz, local_mem)"
                      " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    [ST_PUT] = "INSERT OR REPLACE INTO results (device_id, kernel_hash, op, dtype, cols, row_class,"
               " wg, tpr, vec, hold, reduce, stats, rows, status, median_s, min_s, gbps, max_err,"
               " measured_at, clnorm_version) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10,"
               " ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20)",
    [ST_GET] = "SELECT d.vendor_id, d.vendor, d.name, d.driver_version, d.opencl_version,"
               " d.compute_units, d.max_clock_mhz, d.local_mem, r.kernel_hash, r.op, r.dtype,"
               " r.cols, r.row_class, r.rows, r.wg, r.tpr, r.vec, r.hold, r.reduce, r.stats,"
               " r.status, r.median_s, r.min_s, r.gbps, r.max_err, r.measured_at,"
               " r.clnorm_version FROM results r JOIN devices d ON d.id = r.device_id"
               " WHERE r.device_id = ?1 AND r.kernel_hash = ?2 AND r.op = ?3 AND r.dtype = ?4"
               " AND r.cols = ?5 AND r.row_class = ?6 AND r.wg = ?7 AND r.tpr = ?8"
               " AND r.vec = ?9 AND r.hold = ?10 AND r.reduce = ?11 AND r.stats = ?12",
    /* an import replaces a stored result only with a later measurement */
    [ST_IMPORT] = "INSERT INTO results (device_id, kernel_hash, op, dtype, cols, row_class,"
                  " wg, tpr, vec, hold, reduce, stats, rows, status, median_s, min_s, gbps,"
                  " max_err, measured_at, clnorm_version) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7,"
                  " ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20)"
                  " ON CONFLICT (device_id, kernel_hash, op, dtype, cols, row_class, wg, tpr,"
                  " vec, hold, reduce, stats) DO UPDATE SET rows = excluded.rows,"
                  " status = excluded.status, median_s = excluded.median_s,"
                  " min_s = excluded.min_s, gbps = excluded.gbps, max_err = excluded.max_err,"
                  " measured_at = excluded.measured_at,"
                  " clnorm_version = excluded.clnorm_version"
                  " WHERE excluded.measured_at > results.measured_at",
    [ST_PUT_HEURISTIC] = "INSERT OR REPLACE INTO heuristic (device_id, kernel_hash, op, dtype,"
                         " cols, row_class, wg, tpr, vec, hold, reduce, stats, rows, status,"
                         " median_s, min_s, gbps, max_err, measured_at, clnorm_version) VALUES"
                         " (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15,"
                         " ?16, ?17, ?18, ?19, ?20)",
    [ST_PUT_COPY] = ("INSERT OR REPLACE INTO copy_bandwidth (device_id, gbps, bytes, measured_at,"
                     " clnorm_version) VALUES (?1, ?2, ?3, ?4, ?5)"),
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

/* The row id of device into *id (-1 when it is not stored and create is 0). */
static int device_id(clnorm_db *db, const clnorm_device_identity *d, int create,
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

/* Binds the key of r (after ?1, the device id) as ?2..?12. */
static void bind_key(sqlite3_stmt *st, sqlite3_int64 device, const clnorm_result *r,
                     char hash[17]) {
  hash_text(r->kernel_hash, hash);
  sqlite3_bind_int64(st, 1, device);
  sqlite3_bind_text(st, 2, hash, -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st, 3, clnorm__op_names[r->op], -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 4, clnorm__dtype_names[r->dtype], -1, SQLITE_STATIC);
  sqlite3_bind_int64(st, 5, (sqlite3_int64)r->cols);
  sqlite3_bind_int64(st, 6, r->row_class);
  sqlite3_bind_int64(st, 7, r->variant.wg);
  sqlite3_bind_int64(st, 8, r->variant.tpr);
  sqlite3_bind_int64(st, 9, r->variant.vec);
  sqlite3_bind_int64(st, 10, r->variant.hold);
  sqlite3_bind_text(st, 11, clnorm__reduce_names[r->variant.reduce], -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 12, clnorm__stats_names[r->variant.stats], -1, SQLITE_STATIC);
}

static void bind_result(sqlite3_stmt *st, sqlite3_int64 device, const clnorm_result *r) {
  char hash[17];
  bind_key(st, device, r, hash);
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
static double column_double(sqlite3_stmt *st, int col) {
  const int type = sqlite3_column_type(st, col);
  if (type == SQLITE_NULL)
    return NAN;
  return type == SQLITE_INTEGER || type == SQLITE_FLOAT ? sqlite3_column_double(st, col) : -1.0;
}

static int column_uint(sqlite3_stmt *st, int col, uint64_t max, uint64_t *out) {
  const sqlite3_int64 v = sqlite3_column_int64(st, col);
  if (sqlite3_column_type(st, col) != SQLITE_INTEGER || v < 0 || (uint64_t)v > max)
    return 0;
  *out = (uint64_t)v;
  return 1;
}

/* The select list's column names, for the reason a row is skipped. */
static const char *const row_columns[27] = {
    "vendor_id",     "vendor",        "name",      "driver_version", "opencl_version",
    "compute_units", "max_clock_mhz", "local_mem", "kernel_hash",    "op",
    "dtype",         "cols",          "row_class", "rows",           "wg",
    "tpr",           "vec",           "hold",      "reduce",         "stats",
    "status",        "median_s",      "min_s",     "gbps",           "max_err",
    "measured_at",   "clnorm_version"};

/* Reads the 27 columns of ST_GET's select list from the current row. Returns 0 for a row this
 * build cannot represent (a name from a newer clnorm, a value out of range), with the reason in
 * reason. */
static int read_row(sqlite3_stmt *st, clnorm_device_identity *d, clnorm_result *r, char *reason,
                    size_t reason_size) {
  memset(d, 0, sizeof *d);
  memset(r, 0, sizeof *r);
  uint64_t v[12];
  char hash[32], op[16], dtype[16], reduce[16], stats[16], outcome[16];
  int bad = -1; /* the first column out of range or of the wrong type */
#define COL(i, check) ((check) || (bad = (i), 0))
  const int read =
      COL(0, column_uint(st, 0, UINT32_MAX, &v[0])) &&
      COL(1, column_text(st, 1, d->vendor, sizeof d->vendor)) &&
      COL(2, column_text(st, 2, d->name, sizeof d->name)) &&
      COL(3, column_text(st, 3, d->driver_version, sizeof d->driver_version)) &&
      COL(4, column_text(st, 4, d->cl_version, sizeof d->cl_version)) &&
      COL(5, column_uint(st, 5, UINT32_MAX, &v[1])) &&
      COL(6, column_uint(st, 6, UINT32_MAX, &v[2])) &&
      COL(7, column_uint(st, 7, INT64_MAX, &v[3])) &&
      COL(8, column_text(st, 8, hash, sizeof hash) && parse_hash(hash, &r->kernel_hash)) &&
      COL(9, column_text(st, 9, op, sizeof op)) &&
      COL(10, column_text(st, 10, dtype, sizeof dtype)) &&
      COL(11, column_uint(st, 11, MAX_COLS, &v[4])) &&
      COL(12, column_uint(st, 12, MAX_ROW_CLASS, &v[5])) &&
      COL(13, column_uint(st, 13, MAX_ROWS, &v[6])) &&
      COL(14, column_uint(st, 14, MAX_WG, &v[7])) && COL(15, column_uint(st, 15, MAX_WG, &v[8])) &&
      COL(16, column_uint(st, 16, 16, &v[9])) && COL(17, column_uint(st, 17, MAX_HOLD, &v[10])) &&
      COL(18, column_text(st, 18, reduce, sizeof reduce)) &&
      COL(19, column_text(st, 19, stats, sizeof stats)) &&
      COL(20, column_text(st, 20, outcome, sizeof outcome)) &&
      COL(25, column_uint(st, 25, INT64_MAX, &v[11])) &&
      COL(26, column_text(st, 26, r->clnorm_version, sizeof r->clnorm_version));
#undef COL
  if (!read) {
    snprintf(reason, reason_size, "%s is out of range or of the wrong type", row_columns[bad]);
    return 0;
  }
  const int op_i = clnorm__name_index(clnorm__op_names, COUNT(clnorm__op_names), op);
  const int dtype_i = clnorm__name_index(clnorm__dtype_names, COUNT(clnorm__dtype_names), dtype);
  const int reduce_i =
      clnorm__name_index(clnorm__reduce_names, COUNT(clnorm__reduce_names), reduce);
  const int stats_i = clnorm__name_index(clnorm__stats_names, COUNT(clnorm__stats_names), stats);
  const int outcome_i =
      clnorm__name_index(clnorm__outcome_names, COUNT(clnorm__outcome_names), outcome);
  if (op_i < 0 || dtype_i < 0 || reduce_i < 0 || stats_i < 0 || outcome_i < 0) {
    snprintf(reason, reason_size, "unknown %s",
             op_i < 0       ? "op"
             : dtype_i < 0  ? "dtype"
             : reduce_i < 0 ? "reduce"
             : stats_i < 0  ? "stats"
                            : "status");
    return 0;
  }
  d->vendor_id = (cl_uint)v[0];
  d->compute_units = (cl_uint)v[1];
  d->max_clock_mhz = (cl_uint)v[2];
  d->local_mem = (cl_ulong)v[3];
  r->op = (clnorm_op)op_i;
  r->dtype = (clnorm_dtype)dtype_i;
  r->cols = v[4];
  r->row_class = (unsigned)v[5];
  r->rows = v[6];
  r->variant.wg = (unsigned)v[7];
  r->variant.tpr = (unsigned)v[8];
  r->variant.vec = (unsigned)v[9];
  r->variant.hold = (unsigned)v[10];
  r->variant.reduce = (clnorm_reduce)reduce_i;
  r->variant.stats = (clnorm_stats)stats_i;
  r->outcome = (clnorm_outcome)outcome_i;
  r->median_s = column_double(st, 21);
  r->min_s = column_double(st, 22);
  r->gbps = column_double(st, 23);
  r->max_err = column_double(st, 24);
  r->measured_at = (int64_t)v[11];
  return device_valid(d, reason, reason_size) && result_valid(r, reason, reason_size);
}

/* ---- storing and querying */

static clnorm_status check_args(clnorm_db *db, const clnorm_device_identity *d,
                                const clnorm_result *r, char *err, size_t err_size) {
  clear(err, err_size);
  if (!db || !d || !r)
    return fail(CLNORM_E_INVALID_ARG, err, err_size, "%s is NULL",
                !db  ? "db"
                : !d ? "device"
                     : "result");
  char reason[160];
  if (!device_valid(d, reason, sizeof reason))
    return fail(CLNORM_E_INVALID_ARG, err, err_size, "device identity: %s", reason);
  if (!result_valid(r, reason, sizeof reason))
    return fail(CLNORM_E_INVALID_ARG, err, err_size, "result: %s", reason);
  return CLNORM_OK;
}

/* CLNORM_E_DB with a message when the file this handle writes is no longer the database at its
 * path: renamed over or removed (what SQLite's handle writes then goes to a file nobody will
 * read, while the -wal file, named after the path, would be replayed into the file there now),
 * or overwritten in place by another program. SQLite checks neither in WAL mode. Called inside
 * a write transaction, before anything is written. */
static clnorm_status check_file(clnorm_db *db, char *err, size_t err_size) {
  int moved = 0;
  if (sqlite3_file_control(db->sql, "main", SQLITE_FCNTL_HAS_MOVED, &moved) == SQLITE_OK && moved)
    return fail(CLNORM_E_DB, err, err_size,
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
    return fail(CLNORM_E_DB, err, err_size,
                "tuning database '%s' was overwritten by another program while this process "
                "was writing to it: nothing more is stored",
                db->path);
  return CLNORM_OK;
}

/* Stores result (ST_PUT, ST_PUT_HEURISTIC) or the copy bandwidth (ST_PUT_COPY: copy_gbps, bytes)
 * of device in one transaction. */
static clnorm_status put_row(clnorm_db *db, int which, const clnorm_device_identity *device,
                             const clnorm_result *result, double copy_gbps, uint64_t bytes,
                             char *err, size_t err_size) {
  clnorm_status status = CLNORM_OK;
  if (!db->writable)
    return fail(CLNORM_E_DB, err, err_size,
                "tuning database '%s' was opened for reading: cannot store results", db->path);
  int rc = begin_write(db->sql);
  if (rc != SQLITE_OK)
    return db_fail(db, rc, "starting a write transaction", err, err_size);
  if ((status = check_file(db, err, err_size)) != CLNORM_OK) {
    exec(db->sql, "ROLLBACK");
    return status;
  }
  sqlite3_int64 id = -1;
  sqlite3_stmt *st = NULL;
  const char *what = "storing the device";
  rc = device_id(db, device, 1, &id);
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
    } else {
      bind_result(st, id, result);
    }
    rc = sqlite3_step(st);
    rc = rc == SQLITE_DONE ? SQLITE_OK : rc;
    sqlite3_reset(st);
  }
  if (rc == SQLITE_OK) {
    what = "committing";
    rc = exec(db->sql, "COMMIT");
  }
  if (rc != SQLITE_OK) {
    status = db_fail(db, rc, what, err, err_size);
    exec(db->sql, "ROLLBACK");
    db->cached = 0; /* the device row may have been rolled back */
  }
  return status;
}

clnorm_status clnorm__db_put(clnorm_db *db, const clnorm_device_identity *device,
                             const clnorm_result *result, char *err, size_t err_size) {
  const clnorm_status status = check_args(db, device, result, err, err_size);
  return status != CLNORM_OK ? status : put_row(db, ST_PUT, device, result, 0.0, 0, err, err_size);
}

clnorm_status clnorm__db_put_heuristic(clnorm_db *db, const clnorm_device_identity *device,
                                       const clnorm_result *result, char *err, size_t err_size) {
  const clnorm_status status = check_args(db, device, result, err, err_size);
  return status != CLNORM_OK ? status
                             : put_row(db, ST_PUT_HEURISTIC, device, result, 0.0, 0, err, err_size);
}

clnorm_status clnorm__db_put_copy(clnorm_db *db, const clnorm_device_identity *device, double gbps,
                                  uint64_t bytes, char *err, size_t err_size) {
  clear(err, err_size);
  if (!db || !device)
    return fail(CLNORM_E_INVALID_ARG, err, err_size, "%s is NULL", !db ? "db" : "device");
  char reason[160];
  if (!device_valid(device, reason, sizeof reason))
    return fail(CLNORM_E_INVALID_ARG, err, err_size, "device identity: %s", reason);
  if (!(isfinite(gbps) && gbps > 0) || bytes == 0 || bytes > (uint64_t)INT64_MAX)
    return fail(CLNORM_E_INVALID_ARG, err, err_size,
                "copy bandwidth: %g GB/s over %llu bytes is not a measurement", gbps,
                (unsigned long long)bytes);
  return put_row(db, ST_PUT_COPY, device, NULL, gbps, bytes, err, err_size);
}

clnorm_status clnorm__db_get(clnorm_db *db, const clnorm_device_identity *device,
                             const clnorm_result *key, clnorm_result *out, int *found, char *err,
                             size_t err_size) {
  if (found)
    *found = 0;
  clnorm_result checked = {0};
  if (key) {
    /* only the key fields matter: validate those, with neutral values for the rest */
    checked.kernel_hash = key->kernel_hash;
    checked.op = key->op;
    checked.dtype = key->dtype;
    checked.cols = key->cols;
    checked.row_class = key->row_class;
    checked.variant = key->variant;
    checked.outcome = CLNORM_OUTCOME_WRONG;
    checked.median_s = checked.min_s = checked.gbps = checked.max_err = NAN;
  }
  clnorm_status status = check_args(db, device, key ? &checked : NULL, err, err_size);
  if (status != CLNORM_OK)
    return status;
  if (!found)
    return fail(CLNORM_E_INVALID_ARG, err, err_size, "found is NULL");
  sqlite3_int64 id;
  sqlite3_stmt *st;
  int rc = device_id(db, device, 0, &id);
  if (rc == SQLITE_OK && id < 0)
    return CLNORM_OK;
  if (rc == SQLITE_OK && (rc = stmt(db, ST_GET, &st)) == SQLITE_OK) {
    char hash[17];
    bind_key(st, id, &checked, hash);
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
      clnorm_device_identity d;
      clnorm_result r;
      char reason[192];
      if (read_row(st, &d, &r, reason, sizeof reason)) {
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
  return rc == SQLITE_OK ? CLNORM_OK : db_fail(db, rc, "looking up a result", err, err_size);
}

clnorm_status clnorm__db_list(clnorm_db *db, const clnorm_device_identity *device,
                              const uint64_t *kernel_hash, int winners_only, clnorm_db_row_fn fn,
                              void *user, char *err, size_t err_size) {
  clear(err, err_size);
  if (!db || !fn)
    return fail(CLNORM_E_INVALID_ARG, err, err_size, "%s is NULL", !db ? "db" : "fn");
  sqlite3_int64 id = -1;
  if (device) {
    char reason[160];
    if (!device_valid(device, reason, sizeof reason))
      return fail(CLNORM_E_INVALID_ARG, err, err_size, "device identity: %s", reason);
    const int rc = device_id(db, device, 0, &id);
    if (rc != SQLITE_OK)
      return db_fail(db, rc, "looking up the device", err, err_size);
    if (id < 0)
      return CLNORM_OK;
  }
  /* A winner is the "ok" row with the smallest median of its shape: with exactly one min() in
   * the query, SQLite takes the bare column id from that row. The filters are spelled out (not
   * "?1 IS NULL OR ...") so that SQLite can search the results_winners index. A winner's row is
   * checked again: w reads only that index, which a damaged file's may contradict (readers run
   * no integrity check). */
  const char *const device_filter = device ? " AND device_id = ?1" : "";
  const char *const hash_filter = kernel_hash ? " AND kernel_hash = ?2" : "";
  char text[2048];
  snprintf(text, sizeof text,
           "WITH w AS (SELECT id, min(median_s) FROM results"
           " WHERE status = 'ok' AND median_s IS NOT NULL%s%s"
           " GROUP BY device_id, kernel_hash, op, dtype, cols, row_class)"
           " SELECT d.vendor_id, d.vendor, d.name, d.driver_version, d.opencl_version,"
           " d.compute_units, d.max_clock_mhz, d.local_mem, r.kernel_hash, r.op, r.dtype,"
           " r.cols, r.row_class, r.rows, r.wg, r.tpr, r.vec, r.hold, r.reduce, r.stats,"
           " r.status, r.median_s, r.min_s, r.gbps, r.max_err, r.measured_at,"
           " r.clnorm_version, %s AS winner FROM %s JOIN devices d ON d.id = r.device_id"
           " WHERE 1%s%s%s ORDER BY d.id, r.kernel_hash, r.op, r.dtype, r.cols, r.row_class,"
           " winner DESC, r.median_s IS NULL, r.median_s, r.min_s, r.id",
           device_filter, hash_filter,
           winners_only ? "1" : "r.status = 'ok' AND r.id IN (SELECT id FROM w)",
           winners_only ? "w CROSS JOIN results r ON r.id = w.id" : "results r",
           device ? " AND r.device_id = ?1" : "", kernel_hash ? " AND r.kernel_hash = ?2" : "",
           winners_only ? " AND r.status = 'ok'" : "");
  sqlite3_stmt *st = NULL;
  int rc = sqlite3_prepare_v2(db->sql, text, -1, &st, NULL);
  if (rc != SQLITE_OK)
    return db_fail(db, rc, "listing results", err, err_size);
  char hash[17];
  if (device)
    sqlite3_bind_int64(st, 1, id);
  if (kernel_hash) {
    hash_text(*kernel_hash, hash);
    sqlite3_bind_text(st, 2, hash, -1, SQLITE_STATIC);
  }
  db->skipped = 0;
  db->skipped_why[0] = '\0';
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    clnorm_device_identity d;
    clnorm_result r;
    char reason[sizeof db->skipped_why];
    if (!read_row(st, &d, &r, reason, sizeof reason)) {
      if (db->skipped++ == 0)
        snprintf(db->skipped_why, sizeof db->skipped_why, "%s", reason);
      continue;
    }
    if (fn(user, &d, &r, sqlite3_column_int(st, 27) != 0)) {
      rc = SQLITE_DONE;
      break;
    }
  }
  sqlite3_finalize(st);
  return rc == SQLITE_DONE ? CLNORM_OK : db_fail(db, rc, "listing results", err, err_size);
}

typedef struct collected {
  clnorm_result *items;
  size_t count, cap;
  int no_memory;
} collected;

static int collect(void *user, const clnorm_device_identity *device, const clnorm_result *result,
                   int winner) {
  collected *c = user;
  if (c->count == c->cap) {
    const size_t cap = c->cap ? c->cap * 2 : 64;
    clnorm_result *items = realloc(c->items, cap * sizeof *items);
    if (!items) {
      c->no_memory = 1;
      return 1;
    }
    c->items = items;
    c->cap = cap;
  }
  c->items[c->count++] = *result;
  return 0;
}

static int shape_cmp(const void *pa, const void *pb) {
  const clnorm_result *a = pa, *b = pb;
  if (a->op != b->op)
    return a->op < b->op ? -1 : 1;
  if (a->dtype != b->dtype)
    return a->dtype < b->dtype ? -1 : 1;
  if (a->cols != b->cols)
    return a->cols < b->cols ? -1 : 1;
  return (a->row_class > b->row_class) - (a->row_class < b->row_class);
}

clnorm_status clnorm__db_winners(clnorm_db *db, const clnorm_device_identity *device,
                                 uint64_t kernel_hash, clnorm_result **out, size_t *count,
                                 char *err, size_t err_size) {
  if (out)
    *out = NULL;
  if (count)
    *count = 0;
  if (!device || !out || !count)
    return fail(CLNORM_E_INVALID_ARG, err, err_size, "%s is NULL",
                !device ? "device"
                : !out  ? "out"
                        : "count");
  collected c = {0};
  clnorm_status status = clnorm__db_list(db, device, &kernel_hash, 1, collect, &c, err, err_size);
  if (status == CLNORM_OK && c.no_memory)
    status = fail(CLNORM_E_NO_MEMORY, err, err_size, "out of memory reading tuned results");
  if (status != CLNORM_OK) {
    free(c.items);
    return status;
  }
  if (c.count > 1)
    qsort(c.items, c.count, sizeof *c.items, shape_cmp);
  *out = c.items;
  *count = c.count;
  return CLNORM_OK;
}

static int count_rows(sqlite3 *sql, const char *text, const clnorm_device_identity *d,
                      sqlite3_int64 id, const char *hash, uint64_t *out) {
  sqlite3_stmt *st = NULL;
  int rc = sqlite3_prepare_v2(sql, text, -1, &st, NULL);
  if (rc == SQLITE_OK) {
    if (d) {
      sqlite3_bind_int64(st, 1, d->vendor_id);
      sqlite3_bind_text(st, 2, d->vendor, -1, SQLITE_STATIC);
      sqlite3_bind_text(st, 3, d->name, -1, SQLITE_STATIC);
      sqlite3_bind_text(st, 4, d->driver_version, -1, SQLITE_STATIC);
    } else {
      sqlite3_bind_int64(st, 1, id);
      sqlite3_bind_text(st, 2, hash, -1, SQLITE_STATIC);
    }
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
                               uint64_t kernel_hash, clnorm_db_stale *out, char *err,
                               size_t err_size) {
  clear(err, err_size);
  if (!db || !device || !out)
    return fail(CLNORM_E_INVALID_ARG, err, err_size, "%s is NULL",
                !db       ? "db"
                : !device ? "device"
                          : "out");
  memset(out, 0, sizeof *out);
  char hash[17];
  hash_text(kernel_hash, hash);
  sqlite3_int64 id = -1;
  int rc = count_rows(db->sql,
                      "SELECT count(*) FROM results r JOIN devices d ON d.id = r.device_id"
                      " WHERE d.vendor_id = ?1 AND d.vendor = ?2 AND d.name = ?3"
                      " AND d.driver_version <> ?4",
                      device, 0, NULL, &out->driver_changed);
  if (rc == SQLITE_OK)
    rc = device_id(db, device, 0, &id);
  if (rc == SQLITE_OK && id >= 0)
    rc = count_rows(db->sql,
                    "SELECT count(*) FROM results WHERE device_id = ?1 AND kernel_hash <> ?2", NULL,
                    id, hash, &out->kernels_changed);
  return rc == SQLITE_OK ? CLNORM_OK : db_fail(db, rc, "counting stale results", err, err_size);
}

/* ---- what reports and diagnostics read */

/* Whether the table `name` exists: a database of schema 2 or older has no heuristic and no
 * copy_bandwidth table, and a reader never migrates. */
static int has_table(sqlite3 *sql, const char *name, int *yes) {
  sqlite3_stmt *st = NULL;
  int rc = sqlite3_prepare_v2(sql,
                              "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND"
                              " name = ?1",
                              -1, &st, NULL);
  *yes = 0;
  if (rc == SQLITE_OK) {
    sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
      *yes = sqlite3_column_int(st, 0) > 0;
      rc = SQLITE_OK;
    }
  }
  sqlite3_finalize(st);
  return rc;
}

clnorm_status clnorm__db_list_heuristic(clnorm_db *db, const clnorm_device_identity *device,
                                        const uint64_t *kernel_hash, clnorm_db_row_fn fn,
                                        void *user, char *err, size_t err_size) {
  clear(err, err_size);
  if (!db || !fn)
    return fail(CLNORM_E_INVALID_ARG, err, err_size, "%s is NULL", !db ? "db" : "fn");
  int present = 0;
  int rc = has_table(db->sql, "heuristic", &present);
  if (rc != SQLITE_OK)
    return db_fail(db, rc, "reading the schema", err, err_size);
  if (!present)
    return CLNORM_OK;
  sqlite3_int64 id = -1;
  if (device) {
    char reason[160];
    if (!device_valid(device, reason, sizeof reason))
      return fail(CLNORM_E_INVALID_ARG, err, err_size, "device identity: %s", reason);
    if ((rc = device_id(db, device, 0, &id)) != SQLITE_OK)
      return db_fail(db, rc, "looking up the device", err, err_size);
    if (id < 0)
      return CLNORM_OK;
  }
  char text[1024];
  snprintf(text, sizeof text,
           "SELECT d.vendor_id, d.vendor, d.name, d.driver_version, d.opencl_version,"
           " d.compute_units, d.max_clock_mhz, d.local_mem, r.kernel_hash, r.op, r.dtype,"
           " r.cols, r.row_class, r.rows, r.wg, r.tpr, r.vec, r.hold, r.reduce, r.stats,"
           " r.status, r.median_s, r.min_s, r.gbps, r.max_err, r.measured_at,"
           " r.clnorm_version FROM heuristic r JOIN devices d ON d.id = r.device_id"
           " WHERE 1%s%s ORDER BY d.id, r.kernel_hash, r.op, r.dtype, r.cols, r.row_class",
           device ? " AND r.device_id = ?1" : "", kernel_hash ? " AND r.kernel_hash = ?2" : "");
  sqlite3_stmt *st = NULL;
  if ((rc = sqlite3_prepare_v2(db->sql, text, -1, &st, NULL)) != SQLITE_OK)
    return db_fail(db, rc, "listing the heuristic's results", err, err_size);
  char hash[17];
  if (device)
    sqlite3_bind_int64(st, 1, id);
  if (kernel_hash) {
    hash_text(*kernel_hash, hash);
    sqlite3_bind_text(st, 2, hash, -1, SQLITE_STATIC);
  }
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    clnorm_device_identity d;
    clnorm_result r;
    char reason[192];
    if (read_row(st, &d, &r, reason, sizeof reason) && fn(user, &d, &r, 0)) {
      rc = SQLITE_DONE;
      break;
    }
  }
  sqlite3_finalize(st);
  return rc == SQLITE_DONE ? CLNORM_OK
                           : db_fail(db, rc, "listing the heuristic's results", err, err_size);
}

clnorm_status clnorm__db_copy_gbps(clnorm_db *db, const clnorm_device_identity *device,
                                   double *gbps, uint64_t *bytes, int64_t *measured_at, char *err,
                                   size_t err_size) {
  clear(err, err_size);
  if (!db || !device || !gbps)
    return fail(CLNORM_E_INVALID_ARG, err, err_size, "%s is NULL",
                !db       ? "db"
                : !device ? "device"
                          : "gbps");
  *gbps = NAN;
  if (bytes)
    *bytes = 0;
  if (measured_at)
    *measured_at = 0;
  int present = 0;
  sqlite3_int64 id = -1;
  int rc = has_table(db->sql, "copy_bandwidth", &present);
  if (rc == SQLITE_OK && present)
    rc = device_id(db, device, 0, &id);
  if (rc != SQLITE_OK)
    return db_fail(db, rc, "reading the copy bandwidth", err, err_size);
  if (!present || id < 0)
    return CLNORM_OK;
  sqlite3_stmt *st = NULL;
  rc = sqlite3_prepare_v2(
      db->sql, "SELECT gbps, bytes, measured_at FROM copy_bandwidth WHERE device_id = ?1", -1, &st,
      NULL);
  if (rc == SQLITE_OK) {
    sqlite3_bind_int64(st, 1, id);
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
      const double v = column_double(st, 0);
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
  return rc == SQLITE_OK ? CLNORM_OK : db_fail(db, rc, "reading the copy bandwidth", err, err_size);
}

clnorm_status clnorm__db_devices(clnorm_db *db, uint64_t kernel_hash, clnorm_db_device_fn fn,
                                 void *user, char *err, size_t err_size) {
  clear(err, err_size);
  if (!db || !fn)
    return fail(CLNORM_E_INVALID_ARG, err, err_size, "%s is NULL", !db ? "db" : "fn");
  sqlite3_stmt *st = NULL;
  int rc = sqlite3_prepare_v2(
      db->sql,
      "SELECT d.vendor_id, d.vendor, d.name, d.driver_version, d.opencl_version,"
      " d.compute_units, d.max_clock_mhz, d.local_mem,"
      " (SELECT count(*) FROM results r WHERE r.device_id = d.id),"
      " (SELECT count(*) FROM results r WHERE r.device_id = d.id AND r.kernel_hash = ?1),"
      " (SELECT count(*) FROM (SELECT DISTINCT op, dtype, cols, row_class FROM results r"
      "  WHERE r.device_id = d.id AND r.kernel_hash = ?1 AND r.status = 'ok'"
      "  AND r.median_s IS NOT NULL))"
      " FROM devices d ORDER BY d.id",
      -1, &st, NULL);
  if (rc != SQLITE_OK)
    return db_fail(db, rc, "listing devices", err, err_size);
  char hash[17];
  hash_text(kernel_hash, hash);
  sqlite3_bind_text(st, 1, hash, -1, SQLITE_STATIC);
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    clnorm_device_identity d;
    clnorm_db_device_counts c;
    uint64_t v[4];
    memset(&d, 0, sizeof d);
    memset(&c, 0, sizeof c);
    if (!column_uint(st, 0, UINT32_MAX, &v[0]) || !column_text(st, 1, d.vendor, sizeof d.vendor) ||
        !column_text(st, 2, d.name, sizeof d.name) ||
        !column_text(st, 3, d.driver_version, sizeof d.driver_version) ||
        !column_text(st, 4, d.cl_version, sizeof d.cl_version) ||
        !column_uint(st, 5, UINT32_MAX, &v[1]) || !column_uint(st, 6, UINT32_MAX, &v[2]) ||
        !column_uint(st, 7, INT64_MAX, &v[3]))
      continue;
    d.vendor_id = (cl_uint)v[0];
    d.compute_units = (cl_uint)v[1];
    d.max_clock_mhz = (cl_uint)v[2];
    d.local_mem = (cl_ulong)v[3];
    c.results = (uint64_t)sqlite3_column_int64(st, 8);
    c.current = (uint64_t)sqlite3_column_int64(st, 9);
    c.shapes = (uint64_t)sqlite3_column_int64(st, 10);
    if (fn(user, &d, &c)) {
      rc = SQLITE_DONE;
      break;
    }
  }
  sqlite3_finalize(st);
  return rc == SQLITE_DONE ? CLNORM_OK : db_fail(db, rc, "listing devices", err, err_size);
}

clnorm_status clnorm__db_schema(clnorm_db *db, int *version, char *err, size_t err_size) {
  clear(err, err_size);
  if (!db || !version)
    return fail(CLNORM_E_INVALID_ARG, err, err_size, "%s is NULL", !db ? "db" : "version");
  sqlite3_int64 v = 0;
  const int rc = pragma_int(db->sql, "PRAGMA user_version", &v);
  *version = (int)v;
  return rc == SQLITE_OK ? CLNORM_OK : db_fail(db, rc, "reading the schema version", err, err_size);
}

/* ---- JSON export */

static void json_string(FILE *f, const char *s) {
  fputc('"', f);
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (*p == '"' || *p == '\\')
      fprintf(f, "\\%c", *p);
    else if (*p < 0x20)
      fprintf(f, "\\u%04x", *p);
    else
      fputc(*p, f);
  }
  fputc('"', f);
}

static void json_double(FILE *f, double v) {
  if (isfinite(v))
    fprintf(f, "%.17g", v); /* 17 digits: the same double comes back */
  else
    fputs("null", f);
}

typedef struct exporter {
  FILE *f;
  clnorm_device_identity device;
  size_t devices, results;
} exporter;

static int export_row(void *user, const clnorm_device_identity *d, const clnorm_result *r,
                      int winner) {
  exporter *x = user;
  FILE *f = x->f;
  if (x->devices == 0 || !clnorm__identity_equal(&x->device, d)) {
    fputs(x->devices ? "\n   ]},\n" : "\n", f);
    fprintf(f, "  {\"vendor_id\": %u, \"vendor\": ", (unsigned)d->vendor_id);
    json_string(f, d->vendor);
    fputs(", \"name\": ", f);
    json_string(f, d->name);
    fputs(",\n   \"driver_version\": ", f);
    json_string(f, d->driver_version);
    fputs(", \"opencl_version\": ", f);
    json_string(f, d->cl_version);
    fprintf(f, ",\n   \"compute_units\": %u, \"max_clock_mhz\": %u, \"local_mem\": %llu,\n",
            (unsigned)d->compute_units, (unsigned)d->max_clock_mhz,
            (unsigned long long)d->local_mem);
    fputs("   \"results\": [", f);
    x->device = *d;
    x->devices++;
    x->results = 0;
  }
  char hash[17];
  hash_text(r->kernel_hash, hash);
  fprintf(f,
          "%s\n    {\"op\": \"%s\", \"dtype\": \"%s\", \"cols\": %llu, \"row_class\": %u, "
          "\"rows\": %llu, ",
          x->results ? "," : "", clnorm__op_names[r->op], clnorm__dtype_names[r->dtype],
          (unsigned long long)r->cols, r->row_class, (unsigned long long)r->rows);
  for (int i = 0; i < CLNORM_VARIANT_PARAMS; i++) {
    const clnorm_variant_param *p = &clnorm__variant_params[i];
    const unsigned value = clnorm__variant_param(&r->variant, i);
    if (p->names)
      fprintf(f, "\"%s\": \"%s\", ", p->name, p->names[value]);
    else
      fprintf(f, "\"%s\": %u, ", p->name, value);
  }
  fprintf(f, "\"status\": \"%s\", \"median_s\": ", clnorm__outcome_names[r->outcome]);
  json_double(f, r->median_s);
  fputs(", \"min_s\": ", f);
  json_double(f, r->min_s);
  fputs(", \"gbps\": ", f);
  json_double(f, r->gbps);
  fputs(", \"max_err\": ", f);
  json_double(f, r->max_err);
  fprintf(f, ", \"measured_at\": %lld, \"kernel_hash\": \"%s\", \"clnorm_version\": ",
          (long long)r->measured_at, hash);
  json_string(f, r->clnorm_version);
  fputc('}', f);
  x->results++;
  return ferror(f) != 0;
}

clnorm_status clnorm__db_export(clnorm_db *db, FILE *out, char *err, size_t err_size) {
  clear(err, err_size);
  if (!db || !out)
    return fail(CLNORM_E_INVALID_ARG, err, err_size, "%s is NULL", !db ? "db" : "out");
  /* JSON numbers use '.' whatever the application's locale says */
  void *numbers = clnorm__c_numbers_begin();
  exporter x = {out, {0}, 0, 0};
  fprintf(out,
          "{\"format\": \"clnorm-tuning\", \"format_version\": %d, \"clnorm_version\": "
          "\"" THIS_VERSION "\",\n \"exported_at\": %lld,\n \"devices\": [",
          CLNORM_DB_JSON_FORMAT, (long long)time(NULL));
  clnorm_status status = clnorm__db_list(db, NULL, NULL, 0, export_row, &x, err, err_size);
  fputs(x.devices ? "\n   ]}\n ]}\n" : "]}\n", out);
  clnorm__c_numbers_end(numbers);
  if (status == CLNORM_OK && (fflush(out) != 0 || ferror(out)))
    status = fail(CLNORM_E_DB, err, err_size, "writing the exported results failed: %s",
                  strerror(errno));
  return status;
}

/* ---- JSON import: a small parser for untrusted input */

#define JSON_MAX_DEPTH 32
#define JSON_MAX_STRING 65536
#define JSON_MAX_MEMBERS 256
#define JSON_MAX_NUMBER 400

typedef enum jtype { J_NULL, J_BOOL, J_NUMBER, J_STRING, J_ARRAY, J_OBJECT } jtype;

typedef struct jnode {
  jtype type;
  const char *key; /* member name, inside an object */
  const char *str; /* J_STRING, NUL-terminated */
  size_t len;
  double num;
  int is_int;   /* written without fraction or exponent */
  int negative; /* J_NUMBER written with '-' */
  int too_big;  /* an integer beyond 64 bits */
  uint64_t magnitude;
  struct jnode *child, *last, *next;
  size_t count;
} jnode;

typedef struct jblock {
  struct jblock *next;
  size_t used, cap;
} jblock;

#define JBLOCK_HEADER ((sizeof(jblock) + 15) & ~(size_t)15)

typedef struct jparser {
  const char *s;
  size_t len, pos;
  jblock *blocks;
  char *err;
  size_t err_size;
  int failed;
  clnorm_status status;
} jparser;

static void *jalloc(jparser *p, size_t size) {
  size = (size + 15) & ~(size_t)15;
  jblock *b = p->blocks;
  if (!b || b->cap - b->used < size) {
    const size_t cap = size > 65536 ? size : 65536;
    b = malloc(JBLOCK_HEADER + cap);
    if (!b)
      return NULL;
    b->next = p->blocks;
    b->used = 0;
    b->cap = cap;
    p->blocks = b;
  }
  void *mem = (char *)b + JBLOCK_HEADER + b->used;
  b->used += size;
  return mem;
}

static void jfree(jparser *p) {
  while (p->blocks) {
    jblock *next = p->blocks->next;
    free(p->blocks);
    p->blocks = next;
  }
}

static void *jsyntax(jparser *p, const char *what) {
  if (!p->failed) {
    size_t line = 1, col = 1;
    for (size_t i = 0; i < p->pos && i < p->len; i++) {
      if (p->s[i] == '\n') {
        line++;
        col = 1;
      } else {
        col++;
      }
    }
    p->failed = 1;
    p->status = CLNORM_E_INVALID_ARG;
    fail(CLNORM_E_INVALID_ARG, p->err, p->err_size,
         "import: invalid JSON at line %zu, column %zu: %s", line, col, what);
  }
  return NULL;
}

static void *jnomem(jparser *p) {
  if (!p->failed) {
    p->failed = 1;
    p->status = CLNORM_E_NO_MEMORY;
    fail(CLNORM_E_NO_MEMORY, p->err, p->err_size, "import: out of memory");
  }
  return NULL;
}

static void skip_space(jparser *p) {
  while (p->pos < p->len && (p->s[p->pos] == ' ' || p->s[p->pos] == '\t' || p->s[p->pos] == '\n' ||
                             p->s[p->pos] == '\r'))
    p->pos++;
}

static int hex4(const char *s, unsigned *out) {
  unsigned v = 0;
  for (int i = 0; i < 4; i++) {
    const char c = s[i];
    const int d = c >= '0' && c <= '9'   ? c - '0'
                  : c >= 'a' && c <= 'f' ? c - 'a' + 10
                  : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                         : -1;
    if (d < 0)
      return 0;
    v = (v << 4) | (unsigned)d;
  }
  *out = v;
  return 1;
}

static size_t put_utf8(char *o, unsigned cp) {
  if (cp < 0x80) {
    o[0] = (char)cp;
    return 1;
  }
  if (cp < 0x800) {
    o[0] = (char)(0xc0 | (cp >> 6));
    o[1] = (char)(0x80 | (cp & 0x3f));
    return 2;
  }
  if (cp < 0x10000) {
    o[0] = (char)(0xe0 | (cp >> 12));
    o[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
    o[2] = (char)(0x80 | (cp & 0x3f));
    return 3;
  }
  o[0] = (char)(0xf0 | (cp >> 18));
  o[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
  o[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
  o[3] = (char)(0x80 | (cp & 0x3f));
  return 4;
}

/* A string starting at the opening quote; the decoded text (never longer than the raw one). */
static const char *parse_string(jparser *p, size_t *out_len) {
  const size_t start = ++p->pos;
  size_t end = start;
  while (end < p->len && p->s[end] != '"') {
    if (p->s[end] == '\\')
      end++;
    end++;
  }
  if (end >= p->len) {
    p->pos = p->len;
    return jsyntax(p, "unterminated string");
  }
  if (end - start > JSON_MAX_STRING)
    return jsyntax(p, "string longer than 65536 bytes");
  char *text = jalloc(p, end - start + 1);
  if (!text)
    return jnomem(p);
  size_t n = 0;
  while (p->pos < end) {
    const unsigned char c = (unsigned char)p->s[p->pos];
    if (c < 0x20)
      return jsyntax(p, "control character in string");
    if (c != '\\') {
      text[n++] = (char)c;
      p->pos++;
      continue;
    }
    const char e = p->s[p->pos + 1];
    p->pos += 2;
    const char *simple = strchr("\"\\/bfnrt", e);
    if (e && simple) {
      static const char map[] = "\"\\/\b\f\n\r\t";
      text[n++] = map[simple - "\"\\/bfnrt"];
      continue;
    }
    unsigned cp, low;
    if (e != 'u' || p->pos + 4 > end || !hex4(p->s + p->pos, &cp))
      return jsyntax(p, "invalid escape in string");
    p->pos += 4;
    if (cp >= 0xd800 && cp <= 0xdbff) {
      if (p->pos + 6 > end || p->s[p->pos] != '\\' || p->s[p->pos + 1] != 'u' ||
          !hex4(p->s + p->pos + 2, &low) || low < 0xdc00 || low > 0xdfff)
        return jsyntax(p, "unpaired surrogate in string");
      p->pos += 6;
      cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
    } else if (cp >= 0xdc00 && cp <= 0xdfff) {
      return jsyntax(p, "unpaired surrogate in string");
    }
    if (cp == 0)
      return jsyntax(p, "\\u0000 in string");
    n += put_utf8(text + n, cp);
  }
  text[n] = '\0';
  p->pos = end + 1;
  *out_len = n;
  return text;
}

static int is_digit(char c) { return c >= '0' && c <= '9'; }

static jnode *parse_number(jparser *p, jnode *node) {
  const size_t start = p->pos;
  size_t i = start;
  const char *s = p->s;
  node->type = J_NUMBER;
  node->negative = i < p->len && s[i] == '-';
  if (node->negative)
    i++;
  if (i >= p->len || !is_digit(s[i]))
    return jsyntax(p, "invalid number");
  if (s[i] == '0')
    i++;
  else
    while (i < p->len && is_digit(s[i]))
      i++;
  const size_t digits_end = i;
  node->is_int = 1;
  if (i < p->len && s[i] == '.') {
    node->is_int = 0;
    if (++i >= p->len || !is_digit(s[i]))
      return jsyntax(p, "invalid number");
    while (i < p->len && is_digit(s[i]))
      i++;
  }
  if (i < p->len && (s[i] == 'e' || s[i] == 'E')) {
    node->is_int = 0;
    i++;
    if (i < p->len && (s[i] == '+' || s[i] == '-'))
      i++;
    if (i >= p->len || !is_digit(s[i]))
      return jsyntax(p, "invalid number");
    while (i < p->len && is_digit(s[i]))
      i++;
  }
  if (i - start > JSON_MAX_NUMBER)
    return jsyntax(p, "number longer than 400 characters");
  if (node->is_int) {
    uint64_t v = 0;
    for (size_t k = start + node->negative; k < digits_end; k++) {
      const unsigned d = (unsigned)(s[k] - '0');
      if (v > (UINT64_MAX - d) / 10) {
        node->too_big = 1;
        break;
      }
      v = v * 10 + d;
    }
    node->magnitude = v;
  }
  char text[JSON_MAX_NUMBER + 1];
  memcpy(text, s + start, i - start);
  text[i - start] = '\0';
  node->num = strtod(text, NULL);
  p->pos = i;
  return node;
}

static jnode *parse_value(jparser *p, int depth);

static jnode *parse_container(jparser *p, jnode *node, int depth) {
  const int object = p->s[p->pos] == '{';
  const char close = object ? '}' : ']';
  node->type = object ? J_OBJECT : J_ARRAY;
  p->pos++;
  skip_space(p);
  if (p->pos < p->len && p->s[p->pos] == close) {
    p->pos++;
    return node;
  }
  for (;;) {
    const char *key = NULL;
    if (object) {
      skip_space(p);
      if (p->pos >= p->len || p->s[p->pos] != '"')
        return jsyntax(p, "expected a member name in quotes");
      size_t key_len;
      if (!(key = parse_string(p, &key_len)))
        return NULL;
      if (node->count >= JSON_MAX_MEMBERS)
        return jsyntax(p, "more than 256 members in one object");
      for (const jnode *k = node->child; k; k = k->next)
        if (strcmp(k->key, key) == 0)
          return jsyntax(p, "duplicate member name");
      skip_space(p);
      if (p->pos >= p->len || p->s[p->pos] != ':')
        return jsyntax(p, "expected ':' after a member name");
      p->pos++;
    }
    jnode *child = parse_value(p, depth + 1);
    if (!child)
      return NULL;
    child->key = key;
    if (node->last)
      node->last->next = child;
    else
      node->child = child;
    node->last = child;
    node->count++;
    skip_space(p);
    if (p->pos < p->len && p->s[p->pos] == ',') {
      p->pos++;
      continue;
    }
    if (p->pos < p->len && p->s[p->pos] == close) {
      p->pos++;
      return node;
    }
    return jsyntax(p, object ? "expected ',' or '}'" : "expected ',' or ']'");
  }
}

static jnode *parse_value(jparser *p, int depth) {
  skip_space(p);
  if (p->pos >= p->len)
    return jsyntax(p, "unexpected end of input");
  if (depth > JSON_MAX_DEPTH)
    return jsyntax(p, "nested more than 32 levels deep");
  jnode *node = jalloc(p, sizeof *node);
  if (!node)
    return jnomem(p);
  memset(node, 0, sizeof *node);
  const char c = p->s[p->pos];
  if (c == '{' || c == '[')
    return parse_container(p, node, depth);
  if (c == '"') {
    node->type = J_STRING;
    node->str = parse_string(p, &node->len);
    return node->str ? node : NULL;
  }
  if (c == '-' || is_digit(c))
    return parse_number(p, node);
  static const struct {
    const char *word;
    jtype type;
    int truth;
  } words[] = {{"null", J_NULL, 0}, {"true", J_BOOL, 1}, {"false", J_BOOL, 0}};
  for (size_t i = 0; i < COUNT(words); i++) {
    const size_t n = strlen(words[i].word);
    if (p->len - p->pos >= n && memcmp(p->s + p->pos, words[i].word, n) == 0) {
      p->pos += n;
      node->type = words[i].type;
      node->magnitude = (uint64_t)words[i].truth;
      return node;
    }
  }
  return jsyntax(p, "unexpected character");
}

/* Checks members of one JSON object; the first problem is kept in err, prefixed by `where`. */
typedef struct checker {
  const char *where;
  char *err;
  size_t err_size;
  int failed;
} checker;

static const char *type_name(const jnode *n) {
  static const char *const names[] = {"null",     "a boolean", "a number",
                                      "a string", "an array",  "an object"};
  return names[n->type];
}

static int bad(checker *c, const char *key, const char *fmt, ...) PRINTF(3, 4);
static int bad(checker *c, const char *key, const char *fmt, ...) {
  if (!c->failed && c->err && c->err_size) {
    char detail[256];
    va_list args;
    va_start(args, fmt);
    vsnprintf(detail, sizeof detail, fmt, args);
    va_end(args);
    snprintf(c->err, c->err_size, "import: %s%s%s: %s", c->where, key && *c->where ? "." : "",
             key ? key : "", detail);
  }
  c->failed = 1;
  return 0;
}

static const jnode *member(checker *c, const jnode *obj, const char *key, jtype type) {
  for (const jnode *m = obj->child; m; m = m->next) {
    if (strcmp(m->key, key) != 0)
      continue;
    if (m->type != type) {
      static const char *const wanted[] = {"null",     "a boolean", "a number",
                                           "a string", "an array",  "an object"};
      bad(c, key, "expected %s, got %s", wanted[type], type_name(m));
      return NULL;
    }
    return m;
  }
  bad(c, key, "missing");
  return NULL;
}

static int get_uint(checker *c, const jnode *obj, const char *key, uint64_t min, uint64_t max,
                    uint64_t *out) {
  const jnode *n = member(c, obj, key, J_NUMBER);
  if (!n)
    return 0;
  if (!n->is_int)
    return bad(c, key, "expected an integer, got %g", n->num);
  if (n->too_big || (n->negative && n->magnitude != 0) || n->magnitude < min || n->magnitude > max)
    return bad(c, key, "%s out of range (%llu to %llu)",
               n->too_big ? "an integer of more than 64 bits" : "value", (unsigned long long)min,
               (unsigned long long)max);
  *out = n->magnitude;
  return 1;
}

static int get_text(checker *c, const jnode *obj, const char *key, char *out, size_t size) {
  const jnode *n = member(c, obj, key, J_STRING);
  if (!n)
    return 0;
  if (n->len >= size || n->len > TEXT_MAX)
    return bad(c, key, "longer than %zu bytes", size - 1 < TEXT_MAX ? size - 1 : TEXT_MAX);
  for (size_t i = 0; i < n->len; i++)
    if ((unsigned char)n->str[i] < 0x20)
      return bad(c, key, "contains a control character");
  memcpy(out, n->str, n->len + 1);
  return 1;
}

static int get_name(checker *c, const jnode *obj, const char *key, const char *const *names,
                    size_t count, int *out) {
  const jnode *n = member(c, obj, key, J_STRING);
  if (!n)
    return 0;
  *out = clnorm__name_index(names, count, n->str);
  if (*out < 0) {
    char list[160] = "";
    for (size_t i = 0; i < count; i++)
      snprintf(list + strlen(list), sizeof list - strlen(list), "%s\"%s\"", i ? ", " : "",
               names[i]);
    return bad(c, key, "unknown value (expected one of %s)", list);
  }
  return 1;
}

/* A time, rate or error: a number >= 0, or null for "not measured". */
static int get_measure(checker *c, const jnode *obj, const char *key, double *out) {
  for (const jnode *m = obj->child; m; m = m->next) {
    if (strcmp(m->key, key) != 0)
      continue;
    if (m->type == J_NULL) {
      *out = NAN;
      return 1;
    }
    if (m->type != J_NUMBER)
      return bad(c, key, "expected a number or null, got %s", type_name(m));
    if (!isfinite(m->num) || m->num < 0)
      return bad(c, key, "out of range (a finite number >= 0)");
    *out = m->num;
    return 1;
  }
  return bad(c, key, "missing");
}

static int read_device(checker *c, const jnode *obj, clnorm_device_identity *d) {
  uint64_t vendor_id, units, clock, local_mem;
  memset(d, 0, sizeof *d);
  if (obj->type != J_OBJECT)
    return bad(c, NULL, "expected an object, got %s", type_name(obj));
  if (!get_uint(c, obj, "vendor_id", 0, UINT32_MAX, &vendor_id) ||
      !get_text(c, obj, "vendor", d->vendor, sizeof d->vendor) ||
      !get_text(c, obj, "name", d->name, sizeof d->name) ||
      !get_text(c, obj, "driver_version", d->driver_version, sizeof d->driver_version) ||
      !get_text(c, obj, "opencl_version", d->cl_version, sizeof d->cl_version) ||
      !get_uint(c, obj, "compute_units", 0, UINT32_MAX, &units) ||
      !get_uint(c, obj, "max_clock_mhz", 0, UINT32_MAX, &clock) ||
      !get_uint(c, obj, "local_mem", 0, INT64_MAX, &local_mem))
    return 0;
  d->vendor_id = (cl_uint)vendor_id;
  d->compute_units = (cl_uint)units;
  d->max_clock_mhz = (cl_uint)clock;
  d->local_mem = (cl_ulong)local_mem;
  return 1;
}

static int read_result(checker *c, const jnode *obj, clnorm_result *r) {
  memset(r, 0, sizeof *r);
  if (obj->type != J_OBJECT)
    return bad(c, NULL, "expected an object, got %s", type_name(obj));
  uint64_t cols, row_class, rows, wg, tpr, vec, hold, measured_at;
  int op, dtype, reduce, stats, outcome;
  char hash[32];
  if (!get_name(c, obj, "op", clnorm__op_names, COUNT(clnorm__op_names), &op) ||
      !get_name(c, obj, "dtype", clnorm__dtype_names, COUNT(clnorm__dtype_names), &dtype) ||
      !get_uint(c, obj, "cols", 1, MAX_COLS, &cols) ||
      !get_uint(c, obj, "row_class", 0, MAX_ROW_CLASS, &row_class) ||
      !get_uint(c, obj, "rows", 0, MAX_ROWS, &rows) || !get_uint(c, obj, "wg", 1, MAX_WG, &wg) ||
      !get_uint(c, obj, "tpr", 1, MAX_WG, &tpr) || !get_uint(c, obj, "vec", 1, 16, &vec) ||
      !get_uint(c, obj, "hold", 0, MAX_HOLD, &hold) ||
      !get_name(c, obj, "reduce", clnorm__reduce_names, COUNT(clnorm__reduce_names), &reduce) ||
      !get_name(c, obj, "stats", clnorm__stats_names, COUNT(clnorm__stats_names), &stats) ||
      !get_name(c, obj, "status", clnorm__outcome_names, COUNT(clnorm__outcome_names), &outcome) ||
      !get_measure(c, obj, "median_s", &r->median_s) || !get_measure(c, obj, "min_s", &r->min_s) ||
      !get_measure(c, obj, "gbps", &r->gbps) || !get_measure(c, obj, "max_err", &r->max_err) ||
      !get_uint(c, obj, "measured_at", 1, INT64_MAX, &measured_at) ||
      !get_text(c, obj, "kernel_hash", hash, 17) ||
      !get_text(c, obj, "clnorm_version", r->clnorm_version, sizeof r->clnorm_version))
    return 0;
  if (strlen(hash) != 16 || !parse_hash(hash, &r->kernel_hash))
    return bad(c, "kernel_hash", "expected 16 hexadecimal digits");
  if (!r->clnorm_version[0])
    return bad(c, "clnorm_version", "empty");
  r->op = (clnorm_op)op;
  r->dtype = (clnorm_dtype)dtype;
  r->cols = cols;
  r->row_class = (unsigned)row_class;
  r->rows = rows;
  r->variant.wg = (unsigned)wg;
  r->variant.tpr = (unsigned)tpr;
  r->variant.vec = (unsigned)vec;
  r->variant.hold = (unsigned)hold;
  r->variant.reduce = (clnorm_reduce)reduce;
  r->variant.stats = (clnorm_stats)stats;
  r->outcome = (clnorm_outcome)outcome;
  r->measured_at = (int64_t)measured_at;
  char reason[160];
  if (!result_valid(r, reason, sizeof reason))
    return bad(c, NULL, "%s", reason);
  return 1;
}

typedef struct import_row {
  size_t device; /* index into the devices array */
  clnorm_result result;
} import_row;

/* Checks the whole document into devices and rows; nothing is stored unless all of it is valid. */
static clnorm_status read_document(const jnode *root, clnorm_device_identity **devices_out,
                                   size_t *device_count, import_row **rows_out, size_t *row_count,
                                   char *err, size_t err_size) {
  checker c = {"", err, err_size, 0};
  if (root->type != J_OBJECT)
    return fail(CLNORM_E_INVALID_ARG, err, err_size,
                "import: expected a JSON object at the top, got %s", type_name(root));
  const jnode *format = member(&c, root, "format", J_STRING);
  if (!format)
    return CLNORM_E_INVALID_ARG;
  if (strcmp(format->str, "clnorm-tuning") != 0)
    return fail(CLNORM_E_INVALID_ARG, err, err_size,
                "import: format is not \"clnorm-tuning\": not a clnorm export");
  uint64_t version;
  if (!get_uint(&c, root, "format_version", 1, UINT64_MAX, &version))
    return CLNORM_E_INVALID_ARG;
  if (version > CLNORM_DB_JSON_FORMAT)
    return fail(CLNORM_E_INVALID_ARG, err, err_size,
                "import: format_version %llu is newer than this clnorm reads (%d)",
                (unsigned long long)version, CLNORM_DB_JSON_FORMAT);
  const jnode *list = member(&c, root, "devices", J_ARRAY);
  if (!list)
    return CLNORM_E_INVALID_ARG;
  size_t total = 0;
  for (const jnode *d = list->child; d; d = d->next) {
    const jnode *results = NULL;
    for (const jnode *m = d->type == J_OBJECT ? d->child : NULL; m; m = m->next)
      if (strcmp(m->key, "results") == 0 && m->type == J_ARRAY)
        results = m;
    total += results ? results->count : 0;
  }
  clnorm_device_identity *devices = calloc(list->count ? list->count : 1, sizeof *devices);
  import_row *rows = calloc(total ? total : 1, sizeof *rows);
  if (!devices || !rows) {
    free(devices);
    free(rows);
    return fail(CLNORM_E_NO_MEMORY, err, err_size, "import: out of memory");
  }
  size_t di = 0, ri = 0;
  char where[96];
  for (const jnode *d = list->child; d && !c.failed; d = d->next, di++) {
    snprintf(where, sizeof where, "devices[%zu]", di);
    c.where = where;
    if (!read_device(&c, d, &devices[di]))
      break;
    char reason[160];
    if (!device_valid(&devices[di], reason, sizeof reason)) {
      bad(&c, NULL, "%s", reason);
      break;
    }
    const jnode *results = member(&c, d, "results", J_ARRAY);
    size_t k = 0;
    for (const jnode *r = results ? results->child : NULL; r; r = r->next, k++) {
      snprintf(where, sizeof where, "devices[%zu].results[%zu]", di, k);
      if (!read_result(&c, r, &rows[ri].result))
        break;
      rows[ri++].device = di;
    }
  }
  if (c.failed) {
    free(devices);
    free(rows);
    return CLNORM_E_INVALID_ARG;
  }
  *devices_out = devices;
  *device_count = di;
  *rows_out = rows;
  *row_count = ri;
  return CLNORM_OK;
}

static clnorm_status store_import(clnorm_db *db, const clnorm_device_identity *devices,
                                  size_t device_count, const import_row *rows, size_t row_count,
                                  size_t *imported, size_t *kept, char *err, size_t err_size) {
  sqlite3_int64 *ids = calloc(device_count ? device_count : 1, sizeof *ids);
  if (!ids)
    return fail(CLNORM_E_NO_MEMORY, err, err_size, "import: out of memory");
  int rc = begin_write(db->sql);
  if (rc != SQLITE_OK) {
    free(ids);
    return db_fail(db, rc, "starting a write transaction", err, err_size);
  }
  const clnorm_status lost = check_file(db, err, err_size);
  if (lost != CLNORM_OK) {
    exec(db->sql, "ROLLBACK");
    free(ids);
    return lost;
  }
  const char *what = "storing the imported devices";
  for (size_t i = 0; rc == SQLITE_OK && i < device_count; i++)
    rc = device_id(db, &devices[i], 1, &ids[i]);
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
    rc = exec(db->sql, "COMMIT");
  }
  free(ids);
  if (rc != SQLITE_OK) {
    const clnorm_status status = db_fail(db, rc, what, err, err_size);
    exec(db->sql, "ROLLBACK");
    db->cached = 0;
    *imported = *kept = 0;
    return status;
  }
  return CLNORM_OK;
}

clnorm_status clnorm__db_import(clnorm_db *db, const char *text, size_t len, size_t *imported,
                                size_t *kept, char *err, size_t err_size) {
  size_t imported_local = 0, kept_local = 0;
  imported = imported ? imported : &imported_local;
  kept = kept ? kept : &kept_local;
  *imported = *kept = 0;
  clear(err, err_size);
  if (!db || (!text && len))
    return fail(CLNORM_E_INVALID_ARG, err, err_size, "%s is NULL", !db ? "db" : "text");
  if (!db->writable)
    return fail(CLNORM_E_DB, err, err_size,
                "tuning database '%s' was opened for reading: cannot import", db->path);
  jparser p = {text ? text : "", len, 0, NULL, err, err_size, 0, CLNORM_OK};
  /* a UTF-8 byte order mark is not JSON, but editors write one */
  if (len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0)
    p.pos = 3;
  /* JSON numbers use '.' whatever the application's locale says */
  void *numbers = clnorm__c_numbers_begin();
  const jnode *root = parse_value(&p, 1);
  clnorm__c_numbers_end(numbers);
  if (root) {
    skip_space(&p);
    if (p.pos < p.len)
      root = jsyntax(&p, "text after the end of the document");
  }
  if (!root) {
    jfree(&p);
    return p.status;
  }
  clnorm_device_identity *devices = NULL;
  import_row *rows = NULL;
  size_t device_count = 0, row_count = 0;
  clnorm_status status =
      read_document(root, &devices, &device_count, &rows, &row_count, err, err_size);
  jfree(&p);
  if (status == CLNORM_OK)
    status =
        store_import(db, devices, device_count, rows, row_count, imported, kept, err, err_size);
  free(devices);
  free(rows);
  return status;
}
