/* LayerNorm (RMS == 0) and RMSNorm (RMS == 1) forward, and the fused residual add (ADD) before
 * them. One row per TPR work-items; RPG rows per work-group. LayerNorm's statistics are taken of
 * d = x - pivot (the row's first element), so that x - mean stays exact for rows far from zero;
 * mean = pivot + mean(d). RMSNorm's are the mean square of x. */
/* The bound on E[d]^2 / var under which LayerNorm's statistics of a row that is not held keep
 * their one-pass variance (HOLD == 0 below). */
#define LN_ONE_PASS_K 2.0f

/* TINY (issue 25 point 4): the CPU shape (one work-item a row, not held; float32 and bfloat16,
 * whose values go down to 2^-149) with a sum of squares of d: x for RMSNorm, x - pivot (or the
 * second pass's d - mean_d) for LayerNorm's two-pass statistics. On x86 a multiplication with a
 * subnormal operand and a nonzero product takes a microcode assist of about 100 cycles
 * (docs/DEVICES.md), one a vector for y's h * rstd in a subnormal row. In a tiny row (every
 * |d| < 2^-64) the output loop scales h by 2^64 with integer operations and multiplies it by
 * rstd 2^-64 instead: the same product rounded once, the same bits, without the assist (an
 * output that is itself subnormal still takes one). */
#define TINY (TPR == 1 && HOLD == 0 && DTYPE != 1 && (RMS || STATS != 0))
#if TINY && !SCALE_UP64
#error "TINY needs scale_up64 (cl/common.cl, SCALE_UP64)"
#endif

/* What the two ops' kernels differ by besides their statistics: the name, LayerNorm's beta and
 * mean arguments, its scratch for three floats a work-item (row_stats), and y from the row's
 * value h: (h - mean) * rstd, plus beta, or h * rstd. */
#if RMS
#define FWD_KERNEL rmsnorm_fwd
#define BETA_ARG
#define MEAN_ARG
#define FWD_SCRATCH WG
#define NORMED(h) h * rstd
#define NORMED_TINY(h) scale_up64(h) * rstd_s
#define PLUS_BETA(o, i, k)
#define PLUS_BETA1(o, i)
#else
#define FWD_KERNEL layernorm_fwd
#define BETA_ARG __global const stype *beta,
#define MEAN_ARG __global float *mean_out,
#define FWD_SCRATCH 3 * WG
#define NORMED(h) (h - pivot - mean_d) * rstd
#define NORMED_TINY(h) scale_up64(h - pivot - mean_d) * rstd_s
#define PLUS_BETA(o, i, k)                                                                         \
  if (has_beta)                                                                                    \
    o += BETA_V(bo, i, k);
#define PLUS_BETA1(o, i)                                                                           \
  if (has_beta)                                                                                    \
    o += LOAD1(beta, i);
#endif

#if ADD
#define RARE_ADD_PARAMS __global const stype *rr, __global stype *sr,
#define RARE_ADD_ARGS rr, sum_out + s_off + row * s_stride,
#else
#define RARE_ADD_PARAMS
#define RARE_ADD_ARGS
#endif
#if RMS
#define RARE_LN_PARAMS
#define RARE_LN_ARGS
#else
#define RARE_LN_PARAMS __global const stype *beta, __global float *mean_p,
#define RARE_LN_ARGS beta, mean_out + row,
#endif

inline float square1(float v) { return v * v; }

/* A rare row (RARE_ROW, cl/common.cl: its float32 statistics over- or underflowed), taken whole
 * by one work-item from global memory: the largest |x|, then the statistics of the row scaled by
 * sc = 2^k from it (exact in floating point; each sum by RARE_SUM), then y (and the sum) element
 * by element, each element read before it is written (in place, y may be x). The row's other
 * work-items leave it alone, so nothing is handed between work-items: no barrier, no local
 * memory, and PoCL turns no more of the kernel into work-item loops than before. Scalar: rare
 * data only, and code that every program compiles (PoCL compiled vector forms' programs 36%
 * slower). Not inlined: NVIDIA's compiler gave whole kernels the registers of an inlined rare
 * path (H200, LayerNorm float32 32768 x 1024: 126 inlined, 80 not; docs/DEVICES.md). But inlined
 * in NVIDIA's programs of one work-item a row (RARE_CALL): there the call faulted on the H200
 * (fused adds in 16 bits, rows of every magnitude: CL_OUT_OF_RESOURCES; inlined, the same test
 * passes), and no heuristic of NVIDIA's runs those programs.
 * y = ((x m1 - p1) - c1) m2: with the row scaled (m1 = sc; LayerNorm: p1 the scaled pivot, c1 the
 * scaled mean less it), or, where eps sc^2 overflows or the row has no spread, unscaled with
 * m2 = rsqrt(eps) (the variance is negligible beside eps, or 0). A NaN or an Inf in the row makes
 * all of its outputs NaN, as in the plain path. */
#if PTX && TPR == 1
#define RARE_CALL inline
#else
#define RARE_CALL __attribute__((noinline))
#endif
RARE_CALL void rare_row(__global const stype *xr, RARE_ADD_PARAMS __global stype *yr,
                        __global const stype *gamma, RARE_LN_PARAMS __global float *rstd_p,
                        const uint cols, const float eps, const uint flags) {
  uint mb;
  RARE_MAX_BITS(mb, cols);
  const bool bad = mb >= 0x7F800000u;
  const int k = bad || mb == 0u ? 0 : scale_exp(mb);
  const float sc = pow2i(k);
#if RMS
  const float pivot = 0.0f, pv = 0.0f, md = 0.0f;
#define RARE_DD1(j) square1(SRC1(j) * sc)
#else
  const float pivot = SRC1(0), pv = pivot * sc;
#define RARE_D1(j) (SRC1(j) * sc - pv)
  float sum;
  RARE_SUM(sum, RARE_D1, cols);
  const float md = sum / (float)cols;
#define RARE_DD1(j) square1((SRC1(j) * sc - pv) - md)
#endif
  float sq;
  RARE_SUM(sq, RARE_DD1, cols);
  const float var_s = sq / (float)cols, e2 = eps * sc * sc;
  float m1 = sc, p1 = pv, c1 = md, m2 = rsqrt(var_s + e2), rstd = m2 * sc;
  if (bad) {
    m2 = NAN;
    rstd = NAN;
  } else if (rare_unscaled(var_s, e2)) {
    m1 = 1.0f;
    p1 = pivot;
    c1 = ldexp(md, -k);
    m2 = rsqrt(eps);
    rstd = m2;
  }
  const bool has_gamma = (flags & HAS_GAMMA) != 0;
  for (uint i = 0; i < cols; i++) {
    const float h = SRC1(i);
    float o = ((h * m1 - p1) - c1) * m2;
    if (has_gamma)
      o *= LOAD1(gamma, i);
#if !RMS
    if (flags & HAS_BETA)
      o += LOAD1(beta, i);
#endif
#if ADD
    if (flags & HAS_SUM)
      STORE1(sr, i, h);
#endif
    STORE1(yr, i, o);
  }
  if (flags & HAS_RSTD)
    *rstd_p = rstd;
#if !RMS
  if (flags & HAS_MEAN)
    *mean_p = bad ? NAN : ldexp(pv + md, -k);
#endif
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void
FWD_KERNEL(__global const stype *x, const ulong x_off, const ulong x_stride,
           __global const stype *res, const ulong r_off, const ulong r_stride,
           __global stype *sum_out, const ulong s_off, const ulong s_stride,
           __global const stype *gamma, BETA_ARG __global stype *y, const ulong y_off,
           const ulong y_stride, MEAN_ARG __global float *rstd_out, const ulong rows,
           const uint cols, const float eps, const uint flags) {
  ROW_SCRATCH(FWD_SCRATCH);
#if RB
  float rbuf[RBUF]; /* the row buffer (cl/common.cl) */
#endif
  const uint lid = get_local_id(0);
  const uint lane = lid % TPR;
  for (ulong b = get_group_id(0); b * RPG < rows; b += get_num_groups(0)) {
    ROW_OF_BLOCK(b) /* cl/common.cl: row, active, nvec, ncols, xr (and rr) */
#if RMS
    HELD_DECL;
    WEIGHTS_DECL(gamma, gamma, (flags & HAS_GAMMA) != 0, false);

#if HOLD == 0
#define RMS_SQ(i) squarev(SRCV(i))
    float sq;
#if RB
    const bool rb = ncols <= RBUF;
#define RMS_SQ_RB(i) squarev(RB_PUTV(rbuf, (i), SRCV(i)))
    if (rb)
      SUM_UNHELD(sq, RMS_SQ_RB);
    else
#endif
      SUM_UNHELD(sq, RMS_SQ);
#else
    /* A held row is at most HOLD vectors per work-item: one accumulator loses nothing. */
    floatv acc = 0.0f;
    FOR_VECS(i, k, nvec) {
      const floatv xv = HELD_GET(i, k);
      acc += xv * xv;
    }
    float sq = HSUM(acc);
#endif
    for (uint i = nvec * VEC + lane; i < ncols; i += TPR) {
      const float h = RB_KEEP1(rbuf, i, SRC1(i));
      sq += h * h;
    }
    sq = row_sum(sq, scratch);
    float rstd = rsqrt(sq / (float)cols + eps);
    if (!isfinite(sq)) /* a NaN or Inf in the row: all of it is NaN */
      rstd = NAN;
#else
    const float pivot = active ? SRC1(0) : 0.0f;
    HELD_DECL;
    WEIGHTS_DECL(gamma, beta, (flags & HAS_GAMMA) != 0, (flags & HAS_BETA) != 0);

#if STATS == 0
    /* Welford over blocks, merged by Chan (cl/common.cl) */
    ROW_WELFORD(FOR_VECS(i, k, nvec), HELD_GET, ncols);
    float mean_d = st.mean;
    const float var = st.m2 / (float)cols;
#elif HOLD == 0
    /* A row that is not held (tpr == 1 only: the CPU shape), read again from cache or from the
     * row buffer RB. One pass takes the sums of d = x - pivot and of d * d. var = E[d^2] - E[d]^2
     * carries the rounding of those sums times about 1 + 2 E[d]^2 / var, so it is kept only where
     * E[d]^2 <= LN_ONE_PASS_K var (the pivot within sqrt(2) standard deviations of the mean: most
     * rows). Other rows, and rows whose squares overflow, take a second pass for the sum of
     * (x - pivot - mean_d)^2, exact where x is near pivot, as the output below. On a CPU the
     * pass saved is worth 5-20% (docs/PERFORMANCE.md). */
#if TPR != 1
#error "the statistics of a row that is not held take one work-item per row (tpr == 1)"
#endif
#define LN_D(i) (SRCV(i) - pivot)
#define LN_DD(i) squarev(SRCV(i) - pivot - mean_d)
    float sum, sq;
#if RB
    const bool rb = ncols <= RBUF;
#define LN_D_RB(i) (RB_PUTV(rbuf, (i), SRCV(i)) - pivot)
#define LN_DD_RB(i) squarev(RB_GETV(rbuf, (i)) - pivot - mean_d)
    if (rb)
      SUM2_UNHELD(sum, sq, LN_D_RB);
    else
#endif
      SUM2_UNHELD(sum, sq, LN_D);
    for (uint j = nvec * VEC + lane; j < ncols; j += TPR) {
      const float d = RB_KEEP1(rbuf, j, SRC1(j)) - pivot;
      sum += d;
      sq += d * d;
    }
    float mean_d = sum / (float)cols;
    float var = sq / (float)cols - mean_d * mean_d;
    if (!(isfinite(sq) && mean_d * mean_d <= LN_ONE_PASS_K * var)) {
#if RB
      if (rb)
        SUM_UNHELD(sq, LN_DD_RB);
      else
#endif
        SUM_UNHELD(sq, LN_DD);
      for (uint j = nvec * VEC + lane; j < ncols; j += TPR) {
        const float dd = RB_READ1(rbuf, j) - pivot - mean_d;
        sq += dd * dd;
      }
      var = sq / (float)cols;
    }
#else
    floatv acc = 0.0f;
    FOR_VECS(i, k, nvec) {
      const floatv xv = HELD_GET(i, k);
      acc += xv - pivot;
    }
    float sum = HSUM(acc);
    for (uint i = nvec * VEC + lane; i < ncols; i += TPR)
      sum += SRC1(i) - pivot;
    float mean_d = row_sum(sum, scratch) / (float)cols;
    floatv acc2 = 0.0f;
    FOR_VECS(i, k, nvec) {
      const floatv dd = HELD_GET(i, k) - pivot - mean_d;
      acc2 += dd * dd;
    }
    float sq = HSUM(acc2);
    for (uint i = nvec * VEC + lane; i < ncols; i += TPR) {
      const float dd = SRC1(i) - pivot - mean_d;
      sq += dd * dd;
    }
    const float var = row_sum(sq, scratch) / (float)cols;
#endif

    float rstd = rsqrt(var + eps);
    if (!isfinite(mean_d) || !isfinite(var)) { /* a NaN or Inf in the row: all of it is NaN */
      rstd = NAN;
      mean_d = NAN;
    }
#endif
    /* Rare rows (issue 25): their plain statistics over- or underflowed, or the row holds a NaN
     * or an Inf. Its first work-item takes it whole (rare_row); its others skip it. */
#if RMS
    const bool rare = active && RARE_ROW(sq / (float)cols, eps);
#else
    const bool rare = active && (RARE_ROW(var, eps) || !isfinite(mean_d));
#endif
#if TINY
    /* A square of 2^-64 or more is at least 2^-128, and so is any sum with it. A tiny row with
     * eps below 2^-100 is rare (above); rstd_s = rstd 2^-64 is exact for eps < 2^64. */
    const bool tiny = sq < 0x1p-128f && eps < 0x1p64f;
    const float rstd_s = rstd * 0x1p-64f;
#endif
    if (!active)
      continue;
    if (!rare) {
      const ulong r = row;
#if RMS
      if (lane == 0 && (flags & HAS_RSTD))
        rstd_out[r] = rstd;
#else
      if (lane == 0) {
        if (flags & HAS_MEAN)
          mean_out[r] = pivot + mean_d;
        if (flags & HAS_RSTD)
          rstd_out[r] = rstd;
      }
#endif
      __global stype *yr = y + y_off + r * y_stride;
      /* the row this work-item takes next (PoCL runs a group's work-items in order) */
      __global const stype *xn = NEXT_ROW(xr, x_stride, r + 1 < rows, cols);
#if ADD
      __global const stype *rn = NEXT_ROW(rr, r_stride, r + 1 < rows, cols);
#endif
#if ADD
      __global stype *sr = sum_out + s_off + r * s_stride;
      const bool has_sum = (flags & HAS_SUM) != 0;
#endif
#if RMS
      const bool has_gamma = (flags & HAS_GAMMA) != 0;
#else
      const bool has_gamma = (flags & HAS_GAMMA) != 0, has_beta = (flags & HAS_BETA) != 0;
#endif
      /* Every element is read (when not held) before it is written, by the same work-item: y and
       * sum_out may be x or the residual. The vectors start `head` elements in (OUT_HEAD); the
       * elements before them and after them go one by one. */
      const uint head = OUT_HEAD(yr, ncols);
      const uint nvo = (ncols - head) / VEC;
      __global const stype *const xo = xr + head;
      __global const stype *const go = gamma + head;
#if !RMS
      __global const stype *const bo = beta + head;
#endif
      __global stype *const yo = yr + head;
#if ADD
      __global const stype *const ro = rr + head;
      __global stype *const so = sr + head;
#endif
      /* the output loop; HV(i, k): the row's vector i (k: its slot when held) */
#define FWD_OUT2(HV, NORM)                                                                         \
  FOR_VECS(i, k, nvo) {                                                                            \
    const floatv h = HV(i, k);                                                                     \
    floatv o = NORM(h);                                                                            \
    if (has_gamma)                                                                                 \
      o *= GAMMA_V(go, i, k);                                                                      \
    PLUS_BETA(o, i, k)                                                                             \
    ADD_SUM_OUT(i, h);                                                                             \
    PREFETCH_V(xn, i);                                                                             \
    STOREV(yo, i, o);                                                                              \
  }
#define FWD_OUT(HV) FWD_OUT2(HV, NORMED)
#define FWD_ROWV(i, k) HELD_GET_AT(xo, ro, i, k)
#if TINY
      if (tiny)
        FWD_OUT2(FWD_ROWV, NORMED_TINY)
      else
#endif
#if RB
#define FWD_BUFV(i, k) RB_GETV(rbuf + head, i)
      if (rb)
        FWD_OUT(FWD_BUFV)
      else
#endif
        FWD_OUT(FWD_ROWV)
      for (uint j = lane; j < ncols - nvo * VEC; j += TPR) {
        const uint i = j < head ? j : j + nvo * VEC; /* before the vectors, then after them */
        const float h = RB_READ1(rbuf, i);
        float o = NORMED(h);
        if (has_gamma)
          o *= LOAD1(gamma, i);
        PLUS_BETA1(o, i)
#if ADD
        if (has_sum)
          STORE1(sr, i, h);
#endif
        STORE1(yr, i, o);
      }
    }
    /* after the output, where the held row is dead: NVIDIA's compiler kept it live across the
     * call where it came before (H200, LayerNorm float32 4096 x 4096: 0.80x the speed) */
    if (rare && lane == 0)
      rare_row(xr, RARE_ADD_ARGS y + y_off + row * y_stride, gamma, RARE_LN_ARGS rstd_out + row,
               cols, eps, flags);
  }
}
