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
      clGetPlatformInfo(plats[p], CL_PLATFORM_NAME, sizeof t->platform_name - 1,
                        t->platform_name, NULL);
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
    snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s", i ? ", " : "",
             name(i));
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

/* The profiling times (ns) that profile() reads. */
enum { FIRST_START, FIRST_END, LAST_START, LAST_END, TIMES };

/* Waits for last, reads the start and end of first (NULL: of last) and of last into t, and
 * releases a reference to each: 0 where a call failed. */
static int profile(cl_event first, cl_event last, cl_ulong t[TIMES]) {
  static const cl_profiling_info which[2] = {CL_PROFILING_COMMAND_START, CL_PROFILING_COMMAND_END};
  cl_int e = clWaitForEvents(1, &last);
  for (int i = 0; i < TIMES && e == CL_SUCCESS; i++)
    e = clGetEventProfilingInfo(i < LAST_START && first ? first : last, which[i % 2], sizeof t[i],
                                &t[i], NULL);
  if (first)
    clReleaseEvent(first);
  clReleaseEvent(last);
  return e == CL_SUCCESS;
}

double tool_event_seconds(cl_event event) {
  cl_ulong t[TIMES] = {0};
  return profile(NULL, event, t) ? (double)(t[LAST_END] - t[LAST_START]) * 1e-9 : -1.0;
}

double tool_span_seconds(cl_event first, cl_event last, double *last_own) {
  cl_ulong t[TIMES] = {0};
  if (!profile(first, last, t) || t[LAST_END] < t[FIRST_END] || t[LAST_END] < t[LAST_START])
    return -1.0;
  if (last_own)
    *last_own = (double)(t[LAST_END] - t[LAST_START]) * 1e-9;
  return (double)(t[LAST_END] - t[FIRST_END]) * 1e-9;
}

double tool_call_seconds(cl_event first, cl_event last) {
  cl_ulong t[TIMES] = {0};
  if (!profile(first, last, t) || t[LAST_END] < t[LAST_START] || t[LAST_START] < t[FIRST_START])
    return -1.0;
  return (double)(t[LAST_END] - t[FIRST_START]) * 1e-9;
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
  return kind.width == 16 ? (kind.stream ? "float16 copy kernel, streaming stores"
                                         : "float16 copy kernel")
                          : (kind.stream ? "float4 copy kernel, streaming stores"
                                         : "float4 copy kernel");
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

/* Median seconds of 64 timed copies from a to b after 3 untimed ones; negative with *e set on
 * failure. */
static double copy_seconds(cl_command_queue queue, cl_kernel kernel, cl_mem a, cl_mem b,
                           size_t items, cl_int *e) {
  double times[64];
  size_t runs = 0;
  *e = CL_SUCCESS;
  for (int i = 0; *e == CL_SUCCESS && i < 3 + 64; i++) {
    cl_event ev;
    *e = tool_copy_enqueue(queue, kernel, a, b, items, &ev);
    if (*e != CL_SUCCESS)
      break;
    const double t = tool_event_seconds(ev);
    if (i >= 3 && t > 0)
      times[runs++] = t;
  }
  if (*e == CL_SUCCESS && runs == 0)
    *e = CL_PROFILING_INFO_NOT_AVAILABLE;
  return *e == CL_SUCCESS ? tool_median(times, runs) : -1.0;
}

double tool_copy_gbps(cl_context context, cl_command_queue queue, cl_device_id device,
                      size_t bytes, int stream, tool_copy_kind *best, char *err,
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
    const double s =
        e == CL_SUCCESS ? copy_seconds(queue, kernel, a, b, bytes / (4 * kinds[k].width), &e)
                        : -1.0;
    if (kernel)
      clReleaseKernel(kernel);
    if (e != CL_SUCCESS) {
      snprintf(err, err_size, "the copy-bandwidth kernel (%s) failed: OpenCL error %d",
               tool_copy_name(kinds[k]), (int)e);
      break;
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
