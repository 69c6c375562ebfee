/* The tuning database's JSON export and import (normtune export / import): the JSON writer and a
 * small parser for untrusted input, over the database module's functions (src/db.h). Kept out of
 * libclnorm, which never reads or writes JSON. */
#define _POSIX_C_SOURCE 200809L
#include "db_json.h"
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

static int export_ab(void *user, const clnorm_ab *ab) {
  exporter *x = user;
  FILE *f = x->f;
  char hash[17];
  clnorm__db_hash_text(ab->kernel_hash, hash);
  fprintf(f,
          "%s\n    {\"op\": \"%s\", \"dtype\": \"%s\", \"cols\": %llu, \"row_class\": %u, "
          "\"rows\": %llu, ",
          x->abs ? "," : "", clnorm__op_names[ab->op], clnorm__dtype_names[ab->dtype],
          (unsigned long long)ab->cols, ab->row_class, (unsigned long long)ab->rows);
  export_variant(f, &ab->candidate);
  fputs(", \"heuristic\": {", f);
  export_variant(f, &ab->heuristic);
  fputs("}, \"candidate_s\": ", f);
  json_double(f, ab->candidate_s);
  fputs(", \"heuristic_s\": ", f);
  json_double(f, ab->heuristic_s);
  fputs(", \"noise\": ", f);
  json_double(f, ab->noise);
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
  fprintf(f, "\"status\": \"%s\"", clnorm__outcome_names[r->outcome]);
  const struct {
    const char *key;
    double value;
  } measures[] = {
      {"median_s", r->median_s}, {"min_s", r->min_s}, {"gbps", r->gbps}, {"max_err", r->max_err}};
  for (size_t i = 0; i < COUNT(measures); i++) {
    fprintf(f, ", \"%s\": ", measures[i].key);
    json_double(f, measures[i].value);
  }
  fprintf(f, ", \"measured_at\": %lld, \"kernel_hash\": \"%s\", \"clnorm_version\": ",
          (long long)r->measured_at, hash);
  json_string(f, r->clnorm_version);
  fputc('}', f);
  x->results++;
  return ferror(f) != 0;
}

clnorm_status clnorm__db_export(clnorm_db *db, FILE *out, char *err, size_t err_size) {
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
  clnorm_status status = clnorm__db_list(db, NULL, NULL, 0, export_row, &x, err, err_size);
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

/* Import: a small parser for untrusted input. */

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
    clnorm__db_error(CLNORM_E_INVALID_ARG, p->err, p->err_size,
                     "import: invalid JSON at line %zu, column %zu: %s", line, col, what);
  }
  return NULL;
}

static void *jnomem(jparser *p) {
  if (!p->failed) {
    p->failed = 1;
    p->status = CLNORM_E_NO_MEMORY;
    clnorm__db_error(CLNORM_E_NO_MEMORY, p->err, p->err_size, "import: out of memory");
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

static int read_result(checker *c, const jnode *obj, clnorm_result *r) {
  memset(r, 0, sizeof *r);
  if (obj->type != J_OBJECT)
    return bad(c, NULL, "expected an object, got %s", type_name(obj));
  uint64_t cols, row_class, rows, measured_at;
  int op, dtype, outcome;
  char hash[32];
  if (!get_name(c, obj, "op", clnorm__op_names, COUNT(clnorm__op_names), &op) ||
      !get_name(c, obj, "dtype", clnorm__dtype_names, COUNT(clnorm__dtype_names), &dtype) ||
      !get_uint(c, obj, "cols", 1, CLNORM_DB_MAX_COLS, &cols) ||
      !get_uint(c, obj, "row_class", 0, CLNORM_DB_MAX_ROW_CLASS, &row_class) ||
      !get_uint(c, obj, "rows", 0, CLNORM_DB_MAX_ROWS, &rows) ||
      !get_variant(c, obj, &r->variant) ||
      !get_name(c, obj, "status", clnorm__outcome_names, COUNT(clnorm__outcome_names), &outcome) ||
      !get_measure(c, obj, "median_s", &r->median_s) || !get_measure(c, obj, "min_s", &r->min_s) ||
      !get_measure(c, obj, "gbps", &r->gbps) || !get_measure(c, obj, "max_err", &r->max_err) ||
      !get_uint(c, obj, "measured_at", 1, INT64_MAX, &measured_at) ||
      !get_text(c, obj, "kernel_hash", hash, 17) ||
      !get_text(c, obj, "clnorm_version", r->clnorm_version, sizeof r->clnorm_version))
    return 0;
  if (strlen(hash) != 16 || !clnorm__db_parse_hash(hash, &r->kernel_hash))
    return bad(c, "kernel_hash", "expected 16 hexadecimal digits");
  if (!r->clnorm_version[0])
    return bad(c, "clnorm_version", "empty");
  r->op = (clnorm_op)op;
  r->dtype = (clnorm_dtype)dtype;
  r->cols = cols;
  r->row_class = (unsigned)row_class;
  r->rows = rows;
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
  uint64_t cols, row_class, rows, rounds, measured_at;
  int op, dtype, kept;
  char hash[32];
  static const char *const verdicts[] = {"tuned", "heuristic"};
  const jnode *heur = member(c, obj, "heuristic", J_OBJECT);
  if (!heur || !get_name(c, obj, "op", clnorm__op_names, COUNT(clnorm__op_names), &op) ||
      !get_name(c, obj, "dtype", clnorm__dtype_names, COUNT(clnorm__dtype_names), &dtype) ||
      !get_uint(c, obj, "cols", 1, CLNORM_DB_MAX_COLS, &cols) ||
      !get_uint(c, obj, "row_class", 0, CLNORM_DB_MAX_ROW_CLASS, &row_class) ||
      !get_uint(c, obj, "rows", 0, CLNORM_DB_MAX_ROWS, &rows) ||
      !get_variant(c, obj, &ab->candidate) || !get_variant(c, heur, &ab->heuristic) ||
      !get_measure(c, obj, "candidate_s", &ab->candidate_s) ||
      !get_measure(c, obj, "heuristic_s", &ab->heuristic_s) ||
      !get_measure(c, obj, "noise", &ab->noise) || !get_uint(c, obj, "rounds", 0, 1000, &rounds) ||
      !get_name(c, obj, "kept", verdicts, COUNT(verdicts), &kept) ||
      !get_uint(c, obj, "measured_at", 1, INT64_MAX, &measured_at) ||
      !get_text(c, obj, "kernel_hash", hash, 17))
    return 0;
  if (strlen(hash) != 16 || !clnorm__db_parse_hash(hash, &ab->kernel_hash))
    return bad(c, "kernel_hash", "expected 16 hexadecimal digits");
  ab->op = (clnorm_op)op;
  ab->dtype = (clnorm_dtype)dtype;
  ab->cols = cols;
  ab->row_class = (unsigned)row_class;
  ab->rows = rows;
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
  for (const jnode *d = list->child; d; d = d->next)
    for (const jnode *m = d->type == J_OBJECT ? d->child : NULL; m; m = m->next) {
      if (strcmp(m->key, "results") == 0 && m->type == J_ARRAY)
        total += m->count;
      if (strcmp(m->key, "ab") == 0 && m->type == J_ARRAY)
        total_ab += m->count;
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
    const jnode *list_ab = NULL;
    for (const jnode *m = d->type == J_OBJECT ? d->child : NULL; m; m = m->next)
      if (strcmp(m->key, "ab") == 0)
        list_ab = m;
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
  clnorm_db_import_row *rows = NULL;
  import_ab *abs = NULL;
  size_t device_count = 0, row_count = 0, ab_count = 0;
  clnorm_status status = read_document(root, &devices, &device_count, &rows, &row_count, &abs,
                                       &ab_count, err, err_size);
  jfree(&p);
  if (status == CLNORM_OK)
    status = clnorm__db_import_rows(db, devices, device_count, rows, row_count, imported, kept, err,
                                    err_size);
  /* the A/B results after the results they decide between; as results, a stored one is
   * replaced only by a later measurement */
  for (size_t i = 0; i < ab_count && status == CLNORM_OK; i++) {
    ab_newer find = {&abs[i].ab, 1};
    status = clnorm__db_list_ab(db, &devices[abs[i].device], &abs[i].ab.kernel_hash, newer_ab,
                                &find, err, err_size);
    if (status == CLNORM_OK && find.newer)
      status = clnorm__db_put_ab(db, &devices[abs[i].device], &abs[i].ab, err, err_size);
  }
  free(devices);
  free(rows);
  free(abs);
  return status;
}
