/* The variant space: which kernel parameters exist, which combinations a device accepts, which
 * a call accepts, and the heuristic used when nothing better is known. The tuner enumerates this
 * space and the dispatcher validates against it: this file is the one definition of both. */
#include "internal.h"
#include "names.h"

#include <stdio.h>
#include <string.h>

/* The parameter values; a variant is one combination that passes variant_device_ok. */
static const unsigned wg_values[] = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024};
static const unsigned tpr_values[] = {1, 4, 8, 16, 32, 64, 128, 256, 512, 1024};
static const unsigned vec_values[] = {2, 4, 8, 16};
static const unsigned hold_values[] = {0, 1, 2, 4, 8, 16};
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
 * searched: up to 32 bytes per load on GPUs (8 floats, 16 halves), wider on CPUs'
 * one-item-per-row kernels). */
static int in_space(const clnorm_variant *v, clnorm_dtype dtype) {
  /* 2 and 8 rows per group: the CPU heuristic's one-item-per-row groups (it doubles the rows per
   * group, 1 to 128), so that the search always meets the heuristic's own variant
   * (tests/test_space.c) */
  if ((v->wg == 2 || v->wg == 8) && v->tpr != 1)
    return 0;
  /* hold 2 and 8: the GPU heuristic's (cl/common.cl's held rows at 2 to 8 vectors per work-item,
   * tests/test_space.c), never with one work-item per row, 8 only from a warp of work-items per
   * row up */
  if ((v->hold == 2 && v->tpr == 1) || (v->hold == 8 && v->tpr < 32))
    return 0;
  if (v->tpr == 1)
    return v->vec >= 4;
  return dtype == CLNORM_F32 ? v->vec <= 8 : v->vec >= 4;
}

int clnorm__op_backward(clnorm_op op) {
  return op == CLNORM_OP_LAYERNORM_BWD || op == CLNORM_OP_RMSNORM_BWD;
}

int clnorm__op_add(clnorm_op op) {
  return op == CLNORM_OP_ADD_LAYERNORM || op == CLNORM_OP_ADD_RMSNORM;
}

int clnorm__op_rms(clnorm_op op) {
  return op == CLNORM_OP_RMSNORM || op == CLNORM_OP_ADD_RMSNORM || op == CLNORM_OP_RMSNORM_BWD;
}

size_t clnorm__dtype_size(clnorm_dtype dtype) { return dtype == CLNORM_F32 ? 4 : 2; }

/* Private floats per work-item for a held row: backward kernels hold x and dy and keep two
 * weight-gradient sums of the same size, so their budget per array is half. */
/* Every op: 64 floats. The backward holds its dgamma and dbeta sums in as many, and the row too
 * only up to 32 (cl/backward.cl, BWD_HELD). */
static unsigned hold_budget(clnorm_op op) {
  (void)op;
  return CLNORM_HOLD_MAX_FLOATS;
}

int clnorm__variant_device_ok(const clnorm_device_info *info, clnorm_op op, const clnorm_variant *v,
                              char *buf, size_t size) {
  if (!is_pow2(v->wg) || !is_pow2(v->tpr) || v->tpr > v->wg)
    return why(buf, size, "wg and tpr must be powers of two with tpr <= wg");
  if (!is_pow2(v->vec) || v->vec > 16)
    return why(buf, size, "vec must be 1, 2, 4, 8 or 16");
  if ((unsigned)op >= CLNORM_OP_COUNT)
    return why(buf, size, "unknown op");
  /* hold comes from the caller: hold * vec would wrap (hold 2^31, vec 2 gives 0) */
  if (v->hold > hold_budget(op) / v->vec)
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
  /* Two-pass statistics of a row that is not held read it again, a third time for rows whose
   * first element is far from their mean (cl/forward.cl): from cache when one work-item owns
   * the row (tpr == 1, the CPU shape: a row of 4096 floats is 16 KiB), from global memory
   * otherwise (GPU shapes), where one pass always wins. */
  if (v->stats == CLNORM_STATS_TWOPASS && v->hold == 0 && v->tpr != 1)
    return why(buf, size,
               "two-pass statistics need the row held (hold > 0) or one work-item per "
               "row (tpr == 1)");
  if ((clnorm__op_rms(op) || clnorm__op_backward(op)) && v->stats != CLNORM_STATS_WELFORD)
    return why(buf, size,
               "only LayerNorm forward variants have a statistics choice (stats must be welford)");
  return 1;
}

size_t clnorm__variant_list(const clnorm_device_info *info, clnorm_op op, clnorm_dtype dtype,
                            clnorm_variant *out, size_t cap) {
  size_t n = 0;
  for (size_t a = 0; a < COUNT(wg_values); a++)
    for (size_t b = 0; b < COUNT(tpr_values); b++)
      for (size_t c = 0; c < COUNT(vec_values); c++)
        for (size_t d = 0; d < COUNT(hold_values); d++)
          for (size_t e = 0; e < COUNT(reduce_values); e++)
            for (size_t f = 0; f < COUNT(stats_values); f++) {
              const clnorm_variant v = {wg_values[a],   tpr_values[b],    vec_values[c],
                                        hold_values[d], reduce_values[e], stats_values[f]};
              if (!in_space(&v, dtype) || !clnorm__variant_device_ok(info, op, &v, NULL, 0))
                continue;
              if (n < cap)
                out[n] = v;
              n++;
            }
  return n;
}

/* The widest vector width <= vec that the call can run: at most cols, and where the device's
 * kernels need aligned row starts (info->unaligned off), one at which every row start of every
 * matrix of the call is aligned. */
unsigned clnorm__call_vec(const clnorm_device_info *info, const clnorm_call *call, unsigned vec) {
  const clnorm_rows *m[5] = {&call->x, &call->y, &call->residual, &call->sum_out, &call->dy};
  size_t bits = 0; /* the row starts' alignment, where the kernels need it */
  for (int i = 0; i < 5 && !info->unaligned; i++) {
    if (!m[i]->buf)
      continue;
    bits |= m[i]->offset;
    if (call->rows > 1)
      bits |= m[i]->stride ? m[i]->stride : call->cols;
  }
  while (vec > 1 && ((bits & (vec - 1)) != 0 || vec > call->cols))
    vec >>= 1;
  return vec;
}

int clnorm__variant_call_ok(const clnorm_variant *v, size_t cols, char *buf, size_t size) {
  if (v->vec == 0 || v->tpr == 0) /* divisors below; callers need not have checked the device */
    return why(buf, size, "vec and tpr must not be 0");
  if (v->hold > 0) {
    /* rounded up without an addition, which wraps for cols near SIZE_MAX */
    const size_t vectors = cols / v->vec;
    const size_t per_item = vectors / v->tpr + (vectors % v->tpr != 0);
    if (per_item > v->hold)
      return why(buf, size, "the row does not fit the variant's private memory (hold)");
  }
  return 1;
}

/* The rows of one work-group on a CPU, in bytes, at most (unless one row is more): PoCL runs a
 * group's work-items in turn, and a long-row group beyond this is read again from memory rather
 * than from cache (256 x 65536 float32 on 2 cores: 0.78 of copy with 4 rows per group, 0.39 with
 * 32). */
#define CPU_GROUP_BYTES (2u << 20)

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
     * cache. Rows per group amortise the runtime's cost per work-group (PoCL 3.1, 2 cores,
     * 4096 x 4096 LayerNorm: 0.59 of copy with 4 rows per group, 0.83 with 128), as many as
     * leave 8 groups per core (PoCL 5, 16 cores: 64 groups ran at 0.17-0.45 of copy where 128
     * or more ran at 0.69-0.90), at most 128; with few rows, one row per group, so that long
     * rows are split across the cores. docs/PERFORMANCE.md. */
    const size_t want_groups = 8 * (size_t)(info->compute_units ? info->compute_units : 1);
    const size_t row_bytes = call->cols * clnorm__dtype_size(call->dtype);
    v.wg = 1; /* fewer than 16 rows per core: one row per group (want_groups stops the loop) */
    while (v.wg < 128 && call->rows / (2 * (size_t)v.wg) >= want_groups &&
           2 * (size_t)v.wg * row_bytes <= CPU_GROUP_BYTES)
      v.wg *= 2;
    /* Backward: one row per group. Each row slot of the grid keeps its own partial dgamma and
     * dbeta rows (cl/backward.cl), so slots are what cost: with one row per group the grid's
     * few slots (8 per core) keep their partial rows in cache and bwd_reduce adds a few rows,
     * where 128 rows per group wrote and re-read a partial row per row of the call (PoCL 3.1, 2
     * cores, LayerNorm backward 4096 x 4096 float32: 1.3 GB/s with wg=128, 23.0 with wg=1). */
    if (clnorm__op_backward(call->op))
      v.wg = 1;
    v.tpr = 1;
    v.vec = 16;
    /* LayerNorm: two passes from cache beat Welford's chain of dependent updates (PoCL 3.1, 2
     * cores, 4096 x 4096 float32: 0.83 of copy against 0.75; docs/PERFORMANCE.md). */
    v.stats = CLNORM_STATS_TWOPASS;
  } else {
    /* 16-byte loads: 4 floats or 8 halves */
    const unsigned want = call->dtype == CLNORM_F32 ? 4 : 8;
    v.vec = want;
    const unsigned vec = clnorm__call_vec(info, call, want);
    const size_t vectors = (call->cols + vec - 1) / vec;
    unsigned max_wg = info->max_wg >= 1024 ? 1024 : (unsigned)pow2_ceil(info->max_wg + 1) / 2;
    const unsigned device_wg = max_wg;
    /* At most 256 work-items, but for the rows 256 do not hold (below, where info->reqd_wg):
     * NVIDIA's OpenCL (driver 580, H100 and H200) reports 256 as every kernel's limit, and wider
     * variants were refused until the library took the compiled size (docs/DEVICES.md). */
    max_wg = max_wg > 256 ? 256 : max_wg;
    if (vectors <= 16) {
      /* Short rows: a small slice of the group per row, several rows per group. */
      v.tpr = 4;
      v.wg = 32 <= max_wg ? 32 : max_wg;
    } else {
      /* Many vectors per work-item, all loaded before any is used (cl/common.cl): about 4 of 4
       * floats or 8 of 8 halves (the backward, which holds x, dy and the weight gradients' sums:
       * 16 elements, 4 vectors of floats or 2 of halves), the row held in 16 to 64
       * floats (H200, forward, interleaved:
       * float32 8192 columns 256 x 8 vectors 0.92 of copy against 128 x 16 0.90; bfloat16 8192
       * columns 128 x 8 0.74 against 256 x 4 0.60; docs/PERFORMANCE.md). */
      /* NVIDIA, RMSNorm forward in 16 bits: 4 vectors a work-item, twice the work-items a row
       * (one reduction, no second pass to pay for them; H200, 2026-11-28, variant_ab, 15
       * interleaved rounds: 4096 x 4096 bfloat16 0.88 of copy against 0.93, 16384 x 4096 0.92
       * against 0.94, 32768 x 2048 float16 0.93 against 0.94; LayerNorm's two passes over the
       * held row lose with it, 0.80 against 0.77; docs/PERFORMANCE.md). */
      /* The fused add's LayerNorm in 16 bits too, which also loads the residual and stores the
       * sum: at 4 vectors a work-item, float16 4096 x 4096 ran at 0.98 of copy against 0.78 at 8
       * (H200, 2026-11-29, variant_ab, 12 interleaved rounds); through the dispatcher at 2048
       * to 8192 columns, float16 1.10-1.20x, bfloat16 1.00-1.21x (ab_builds.sh, 2 rounds;
       * docs/PERFORMANCE.md). */
      const int per4 = info->is_nvidia && !clnorm__op_backward(call->op) &&
                       call->dtype != CLNORM_F32 &&
                       (clnorm__op_rms(call->op) || clnorm__op_add(call->op));
      const size_t per = clnorm__op_backward(call->op)       ? (call->dtype == CLNORM_F32 ? 4 : 2)
                         : call->dtype == CLNORM_F32 || per4 ? 4
                                                             : 8;
      unsigned tpr = pow2_ceil((vectors + per - 1) / per);
      /* NVIDIA, LayerNorm forward in float32 (the fused add's too) of 513 to 1023 float4s a row
       * (2049 to 4095 columns): 128 work-items a row holding 5 to 8 vectors each, not 256 holding
       * 3 or 4. normtune tune's timings on the H200 (2026-11-29, docs/wip/issue22's database,
       * 128/128/4/8 against 256/256/4/4, GB/s): LayerNorm 2560 columns 3805 against 2814 at
       * 16384 rows and 2961 against 2235 at 2048, 3072 columns 3854 against 3217 and 2617
       * against 2214; add_layernorm 2560 1.14x and 1.09x, 3072 1.05x and 1.01x. RMSNorm's one
       * pass gains less and lost at 3072 (0.97x): not for it. */
      if (info->is_nvidia && call->dtype == CLNORM_F32 && !clnorm__op_backward(call->op) &&
          !clnorm__op_rms(call->op) && tpr == 256 && vectors < 256 * per)
        tpr = 128;
      tpr = tpr < 32 ? 32 : tpr;
      tpr = tpr > max_wg ? max_wg : tpr;
      v.tpr = tpr;
      v.wg = tpr < 128 ? 128 : tpr;
      if (v.wg > max_wg)
        v.wg = max_wg;
    }
    /* hold counts vectors of the width the call runs at; the variant states it at `want` */
    const size_t per_item = ((vectors + v.tpr - 1) / v.tpr + (want / vec) - 1) / (want / vec);
    v.hold = 0;
    for (size_t h = 1; h <= 16 && !v.hold; h *= 2)
      if (per_item <= h)
        v.hold = (unsigned)h;
    /* Where kernels run at their compiled size (info->reqd_wg: NVIDIA), a row that 256
     * work-items do not hold takes up to 1024, the fewest that hold it: a forward row of more than
     * 16 vectors (or 64 floats) a work-item, a 16-bit backward row of more than 32 elements, held
     * there as 8 vectors of 4 (H200, exhaustive tunes with every 512- and 1024-wide variant,
     * docs/wip/issue21/wide-2026-11-30: LayerNorm float16 2048 x 65536 1024 x 8 x 8 2,981 GB/s,
     * 1.57x the row re-read by 256; the backward at 4096 x 16384 float16 512 x 4 x 8, LayerNorm
     * 207 us against 309-332 at 256, RMSNorm 150 against 196; 8 x 4 took 250 and 168). Through
     * the dispatcher (ab_builds.sh, 2 rounds, docs/wip/issue21/wide-ab-2026-11-30): the 16-bit
     * backward of 12288-32768 columns 1.13-2.71x, the forward of 20000-65536 columns 16-bit
     * 1.12-1.69x and float32 1.05-1.52x, but 0.92-0.95x for 16-bit LayerNorm at 128 x 65536 (a
     * split call: fewer, wider groups); rows held at 256, and the float32 backward, 1.00x. */
    if (info->reqd_wg && v.tpr == max_wg && v.wg == v.tpr && max_wg < device_wg) {
      const int bwd16 = clnorm__op_backward(call->op) && call->dtype != CLNORM_F32;
      /* a work-item's elements at most: a power of two, so hold (wide_vec's a work-item, rounded
       * up to a power of two) stays within it and within the hold budget */
      const size_t elems = bwd16 ? 32 : hold_budget(call->op);
      const int unheld = bwd16 ? (call->cols + max_wg - 1) / max_wg > elems
                               : !clnorm__op_backward(call->op) &&
                                     (v.hold == 0 || v.hold * v.vec > hold_budget(call->op));
      size_t t = 2 * (size_t)max_wg;
      while (unheld && t < device_wg && (call->cols + t - 1) / t > elems)
        t *= 2;
      const unsigned wide_vec = bwd16 ? 4 : want;
      const unsigned hold = pow2_ceil(((call->cols + t - 1) / t + wide_vec - 1) / wide_vec);
      /* the forward's held row in at most half the registers a work-item has at t (65536 a
       * compute unit): float32 65536 columns at 1024 x 16 x 4 ran at 0.84x the row re-read by
       * 256 (H200, docs/wip/issue21/wide-ab-2026-11-30) */
      const size_t regs = hold * wide_vec * clnorm__dtype_size(call->dtype) / 4;
      /* LayerNorm's 16-bit backward is held by 512 work-items at most: its rows of 16385-32768
       * columns, held by 1024 as 8 vectors of 4, go to the rule for rows not held (below).
       * normtune's timings on the H200 (2026-12-01, docs/wip/issue22's database, 32768 columns):
       * the unheld 256 x 4 against the held 1024 x 4 x 8 at 8, 128 and 16384 rows 18.5 us against
       * 21.9, 37.4 against 93.4 (bfloat16) and 1510 against 2151 (bfloat16; float16 1772 against
       * 1945); its A/Bs at 64-256 rows 2.0-3.3x. Through the dispatcher (H100, 2026-12-07,
       * session50/arms.sh, one round, every output checked; docs/wip/issue21): 128 x 32768
       * 2.48-2.54x, 256 x 24576 3.16-3.18x, 1024 x 20480 1.07-1.18x, 16384 x 32768 1.02-1.26x;
       * 4096 x 65536, which the rule leaves alone, 1.00-1.01x. */
      const int wide = unheld && (call->cols + t - 1) / t <= elems;
      if (wide && bwd16 && call->op == CLNORM_OP_LAYERNORM_BWD && t > 512) {
        v.hold = 0;
      } else if (wide && (bwd16 || regs <= 32768 / t)) {
        v.tpr = v.wg = (unsigned)t;
        v.vec = wide_vec;
        v.hold = hold;
      }
    }
    /* A backward row of more than 32 floats a work-item is not held, only its weight-gradient
     * sums are (cl/backward.cl): there vectors twice as wide ran faster (H200, LayerNorm 4096 x
     * 16384: float32 8 x 8 0.49 of copy against 4 x 16 0.42, bfloat16 16 x 4 0.36 against 8 x 8
     * 0.34; docs/PERFORMANCE.md). Not RMSNorm's in 16 bits: its 16-wide vectors took 175
     * registers (one group of 256 a compute unit) against 124 for 8 x 8 (two), and 8 x 8 ran
     * 1.19x and 1.33x at 4096 and 2048 rows of 16384 float16 columns (H200, an exhaustive tune);
     * an A/B of the heuristic on 6 shapes of 8192-16384 columns: float16 1.21x, bfloat16 1.07x
     * (0.97x at 8192 x 16384), LayerNorm and float32 1.00x (docs/wip/issue21/ab-2026-11-30). */
    if (clnorm__op_backward(call->op) && v.hold > 1 && v.hold * v.vec > 32 && v.vec < 16 &&
        !(clnorm__op_rms(call->op) && call->dtype != CLNORM_F32)) {
      v.vec *= 2;
      v.hold /= 2;
    }
    /* NVIDIA, LayerNorm's backward in 16 bits with a held row of 513 to 8192 columns: vectors of
     * 4, twice as many, in groups of at least 256 work-items. Every variant of the space timed on
     * the H200 (normtune tune --strategy exhaustive, float16, docs/wip/issue21/space-2026-11-30
     * and space2-2026-11-30): 1024 columns 256 x 64 x 4 x 4 85.3 us against the 128 x 64 x 8 x 2
     * this rule replaces 102.6 (128 x 64 x 4 x 4 102.6: the group's width counts there); 4096
     * columns 4 x 4 against 8 x 2 at 256 a row 1.14x; 8192 columns 8 x 4 against 4 x 8 1.06x.
     * Through the dispatcher (ab_builds.sh, 2 rounds, docs/wip/issue21/ab2-2026-11-30): 1024 to
     * 8192 columns float16 0.97-1.31x, bfloat16 1.00-1.32x (16384 x 4096 0.97-1.00x); 512 columns
     * 0.94-1.05x, left out. RMSNorm's gained 3% or less in the space. */
    if (info->is_nvidia && call->op == CLNORM_OP_LAYERNORM_BWD && call->dtype != CLNORM_F32 &&
        v.vec == 8 && v.hold > 0 && v.hold * v.vec <= 32 && call->cols > 512 &&
        call->cols <= 8192) {
      v.vec = 4;
      v.hold *= 2;
      if (v.wg < 256 && 256 <= max_wg)
        v.wg = 256;
    }
    /* NVIDIA, the backward in 16 bits of a row not held (more than 32 elements a work-item at
     * the widest group): vectors of 4, not 8. Every variant timed on the H200 (normtune tune
     * --strategy exhaustive, float16 256 x 65536, docs/wip/issue21/s46-call1 and s47-call1):
     * 256 x 256 x 4 1.29x and 1.36x the 256 x 256 x 8 at 128 and 256 rows for LayerNorm, 1.35x
     * for RMSNorm. Through the dispatcher against the tree before (patch_ab.sh): LayerNorm 64 to
     * 4096 rows of 49152 to 131072 columns 1.17-1.57x, the split 16 x 4194304 1.20-1.23x, both
     * dtypes (3 rounds of the base, 1 of this, docs/wip/issue21/s46-call4); RMSNorm 64 to 1024
     * rows of the same 1.08-1.58x, geometric mean 1.38x, LayerNorm's (then untouched) 1.00x (2
     * rounds, docs/wip/issue21/s47-call4). */
    if (info->is_nvidia && clnorm__op_backward(call->op) && call->dtype != CLNORM_F32 &&
        v.hold == 0 && v.vec == 8)
      v.vec = 4;
    v.stats = v.hold ? CLNORM_STATS_TWOPASS : CLNORM_STATS_WELFORD;
    if (info->is_nvidia && v.wg % 32 == 0)
      v.reduce = CLNORM_REDUCE_NVSHFL;
    else if (info->has_subgroups && v.tpr == v.wg)
      v.reduce = CLNORM_REDUCE_SUBGROUP;
  }
  if (clnorm__op_rms(call->op) || clnorm__op_backward(call->op))
    v.stats = CLNORM_STATS_WELFORD;
  if (v.hold * v.vec > hold_budget(call->op)) {
    v.hold = 0;
    v.stats = CLNORM_STATS_WELFORD;
  }
  if (v.tpr > 1 && v.wg / v.tpr > MAX_ROWS_PER_GROUP)
    v.wg = v.tpr * MAX_ROWS_PER_GROUP;
  *out = v;
}

/* Work-groups of `wg` work-items that one compute unit keeps busy: 2048 work-items, 1 to 8
 * groups. */
size_t clnorm__groups_per_cu(unsigned wg) {
  const size_t per_cu = 2048 / (wg ? wg : 1);
  return per_cu < 1 ? 1 : per_cu > 8 ? 8 : per_cu;
}

/* Work-groups per row (1: no split). Few rows leave most of the device idle when a row is one
 * group's work: split each row into chunks, until rows * splits fills the device or a chunk
 * would give a work-item fewer than 4 vectors. Only variants with one row per group (tpr == wg)
 * split.
 * A split backward call's second kernel goes over the columns in tiles (cl/backward.cl), with no
 * partial rows for the weight gradients. It runs where the tiles are at least twice the groups
 * the whole-row kernel would have (few long rows), and on a CPU wherever each core gets two
 * tiles, with 2 chunks a row at least: there the whole-row kernel's partial rows cost more than
 * the second read of the rows (PoCL 5, 16 cores: 64 x 65536 3.5-7x faster, 256 x 65536
 * 1.4-2.2x, 1024 x 16384 the same; docs/PERFORMANCE.md); on a GPU wherever the row is not
 * held.
 * A GPU's forward call splits only rows of at least GPU_SPLIT_MIN_ROW_BYTES: the second kernel
 * costs more than a shorter row's single group takes (H100, 8 and 128 rows, the heuristic's
 * split against the tuned whole-row variants: float32 8192 and 12288 cols 2.3-2.7x slower, 16384
 * 1.2-1.5x; bfloat16 8192 and 16384 2.2-3.2x, 32768 1.0-1.6x; at 128 KB a row the split was as
 * fast as the best whole-row variant at 8 rows, within 1.1x at 128; docs/TUNING.md). */
#define GPU_SPLIT_MIN_ROW_BYTES ((size_t)128 * 1024)

/* The tile kernels' TILE and ROWL (cl/backward.cl, from WG and VEC alone). */
static size_t bwd_tile(const clnorm_variant *v) { /* TILE */
  const size_t tile = 1024 / ((size_t)v->wg * v->vec);
  return tile < 1 ? 1 : tile > 64 ? 64 : tile;
}

static size_t bwd_row_lanes(const clnorm_variant *v) { /* ROWL */
  return bwd_tile(v) == 1 && v->wg >= 128 ? 4 : 1;
}

/* Whether the local memory of the tile kernels' row lanes (bwd_split's and bwd_strip's lane_s, a
 * vector of floats a work-item of every row lane but the first; none without row lanes) fits the
 * device's. Where it does not, the kernels do not build, and neither path is taken: the whole-row
 * kernel runs, as the failed build's fallback would have. (1024 work-items of 8 floats: 24 KiB;
 * NVIDIA allows 48.) */
static int bwd_lanes_fit(const clnorm_device_info *info, const clnorm_variant *v) {
  const size_t lanes = bwd_row_lanes(v);
  const size_t bytes = lanes > 1 ? (v->wg - v->wg / lanes) * (size_t)v->vec * sizeof(float) : 0;
  return bytes <= info->local_mem;
}

/* Chunks a row, a power of two: doubled while rows * chunks * 2 still fits the device's groups
 * (its compute units times clnorm__groups_per_cu) and a chunk gives each work-item 4 vectors. */
static unsigned fill_chunks(const clnorm_device_info *info, const clnorm_call *call,
                            const clnorm_variant *v) {
  const size_t fill = (size_t)info->compute_units * clnorm__groups_per_cu(v->wg);
  const size_t min_chunk = (size_t)v->wg * v->vec * 4;
  unsigned chunks = 1;
  while (chunks < 1024 && call->rows * chunks * 2 <= fill &&
         call->cols / (2 * (size_t)chunks) >= min_chunk)
    chunks *= 2;
  return chunks;
}

unsigned clnorm__split_count(const clnorm_device_info *info, const clnorm_call *call,
                             const clnorm_variant *v) {
  if (v->tpr != v->wg)
    return 1;
  const int bwd = clnorm__op_backward(call->op);
  const int cpu = (info->type & CL_DEVICE_TYPE_CPU) != 0;
  /* A GPU's whole-row backward kernel without a held row (hold 0) adds each row into its slot's
   * partial rows in memory, a read and a write of two partial rows per row: the split's second
   * read of the rows costs less (H100, LayerNorm 256 x 65536). */
  const int bwd_unheld = bwd && !cpu && v->hold == 0;
  if (bwd && !bwd_lanes_fit(info, v))
    return 1;
  if (bwd && !bwd_unheld &&
      clnorm__bwd_tiles(v, call->cols) < (cpu ? 2 * (size_t)info->compute_units : 2 * call->rows))
    return 1;
  if (!bwd && !cpu && call->cols * clnorm__dtype_size(call->dtype) < GPU_SPLIT_MIN_ROW_BYTES)
    return 1;
  const unsigned splits = fill_chunks(info, call, v);
  return bwd && (cpu || bwd_unheld) && splits < 2 ? 2 : splits;
}

/* The groups of a split backward call's second kernel (bwd_split): one per tile of wg / ROWL *
 * TILE vectors, TILE = 1024 / (wg * vec) within [1, 64] and ROWL 4 where TILE is 1 and wg at
 * least 128, else 1, as cl/backward.cl has them, and one for the columns past the last whole
 * vector. */
size_t clnorm__bwd_tiles(const clnorm_variant *v, size_t cols) {
  const size_t tile = bwd_tile(v), row_lanes = bwd_row_lanes(v);
  const size_t per_tile = (size_t)v->wg / row_lanes * tile;
  const size_t nvec = cols / v->vec;
  return (nvec + per_tile - 1) / per_tile + (nvec * v->vec < cols ? 1 : 0);
}

/* Column strips (cl/strip.cl): the rows' sums, then dx and the weight-gradient partials a strip
 * of columns of a range of rows at a time. Enough strips-of-a-range units to fill the device (its
 * compute units times clnorm__groups_per_cu), the strips being clnorm__bwd_tiles; at most one range
 * a row. Taken before the split rows, which they replace for those calls.
 * Where: info->bwd_strip 1 (CLNORM_BWD_STRIP=1), every backward call of at least
 * CLNORM_BWD_STRIP_MIN_COLS columns; -1 (=0), none; 0 (unset), NVIDIA's backward of more than
 * CLNORM_BWD_STRIP_MIN_COLS columns in at least CLNORM_BWD_STRIP_MIN_ROWS rows. There a work-item's
 * sums stay bounded however long the row, where the whole-row kernel held 16-bit rows of 20480 to
 * 32768 columns at 1024 work-items and spilled (948 bytes at 2048 x 32768 bfloat16, ptxas -v), and
 * the not-held rows added each row into partial rows in memory. H200, the strips against the tree
 * without them, patch_ab.sh, 2 rounds (docs/wip/issue21/s48): 512 to 4096 rows of 20480 to 65536
 * columns, both ops, every dtype, 1.10-3.29x (LayerNorm 16-bit 2.59-3.29x at 20480-32768 columns,
 * 1.18-1.47x at 65536; float32 1.10-2.21x; RMSNorm 16-bit 1.15-1.55x); but 4096 x 16384 0.51-1.19x
 * (held at 512 work-items, 192 bytes spilled), 256 x 65536 0.83-1.02x, 128 x 131072 0.49-0.76x, 64
 * x 32768 0.79-1.54x (few rows: the split rows fill the device better). */
#define CLNORM_BWD_STRIP_MIN_ROWS 512
unsigned clnorm__bwd_strip_ranges(const clnorm_device_info *info, const clnorm_call *call,
                                  const clnorm_variant *v) {
  const int on = info->bwd_strip == 1    ? call->cols >= CLNORM_BWD_STRIP_MIN_COLS
                 : info->bwd_strip == -1 ? 0
                                         : info->is_nvidia && !(info->type & CL_DEVICE_TYPE_CPU) &&
                                               call->cols > CLNORM_BWD_STRIP_MIN_COLS &&
                                               call->rows >= CLNORM_BWD_STRIP_MIN_ROWS;
  if (!on || !clnorm__op_backward(call->op) || v->tpr != v->wg || call->rows == 0 ||
      !bwd_lanes_fit(info, v))
    return 0;
  const size_t fill =
      (size_t)(info->compute_units ? info->compute_units : 1) * clnorm__groups_per_cu(v->wg);
  const size_t strips = clnorm__bwd_tiles(v, call->cols);
  size_t ranges = (fill + strips - 1) / strips;
  ranges = ranges < call->rows ? ranges : call->rows;
  return ranges < 1 ? 1 : ranges > 65536 ? 65536 : (unsigned)ranges;
}

/* Row counts tuned and dispatched as one: few rows leave most of a GPU idle, many fill it. */
unsigned clnorm__row_class(size_t rows) {
  return rows <= 16 ? 0 : rows <= 256 ? 1 : rows <= 4096 ? 2 : 3;
}

/* The least row count of row class c or above (clnorm__row_class is monotonic), 0 when no row
 * count reaches c. */
size_t clnorm__row_class_first(unsigned c) {
  if (clnorm__row_class(SIZE_MAX) < c)
    return 0;
  size_t lo = 1, hi = SIZE_MAX;
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    if (clnorm__row_class(mid) >= c)
      hi = mid;
    else
      lo = mid + 1;
  }
  return lo;
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

int clnorm_variant_format(const clnorm_variant *v, char *buf, size_t size) {
  int need = 0;
  for (int i = 0; i < CLNORM_VARIANT_PARAMS; i++) {
    const clnorm_variant_param *p = &clnorm__variant_params[i];
    const unsigned value = clnorm__variant_param(v, i);
    const size_t at = (size_t)need < size ? (size_t)need : size;
    const char *sep = i ? " " : "";
    need += p->names ? snprintf(buf + at, size - at, "%s%s=%s", sep, p->name,
                                clnorm__name_of(p->names, p->count, (int)value, "?"))
                     : snprintf(buf + at, size - at, "%s%s=%u", sep, p->name, value);
  }
  return need;
}

size_t clnorm_variant_list(const clnorm_ctx *ctx, clnorm_op op, clnorm_dtype dtype,
                           clnorm_variant *out, size_t cap) {
  if (!ctx || (unsigned)op >= CLNORM_OP_COUNT || (unsigned)dtype > CLNORM_BF16)
    return 0;
  return clnorm__variant_list(&ctx->info, op, dtype, out, cap);
}

const char *clnorm_op_name(clnorm_op op) {
  return clnorm__name_of(clnorm__op_names, CLNORM_OP_COUNT, (int)op, "unknown");
}

const char *clnorm_dtype_name(clnorm_dtype dtype) {
  return clnorm__name_of(clnorm__dtype_names, CLNORM__DTYPE_COUNT, (int)dtype, "unknown");
}
