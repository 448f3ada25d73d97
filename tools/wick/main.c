/* wick: the command-line tool. Dispatches to one file per subcommand. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"

typedef struct {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *summary;
} cli_command;

static const cli_command commands[] = {
    {"run", cmd_run, "generate text from a model"},
    {"bench", cmd_bench, "benchmarks: `bench matmul`, `bench gen`"},
    {"logits", cmd_logits, "write the first-step logits to a file"},
    {"diff", cmd_diff, "compare two logits files"},
    {"inspect", cmd_inspect, "print a GGUF file's metadata and tensors"},
    {"quantize", cmd_quantize, "write a GGUF with every weight matrix in a type"},
    {"edges", cmd_edges, "probe every type x device x input dtype"},
};

int cli_error(const char *fmt, ...)
{
    va_list ap;
    fputs("wick: error: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return 1;
}

int cli_usage_error(const char *fmt, ...)
{
    va_list ap;
    fputs("wick: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputs(" (see --help)\n", stderr);
    return 2;
}

const char *cli_default_model(void)
{
    const char *env = getenv("WICK_MODEL");
    if (env && *env) return env;
    return "models/SmolLM2-135M-Instruct.Q4_1.gguf";
}

static void usage(FILE *f)
{
    fputs("usage: wick COMMAND [options]\n\ncommands:\n", f);
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-9s %s\n", commands[i].name, commands[i].summary);
    fputs("\n`wick COMMAND --help` lists a command's options.\n", f);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        usage(stdout);
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(argv[1], commands[i].name) == 0) return commands[i].fn(argc - 1, argv + 1);
    return cli_usage_error("unknown command '%s'", argv[1]);
}
