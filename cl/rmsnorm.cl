/* RMSNorm forward. One row per TPR work-items; RPG rows per work-group. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void
rmsnorm_fwd(__global const float *x, const ulong x_off, const ulong x_stride,
            __global const float *gamma, __global float *y, const ulong y_off,
            const ulong y_stride, __global float *rstd_out, const ulong rows, const uint cols,
            const float eps, const uint flags) {
#if TPR > 1
  __local float scratch[WG];
#else
  __local float *scratch = 0;
#endif
  const uint lid = get_local_id(0);
  const uint lane = lid % TPR;
  const ulong row = (ulong)get_group_id(0) * RPG + lid / TPR;
  const bool active = row < rows;
  const uint nvec = active ? cols / VEC : 0;
  const uint ncols = active ? cols : 0;
  __global const float *xr = x + x_off + (active ? row : 0) * x_stride;
  HELD_DECL;

  /* Blocked sum with the blocks added by Kahan summation: a work-item may own a million
   * elements (one work-item per row), and one float accumulator would lose about 1e-5 over that
   * many additions. */
  floatv acc = 0.0f, comp = 0.0f, block = 0.0f;
  uint in_block = 0;
  FOR_VECS(i, k, nvec) {
    const floatv xv = LOADV(xr, i);
    HELD_PUT(k, xv);
    block += xv * xv;
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
  for (uint i = nvec * VEC + lane; i < ncols; i += TPR)
    sq += xr[i] * xr[i];
  sq = row_sum(sq, scratch);
  float rstd = rsqrt(sq / (float)cols + eps);
  if (!isfinite(sq)) /* a NaN or Inf in the row: all of it is NaN */
    rstd = NAN;
  if (!active)
    return;
  const ulong r = row;
  if (lane == 0 && (flags & HAS_RSTD))
    rstd_out[r] = rstd;
  __global float *yr = y + y_off + r * y_stride;
  const bool has_gamma = (flags & HAS_GAMMA) != 0;
  FOR_VECS(i, k, nvec) {
    floatv o = HELD_GET(xr, i, k) * rstd;
    if (has_gamma)
      o *= LOADV(gamma, i);
    STOREV(yr, i, o);
  }
  for (uint i = nvec * VEC + lane; i < ncols; i += TPR) {
    float o = xr[i] * rstd;
    if (has_gamma)
      o *= gamma[i];
    yr[i] = o;
  }
}
