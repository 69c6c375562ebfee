/* What the files of normtune share: the options, the device session, a shape's data and buffers,
 * a search, and the functions one file defines for the others (grouped by file). */
#ifndef CLNORM_NORMTUNE_H
#define CLNORM_NORMTUNE_H

#include "db.h"
#include "db_json.h"
#include "doctor.h"
#include "internal.h"
#include "names.h"
#include "ref.h"
#include "report.h"
#include "tool.h"
#include "tool_access.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define EXIT_USAGE 2

#define EXIT_INTERRUPTED 130

#define EXIT_DB 6 /* tune: storing failed (disk full, I/O error, the file replaced) */

#define DTYPE_COUNT 3

#define ALL_OPS ((1u << CLNORM_OP_COUNT) - 1u)

#define ALL_DTYPES ((1u << DTYPE_COUNT) - 1u)

#define NORM_OPS ((1u << CLNORM_OP_LAYERNORM) | (1u << CLNORM_OP_RMSNORM))

#define MAX_GRID 64

typedef struct options {
  const char *device, *db, *strategy, *file, *out;
  const char *c_table;  /* show --c-table ARCH: lines for src/builtin_table.h */
  unsigned ops, dtypes; /* bit 1 << op, 1 << dtype; 0: not given (each command has a default) */
  size_t cols[64], ncols, rows[64], nrows;
  size_t grid_rows[MAX_GRID], grid_cols[MAX_GRID], ngrid; /* bench --grid */
  const char *grid;
  double budget;      /* seconds; 0: none */
  double fraction;    /* random / anneal: share of the candidates to evaluate */
  unsigned long seed; /* random / anneal */
  int json, quiet, winners;
  unsigned part, parts; /* build --part I/N (default 1/1): variants i with i % N == I - 1 */
  unsigned given; /* OPT_* bits of the options on the command line */
} options;

/* Every option, as a bit: each command says which it takes (command_options). */
enum {
  OPT_DEVICE = 1u << 0,
  OPT_DB = 1u << 1,
  OPT_OUT = 1u << 2,
  OPT_STRATEGY = 1u << 3,
  OPT_OPS = 1u << 4,
  OPT_DTYPES = 1u << 5,
  OPT_COLS = 1u << 6,
  OPT_ROWS = 1u << 7,
  OPT_GRID = 1u << 8,
  OPT_C_TABLE = 1u << 9,
  OPT_BUDGET = 1u << 10,
  OPT_FRACTION = 1u << 11,
  OPT_SEED = 1u << 12,
  OPT_JSON = 1u << 13,
  OPT_QUIET = 1u << 14,
  OPT_WINNERS = 1u << 15,
  OPT_PART = 1u << 16,
  OPT_FILE = 1u << 17, /* the FILE argument of export and import */
};

typedef struct session {
  tool_device dev;
  cl_context context;
  cl_command_queue queue; /* profiling on: every timing */
  cl_command_queue plain; /* profiling off, made on first use: bench's back-to-back wall time */
  clnorm_ctx *ctx;
  clnorm_device_identity identity;
  clnorm_kernel_hashes hashes; /* this build's: what its rows are stored with and read under */
  cl_ulong max_alloc, global_mem, cache;
  /* how kernels are timed: by profiling events until they fail tool_time_plausible, then by the
   * wall clock (bench, verify), or refused (events_only: tune, whose stored times must be
   * kernel times) */
  tool_clock clock;
  int events_only;
  double copy_gbps; /* the copy bandwidth measured by this run, for the check; 0: none */
} session;

#define VERIFY_ROWS 40 /* rows of the reduced verification shape, adversarial rows included */

#define MAX_SETS 8 /* input/output sets rotated so large shapes are not timed from cache */

#define POOL_SIZE 65536 /* normals drawn once to fill large matrices from; a power of 2 */

/* The matrices of a call. */
enum { MAT_X, MAT_Y, MAT_RES, MAT_SUM, MAT_DY, MATS };

/* Inputs of one shape on the host, as the dtype's values held in floats: what the device gets
 * and what the reference reads. */
typedef struct host_data {
  clnorm_dtype dtype;
  size_t rows, cols;
  float *x, *res, *dy; /* rows x cols, dense; res and dy NULL when not made */
  float *gamma, *beta; /* cols */
  float *mean, *rstd;  /* backward inputs: the float64 forward's statistics as float32 */
  int stats;           /* which statistics mean/rstd hold: 0 none, 1 LayerNorm, 2 RMSNorm */
} host_data;

/* The worst errors of one checked run. */
typedef struct errors {
  double rel;       /* worst error relative to its scale (see check_rows): reported, stored */
  double scaled;    /* worst error in units of its allowance: <= 1 passes */
  const char *what; /* the output of the worst scaled error */
} errors;

/* The buffers of one call. */
typedef struct operands {
  size_t rows;
  cl_mem mat[MATS];
  cl_mem mean, rstd, dgamma, dbeta;
} operands;

typedef struct shape {
  clnorm_op op;
  clnorm_dtype dtype;
  size_t rows, cols, es;
  cl_mem gamma, beta;
  /* the verification set (tune; bench without --grid): a reduced shape, adversarial rows */
  host_data vdata;
  operands vset;
  /* the timing sets: own matrices, shared vectors */
  size_t sets;
  operands tset[MAX_SETS];
  /* whether the data and the verification set are made (shape_load): a shape only planned
   * (shape_plan) has its size, its sets and their matrices without data: its calls are those of
   * the loaded shape, but nothing may run them */
  int loaded;
} shape;

typedef struct timing {
  double median, min;
  double own; /* median of the returned event's own start-to-end (see time_variant) */
  int slow;
} timing;

typedef struct candidate {
  clnorm_variant v;
  int evaluated;
  double median; /* INFINITY: failed, wrong or cut short */
} candidate;

typedef struct search {
  session *s;
  shape *sh;
  clnorm_db *db;
  candidate *c;
  size_t n, evaluated, best;
  double best_time;
  const options *o;
  double deadline; /* 0: none */
  /* progress */
  size_t shape_index, shape_count;
  double run_start;
  size_t total_evals;
  size_t measured; /* candidates of this shape measured by this run (not read back) */
  int tty;
  const double *replay; /* strategies: times measured earlier, per candidate (no device work) */
} search;

/* Set by on_sigint: a run stops after the result in hand, which is stored. */
extern volatile sig_atomic_t interrupted;
/* The database tune writes, closed by die() before it exits. */
extern clnorm_db *writing_db;
/* normtune's usage text (normtune with no command, normtune help). */
extern const char usage[];

/* normtune.c */
void on_sigint(int sig);
void die(int code, const char *fmt, ...);

/* normtune_options.c */
const char *op_name(clnorm_op op);
const char *dtype_name(clnorm_dtype d);
void parse_options(int argc, char **argv, int first, options *o);
/* Refuses an option the command does not take, saying why where the reason is another option. */
void check_command_options(const char *cmd, const options *o);
/* The most variants any op and dtype has on this device: room for one list. */
size_t variant_capacity(const clnorm_ctx *ctx);
typedef struct command_help command_help; /* one command's help text */
const command_help *find_help(const char *cmd);
const char *command_names(void);
/* normtune help [CMD], normtune CMD --help. */
int print_help(const char *cmd);

/* normtune_session.c */
void db_path(const options *o, char *buf, size_t size);
/* The whole file at `path` ("-": standard input), *len its bytes (no NUL added); dies when it
 * cannot be read (normtune_db.c). */
char *read_all(const char *path, size_t *len);
/* Loads the tuning database of --db (or the default path) into s->ctx; one that cannot be read
 * leaves no tuned results (the context loaded the default one when it was created), said on
 * stderr as "normtune: ...: DOING without tuned results" (normtune_session.c). */
void session_load_tuning(const options *o, session *s, const char *doing);
/* Opens for writing; a corrupt, foreign-schema or newer file is moved aside and recreated. */
clnorm_db *open_db_write(const char *path);
/* Opens the database of --db (or the default) for reading, or exits saying why, then `hint`;
 * its path into `path` when not NULL. */
#define DB_PATH_MAX 4096
clnorm_db *open_db_read(const options *o, const char *hint, char path[DB_PATH_MAX]);
void session_open(const options *o, session *s);
void session_close(session *s);
clnorm_call call_of(const shape *sh, const operands *o);
/* The call of timing set `set`. */
clnorm_call shape_call(const shape *sh, size_t set);
cl_mem make_buffer(session *s, size_t bytes, const void *host);
void release(cl_mem m);
void shape_free(shape *sh);
/* Whether a shape's buffers fit the device (one timing set); else 0 with the reason in why. */
int shape_fits(const session *s, clnorm_op op, clnorm_dtype dtype, size_t rows, size_t cols,
               char *why, size_t why_size);
/* Sets up a shape: timing sets from `data` (rows x cols inputs of op and dtype; NULL: made
 * here), and with `with_vset` the verification set. 0 with a message in why when it does not
 * fit the device (never silently) or memory runs out. shape_plan then shape_load. */
int shape_init(session *s, shape *sh, clnorm_op op, clnorm_dtype dtype, size_t rows, size_t cols,
               host_data *data, int with_vset, char *why, size_t why_size);
/* The first half of shape_init: the shape's size, whether it fits the device (else 0 with the
 * message in why), its timing sets' count and their matrices without data. tune plans each shape
 * and loads it only when something must be measured: a resumed run reads its finished shapes
 * back without making their data (host data, uploads and fills: most of a resumed run's time on
 * large shapes). */
int shape_plan(session *s, shape *sh, clnorm_op op, clnorm_dtype dtype, size_t rows, size_t cols,
               char *why, size_t why_size);
/* The second half: the data and the other buffers of a planned shape (as shape_init's data and
 * with_vset); 0 with a message in why when memory runs out, the shape's buffers then released
 * (its size kept, for the caller's lines; shape_free still frees it). */
int shape_load(session *s, shape *sh, host_data *data, int with_vset, char *why, size_t why_size);
/* Fills n elements of dtype with NaN, so that an element the kernel does not write fails. */
cl_int poison(session *s, cl_mem buf, clnorm_dtype dtype, size_t n);
/* Reads rows idx[0..n) (idx NULL: rows 0..n-1) of a rows x cols matrix of dtype into floats. */
cl_int read_rows(session *s, cl_mem buf, clnorm_dtype dtype, size_t cols, const size_t *idx,
                 size_t n, float *out);
/* Rows idx[0..n) of a dense matrix (m NULL: NULL), as a new dense array; *fail on no memory. */
float *gather(const float *m, size_t cols, const size_t *idx, size_t n, int *fail);

/* normtune_measure.c */
int uses_matrix(clnorm_op op, int m);
int is_input(int m);
int has_beta(clnorm_op op);
int has_mean(clnorm_op op);
void host_data_free(host_data *hd);
/* Makes x (and residual and dy when asked), gamma and beta for rows x cols of dtype. gamma and
 * beta depend on seed and cols alone. verification: every element drawn, adversarial rows
 * (NaN and Inf rows only for forward ops: `special`); else pooled. 0 when out of memory. */
int host_data_make(host_data *hd, clnorm_dtype dtype, size_t rows, size_t cols, int want_res,
                   int want_dy, uint64_t seed, int verification, int special);
/* The backward's inputs mean and rstd: the float64 forward reference of x (LayerNorm, or
 * RMSNorm when rms) rounded to float32, in blocks of rows. 0 when out of memory. */
int host_stats(host_data *hd, int rms);
/* Runs v (NULL: the dispatcher's choice) on the buffers o with every output poisoned first,
 * reads rows idx[0..n) (idx NULL: all) of the outputs back, and checks them (check_rows)
 * against the reference of the same rows of `in`, the inputs o holds; dgamma and dbeta against
 * the reference over all rows. adversarial: see check_rows. */
clnorm_status run_checked(session *s, const shape *sh, const operands *o, const clnorm_variant *v,
                          const host_data *in, const size_t *idx, size_t n, int adversarial,
                          errors *e);
/* Checks v on the verification set. */
clnorm_status verify(session *s, shape *sh, const clnorm_variant *v, errors *e);
/* Median of repeated runs, after warm-up, until the median settles (or 1 s, or 200 runs),
 * rotating the input sets. Cut short when the first runs are more than 3x `best`. A run is timed
 * from its first kernel's start to its last kernel's end (clnorm_run_span): a call may enqueue
 * several kernels (backward: the row pass and the weight-gradient reduction; few long rows:
 * split-row statistics, then the normalization), and a marker enqueued before the call would add
 * its own gap (about 9 us on NVIDIA's OpenCL, as long as a whole kernel of 4M elements), which
 * ranked noise. `own`: the last kernel's own start-to-end. Every measurement passes
 * tool_time_plausible (its median against the median wall time of the same runs, the bytes
 * against s->copy_gbps): where it fails, session_fall_back, and the shape is timed again by the
 * wall clock, enqueue to completion (own then the same). */
clnorm_status time_variant(session *s, shape *sh, const clnorm_variant *v, double best,
                           timing *out);
/* The profiling events of s's device failed tool_time_plausible (why): with s->events_only dies
 * with a message (exit 1), else s times by the wall clock from now on and says so on stderr. */
void session_fall_back(session *s, const char *why);
/* Wall time per call of `calls` calls through the dispatcher enqueued back to back on a queue
 * without profiling, then clFinish: what an application's stream of small calls costs, launch
 * overhead included. Negative on failure. */
double wall_per_call(session *s, shape *sh, size_t calls);
void parallel_for(size_t n, void (*fn)(void *user, size_t i), void *user);
/* Builds programs on every core before timing: compilers are slow (a third of a second per
 * program on NVIDIA's), and one after another, building would be the bulk of a run. Item i is
 * calls[i * call_step] with variants[i] (clnorm_variant_check), or with variants NULL the
 * dispatcher's choice for it (clnorm_choose); status (NULL: not wanted) receives each one's. */
void build_all(clnorm_ctx *ctx, const clnorm_call *calls, size_t call_step,
               const clnorm_variant *variants, size_t n, clnorm_status *status);

/* normtune_search.c */
void progress(search *se, const char *last);
/* Verifies and times r->variant on the search's shape (cut short at 3x best when best > 0):
 * fills r's outcome and measures; e receives the errors of the check. */
void measure(search *se, clnorm_result *r, double best, errors *e);
/* Evaluates candidate i (once): from the database when already measured, else verified,
 * timed and stored. Returns its median (INFINITY when it failed). */
double evaluate(search *se, size_t i);
int out_of_time(const search *se);
/* Loads the search's shape (shape_load) unless it is loaded: 1 when it is, else 0 after saying
 * on stderr that the shape is skipped and why. */
int search_load(search *se);
/* Index of the candidate equal to v, or n. */
size_t find_candidate(const search *se, const clnorm_variant *v);
unsigned differences(const clnorm_variant *a, const clnorm_variant *b);
void prebuild_all(search *se, const clnorm_call *call);
/* Where a shape's search resumes from what the database holds. First forgets the shape's stored
 * refusals of variants the library runs now (docs/TUNING.md, "When to tune"), which evaluate()
 * and prebuild_all() then treat as unmeasured. Then: a shape an
 * earlier run completed (its A/B against the heuristic at these rows is stored) with
 * at least `limit` candidates stored (the search's evaluations: --fraction's share, or every
 * candidate for exhaustive): every candidate the database holds is read back (evaluated, nothing
 * measured) and 1 returned, so that the run goes on to the next shape. Searching it again would
 * not: the confirmation rewrote the fastest candidates' times, so the walk over the stored times
 * leaves the earlier path and measures candidates it never saw (on the H200, a resumed run
 * measured 9,601 new results of the 76 shapes the call before had finished). 0 otherwise: no
 * such A/B, fewer candidates stored than this search evaluates (a larger --fraction, or
 * exhaustive after anneal), or a refusal just forgotten, which then searches it. */
int resume_shape(search *se, size_t limit);
/* The strategies, picked by name (--strategy): each starts from the heuristic's variant when it
 * is a candidate (start < n), so the cut-short threshold is meaningful from the first
 * evaluation, and evaluates `limit` candidates at most (exhaustive: all of them).
 *   exhaustive  every candidate, built first on all cores (prebuild)
 *   random      a random sample (--fraction, --seed)
 *   anneal      simulated annealing over the parameter grid: a move changes one parameter; a
 *               slower neighbour is accepted with probability exp(-(t_new / t_cur - 1) / T), T
 *               falling from 0.2 to 0.005 over the evaluations; when every neighbour has been
 *               seen, it jumps to a random unseen candidate
 *   seeded      after an edit of the kernels: the SEEDED_TOP fastest candidates the database
 *               holds for the shape under the kernel hash measured there last
 *               (clnorm__db_earlier), which an edit that keeps the variant space rarely
 *               reorders much; the confirmation and the A/B against the heuristic then guard the
 *               shape as in any search. A shape with no such results is annealed, and the run
 *               says so. A shape is done when its A/B is stored (resume_shape). */
typedef struct strategy {
  const char *name;
  void (*run)(search *se, size_t start, size_t limit, clnorm_rng *rng);
  int prebuild; /* builds every candidate first (prebuild_all) */
  int sampled;  /* takes --fraction and --seed; normtune strategies compares these */
  int seeded;   /* reads its candidates from the database: --fraction does not apply */
} strategy;
#define STRATEGIES 4
#define SEEDED_TOP 16
extern const strategy strategies[STRATEGIES];
/* The strategy named `name`, or NULL. */
const strategy *find_strategy(const char *name);
/* Evaluates the shape's stored winner (clnorm__db_winners: chosen at another row count of its
 * class, or by an earlier run), when the search did not: read back, it joins the confirmation
 * and the A/B, so that a winner tuned at one row count is compared with the heuristic at this
 * one too. */
void evaluate_class_winner(search *se);
/* The confirmation round of a shape this run measured: the fastest CONFIRM_TOP candidates and
 * the heuristic's (index h, when it ran) are timed again, CONFIRM_ROUNDS rounds in turn, so that
 * a burst of other work on the machine during one candidate's timing does not crown it (on a
 * shared CPU one variant's median moves by 10-20 % between runs). Each keeps the median of its
 * timings, stored over its first result; the lowest is the best candidate, which ab_test then
 * compares with the heuristic. Skipped when nothing was measured (a resumed shape keeps what it
 * had) or on Ctrl-C; not for an exhausted --budget:
 * the shape whose search used the last of it is the one most likely to have a noisy winner
 * (main.sh's 60 s run stored RMSNorm 256 x 65536 at 0.50 of copy over the heuristic's 0.84),
 * and the round is bounded (at most 8 timings). */
void confirm(search *se, size_t h);
/* The interleaved A/B of a shape at its row count, after confirm: the search's best candidate
 * and the heuristic's variant h timed in turn, candidate then heuristic, AB_ROUNDS rounds (each
 * a median of back-to-back calls as time_variant takes it), so that a burst of other work slows
 * both alike. ab_decide's rule: the candidate is the winner only when it is faster than the
 * heuristic (median over median) by more than the noise (half the range of the rounds' ratios,
 * over their median) and by more than AB_MARGIN; else the heuristic is kept. The result is
 * stored (clnorm__db_put_ab), so the winner of the shape's row class is the heuristic's variant
 * when the A/B at any row count tuned kept it. A stored A/B of the same two variants at this
 * row count is reused (a resumed run times nothing). Returns 1 (heuristic kept), 0 (candidate),
 * or -1 when no A/B was made (nothing verified, the heuristic failed, Ctrl-C), with *out
 * filled for 0 and 1. */
#define AB_ROUNDS 6
#define AB_MARGIN 0.02
int ab_test(search *se, const clnorm_variant *h, clnorm_ab *out);
/* After ab_test chose the candidate: its A/B again at half and twice the rows tuned (the factor
 * within which the dispatcher uses a winner, CLNORM_ROWS_NEAR_RATIO), kept inside the row class
 * (the last class: below only), other than the rows tuned, each verified first, so that the
 * class's winner stands only where the rows it covers were compared. On the H100, bfloat16
 * winners tuned at 128 rows of 65536 cols ran at 0.93-0.94x of the heuristic at 256 rows
 * (docs/TUNING.md). Until 2026-11-29 the A/Bs were at the class's first and last row counts,
 * which a winner is not used at when they are more than twice away: on the H200 LayerNorm
 * float32's winners at 2048 rows (2.5-14.1% faster) lost at 257 rows, a single wave, and the
 * class kept the heuristic at 2048 rows too. Stored like ab_test's (clnorm__db_put_ab: an A/B that
 * keeps the heuristic makes it the class's winner); reused when resumed. Returns 1 when one kept
 * the heuristic
 * (*out: that one), 0 when the candidate won every one (*out: the last), -1 when none was made
 * (the rows the heuristic's own variant, shapes that do not fit, Ctrl-C). */
int ab_edges(search *se, const clnorm_ab *won, clnorm_ab *out);
/* At half and twice the rows tuned (ab_edges) the winner has already beaten the heuristic: it
 * stands there unless it is slower, median over median, by more than AB_EDGE_LOSS. Asking it to
 * win again by the noise and AB_MARGIN vetoed ties: on the H200 (2026-11-29) 13 of the 24 winners
 * vetoed at an edge were 0.3-5.7% faster there, or at most 0.3% slower (LayerNorm float32 1536 x
 * 2048 tuned 8.9% faster, 3.0% faster at 1024 rows with 4.2% noise), and the class ran the
 * heuristic. A loss of 1% keeps every call within the 0.97x of the heuristic that issue 22 allows;
 * the 11 that lost 1-21% are still vetoed. Sets ab->kept_heuristic from its medians; an A/B of
 * rounds 0 (the candidate's outputs were wrong there) stays as it is. */
#define AB_EDGE_LOSS 0.01
void ab_decide_edge(clnorm_ab *ab);
/* The decision from n rounds' times per call (n <= AB_ROUNDS): fills ab's times, noise, rounds
 * and kept_heuristic. */
void ab_decide(const double *cand_s, const double *heur_s, size_t n, clnorm_ab *ab);
/* ab_decide's rule on ab's medians and noise: the candidate faster by more than both the noise
 * and AB_MARGIN. */
int ab_beats(const clnorm_ab *ab);
/* One line saying what an A/B decided and why, for tune and show. */
void ab_note(const clnorm_ab *ab, char *buf, size_t size);
/* Stores what the heuristic's variant h (candidate `start`, or none when start is se->n) gives
 * on the shape, for `normtune report`: the candidate's stored result when the search evaluated
 * it, else a measurement made here (nothing when the run was interrupted first), which is
 * stored as a result too, so that it competes for the winner: a short search that never met a
 * variant as fast as the default must not store a slower one (main.sh's 60 s run on PoCL stored
 * LayerNorm 256 x 65536 at 2.8 GB/s beside the heuristic's 14.1). Returns that median when it was
 * measured here and "ok", else INFINITY. */
double record_heuristic(search *se, const clnorm_variant *h, size_t start);
/* Measures the device's copy bandwidth and stores it when it beats `before` (GB/s; 0: none yet),
 * for `normtune report`: over four times the device's cache, kept within 64 to 256 MiB and what
 * one buffer may hold. tune measures it at the start and again at the end, keeping the higher:
 * on a shared machine one measurement can fall in a burst of other work. Returns the GB/s
 * stored (before when the new figure is lower or not measured). */
double record_copy(session *s, clnorm_db *db, double before);

/* normtune_tune.c */
/* The ops and dtypes of a mask, in enum order; returns how many. */
/* The shapes a command covers: --ops, --dtypes, --cols and --rows where given, else the
 * command's defaults (ops and dtypes: bit 1 << value). */
typedef struct selection {
  clnorm_op ops[CLNORM_OP_COUNT];
  clnorm_dtype dtypes[DTYPE_COUNT];
  size_t nops, ndtypes, ncols, nrows;
  const size_t *cols, *rows;
} selection;
void select_shapes(const options *o, unsigned ops, unsigned dtypes, const size_t *cols,
                   size_t ncols, const size_t *rows, size_t nrows, selection *sel);
/* The shapes tune covers: the options', else its defaults (LayerNorm and RMSNorm float32, 19
 * cols, one row count per row class). */
void tune_selection(const options *o, selection *sel);
int cmd_tune(const options *o);
int cmd_build(const options *o); /* normtune_build.c */
int cmd_strategies(const options *o);

/* normtune_db.c */
int cmd_devices(const options *o);
/* Writes v as a JSON number, or null when it is not finite. */
/* JSON members ", \"key\": value": a number in `format` (null when not finite) or, where text is
 * not NULL, a string. */
typedef struct json_field {
  const char *key, *format;
  double number;
  const char *text;
} json_field;
void json_fields(const json_field *fields, size_t n);
void json_number(const char *format, double v);
int cmd_show(const options *o);
int cmd_export(const options *o);
int cmd_builtin(const options *o); /* normtune_builtin.c */
/* normtune_builtin.c: one entry of src/builtin_table.h, CLNORM_BUILTIN(...) in the format its
 * header comment gives, without a comment or the newline: the winner r (as clnorm__db_winners
 * gives it: its row range and compared heuristic variant included) of the device of vendor_id,
 * name, driver family and architecture. normtune builtin and show --c-table write it. */
void builtin_line(FILE *out, cl_uint vendor_id, const char *device, const char *family,
                  const char *arch, const clnorm_result *r);
int cmd_import(const options *o);
int cmd_report(const options *o);

/* normtune_bench.c */
int cmd_bench(const options *o);

/* normtune_verify.c */
int cmd_verify(const options *o);

#endif
