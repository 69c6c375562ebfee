/* Checks shared by the fuzz targets (see fuzz_check.h). */
#define _POSIX_C_SOURCE 200809L
#include "fuzz_check.h"

#include "internal.h"
#include "names.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The ranges db.c accepts (MAX_COLS and the others there). */
#define FUZZ_MAX_COLS (UINT64_C(1) << 40)
#define FUZZ_MAX_ROWS (UINT64_C(1) << 62)
#define FUZZ_MAX_WG (1u << 20)

void fuzz_fail(const char *fmt, ...) {
  va_list args;
  va_start(args, fmt);
  fputs("fuzz check failed: ", stderr);
  vfprintf(stderr, fmt, args);
  fputc('\n', stderr);
  va_end(args);
  abort();
}

static char dir[512];
static char paths[8][600];
static int path_count;

static void cleanup(void) {
  for (int i = 0; i < path_count; i++)
    fuzz_remove_db(paths[i]);
  if (dir[0])
    rmdir(dir);
}

const char *fuzz_dir(void) {
  if (!dir[0]) {
    /* memory-backed where there is one: SQLite's fsyncs would otherwise set the pace */
    const char *tmp = getenv("FUZZ_TMPDIR");
    if (!tmp || !*tmp)
      tmp = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/clnorm-fuzz-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir))
      fuzz_fail("cannot create a temporary directory %s", dir);
    atexit(cleanup);
  }
  return dir;
}

const char *fuzz_path(const char *name) {
  if (path_count == (int)(sizeof paths / sizeof paths[0]))
    fuzz_fail("too many temporary paths");
  snprintf(paths[path_count], sizeof paths[0], "%s/%s", fuzz_dir(), name);
  return paths[path_count++];
}

void fuzz_remove_db(const char *path) {
  static const char *const suffixes[] = {"", "-wal", "-shm", "-journal"};
  char name[700];
  for (size_t i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++) {
    snprintf(name, sizeof name, "%s%s", path, suffixes[i]);
    unlink(name);
  }
}

void fuzz_check_err(const char *err, size_t err_size, clnorm_status status, const char *call) {
  const size_t len = strnlen(err, err_size);
  if (len == err_size)
    fuzz_fail("%s: the message is not NUL-terminated", call);
  if (status == CLNORM_OK && len != 0)
    fuzz_fail("%s succeeded with the message \"%s\"", call, err);
  if (status != CLNORM_OK && len == 0)
    fuzz_fail("%s failed (status %d) without a message", call, (int)status);
}

static void check_text(const char *text, size_t size, const char *field) {
  const size_t len = strnlen(text, size);
  if (len >= size || len > 255)
    fuzz_fail("%s: not NUL-terminated or longer than 255 bytes", field);
  for (size_t i = 0; i < len; i++)
    if ((unsigned char)text[i] < 0x20)
      fuzz_fail("%s: control character 0x%02x", field, (unsigned char)text[i]);
}

void fuzz_check_device(const clnorm_device_identity *d) {
  check_text(d->vendor, sizeof d->vendor, "vendor");
  check_text(d->name, sizeof d->name, "name");
  check_text(d->driver_version, sizeof d->driver_version, "driver_version");
  check_text(d->cl_version, sizeof d->cl_version, "cl_version");
  if (d->local_mem > (cl_ulong)INT64_MAX)
    fuzz_fail("local_mem %llu out of range", (unsigned long long)d->local_mem);
}

void fuzz_check_result(const clnorm_result *r) {
  const clnorm_variant *v = &r->variant;
  if ((unsigned)r->op >= CLNORM_OP_COUNT || (unsigned)r->dtype > CLNORM_BF16)
    fuzz_fail("op %d or dtype %d out of range", (int)r->op, (int)r->dtype);
  if (r->cols < 1 || r->cols > FUZZ_MAX_COLS || r->row_class > 255 || r->rows > FUZZ_MAX_ROWS)
    fuzz_fail("cols %llu, row_class %u or rows %llu out of range", (unsigned long long)r->cols,
              r->row_class, (unsigned long long)r->rows);
  if (v->wg < 1 || v->wg > FUZZ_MAX_WG || v->tpr < 1 || v->tpr > v->wg)
    fuzz_fail("wg %u or tpr %u out of range", v->wg, v->tpr);
  if (v->vec != 1 && v->vec != 2 && v->vec != 4 && v->vec != 8 && v->vec != 16)
    fuzz_fail("vec %u", v->vec);
  if (v->hold > 4096 || (unsigned)v->reduce > CLNORM_REDUCE_NVSHFL ||
      (unsigned)v->stats > CLNORM_STATS_TWOPASS)
    fuzz_fail("hold %u, reduce %d or stats %d out of range", v->hold, (int)v->reduce,
              (int)v->stats);
  if ((unsigned)r->outcome > CLNORM_OUTCOME_SLOW)
    fuzz_fail("outcome %d", (int)r->outcome);
  /* infinities are accepted by put (stored as numbers) but exported as null */
  if (!(isnan(r->median_s) || r->median_s >= 0) || !(isnan(r->min_s) || r->min_s >= 0) ||
      !(isnan(r->gbps) || r->gbps >= 0) || !(isnan(r->max_err) || r->max_err >= 0))
    fuzz_fail("a negative time, rate or error");
  if (r->outcome == CLNORM_OUTCOME_OK &&
      !(isfinite(r->median_s) && r->median_s > 0 && isfinite(r->min_s) && r->min_s > 0))
    fuzz_fail("an \"ok\" result with median_s %g, min_s %g", r->median_s, r->min_s);
  if (r->measured_at < 0)
    fuzz_fail("measured_at %lld", (long long)r->measured_at);
  check_text(r->clnorm_version, sizeof r->clnorm_version, "clnorm_version");
}

static int same_double(double a, double b) { return (isnan(a) && isnan(b)) || a == b; }

int fuzz_same_result(const clnorm_result *a, const clnorm_result *b) {
  return a->kernel_hash == b->kernel_hash && a->op == b->op && a->dtype == b->dtype &&
         a->cols == b->cols && a->row_class == b->row_class && a->rows == b->rows &&
         clnorm__variant_same(&a->variant, &b->variant) && a->outcome == b->outcome &&
         same_double(a->median_s, b->median_s) && same_double(a->min_s, b->min_s) &&
         same_double(a->gbps, b->gbps) && same_double(a->max_err, b->max_err) &&
         a->measured_at == b->measured_at && strcmp(a->clnorm_version, b->clnorm_version) == 0;
}

int fuzz_same_device(const clnorm_device_identity *a, const clnorm_device_identity *b) {
  return a->vendor_id == b->vendor_id && a->compute_units == b->compute_units &&
         a->max_clock_mhz == b->max_clock_mhz && a->local_mem == b->local_mem &&
         strcmp(a->vendor, b->vendor) == 0 && strcmp(a->name, b->name) == 0 &&
         strcmp(a->driver_version, b->driver_version) == 0 &&
         strcmp(a->cl_version, b->cl_version) == 0;
}

int fuzz_shape_cmp(const clnorm_result *a, const clnorm_result *b) {
  if (a->op != b->op)
    return a->op < b->op ? -1 : 1;
  if (a->dtype != b->dtype)
    return a->dtype < b->dtype ? -1 : 1;
  if (a->cols != b->cols)
    return a->cols < b->cols ? -1 : 1;
  return (a->row_class > b->row_class) - (a->row_class < b->row_class);
}

void fuzz_check_winners(const clnorm_result *winners, size_t count, uint64_t kernel_hash,
                        int one_per_shape) {
  if ((count == 0) != (winners == NULL))
    fuzz_fail("winners: %zu results but the array is %s", count, winners ? "set" : "NULL");
  /* devices as the dispatcher may see them: any limits, with and without the vendor paths */
  clnorm_device_info info;
  memset(&info, 0, sizeof info);
  for (size_t i = 0; i < count; i++) {
    const clnorm_result *r = &winners[i];
    fuzz_check_result(r);
    if (r->outcome != CLNORM_OUTCOME_OK)
      fuzz_fail("winners[%zu]: outcome %d is not ok", i, (int)r->outcome);
    if (r->kernel_hash != kernel_hash)
      fuzz_fail("winners[%zu]: kernel hash %016llx, asked for %016llx", i,
                (unsigned long long)r->kernel_hash, (unsigned long long)kernel_hash);
    if (i > 0 && fuzz_shape_cmp(&winners[i - 1], r) >= (one_per_shape ? 0 : 1))
      fuzz_fail("winners[%zu]: not sorted, or a second winner of one shape", i);
    info.max_wg = (size_t)1 << (i % 12);
    info.local_mem = (cl_ulong)1 << (i % 20);
    info.has_subgroups = (int)(i & 1);
    info.is_nvidia = (int)((i >> 1) & 1);
    char why[160];
    if (clnorm__variant_device_ok(&info, r->op, &r->variant, why, sizeof why)) {
      clnorm__variant_call_ok(&r->variant, (size_t)r->cols, why, sizeof why);
      clnorm__variant_key(r->op, r->dtype, &r->variant);
    }
    clnorm_variant_format(&r->variant, why, sizeof why);
  }
}
