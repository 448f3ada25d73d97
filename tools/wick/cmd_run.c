/* wick run: placeholder until its implementation lands. */
#include "commands.h"

int cmd_run(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    return cli_error("'run' is not built yet");
}
