/* The names of clnorm's enums, indexed by value: generated from the lists beside the enums
 * (CLNORM_*_MAP in clnorm.h, clnorm_variant.h and db.h), so the text the tuning database
 * stores, the tools print in JSON and the library logs is spelled in one place. */
#ifndef CLNORM_NAMES_H
#define CLNORM_NAMES_H

#include "db.h"

#include <stddef.h>

#define CLNORM__COUNT_ONE(name, value, text) +1
enum {
  CLNORM__STATUS_COUNT = 0 CLNORM_STATUS_MAP(CLNORM__COUNT_ONE),
  CLNORM__DTYPE_COUNT = 0 CLNORM_DTYPE_MAP(CLNORM__COUNT_ONE),
  CLNORM__REDUCE_COUNT = 0 CLNORM_REDUCE_MAP(CLNORM__COUNT_ONE),
  CLNORM__STATS_COUNT = 0 CLNORM_STATS_MAP(CLNORM__COUNT_ONE),
  CLNORM__CHOICE_COUNT = 0 CLNORM_CHOICE_MAP(CLNORM__COUNT_ONE),
  CLNORM__OUTCOME_COUNT = 0 CLNORM_OUTCOME_MAP(CLNORM__COUNT_ONE)
};

extern const char *const clnorm__status_names[CLNORM__STATUS_COUNT];
extern const char *const clnorm__op_names[CLNORM_OP_COUNT];
extern const char *const clnorm__dtype_names[CLNORM__DTYPE_COUNT];
extern const char *const clnorm__reduce_names[CLNORM__REDUCE_COUNT];
extern const char *const clnorm__stats_names[CLNORM__STATS_COUNT];
extern const char *const clnorm__choice_names[CLNORM__CHOICE_COUNT];
extern const char *const clnorm__outcome_names[CLNORM__OUTCOME_COUNT];

/* names[value] where value < count, else `unknown`. */
const char *clnorm__name_of(const char *const *names, size_t count, int value, const char *unknown);

/* The value whose name is text, or -1 (text NULL or no such name). */
int clnorm__name_index(const char *const *names, size_t count, const char *text);

/* The variant parameters, in the order clnorm_variant_format, the database's columns and the
 * JSON export list them: X(field of clnorm_variant and its name, the enum's names or NULL for an
 * unsigned number, their count, the least and the greatest value stored). */
#define CLNORM_VARIANT_PARAM_MAP(X)                                                                \
  X(wg, NULL, 0, 1, CLNORM_DB_MAX_WG)                                                              \
  X(tpr, NULL, 0, 1, CLNORM_DB_MAX_WG)                                                             \
  X(vec, NULL, 0, 1, 16)                                                                           \
  X(hold, NULL, 0, 0, CLNORM_DB_MAX_HOLD)                                                          \
  X(reduce, clnorm__reduce_names, CLNORM__REDUCE_COUNT, 0, 0)                                      \
  X(stats, clnorm__stats_names, CLNORM__STATS_COUNT, 0, 0)
typedef struct clnorm_variant_param {
  const char *name;
  const char *const *names;
  size_t count;
  uint64_t min, max; /* unsigned parameters */
} clnorm_variant_param;
#define CLNORM_VARIANT_PARAMS (0 CLNORM_VARIANT_PARAM_MAP(CLNORM__COUNT_ONE_PARAM))
#define CLNORM__COUNT_ONE_PARAM(field, names, count, min, max) +1
/* The parameters' column names in SQL, each after a comma: ", wg, tpr, ..." and
 * ", r.wg, r.tpr, ...". */
#define CLNORM__SQL_COLUMN(field, names, count, min, max) ", " #field
#define CLNORM__SQL_R_COLUMN(field, names, count, min, max) ", r." #field
#define CLNORM_VARIANT_SQL_COLUMNS CLNORM_VARIANT_PARAM_MAP(CLNORM__SQL_COLUMN)
#define CLNORM_VARIANT_SQL_R_COLUMNS CLNORM_VARIANT_PARAM_MAP(CLNORM__SQL_R_COLUMN)
extern const clnorm_variant_param clnorm__variant_params[CLNORM_VARIANT_PARAMS];

/* The value of parameter i of v (an enum's value for reduce and stats), and setting it. */
unsigned clnorm__variant_param(const clnorm_variant *v, int i);
void clnorm__variant_set_param(clnorm_variant *v, int i, unsigned value);
/* 1 when a and b are the same variant: every parameter (every field of clnorm_variant) equal. */
int clnorm__variant_same(const clnorm_variant *a, const clnorm_variant *b);

#endif
