/* Kernels of the least code that still has one of clnorm's features each, for wgcap (run.sh):
 * which feature makes NVIDIA's OpenCL answer CL_KERNEL_WORK_GROUP_SIZE 256 for a kernel that
 * requires WG (512 or 1024) work-items. Options: -DWG=N, -DASM for the kernels of inline PTX. */
__kernel void plain(__global const float *x, __global float *y) {
  const size_t i = get_global_id(0);
  y[i] = 2.0f * x[i];
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void reqd(__global const float *x,
                                                                     __global float *y) {
  const size_t i = get_global_id(0);
  y[i] = 2.0f * x[i];
}

/* a reduction through local memory with barriers, as clnorm's REDUCE=0 */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void local_sum(__global const float *x,
                                                                          __global float *y) {
  __local float s[WG];
  const uint l = get_local_id(0);
  s[l] = x[get_global_id(0)];
  for (uint n = WG / 2; n > 0; n /= 2) {
    barrier(CLK_LOCAL_MEM_FENCE);
    if (l < n)
      s[l] += s[l + n];
  }
  if (l == 0)
    y[get_group_id(0)] = s[0];
}

#ifdef ASM /* NVIDIA only */
/* inline PTX, as clnorm's REDUCE=2 (shfl.sync) and its 16-bit conversions (PTX > 0) */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void asm_shfl(__global const float *x,
                                                                         __global float *y) {
  float v = x[get_global_id(0)], r;
  asm volatile("shfl.sync.bfly.b32 %0, %1, %2, 0x1f, 0xffffffff;" : "=f"(r) : "f"(v), "r"(1u));
  y[get_global_id(0)] = v + r;
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void asm_cvt(__global const uint *x,
                                                                        __global float *y) {
  float lo, hi;
  asm("{.reg .b16 l, h; mov.b32 {l, h}, %2; cvt.f32.f16 %0, l; cvt.f32.f16 %1, h;}"
      : "=f"(lo), "=f"(hi)
      : "r"(x[get_global_id(0)]));
  y[get_global_id(0)] = lo + hi;
}
#endif
