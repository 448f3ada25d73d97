/* wick diff: placeholder until its implementation lands. */
#include "commands.h"

int cmd_diff(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    return cli_error("'diff' is not built yet");
}
