/* A standalone reproducer attempt for PoCL 5's pocl_release_dlhandle_cache assertion (docs/DEVICES.md):
 * 8 threads, one context, a queue per thread, 200 launches each. No clnorm.
 *   gcc -O1 pocl5_threads.c -o repro -lOpenCL -lpthread && ./repro [fill] [many]
 * fill: clEnqueueFillBuffer before each launch; many: 300 distinct programs, one per launch. */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
static cl_context ctx; static cl_device_id dev; static cl_program prog; static cl_program progs[300]; static int nprog;
static const char *src = "__kernel __attribute__((reqd_work_group_size(64,1,1))) void k(__global float *a) { a[get_global_id(0)] *= 2.0f; }\n"
                         "__kernel void k2(__global float *a) { a[get_global_id(0)] += 1.0f; }\n";
static int fill;
static void *work(void *arg) {
  (void)arg; cl_int e; cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &e);
  cl_kernel k = clCreateKernel(prog, "k", &e), k2 = clCreateKernel(prog, "k2", &e);
  for (int i = 0; i < 200; i++) {
    float h[1024]; for (int j = 0; j < 1024; j++) h[j] = j;
    cl_mem b = clCreateBuffer(ctx, CL_MEM_COPY_HOST_PTR, sizeof h, h, &e);
    if (fill) { float z = 0; clEnqueueFillBuffer(q, b, &z, 4, 0, sizeof h, 0, NULL, NULL); }
    size_t g = 1024, l = 64;
    clSetKernelArg(k, 0, sizeof b, &b); clSetKernelArg(k2, 0, sizeof b, &b);
    if (nprog) {
      cl_kernel kk = clCreateKernel(progs[((unsigned)i * 7u + (unsigned)((size_t)q >> 4)) % (unsigned)nprog], "k", &e);
      clSetKernelArg(kk, 0, sizeof b, &b);
      clEnqueueNDRangeKernel(q, kk, 1, NULL, &g, &l, 0, NULL, NULL);
      clReleaseKernel(kk);
    } else
      clEnqueueNDRangeKernel(q, i % 2 ? k : k2, 1, NULL, &g, i % 2 ? &l : NULL, 0, NULL, NULL);
    clEnqueueReadBuffer(q, b, CL_TRUE, 0, sizeof h, h, 0, NULL, NULL);
    clReleaseMemObject(b);
  }
  clReleaseKernel(k); clReleaseKernel(k2); clReleaseCommandQueue(q); return NULL;
}
int main(int argc, char **argv) {
  fill = argc > 1;
  cl_platform_id ps[4]; cl_uint np; clGetPlatformIDs(4, ps, &np);
  for (cl_uint i = 0; i < np && !dev; i++) { char n[128]; clGetPlatformInfo(ps[i], CL_PLATFORM_NAME, 128, n, 0); if (strstr(n, "Portable")) clGetDeviceIDs(ps[i], CL_DEVICE_TYPE_ALL, 1, &dev, 0); }
  cl_int e; ctx = clCreateContext(0, 1, &dev, 0, 0, &e);
  prog = clCreateProgramWithSource(ctx, 1, &src, 0, &e); clBuildProgram(prog, 1, &dev, "", 0, 0);
  if (argc > 2) { /* many distinct programs: PoCL's cache of compiled kernels fills */
    nprog = 300;
    for (int i = 0; i < nprog; i++) { char o[64]; snprintf(o, sizeof o, "-DSCALE=%d.0f", i + 2);
      const char *s2 = "__kernel __attribute__((reqd_work_group_size(64,1,1))) void k(__global float *a) { a[get_global_id(0)] *= SCALE; }\n";
      progs[i] = clCreateProgramWithSource(ctx, 1, &s2, 0, &e); clBuildProgram(progs[i], 1, &dev, o, 0, 0); }
  }
  pthread_t t[8]; for (int i = 0; i < 8; i++) pthread_create(&t[i], 0, work, 0);
  for (int i = 0; i < 8; i++) pthread_join(t[i], 0);
  printf("repro: done without assertion (fill=%d, programs=%d)\n", fill, nprog);
  return 0;
}
