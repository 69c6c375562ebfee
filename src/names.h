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
 * tools' JSON list them: the field of clnorm_variant and, for an enum, its names (NULL: an
 * unsigned number). */
typedef struct clnorm_variant_param {
  const char *name;
  const char *const *names;
  size_t count;
} clnorm_variant_param;
#define CLNORM_VARIANT_PARAMS 6
extern const clnorm_variant_param clnorm__variant_params[CLNORM_VARIANT_PARAMS];

/* The value of parameter i of v (an enum's value for reduce and stats). */
unsigned clnorm__variant_param(const clnorm_variant *v, int i);

#endif
