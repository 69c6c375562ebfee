/* The variant space: which kernel parameters exist, which combinations a device accepts, which
 * a call accepts, and the heuristic used when nothing better is known. The tuner enumerates this
 * space and the dispatcher validates against it: this file is the one definition of both. */
#include "internal.h"

#include <stdio.h>
#include <string.h>

/* The parameter values; a variant is one combination that passes variant_device_ok. */
static const unsigned wg_values[] = {1, 4, 16, 32, 64, 128, 256, 512, 1024};
static const unsigned tpr_values[] = {1, 4, 8, 16, 32, 64, 128, 256, 512, 1024};
static const unsigned vec_values[] = {2, 4, 8, 16};
static const unsigned hold_values[] = {0, 1, 4, 16};
static const clnorm_reduce reduce_values[] = {CLNORM_REDUCE_LOCAL, CLNORM_REDUCE_SUBGROUP,
                                              CLNORM_REDUCE_NVSHFL};
static const clnorm_stats stats_values[] = {CLNORM_STATS_WELFORD, CLNORM_STATS_TWOPASS};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))
#define MAX_ROWS_PER_GROUP 8 /* with tpr > 1: more rows per group only add idle lanes */

static int is_pow2(unsigned v) { return v != 0 && (v & (v - 1)) == 0; }

static int why(char *buf, size_t size, const char *text) {
  if (buf && size)
    snprintf(buf, size, "%s", text);
  return 0;
}

/* Whether a variant belongs to the searched space: vector widths worth trying for each shape
 * (a call narrows the width itself when its alignment needs it, so narrow widths need not be
 * searched: four floats per load and up on GPUs, wider on CPUs' one-item-per-row kernels). */
static int in_space(const clnorm_variant *v) {
  return v->tpr == 1 ? v->vec >= 4 : v->vec <= 8;
}

int clnorm__variant_device_ok(const clnorm_device_info *info, clnorm_op op,
                              const clnorm_variant *v, char *buf, size_t size) {
  if (!is_pow2(v->wg) || !is_pow2(v->tpr) || v->tpr > v->wg)
    return why(buf, size, "wg and tpr must be powers of two with tpr <= wg");
  if (!is_pow2(v->vec) || v->vec > 16)
    return why(buf, size, "vec must be 1, 2, 4, 8 or 16");
  if (v->hold * v->vec > CLNORM_HOLD_MAX_FLOATS)
    return why(buf, size, "hold * vec exceeds the private-memory budget of 64 floats");
  if (v->wg > info->max_wg)
    return why(buf, size, "wg exceeds the device's maximum work-group size");
  if (v->tpr > 1 && (cl_ulong)v->wg * 3 * sizeof(float) > info->local_mem)
    return why(buf, size, "the reduction's local memory exceeds the device's");
  if (v->tpr == 1 && v->reduce != CLNORM_REDUCE_LOCAL)
    return why(buf, size, "tpr == 1 has no reduction: reduce must be local");
  if (v->tpr > 1 && v->wg / v->tpr > MAX_ROWS_PER_GROUP)
    return why(buf, size, "more than 8 rows per work-group");
  if (v->reduce == CLNORM_REDUCE_SUBGROUP && (!info->has_subgroups || v->tpr != v->wg))
    return why(buf, size, "sub-group reduction needs cl_khr_subgroups and tpr == wg");
  if (v->reduce == CLNORM_REDUCE_NVSHFL && (!info->is_nvidia || v->wg % 32 != 0))
    return why(buf, size, "warp shuffle needs NVIDIA's platform and wg a multiple of 32");
  if ((unsigned)v->reduce > CLNORM_REDUCE_NVSHFL || (unsigned)v->stats > CLNORM_STATS_TWOPASS)
    return why(buf, size, "unknown reduce or stats value");
  if (v->stats == CLNORM_STATS_TWOPASS && v->hold == 0)
    return why(buf, size, "two-pass statistics need the row held (hold > 0)");
  if (op == CLNORM_OP_RMSNORM && v->stats != CLNORM_STATS_WELFORD)
    return why(buf, size, "RMSNorm variants have no statistics choice (stats must be welford)");
  return 1;
}

size_t clnorm__variant_list(const clnorm_device_info *info, clnorm_op op, clnorm_variant *out,
                            size_t cap) {
  size_t n = 0;
  for (size_t a = 0; a < COUNT(wg_values); a++)
    for (size_t b = 0; b < COUNT(tpr_values); b++)
      for (size_t c = 0; c < COUNT(vec_values); c++)
        for (size_t d = 0; d < COUNT(hold_values); d++)
          for (size_t e = 0; e < COUNT(reduce_values); e++)
            for (size_t f = 0; f < COUNT(stats_values); f++) {
              const clnorm_variant v = {wg_values[a],     tpr_values[b],    vec_values[c],
                                        hold_values[d],   reduce_values[e], stats_values[f]};
              if (!in_space(&v) || !clnorm__variant_device_ok(info, op, &v, NULL, 0))
                continue;
              if (n < cap)
                out[n] = v;
              n++;
            }
  return n;
}

/* The widest vector width <= vec at which every row start of x and y is aligned. */
unsigned clnorm__call_vec(const clnorm_call *call, unsigned vec) {
  const size_t xs = call->x.stride ? call->x.stride : call->cols;
  const size_t ys = call->y.stride ? call->y.stride : call->cols;
  size_t bits = call->x.offset | call->y.offset;
  if (call->rows > 1)
    bits |= xs | ys;
  while (vec > 1 && ((bits & (vec - 1)) != 0 || vec > call->cols))
    vec >>= 1;
  return vec;
}

int clnorm__variant_call_ok(const clnorm_variant *v, size_t cols, char *buf, size_t size) {
  if (v->hold > 0) {
    const size_t vectors = cols / v->vec;
    const size_t per_item = (vectors + v->tpr - 1) / v->tpr;
    if (per_item > v->hold)
      return why(buf, size, "the row does not fit the variant's private memory (hold)");
  }
  return 1;
}

static unsigned pow2_ceil(size_t v) {
  unsigned p = 1;
  while (p < v && p < (1u << 30))
    p <<= 1;
  return p;
}

void clnorm__heuristic(const clnorm_device_info *info, const clnorm_call *call,
                       clnorm_variant *out) {
  clnorm_variant v = {1, 1, 16, 0, CLNORM_REDUCE_LOCAL, CLNORM_STATS_WELFORD};
  if (info->type & CL_DEVICE_TYPE_CPU) {
    /* One work-item per row with long vector loops and no barriers; the row is re-read from
     * cache. A few rows per group amortise the work-group overhead. */
    v.wg = 4;
    v.tpr = 1;
    v.vec = 16;
  } else {
    v.vec = 4;
    const unsigned vec = clnorm__call_vec(call, 4);
    const size_t vectors = (call->cols + vec - 1) / vec;
    unsigned max_wg = info->max_wg >= 1024 ? 1024 : (unsigned)pow2_ceil(info->max_wg + 1) / 2;
    if (vectors <= 16) {
      /* Short rows: a small slice of the group per row, several rows per group. */
      v.tpr = 4;
      v.wg = 32 <= max_wg ? 32 : max_wg;
    } else {
      /* About four vectors per work-item, between 32 and the device's maximum. */
      unsigned tpr = pow2_ceil((vectors + 3) / 4);
      tpr = tpr < 32 ? 32 : tpr;
      tpr = tpr > max_wg ? max_wg : tpr;
      v.tpr = tpr;
      v.wg = tpr < 128 ? 128 : tpr;
      if (v.wg > max_wg)
        v.wg = max_wg;
    }
    /* hold counts vectors of the width the call runs at; the variant states it at width 4 */
    const size_t per_item = ((vectors + v.tpr - 1) / v.tpr + (4 / vec) - 1) / (4 / vec);
    v.hold = per_item <= 1 ? 1 : per_item <= 4 ? 4 : per_item <= 16 ? 16 : 0;
    v.stats = v.hold ? CLNORM_STATS_TWOPASS : CLNORM_STATS_WELFORD;
    if (info->is_nvidia && v.wg % 32 == 0)
      v.reduce = CLNORM_REDUCE_NVSHFL;
    else if (info->has_subgroups && v.tpr == v.wg)
      v.reduce = CLNORM_REDUCE_SUBGROUP;
  }
  if (call->op == CLNORM_OP_RMSNORM)
    v.stats = CLNORM_STATS_WELFORD;
  if (v.hold * v.vec > CLNORM_HOLD_MAX_FLOATS)
    v.hold = 0;
  if (v.tpr > 1 && v.wg / v.tpr > MAX_ROWS_PER_GROUP)
    v.wg = v.tpr * MAX_ROWS_PER_GROUP;
  *out = v;
}

/* Row counts tuned and dispatched as one: few rows leave most of a GPU idle, many fill it. */
unsigned clnorm__row_class(size_t rows) {
  return rows <= 16 ? 0 : rows <= 256 ? 1 : rows <= 4096 ? 2 : 3;
}

static unsigned log2u(unsigned v) {
  unsigned l = 0;
  while (v > 1) {
    v >>= 1;
    l++;
  }
  return l;
}

uint64_t clnorm__variant_key(clnorm_op op, clnorm_dtype dtype, const clnorm_variant *v) {
  uint64_t k = (uint64_t)op;
  k = (k << 2) | (uint64_t)dtype;
  k = (k << 5) | log2u(v->wg);
  k = (k << 5) | log2u(v->tpr);
  k = (k << 3) | log2u(v->vec);
  k = (k << 8) | v->hold;
  k = (k << 2) | (uint64_t)v->reduce;
  k = (k << 1) | (uint64_t)v->stats;
  return k;
}

static const char *reduce_name(clnorm_reduce r) {
  switch (r) {
  case CLNORM_REDUCE_LOCAL:
    return "local";
  case CLNORM_REDUCE_SUBGROUP:
    return "subgroup";
  case CLNORM_REDUCE_NVSHFL:
    return "nvshfl";
  }
  return "?";
}

int clnorm_variant_format(const clnorm_variant *v, char *buf, size_t size) {
  return snprintf(buf, size, "wg=%u tpr=%u vec=%u hold=%u reduce=%s stats=%s", v->wg, v->tpr,
                  v->vec, v->hold, reduce_name(v->reduce),
                  v->stats == CLNORM_STATS_TWOPASS ? "twopass" : "welford");
}

size_t clnorm_variant_list(const clnorm_ctx *ctx, clnorm_op op, clnorm_variant *out,
                           size_t cap) {
  if (!ctx || (unsigned)op > CLNORM_OP_RMSNORM)
    return 0;
  return clnorm__variant_list(&ctx->info, op, out, cap);
}
