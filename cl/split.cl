/* Split rows, for few long rows: SPLITS work-groups share each row (the host passes `splits`
 * and `chunk`; chunk is a multiple of 16 elements, so every chunk start stays VEC-aligned).
 * One row per group (TPR == WG); RMS selects RMSNorm, ADD the fused residual add.
 *
 * split_stats: the group of unit u = row * splits + s reduces elements [s * chunk, (s + 1) *
 * chunk) of its row to partial statistics in `partial` (4 floats per unit: the exponent k of the
 * chunk's scale, mean and M2 of (x - pivot) * 2^k, and the pivot, for LayerNorm; the sum of
 * squares of x * 2^k and k for RMSNorm). The pivot travels through `partial` because split_norm
 * may overwrite element 0 (in place) before another group of the row reads it. k is 0 but for a
 * chunk whose plain statistics over- or underflow or are large enough that merging them might
 * (CHUNK_BAD, issue 25): such a chunk takes them again, of its values scaled by 2^k from its
 * largest |x| (cl/common.cl), and split_norm merges the chunks at the scale of the largest. A
 * chunk within the bounds is exact as it is, and so is their merge, so the row needs no second
 * look at its values: in place, other groups may already have overwritten them.
 * split_norm: every work-item merges its row's partials in the order s = 0, 1, ... (the same
 * bits on every run); then the group normalizes its chunk. It takes the units in reverse order, so that the
 * chunks split_stats read last are read again while they may still be in the cache.
 * No atomics, no spinning: the host enqueues split_norm after split_stats. */

/* A chunk of `count` values (at least 1) whose statistics (mean of x - pivot, M2; RMSNorm: 0 and
 * the sum of squares) take the scaled path: over- or underflowing, or past bounds under which
 * merging up to 2^10 chunks of up to 2^32 values cannot overflow. The same on every work-item
 * (one chunk per group), so the branch it guards may hold barriers. */
#define CHUNK_BAD(count, mean, m2)                                                                 \
  ((count) > 0 && !((m2) >= VAR_LO * (float)(count) && (m2) <= 0x1p100f && fabs(mean) <= 0x1p40f))

/* The largest |x|'s bits of the chunk's elements [0, count), over the group. */
#define CHUNK_MAX_BITS(out)                                                                        \
  do {                                                                                             \
    uint mb_ = 0;                                                                                  \
    for (uint i = lane; i < nvec; i += TPR)                                                        \
      mb_ = max(mb_, hmax_bits(ABS_BITS(SRCV(i))));                                                \
    for (uint i = nvec * VEC + lane; i < count; i += TPR)                                          \
      mb_ = max(mb_, as_uint(SRC1(i)) & 0x7FFFFFFFu);                                              \
    out = row_max_bits(mb_, scratch);                                                              \
  } while (0)

/* The exponent k of a chunk of zeros, whose statistics are the same at any scale. */
#define K_ZERO 127
/* The slot of a partial that holds the chunk's exponent k. */
#if RMS
#define KSLOT 1
#else
#define KSLOT 0
#endif

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
    int ks = 0;
    if (CHUNK_BAD(count, 0.0f, sq)) {
      uint mb;
      CHUNK_MAX_BITS(mb);
      /* The group meets the sum's barriers whatever mb is, not under a branch on it: that
       * branch made PoCL 3.1's work-group compiler abort the process at WG 2 ("Could not find
       * a dominating alternative variable"; docs/DEVICES.md). */
      const int scaled = mb != 0u && mb < 0x7F800000u;
      ks = mb == 0u ? K_ZERO : scaled ? scale_exp(mb) : 0;
      float q = 0.0f;
      if (scaled) {
        const float sc = pow2i(ks);
#define SPLIT_RARE_SQ(i) squarev(SRCV(i) * sc)
        SUM_UNHELD(q, SPLIT_RARE_SQ);
        for (uint i = nvec * VEC + lane; i < count; i += TPR) {
          const float h = SRC1(i) * sc;
          q += h * h;
        }
      }
      q = row_sum(q, scratch);
      if (scaled)
        sq = q;
    }
    if (lane == 0) {
      partial[4 * u] = sq;
      partial[4 * u + 1] = (float)ks;
    }
#else
    const float pivot = row_pivot(x0, r0);
    /* Welford over blocks, merged by Chan, as layernorm_fwd does (cl/common.cl) */
    ROW_WELFORD(for (uint i = lane; i < nvec; i += TPR), SPLIT_V, count);
    int ks = 0;
    if (CHUNK_BAD(count, st.mean, st.m2)) {
      uint mb;
      CHUNK_MAX_BITS(mb);
      /* the pivot too, which need not be in the chunk: (x - pivot) * 2^k must not overflow */
      mb = max(mb, as_uint(pivot) & 0x7FFFFFFFu);
      /* the sums' barriers met whatever mb is, as in the RMS branch above */
      const int scaled = mb != 0u && mb < 0x7F800000u;
      ks = mb == 0u ? K_ZERO : scaled ? scale_exp(mb) : 0;
      const float sc = scaled ? pow2i(ks) : 1.0f, pv = pivot * sc;
#define SPLIT_RARE_D(i) (SRCV(i) * sc - pv)
#define SPLIT_RARE_DD(i) squarev(SRCV(i) * sc - pv - md)
      float sum = 0.0f;
      if (scaled) {
        SUM_UNHELD(sum, SPLIT_RARE_D);
        for (uint i = nvec * VEC + lane; i < count; i += TPR)
          sum += SRC1(i) * sc - pv;
      }
      const float md = row_sum(sum, scratch) / (float)count;
      float q = 0.0f;
      if (scaled) {
        SUM_UNHELD(q, SPLIT_RARE_DD);
        for (uint i = nvec * VEC + lane; i < count; i += TPR) {
          const float dd = SRC1(i) * sc - pv - md;
          q += dd * dd;
        }
      }
      q = row_sum(q, scratch);
      if (scaled) {
        st.mean = md;
        st.m2 = q;
      }
    }
    if (lane == 0) {
      partial[4 * u] = (float)ks;
      partial[4 * u + 1] = st.mean;
      partial[4 * u + 2] = st.m2;
      partial[4 * u + 3] = pivot;
    }
#endif
  }
}

/* y from the row's value h, as cl/forward.cl's NORMED: LayerNorm's (x - mean) * rstd by halves,
 * so that x - mean may exceed FLT_MAX (issue 25) */
#if RMS
#define NORMED(h) h * rstd
#else
#define NORMED(h) (h * 0.5f - pivot_h - mean_h) * rstd2
#endif

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
    T o = NORMED(h);                                                                               \
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
    /* Every work-item merges the row's partials (the same addresses: one load each for the
     * group), with no barrier: the plain merge and the chunks' exponents in one pass. The row's
     * scale is the smallest exponent of its chunks' (0 for a plain chunk; K_ZERO, no constraint,
     * for a chunk of zeros), that of the chunk of the largest values; where any chunk's is not 0,
     * a second pass merges them at that scale. (The first work-item merging alone and handing the
     * result on through local memory cost 5-13% on an H200 at 256 x 65536 in 16 bits.) */
/* split_norm's merge: chunk p's exponent (a chunk past the row's end has none) into the row's
 * range, then the row's scale from it (kmin K_ZERO: every chunk zeros, no scale) */
#define CHUNK_EXP(p)                                                                               \
  if ((p) * chunk < cols) {                                                                        \
    const int kp = (int)pr[4 * (p) + KSLOT];                                                       \
    kmin = min(kmin, kp);                                                                          \
    kmax = max(kmax, kp);                                                                          \
  }
#define ROW_SCALE                                                                                  \
  kmin = kmin == K_ZERO ? 0 : kmin;                                                                \
  const bool scaled = kmin != 0 || kmax != 0;                                                      \
  const float sc = pow2i(kmin)
    int kmin = K_ZERO, kmax = 0;
#if RMS
    float sq = 0.0f;
    for (uint p = 0; p < splits; p++) {
      sq += pr[4 * p];
      CHUNK_EXP(p);
    }
    ROW_SCALE;
    if (scaled) {
      sq = 0.0f;
      for (uint p = 0; p < splits; p++)
        sq += ldexp(pr[4 * p], 2 * (kmin - (int)pr[4 * p + KSLOT]));
    }
    float rstd = scaled ? rare_rstd(sq / (float)cols, eps, sc) : rsqrt(sq / (float)cols + eps);
    if (!isfinite(sq)) /* a NaN or Inf in the row: all of it is NaN */
      rstd = NAN;
#else
    stats_t st;
    CHAN_ZERO(st);
    for (uint p = 0; p < splits; p++) {
      stats_t o;
      const uint b0 = p * chunk;
      o.n = b0 < cols ? (float)min(chunk, cols - b0) : 0.0f;
      o.mean = pr[4 * p + 1];
      o.m2 = pr[4 * p + 2];
      st = stats_merge(st, o);
      CHUNK_EXP(p);
    }
    ROW_SCALE;
    if (scaled) { /* to the row's scale: down by 2^(kmin - k), exact but where it underflows */
      CHAN_ZERO(st);
      for (uint p = 0; p < splits; p++) {
        stats_t o;
        const uint b0 = p * chunk;
        const int dk = kmin - (int)pr[4 * p + KSLOT];
        o.n = b0 < cols ? (float)min(chunk, cols - b0) : 0.0f;
        o.mean = ldexp(pr[4 * p + 1], dk);
        o.m2 = ldexp(pr[4 * p + 2], 2 * dk);
        st = stats_merge(st, o);
      }
    }
    const float var = st.m2 / (float)cols;
    float mean_h = scaled ? ldexp(st.mean, -kmin - 1) : st.mean * 0.5f;
    float rstd = scaled ? rare_rstd(var, eps, sc) : rsqrt(var + eps);
    if (!isfinite(st.mean) || !isfinite(var)) { /* a NaN or Inf in the row: all of it is NaN */
      rstd = NAN;
      mean_h = NAN;
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
    const float pivot_h = pivot * 0.5f, rstd2 = rstd * 2.0f;
#endif
    if (s == 0 && lane == 0) {
#if !RMS
      if (flags & HAS_MEAN)
        mean_out[row] = (pivot_h + mean_h) * 2.0f;
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
