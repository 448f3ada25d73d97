/* wick bench: placeholder until its implementation lands. */
#include "commands.h"

int cmd_bench(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    return cli_error("'bench' is not built yet");
}
