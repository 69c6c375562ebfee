/* normtune's command line: the options, which command takes which, and the help. */
#define _POSIX_C_SOURCE 200809L
#include "normtune.h"

static const char *const option_names[] = {
    "--device", "--db",   "--out",   "--strategy", "--ops",    "--dtypes",
    "--cols",   "--rows", "--grid",  "--c-table",  "--budget", "--fraction",
    "--seed",   "--json", "--quiet", "--winners",  "--part",   "FILE"};

/* A count: decimal digits only, at least 1, at most max. */
static int parse_count(const char *text, char **end, unsigned long long max,
                       unsigned long long *out) {
  return tool_parse_uint(text, end, out) && *out >= 1 && *out <= max;
}

static size_t parse_list(const char *text, size_t *out, size_t cap, const char *what) {
  size_t n = 0;
  const char *p = text;
  do {
    char *end;
    unsigned long long v;
    if (!parse_count(p, &end, SIZE_MAX, &v) || (*end && (*end != ',' || !end[1])))
      die(EXIT_USAGE, "%s: \"%s\" is not a list of positive integers (e.g. 768,4096)", what, text);
    if (n == cap)
      die(EXIT_USAGE, "%s: at most %zu values", what, cap);
    out[n++] = (size_t)v;
    p = *end ? end + 1 : end;
  } while (*p);
  return n;
}

const char *op_name(clnorm_op op) { return clnorm_op_name(op); }

const char *dtype_name(clnorm_dtype d) { return clnorm_dtype_name(d); }

static const char *op_name_at(int i) { return clnorm_op_name((clnorm_op)i); }

static const char *dtype_name_at(int i) { return clnorm_dtype_name((clnorm_dtype)i); }

/* tool_parse_names, exiting with the usage status and its message on a bad list. */
static unsigned parse_names(const char *text, const char *(*name)(int), int count,
                            const char *what) {
  unsigned mask;
  char err[640];
  if (!tool_parse_names(text, name, count, what, &mask, err, sizeof err))
    die(EXIT_USAGE, "%s", err);
  return mask;
}

/* The shapes of `bench --grid gpu` (rows x cols): a transformer's inference and training
 * shapes, from one row to 64M-element matrices, short rows to 4M-element rows. */
static const size_t gpu_grid[][2] = {
    {1, 4096},     {8, 1024},    {32, 2048},    {128, 4096},  {512, 256},   {512, 1024},
    {512, 4096},   {1024, 1024}, {4096, 768},   {4096, 4096}, {8192, 8192}, {16384, 4096},
    {32768, 1024}, {65536, 512}, {4096, 16384}, {256, 65536}, {16, 4194304}};

/* --grid gpu, or a list ROWSxCOLS,ROWSxCOLS,... */
static void parse_grid(const char *text, options *o) {
  o->grid = text;
  o->ngrid = 0;
  if (strcmp(text, "gpu") == 0) {
    for (size_t i = 0; i < sizeof gpu_grid / sizeof gpu_grid[0]; i++) {
      o->grid_rows[i] = gpu_grid[i][0];
      o->grid_cols[i] = gpu_grid[i][1];
    }
    o->ngrid = sizeof gpu_grid / sizeof gpu_grid[0];
    return;
  }
  const char *p = text;
  do {
    char *end;
    unsigned long long rows, cols;
    if (!parse_count(p, &end, SIZE_MAX, &rows) || *end != 'x' ||
        !parse_count(end + 1, &end, SIZE_MAX, &cols) || (*end && (*end != ',' || !end[1])))
      die(EXIT_USAGE, "--grid: \"%s\" is neither gpu nor a list ROWSxCOLS,... (e.g. 64x1024)",
          text);
    if (o->ngrid == MAX_GRID)
      die(EXIT_USAGE, "--grid: at most %d shapes", MAX_GRID);
    o->grid_rows[o->ngrid] = (size_t)rows;
    o->grid_cols[o->ngrid++] = (size_t)cols;
    p = *end ? end + 1 : end;
  } while (*p);
}

/* A number of seconds or a share: finite, nothing after it. */
static double parse_real(const char *name, const char *text, double above, double at_most,
                         const char *expect) {
  char *end;
  errno = 0;
  const double v = strtod(text, &end);
  if (end == text || *end || errno || !isfinite(v) || !(v > above && v <= at_most) ||
      isspace((unsigned char)text[0]))
    die(EXIT_USAGE, "%s: \"%s\" is not %s", name, text, expect);
  return v;
}

void parse_options(int argc, char **argv, int first, options *o) {
  memset(o, 0, sizeof *o);
  o->strategy = "anneal";
  o->fraction = 0.3;
  o->seed = 1;
  o->part = o->parts = 1;
  for (int i = first; i < argc; i++) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    unsigned bit = 0;
    for (size_t k = 0; k + 1 < sizeof option_names / sizeof option_names[0]; k++)
      if (strcmp(a, option_names[k]) == 0)
        bit = 1u << k;
    if (!bit && (a[0] != '-' || strcmp(a, "-") == 0) && !o->file) { /* "-": standard in/out */
      o->file = a;
      o->given |= OPT_FILE;
      continue;
    }
    if (!bit)
      die(EXIT_USAGE, "unknown argument \"%s\" (see normtune --help)", a);
    o->given |= bit;
    if (bit == OPT_JSON) {
      o->json = 1;
      continue;
    }
    if (bit == OPT_QUIET) {
      o->quiet = 1;
      continue;
    }
    if (bit == OPT_WINNERS) {
      o->winners = 1;
      continue;
    }
    if (!v)
      die(EXIT_USAGE, "%s needs a value", a);
    i++;
    const char **text = bit == OPT_DB         ? &o->db
                        : bit == OPT_OUT      ? &o->out
                        : bit == OPT_STRATEGY ? &o->strategy
                        : bit == OPT_C_TABLE  ? &o->c_table
                                              : NULL;
    if (text) {
      *text = v;
      continue;
    }
    switch (bit) {
    case OPT_DEVICE: {
      /* an index must be one: "-1" or an index past 2^64 is no device name either */
      char *end;
      unsigned long long index;
      if (((v[0] == '-' || v[0] == '+') && isdigit((unsigned char)v[1])) ||
          (isdigit((unsigned char)v[0]) && strspn(v, "0123456789") == strlen(v) &&
           !tool_parse_uint(v, &end, &index)))
        die(EXIT_USAGE,
            "--device: \"%s\" is not an index of `normtune devices`, gpu, cpu or a "
            "part of a device name",
            v);
      o->device = v;
      break;
    }
    case OPT_OPS:
      o->ops = parse_names(v, op_name_at, CLNORM_OP_COUNT, "--ops");
      break;
    case OPT_DTYPES:
      o->dtypes = parse_names(v, dtype_name_at, DTYPE_COUNT, "--dtypes");
      break;
    case OPT_COLS:
      o->ncols = parse_list(v, o->cols, 64, "--cols");
      break;
    case OPT_ROWS:
      o->nrows = parse_list(v, o->rows, 64, "--rows");
      break;
    case OPT_GRID:
      parse_grid(v, o);
      break;
    case OPT_BUDGET:
      o->budget = parse_real("--budget", v, 0.0, 1e9, "a positive number of seconds");
      break;
    case OPT_FRACTION:
      o->fraction = parse_real("--fraction", v, 0.0, 1.0, "in (0, 1]");
      break;
    case OPT_PART: {
      char *end;
      unsigned long long part, parts;
      if (!parse_count(v, &end, 1024, &part) || *end != '/' ||
          !parse_count(end + 1, &end, 1024, &parts) || *end || part > parts)
        die(EXIT_USAGE, "--part: \"%s\" is not I/N with 1 <= I <= N <= 1024 (e.g. 2/8)", v);
      o->part = (unsigned)part;
      o->parts = (unsigned)parts;
      break;
    }
    case OPT_SEED: {
      char *end;
      unsigned long long seed;
      if (!tool_parse_uint(v, &end, &seed) || *end || seed > ULONG_MAX)
        die(EXIT_USAGE, "--seed: \"%s\" is not an integer from 0 to %lu", v, ULONG_MAX);
      o->seed = (unsigned long)seed;
      break;
    }
    }
  }
  if (!find_strategy(o->strategy)) {
    char known[128] = "";
    for (int i = 0; i < STRATEGIES; i++)
      snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s", i ? ", " : "",
               strategies[i].name);
    die(EXIT_USAGE, "--strategy: unknown value \"%s\" (known: %s)", o->strategy, known);
  }
}

/* The options each command takes; any other is a usage error. */
static unsigned command_options(const char *cmd, const options *o) {
  const unsigned select = OPT_DEVICE | OPT_DB | OPT_OPS | OPT_DTYPES;
  const strategy *strat = find_strategy(o->strategy);
  if (strcmp(cmd, "tune") == 0)
    return select | OPT_COLS | OPT_ROWS | OPT_BUDGET | OPT_STRATEGY | OPT_QUIET |
           (strat->sampled || strat->seeded ? OPT_FRACTION | OPT_SEED : 0);
  if (strcmp(cmd, "build") == 0)
    return OPT_DEVICE | OPT_OPS | OPT_DTYPES | OPT_COLS | OPT_PART | OPT_QUIET;
  if (strcmp(cmd, "show") == 0)
    return OPT_DB | OPT_DEVICE | (o->given & OPT_C_TABLE ? OPT_C_TABLE : OPT_JSON);
  if (strcmp(cmd, "bench") == 0)
    return select | OPT_JSON | (o->given & OPT_GRID ? OPT_GRID | OPT_QUIET : OPT_COLS | OPT_ROWS);
  if (strcmp(cmd, "verify") == 0)
    return select | OPT_JSON | (o->given & OPT_GRID ? OPT_GRID : OPT_COLS | OPT_ROWS);
  if (strcmp(cmd, "report") == 0)
    return OPT_OUT | OPT_DB | OPT_QUIET;
  if (strcmp(cmd, "doctor") == 0)
    return OPT_DB;
  if (strcmp(cmd, "export") == 0)
    return OPT_FILE | OPT_DB | OPT_WINNERS;
  if (strcmp(cmd, "import") == 0)
    return OPT_FILE | OPT_DB;
  if (strcmp(cmd, "builtin") == 0)
    return OPT_FILE | OPT_OUT;
  if (strcmp(cmd, "strategies") == 0)
    return select;
  return 0; /* devices */
}

void check_command_options(const char *cmd, const options *o) {
  const unsigned extra = o->given & ~command_options(cmd, o);
  if (!extra)
    return;
  unsigned k = 0;
  while (!(extra & (1u << k)))
    k++;
  const unsigned bit = 1u << k;
  if (bit == OPT_FILE)
    die(EXIT_USAGE, "unexpected argument \"%s\": %s takes no FILE (see normtune help %s)", o->file,
        cmd, cmd);
  if (strcmp(cmd, "tune") == 0 && (bit == OPT_FRACTION || bit == OPT_SEED))
    die(EXIT_USAGE,
        "%s applies to --strategy random and anneal (and seeded's shapes with nothing to "
        "seed from), not exhaustive (every candidate)",
        option_names[k]);
  if (strcmp(cmd, "show") == 0 && (bit == OPT_JSON || bit == OPT_C_TABLE))
    die(EXIT_USAGE, "show takes --json or --c-table, not both");
  if ((strcmp(cmd, "bench") == 0 || strcmp(cmd, "verify") == 0) && o->given & OPT_GRID &&
      (bit == OPT_COLS || bit == OPT_ROWS))
    die(EXIT_USAGE, "%s --grid takes its shapes from --grid, not from %s", cmd, option_names[k]);
  if (strcmp(cmd, "bench") == 0 && bit == OPT_QUIET)
    die(EXIT_USAGE, "--quiet belongs to bench --grid (bench without it prints no progress)");
  die(EXIT_USAGE, "%s does not take %s (see normtune help %s)", cmd, option_names[k], cmd);
}

size_t variant_capacity(const clnorm_ctx *ctx) {
  size_t most = 0;
  for (int op = 0; op < CLNORM_OP_COUNT; op++)
    for (int d = 0; d <= CLNORM_BF16; d++) {
      const size_t n = clnorm_variant_list(ctx, (clnorm_op)op, (clnorm_dtype)d, NULL, 0);
      most = n > most ? n : most;
    }
  return most;
}

const char usage[] =
    "usage: normtune COMMAND [OPTIONS]\n"
    "       normtune help COMMAND   (or normtune COMMAND --help): one command, with examples\n"
    "       normtune --version      the version of normtune and its library\n"
    "\n"
    "commands:\n"
    "  devices                 list OpenCL platforms and devices with their index\n"
    "  tune                    search the variants and store the winners\n"
    "      [--device NAME|INDEX|gpu|cpu] [--db PATH] [--ops OP,...] [--dtypes f32,f16,bf16]\n"
    "      [--cols N,N,...] [--rows N,N,...] [--budget SECONDS]\n"
    "      [--strategy exhaustive|random|anneal|seeded] [--fraction F] [--seed N] [--quiet]\n"
    "  build [--device ...] [--ops ...] [--dtypes ...] [--cols ...] [--part I/N] [--quiet]\n"
    "                          tune's candidate programs into the binary cache, a share per\n"
    "                          process\n"
    "  show [--db PATH] [--device ...] [--json | --c-table ARCH]   the tuned winners\n"
    "  builtin INPUT [--out FILE]   src/builtin_table.h from a folder of exports (docs/tuned),\n"
    "                          a .json export or a .db\n"
    "  bench [--device ...] [--db PATH] [--ops ...] [--dtypes ...] [--cols ...]\n"
    "      [--rows ...] [--json]\n"
    "                          tuned choice vs heuristic vs copy bandwidth, checked, in 5\n"
    "                          rounds with their spread\n"
    "  bench --grid gpu|ROWSxCOLS,... [--device ...] [--db PATH] [--ops ...] [--dtypes ...]\n"
    "      [--json] [--quiet]  every op x dtype x shape of the grid through the dispatcher:\n"
    "                          kernel time, GB/s, ratio to copy, wall time per call, checked\n"
    "  verify [--device ...] [--db PATH] [--ops ...] [--dtypes ...] [--cols ...] [--rows ...]\n"
    "      [--grid gpu|ROWSxCOLS,...] [--json]\n"
    "                          per shape (default: the shapes tuned), the time per call of\n"
    "                          the tuned choice and of the heuristic, interleaved, their\n"
    "                          ratio, and the geometric mean\n"
    "  report --out FILE.svg|FILE.html [--db PATH] [--quiet]\n"
    "                          charts of the database: GB/s against cols per device, op\n"
    "                          and row count,\n"
    "                          tuned vs heuristic per dtype, with the copy bandwidth\n"
    "  doctor [--db PATH]      OpenCL platforms, ICD files, database and binary cache: what\n"
    "                          to check when clnorm is slow or fails\n"
    "  export FILE [--db PATH] all results as JSON (FILE - : standard output)\n"
    "  import FILE [--db PATH] results exported on another machine\n"
    "  strategies [--device ...] [--db PATH] [--ops ...] [--dtypes ...]  replay random and\n"
    "                          anneal search over shapes tuned exhaustively; how close they\n"
    "                          get for how many evaluations\n"
    "\n"
    "OP: layernorm, rmsnorm, add_layernorm, add_rmsnorm, layernorm_bwd, rmsnorm_bwd, or all;\n"
    "dtypes: f32, f16, bf16, or all. Defaults: tune and bench --ops layernorm,rmsnorm\n"
    "--dtypes f32; bench --grid every op and dtype; strategies every op and dtype stored.\n"
    "--grid gpu: 17 shapes from 1x4096 to 16x4194304 (see docs/TUNING.md).\n"
    "The database is --db, else $CLNORM_DB, else $XDG_CACHE_HOME/clnorm/tuning.db\n"
    "(~/.cache/clnorm/tuning.db); the library reads the same path.\n"
    "The default device is the first GPU, else the first device; --device gpu or cpu: the\n"
    "first of that type. tune and bench take every --cols with every --rows (4 shapes for\n"
    "--cols 768,4096 --rows 256,4096). tune without --cols/--rows tunes cols 64..65536 (powers\n"
    "of two and common hidden sizes) for rows 8, 128, 2048, 16384 (one per row class); bench\n"
    "without them runs cols 4096 and 65536 at rows 256. Ctrl-C keeps every result measured so\n"
    "far; the same command resumes. --strategy anneal (default) and random evaluate --fraction\n"
    "(default 0.3) of the candidates of each shape, seeded the 16 fastest under the kernels\n"
    "the shape was tuned with last; --budget bounds the whole run.\n"
    "\n"
    "examples:\n"
    "  normtune devices\n"
    "  normtune tune --budget 60\n"
    "  normtune tune --device 1 --ops layernorm --cols 4096 --rows 4096 --strategy exhaustive\n"
    "  normtune tune --ops add_rmsnorm,rmsnorm_bwd --dtypes f16,bf16 --cols 4096 --rows 2048\n"
    "  normtune show --device gpu\n"
    "  normtune bench --cols 4096,65536 --rows 256\n"
    "  normtune bench --grid gpu --device NVIDIA --json > clnorm.json\n"
    "  normtune verify --device gpu\n"
    "  normtune report --out report.svg\n"
    "  normtune doctor\n"
    "\n"
    "Options a command does not take, and numbers that are negative, too large or followed by\n"
    "anything, are bad usage.\n"
    "\n"
    "exit status: 0 success, 1 failure (message on stderr), 2 bad usage, 3 nothing to report\n"
    "(report) or a warning (doctor), 4 no OpenCL platform or device (doctor), 5 the database\n"
    "cannot be read (doctor), 6 the database cannot be written (tune: disk full, I/O error,\n"
    "the file replaced or overwritten), 130 interrupted (tune)\n";

#define HELP_DB                                                                                    \
  "  --db PATH             the tuning database (default: $CLNORM_DB, else\n"                       \
  "                        $XDG_CACHE_HOME/clnorm/tuning.db, else ~/.cache/clnorm/tuning.db)\n"
#define HELP_DEVICE                                                                                \
  "  --device D            an index of `normtune devices`; gpu or cpu: the first device of\n"      \
  "                        that type; else a case-insensitive part of the device or platform\n"    \
  "                        name (default: the first GPU, else device 0)\n"
#define HELP_OPS_DTYPES                                                                            \
  "  --ops OP,...          layernorm, rmsnorm, add_layernorm, add_rmsnorm, layernorm_bwd,\n"       \
  "                        rmsnorm_bwd, or all\n"                                                  \
  "  --dtypes D,...        f32, f16, bf16, or all\n"
#define HELP_EXIT_COMMON                                                                           \
  "exit status: 0 success, 1 failure (the message says what to do), 2 bad usage\n"

typedef struct command_help {
  const char *name, *text;
} command_help;

static const command_help helps[] = {
    {"devices",
     "usage: normtune devices\n"
     "\n"
     "Lists every OpenCL device of every platform with the index --device takes, its type,\n"
     "compute units and OpenCL version.\n"
     "\n"
     "examples:\n"
     "  normtune devices\n"
     "  normtune tune --device 1        # then tune the second device listed\n"
     "\n"
     "exit status: 0 success, 1 no OpenCL platform or device (see normtune doctor)\n"},
    {"tune",
     "usage: normtune tune [--device D] [--db PATH] [--ops OP,...] [--dtypes D,...]\n"
     "                     [--cols N,N,...] [--rows N,N,...] [--budget SECONDS]\n"
     "                     [--strategy exhaustive|random|anneal|seeded] [--fraction F]\n"
     "                     [--seed N] [--quiet]\n"
     "\n"
     "Searches the kernel variants of each shape (op x dtype x cols x rows: every value of\n"
     "each list with every value of the others), verifies each candidate against a float64\n"
     "reference, times it, and stores every result in the database, one transaction each;\n"
     "then times the three fastest and the heuristic's choice again, in turn, and keeps each\n"
     "one's median (a confirmation round against noise). Also stores the device's copy\n"
     "bandwidth and what the heuristic (the untuned choice) gives on each shape, for\n"
     "`normtune report`.\n"
     "\n" HELP_DEVICE HELP_DB HELP_OPS_DTYPES
     "                        (default: --ops layernorm,rmsnorm --dtypes f32)\n"
     "  --cols N,...          row lengths (default: 64..65536, powers of two and common sizes)\n"
     "  --rows N,...          row counts (default: 8, 128, 2048, 16384: one per row class)\n"
     "  --budget SECONDS      stop after this long; the time is shared by the shapes left\n"
     "                        (a run whose budget ends before it measured anything says so)\n"
     "  --strategy S          exhaustive (every candidate), random, anneal (default), or\n"
     "                        seeded: after an edit of the kernels, the 16 fastest variants\n"
     "                        of each shape under the kernels it was tuned with last, then\n"
     "                        the A/B against the heuristic (a shape with none: anneal)\n"
     "  --fraction F          random and anneal (and seeded's shapes with none): share of\n"
     "                        the candidates (default 0.3)\n"
     "  --seed N              the same: the seed, 0 or more (default 1)\n"
     "  --quiet               no progress lines\n"
     "\n"
     "Ctrl-C keeps every result measured so far; the same command resumes.\n"
     "\n"
     "examples:\n"
     "  normtune tune --budget 600\n"
     "  normtune tune --device H100 --cols 4096,8192 --rows 16384\n"
     "  normtune tune --ops all --dtypes all --cols 4096 --budget 1800\n"
     "  normtune tune --ops layernorm --cols 4096 --rows 4096 --strategy exhaustive\n"
     "  normtune tune --ops all --dtypes all --strategy seeded   # after a kernel edit\n"
     "\n"
     "exit status: 0 success, 1 failure (the message says what to do), 2 bad usage,\n"
     "6 the database cannot be written (disk full, I/O error, the file replaced or\n"
     "overwritten; the same command resumes from what it holds), 130 interrupted (results\n"
     "kept; run the same command to resume)\n"},
    {"build",
     "usage: normtune build [--device D] [--ops OP,...] [--dtypes D,...] [--cols N,N,...]\n"
     "                      [--part I/N] [--quiet]\n"
     "\n"
     "Builds the candidate programs tune would search for these ops, dtypes and cols (tune's\n"
     "defaults) into the program binary cache, on every core, and says how many were\n"
     "compiled, loaded from the cache, refused by the device or failed. With --part I/N only\n"
     "the I-th of N shares of each op and dtype's variants: N processes at once, one per part,\n"
     "where a driver compiles one program at a time per process (NVIDIA's, docs/DEVICES.md).\n"
     "tune then loads them from the cache when CLNORM_NO_BINARY_CACHE=0 (tune otherwise keeps\n"
     "its candidates out of it). Rows do not change a program: no --rows.\n"
     "\n" HELP_DEVICE HELP_OPS_DTYPES
     "                        (default: --ops layernorm,rmsnorm --dtypes f32)\n"
     "  --cols N,...          row lengths (default: tune's)\n"
     "  --part I/N            the I-th of N shares (default 1/1: every variant)\n"
     "  --quiet               no line before the build\n"
     "\n"
     "examples:\n"
     "  normtune build --device NVIDIA --ops layernorm --dtypes bf16\n"
     "  for i in 1 2 3 4 5 6 7 8; do normtune build --device NVIDIA --ops layernorm \\\n"
     "      --dtypes bf16 --part $i/8 & done; wait\n"
     "  CLNORM_NO_BINARY_CACHE=0 normtune tune --device NVIDIA --ops layernorm --dtypes bf16\n"
     "\n"
     "exit status: 0 every program built or refused by the device, 1 a build failed or a\n"
     "failure (the binary cache off, no device), 2 bad usage, 130 interrupted (what was built\n"
     "is kept)\n"},
    {"show",
     "usage: normtune show [--db PATH] [--device D] [--json | --c-table ARCH]\n"
     "\n"
     "Prints the tuned winner of each shape (current kernels only): op, dtype, cols, row class\n"
     "(the row counts it covers: 1-16, 17-256, 257-4096, 4097+), the rows it was tuned at,\n"
     "median time, GB/s and variant. With --device, only that device, and how many of its\n"
     "results are stale.\n"
     "\n" HELP_DB HELP_DEVICE "  --json                one JSON array\n"
     "  --c-table ARCH        lines for src/builtin_table.h (the winners shipped in the\n"
     "                        library) of this device and architecture (needs --device;\n"
     "                        normtune builtin writes the whole file)\n"
     "\n"
     "examples:\n"
     "  normtune show\n"
     "  normtune show --device gpu --json > winners.json\n"
     "  normtune show --device H100 --c-table sm_90\n"
     "\n" HELP_EXIT_COMMON},
    {"bench",
     "usage: normtune bench [--device D] [--db PATH] [--ops ...] [--dtypes ...]\n"
     "                      [--cols N,...] [--rows N,...] [--json]\n"
     "       normtune bench --grid gpu|ROWSxCOLS,... [--device D] [--db PATH] [--ops ...]\n"
     "                      [--dtypes ...] [--json] [--quiet]\n"
     "\n"
     "Without --grid: per shape (op x dtype x cols x rows, every value with every other), the\n"
     "GB/s of the dispatcher's choice (tuned when the database has it) and of the heuristic,\n"
     "each as a share of the copy bandwidth, both checked against the reference: the median of\n"
     "5 rounds, the two in alternation, with the spread of the rounds (+-, half their range in %\n"
     "of the median). When the choice is the heuristic's own variant it is timed once and\n"
     "the line says so. With --grid: every op x dtype x shape through the dispatcher: kernel\n"
     "time, GB/s, ratio to copy, wall time per call, checked. Both --json forms name the same\n"
     "things alike (us, gbps, ratio, variant, why, max_err, check, reason).\n"
     "\n" HELP_DEVICE HELP_DB HELP_OPS_DTYPES
     "  --cols N,...          row lengths (default: 4096,65536)\n"
     "  --rows N,...          row counts (default: 256)\n"
     "  --grid gpu|RxC,...    17 transformer shapes (gpu), or a list such as 64x1024,8x4096\n"
     "  --json                one JSON object per line\n"
     "  --quiet               --grid: no progress lines on stderr\n"
     "\n"
     "examples:\n"
     "  normtune bench --cols 4096,65536 --rows 256\n"
     "  normtune bench --grid gpu --device NVIDIA --json > clnorm.json\n"
     "  normtune bench --grid 64x1024,8x4096 --ops rmsnorm --dtypes bf16\n"
     "\n"
     "exit status: 0 every check passed, 1 a check failed or a failure, 2 bad usage\n"},
    {"verify",
     "usage: normtune verify [--device D] [--db PATH] [--ops ...] [--dtypes ...]\n"
     "                       [--cols N,... --rows N,... | --grid gpu|ROWSxCOLS,...] [--json]\n"
     "\n"
     "Does the tuning database make calls faster? Per shape, the time per call of the\n"
     "dispatcher's choice with the database (the library's chain: tuned, nearest, built-in,\n"
     "heuristic) and of the heuristic's variant, both checked against the reference, then\n"
     "timed in 6 rounds in turn (choice, heuristic, choice, ...), each round a median of\n"
     "back-to-back calls from the first kernel's start to the last one's end; the speed-up is\n"
     "the heuristic's median over the choice's (above 1: tuning helps), +- half the range of\n"
     "the rounds' ratios. The last line gives the geometric mean and the worst speed-up.\n"
     "Without shape options, every shape this device has a winner for, at the rows it was\n"
     "tuned (filtered by --ops and --dtypes); --cols and --rows take every value with every\n"
     "other (defaults as bench); --grid as bench --grid.\n"
     "\n" HELP_DEVICE HELP_DB HELP_OPS_DTYPES "  --cols N,...          row lengths\n"
     "  --rows N,...          row counts\n"
     "  --grid gpu|RxC,...    17 transformer shapes (gpu), or a list such as 64x1024,8x4096\n"
     "  --json                one JSON object per line: a header, one per shape, a summary\n"
     "\n"
     "examples:\n"
     "  normtune verify --device NVIDIA\n"
     "  normtune verify --ops all --dtypes f32,bf16 --cols 1024,4096 --rows 1024,4096 --json\n"
     "  normtune verify --grid 64x1024,8x4096 --db results/h100.db\n"
     "\n"
     "exit status: 0 every check passed, 1 a check failed or a failure, 2 bad usage,\n"
     "130 interrupted\n"},
    {"report",
     "usage: normtune report --out FILE.svg|FILE.html|- [--db PATH] [--quiet]\n"
     "\n"
     "Draws the database as charts: one panel per device, op and row count (a line never\n"
     "joins two row counts), GB/s against cols on a log scale, one line per dtype for the\n"
     "tuned winner (solid, dots) and the heuristic's variant (dashed, squares), and the\n"
     "device's copy bandwidth (dotted). Only measured figures are drawn: a database tuned\n"
     "before clnorm stored the heuristic and the copy bandwidth shows the winners alone (tune\n"
     "again to add them). FILE.html holds the SVG in a minimal page; - writes the SVG to\n"
     "standard output. Hovering a point shows its variant and time. The database is not\n"
     "changed.\n"
     "\n" HELP_DB "  --out FILE            the file to write (.svg, .html or .htm, or -)\n"
     "  --quiet               no summary line on stderr\n"
     "\n"
     "examples:\n"
     "  normtune report --out report.svg\n"
     "  normtune tune --dtypes all --cols 64,256,1024,4096,16384 --rows 1024 --budget 600 &&\n"
     "    normtune report --out report.html\n"
     "  normtune report --db results/h100.db --out h100.svg\n"
     "\n"
     "exit status: 0 written, 1 failure (database missing or unreadable, file not writable),\n"
     "2 bad usage, 3 the database holds no tuned result of this clnorm's kernels\n"},
    {"doctor",
     "usage: normtune doctor [--db PATH]\n"
     "\n"
     "Prints what to check when clnorm is slow or fails: the ICD files the OpenCL loader reads\n"
     "(OCL_ICD_VENDORS, else /etc/OpenCL/vendors/*.icd) and the libraries they name; every\n"
     "platform and device with its versions; the tuning database (path, whether it exists and\n"
     "can be read and written, results per device, stale results: driver or kernels changed);\n"
     "the read-only system database (CLNORM_SYSTEM_DB, else the installation's\n"
     "share/clnorm/tuning.db: its path, whether it is there, its results, whether the library\n"
     "skips it as damaged); the program-binary cache's directory and size. Each warning and\n"
     "problem has a line saying what to do.\n"
     "\n" HELP_DB "\n"
     "examples:\n"
     "  normtune doctor\n"
     "  CLNORM_DB=/srv/clnorm/tuning.db normtune doctor\n"
     "\n"
     "exit status (the most serious finding):\n"
     "  0  all fine\n"
     "  3  a warning: clnorm runs untuned or partly (no database, no results for a device\n"
     "     here, stale results, a database normtune tune cannot write)\n"
     "  4  no OpenCL platform or device: clnorm cannot run\n"
     "  5  the database cannot be read (permissions, corrupt, not a clnorm database, newer\n"
     "     schema): the library ignores it and runs untuned\n"
     "  2  bad usage\n"},
    {"export",
     "usage: normtune export FILE|- [--db PATH] [--winners]\n"
     "\n"
     "Writes every device's results as JSON (format clnorm-tuning, see docs/TUNING.md) to FILE,\n"
     "or to standard output with -.\n"
     "\n" HELP_DB
     "  --winners             only each shape's winner (the row `show` lists) and the\n"
     "                        A/B results: what `normtune builtin` takes from a run, in a\n"
     "                        file small enough to commit (docs/tuned/)\n"
     "\n"
     "examples:\n"
     "  normtune export results.json\n"
     "  normtune export docs/tuned/h100-sxm-2026-11-26.json --winners --db h100.db\n"
     "  normtune export - | gzip > results.json.gz\n"
     "\n" HELP_EXIT_COMMON},
    {"import",
     "usage: normtune import FILE|- [--db PATH]\n"
     "\n"
     "Merges results exported on another machine: each field is checked and any error rejects\n"
     "the whole file; a result replaces a stored one only when it was measured later.\n"
     "\n" HELP_DB "\n"
     "examples:\n"
     "  normtune import results.json\n"
     "  gunzip -c results.json.gz | normtune import - --db /srv/clnorm/tuning.db\n"
     "\n" HELP_EXIT_COMMON},
    {"builtin",
     "usage: normtune builtin DIR|FILE.json|FILE.db [--out FILE]\n"
     "\n"
     "Writes the built-in table (src/builtin_table.h) from the winners of this build's kernels\n"
     "in every .json export and .db of DIR (or in one file), sorted, with a comment naming\n"
     "the input. Entries are keyed by vendor id, device name and driver family; DIR's\n"
     "devices.tsv (DEVICE NAME<TAB>ARCH[<TAB>default] a line) gives each device its\n"
     "architecture, whose other models fall back to its entries, and marks the devices whose\n"
     "entries are also their vendor's defaults. See docs/tuned/README.md.\n"
     "\n"
     "  --out FILE            where to write (default: standard output)\n"
     "\n"
     "examples:\n"
     "  normtune builtin docs/tuned --out src/builtin_table.h\n"
     "  normtune builtin results.json\n"
     "\n" HELP_EXIT_COMMON},
    {"strategies",
     "usage: normtune strategies [--device D] [--db PATH] [--ops ...] [--dtypes ...]\n"
     "\n"
     "Replays random and anneal search, 100 seeds each, over the shapes of this device tuned\n"
     "with --strategy exhaustive, using the stored times: how close each gets to the optimum\n"
     "for how many evaluations. Runs no kernel.\n"
     "\n" HELP_DEVICE HELP_DB HELP_OPS_DTYPES "\n"
     "examples:\n"
     "  normtune tune --ops layernorm --cols 4096 --rows 4096 --strategy exhaustive\n"
     "  normtune strategies --ops layernorm\n"
     "\n" HELP_EXIT_COMMON},
    {"help", "usage: normtune help [COMMAND]\n"
             "\n"
             "Without COMMAND, the list of commands; with one, its options and examples.\n"
             "\n"
             "examples:\n"
             "  normtune help tune\n"
             "  normtune report --help\n"
             "\n"
             "exit status: 0, or 2 for an unknown command\n"},
};

const command_help *find_help(const char *cmd) {
  for (size_t i = 0; i < sizeof helps / sizeof helps[0]; i++)
    if (strcmp(helps[i].name, cmd) == 0)
      return &helps[i];
  return NULL;
}

const char *command_names(void) {
  static char names[256];
  if (!names[0])
    for (size_t i = 0; i < sizeof helps / sizeof helps[0]; i++)
      snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? ", " : "",
               helps[i].name);
  return names;
}

int print_help(const char *cmd) {
  if (!cmd) {
    fputs(usage, stdout);
    return 0;
  }
  const command_help *h = find_help(cmd);
  if (!h)
    die(EXIT_USAGE, "unknown command \"%s\" (commands: %s; see normtune --help)", cmd,
        command_names());
  fputs(h->text, stdout);
  return 0;
}
