/* The log (clnorm.h, "Logging") on the test device:
 *   - an unknown CLNORM_LOG value gives exactly one warning on stderr, however often the level
 *     is read, and logs at info;
 *   - CLNORM_LOG's levels are read in any case (and "warning", "debug", empty), with no warning;
 *   - with logging off, a real call prints nothing;
 *   - at trace, a real call's line reaches the callback with its op, dtype, shape, device,
 *     variant (the one clnorm_choose reports), the source of the choice and a kernel time above
 *     0 on a queue with profiling, "time n/a" on one without; a forced variant says "forced"; a
 *     backward call with weight gradients (two kernels) is timed too; the caller's own event
 *     stays valid; outputs are checked against the float64 reference (tests/op_case.c);
 *   - the callback gets the info lines with their level, and a failed call's error line;
 *   - with the callback removed, the trace line goes to stderr with the "clnorm: " prefix.
 * clnorm__log_reread_env (src/internal.h; a static link reaches it) reads CLNORM_LOG again. */
#define _POSIX_C_SOURCE 200809L
#include "internal.h"
#include "op_case.h"

#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CHECK(cond, ...)                                                                           \
  do {                                                                                             \
    if (!(cond))                                                                                   \
      harness_fail(__VA_ARGS__);                                                                   \
  } while (0)

static char tmp_dir[64];

/* stderr, captured into a file. */
typedef struct capture {
  int saved, fd;
  char text[65536];
} capture;

static void capture_begin(capture *c) {
  char path[128];
  snprintf(path, sizeof path, "%s/stderr", tmp_dir);
  fflush(stderr);
  c->fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
  c->saved = dup(2);
  if (c->fd < 0 || c->saved < 0 || dup2(c->fd, 2) < 0) {
    printf("test_log: FAIL: capturing stderr\n");
    exit(1);
  }
}

/* What was written so far (the capture goes on). */
static const char *capture_peek(capture *c) {
  fflush(stderr);
  const off_t size = lseek(c->fd, 0, SEEK_END);
  const size_t n =
      size > 0 ? ((size_t)size < sizeof c->text ? (size_t)size : sizeof c->text - 1) : 0;
  const ssize_t got = pread(c->fd, c->text, n, 0);
  c->text[got > 0 ? (size_t)got : 0] = '\0';
  return c->text;
}

static const char *capture_end(capture *c) {
  capture_peek(c);
  dup2(c->saved, 2);
  close(c->saved);
  close(c->fd);
  return c->text;
}

static size_t count_of(const char *text, const char *what) {
  size_t n = 0;
  for (const char *p = strstr(text, what); p; p = strstr(p + 1, what))
    n++;
  return n;
}

static void sleep_ms(long ms) {
  struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&t, NULL);
}

/* The lines the callback received; it may run on a thread of the OpenCL runtime. */
#define MAX_LINES 256
static pthread_mutex_t lines_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
  clnorm_log_level level;
  char text[1024];
} lines[MAX_LINES];
static size_t line_count;

static void on_line(clnorm_log_level level, const char *line, void *user) {
  CHECK(user == &lines, "the callback got user %p, not the one given", user);
  pthread_mutex_lock(&lines_lock);
  if (line_count < MAX_LINES) {
    lines[line_count].level = level;
    snprintf(lines[line_count].text, sizeof lines[line_count].text, "%s", line);
    line_count++;
  }
  pthread_mutex_unlock(&lines_lock);
}

static size_t lines_now(void) {
  pthread_mutex_lock(&lines_lock);
  const size_t n = line_count;
  pthread_mutex_unlock(&lines_lock);
  return n;
}

/* The first line received at or after `from` that starts with `prefix` and has `level`, copied
 * into out; waits up to 10 s for it (a trace line comes when the kernels complete, which may be
 * after clFinish returns). */
static int wait_line(size_t from, clnorm_log_level level, const char *prefix, char *out,
                     size_t size) {
  for (int waited = 0; waited <= 10000; waited += 10) {
    pthread_mutex_lock(&lines_lock);
    for (size_t i = from; i < line_count; i++)
      if (lines[i].level == level && strncmp(lines[i].text, prefix, strlen(prefix)) == 0) {
        snprintf(out, size, "%s", lines[i].text);
        pthread_mutex_unlock(&lines_lock);
        return 1;
      }
    pthread_mutex_unlock(&lines_lock);
    sleep_ms(10);
  }
  return 0;
}

/* Runs the case on h (outputs checked against the reference); fails the test when it fails. */
static void run_case(harness *h, const oc_case *c, const char *label) {
  char msg[2048];
  const oc_result r = oc_run(h, c, NULL, msg, sizeof msg);
  CHECK(r == OC_PASS, "%s: the call failed or gave a wrong result: %s", label,
        r == OC_UNSUPPORTED ? "unsupported" : msg);
}

/* Checks a trace line: "exec OP DTYPE rows=R cols=C on DEVICE: VARIANT (SOURCE) time ...";
 * timed: "time T us" with T > 0, else "time n/a (...)". */
static void check_trace(const char *label, const char *line, const char *head, const char *device,
                        const clnorm_variant *v, const char *source, int timed) {
  char variant[128], want[1024];
  clnorm_variant_format(v, variant, sizeof variant);
  snprintf(want, sizeof want, "%s on %s: %s (%s) time ", head, device, variant, source);
  CHECK(strncmp(line, want, strlen(want)) == 0, "%s: trace line\n  %s\nshould start with\n  %s",
        label, line, want);
  const char *time = line + strlen(want);
  if (timed) {
    char *end;
    const double us = strtod(time, &end);
    CHECK(end != time && strcmp(end, " us") == 0 && isfinite(us) && us > 0,
          "%s: trace line's time \"%s\" is not \"T us\" with T > 0", label, time);
  } else {
    CHECK(strncmp(time, "n/a (", 5) == 0, "%s: trace line's time \"%s\" is not \"n/a (...)\"",
          label, time);
  }
}

/* Levels in any case, and the values that are not levels. */
static void check_levels(void) {
  static const struct {
    const char *value;
    clnorm_log_level level;
  } cases[] = {
      {"off", CLNORM_LOG_OFF},     {"OFF", CLNORM_LOG_OFF},      {"", CLNORM_LOG_OFF},
      {"error", CLNORM_LOG_ERROR}, {"Error", CLNORM_LOG_ERROR},  {"warn", CLNORM_LOG_WARN},
      {"WARN", CLNORM_LOG_WARN},   {"Warning", CLNORM_LOG_WARN}, {"info", CLNORM_LOG_INFO},
      {"INFO", CLNORM_LOG_INFO},   {"iNfO", CLNORM_LOG_INFO},    {"debug", CLNORM_LOG_INFO},
      {"trace", CLNORM_LOG_TRACE}, {"TRACE", CLNORM_LOG_TRACE},  {"Trace", CLNORM_LOG_TRACE}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    capture cap;
    setenv("CLNORM_LOG", cases[i].value, 1);
    capture_begin(&cap);
    clnorm__log_reread_env();
    const clnorm_log_level got = clnorm_get_log_level();
    const char *err = capture_end(&cap);
    CHECK(got == cases[i].level, "CLNORM_LOG=\"%s\" gives level %d, not %d", cases[i].value,
          (int)got, (int)cases[i].level);
    CHECK(err[0] == '\0', "CLNORM_LOG=\"%s\" printed:\n%s", cases[i].value, err);
  }
  static const char *const unknown[] = {"1", "yes", "infoo", "verbose", " info"};
  for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
    capture cap;
    setenv("CLNORM_LOG", unknown[i], 1);
    capture_begin(&cap);
    clnorm__log_reread_env();
    const clnorm_log_level got = clnorm_get_log_level();
    const char *err = capture_end(&cap);
    char want[128];
    snprintf(want, sizeof want, "clnorm: CLNORM_LOG=\"%s\" is not a log level", unknown[i]);
    CHECK(got == CLNORM_LOG_INFO, "CLNORM_LOG=\"%s\" gives level %d, not info", unknown[i],
          (int)got);
    CHECK(count_of(err, want) == 1 && count_of(err, "\n") == 1,
          "CLNORM_LOG=\"%s\": stderr should be one line with \"%s\"; it was:\n%s", unknown[i], want,
          err);
  }
  unsetenv("CLNORM_LOG");
  clnorm__log_reread_env();
  CHECK(clnorm_get_log_level() == CLNORM_LOG_OFF, "no CLNORM_LOG gives level %d, not off",
        (int)clnorm_get_log_level());
}

int main(void) {
  snprintf(tmp_dir, sizeof tmp_dir, "/tmp/clnorm_log_XXXXXX");
  if (!mkdtemp(tmp_dir)) {
    printf("test_log: FAIL: mkdtemp\n");
    return 1;
  }
  char db[128];
  snprintf(db, sizeof db, "%s/none.db", tmp_dir); /* no tuning database: heuristic choices */
  setenv("CLNORM_DB", db, 1);

  /* An unknown value, read for the first time by clnorm_ctx_create and then again and again:
   * one warning. */
  harness h;
  capture cap;
  setenv("CLNORM_LOG", "VeRbOsE", 1);
  capture_begin(&cap);
  harness_open(&h, "test_log");
  for (int i = 0; i < 3; i++)
    CHECK(clnorm_get_log_level() == CLNORM_LOG_INFO,
          "CLNORM_LOG=VeRbOsE: level %d, not info (the level of an unknown value)",
          (int)clnorm_get_log_level());
  const char *err = capture_end(&cap);
  CHECK(count_of(err, "clnorm: CLNORM_LOG=\"VeRbOsE\" is not a log level") == 1,
        "CLNORM_LOG=VeRbOsE: stderr should have one warning; it was:\n%s", err);
  fputs(err, stdout);

  check_levels();

  char device[256] = "";
  clGetDeviceInfo(h.device, CL_DEVICE_NAME, sizeof device - 1, device, NULL);
  cl_int e;
  cl_command_queue plain = h.queue;
  cl_command_queue profiled =
      clCreateCommandQueue(h.context, h.device, CL_QUEUE_PROFILING_ENABLE, &e);
  if (e != CL_SUCCESS) {
    printf("test_log: FAIL: clCreateCommandQueue with profiling: %d\n", (int)e);
    return 1;
  }

  /* Off: a real call prints nothing. */
  oc_case ln;
  oc_default(&ln, CLNORM_OP_LAYERNORM, CLNORM_F32, 64, 768);
  clnorm_set_log_level(CLNORM_LOG_OFF);
  capture_begin(&cap);
  run_case(&h, &ln, "off");
  clFinish(h.queue);
  sleep_ms(100);
  err = capture_end(&cap);
  CHECK(err[0] == '\0', "logging off, a call printed:\n%s", err);

  /* Trace, into the callback. */
  clnorm_set_log_callback(on_line, &lines);
  clnorm_set_log_level(CLNORM_LOG_TRACE);
  CHECK(clnorm_get_log_level() == CLNORM_LOG_TRACE, "clnorm_set_log_level(trace) did not hold");
  clnorm_call call = {.op = CLNORM_OP_LAYERNORM, .rows = 64, .cols = 768, .dtype = CLNORM_F32};
  clnorm_variant chosen;
  clnorm_choice why;
  if (clnorm_choose(h.ctx, &call, &chosen, &why) != CLNORM_OK) {
    printf("test_log: FAIL: clnorm_choose: %s\n", clnorm_ctx_errmsg(h.ctx));
    return 1;
  }
  char line[1024];
  size_t from = lines_now();
  h.queue = profiled;
  run_case(&h, &ln, "trace, profiled queue");
  clFinish(profiled);
  if (wait_line(from, CLNORM_LOG_TRACE, "exec layernorm f32 rows=64 cols=768", line, sizeof line)) {
    printf("trace: %s\n", line);
    check_trace("profiled queue", line, "exec layernorm f32 rows=64 cols=768", device, &chosen,
                clnorm_choice_string(why), 1);
  } else {
    harness_fail("no trace line for layernorm f32 rows=64 cols=768 on the profiled queue");
  }
  /* The info line of the same call, with its level. */
  char info_head[128];
  snprintf(info_head, sizeof info_head, "layernorm f32 rows=64 cols=768 on %s: ", device);
  CHECK(wait_line(from, CLNORM_LOG_INFO, info_head, line, sizeof line),
        "the callback got no info line \"%s...\"", info_head);

  /* The caller's own event: still the caller's after the trace has taken its reference. */
  from = lines_now();
  const size_t bytes = 64 * 768 * sizeof(float);
  float *host = malloc(bytes);
  for (size_t i = 0; i < 64 * 768; i++)
    host[i] = (float)(i % 97) - 48.0f;
  cl_mem x = harness_buffer(&h, bytes, host), y = harness_buffer(&h, bytes, NULL);
  cl_event done = NULL;
  const clnorm_rows xr = {x, 0, 0}, yr = {y, 0, 0};
  clnorm_status st = clnorm_layernorm(h.ctx, profiled, 64, 768, CLNORM_F32, 1e-5f, xr, NULL, NULL,
                                      yr, NULL, NULL, 0, NULL, &done);
  CHECK(st == CLNORM_OK, "clnorm_layernorm with an event: %s", clnorm_status_string(st));
  if (st == CLNORM_OK) {
    CHECK(clWaitForEvents(1, &done) == CL_SUCCESS, "the caller's event cannot be waited for");
    cl_int status = 0;
    CHECK(clGetEventInfo(done, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, NULL) ==
                  CL_SUCCESS &&
              status == CL_COMPLETE,
          "the caller's event is not complete after clWaitForEvents");
    clReleaseEvent(done);
    if (wait_line(from, CLNORM_LOG_TRACE, "exec layernorm f32 rows=64 cols=768", line, sizeof line))
      check_trace("caller's event", line, "exec layernorm f32 rows=64 cols=768", device, &chosen,
                  clnorm_choice_string(why), 1);
    else
      harness_fail("no trace line for the call with the caller's event");
  }
  clReleaseMemObject(x);
  clReleaseMemObject(y);
  free(host);

  /* A forced variant (the heuristic's, as the call runs it) on a queue without profiling. */
  oc_case forced = ln;
  forced.forced = 1;
  if (clnorm_heuristic(h.ctx, &call, &forced.variant) != CLNORM_OK) {
    printf("test_log: FAIL: clnorm_heuristic: %s\n", clnorm_ctx_errmsg(h.ctx));
    return 1;
  }
  from = lines_now();
  h.queue = plain;
  run_case(&h, &forced, "trace, forced, queue without profiling");
  clFinish(plain);
  if (wait_line(from, CLNORM_LOG_TRACE, "exec layernorm f32 rows=64 cols=768", line, sizeof line)) {
    printf("trace: %s\n", line);
    check_trace("forced", line, "exec layernorm f32 rows=64 cols=768", device, &forced.variant,
                "forced", 0);
  } else {
    harness_fail("no trace line for the forced call");
  }

  /* Backward with weight gradients: two kernels, timed from the first one's start. */
  oc_case bwd;
  oc_default(&bwd, CLNORM_OP_LAYERNORM_BWD, CLNORM_F32, 96, 512);
  clnorm_call bwd_call = {
      .op = CLNORM_OP_LAYERNORM_BWD, .rows = 96, .cols = 512, .dtype = CLNORM_F32};
  clnorm_variant bwd_chosen;
  clnorm_choice bwd_why;
  if (clnorm_choose(h.ctx, &bwd_call, &bwd_chosen, &bwd_why) != CLNORM_OK) {
    printf("test_log: FAIL: clnorm_choose (backward): %s\n", clnorm_ctx_errmsg(h.ctx));
    return 1;
  }
  from = lines_now();
  h.queue = profiled;
  run_case(&h, &bwd, "trace, backward");
  clFinish(profiled);
  if (wait_line(from, CLNORM_LOG_TRACE, "exec layernorm_bwd f32 rows=96 cols=512", line,
                sizeof line)) {
    printf("trace: %s\n", line);
    check_trace("backward", line, "exec layernorm_bwd f32 rows=96 cols=512", device, &bwd_chosen,
                clnorm_choice_string(bwd_why), 1);
  } else {
    harness_fail("no trace line for the backward call");
  }

  /* A failed call: its error line. */
  from = lines_now();
  st = clnorm_layernorm(h.ctx, profiled, 4, 0, CLNORM_F32, 1e-5f, xr, NULL, NULL, yr, NULL, NULL, 0,
                        NULL, NULL);
  CHECK(st == CLNORM_E_INVALID_ARG, "cols 0 gave %s", clnorm_status_string(st));
  if (wait_line(from, CLNORM_LOG_ERROR,
                "layernorm f32 rows=4 cols=0 failed: invalid argument: ", line, sizeof line))
    printf("error: %s\n", line);
  else
    harness_fail("no error line for a call with cols 0");

  /* The choice lines, once per shape class, choice and variant: two variants that differ only in
   * their statistics, one forced and one tuned, get a line each (their keys once collided: the
   * choice was added to the variant's key, whose lowest bit is the statistics, and the second
   * line never came; src/choose.c, log_key). Both orders of the pair, and a line not repeated. */
  {
    clnorm_call at = {.op = CLNORM_OP_LAYERNORM, .rows = 3000, .cols = 1536, .dtype = CLNORM_F32};
    clnorm_variant a = {32, 32, 4, 0, CLNORM_REDUCE_LOCAL, CLNORM_STATS_TWOPASS};
    clnorm_variant b = a;
    b.stats = CLNORM_STATS_WELFORD;
    const struct {
      const clnorm_variant *v;
      clnorm_choice why;
      const char *end;
    } seq[] = {{&a, CLNORM_CHOICE_FORCED, "stats=twopass (forced)"},
               {&b, CLNORM_CHOICE_TUNED, "stats=welford (tuned)"},
               {&b, CLNORM_CHOICE_FORCED, "stats=welford (forced)"},
               {&a, CLNORM_CHOICE_TUNED, "stats=twopass (tuned)"}};
    for (size_t i = 0; i < sizeof seq / sizeof seq[0]; i++) {
      for (int again = 0; again < 2; again++) { /* the second time: nothing new */
        from = lines_now();
        clnorm__log_choice(h.ctx, &at, seq[i].v, seq[i].why, 0);
        const size_t got = lines_now() - from;
        pthread_mutex_lock(&lines_lock);
        const char *text = got ? lines[from].text : "";
        const size_t len = strlen(text), end_len = strlen(seq[i].end);
        const int ends = len >= end_len && strcmp(text + len - end_len, seq[i].end) == 0;
        pthread_mutex_unlock(&lines_lock);
        CHECK(got == (again ? 0u : 1u) && (again || ends),
              "choice line %zu (%s), call %d: %zu lines, \"%s\"", i, seq[i].end, again + 1, got,
              text);
      }
    }
  }

  /* No callback: the trace line goes to stderr, and the callback hears nothing more. */
  clnorm_set_log_callback(NULL, NULL);
  from = lines_now();
  capture_begin(&cap);
  run_case(&h, &ln, "trace, stderr");
  clFinish(profiled);
  int found = 0;
  for (int waited = 0; waited <= 10000 && !found; waited += 10) {
    found = strstr(capture_peek(&cap), "clnorm: exec layernorm f32 rows=64 cols=768 on ") != NULL;
    if (!found)
      sleep_ms(10);
  }
  err = capture_end(&cap);
  CHECK(found, "without a callback, no trace line on stderr; it had:\n%s", err);
  CHECK(lines_now() == from, "the callback was called after its removal");

  h.queue = plain;
  clReleaseCommandQueue(profiled);
  clnorm_set_log_level(CLNORM_LOG_OFF);
  harness_close(&h);
  char path[128];
  snprintf(path, sizeof path, "%s/stderr", tmp_dir);
  unlink(path);
  rmdir(tmp_dir);
  if (harness_failures) {
    printf("test_log: %d failure(s)\n", harness_failures);
    return 1;
  }
  printf("test_log: ok\n");
  return 0;
}
