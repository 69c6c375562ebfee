/* The on-disk cache of program binaries: a program built by an earlier process (or context) is
 * loaded with clCreateProgramWithBinary instead of being compiled again.
 *
 * One file per program, named by a hash of its key. The key is text: a hash of the program's
 * exact source, its options string, and the device and driver (name, vendor, vendor id, driver,
 * device and platform versions). An entry is
 *   magic "CLNMBIN\0", u32 format version, u32 key length, u64 payload length,
 *   u64 checksum of the key and the payload, u64 hash of the key (all little-endian), the key,
 *   the payload (the driver's binary).
 * scripts/bincache_ptx.py reads entries too (NVIDIA's PTX, for the GPU scripts): a change of the
 * layout goes there as well.
 * The checksum covers the key so that a payload cannot pass under another entry's header (two
 * sound entries spliced, issue 25); the loaded program must also have the kernels the caller
 * asks for. Anything that does not match exactly (another key under a colliding name, a short or
 * long file, a bad checksum, a binary the driver refuses or without the program's kernels) is a
 * rejected entry: the caller builds from source and the entry is overwritten. Entries are written
 * to a temporary file in the same directory and renamed into place, so readers (threads, processes)
 * see a whole entry or none. Nothing here fails a call: a cache that cannot be read or written only
 * costs a compile. */
#define _POSIX_C_SOURCE 200809L
#include "db.h"
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAGIC "CLNMBIN"  /* 8 bytes with its NUL */
#define FORMAT_VERSION 2 /* bump when the layout or the key's text changes */
#define HEADER_SIZE 40
#define PAYLOAD_MAX (1ull << 30) /* larger claims are damage, not binaries */
#define KEY_MAX 4096

static uint64_t rotl(uint64_t v, int r) { return (v << r) | (v >> (64 - r)); }

uint64_t clnorm__bincache_key_hash(const char *key, size_t key_len) {
  return clnorm__fnv1a(CLNORM_FNV_BASIS, key, key_len);
}

/* The checksum of the key (its hash seeds every lane) and the payload: four independent lanes
 * over 8-byte words (byte-wise FNV-1a costs a millisecond per megabyte, which a warm start cannot
 * spare). Each step is a bijection of its lane, so a change in any one word, or of the key's
 * hash, always changes the result. */
uint64_t clnorm__bincache_checksum(uint64_t key_hash, const unsigned char *data, size_t n) {
  const uint64_t prime = 0x9e3779b97f4a7c15ull;
  uint64_t lane[4] = {0x243f6a8885a308d3ull ^ key_hash, 0x13198a2e03707344ull ^ key_hash,
                      0xa4093822299f31d0ull ^ key_hash, 0x082efa98ec4e6c89ull ^ key_hash};
  size_t i = 0;
  for (; i + 32 <= n; i += 32)
    for (int k = 0; k < 4; k++) {
      uint64_t word = 0;
      for (int b = 0; b < 8; b++)
        word |= (uint64_t)data[i + 8 * k + b] << (8 * b);
      lane[k] = rotl((lane[k] ^ word) * prime, 31);
    }
  uint64_t h = clnorm__fnv1a(CLNORM_FNV_BASIS ^ key_hash, data + i, n - i);
  for (int k = 0; k < 4; k++)
    h = (h ^ lane[k]) * prime;
  return h ^ (uint64_t)n;
}

static void put_u32(unsigned char *p, uint32_t v) {
  for (int b = 0; b < 4; b++)
    p[b] = (unsigned char)(v >> (8 * b));
}

static void put_u64(unsigned char *p, uint64_t v) {
  for (int b = 0; b < 8; b++)
    p[b] = (unsigned char)(v >> (8 * b));
}

static uint32_t get_u32(const unsigned char *p) {
  uint32_t v = 0;
  for (int b = 0; b < 4; b++)
    v |= (uint32_t)p[b] << (8 * b);
  return v;
}

static uint64_t get_u64(const unsigned char *p) {
  uint64_t v = 0;
  for (int b = 0; b < 8; b++)
    v |= (uint64_t)p[b] << (8 * b);
  return v;
}

/* A device string, NUL-terminated and cut to fit; "" when the query fails. */
static void device_string(cl_device_id device, cl_device_info what, char *buf, size_t size) {
  if (clGetDeviceInfo(device, what, size, buf, NULL) != CL_SUCCESS)
    buf[0] = '\0';
  buf[size - 1] = '\0';
}

int clnorm__bincache_path(char *dir, size_t size, char *why, size_t why_size) {
  const char *off = getenv("CLNORM_NO_BINARY_CACHE");
  if (off && *off && strcmp(off, "0") != 0) {
    snprintf(why, why_size, "off (CLNORM_NO_BINARY_CACHE=%s)", off);
    return 0;
  }
  const char *env = getenv("CLNORM_BINARY_CACHE_DIR");
  if (env && *env) {
    snprintf(dir, size, "%s", env);
    return 1;
  }
  /* Beside the tuning database: $CLNORM_DB's directory, else ~/.cache/clnorm. */
  char db[4096], err[256];
  if (clnorm__db_default_path(db, sizeof db, err, sizeof err) != CLNORM_OK) {
    snprintf(why, why_size, "off: %s", err);
    return 0;
  }
  const char *slash = clnorm__last_path_sep(db);
  if (!slash)
    snprintf(dir, size, "clnorm-binaries");
  else
    snprintf(dir, size, "%.*s/clnorm-binaries", (int)(slash - db), db);
  return 1;
}

void clnorm__bincache_init(clnorm_ctx *ctx) {
  ctx->bincache_dir = NULL;
  ctx->bincache_device = NULL;
  char dir[4096], why[512];
  if (!clnorm__bincache_path(dir, sizeof dir, why, sizeof why)) {
    clnorm__log(CLNORM_LOG_INFO, "program binary cache %s", why);
    return;
  }
  char name[256], vendor[256], driver[256], version[256], platform[256], platform_version[256];
  cl_uint vendor_id = 0;
  cl_platform_id platform_id = NULL;
  device_string(ctx->device, CL_DEVICE_NAME, name, sizeof name);
  device_string(ctx->device, CL_DEVICE_VENDOR, vendor, sizeof vendor);
  device_string(ctx->device, CL_DRIVER_VERSION, driver, sizeof driver);
  device_string(ctx->device, CL_DEVICE_VERSION, version, sizeof version);
  platform[0] = platform_version[0] = '\0';
  if (clGetDeviceInfo(ctx->device, CL_DEVICE_VENDOR_ID, sizeof vendor_id, &vendor_id, NULL) !=
          CL_SUCCESS ||
      clGetDeviceInfo(ctx->device, CL_DEVICE_PLATFORM, sizeof platform_id, &platform_id, NULL) !=
          CL_SUCCESS ||
      clGetPlatformInfo(platform_id, CL_PLATFORM_NAME, sizeof platform, platform, NULL) !=
          CL_SUCCESS ||
      clGetPlatformInfo(platform_id, CL_PLATFORM_VERSION, sizeof platform_version, platform_version,
                        NULL) != CL_SUCCESS ||
      !*name || !*driver) {
    clnorm__log(CLNORM_LOG_INFO, "program binary cache off: the device's identity is unreadable");
    return;
  }
  platform[sizeof platform - 1] = platform_version[sizeof platform_version - 1] = '\0';
  /* Oclgrind 21.10 crashes (SIGSEGV) running kernels of programs made from its own binaries
   * (docs/DEVICES.md): the simulator always builds from source. */
  if (strstr(platform, "Oclgrind") != NULL) {
    clnorm__log(CLNORM_LOG_INFO, "program binary cache off on Oclgrind (docs/DEVICES.md)");
    return;
  }
  /* Another driver, compiler (PoCL's platform version names its LLVM) or CPU (PoCL's device
   * version names it) makes another key: a binary is only reused where it was made. */
  char device[2048];
  snprintf(device, sizeof device,
           "device %s\nvendor %s\nvendor_id 0x%x\ndriver %s\ndevice_version %s\nplatform %s\n"
           "platform_version %s\n",
           name, vendor, (unsigned)vendor_id, driver, version, platform, platform_version);
  ctx->bincache_dir = clnorm__strdup(dir);
  ctx->bincache_device = clnorm__strdup(device);
  if (!ctx->bincache_dir || !ctx->bincache_device) {
    clnorm__bincache_free(ctx);
    return;
  }
  clnorm__log(CLNORM_LOG_INFO, "program binary cache in %s", dir);
}

void clnorm__bincache_free(clnorm_ctx *ctx) {
  free(ctx->bincache_dir);
  free(ctx->bincache_device);
  ctx->bincache_dir = NULL;
  ctx->bincache_device = NULL;
}

/* The entry's key text and its file name. 0 when the cache is off or the key does not fit. */
static int entry_key(const clnorm_ctx *ctx, const char *const *sources, const size_t *lengths,
                     size_t count, const char *options, char *key, size_t key_size, char *path,
                     size_t path_size) {
  if (!ctx->bincache_dir)
    return 0;
  uint64_t source_hash = CLNORM_FNV_BASIS;
  for (size_t i = 0; i < count; i++)
    source_hash = clnorm__fnv1a(source_hash, sources[i], lengths[i]);
  const int n = snprintf(key, key_size, "clnorm program binary\nsource %016llx\noptions %s\n%s",
                         (unsigned long long)source_hash, options, ctx->bincache_device);
  if (n < 0 || (size_t)n >= key_size)
    return 0;
  const uint64_t name = clnorm__bincache_key_hash(key, (size_t)n);
  const int m =
      snprintf(path, path_size, "%s/%016llx.bin", ctx->bincache_dir, (unsigned long long)name);
  return m > 0 && (size_t)m < path_size;
}

/* Reads the whole file at path into *data (*size bytes). Returns 0 with errno set. */
static int read_file(const char *path, unsigned char **data, size_t *size) {
  *data = NULL;
  const int fd = clnorm__open_read(path);
  if (fd < 0)
    return 0;
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
      (unsigned long long)st.st_size > PAYLOAD_MAX + HEADER_SIZE + KEY_MAX) {
    close(fd);
    errno = EINVAL;
    return 0;
  }
  *size = (size_t)st.st_size;
  *data = malloc(*size ? *size : 1);
  size_t done = 0;
  while (*data && done < *size) {
    const ssize_t got = read(fd, *data + done, *size - done);
    if (got < 0 && errno == EINTR)
      continue;
    if (got <= 0)
      break;
    done += (size_t)got;
  }
  close(fd);
  if (!*data || done != *size) {
    free(*data);
    *data = NULL;
    errno = EIO;
    return 0;
  }
  return 1;
}

/* Why the entry cannot be used, or NULL when its header, key and checksum match. */
static const char *check_entry(const unsigned char *data, size_t size, const char *key,
                               const unsigned char **payload, size_t *payload_len) {
  const size_t key_len = strlen(key);
  if (size < HEADER_SIZE || memcmp(data, MAGIC, 8) != 0)
    return "not a clnorm binary";
  if (get_u32(data + 8) != FORMAT_VERSION)
    return "another format version";
  const uint64_t stored_key_len = get_u32(data + 12), len = get_u64(data + 16);
  if (len > PAYLOAD_MAX || stored_key_len > KEY_MAX || HEADER_SIZE + stored_key_len + len != size)
    return "truncated or of the wrong length";
  const uint64_t key_hash = clnorm__bincache_key_hash(key, key_len);
  if (get_u64(data + 32) != key_hash || stored_key_len != key_len ||
      memcmp(data + HEADER_SIZE, key, key_len) != 0)
    return "another program's or device's entry";
  *payload = data + HEADER_SIZE + key_len;
  *payload_len = (size_t)len;
  if (clnorm__bincache_checksum(key_hash, *payload, *payload_len) != get_u64(data + 24))
    return "bad checksum (a damaged payload, or another entry's)";
  return NULL;
}

/* The first of `kernels` the program lacks, or NULL when it has them all. */
static const char *missing_kernel(cl_program program, const char *const *kernels, size_t count,
                                  cl_int *err) {
  size_t size = 0;
  *err = clGetProgramInfo(program, CL_PROGRAM_KERNEL_NAMES, 0, NULL, &size);
  char *names = *err == CL_SUCCESS ? malloc(size + 1) : NULL;
  if (*err == CL_SUCCESS && !names)
    *err = CL_OUT_OF_HOST_MEMORY;
  if (names) {
    *err = clGetProgramInfo(program, CL_PROGRAM_KERNEL_NAMES, size, names, NULL);
    names[size] = '\0';
  }
  const char *missing = NULL;
  for (size_t k = 0; k < count && *err == CL_SUCCESS && !missing; k++) {
    /* names is "a;b;c": look for the name between separators */
    const size_t len = strlen(kernels[k]);
    const char *at = names;
    int found = 0;
    while (!found && (at = strstr(at, kernels[k])) != NULL) {
      found = (at == names || at[-1] == ';') && (at[len] == ';' || at[len] == '\0');
      at += len;
    }
    if (!found)
      missing = kernels[k];
  }
  free(names);
  return missing;
}

cl_program clnorm__bincache_load(clnorm_ctx *ctx, const char *const *sources, const size_t *lengths,
                                 size_t count, const char *options, const char *const *kernels,
                                 size_t kernel_count) {
  char key[KEY_MAX], path[4200];
  if (!entry_key(ctx, sources, lengths, count, options, key, sizeof key, path, sizeof path))
    return NULL;
  unsigned char *data;
  size_t size;
  if (!read_file(path, &data, &size)) {
    atomic_fetch_add(&ctx->bincache.misses, 1);
    clnorm__log(CLNORM_LOG_INFO, "binary cache miss (%s): %s", strerror(errno), path);
    return NULL;
  }
  const unsigned char *payload = NULL;
  size_t payload_len = 0;
  const char *why = check_entry(data, size, key, &payload, &payload_len);
  cl_program program = NULL;
  char text[160];
  if (!why) {
    cl_int status = CL_SUCCESS, err;
    program = clCreateProgramWithBinary(ctx->context, 1, &ctx->device, &payload_len, &payload,
                                        &status, &err);
    if (err == CL_SUCCESS && status == CL_SUCCESS)
      err = clBuildProgram(program, 1, &ctx->device, options, NULL, NULL);
    else if (err == CL_SUCCESS)
      err = status;
    /* A program without its kernels would fail later, where no fallback exists. */
    const char *missing = NULL;
    if (err == CL_SUCCESS)
      missing = missing_kernel(program, kernels, kernel_count, &err);
    if (err != CL_SUCCESS) {
      snprintf(text, sizeof text, "the driver refused it: %s", clnorm__cl_error_name(err));
      why = text;
    } else if (missing) {
      snprintf(text, sizeof text, "its binary has no kernel %s", missing);
      why = text;
    }
    if (why) {
      if (program)
        clReleaseProgram(program);
      program = NULL;
    }
  }
  free(data);
  if (why) {
    atomic_fetch_add(&ctx->bincache.rejected, 1);
    clnorm__log(CLNORM_LOG_INFO, "binary cache entry rejected (%s), building from source: %s", why,
                path);
    return NULL;
  }
  atomic_fetch_add(&ctx->bincache.hits, 1);
  clnorm__log(CLNORM_LOG_INFO, "binary cache hit: %s", path);
  return program;
}

static int write_all(int fd, const void *data, size_t n) {
  const unsigned char *p = data;
  while (n > 0) {
    const ssize_t put = write(fd, p, n);
    if (put < 0 && errno == EINTR)
      continue;
    if (put <= 0) {
      if (put == 0)
        errno = EIO;
      return 0;
    }
    p += put;
    n -= (size_t)put;
  }
  return 1;
}

/* The binary built for ctx->device, malloc'ed; NULL when the driver gives none. A program made
 * from source belongs to every device of the context: find ours among them. */
static unsigned char *program_binary(const clnorm_ctx *ctx, cl_program program, size_t *size) {
  cl_uint ndev = 0;
  if (clGetProgramInfo(program, CL_PROGRAM_NUM_DEVICES, sizeof ndev, &ndev, NULL) != CL_SUCCESS ||
      ndev == 0)
    return NULL;
  cl_device_id *devices = calloc(ndev, sizeof *devices);
  size_t *sizes = calloc(ndev, sizeof *sizes);
  unsigned char **binaries = calloc(ndev, sizeof *binaries);
  unsigned char *out = NULL;
  cl_uint mine = ndev;
  if (devices && sizes && binaries &&
      clGetProgramInfo(program, CL_PROGRAM_DEVICES, ndev * sizeof *devices, devices, NULL) ==
          CL_SUCCESS &&
      clGetProgramInfo(program, CL_PROGRAM_BINARY_SIZES, ndev * sizeof *sizes, sizes, NULL) ==
          CL_SUCCESS) {
    for (cl_uint i = 0; i < ndev; i++)
      if (devices[i] == ctx->device)
        mine = i;
    if (mine < ndev && sizes[mine] > 0 && sizes[mine] <= PAYLOAD_MAX) {
      /* The other devices' pointers stay NULL: the driver skips those. */
      binaries[mine] = malloc(sizes[mine]);
      if (binaries[mine] && clGetProgramInfo(program, CL_PROGRAM_BINARIES, ndev * sizeof *binaries,
                                             binaries, NULL) == CL_SUCCESS) {
        out = binaries[mine];
        *size = sizes[mine];
      } else {
        free(binaries[mine]);
      }
    }
  }
  free(devices);
  free(sizes);
  free(binaries);
  return out;
}

void clnorm__bincache_store(clnorm_ctx *ctx, const char *const *sources, const size_t *lengths,
                            size_t count, const char *options, cl_program program) {
  char key[KEY_MAX], path[4200], tmp[4300];
  if (!entry_key(ctx, sources, lengths, count, options, key, sizeof key, path, sizeof path))
    return;
  const char *why = NULL;
  size_t size = 0;
  unsigned char *binary = program_binary(ctx, program, &size);
  int fd = -1;
  if (!binary) {
    why = "the driver gives no binary";
  } else if (!clnorm__make_dirs(ctx->bincache_dir)) {
    why = strerror(errno);
  } else {
    snprintf(tmp, sizeof tmp, "%s.XXXXXX", path);
    fd = clnorm__make_temp(tmp);
    if (fd < 0)
      why = strerror(errno);
  }
  if (fd >= 0) {
    const size_t key_len = strlen(key);
    unsigned char header[HEADER_SIZE];
    memcpy(header, MAGIC, 8);
    put_u32(header + 8, FORMAT_VERSION);
    put_u32(header + 12, (uint32_t)key_len);
    put_u64(header + 16, size);
    const uint64_t key_hash = clnorm__bincache_key_hash(key, key_len);
    put_u64(header + 24, clnorm__bincache_checksum(key_hash, binary, size));
    put_u64(header + 32, key_hash);
    /* No fsync: an entry a crash leaves short or empty is rejected and rebuilt like any other. */
    if (!write_all(fd, header, sizeof header) || !write_all(fd, key, key_len) ||
        !write_all(fd, binary, size))
      why = strerror(errno);
    if (close(fd) != 0 && !why)
      why = strerror(errno);
    if (!why && clnorm__rename_over(tmp, path) != 0)
      why = strerror(errno);
    if (why)
      unlink(tmp);
  }
  free(binary);
  if (why) {
    atomic_fetch_add(&ctx->bincache.write_failed, 1);
    clnorm__log(CLNORM_LOG_WARN, "binary cache entry not written (%s): %s", why, path);
    return;
  }
  atomic_fetch_add(&ctx->bincache.written, 1);
  clnorm__log(CLNORM_LOG_INFO, "binary cache entry written: %s", path);
}
