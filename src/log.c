/* The log (clnorm.h, "Logging"): its level, where its lines go, and the per-call trace lines,
 * which an event callback finishes when the call's kernels complete. */
#include "internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LEVEL_UNREAD (-1)

static atomic_int level = LEVEL_UNREAD;
static clnorm_once env_once = CLNORM_ONCE_INIT;
/* Guards the callback, and serializes the lines so that no two interleave. */
static clnorm_mutex sink_lock = CLNORM_MUTEX_INIT;
static clnorm_log_fn sink_fn;
static void *sink_user;

static void emit(clnorm_log_level lvl, const char *text) {
  clnorm__mutex_lock(&sink_lock);
  if (sink_fn)
    sink_fn(lvl, text, sink_user);
  else
    fprintf(stderr, "clnorm: %s\n", text);
  clnorm__mutex_unlock(&sink_lock);
}

static int same_ignoring_case(const char *a, const char *b) {
  for (; *a && *b; a++, b++) {
    const char ca = *a >= 'A' && *a <= 'Z' ? (char)(*a - 'A' + 'a') : *a;
    if (ca != *b)
      return 0;
  }
  return *a == *b;
}

/* "debug" was the only other value CLNORM_LOG took before the levels (it meant info); "warning"
 * is what people type for warn. */
static int parse_level(const char *text, int *out) {
  static const struct {
    const char *name;
    clnorm_log_level lvl;
  } names[] = {{"off", CLNORM_LOG_OFF},    {"error", CLNORM_LOG_ERROR},
               {"warn", CLNORM_LOG_WARN},  {"warning", CLNORM_LOG_WARN},
               {"info", CLNORM_LOG_INFO},  {"debug", CLNORM_LOG_INFO},
               {"trace", CLNORM_LOG_TRACE}};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (same_ignoring_case(text, names[i].name)) {
      *out = (int)names[i].lvl;
      return 1;
    }
  return 0;
}

static void read_env(void) {
  const char *text = getenv("CLNORM_LOG");
  int parsed = CLNORM_LOG_OFF;
  /* Someone who sets CLNORM_LOG wants a log: an unknown value (CLNORM_LOG=1, a typo) gets the
   * level that says what the library chose, and a word on the mistake. */
  const int unknown = text && *text && !parse_level(text, &parsed);
  if (unknown)
    parsed = CLNORM_LOG_INFO;
  int expected = LEVEL_UNREAD;
  if (atomic_compare_exchange_strong(&level, &expected, parsed) && unknown) {
    char line[256];
    snprintf(line, sizeof line,
             "CLNORM_LOG=\"%.64s\" is not a log level (off, error, warn, info, trace; any case): "
             "logging at info",
             text);
    emit(CLNORM_LOG_WARN, line);
  }
}

int clnorm__log_level(void) {
  const int lvl = atomic_load_explicit(&level, memory_order_relaxed);
  if (lvl != LEVEL_UNREAD)
    return lvl;
  clnorm__call_once(&env_once, read_env);
  return atomic_load(&level);
}

void clnorm__log_reread_env(void) {
  atomic_store(&level, LEVEL_UNREAD);
  read_env();
}

void clnorm__log(clnorm_log_level lvl, const char *fmt, ...) {
  if (clnorm__log_level() < (int)lvl)
    return;
  char text[5120]; /* room for a context's error message (4096) and what precedes it */
  va_list args;
  va_start(args, fmt);
  vsnprintf(text, sizeof text, fmt, args);
  va_end(args);
  emit(lvl, text);
}

void clnorm_set_log_callback(clnorm_log_fn fn, void *user) {
  clnorm__mutex_lock(&sink_lock);
  sink_fn = fn;
  sink_user = user;
  clnorm__mutex_unlock(&sink_lock);
}

void clnorm_set_log_level(clnorm_log_level lvl) {
  const int clamped = (int)lvl < CLNORM_LOG_OFF     ? CLNORM_LOG_OFF
                      : (int)lvl > CLNORM_LOG_TRACE ? CLNORM_LOG_TRACE
                                                    : (int)lvl;
  atomic_store(&level, clamped);
}

clnorm_log_level clnorm_get_log_level(void) { return (clnorm_log_level)clnorm__log_level(); }

/* A call's trace line, waiting for its kernels: the events of the first and the last. */
typedef struct trace_record {
  cl_event first, last;
  int profiled;
  char text[512];
} trace_record;

static void trace_record_free(trace_record *r) {
  clReleaseEvent(r->first);
  clReleaseEvent(r->last);
  free(r);
}

/* Runs on a thread of the OpenCL runtime when the last kernel completes. Profiling queries and
 * releases are among the calls OpenCL allows in a callback; nothing here waits. */
static void CL_CALLBACK trace_done(cl_event event, cl_int status, void *user) {
  trace_record *r = user;
  char line[640];
  cl_ulong start = 0, end = 0;
  if (status < 0)
    snprintf(line, sizeof line, "%s failed on the device: %s (%d)", r->text,
             clnorm__cl_error_name(status), (int)status);
  else if (!r->profiled)
    snprintf(line, sizeof line, "%s time n/a (queue without CL_QUEUE_PROFILING_ENABLE)", r->text);
  else if (clGetEventProfilingInfo(r->first, CL_PROFILING_COMMAND_START, sizeof start, &start,
                                   NULL) != CL_SUCCESS ||
           clGetEventProfilingInfo(r->last, CL_PROFILING_COMMAND_END, sizeof end, &end, NULL) !=
               CL_SUCCESS ||
           end < start)
    snprintf(line, sizeof line, "%s time n/a (no profiling information)", r->text);
  else
    snprintf(line, sizeof line, "%s time %.3f us", r->text, (double)(end - start) * 1e-3);
  emit(CLNORM_LOG_TRACE, line);
  trace_record_free(r);
}

void clnorm__trace_call(const clnorm_ctx *ctx, cl_command_queue queue, const clnorm_call *call,
                        const clnorm_variant *v, clnorm_choice why, cl_event first, cl_event last) {
  trace_record *r = calloc(1, sizeof *r);
  char variant[128];
  clnorm_variant_format(v, variant, sizeof variant);
  char text[512];
  snprintf(text, sizeof text, "exec %s %s rows=%zu cols=%zu on %s: %s (%s)",
           clnorm_op_name(call->op), clnorm_dtype_name(call->dtype), call->rows, call->cols,
           ctx->info.name, variant, clnorm_choice_string(why));
  cl_command_queue_properties props = 0;
  const int profiled =
      clGetCommandQueueInfo(queue, CL_QUEUE_PROPERTIES, sizeof props, &props, NULL) == CL_SUCCESS &&
      (props & CL_QUEUE_PROFILING_ENABLE) != 0;
  if (r) {
    r->first = first;
    r->last = last;
    r->profiled = profiled;
    memcpy(r->text, text, sizeof text);
    if (clSetEventCallback(last, CL_COMPLETE, trace_done, r) == CL_SUCCESS)
      return;
    free(r);
  }
  clnorm__log(CLNORM_LOG_TRACE, "%s time n/a (no event callback)", text);
  clReleaseEvent(first);
  clReleaseEvent(last);
}
