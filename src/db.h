/* The tuning database: measured variants per device and shape, kept in SQLite.
 *
 * db.c and db_store.c (through db_private.h) are the only files that include sqlite3.h; the JSON
 * export and import are normtune's (tuner/db_json.h). The library opens the database for reading
 * once per context and copies this device's winners into memory; normtune opens it for writing,
 * stores one result per transaction, lists, exports and imports. Every function returns a
 * clnorm_status (CLNORM_E_DB for any database problem) and writes a message into err (err_size
 * bytes, always NUL-terminated; "" on success; err may be NULL). Nothing here prints or aborts.
 * A clnorm_db handle is used by one thread at a time; several handles (threads, processes) may
 * share a file.
 * Needs SQLite 3.25 or later. Internal; never installed. */
#ifndef CLNORM_DB_H
#define CLNORM_DB_H

#include "clnorm.h"
#include "clnorm_variant.h"
#include "platform.h"

#include <stdint.h>
#include <stdio.h>

#define CLNORM_DB_SCHEMA 4      /* PRAGMA user_version this build writes */
#define CLNORM_DB_JSON_FORMAT 1 /* "format_version" of exported JSON */

typedef struct clnorm_db clnorm_db;

/* What identifies a device: results measured under another identity (a driver update, another
 * clock or partition) are not used as tuned results. Strings are NUL-terminated. */
typedef struct clnorm_device_identity {
  cl_uint vendor_id;
  char vendor[256];
  char name[256];
  char driver_version[256];
  char cl_version[256]; /* CL_DEVICE_VERSION, e.g. "OpenCL 3.0 CUDA" */
  cl_uint compute_units;
  cl_uint max_clock_mhz;
  cl_ulong local_mem; /* bytes */
} clnorm_device_identity;

/* 1 when a and b are the same identity (every field equal), else 0. */
int clnorm__identity_equal(const clnorm_device_identity *a, const clnorm_device_identity *b);

/* 1 when a and b are the same device, possibly under different driver versions: vendor id,
 * vendor, name, compute units and local memory equal (the driver and OpenCL version strings and
 * the clock a driver reports may change with it). */
int clnorm__identity_same_device(const clnorm_device_identity *a,
                                 const clnorm_device_identity *b);

/* The driver family of a CL_DEVICE_VERSION: its first word after "OpenCL N.M " ("OpenCL 3.0 CUDA"
 * -> "CUDA", "OpenCL 3.0 PoCL HSTR: ..." -> "PoCL"), at most size - 1 bytes; "" when none. */
void clnorm__driver_family(const char *cl_version, char *out, size_t size);

/* A device's architecture as the built-in table names it: NVIDIA's "sm_<major><minor>" from the
 * compute capability (nv_sm: major * 10 + minor, below 10 when not known), an AMD device's gfx
 * name (its name up to a ':'); "" otherwise. */
void clnorm__device_arch(cl_uint vendor_id, const char *name, unsigned nv_sm, char *out,
                         size_t size);

/* How a measured candidate ended; stored as its name ("ok", "wrong", ...).
 *   OK           verified and timed
 *   WRONG        failed verification
 *   BUILD_FAILED did not compile
 *   UNSUPPORTED  the device or call cannot run it
 *   SLOW         cut short at more than 3x the best so far */
#define CLNORM_OUTCOME_MAP(X)                                                                      \
  X(CLNORM_OUTCOME_OK, 0, "ok")                                                                    \
  X(CLNORM_OUTCOME_WRONG, 1, "wrong")                                                              \
  X(CLNORM_OUTCOME_BUILD_FAILED, 2, "build_failed")                                                \
  X(CLNORM_OUTCOME_UNSUPPORTED, 3, "unsupported")                                                  \
  X(CLNORM_OUTCOME_SLOW, 4, "slow")
typedef enum clnorm_outcome { CLNORM_OUTCOME_MAP(CLNORM_ENUMERATOR) } clnorm_outcome;

/* The kernel hashes of one build, one per program family: what a stored row (result, heuristic
 * measurement, A/B) is keyed by, and is current under when it is the hash of its op's family. An
 * edit of backward.cl or strip.cl leaves the forward ops' rows current, and one of forward.cl or
 * split.cl the backward ops'; an edit of common.cl changes both. */
typedef struct clnorm_kernel_hashes {
  uint64_t forward;  /* every op but the backward ones: cl/common.cl, forward.cl and split.cl */
  uint64_t backward; /* clnorm__op_backward: cl/common.cl, backward.cl and strip.cl */
} clnorm_kernel_hashes;
/* Every function here takes it by const pointer (clnorm__kernel_hashes returns it): NULL means no
 * filter, rows of any kernel hash, where a listing says so (clnorm__db_list, _list_heuristic,
 * _list_ab); the others need one (those returning a status: CLNORM_E_INVALID_ARG for NULL). */

/* This build's kernel hashes (clnorm__source_hash of each family's embedded sources, in
 * src/program.c), and of those the one of op's family: the hash a row of op is stored with. */
clnorm_kernel_hashes clnorm__kernel_hashes(void);
uint64_t clnorm__kernel_hash_of(const clnorm_kernel_hashes *hashes, clnorm_op op);

/* One measured candidate. (kernel_hash, op, dtype, cols, row_class, variant) and the device are
 * its key. Times are seconds; a value not measured is NaN (stored as NULL). */
typedef struct clnorm_result {
  uint64_t kernel_hash; /* the kernel hash of op's family (stored as 16 hex digits) */
  clnorm_op op;
  clnorm_dtype dtype;
  uint64_t cols;
  unsigned row_class; /* clnorm__row_class(rows) */
  uint64_t rows;      /* rows of the measured shape */
  clnorm_variant variant;
  clnorm_outcome outcome;
  double median_s, min_s, gbps, max_err; /* an "ok" result has finite median_s, min_s > 0 */
  int64_t measured_at;                   /* unix time; 0 in put means now */
  char clnorm_version[16];               /* "" in put means this build's version */
  /* clnorm__db_winners and _winner_rows only (ignored by put): the least and the largest row
   * count at which this winner was measured not to lose (clnorm__db_winner_rows), and the
   * heuristic's variant its A/B results compared it with (against_known 0: no A/B chose it) */
  uint64_t rows_lo, rows_hi;
  clnorm_variant against;
  int against_known;
} clnorm_result;

/* Rows the last clnorm__db_list or clnorm__db_winners skipped because this build cannot use them
 * (edited by hand, damaged, or written by a newer clnorm), and in reason why the first of them
 * was skipped ("" when none was). */
uint64_t clnorm__db_skipped(const clnorm_db *db, char *reason, size_t reason_size);

/* Results of this device's model that clnorm__db_winners no longer uses. */
typedef struct clnorm_db_stale {
  uint64_t driver_changed;  /* same vendor id, vendor and name, another driver version */
  uint64_t kernels_changed; /* this exact device, not its op's family's kernel hash */
} clnorm_db_stale;

/* Called by clnorm__db_list once per row; `winner` is 1 when the row is its (device, kernel hash,
 * op, dtype, cols, row class)'s winner, as clnorm__db_winners chooses it. Return nonzero to stop
 * the listing. */
typedef int (*clnorm_db_row_fn)(void *user, const clnorm_device_identity *device,
                                const clnorm_result *result, int winner);

#define CLNORM_DB_READ 0  /* the library: never creates or changes anything */
#define CLNORM_DB_WRITE 1 /* normtune: creates parent directories and the file, migrates */
/* the system database: as READ, and opened read-only even where this process may write it */
#define CLNORM_DB_READONLY 2

/* Writes the default database path into buf: $CLNORM_DB, else $XDG_CACHE_HOME/clnorm/tuning.db,
 * else $HOME/.cache/clnorm/tuning.db (empty variables and a relative XDG_CACHE_HOME are ignored);
 * on Windows %LOCALAPPDATA%\clnorm\tuning.db after $CLNORM_DB (clnorm__cache_home).
 * Returns CLNORM_E_DB when none is set or buf is too small. */
clnorm_status clnorm__db_default_path(char *buf, size_t size, char *err, size_t err_size);

/* Opens the database at path; *out receives the handle (NULL on failure). mode is
 * CLNORM_DB_READ, CLNORM_DB_READONLY or CLNORM_DB_WRITE. Reading needs an existing database of a
 * schema this build reads (older ones included), changes nothing, and works on read-only files
 * and directories.
 * Writing creates the file (WAL, 5 s busy timeout), migrates an older schema and checks
 * integrity. CLNORM_E_DB, with err naming the path, when the file is missing (reading), read-only
 * or in a read-only directory (writing), corrupt or not a database ("is corrupt"), another
 * application's database, or of a newer schema ("newer than this clnorm"; left untouched). */
clnorm_status clnorm__db_open(const char *path, int mode, clnorm_db **out, char *err,
                              size_t err_size);

/* Closes the handle; NULL is a no-op. */
void clnorm__db_close(clnorm_db *db);

/* Makes path a usable database: a corrupt file, a non-database or a database of a newer schema
 * (and its -wal and -shm files) is renamed to "<path>.bad-<unix time>" and a fresh database is
 * created; a sound one is left as it is, a missing one is created. moved_to (may be NULL)
 * receives the new name of the moved file, or "" when nothing was moved. Another application's
 * SQLite database is never moved: CLNORM_E_DB. CLNORM_E_DB also when renaming or creating fails. */
clnorm_status clnorm__db_repair(const char *path, char *moved_to, size_t moved_size, char *err,
                                size_t err_size);

/* Stores one result of `device` in its own transaction, replacing a stored result with the same
 * key. Retries while another process holds the write lock. CLNORM_E_INVALID_ARG for a result or
 * identity out of range (err says which field); CLNORM_E_DB (read-only handle, write failed). */
clnorm_status clnorm__db_put(clnorm_db *db, const clnorm_device_identity *device,
                             const clnorm_result *result, char *err, size_t err_size);

/* Deletes the stored results with the keys of keys[0..count) (as clnorm__db_get's) that are
 * refusals (status unsupported), in one transaction; a measured result, or a key with nothing
 * stored, is left as it is. The tuner forgets a refusal the library has lifted since it was
 * stored, so that a candidate its search does not reach is unmeasured, not refused. Arguments
 * as clnorm__db_put's; CLNORM_E_DB (read-only handle, write failed). */
clnorm_status clnorm__db_forget_refusals(clnorm_db *db, const clnorm_device_identity *device,
                                         const clnorm_result *keys, size_t count, char *err,
                                         size_t err_size);

/* Looks up the stored result with the key of `key` (kernel_hash, op, dtype, cols, row_class,
 * variant) for `device`: *found is 1 and *out (may be NULL) receives it, or *found is 0. */
clnorm_status clnorm__db_get(clnorm_db *db, const clnorm_device_identity *device,
                             const clnorm_result *key, clnorm_result *out, int *found, char *err,
                             size_t err_size);

/* This device's tuned table: for each (op, dtype, cols, row class), the "ok" result with the
 * smallest median among those of exactly this identity and current under hashes (the kernel hash
 * of the op's family, clnorm_kernel_hashes), unless the shape's
 * A/B results (clnorm_ab) choose another: then that one (the heuristic's variant when any of
 * them kept it), with the row counts where it stands (rows_lo, rows_hi: clnorm__db_winner_rows).
 * *out receives a malloc'ed array the caller frees (NULL when *count is 0), sorted by op, dtype,
 * cols, row class. CLNORM_E_NO_MEMORY, CLNORM_E_DB. */
clnorm_status clnorm__db_winners(clnorm_db *db, const clnorm_device_identity *device,
                                 const clnorm_kernel_hashes *hashes, clnorm_result **out,
                                 size_t *count, char *err, size_t err_size);

/* The timed results of the shape of `shape` (op, dtype, cols, row_class) on `device` measured
 * under another kernel hash than shape->kernel_hash: those of the one most recently measured
 * there (an earlier edit of the op's family's kernels), the "ok" ones fastest first, then those
 * cut short as slow (their time a bound from below) fastest first, at most `max` of them into
 * out[] (room for max), their number in *count (each names its kernel hash). What normtune's
 * seeded strategy starts a shape's search from after a kernel edit. CLNORM_E_INVALID_ARG,
 * CLNORM_E_DB. */
clnorm_status clnorm__db_earlier(clnorm_db *db, const clnorm_device_identity *device,
                                 const clnorm_result *shape, size_t max, clnorm_result *out,
                                 size_t *count, char *err, size_t err_size);

/* Counts this device's stale results under hashes (see clnorm_db_stale) into *out. */
clnorm_status clnorm__db_stale(clnorm_db *db, const clnorm_device_identity *device,
                               const clnorm_kernel_hashes *hashes, clnorm_db_stale *out, char *err,
                               size_t err_size);

/* Calls fn for each stored result, ordered by device, kernel hash, op, dtype, cols, row class,
 * then fastest first. device: only that exact identity (NULL: all). hashes: only results current
 * under them, of the kernel hash of their op's family (NULL: any). winners_only: only rows with
 * winner == 1. Rows this build cannot represent (a name written by a newer clnorm) are skipped,
 * here and in every query. */
clnorm_status clnorm__db_list(clnorm_db *db, const clnorm_device_identity *device,
                              const clnorm_kernel_hashes *hashes, int winners_only,
                              clnorm_db_row_fn fn, void *user, char *err, size_t err_size);

/* What a tuning run measures besides the candidates (schema 3 on; a database of an older schema
 * holds none of it, and these functions then report nothing rather than fail). */

/* Stores `result` as the measurement of the heuristic's variant (clnorm_heuristic: what the
 * dispatcher runs untuned) for its shape (kernel_hash, op, dtype, cols, row_class) of `device`,
 * replacing the one stored. Statuses as clnorm__db_put. */
clnorm_status clnorm__db_put_heuristic(clnorm_db *db, const clnorm_device_identity *device,
                                       const clnorm_result *result, char *err, size_t err_size);

/* Calls fn (winner 0) for each stored heuristic measurement, ordered as clnorm__db_list;
 * device and hashes filter as there (NULL: all). */
clnorm_status clnorm__db_list_heuristic(clnorm_db *db, const clnorm_device_identity *device,
                                        const clnorm_kernel_hashes *hashes, clnorm_db_row_fn fn,
                                        void *user, char *err, size_t err_size);

/* The interleaved A/B of one shape at one row count (schema 4 on): the search's best candidate
 * against the heuristic's variant, timed in turn for `rounds` rounds. A shape (op, dtype, cols,
 * row class) may hold one per row count tuned; its winner is then the heuristic's variant when
 * any of them kept the heuristic, else the candidate of the latest (clnorm__db_winners). */
typedef struct clnorm_ab {
  uint64_t kernel_hash;
  clnorm_op op;
  clnorm_dtype dtype;
  uint64_t cols;
  unsigned row_class;
  uint64_t rows; /* the row count the A/B ran at */
  clnorm_variant candidate, heuristic;
  double candidate_s, heuristic_s; /* medians of the rounds, seconds per call (> 0) */
  double noise;                    /* half the range of the rounds' ratios over their median */
  unsigned rounds;     /* 0: the candidate is the heuristic's variant (kept, nothing timed) */
  int kept_heuristic;  /* 1: the candidate was not faster by more than the noise and margin */
  int64_t measured_at; /* unix time; 0 in put means now */
} clnorm_ab;

/* Stores ab for `device`, replacing the one of the same shape and row count. Statuses as
 * clnorm__db_put; CLNORM_E_DB also for a database of schema 3 or older opened for reading. */
clnorm_status clnorm__db_put_ab(clnorm_db *db, const clnorm_device_identity *device,
                                const clnorm_ab *ab, char *err, size_t err_size);

/* Calls fn for each stored A/B of `device` (required) current under hashes (as clnorm__db_list;
 * NULL: any), ordered by kernel hash, op, dtype, cols, row class, rows. Nothing for a database
 * without A/B results. Return nonzero to stop. */
typedef int (*clnorm_db_ab_fn)(void *user, const clnorm_ab *ab);
clnorm_status clnorm__db_list_ab(clnorm_db *db, const clnorm_device_identity *device,
                                 const clnorm_kernel_hashes *hashes, clnorm_db_ab_fn fn, void *user,
                                 char *err, size_t err_size);

/* Sets rows_lo and rows_hi of each of winners[0..count) (winners of `device`, as
 * clnorm__db_winners returns them, sorted by op, dtype, cols, row class) from one listing of the
 * device's A/B results: the least and the largest row count of the shape whose A/B chose that
 * winner's variant (a candidate that won; the heuristic's variant that was kept), and `against`,
 * those A/Bs' heuristic variant (tune compares a class's winner again only where the heuristic's
 * variant is the one of the rows tuned, so they share one; where two row counts of the class were
 * tuned and the heuristic gives each another variant, against_known is 0). A winner that no A/B
 * chose (a database or export without A/B results) gets the row count it was measured at, its
 * `rows`, and against_known 0. Statuses as clnorm__db_list_ab. */
clnorm_status clnorm__db_winner_rows(clnorm_db *db, const clnorm_device_identity *device,
                                     clnorm_result *winners, size_t count, char *err,
                                     size_t err_size);

/* Stores the device's copy bandwidth (GB/s, bytes read + written per second, as
 * tool_copy_gbps) measured over `bytes` bytes, replacing the one stored.
 * CLNORM_E_INVALID_ARG (not a positive finite figure), CLNORM_E_DB. */
clnorm_status clnorm__db_put_copy(clnorm_db *db, const clnorm_device_identity *device, double gbps,
                                  uint64_t bytes, char *err, size_t err_size);

/* The device's stored copy bandwidth into *gbps (NaN when none is stored); bytes and measured_at
 * (unix time) may be NULL. */
clnorm_status clnorm__db_copy_gbps(clnorm_db *db, const clnorm_device_identity *device,
                                   double *gbps, uint64_t *bytes, int64_t *measured_at, char *err,
                                   size_t err_size);

/* Per stored device identity: how many results, how many current under the kernel hashes (of
 * their op's family), how many shapes (op, dtype, cols, row class) of those have an "ok" result
 * (a tuned winner). */
typedef struct clnorm_db_device_counts {
  uint64_t results, current, shapes;
} clnorm_db_device_counts;

/* Return nonzero to stop the listing. */
typedef int (*clnorm_db_device_fn)(void *user, const clnorm_device_identity *device,
                                   const clnorm_db_device_counts *counts);

/* The stored devices that have a winner current under hashes (a shape with an "ok" result), in
 * the order they were first stored, into *out (free() it; NULL for none) and *count;
 * *other_kernels (may be NULL) receives how many results of every device are stale under them.
 * CLNORM_E_NO_MEMORY, CLNORM_E_DB. */
clnorm_status clnorm__db_tuned_devices(clnorm_db *db, const clnorm_kernel_hashes *hashes,
                                       clnorm_device_identity **out, size_t *count,
                                       uint64_t *other_kernels, char *err, size_t err_size);

/* Calls fn once per stored device identity, in the order they were first stored. */
clnorm_status clnorm__db_devices(clnorm_db *db, const clnorm_kernel_hashes *hashes,
                                 clnorm_db_device_fn fn, void *user, char *err, size_t err_size);

/* The schema version of the open database (PRAGMA user_version) into *version. */
clnorm_status clnorm__db_schema(clnorm_db *db, int *version, char *err, size_t err_size);

/* What an import stores (tuner/db_json.c reads the JSON): devices, and rows of results, each
 * naming its device by index. Valid input is stored in one transaction; a result whose key is
 * already stored replaces it only when it was measured later. *imported receives how many results
 * were stored, *kept how many were older than the stored ones. CLNORM_E_NO_MEMORY, CLNORM_E_DB. */
typedef struct clnorm_db_import_row {
  size_t device; /* index into the devices array */
  clnorm_result result;
} clnorm_db_import_row;
clnorm_status clnorm__db_import_rows(clnorm_db *db, const clnorm_device_identity *devices,
                                     size_t device_count, const clnorm_db_import_row *rows,
                                     size_t row_count, size_t *imported, size_t *kept, char *err,
                                     size_t err_size);

/* The handle's path, and 1 when it was opened with CLNORM_DB_WRITE. */
const char *clnorm__db_path(const clnorm_db *db);
int clnorm__db_writable(const clnorm_db *db);

/* The ranges a stored result's fields must lie in, and the longest identity string (the struct's
 * arrays hold 256 bytes). */
#define CLNORM_DB_TEXT_MAX 255
#define CLNORM_DB_MAX_COLS (UINT64_C(1) << 40)
#define CLNORM_DB_MAX_ROWS (UINT64_C(1) << 62)
#define CLNORM_DB_MAX_ROW_CLASS 255
#define CLNORM_DB_MAX_WG (1u << 20)
#define CLNORM_DB_MAX_HOLD 4096

/* 1 when the identity or the result can be stored, else 0 with the reason in buf (a field name
 * first). Shared by put, import and reading. */
int clnorm__db_device_valid(const clnorm_device_identity *d, char *buf, size_t size);
int clnorm__db_result_valid(const clnorm_result *r, char *buf, size_t size);
/* The same checks of a result's key alone (its shape and variant), and of a variant alone. */
int clnorm__db_key_valid(clnorm_op op, clnorm_dtype dtype, uint64_t cols, unsigned row_class,
                         uint64_t rows, const clnorm_variant *v, char *buf, size_t size);
int clnorm__db_variant_valid(const clnorm_variant *v, char *buf, size_t size);
int clnorm__db_ab_valid(const clnorm_ab *ab, char *buf, size_t size);
/* Whether a and b are A/B results of one shape at one row count (op, dtype, cols, row class and
 * rows; the kernel hash is the listing's filter). */
int clnorm__db_ab_same_shape(const clnorm_ab *a, const clnorm_ab *b);

/* A kernel hash as 16 lowercase hexadecimal digits, and back (1: parsed, 0: not 1-16 digits). */
void clnorm__db_hash_text(uint64_t hash, char out[17]);
int clnorm__db_parse_hash(const char *text, uint64_t *out);

/* Writes the formatted message into err (when err_size > 0) and returns status; _clear empties
 * err. */
#if defined(__GNUC__)
#define CLNORM_DB_PRINTF(a, b) __attribute__((format(CLNORM_PRINTF_FORMAT, a, b)))
#else
#define CLNORM_DB_PRINTF(a, b)
#endif
clnorm_status clnorm__db_error(clnorm_status status, char *err, size_t err_size, const char *fmt,
                               ...) CLNORM_DB_PRINTF(4, 5);
void clnorm__db_clear(char *err, size_t err_size);

/* Static name of an outcome ("ok", "wrong", "build_failed", "unsupported", "slow"; "?" if
 * unknown). */
const char *clnorm__outcome_name(clnorm_outcome outcome);

/* identity.c: reads the identity of `device` with clGetDeviceInfo (strings trimmed of trailing
 * spaces, truncated to fit). CLNORM_E_INVALID_ARG, CLNORM_E_OPENCL. */
clnorm_status clnorm__device_identity(cl_device_id device, clnorm_device_identity *out, char *err,
                                      size_t err_size);

#endif
