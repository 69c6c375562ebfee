#define _POSIX_C_SOURCE 200809L
#include "tool.h"

#include "platform.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

cl_device_id *tool_platform_devices(cl_platform_id platform, cl_uint *count, cl_int *err) {
  cl_int e = clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 0, NULL, count);
  cl_device_id *devs = e == CL_SUCCESS && *count ? calloc(*count, sizeof *devs) : NULL;
  if (devs &&
      (e = clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, *count, devs, NULL)) != CL_SUCCESS) {
    free(devs);
    devs = NULL;
  }
  if (!devs)
    *count = 0;
  if (err)
    *err = e;
  return devs;
}

size_t tool_devices(tool_device *out, size_t cap) {
  cl_uint nplat = 0;
  if (clGetPlatformIDs(0, NULL, &nplat) != CL_SUCCESS || nplat == 0)
    return 0;
  cl_platform_id *plats = calloc(nplat, sizeof *plats);
  if (!plats || clGetPlatformIDs(nplat, plats, NULL) != CL_SUCCESS) {
    free(plats);
    return 0;
  }
  size_t n = 0;
  for (cl_uint p = 0; p < nplat; p++) {
    cl_uint ndev = 0;
    cl_device_id *devs = tool_platform_devices(plats[p], &ndev, NULL);
    if (!devs)
      continue;
    for (cl_uint d = 0; d < ndev; d++, n++) {
      if (n >= cap)
        continue;
      tool_device *t = &out[n];
      memset(t, 0, sizeof *t);
      t->platform = plats[p];
      t->device = devs[d];
      t->index = (unsigned)n;
      clGetDeviceInfo(devs[d], CL_DEVICE_NAME, sizeof t->name - 1, t->name, NULL);
      clGetPlatformInfo(plats[p], CL_PLATFORM_NAME, sizeof t->platform_name - 1, t->platform_name,
                        NULL);
    }
    free(devs);
  }
  free(plats);
  return n;
}

int tool_contains_nocase(const char *hay, const char *needle) {
  const size_t n = strlen(needle);
  for (; *hay; hay++) {
    size_t i = 0;
    while (i < n && hay[i] && tolower((unsigned char)hay[i]) == tolower((unsigned char)needle[i]))
      i++;
    if (i == n)
      return 1;
  }
  return n == 0;
}

int tool_parse_uint(const char *text, char **end, unsigned long long *out) {
  /* strtoull alone takes leading spaces, "+" and "-" (negating into a huge value) */
  if (!isdigit((unsigned char)text[0]))
    return 0;
  errno = 0;
  *out = strtoull(text, end, 10);
  return errno == 0;
}

static int equal_nocase(const char *a, const char *b) {
  for (; *a && *b; a++, b++)
    if (tolower((unsigned char)*a) != tolower((unsigned char)*b))
      return 0;
  return *a == *b;
}

int tool_pick_device(const char *sel, tool_device *out, char *err, size_t err_size) {
  tool_device devs[64];
  const size_t n = tool_devices(devs, 64);
  if (n == 0) {
    snprintf(err, err_size,
             "no OpenCL platform or device found: install a driver (on Debian/Ubuntu: "
             "pocl-opencl-icd for the CPU) and check `clinfo -l`");
    return 0;
  }
  const size_t shown = n < 64 ? n : 64;
  cl_device_type want = 0;
  if (sel && equal_nocase(sel, "gpu"))
    want = CL_DEVICE_TYPE_GPU;
  else if (sel && equal_nocase(sel, "cpu"))
    want = CL_DEVICE_TYPE_CPU;
  if (!sel || !*sel || want) {
    for (size_t i = 0; i < shown; i++) {
      cl_device_type type = 0;
      clGetDeviceInfo(devs[i].device, CL_DEVICE_TYPE, sizeof type, &type, NULL);
      if (type & (want ? want : CL_DEVICE_TYPE_GPU)) {
        *out = devs[i];
        return 1;
      }
    }
    if (!want) {
      *out = devs[0];
      return 1;
    }
    snprintf(err, err_size, "no device of type %s among the %zu found (see `normtune devices`)",
             want == CL_DEVICE_TYPE_GPU ? "GPU" : "CPU", shown);
    return 0;
  }
  char *end = NULL;
  unsigned long long index = 0;
  if (tool_parse_uint(sel, &end, &index) && *end == '\0') {
    if (index < shown) {
      *out = devs[index];
      return 1;
    }
    snprintf(err, err_size, "no device with index %s (there are %zu: see `normtune devices`)", sel,
             shown);
    return 0;
  }
  for (size_t i = 0; i < shown; i++)
    if (tool_contains_nocase(devs[i].name, sel) ||
        tool_contains_nocase(devs[i].platform_name, sel)) {
      *out = devs[i];
      return 1;
    }
  snprintf(err, err_size, "no device name or platform contains \"%s\" (see `normtune devices`)",
           sel);
  return 0;
}

int tool_open(const tool_device *dev, cl_context *context, cl_command_queue *queue, char *err,
              size_t err_size) {
  cl_int e;
  *context = clCreateContext(NULL, 1, &dev->device, NULL, NULL, &e);
  if (e != CL_SUCCESS) {
    snprintf(err, err_size, "clCreateContext failed (%d)", (int)e);
    return 0;
  }
  *queue = clCreateCommandQueue(*context, dev->device, CL_QUEUE_PROFILING_ENABLE, &e);
  if (e != CL_SUCCESS) {
    snprintf(err, err_size, "clCreateCommandQueue failed (%d)", (int)e);
    clReleaseContext(*context);
    return 0;
  }
  return 1;
}

int tool_parse_names(const char *text, const char *(*name)(int), int count, const char *what,
                     unsigned *mask, char *err, size_t err_size) {
  char copy[256], known[256] = "";
  for (int i = 0; i < count; i++)
    snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s", i ? ", " : "", name(i));
  if (strlen(text) >= sizeof copy) {
    snprintf(err, err_size, "%s: \"%s\" is too long", what, text);
    return 0;
  }
  snprintf(copy, sizeof copy, "%s", text);
  *mask = 0;
  char *save = NULL;
  for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    int i = 0;
    if (strcmp(tok, "all") == 0) {
      *mask |= (1u << count) - 1u;
      continue;
    }
    while (i < count && strcmp(tok, name(i)) != 0)
      i++;
    if (i == count) {
      snprintf(err, err_size, "%s: unknown value \"%s\" (known: %s, all)", what, tok, known);
      return 0;
    }
    *mask |= 1u << i;
  }
  if (*mask == 0) {
    snprintf(err, err_size, "%s: no value given (known: %s, all)", what, known);
    return 0;
  }
  return 1;
}

int tool_open_device(const char *prog, const char *sel, tool_device *dev, cl_context *context,
                     cl_command_queue *queue) {
  char err[512];
  if (tool_pick_device(sel, dev, err, sizeof err) &&
      tool_open(dev, context, queue, err, sizeof err))
    return 1;
  fprintf(stderr, "%s: %s\n", prog, err);
  return 0;
}

/* Failure codes of the profiling readers (tool_profiling_error). */
#define PROFILE_FAILED (-1.0)
#define PROFILE_ZERO (-2.0)
#define PROFILE_BACKWARDS (-3.0)

const char *tool_profiling_error(double code) {
  if (code == PROFILE_ZERO)
    return "the profiling event reads zero time (start == end)";
  if (code == PROFILE_BACKWARDS)
    return "the profiling times are not monotonic (an end precedes its start)";
  return "the profiling information could not be read";
}

/* CLNORM_TEST_PROFILING: 0 (unset), 1 zero, 2 backwards, 3 fast (1 ns, as Rusticl's). */
static int test_profiling(void) {
  const char *mode = getenv("CLNORM_TEST_PROFILING");
  if (!mode || !*mode)
    return 0;
  return strcmp(mode, "zero") == 0 ? 1 : strcmp(mode, "backwards") == 0 ? 2 : 3;
}

/* The start and end of event in ns, after the test hook; a CL error code. */
static cl_int profile_read(cl_event event, cl_ulong *start, cl_ulong *end) {
  cl_int e = clGetEventProfilingInfo(event, CL_PROFILING_COMMAND_START, sizeof *start, start, NULL);
  if (e == CL_SUCCESS)
    e = clGetEventProfilingInfo(event, CL_PROFILING_COMMAND_END, sizeof *end, end, NULL);
  switch (test_profiling()) {
  case 1:
    *end = *start;
    break;
  case 2:
    *end = *start - 1000;
    break;
  case 3:
    *end = *start + 1;
    break;
  }
  return e;
}

/* Seconds from ns start to ns end, or the failure code. */
static double profile_seconds(cl_int e, cl_ulong start, cl_ulong end) {
  if (e != CL_SUCCESS)
    return PROFILE_FAILED;
  if (end < start)
    return PROFILE_BACKWARDS;
  return end == start ? PROFILE_ZERO : (double)(end - start) * 1e-9;
}

double tool_event_seconds(cl_event event) {
  cl_ulong start = 0, end = 0;
  cl_int e = clWaitForEvents(1, &event);
  if (e == CL_SUCCESS)
    e = profile_read(event, &start, &end);
  clReleaseEvent(event);
  return profile_seconds(e, start, end);
}

/* The times of two events of one call (ns): waits for last, reads first's and last's start and
 * end into t (FIRST_START, FIRST_END, LAST_START, LAST_END), releases both, and returns last's
 * own seconds or the failure code. */
enum { FIRST_START, FIRST_END, LAST_START, LAST_END, TIMES };
static double profile_pair(cl_event first, cl_event last, cl_ulong t[TIMES]) {
  cl_int e = clWaitForEvents(1, &last);
  if (e == CL_SUCCESS)
    e = profile_read(first, &t[FIRST_START], &t[FIRST_END]);
  if (e == CL_SUCCESS)
    e = profile_read(last, &t[LAST_START], &t[LAST_END]);
  clReleaseEvent(first);
  clReleaseEvent(last);
  return profile_seconds(e, t[LAST_START], t[LAST_END]);
}

double tool_span_seconds(cl_event first, cl_event last, double *last_own) {
  cl_ulong t[TIMES] = {0};
  const double own = profile_pair(first, last, t);
  if (own < 0)
    return own;
  if (t[LAST_END] < t[FIRST_END])
    return PROFILE_BACKWARDS;
  if (last_own)
    *last_own = own;
  return profile_seconds(CL_SUCCESS, t[FIRST_END], t[LAST_END]);
}

double tool_call_seconds(cl_event first, cl_event last) {
  cl_ulong t[TIMES] = {0};
  const double own = profile_pair(first, last, t);
  if (own < 0)
    return own;
  if (t[LAST_START] < t[FIRST_START] || t[FIRST_END] < t[FIRST_START])
    return PROFILE_BACKWARDS;
  return profile_seconds(CL_SUCCESS, t[FIRST_START], t[LAST_END]);
}

int tool_time_plausible(double event_s, double wall_s, double bytes, double copy_gbps, char *why,
                        size_t why_size) {
  if (!(event_s > 0)) {
    snprintf(why, why_size, "%s",
             event_s < 0 ? tool_profiling_error(event_s) : "the profiling events read zero time");
    return 0;
  }
  /* an in-order queue runs the kernel between the enqueue and the wait's return; 50 us and half
   * again for clocks that do not tick alike */
  if (wall_s > 0 && event_s > 1.5 * wall_s + 50e-6) {
    snprintf(why, why_size,
             "the profiling events give %.3g us, longer than the %.3g us of wall time around "
             "them",
             event_s * 1e6, wall_s * 1e6);
    return 0;
  }
  if (wall_s > 0 && event_s < TOOL_MIN_WALL_SHARE * wall_s) {
    snprintf(why, why_size,
             "the profiling events give %.3g us against %.3g us of wall time around them (less "
             "than %g of it)",
             event_s * 1e6, wall_s * 1e6, TOOL_MIN_WALL_SHARE);
    return 0;
  }
  const double limit = copy_gbps > 0 ? TOOL_CACHE_MARGIN * copy_gbps : TOOL_MAX_GBPS;
  if (bytes > 0 && bytes / event_s / 1e9 > limit) {
    snprintf(why, why_size,
             "the profiling events give %.3g us for %.0f bytes, %.3g GB/s: faster than the copy "
             "limit allows (%.0f GB/s%s)",
             event_s * 1e6, bytes, bytes / event_s / 1e9, limit,
             copy_gbps > 0 ? ", 10 times the copy bandwidth" : ", more than any memory moves");
    return 0;
  }
  return 1;
}

void tool_clock_fall_back(tool_clock *clock, const char *why) {
  if (!clock->wall)
    snprintf(clock->why, sizeof clock->why, "%s", why);
  clock->wall = 1;
}

const char *tool_clock_name(const tool_clock *clock) {
  return clock && clock->wall ? "wall clock" : "profiling events";
}

static int cmp_double(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

double tool_median(double *values, size_t n) {
  if (n == 0)
    return 0.0;
  qsort(values, n, sizeof *values, cmp_double);
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

static const char copy_source[] =
    "#define CAT_(a, b) a##b\n"
    "#define CAT(a, b) CAT_(a, b)\n"
    "typedef CAT(float, WIDTH) vec;\n"
    "__kernel void copy(__global const vec *src, __global vec *dst) {\n"
    "#if STREAM\n"
    "  __builtin_nontemporal_store(src[get_global_id(0)], &dst[get_global_id(0)]);\n"
    "#else\n"
    "  dst[get_global_id(0)] = src[get_global_id(0)];\n"
    "#endif\n"
    "}\n";

const char *tool_copy_name(tool_copy_kind kind) {
  return kind.width == 16
             ? (kind.stream ? "float16 copy kernel, streaming stores" : "float16 copy kernel")
             : (kind.stream ? "float4 copy kernel, streaming stores" : "float4 copy kernel");
}

cl_kernel tool_copy_kernel(cl_context context, cl_device_id device, tool_copy_kind kind,
                           cl_int *err) {
  const char *src = copy_source;
  char options[64];
  snprintf(options, sizeof options, "-DWIDTH=%u -DSTREAM=%d", kind.width, kind.stream);
  cl_kernel kernel = NULL;
  cl_program program = clCreateProgramWithSource(context, 1, &src, NULL, err);
  if (*err == CL_SUCCESS)
    *err = clBuildProgram(program, 1, &device, options, NULL, NULL);
  if (*err == CL_SUCCESS)
    kernel = clCreateKernel(program, "copy", err);
  if (program)
    clReleaseProgram(program); /* the kernel keeps it */
  return kernel;
}

cl_int tool_copy_enqueue(cl_command_queue queue, cl_kernel kernel, cl_mem src, cl_mem dst,
                         size_t items, cl_event *event) {
  cl_int e = clSetKernelArg(kernel, 0, sizeof src, &src);
  if (e == CL_SUCCESS)
    e = clSetKernelArg(kernel, 1, sizeof dst, &dst);
  if (e == CL_SUCCESS)
    e = clEnqueueNDRangeKernel(queue, kernel, 1, NULL, &items, NULL, 0, NULL, event);
  return e;
}

/* The copies copy_seconds times: at most COPY_RUNS, and once COPY_MIN_RUNS are timed, no more
 * than COPY_SECONDS of them (the rule time_variant follows for a variant). A GPU's copy of a few
 * hundred MB takes well under a millisecond: it runs all 64. PoCL's on 2 cores takes 15-35 ms,
 * where 64 runs of each of the 4 kinds, measured twice, made 10 of the 12 s of every small
 * `normtune tune` (2026-11-29). */
#define COPY_RUNS 64
#define COPY_MIN_RUNS 10
#define COPY_SECONDS 0.25

/* Median seconds of the timed copies from a to b (COPY_RUNS above) after 3 untimed ones, by their
 * events or (wall) by the wall clock, enqueue to clFinish; *wall_s (when not NULL) the median wall
 * time of the same runs. Negative with *e set on failure, or the profiling readers' failure
 * code. */
static double copy_seconds(cl_command_queue queue, cl_kernel kernel, cl_mem a, cl_mem b,
                           size_t items, int wall, double *wall_s, cl_int *e) {
  double times[COPY_RUNS], walls[COPY_RUNS];
  size_t runs = 0;
  double failure = 0.0, timed_from = 0.0;
  *e = clFinish(queue);
  for (int i = 0; *e == CL_SUCCESS && i < 3 + COPY_RUNS; i++) {
    if (i == 3)
      timed_from = tool_now();
    else if (runs >= COPY_MIN_RUNS && tool_now() - timed_from > COPY_SECONDS)
      break;
    cl_event ev;
    const double start = tool_now();
    *e = tool_copy_enqueue(queue, kernel, a, b, items, &ev);
    if (*e != CL_SUCCESS)
      break;
    double t;
    if (wall) {
      *e = clWaitForEvents(1, &ev);
      clReleaseEvent(ev);
      t = tool_now() - start;
    } else {
      t = tool_event_seconds(ev);
    }
    if (t < 0)
      failure = t;
    if (i >= 3 && t > 0) {
      walls[runs] = tool_now() - start;
      times[runs++] = t;
    }
  }
  if (*e != CL_SUCCESS)
    return -1.0;
  if (runs == 0)
    return failure < 0 ? failure : PROFILE_ZERO;
  if (wall_s)
    *wall_s = tool_median(walls, runs);
  return tool_median(times, runs);
}

double tool_copy_gbps(cl_context context, cl_command_queue queue, cl_device_id device, size_t bytes,
                      int stream, tool_copy_kind *best, tool_clock *clock, char *err,
                      size_t err_size) {
  bytes = bytes / 64 * 64;
  double gbps = -1.0;
  tool_copy_kind fastest = {4, 0};
  cl_int e;
  cl_mem a = clCreateBuffer(context, CL_MEM_READ_ONLY, bytes, NULL, &e);
  cl_mem b = e == CL_SUCCESS ? clCreateBuffer(context, CL_MEM_WRITE_ONLY, bytes, NULL, &e) : NULL;
  if (e == CL_SUCCESS) {
    const cl_uchar one = 1;
    e = clEnqueueFillBuffer(queue, a, &one, 1, 0, bytes, 0, NULL, NULL);
  }
  static const tool_copy_kind kinds[] = {{4, 0}, {16, 0}, {4, 1}, {16, 1}};
  for (size_t k = 0; e == CL_SUCCESS && k < (stream ? 4u : 2u); k++) {
    cl_kernel kernel = tool_copy_kernel(context, device, kinds[k], &e);
    const int wall = clock && clock->wall;
    double wall_s = 0.0, s = -1.0;
    if (e == CL_SUCCESS)
      s = copy_seconds(queue, kernel, a, b, bytes / (4 * kinds[k].width), wall, &wall_s, &e);
    if (kernel)
      clReleaseKernel(kernel);
    if (e != CL_SUCCESS) {
      snprintf(err, err_size, "the copy-bandwidth kernel (%s) failed: OpenCL error %d",
               tool_copy_name(kinds[k]), (int)e);
      break;
    }
    char why[256];
    if (!wall && !tool_time_plausible(s, wall_s, 2.0 * (double)bytes, 0.0, why, sizeof why)) {
      if (!clock) {
        snprintf(err, err_size, "the copy-bandwidth kernel (%s): %s", tool_copy_name(kinds[k]),
                 why);
        e = CL_PROFILING_INFO_NOT_AVAILABLE;
        break;
      }
      char what[320];
      snprintf(what, sizeof what, "%s (the %s)", why, tool_copy_name(kinds[k]));
      tool_clock_fall_back(clock, what);
      if (clock->events_only) {
        snprintf(err, err_size, "the copy-bandwidth kernel (%s): %s", tool_copy_name(kinds[k]),
                 why);
        e = CL_PROFILING_INFO_NOT_AVAILABLE;
        break;
      }
      gbps = -1.0; /* every kind again, by the wall clock */
      k = (size_t)-1;
      continue;
    }
    const double g = 2.0 * (double)bytes / s / 1e9;
    if (g > gbps) {
      gbps = g;
      fastest = kinds[k];
    }
  }
  if (e != CL_SUCCESS)
    gbps = -1.0;
  if (best)
    *best = fastest;
  if (b)
    clReleaseMemObject(b);
  if (a)
    clReleaseMemObject(a);
  return gbps;
}

double tool_op_bytes(const clnorm_call *call) {
  const double elem = call->dtype == CLNORM_F32 ? 4.0 : 2.0; /* float16, bfloat16: 2 */
  const double matrix = (double)call->rows * (double)call->cols * elem;
  const double vector = (double)call->cols * elem, stats = (double)call->rows * 4.0;
  /* x and y (dx) always; residual, sum_out and dy when the call has them */
  double bytes = 2.0 * matrix;
  bytes += (call->residual.buf ? matrix : 0.0) + (call->sum_out.buf ? matrix : 0.0);
  bytes += call->dy.buf ? matrix : 0.0;
  /* gamma, beta read; dgamma, dbeta written: cols elements of dtype each */
  bytes += (call->gamma ? vector : 0.0) + (call->beta ? vector : 0.0);
  bytes += (call->dgamma ? vector : 0.0) + (call->dbeta ? vector : 0.0);
  /* mean and rstd: float32, written by forward ops, read by backward ones */
  bytes += (call->mean ? stats : 0.0) + (call->rstd ? stats : 0.0);
  return bytes;
}

double tool_now(void) { return clnorm__now_seconds(); }

void tool_json_string(const char *s) {
  putchar('"');
  for (; *s; s++) {
    const unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\')
      printf("\\%c", c);
    else if (c < 0x20)
      printf("\\u%04x", c);
    else
      putchar(c);
  }
  putchar('"');
}

void tool_fill_random(void *p, size_t n, clnorm_dtype dtype, uint32_t seed) {
  for (size_t i = 0; i < n; i++) {
    seed = seed * 1664525u + 1013904223u;
    const float v = (float)(seed >> 8) / 4194304.0f - 2.0f;
    if (dtype == CLNORM_F32) {
      ((float *)p)[i] = v;
    } else if (dtype == CLNORM_BF16) {
      uint32_t bits;
      memcpy(&bits, &v, sizeof bits);
      ((uint16_t *)p)[i] = (uint16_t)(bits >> 16);
    } else { /* a float16 of magnitude [0.5, 2) and either sign */
      ((uint16_t *)p)[i] = (uint16_t)(0x3800u + ((seed >> 9) & 0x7ffu) + ((seed >> 20) & 0x8000u));
    }
  }
}
