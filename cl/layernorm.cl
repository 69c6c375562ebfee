/* LayerNorm forward, and the fused residual add (ADD) before it. One row per TPR work-items;
 * RPG rows per work-group. Statistics are taken
 * of d = x - pivot (the row's first element), so that x - mean stays exact for rows far from
 * zero; mean = pivot + mean(d). */
/* The bound on E[d]^2 / var under which the statistics of a row that is not held keep their
 * one-pass variance (HOLD == 0 below). */
#define LN_ONE_PASS_K 2.0f

__kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void
layernorm_fwd(__global const stype *x, const ulong x_off, const ulong x_stride,
              __global const stype *res, const ulong r_off, const ulong r_stride,
              __global stype *sum_out, const ulong s_off, const ulong s_stride,
              __global const stype *gamma, __global const stype *beta, __global stype *y,
              const ulong y_off, const ulong y_stride, __global float *mean_out,
              __global float *rstd_out, const ulong rows, const uint cols, const float eps,
              const uint flags) {
#if TPR > 1
  __local float scratch[3 * WG];
#else
  __local float *scratch = 0;
#endif
#if RB
  float rbuf[RBUF];
#endif
  const uint lid = get_local_id(0);
  const uint lane = lid % TPR;
  /* Block b of RPG rows; a group takes blocks g, g + groups, ...: one block per group when
   * the grid covers the rows, fewer groups than blocks where the host keeps the grid
   * fixed (PoCL before 6: docs/DEVICES.md). The condition is the same for the whole group,
   * so every work-item meets the same barriers. */
  for (ulong b = get_group_id(0); b * RPG < rows; b += get_num_groups(0)) {
    const ulong row = b * RPG + lid / TPR;
    /* Work-items past the last row still take part in the barriers of the reductions. */
    const bool active = row < rows;
    const uint nvec = active ? cols / VEC : 0;
    const uint ncols = active ? cols : 0;
    __global const stype *xr = x + x_off + (active ? row : 0) * x_stride;
#if ADD
    __global const stype *rr = res + r_off + (active ? row : 0) * r_stride;
#endif
    const float pivot = active ? SRC1(0) : 0.0f;
    HELD_DECL;
    WEIGHTS_DECL(gamma, beta, (flags & HAS_GAMMA) != 0, (flags & HAS_BETA) != 0);

#if STATS == 0
    /* Welford over blocks of at most 256 vectors, each block merged into the running statistics
     * (Chan): a work-item may own a million elements, and one long Welford recurrence drifts by
     * about 1e-4 over that many updates. */
    floatv wmean = 0.0f, wm2 = 0.0f, bmean = 0.0f, bm2 = 0.0f;
    float wn = 0.0f, bn = 0.0f;
    FOR_VECS(i, k, nvec) {
      const floatv xv = HELD_GET(i, k);
      const floatv d = xv - pivot;
      bn += 1.0f;
      const floatv delta = d - bmean;
      bmean += delta * (1.0f / bn); /* one division per vector, not one per lane */
      bm2 += delta * (d - bmean);
      if (bn == 256.0f) {
        const float n = wn + bn;
        const floatv dm = bmean - wmean;
        wmean += dm * (bn / n);
        wm2 += bm2 + dm * dm * (wn * bn / n);
        wn = n;
        bn = 0.0f;
        bmean = 0.0f;
        bm2 = 0.0f;
      }
    }
    if (bn > 0.0f) {
      const float n = wn + bn;
      const floatv dm = bmean - wmean;
      wmean += dm * (bn / n);
      wm2 += bm2 + dm * dm * (wn * bn / n);
      wn = n;
    }
    /* Every lane of the vector saw wn values: merge the lanes, then the scalar tail. */
    stats_t st;
    st.n = wn * VEC;
    st.mean = HSUM(wmean) / VEC;
    const floatv dm = wmean - st.mean;
    st.m2 = HSUM(wm2) + wn * HSUM(dm * dm);
    for (uint i = nvec * VEC + lane; i < ncols; i += TPR) {
      const float d = SRC1(i) - pivot;
      st.n += 1.0f;
      const float delta = d - st.mean;
      st.mean += delta / st.n;
      st.m2 += delta * (d - st.mean);
    }
    st = row_stats(st, scratch);
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
    if (!active)
      continue;
    const ulong r = row;
    if (lane == 0) {
      if (flags & HAS_MEAN)
        mean_out[r] = pivot + mean_d;
      if (flags & HAS_RSTD)
        rstd_out[r] = rstd;
    }
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
    const bool has_gamma = (flags & HAS_GAMMA) != 0, has_beta = (flags & HAS_BETA) != 0;
    /* Every element is read (when not held) before it is written, by the same work-item: y and
     * sum_out may be x or the residual. The vectors start `head` elements in (OUT_HEAD); the
     * elements before them and after them go one by one. */
    const uint head = OUT_HEAD(yr, ncols);
    const uint nvo = (ncols - head) / VEC;
    __global const stype *const xo = xr + head;
    __global const stype *const go = gamma + head;
    __global const stype *const bo = beta + head;
    __global stype *const yo = yr + head;
#if ADD
    __global const stype *const ro = rr + head;
    __global stype *const so = sr + head;
#endif
    /* the output loop; HV(i, k): the row's vector i (k: its slot when held) */
#define LN_OUT(HV)                                                                                 \
  FOR_VECS(i, k, nvo) {                                                                            \
    const floatv h = HV(i, k);                                                                     \
    floatv o = (h - pivot - mean_d) * rstd;                                                        \
    if (has_gamma)                                                                                 \
      o *= GAMMA_V(go, i, k);                                                                      \
    if (has_beta)                                                                                  \
      o += BETA_V(bo, i, k);                                                                       \
    ADD_SUM_OUT(i, h);                                                                              \
    PREFETCH_V(xn, i);                                                                             \
    STOREV(yo, i, o);                                                                              \
  }
#define LN_ROWV(i, k) HELD_GET_AT(xo, ro, i, k)
#if RB
#define LN_BUFV(i, k) RB_GETV(rbuf + head, i)
    if (rb)
      LN_OUT(LN_BUFV)
    else
#endif
      LN_OUT(LN_ROWV)
    for (uint j = lane; j < ncols - nvo * VEC; j += TPR) {
      const uint i = j < head ? j : j + nvo * VEC; /* before the vectors, then after them */
      const float h = RB_READ1(rbuf, i);
      float o = (h - pivot - mean_d) * rstd;
      if (has_gamma)
        o *= LOAD1(gamma, i);
      if (has_beta)
        o += LOAD1(beta, i);
#if ADD
      if (has_sum)
        STORE1(sr, i, h);
#endif
      STORE1(yr, i, o);
    }
  }
}
