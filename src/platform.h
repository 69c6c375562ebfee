/* What the library needs of the operating system, for POSIX systems (Linux, macOS) and Windows
 * (platform.c). The rest of src/ calls these instead of pthreads, <unistd.h> or the Win32 API,
 * so that a port touches this header and platform.c only. No function here prints. */
#ifndef CLNORM_PLATFORM_H
#define CLNORM_PLATFORM_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The printf archetype of format attributes: MinGW's GCC takes plain `printf` as Microsoft's,
 * which knows no %zu; its C99 printf (__USE_MINGW_ANSI_STDIO, set by CMakeLists.txt) is
 * gnu_printf. */
#if defined(__MINGW_PRINTF_FORMAT)
#define CLNORM_PRINTF_FORMAT __MINGW_PRINTF_FORMAT
#else
#define CLNORM_PRINTF_FORMAT printf
#endif

#if defined(_WIN32)
/* SRWLOCK, CONDITION_VARIABLE and INIT_ONCE are each one pointer: held as such, so that this
 * header need not pull <windows.h> (and its macros) into every file of the library. */
typedef struct clnorm_mutex {
  void *opaque;
} clnorm_mutex;
typedef struct clnorm_cond {
  void *opaque;
} clnorm_cond;
typedef struct clnorm_once {
  void *opaque;
} clnorm_once;
typedef struct clnorm_thread {
  void *opaque;
} clnorm_thread;
/* zero: SRWLOCK_INIT and INIT_ONCE_STATIC_INIT */
#define CLNORM_MUTEX_INIT                                                                          \
  { 0 }
#define CLNORM_ONCE_INIT                                                                           \
  { 0 }
#else
#include <pthread.h>
typedef pthread_mutex_t clnorm_mutex;
typedef pthread_cond_t clnorm_cond;
typedef pthread_once_t clnorm_once;
typedef pthread_t clnorm_thread;
#define CLNORM_MUTEX_INIT PTHREAD_MUTEX_INITIALIZER
#define CLNORM_ONCE_INIT PTHREAD_ONCE_INIT
#endif

#if defined(_MSC_VER) && !defined(__clang__)
#define CLNORM_THREAD_LOCAL __declspec(thread)
#else
#define CLNORM_THREAD_LOCAL _Thread_local
#endif

/* 0 on success. A mutex or condition is used between init and destroy only (a static mutex may
 * be initialized with CLNORM_MUTEX_INIT instead, and is never destroyed); the mutex is not
 * recursive. */
int clnorm__mutex_init(clnorm_mutex *m);
void clnorm__mutex_destroy(clnorm_mutex *m);
void clnorm__mutex_lock(clnorm_mutex *m);
void clnorm__mutex_unlock(clnorm_mutex *m);
int clnorm__cond_init(clnorm_cond *c);
void clnorm__cond_destroy(clnorm_cond *c);
void clnorm__cond_wait(clnorm_cond *c, clnorm_mutex *m);
void clnorm__cond_broadcast(clnorm_cond *c);
/* Runs fn exactly once per `once`, whichever threads call; every caller returns after it ran. */
void clnorm__call_once(clnorm_once *once, void (*fn)(void));

/* A thread running fn(arg): 0 when started. Every started thread is joined once. */
int clnorm__thread_create(clnorm_thread *t, void (*fn)(void *arg), void *arg);
void clnorm__thread_join(clnorm_thread t);
/* Processors online (at least 1). */
unsigned clnorm__cpu_count(void);
/* Compares keys of n parts, the first part first: -1, 0 or 1 (for qsort). */
int clnorm__keys_cmp(const uint64_t *a, const uint64_t *b, size_t n);
/* A copy of s from malloc, or NULL. */
char *clnorm__strdup(const char *s);

void clnorm__sleep_ms(long ms);
/* Seconds on a clock that never goes back, from an arbitrary origin. */
double clnorm__now_seconds(void);
/* setenv(name, value, 1): 0 or -1. */
int clnorm__setenv(const char *name, const char *value);

/* Whether c separates a path's components ('/'; on Windows '\\' too), and the last such
 * character of path (NULL: none). */
int clnorm__is_path_sep(char c);
const char *clnorm__last_path_sep(const char *path);
/* 1 when something (a file, a directory, a dangling link) is at path, 0 when nothing is, -1 with
 * errno set when that cannot be told. */
int clnorm__path_exists(const char *path);
/* mkdir -p: 1 when dir exists as a directory afterwards, else 0 with errno set. */
int clnorm__make_dirs(const char *dir);
/* Renames from to to, replacing an existing `to` (Windows' rename() refuses to); 0 or -1 with
 * errno set. */
int clnorm__rename_over(const char *from, const char *to);
/* A file descriptor of path opened for reading in binary mode, not inherited by child
 * processes; -1 with errno set. */
int clnorm__open_read(const char *path);
/* mkstemp(): creates a file from a template ending in XXXXXX (replaced in place), opened for
 * writing in binary mode; its descriptor, or -1 with errno set. */
int clnorm__make_temp(char *path_template);
/* The per-user cache directory into buf: $XDG_CACHE_HOME when absolute, else $HOME/.cache on
 * POSIX systems; %LOCALAPPDATA% on Windows. 0 when none is set or it does not fit; *names then
 * says which variables were looked at (static text). */
int clnorm__cache_home(char *buf, size_t size, const char **names);
/* Makes this thread print and parse numbers with '.' whatever the application's locale says,
 * until clnorm__c_numbers_end(the returned state). NULL (nothing changed) when that fails. */
void *clnorm__c_numbers_begin(void);
void clnorm__c_numbers_end(void *state);
/* The stack size the threads of a process get, in bytes (0: unlimited or unknown). */
size_t clnorm__stack_limit(void);

#endif
