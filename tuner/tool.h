/* Shared by normtune and the demo: picking a device, timing kernels with profiling events, and
 * the device's copy bandwidth. */
#ifndef CLNORM_TOOL_H
#define CLNORM_TOOL_H

#include "clnorm_variant.h"

#include <stddef.h>
#include <stdint.h>

typedef struct tool_device {
  cl_platform_id platform;
  cl_device_id device;
  char name[256];
  char platform_name[256];
  unsigned index; /* position in `normtune devices` */
} tool_device;

/* Every device of every platform, in `normtune devices` order; returns the count (0: none).
 * out may be NULL when cap is 0. */
size_t tool_devices(tool_device *out, size_t cap);

/* sel NULL or "": the first GPU, else the first device. "gpu" or "cpu" (any case): the first
 * device of that type. A number: that index. Otherwise a case-insensitive substring of the device
 * or platform name. Returns 0 and writes a message into err when nothing matches or no OpenCL
 * platform exists. */
int tool_pick_device(const char *sel, tool_device *out, char *err, size_t err_size);

/* Decimal digits at text (no sign, no space) into *out; *end receives the first character after
 * them. Returns 0 when text does not start with a digit or the value overflows. */
int tool_parse_uint(const char *text, char **end, unsigned long long *out);

/* A context and an in-order queue with profiling on. */
int tool_open(const tool_device *dev, cl_context *context, cl_command_queue *queue, char *err,
              size_t err_size);

/* A comma-separated list of the names name(0..count-1), or "all", as a bit mask in *mask. Returns 0
 * with a message that begins with `what` in err when a name is unknown, the list names nothing or
 * it is too long. */
int tool_parse_names(const char *text, const char *(*name)(int), int count, const char *what,
                     unsigned *mask, char *err, size_t err_size);

/* Every device of the platform, in an array to free (NULL and *count 0 when there is none or
 * the query or the allocation failed; *err, when not NULL, gets clGetDeviceIDs' code). */
cl_device_id *tool_platform_devices(cl_platform_id platform, cl_uint *count, cl_int *err);

/* tool_pick_device, then tool_open: the bench tools' start. On failure prints "prog: <why>" to
 * stderr and returns 0. */
int tool_open_device(const char *prog, const char *sel, tool_device *dev, cl_context *context,
                     cl_command_queue *queue);

/* Seconds between an event's start and end; releases the event. Negative on failure. */
double tool_event_seconds(cl_event event);

/* Seconds from the end of `first` (a marker enqueued just before the work) to the end of
 * `last`, both on one in-order queue with profiling on: the whole of a call that enqueues
 * several kernels and returns the event of the last one. *last_own (may be NULL) receives
 * `last`'s own start-to-end seconds. Waits for `last`; releases both. Negative on failure. */
double tool_span_seconds(cl_event first, cl_event last, double *last_own);

/* Median of n values (reorders them). */
double tool_median(double *values, size_t n);

/* Seconds from first's start to last's end (the kernels of one call, clnorm_run_span), after
 * waiting for last; releases both. Negative when the profiling information is missing or the
 * times do not follow each other. */
double tool_call_seconds(cl_event first, cl_event last);

/* A copy kernel, the yardstick of every GB/s figure: "copy(src, dst)" moves one float4 or
 * float16 per work-item, with plain stores or streaming (non-temporal) ones, as the library's
 * kernels use on some devices (clnorm_device_info.stream_stores). */
typedef struct tool_copy_kind {
  unsigned width; /* floats per work-item: 4 or 16 */
  int stream;     /* streaming stores */
} tool_copy_kind;

/* "float4 copy kernel", "float16 copy kernel, streaming stores", ...: static text. */
const char *tool_copy_name(tool_copy_kind kind);

/* The copy kernel of `kind` built for device; NULL with *err set on failure. */
cl_kernel tool_copy_kernel(cl_context context, cl_device_id device, tool_copy_kind kind,
                           cl_int *err);

/* Enqueues `kernel` (from tool_copy_kernel) to copy src to dst in `items` work-items (bytes / (4 *
 * width)); *event receives its event. */
cl_int tool_copy_enqueue(cl_command_queue queue, cl_kernel kernel, cl_mem src, cl_mem dst,
                         size_t items, cl_event *event);

/* The device's copy bandwidth in GB/s (bytes read + written per second): the fastest of the copy
 * kernels over `bytes` bytes (rounded down to 64), each the median of 64 timed runs after 3
 * untimed ones: float4 and float16 per work-item, and with `stream` (the library writes with
 * streaming stores on this device) both again with streaming stores. The yardstick is the best
 * copy among these, whatever the norms use. *best (may be NULL) receives the fastest kind.
 * Negative on failure, with err set. */
double tool_copy_gbps(cl_context context, cl_command_queue queue, cl_device_id device,
                      size_t bytes, int stream, tool_copy_kind *best, char *err,
                      size_t err_size);

/* Monotonic time in seconds. */
double tool_now(void);

/* Writes s to standard output as a JSON string literal (quotes and control characters
 * escaped). */
void tool_json_string(const char *s);

/* Whether needle occurs in hay, ignoring ASCII case. */
int tool_contains_nocase(const char *hay, const char *needle);

/* Bytes a call must move at least: each input read once, each output written once, in the
 * call's dtype (mean and rstd: float32). Forward: x, gamma, beta read; y, mean, rstd written;
 * add ops also residual read and sum_out written. Backward: dy, x, gamma, mean, rstd read; dx,
 * dgamma, dbeta written. Buffers the call leaves NULL are not counted (x and y always are). */
double tool_op_bytes(const clnorm_call *call);

/* n random elements of `dtype` at p, from `seed`: float32 and bfloat16 in [-2, 2), float16 of
 * magnitude [0.5, 2) and either sign (float16 and bfloat16 as their bits). For the benchmarks,
 * whose checks compare settings with each other, not with a reference. */
void tool_fill_random(void *p, size_t n, clnorm_dtype dtype, uint32_t seed);

#endif
