/* wick bench gen: placeholder until its implementation lands. */
#include "commands.h"

int cmd_bench_gen(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    return cli_error("'bench gen' is not built yet");
}
