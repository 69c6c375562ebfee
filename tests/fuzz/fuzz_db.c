/* libFuzzer target: the tuning database as the library loads it, after rows were edited by hand or
 * written by another version. A valid seed database is built once per process (through the
 * library, so its schema is the library's); each input is turned into a copy of it:
 *   first byte % 16 == 0: the rest of the input is the database file itself (mostly rejected by
 *                         SQLite's header check: the error paths);
 *   first byte % 16 == 1: the seed with bytes of the input XORed in at offsets the input gives
 *                         (damaged pages, headers, schema text);
 *   otherwise:            a sequence of SQL-level edits through SQLite directly: columns set to
 *                         fuzzed values of every storage type (huge, negative, NaN-like, text,
 *                         blobs, NULL, names with a NUL inside), rows deleted and inserted,
 *                         user_version and application_id changed, tables loosened (no types or
 *                         constraints), dropped, renamed, given triggers.
 * Then the library's loading path runs on it as tuned.c does, with fixed fake identities (no
 * device needed): clnorm__db_open for reading, clnorm__db_winners and clnorm__db_stale, and the
 * listing and lookups normtune uses. Every call must fail cleanly or return results that pass
 * the checks of fuzz_check.c, winners the fastest valid "ok" result of their shape. The second
 * byte picks a second identity and hash to load and, in a quarter of the inputs, opens the file
 * for writing (integrity check, migration, a put, an import), repairing it first in half of
 * those. */
#define _POSIX_C_SOURCE 200809L
#include "db.h"
#include "db_json.h"
#include "fuzz_check.h"

#include <sqlite3.h>

#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define HASH_A UINT64_C(0x0123456789abcdef)
#define HASH_B UINT64_C(0xfedcba9876543210)
#define DEVICES 3

static const char *work_path;
static unsigned char *seed;
static size_t seed_size;
static clnorm_device_identity devices[DEVICES];
static const uint64_t hashes[] = {HASH_A, HASH_B};
static char err[1024];
/* 0 for a damaged file, where SQLite answers from an inconsistent index (the reader runs no
 * integrity check, by design), and for tables loosened to no types or keys (ids repeat), which
 * clnorm never writes: the answers are not compared, only checked to be valid. */
static int consistent;

static clnorm_device_identity make_device(const char *name, const char *driver) {
  clnorm_device_identity d;
  memset(&d, 0, sizeof d);
  d.vendor_id = 0x10de;
  snprintf(d.vendor, sizeof d.vendor, "NVIDIA Corporation");
  snprintf(d.name, sizeof d.name, "%s", name);
  snprintf(d.driver_version, sizeof d.driver_version, "%s", driver);
  snprintf(d.cl_version, sizeof d.cl_version, "OpenCL 3.0 CUDA");
  d.compute_units = 132;
  d.max_clock_mhz = 1980;
  d.local_mem = 49152;
  return d;
}

static void put(clnorm_db *db, const clnorm_device_identity *d, const clnorm_result *r) {
  if (clnorm__db_put(db, d, r, err, sizeof err) != CLNORM_OK)
    fuzz_fail("building the seed: %s", err);
}

/* Results of several shapes per device and hash: winners, losers, ties, every outcome. */
static void build_seed(const char *path) {
  clnorm_db *db = NULL;
  if (clnorm__db_open(path, CLNORM_DB_WRITE, &db, err, sizeof err) != CLNORM_OK)
    fuzz_fail("creating the seed %s: %s", path, err);
  static const uint64_t cols[] = {768, 4096, UINT64_C(1) << 40};
  static const unsigned wgs[] = {64, 256, 1024};
  int n = 0;
  for (int dev = 0; dev < DEVICES; dev++)
    for (int h = 0; h < 2; h++)
      for (int shape = 0; shape < 4; shape++)
        for (int k = 0; k < 3; k++, n++) {
          clnorm_result r;
          memset(&r, 0, sizeof r);
          r.kernel_hash = hashes[h];
          r.op = (clnorm_op)((shape + dev) % CLNORM_OP_COUNT);
          r.dtype = (clnorm_dtype)(shape % 3);
          r.cols = cols[shape % 3];
          r.row_class = (unsigned)shape;
          r.rows = (uint64_t)16 << (2 * shape);
          r.variant = (clnorm_variant){wgs[k],         k == 0 ? 1 : wgs[k], k == 2 ? 16 : 4,
                                       k == 1 ? 0 : 4, CLNORM_REDUCE_LOCAL, CLNORM_STATS_WELFORD};
          r.outcome = (clnorm_outcome)(n % 7 < 3 ? CLNORM_OUTCOME_OK : n % 5);
          r.median_s = r.outcome == CLNORM_OUTCOME_OK || n % 2 ? 1e-5 * (1 + (n % 4)) : NAN;
          r.min_s = isnan(r.median_s) ? NAN : r.median_s * 0.9;
          r.gbps = isnan(r.median_s) ? NAN : 1.0 / r.median_s;
          r.max_err = r.outcome == CLNORM_OUTCOME_WRONG ? 0.5 : 1e-7;
          r.measured_at = 1700000000 + n;
          snprintf(r.clnorm_version, sizeof r.clnorm_version, "0.1.%d", n % 3);
          put(db, &devices[dev], &r);
        }
  clnorm__db_close(db);
  /* one file, no -wal beside it: each input's copy is a single write */
  sqlite3 *sql = NULL;
  if (sqlite3_open_v2(path, &sql, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK ||
      sqlite3_exec(sql, "PRAGMA journal_mode = DELETE", NULL, NULL, NULL) != SQLITE_OK)
    fuzz_fail("seed: %s", sqlite3_errmsg(sql));
  sqlite3_close(sql);
}

static unsigned char *read_file(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  if (!f)
    fuzz_fail("cannot read %s", path);
  unsigned char *bytes = NULL;
  size_t n = 0, cap = 0;
  for (;;) {
    if (n == cap) {
      cap = cap ? cap * 2 : 65536;
      bytes = realloc(bytes, cap);
      if (!bytes)
        fuzz_fail("out of memory");
    }
    const size_t got = fread(bytes + n, 1, cap - n, f);
    if (got == 0)
      break;
    n += got;
  }
  fclose(f);
  *size = n;
  return bytes;
}

static void write_file(const char *path, const void *bytes, size_t size) {
  fuzz_remove_db(path);
  const int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0)
    fuzz_fail("cannot create %s", path);
  const char *p = bytes;
  while (size > 0) {
    const ssize_t n = write(fd, p, size);
    if (n <= 0)
      fuzz_fail("cannot write %s", path);
    p += n;
    size -= (size_t)n;
  }
  close(fd);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  devices[0] = make_device("NVIDIA H100 80GB HBM3", "550.54.14");
  devices[1] = make_device("NVIDIA H100 80GB HBM3", "535.104.05"); /* another driver */
  devices[2] = make_device("NVIDIA A100-SXM4-40GB", "550.54.14");  /* another model */
  const char *seed_path = fuzz_path("seed.db");
  work_path = fuzz_path("work.db");
  build_seed(seed_path);
  seed = read_file(seed_path, &seed_size);
  fuzz_remove_db(seed_path);
  return 0;
}

typedef struct input {
  const uint8_t *data;
  size_t size, pos;
} input;

static unsigned u8(input *in) { return in->pos < in->size ? in->data[in->pos++] : 0; }

static uint64_t u64(input *in) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++)
    v = (v << 8) | u8(in);
  return v;
}

static const char *const names[] = {"layernorm",
                                    "rmsnorm",
                                    "add_layernorm",
                                    "add_rmsnorm",
                                    "layernorm_bwd",
                                    "rmsnorm_bwd",
                                    "f32",
                                    "f16",
                                    "bf16",
                                    "local",
                                    "subgroup",
                                    "nvshfl",
                                    "welford",
                                    "twopass",
                                    "ok",
                                    "wrong",
                                    "build_failed",
                                    "unsupported",
                                    "slow",
                                    "0123456789abcdef",
                                    "FEDCBA9876543210",
                                    "0123456789ABCDEF",
                                    "0123456789abcde",
                                    "0123456789abcdef0",
                                    "",
                                    "0.1.0",
                                    "0.1.0-rc1",
                                    "NVIDIA Corporation",
                                    "NVIDIA H100 80GB HBM3",
                                    "550.54.14",
                                    "OpenCL 3.0 CUDA",
                                    "4096",
                                    " 4096",
                                    "4096.0",
                                    "1e3",
                                    "-1",
                                    "0x10",
                                    "NaN",
                                    "Inf"};
#define NAME_COUNT (sizeof names / sizeof names[0])

static const int64_t special_ints[] = {0,
                                       1,
                                       -1,
                                       2,
                                       3,
                                       4,
                                       5,
                                       16,
                                       17,
                                       32,
                                       255,
                                       256,
                                       1024,
                                       1 << 20,
                                       (1 << 20) + 1,
                                       4294967295LL,
                                       4294967296LL,
                                       INT64_C(1) << 40,
                                       (INT64_C(1) << 40) + 1,
                                       INT64_C(1) << 62,
                                       (INT64_C(1) << 62) + 1,
                                       INT64_MAX,
                                       INT64_MIN,
                                       1700000000};

static const double special_reals[] = {0.0,    -0.0,   1e-5,   -1e-5,  INFINITY, -INFINITY,
                                       1e308,  5e-324, 4096.0, 4096.5, 1e19,     -1e19,
                                       9.2e18, 2.0,    16.0,   0.5};

/* Binds a fuzzed value of any storage type as parameter idx. */
static void bind_value(sqlite3_stmt *st, int idx, input *in) {
  const unsigned kind = u8(in) % 12;
  char text[320];
  size_t len;
  switch (kind) {
  case 0:
    sqlite3_bind_null(st, idx);
    break;
  case 1:
    sqlite3_bind_int64(st, idx, (sqlite3_int64)u64(in));
    break;
  case 2:
    sqlite3_bind_int64(st, idx,
                       special_ints[u8(in) % (sizeof special_ints / sizeof *special_ints)]);
    break;
  case 3: {
    const uint64_t bits = u64(in);
    double v;
    memcpy(&v, &bits, sizeof v);
    sqlite3_bind_double(st, idx, v); /* SQLite stores a NaN as NULL */
    break;
  }
  case 4:
    sqlite3_bind_double(st, idx,
                        special_reals[u8(in) % (sizeof special_reals / sizeof *special_reals)]);
    break;
  case 5:
  case 6:
    len = u8(in) % 48;
    if (len > in->size - in->pos)
      len = in->size - in->pos;
    if (kind == 5)
      sqlite3_bind_text(st, idx, (const char *)in->data + in->pos, (int)len, SQLITE_TRANSIENT);
    else
      sqlite3_bind_blob(st, idx, in->data + in->pos, (int)len, SQLITE_TRANSIENT);
    in->pos += len;
    break;
  case 7:
    sqlite3_bind_text(st, idx, names[u8(in) % NAME_COUNT], -1, SQLITE_STATIC);
    break;
  case 8: {
    const char *name = names[u8(in) % NAME_COUNT];
    sqlite3_bind_blob(st, idx, name, (int)strlen(name), SQLITE_STATIC);
    break;
  }
  case 9: /* a name, a NUL and more: strlen sees less than SQLite stores */
    len = (size_t)snprintf(text, sizeof text, "%s", names[u8(in) % NAME_COUNT]);
    text[len++] = '\0';
    len += (size_t)snprintf(text + len, sizeof text - len, "%s", names[u8(in) % NAME_COUNT]);
    sqlite3_bind_text(st, idx, text, (int)len, SQLITE_TRANSIENT);
    break;
  case 10:
    sqlite3_bind_int64(st, idx, (sqlite3_int64)u8(in));
    break;
  default: /* longer than any identity string may be */
    len = 250 + u8(in) % 16;
    memset(text, 'a' + (int)(u8(in) % 26), len);
    sqlite3_bind_text(st, idx, text, (int)len, SQLITE_TRANSIENT);
    break;
  }
}

static const char *const result_columns[] = {
    "id",     "device_id", "kernel_hash", "op",   "dtype",   "cols",        "row_class",
    "wg",     "tpr",       "vec",         "hold", "reduce",  "stats",       "rows",
    "status", "median_s",  "min_s",       "gbps", "max_err", "measured_at", "clnorm_version"};
static const char *const device_columns[] = {"id",
                                             "vendor_id",
                                             "vendor",
                                             "name",
                                             "driver_version",
                                             "opencl_version",
                                             "compute_units",
                                             "max_clock_mhz",
                                             "local_mem"};
#define RESULT_COLUMNS (sizeof result_columns / sizeof *result_columns)
#define DEVICE_COLUMNS (sizeof device_columns / sizeof *device_columns)

/* Whole-schema edits: what a newer version or a person with the sqlite3 shell might do. */
static const char *const schema_edits[] = {
    "DROP INDEX results_winners",
    "DROP TABLE results",
    "DROP TABLE devices",
    "DELETE FROM devices",
    "ALTER TABLE results ADD COLUMN extra TEXT DEFAULT 'x'",
    "ALTER TABLE results RENAME COLUMN median_s TO median",
    "ALTER TABLE devices RENAME TO devices_old",
    "CREATE TABLE extra (a, b)",
    "CREATE VIEW extra_view AS SELECT 1",
    "CREATE INDEX extra_index ON results (cols DESC, median_s DESC)",
    /* no declared types, no constraints: any value of any type, duplicate keys */
    "CREATE TABLE loose AS SELECT * FROM results; DROP TABLE results;"
    " ALTER TABLE loose RENAME TO results",
    "CREATE TABLE loose AS SELECT * FROM devices; DROP TABLE devices;"
    " ALTER TABLE loose RENAME TO devices",
    "CREATE TRIGGER extra_trigger AFTER INSERT ON results BEGIN DELETE FROM results; END",
    "CREATE TRIGGER extra_trigger2 BEFORE INSERT ON devices BEGIN SELECT RAISE(ABORT, 'no'); END",
    "UPDATE results SET device_id = device_id + 1",
    /* copies of every row: in a loosened table (no keys) each one doubles the table, so they
     * stop at 128 rows: 16 doublings made a 590 MB file of 4.7 million results, which took the
     * library 107 s to list (linear, about 20 us a row under ASan: a timeout, not a bug). At 4096
     * rows, listing still took half of all the fuzzer's time (perf, 2026-11-24), and at 512 a
     * third (2026-11-24, later); 128 rows take the same paths (the list's buffer grows from 64
     * rows) and made the grown corpus run 1.3x faster (docs/TESTING.md). */
    "INSERT INTO devices SELECT id + 100, vendor_id, vendor, name, driver_version || 'x',"
    " opencl_version, compute_units, max_clock_mhz, local_mem FROM devices"
    " WHERE (SELECT count(*) FROM devices) < 128",
    "INSERT OR IGNORE INTO results SELECT id + 1000, device_id, kernel_hash, op, dtype, cols,"
    " row_class, wg + 1, tpr, vec, hold, reduce, stats, rows, status, median_s / 2, min_s, gbps,"
    " max_err, measured_at, clnorm_version FROM results"
    " WHERE (SELECT count(*) FROM results) < 128",
    "PRAGMA journal_mode = WAL",
    "VACUUM",
};
#define SCHEMA_EDITS (sizeof schema_edits / sizeof *schema_edits)

/* Runs text with up to two fuzzed parameters; a failing edit (a constraint, a type) is skipped,
 * as it would be in the sqlite3 shell. */
static void run_edit(sqlite3 *sql, const char *text, int values, input *in) {
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(sql, text, -1, &st, NULL) != SQLITE_OK)
    return;
  for (int i = 1; i <= values; i++)
    bind_value(st, i, in);
  while (sqlite3_step(st) == SQLITE_ROW)
    ;
  sqlite3_finalize(st);
}

static void apply_edits(input *in) {
  sqlite3 *sql = NULL;
  if (sqlite3_open_v2(work_path, &sql, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK)
    fuzz_fail("opening the copy: %s", sqlite3_errmsg(sql));
  sqlite3_exec(sql, "PRAGMA synchronous = OFF", NULL, NULL, NULL);
  char text[512];
  for (int edits = 0; edits < 32 && in->pos < in->size; edits++) {
    const unsigned kind = u8(in) % 11;
    const unsigned rid = u8(in) % 80; /* the seed has 72 results, 3 devices */
    const char *rcol = result_columns[u8(in) % RESULT_COLUMNS];
    const char *dcol = device_columns[u8(in) % DEVICE_COLUMNS];
    switch (kind) {
    case 0:
    case 1:
    case 2:
      snprintf(text, sizeof text, "UPDATE results SET %s = ?1 WHERE id = %u", rcol, rid);
      run_edit(sql, text, 1, in);
      break;
    case 3:
      snprintf(text, sizeof text, "UPDATE devices SET %s = ?1 WHERE id = %u", dcol, rid % 5);
      run_edit(sql, text, 1, in);
      break;
    case 4:
      snprintf(text, sizeof text, "DELETE FROM %s WHERE id = %u", rid & 1 ? "results" : "devices",
               rid & 1 ? rid / 2 : rid % 5);
      run_edit(sql, text, 0, in);
      break;
    case 5: { /* a copy of a row with one column changed */
      size_t n = (size_t)snprintf(text, sizeof text, "INSERT OR IGNORE INTO results SELECT ");
      for (size_t c = 0; c < RESULT_COLUMNS; c++)
        n += (size_t)snprintf(text + n, sizeof text - n, "%s%s", c ? ", " : "",
                              result_columns[c] == rcol ? "?1"
                              : c == 0                  ? "NULL"
                                                        : result_columns[c]);
      snprintf(text + n, sizeof text - n, " FROM results WHERE id = %u", rid);
      run_edit(sql, text, 1, in);
      break;
    }
    case 6: {
      size_t n = (size_t)snprintf(text, sizeof text, "INSERT OR IGNORE INTO devices SELECT ");
      for (size_t c = 0; c < DEVICE_COLUMNS; c++)
        n += (size_t)snprintf(text + n, sizeof text - n, "%s%s", c ? ", " : "",
                              device_columns[c] == dcol ? "?1"
                              : c == 0                  ? "NULL"
                                                        : device_columns[c]);
      snprintf(text + n, sizeof text - n, " FROM devices WHERE id = %u", rid % 5);
      run_edit(sql, text, 1, in);
      break;
    }
    case 7: /* every row at once */
      snprintf(text, sizeof text, "UPDATE results SET %s = ?1", rcol);
      run_edit(sql, text, 1, in);
      break;
    case 8: {
      const int64_t v = rid & 1 ? (int64_t)u64(in) : (int64_t)(rid % 6) - 1;
      snprintf(text, sizeof text, "PRAGMA %s = %lld", rid & 2 ? "application_id" : "user_version",
               (long long)(rid & 2 ? (rid & 4 ? 0x434c4e4d : (int32_t)v) : (int32_t)v));
      run_edit(sql, text, 0, in);
      break;
    }
    case 9:
      run_edit(sql, schema_edits[rid % SCHEMA_EDITS], 0, in);
      break;
    default:
      sqlite3_exec(sql, schema_edits[rid % SCHEMA_EDITS], NULL, NULL, NULL); /* several */
      if (strstr(schema_edits[rid % SCHEMA_EDITS], "loose"))
        consistent = 0;
      break;
    }
  }
  if (sqlite3_close(sql) != SQLITE_OK)
    fuzz_fail("closing the copy: a statement left open");
}

typedef struct listing {
  size_t rows;
  /* the fastest valid "ok" result per shape of one (device, hash), when filtered so */
  clnorm_result best[64];
  size_t shapes;
  int overflow;
} listing;

static int see(void *user, const clnorm_device_identity *d, const clnorm_result *r, int winner) {
  listing *l = user;
  fuzz_check_device(d);
  fuzz_check_result(r);
  if (winner && r->outcome != CLNORM_OUTCOME_OK)
    fuzz_fail("list: a winner with outcome %d", (int)r->outcome);
  l->rows++;
  if (r->outcome != CLNORM_OUTCOME_OK)
    return 0;
  size_t i = 0;
  while (i < l->shapes && fuzz_shape_cmp(&l->best[i], r) != 0)
    i++;
  if (i == l->shapes) {
    if (i == sizeof l->best / sizeof l->best[0]) {
      l->overflow = 1;
      return 0;
    }
    l->best[l->shapes++] = *r;
  } else if (r->median_s < l->best[i].median_s) {
    l->best[i] = *r;
  }
  return 0;
}

/* tuned.c's load for one identity and kernel hash, checked against the full listing. */
static void load_tuned(clnorm_db *db, const clnorm_device_identity *device, uint64_t hash) {
  const clnorm_kernel_hashes both = {hash, hash}; /* every op's result of this hash is current */
  clnorm_result *winners = NULL;
  size_t count = 0;
  clnorm_status status = clnorm__db_winners(db, device, &both, &winners, &count, err, sizeof err);
  fuzz_check_err(err, sizeof err, status, "clnorm__db_winners");
  if (status != CLNORM_OK && count != 0)
    fuzz_fail("winners failed but gave %zu results", count);
  fuzz_check_winners(winners, count, hash, consistent);
  clnorm_db_stale stale;
  const clnorm_status stale_status = clnorm__db_stale(db, device, &both, &stale, err, sizeof err);
  fuzz_check_err(err, sizeof err, stale_status, "clnorm__db_stale");
  if (status == CLNORM_OK) {
    /* every winner is the fastest valid "ok" result of its shape. (A shape whose fastest row is
     * one this build cannot read has no winner: the dispatcher then falls back, safely.) */
    listing all;
    memset(&all, 0, sizeof all);
    status = clnorm__db_list(db, device, &both, 0, see, &all, err, sizeof err);
    fuzz_check_err(err, sizeof err, status, "clnorm__db_list");
    if (status == CLNORM_OK && !all.overflow && consistent) {
      if (count > all.shapes)
        fuzz_fail("winners: %zu shapes, the listing has valid \"ok\" results of %zu", count,
                  all.shapes);
      for (size_t i = 0; i < count; i++)
        for (size_t k = 0; k < all.shapes; k++)
          if (fuzz_shape_cmp(&all.best[k], &winners[i]) == 0 &&
              all.best[k].median_s < winners[i].median_s)
            fuzz_fail("winners[%zu]: median %g, a valid result of its shape has %g", i,
                      winners[i].median_s, all.best[k].median_s);
    }
    for (size_t i = 0; i < count; i++) {
      clnorm_result got;
      int found = 0;
      status = clnorm__db_get(db, device, &winners[i], &got, &found, err, sizeof err);
      fuzz_check_err(err, sizeof err, status, "clnorm__db_get");
      if (status == CLNORM_OK && found)
        fuzz_check_result(&got);
    }
  }
  free(winners);
}

/* tuned.c's load for the first identity and kernel hash, one more pair as `pair` says, the
 * listings normtune makes. */
static void read_side(unsigned pair) {
  clnorm_db *db = NULL;
  clnorm_status status = clnorm__db_open(work_path, CLNORM_DB_READ, &db, err, sizeof err);
  fuzz_check_err(err, sizeof err, status, "clnorm__db_open");
  if ((status == CLNORM_OK) != (db != NULL))
    fuzz_fail("open: status %d with handle %p", (int)status, (void *)db);
  if (status != CLNORM_OK)
    return;
  load_tuned(db, &devices[0], hashes[0]);
  pair %= DEVICES * 2;
  if (pair != 0)
    load_tuned(db, &devices[pair / 2], hashes[pair % 2]);
  for (int winners_only = 0; winners_only < 2; winners_only++) {
    listing all;
    memset(&all, 0, sizeof all);
    status = clnorm__db_list(db, NULL, NULL, winners_only, see, &all, err, sizeof err);
    fuzz_check_err(err, sizeof err, status, "clnorm__db_list");
  }
  clnorm__db_close(db);
}

static const char import_text[] =
    "{\"format\": \"clnorm-tuning\", \"format_version\": 1, \"devices\": [{\"vendor_id\": 4318,"
    " \"vendor\": \"NVIDIA Corporation\", \"name\": \"NVIDIA H100 80GB HBM3\", \"driver_version\":"
    " \"550.54.14\", \"opencl_version\": \"OpenCL 3.0 CUDA\", \"compute_units\": 132,"
    " \"max_clock_mhz\": 1980, \"local_mem\": 49152, \"results\": [{\"op\": \"rmsnorm\", \"dtype\":"
    " \"f16\", \"cols\": 4096, \"row_class\": 2, \"rows\": 4096, \"wg\": 256, \"tpr\": 256, "
    "\"vec\":"
    " 8, \"hold\": 2, \"reduce\": \"local\", \"stats\": \"welford\", \"status\": \"ok\", "
    "\"median_s\":"
    " 1e-6, \"min_s\": 9e-7, \"gbps\": null, \"max_err\": 0, \"measured_at\": 1800000000,"
    " \"kernel_hash\": \"0123456789abcdef\", \"clnorm_version\": \"0.1.0\"}]}]}";

/* normtune's side: open for writing (integrity check, migration), store, import, read back. */
static void write_side(int repair) {
  if (repair) {
    char moved[700];
    const clnorm_status status = clnorm__db_repair(work_path, moved, sizeof moved, err, sizeof err);
    fuzz_check_err(err, sizeof err, status, "clnorm__db_repair");
    if (moved[0])
      fuzz_remove_db(moved);
  }
  clnorm_db *db = NULL;
  clnorm_status status = clnorm__db_open(work_path, CLNORM_DB_WRITE, &db, err, sizeof err);
  fuzz_check_err(err, sizeof err, status, "clnorm__db_open (writing)");
  if (status != CLNORM_OK)
    return;
  clnorm_result r;
  memset(&r, 0, sizeof r);
  r.kernel_hash = HASH_A;
  r.op = CLNORM_OP_LAYERNORM;
  r.dtype = CLNORM_F32;
  r.cols = 4096;
  r.row_class = 2;
  r.rows = 4096;
  r.variant = (clnorm_variant){128, 128, 4, 8, CLNORM_REDUCE_LOCAL, CLNORM_STATS_TWOPASS};
  r.outcome = CLNORM_OUTCOME_OK;
  r.median_s = 1e-9;
  r.min_s = 1e-9;
  r.gbps = r.max_err = NAN;
  status = clnorm__db_put(db, &devices[0], &r, err, sizeof err);
  fuzz_check_err(err, sizeof err, status, "clnorm__db_put");
  status = clnorm__db_import(db, import_text, sizeof import_text - 1, NULL, NULL, err, sizeof err);
  fuzz_check_err(err, sizeof err, status, "clnorm__db_import");
  load_tuned(db, &devices[0], HASH_A);
  clnorm__db_close(db);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  input in = {data, size, 0};
  const unsigned mode = u8(&in), flags = u8(&in);
  consistent = mode % 16 > 1;
  if (mode % 16 == 0) {
    write_file(work_path, data + in.pos, size - in.pos);
  } else if (mode % 16 == 1) {
    unsigned char *copy = malloc(seed_size);
    if (!copy)
      fuzz_fail("out of memory");
    memcpy(copy, seed, seed_size);
    while (in.pos + 3 <= size) {
      const size_t at = (((size_t)u8(&in) << 16) | ((size_t)u8(&in) << 8) | u8(&in)) % seed_size;
      copy[at] ^= (unsigned char)u8(&in);
    }
    write_file(work_path, copy, seed_size);
    free(copy);
  } else {
    write_file(work_path, seed, seed_size);
    apply_edits(&in);
  }
  read_side(flags >> 3);
  if ((flags & 3) == 3)
    write_side((flags & 4) != 0);
  return 0;
}
