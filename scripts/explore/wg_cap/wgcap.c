/* Why NVIDIA's OpenCL caps clnorm's kernels of 512 and 1024 work-items at 256 (docs/DEVICES.md,
 * "CL_KERNEL_WORK_GROUP_SIZE"): builds one program on the first device of the first platform
 * whose name holds $PLATFORM (default NVIDIA), from OpenCL C sources (joined with a newline, as
 * src/program.c joins cl/common.cl and an op's file) and build options, or from a program binary
 * (on NVIDIA: PTX text), and prints per kernel what clGetKernelWorkGroupInfo says. Not part of
 * the library; run by run.sh.
 *
 *   wgcap src "OPTIONS" FILE.cl... -- KERNEL...     a build from source
 *   wgcap bin FILE.ptx -- KERNEL...                 a build from a binary
 *   (WGCAP_SAVE=PATH: the built program's binary is written there; WGCAP_LOG=1: the build log;
 *   WGCAP_LAUNCH=WG: each kernel, which must take two buffers of 4-byte elements, is also
 *   enqueued with work-groups of WG work-items, 4 groups, and the enqueue's and the finish's
 *   results printed: whether the driver holds to the size it reports)
 *
 * One line per kernel: name, CL_KERNEL_WORK_GROUP_SIZE, CL_KERNEL_COMPILE_WORK_GROUP_SIZE,
 * local and private memory bytes, the preferred multiple. Exit status 1 when the build fails. */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void die(const char *what, cl_int err) {
  fprintf(stderr, "wgcap: %s: OpenCL error %d\n", what, err);
  exit(1);
}

static char *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    perror(path);
    exit(1);
  }
  fseek(f, 0, SEEK_END);
  const long n = ftell(f);
  rewind(f);
  char *s = malloc((size_t)n + 1);
  if (!s || fread(s, 1, (size_t)n, f) != (size_t)n) {
    fprintf(stderr, "wgcap: reading %s failed\n", path);
    exit(1);
  }
  s[n] = '\0';
  fclose(f);
  *len = (size_t)n;
  return s;
}

static cl_device_id pick_device(void) {
  cl_platform_id plats[16];
  cl_uint np = 0;
  cl_int err = clGetPlatformIDs(16, plats, &np);
  if (err != CL_SUCCESS)
    die("clGetPlatformIDs", err);
  const char *want = getenv("PLATFORM") ? getenv("PLATFORM") : "NVIDIA";
  for (cl_uint i = 0; i < np; i++) {
    char name[256] = "";
    clGetPlatformInfo(plats[i], CL_PLATFORM_NAME, sizeof name, name, NULL);
    cl_device_id dev;
    if (strstr(name, want) && clGetDeviceIDs(plats[i], CL_DEVICE_TYPE_ALL, 1, &dev, NULL) == 0)
      return dev;
  }
  fprintf(stderr, "wgcap: no platform named like '%s'\n", want);
  exit(1);
}

static void print_log(cl_program p, cl_device_id dev) {
  size_t n = 0;
  clGetProgramBuildInfo(p, dev, CL_PROGRAM_BUILD_LOG, 0, NULL, &n);
  char *log = malloc(n + 1);
  if (log && clGetProgramBuildInfo(p, dev, CL_PROGRAM_BUILD_LOG, n, log, NULL) == CL_SUCCESS) {
    log[n] = '\0';
    fprintf(stderr, "%s\n", log);
  }
  free(log);
}

static void save_binary(cl_program p, const char *path) {
  size_t n = 0;
  if (clGetProgramInfo(p, CL_PROGRAM_BINARY_SIZES, sizeof n, &n, NULL) != CL_SUCCESS || !n)
    return;
  unsigned char *bin = malloc(n);
  FILE *f = bin ? fopen(path, "wb") : NULL;
  if (f && clGetProgramInfo(p, CL_PROGRAM_BINARIES, sizeof bin, &bin, NULL) == CL_SUCCESS)
    fwrite(bin, 1, n, f);
  if (f)
    fclose(f);
  free(bin);
}

/* Enqueues k(x, y) on 4 groups of `local` work-items; prints what the enqueue and the finish
 * return (0: ran). */
static void launch(cl_context ctx, cl_device_id dev, cl_kernel k, size_t local) {
  cl_int err;
  cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &err);
  const size_t global = 4 * local;
  cl_mem x = clCreateBuffer(ctx, CL_MEM_READ_WRITE, global * 4, NULL, &err);
  cl_mem y = clCreateBuffer(ctx, CL_MEM_READ_WRITE, global * 4, NULL, &err);
  clSetKernelArg(k, 0, sizeof x, &x);
  clSetKernelArg(k, 1, sizeof y, &y);
  const cl_int enq = clEnqueueNDRangeKernel(q, k, 1, NULL, &global, &local, 0, NULL, NULL);
  const cl_int fin = clFinish(q);
  printf("  launch(%zu): enqueue %d, finish %d", local, enq, fin);
  clReleaseMemObject(x);
  clReleaseMemObject(y);
  clReleaseCommandQueue(q);
}

int main(int argc, char **argv) {
  int sep = 0;
  for (int i = 1; i < argc && !sep; i++)
    if (!strcmp(argv[i], "--"))
      sep = i;
  if (argc < 4 || !sep || sep + 1 >= argc ||
      !(strcmp(argv[1], "src") == 0 ? sep >= 4 : strcmp(argv[1], "bin") == 0 && sep == 3)) {
    fprintf(stderr, "usage: wgcap src \"OPTIONS\" FILE.cl... -- KERNEL...\n"
                    "       wgcap bin FILE.ptx -- KERNEL...\n");
    return 2;
  }
  cl_device_id dev = pick_device();
  cl_int err;
  cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
  if (err != CL_SUCCESS)
    die("clCreateContext", err);
  cl_program prog;
  const char *options = "";
  if (!strcmp(argv[1], "src")) {
    options = argv[2];
    const int nfiles = sep - 3;
    const char **srcs = malloc(sizeof *srcs * (size_t)(2 * nfiles));
    size_t *lens = malloc(sizeof *lens * (size_t)(2 * nfiles));
    int n = 0;
    for (int i = 0; i < nfiles; i++) {
      if (i) {
        srcs[n] = "\n";
        lens[n++] = 1;
      }
      srcs[n] = slurp(argv[3 + i], &lens[n]);
      n++;
    }
    prog = clCreateProgramWithSource(ctx, (cl_uint)n, srcs, lens, &err);
  } else {
    size_t len;
    const unsigned char *bin = (const unsigned char *)slurp(argv[2], &len);
    len++; /* NVIDIA's PTX binaries carry their terminating NUL */
    cl_int status;
    prog = clCreateProgramWithBinary(ctx, 1, &dev, &len, &bin, &status, &err);
  }
  if (err != CL_SUCCESS)
    die("creating the program", err);
  err = clBuildProgram(prog, 1, &dev, options, NULL, NULL);
  if (err != CL_SUCCESS || getenv("WGCAP_LOG"))
    print_log(prog, dev);
  if (err != CL_SUCCESS)
    die("clBuildProgram", err);
  if (getenv("WGCAP_SAVE"))
    save_binary(prog, getenv("WGCAP_SAVE"));
  for (int i = sep + 1; i < argc; i++) {
    cl_kernel k = clCreateKernel(prog, argv[i], &err);
    if (err != CL_SUCCESS) {
      printf("%-12s clCreateKernel: error %d\n", argv[i], err);
      continue;
    }
    size_t wg = 0, compile[3] = {0, 0, 0}, multiple = 0;
    cl_ulong local = 0, priv = 0;
    clGetKernelWorkGroupInfo(k, dev, CL_KERNEL_WORK_GROUP_SIZE, sizeof wg, &wg, NULL);
    clGetKernelWorkGroupInfo(k, dev, CL_KERNEL_COMPILE_WORK_GROUP_SIZE, sizeof compile, compile,
                             NULL);
    clGetKernelWorkGroupInfo(k, dev, CL_KERNEL_LOCAL_MEM_SIZE, sizeof local, &local, NULL);
    clGetKernelWorkGroupInfo(k, dev, CL_KERNEL_PRIVATE_MEM_SIZE, sizeof priv, &priv, NULL);
    clGetKernelWorkGroupInfo(k, dev, CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE, sizeof multiple,
                             &multiple, NULL);
    printf("%-12s work_group_size %4zu  compile %zux%zux%zu  local %6lu B  private %5lu B  "
           "multiple %zu",
           argv[i], wg, compile[0], compile[1], compile[2], (unsigned long)local,
           (unsigned long)priv, multiple);
    if (getenv("WGCAP_LAUNCH"))
      launch(ctx, dev, k, (size_t)atol(getenv("WGCAP_LAUNCH")));
    printf("\n");
    clReleaseKernel(k);
  }
  clReleaseProgram(prog);
  clReleaseContext(ctx);
  return 0;
}
