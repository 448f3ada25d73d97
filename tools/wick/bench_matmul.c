/* wick bench matmul: placeholder until its implementation lands. */
#include "commands.h"

int cmd_bench_matmul(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    return cli_error("'bench matmul' is not built yet");
}
