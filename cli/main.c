/* pertload: command-line entry point. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "pl_config.h"

static const struct {
    const char *name;
    int (*run)(int, char **);
    const char *help;
} cmds[] = {
    {"synth", pl_cmd_synth, "generate synthetic input files (yeast or human scale)"},
    {"build", pl_cmd_build, "build a database from input files"},
    {"masks", pl_cmd_masks, "print the masks of one deletion set as JSON"},
    {"inspect", pl_cmd_inspect, "summarise a database"},
    {"verify", pl_cmd_verify, "check every checksum of a database"},
    {"serve", pl_cmd_serve, "stream an epoch of batches into a shared-memory ring"},
    {"top", pl_cmd_top, "live throughput and stall times of running rings"},
    {"clean", pl_cmd_clean, "remove rings whose producer and consumer both died"},
    {"bench", pl_cmd_bench, "measure throughput"},
    {"recipe", pl_cmd_recipe, "check a dataset recipe against its downloaded files"},
};

static void usage(FILE *f)
{
    fprintf(f, "pertload %s: data loader for gene-perturbation graph models\n\n"
               "usage: pertload COMMAND [ARGS]\n\ncommands:\n", PL_VERSION);
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
        fprintf(f, "  %-8s %s\n", cmds[i].name, cmds[i].help);
    fprintf(f, "\n'pertload COMMAND --help' describes a command.\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("pertload %s\n", PL_VERSION);
        return 0;
    }
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
        if (!strcmp(argv[1], cmds[i].name))
            return cmds[i].run(argc - 1, argv + 1);
    fprintf(stderr, "pertload: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
