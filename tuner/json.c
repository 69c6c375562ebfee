/* A small JSON parser for untrusted input (json.h). */
#define _POSIX_C_SOURCE 200809L
#include "json.h"
#include "db.h"

#include <stdlib.h>
#include <string.h>

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

#define JSON_MAX_DEPTH 32
#define JSON_MAX_STRING 65536
#define JSON_MAX_MEMBERS 256
#define JSON_MAX_NUMBER 400

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

clnorm_status json_parse(const char *text, size_t len, json_tree *out, char *err, size_t err_size) {
  jparser p = {text ? text : "", len, 0, NULL, err, err_size, 0, CLNORM_OK};
  /* a UTF-8 byte order mark is not JSON, but editors write one */
  if (len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0)
    p.pos = 3;
  const jnode *root = parse_value(&p, 1);
  if (root) {
    skip_space(&p);
    if (p.pos < p.len)
      root = jsyntax(&p, "text after the end of the document");
  }
  out->root = root;
  out->blocks = p.blocks;
  if (!root)
    json_free(out);
  return root ? CLNORM_OK : p.status;
}

void json_free(json_tree *tree) {
  while (tree->blocks) {
    jblock *next = tree->blocks->next;
    free(tree->blocks);
    tree->blocks = next;
  }
}

const jnode *json_find(const jnode *obj, const char *key) {
  for (const jnode *m = obj->type == J_OBJECT ? obj->child : NULL; m; m = m->next)
    if (strcmp(m->key, key) == 0)
      return m;
  return NULL;
}
