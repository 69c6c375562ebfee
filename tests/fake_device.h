/* Fabricated device info for the tests of the dispatcher's rules and of the program options on
 * devices this machine does not have (test_space, test_plan_rules, test_bincache): no OpenCL
 * behind them. */
#ifndef CLNORM_TESTS_FAKE_DEVICE_H
#define CLNORM_TESTS_FAKE_DEVICE_H
#include "internal.h"

#include <string.h>

/* A CPU of `cores` cores, as PoCL describes one. */
static inline clnorm_device_info fake_cpu(cl_uint cores) {
  clnorm_device_info cpu;
  memset(&cpu, 0, sizeof cpu);
  cpu.type = CL_DEVICE_TYPE_CPU;
  cpu.max_wg = 4096;
  cpu.local_mem = 4 << 20;
  cpu.compute_units = cores;
  return cpu;
}

/* An H100 SXM under NVIDIA's OpenCL (132 compute units; ptx_sm left 0: callers set it). */
static inline clnorm_device_info fake_nvidia_gpu(void) {
  clnorm_device_info gpu;
  memset(&gpu, 0, sizeof gpu);
  gpu.type = CL_DEVICE_TYPE_GPU;
  gpu.max_wg = 1024;
  gpu.local_mem = 48 << 10;
  gpu.compute_units = 132;
  gpu.is_nvidia = 1;
  gpu.reqd_wg = 1;
  return gpu;
}

#endif
