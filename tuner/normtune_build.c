/* normtune build: the candidate programs of the shapes tune would search, built into the program
 * binary cache ahead of tune, one share of them per process. NVIDIA's OpenCL compiles about 4
 * programs a second however many threads of one process ask (docs/DEVICES.md), and an op and
 * dtype has 1,000-2,500 candidates: several processes, each building its share (--part I/N),
 * may compile side by side where one process's threads cannot. tune then loads them from the
 * cache (with CLNORM_NO_BINARY_CACHE=0, as scripts/tune_gpu.sh runs it). Interrupted (SIGINT,
 * as tune_gpu.sh's time limit sends it), it finishes the programs being compiled, keeps every
 * program stored, and says how many. */
#define _POSIX_C_SOURCE 200809L
#include "normtune.h"

int cmd_build(const options *o) {
  char dir[4096], why[512];
  if (!clnorm__bincache_path(dir, sizeof dir, why, sizeof why))
    die(1, "build fills the program binary cache, which is %s (docs/API.md, \"Files\")", why);
  session s;
  session_open(o, &s);
  if (!s.ctx->bincache_dir)
    die(1, "build fills the program binary cache, which is off for %s (CLNORM_LOG=info says why)",
        s.dev.name);
  selection sel;
  tune_selection(o, &sel);
  const size_t nvar = variant_capacity(s.ctx);
  clnorm_variant *all = malloc((nvar ? nvar : 1) * sizeof *all);
  /* every op, dtype and cols of the selection with every variant of the part: rows do not
   * change a program, so one call per cols */
  const size_t cap = sel.nops * sel.ndtypes * sel.ncols * (nvar ? nvar : 1);
  clnorm_call *calls = malloc(cap * sizeof *calls);
  clnorm_variant *variants = malloc(cap * sizeof *variants);
  clnorm_status *status = malloc(cap * sizeof *status);
  if (!all || !calls || !variants || !status)
    die(1, "out of memory");
  size_t n = 0, nvariants = 0;
  for (size_t a = 0; a < sel.nops; a++)
    for (size_t d = 0; d < sel.ndtypes; d++) {
      const size_t nv = clnorm_variant_list(s.ctx, sel.ops[a], sel.dtypes[d], all, nvar);
      for (size_t i = 0; i < nv && i < nvar; i++) {
        if (i % o->parts != o->part - 1)
          continue;
        size_t used = 0;
        for (size_t c = 0; c < sel.ncols; c++) {
          if (!clnorm__variant_call_ok(&all[i], sel.cols[c], NULL, 0))
            continue;
          clnorm_call *call = &calls[n];
          memset(call, 0, sizeof *call);
          call->op = sel.ops[a];
          call->dtype = sel.dtypes[d];
          call->rows = 1;
          call->cols = sel.cols[c];
          call->eps = 1e-5f;
          variants[n++] = all[i];
          used = 1;
        }
        nvariants += used;
      }
    }
  if (!o->quiet)
    fprintf(stderr, "normtune: building %zu variants of part %u of %u on %s into %s\n", nvariants,
            o->part, o->parts, s.dev.name, s.ctx->bincache_dir);
  const double start = tool_now();
  signal(SIGINT, on_sigint);
  build_all(s.ctx, calls, 1, variants, n, status);
  const clnorm_bincache_stats *st = &s.ctx->bincache;
  const double secs = tool_now() - start;
  int rc = 130;
  if (interrupted) {
    /* the statuses of the calls not reached are unset: only the cache's counts are known */
    printf("normtune: interrupted after %.1f s building %zu variants (part %u of %u): ", secs,
           nvariants, o->part, o->parts);
  } else {
    size_t ok = 0, unsupported = 0, failed = 0;
    for (size_t i = 0; i < n; i++) {
      if (status[i] == CLNORM_OK)
        ok++;
      else if (status[i] == CLNORM_E_UNSUPPORTED)
        unsupported++;
      else
        failed++;
    }
    printf("normtune: built %zu variants (part %u of %u) for %zu calls in %.1f s: %zu ok, %zu "
           "refused by the device, %zu failed; ",
           nvariants, o->part, o->parts, n, secs, ok, unsupported, failed);
    rc = failed ? 1 : 0;
  }
  printf("%lu programs compiled and stored, %lu loaded from the binary cache, %lu could not be "
         "stored%s\n",
         (unsigned long)atomic_load(&st->written), (unsigned long)atomic_load(&st->hits),
         (unsigned long)atomic_load(&st->write_failed),
         interrupted ? "; the same command builds the rest" : "");
  free(status);
  free(variants);
  free(calls);
  free(all);
  session_close(&s);
  return rc;
}
