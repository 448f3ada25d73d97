/* The subcommands of the wick CLI: one file each. Each returns the process exit
 * status: 0 on success, 1 on an error (printed as "wick: error: ..."), 2 on a usage error. */
#ifndef WICK_TOOLS_COMMANDS_H
#define WICK_TOOLS_COMMANDS_H

int cmd_run(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_bench_matmul(int argc, char **argv);
int cmd_bench_gen(int argc, char **argv);
int cmd_logits(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_inspect(int argc, char **argv);
int cmd_quantize(int argc, char **argv);
int cmd_edges(int argc, char **argv);

/* Print "wick: error: <msg>" to stderr and return 1. */
int cli_error(const char *fmt, ...);
/* Print "wick: <usage message>" to stderr and return 2. */
int cli_usage_error(const char *fmt, ...);
/* The default model path (models/ beside the binary's project, or WICK_MODEL). */
const char *cli_default_model(void);

#endif
