/* Shared by every kernel family: parameters, vector types and the reductions across the
 * work-items of one row. Parameters arrive as -D options; the defaults below make the file
 * compile on its own. */
#ifndef WG
#define WG 256
#endif
#ifndef TPR /* work-items per row; divides WG */
#define TPR WG
#endif
#ifndef VEC
#define VEC 4
#endif
#ifndef HOLD /* vectors of the row held in private memory per work-item; 0: re-read */
#define HOLD 0
#endif
#ifndef REDUCE /* 0 local-memory tree, 1 sub-group, 2 NVIDIA shuffle (inline PTX) */
#define REDUCE 0
#endif
#ifndef STATS /* 0 Welford/Chan, 1 two-pass */
#define STATS 0
#endif

#define RPG (WG / TPR) /* rows per work-group */

#if REDUCE == 1
#pragma OPENCL EXTENSION cl_khr_subgroups : enable
#endif

#if VEC == 1
typedef float floatv;
#define HSUM(v) (v)
#elif VEC == 2
typedef float2 floatv;
#define HSUM(v) ((v).s0 + (v).s1)
#elif VEC == 4
typedef float4 floatv;
#define HSUM(v) (((v).s0 + (v).s1) + ((v).s2 + (v).s3))
#elif VEC == 8
typedef float8 floatv;
#define HSUM(v) hsum4((v).lo + (v).hi)
#elif VEC == 16
typedef float16 floatv;
#define HSUM(v) hsum4(((v).lo.lo + (v).lo.hi) + ((v).hi.lo + (v).hi.hi))
#else
#error "VEC must be 1, 2, 4, 8 or 16"
#endif

inline float hsum4(float4 v) { return (v.s0 + v.s1) + (v.s2 + v.s3); }

/* Welford/Chan partial statistics: n values, their mean and sum of squared deviations. */
typedef struct {
  float n, mean, m2;
} stats_t;

inline stats_t stats_merge(stats_t a, stats_t b) {
  const float n = a.n + b.n;
  if (n == 0.0f) /* both empty: keep the empty state (no 0/0) */
    return a;
  const float delta = b.mean - a.mean;
  const float wb = b.n / n;
  stats_t r;
  r.n = n;
  r.mean = a.mean + delta * wb;
  r.m2 = a.m2 + b.m2 + delta * delta * a.n * wb;
  return r;
}

#if REDUCE == 2
/* Butterfly exchange inside a warp; every lane of the warp executes it. */
inline float shfl_xor(float v, uint lane_mask) {
  float r;
  asm volatile("shfl.sync.bfly.b32 %0, %1, %2, 0x1f, 0xffffffff;"
               : "=f"(r)
               : "f"(v), "r"(lane_mask));
  return r;
}
#define WARP 32
#endif

/* Sum of v over the TPR work-items of this row; every work-item of the group must call it
 * (it contains barriers) and every one receives the row's total. `scratch` holds WG floats. */
inline float row_sum(float v, __local float *scratch) {
#if TPR == 1
  return v;
#else
  const uint lid = get_local_id(0);
  const uint lane = lid % TPR;
  const uint base = lid - lane;
#if REDUCE == 2
  for (uint m = (TPR < WARP ? TPR : WARP) / 2; m > 0; m >>= 1)
    v += shfl_xor(v, m);
#if TPR > WARP
  if (lid % WARP == 0)
    scratch[lid / WARP] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  v = 0.0f;
  for (uint w = 0; w < TPR / WARP; w++)
    v += scratch[base / WARP + w];
  barrier(CLK_LOCAL_MEM_FENCE);
#endif
  return v;
#elif REDUCE == 1 /* one row per group (TPR == WG), any sub-group size */
  v = sub_group_reduce_add(v);
  if (get_sub_group_local_id() == 0)
    scratch[get_sub_group_id()] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  v = 0.0f;
  const uint groups = get_num_sub_groups();
  for (uint s = 0; s < groups; s++)
    v += scratch[s];
  barrier(CLK_LOCAL_MEM_FENCE);
  return v;
#else
  scratch[lid] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint s = TPR / 2; s > 0; s >>= 1) {
    if (lane < s)
      scratch[lid] += scratch[lid + s];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  v = scratch[base];
  barrier(CLK_LOCAL_MEM_FENCE);
  return v;
#endif
#endif
}

/* Chan merge of the partial statistics of the row's TPR work-items; same rules as row_sum.
 * `scratch` holds 3 * WG floats. */
inline stats_t row_stats(stats_t s, __local float *scratch) {
#if TPR == 1
  return s;
#else
  const uint lid = get_local_id(0);
  const uint lane = lid % TPR;
  const uint base = lid - lane;
#if REDUCE == 2
  for (uint m = (TPR < WARP ? TPR : WARP) / 2; m > 0; m >>= 1) {
    stats_t o;
    o.n = shfl_xor(s.n, m);
    o.mean = shfl_xor(s.mean, m);
    o.m2 = shfl_xor(s.m2, m);
    s = stats_merge(s, o);
  }
#if TPR > WARP
  if (lid % WARP == 0) {
    scratch[3 * (lid / WARP)] = s.n;
    scratch[3 * (lid / WARP) + 1] = s.mean;
    scratch[3 * (lid / WARP) + 2] = s.m2;
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  s.n = 0.0f;
  s.mean = 0.0f;
  s.m2 = 0.0f;
  for (uint w = base / WARP; w < (base + TPR) / WARP; w++) {
    stats_t o;
    o.n = scratch[3 * w];
    o.mean = scratch[3 * w + 1];
    o.m2 = scratch[3 * w + 2];
    s = stats_merge(s, o);
  }
  barrier(CLK_LOCAL_MEM_FENCE);
#endif
  return s;
#elif REDUCE == 1
  /* Parallel-axis form: the sub-group's mean from sums, then the deviations around it. */
  const float n = sub_group_reduce_add(s.n);
  const float mean = n > 0.0f ? sub_group_reduce_add(s.n * s.mean) / n : 0.0f;
  const float dm = s.mean - mean;
  const float m2 = sub_group_reduce_add(s.m2 + s.n * dm * dm);
  if (get_sub_group_local_id() == 0) {
    scratch[3 * get_sub_group_id()] = n;
    scratch[3 * get_sub_group_id() + 1] = mean;
    scratch[3 * get_sub_group_id() + 2] = m2;
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  s.n = 0.0f;
  s.mean = 0.0f;
  s.m2 = 0.0f;
  const uint groups = get_num_sub_groups();
  for (uint g = 0; g < groups; g++) {
    stats_t o;
    o.n = scratch[3 * g];
    o.mean = scratch[3 * g + 1];
    o.m2 = scratch[3 * g + 2];
    s = stats_merge(s, o);
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  return s;
#else
  scratch[3 * lid] = s.n;
  scratch[3 * lid + 1] = s.mean;
  scratch[3 * lid + 2] = s.m2;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint h = TPR / 2; h > 0; h >>= 1) {
    if (lane < h) {
      stats_t a, b;
      a.n = scratch[3 * lid];
      a.mean = scratch[3 * lid + 1];
      a.m2 = scratch[3 * lid + 2];
      b.n = scratch[3 * (lid + h)];
      b.mean = scratch[3 * (lid + h) + 1];
      b.m2 = scratch[3 * (lid + h) + 2];
      a = stats_merge(a, b);
      scratch[3 * lid] = a.n;
      scratch[3 * lid + 1] = a.mean;
      scratch[3 * lid + 2] = a.m2;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  s.n = scratch[3 * base];
  s.mean = scratch[3 * base + 1];
  s.m2 = scratch[3 * base + 2];
  barrier(CLK_LOCAL_MEM_FENCE);
  return s;
#endif
#endif
}

/* Loads and stores of the row: `row` points at element 0 of the row and is VEC-aligned (the host
 * narrows VEC until every row start is). */
#define LOADV(row, i) (((__global const floatv *)(row))[(i)])
#define STOREV(row, i, v) (((__global floatv *)(row))[(i)] = (v))

/* Iteration over the work-item's vectors of the row: i is the vector index in the row, k the
 * slot in private memory when the row is held. */
#if HOLD > 0
#define FOR_VECS(i, k, nv)                                                                         \
  for (uint k = 0, i = lane; k < HOLD; k++, i += TPR)                                              \
    if (i < (nv))
#define HELD_DECL floatv held[HOLD]
#define HELD_PUT(k, v) (held[(k)] = (v))
#define HELD_GET(row, i, k) (held[(k)])
#else
#define FOR_VECS(i, k, nv) for (uint i = lane, k = 0; i < (nv); i += TPR, k++)
#define HELD_DECL
#define HELD_PUT(k, v) ((void)(k))
#define HELD_GET(row, i, k) LOADV(row, i)
#endif

/* Bits of the kernels' `flags` argument: which optional buffers were given. */
#define HAS_GAMMA 1u
#define HAS_BETA 2u
#define HAS_MEAN 4u
#define HAS_RSTD 8u
