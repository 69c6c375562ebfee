/* Column strips of the backward pass (the strip program: cl/common.cl, cl/backward.cl and this
 * file, SPLIT == 2; src/launch.c enqueue_bwd_strip), for wide rows: norm_bwd keeps 2 x cols / TPR
 * floats of weight-gradient sums a work-item (64 at 32768 columns and 512 work-items: NVIDIA's
 * program spills), these keep 2 x TILE x VEC, whatever the row length.
 *
 * `partial` holds the weight partial rows first (dgamma's `ranges` rows, then dbeta's, as
 * norm_bwd's for bwd_reduce, which adds them with parts = ranges), then the rows' two sums
 * (2 floats a row).
 * strip_sums: a group a row (TPR == WG), its sums s1 = sum(g * xhat) and s2 = sum(g) with g =
 * gamma * dy, as the split rows' bwd_sums of one chunk a row. Not bwd_sums in chunks: on NVIDIA
 * its chunk arithmetic took 41 registers where this takes 32 (RMSNorm bfloat16, 1024 work-items:
 * one group a compute unit in place of two), bwd_strip's loop over a row's parts cost more, and
 * the H200 ran the rule's shapes up to 1.23x slower (docs/PERFORMANCE.md, "Tried and not kept").
 * bwd_strip: the columns go in strips of LANE_WG * TILE vectors (bwd_split's tiles: one strip a
 * group at a time, clnorm__bwd_tiles), the rows in `ranges` ranges of ceil(rows / ranges). A unit
 * is a strip of a range; for each of its rows the group writes dx of the strip's columns from the
 * row's sums and adds dy * xhat and dy into private sums (the ROWL row lanes' in lane order at the
 * end), then writes them to the range's partial rows. The columns past the last whole vector are
 * one more unit a range, a column a work-item. No atomics: the same inputs give the same bits.
 * bwd_strip does not take BWD_TINY's scaled pass (the CPU's subnormal rows: slower, not wrong). */
#if SPLIT == 2
/* rows whose loads bwd_strip issues together: 128 bytes of loaded vectors a work-item (32
 * registers; rawv: 16-bit rows as loaded under RAW16), 64 in groups of 1024 (NVIDIA: 64
 * registers a work-item at most) */
#define SRB_BYTES (WG >= 1024 ? 64 : 128)
#define SRB_RAW (SRB_BYTES / (2 * TILE * (uint)sizeof(rawv)))
#define SRB (SRB_RAW < 1 ? 1 : SRB_RAW)
#if VEC == 1
#define SPSTORE(p, i, v) ((p)[(i)] = (v))
#else /* partial rows start at any float */
#define SPSTORE(p, i, v) CAT(vstore, VEC)((v), (i), (p))
#endif

__kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void
strip_sums(BWD_ROW_ARGS, __global float *partial, const ulong rows, const uint cols,
           const uint flags, const uint ranges) {
  SUMS_BEGIN;
  __global float *sums = partial + 2 * (ulong)ranges * cols;
  const uint nvec = cols / VEC;
  for (ulong row = SPAN_FIRST(rows); row < SPAN_END(rows); row++) {
    __global const stype *xr = x + x_off + row * x_stride;
    __global const stype *dyr = dy + dy_off + row * dy_stride;
    const float mean = ROW_MEAN(row);
    const float rstd = rstd_in[row];
#define STRIP_DY(i, k) LOADV(dyr, i)
#define STRIP_G(i, k) LOADV(gamma, i)
#define STRIP_X(i, k) LOADV(xr, i)
    /* s1, s2 (BWD_SUMS ends in a block: no semicolon) */
    BWD_SUMS(for (uint i = lane; i < nvec; i += TPR), STRIP_DY, STRIP_G, STRIP_X, dyr, gamma, xr,
             cols)
    SUMS_STORE(sums + 2 * row);
  }
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void
bwd_strip(BWD_ROW_ARGS, __global float *partial, const ulong rows, const uint cols,
          const uint flags, const uint ranges) {
  const uint lane = get_local_id(0);
  const uint col_lane = lane % LANE_WG, row_lane = lane / LANE_WG;
  ROW_LANES_DECL;
  const bool has_gamma = (flags & HAS_GAMMA) != 0;
  const bool want_w = (flags & (HAS_DGAMMA | HAS_DBETA)) != 0;
  const bool want_b = !RMS && (flags & HAS_DBETA) != 0;
  __global const float *sums = partial + 2 * (ulong)ranges * cols;
  const uint nvec = cols / VEC;
  const uint per_tile = LANE_WG * TILE; /* vectors */
  const uint tiles = (nvec + per_tile - 1) / per_tile;
  const ulong span = (rows + ranges - 1) / ranges;
  /* range-major: the groups running together read the same rows */
  const ulong units = (ulong)tiles * ranges;
  const ulong all = units + (nvec * VEC < cols ? ranges : 0);
  const ulong unit_end = SPAN_END(all);
  /* As bwd_split: the loop whose body has barriers takes no other path; the tail units after it. */
  for (ulong u = SPAN_FIRST(all); u < (unit_end < units ? unit_end : units); u++) {
    const uint t = (uint)(u % tiles);
    const ulong range = u / tiles;
    const ulong r_begin = range * span;
    const ulong r_end = r_begin + span < rows ? r_begin + span : rows;
    const uint first = t * per_tile + col_lane;
    floatv acc_g[TILE], acc_b[TILE];
    for (uint k = 0; k < TILE; k++) {
      acc_g[k] = 0.0f;
      acc_b[k] = 0.0f;
    }
    for (ulong r0 = r_begin + row_lane; r0 < r_end; r0 += SRB * ROWL) {
      /* SRB rows' loads issued before any is used */
      rawv xs[SRB][TILE], ds[SRB][TILE];
      for (uint q = 0; q < SRB; q++) {
        /* past the end: row r0 again, unused */
        const ulong r = r0 + q * ROWL < r_end ? r0 + q * ROWL : r0;
        for (uint k = 0; k < TILE; k++) {
          const uint i = first + k * LANE_WG;
          xs[q][k] = i < nvec ? LOADR(x + x_off + r * x_stride, i) : (rawv)(0);
          ds[q][k] = i < nvec ? LOADR(dy + dy_off + r * dy_stride, i) : (rawv)(0);
        }
      }
      for (uint q = 0; q < SRB && r0 + q * ROWL < r_end; q++) {
        const ulong r = r0 + q * ROWL;
        const float2 c = (float2)(sums[2 * r], sums[2 * r + 1]) / (float)cols;
        const float mean = ROW_MEAN(r);
        const float rstd = rstd_in[r];
        __global stype *dxr = dx + dx_off + r * dx_stride;
        /* Every element is read before it is written, by the same work-item: dx may be dy or x. */
        for (uint k = 0; k < TILE; k++) {
          const uint i = first + k * LANE_WG;
          if (i < nvec) {
            const floatv dv = UNRAW(ds[q][k]);
            const floatv xhat = XHAT(UNRAW(xs[q][k]));
            const floatv g = has_gamma ? dv * LOADV(gamma, i) : dv;
            STOREV(dxr, i, rstd * (g - c.y - xhat * c.x));
            acc_g[k] += dv * xhat;
            acc_b[k] += dv;
          }
        }
      }
    }
    ROW_LANES_ADD(acc_g, acc_b);
    if (row_lane == 0 && want_w) {
      __global float *pg = partial + range * cols;
      __global float *pb = pg + (ulong)ranges * cols;
      for (uint k = 0; k < TILE; k++) {
        const uint i = first + k * LANE_WG;
        if (i < nvec) {
          SPSTORE(pg, i, acc_g[k]);
          if (want_b)
            SPSTORE(pb, i, acc_b[k]);
        }
      }
    }
  }
  /* the columns past the last whole vector of this group's tail units, one per work-item */
  for (ulong u = SPAN_FIRST(all) > units ? SPAN_FIRST(all) : units; u < unit_end; u++) {
    const ulong range = u - units;
    const ulong r_begin = range * span;
    const ulong r_end = r_begin + span < rows ? r_begin + span : rows;
    for (uint j = nvec * VEC + lane; j < cols; j += WG) {
      const float2 w = tail_column(TAIL_ARGS, sums, 1, cols, r_begin, r_end, j, has_gamma);
      if (want_w) {
        partial[range * cols + j] = w.x;
        if (want_b)
          partial[(ranges + range) * cols + j] = w.y;
      }
    }
  }
}
#endif /* SPLIT == 2 */
