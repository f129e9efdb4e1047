#include "cli.h"

int pl_cmd_masks(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    return 2;
}
