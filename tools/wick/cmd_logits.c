/* wick logits: placeholder until its implementation lands. */
#include "commands.h"

int cmd_logits(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    return cli_error("'logits' is not built yet");
}
