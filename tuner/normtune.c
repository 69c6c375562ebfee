/* normtune: searches the variant space per device and shape, verifies every candidate against
 * the float64 reference, times it, and stores each result in the tuning database. This file: the
 * command table, main, and what every command shares (interruption, fatal errors). */
#define _POSIX_C_SOURCE 200809L
#include "normtune.h"

volatile sig_atomic_t interrupted;

void on_sigint(int sig) {
  (void)sig;
  interrupted = 1;
  signal(SIGINT, SIG_DFL); /* a second Ctrl-C ends at once; every stored result is kept */
}

/* The database tune writes, closed by die(): closing checkpoints into the file SQLite has open
 * and removes its -wal and -shm files, where exit() would leave them behind, and the WAL of a
 * database replaced under tune would then be replayed into the file now at the path. */
clnorm_db *writing_db;

void die(int code, const char *fmt, ...) {
  if (writing_db) {
    clnorm__db_close(writing_db);
    writing_db = NULL;
  }
  va_list args;
  va_start(args, fmt);
  fputs("normtune: ", stderr);
  vfprintf(stderr, fmt, args);
  fputc('\n', stderr);
  va_end(args);
  exit(code);
}

static int cmd_doctor(const options *o) { return doctor_run(o->db, clnorm__kernel_hashes()); }

/* The commands; each file of a command group defines its own (normtune.h). */
static const struct {
  const char *name;
  int (*run)(const options *o);
} commands[] = {{"devices", cmd_devices}, {"tune", cmd_tune},     {"show", cmd_show},
                {"bench", cmd_bench},     {"report", cmd_report}, {"doctor", cmd_doctor},
                {"export", cmd_export},   {"import", cmd_import}, {"strategies", cmd_strategies},
                {"builtin", cmd_builtin}, {"build", cmd_build},   {"verify", cmd_verify}};

int main(int argc, char **argv) {
  if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
    fputs(usage, argc < 2 ? stderr : stdout);
    return argc < 2 ? EXIT_USAGE : 0;
  }
  if (strcmp(argv[1], "--version") == 0) {
    if (argc > 2)
      die(EXIT_USAGE, "--version takes no argument");
    /* the kernel hashes key the database's results (each op's by its family's): they say which
     * results this build uses */
    const clnorm_kernel_hashes hashes = clnorm__kernel_hashes();
    printf("normtune (clnorm) %s\nkernel sources %016llx forward, %016llx backward\n",
           clnorm_version_string(), (unsigned long long)hashes.forward,
           (unsigned long long)hashes.backward);
    return 0;
  }
  if (strcmp(argv[1], "help") == 0) {
    if (argc > 3)
      die(EXIT_USAGE, "help takes one command at most (e.g. normtune help tune)");
    return print_help(argc > 2 ? argv[2] : NULL);
  }
  for (int i = 2; i < argc; i++)
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
      return print_help(argv[1]);
  const char *cmd = argv[1];
  if (!find_help(cmd))
    die(EXIT_USAGE, "unknown command \"%s\" (commands: %s; see normtune --help)", cmd,
        command_names());
  options o;
  parse_options(argc, argv, 2, &o);
  check_command_options(cmd, &o);
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    if (strcmp(cmd, commands[i].name) == 0)
      return commands[i].run(&o);
  die(EXIT_USAGE, "unknown command \"%s\" (see normtune --help)", cmd);
  return EXIT_USAGE;
}
