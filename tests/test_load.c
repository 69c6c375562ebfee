/* Load: 16 threads on ONE clnorm context for a while (argument: seconds, default 60).
 *
 * Threads 0-11 each have their own command queue; threads 12-15 share one. Each makes calls
 * through the dispatcher, one after another: every op (layernorm, rmsnorm, add_layernorm,
 * add_rmsnorm, and both backward ops), f32, f16 and bf16, rows 1 to 48, cols from 1 to 4097
 * (odd ones included), random offsets and row strides, sometimes in place, optional operands
 * sometimes absent, random data (now and then rows around 1e4). tests/op_case.c runs each call:
 * outputs poisoned with NaN first, the result checked against the float64 reference under the
 * tolerances it states, and every element outside the outputs checked unchanged.
 *
 * Reports calls completed, calls per second, errors (a call that did not return CLNORM_OK) and
 * wrong results (must both be 0), and the resident set size (VmRSS of /proc/self/status): each
 * second's sample is the least of its readings 20 ms apart, printed with the programs the
 * context has cached and its idle kernel objects.
 *
 * Memory flat. The run has two halves. In the first, each thread makes random calls from its
 * own seed: this builds the programs, lets PoCL compile a work-group function for each local
 * size a kernel runs with (which no count here sees), and grows malloc's arenas to their working
 * size. Then each thread replays its own first-half calls from the start, the same cases in the
 * same order, again and again. The replay needs nothing the first half did not. It is compared
 * from when every thread has finished its last first-half call (which may still be building a
 * program) for half the run, so a run lasts longer than SECONDS by as long as that last call
 * took, up to 120 s. In that time it must build no program, and RSS at its end (median of its
 * last 10 samples, or fewer in a short run) may exceed RSS at its start (median of as many) by at
 * most max(8 MiB, 5%). Each call allocates and frees its own host and device buffers (up to some
 * 6 MiB per thread, 16 threads), so RSS moves by tens of MiB within a second, hence the least
 * reading and medians. A leak of 8 KiB per call exceeds the bound in a 36 s run; 2 KiB in a 60 s
 * run and 4 KiB in a 36 s run did with a CI rehearsal beside them, not alone (docs/TESTING.md):
 * CLNORM_TEST_LEAK_BYTES=N makes each replayed call leak N bytes (touched), to show the check
 * fails. */
#define _POSIX_C_SOURCE 200809L
#include "internal.h"
#include "op_case.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define THREADS 16
#define OWN_QUEUES 12 /* threads 12..15 share one queue */
#define MAX_SAMPLES 4096

static harness h;
static volatile int stop, replay; /* replay: the second half has begun */
static int switched;              /* threads done with their first half (under report_lock) */
static size_t leak_bytes;         /* CLNORM_TEST_LEAK_BYTES: leaked by each replayed call, or 0 */
static pthread_mutex_t report_lock = PTHREAD_MUTEX_INITIALIZER;

typedef struct worker {
  int id;
  cl_command_queue queue;
  long calls, errors, wrong, unsupported;
} worker;

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* VmRSS in KiB, or -1. */
static long rss_kib(void) {
  FILE *f = fopen("/proc/self/status", "r");
  if (!f)
    return -1;
  char line[256];
  long kib = -1;
  while (fgets(line, sizeof line, f))
    if (strncmp(line, "VmRSS:", 6) == 0) {
      kib = strtol(line + 6, NULL, 10);
      break;
    }
  fclose(f);
  return kib;
}

static int long_cmp(const void *a, const void *b) {
  const long x = *(const long *)a, y = *(const long *)b;
  return (x > y) - (x < y);
}

static long median(const long *v, size_t n) {
  long sorted[16];
  if (n == 0 || n > 16)
    return -1;
  memcpy(sorted, v, n * sizeof *v);
  qsort(sorted, n, sizeof *sorted, long_cmp);
  return sorted[n / 2];
}

static size_t pick(clnorm_rng *rng, size_t n) { return (size_t)(clnorm_rng_next(rng) % n); }

/* Programs in the context's cache and the idle kernel objects they keep: what the context holds
 * on to by design, printed beside RSS (tests may read internal.h). */
static void cache_size(size_t *programs, size_t *kernels) {
  *programs = *kernels = 0;
  clnorm__mutex_lock(&h.ctx->lock);
  for (size_t b = 0; b < CLNORM_PROGRAM_BUCKETS; b++)
    for (const clnorm_program *p = h.ctx->programs[b]; p; p = p->next) {
      ++*programs;
      *kernels += p->free_count[0] + p->free_count[1];
    }
  clnorm__mutex_unlock(&h.ctx->lock);
}

/* A random case: see the top. */
static void random_case(clnorm_rng *rng, oc_case *c) {
  static const size_t cols_set[] = {1,   3,   7,   31,   64,   100,  255,  256,
                                    384, 513, 768, 1000, 1024, 2048, 4096, 4097};
  const clnorm_op op = (clnorm_op)pick(rng, CLNORM_OP_COUNT);
  const clnorm_dtype dtype = (clnorm_dtype)pick(rng, 3);
  const size_t rows = 1 + pick(rng, 48);
  const size_t cols = cols_set[pick(rng, sizeof cols_set / sizeof cols_set[0])];
  oc_default(c, op, dtype, rows, cols);
  c->data_seed = clnorm_rng_next(rng);
  c->data = pick(rng, 8) == 0 ? OC_LARGE_MEAN : OC_NORMAL;
  if (pick(rng, 2)) /* offsets and strides on every matrix */
    for (int r = 0; r < OC_MATRICES; r++) {
      c->m[r].offset = pick(rng, 18);
      c->m[r].stride = pick(rng, 2) ? cols + pick(rng, 10) : 0;
    }
  /* in place: y over x (forward ops); the same place, so nothing overlaps otherwise */
  if (!oc_is_bwd(op) && pick(rng, 5) == 0)
    oc_alias(c, OC_Y, OC_X);
  c->absent = (unsigned)pick(rng, 4) == 0 ? (unsigned)clnorm_rng_next(rng) & 0x7fu : 0u;
  c->tail = pick(rng, 5);
}

static void *run(void *arg) {
  worker *w = arg;
  harness mine = h;
  mine.queue = w->queue;
  clnorm_rng rng;
  clnorm_rng_seed(&rng, 5000u + (unsigned)w->id);
  char msg[1024], text[1024];
  /* cases drawn so far, and in the first half: in the second, the thread replays that many
   * from its seed, again and again */
  long made = 0, first_half = 0;
  for (; !stop; made++) {
    if (replay && !first_half) {
      first_half = made;
      pthread_mutex_lock(&report_lock);
      switched++;
      pthread_mutex_unlock(&report_lock);
      if (first_half == 0) /* no first-half call to replay: this thread waits out the run */
        break;
      made = 0;
    }
    if (first_half && made % first_half == 0)
      clnorm_rng_seed(&rng, 5000u + (unsigned)w->id);
    if (first_half && leak_bytes) {
      unsigned char *leak = malloc(leak_bytes); /* never freed: the check must catch it */
      if (leak)
        memset(leak, 1, leak_bytes);
    }
    oc_case c;
    random_case(&rng, &c);
    const oc_result r = oc_run(&mine, &c, NULL, msg, sizeof msg);
    if (r == OC_UNSUPPORTED) { /* not reached: the dispatcher runs every call */
      w->unsupported++;
      continue;
    }
    w->calls++;
    if (r == OC_PASS)
      continue;
    const int error = strncmp(msg, "the call returned", 17) == 0;
    if (error)
      w->errors++;
    else
      w->wrong++;
    pthread_mutex_lock(&report_lock);
    if (w->errors + w->wrong <= 3) {
      oc_format(&c, text, sizeof text);
      printf("FAIL: thread %d: %s: %s: %s\n", w->id, error ? "error" : "wrong result", text, msg);
      fflush(stdout);
    }
    pthread_mutex_unlock(&report_lock);
  }
  return NULL;
}

int main(int argc, char **argv) {
  const double seconds = argc > 1 ? atof(argv[1]) : 60.0;
  if (!(seconds >= 4)) {
    fprintf(stderr, "usage: test_load [SECONDS]   (default 60; at least 4: half of it is "
                    "replayed and compared)\n");
    return 2;
  }
  const char *leak = getenv("CLNORM_TEST_LEAK_BYTES");
  leak_bytes = leak ? (size_t)strtoull(leak, NULL, 10) : 0;
  harness_open(&h, "load");
  printf("load: %d threads on one context for %.0f s on %s (%d own queues, %d sharing one)\n",
         THREADS, seconds, h.name, OWN_QUEUES, THREADS - OWN_QUEUES);
  worker w[THREADS];
  memset(w, 0, sizeof w);
  cl_int e;
  cl_command_queue shared = clCreateCommandQueue(h.context, h.device, 0, &e);
  if (e != CL_SUCCESS) {
    printf("FAIL: clCreateCommandQueue: %d\n", (int)e);
    return 1;
  }
  for (int t = 0; t < THREADS; t++) {
    w[t].id = t;
    w[t].queue = t < OWN_QUEUES ? clCreateCommandQueue(h.context, h.device, 0, &e) : shared;
    if (t < OWN_QUEUES && e != CL_SUCCESS) {
      printf("FAIL: clCreateCommandQueue: %d\n", (int)e);
      return 1;
    }
  }
  static long samples[MAX_SAMPLES];
  static size_t sample_programs[MAX_SAMPLES], sample_kernels[MAX_SAMPLES];
  /* half_at: the first sample of the replay; clean_at: the first sample taken wholly after every
   * thread finished its first-half calls (one may still be building a program, and PoCL
   * compiling work-group functions, seconds into the replay), and replay_programs the programs
   * cached then */
  size_t nsamples = 0, half_at = 0, clean_at = 0, replay_programs = 0; /* clean_at 0: not yet */
  /* the first half: half the run (a cold 60 s run on 2 cores builds a program a second or so
   * for all of it, so a shorter first half would reach fewer of the ops, dtypes and layouts) */
  const double first_half = seconds / 2.0;
  const double start = now();
  pthread_t tid[THREADS];
  for (int t = 0; t < THREADS; t++)
    if (pthread_create(&tid[t], NULL, run, &w[t]) != 0) {
      printf("FAIL: pthread_create\n");
      return 1;
    }
  /* the replay is compared over seconds / 2 from when every thread replays (clean_at), however
   * long the last first-half call took; a run whose threads cannot all get there within 120 s
   * more fails */
  for (int second = 1; clean_at ? now() - start < (double)clean_at + seconds / 2.0
                                : now() - start < first_half + 120.0;
       second++) {
    if (!replay && second > first_half) {
      replay = 1;
      half_at = nsamples;
    }
    /* the second's sample is the least of its readings, one each 20 ms: the buffers in flight
     * come and go within milliseconds, what stays is what the process holds on to */
    const double wake = start + second;
    long kib = -1;
    while (now() < wake) {
      const struct timespec pause = {0, 20000000L};
      nanosleep(&pause, NULL);
      const long reading = rss_kib();
      if (reading >= 0 && (kib < 0 || reading < kib))
        kib = reading;
      pthread_mutex_lock(&report_lock);
      const int all_switched = switched == THREADS;
      pthread_mutex_unlock(&report_lock);
      if (all_switched && !clean_at) {
        size_t unused;
        cache_size(&replay_programs, &unused);
        clean_at = nsamples + 1; /* sample i is taken in second i + 1 */
      }
    }
    size_t programs, kernels;
    cache_size(&programs, &kernels);
    if (nsamples < MAX_SAMPLES) {
      samples[nsamples] = kib;
      sample_programs[nsamples] = programs;
      sample_kernels[nsamples++] = kernels;
    }
  }
  stop = 1;
  for (int t = 0; t < THREADS; t++)
    pthread_join(tid[t], NULL);
  const double elapsed = now() - start;
  long calls = 0, call_errors = 0, wrong = 0, unsupported = 0;
  for (int t = 0; t < THREADS; t++) {
    calls += w[t].calls;
    call_errors += w[t].errors;
    wrong += w[t].wrong;
    unsupported += w[t].unsupported;
  }
  printf("each second: RSS MiB / programs cached / idle kernel objects (| where the replay "
         "starts, ; where every thread is replaying):");
  for (size_t i = 0; i < nsamples; i++)
    printf("%s%s%.0f/%zu/%zu", i % 8 == 0 ? "\n  " : "  ",
           i == half_at && i == clean_at ? "|; "
           : i == half_at                ? "| "
           : clean_at && i == clean_at   ? "; "
                                         : "",
           (double)samples[i] / 1024.0, sample_programs[i], sample_kernels[i]);
  printf("\n");
  /* medians of up to 10 samples (each the least reading of its second) from where every thread
   * is replaying and at the end, not overlapping: RSS moves by tens of MiB within a second with
   * the buffers in flight */
  const size_t replayed = clean_at && clean_at < nsamples ? nsamples - clean_at : 0;
  const size_t window = replayed / 2 < 10 ? replayed / 2 : 10;
  const long start_rss = window >= 3 ? median(samples + clean_at, window) : -1;
  const long end_rss = window >= 3 ? median(samples + nsamples - window, window) : -1;
  const size_t built = clean_at ? sample_programs[nsamples - 1] - replay_programs : 0;
  const long bound = (long)fmax(8.0 * 1024.0, 0.05 * (double)start_rss);
  const long growth = end_rss - start_rss;
  printf("calls %ld in %.1f s: %.1f calls/s; errors %ld; wrong results %ld\n", calls, elapsed,
         (double)calls / elapsed, call_errors, wrong);
  for (int t = 0; t < THREADS; t++)
    printf("%s%ld", t == 0 ? "calls per thread: " : " ", w[t].calls);
  printf("\nreplay of the first half's calls: RSS (median of %zu samples) from where every "
         "thread replays %.1f MiB, "
         "at its end %.1f MiB: growth %+.1f MiB (bound %.1f MiB: max(8 MiB, 5%%)); programs "
         "built %zu (must be 0)\n",
         window, (double)start_rss / 1024.0, (double)end_rss / 1024.0, (double)growth / 1024.0,
         (double)bound / 1024.0, built);
  int failed = 0;
  if (call_errors || wrong || unsupported) {
    printf("FAIL: %ld errors, %ld wrong results, %ld refused\n", call_errors, wrong, unsupported);
    failed = 1;
  }
  if (calls < THREADS) {
    printf("FAIL: only %ld calls completed\n", calls);
    failed = 1;
  }
#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif
#ifdef UNDER_ASAN
  /* AddressSanitizer keeps freed memory in its quarantine (256 MiB by default), so RSS grows
   * without a leak; LeakSanitizer checks for leaks at exit instead. The plain build applies the
   * bound. */
  printf("memory bound not applied under AddressSanitizer (its quarantine holds freed memory; "
         "LeakSanitizer checks leaks at exit)\n");
  const int applied = 0;
#else
  const int applied = 1;
#endif
  /* RSS is compared only where every thread replayed (clean_at) */
  if (!clean_at) {
    printf("FAIL: the threads did not all finish their first-half calls within 120 s of its "
           "end\n");
    failed = 1;
  } else if (applied && window < 3) {
    printf("FAIL: every thread replayed for only %zu s: too short to compare RSS (at least 6 s; a "
           "longer run)\n",
           replayed);
    failed = 1;
  } else if (applied && (start_rss < 0 || end_rss < 0)) {
    printf("FAIL: RSS could not be read from /proc/self/status\n");
    failed = 1;
  } else if (applied && growth > bound) {
    printf("FAIL: memory not flat: RSS grew by %.1f MiB during the replay (bound %.1f MiB)\n",
           (double)growth / 1024.0, (double)bound / 1024.0);
    failed = 1;
  }
  if (built) {
    printf("FAIL: replaying calls already made built %zu programs: the context's cache lost "
           "one, or the dispatcher chose differently for the same call\n",
           built);
    failed = 1;
  }
  for (int t = 0; t < OWN_QUEUES; t++)
    clReleaseCommandQueue(w[t].queue);
  clReleaseCommandQueue(shared);
  harness_close(&h);
  printf("%s\n", failed ? "FAIL" : "PASS");
  return failed;
}
