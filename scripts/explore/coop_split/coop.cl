/* A prototype, not part of the library: LayerNorm float32 of few long rows in one read of x.
 * A persistent grid takes (row, chunk) tickets in order; each group holds its chunk in
 * registers, publishes its chunk's (mean, m2), waits until every chunk of the row has, merges
 * them in chunk order and writes y from the held chunk. Tickets go out in order to running
 * groups only, so a row can wait only on chunks that running groups hold or will take next: no
 * deadlock while at least `nchunks` groups can be resident at once (a GPU; never PoCL's CPU
 * device, whose groups run to completion). */
#ifndef WG
#define WG 256
#endif
#ifndef NV
#define NV 16 /* float4 vectors a work-item holds */
#endif
#define WARP 32

inline float shfl_xor(float v, uint m) {
  float r;
  asm volatile("shfl.sync.bfly.b32 %0, %1, %2, 0x1f, 0xffffffff;" : "=f"(r) : "f"(v), "r"(m));
  return r;
}

inline float group_sum(float v, __local float *red) {
  for (uint m = WARP / 2; m > 0; m >>= 1)
    v += shfl_xor(v, m);
  const uint lid = get_local_id(0);
  if (lid % WARP == 0)
    red[lid / WARP] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  float s = 0.0f;
  for (uint w = 0; w < WG / WARP; w++)
    s += red[w];
  barrier(CLK_LOCAL_MEM_FENCE);
  return s;
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void
coop_ln(__global const float4 *x, __global float4 *y, const uint rows, const uint cols,
        const uint nchunks, const float eps, __global uint *ticket, __global uint *arrive,
        __global volatile float *part) {
  __local float red[WG / WARP];
  __local uint tk;
  const uint lid = get_local_id(0);
  const uint total = rows * nchunks;
  const uint chunk4 = WG * NV; /* float4 per chunk */
  const float chunk_n = (float)(chunk4 * 4);
  for (;;) {
    if (lid == 0)
      tk = atomic_inc(ticket);
    barrier(CLK_LOCAL_MEM_FENCE);
    const uint t = tk;
    if (t >= total)
      break;
    const uint row = t / nchunks, c = t % nchunks;
    __global const float4 *xc = x + (size_t)row * (cols / 4) + (size_t)c * chunk4;
    float4 v[NV];
#pragma unroll
    for (uint k = 0; k < NV; k++)
      v[k] = xc[lid + k * WG];
    float4 a = 0.0f;
#pragma unroll
    for (uint k = 0; k < NV; k++)
      a += v[k];
    const float cm = group_sum(a.x + a.y + a.z + a.w, red) / chunk_n;
    float4 b = 0.0f;
#pragma unroll
    for (uint k = 0; k < NV; k++) {
      const float4 d = v[k] - cm;
      b += d * d;
    }
    const float m2 = group_sum(b.x + b.y + b.z + b.w, red);
    if (lid == 0) {
      part[2 * t] = cm;
      part[2 * t + 1] = m2;
      asm volatile("membar.gl;" ::: "memory");
      atomic_inc(&arrive[row]);
      while (atomic_add(&arrive[row], 0u) < nchunks)
        ;
      asm volatile("membar.gl;" ::: "memory");
    }
    barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
    /* The row's chunks are all of chunk_n values: mean = the mean of their means, M2 = the sum of
     * their m2 plus chunk_n times the squares of their means about it; each a sum over the
     * chunks, work-item p taking chunks p, p + WG, ... (a fixed order: the same bits every run). */
    __global volatile float *pr = part + 2 * (size_t)row * nchunks;
    float sm = 0.0f;
    for (uint p = lid; p < nchunks; p += WG)
      sm += pr[2 * p];
    const float mean = group_sum(sm, red) / (float)nchunks;
    float sq = 0.0f;
    for (uint p = lid; p < nchunks; p += WG) {
      const float d = pr[2 * p] - mean;
      sq += pr[2 * p + 1] + chunk_n * d * d;
    }
    const float rstd = rsqrt(group_sum(sq, red) / (float)cols + eps);
    __global float4 *yc = y + (size_t)row * (cols / 4) + (size_t)c * chunk4;
#pragma unroll
    for (uint k = 0; k < NV; k++)
      yc[lid + k * WG] = (v[k] - mean) * rstd;
    barrier(CLK_LOCAL_MEM_FENCE); /* tk is reused */
  }
}

__kernel void copy4(__global const float4 *x, __global float4 *y, const ulong n4) {
  for (size_t i = get_global_id(0); i < n4; i += get_global_size(0))
    y[i] = x[i];
}
