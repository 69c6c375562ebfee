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

/* Profiling events that can be believed (issue 23). Mesa's Rusticl 22.3 (llvmpipe) reports 0,
 * 1, 2 and 3 ns as every command's queued, submit, start and end times: every kernel "takes"
 * 1 ns. Every time read from profiling events (clnorm_demo, normtune bench, tune and verify, the
 * stored results `normtune report` draws) passes tool_time_plausible; where it fails, bench,
 * verify and the demo time by the wall clock (tool_clock) and say so, tune refuses. */
#define TOOL_MAX_GBPS 100000.0   /* no device's memory moves 100 TB/s (the H200's: 4.8) */
#define TOOL_CACHE_MARGIN 10.0   /* data in caches: up to 10 times the copy bandwidth */
#define TOOL_MIN_WALL_SHARE 1e-3 /* a kernel's events cover at least this share of its wall time   \
                                  */

/* 1 when `event_s` seconds, a kernel time from profiling events, is plausible for work that
 * moves `bytes` bytes (0: unknown) and took `wall_s` seconds of wall time around it, enqueue to
 * completion (0: unknown); `copy_gbps` is the device's copy bandwidth (0: not known, or the copy
 * itself: TOOL_MAX_GBPS is the limit). Else 0 with the reason in why: missing or zero, longer
 * than the wall clock, a tiny share of it, or faster than the copy limit allows (TOOL_CACHE_MARGIN
 * times copy_gbps). Pass medians of several runs: one run's wall time may hold a preemption. */
int tool_time_plausible(double event_s, double wall_s, double bytes, double copy_gbps, char *why,
                        size_t why_size);

/* What the profiling readers below return on failure, as text ("the profiling query failed",
 * "zero", "its end precedes its start"); static. */
const char *tool_profiling_error(double code);

/* How a tool times kernels: by profiling events, or (wall) by the wall clock from enqueue to
 * clFinish, launch latency included, because the events failed tool_time_plausible. */
typedef struct tool_clock {
  int wall;
  char why[320];   /* why the events were not believed, when wall */
  int events_only; /* set by the caller: no timing by the wall clock (tune refuses instead) */
} tool_clock;

/* Records that events are not to be believed: sets clock->wall and clock->why (the first reason
 * kept). */
void tool_clock_fall_back(tool_clock *clock, const char *why);

/* "profiling events" or "wall clock": static. */
const char *tool_clock_name(const tool_clock *clock);

/* Seconds between an event's start and end; releases the event. Negative on failure: the query
 * failed, the time is zero or the end precedes the start (tool_profiling_error says which).
 * CLNORM_TEST_PROFILING=zero|backwards|fast (a test hook, docs/TESTING.md) makes every event
 * read zero, end before start, or 1 ns as Rusticl's do. */
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
 * kernels over `bytes` bytes (rounded down to 64), each the median of up to 64 timed runs after 3
 * untimed ones (at least 10, and no more once 0.25 s of them ran: tool.c): float4 and float16 per work-item, and with `stream` (the library writes with
 * streaming stores on this device) both again with streaming stores. The yardstick is the best
 * copy among these, whatever the norms use. *best (may be NULL) receives the fastest kind.
 * The copies' events pass tool_time_plausible or, with clock, the copies are timed again by the
 * wall clock and *clock records why (clock->wall already set: by the wall clock at once;
 * clock->events_only: why recorded, and -1 returned without timing again).
 * Negative on failure, with err set (clock NULL: implausible events are a failure). */
double tool_copy_gbps(cl_context context, cl_command_queue queue, cl_device_id device, size_t bytes,
                      int stream, tool_copy_kind *best, tool_clock *clock, char *err,
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
