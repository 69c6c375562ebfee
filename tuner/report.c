/* normtune report: see report.h. */
#define _POSIX_C_SOURCE 200809L
#include "report.h"

#include "db.h"
#include "internal.h"
#include "tool.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DTYPES 3
#define MAX_DEVICES 64

/* Geometry of one panel, in SVG pixels. */
#define PANEL_W 620
#define PANEL_H 360
#define PLOT_X 70  /* left edge of the plot area inside the panel */
#define PLOT_Y 36  /* top edge */
#define PLOT_W 380 /* the legend sits to its right */
#define PLOT_H 270 /* the x-axis labels and title sit below */
#define COLUMNS 2  /* panels side by side */
#define MARGIN 20
#define DEVICE_HEAD 54 /* the device's title lines above its panels */
#define PAGE_HEAD 108  /* the report's title lines */

static const char *const dtype_colour[DTYPES] = {"#1f5fa8", "#d9541e", "#2b9348"};
static const char *const font = "DejaVu Sans, Helvetica, Arial, sans-serif";

/* One drawn figure: a tuned winner or the heuristic's measurement. */
typedef struct point {
  size_t device;
  clnorm_op op;
  clnorm_dtype dtype;
  uint64_t rows, cols;
  double gbps, median_s, max_err;
  clnorm_variant variant;
  clnorm_outcome outcome;
  int heuristic;
} point;

typedef struct device {
  clnorm_device_identity id;
  double copy_gbps; /* NaN: not stored */
  uint64_t copy_bytes;
  uint64_t results, current;
} device;

typedef struct report {
  device dev[MAX_DEVICES];
  size_t ndev;
  point *pts;
  size_t npts, cap;
  int no_memory, too_many_devices;
  clnorm_kernel_hashes hashes; /* the results drawn are of these (their op's family's) */
} report;

/* Index of the device in rp (added when new), or MAX_DEVICES when there is no room. */
static size_t device_index(report *rp, const clnorm_device_identity *id) {
  for (size_t i = 0; i < rp->ndev; i++)
    if (clnorm__identity_equal(&rp->dev[i].id, id))
      return i;
  if (rp->ndev == MAX_DEVICES) {
    rp->too_many_devices = 1;
    return MAX_DEVICES;
  }
  device *d = &rp->dev[rp->ndev];
  memset(d, 0, sizeof *d);
  d->id = *id;
  d->copy_gbps = NAN;
  return rp->ndev++;
}

static int add_point(report *rp, const clnorm_device_identity *id, const clnorm_result *r,
                     int heuristic) {
  const size_t dev = device_index(rp, id);
  if (dev == MAX_DEVICES || (unsigned)r->dtype >= DTYPES)
    return 0;
  if (rp->npts == rp->cap) {
    const size_t cap = rp->cap ? 2 * rp->cap : 256;
    point *grown = realloc(rp->pts, cap * sizeof *grown);
    if (!grown) {
      rp->no_memory = 1;
      return 1;
    }
    rp->pts = grown;
    rp->cap = cap;
  }
  point *p = &rp->pts[rp->npts++];
  p->device = dev;
  p->op = r->op;
  p->dtype = r->dtype;
  p->rows = r->rows;
  p->cols = r->cols;
  p->gbps = r->outcome == CLNORM_OUTCOME_OK ? r->gbps : NAN;
  p->median_s = r->median_s;
  p->max_err = r->max_err;
  p->variant = r->variant;
  p->outcome = r->outcome;
  p->heuristic = heuristic;
  return 0;
}

static int on_winner(void *user, const clnorm_device_identity *id, const clnorm_result *r,
                     int winner) {
  return winner ? add_point(user, id, r, 0) : 0;
}

static int on_heuristic(void *user, const clnorm_device_identity *id, const clnorm_result *r,
                        int winner) {
  (void)winner;
  return add_point(user, id, r, 1);
}

static int on_device(void *user, const clnorm_device_identity *id,
                     const clnorm_db_device_counts *counts) {
  report *rp = user;
  const size_t i = device_index(rp, id);
  if (i < MAX_DEVICES) {
    rp->dev[i].results = counts->results;
    rp->dev[i].current = counts->current;
  }
  return 0;
}

/* Writes s with the five XML special characters escaped, and bytes below 0x20 left out. */
static void xml_text(FILE *f, const char *s) {
  static const char special[] = "&<>\"'";
  static const char *const entity[] = {"&amp;", "&lt;", "&gt;", "&quot;", "&apos;"};
  for (; *s; s++) {
    const char *at = strchr(special, *s);
    if (at)
      fputs(entity[at - special], f);
    else if ((unsigned char)*s >= 0x20)
      fputc(*s, f);
  }
}

static void text_at(FILE *f, double x, double y, int size, const char *anchor, const char *weight,
                    const char *fmt, ...) __attribute__((format(printf, 7, 8)));
static void text_at(FILE *f, double x, double y, int size, const char *anchor, const char *weight,
                    const char *fmt, ...) {
  char buf[1024];
  va_list args;
  va_start(args, fmt);
  vsnprintf(buf, sizeof buf, fmt, args);
  va_end(args);
  fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"%d\" text-anchor=\"%s\"%s%s%s>", x, y, size,
          anchor, weight ? " font-weight=\"" : "", weight ? weight : "", weight ? "\"" : "");
  xml_text(f, buf);
  fputs("</text>\n", f);
}

/* A step of 1, 2 or 5 times a power of ten giving about `ticks` intervals up to top. */
static double nice_step(double top, int ticks) {
  const double raw = top / ticks;
  const double mag = pow(10.0, floor(log10(raw)));
  const double r = raw / mag;
  return (r <= 1.0 ? 1.0 : r <= 2.0 ? 2.0 : r <= 5.0 ? 5.0 : 10.0) * mag;
}

/* "512", "4K", "64K", "1M": cols tick labels that stay short. */
static void cols_label(uint64_t cols, char *buf, size_t size) {
  if (cols >= 1048576 && cols % 1048576 == 0)
    snprintf(buf, size, "%lluM", (unsigned long long)(cols / 1048576));
  else if (cols >= 1024 && cols % 1024 == 0)
    snprintf(buf, size, "%lluK", (unsigned long long)(cols / 1024));
  else
    snprintf(buf, size, "%llu", (unsigned long long)cols);
}

typedef struct axes {
  double x0, y0; /* the plot area's top-left corner on the page */
  double lo, hi; /* log2 of the cols range */
  double top;    /* GB/s at the top edge */
} axes;

static double px(const axes *a, double cols) {
  return a->x0 + (log2(cols) - a->lo) / (a->hi - a->lo) * PLOT_W;
}

static double py(const axes *a, double gbps) { return a->y0 + PLOT_H - gbps / a->top * PLOT_H; }

void report_row_range(unsigned row_class, char *out, size_t size) {
  const size_t first = clnorm__row_class_first(row_class),
               next = clnorm__row_class_first(row_class + 1);
  if (!first)
    snprintf(out, size, "class %u", row_class);
  else if (!next)
    snprintf(out, size, "%zu+", first);
  else
    snprintf(out, size, "%zu-%zu", first, next - 1);
}

/* One panel: a device, an op, a row count. One count per panel: a line across cols joins
 * points of one matrix height only, as tune measured them. */
typedef struct panel {
  size_t device;
  clnorm_op op;
  uint64_t rows;
} panel;

static int in_panel(const point *p, const panel *pn) {
  return p->device == pn->device && p->op == pn->op && p->rows == pn->rows;
}

static int point_cmp(const void *pa, const void *pb) {
  const point *a = pa, *b = pb;
  if (a->heuristic != b->heuristic)
    return a->heuristic - b->heuristic;
  if (a->dtype != b->dtype)
    return a->dtype < b->dtype ? -1 : 1;
  return (a->cols > b->cols) - (a->cols < b->cols);
}

/* The marker of a point: a filled circle (tuned) or an open square (heuristic). */
static void marker(FILE *f, double x, double y, const char *colour, int heuristic) {
  if (heuristic)
    fprintf(f,
            "<rect x=\"%.1f\" y=\"%.1f\" width=\"7\" height=\"7\" fill=\"white\" stroke=\"%s\" "
            "stroke-width=\"1.6\">",
            x - 3.5, y - 3.5, colour);
  else
    fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.6\" fill=\"%s\">", x, y, colour);
}

/* Draws the series of one kind (tuned or heuristic) and dtype: a polyline over the measured
 * points, markers with a tooltip, and a red cross on the x axis where the variant failed. */
static void series(FILE *f, const axes *a, const point *pts, size_t n, clnorm_dtype dtype,
                   int heuristic, size_t *drawn) {
  const char *colour = dtype_colour[dtype];
  int open = 0, any = 0;
  for (size_t i = 0; i < n; i++)
    any |= pts[i].dtype == dtype && pts[i].heuristic == heuristic;
  if (!any)
    return;
  /* the class and data-op name the series for scripts (tests/tuner/report.sh) */
  fprintf(f, "<g class=\"series %s %s\" data-op=\"%s\">\n", heuristic ? "heuristic" : "tuned",
          clnorm_dtype_name(dtype), clnorm_op_name(pts[0].op));
  for (size_t i = 0; i < n; i++) {
    const point *p = &pts[i];
    if (p->dtype != dtype || p->heuristic != heuristic || !isfinite(p->gbps))
      continue;
    if (!open) {
      fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"%s\"%s points=\"", colour,
              heuristic ? "1.6" : "2.2", heuristic ? " stroke-dasharray=\"6 4\"" : "");
      open = 1;
    }
    fprintf(f, "%.1f,%.1f ", px(a, (double)p->cols), py(a, p->gbps));
  }
  if (open)
    fputs("\"/>\n", f);
  for (size_t i = 0; i < n; i++) {
    const point *p = &pts[i];
    if (p->dtype != dtype || p->heuristic != heuristic)
      continue;
    char variant[128], tip[400];
    clnorm_variant_format(&p->variant, variant, sizeof variant);
    if (isfinite(p->gbps)) {
      snprintf(tip, sizeof tip, "%s %s %s, %llu x %llu: %.2f GB/s, median %.2f us; %s",
               heuristic ? "heuristic" : "tuned", clnorm_op_name(p->op),
               clnorm_dtype_name(p->dtype), (unsigned long long)p->rows,
               (unsigned long long)p->cols, p->gbps, p->median_s * 1e6, variant);
      marker(f, px(a, (double)p->cols), py(a, p->gbps), colour, heuristic);
      (*drawn)++;
    } else {
      /* the heuristic's variant failed (winners are "ok"), or an imported winner has no GB/s */
      snprintf(tip, sizeof tip, "%s %s %s, %llu x %llu: %s, no GB/s; %s",
               heuristic ? "heuristic" : "tuned", clnorm_op_name(p->op),
               clnorm_dtype_name(p->dtype), (unsigned long long)p->rows,
               (unsigned long long)p->cols, clnorm__outcome_name(p->outcome), variant);
      const double x = px(a, (double)p->cols), y = a->y0 + PLOT_H;
      fprintf(f, "<path d=\"M%.1f %.1fl8 8m0 -8l-8 8\" stroke=\"#c00000\" stroke-width=\"2\">",
              x - 4, y - 4);
    }
    fputs("<title>", f);
    xml_text(f, tip);
    fputs(!isfinite(p->gbps) ? "</title></path>\n"
          : heuristic        ? "</title></rect>\n"
                             : "</title></circle>\n",
          f);
  }
  fputs("</g>\n", f);
}

static void draw_panel(FILE *f, const report *rp, const panel *pn, const point *all, size_t nall,
                       double x, double y, size_t *drawn) {
  /* this panel's points, sorted by kind, dtype, cols */
  size_t n = 0;
  for (size_t i = 0; i < nall; i++)
    n += in_panel(&all[i], pn);
  point *pts = malloc((n ? n : 1) * sizeof *pts);
  if (!pts)
    return;
  n = 0;
  for (size_t i = 0; i < nall; i++)
    if (in_panel(&all[i], pn))
      pts[n++] = all[i];
  qsort(pts, n, sizeof *pts, point_cmp);
  const device *dev = &rp->dev[pn->device];

  uint64_t cmin = UINT64_MAX, cmax = 0;
  double top = isfinite(dev->copy_gbps) ? dev->copy_gbps : 0.0;
  int have[2][DTYPES] = {{0}}, failed = 0;
  for (size_t i = 0; i < n; i++) {
    cmin = pts[i].cols < cmin ? pts[i].cols : cmin;
    cmax = pts[i].cols > cmax ? pts[i].cols : cmax;
    if (isfinite(pts[i].gbps)) {
      top = pts[i].gbps > top ? pts[i].gbps : top;
      have[pts[i].heuristic][pts[i].dtype] = 1;
    } else {
      failed = 1;
    }
  }
  axes a;
  a.x0 = x + PLOT_X;
  a.y0 = y + PLOT_Y;
  a.lo = floor(log2((double)cmin));
  a.hi = ceil(log2((double)cmax));
  if (a.hi - a.lo < 2) { /* one or two widths: a little room either side */
    a.lo = a.lo >= 1 ? a.lo - 1 : 0;
    a.hi = a.lo + 2 > a.hi + 1 ? a.lo + 2 : a.hi + 1;
  }
  const double step = nice_step(top > 0 ? top * 1.08 : 1.0, 5);
  a.top = ceil((top > 0 ? top * 1.08 : 1.0) / step) * step;

  fprintf(f,
          "<g>\n<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"white\" "
          "stroke=\"#c8c8c8\"/>\n",
          (int)x, (int)y, PANEL_W, PANEL_H);
  char range[64];
  report_row_range(clnorm__row_class((size_t)pn->rows), range, sizeof range);
  text_at(f, x + PLOT_X + PLOT_W / 2.0, y + 22, 15, "middle", "bold",
          "%s, rows %llu (row class %s)", clnorm_op_name(pn->op), (unsigned long long)pn->rows,
          range);

  /* grid lines and tick labels */
  fputs("<g stroke=\"#e3e3e3\" stroke-width=\"1\">\n", f);
  for (double v = 0; v <= a.top + step / 2; v += step)
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", a.x0, py(&a, v),
            a.x0 + PLOT_W, py(&a, v));
  const int every = a.hi - a.lo > 12 ? 2 : 1; /* keep the labels apart on long ranges */
  for (double e = a.lo; e <= a.hi + 0.5; e += 1)
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", px(&a, exp2(e)), a.y0,
            px(&a, exp2(e)), a.y0 + PLOT_H);
  fputs("</g>\n", f);
  fprintf(f,
          "<rect x=\"%.1f\" y=\"%.1f\" width=\"%d\" height=\"%d\" fill=\"none\" "
          "stroke=\"#555555\"/>\n",
          a.x0, a.y0, PLOT_W, PLOT_H);
  fprintf(f, "<g font-family=\"%s\" fill=\"#333333\">\n", font);
  for (double v = 0; v <= a.top + step / 2; v += step)
    text_at(f, a.x0 - 6, py(&a, v) + 4, 12, "end", NULL, "%g", v);
  int k = 0;
  for (double e = a.lo; e <= a.hi + 0.5; e += 1, k++) {
    if (k % every)
      continue;
    char label[32];
    cols_label((uint64_t)exp2(e), label, sizeof label);
    text_at(f, px(&a, exp2(e)), a.y0 + PLOT_H + 16, 12, "middle", NULL, "%s", label);
  }
  text_at(f, a.x0 + PLOT_W / 2.0, a.y0 + PLOT_H + 36, 13, "middle", NULL,
          "cols (elements per row, log scale)");
  fprintf(f,
          "<text x=\"%.1f\" y=\"%.1f\" font-size=\"13\" text-anchor=\"middle\" "
          "transform=\"rotate(-90 %.1f %.1f)\">GB/s (bytes moved / kernel time)</text>\n",
          x + 18, a.y0 + PLOT_H / 2.0, x + 18, a.y0 + PLOT_H / 2.0);
  fputs("</g>\n", f);

  /* the copy bandwidth, then the series: heuristic under tuned */
  if (isfinite(dev->copy_gbps)) {
    fprintf(f,
            "<line class=\"copy\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
            "stroke=\"#444444\" stroke-width=\"1.6\" stroke-dasharray=\"2 3\"><title>copy "
            "bandwidth %.2f GB/s "
            "(the fastest copy kernel over %.0f MiB)</title></line>\n",
            a.x0, py(&a, dev->copy_gbps), a.x0 + PLOT_W, py(&a, dev->copy_gbps), dev->copy_gbps,
            (double)dev->copy_bytes / 1048576.0);
  }
  for (int h = 1; h >= 0; h--)
    for (int d = 0; d < DTYPES; d++)
      series(f, &a, pts, n, (clnorm_dtype)d, h, drawn);

  /* legend, right of the plot */
  double ly = a.y0 + 6;
  const double lx = a.x0 + PLOT_W + 18;
  fprintf(f, "<g font-family=\"%s\" fill=\"#222222\">\n", font);
  for (int h = 0; h < 2; h++)
    for (int d = 0; d < DTYPES; d++) {
      if (!have[h][d])
        continue;
      fprintf(f,
              "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
              "stroke-width=\"%s\"%s/>\n",
              lx, ly, lx + 30, ly, dtype_colour[d], h ? "1.6" : "2.2",
              h ? " stroke-dasharray=\"6 4\"" : "");
      marker(f, lx + 15, ly, dtype_colour[d], h);
      fputs(h ? "</rect>\n" : "</circle>\n", f);
      text_at(f, lx + 38, ly + 4, 12, "start", NULL, "%s %s", h ? "heuristic" : "tuned",
              clnorm_dtype_name((clnorm_dtype)d));
      ly += 20;
    }
  if (isfinite(dev->copy_gbps)) {
    fprintf(f,
            "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#444444\" "
            "stroke-width=\"1.6\" stroke-dasharray=\"2 3\"/>\n",
            lx, ly, lx + 30, ly);
    text_at(f, lx + 38, ly + 4, 12, "start", NULL, "copy %.1f GB/s", dev->copy_gbps);
    ly += 20;
  } else {
    text_at(f, lx, ly + 4, 11, "start", NULL, "copy bandwidth:");
    text_at(f, lx, ly + 18, 11, "start", NULL, "not stored");
    ly += 34;
  }
  if (failed) {
    fprintf(f, "<path d=\"M%.1f %.1fl8 8m0 -8l-8 8\" stroke=\"#c00000\" stroke-width=\"2\"/>\n",
            lx + 11, ly - 4);
    text_at(f, lx + 38, ly + 4, 12, "start", NULL, "heuristic failed");
    ly += 20;
  }
  int any_heuristic = 0;
  for (int d = 0; d < DTYPES; d++)
    any_heuristic |= have[1][d];
  if (!any_heuristic && !failed) {
    text_at(f, lx, ly + 4, 11, "start", NULL, "heuristic: not stored");
    text_at(f, lx, ly + 18, 11, "start", NULL, "(tuned before schema 3)");
  }
  fputs("</g>\n</g>\n", f);
  free(pts);
}

static int panel_cmp(const void *pa, const void *pb) {
  const panel *a = pa, *b = pb;
  if (a->device != b->device)
    return a->device < b->device ? -1 : 1;
  if (a->op != b->op)
    return a->op < b->op ? -1 : 1;
  return (a->rows > b->rows) - (a->rows < b->rows);
}

/* The panels: one per (device, op, rows) holding a point; none without a tuned winner. A winner
 * stands for its whole row class but was measured at one row count, so another count of the
 * class may hold only the heuristic's figures. */
static size_t make_panels(const report *rp, panel **out) {
  panel *pn = malloc((rp->npts ? rp->npts : 1) * sizeof *pn);
  size_t n = 0, tuned = 0;
  if (!pn)
    return 0;
  for (size_t i = 0; i < rp->npts; i++)
    tuned += !rp->pts[i].heuristic;
  for (size_t i = 0; i < rp->npts && tuned; i++) {
    const point *p = &rp->pts[i];
    size_t k = 0;
    while (k < n && !in_panel(p, &pn[k]))
      k++;
    if (k == n)
      pn[n++] = (panel){p->device, p->op, p->rows};
  }
  qsort(pn, n, sizeof *pn, panel_cmp);
  *out = pn;
  return n;
}

static void write_document(FILE *f, const report *rp, const panel *pn, size_t npanels,
                           const char *db_path, int html, size_t *drawn) {
  /* page height: each device's title, then its panels in rows of COLUMNS */
  double height = PAGE_HEAD;
  for (size_t i = 0; i < npanels;) {
    size_t j = i;
    while (j < npanels && pn[j].device == pn[i].device)
      j++;
    height += DEVICE_HEAD + (double)((j - i + COLUMNS - 1) / COLUMNS) * (PANEL_H + MARGIN);
    i = j;
  }
  const int width = MARGIN + COLUMNS * (PANEL_W + MARGIN);
  if (html)
    fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head><meta charset=\"utf-8\"/>"
          "<title>normtune report</title></head>\n<body style=\"margin:0\">\n",
          f);
  else
    fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n", f);
  fprintf(f,
          "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%.0f\" "
          "viewBox=\"0 0 %d %.0f\" font-family=\"%s\">\n",
          width, height, width, height, font);
  fprintf(f, "<rect width=\"%d\" height=\"%.0f\" fill=\"#f7f7f7\"/>\n", width, height);
  text_at(f, MARGIN, 30, 20, "start", "bold",
          "clnorm tuning report: GB/s against row length, tuned and untuned");
  text_at(f, MARGIN, 50, 12, "start", NULL,
          "GB/s: bytes the call must move (inputs read once, outputs written once) over the "
          "median kernel time. Tuned: the fastest verified variant normtune found.");
  char when[64] = "";
  const time_t now = time(NULL);
  struct tm tm;
  if (gmtime_r(&now, &tm))
    strftime(when, sizeof when, "%Y-%m-%d %H:%M UTC", &tm);
  text_at(f, MARGIN, 66, 12, "start", NULL,
          "Heuristic: the variant clnorm runs without tuning, measured in the same run. "
          "Copy: the fastest of the copy kernels on the same device. Database %s (kernel sources "
          "%016llx forward, %016llx backward), drawn %s.",
          db_path, (unsigned long long)rp->hashes.forward, (unsigned long long)rp->hashes.backward,
          when);
  /* the timing rotates at most 8 buffer sets, enough to pass 4x the device's cache for all but
   * small shapes (normtune.c, shape_init) */
  text_at(f, MARGIN, 82, 12, "start", NULL,
          "Above the copy line: the copy kernels are a yardstick measured on the same device, "
          "not the memory's limit, and on a busy machine both figures move from run to run.");
  text_at(f, MARGIN, 98, 12, "start", NULL,
          "Timing rotates up to 8 buffer sets, over 4x the device's cache where 8 suffice: only "
          "shapes whose 8 sets fit in the cache run from it (4096 x 4096 f32, 64 MiB a matrix, "
          "does not).");
  double y = PAGE_HEAD;
  for (size_t i = 0; i < npanels;) {
    const device *dev = &rp->dev[pn[i].device];
    text_at(f, MARGIN, y + 26, 17, "start", "bold", "%s", dev->id.name);
    char stale[128] = "";
    if (dev->results > dev->current)
      snprintf(stale, sizeof stale, "; %llu results of other kernel sources not drawn",
               (unsigned long long)(dev->results - dev->current));
    text_at(f, MARGIN, y + 44, 12, "start", NULL, "%s, driver %s, %s, %u compute units, %u MHz%s",
            dev->id.vendor, dev->id.driver_version, dev->id.cl_version,
            (unsigned)dev->id.compute_units, (unsigned)dev->id.max_clock_mhz, stale);
    y += DEVICE_HEAD;
    size_t k = 0;
    for (; i + k < npanels && pn[i + k].device == pn[i].device; k++)
      draw_panel(f, rp, &pn[i + k], rp->pts, rp->npts,
                 MARGIN + (double)(k % COLUMNS) * (PANEL_W + MARGIN),
                 y + (double)(k / COLUMNS) * (PANEL_H + MARGIN), drawn);
    y += (double)((k + COLUMNS - 1) / COLUMNS) * (PANEL_H + MARGIN);
    i += k;
  }
  fputs("</svg>\n", f);
  if (html)
    fputs("</body>\n</html>\n", f);
}

/* The stored times pass tool_time_plausible (the tune that stored them checked them; a database
 * from elsewhere, or from before that check, may hold Rusticl's 1 ns): a copy bandwidth that
 * fails is not drawn, nor a result that fails against it, each device's count and first reason
 * said on stderr. Returns the results left out. */
static size_t leave_out_implausible(report *rp) {
  size_t left_out = 0;
  for (size_t d = 0; d < rp->ndev; d++) {
    device *dev = &rp->dev[d];
    char why[256];
    if (isfinite(dev->copy_gbps)) {
      const double bytes = 2.0 * (double)dev->copy_bytes;
      if (!tool_time_plausible(bytes / (dev->copy_gbps * 1e9), 0.0, bytes, 0.0, why, sizeof why)) {
        fprintf(stderr, "normtune: the copy bandwidth of %s (%.3g GB/s) is not drawn: %s\n",
                dev->id.name, dev->copy_gbps, why);
        dev->copy_gbps = NAN;
      }
    }
    size_t kept = 0, dropped = 0;
    char first[256] = "";
    for (size_t i = 0; i < rp->npts; i++) {
      const point *p = &rp->pts[i];
      const double copy = isfinite(dev->copy_gbps) ? dev->copy_gbps : 0.0;
      if (p->device == d && p->outcome == CLNORM_OUTCOME_OK &&
          !tool_time_plausible(p->median_s, 0.0, p->gbps * p->median_s * 1e9, copy, why,
                               sizeof why)) {
        if (!dropped++)
          snprintf(first, sizeof first, "%s", why);
        continue;
      }
      rp->pts[kept++] = *p;
    }
    rp->npts = kept;
    if (dropped)
      fprintf(stderr,
              "normtune: %zu result%s of %s (driver %s) left out: times that cannot be believed "
              "(the first: %s)\n",
              dropped, dropped == 1 ? "" : "s", dev->id.name, dev->id.driver_version, first);
    left_out += dropped;
  }
  return left_out;
}

int report_write(const char *db_path, const char *out_path, int html, clnorm_kernel_hashes hashes,
                 int quiet) {
  char err[1024];
  clnorm_db *db = NULL;
  if (clnorm__db_open(db_path, CLNORM_DB_READ, &db, err, sizeof err) != CLNORM_OK) {
    fprintf(stderr, "normtune: %s (run `normtune tune` first, or give --db PATH)\n", err);
    return REPORT_FAILED;
  }
  report *rp = calloc(1, sizeof *rp);
  if (!rp) {
    clnorm__db_close(db);
    fprintf(stderr, "normtune: out of memory\n");
    return REPORT_FAILED;
  }
  rp->hashes = hashes;
  clnorm_status st = clnorm__db_list(db, NULL, &hashes, 1, on_winner, rp, err, sizeof err);
  if (st == CLNORM_OK)
    st = clnorm__db_list_heuristic(db, NULL, &hashes, on_heuristic, rp, err, sizeof err);
  if (st == CLNORM_OK)
    st = clnorm__db_devices(db, &hashes, on_device, rp, err, sizeof err);
  for (size_t i = 0; st == CLNORM_OK && i < rp->ndev; i++)
    st = clnorm__db_copy_gbps(db, &rp->dev[i].id, &rp->dev[i].copy_gbps, &rp->dev[i].copy_bytes,
                              NULL, err, sizeof err);
  clnorm__db_close(db);
  const size_t left_out = st == CLNORM_OK ? leave_out_implausible(rp) : 0;
  int status = REPORT_OK;
  panel *pn = NULL;
  size_t npanels = 0;
  if (st != CLNORM_OK) {
    fprintf(stderr, "normtune: %s\n", err);
    status = REPORT_FAILED;
  } else if (rp->no_memory) {
    fprintf(stderr, "normtune: out of memory reading %s\n", db_path);
    status = REPORT_FAILED;
  } else if ((npanels = make_panels(rp, &pn)) == 0 && left_out) {
    fprintf(stderr,
            "normtune: every result in %s has a time that cannot be believed (above): nothing "
            "to draw; tune again on a device whose profiling works\n",
            db_path);
    status = REPORT_NOTHING;
  } else if (npanels == 0) {
    uint64_t stale = 0;
    for (size_t i = 0; i < rp->ndev; i++)
      stale += rp->dev[i].results - rp->dev[i].current;
    if (stale)
      fprintf(stderr,
              "normtune: %s holds no tuned result of this clnorm's kernels (%llu results of "
              "other kernel sources): run `normtune tune` again, then `normtune report`\n",
              db_path, (unsigned long long)stale);
    else
      fprintf(stderr,
              "normtune: %s holds no tuned result: run `normtune tune` first (e.g. normtune "
              "tune --budget 300), then `normtune report`\n",
              db_path);
    status = REPORT_NOTHING;
  }
  if (status == REPORT_OK) {
    if (rp->too_many_devices)
      fprintf(stderr, "normtune: more than %d devices in %s: only the first %d are drawn\n",
              MAX_DEVICES, db_path, MAX_DEVICES);
    FILE *f = strcmp(out_path, "-") == 0 ? stdout : fopen(out_path, "w");
    size_t drawn = 0;
    if (!f) {
      fprintf(stderr, "normtune: cannot write %s: %s (give --out a writable path)\n", out_path,
              strerror(errno));
      status = REPORT_FAILED;
    } else {
      write_document(f, rp, pn, npanels, db_path, html, &drawn);
      const int bad = ferror(f) != 0;
      if ((f != stdout && fclose(f) != 0) || bad || (f == stdout && fflush(f) != 0)) {
        fprintf(stderr, "normtune: writing %s failed: %s\n", out_path, strerror(errno));
        status = REPORT_FAILED;
      } else if (!quiet) {
        size_t devices = 0;
        for (size_t i = 0; i < npanels; i++)
          devices += i == 0 || pn[i].device != pn[i - 1].device;
        fprintf(stderr, "normtune: wrote %s: %zu device%s, %zu panel%s, %zu points\n", out_path,
                devices, devices == 1 ? "" : "s", npanels, npanels == 1 ? "" : "s", drawn);
      }
    }
  }
  free(pn);
  free(rp->pts);
  free(rp);
  return status;
}
