/* Subcommands of the pertload CLI; each returns the process exit status
 * (0 success, 1 failure, 2 usage error). */
#ifndef PL_CLI_H
#define PL_CLI_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

#include "pertload.h"

int pl_cmd_synth(int argc, char **argv);
int pl_cmd_build(int argc, char **argv);
int pl_cmd_masks(int argc, char **argv);
int pl_cmd_inspect(int argc, char **argv);
int pl_cmd_verify(int argc, char **argv);
int pl_cmd_bench(int argc, char **argv);
int pl_cmd_top(int argc, char **argv);
int pl_cmd_serve(int argc, char **argv);
int pl_cmd_recipe(int argc, char **argv);
int pl_cmd_clean(int argc, char **argv);

/** Print "pertload CMD: message" for a failed call and return exit status 1. */
int pl_cli_fail(const char *cmd, int rc, const pl_err *err);

/** Print a usage error for CMD and return exit status 2. */
int pl_cli_usage(const char *cmd, const char *usage, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/** Write `s` (`n` bytes) to `f` with its control characters escaped as
 *  pl__ctrl_escape() writes them (tabs kept when `keep_tab`): names from
 *  inputs never drive a terminal. @return 0, or -1 on a write error. */
int pl_cli_put_name(FILE *f, const char *s, size_t n, int keep_tab);

/** `bytes` in binary units for people ("512 B", "3.1 MiB") into `buf`. */
void pl_cli_bytes(char *buf, size_t cap, uint64_t bytes);

/** Parse the value `s` of option `opt` as an unsigned decimal integer: digits
 *  only (no blanks, sign or base prefix), at most UINT64_MAX. On bad input
 *  (NULL: the value is missing) prints "pertload CMD: OPT: ..." and returns
 *  -1. */
int pl_cli_u64(const char *cmd, const char *opt, const char *s, unsigned long long *out);

/** Parse `s` as a number (strtod's syntax without leading blanks, no NaN, no
 *  overflow; "inf" is accepted); returns 0, or -1 without printing. */
int pl_cli_f64(const char *s, double *out);

struct pl_imp_source;
struct pl_unres;

/** Write the unresolved names of source `s` as lines "source name count
 *  file:line" (tab-separated) to `f`. @return 0, or -1 on a write error. */
int pl_cli_write_unresolved(FILE *f, const struct pl_imp_source *s, const struct pl_unres *u);

struct pl_recipe;
struct pl_names;

/** Read the metabolism, the ontology and the sample tables of recipe `r`
 *  (names resolved with `nm`; `strict` as in a build): their counts as report
 *  lines to `out` (may be NULL), their unresolved names appended to `uf` (may
 *  be NULL) as pl_cli_write_unresolved() writes them ("metabolism",
 *  "ontology" and "samples" sources), their unresolved occurrences added to `*unresolved`. Used by
 *  `recipe check` and by `build --recipe --unresolved`.
 *  @return 0 or a negative code (a write error names `unres_path`). */
int pl_cli_recipe_more(const struct pl_recipe *r, const struct pl_names *nm, int strict,
                       FILE *out, FILE *uf, const char *unres_path, uint64_t *unresolved,
                       pl_err *err);

#endif
