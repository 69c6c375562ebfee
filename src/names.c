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

const clnorm_variant_param clnorm__variant_params[CLNORM_VARIANT_PARAMS] = {
    {"wg", NULL, 0},
    {"tpr", NULL, 0},
    {"vec", NULL, 0},
    {"hold", NULL, 0},
    {"reduce", clnorm__reduce_names, CLNORM__REDUCE_COUNT},
    {"stats", clnorm__stats_names, CLNORM__STATS_COUNT}};

unsigned clnorm__variant_param(const clnorm_variant *v, int i) {
  const unsigned values[CLNORM_VARIANT_PARAMS] = {
      v->wg, v->tpr, v->vec, v->hold, (unsigned)v->reduce, (unsigned)v->stats};
  return values[i];
}
