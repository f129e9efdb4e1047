#include "cli.h"

int pl_cmd_top(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    return 2;
}
