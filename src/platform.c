/* platform.h for POSIX systems and for Windows (Vista and later: SRW locks, condition variables
 * and one-time initialization are in its API). */
#if !defined(_WIN32)
#define _POSIX_C_SOURCE 200809L
#define _DARWIN_C_SOURCE /* macOS hides _SC_NPROCESSORS_ONLN from strict POSIX */
#endif
#include "platform.h"

#include <errno.h>
#include <locale.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* A new thread's function and argument, freed by the thread (thread_start_run) once it has
 * them: the system's thread functions take one pointer and return another type than fn. */
typedef struct thread_start {
  void (*fn)(void *arg);
  void *arg;
} thread_start;

static thread_start *thread_start_new(void (*fn)(void *arg), void *arg) {
  thread_start *start = malloc(sizeof *start);
  if (start)
    *start = (thread_start){fn, arg};
  return start;
}

static void thread_start_run(void *param) {
  const thread_start start = *(thread_start *)param;
  free(param);
  start.fn(start.arg);
}

int clnorm__keys_cmp(const uint64_t *a, const uint64_t *b, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (a[i] != b[i])
      return a[i] < b[i] ? -1 : 1;
  return 0;
}

char *clnorm__strdup(const char *s) {
  const size_t n = strlen(s) + 1;
  char *d = malloc(n);
  if (d)
    memcpy(d, s, n);
  return d;
}

#if defined(_WIN32)
#define WIN32_LEAN_AND_MEAN
#include <direct.h>
#include <fcntl.h>
#include <io.h>
#include <process.h>
#include <windows.h>

int clnorm__mutex_init(clnorm_mutex *m) {
  InitializeSRWLock((PSRWLOCK)&m->opaque);
  return 0;
}

void clnorm__mutex_destroy(clnorm_mutex *m) { (void)m; /* an SRW lock holds no resources */ }

void clnorm__mutex_lock(clnorm_mutex *m) { AcquireSRWLockExclusive((PSRWLOCK)&m->opaque); }

void clnorm__mutex_unlock(clnorm_mutex *m) { ReleaseSRWLockExclusive((PSRWLOCK)&m->opaque); }

int clnorm__cond_init(clnorm_cond *c) {
  InitializeConditionVariable((PCONDITION_VARIABLE)&c->opaque);
  return 0;
}

void clnorm__cond_destroy(clnorm_cond *c) { (void)c; }

void clnorm__cond_wait(clnorm_cond *c, clnorm_mutex *m) {
  SleepConditionVariableSRW((PCONDITION_VARIABLE)&c->opaque, (PSRWLOCK)&m->opaque, INFINITE, 0);
}

void clnorm__cond_broadcast(clnorm_cond *c) {
  WakeAllConditionVariable((PCONDITION_VARIABLE)&c->opaque);
}

/* A function pointer cannot travel through InitOnceExecuteOnce's void * in ISO C: a struct
 * holding it can. */
typedef struct once_fn {
  void (*fn)(void);
} once_fn;

static BOOL CALLBACK run_once(PINIT_ONCE once, PVOID param, PVOID *context) {
  (void)once;
  (void)context;
  ((const once_fn *)param)->fn();
  return TRUE;
}

void clnorm__call_once(clnorm_once *once, void (*fn)(void)) {
  once_fn box = {fn};
  InitOnceExecuteOnce((PINIT_ONCE)&once->opaque, run_once, &box, NULL);
}

static unsigned __stdcall thread_main(void *param) {
  thread_start_run(param);
  return 0;
}

int clnorm__thread_create(clnorm_thread *t, void (*fn)(void *arg), void *arg) {
  thread_start *start = thread_start_new(fn, arg);
  if (!start)
    return -1;
  /* _beginthreadex, not CreateThread: the thread uses the C runtime */
  const uintptr_t handle = _beginthreadex(NULL, 0, thread_main, start, 0, NULL);
  if (!handle) {
    free(start);
    return -1;
  }
  t->opaque = (void *)handle;
  return 0;
}

void clnorm__thread_join(clnorm_thread t) {
  WaitForSingleObject((HANDLE)t.opaque, INFINITE);
  CloseHandle((HANDLE)t.opaque);
}

unsigned clnorm__cpu_count(void) {
  SYSTEM_INFO info;
  GetSystemInfo(&info);
  return info.dwNumberOfProcessors > 0 ? (unsigned)info.dwNumberOfProcessors : 1;
}

void clnorm__sleep_ms(long ms) { Sleep(ms > 0 ? (DWORD)ms : 0); }

double clnorm__now_seconds(void) {
  LARGE_INTEGER count, frequency;
  QueryPerformanceCounter(&count);
  QueryPerformanceFrequency(&frequency);
  return (double)count.QuadPart / (double)frequency.QuadPart;
}

int clnorm__setenv(const char *name, const char *value) {
  return _putenv_s(name, value) == 0 ? 0 : -1;
}

int clnorm__is_path_sep(char c) { return c == '/' || c == '\\'; }

static int make_dir(const char *path) { return _mkdir(path); }

int clnorm__path_exists(const char *path) {
  if (GetFileAttributesA(path) != INVALID_FILE_ATTRIBUTES)
    return 1;
  const DWORD err = GetLastError();
  if (err == ERROR_FILE_NOT_FOUND || err == ERROR_PATH_NOT_FOUND)
    return 0;
  errno = EACCES;
  return -1;
}

/* The Win32 error of the last call as the errno value callers report with strerror(). */
static int errno_of_last_error(void) {
  switch (GetLastError()) {
  case ERROR_FILE_NOT_FOUND:
  case ERROR_PATH_NOT_FOUND:
    return ENOENT;
  case ERROR_ACCESS_DENIED:
  case ERROR_SHARING_VIOLATION:
  case ERROR_LOCK_VIOLATION:
    return EACCES;
  case ERROR_ALREADY_EXISTS:
  case ERROR_FILE_EXISTS:
    return EEXIST;
  case ERROR_DISK_FULL:
    return ENOSPC;
  default:
    return EIO;
  }
}

int clnorm__rename_over(const char *from, const char *to) {
  if (MoveFileExA(from, to, MOVEFILE_REPLACE_EXISTING))
    return 0;
  errno = errno_of_last_error();
  return -1;
}

int clnorm__open_read(const char *path) {
  return _open(path, _O_RDONLY | _O_BINARY | _O_NOINHERIT);
}

/* A new name each try: the process, the time and a counter, mixed. */
static uint64_t temp_seed(void) {
  static volatile LONG counter;
  uint64_t x = (uint64_t)GetCurrentProcessId() << 32 ^ (uint64_t)GetTickCount64() ^
               (uint64_t)InterlockedIncrement(&counter) * 0x9e3779b97f4a7c15ull;
  x ^= x >> 31;
  x *= 0xbf58476d1ce4e5b9ull;
  return x ^ x >> 29;
}

static int create_exclusive(const char *path) {
  return _open(path, _O_CREAT | _O_EXCL | _O_WRONLY | _O_BINARY | _O_NOINHERIT,
               _S_IREAD | _S_IWRITE);
}

int clnorm__make_temp(char *path_template) {
  static const char letters[] = "abcdefghijklmnopqrstuvwxyz0123456789";
  const size_t len = strlen(path_template);
  if (len < 6 || strcmp(path_template + len - 6, "XXXXXX") != 0) {
    errno = EINVAL;
    return -1;
  }
  for (int attempt = 0; attempt < 100; attempt++) {
    uint64_t x = temp_seed();
    for (size_t i = len - 6; i < len; i++, x /= 36)
      path_template[i] = letters[x % 36];
    const int fd = create_exclusive(path_template);
    if (fd >= 0 || errno != EEXIST)
      return fd;
  }
  return -1;
}

int clnorm__cache_home(char *buf, size_t size, const char **names) {
  *names = "LOCALAPPDATA";
  const char *local = getenv("LOCALAPPDATA");
  if (!local || !*local)
    return 0;
  const int n = snprintf(buf, size, "%s", local);
  return n > 0 && (size_t)n < size;
}

/* The numeric locale becomes the thread's own before it changes: the application's other threads
 * keep theirs. */
typedef struct c_numbers {
  int previous_mode;
  char *previous_name;
} c_numbers;

void *clnorm__c_numbers_begin(void) {
  c_numbers *n = malloc(sizeof *n);
  if (!n)
    return NULL;
  n->previous_mode = _configthreadlocale(_ENABLE_PER_THREAD_LOCALE);
  const char *name = setlocale(LC_NUMERIC, NULL);
  n->previous_name = name ? _strdup(name) : NULL;
  if (n->previous_mode == -1 || !n->previous_name || !setlocale(LC_NUMERIC, "C")) {
    if (n->previous_mode != -1)
      _configthreadlocale(n->previous_mode);
    free(n->previous_name);
    free(n);
    return NULL;
  }
  return n;
}

void clnorm__c_numbers_end(void *state) {
  c_numbers *n = state;
  if (!n)
    return;
  setlocale(LC_NUMERIC, n->previous_name);
  _configthreadlocale(n->previous_mode);
  free(n->previous_name);
  free(n);
}

/* A thread's stack is the 1 MiB Windows reserves by default, unless its creator asks for
 * another size, which the library cannot see. */
size_t clnorm__stack_limit(void) { return (size_t)1 << 20; }

#else
#include <fcntl.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

int clnorm__mutex_init(clnorm_mutex *m) { return pthread_mutex_init(m, NULL); }

void clnorm__mutex_destroy(clnorm_mutex *m) { pthread_mutex_destroy(m); }

void clnorm__mutex_lock(clnorm_mutex *m) { pthread_mutex_lock(m); }

void clnorm__mutex_unlock(clnorm_mutex *m) { pthread_mutex_unlock(m); }

int clnorm__cond_init(clnorm_cond *c) { return pthread_cond_init(c, NULL); }

void clnorm__cond_destroy(clnorm_cond *c) { pthread_cond_destroy(c); }

void clnorm__cond_wait(clnorm_cond *c, clnorm_mutex *m) { pthread_cond_wait(c, m); }

void clnorm__cond_broadcast(clnorm_cond *c) { pthread_cond_broadcast(c); }

void clnorm__call_once(clnorm_once *once, void (*fn)(void)) { pthread_once(once, fn); }

/* pthread_create takes a function returning void *: the start goes through this. */
static void *thread_main(void *param) {
  thread_start_run(param);
  return NULL;
}

int clnorm__thread_create(clnorm_thread *t, void (*fn)(void *arg), void *arg) {
  thread_start *start = thread_start_new(fn, arg);
  if (!start)
    return -1;
  if (pthread_create(t, NULL, thread_main, start) != 0) {
    free(start);
    return -1;
  }
  return 0;
}

void clnorm__thread_join(clnorm_thread t) { pthread_join(t, NULL); }

unsigned clnorm__cpu_count(void) {
  const long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (unsigned)n : 1;
}

void clnorm__sleep_ms(long ms) {
  struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&t, &t) != 0 && errno == EINTR)
    ;
}

double clnorm__now_seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int clnorm__setenv(const char *name, const char *value) { return setenv(name, value, 1); }

int clnorm__is_path_sep(char c) { return c == '/'; }

static int make_dir(const char *path) { return mkdir(path, 0755); }

int clnorm__path_exists(const char *path) {
  struct stat st;
  if (lstat(path, &st) == 0)
    return 1;
  return errno == ENOENT ? 0 : -1;
}

int clnorm__rename_over(const char *from, const char *to) { return rename(from, to); }

int clnorm__open_read(const char *path) { return open(path, O_RDONLY | O_CLOEXEC); }

int clnorm__make_temp(char *path_template) { return mkstemp(path_template); }

int clnorm__cache_home(char *buf, size_t size, const char **names) {
  *names = "XDG_CACHE_HOME, HOME";
  const char *xdg = getenv("XDG_CACHE_HOME");
  const char *home = getenv("HOME");
  int n;
  if (xdg && xdg[0] == '/') /* the XDG spec: a relative path is invalid, ignore it */
    n = snprintf(buf, size, "%s", xdg);
  else if (home && *home)
    n = snprintf(buf, size, "%s/.cache", home);
  else
    return 0;
  return n > 0 && (size_t)n < size;
}

typedef struct c_numbers {
  locale_t c, previous;
} c_numbers;

void *clnorm__c_numbers_begin(void) {
  c_numbers *n = malloc(sizeof *n);
  if (!n)
    return NULL;
  n->c = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
  if (!n->c) {
    free(n);
    return NULL;
  }
  n->previous = uselocale(n->c);
  return n;
}

void clnorm__c_numbers_end(void *state) {
  c_numbers *n = state;
  if (!n)
    return;
  uselocale(n->previous);
  freelocale(n->c);
  free(n);
}

size_t clnorm__stack_limit(void) {
  struct rlimit lim;
  if (getrlimit(RLIMIT_STACK, &lim) != 0 || lim.rlim_cur == RLIM_INFINITY)
    return 0;
  return lim.rlim_cur < SIZE_MAX ? (size_t)lim.rlim_cur : 0;
}
#endif

const char *clnorm__last_path_sep(const char *path) {
  const char *last = NULL;
  for (const char *p = path; *p; p++)
    if (clnorm__is_path_sep(*p))
      last = p;
  return last;
}

/* Where the first component that mkdir may have to create begins: past "/", and on Windows past
 * a drive ("C:", "C:\") or a share ("\\server\share\"), which cannot be created. */
static size_t root_length(const char *path) {
#if defined(_WIN32)
  if (path[0] && path[1] == ':')
    return clnorm__is_path_sep(path[2]) ? 3 : 2;
  if (clnorm__is_path_sep(path[0]) && clnorm__is_path_sep(path[1])) {
    size_t i = 2, parts = 0;
    while (path[i] && parts < 2)
      parts += clnorm__is_path_sep(path[i++]);
    return i;
  }
#endif
  return clnorm__is_path_sep(path[0]) ? 1 : 0;
}

int clnorm__make_dirs(const char *dir) {
  char buf[4096];
  const int n = snprintf(buf, sizeof buf, "%s", dir);
  if (n <= 0 || n >= (int)sizeof buf) {
    errno = n <= 0 ? ENOENT : ENAMETOOLONG;
    return 0;
  }
  for (char *p = buf + root_length(buf);; p++) {
    const char saved = *p;
    if (!clnorm__is_path_sep(saved) && saved != '\0')
      continue;
    if (p > buf && !clnorm__is_path_sep(p[-1])) {
      *p = '\0';
      if (make_dir(buf) != 0 && errno != EEXIST)
        return 0;
      *p = saved;
    }
    if (saved == '\0')
      return 1;
  }
}
