/* Winners shipped for known devices, one line each, copied from `normtune show --device ...`
 * of a tuning run written down in docs/PERFORMANCE.md:
 *   {"device name substring", {op, dtype, cols, row_class, {wg, tpr, vec, hold, reduce, stats}}},
 * Empty so far: shipping the H100 and PoCL winners is issue 6's and 5's work. */
