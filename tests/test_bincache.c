/* The program binary cache (src/bincache.c), in a temporary directory: a first context builds
 * and writes entries, a fresh one loads them; damaged, truncated and foreign entries, and entries
 * spliced from two sound ones (one's header and key, the other's payload), are rejected, rebuilt
 * and rewritten; CLNORM_NO_BINARY_CACHE=1 writes nothing; a cache that cannot
 * be written costs nothing but the compile; two contexts writing one entry at once leave a sound
 * one; NVIDIA's register cap is in the options (the key). What the cache did is read from the
 * context's counters, never from timing. Every result is checked against the float64 reference,
 * outputs poisoned with NaN first (harness_check). */
#define _POSIX_C_SOURCE 200809L
#include "fake_device.h"
#include "harness.h"
#include "internal.h"
#include "op_case.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define ROWS 37
#define COLS 1000
#define MAX_ENTRIES 64

static char root[64];

typedef struct counts {
  unsigned long hits, misses, rejected, written, write_failed;
} counts;

static counts counters(const harness *h) {
  const counts c = {h->ctx->bincache.hits, h->ctx->bincache.misses, h->ctx->bincache.rejected,
                    h->ctx->bincache.written, h->ctx->bincache.write_failed};
  return c;
}

static int counts_equal(counts c, unsigned long hits, unsigned long misses, unsigned long rejected,
                        unsigned long written, unsigned long write_failed) {
  return c.hits == hits && c.misses == misses && c.rejected == rejected && c.written == written &&
         c.write_failed == write_failed;
}

static void expect_counts(const char *what, const harness *h, unsigned long hits,
                          unsigned long misses, unsigned long rejected, unsigned long written,
                          unsigned long write_failed) {
  const counts c = counters(h);
  if (!counts_equal(c, hits, misses, rejected, written, write_failed))
    harness_fail("%s: cache counters hits %lu misses %lu rejected %lu written %lu write_failed "
                 "%lu, expected %lu %lu %lu %lu %lu",
                 what, c.hits, c.misses, c.rejected, c.written, c.write_failed, hits, misses,
                 rejected, written, write_failed);
}

/* One LayerNorm or RMSNorm call through the dispatcher on seeded random data, checked against
 * the reference. */
static void run_op(harness *h, clnorm_op op, uint64_t seed, const char *what) {
  const size_t n = (size_t)ROWS * COLS;
  float *x = malloc(n * sizeof *x), *gamma = malloc(COLS * sizeof *gamma);
  float *beta = malloc(COLS * sizeof *beta);
  double *ref_y = malloc(n * sizeof *ref_y), *ref_mean = malloc(ROWS * sizeof *ref_mean);
  double *ref_rstd = malloc(ROWS * sizeof *ref_rstd);
  if (!x || !gamma || !beta || !ref_y || !ref_mean || !ref_rstd) {
    harness_fail("%s: out of host memory", what);
    exit(1);
  }
  clnorm_rng rng;
  clnorm_rng_seed(&rng, seed);
  harness_random(&rng, x, n, 0.0);
  for (size_t i = 0; i < COLS; i++) {
    gamma[i] = (float)(0.5 + clnorm_rng_uniform(&rng));
    beta[i] = (float)(clnorm_rng_uniform(&rng) - 0.5);
  }
  const int rms = op == CLNORM_OP_RMSNORM;
  if (rms)
    clnorm_ref_rmsnorm(ROWS, COLS, x, COLS, gamma, 1e-5, ref_y, ref_rstd);
  else
    clnorm_ref_layernorm(ROWS, COLS, x, COLS, gamma, beta, 1e-5, ref_y, ref_mean, ref_rstd);
  cl_mem xb = harness_buffer(h, n * 4, x), yb = harness_buffer(h, (n + 5) * 4, NULL);
  cl_mem gb = harness_buffer(h, COLS * 4, gamma), bb = harness_buffer(h, COLS * 4, beta);
  cl_mem mb = harness_buffer(h, ROWS * 4, NULL), rb = harness_buffer(h, ROWS * 4, NULL);
  clnorm_call call = {.op = op,
                      .rows = ROWS,
                      .cols = COLS,
                      .dtype = CLNORM_F32,
                      .eps = 1e-5f,
                      .x = {xb, 0, COLS},
                      .y = {yb, 0, COLS},
                      .gamma = gb,
                      .rstd = rb};
  if (!rms) {
    call.beta = bb;
    call.mean = mb;
  }
  errors e;
  int gaps_ok = 1;
  const clnorm_status st = harness_check(h, &call, NULL, NULL, n, n + 5, gamma, rms ? NULL : beta,
                                         ref_y, rms ? NULL : ref_mean, ref_rstd, &e, &gaps_ok);
  const double tol = 1e-5;
  if (st != CLNORM_OK)
    harness_fail("%s: %s: %s", what, clnorm_status_string(st), clnorm_ctx_errmsg(h->ctx));
  else if (!(e.y <= tol && e.rstd <= tol && (rms || e.mean <= tol)) || !gaps_ok)
    harness_fail("%s: error y %.3g mean %.3g rstd %.3g (tolerance %.0e), gaps %s", what, e.y,
                 rms ? 0.0 : e.mean, e.rstd, tol, gaps_ok ? "kept" : "CHANGED");
  clReleaseMemObject(xb);
  clReleaseMemObject(yb);
  clReleaseMemObject(gb);
  clReleaseMemObject(bb);
  clReleaseMemObject(mb);
  clReleaseMemObject(rb);
  free(x);
  free(gamma);
  free(beta);
  free(ref_y);
  free(ref_mean);
  free(ref_rstd);
}

/* The names of the regular files in dir (sorted); returns their count (0 when dir is missing).
 * Temporary files left by a writer ("*.bin.XXXXXX") are counted too: there must be none. */
static size_t entries(const char *dir, char names[][64], size_t cap) {
  DIR *d = opendir(dir);
  size_t n = 0;
  if (!d)
    return 0;
  for (struct dirent *de; (de = readdir(d)) != NULL;) {
    if (de->d_name[0] == '.' && (de->d_name[1] == '\0' || strcmp(de->d_name, "..") == 0))
      continue;
    if (n < cap)
      snprintf(names[n], 64, "%.63s", de->d_name);
    n++;
  }
  closedir(d);
  for (size_t i = 1; i < n && i < cap; i++)
    for (size_t j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
      char t[64];
      memcpy(t, names[j], 64);
      memcpy(names[j], names[j - 1], 64);
      memcpy(names[j - 1], t, 64);
    }
  return n;
}

static int listed(char names[][64], size_t n, const char *name) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(names[i], name) == 0)
      return 1;
  return 0;
}

static unsigned char *read_all(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  unsigned char *data = NULL;
  *size = 0;
  if (f && fseek(f, 0, SEEK_END) == 0) {
    const long len = ftell(f);
    data = len >= 0 ? malloc((size_t)len + 1) : NULL;
    if (data && fseek(f, 0, SEEK_SET) == 0 && fread(data, 1, (size_t)len, f) == (size_t)len)
      *size = (size_t)len;
  }
  if (f)
    fclose(f);
  if (!data) {
    harness_fail("cannot read %s", path);
    exit(1);
  }
  return data;
}

static void write_all(const char *path, const unsigned char *data, size_t size) {
  FILE *f = fopen(path, "wb");
  if (!f || fwrite(data, 1, size, f) != size || fclose(f) != 0) {
    harness_fail("cannot write %s: %s", path, strerror(errno));
    exit(1);
  }
}

static void remove_tree(const char *path) {
  struct stat st;
  if (lstat(path, &st) != 0)
    return;
  if (S_ISDIR(st.st_mode)) {
    chmod(path, 0700);
    DIR *d = opendir(path);
    for (struct dirent *de; d && (de = readdir(d)) != NULL;) {
      if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
        continue;
      char child[1024];
      snprintf(child, sizeof child, "%s/%s", path, de->d_name);
      remove_tree(child);
    }
    if (d)
      closedir(d);
    rmdir(path);
  } else {
    unlink(path);
  }
}

static void open_with_cache(harness *h, const char *dir) {
  if (dir)
    setenv("CLNORM_BINARY_CACHE_DIR", dir, 1);
  else
    unsetenv("CLNORM_BINARY_CACHE_DIR");
  harness_open(h, "bincache");
}

/* Ways to damage an entry; `other` is another program's sound entry. */
typedef enum damage {
  FLIP_PAYLOAD,
  FLIP_KEY,
  FLIP_MAGIC,
  FLIP_CHECKSUM,
  FLIP_LENGTH,
  TRUNCATE_HALF,
  TRUNCATE_HEADER,
  EMPTY,
  APPEND,
  OTHER_KEY,
  GARBAGE_BINARY,
  SPLICE_F16,
  SPLICE_RMSNORM,
  RESEALED_RMSNORM,
  FLIP_KEY_HASH,
  DAMAGES
} damage;

static const char *damage_names[DAMAGES] = {"a byte of the binary flipped",
                                            "a byte of the key flipped",
                                            "the magic flipped",
                                            "the checksum flipped",
                                            "the payload length flipped",
                                            "truncated to half",
                                            "truncated inside the header",
                                            "empty",
                                            "a byte appended",
                                            "another program's entry copied over it",
                                            "a sound header over a binary the driver refuses",
                                            "the float16 LayerNorm entry's payload, length and "
                                            "checksum under its key",
                                            "the RMSNorm entry's payload, length and checksum "
                                            "under its key",
                                            "the RMSNorm entry's payload under its key, with "
                                            "the checksum made for its key",
                                            "the key's hash flipped"};

static size_t field(const unsigned char *data, size_t at, int bytes) {
  size_t v = 0;
  for (int b = 0; b < bytes; b++)
    v |= (size_t)data[at + b] << (8 * b);
  return v;
}

/* The key's length (bytes 12-15 of the header) and the payload's (16-23); the header is the
 * rest. */
static void layout(const unsigned char *data, size_t size, size_t *head, size_t *key_len,
                   size_t *payload_len) {
  *key_len = field(data, 12, 4);
  *payload_len = field(data, 16, 8);
  if (size < 32 || *key_len + *payload_len >= size) {
    harness_fail("an entry of %zu bytes claims a key of %zu and a payload of %zu", size, *key_len,
                 *payload_len);
    exit(1);
  }
  *head = size - *key_len - *payload_len;
}

/* The entry `data` with its own header and key, and the payload, payload length and checksum of
 * the entry at `from` (issue 25: such a splice of two sound entries was accepted and ran the
 * other program's kernels). */
static unsigned char *splice(const unsigned char *data, size_t size, const char *from,
                             size_t *spliced_size) {
  size_t from_size, head, key_len, payload_len, from_head, from_key_len, from_payload_len;
  unsigned char *other = read_all(from, &from_size);
  layout(data, size, &head, &key_len, &payload_len);
  layout(other, from_size, &from_head, &from_key_len, &from_payload_len);
  unsigned char *out = malloc(head + key_len + from_payload_len + 1);
  memcpy(out, data, head + key_len);
  memcpy(out + 16, other + 16, 16); /* payload length and checksum */
  memcpy(out + head + key_len, other + from_head + from_key_len, from_payload_len);
  free(other);
  *spliced_size = head + key_len + from_payload_len;
  return out;
}

/* Gives the entry the checksum of its own key and payload, as a sound entry has. */
static void reseal(unsigned char *data, size_t size) {
  size_t head, key_len, payload_len;
  layout(data, size, &head, &key_len, &payload_len);
  const uint64_t key_hash = clnorm__bincache_key_hash((const char *)data + head, key_len);
  const uint64_t sum = clnorm__bincache_checksum(key_hash, data + head + key_len, payload_len);
  for (int b = 0; b < 8; b++)
    data[24 + b] = (unsigned char)(sum >> (8 * b));
}

static void damage_entry(const char *path, const char *other, const char *f16, damage how) {
  size_t size;
  unsigned char *data = read_all(path, &size);
  if (size < 64) {
    harness_fail("entry %s is only %zu bytes", path, size);
    exit(1);
  }
  switch (how) {
  case FLIP_PAYLOAD:
    data[size - size / 3] ^= 0x40;
    break;
  case FLIP_KEY:
    data[48] ^= 0x01; /* inside the key text, which follows the 40-byte header */
    break;
  case FLIP_MAGIC:
    data[0] ^= 0x20;
    break;
  case FLIP_CHECKSUM:
    data[27] ^= 0x80;
    break;
  case FLIP_LENGTH:
    data[16] ^= 0x01;
    break;
  case TRUNCATE_HALF:
    size /= 2;
    break;
  case TRUNCATE_HEADER:
    size = 20;
    break;
  case EMPTY:
    size = 0;
    break;
  case APPEND:
    data[size++] = 0; /* read_all left room for one byte */
    break;
  case OTHER_KEY: {
    free(data);
    data = read_all(other, &size);
    break;
  }
  case GARBAGE_BINARY: {
    /* The header (key, length, checksum) is right: only the driver can tell. */
    size_t head, key_len, payload_len;
    layout(data, size, &head, &key_len, &payload_len);
    for (size_t i = head + key_len; i < size; i++)
      data[i] = (unsigned char)(i * 131 + 7);
    reseal(data, size);
    break;
  }
  case SPLICE_F16:
  case SPLICE_RMSNORM:
  case RESEALED_RMSNORM: {
    size_t spliced_size;
    unsigned char *spliced = splice(data, size, how == SPLICE_F16 ? f16 : other, &spliced_size);
    free(data);
    data = spliced;
    size = spliced_size;
    if (how == RESEALED_RMSNORM)
      reseal(data, size);
    break;
  }
  case FLIP_KEY_HASH:
    data[35] ^= 0x10; /* the header's last field */
    break;
  case DAMAGES:
    break;
  }
  write_all(path, data, size);
  free(data);
}

typedef struct racer {
  const char *dir;
  int index;
  harness h;
  pthread_barrier_t *start;
} racer;

static void *race(void *arg) {
  racer *r = arg;
  pthread_barrier_wait(r->start);
  run_op(&r->h, CLNORM_OP_LAYERNORM, 50 + (uint64_t)r->index, "racing contexts");
  return NULL;
}

int main(void) {
  snprintf(root, sizeof root, "/tmp/clnorm-bincache-XXXXXX");
  if (!mkdtemp(root)) {
    printf("bincache: FAIL: mkdtemp: %s\n", strerror(errno));
    return 1;
  }
  unsetenv("CLNORM_NO_BINARY_CACHE");
  char dir[256], path[512], other[512], f16[512];
  static char names[MAX_ENTRIES][64], before[MAX_ENTRIES][64];
  harness h;

  /* 1. A first context builds from source and writes one entry per program, creating the
   * directory and its parents. */
  snprintf(dir, sizeof dir, "%s/new/binaries", root);
  open_with_cache(&h, dir);
  run_op(&h, CLNORM_OP_LAYERNORM, 1, "first context, layernorm");
  const counts ln = counters(&h);
  const size_t ln_count = entries(dir, before, MAX_ENTRIES);
  if (ln.misses == 0 || !counts_equal(ln, 0, ln.misses, 0, ln.misses, 0) || ln_count != ln.written)
    harness_fail("first context, layernorm: %lu misses, %lu written, %lu hits, %lu rejected, %lu "
                 "write failures, %zu files: expected every program missed and written",
                 ln.misses, ln.written, ln.hits, ln.rejected, ln.write_failed, ln_count);
  /* float16 LayerNorm: programs with the float32 ones' kernel names */
  {
    oc_case c;
    oc_default(&c, CLNORM_OP_LAYERNORM, CLNORM_F16, ROWS, COLS);
    char msg[512];
    if (oc_run(&h, &c, NULL, msg, sizeof msg) != OC_PASS)
      harness_fail("first context, float16 layernorm: %s", msg);
  }
  static char mid[MAX_ENTRIES][64];
  const size_t mid_count = entries(dir, mid, MAX_ENTRIES);
  run_op(&h, CLNORM_OP_RMSNORM, 2, "first context, rmsnorm");
  const counts both = counters(&h);
  const size_t total = entries(dir, names, MAX_ENTRIES);
  if (both.misses <= ln.misses || !counts_equal(both, 0, both.misses, 0, both.misses, 0) ||
      total != both.written)
    harness_fail("first context, rmsnorm: %lu misses, %lu written, %zu files: expected new "
                 "entries",
                 both.misses, both.written, total);
  /* The LayerNorm entry, one of RMSNorm's (a sound entry of another key) and one of float16
   * LayerNorm's. */
  snprintf(path, sizeof path, "%s/%s", dir, before[0]);
  other[0] = f16[0] = '\0';
  for (size_t i = 0; i < total && i < MAX_ENTRIES && !other[0]; i++)
    if (!listed(mid, mid_count, names[i]))
      snprintf(other, sizeof other, "%s/%s", dir, names[i]);
  for (size_t i = 0; i < mid_count && i < MAX_ENTRIES && !f16[0]; i++)
    if (!listed(before, ln_count, mid[i]))
      snprintf(f16, sizeof f16, "%s/%s", dir, mid[i]);
  harness_close(&h);
  printf("first context: %lu programs built and written\n", both.written);

  /* 2. A fresh context (and cl_context) loads every program from the cache. */
  open_with_cache(&h, dir);
  run_op(&h, CLNORM_OP_LAYERNORM, 3, "second context, layernorm");
  expect_counts("second context, layernorm", &h, ln.written, 0, 0, 0, 0);
  run_op(&h, CLNORM_OP_RMSNORM, 4, "second context, rmsnorm");
  expect_counts("second context, rmsnorm", &h, both.written - (mid_count - ln_count), 0, 0, 0, 0);
  harness_close(&h);
  if (entries(dir, names, MAX_ENTRIES) != total)
    harness_fail("second context: the cache's files changed");

  /* 3. Each kind of damage to the LayerNorm entry: rejected, rebuilt from source, rewritten;
   * then a fresh context loads the rewritten entry. */
  for (int how = 0; how < DAMAGES && other[0] && f16[0]; how++) {
    char what[160];
    snprintf(what, sizeof what, "entry %s", damage_names[how]);
    damage_entry(path, other, f16, (damage)how);
    open_with_cache(&h, dir);
    run_op(&h, CLNORM_OP_LAYERNORM, 10 + (uint64_t)how, what);
    expect_counts(what, &h, ln.written - 1, 0, 1, 1, 0);
    harness_close(&h);
    open_with_cache(&h, dir);
    run_op(&h, CLNORM_OP_LAYERNORM, 30 + (uint64_t)how, what);
    char again[200];
    snprintf(again, sizeof again, "%s, then loaded again", what);
    expect_counts(again, &h, ln.written, 0, 0, 0, 0);
    harness_close(&h);
    if (entries(dir, names, MAX_ENTRIES) != total)
      harness_fail("%s: %zu files in the cache, expected %zu", what,
                   entries(dir, names, MAX_ENTRIES), total);
  }
  if (!other[0] || !f16[0])
    harness_fail("no RMSNorm or float16 LayerNorm entry to copy over the first");

  /* 4. CLNORM_NO_BINARY_CACHE=1: nothing read or written. */
  snprintf(dir, sizeof dir, "%s/off", root);
  setenv("CLNORM_NO_BINARY_CACHE", "1", 1);
  open_with_cache(&h, dir);
  run_op(&h, CLNORM_OP_LAYERNORM, 5, "CLNORM_NO_BINARY_CACHE=1");
  expect_counts("CLNORM_NO_BINARY_CACHE=1", &h, 0, 0, 0, 0, 0);
  harness_close(&h);
  struct stat st;
  if (stat(dir, &st) == 0)
    harness_fail("CLNORM_NO_BINARY_CACHE=1: %s was created", dir);
  unsetenv("CLNORM_NO_BINARY_CACHE");

  /* 5. A cache that cannot be written: its directory's parent is a file (refused even to root),
   * and, when not root, a read-only directory. The call still succeeds. */
  snprintf(path, sizeof path, "%s/file", root);
  write_all(path, (const unsigned char *)"x", 1);
  snprintf(dir, sizeof dir, "%s/file/binaries", root);
  open_with_cache(&h, dir);
  run_op(&h, CLNORM_OP_LAYERNORM, 6, "unwritable cache (under a file)");
  expect_counts("unwritable cache (under a file)", &h, 0, ln.written, 0, 0, ln.written);
  harness_close(&h);
  if (geteuid() != 0) {
    snprintf(dir, sizeof dir, "%s/readonly", root);
    mkdir(dir, 0555);
    open_with_cache(&h, dir);
    run_op(&h, CLNORM_OP_LAYERNORM, 7, "unwritable cache (read-only directory)");
    expect_counts("unwritable cache (read-only directory)", &h, 0, ln.written, 0, 0, ln.written);
    harness_close(&h);
    if (entries(dir, names, MAX_ENTRIES) != 0)
      harness_fail("read-only directory: files were written");
  } else {
    printf("running as root: the read-only directory case is not run (root writes there)\n");
  }

  /* 6. The default place: beside the tuning database that CLNORM_DB names. */
  char db[256];
  snprintf(db, sizeof db, "%s/db/tuning.db", root);
  setenv("CLNORM_DB", db, 1);
  open_with_cache(&h, NULL);
  run_op(&h, CLNORM_OP_LAYERNORM, 8, "default directory");
  harness_close(&h);
  snprintf(dir, sizeof dir, "%s/db/clnorm-binaries", root);
  if (entries(dir, names, MAX_ENTRIES) != ln.written)
    harness_fail("default directory: %zu entries in %s, expected %lu",
                 entries(dir, names, MAX_ENTRIES), dir, ln.written);
  unsetenv("CLNORM_DB");

  /* 7. Two contexts build and write the same program at once: one sound entry, no temporary
   * file left, and a fresh context loads it. */
  snprintf(dir, sizeof dir, "%s/race", root);
  pthread_barrier_t start;
  pthread_barrier_init(&start, NULL, 2);
  racer racers[2];
  pthread_t threads[2];
  for (int i = 0; i < 2; i++) {
    racers[i].dir = dir;
    racers[i].index = i;
    racers[i].start = &start;
    open_with_cache(&racers[i].h, dir);
  }
  for (int i = 0; i < 2; i++)
    pthread_create(&threads[i], NULL, race, &racers[i]);
  for (int i = 0; i < 2; i++) {
    pthread_join(threads[i], NULL);
    const counts c = counters(&racers[i].h);
    if (c.rejected != 0 || c.write_failed != 0 || c.hits + c.misses != ln.written)
      harness_fail("racing context %d: hits %lu misses %lu rejected %lu write failures %lu", i,
                   c.hits, c.misses, c.rejected, c.write_failed);
    harness_close(&racers[i].h);
  }
  pthread_barrier_destroy(&start);
  if (entries(dir, names, MAX_ENTRIES) != ln.written)
    harness_fail("racing contexts: %zu files, expected %lu", entries(dir, names, MAX_ENTRIES),
                 ln.written);
  open_with_cache(&h, dir);
  run_op(&h, CLNORM_OP_LAYERNORM, 9, "after racing contexts");
  expect_counts("after racing contexts", &h, ln.written, 0, 0, 0, 0);
  harness_close(&h);

  /* 8. NVIDIA's register cap (CLNORM_NV_MAXRREG) is one of a program's options, so of its cache
   * key: a program built under it is cached apart, and without it the options are as before
   * (an H200's info, fabricated: no context needed). */
  {
    clnorm_device_info info = fake_nvidia_gpu();
    info.ptx_sm = 90;
    const clnorm_call call = {
        .op = CLNORM_OP_LAYERNORM, .dtype = CLNORM_F16, .rows = 64, .cols = 4096};
    clnorm_variant v;
    clnorm__heuristic(&info, &call, &v);
    char plain[CLNORM_PROGRAM_OPTIONS_MAX], capped[CLNORM_PROGRAM_OPTIONS_MAX];
    info.nv_maxrreg = 0;
    clnorm__options_string(&info, call.op, call.dtype, &v, 0, plain, sizeof plain);
    info.nv_maxrreg = 40;
    clnorm__options_string(&info, call.op, call.dtype, &v, 0, capped, sizeof capped);
    const size_t n = strlen(plain);
    if (strstr(plain, "-cl-nv-") || strncmp(plain, capped, n) != 0 ||
        strcmp(capped + n, " -cl-nv-maxrregcount=40") != 0)
      harness_fail("register cap: options \"%s\" without it, \"%s\" at 40", plain, capped);
  }

  remove_tree(root);
  if (harness_failures) {
    printf("bincache: %d failure(s)\n", harness_failures);
    return 1;
  }
  printf("bincache: OK\n");
  return 0;
}
