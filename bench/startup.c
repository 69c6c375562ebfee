/* Start-up cost: in a fresh process, the time from the start of main (before clGetPlatformIDs)
 * to the first completed clnorm_layernorm (clFinish returned), and its parts: OpenCL set-up
 * (platform, device, context, queue), clnorm_ctx_create, buffers, and the first call; then the
 * same call again, for scale. Prints one line of name=value pairs (milliseconds, what the program
 * binary cache did, whether row 0 is right, and last the device's name) for scripts/startup.sh,
 * which takes medians over fresh processes.
 *
 *   startup [device] [rows] [cols]     (device as normtune's: a name part or an index) */
#define _POSIX_C_SOURCE 200809L
#include "tool.h"
#include "tool_access.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  const double t0 = tool_now();
  const char *sel = argc > 1 ? argv[1] : NULL;
  const size_t rows = argc > 2 ? strtoul(argv[2], NULL, 10) : 256;
  const size_t cols = argc > 3 ? strtoul(argv[3], NULL, 10) : 1024;
  tool_device dev;
  cl_context context;
  cl_command_queue queue;
  if (rows == 0 || cols == 0) {
    fprintf(stderr, "startup: rows and cols must be positive\n");
    return 1;
  }
  if (!tool_open_device("startup", sel, &dev, &context, &queue))
    return 1;
  const double t_opencl = tool_now();
  clnorm_ctx *ctx;
  if (clnorm_ctx_create(context, dev.device, &ctx) != CLNORM_OK) {
    fprintf(stderr, "startup: clnorm_ctx_create: %s\n", clnorm_ctx_errmsg(NULL));
    return 1;
  }
  const double t_ctx = tool_now();
  float *host = malloc(rows * cols * sizeof *host);
  if (!host)
    return 1;
  for (size_t i = 0; i < rows * cols; i++)
    host[i] = (float)(i % 97) * 0.25f - 12.0f;
  cl_int e1, e2, e3;
  cl_mem x = clCreateBuffer(context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                            rows * cols * sizeof *host, host, &e1);
  cl_mem y = clCreateBuffer(context, CL_MEM_READ_WRITE, rows * cols * sizeof *host, NULL, &e2);
  cl_mem rstd = clCreateBuffer(context, CL_MEM_READ_WRITE, rows * sizeof *host, NULL, &e3);
  if (e1 != CL_SUCCESS || e2 != CL_SUCCESS || e3 != CL_SUCCESS) {
    fprintf(stderr, "startup: clCreateBuffer failed\n");
    return 1;
  }
  const double t_buffers = tool_now();
  const clnorm_rows xr = {x, 0, cols}, yr = {y, 0, cols};
  const clnorm_status st = clnorm_layernorm(ctx, queue, rows, cols, CLNORM_F32, 1e-5f, xr, NULL,
                                            NULL, yr, NULL, rstd, 0, NULL, NULL);
  const cl_int fin = clFinish(queue);
  const double t_first = tool_now();
  if (st != CLNORM_OK || fin != CL_SUCCESS) {
    fprintf(stderr, "startup: clnorm_layernorm: %s: %s\n", clnorm_status_string(st),
            clnorm_ctx_errmsg(ctx));
    return 1;
  }
  /* Row 0's first elements are checked, so that a broken binary cannot look fast. */
  float got[2] = {0, 0};
  double mean = 0, var = 0;
  for (size_t j = 0; j < cols; j++)
    mean += host[j];
  mean /= (double)cols;
  for (size_t j = 0; j < cols; j++)
    var += (host[j] - mean) * (host[j] - mean);
  var /= (double)cols;
  int sane = clEnqueueReadBuffer(queue, y, CL_TRUE, 0, (cols > 1 ? 2 : 1) * sizeof *got, got, 0,
                                 NULL, NULL) == CL_SUCCESS;
  for (size_t j = 0; j < 2 && j < cols; j++) {
    const double want = (host[j] - mean) / sqrt(var + 1e-5);
    sane = sane && fabs(got[j] - want) <= 1e-4 * (1 + fabs(want));
  }
  /* The same call again: what the first call costs beyond the kernel's own run. */
  const double t_again = tool_now();
  sane = sane &&
         clnorm_layernorm(ctx, queue, rows, cols, CLNORM_F32, 1e-5f, xr, NULL, NULL, yr, NULL, rstd,
                          0, NULL, NULL) == CLNORM_OK &&
         clFinish(queue) == CL_SUCCESS;
  const double t_second = tool_now();
  clnorm_bincache_counts cache;
  clnorm__ctx_bincache_counts(ctx, &cache);
  printf("opencl_ms=%.3f ctx_ms=%.3f buffers_ms=%.3f first_call_ms=%.3f total_ms=%.3f "
         "second_call_ms=%.3f "
         "cache_hits=%lu cache_misses=%lu cache_rejected=%lu cache_written=%lu check=%s "
         "device=%s (%s)\n",
         (t_opencl - t0) * 1e3, (t_ctx - t_opencl) * 1e3, (t_buffers - t_ctx) * 1e3,
         (t_first - t_buffers) * 1e3, (t_first - t0) * 1e3, (t_second - t_again) * 1e3, cache.hits,
         cache.misses, cache.rejected, cache.written, sane ? "ok" : "WRONG", dev.name,
         dev.platform_name);
  clReleaseMemObject(x);
  clReleaseMemObject(y);
  clReleaseMemObject(rstd);
  clnorm_ctx_destroy(ctx);
  clReleaseCommandQueue(queue);
  clReleaseContext(context);
  free(host);
  return sane ? 0 : 1;
}
