/* Dispatch overhead: host time of a clnorm call against a raw clEnqueueNDRangeKernel of the
 * same kernel (arguments set once). Both only enqueue; the queue is drained between batches.
 * Prints the median over batches of the per-call difference; within the noise of a busy CPU
 * device it can come out negative (CI saw -0.795 us on PoCL), and is printed as measured. */
#define _POSIX_C_SOURCE 200809L
#include "internal.h"
#include "tool.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int main(int argc, char **argv) {
  const char *sel = argc > 1 ? argv[1] : NULL;
  tool_device dev;
  cl_context context;
  cl_command_queue queue;
  if (!tool_open_device("dispatch_overhead", sel, &dev, &context, &queue))
    return 1;
  clnorm_ctx *ctx;
  if (clnorm_ctx_create(context, dev.device, &ctx) != CLNORM_OK)
    return 1;
  const size_t rows = 4, cols = 256;
  cl_int e;
  cl_mem x = clCreateBuffer(context, CL_MEM_READ_WRITE, rows * cols * 4, NULL, &e);
  cl_mem y = clCreateBuffer(context, CL_MEM_READ_WRITE, rows * cols * 4, NULL, &e);
  const float one = 1.0f;
  clEnqueueFillBuffer(queue, x, &one, 4, 0, rows * cols * 4, 0, NULL, NULL);
  const clnorm_call call = {.op = CLNORM_OP_LAYERNORM,
                            .rows = rows,
                            .cols = cols,
                            .dtype = CLNORM_F32,
                            .eps = 1e-5f,
                            .x = {x, 0, 0},
                            .y = {y, 0, 0}};
  clnorm_variant v;
  clnorm_choose(ctx, &call, &v, NULL);
  clnorm_program *prog;
  cl_kernel raw;
  if (clnorm__program_get(ctx, call.op, call.dtype, &v, 0, &prog) != CLNORM_OK ||
      clnorm__kernel_take(ctx, prog, call.op, 0, &raw) != CLNORM_OK) {
    fprintf(stderr, "dispatch_overhead: %s\n", clnorm_ctx_errmsg(ctx));
    return 1;
  }
  /* the library's own arguments and grid (src/launch.c), so the two launch the same kernel */
  if (clnorm__set_args(ctx, raw, &call, NULL, 0, NULL) != CLNORM_OK) {
    fprintf(stderr, "dispatch_overhead: %s\n", clnorm_ctx_errmsg(ctx));
    return 1;
  }
  const size_t local = v.wg, global = clnorm__launch_groups(ctx, &call, &v) * v.wg;
  enum { BATCH = 200, BATCHES = 31 };
  double diff[BATCHES], lib[BATCHES], rawt[BATCHES];
  for (int b = 0; b < BATCHES; b++) {
    clFinish(queue);
    double t0 = tool_now();
    for (int i = 0; i < BATCH; i++)
      clEnqueueNDRangeKernel(queue, raw, 1, NULL, &global, &local, 0, NULL, NULL);
    double t1 = tool_now();
    clFinish(queue);
    double t2 = tool_now();
    for (int i = 0; i < BATCH; i++)
      if (clnorm_run(ctx, queue, &call, NULL, 0, NULL, NULL) != CLNORM_OK)
        return 1;
    double t3 = tool_now();
    clFinish(queue);
    rawt[b] = (t1 - t0) / BATCH;
    lib[b] = (t3 - t2) / BATCH;
    diff[b] = lib[b] - rawt[b];
  }
  char text[128];
  clnorm_variant_format(&v, text, sizeof text);
  printf("dispatch overhead on %s (%s), layernorm %zux%zu, %s:\n", dev.name, dev.platform_name,
         rows, cols, text);
  printf("  raw clEnqueueNDRangeKernel %.3f us/call, clnorm_layernorm %.3f us/call, "
         "difference (median of %d batches of %d) %.3f us\n",
         tool_median(rawt, BATCHES) * 1e6, tool_median(lib, BATCHES) * 1e6, BATCHES, BATCH,
         tool_median(diff, BATCHES) * 1e6);
  clnorm__kernel_give(ctx, prog, 0, raw);
  clReleaseMemObject(x);
  clReleaseMemObject(y);
  clnorm_ctx_destroy(ctx);
  clReleaseCommandQueue(queue);
  clReleaseContext(context);
  return 0;
}
