/* normtune doctor: see doctor.h. */
#define _POSIX_C_SOURCE 200809L
#include "doctor.h"

#include "db.h"
#include "internal.h"
#include "tool.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_LIVE 64

typedef struct doctor {
  int status; /* the most serious DOCTOR_ status so far */
  unsigned warnings, problems;
  clnorm_device_identity live[MAX_LIVE]; /* this machine's devices */
  size_t nlive;
} doctor;

static void finding(doctor *d, int status, const char *what, const char *todo, ...)
    __attribute__((format(printf, 4, 5)));

/* Prints "  WARNING: what" or "  PROBLEM: what" and "    what to do: todo", and raises the
 * status. what is printed as given; todo is a format. */
static void finding(doctor *d, int status, const char *what, const char *todo, ...) {
  printf("  %s: %s\n", status == DOCTOR_WARNING ? "WARNING" : "PROBLEM", what);
  if (todo) {
    va_list args;
    va_start(args, todo);
    fputs("    what to do: ", stdout);
    vprintf(todo, args);
    putchar('\n');
    va_end(args);
  }
  if (status == DOCTOR_WARNING)
    d->warnings++;
  else
    d->problems++;
  d->status = status > d->status ? status : d->status;
}

/* Prints an .icd file's line (the driver library) and whether that library is there. */
static void icd_file(doctor *d, const char *path) {
  FILE *f = fopen(path, "r");
  char line[1024] = "";
  if (!f) {
    printf("    %s: cannot read (%s)\n", path, strerror(errno));
    return;
  }
  if (!fgets(line, sizeof line, f))
    line[0] = '\0';
  fclose(f);
  line[strcspn(line, "\r\n")] = '\0';
  if (!line[0]) {
    printf("    %s: empty\n", path);
    char what[1200];
    snprintf(what, sizeof what, "%s names no driver library", path);
    finding(d, DOCTOR_WARNING, what, "remove it, or reinstall the driver that installed it");
    return;
  }
  struct stat st;
  if (line[0] != '/') {
    printf("    %s -> %s (found through the dynamic linker's search path)\n", path, line);
  } else if (stat(line, &st) == 0) {
    printf("    %s -> %s (present)\n", path, line);
  } else {
    printf("    %s -> %s (MISSING)\n", path, line);
    char what[2200];
    snprintf(what, sizeof what, "%s names %s, which does not exist", path, line);
    finding(d, DOCTOR_WARNING, what,
            "reinstall that driver, or remove the .icd file if the driver was uninstalled");
  }
}

static int name_cmp(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The .icd files of a directory, sorted as the loaders read them (opendir and qsort rather than
 * scandir, which Windows' C runtime lacks). */
static size_t icd_dir(doctor *d, const char *dir) {
  DIR *listing = opendir(dir);
  if (!listing) {
    printf("    %s: cannot list (%s)\n", dir, strerror(errno));
    return 0;
  }
  char **names = NULL;
  size_t n = 0, cap = 0;
  for (struct dirent *e; (e = readdir(listing));) {
    const size_t len = strlen(e->d_name);
    if (len <= 4 || strcmp(e->d_name + len - 4, ".icd") != 0)
      continue;
    if (n == cap) {
      cap = cap ? 2 * cap : 16;
      char **grown = realloc(names, cap * sizeof *names);
      if (!grown)
        break;
      names = grown;
    }
    if ((names[n] = malloc(len + 1)))
      memcpy(names[n++], e->d_name, len + 1);
  }
  closedir(listing);
  if (n)
    qsort(names, n, sizeof *names, name_cmp);
  for (size_t i = 0; i < n; i++) {
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    icd_file(d, path);
    free(names[i]);
  }
  free(names);
  if (n == 0)
    printf("    %s: no .icd file\n", dir);
  return n;
}

/* As ocl-icd reads them (the Khronos loader reads a directory OCL_ICD_VENDORS the same way):
 * OCL_ICD_VENDORS, a directory or one .icd file (a bare name is looked for in the default
 * directory); else OPENCL_VENDOR_PATH; else /etc/OpenCL/vendors (some distributions' ocl-icd:
 * /usr/share/OpenCL/vendors when that does not exist). OCL_ICD_FILENAMES adds libraries. */
static void section_icd(doctor *d) {
  printf("OpenCL ICD loader\n");
  const char *vendors = getenv("OCL_ICD_VENDORS");
  const char *vendor_path = getenv("OPENCL_VENDOR_PATH");
  const char *filenames = getenv("OCL_ICD_FILENAMES");
  size_t icds = 0;
  struct stat st;
  const char *dir = vendor_path && *vendor_path ? vendor_path : "/etc/OpenCL/vendors";
  if (!(vendor_path && *vendor_path) && stat(dir, &st) != 0 &&
      stat("/usr/share/OpenCL/vendors", &st) == 0)
    dir = "/usr/share/OpenCL/vendors";
  if (filenames && *filenames)
    printf("  OCL_ICD_FILENAMES=%s (driver libraries loaded by name)\n", filenames);
  if (vendors && *vendors) {
    printf("  OCL_ICD_VENDORS=%s: the loader reads this instead of %s\n", vendors, dir);
    const size_t len = strlen(vendors);
    if (stat(vendors, &st) == 0 && S_ISDIR(st.st_mode)) {
      icds = icd_dir(d, vendors);
    } else if (len > 4 && strcmp(vendors + len - 4, ".icd") == 0) {
      char path[4200];
      if (!strchr(vendors, '/') && stat(vendors, &st) != 0)
        snprintf(path, sizeof path, "%s/%s", dir, vendors);
      else
        snprintf(path, sizeof path, "%s", vendors);
      icd_file(d, path);
      icds = 1;
    } else {
      printf("    %s: neither a directory nor an .icd file\n", vendors);
    }
  } else {
    printf("  %s (%s)\n", dir,
           vendor_path && *vendor_path ? "from OPENCL_VENDOR_PATH" : "OCL_ICD_VENDORS is not set");
    if (stat(dir, &st) == 0)
      icds = icd_dir(d, dir);
    else
      printf("    %s: does not exist\n", dir);
  }
  if (icds == 0 && !(filenames && *filenames))
    printf("  no driver is registered with the loader\n");
}

static void info_string(cl_device_id dev, cl_device_info what, char *buf, size_t size) {
  buf[0] = '\0';
  if (clGetDeviceInfo(dev, what, size - 1, buf, NULL) != CL_SUCCESS)
    snprintf(buf, size, "?");
  buf[size - 1] = '\0';
}

static void section_platforms(doctor *d) {
  printf("\nOpenCL platforms and devices\n");
  cl_uint nplat = 0;
  const cl_int e = clGetPlatformIDs(0, NULL, &nplat);
  if (e != CL_SUCCESS || nplat == 0) {
    char what[200];
    snprintf(what, sizeof what, "no OpenCL platform found (clGetPlatformIDs: %s %d)",
             e == CL_SUCCESS ? "0 platforms," : "error", (int)e);
    finding(d, DOCTOR_NO_OPENCL, what,
            "install an OpenCL driver: your GPU vendor's, or for the CPU on Debian/Ubuntu "
            "`apt-get install pocl-opencl-icd`; then check the ICD files above and `clinfo -l`");
    return;
  }
  cl_platform_id *plats = calloc(nplat, sizeof *plats);
  if (!plats || clGetPlatformIDs(nplat, plats, NULL) != CL_SUCCESS) {
    free(plats);
    finding(d, DOCTOR_NO_OPENCL, "the OpenCL platforms cannot be listed",
            "check the ICD files above and `clinfo -l`");
    return;
  }
  size_t index = 0;
  for (cl_uint p = 0; p < nplat; p++) {
    char name[256] = "?", vendor[256] = "?", version[256] = "?";
    clGetPlatformInfo(plats[p], CL_PLATFORM_NAME, sizeof name - 1, name, NULL);
    clGetPlatformInfo(plats[p], CL_PLATFORM_VENDOR, sizeof vendor - 1, vendor, NULL);
    clGetPlatformInfo(plats[p], CL_PLATFORM_VERSION, sizeof version - 1, version, NULL);
    printf("  platform %u: %s (%s), %s\n", (unsigned)p, name, vendor, version);
    cl_uint ndev = 0;
    cl_int de;
    cl_device_id *devs = tool_platform_devices(plats[p], &ndev, &de);
    if (!devs) {
      if (de != CL_SUCCESS || ndev == 0)
        printf("    no device (clGetDeviceIDs: %d)\n", (int)de);
      continue;
    }
    for (cl_uint i = 0; i < ndev; i++, index++) {
      char dname[256], dversion[256], driver[256], cversion[256];
      cl_device_type type = 0;
      cl_uint cu = 0;
      cl_ulong mem = 0;
      info_string(devs[i], CL_DEVICE_NAME, dname, sizeof dname);
      info_string(devs[i], CL_DEVICE_VERSION, dversion, sizeof dversion);
      info_string(devs[i], CL_DRIVER_VERSION, driver, sizeof driver);
      info_string(devs[i], CL_DEVICE_OPENCL_C_VERSION, cversion, sizeof cversion);
      clGetDeviceInfo(devs[i], CL_DEVICE_TYPE, sizeof type, &type, NULL);
      clGetDeviceInfo(devs[i], CL_DEVICE_MAX_COMPUTE_UNITS, sizeof cu, &cu, NULL);
      clGetDeviceInfo(devs[i], CL_DEVICE_GLOBAL_MEM_SIZE, sizeof mem, &mem, NULL);
      printf("    device %zu (--device %zu): %s, %s\n", index, index, dname,
             type & CL_DEVICE_TYPE_GPU   ? "GPU"
             : type & CL_DEVICE_TYPE_CPU ? "CPU"
                                         : "accelerator");
      printf("      %s; driver %s; %s; %u compute units; %.0f MiB\n", dversion, driver, cversion,
             (unsigned)cu, (double)mem / 1048576.0);
      char err[512];
      if (d->nlive < MAX_LIVE &&
          clnorm__device_identity(devs[i], &d->live[d->nlive], err, sizeof err) == CLNORM_OK)
        d->nlive++;
    }
    free(devs);
  }
  free(plats);
  if (index == 0)
    finding(d, DOCTOR_NO_OPENCL, "OpenCL platforms were found but no device",
            "check that the driver supports this hardware (`clinfo`); for the CPU install "
            "pocl-opencl-icd");
}

typedef struct listing {
  doctor *d;
  int here_tuned; /* a device of this machine has current results */
} listing;

static int on_device(void *user, const clnorm_device_identity *id,
                     const clnorm_db_device_counts *c) {
  listing *l = user;
  int here = 0, model_here = 0;
  for (size_t i = 0; i < l->d->nlive; i++) {
    here |= clnorm__identity_equal(id, &l->d->live[i]);
    model_here |= id->vendor_id == l->d->live[i].vendor_id &&
                  strcmp(id->vendor, l->d->live[i].vendor) == 0 &&
                  strcmp(id->name, l->d->live[i].name) == 0;
  }
  printf("  %s (driver %s, %s): %llu results, %llu shapes tuned with these kernels; %s\n", id->name,
         id->driver_version, id->cl_version, (unsigned long long)c->results,
         (unsigned long long)c->shapes,
         here         ? "this machine's device"
         : model_here ? "same model as a device here, another identity (driver, clock, ...)"
                      : "not on this machine");
  if (c->results > c->current)
    printf("    %llu of them are of other kernel sources (stale: kernels changed)\n",
           (unsigned long long)(c->results - c->current));
  l->here_tuned |= here && c->shapes > 0;
  return 0;
}

/* The nearest existing ancestor directory of path (normtune creates the missing ones). */
static void existing_parent(const char *path, char *buf, size_t size) {
  snprintf(buf, size, "%s", path);
  for (;;) {
    char *slash = strrchr(buf, '/');
    if (!slash) {
      snprintf(buf, size, ".");
      return;
    }
    if (slash == buf) {
      buf[1] = '\0';
      return;
    }
    *slash = '\0';
    struct stat st;
    if (stat(buf, &st) == 0)
      return;
  }
}

static void section_db(doctor *d, const char *db_option, clnorm_kernel_hashes hashes) {
  printf("\nTuning database\n");
  char path[4096], err[1024];
  const char *source = "--db";
  if (db_option) {
    snprintf(path, sizeof path, "%s", db_option);
  } else if (clnorm__db_default_path(path, sizeof path, err, sizeof err) != CLNORM_OK) {
    char what[1200];
    snprintf(what, sizeof what, "no database path: %s", err);
    finding(d, DOCTOR_WARNING, what, "set CLNORM_DB=/path/to/tuning.db (or HOME)");
    return;
  } else {
    const char *db = getenv("CLNORM_DB"), *xdg = getenv("XDG_CACHE_HOME");
    source = db && *db ? "$CLNORM_DB" : xdg && xdg[0] == '/' ? "$XDG_CACHE_HOME" : "$HOME";
  }
  printf("  path: %s (from %s)\n", path, source);
  struct stat st;
  if (stat(path, &st) != 0) {
    char parent[4096];
    existing_parent(path, parent, sizeof parent);
    const int dir_ok = access(parent, W_OK) == 0;
    printf("  does not exist; %s is %swritable\n", parent, dir_ok ? "" : "NOT ");
    char what[4400];
    snprintf(what, sizeof what, "no tuning database: clnorm runs every shape untuned");
    if (dir_ok)
      finding(d, DOCTOR_WARNING, what,
              "run `normtune tune --budget 600%s%s` (about ten minutes) to create it",
              db_option ? " --db " : "", db_option ? db_option : "");
    else
      finding(d, DOCTOR_WARNING, what,
              "%s is read-only: give normtune --db (or set CLNORM_DB to) a path in a writable "
              "directory, then run `normtune tune`",
              parent);
    return;
  }
  char dir[4096];
  snprintf(dir, sizeof dir, "%s", path);
  char *slash = strrchr(dir, '/');
  if (!slash)
    snprintf(dir, sizeof dir, ".");
  else if (slash == dir)
    dir[1] = '\0';
  else
    *slash = '\0';
  const int readable = access(path, R_OK) == 0, writable = access(path, W_OK) == 0;
  const int dir_writable = access(dir, W_OK) == 0;
  printf("  exists: %.1f KiB, %s, %s; directory %s %s\n", (double)st.st_size / 1024.0,
         readable ? "readable" : "NOT readable", writable ? "writable" : "NOT writable", dir,
         dir_writable ? "writable" : "NOT writable");
  clnorm_db *db = NULL;
  if (!S_ISREG(st.st_mode) || !readable ||
      clnorm__db_open(path, CLNORM_DB_READ, &db, err, sizeof err) != CLNORM_OK) {
    char what[4400];
    if (!S_ISREG(st.st_mode))
      snprintf(what, sizeof what, "%s is not a regular file", path);
    else if (!readable)
      snprintf(what, sizeof what, "%s cannot be read: %s", path, strerror(EACCES));
    else
      snprintf(what, sizeof what, "%s", err);
    finding(d, DOCTOR_BAD_DB, what, "%s",
            !readable ? "give yourself read access (chmod u+r), or point CLNORM_DB at "
                        "another file"
                      : "run `normtune tune`: it moves a corrupt file or one of a newer "
                        "schema aside (to PATH.bad-TIME) and starts a fresh database; or "
                        "point CLNORM_DB at another file");
    return;
  }
  int version = 0;
  if (clnorm__db_schema(db, &version, err, sizeof err) == CLNORM_OK)
    printf("  schema version %d (this build writes %d)%s\n", version, CLNORM_DB_SCHEMA,
           version < CLNORM_DB_SCHEMA ? "; the next `normtune tune` upgrades it" : "");
  if (!writable || !dir_writable) {
    char what[4400];
    snprintf(what, sizeof what,
             "%s: normtune tune cannot store results here (the library still reads it)",
             !writable ? "the database is read-only" : "its directory is read-only");
    finding(d, DOCTOR_WARNING, what,
            "chmod u+w %s, or tune into a writable copy with --db and point CLNORM_DB at it",
            !writable ? path : dir);
  }
  listing l = {d, 0};
  printf("  results per device (current kernels: %016llx forward, %016llx backward)\n",
         (unsigned long long)hashes.forward, (unsigned long long)hashes.backward);
  if (clnorm__db_devices(db, &hashes, on_device, &l, err, sizeof err) != CLNORM_OK) {
    finding(d, DOCTOR_BAD_DB, err, "run `normtune tune`, which checks and repairs the database");
    clnorm__db_close(db);
    return;
  }
  for (size_t i = 0; i < d->nlive; i++) {
    clnorm_db_stale stale;
    if (clnorm__db_stale(db, &d->live[i], &hashes, &stale, err, sizeof err) != CLNORM_OK ||
        (stale.driver_changed == 0 && stale.kernels_changed == 0))
      continue;
    char what[800];
    snprintf(what, sizeof what,
             "%llu stored results of %s are stale and not used (%llu: driver changed, %llu: "
             "kernels changed)",
             (unsigned long long)(stale.driver_changed + stale.kernels_changed), d->live[i].name,
             (unsigned long long)stale.driver_changed, (unsigned long long)stale.kernels_changed);
    finding(d, DOCTOR_WARNING, what, "run `normtune tune --device \"%s\"` again", d->live[i].name);
  }
  if (!l.here_tuned && d->nlive > 0)
    finding(d, DOCTOR_WARNING, "no device of this machine has tuned results of these kernels",
            "run `normtune tune --budget 600%s%s`", db_option ? " --db " : "",
            db_option ? db_option : "");
  clnorm__db_close(db);
}

static int count_results(void *user, const clnorm_device_identity *id,
                         const clnorm_db_device_counts *c) {
  (void)id;
  *(uint64_t *)user += c->results;
  return 0;
}

/* The read-only system database (src/tuned.c: $CLNORM_SYSTEM_DB, else the build's
 * CLNORM_SYSTEM_DB), opened as the library opens it (read-only, immutable): where it is, whether
 * it is there, its results, and whether the library skips it as damaged. It is optional: only a
 * damaged one is a finding (a warning: the library goes on without it). */
static void section_system_db(doctor *d, clnorm_kernel_hashes hashes) {
  printf("\nSystem tuning database (read-only, consulted after the user's)\n");
  char path[4096], err[1024];
  const char *env = getenv("CLNORM_SYSTEM_DB");
  if (!clnorm__system_db_path(path, sizeof path)) {
    printf("  none: %s\n", env ? "$CLNORM_SYSTEM_DB is empty"
                               : "this build has no system database path (CLNORM_SYSTEM_DB)");
    return;
  }
  printf("  path: %s (from %s)\n", path,
         env ? "$CLNORM_SYSTEM_DB" : "the build's default, CMake's CLNORM_SYSTEM_DB");
  if (!clnorm__path_exists(path)) {
    printf("  not found: clnorm uses the user's database, the built-in table and the heuristic\n");
    return;
  }
  clnorm_db *db = NULL;
  uint64_t results = 0;
  size_t here = 0;
  clnorm_status st = clnorm__db_open(path, CLNORM_DB_READONLY, &db, err, sizeof err);
  if (st == CLNORM_OK)
    st = clnorm__db_devices(db, &hashes, count_results, &results, err, sizeof err);
  /* what the library reads of it for each device here: its check of the file */
  for (size_t i = 0; st == CLNORM_OK && i < d->nlive; i++) {
    clnorm_result *winners = NULL;
    size_t count = 0;
    st = clnorm__db_winners(db, &d->live[i], &hashes, &winners, &count, err, sizeof err);
    free(winners);
    here += count;
  }
  clnorm__db_close(db);
  if (st != CLNORM_OK) {
    printf("  found, and skipped as damaged: the library does not use it\n");
    char what[5200];
    snprintf(what, sizeof what, "the system tuning database %s cannot be read: %s", path, err);
    finding(d, DOCTOR_WARNING, what,
            "replace it with a sound export (`normtune import`, docs/TUNING.md), or set "
            "CLNORM_SYSTEM_DB= (empty) to turn it off");
    return;
  }
  printf("  found: %llu results, %zu of them winners for this machine's devices with these "
         "kernels; opened read-only (immutable)\n",
         (unsigned long long)results, here);
}

static void section_binaries(void) {
  printf("\nProgram binary cache\n");
  /* Where the library keeps it (src/bincache.c): not beside --db, the library knows only the
   * default database. */
  char dir[4096], why[512];
  if (!clnorm__bincache_path(dir, sizeof dir, why, sizeof why)) {
    printf("  %s: every process compiles its kernels\n", why);
    return;
  }
  const char *env = getenv("CLNORM_BINARY_CACHE_DIR");
  printf("  directory: %s%s\n", dir, env && *env ? " (from $CLNORM_BINARY_CACHE_DIR)" : "");
  DIR *dp = opendir(dir);
  if (!dp) {
    printf("  %s (created on the first build)\n",
           errno == ENOENT ? "does not exist yet" : strerror(errno));
    return;
  }
  unsigned long long bytes = 0, files = 0;
  for (struct dirent *e; (e = readdir(dp)) != NULL;) {
    char path[8400];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    if (e->d_name[0] != '.' && stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
      bytes += (unsigned long long)st.st_size;
      files++;
    }
  }
  closedir(dp);
  printf("  %llu files, %.1f MiB; %s\n", files, (double)bytes / 1048576.0,
         access(dir, W_OK) == 0 ? "writable" : "NOT writable (programs are compiled each run)");
}

int doctor_run(const char *db_option, clnorm_kernel_hashes hashes) {
  doctor d;
  memset(&d, 0, sizeof d);
  printf("normtune doctor: clnorm %d.%d.%d\n\n", CLNORM_VERSION_MAJOR, CLNORM_VERSION_MINOR,
         CLNORM_VERSION_PATCH);
  section_icd(&d);
  section_platforms(&d);
  section_db(&d, db_option, hashes);
  section_system_db(&d, hashes);
  section_binaries();
  printf("\n");
  if (d.status == DOCTOR_OK)
    printf("doctor: all fine (exit status 0)\n");
  else
    printf("doctor: %u problem%s, %u warning%s (exit status %d: %s)\n", d.problems,
           d.problems == 1 ? "" : "s", d.warnings, d.warnings == 1 ? "" : "s", d.status,
           d.status == DOCTOR_NO_OPENCL ? "no OpenCL platform or device"
           : d.status == DOCTOR_BAD_DB  ? "the tuning database cannot be read"
                                        : "clnorm runs, untuned or partly tuned");
  fflush(stdout);
  return d.status;
}
