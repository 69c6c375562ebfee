/* normtune report: the tuning database drawn as charts, one SVG written by hand (no
 * dependencies). Per device, op and row count: GB/s against cols on a log scale, for the tuned
 * winners and the heuristic's variant, one line per dtype, and the device's copy bandwidth; only
 * figures the database holds are drawn. */
#ifndef CLNORM_REPORT_H
#define CLNORM_REPORT_H

#include "db.h"

#include <stddef.h>
#include <stdint.h>

/* Exit statuses of `normtune report`. */
#define REPORT_OK 0
#define REPORT_FAILED 1  /* database missing or unreadable, file not written */
#define REPORT_NOTHING 3 /* the database holds no tuned result of these kernels */

/* The row counts of row class row_class (clnorm__row_class) as text: "17-256", "4097+". */
void report_row_range(unsigned row_class, char *out, size_t size);

/* Reads the database at db_path (never changing it) and writes the charts of the results current
 * under hashes (each of its op's family's kernel hash) to out_path: an SVG document, or with
 * html 1 the SVG inside a minimal HTML page; "-" is standard output. Prints a summary line on
 * standard error (quiet: none) and, on failure, a message saying what to do. Returns one of the
 * statuses above. */
int report_write(const char *db_path, const char *out_path, int html, clnorm_kernel_hashes hashes,
                 int quiet);

#endif
