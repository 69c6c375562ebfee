/* A small JSON parser for untrusted input (tuner/json.c): text to a tree of nodes, with limits on
 * depth, string length, members and number length. normtune import reads its input with it. */
#ifndef CLNORM_JSON_H
#define CLNORM_JSON_H

#include "clnorm.h"

#include <stddef.h>
#include <stdint.h>

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

/* A parsed document: its root and the memory of all its nodes. */
typedef struct json_tree {
  const jnode *root;
  struct jblock *blocks;
} json_tree;

/* Parses text[0..len) (a UTF-8 byte order mark at its start is skipped) into *out. CLNORM_OK, or
 * CLNORM_E_INVALID_ARG ("import: invalid JSON at line L, column C: why") or CLNORM_E_NO_MEMORY
 * with the message in err and nothing to free. Numbers are read with strtod: the caller sets the
 * C locale. json_free(out) releases the tree. */
clnorm_status json_parse(const char *text, size_t len, json_tree *out, char *err, size_t err_size);
void json_free(json_tree *tree);

/* The member `key` of obj, whatever its type; NULL when obj is not an object or has none. */
const jnode *json_find(const jnode *obj, const char *key);

#endif
