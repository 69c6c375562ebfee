/* The README's minimal example: LayerNorm over a 4 x 8 matrix on the first OpenCL device. */
#define CL_TARGET_OPENCL_VERSION 120 /* this program's OpenCL API: clnorm.h leaves it open */
#include <clnorm.h>

#include <stdio.h>

int main(void) {
  enum { ROWS = 4, COLS = 8 };
  float x[ROWS * COLS], y[ROWS * COLS], gamma[COLS], beta[COLS], mean[ROWS], rstd[ROWS];
  for (int i = 0; i < ROWS * COLS; i++)
    x[i] = (float)(i % 7) - 3.0f;
  for (int c = 0; c < COLS; c++) {
    gamma[c] = 1.0f;
    beta[c] = 0.5f;
  }

  /* Plain OpenCL set-up: the application owns the context, queue and buffers. */
  cl_platform_id platform;
  cl_device_id device;
  cl_int err = clGetPlatformIDs(1, &platform, NULL);
  if (err == CL_SUCCESS)
    err = clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, NULL);
  if (err != CL_SUCCESS) {
    fprintf(stderr, "no OpenCL device (%d)\n", (int)err);
    return 1;
  }
  cl_context context = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
  cl_command_queue queue = clCreateCommandQueue(context, device, 0, &err);
  const cl_mem_flags in = CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR;
  cl_mem x_buf = clCreateBuffer(context, in, sizeof x, x, &err);
  cl_mem gamma_buf = clCreateBuffer(context, in, sizeof gamma, gamma, &err);
  cl_mem beta_buf = clCreateBuffer(context, in, sizeof beta, beta, &err);
  cl_mem y_buf = clCreateBuffer(context, CL_MEM_WRITE_ONLY, sizeof y, NULL, &err);
  cl_mem mean_buf = clCreateBuffer(context, CL_MEM_WRITE_ONLY, sizeof mean, NULL, &err);
  cl_mem rstd_buf = clCreateBuffer(context, CL_MEM_WRITE_ONLY, sizeof rstd, NULL, &err);

  /* One clnorm context per cl_context and device; keep it for the application's life. */
  clnorm_ctx *norm = NULL;
  clnorm_status st = clnorm_ctx_create(context, device, &norm);
  if (st != CLNORM_OK) {
    fprintf(stderr, "clnorm_ctx_create: %s\n", clnorm_ctx_errmsg(NULL));
    return 1;
  }

  /* Matrices are {buffer, offset, stride}, in elements; stride 0 means cols. */
  const clnorm_rows xs = {x_buf, 0, 0}, ys = {y_buf, 0, 0};
  cl_event done;
  st = clnorm_layernorm(norm, queue, ROWS, COLS, CLNORM_F32, 1e-5f, xs, gamma_buf, beta_buf, ys,
                        mean_buf, rstd_buf, 0, NULL, &done);
  if (st != CLNORM_OK) {
    fprintf(stderr, "clnorm_layernorm: %s: %s\n", clnorm_status_string(st),
            clnorm_ctx_errmsg(norm));
    return 1;
  }
  /* The call only enqueued the work: wait for its event before reading the results. */
  clWaitForEvents(1, &done);
  clReleaseEvent(done);
  clEnqueueReadBuffer(queue, y_buf, CL_TRUE, 0, sizeof y, y, 0, NULL, NULL);
  clEnqueueReadBuffer(queue, mean_buf, CL_TRUE, 0, sizeof mean, mean, 0, NULL, NULL);
  clEnqueueReadBuffer(queue, rstd_buf, CL_TRUE, 0, sizeof rstd, rstd, 0, NULL, NULL);
  printf("row 0: mean %g rstd %g y[0] %g\n", mean[0], rstd[0], y[0]);

  clnorm_ctx_destroy(norm);
  clReleaseMemObject(x_buf);
  clReleaseMemObject(gamma_buf);
  clReleaseMemObject(beta_buf);
  clReleaseMemObject(y_buf);
  clReleaseMemObject(mean_buf);
  clReleaseMemObject(rstd_buf);
  clReleaseCommandQueue(queue);
  clReleaseContext(context);
  return 0;
}
