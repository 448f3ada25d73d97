/* wick inspect: placeholder until its implementation lands. */
#include "commands.h"

int cmd_inspect(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    return cli_error("'inspect' is not built yet");
}
