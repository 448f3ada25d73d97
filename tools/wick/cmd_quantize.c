/* wick quantize: placeholder until its implementation lands. */
#include "commands.h"

int cmd_quantize(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    return cli_error("'quantize' is not built yet");
}
