/* RMSNorm forward, and the fused residual add (ADD) before it. One row per TPR work-items;
 * RPG rows per work-group. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void
rmsnorm_fwd(__global const stype *x, const ulong x_off, const ulong x_stride,
            __global const stype *res, const ulong r_off, const ulong r_stride,
            __global stype *sum_out, const ulong s_off, const ulong s_stride,
            __global const stype *gamma, __global stype *y, const ulong y_off, const ulong y_stride,
            __global float *rstd_out, const ulong rows, const uint cols, const float eps,
            const uint flags) {
#if TPR > 1
  __local float scratch[WG];
#else
  __local float *scratch = 0;
#endif
#if RB
  float rbuf[RBUF]; /* the row buffer (cl/common.cl) */
#endif
  const uint lid = get_local_id(0);
  const uint lane = lid % TPR;
  /* Block b of RPG rows; a group takes blocks g, g + groups, ...: one block per group when
   * the grid covers the rows, fewer groups than blocks where the host keeps the grid
   * fixed (PoCL before 6: docs/DEVICES.md). The condition is the same for the whole group,
   * so every work-item meets the same barriers. */
  for (ulong b = get_group_id(0); b * RPG < rows; b += get_num_groups(0)) {
    const ulong row = b * RPG + lid / TPR;
    const bool active = row < rows;
    const uint nvec = active ? cols / VEC : 0;
    const uint ncols = active ? cols : 0;
    __global const stype *xr = x + x_off + (active ? row : 0) * x_stride;
#if ADD
    __global const stype *rr = res + r_off + (active ? row : 0) * r_stride;
#endif
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
    if (!active)
      continue;
    const ulong r = row;
    if (lane == 0 && (flags & HAS_RSTD))
      rstd_out[r] = rstd;
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
    const bool has_gamma = (flags & HAS_GAMMA) != 0;
    /* Every element is read (when not held) before it is written, by the same work-item: y and
     * sum_out may be x or the residual. The vectors start `head` elements in (OUT_HEAD); the
     * elements before them and after them go one by one. */
    const uint head = OUT_HEAD(yr, ncols);
    const uint nvo = (ncols - head) / VEC;
    __global const stype *const xo = xr + head;
    __global const stype *const go = gamma + head;
    __global stype *const yo = yr + head;
#if ADD
    __global const stype *const ro = rr + head;
    __global stype *const so = sr + head;
#endif
    /* the output loop; HV(i, k): the row's vector i (k: its slot when held) */
#define RMS_OUT(HV)                                                                                \
  FOR_VECS(i, k, nvo) {                                                                            \
    const floatv h = HV(i, k);                                                                     \
    floatv o = h * rstd;                                                                           \
    if (has_gamma)                                                                                 \
      o *= GAMMA_V(go, i, k);                                                                      \
    ADD_SUM_OUT(i, h);                                                                             \
    PREFETCH_V(xn, i);                                                                             \
    STOREV(yo, i, o);                                                                              \
  }
#define RMS_ROWV(i, k) HELD_GET_AT(xo, ro, i, k)
#if RB
#define RMS_BUFV(i, k) RB_GETV(rbuf + head, i)
    if (rb)
      RMS_OUT(RMS_BUFV)
    else
#endif
      RMS_OUT(RMS_ROWV)
    for (uint j = lane; j < ncols - nvo * VEC; j += TPR) {
      const uint i = j < head ? j : j + nvo * VEC; /* before the vectors, then after them */
      const float h = RB_READ1(rbuf, i);
      float o = h * rstd;
      if (has_gamma)
        o *= LOAD1(gamma, i);
#if ADD
      if (has_sum)
        STORE1(sr, i, h);
#endif
      STORE1(yr, i, o);
    }
  }
}
