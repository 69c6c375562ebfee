/* Backward passes of LayerNorm (RMS == 0) and RMSNorm (RMS == 1).
 *
 * norm_bwd: dx per row, with the row's two sums taken like the forward's statistics (TPR
 * work-items per row, RPG rows per group). The grid is persistent: group g takes the blocks of
 * RPG rows g, g + groups, ..., so every row slot of every group always owns the same columns.
 * Each slot sums dy * xhat (dgamma) and dy (dbeta) over its rows for its columns, in private
 * memory when the row is held (HOLD > 0), else in its own row of `partial` (read-modify-write:
 * no other work-item touches it). bwd_reduce then adds the groups * RPG partial rows of each
 * column in a fixed order. No atomics: the same inputs give the same bits. */
/* The arguments every backward kernel begins with, in the order src/launch.c sets them: dy, x,
 * gamma, the forward's mean and rstd, dx. */
#define BWD_ROW_ARGS                                                                               \
  __global const stype *dy, const ulong dy_off, const ulong dy_stride, __global const stype *x,    \
      const ulong x_off, const ulong x_stride, __global const stype *gamma,                        \
      __global const float *mean_in, __global const float *rstd_in, __global stype *dx,            \
      const ulong dx_off, const ulong dx_stride

/* BWD_SUMS(FOR, DYV, GV, XV, dyp, gp, xp, end): the work-item's part of a row's two sums, s1 =
 * sum(g * xhat) and s2 = sum(g) with g = gamma * dy (declares float s1, s2): FOR is the loop over
 * its vectors, in which DYV(i, k), GV(i, k) and XV(i, k) are vector i of dy, gamma and x (k: the
 * slot when held); then the elements from nvec * VEC to `end` of dyp, gp and xp, one per
 * work-item in turn. */
#define BWD_SUMS(FOR, DYV, GV, XV, dyp, gp, xp, end)                                               \
  BWD_SUMS_AS(FOR, DYV, GV, XV, dyp, gp, xp, end, XHAT, XHAT, float)
/* BWD_SUMS_AS(..., XH, XH1, DECL): the same with xhat of a vector as XH and of an element as XH1;
 * DECL float declares s1 and s2, DECL empty assigns them */
#define BWD_SUMS_AS(FOR, DYV, GV, XV, dyp, gp, xp, end, XH, XH1, DECL)                             \
  floatv a1 = 0.0f, a2 = 0.0f;                                                                     \
  FOR {                                                                                            \
    const floatv dv = DYV(i, k);                                                                   \
    const floatv g = has_gamma ? dv * GV(i, k) : dv;                                               \
    a1 += g * XH(XV(i, k));                                                                        \
    a2 += g;                                                                                       \
  }                                                                                                \
  DECL s1 = HSUM(a1), s2 = HSUM(a2);                                                               \
  for (uint i = nvec * VEC + lane; i < end; i += TPR) {                                            \
    const float dv = LOAD1(dyp, i);                                                                \
    const float g = has_gamma ? dv * LOAD1(gp, i) : dv;                                            \
    s1 += g * XH1(LOAD1(xp, i));                                                                   \
    s2 += g;                                                                                       \
  }

/* The forward's mean of row r: RMSNorm's rows have none (0) */
#if RMS
#define ROW_MEAN(r) 0.0f
#else
#define ROW_MEAN(r) mean_in[r]
#endif

/* xhat of the value xv of a row whose `mean` and `rstd` are in scope. LayerNorm's x - mean
 * overflows where |x - mean| > FLT_MAX (a finite row of values near 2^127, issue 25); half of
 * it never does. Halving and doubling are exact for values of at least 2^-125, so (x / 2 -
 * mean / 2) * (2 rstd) is (x - mean) * rstd to the bit for every row but those of smaller values
 * (a rounding at 2^-150 beside their spread), and no row needs a test of its own (a per-row
 * scale cost NVIDIA 5%: docs/DEVICES.md). Not covered: rstd > FLT_MAX / 2, a row whose spread is
 * below 2^-127 (eps 0 only). RMSNorm's mean is 0, which the compiler drops. */
#if RMS
#define XHAT(xv) (((xv) - mean) * rstd)
#else
#define XHAT(xv) (((xv) * 0.5f - mean * 0.5f) * (rstd * 2.0f))
#endif

/* BWD_TINY (issue 25 point 4): the CPU shapes (float32 and bfloat16, whose values go down to
 * 2^-149): norm_bwd with one work-item a row, not held, and the split kernels with one work-item a
 * group (PoCL's backward of long rows, clnorm__split_count: 512 x 4096 on 2 cores), as TINY in
 * cl/forward.cl. On x86 a multiplication or FMA with a subnormal operand takes a microcode assist
 * of about 100 cycles (docs/DEVICES.md): xhat of a subnormal x, and the sums' and dgamma's FMAs
 * with it. A row (a split chunk, a row's part of a tile) whose first element is below 2^-64 is
 * scanned with integer operations; it is tiny where every |x| is below 2^-64, |mean| too, every
 * |dy| below 2^64, and rstd below 2^32. A tiny row's first pass takes xhat 2^64 = scale_up64(x -
 * mean) * rstd, x scaled by integer operations (x - mean of subnormals is exact and takes no
 * assist), so s1 comes out 2^64 times the row's; a sum that is not finite (a large gamma) takes the
 * plain pass again (bwd_sums stores s1 at the row's scale). Where then every |xhat * c1| is below
 * 2^-150 (bounded by the scan's maximum; in the rows measured below 2^-200), dx = rstd (g - c2 -
 * xhat c1) is rstd (g - c2), the same bits (but the sign of a zero), and dgamma's partial adds
 * fma(dy * xhat 2^64, 2^-64, partial): the one rounding of the FMA, where the plain product took
 * xhat rounded first. Otherwise the output loop is the plain one. */
#define BWD_TINY (DTYPE != 1 && (SPLIT ? WG == 1 : TPR == 1 && HOLD == 0))
#if BWD_TINY && !SCALE_UP64
#error "BWD_TINY needs scale_up64 (cl/common.cl, SCALE_UP64)"
#endif
#if BWD_TINY
/* 2^64 xhat of a tiny row's vector and element */
#define XHAT_S(xv) (scale_up64((xv) - mean) * rstd)
#define XHAT_S1(xv) (scale_up64_1((xv) - mean) * rstd)
/* the bits of 2^-64 and 2^64 */
#define TINY_BITS 0x1F800000u
#define HUGE_BITS 0x5F800000u
/* TINY_SCAN(FOR, xp, dyp, end, tiny, xmax): over the vectors i of FOR and the elements from nvec *
 * VEC to `end` of xp and dyp, tiny = every |x| below 2^-64 and every |dy| below 2^64, and xmax =
 * the sum of the lanes' largest |x| (at least the largest), with integer operations only */
#define TINY_SCAN(FOR, xp, dyp, end, tiny, xmax)                                                   \
  do {                                                                                             \
    uintv mx_ = 0u, md_ = 0u;                                                                      \
    FOR {                                                                                          \
      mx_ = max(mx_, CAT(as_uint, VSUFFIX)(LOADV(xp, i)) & 0x7FFFFFFFu);                           \
      md_ = max(md_, CAT(as_uint, VSUFFIX)(LOADV(dyp, i)) & 0x7FFFFFFFu);                          \
    }                                                                                              \
    uint mx1_ = 0u, md1_ = 0u;                                                                     \
    for (uint i = nvec * VEC; i < (end); i++) {                                                    \
      mx1_ = max(mx1_, as_uint(LOAD1(xp, i)) & 0x7FFFFFFFu);                                       \
      md1_ = max(md1_, as_uint(LOAD1(dyp, i)) & 0x7FFFFFFFu);                                      \
    }                                                                                              \
    const uintv over_ =                                                                            \
        select((uintv)0u, (uintv)1u, (mx_ >= (uintv)TINY_BITS) | (md_ >= (uintv)HUGE_BITS));       \
    tiny = HSUM(CAT(convert_float, VSUFFIX)(over_)) == 0.0f && mx1_ < TINY_BITS &&                 \
           md1_ < HUGE_BITS;                                                                       \
    xmax = HSUM(CAT(as_float, VSUFFIX)(mx_)) + as_float(mx1_);                                     \
  } while (0)
#endif

/* SPLIT == 1 builds the split-row kernels instead (bwd_sums, bwd_split, at the end). */
#if !SPLIT
#if defined(BWD_PF) && BWD_PF && PTX
/* BWD_PF (NVIDIA, CLNORM_BWD_PREFETCH=1; off by default): a persistent group asks the L2 cache for
 * the rows its slots take next (BWD_RI * parts rows on) as soon as it has issued the loads of the
 * current rows, so that their loads wait for the L2, not for memory, while this iteration's sums,
 * reductions and stores run. One prefetch per 128-byte line: the vectors at a line's start. On
 * the H200 it won on some shapes and lost on others (docs/PERFORMANCE.md, "Tried and not kept"). */
#define BWD_PF_EVERY (VEC * sizeof(stype) >= 128 ? 1 : 128 / (VEC * sizeof(stype)))
#define BWD_PF_L2(p) asm volatile("prefetch.global.L2 [%0];" ::"l"(p))
/* the work-item's vectors of x and dy of row nr, when it is one of the call's */
#define BWD_PF_ROW(nr)                                                                             \
  do {                                                                                             \
    const ulong pf_row = (nr);                                                                     \
    if (pf_row < rows) {                                                                           \
      __global const stype *pf_x = x + x_off + pf_row * x_stride;                                  \
      __global const stype *pf_d = dy + dy_off + pf_row * dy_stride;                               \
      FOR_VECS(i, k, nvec_all) {                                                                   \
        if (i % BWD_PF_EVERY == 0) {                                                               \
          BWD_PF_L2(pf_x + (size_t)i * VEC);                                                       \
          BWD_PF_L2(pf_d + (size_t)i * VEC);                                                       \
        }                                                                                          \
      }                                                                                            \
    }                                                                                              \
  } while (0)
#else
#undef BWD_PF
#define BWD_PF 0
#endif
/* With HOLD > 0 the slot's dgamma and dbeta sums of its columns stay in registers (HOLD vectors
 * each); the row itself (x, dy, gamma) is held too where that adds at most 32 floats a work-item
 * (BWD_HELD), else read again from the cache for the output (the sums and the row together would
 * spill). */
#define BWD_HELD (HOLD > 0 && HOLD * VEC <= 32)
/* BWD_LACC (NVIDIA, PTX): LayerNorm's 16-bit held rows, kept as 16-bit pairs (RAW16: PACKR), of
 * more than 128 work-items keep the slot's dgamma and dbeta sums and its columns of gamma in local
 * memory, each work-item its own vectors (no barrier: no other work-item reads them; 40 KiB a
 * group at most), not in registers, so that two rows at a time (BWD_RI) still let 2 groups of 256
 * into a compute unit, as the persistent grid assumes (src/launch.c). In registers the sums are 2
 * floats a column and the held x and dy of a row 1 register for 2 columns: one row at a time, a
 * row of 4096 columns took 122 registers and its 512 work-items a compute unit had half the bytes
 * in flight of a float32 row's; two rows at a time took 162 (one group; H100, 4096 x 4096 0.89x),
 * where RMSNorm (no dbeta sums) took two at 120, and LayerNorm ran 1.3-1.4x RMSNorm's time (H200,
 * 16-bit, 4096 x 4096 and 16384 x 4096; float32 1.0-1.1x: docs/PERFORMANCE.md). */
#if PTX && defined(PACKR) && !RMS && WG > 128 && VEC <= 8 && BWD_HELD && HOLD * VEC * WG <= 4096
#define BWD_LACC 1
#else
#define BWD_LACC 0
#endif
#if BWD_HELD && HOLD * VEC * (DTYPE == 0 ? 4 : 2) <= 32 && (RMS || WG <= 128 || BWD_LACC)
#define BWD_RI 2
#else
#define BWD_RI 1
#endif
#if BWD_LACC
/* The sums in planes of float4 (of floatv below 4 lanes): plane j of the work-item's vector k at
 * (k * LACC_Q + j) * WG + lid, a warp's accesses to one plane contiguous. LACC_GET(a, k): vector
 * k; LACC_ADD(a, k, v): vector k += v; LACC_ZERO(a, k). Vectors of 16 stay in the registers: in
 * four planes, PoCL 3.1 corrupted its heap running them (forced on there for the test), which
 * Oclgrind ran clean. */
#if VEC == 8
#define LACC_Q 2
typedef float4 lacc_t;
#else
#define LACC_Q 1
typedef floatv lacc_t;
#endif
#define LACC_AT(a, k, j) (a)[((k) * LACC_Q + (j)) * WG + lid]
#if VEC == 8
#define LACC_GET(a, k) ((float8)(LACC_AT(a, k, 0), LACC_AT(a, k, 1)))
#define LACC_ADD(a, k, v) (LACC_AT(a, k, 0) += (v).lo, LACC_AT(a, k, 1) += (v).hi)
#else
#define LACC_GET(a, k) LACC_AT(a, k, 0)
#define LACC_ADD(a, k, v) (LACC_AT(a, k, 0) += (v))
#endif
#define LACC_ZERO(a, k)                                                                            \
  do {                                                                                             \
    for (uint j_ = 0; j_ < LACC_Q; j_++)                                                           \
      LACC_AT(a, k, j_) = (lacc_t)(0.0f);                                                          \
  } while (0)
#endif
#if VEC == 1
#define PLOAD(p, i) ((p)[(i)])
#define PSTORE(p, i, v) ((p)[(i)] = (v))
#else /* partial rows start at any float: unaligned vector access */
#define PLOAD(p, i) CAT(vload, VEC)((i), (p))
#define PSTORE(p, i, v) CAT(vstore, VEC)((v), (i), (p))
#endif

__kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void
norm_bwd(BWD_ROW_ARGS, __global float *partial, const ulong rows, const uint cols,
         const uint flags, const uint groups) {
  ROW_SCRATCH(2 * WG);
#if BWD_LACC
  __local rawv lgam[HOLD * WG];
  __local lacc_t lacc_g[HOLD * LACC_Q * WG], lacc_b[HOLD * LACC_Q * WG];
#endif
  /* `groups` groups take part; the grid may hold more (PoCL before 6 gets a fixed grid:
   * docs/DEVICES.md). The test is the same for the whole group, before any barrier. */
  if (get_group_id(0) >= groups)
    return;
  const uint lid = get_local_id(0);
  const uint lane = lid % TPR;
  const uint slot = lid / TPR;
  const ulong blocks = (rows + RPG - 1) / RPG;
  const bool has_gamma = (flags & HAS_GAMMA) != 0;
  const bool want_w = (flags & (HAS_DGAMMA | HAS_DBETA)) != 0;
  /* RMSNorm has no dbeta: its partial rows are neither written nor read */
  const bool want_b = !RMS && (flags & HAS_DBETA) != 0;
  const uint nvec_all = cols / VEC;
  /* This slot's partial rows: dgamma's, then dbeta's groups * RPG rows further on. */
  const ulong parts = (ulong)groups * RPG;
  __global float *pg = partial + ((ulong)get_group_id(0) * RPG + slot) * cols;
  __global float *pb = pg + parts * cols;
#if BWD_LACC
  /* the slot's columns of gamma, the same for every row of the slot: loaded once, kept as loaded */
  for (uint k = 0, i = lane; k < HOLD; k++, i += TPR)
    lgam[k * WG + lid] = has_gamma && i < nvec_all ? LOADR(gamma, i) : (rawv)(0);
  for (uint k = 0; k < HOLD; k++) {
    LACC_ZERO(lacc_g, k);
    LACC_ZERO(lacc_b, k);
  }
#elif HOLD > 0
  floatv acc_g[HOLD], acc_b[HOLD];
  for (uint k = 0; k < HOLD; k++) {
    acc_g[k] = 0.0f;
    acc_b[k] = 0.0f;
  }
#else
  if (want_w)
    FOR_VECS(i, k, nvec_all) {
      PSTORE(pg, i, (floatv)0.0f);
      if (want_b)
        PSTORE(pb, i, (floatv)0.0f);
    }
#endif
  if (want_w)
    for (uint i = nvec_all * VEC + lane; i < cols; i += TPR) {
      pg[i] = 0.0f;
      if (want_b)
        pb[i] = 0.0f;
    }

  /* BWD_RI rows of the slot at a time (blocks b, b + groups, ...: the same order of the sums as
   * one at a time), every load of them issued before any is used: 2 with a held 16-bit row of at
   * most 32 bytes a work-item (a work-item otherwise waits a memory latency per row and moves
   * half the bytes of a float row in it), where the registers still let 2 groups in: RMSNorm, or
   * at most 128 work-items (H100: LayerNorm bfloat16 65536 x 512 1.30x, 32768 x 1024 1.21x,
   * RMSNorm 4096 x 4096 1.07x; LayerNorm with 256 work-items took 162 registers against 122 and
   * 4096 x 4096 ran 0.89x), and on NVIDIA LayerNorm's 16-bit rows of 256 work-items with the
   * sums out of the registers (BWD_LACC). */
  for (ulong b = get_group_id(0); b < blocks; b += BWD_RI * (ulong)groups) {
    bool act[BWD_RI];
    ulong rq[BWD_RI];
    float mean_q[BWD_RI], rstd_q[BWD_RI];
#if BWD_LACC /* arrays indexed by a loop left rolled live on the stack (docs/DEVICES.md) */
#pragma unroll
#endif
    for (uint q = 0; q < BWD_RI; q++) {
      const ulong row = (b + q * (ulong)groups) * RPG + slot;
      /* Work-items past the last row still take part in the barriers of the reductions. */
      act[q] = row < rows;
      rq[q] = act[q] ? row : 0;
#if RMS
      mean_q[q] = 0.0f;
#else
      mean_q[q] = act[q] ? mean_in[rq[q]] : 0.0f;
#endif
      rstd_q[q] = act[q] ? rstd_in[rq[q]] : 0.0f;
    }
#if BWD_HELD
    /* The work-item's vectors of x, dy and gamma, every load issued before any is used (as the
     * forward's HELD_DECL: NVIDIA's compiler otherwise waits for each behind its own branch), and
     * kept as loaded (16-bit pairs under RAW16: half the registers of floats). */
#if BWD_LACC
    rawv hx[BWD_RI][HOLD], hd[BWD_RI][HOLD];
#else
    rawv hx[BWD_RI][HOLD], hd[BWD_RI][HOLD], hg[HOLD];
#endif
#if BWD_LACC
#pragma unroll
#endif
    for (uint q = 0; q < BWD_RI; q++) {
      const uint nv = act[q] ? nvec_all : 0;
      __global const stype *xr = x + x_off + rq[q] * x_stride;
      __global const stype *dyr = dy + dy_off + rq[q] * dy_stride;
      for (uint k = 0, i = lane; k < HOLD; k++, i += TPR) {
        hx[q][k] = i < nv ? LOADR(xr, i) : (rawv)(0);
        hd[q][k] = i < nv ? LOADR(dyr, i) : (rawv)(0);
      }
    }
#if BWD_LACC
#define BWD_G(i, k) UNRAW(lgam[(k) * WG + lid])
#else
    for (uint k = 0, i = lane; k < HOLD; k++, i += TPR)
      hg[k] = has_gamma && i < nvec_all ? LOADR(gamma, i) : (rawv)(0);
#define BWD_G(i, k) UNRAW(hg[(k)])
#endif
#define BWD_X(q, i, k) UNRAW(hx[(q)][(k)])
#define BWD_DY(q, i, k) UNRAW(hd[(q)][(k)])
#else
#define BWD_X(q, i, k) LOADV(xr, (i))
#define BWD_DY(q, i, k) LOADV(dyr, (i))
#define BWD_G(i, k) LOADV(gamma, (i))
#endif
#if BWD_PF
    for (uint q = 0; q < BWD_RI; q++)
      BWD_PF_ROW(rq[q] + BWD_RI * parts);
#endif
/* row q's vectors of dy and x, for BWD_SUMS */
#define BWD_DYQ(i, k) BWD_DY(q, i, k)
#define BWD_XQ(i, k) BWD_X(q, i, k)
    float c1q[BWD_RI], c2q[BWD_RI];
#if BWD_TINY
    bool negq[BWD_RI];
#endif
#if BWD_LACC
#pragma unroll
#endif
    for (uint q = 0; q < BWD_RI; q++) {
      const uint nvec = act[q] ? nvec_all : 0;
      const uint ncols = act[q] ? cols : 0;
      const float mean = mean_q[q], rstd = rstd_q[q];
      __global const stype *xr = x + x_off + rq[q] * x_stride;
      __global const stype *dyr = dy + dy_off + rq[q] * dy_stride;
      /* s1 = sum(g * xhat), s2 = sum(g) with g = gamma * dy (BWD_SUMS ends in a block: no
       * semicolon) */
#if BWD_TINY
      /* a tiny row (above): the scan's largest |x| (a bound: the sum of its lanes' maxima) */
      bool tiny = false;
      float xmax = 0.0f;
      if (nvec > 0 && (as_uint(LOAD1(xr, 0)) & 0x7FFFFFFFu) < TINY_BITS &&
          (as_uint(mean) & 0x7FFFFFFFu) < TINY_BITS && rstd < 0x1p32f) {
        TINY_SCAN(FOR_VECS(i, k, nvec), xr, dyr, ncols, tiny, xmax);
      }
      float s1, s2;
      if (tiny) {
        BWD_SUMS_AS(FOR_VECS(i, k, nvec), BWD_DYQ, BWD_G, BWD_XQ, dyr, gamma, xr, ncols, XHAT_S,
                    XHAT_S1, )
        tiny = isfinite(s1);
      }
      if (!tiny) {
        BWD_SUMS_AS(FOR_VECS(i, k, nvec), BWD_DYQ, BWD_G, BWD_XQ, dyr, gamma, xr, ncols, XHAT,
                    XHAT, )
      }
#else
      BWD_SUMS(FOR_VECS(i, k, nvec), BWD_DYQ, BWD_G, BWD_XQ, dyr, gamma, xr, ncols)
#endif
#if RMS
      c1q[q] = row_sum(s1, scratch) / (float)cols;
      c2q[q] = 0.0f;
      (void)s2;
#else
      const float2 sums = row_sum2((float2)(s1, s2), scratch);
      c1q[q] = sums.x / (float)cols;
      c2q[q] = sums.y / (float)cols;
#endif
#if BWD_TINY
      /* c1 2^64 in a tiny row: every |xhat c1| below 2^-150 (bounded with a margin of 2), or the
       * plain output loop with the row's c1 */
      negq[q] = false;
      if (tiny) {
        const float c1s = c1q[q];
        negq[q] = ((xmax + fabs(mean)) * 0x1p64f) * rstd * fabs(c1s) * 2.0f < 0x1p-22f;
        c1q[q] = c1s * 0x1p-64f;
      }
#endif
    }
#if BWD_LACC
#pragma unroll
#endif
    for (uint q = 0; q < BWD_RI && act[q]; q++) {
      const ulong r = rq[q];
      const float mean = mean_q[q], rstd = rstd_q[q], c1 = c1q[q], c2 = c2q[q];
      const uint ncols = cols;
      __global const stype *xr = x + x_off + r * x_stride;
      __global const stype *dyr = dy + dy_off + r * dy_stride;
      __global stype *dxr = dx + dx_off + r * dx_stride;
      /* this slot's next row: `parts` rows further on (the persistent grid) */
      const bool more = r + parts < rows;
      __global const stype *xn = NEXT_ROW(xr, parts * x_stride, more, cols);
      __global const stype *dyn = NEXT_ROW(dyr, parts * dy_stride, more, cols);
      /* Every element is read (when not held) before it is written, by the same work-item: dx
       * may be dy or x. The vectors start `head` elements in (OUT_HEAD, 0 for a held row); the
       * elements before them and after them go one by one. */
      const uint head = OUT_HEAD(dxr, ncols);
      const uint nvo = (ncols - head) / VEC;
      __global const stype *const xo = xr + head;
      __global const stype *const dyo = dyr + head;
      __global const stype *const go = gamma + head;
      __global stype *const dxo = dxr + head;
#if BWD_TINY
      /* a tiny row whose xhat c1 vanishes (above): dx = rstd (g - c2) */
      if (negq[q])
        FOR_VECS(i, k, nvo) {
          const floatv xv = LOADV(xo, i);
          const floatv dv = LOADV(dyo, i);
          const floatv g = has_gamma ? dv * LOADV(go, i) : dv;
          PREFETCH_V(xn, i);
          PREFETCH_V(dyn, i);
          STOREV(dxo, i, rstd * (g - c2));
          if (want_w) {
            PSTORE(pg + head, i, fma(dv * XHAT_S(xv), (floatv)0x1p-64f, PLOAD(pg + head, i)));
            if (want_b)
              PSTORE(pb + head, i, PLOAD(pb + head, i) + dv);
          }
        }
      else
#endif
      FOR_VECS(i, k, nvo) {
#if HOLD > 0
        const floatv xv = BWD_X(q, i, k);
        const floatv dv = BWD_DY(q, i, k);
        const floatv g = has_gamma ? dv * BWD_G(i, k) : dv;
#else
        const floatv xv = LOADV(xo, i);
        const floatv dv = LOADV(dyo, i);
        const floatv g = has_gamma ? dv * LOADV(go, i) : dv;
#endif
        const floatv xhat = XHAT(xv);
        PREFETCH_V(xn, i);
        PREFETCH_V(dyn, i);
        STOREV(dxo, i, rstd * (g - c2 - xhat * c1));
        if (want_w) {
#if BWD_LACC
          LACC_ADD(lacc_g, k, dv * xhat);
          LACC_ADD(lacc_b, k, dv);
#elif HOLD > 0
          acc_g[k] += dv * xhat;
#if !RMS
          acc_b[k] += dv;
#endif
#else
          PSTORE(pg + head, i, PLOAD(pg + head, i) + dv * xhat);
          if (want_b)
            PSTORE(pb + head, i, PLOAD(pb + head, i) + dv);
#endif
        }
      }
      for (uint j = lane; j < ncols - nvo * VEC; j += TPR) {
        const uint i = j < head ? j : j + nvo * VEC; /* before the vectors, then after them */
        const float dv = LOAD1(dyr, i);
        const float xhat = XHAT(LOAD1(xr, i));
        const float g = has_gamma ? dv * LOAD1(gamma, i) : dv;
        STORE1(dxr, i, rstd * (g - c2 - xhat * c1));
        if (want_w) {
          pg[i] += dv * xhat;
          if (want_b)
            pb[i] += dv;
        }
      }
    }
#undef BWD_X
#undef BWD_DY
#undef BWD_G
  }
#if BWD_LACC
  if (want_w)
    FOR_VECS(i, k, nvec_all) {
      PSTORE(pg, i, LACC_GET(lacc_g, k));
      if (want_b)
        PSTORE(pb, i, LACC_GET(lacc_b, k));
    }
#elif HOLD > 0
  if (want_w)
    FOR_VECS(i, k, nvec_all) {
      PSTORE(pg, i, acc_g[k]);
      if (want_b)
        PSTORE(pb, i, acc_b[k]);
    }
#endif
}

/* dgamma and dbeta: column c is the sum of the `parts` partial rows, in an order fixed by `parts`
 * alone (the same bits on every run and every device).
 * RVEC == 1 (GPUs): a group of up to 256 work-items takes RCOLS adjacent columns (32 bytes of each
 * partial row, a whole memory sector) and splits the partial rows among lanes = local size / RCOLS:
 * lane l adds rows l, l + lanes, ... in order; then lane 0 adds the lanes' sums in order 0, 1, ....
 * One column per work-item over every partial row kept a few hundred work-items busy on a device
 * of thousands, each with a long chain of loads.
 * RVEC == 16 (CPUs): a work-item takes 16 adjacent columns (one 64-byte line of each partial row
 * and one vector add) and adds the partial rows in order 0, 1, .... */
#if RVEC == 1
#define RCOLS 8
#define RWG_MAX 256
__kernel void bwd_reduce(__global const float *partial, const uint parts, const uint cols,
                         __global stype *dgamma, __global stype *dbeta, const uint flags) {
  __local float sum_g[RWG_MAX], sum_b[RWG_MAX];
  __global const float *pb = partial + (ulong)parts * cols;
  const uint lid = get_local_id(0);
  const uint lanes = (uint)get_local_size(0) / RCOLS;
  const uint col = lid % RCOLS, lane = lid / RCOLS;
  const uint tiles = (cols + RCOLS - 1) / RCOLS;
  const bool want_b = (flags & HAS_DBETA) != 0; /* the kernel wrote no dbeta partials without */
  for (uint t = get_group_id(0); t < tiles; t += get_num_groups(0)) {
    const uint c = t * RCOLS + col;
    float g = 0.0f, b = 0.0f;
    if (c < cols && lane < lanes && want_b)
      for (uint p = lane; p < parts; p += lanes) {
        g += partial[(ulong)p * cols + c];
        b += pb[(ulong)p * cols + c];
      }
    else if (c < cols && lane < lanes)
      for (uint p = lane; p < parts; p += lanes)
        g += partial[(ulong)p * cols + c];
    sum_g[lid] = g;
    sum_b[lid] = b;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lane == 0 && c < cols) {
      for (uint l = 1; l < lanes; l++) {
        g += sum_g[l * RCOLS + col];
        b += sum_b[l * RCOLS + col];
      }
      if (flags & HAS_DGAMMA)
        STORE1(dgamma, c, g);
      if (flags & HAS_DBETA)
        STORE1(dbeta, c, b);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
}
#elif RVEC == 16
__kernel void bwd_reduce(__global const float *partial, const uint parts, const uint cols,
                         __global stype *dgamma, __global stype *dbeta, const uint flags) {
  __global const float *pb = partial + (ulong)parts * cols;
  const uint chunks = cols / RVEC;
  const bool want_b = (flags & HAS_DBETA) != 0; /* the kernel wrote no dbeta partials without */
  for (uint c = get_global_id(0); c < chunks; c += get_global_size(0)) {
    float16 g = 0.0f, b = 0.0f;
    if (want_b)
      for (uint p = 0; p < parts; p++) {
        g += vload16(c, partial + (ulong)p * cols);
        b += vload16(c, pb + (ulong)p * cols);
      }
    else
      for (uint p = 0; p < parts; p++)
        g += vload16(c, partial + (ulong)p * cols);
    for (uint j = 0; j < RVEC; j++) {
      if (flags & HAS_DGAMMA)
        STORE1(dgamma, c * RVEC + j, ((float *)&g)[j]);
      if (flags & HAS_DBETA)
        STORE1(dbeta, c * RVEC + j, ((float *)&b)[j]);
    }
  }
  /* the columns past the last whole chunk, one per work-item */
  for (uint c = chunks * RVEC + get_global_id(0); c < cols; c += get_global_size(0)) {
    float g = 0.0f, b = 0.0f;
    for (uint p = 0; p < parts; p++) {
      g += partial[(ulong)p * cols + c];
      if (want_b)
        b += pb[(ulong)p * cols + c];
    }
    if (flags & HAS_DGAMMA)
      STORE1(dgamma, c, g);
    if (flags & HAS_DBETA)
      STORE1(dbeta, c, b);
  }
}
#else
#error "RVEC must be 1 or 16"
#endif
#endif /* !SPLIT */

#if SPLIT
/* Split rows, for few long rows (clnorm__split_count; one row per group, TPR == WG). No partial
 * rows: the weight gradients come straight out of the second kernel.
 *
 * bwd_sums: the group of unit u = row * splits + s sums g * xhat and g (g = gamma * dy) over
 * elements [s * chunk, (s + 1) * chunk) of its row into partial[2u] and partial[2u + 1]; chunk is
 * a multiple of 16 elements (every chunk start stays VEC-aligned), the same rule as the forward
 * split's. (dx and its layout are in the arguments only so that both kernels take the same
 * first 16.)
 * bwd_split: the columns go in tiles of WG * TILE vectors (and the columns past the last whole
 * vector in one more unit). Both kernels deal their units out to the groups in contiguous ranges
 * (SPAN_FIRST, cl/common.cl). For each of its tiles and every row in order, the group adds up
 * the row's partial sums in the order s = 0, 1, ... (the same bits on every run), writes dx
 * for the tile's columns, and adds dy * xhat and dy of each column into private sums; after the
 * last row they are dgamma and dbeta of those columns. Each column is one work-item's: no
 * atomics, no second reduction. TILE (from WG and VEC alone) gives a work-item about 1024 / WG
 * elements of a row at a time: runs of 4 KiB a row for one work-item per group (a CPU). */
#define TILE_RAW (1024 / (WG * VEC))
#define TILE (TILE_RAW < 1 ? 1 : TILE_RAW > 64 ? 64 : TILE_RAW)
/* rows whose loads bwd_split issues together: 8 vectors a work-item at most (1 on a CPU, whose
 * tiles are long) */
#define RB (TILE >= 8 ? 1 : 8 / TILE)
/* Row lanes: with one vector of the tile per work-item and 128 or more work-items, the group's
 * work-items form ROWL lanes of WG / ROWL, each lane taking every ROWL-th row of a tile of WG /
 * ROWL vectors: 4 times the tiles (a GPU's groups; LayerNorm 256 x 65536 gave 64 tiles of 256
 * vectors to a device of 132 compute units), whose columns' sums the lanes add in order 0, 1, ...
 * at the end. clnorm__bwd_tiles (src/variants.c) has the same rule. */
#define ROWL (TILE == 1 && WG >= 128 ? 4 : 1)
#define LANE_WG (WG / ROWL)

/* The rows' sums kernels (bwd_sums, and the column strips' strip_sums in cl/strip.cl): their
 * start (dx and its layout are unused), and the end of a row or chunk: s1 and s2 added over the
 * group and stored by work-item 0 at p[0] and p[1]. */
#define SUMS_BEGIN                                                                                 \
  ROW_SCRATCH(WG);                                                                                 \
  (void)dx;                                                                                        \
  (void)dx_off;                                                                                    \
  (void)dx_stride;                                                                                 \
  const uint lane = get_local_id(0);                                                               \
  const bool has_gamma = (flags & HAS_GAMMA) != 0
#if RMS
#define SUMS_S2 0.0f /* not used */
#else
#define SUMS_S2 row_sum(s2, scratch)
#endif
#define SUMS_STORE(p)                                                                              \
  do {                                                                                             \
    s1 = row_sum(s1, scratch);                                                                     \
    s2 = SUMS_S2;                                                                                  \
    if (lane == 0) {                                                                               \
      (p)[0] = s1;                                                                                 \
      (p)[1] = s2;                                                                                 \
    }                                                                                              \
  } while (0)

__kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void
bwd_sums(BWD_ROW_ARGS, __global float *partial, const ulong rows, const uint cols,
         const uint flags, const uint splits) {
  SUMS_BEGIN;
  const uint chunk = ((cols + splits - 1) / splits + 15) / 16 * 16;
  const ulong units = rows * splits;
  for (ulong u = SPAN_FIRST(units); u < SPAN_END(units); u++) {
    const ulong row = u / splits;
    const uint begin = (uint)(u % splits) * chunk;
    const uint count = begin < cols ? min(chunk, cols - begin) : 0;
    __global const stype *xr = x + x_off + row * x_stride + begin;
    __global const stype *dyr = dy + dy_off + row * dy_stride + begin;
    __global const stype *gr = gamma + begin;
    const float mean = ROW_MEAN(row);
    const float rstd = rstd_in[row];
    const uint nvec = count / VEC;
#define SUMS_DY(i, k) LOADV(dyr, i)
#define SUMS_G(i, k) LOADV(gr, i)
#define SUMS_X(i, k) LOADV(xr, i)
#if BWD_TINY
    /* a tiny chunk (BWD_TINY above, for the chunk): s1 2^64, stored as s1 */
    bool tiny = false;
    if (count > 0 && (as_uint(LOAD1(xr, 0)) & 0x7FFFFFFFu) < TINY_BITS &&
        (as_uint(mean) & 0x7FFFFFFFu) < TINY_BITS && rstd < 0x1p32f) {
      float xmax;
      TINY_SCAN(for (uint i = 0; i < nvec; i++), xr, dyr, count, tiny, xmax);
      (void)xmax;
    }
    float s1, s2;
    if (tiny) {
      BWD_SUMS_AS(for (uint i = lane; i < nvec; i += TPR), SUMS_DY, SUMS_G, SUMS_X, dyr, gr, xr,
                  count, XHAT_S, XHAT_S1, )
      tiny = isfinite(s1);
      s1 *= 0x1p-64f;
    }
    if (!tiny) {
      BWD_SUMS_AS(for (uint i = lane; i < nvec; i += TPR), SUMS_DY, SUMS_G, SUMS_X, dyr, gr, xr,
                  count, XHAT, XHAT, )
    }
#else
    /* s1, s2 (BWD_SUMS ends in a block: no semicolon) */
    BWD_SUMS(for (uint i = lane; i < nvec; i += TPR), SUMS_DY, SUMS_G, SUMS_X, dyr, gr, xr,
             count)
#endif
    SUMS_STORE(partial + 2 * u);
  }
}

/* c1 = sum(g * xhat) / cols and c2 = sum(g) / cols (0 for RMSNorm) of a row, from its partials. */
inline float2 row_consts(__global const float *partial, ulong row, uint splits, uint cols) {
  __global const float *pr = partial + 2 * row * splits;
  float s1 = 0.0f, s2 = 0.0f;
  for (uint p = 0; p < splits; p++) {
    s1 += pr[2 * p];
    s2 += pr[2 * p + 1];
  }
  return (float2)(s1 / (float)cols, s2 / (float)cols);
}

/* Column j past the last whole vector over rows [r_begin, r_end) (bwd_split's, and bwd_strip's
 * ranges), a work-item's: dx from the rows' sums (`splits` parts a row at `sums`, row_consts), and
 * the column's dgamma and dbeta sums over those rows, returned as (x, y). */
inline float2 tail_column(BWD_ROW_ARGS, __global const float *sums, uint splits, uint cols,
                          ulong r_begin, ulong r_end, uint j, bool has_gamma) {
  float ag = 0.0f, ab = 0.0f;
  for (ulong r = r_begin; r < r_end; r++) {
    const float2 c = row_consts(sums, r, splits, cols);
    const float mean = ROW_MEAN(r);
    const float rstd = rstd_in[r];
    const float dv = LOAD1(dy + dy_off + r * dy_stride, j);
    const float xhat = XHAT(LOAD1(x + x_off + r * x_stride, j));
    const float g = has_gamma ? dv * LOAD1(gamma, j) : dv;
    STORE1(dx + dx_off + r * dx_stride, j, rstd * (g - c.y - xhat * c.x));
    ag += dv * xhat;
    ab += dv;
  }
  return (float2)(ag, ab);
}
#define TAIL_ARGS                                                                                  \
  dy, dy_off, dy_stride, x, x_off, x_stride, gamma, mean_in, rstd_in, dx, dx_off, dx_stride

/* Row lanes (ROWL > 1, TILE == 1): each column's sums of the lanes, added in lane order 0, 1, ...
 * into row lane 0's acc_g[0], then (LayerNorm) acc_b[0], through the group's __local floatv
 * lane_s[WG - LANE_WG] (ROW_LANES_DECL): lanes 1 to ROWL - 1 put one sum there at a time, so that
 * 1024 work-items of 8 floats take 24 KiB, not the 64 KiB of two arrays of every lane (NVIDIA's
 * limit is 48). Every work-item of the group passes every barrier. Nothing with one lane. */
#if ROWL > 1
#define ROW_LANES_DECL __local floatv lane_s[WG - LANE_WG]
#define ROW_LANES_ONE(a)                                                                           \
  do {                                                                                             \
    if (row_lane > 0)                                                                              \
      lane_s[lane - LANE_WG] = (a)[0];                                                             \
    barrier(CLK_LOCAL_MEM_FENCE);                                                                  \
    if (row_lane == 0)                                                                             \
      for (uint l = 1; l < ROWL; l++)                                                              \
        (a)[0] += lane_s[(l - 1) * LANE_WG + col_lane];                                            \
    barrier(CLK_LOCAL_MEM_FENCE);                                                                  \
  } while (0)
#if RMS
#define ROW_LANES_ADD(acc_g, acc_b) ROW_LANES_ONE(acc_g)
#else
#define ROW_LANES_ADD(acc_g, acc_b)                                                                \
  do {                                                                                             \
    ROW_LANES_ONE(acc_g);                                                                          \
    ROW_LANES_ONE(acc_b);                                                                          \
  } while (0)
#endif
#else
#define ROW_LANES_DECL
#define ROW_LANES_ADD(acc_g, acc_b) ((void)0)
#endif

__kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void
bwd_split(BWD_ROW_ARGS, __global const float *partial, const ulong rows,
          const uint cols, const uint flags, const uint splits, __global stype *dgamma,
          __global stype *dbeta) {
  const uint lane = get_local_id(0);
  const uint col_lane = lane % LANE_WG, row_lane = lane / LANE_WG;
  ROW_LANES_DECL;
  const bool has_gamma = (flags & HAS_GAMMA) != 0;
  const bool has_dgamma = (flags & HAS_DGAMMA) != 0, has_dbeta = (flags & HAS_DBETA) != 0;
  const uint nvec = cols / VEC;
  const uint per_tile = LANE_WG * TILE; /* vectors */
  const uint tiles = (nvec + per_tile - 1) / per_tile;
  const uint units = tiles + (nvec * VEC < cols ? 1u : 0u);
  /* The tiles of this group's units; the unit after the last tile (the columns past the last
   * whole vector) after them, outside the loop: a loop whose body has barriers (the row lanes)
   * takes no other path (PoCL 3.1 broke a loop with a `continue` before its barriers: writes out
   * of bounds, docs/DEVICES.md). */
  const uint unit_end = (uint)SPAN_END(units);
  for (uint t = (uint)SPAN_FIRST(units); t < (unit_end < tiles ? unit_end : tiles); t++) {
    const uint first = t * per_tile + col_lane;
    floatv acc_g[TILE], acc_b[TILE];
    for (uint k = 0; k < TILE; k++) {
      acc_g[k] = 0.0f;
      acc_b[k] = 0.0f;
    }
    /* RB rows at a time, all their loads issued before any is used: one work-item per vector of
     * the tile (a GPU) otherwise waited a memory latency per row (H100, LayerNorm 256 x 65536). */
    for (ulong r0 = row_lane; r0 < rows; r0 += RB * ROWL) {
#if RB > 1
      floatv xs[RB][TILE], ds[RB][TILE];
      for (uint q = 0; q < RB; q++) {
        /* past the end: row r0 again, unused */
        const ulong r = r0 + q * ROWL < rows ? r0 + q * ROWL : r0;
        for (uint k = 0; k < TILE; k++) {
          const uint i = first + k * LANE_WG;
          xs[q][k] = i < nvec ? LOADV(x + x_off + r * x_stride, i) : (floatv)0.0f;
          ds[q][k] = i < nvec ? LOADV(dy + dy_off + r * dy_stride, i) : (floatv)0.0f;
        }
      }
#define SPLIT_X(q, i, k) xs[(q)][(k)]
#define SPLIT_DY(q, i, k) ds[(q)][(k)]
#else /* a CPU's long tiles: each vector loaded where it is used, as the rows stream by */
#define SPLIT_X(q, i, k) LOADV(xr, (i))
#define SPLIT_DY(q, i, k) LOADV(dyr, (i))
#endif
      for (uint q = 0; q < RB && r0 + q * ROWL < rows; q++) {
        const ulong r = r0 + q * ROWL;
        const float2 c = row_consts(partial, r, splits, cols);
        const float mean = ROW_MEAN(r);
        const float rstd = rstd_in[r];
        __global const stype *xr = x + x_off + r * x_stride;
        __global const stype *dyr = dy + dy_off + r * dy_stride;
        __global stype *dxr = dx + dx_off + r * dx_stride;
        /* the next row's part of the tile, while this one is written (CPUs, PREFETCH) */
        __global const stype *xn = NEXT_ROW(xr + (size_t)first * VEC, x_stride, r + 1 < rows,
                                            per_tile * VEC);
        __global const stype *dyn = NEXT_ROW(dyr + (size_t)first * VEC, dy_stride, r + 1 < rows,
                                             per_tile * VEC);
        /* Every element is read before it is written, by the same work-item: dx may be dy or x. */
#if BWD_TINY
        /* the row's part of the tile tiny, and every |xhat c1| below 2^-150 (BWD_TINY above; c1
         * 2^64 within 2^-84, the rounding of a subnormal c1, with a margin of 2): dx = rstd (g -
         * c2), dgamma's sums fma(dy * xhat 2^64, 2^-64, sum) */
        bool neg = false;
        if (first < nvec && (as_uint(LOAD1(xr, (size_t)first * VEC)) & 0x7FFFFFFFu) < TINY_BITS &&
            (as_uint(mean) & 0x7FFFFFFFu) < TINY_BITS && rstd < 0x1p32f) {
          bool tiny;
          float xmax;
          TINY_SCAN(for (uint k = 0, i = first; k < TILE && i < nvec; k++, i += LANE_WG), xr, dyr,
                    0, tiny, xmax);
          neg = tiny && ((xmax + fabs(mean)) * 0x1p64f) * rstd * (fabs(c.x) * 0x1p64f + 0x1p-84f) *
                                2.0f <
                            0x1p-22f;
        }
        if (neg)
          for (uint k = 0; k < TILE; k++) {
            const uint i = first + k * LANE_WG;
            if (i < nvec) {
              const floatv xv = SPLIT_X(q, i, k);
              const floatv dv = SPLIT_DY(q, i, k);
              const floatv g = has_gamma ? dv * LOADV(gamma, i) : dv;
              PREFETCH_V(xn, k);
              PREFETCH_V(dyn, k);
              STOREV(dxr, i, rstd * (g - c.y));
              acc_g[k] = fma(dv * XHAT_S(xv), (floatv)0x1p-64f, acc_g[k]);
              acc_b[k] += dv;
            }
          }
        else
#endif
        for (uint k = 0; k < TILE; k++) {
          const uint i = first + k * LANE_WG;
          if (i < nvec) {
            const floatv xv = SPLIT_X(q, i, k);
            const floatv dv = SPLIT_DY(q, i, k);
            const floatv xhat = XHAT(xv);
            const floatv g = has_gamma ? dv * LOADV(gamma, i) : dv;
            PREFETCH_V(xn, k);
            PREFETCH_V(dyn, k);
            STOREV(dxr, i, rstd * (g - c.y - xhat * c.x));
            acc_g[k] += dv * xhat;
            acc_b[k] += dv;
          }
        }
      }
    }
    ROW_LANES_ADD(acc_g, acc_b);
    if (row_lane == 0)
      for (uint k = 0; k < TILE; k++) {
        const uint i = first + k * LANE_WG;
        if (i < nvec) {
          if (has_dgamma)
            STOREV(dgamma, i, acc_g[k]);
          if (has_dbeta)
            STOREV(dbeta, i, acc_b[k]);
        }
      }
  }
  if ((uint)SPAN_FIRST(units) <= tiles && tiles < unit_end) {
    /* the columns past the last whole vector, one per work-item */
    for (uint j = nvec * VEC + lane; j < cols; j += WG) {
      const float2 w = tail_column(TAIL_ARGS, partial, splits, cols, 0, rows, j, has_gamma);
      if (has_dgamma)
        STORE1(dgamma, j, w.x);
      if (has_dbeta)
        STORE1(dbeta, j, w.y);
    }
  }
}
#endif /* SPLIT */
