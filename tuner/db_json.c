/* The tuning database's JSON export and import (normtune export / import): the JSON writer and
 * the checks of untrusted input (parsed by json.c), over the database module's functions
 * (src/db.h). Kept out of libclnorm, which never reads or writes JSON. */
#define _POSIX_C_SOURCE 200809L
#include "db_json.h"
#include "json.h"
#include "names.h"
#include "platform.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

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
  clnorm_db *db;
  clnorm_device_identity device;
  size_t devices, results, abs;
  clnorm_status status; /* of listing the A/B results */
  char *err;
  size_t err_size;
} exporter;

/* A variant's parameters as members: "wg": 4, ..., "stats": "welford" (no braces). */
static void export_variant(FILE *f, const clnorm_variant *v) {
  for (int i = 0; i < CLNORM_VARIANT_PARAMS; i++) {
    const clnorm_variant_param *p = &clnorm__variant_params[i];
    const unsigned value = clnorm__variant_param(v, i);
    if (p->names)
      fprintf(f, "%s\"%s\": \"%s\"", i ? ", " : "", p->name, p->names[value]);
    else
      fprintf(f, "%s\"%s\": %u", i ? ", " : "", p->name, value);
  }
}

/* Begins a list's item, a result or an A/B result (after a comma unless it is the first): its shape
 * and its variant's parameters as members. */
static void export_item(FILE *f, size_t index, clnorm_op op, clnorm_dtype dtype, uint64_t cols,
                        unsigned row_class, uint64_t rows, const clnorm_variant *v) {
  fprintf(f,
          "%s\n    {\"op\": \"%s\", \"dtype\": \"%s\", \"cols\": %llu, \"row_class\": %u, "
          "\"rows\": %llu, ",
          index ? "," : "", clnorm__op_names[op], clnorm__dtype_names[dtype],
          (unsigned long long)cols, row_class, (unsigned long long)rows);
  export_variant(f, v);
}

typedef struct measure {
  const char *key;
  double value;
} measure;

/* Members ", key: value" of times, rates and errors (null where not measured). */
static void export_measures(FILE *f, const measure *measures, size_t count) {
  for (size_t i = 0; i < count; i++) {
    fprintf(f, ", \"%s\": ", measures[i].key);
    json_double(f, measures[i].value);
  }
}

static int export_ab(void *user, const clnorm_ab *ab) {
  exporter *x = user;
  FILE *f = x->f;
  char hash[17];
  clnorm__db_hash_text(ab->kernel_hash, hash);
  export_item(f, x->abs, ab->op, ab->dtype, ab->cols, ab->row_class, ab->rows, &ab->candidate);
  fputs(", \"heuristic\": {", f);
  export_variant(f, &ab->heuristic);
  fputc('}', f);
  const measure measures[] = {
      {"candidate_s", ab->candidate_s}, {"heuristic_s", ab->heuristic_s}, {"noise", ab->noise}};
  export_measures(f, measures, COUNT(measures));
  fprintf(f, ", \"rounds\": %u, \"kept\": \"%s\", \"measured_at\": %lld, \"kernel_hash\": \"%s\"}",
          ab->rounds, ab->kept_heuristic ? "heuristic" : "tuned", (long long)ab->measured_at, hash);
  x->abs++;
  return ferror(f) != 0;
}

static int count_ab(void *user, const clnorm_ab *ab) {
  (void)ab;
  (*(size_t *)user)++;
  return 0;
}

/* Ends the device's results and writes its A/B results (schema 4 on), when it has any. */
static void export_device_end(exporter *x) {
  fputs("\n   ]", x->f);
  size_t n = 0;
  if (x->status == CLNORM_OK)
    x->status = clnorm__db_list_ab(x->db, &x->device, NULL, count_ab, &n, x->err, x->err_size);
  if (x->status == CLNORM_OK && n > 0) {
    fputs(",\n   \"ab\": [", x->f);
    x->abs = 0;
    x->status = clnorm__db_list_ab(x->db, &x->device, NULL, export_ab, x, x->err, x->err_size);
    fputs("\n   ]", x->f);
  }
  fputs("}", x->f);
}

static int export_row(void *user, const clnorm_device_identity *d, const clnorm_result *r,
                      int winner) {
  exporter *x = user;
  FILE *f = x->f;
  if (x->devices == 0 || !clnorm__identity_equal(&x->device, d)) {
    if (x->devices)
      export_device_end(x);
    fputs(x->devices ? ",\n" : "\n", f);
    const struct {
      const char *key, *text;
      int new_line; /* begins a line of its own */
    } strings[] = {{"vendor", d->vendor, 0},
                   {"name", d->name, 0},
                   {"driver_version", d->driver_version, 1},
                   {"opencl_version", d->cl_version, 0}};
    fprintf(f, "  {\"vendor_id\": %u", (unsigned)d->vendor_id);
    for (size_t i = 0; i < COUNT(strings); i++) {
      fprintf(f, ",%s\"%s\": ", strings[i].new_line ? "\n   " : " ", strings[i].key);
      json_string(f, strings[i].text);
    }
    fprintf(f, ",\n   \"compute_units\": %u, \"max_clock_mhz\": %u, \"local_mem\": %llu,\n",
            (unsigned)d->compute_units, (unsigned)d->max_clock_mhz,
            (unsigned long long)d->local_mem);
    fputs("   \"results\": [", f);
    x->device = *d;
    x->devices++;
    x->results = 0;
  }
  char hash[17];
  clnorm__db_hash_text(r->kernel_hash, hash);
  export_item(f, x->results, r->op, r->dtype, r->cols, r->row_class, r->rows, &r->variant);
  fprintf(f, ", \"status\": \"%s\"", clnorm__outcome_names[r->outcome]);
  const measure measures[] = {
      {"median_s", r->median_s}, {"min_s", r->min_s}, {"gbps", r->gbps}, {"max_err", r->max_err}};
  export_measures(f, measures, COUNT(measures));
  fprintf(f, ", \"measured_at\": %lld, \"kernel_hash\": \"%s\", \"clnorm_version\": ",
          (long long)r->measured_at, hash);
  json_string(f, r->clnorm_version);
  fputc('}', f);
  x->results++;
  return ferror(f) != 0;
}

clnorm_status clnorm__db_export(clnorm_db *db, int winners_only, FILE *out, char *err,
                                size_t err_size) {
  clnorm__db_clear(err, err_size);
  if (!db || !out)
    return clnorm__db_error(CLNORM_E_INVALID_ARG, err, err_size, "%s is NULL", !db ? "db" : "out");
  /* JSON numbers use '.' whatever the application's locale says */
  void *numbers = clnorm__c_numbers_begin();
  exporter x = {out, db, {0}, 0, 0, 0, CLNORM_OK, err, err_size};
  fprintf(out,
          "{\"format\": \"clnorm-tuning\", \"format_version\": %d, \"clnorm_version\": "
          "\"" CLNORM_VERSION_STRING "\",\n \"exported_at\": %lld,\n \"devices\": [",
          CLNORM_DB_JSON_FORMAT, (long long)time(NULL));
  clnorm_status status = clnorm__db_list(db, NULL, NULL, winners_only, export_row, &x, err, err_size);
  if (status == CLNORM_OK && x.devices)
    export_device_end(&x);
  if (status == CLNORM_OK)
    status = x.status;
  fputs(x.devices ? "\n ]}\n" : "]}\n", out);
  clnorm__c_numbers_end(numbers);
  if (status == CLNORM_OK && (fflush(out) != 0 || ferror(out)))
    status = clnorm__db_error(CLNORM_E_DB, err, err_size, "writing the exported results failed: %s",
                              strerror(errno));
  return status;
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

static int bad(checker *c, const char *key, const char *fmt, ...) CLNORM_DB_PRINTF(3, 4);
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
  const jnode *m = json_find(obj, key);
  if (!m) {
    bad(c, key, "missing");
    return NULL;
  }
  if (m->type != type) {
    static const char *const wanted[] = {"null",     "a boolean", "a number",
                                         "a string", "an array",  "an object"};
    bad(c, key, "expected %s, got %s", wanted[type], type_name(m));
    return NULL;
  }
  return m;
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
  if (n->len >= size || n->len > CLNORM_DB_TEXT_MAX)
    return bad(c, key, "longer than %zu bytes",
               size - 1 < CLNORM_DB_TEXT_MAX ? size - 1 : CLNORM_DB_TEXT_MAX);
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
  const jnode *m = json_find(obj, key);
  if (!m)
    return bad(c, key, "missing");
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

/* The variant's parameters, in the order of their table (so a message names the first bad one). */
static int get_variant(checker *c, const jnode *obj, clnorm_variant *v) {
  for (int i = 0; i < CLNORM_VARIANT_PARAMS; i++) {
    const clnorm_variant_param *p = &clnorm__variant_params[i];
    uint64_t value = 0;
    int index = 0;
    if (p->names ? !get_name(c, obj, p->name, p->names, p->count, &index)
                 : !get_uint(c, obj, p->name, p->min, p->max, &value))
      return 0;
    clnorm__variant_set_param(v, i, p->names ? (unsigned)index : (unsigned)value);
  }
  return 1;
}

/* The shape of a result or an A/B result: op, dtype, cols, row class and rows. */
static int get_shape(checker *c, const jnode *obj, clnorm_op *op, clnorm_dtype *dtype,
                     uint64_t *cols, unsigned *row_class, uint64_t *rows) {
  int op_i, dtype_i;
  uint64_t row_class_u;
  if (!get_name(c, obj, "op", clnorm__op_names, COUNT(clnorm__op_names), &op_i) ||
      !get_name(c, obj, "dtype", clnorm__dtype_names, COUNT(clnorm__dtype_names), &dtype_i) ||
      !get_uint(c, obj, "cols", 1, CLNORM_DB_MAX_COLS, cols) ||
      !get_uint(c, obj, "row_class", 0, CLNORM_DB_MAX_ROW_CLASS, &row_class_u) ||
      !get_uint(c, obj, "rows", 0, CLNORM_DB_MAX_ROWS, rows))
    return 0;
  *op = (clnorm_op)op_i;
  *dtype = (clnorm_dtype)dtype_i;
  *row_class = (unsigned)row_class_u;
  return 1;
}

/* "kernel_hash": 16 hexadecimal digits. */
static int get_hash(checker *c, const jnode *obj, uint64_t *out) {
  char hash[32];
  if (!get_text(c, obj, "kernel_hash", hash, 17))
    return 0;
  if (strlen(hash) != 16 || !clnorm__db_parse_hash(hash, out))
    return bad(c, "kernel_hash", "expected 16 hexadecimal digits");
  return 1;
}

static int read_result(checker *c, const jnode *obj, clnorm_result *r) {
  memset(r, 0, sizeof *r);
  if (obj->type != J_OBJECT)
    return bad(c, NULL, "expected an object, got %s", type_name(obj));
  uint64_t measured_at;
  int outcome;
  if (!get_shape(c, obj, &r->op, &r->dtype, &r->cols, &r->row_class, &r->rows) ||
      !get_variant(c, obj, &r->variant) ||
      !get_name(c, obj, "status", clnorm__outcome_names, COUNT(clnorm__outcome_names), &outcome) ||
      !get_measure(c, obj, "median_s", &r->median_s) || !get_measure(c, obj, "min_s", &r->min_s) ||
      !get_measure(c, obj, "gbps", &r->gbps) || !get_measure(c, obj, "max_err", &r->max_err) ||
      !get_uint(c, obj, "measured_at", 1, INT64_MAX, &measured_at) ||
      !get_hash(c, obj, &r->kernel_hash) ||
      !get_text(c, obj, "clnorm_version", r->clnorm_version, sizeof r->clnorm_version))
    return 0;
  if (!r->clnorm_version[0])
    return bad(c, "clnorm_version", "empty");
  r->outcome = (clnorm_outcome)outcome;
  r->measured_at = (int64_t)measured_at;
  char reason[160];
  if (!clnorm__db_result_valid(r, reason, sizeof reason))
    return bad(c, NULL, "%s", reason);
  return 1;
}

/* One A/B result (a device's optional "ab" list): the candidate's parameters as a result's,
 * the heuristic's in the object "heuristic". */
typedef struct import_ab {
  size_t device;
  clnorm_ab ab;
} import_ab;

static int read_ab(checker *c, const jnode *obj, clnorm_ab *ab) {
  memset(ab, 0, sizeof *ab);
  if (obj->type != J_OBJECT)
    return bad(c, NULL, "expected an object, got %s", type_name(obj));
  uint64_t rounds, measured_at;
  int kept;
  static const char *const verdicts[] = {"tuned", "heuristic"};
  const jnode *heur = member(c, obj, "heuristic", J_OBJECT);
  if (!heur || !get_shape(c, obj, &ab->op, &ab->dtype, &ab->cols, &ab->row_class, &ab->rows) ||
      !get_variant(c, obj, &ab->candidate) || !get_variant(c, heur, &ab->heuristic) ||
      !get_measure(c, obj, "candidate_s", &ab->candidate_s) ||
      !get_measure(c, obj, "heuristic_s", &ab->heuristic_s) ||
      !get_measure(c, obj, "noise", &ab->noise) || !get_uint(c, obj, "rounds", 0, 1000, &rounds) ||
      !get_name(c, obj, "kept", verdicts, COUNT(verdicts), &kept) ||
      !get_uint(c, obj, "measured_at", 1, INT64_MAX, &measured_at) ||
      !get_hash(c, obj, &ab->kernel_hash))
    return 0;
  ab->rounds = (unsigned)rounds;
  ab->kept_heuristic = kept;
  ab->measured_at = (int64_t)measured_at;
  char reason[192];
  if (!clnorm__db_ab_valid(ab, reason, sizeof reason))
    return bad(c, NULL, "%s", reason);
  return 1;
}

/* Checks the whole document into devices and rows; nothing is stored unless all of it is valid. */
static clnorm_status read_document(const jnode *root, clnorm_device_identity **devices_out,
                                   size_t *device_count, clnorm_db_import_row **rows_out,
                                   size_t *row_count, import_ab **abs_out, size_t *ab_count,
                                   char *err, size_t err_size) {
  checker c = {"", err, err_size, 0};
  if (root->type != J_OBJECT)
    return clnorm__db_error(CLNORM_E_INVALID_ARG, err, err_size,
                            "import: expected a JSON object at the top, got %s", type_name(root));
  const jnode *format = member(&c, root, "format", J_STRING);
  if (!format)
    return CLNORM_E_INVALID_ARG;
  if (strcmp(format->str, "clnorm-tuning") != 0)
    return clnorm__db_error(CLNORM_E_INVALID_ARG, err, err_size,
                            "import: format is not \"clnorm-tuning\": not a clnorm export");
  uint64_t version;
  if (!get_uint(&c, root, "format_version", 1, UINT64_MAX, &version))
    return CLNORM_E_INVALID_ARG;
  if (version > CLNORM_DB_JSON_FORMAT)
    return clnorm__db_error(CLNORM_E_INVALID_ARG, err, err_size,
                            "import: format_version %llu is newer than this clnorm reads (%d)",
                            (unsigned long long)version, CLNORM_DB_JSON_FORMAT);
  const jnode *list = member(&c, root, "devices", J_ARRAY);
  if (!list)
    return CLNORM_E_INVALID_ARG;
  size_t total = 0, total_ab = 0;
  for (const jnode *d = list->child; d; d = d->next) {
    const jnode *results = json_find(d, "results"), *ab = json_find(d, "ab");
    total += results && results->type == J_ARRAY ? results->count : 0;
    total_ab += ab && ab->type == J_ARRAY ? ab->count : 0;
  }
  clnorm_device_identity *devices = calloc(list->count ? list->count : 1, sizeof *devices);
  clnorm_db_import_row *rows = calloc(total ? total : 1, sizeof *rows);
  import_ab *abs = calloc(total_ab ? total_ab : 1, sizeof *abs);
  if (!devices || !rows || !abs) {
    free(devices);
    free(rows);
    free(abs);
    return clnorm__db_error(CLNORM_E_NO_MEMORY, err, err_size, "import: out of memory");
  }
  size_t di = 0, ri = 0, ai = 0;
  char where[96];
  for (const jnode *d = list->child; d && !c.failed; d = d->next, di++) {
    snprintf(where, sizeof where, "devices[%zu]", di);
    c.where = where;
    if (!read_device(&c, d, &devices[di]))
      break;
    char reason[160];
    if (!clnorm__db_device_valid(&devices[di], reason, sizeof reason)) {
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
    /* "ab" (exports of schema 4 on) is optional: older exports have none */
    const jnode *list_ab = json_find(d, "ab");
    if (list_ab && list_ab->type != J_ARRAY) {
      snprintf(where, sizeof where, "devices[%zu]", di);
      bad(&c, "ab", "expected an array, got %s", type_name(list_ab));
    }
    k = 0;
    for (const jnode *a = list_ab && !c.failed ? list_ab->child : NULL; a; a = a->next, k++) {
      snprintf(where, sizeof where, "devices[%zu].ab[%zu]", di, k);
      if (!read_ab(&c, a, &abs[ai].ab))
        break;
      abs[ai++].device = di;
    }
  }
  if (c.failed) {
    free(devices);
    free(rows);
    free(abs);
    return CLNORM_E_INVALID_ARG;
  }
  *devices_out = devices;
  *device_count = di;
  *rows_out = rows;
  *row_count = ri;
  *abs_out = abs;
  *ab_count = ai;
  return CLNORM_OK;
}

typedef struct ab_newer {
  const clnorm_ab *ab;
  int newer; /* cleared when a stored A/B of the same shape and rows is as recent */
} ab_newer;

static int newer_ab(void *user, const clnorm_ab *stored) {
  ab_newer *n = user;
  const clnorm_ab *ab = n->ab;
  if (clnorm__db_ab_same_shape(stored, ab) && stored->measured_at >= ab->measured_at)
    n->newer = 0;
  return 0;
}

clnorm_status clnorm__db_import(clnorm_db *db, const char *text, size_t len, size_t *imported,
                                size_t *kept, char *err, size_t err_size) {
  size_t imported_local = 0, kept_local = 0;
  imported = imported ? imported : &imported_local;
  kept = kept ? kept : &kept_local;
  *imported = *kept = 0;
  clnorm__db_clear(err, err_size);
  if (!db || (!text && len))
    return clnorm__db_error(CLNORM_E_INVALID_ARG, err, err_size, "%s is NULL", !db ? "db" : "text");
  if (!clnorm__db_writable(db))
    return clnorm__db_error(CLNORM_E_DB, err, err_size,
                            "tuning database '%s' was opened for reading: cannot import",
                            clnorm__db_path(db));
  json_tree tree;
  /* JSON numbers use '.' whatever the application's locale says */
  void *numbers = clnorm__c_numbers_begin();
  clnorm_status status = json_parse(text, len, &tree, err, err_size);
  clnorm__c_numbers_end(numbers);
  if (status != CLNORM_OK)
    return status;
  clnorm_device_identity *devices = NULL;
  clnorm_db_import_row *rows = NULL;
  import_ab *abs = NULL;
  size_t device_count = 0, row_count = 0, ab_count = 0;
  status = read_document(tree.root, &devices, &device_count, &rows, &row_count, &abs, &ab_count,
                         err, err_size);
  json_free(&tree);
  if (status == CLNORM_OK)
    status = clnorm__db_import_rows(db, devices, device_count, rows, row_count, imported, kept, err,
                                    err_size);
  /* the A/B results after the results they decide between; as results, a stored one is
   * replaced only by a later measurement */
  for (size_t i = 0; i < ab_count && status == CLNORM_OK; i++) {
    ab_newer find = {&abs[i].ab, 1};
    const clnorm_kernel_hashes own = {abs[i].ab.kernel_hash, abs[i].ab.kernel_hash}; /* its own */
    status = clnorm__db_list_ab(db, &devices[abs[i].device], &own, newer_ab, &find, err, err_size);
    if (status == CLNORM_OK && find.newer)
      status = clnorm__db_put_ab(db, &devices[abs[i].device], &abs[i].ab, err, err_size);
  }
  free(devices);
  free(rows);
  free(abs);
  return status;
}
