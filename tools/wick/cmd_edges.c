/* wick edges: placeholder until its implementation lands. */
#include "commands.h"

int cmd_edges(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    return cli_error("'edges' is not built yet");
}
