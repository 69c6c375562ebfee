/* clnorm in the shape of a transformer's residual stream, built against an installed clnorm
 * (examples/CMakeLists.txt: find_package(clnorm); examples/Makefile: pkg-config clnorm).
 *
 * A float16 residual stream of TOKENS x HIDDEN goes through LAYERS sublayers, pre-norm, the way
 * inference engines fuse the residual add into the norm:
 *
 *   h, n  = add_rmsnorm(delta, h)   h = h + delta in place (sum_out is the residual itself),
 *                                   n = RMSNorm(h) * gamma[layer]
 *   delta = sublayer(n)             attention or MLP in a real model; here an elementwise
 *                                   w * n + b on the host, stored as float16
 *
 * The first call adds a zero delta; one more call after the last sublayer gives the final norm.
 * The device's final h and n are checked against the same steps computed in float64 on the host,
 * rounded to float16 wherever the library stores float16 (h after each add, n). Runs on the
 * first GPU of any OpenCL platform, else on the first device (PoCL's CPU device, say). Prints
 * the worst error and exits 1 when it exceeds the tolerance below, or when anything fails. */
#define CL_TARGET_OPENCL_VERSION 120 /* this program's OpenCL API: clnorm.h leaves it open */
#include <clnorm.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { TOKENS = 64, HIDDEN = 1024, LAYERS = 8 };
static const float eps = 1e-6f;

/* Largest |device - reference| in float16 ulps of the reference value, or of the row's root mean
 * square where that is larger (a value near zero after cancellation has tiny ulps but inherits
 * the error of the terms that cancelled). Float32 arithmetic on the device rounds differently
 * from float64 now and then, and a float16 value then lands one ulp away; the stream carries
 * such differences from layer to layer, so a few ulps are allowed. */
static const double tolerance_ulps = 4.0;

/* IEEE binary16 <-> double, rounding to nearest even (the library's rounding). */
static double half_to_double(uint16_t h) {
  const unsigned exponent = (h >> 10) & 0x1fu, mantissa = h & 0x3ffu;
  double v;
  if (exponent == 0)
    v = ldexp(mantissa, -24);
  else if (exponent == 31)
    v = mantissa ? NAN : INFINITY;
  else
    v = ldexp(mantissa + 1024, (int)exponent - 25);
  return (h & 0x8000u) ? -v : v;
}

static uint16_t half_from_double(double v) {
  const unsigned sign = signbit(v) ? 0x8000u : 0u;
  if (isnan(v))
    return (uint16_t)(sign | 0x7e00u);
  const double a = fabs(v);
  if (a >= 65520.0) /* halfway between 65504, the largest float16, and 65536 rounds up */
    return (uint16_t)(sign | 0x7c00u);
  if (a < 0x1p-14) /* subnormal: a multiple of 2^-24; 1024 of them is the smallest normal */
    return (uint16_t)(sign | (unsigned)nearbyint(a * 0x1p24));
  int e;
  frexp(a, &e); /* 2^(e-1) <= a < 2^e */
  /* 11 significant bits; a carry into bit 11 moves on to the next exponent by itself. */
  const unsigned significand = (unsigned)nearbyint(ldexp(a, 11 - e));
  return (uint16_t)(sign | (((unsigned)(e + 14) << 10) + significand - 1024u));
}

/* A small deterministic generator, so that every run checks the same numbers. */
static uint64_t rng_state = 0x9e3779b97f4a7c15u;
static double uniform(double lo, double hi) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return lo + (hi - lo) * (double)(rng_state >> 11) * 0x1p-53;
}

/* The weights: gamma of each norm, and the stand-in sublayers' w and b. */
typedef struct model {
  uint16_t gamma[LAYERS + 1][HIDDEN];
  double w[LAYERS][HIDDEN], b[LAYERS][HIDDEN];
} model;

static void sublayer(const model *m, int layer, const uint16_t *normed, uint16_t *delta) {
  for (size_t i = 0; i < (size_t)TOKENS * HIDDEN; i++) {
    const size_t c = i % HIDDEN;
    delta[i] = half_from_double(m->w[layer][c] * half_to_double(normed[i]) + m->b[layer][c]);
  }
}

/* clnorm_add_rmsnorm in float64: h = x + h, stored as float16; y = h * rstd * gamma, stored as
 * float16, with rstd = 1 / sqrt(mean(h^2) + eps). */
static void reference_add_rmsnorm(const uint16_t *x, uint16_t *h, const uint16_t *gamma,
                                  uint16_t *y) {
  for (size_t r = 0; r < TOKENS; r++) {
    double sum_sq = 0.0;
    for (size_t c = 0; c < HIDDEN; c++) {
      const size_t i = r * HIDDEN + c;
      h[i] = half_from_double(half_to_double(x[i]) + half_to_double(h[i]));
      sum_sq += half_to_double(h[i]) * half_to_double(h[i]);
    }
    const double rstd = 1.0 / sqrt(sum_sq / HIDDEN + (double)eps);
    for (size_t c = 0; c < HIDDEN; c++) {
      const size_t i = r * HIDDEN + c;
      y[i] = half_from_double(half_to_double(h[i]) * rstd * half_to_double(gamma[c]));
    }
  }
}

/* One float16 ulp at |v|: 2^-24 for subnormals, else 2^(exponent - 10). */
static double half_ulp(double v) {
  int e;
  frexp(fabs(v), &e);
  return fabs(v) < 0x1p-14 ? 0x1p-24 : ldexp(1.0, e - 11);
}

/* The largest error in ulps (see tolerance_ulps); NaN or Inf where the reference is finite is an
 * infinite error. *max_abs receives the largest absolute difference. */
static double max_ulp_error(const uint16_t *got, const uint16_t *want, double *max_abs) {
  double worst = 0.0;
  *max_abs = 0.0;
  for (size_t r = 0; r < TOKENS; r++) {
    double sum_sq = 0.0;
    for (size_t c = 0; c < HIDDEN; c++)
      sum_sq += half_to_double(want[r * HIDDEN + c]) * half_to_double(want[r * HIDDEN + c]);
    const double rms = sqrt(sum_sq / HIDDEN);
    for (size_t c = 0; c < HIDDEN; c++) {
      const double g = half_to_double(got[r * HIDDEN + c]),
                   w = half_to_double(want[r * HIDDEN + c]);
      const double diff = isfinite(g) ? fabs(g - w) : INFINITY;
      const double ulps = diff / half_ulp(fabs(w) > rms ? w : rms);
      worst = ulps > worst ? ulps : worst;
      *max_abs = diff > *max_abs ? diff : *max_abs;
    }
  }
  return worst;
}

static void fail_cl(const char *what, cl_int err) {
  fprintf(stderr, "transformer_block: %s failed: OpenCL error %d\n", what, (int)err);
  exit(1);
}

static void fail_clnorm(const char *what, clnorm_status st, const clnorm_ctx *ctx) {
  fprintf(stderr, "transformer_block: %s: %s: %s\n", what, clnorm_status_string(st),
          clnorm_ctx_errmsg(ctx));
  exit(1);
}

#define CHECK_CL(call)                                                                             \
  do {                                                                                             \
    const cl_int check_err_ = (call);                                                              \
    if (check_err_ != CL_SUCCESS)                                                                  \
      fail_cl(#call, check_err_);                                                                  \
  } while (0)

/* The first GPU of any platform, else the first device of any kind. */
static void pick_device(cl_platform_id *platform, cl_device_id *device) {
  cl_platform_id platforms[16];
  cl_uint count = 0;
  CHECK_CL(clGetPlatformIDs(16, platforms, &count));
  count = count < 16 ? count : 16;
  const cl_device_type kinds[2] = {CL_DEVICE_TYPE_GPU, CL_DEVICE_TYPE_ALL};
  for (int k = 0; k < 2; k++)
    for (cl_uint p = 0; p < count; p++) {
      cl_uint found = 0;
      if (clGetDeviceIDs(platforms[p], kinds[k], 1, device, &found) == CL_SUCCESS && found > 0) {
        *platform = platforms[p];
        return;
      }
    }
  fprintf(stderr, "transformer_block: no OpenCL device found\n");
  exit(1);
}

int main(void) {
  /* The header this was compiled with and the library it runs with must share a major version
   * (the shared library's SONAME says the same). */
  printf("clnorm %s (header %s)\n", clnorm_version_string(), CLNORM_VERSION_STRING);
  if (clnorm_version_number() / 10000 != CLNORM_VERSION_MAJOR) {
    fprintf(stderr, "transformer_block: built with clnorm %s, running with %s\n",
            CLNORM_VERSION_STRING, clnorm_version_string());
    return 1;
  }

  static model m;
  static uint16_t stream[TOKENS * HIDDEN], delta[TOKENS * HIDDEN], normed[TOKENS * HIDDEN];
  static uint16_t ref_stream[TOKENS * HIDDEN], ref_delta[TOKENS * HIDDEN],
      ref_normed[TOKENS * HIDDEN];
  /* Embeddings of a few magnitudes, with some outlier channels as large models have. */
  for (size_t i = 0; i < (size_t)TOKENS * HIDDEN; i++) {
    const size_t r = i / HIDDEN, c = i % HIDDEN;
    const double scale = (1.0 + (double)(r % 4)) * (c % 97 == 0 ? 16.0 : 1.0);
    stream[i] = half_from_double(scale * uniform(-1.0, 1.0));
  }
  for (int l = 0; l <= LAYERS; l++)
    for (size_t c = 0; c < HIDDEN; c++)
      m.gamma[l][c] = half_from_double(uniform(0.5, 1.5));
  for (int l = 0; l < LAYERS; l++)
    for (size_t c = 0; c < HIDDEN; c++) {
      m.w[l][c] = uniform(0.1, 0.4) * (uniform(0.0, 1.0) < 0.5 ? -1.0 : 1.0);
      m.b[l][c] = uniform(-0.05, 0.05);
    }
  memcpy(ref_stream, stream, sizeof stream);

  /* OpenCL set-up: the application owns the context, the queue and every buffer. */
  cl_platform_id platform;
  cl_device_id device;
  pick_device(&platform, &device);
  char device_name[256] = "", platform_name[256] = "";
  clGetDeviceInfo(device, CL_DEVICE_NAME, sizeof device_name - 1, device_name, NULL);
  clGetPlatformInfo(platform, CL_PLATFORM_NAME, sizeof platform_name - 1, platform_name, NULL);
  printf("device: %s (%s)\n", device_name, platform_name);
  const cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)platform, 0};
  cl_int err;
  cl_context context = clCreateContext(props, 1, &device, NULL, NULL, &err);
  CHECK_CL(err);
  cl_command_queue queue = clCreateCommandQueue(context, device, 0, &err);
  CHECK_CL(err);
  cl_mem stream_buf = clCreateBuffer(context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                                     sizeof stream, stream, &err);
  CHECK_CL(err);
  cl_mem delta_buf = clCreateBuffer(context, CL_MEM_READ_ONLY, sizeof delta, NULL, &err);
  CHECK_CL(err);
  cl_mem normed_buf = clCreateBuffer(context, CL_MEM_WRITE_ONLY, sizeof normed, NULL, &err);
  CHECK_CL(err);
  cl_mem gamma_buf[LAYERS + 1];
  for (int l = 0; l <= LAYERS; l++) {
    gamma_buf[l] = clCreateBuffer(context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                                  sizeof m.gamma[l], m.gamma[l], &err);
    CHECK_CL(err);
  }
  memset(delta, 0, sizeof delta);
  CHECK_CL(clEnqueueWriteBuffer(queue, delta_buf, CL_TRUE, 0, sizeof delta, delta, 0, NULL, NULL));

  /* One clnorm context per OpenCL context and device, for the application's life. */
  clnorm_ctx *norm = NULL;
  clnorm_status st = clnorm_ctx_create(context, device, &norm);
  if (st != CLNORM_OK)
    fail_clnorm("clnorm_ctx_create", st, NULL);

  /* {buffer, offset, stride} in elements; stride 0 means HIDDEN. x is the sublayer's output,
   * residual and sum_out are the stream: identical operands, so the add happens in place. */
  const clnorm_rows x = {delta_buf, 0, 0}, h = {stream_buf, 0, 0}, y = {normed_buf, 0, 0};
  for (int l = 0; l <= LAYERS; l++) {
    cl_event done;
    st = clnorm_add_rmsnorm(norm, queue, TOKENS, HIDDEN, CLNORM_F16, eps, x, h, h, gamma_buf[l], y,
                            NULL, 0, NULL, &done);
    if (st != CLNORM_OK)
      fail_clnorm("clnorm_add_rmsnorm", st, norm);
    /* The call only enqueued the work: its event orders the read after it. */
    CHECK_CL(
        clEnqueueReadBuffer(queue, normed_buf, CL_TRUE, 0, sizeof normed, normed, 1, &done, NULL));
    CHECK_CL(clReleaseEvent(done));
    reference_add_rmsnorm(ref_delta, ref_stream, m.gamma[l], ref_normed);
    if (l == LAYERS)
      break;
    sublayer(&m, l, normed, delta);
    sublayer(&m, l, ref_normed, ref_delta);
    CHECK_CL(
        clEnqueueWriteBuffer(queue, delta_buf, CL_TRUE, 0, sizeof delta, delta, 0, NULL, NULL));
  }
  CHECK_CL(
      clEnqueueReadBuffer(queue, stream_buf, CL_TRUE, 0, sizeof stream, stream, 0, NULL, NULL));

  double abs_h, abs_n;
  const double ulps_h = max_ulp_error(stream, ref_stream, &abs_h);
  const double ulps_n = max_ulp_error(normed, ref_normed, &abs_n);
  const int pass = ulps_h <= tolerance_ulps && ulps_n <= tolerance_ulps;
  printf("%d tokens x %d hidden, float16, %d layers of clnorm_add_rmsnorm (eps %g)\n", TOKENS,
         HIDDEN, LAYERS, (double)eps);
  printf("residual stream: max error %g float16 ulps (max |error| %.3g)\n", ulps_h, abs_h);
  printf("final norm:      max error %g float16 ulps (max |error| %.3g)\n", ulps_n, abs_n);
  printf("tolerance %g ulps of max(|reference|, row RMS): %s\n", tolerance_ulps,
         pass ? "PASS" : "FAIL");

  clnorm_ctx_destroy(norm);
  for (int l = 0; l <= LAYERS; l++)
    clReleaseMemObject(gamma_buf[l]);
  clReleaseMemObject(stream_buf);
  clReleaseMemObject(delta_buf);
  clReleaseMemObject(normed_buf);
  clReleaseCommandQueue(queue);
  clReleaseContext(context);
  return pass ? 0 : 1;
}
