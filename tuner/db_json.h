/* The tuning database as JSON (tuner/db_json.c), for normtune export and import and the tests. */
#ifndef CLNORM_DB_JSON_H
#define CLNORM_DB_JSON_H

#include "db.h"

#include <stdio.h>

/* Writes every device's results as JSON to out:
 *   {"format": "clnorm-tuning", "format_version": 1, "clnorm_version": "0.1.0",
 *    "exported_at": <unix time>,
 *    "devices": [{"vendor_id": 4318, "vendor": "...", "name": "...", "driver_version": "...",
 *                 "opencl_version": "...", "compute_units": 132, "max_clock_mhz": 1980,
 *                 "local_mem": 49152,
 *                 "results": [{"op": a clnorm_op_name, "dtype": "f32"|"f16"|"bf16",
 *                   "cols": 4096, "row_class": 2, "rows": 4096, "wg": 256, "tpr": 256, "vec": 4,
 *                   "hold": 4, "reduce": "local"|"subgroup"|"nvshfl", "stats": "welford"|"twopass",
 *                   "status": "ok"|"wrong"|"build_failed"|"unsupported"|"slow",
 *                   "median_s": 1.2e-05, "min_s": 1.1e-05, "gbps": 2900.5, "max_err": 3e-07,
 *                   "measured_at": 1700000000, "kernel_hash": "0123456789abcdef",
 *                   "clnorm_version": "0.1.0"}, ...]}, ...]}
 * Times, gbps and max_err are null when not measured (or infinite). Numbers are written in the
 * C locale whatever the application's. winners_only: only each shape's winner (clnorm__db_list's
 * winners_only), the A/B results all the same. CLNORM_E_DB (also when writing fails). */
clnorm_status clnorm__db_export(clnorm_db *db, int winners_only, FILE *out, char *err,
                                size_t err_size);

/* Imports JSON written by clnorm__db_export from text[0..len). The input is untrusted: every
 * field is checked and any error rejects the whole input with CLNORM_E_INVALID_ARG and a message
 * naming the place ("devices[0].results[3].cols: ..."); unknown members are ignored. Valid input
 * is stored in one transaction; a result whose key is already stored replaces it only when it was
 * measured later. *imported (may be NULL) receives how many results were stored, *kept (may be
 * NULL) how many were older than the stored ones. CLNORM_E_NO_MEMORY, CLNORM_E_DB. */
clnorm_status clnorm__db_import(clnorm_db *db, const char *text, size_t len, size_t *imported,
                                size_t *kept, char *err, size_t err_size);

#endif
