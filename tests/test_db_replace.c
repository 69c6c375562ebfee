/* The tuning database replaced under a running process (issue 7), driven by
 * tests/tuner/replace.sh:
 *
 *   test_db_replace DB SECONDS GOOD GOOD_WINNERS OTHER OTHER_WINNERS
 *
 * One context, created with $CLNORM_DB=DB (the script sets it). For SECONDS, three threads make
 * calls on it (every op and dtype, random shapes, each on its own queue, checked against the
 * float64 reference by tests/op_case.c); a fourth reloads DB into it again and again
 * (clnorm_ctx_load_tuning: CLNORM_OK or CLNORM_E_DB, never anything else) and creates, uses and
 * destroys fresh contexts (which must always be created). Meanwhile the main thread replaces DB
 * in turn by: a copy of OTHER renamed over it; a copy of GOOD renamed over it; garbage renamed
 * over it; garbage written over it in place; GOOD truncated to half in place; nothing (removed).
 * After each, a context of its own loads DB and must see exactly the new file: OTHER_WINNERS or
 * GOOD_WINNERS tuned results, CLNORM_E_DB for garbage and a missing file (truncation: either).
 * Exit status 0 when every call was right and every load as expected; 1 otherwise. */
#define _POSIX_C_SOURCE 200809L
#include "op_case.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define CALLERS 3

static harness h;
static const char *db_path;
static volatile int stop;
static pthread_mutex_t report_lock = PTHREAD_MUTEX_INITIALIZER;
static int failures;

static void failed(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void failed(const char *fmt, ...) {
  pthread_mutex_lock(&report_lock);
  if (failures++ < 10) {
    va_list args;
    va_start(args, fmt);
    printf("FAIL: ");
    vprintf(fmt, args);
    printf("\n");
    va_end(args);
  }
  pthread_mutex_unlock(&report_lock);
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void sleep_ms(long ms) {
  struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&t, NULL);
}

/* One random dense case on hc (its own queue, maybe another context). */
static int one_call(harness *hc, clnorm_rng *rng) {
  static const size_t cols_set[] = {1, 7, 64, 255, 256, 512, 768, 1000, 4096};
  oc_case c;
  oc_default(&c, (clnorm_op)(clnorm_rng_next(rng) % CLNORM_OP_COUNT),
             (clnorm_dtype)(clnorm_rng_next(rng) % 3), 1 + clnorm_rng_next(rng) % 64,
             cols_set[clnorm_rng_next(rng) % (sizeof cols_set / sizeof cols_set[0])]);
  c.data_seed = clnorm_rng_next(rng);
  char msg[512], text[512];
  if (oc_run(hc, &c, NULL, msg, sizeof msg) != OC_PASS) {
    oc_format(&c, text, sizeof text);
    failed("%s: %s", text, msg);
    return 0;
  }
  return 1;
}

typedef struct counts {
  unsigned id;
  long calls, loads_ok, loads_db, contexts;
} counts;

static void *caller(void *arg) {
  counts *n = arg;
  harness mine = h;
  cl_int e;
  mine.queue = clCreateCommandQueue(h.context, h.device, 0, &e);
  if (e != CL_SUCCESS) {
    failed("clCreateCommandQueue failed: %d", (int)e);
    return NULL;
  }
  clnorm_rng rng;
  clnorm_rng_seed(&rng, 1000u + n->id);
  while (!stop) {
    one_call(&mine, &rng);
    n->calls++;
  }
  clReleaseCommandQueue(mine.queue);
  return NULL;
}

static void *loader(void *arg) {
  counts *n = arg;
  harness mine = h;
  cl_int e;
  mine.queue = clCreateCommandQueue(h.context, h.device, 0, &e);
  if (e != CL_SUCCESS) {
    failed("clCreateCommandQueue failed: %d", (int)e);
    return NULL;
  }
  clnorm_rng rng;
  clnorm_rng_seed(&rng, 77);
  for (long i = 0; !stop; i++) {
    const clnorm_status st = clnorm_ctx_load_tuning(h.ctx, db_path);
    if (st == CLNORM_OK)
      n->loads_ok++;
    else if (st == CLNORM_E_DB)
      n->loads_db++;
    else
      failed("clnorm_ctx_load_tuning returned %s: %s", clnorm_status_string(st),
             clnorm_ctx_errmsg(h.ctx));
    if (i % 4 == 0) {
      clnorm_ctx *fresh = NULL;
      const clnorm_status cs = clnorm_ctx_create(h.context, h.device, &fresh);
      if (cs != CLNORM_OK) {
        failed("clnorm_ctx_create returned %s: %s", clnorm_status_string(cs),
               clnorm_ctx_errmsg(NULL));
        continue;
      }
      mine.ctx = fresh;
      one_call(&mine, &rng);
      clnorm_ctx_destroy(fresh);
      n->contexts++;
    }
  }
  clReleaseCommandQueue(mine.queue);
  return NULL;
}

/* Copies from into path.tmp (truncated to half when half is set) and renames it over path, or,
 * when in_place is set, writes it into path itself (same inode, truncated first). */
static int put_file(const char *from, int garbage, int in_place, int half) {
  char tmp[4200];
  snprintf(tmp, sizeof tmp, "%s.tmp", db_path);
  unsigned char buf[65536];
  size_t len = 0;
  if (garbage) {
    len = 40000;
    for (size_t i = 0; i < len; i++)
      buf[i] = (unsigned char)(i * 2654435761u >> 13);
  } else {
    FILE *f = fopen(from, "rb");
    if (!f)
      return 0;
    len = fread(buf, 1, sizeof buf, f);
    fclose(f);
    if (len == sizeof buf)
      return 0; /* the test's databases are small */
  }
  if (half)
    len /= 2;
  const char *target = in_place ? db_path : tmp;
  const int fd = open(target, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0)
    return 0;
  const int ok = write(fd, buf, len) == (ssize_t)len;
  close(fd);
  return ok && (in_place || rename(tmp, db_path) == 0);
}

int main(int argc, char **argv) {
  if (argc != 7) {
    fprintf(stderr, "usage: test_db_replace DB SECONDS GOOD GOOD_WINNERS OTHER OTHER_WINNERS\n");
    return 2;
  }
  db_path = argv[1];
  const double seconds = atof(argv[2]);
  const char *good = argv[3], *other = argv[5];
  const size_t good_winners = (size_t)atol(argv[4]), other_winners = (size_t)atol(argv[6]);
  const char *env = getenv("CLNORM_DB");
  if (!env || strcmp(env, db_path) != 0) {
    fprintf(stderr, "FAIL: run with CLNORM_DB=%s\n", db_path);
    return 1;
  }
  harness_open(&h, "db_replace");
  printf("device: %s; context loaded %zu tuned results from %s\n", h.name,
         clnorm_ctx_tuned_count(h.ctx), db_path);

  counts n[CALLERS + 1];
  memset(n, 0, sizeof n);
  for (unsigned t = 0; t <= CALLERS; t++)
    n[t].id = t;
  pthread_t tid[CALLERS + 1];
  for (int t = 0; t < CALLERS; t++)
    pthread_create(&tid[t], NULL, caller, &n[t]);
  pthread_create(&tid[CALLERS], NULL, loader, &n[CALLERS]);

  /* a context of the main thread's own checks what a load sees after each replacement */
  clnorm_ctx *check = NULL;
  if (clnorm_ctx_create(h.context, h.device, &check) != CLNORM_OK) {
    printf("FAIL: clnorm_ctx_create: %s\n", clnorm_ctx_errmsg(NULL));
    return 1;
  }
  static const char *const what[] = {"OTHER renamed over it",           "GOOD renamed over it",
                                     "garbage renamed over it",         "garbage written in place",
                                     "GOOD truncated to half in place", "removed"};
  long replaced[6] = {0};
  const double end = now() + seconds;
  for (int k = 0; now() < end; k = (k + 1) % 6) {
    int ok = 1;
    switch (k) {
    case 0:
      ok = put_file(other, 0, 0, 0);
      break;
    case 1:
      ok = put_file(good, 0, 0, 0);
      break;
    case 2:
      ok = put_file(NULL, 1, 0, 0);
      break;
    case 3:
      ok = put_file(NULL, 1, 1, 0);
      break;
    case 4:
      ok = put_file(good, 0, 1, 1);
      break;
    default:
      ok = unlink(db_path) == 0 || errno == ENOENT;
      break;
    }
    if (!ok) {
      printf("FAIL: could not make DB %s: %s\n", what[k], strerror(errno));
      failures++;
      break;
    }
    replaced[k]++;
    const clnorm_status st = clnorm_ctx_load_tuning(check, db_path);
    const size_t got = clnorm_ctx_tuned_count(check);
    if (k <= 1 && (st != CLNORM_OK || got != (k == 0 ? other_winners : good_winners)))
      failed("after DB was %s, a load gave %s (%zu tuned results)", what[k],
             st == CLNORM_OK ? "another table" : clnorm_ctx_errmsg(check), got);
    if ((k == 2 || k == 3 || k == 5) && st != CLNORM_E_DB)
      failed("after DB was %s, a load did not fail with CLNORM_E_DB", what[k]);
    if (st != CLNORM_OK && st != CLNORM_E_DB)
      failed("after DB was %s, a load returned %s", what[k], clnorm_status_string(st));
    sleep_ms(50 + (long)(k * 37 % 150));
  }
  stop = 1;
  for (int t = 0; t <= CALLERS; t++)
    pthread_join(tid[t], NULL);
  clnorm_ctx_destroy(check);
  long calls = 0;
  for (int t = 0; t <= CALLERS; t++)
    calls += n[t].calls;
  printf("%.0f s: %ld checked calls on the shared context; %ld reloads (%ld loaded, %ld "
         "CLNORM_E_DB); %ld fresh contexts used\n",
         seconds, calls, n[CALLERS].loads_ok + n[CALLERS].loads_db, n[CALLERS].loads_ok,
         n[CALLERS].loads_db, n[CALLERS].contexts);
  printf("replacements:");
  for (int k = 0; k < 6; k++)
    printf(" %s %ld%s", what[k], replaced[k], k < 5 ? "," : "\n");
  harness_close(&h);
  if (failures || calls == 0) {
    printf("FAIL: %d failures%s\n", failures, calls == 0 ? ", no call made" : "");
    return 1;
  }
  printf("PASS\n");
  return 0;
}
