/* The commands that read or move the database: devices, show, export, import, report. */
#define _POSIX_C_SOURCE 200809L
#include "normtune.h"

int cmd_devices(const options *o) {
  (void)o;
  tool_device devs[64];
  const size_t n = tool_devices(devs, 64);
  if (n == 0) {
    fprintf(stderr, "normtune: no OpenCL platform or device found (check `clinfo -l`; on "
                    "Debian/Ubuntu install pocl-opencl-icd for the CPU)\n");
    return 1;
  }
  printf("index  type  platform / device\n");
  for (size_t i = 0; i < n && i < 64; i++) {
    cl_device_type type = 0;
    cl_uint cu = 0;
    char version[128] = "";
    clGetDeviceInfo(devs[i].device, CL_DEVICE_TYPE, sizeof type, &type, NULL);
    clGetDeviceInfo(devs[i].device, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof cu, &cu, NULL);
    clGetDeviceInfo(devs[i].device, CL_DEVICE_VERSION, sizeof version - 1, version, NULL);
    printf("%5zu  %-4s  %s / %s (%u compute units, %s)\n", i,
           type & CL_DEVICE_TYPE_GPU   ? "GPU"
           : type & CL_DEVICE_TYPE_CPU ? "CPU"
                                       : "ACC",
           devs[i].platform_name, devs[i].name, cu, version);
  }
  printf("select with --device INDEX, --device gpu or cpu (the first of that type), or --device "
         "NAME (a case-insensitive part of the name)\n");
  return 0;
}

typedef struct show_state {
  clnorm_db *db;
  int json, first;
  const char *c_table;
  const clnorm_device_identity *last;
  char last_name[256], last_driver[256];
} show_state;

void json_fields(const json_field *fields, size_t n) {
  for (size_t i = 0; i < n; i++) {
    printf(", \"%s\": ", fields[i].key);
    if (fields[i].text)
      tool_json_string(fields[i].text);
    else
      json_number(fields[i].format, fields[i].number);
  }
}

void json_number(const char *format, double v) {
  if (isfinite(v))
    printf(format, v);
  else
    fputs("null", stdout);
}

/* The A/B results of one winner's shape (every row count tuned), printed as show prints. */
typedef struct show_ab {
  const clnorm_result *r;
  int json, count;
} show_ab;

static int show_ab_row(void *user, const clnorm_ab *ab) {
  show_ab *sa = user;
  const clnorm_result *r = sa->r;
  if (ab->op != r->op || ab->dtype != r->dtype || ab->cols != r->cols ||
      ab->row_class != r->row_class)
    return 0;
  if (sa->json) {
    char cand[128], heur[128];
    clnorm_variant_format(&ab->candidate, cand, sizeof cand);
    clnorm_variant_format(&ab->heuristic, heur, sizeof heur);
    printf("%s{\"rows\": %llu, \"kept\": \"%s\", \"candidate\": \"%s\", \"heuristic\": \"%s\"",
           sa->count ? ", " : "", (unsigned long long)ab->rows,
           ab->kept_heuristic ? "heuristic" : "tuned", cand, heur);
    const json_field fields[] = {{"candidate_s", "%.6g", ab->candidate_s, NULL},
                                 {"heuristic_s", "%.6g", ab->heuristic_s, NULL},
                                 {"gain", "%.4f", ab->heuristic_s / ab->candidate_s - 1.0, NULL},
                                 {"noise", "%.4f", ab->noise, NULL},
                                 {"rounds", "%.0f", (double)ab->rounds, NULL}};
    json_fields(fields, sizeof fields / sizeof fields[0]);
    printf("}");
  } else {
    char note[600];
    ab_note(ab, note, sizeof note);
    printf("      %s\n", note);
  }
  sa->count++;
  return 0;
}

/* Prints the shape's A/B results (show --json: as the member "ab", a list). */
static void show_abs(show_state *st, const clnorm_device_identity *dev, const clnorm_result *r) {
  show_ab sa = {r, st->json, 0};
  char err[512];
  if (st->json)
    printf(", \"ab\": [");
  const clnorm_kernel_hashes own = {r->kernel_hash, r->kernel_hash}; /* r's, whatever the family */
  if (clnorm__db_list_ab(st->db, dev, &own, show_ab_row, &sa, err, sizeof err) != CLNORM_OK)
    die(1, "%s", err);
  if (st->json)
    printf("]");
}

static int show_row(void *user, const clnorm_device_identity *dev, const clnorm_result *r,
                    int winner) {
  show_state *st = user;
  (void)winner;
  char text[128], range[64], err[512];
  clnorm_variant_format(&r->variant, text, sizeof text);
  report_row_range(r->row_class, range, sizeof range);
  /* where the dispatcher uses it: near the row counts where it did not lose */
  clnorm_result won = *r;
  if (clnorm__db_winner_rows(st->db, dev, &won, 1, err, sizeof err) != CLNORM_OK)
    die(1, "%s", err);
  const clnorm_tuned entry = {r->op,        r->dtype,    (size_t)r->cols,
                              r->row_class, r->variant,  won.rows_lo,
                              won.rows_hi,  won.against, won.against_known};
  size_t used_first = 0, used_last = 0;
  const int used = clnorm__tuned_rows_used(&entry, &used_first, &used_last);
  if (st->c_table) { /* a line of src/builtin_table.h (normtune builtin writes the whole file) */
    char family[32];
    clnorm__driver_family(dev->cl_version, family, sizeof family);
    builtin_line(stdout, dev->vendor_id, dev->name, family, st->c_table, &won);
    printf(" /* %.1f GB/s at %llu rows (row class %s) */\n", r->gbps, (unsigned long long)r->rows,
           range);
    return 0;
  }
  if (st->json) {
    printf("%s{\"device\": ", st->first ? "" : ",\n");
    tool_json_string(dev->name);
    printf(", \"driver\": ");
    tool_json_string(dev->driver_version);
    printf(", \"op\": \"%s\", \"dtype\": \"%s\", \"cols\": %llu, \"row_class\": %u, "
           "\"rows\": %llu, \"variant\": \"%s\"",
           op_name(r->op), dtype_name(r->dtype), (unsigned long long)r->cols, r->row_class,
           (unsigned long long)r->rows, text);
    if (used)
      printf(", \"used_rows\": [%zu, %zu]", used_first, used_last);
    else
      printf(", \"used_rows\": []");
    show_abs(st, dev, r);
    const json_field fields[] = {{"median_s", "%.6g", r->median_s, NULL},
                                 {"gbps", "%.1f", r->gbps, NULL},
                                 {"max_err", "%.3g", r->max_err, NULL},
                                 {"row_range", NULL, 0.0, range}};
    json_fields(fields, sizeof fields / sizeof fields[0]);
    printf("}");
    st->first = 0;
    return 0;
  }
  if (strcmp(st->last_name, dev->name) != 0 || strcmp(st->last_driver, dev->driver_version) != 0) {
    printf("\n%s (driver %s, %s)\n", dev->name, dev->driver_version, dev->cl_version);
    printf("  %-13s %-5s %8s %-10s %8s %10s %9s  %s\n", "op", "dtype", "cols", "row class", "rows",
           "median_us", "GB/s", "variant");
    snprintf(st->last_name, sizeof st->last_name, "%s", dev->name);
    snprintf(st->last_driver, sizeof st->last_driver, "%s", dev->driver_version);
  }
  printf("  %-13s %-5s %8llu %-10s %8llu %10.2f %9.1f  %s\n", op_name(r->op), dtype_name(r->dtype),
         (unsigned long long)r->cols, range, (unsigned long long)r->rows, r->median_s * 1e6,
         r->gbps, text);
  if (used)
    printf("      used at rows %zu-%zu (within %dx of the rows where it did not lose, %llu-%llu)\n",
           used_first, used_last, CLNORM_ROWS_NEAR_RATIO, (unsigned long long)won.rows_lo,
           (unsigned long long)won.rows_hi);
  show_abs(st, dev, r);
  return 0;
}

int cmd_show(const options *o) {
  char path[DB_PATH_MAX], err[1024];
  clnorm_db *db = open_db_read(o, " (run `normtune tune` first, or give --db PATH)", path);
  show_state st;
  memset(&st, 0, sizeof st);
  st.db = db;
  st.json = o->json;
  st.c_table = o->c_table;
  st.first = 1;
  if (st.c_table && (strpbrk(st.c_table, "\"\\ ") || !o->device))
    die(EXIT_USAGE, "--c-table: needs --device, and an ARCH without quotes, backslashes or spaces");
  clnorm_device_identity id;
  const clnorm_device_identity *filter = NULL;
  const clnorm_kernel_hashes hashes = clnorm__kernel_hashes();
  if (o->device) {
    tool_device dev;
    if (!tool_pick_device(o->device, &dev, err, sizeof err))
      die(1, "%s", err);
    if (clnorm__device_identity(dev.device, &id, err, sizeof err) != CLNORM_OK)
      die(1, "%s", err);
    filter = &id;
    clnorm_db_stale stale;
    if (clnorm__db_stale(db, &id, &hashes, &stale, err, sizeof err) == CLNORM_OK &&
        (stale.driver_changed || stale.kernels_changed) && !o->json && !o->c_table)
      printf("%llu results of this device are stale (%llu: driver changed, %llu: kernels "
             "changed) and are not used; run `normtune tune` again\n",
             (unsigned long long)(stale.driver_changed + stale.kernels_changed),
             (unsigned long long)stale.driver_changed, (unsigned long long)stale.kernels_changed);
  }
  if (o->c_table)
    printf("/* normtune show --device \"%s\" --c-table \"%s\" (database %s) */\n", o->device,
           o->c_table, path);
  else if (o->json)
    printf("[\n");
  else
    printf("tuned winners in %s (current kernels only)\n", path);
  if (clnorm__db_list(db, filter, &hashes, 1, show_row, &st, err, sizeof err) != CLNORM_OK)
    die(1, "%s", err);
  if (o->json && !o->c_table)
    printf("\n]\n");
  clnorm__db_close(db);
  return 0;
}

int cmd_export(const options *o) {
  if (!o->file)
    die(EXIT_USAGE, "export needs a FILE (- for standard output)");
  char err[1024];
  clnorm_db *db = open_db_read(o, "", NULL);
  FILE *out = strcmp(o->file, "-") == 0 ? stdout : fopen(o->file, "w");
  if (!out)
    die(1, "cannot write %s: %s", o->file, strerror(errno));
  const clnorm_status st = clnorm__db_export(db, o->winners, out, err, sizeof err);
  if (out != stdout && fclose(out) != 0)
    die(1, "writing %s: %s", o->file, strerror(errno));
  clnorm__db_close(db);
  if (st != CLNORM_OK)
    die(1, "%s", err);
  return 0;
}

char *read_all(const char *path, size_t *len) {
  FILE *in = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
  if (!in)
    die(1, "cannot read %s: %s", path, strerror(errno));
  size_t cap = 1 << 16;
  *len = 0;
  char *text = malloc(cap);
  for (size_t got; text && (got = fread(text + *len, 1, cap - *len, in)) > 0;) {
    *len += got;
    if (*len == cap) {
      char *grown = realloc(text, cap *= 2);
      if (!grown)
        free(text);
      text = grown;
    }
  }
  if (in != stdin)
    fclose(in);
  if (!text)
    die(1, "out of memory reading %s", path);
  return text;
}

int cmd_import(const options *o) {
  if (!o->file)
    die(EXIT_USAGE, "import needs a FILE");
  size_t len;
  char *text = read_all(o->file, &len);
  char path[4096], err[1024];
  db_path(o, path, sizeof path);
  clnorm_db *db = open_db_write(path);
  size_t imported = 0, kept = 0;
  const clnorm_status st = clnorm__db_import(db, text, len, &imported, &kept, err, sizeof err);
  free(text);
  clnorm__db_close(db);
  if (st != CLNORM_OK)
    die(1, "%s: %s", o->file, err);
  printf("normtune: imported %zu results into %s (%zu older than the stored ones were not)\n",
         imported, path, kept);
  return 0;
}

int cmd_report(const options *o) {
  if (!o->out)
    die(EXIT_USAGE, "report needs --out FILE.svg or FILE.html (- : SVG on standard output), "
                    "e.g. normtune report --out report.svg");
  const size_t len = strlen(o->out);
  const int html = (len > 5 && strcmp(o->out + len - 5, ".html") == 0) ||
                   (len > 4 && strcmp(o->out + len - 4, ".htm") == 0);
  if (!html && strcmp(o->out, "-") != 0 && !(len > 4 && strcmp(o->out + len - 4, ".svg") == 0))
    die(EXIT_USAGE,
        "--out: \"%s\" should end in .svg, .html or .htm (or be - for standard "
        "output)",
        o->out);
  char path[4096];
  db_path(o, path, sizeof path);
  return report_write(path, o->out, html, clnorm__kernel_hashes(), o->quiet);
}
