/* normtune builtin: the built-in table (src/builtin_table.h) from tuning databases and JSON
 * exports (docs/tuned/README.md). Each device's winners of this build's kernel sources (each of
 * the kernel hash of its op's family, as the library reads a database; the entries hold no hash)
 * become entries keyed by vendor id, device name, driver family (clnorm__driver_family) and the
 * architecture that devices.tsv gives the device; devices marked `default` there also give their
 * vendor's defaults for the family. The output is sorted, so the same input gives the same
 * bytes. */
#define _POSIX_C_SOURCE 200809L
#include "db_json.h"
#include "names.h"
#include "normtune.h"

#include <dirent.h>
#include <sys/stat.h>

/* One entry of the table, with what chose it among others of its key and shape. */
typedef struct entry {
  cl_uint vendor_id;
  char device[256], family[32], arch[32];
  clnorm_result r;
  char driver[64];
} entry;

typedef struct arch_line {
  char device[256], arch[32];
  int vendor_default;
} arch_line;

typedef struct generator {
  entry *items;
  size_t count, cap;
  arch_line *archs;
  size_t arch_count;
  size_t other_kernels; /* results of other kernel sources, left out */
  const char *input;    /* the file being read, for messages */
} generator;

static void add(generator *g, const entry *e) {
  if (g->count == g->cap) {
    g->cap = g->cap ? g->cap * 2 : 256;
    g->items = realloc(g->items, g->cap * sizeof *g->items);
    if (!g->items)
      die(1, "out of memory");
  }
  g->items[g->count++] = *e;
}

static const arch_line *arch_of(const generator *g, const char *device) {
  for (size_t i = 0; i < g->arch_count; i++)
    if (strcmp(g->archs[i].device, device) == 0)
      return &g->archs[i];
  return NULL;
}

/* devices.tsv: "DEVICE NAME<TAB>ARCH[<TAB>default]" a line; '#' starts a comment line. */
static void read_archs(generator *g, const char *path) {
  FILE *f = fopen(path, "r");
  if (!f)
    return; /* no architectures: no sibling falls back to these entries */
  char line[512];
  for (int number = 1; fgets(line, sizeof line, f); number++) {
    line[strcspn(line, "\r\n")] = '\0';
    if (!line[0] || line[0] == '#')
      continue;
    char *tab = strchr(line, '\t');
    if (!tab || tab == line)
      die(1, "%s:%d: want DEVICE NAME<TAB>ARCH[<TAB>default]", path, number);
    *tab = '\0';
    char *arch = tab + 1, *flag = strchr(arch, '\t');
    if (flag)
      *flag++ = '\0';
    if (!arch[0] || strlen(arch) >= sizeof g->archs->arch || strpbrk(arch, "\"\\ ") ||
        (flag && strcmp(flag, "default") != 0))
      die(1, "%s:%d: bad architecture \"%s\"%s%s", path, number, arch, flag ? " or flag " : "",
          flag ? flag : "");
    g->archs = realloc(g->archs, (g->arch_count + 1) * sizeof *g->archs);
    if (!g->archs)
      die(1, "out of memory");
    arch_line *a = &g->archs[g->arch_count++];
    snprintf(a->device, sizeof a->device, "%.255s", line);
    snprintf(a->arch, sizeof a->arch, "%s", arch);
    a->vendor_default = flag != NULL;
  }
  fclose(f);
}

/* Every device's winners of this build's kernels in db. */
static void collect(generator *g, clnorm_db *db) {
  char err[1024];
  clnorm_device_identity *devices = NULL;
  size_t count = 0;
  uint64_t other_kernels = 0;
  const clnorm_kernel_hashes hashes = clnorm__kernel_hashes();
  if (clnorm__db_tuned_devices(db, &hashes, &devices, &count, &other_kernels, err, sizeof err) !=
      CLNORM_OK)
    die(1, "%s: %s", g->input, err);
  g->other_kernels += other_kernels;
  for (size_t i = 0; i < count; i++) {
    const clnorm_device_identity *d = &devices[i];
    clnorm_result *won = NULL;
    size_t n = 0;
    if (clnorm__db_winners(db, d, &hashes, &won, &n, err, sizeof err) != CLNORM_OK)
      die(1, "%s: %s", g->input, err);
    entry e;
    memset(&e, 0, sizeof e);
    e.vendor_id = d->vendor_id;
    snprintf(e.device, sizeof e.device, "%s", d->name);
    clnorm__driver_family(d->cl_version, e.family, sizeof e.family);
    snprintf(e.driver, sizeof e.driver, "%.63s", d->driver_version);
    const arch_line *a = arch_of(g, d->name);
    snprintf(e.arch, sizeof e.arch, "%s", a ? a->arch : "");
    for (size_t k = 0; k < n; k++) {
      e.r = won[k];
      add(g, &e);
      if (a && a->vendor_default) {
        entry v = e;
        v.device[0] = '\0';
        v.arch[0] = '\0';
        add(g, &v);
      }
    }
    free(won);
  }
  free(devices);
}

static int ends_with(const char *s, const char *tail) {
  const size_t n = strlen(s), t = strlen(tail);
  return n >= t && strcmp(s + n - t, tail) == 0;
}

static void read_input(generator *g, const char *path) {
  g->input = path;
  char err[1024];
  clnorm_db *db = NULL;
  if (ends_with(path, ".db")) {
    if (clnorm__db_open(path, CLNORM_DB_READONLY, &db, err, sizeof err) != CLNORM_OK)
      die(1, "%s", err);
    collect(g, db);
    clnorm__db_close(db);
    return;
  }
  /* a JSON export: checked and stored by the import into a scratch database, then read */
  size_t len;
  char *text = read_all(path, &len);
  const char *tmp = getenv("TMPDIR");
  char scratch[4096];
  snprintf(scratch, sizeof scratch, "%s/normtune-builtin-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  const int fd = clnorm__make_temp(scratch);
  if (fd < 0)
    die(1, "cannot create a scratch database in %s", tmp && *tmp ? tmp : "/tmp");
  close(fd);
  clnorm_status st = clnorm__db_open(scratch, CLNORM_DB_WRITE, &db, err, sizeof err);
  if (st == CLNORM_OK)
    st = clnorm__db_import(db, text, len, NULL, NULL, err, sizeof err);
  free(text);
  if (st == CLNORM_OK)
    collect(g, db);
  clnorm__db_close(db);
  remove(scratch);
  if (st != CLNORM_OK)
    die(1, "%s: %s", path, err);
}

static int name_cmp(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* By key (vendor id, device, family), shape (op, dtype, row class, cols), then the one to keep
 * first: the latest measured, then the fastest. */
static int entry_cmp(const void *pa, const void *pb) {
  const entry *a = pa, *b = pb;
  if (a->vendor_id != b->vendor_id)
    return a->vendor_id < b->vendor_id ? -1 : 1;
  int c = strcmp(a->device, b->device);
  if (!c)
    c = strcmp(a->family, b->family);
  if (c)
    return c;
  const uint64_t ka[] = {a->r.op, a->r.dtype, a->r.row_class, a->r.cols};
  const uint64_t kb[] = {b->r.op, b->r.dtype, b->r.row_class, b->r.cols};
  c = clnorm__keys_cmp(ka, kb, 4);
  if (c)
    return c;
  if (a->r.measured_at != b->r.measured_at)
    return a->r.measured_at > b->r.measured_at ? -1 : 1;
  if (a->r.median_s != b->r.median_s)
    return a->r.median_s < b->r.median_s ? -1 : 1;
  return strcmp(a->driver, b->driver);
}

static int same_slot(const entry *a, const entry *b) {
  return a->vendor_id == b->vendor_id && strcmp(a->device, b->device) == 0 &&
         strcmp(a->family, b->family) == 0 && a->r.op == b->r.op && a->r.dtype == b->r.dtype &&
         a->r.row_class == b->r.row_class && a->r.cols == b->r.cols;
}

/* A C string literal: printable ASCII as is, '"' and '\\' escaped, anything else in octal. */
static void c_string(FILE *out, const char *s) {
  fputc('"', out);
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (*p == '"' || *p == '\\')
      fprintf(out, "\\%c", *p);
    else if (*p >= 0x20 && *p < 0x7f && *p != '?') /* '?': no trigraphs */
      fputc(*p, out);
    else
      fprintf(out, "\\%03o", *p);
  }
  fputc('"', out);
}

#define ENUMERATOR(name, value, text) [value] = #name,
static const char *const op_enum[] = {CLNORM_OP_MAP(ENUMERATOR)};
static const char *const dtype_enum[] = {CLNORM_DTYPE_MAP(ENUMERATOR)};
static const char *const reduce_enum[] = {CLNORM_REDUCE_MAP(ENUMERATOR)};
static const char *const stats_enum[] = {CLNORM_STATS_MAP(ENUMERATOR)};

void builtin_line(FILE *out, cl_uint vendor_id, const char *device, const char *family,
                  const char *arch, const clnorm_result *r) {
  const clnorm_variant *v = &r->variant;
  /* unknown (no A/B results): wg 0, which no variant has (src/tuned.c's CLNORM_BUILTIN) */
  const clnorm_variant none = {0, 0, 0, 0, CLNORM_REDUCE_LOCAL, CLNORM_STATS_WELFORD};
  const clnorm_variant *a = r->against_known ? &r->against : &none;
  fprintf(out, "CLNORM_BUILTIN(0x%xu, ", (unsigned)vendor_id);
  c_string(out, device);
  fputs(", ", out);
  c_string(out, family);
  fputs(", ", out);
  c_string(out, arch);
  fprintf(out,
          ", %s, %s, %lluu, %uu, %uu, %uu, %uu, %uu, %s, %s, %lluu, %lluu, %uu, %uu, %uu, %uu, %s, "
          "%s)",
          op_enum[r->op], dtype_enum[r->dtype], (unsigned long long)r->cols, r->row_class, v->wg,
          v->tpr, v->vec, v->hold, reduce_enum[v->reduce], stats_enum[v->stats],
          (unsigned long long)r->rows_lo, (unsigned long long)r->rows_hi, a->wg, a->tpr, a->vec,
          a->hold, reduce_enum[a->reduce], stats_enum[a->stats]);
}

static void write_table(FILE *out, const generator *g, const char *const *inputs, size_t n_inputs,
                        const char *given) {
  const clnorm_kernel_hashes hashes = clnorm__kernel_hashes();
  char forward[17], backward[17];
  clnorm__db_hash_text(hashes.forward, forward);
  clnorm__db_hash_text(hashes.backward, backward);
  fprintf(out,
          "/* Generated by `normtune builtin %s` (docs/tuned/README.md); do not edit.\n"
          " * Input:",
          given);
  for (size_t i = 0; i < n_inputs; i++)
    fprintf(out, " %s", inputs[i]);
  if (n_inputs == 0)
    fputs(" none", out);
  fprintf(
      out,
      "; kernel sources %s forward, %s backward.\n"
      " * One entry a line: CLNORM_BUILTIN(vendor id, device name (\"\": the vendor's default),\n"
      " * driver family, architecture, op, dtype, cols, row class, wg, tpr, vec, hold, reduce,\n"
      " * stats, the least and largest row counts where it did not lose to the heuristic, and\n"
      " * the heuristic's variant its A/B compared it with: wg, tpr, vec, hold, reduce, stats\n"
      " * (wg 0: not known). An entry is used only where the heuristic's variant is that one:\n"
      " * once the heuristic changes, the entry gives way to it)\n"
      " */\n",
      forward, backward);
  for (size_t i = 0; i < g->count; i++) {
    const entry *e = &g->items[i];
    builtin_line(out, e->vendor_id, e->device, e->family, e->arch, &e->r);
    fprintf(out, " /* %.3g us at %llu rows */\n", e->r.median_s * 1e6,
            (unsigned long long)e->r.rows);
  }
}

int cmd_builtin(const options *o) {
  if (!o->file)
    die(EXIT_USAGE, "builtin needs an input: a folder (docs/tuned), a .json export or a .db");
  generator g;
  memset(&g, 0, sizeof g);
  char *inputs[256];
  size_t n_inputs = 0;
  char arch_path[4096];
  struct stat st;
  if (stat(o->file, &st) != 0)
    die(1, "cannot read %s: %s", o->file, strerror(errno));
  if (S_ISDIR(st.st_mode)) {
    DIR *dir = opendir(o->file);
    if (!dir)
      die(1, "cannot read the folder %s: %s", o->file, strerror(errno));
    for (struct dirent *d; (d = readdir(dir)) != NULL;)
      if (d->d_name[0] != '.' && (ends_with(d->d_name, ".json") || ends_with(d->d_name, ".db"))) {
        if (n_inputs == sizeof inputs / sizeof inputs[0])
          die(1, "%s: more than %zu inputs", o->file, sizeof inputs / sizeof inputs[0]);
        inputs[n_inputs++] = clnorm__strdup(d->d_name);
      }
    closedir(dir);
    snprintf(arch_path, sizeof arch_path, "%s/devices.tsv", o->file);
  } else {
    const char *sep = clnorm__last_path_sep(o->file);
    inputs[n_inputs++] = clnorm__strdup(sep ? sep + 1 : o->file);
    snprintf(arch_path, sizeof arch_path, "%.*sdevices.tsv", sep ? (int)(sep - o->file + 1) : 0,
             o->file);
  }
  qsort(inputs, n_inputs, sizeof *inputs, name_cmp);
  read_archs(&g, arch_path);
  for (size_t i = 0; i < n_inputs; i++) {
    char path[4096];
    if (S_ISDIR(st.st_mode))
      snprintf(path, sizeof path, "%s/%s", o->file, inputs[i]);
    else
      snprintf(path, sizeof path, "%s", o->file);
    read_input(&g, path);
  }
  /* one entry per key and shape: the first after sorting */
  if (g.count)
    qsort(g.items, g.count, sizeof *g.items, entry_cmp);
  size_t kept = 0;
  for (size_t i = 0; i < g.count; i++)
    if (kept == 0 || !same_slot(&g.items[kept - 1], &g.items[i]))
      g.items[kept++] = g.items[i];
  g.count = kept;
  for (size_t i = 0; i < g.count; i++)
    if (g.items[i].device[0] && !g.items[i].arch[0] && (i == 0 ||
                                                        strcmp(g.items[i - 1].device,
                                                               g.items[i].device) != 0))
      fprintf(stderr,
              "normtune: %s has no architecture in %s: no other model falls back to its "
              "entries\n",
              g.items[i].device, arch_path);
  if (g.other_kernels)
    fprintf(stderr,
            "normtune: %zu results of other kernel sources left out (tune again with this "
            "build)\n",
            g.other_kernels);
  FILE *out = !o->out || strcmp(o->out, "-") == 0 ? stdout : fopen(o->out, "w");
  if (!out)
    die(1, "cannot write %s: %s", o->out, strerror(errno));
  write_table(out, &g, (const char *const *)inputs, n_inputs, o->file);
  if (out != stdout && fclose(out) != 0)
    die(1, "writing %s: %s", o->out, strerror(errno));
  fprintf(stderr, "normtune: %zu entries written to %s\n", g.count,
          out == stdout ? "standard output" : o->out);
  for (size_t i = 0; i < n_inputs; i++)
    free(inputs[i]);
  free(g.items);
  free(g.archs);
  return 0;
}
