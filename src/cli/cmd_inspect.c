#include "cli.h"

int pl_cmd_inspect(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    return 2;
}

int pl_cmd_verify(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    return 2;
}
