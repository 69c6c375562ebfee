/* Every name of an enum, through its one list (src/names.h): each name maps back to its value,
 * the public name functions print the same text, and every name survives the tuning database
 * and its JSON export and import. A name spelled twice that drifted would fail here. No device:
 * the database is a temporary file. */
#define _POSIX_C_SOURCE 200809L
#include "db_json.h"
#include "internal.h"
#include "kernel_flags.h"
#include "names.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int failures;

#define EXPECT(cond, ...)                                                                          \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      fprintf(stderr, "test_names: %s:%d: ", __FILE__, __LINE__);                                  \
      fprintf(stderr, __VA_ARGS__);                                                                \
      fprintf(stderr, "\n");                                                                       \
      failures++;                                                                                  \
    }                                                                                              \
  } while (0)

/* Each name maps back to its value, and no two values share a name. */
static void round_trip(const char *what, const char *const *names, size_t count) {
  for (size_t i = 0; i < count; i++) {
    EXPECT(names[i] && names[i][0], "%s %zu: no name", what, i);
    EXPECT(clnorm__name_index(names, count, names[i]) == (int)i,
           "%s %zu (\"%s\") does not map back", what, i, names[i]);
  }
  EXPECT(clnorm__name_index(names, count, "no such name") == -1, "%s: unknown name maps", what);
  EXPECT(clnorm__name_index(names, count, NULL) == -1, "%s: NULL maps", what);
}

static void public_names(void) {
#define STATUS(name, value, text)                                                                  \
  EXPECT(strcmp(clnorm_status_string(name), text) == 0 &&                                          \
             strcmp(clnorm__status_names[value], text) == 0 && (int)name == value,                 \
         "status " #name);
  CLNORM_STATUS_MAP(STATUS)
#define OP(name, value, text) EXPECT(strcmp(clnorm_op_name(name), text) == 0, "op " #name);
  CLNORM_OP_MAP(OP)
#define DTYPE(name, value, text) EXPECT(strcmp(clnorm_dtype_name(name), text) == 0, "dtype " #name);
  CLNORM_DTYPE_MAP(DTYPE)
#define CHOICE(name, value, text)                                                                  \
  EXPECT(strcmp(clnorm_choice_string(name), text) == 0, "choice " #name);
  CLNORM_CHOICE_MAP(CHOICE)
#define OUTCOME(name, value, text)                                                                 \
  EXPECT(strcmp(clnorm__outcome_name(name), text) == 0, "outcome " #name);
  CLNORM_OUTCOME_MAP(OUTCOME)
  EXPECT(strcmp(clnorm_op_name((clnorm_op)CLNORM_OP_COUNT), "unknown") == 0, "op out of range");
  EXPECT(strcmp(clnorm_status_string((clnorm_status)99), "unknown status") == 0, "status 99");
  /* the frozen status values */
  EXPECT(CLNORM_OK == 0 && CLNORM_E_INVALID_ARG == 1 && CLNORM_E_UNSUPPORTED == 2 &&
             CLNORM_E_OPENCL == 3 && CLNORM_E_BUILD == 4 && CLNORM_E_NO_MEMORY == 5 &&
             CLNORM_E_DB == 6,
         "status values changed");
}

/* clnorm_variant_format lists the parameters of the table, in its order. */
static void variant_text(void) {
  const clnorm_variant v = {128, 32, 8, 2, CLNORM_REDUCE_NVSHFL, CLNORM_STATS_TWOPASS};
  char text[160];
  const int n = clnorm_variant_format(&v, text, sizeof text);
  EXPECT(n == (int)strlen(text), "format: length %d of \"%s\"", n, text);
  EXPECT(strcmp(text, "wg=128 tpr=32 vec=8 hold=2 reduce=nvshfl stats=twopass") == 0,
         "format: \"%s\"", text);
  /* the table's names are the SQL columns' and each parameter reads back what was set */
  char columns[160] = "";
  clnorm_variant w = {0, 0, 0, 0, CLNORM_REDUCE_LOCAL, CLNORM_STATS_WELFORD};
  for (int i = 0; i < CLNORM_VARIANT_PARAMS; i++) {
    snprintf(columns + strlen(columns), sizeof columns - strlen(columns), ", %s",
             clnorm__variant_params[i].name);
    clnorm__variant_set_param(&w, i, clnorm__variant_param(&v, i));
  }
  EXPECT(strcmp(columns, CLNORM_VARIANT_SQL_COLUMNS) == 0, "SQL columns \"%s\" against \"%s\"",
         CLNORM_VARIANT_SQL_COLUMNS, columns);
  EXPECT(memcmp(&w, &v, sizeof v) == 0, "a variant set parameter by parameter differs");
  char small[8];
  EXPECT(clnorm_variant_format(&v, small, sizeof small) == n && strlen(small) == 7,
         "format: truncated \"%s\"", small);
}

/* Every op, dtype, reduce, stats and outcome stored, exported as JSON, imported into a second
 * database and read back. */
static void database_round_trip(void) {
  char dir[] = "/tmp/clnorm_names_XXXXXX", a_path[64], b_path[64], err[512];
  if (!mkdtemp(dir)) {
    EXPECT(0, "mkdtemp failed");
    return;
  }
  snprintf(a_path, sizeof a_path, "%s/a.db", dir);
  snprintf(b_path, sizeof b_path, "%s/b.db", dir);
  clnorm_db *a = NULL, *b = NULL;
  EXPECT(clnorm__db_open(a_path, CLNORM_DB_WRITE, &a, err, sizeof err) == CLNORM_OK, "%s", err);
  EXPECT(clnorm__db_open(b_path, CLNORM_DB_WRITE, &b, err, sizeof err) == CLNORM_OK, "%s", err);
  clnorm_device_identity d;
  memset(&d, 0, sizeof d);
  d.vendor_id = 0x10de;
  snprintf(d.vendor, sizeof d.vendor, "vendor");
  snprintf(d.name, sizeof d.name, "device");
  snprintf(d.driver_version, sizeof d.driver_version, "1.0");
  snprintf(d.cl_version, sizeof d.cl_version, "OpenCL 3.0");
  d.compute_units = 8;
  d.local_mem = 65536;
  /* one result per value of every list: n_i = i-th value of each list, modulo its count */
  const size_t n = CLNORM_OP_COUNT * CLNORM__DTYPE_COUNT;
  clnorm_result r[CLNORM_OP_COUNT * CLNORM__DTYPE_COUNT];
  for (size_t i = 0; a && b && i < n; i++) {
    memset(&r[i], 0, sizeof r[i]);
    r[i].kernel_hash = 0x0123456789abcdefull;
    r[i].op = (clnorm_op)(i / CLNORM__DTYPE_COUNT);
    r[i].dtype = (clnorm_dtype)(i % CLNORM__DTYPE_COUNT);
    r[i].cols = 1024;
    r[i].rows = 4096;
    r[i].row_class = 2;
    r[i].variant = (clnorm_variant){256,
                                    256,
                                    4,
                                    4,
                                    (clnorm_reduce)(i % CLNORM__REDUCE_COUNT),
                                    (clnorm_stats)(i % CLNORM__STATS_COUNT)};
    r[i].outcome = (clnorm_outcome)(i % CLNORM__OUTCOME_COUNT);
    r[i].median_s = r[i].min_s = 1e-5;
    r[i].gbps = r[i].max_err = 0.0;
    r[i].measured_at = 1700000000;
    snprintf(r[i].clnorm_version, sizeof r[i].clnorm_version, "0.1.0");
    EXPECT(clnorm__db_put(a, &d, &r[i], err, sizeof err) == CLNORM_OK, "put %zu: %s", i, err);
  }
  char *json = NULL;
  size_t len = 0;
  FILE *f = a && b ? open_memstream(&json, &len) : NULL;
  if (f) {
    EXPECT(clnorm__db_export(a, 0, f, err, sizeof err) == CLNORM_OK, "export: %s", err);
    fclose(f);
    for (size_t i = 0; i < n; i++) {
      char want[160];
      snprintf(want, sizeof want, "\"op\": \"%s\", \"dtype\": \"%s\"", clnorm_op_name(r[i].op),
               clnorm_dtype_name(r[i].dtype));
      EXPECT(strstr(json, want), "export: no %s", want);
    }
    size_t imported = 0;
    EXPECT(clnorm__db_import(b, json, len, &imported, NULL, err, sizeof err) == CLNORM_OK,
           "import: %s", err);
    EXPECT(imported == n, "imported %zu of %zu", imported, n);
  }
  for (size_t i = 0; a && b && i < n; i++) {
    clnorm_result got;
    int found = 0;
    EXPECT(clnorm__db_get(b, &d, &r[i], &got, &found, err, sizeof err) == CLNORM_OK && found,
           "get %zu: %s", i, err);
    EXPECT(!found || (got.op == r[i].op && got.dtype == r[i].dtype &&
                      got.variant.reduce == r[i].variant.reduce &&
                      got.variant.stats == r[i].variant.stats && got.outcome == r[i].outcome &&
                      got.variant.wg == r[i].variant.wg && got.variant.hold == r[i].variant.hold),
           "result %zu changed on the way", i);
  }
  free(json);
  clnorm__db_close(a);
  clnorm__db_close(b);
  char path[96];
  const char *const files[] = {"a.db", "b.db", "a.db-wal", "b.db-wal", "a.db-shm", "b.db-shm"};
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    snprintf(path, sizeof path, "%s/%s", dir, files[i]);
    unlink(path);
  }
  rmdir(dir);
}

/* The flag bits of src/kernel_flags.h are the ones cl/common.cl defines. */
static void kernel_flags(void) {
  char want[64];
#define FLAG(name, value)                                                                          \
  snprintf(want, sizeof want, "#define %s %s\n", #name, #value);                                   \
  EXPECT(strstr(clnorm__src_common, want), "cl/common.cl has no \"%.*s\"", (int)strlen(want) - 1,  \
         want);
  CLNORM_KERNEL_FLAG_MAP(FLAG)
}

int main(void) {
  round_trip("status", clnorm__status_names, CLNORM__STATUS_COUNT);
  round_trip("op", clnorm__op_names, CLNORM_OP_COUNT);
  round_trip("dtype", clnorm__dtype_names, CLNORM__DTYPE_COUNT);
  round_trip("reduce", clnorm__reduce_names, CLNORM__REDUCE_COUNT);
  round_trip("stats", clnorm__stats_names, CLNORM__STATS_COUNT);
  round_trip("choice", clnorm__choice_names, CLNORM__CHOICE_COUNT);
  round_trip("outcome", clnorm__outcome_names, CLNORM__OUTCOME_COUNT);
  public_names();
  variant_text();
  kernel_flags();
  database_round_trip();
  if (failures) {
    fprintf(stderr, "test_names: %d failure(s)\n", failures);
    return 1;
  }
  printf("test_names: ok\n");
  return 0;
}
