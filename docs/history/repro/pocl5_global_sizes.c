/* PoCL before 6: launches of one kernel with different global sizes, in flight at the same time,
 * abort in pocl_release_dlhandle_cache (docs/DEVICES.md). No clnorm.
 *   gcc -O1 pocl5_global_sizes.c -o repro -lOpenCL -lpthread
 *   ./repro vary    # 8 threads, global sizes 64..512: asserts on PoCL 5.0
 *   ./repro fixed   # the same launches, all with global size 512: passes
 * PoCL keeps one compiled work-group function per (kernel hash, local size, grid width >= the
 * launch's); a release looks the entry up by (hash, local size) alone and may decrement an
 * entry that another launch holds. Fixed upstream by pocl commit 9184812d6 (in 6.0). */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static cl_context context;
static cl_device_id device;
static cl_program program;
static int vary;

static const char *source =
    "__kernel __attribute__((reqd_work_group_size(64, 1, 1)))\n"
    "void scale(__global float *a, uint n) {\n"
    "  for (uint i = get_global_id(0); i < n; i += get_global_size(0)) a[i] *= 2.0f;\n"
    "}\n";

static void *work(void *arg) {
  const unsigned id = (unsigned)(size_t)arg;
  cl_int err;
  cl_command_queue queue = clCreateCommandQueue(context, device, 0, &err);
  cl_kernel kernel = clCreateKernel(program, "scale", &err);
  cl_mem buf = clCreateBuffer(context, CL_MEM_READ_WRITE, 4096 * sizeof(float), NULL, &err);
  const cl_uint n = 4096;
  clSetKernelArg(kernel, 0, sizeof buf, &buf);
  clSetKernelArg(kernel, 1, sizeof n, &n);
  for (unsigned i = 0; i < 400; i++) {
    const size_t local = 64, global = vary ? 64 * (1 + (id + i) % 8) : 512;
    clEnqueueNDRangeKernel(queue, kernel, 1, NULL, &global, &local, 0, NULL, NULL);
    if (i % 16 == 15)
      clFinish(queue);
  }
  clFinish(queue);
  clReleaseMemObject(buf);
  clReleaseKernel(kernel);
  clReleaseCommandQueue(queue);
  return NULL;
}

int main(int argc, char **argv) {
  vary = argc > 1 && strcmp(argv[1], "vary") == 0;
  cl_platform_id platforms[8];
  cl_uint count = 0;
  clGetPlatformIDs(8, platforms, &count);
  for (cl_uint p = 0; p < count && !device; p++) {
    char name[256] = "";
    clGetPlatformInfo(platforms[p], CL_PLATFORM_NAME, sizeof name - 1, name, NULL);
    if (strstr(name, "Portable") || strstr(name, "PoCL"))
      clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, 1, &device, NULL);
  }
  if (!device) {
    fprintf(stderr, "no PoCL device\n");
    return 1;
  }
  cl_int err;
  context = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
  program = clCreateProgramWithSource(context, 1, &source, NULL, &err);
  if (clBuildProgram(program, 1, &device, "", NULL, NULL) != CL_SUCCESS) {
    fprintf(stderr, "build failed\n");
    return 1;
  }
  pthread_t threads[8];
  for (size_t t = 0; t < 8; t++)
    pthread_create(&threads[t], NULL, work, (void *)t);
  for (size_t t = 0; t < 8; t++)
    pthread_join(threads[t], NULL);
  printf("%s: done without an assertion\n", vary ? "vary" : "fixed");
  clReleaseProgram(program);
  clReleaseContext(context);
  return 0;
}
