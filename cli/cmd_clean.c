/* pertload clean: list and remove this user's rings whose producer and
 * consumer both died, and DataLoader workers' arenas whose main process and
 * worker both died (ring/reclaim.h). */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "ring/reclaim.h"

static const char *usage = "[--dry-run]";

static void line(void *ctx, const char *name, uint64_t bytes, int removed, const char *dead)
{
    int dry_run = *(int *)ctx;
    char size[32];
    pl_cli_bytes(size, sizeof size, bytes);
    printf("%s /dev/shm/pertload-%s (%s; %s dead)\n",
           dry_run ? "would remove" : removed ? "removed" : "could not remove", name, size, dead);
}

int pl_cmd_clean(int argc, char **argv)
{
    int dry_run = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: pertload clean %s\n\n"
                   "Removes this user's rings under /dev/shm whose serve process and consumer\n"
                   "both died (killed before they could remove it), and the arenas of DataLoader\n"
                   "workers whose main process and worker both died; `serve` does the same when\n"
                   "it starts. Live ones and other users' segments are never touched.\n\n"
                   "  --dry-run  list them without removing\n", usage);
            return 0;
        }
        if (strcmp(argv[i], "--dry-run"))
            return pl_cli_usage("clean", usage, "unknown argument '%s'", argv[i]);
        dry_run = 1;
    }
    int n = pl__ring_reclaim(dry_run, line, &dry_run);
    if (n < 0) {
        pl_err err = {0};
        return pl_cli_fail("clean", n, &err);
    }
    printf("%d abandoned ring%s or arena%s\n", n, n == 1 ? "" : "s", n == 1 ? "" : "s");
    return 0;
}
