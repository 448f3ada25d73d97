/* wick bench: dispatches to `bench matmul` and `bench gen`. */
#include <string.h>

#include <stdio.h>

#include "commands.h"

int cmd_bench(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        if (argc >= 2) {
            fputs("usage: wick bench matmul|gen [options]\n", stdout);
            return 0;
        }
        return cli_usage_error("bench needs a kind: matmul or gen");
    }
    if (strcmp(argv[1], "matmul") == 0) return cmd_bench_matmul(argc - 1, argv + 1);
    if (strcmp(argv[1], "gen") == 0) return cmd_bench_gen(argc - 1, argv + 1);
    return cli_usage_error("unknown benchmark '%s' (expected matmul or gen)", argv[1]);
}
