/* Host of coop.cl (a prototype, not part of the library): times the one-read LayerNorm of few
 * long rows against a float4 copy of the same bytes, checks y against a float64 reference.
 *   cc -O2 -o coop coop.c -lOpenCL -lm && ./coop [ROWSxCOLS ...]     (an NVIDIA GPU) */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(e)                                                                                   \
  do {                                                                                             \
    cl_int err_ = (e);                                                                             \
    if (err_ != CL_SUCCESS) {                                                                      \
      fprintf(stderr, "%s:%d: OpenCL error %d\n", __FILE__, __LINE__, err_);                      \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    perror(path);
    exit(1);
  }
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  rewind(f);
  char *s = malloc(n + 1);
  if (fread(s, 1, n, f) != (size_t)n)
    exit(1);
  s[n] = 0;
  fclose(f);
  return s;
}

static double ev_us(cl_event e) {
  cl_ulong a, b;
  CHECK(clGetEventProfilingInfo(e, CL_PROFILING_COMMAND_START, sizeof a, &a, NULL));
  CHECK(clGetEventProfilingInfo(e, CL_PROFILING_COMMAND_END, sizeof b, &b, NULL));
  return (b - a) * 1e-3;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
  cl_platform_id plats[8];
  cl_uint np;
  CHECK(clGetPlatformIDs(8, plats, &np));
  cl_device_id dev = NULL;
  for (cl_uint i = 0; i < np && !dev; i++) {
    char name[256];
    clGetPlatformInfo(plats[i], CL_PLATFORM_NAME, sizeof name, name, NULL);
    if (strstr(name, "NVIDIA"))
      CHECK(clGetDeviceIDs(plats[i], CL_DEVICE_TYPE_GPU, 1, &dev, NULL));
  }
  if (!dev) {
    fprintf(stderr, "no NVIDIA GPU\n");
    return 1;
  }
  char dname[256];
  cl_uint cus;
  clGetDeviceInfo(dev, CL_DEVICE_NAME, sizeof dname, dname, NULL);
  clGetDeviceInfo(dev, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof cus, &cus, NULL);
  cl_int err;
  cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
  CHECK(err);
  cl_command_queue q = clCreateCommandQueue(ctx, dev, CL_QUEUE_PROFILING_ENABLE, &err);
  CHECK(err);
  const char *src = slurp("coop.cl");
  cl_program prog = clCreateProgramWithSource(ctx, 1, &src, NULL, &err);
  CHECK(err);
  if (clBuildProgram(prog, 1, &dev, "-cl-std=CL1.2", NULL, NULL) != CL_SUCCESS) {
    char log[1 << 16];
    clGetProgramBuildInfo(prog, dev, CL_PROGRAM_BUILD_LOG, sizeof log, log, NULL);
    fprintf(stderr, "%s\n", log);
    return 1;
  }
  cl_kernel kc = clCreateKernel(prog, "coop_ln", &err);
  CHECK(err);
  cl_kernel kcopy = clCreateKernel(prog, "copy4", &err);
  CHECK(err);
  const char *def[] = {"256x65536", "1024x65536", "64x262144", "16x4194304", "4096x16384"};
  const int nshapes = argc > 1 ? argc - 1 : 5;
  printf("device %s, %u compute units; WG 256, 64 floats a work-item (a chunk of 16384)\n", dname,
         cus);
  for (int si = 0; si < nshapes; si++) {
    unsigned rows, cols;
    if (sscanf(argc > 1 ? argv[si + 1] : def[si], "%ux%u", &rows, &cols) != 2)
      return 2;
    const unsigned chunk = 256 * 16 * 4, nchunks = cols / chunk;
    if (cols % chunk) {
      fprintf(stderr, "cols must be a multiple of %u\n", chunk);
      return 2;
    }
    const size_t n = (size_t)rows * cols;
    /* buffers rotated past the L2: sets of x and y, 2 GiB in all at most */
    int sets = (int)((1ull << 31) / (2 * n * 4));
    sets = sets < 1 ? 1 : sets > 8 ? 8 : sets;
    float *hx = malloc(n * 4), *hy = malloc(n * 4);
    srand(7);
    for (size_t i = 0; i < n; i++)
      hx[i] = 3.0f + (float)rand() / RAND_MAX * 2.0f - 1.0f + (i % 7) * 0.25f;
    cl_mem bx[8], by[8];
    for (int s = 0; s < sets; s++) {
      bx[s] = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, n * 4, hx, &err);
      CHECK(err);
      by[s] = clCreateBuffer(ctx, CL_MEM_READ_WRITE, n * 4, NULL, &err);
      CHECK(err);
    }
    cl_mem ticket = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 4, NULL, &err);
    cl_mem arrive = clCreateBuffer(ctx, CL_MEM_READ_WRITE, rows * 4, NULL, &err);
    cl_mem part = clCreateBuffer(ctx, CL_MEM_READ_WRITE, (size_t)rows * nchunks * 8, NULL, &err);
    CHECK(err);
    const float eps = 1e-5f;
    for (int gpc = 1; gpc <= 2; gpc++) {
      const size_t groups = (size_t)cus * gpc;
      if (groups < nchunks) {
        printf("%ux%u: %zu groups < %u chunks a row: not run\n", rows, cols, groups, nchunks);
        continue;
      }
      double tk[40], tc[40];
      const int runs = 40;
      for (int r = 0; r < runs + 3; r++) {
        const int s = r % sets;
        const cl_uint zero = 0;
        CHECK(clEnqueueFillBuffer(q, ticket, &zero, 4, 0, 4, 0, NULL, NULL));
        CHECK(clEnqueueFillBuffer(q, arrive, &zero, 4, 0, rows * 4, 0, NULL, NULL));
        cl_uint ur = rows, uc = cols, un = nchunks;
        CHECK(clSetKernelArg(kc, 0, sizeof(cl_mem), &bx[s]));
        CHECK(clSetKernelArg(kc, 1, sizeof(cl_mem), &by[s]));
        CHECK(clSetKernelArg(kc, 2, 4, &ur));
        CHECK(clSetKernelArg(kc, 3, 4, &uc));
        CHECK(clSetKernelArg(kc, 4, 4, &un));
        CHECK(clSetKernelArg(kc, 5, 4, &eps));
        CHECK(clSetKernelArg(kc, 6, sizeof(cl_mem), &ticket));
        CHECK(clSetKernelArg(kc, 7, sizeof(cl_mem), &arrive));
        CHECK(clSetKernelArg(kc, 8, sizeof(cl_mem), &part));
        size_t gws = groups * 256, lws = 256;
        cl_event e1, e2;
        CHECK(clEnqueueNDRangeKernel(q, kc, 1, NULL, &gws, &lws, 0, NULL, &e1));
        const cl_ulong n4 = n / 4;
        CHECK(clSetKernelArg(kcopy, 0, sizeof(cl_mem), &bx[(s + 1) % sets]));
        CHECK(clSetKernelArg(kcopy, 1, sizeof(cl_mem), &by[(s + 1) % sets]));
        CHECK(clSetKernelArg(kcopy, 2, 8, &n4));
        size_t cg = (size_t)cus * 2048, cl = 256;
        CHECK(clEnqueueNDRangeKernel(q, kcopy, 1, NULL, &cg, &cl, 0, NULL, &e2));
        CHECK(clFinish(q));
        if (r >= 3) {
          tk[r - 3] = ev_us(e1);
          tc[r - 3] = ev_us(e2);
        }
        clReleaseEvent(e1);
        clReleaseEvent(e2);
      }
      /* check the last set written by coop_ln against float64 */
      const cl_uint zero = 0;
      CHECK(clEnqueueFillBuffer(q, ticket, &zero, 4, 0, 4, 0, NULL, NULL));
      CHECK(clEnqueueFillBuffer(q, arrive, &zero, 4, 0, rows * 4, 0, NULL, NULL));
      const float nan = NAN;
      CHECK(clEnqueueFillBuffer(q, by[0], &nan, 4, 0, n * 4, 0, NULL, NULL));
      CHECK(clSetKernelArg(kc, 0, sizeof(cl_mem), &bx[0]));
      CHECK(clSetKernelArg(kc, 1, sizeof(cl_mem), &by[0]));
      CHECK(clEnqueueNDRangeKernel(q, kc, 1, NULL, (size_t[]){groups * 256}, (size_t[]){256}, 0,
                                   NULL, NULL));
      CHECK(clEnqueueReadBuffer(q, by[0], CL_TRUE, 0, n * 4, hy, 0, NULL, NULL));
      double worst = 0;
      for (unsigned r = 0; r < rows; r++) {
        const float *xr = hx + (size_t)r * cols;
        double m = 0, v = 0;
        for (unsigned j = 0; j < cols; j++)
          m += xr[j];
        m /= cols;
        for (unsigned j = 0; j < cols; j++)
          v += (xr[j] - m) * (xr[j] - m);
        const double rs = 1 / sqrt(v / cols + eps);
        double mx = 0, e = 0;
        for (unsigned j = 0; j < cols; j++) {
          const double ref = (xr[j] - m) * rs;
          mx = fmax(mx, fabs(ref));
          const double d = fabs(hy[(size_t)r * cols + j] - ref);
          e = d != d ? INFINITY : fmax(e, d);
        }
        worst = fmax(worst, e / mx);
      }
      qsort(tk, runs, sizeof *tk, cmp);
      qsort(tc, runs, sizeof *tc, cmp);
      const double gb = 2.0 * n * 4 / 1e3;
      printf("%ux%u (%u chunks a row, %zu groups): coop %.1f us %.0f GB/s, copy %.1f us %.0f GB/s, "
             "share %.2f; max err %.2e %s\n",
             rows, cols, nchunks, groups, tk[runs / 2], gb / tk[runs / 2], tc[runs / 2],
             gb / tc[runs / 2], tc[runs / 2] / tk[runs / 2], worst,
             worst <= 1e-5 ? "pass" : "FAIL");
      fflush(stdout);
    }
    for (int s = 0; s < sets; s++) {
      clReleaseMemObject(bx[s]);
      clReleaseMemObject(by[s]);
    }
    clReleaseMemObject(ticket);
    clReleaseMemObject(arrive);
    clReleaseMemObject(part);
    free(hx);
    free(hy);
  }
  return 0;
}
