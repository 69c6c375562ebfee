/* LD_PRELOAD shim for the database fault tests (tests/tuner/kill.sh, disk_full.sh): faults in
 * the writes of SQLite, at a point the test chooses rather than by timing. It acts on writes to
 * files whose name ends in ".db" or ".db-wal" only; others, and every write when neither
 * variable is set, go to libc untouched. SQLite's unix VFS writes through pwrite64 (a pointer
 * into libc that the dynamic linker resolves to this function).
 *
 *   CLNORM_TEST_KILL_AT_WRITE=N   the N-th such write writes only the first half of its bytes,
 *                                 then the process sends itself SIGKILL: a torn write
 *   CLNORM_TEST_DISK_FREE=BYTES   a disk with BYTES free: writes that extend a database file
 *                                 use them up; once they are gone such a write stores what fits
 *                                 and then fails with ENOSPC, as write(2) on a full disk does
 *                                 (overwriting within a file's size always succeeds) */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

typedef ssize_t (*pwrite64_fn)(int, const void *, size_t, off_t);

static int is_database(int fd) {
  char link[64], name[4096];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  const ssize_t n = readlink(link, name, sizeof name - 1);
  if (n <= 0)
    return 0;
  name[n] = '\0';
  const size_t len = (size_t)n;
  return (len > 3 && strcmp(name + len - 3, ".db") == 0) ||
         (len > 7 && strcmp(name + len - 7, ".db-wal") == 0);
}

ssize_t pwrite64(int fd, const void *buf, size_t count, off_t offset);
ssize_t pwrite64(int fd, const void *buf, size_t count, off_t offset) {
  static pwrite64_fn real;
  static long kill_at, seen;
  static long long free_bytes = -1;
  if (!real) {
    real = (pwrite64_fn)(size_t)dlsym(RTLD_NEXT, "pwrite64");
    const char *kill_env = getenv("CLNORM_TEST_KILL_AT_WRITE");
    const char *free_env = getenv("CLNORM_TEST_DISK_FREE");
    kill_at = kill_env ? strtol(kill_env, NULL, 10) : 0;
    free_bytes = free_env ? strtoll(free_env, NULL, 10) : -1;
  }
  if ((kill_at <= 0 && free_bytes < 0) || !is_database(fd))
    return real(fd, buf, count, offset);
  if (kill_at > 0 && ++seen == kill_at) {
    if (count > 1)
      real(fd, buf, count / 2, offset);
    raise(SIGKILL);
  }
  struct stat st;
  if (free_bytes >= 0 && fstat(fd, &st) == 0) {
    const long long end = (long long)offset + (long long)count, size = (long long)st.st_size;
    const long long growth = end > size ? end - size : 0;
    if (growth > free_bytes) {
      const long long fits = size + free_bytes - (long long)offset;
      free_bytes = 0;
      if (fits > 0)
        return real(fd, buf, (size_t)fits, offset);
      errno = ENOSPC;
      return -1;
    }
    free_bytes -= growth;
  }
  return real(fd, buf, count, offset);
}
