/* pl_build on arbitrary input files: every reader of a build input (genes,
 * TSV and .npy edge lists, reaction list, GPR, RMR, samples, payload).
 *
 * Input: one flags byte, then up to eight files separated by "\n%%\n":
 *   genes, edges "a" (TSV), edges "b" (TSV, or .npy with FLAG_NPY),
 *   reactions, gpr (or gene-reaction rules with FLAG_RULES), rmr, samples,
 *   payload (.npy).
 * The optional files are given when their flag is set and their section is
 * present. A build that fails must report PL_EPARSE-or-worse with a message
 * and leave nothing behind; one that succeeds must open and verify, with
 * the counts it reported. */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzzutil.h"
#include "pertload.h"
#include "src/core/fileio.h"

enum {
    FLAG_DROP = 1,       /* drop_unknown_genes */
    FLAG_MIN_SCORE = 2,  /* min_score 0.5 on type "a" */
    FLAG_NPY = 4,        /* edges "b" is a .npy */
    FLAG_REACTIONS = 8,
    FLAG_GPR = 16,
    FLAG_RMR = 32,
    FLAG_PAYLOAD = 64,
    FLAG_RULES = 128,    /* the gpr section is a rules file (--rules) */
};

enum { S_GENES, S_A, S_B, S_REACTIONS, S_GPR, S_RMR, S_SAMPLES, S_PAYLOAD, N_SECTIONS };

static const char *const file_names[N_SECTIONS] = {
    "genes.txt", "a.tsv", "b.tsv", "reactions.txt", "gpr.tsv", "rmr.tsv", "samples.tsv",
    "payload.npy"};

/* Whether `dir` holds a temporary build directory ("db.tmp-*"). */
static int has_tmp(const char *dir)
{
    DIR *d = opendir(dir);
    int found = 0;
    for (struct dirent *e; d && !found && (e = readdir(d));)
        found = !strncmp(e->d_name, "db.tmp-", 7);
    if (d)
        closedir(d);
    return found;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    unsigned flags = data[0];
    const char *p = (const char *)data + 1, *end = (const char *)data + size;
    const char *sec[N_SECTIONS] = {0};
    size_t len[N_SECTIONS] = {0};
    int n = 0;
    while (n < N_SECTIONS) {
        const char *sep = memmem(p, (size_t)(end - p), "\n%%\n", 4);
        sec[n] = p;
        len[n] = sep ? (size_t)(sep - p) : (size_t)(end - p);
        n++;
        if (!sep)
            break;
        p = sep + 4;
    }
    if (n <= S_SAMPLES)
        return 0; /* genes, two edge lists, samples at least */

    const char *dir = fuzz_tmpdir();
    char *path[N_SECTIONS] = {0};
    for (int i = 0; i < n; i++) {
        const char *name = file_names[i];
        if (i == S_B && (flags & FLAG_NPY))
            name = "b.npy";
        path[i] = fuzz_write(dir, name, sec[i], len[i]);
    }
    const char *names[2] = {"a", "b"}, *files[2] = {path[S_A], path[S_B]};
    double min_score[2] = {(flags & FLAG_MIN_SCORE) ? 0.5 : NAN, NAN};
    char out[4200];
    snprintf(out, sizeof out, "%s/db", dir);
    pl_build_opts o = {
        .out = out,
        .genes = path[S_GENES],
        .n_types = 2,
        .type_names = names,
        .type_files = files,
        .min_score = min_score,
        .reactions = (flags & FLAG_REACTIONS) ? path[S_REACTIONS] : NULL,
        .gpr = (flags & FLAG_GPR) && !(flags & FLAG_RULES) ? path[S_GPR] : NULL,
        .rules = (flags & FLAG_GPR) && (flags & FLAG_RULES) ? path[S_GPR] : NULL,
        .rmr = (flags & FLAG_RMR) ? path[S_RMR] : NULL,
        .samples = path[S_SAMPLES],
        .payload = (flags & FLAG_PAYLOAD) && n > S_PAYLOAD ? path[S_PAYLOAD] : NULL,
        .drop_unknown_genes = (flags & FLAG_DROP) != 0,
        .progress = 0,
        .params = "fuzz",
    };
    pl_build_stats st;
    pl_err err = {0};
    int rc = pl_build(&o, &st, &err);
    struct stat sb;
    if (rc < 0) {
        if (err.code != rc || !err.msg[0])
            fuzz_fail("build failed (%d) without a message", rc);
        if (stat(out, &sb) == 0 || has_tmp(dir))
            fuzz_fail("a failed build left files behind: %s", err.msg);
    } else {
        pl_db *db;
        if (pl_db_open(out, &db, &err) < 0)
            fuzz_fail("a built database does not open: %s", err.msg);
        const pl_db_info *info = pl_db_info_get(db);
        if (info->n_genes != st.n_genes || info->n_samples != st.n_samples ||
            info->n_edges[0] + info->n_edges[1] != st.n_edges || info->n_gpr != st.n_gpr ||
            info->n_rmr != st.n_rmr || info->n_labels != st.n_labels ||
            info->n_rules != st.n_rules)
            fuzz_fail("the database's counts differ from the build's");
        if (pl_db_verify(db, &err) < 0)
            fuzz_fail("a built database does not verify: %s", err.msg);
        pl_db_close(db);
        pl__rmtree(out);
    }
    for (int i = 0; i < n; i++) {
        unlink(path[i]);
        free(path[i]);
    }
    return 0;
}
