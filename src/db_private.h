/* What the db_*.c files share and nothing else sees: the handle, its prepared statements and the
 * helpers that take SQLite's types. The db_*.c files alone include this header (and sqlite3.h). */
#ifndef CLNORM_DB_PRIVATE_H
#define CLNORM_DB_PRIVATE_H

#include "db.h"
#include "names.h"

#include <sqlite3.h>

#define STR2(x) #x
#define STR(x) STR2(x)
#define THIS_VERSION                                                                               \
  STR(CLNORM_VERSION_MAJOR) "." STR(CLNORM_VERSION_MINOR) "." STR(CLNORM_VERSION_PATCH)
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* The statements a handle prepares on first use (db_store.c). */
enum {
  ST_FIND_DEVICE,
  ST_ADD_DEVICE,
  ST_PUT,
  ST_GET,
  ST_IMPORT,
  ST_PUT_HEURISTIC,
  ST_PUT_COPY,
  ST_PUT_AB,
  ST_FORGET_REFUSAL,
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

/* sqlite3_exec without a callback; PRAGMA's integer into *out; BEGIN IMMEDIATE, retried while
 * another process holds the write lock. SQLite's result codes. */
int clnorm__db_exec(sqlite3 *sql, const char *text);
int clnorm__db_pragma_int(sqlite3 *sql, const char *text, sqlite3_int64 *out);
int clnorm__db_begin_write(sqlite3 *sql);
/* The row id of device into *id (-1 when it is not stored and create is 0). */
int clnorm__db_device_id(clnorm_db *db, const clnorm_device_identity *d, int create,
                         sqlite3_int64 *id);
/* Whether the table `name` exists: a database of schema 2 or older has no heuristic and no
 * copy_bandwidth table, one of schema 3 or older no ab table, and a reader never migrates. */
int clnorm__db_has_table(sqlite3 *sql, const char *name, int *yes);
/* Stores one row of `which` (db_store.c says what `result` points to) in its own transaction. */
clnorm_status clnorm__db_put_row(clnorm_db *db, int which, const clnorm_device_identity *device,
                                 const void *result, double copy_gbps, uint64_t bytes, char *err,
                                 size_t err_size);
/* Clears err; CLNORM_E_INVALID_ARG naming the first of db, device and `what` that is NULL
 * (what_null: whether `what` is). */
clnorm_status clnorm__db_check_null(const clnorm_db *db, const void *device, int what_null,
                                    const char *what, char *err, size_t err_size);
/* clnorm__db_check_null, then CLNORM_E_INVALID_ARG where device is not a valid identity. */
clnorm_status clnorm__db_check_device(const clnorm_db *db, const clnorm_device_identity *device,
                                      int what_null, const char *what, char *err, size_t err_size);
/* The row id of device in *id where the table `table` exists (-1 where it does not, an older
 * schema, or where device is not stored); CLNORM_E_DB with a message on `doing` where SQLite
 * fails. */
clnorm_status clnorm__db_device_in(clnorm_db *db, const char *table,
                                   const clnorm_device_identity *device, sqlite3_int64 *id,
                                   const char *doing, char *err, size_t err_size);
/* Binds ?1 the device's row id, ?2 the kernel hash, ?3..?6 op, dtype, cols and row class: the
 * start of a result's and an A/B result's row. */
void clnorm__db_bind_shape(sqlite3_stmt *st, sqlite3_int64 device, uint64_t kernel_hash,
                           clnorm_op op, clnorm_dtype dtype, uint64_t cols, unsigned row_class);
/* The SQL of a row's current kernel hash, its op's family's (clnorm__kernel_hash_of) of those
 * bound as ?2 (forward) and ?3 (backward): "CASE WHEN <alias>op IN (<the backward ops>) THEN ?3
 * ELSE ?2 END", alias "r." or "" for a table's own columns. clnorm__db_current: the condition
 * " AND <alias>kernel_hash = <that>", with the two hashes as an IN before it so that SQLite can
 * search an index by the hash. */
void clnorm__db_family_hash(char *buf, size_t size, const char *alias);
void clnorm__db_current(char *buf, size_t size, const char *alias);
/* Binds hashes as ?2 (forward) and ?3 (backward), as text in `text`, which must outlive st. */
void clnorm__db_bind_hashes(sqlite3_stmt *st, const clnorm_kernel_hashes *hashes, char text[2][17]);
/* Prepares a listing's query and binds its optional parameters: ?1 the device's row id (when
 * by_device), ?2 and ?3 the kernel hashes (when not NULL; the query then holds
 * clnorm__db_current's filter) as text in `hash`, which must outlive *st. SQLite's result code. */
int clnorm__db_prepare_listing(clnorm_db *db, const char *text, int by_device, sqlite3_int64 id,
                               const clnorm_kernel_hashes *hashes, char hash[2][17],
                               sqlite3_stmt **st);
/* Binds v's six parameters as ?first.. (their CLNORM_VARIANT_SQL_COLUMNS order). */
void clnorm__db_bind_variant(sqlite3_stmt *st, int first, const clnorm_variant *v);
/* Column col as an integer in [0, max] into *out: 0 (nothing written) for another type or value. */
int clnorm__db_column_uint(sqlite3_stmt *st, int col, uint64_t max, uint64_t *out);
/* NULL reads as NaN; a text or blob as -1, which every check rejects. */
double clnorm__db_column_double(sqlite3_stmt *st, int col);
/* Reads a shape's op, dtype, cols, row class and rows from the 5 columns from `first`, and a
 * variant's 6 parameters from `first` (CLNORM_VARIANT_SQL_COLUMNS' order, each checked against
 * clnorm__variant_params' maximum or names): the one reading of the columns clnorm__db_bind_shape
 * and clnorm__db_bind_variant write. Each returns -1, or the first column of the wrong type, out
 * of range or holding a name this build does not know (a blob, or a text with a NUL inside, is
 * never a name). */
int clnorm__db_read_shape(sqlite3_stmt *st, int first, clnorm_op *op, clnorm_dtype *dtype,
                          uint64_t *cols, unsigned *row_class, uint64_t *rows);
int clnorm__db_read_variant(sqlite3_stmt *st, int first, clnorm_variant *v);
/* A kernel hash (16 hex digits, a text without a NUL inside) from column col: 1, or 0 (nothing
 * written where the text is not one). */
int clnorm__db_read_hash(sqlite3_stmt *st, int col, uint64_t *hash);
/* Reads a device's 8 columns (ST_FIND_DEVICE's order, from column 0): -1, or the first column out
 * of range or of the wrong type. */
int clnorm__db_read_device(sqlite3_stmt *st, clnorm_device_identity *d);
/* Reads the 27 columns of ST_GET's select list from the current row. Returns 0 for a row this
 * build cannot represent (a name from a newer clnorm, a value out of range), with the reason in
 * reason. */
int clnorm__db_read_row(sqlite3_stmt *st, clnorm_device_identity *d, clnorm_result *r, char *reason,
                        size_t reason_size);
/* Binds ab's row (after ?1, the device id) to ST_PUT_AB (db_ab.c). */
void clnorm__db_bind_ab(sqlite3_stmt *st, sqlite3_int64 device, const clnorm_ab *ab);
/* The message of a failed SQLite call on db while `doing` something, into err: CLNORM_E_DB. */
clnorm_status clnorm__db_sql_error(clnorm_db *db, int rc, const char *doing, char *err,
                                   size_t err_size);
/* The end of a listing's steps: st finalized, then CLNORM_OK where the last step gave SQLITE_DONE
 * (rc), else the message of rc while `doing`. */
clnorm_status clnorm__db_end_listing(clnorm_db *db, sqlite3_stmt *st, int rc, const char *doing,
                                     char *err, size_t err_size);

#endif
