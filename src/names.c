#include "names.h"

#include <string.h>

#define NAME_AT(name, value, text) [value] = text,

const char *const clnorm__status_names[] = {CLNORM_STATUS_MAP(NAME_AT)};
const char *const clnorm__op_names[] = {CLNORM_OP_MAP(NAME_AT)};
const char *const clnorm__dtype_names[] = {CLNORM_DTYPE_MAP(NAME_AT)};
const char *const clnorm__reduce_names[] = {CLNORM_REDUCE_MAP(NAME_AT)};
const char *const clnorm__stats_names[] = {CLNORM_STATS_MAP(NAME_AT)};
const char *const clnorm__choice_names[] = {CLNORM_CHOICE_MAP(NAME_AT)};
const char *const clnorm__outcome_names[] = {CLNORM_OUTCOME_MAP(NAME_AT)};

/* CLNORM_OP_COUNT is a plain number in the public header (callers size arrays with it). */
_Static_assert(CLNORM_OP_COUNT == 0 CLNORM_OP_MAP(CLNORM__COUNT_ONE), "CLNORM_OP_COUNT");

const char *clnorm__name_of(const char *const *names, size_t count, int value,
                            const char *unknown) {
  return value >= 0 && (size_t)value < count ? names[value] : unknown;
}

int clnorm__name_index(const char *const *names, size_t count, const char *text) {
  for (size_t i = 0; text && i < count; i++)
    if (strcmp(names[i], text) == 0)
      return (int)i;
  return -1;
}

#define PARAM(field, names, count, min, max) {#field, names, count, min, max},
const clnorm_variant_param clnorm__variant_params[CLNORM_VARIANT_PARAMS] = {
    CLNORM_VARIANT_PARAM_MAP(PARAM)};

unsigned clnorm__variant_param(const clnorm_variant *v, int i) {
#define VALUE(field, names, count, min, max) (unsigned)v->field,
  const unsigned values[CLNORM_VARIANT_PARAMS] = {CLNORM_VARIANT_PARAM_MAP(VALUE)};
  return values[i];
}

void clnorm__variant_set_param(clnorm_variant *v, int i, unsigned value) {
  int at = 0;
#define SET(field, names, count, min, max)                                                         \
  if (at++ == i)                                                                                   \
    v->field = value;
  CLNORM_VARIANT_PARAM_MAP(SET)
}

/* The parameters of CLNORM_VARIANT_PARAM_MAP are every field of clnorm_variant (each an unsigned
 * or an enum): a field added to the struct and not to the map fails here. */
_Static_assert(sizeof(clnorm_variant) == CLNORM_VARIANT_PARAMS * sizeof(unsigned),
               "every field of clnorm_variant is in CLNORM_VARIANT_PARAM_MAP");

int clnorm__variant_same(const clnorm_variant *a, const clnorm_variant *b) {
#define SAME(field, names, count, min, max) &&a->field == b->field
  return 1 CLNORM_VARIANT_PARAM_MAP(SAME);
}
