/* Split rows, for few long rows: SPLITS work-groups share each row (the host passes `splits`
 * and `chunk`; chunk is a multiple of 16 elements, so every chunk start stays VEC-aligned).
 * One row per group (TPR == WG); RMS selects RMSNorm, ADD the fused residual add.
 *
 * split_stats: the group of unit u = row * splits + s reduces elements [s * chunk, (s + 1) *
 * chunk) of its row to partial statistics in `partial` (4 floats per unit: count, mean and M2
 * of x - pivot, and the pivot, for LayerNorm; the sum of squares for RMSNorm). The pivot travels
 * through `partial` because split_norm may overwrite element 0 (in place) before another group
 * of the row reads it.
 * split_norm: every group merges its row's partials in the order s = 0, 1, ... (the same bits
 * on every run), then normalizes its chunk. It takes the units in reverse order, so that the
 * chunks split_stats read last are read again while they may still be in the cache.
 * No atomics, no spinning: the host enqueues split_norm after split_stats. */

/* The chunk's vector i, for ROW_WELFORD (cl/common.cl), whose vectors have no held slot k */
#define SPLIT_V(i, k) SRCV(i)

/* Element 0 of the row, the pivot of the LayerNorm statistics (as layernorm_fwd uses). */
inline float row_pivot(__global const stype *x0, __global const stype *r0) {
#if ADD
  return ROUND1(LOAD1(x0, 0) + LOAD1(r0, 0));
#else
  (void)r0;
  return LOAD1(x0, 0);
#endif
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void
split_stats(__global const stype *x, const ulong x_off, const ulong x_stride,
            __global const stype *res, const ulong r_off, const ulong r_stride,
            __global float *partial, const ulong rows, const uint cols, const uint chunk,
            const uint splits) {
  ROW_SCRATCH(3 * WG);
  const uint lane = get_local_id(0);
  const ulong units = rows * splits;
  for (ulong u = get_group_id(0); u < units; u += get_num_groups(0)) {
    const ulong row = u / splits;
    const uint begin = (uint)(u % splits) * chunk;
    const uint count = begin < cols ? min(chunk, cols - begin) : 0;
    __global const stype *x0 = x + x_off + row * x_stride;
    __global const stype *xr = x0 + begin;
#if ADD
    __global const stype *r0 = res + r_off + row * r_stride;
    __global const stype *rr = r0 + begin;
#else
    __global const stype *r0 = 0;
#endif
    const uint nvec = count / VEC;
#if RMS
    (void)r0;
    /* Blocks of 256 vectors added by Kahan summation, as rmsnorm_fwd does. */
    floatv acc = 0.0f, comp = 0.0f, block = 0.0f;
    uint in_block = 0;
    for (uint i = lane; i < nvec; i += TPR) {
      const floatv h = SRCV(i);
      block += h * h;
      if (++in_block == 256) {
        const floatv yk = block - comp;
        const floatv t = acc + yk;
        comp = (t - acc) - yk;
        acc = t;
        block = 0.0f;
        in_block = 0;
      }
    }
    acc += block - comp;
    float sq = HSUM(acc);
    for (uint i = nvec * VEC + lane; i < count; i += TPR) {
      const float h = SRC1(i);
      sq += h * h;
    }
    sq = row_sum(sq, scratch);
    if (lane == 0)
      partial[4 * u] = sq;
#else
    const float pivot = row_pivot(x0, r0);
    /* Welford over blocks, merged by Chan, as layernorm_fwd does (cl/common.cl) */
    ROW_WELFORD(for (uint i = lane; i < nvec; i += TPR), SPLIT_V, count);
    if (lane == 0) {
      partial[4 * u] = st.n;
      partial[4 * u + 1] = st.mean;
      partial[4 * u + 2] = st.m2;
      partial[4 * u + 3] = pivot;
    }
#endif
  }
}

/* split_norm's output loop over the work-item's elements i = first, first + TPR, ... below end, as
 * T (floatv or float): the row's value SRC(i), gamma and beta by LOAD, y and sum_out by STORE. */
#if ADD
#define SPLIT_SUM_OUT(STORE, i, h)                                                                 \
  if (has_sum)                                                                                     \
    STORE(sr, i, h);
#else
#define SPLIT_SUM_OUT(STORE, i, h)
#endif
#define SPLIT_OUT(T, first, end, SRC, LOAD, STORE)                                                 \
  for (uint i = (first); i < (end); i += TPR) {                                                    \
    const T h = SRC(i);                                                                            \
    T o = (h - pivot - mean_d) * rstd;                                                             \
    if (has_gamma)                                                                                 \
      o *= LOAD(gr, i);                                                                            \
    if (has_beta)                                                                                  \
      o += LOAD(br, i);                                                                            \
    SPLIT_SUM_OUT(STORE, i, h)                                                                     \
    STORE(yr, i, o);                                                                               \
  }

__kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void
split_norm(__global const stype *x, const ulong x_off, const ulong x_stride,
           __global const stype *res, const ulong r_off, const ulong r_stride,
           __global stype *sum_out, const ulong s_off, const ulong s_stride,
           __global const stype *gamma, __global const stype *beta, __global stype *y,
           const ulong y_off, const ulong y_stride, __global float *mean_out,
           __global float *rstd_out, __global const float *partial, const ulong rows,
           const uint cols, const float eps, const uint flags, const uint chunk,
           const uint splits) {
  const uint lane = get_local_id(0);
  const ulong units = rows * splits;
  const bool has_gamma = (flags & HAS_GAMMA) != 0, has_beta = (flags & HAS_BETA) != 0;
  for (ulong v = get_group_id(0); v < units; v += get_num_groups(0)) {
    const ulong u = units - 1 - v;
    const ulong row = u / splits;
    const uint s = (uint)(u % splits);
    const uint begin = s * chunk;
    const uint count = begin < cols ? min(chunk, cols - begin) : 0;
    __global const float *pr = partial + 4 * row * splits;
#if RMS
    float sq = 0.0f;
    for (uint p = 0; p < splits; p++)
      sq += pr[4 * p];
    float rstd = rsqrt(sq / (float)cols + eps);
    if (!isfinite(sq)) /* a NaN or Inf in the row: all of it is NaN */
      rstd = NAN;
    const float pivot = 0.0f, mean_d = 0.0f;
#else
    stats_t st;
    CHAN_ZERO(st);
    for (uint p = 0; p < splits; p++)
      STATS_MERGE_AT(st, pr, 4 * p);
    float mean_d = st.mean;
    const float var = st.m2 / (float)cols;
    float rstd = rsqrt(var + eps);
    if (!isfinite(mean_d) || !isfinite(var)) { /* a NaN or Inf in the row: all of it is NaN */
      rstd = NAN;
      mean_d = NAN;
    }
#endif
    __global const stype *x0 = x + x_off + row * x_stride;
    __global const stype *xr = x0 + begin;
#if ADD
    __global const stype *r0 = res + r_off + row * r_stride;
    __global const stype *rr = r0 + begin;
    __global stype *sr = sum_out + s_off + row * s_stride + begin;
    const bool has_sum = (flags & HAS_SUM) != 0;
#endif
#if !RMS
    const float pivot = pr[3];
#endif
    if (s == 0 && lane == 0) {
#if !RMS
      if (flags & HAS_MEAN)
        mean_out[row] = pivot + mean_d;
#endif
      if (flags & HAS_RSTD)
        rstd_out[row] = rstd;
    }
    __global stype *yr = y + y_off + row * y_stride + begin;
    __global const stype *gr = gamma + begin;
    __global const stype *br = beta + begin;
    /* Every element is read before it is written, by the same work-item: y and sum_out may be
     * x or the residual. */
    const uint nvec = count / VEC;
    SPLIT_OUT(floatv, lane, nvec, SRCV, LOADV, STOREV)
    SPLIT_OUT(float, (nvec * VEC + lane), count, SRC1, LOAD1, STORE1)
  }
}
