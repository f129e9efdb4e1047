/* The model and sample readers (preprocess/import: metab.h, samples.h) on
 * arbitrary bytes. The first byte picks the reader: yeast-GEM YAML, SBML, a
 * sample table or an SGA table, over a fixed gene list. Every error must
 * name the memory file; a model read must hold indices inside its lists and
 * programs that check; rows must hold known genes. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzzutil.h"
#include "preprocess/import/metab/metab.h"
#include "preprocess/import/samples/samples.h"
#include "src/core/rule.h"

static pl_names *genes(void)
{
    static pl_names *nm;
    if (nm)
        return nm;
    pl_err err;
    static const char list[] = "G1\nG2\nYAL001C\nYAL002W\n";
    char *p = fuzz_write(fuzz_tmpdir(), "genes.txt", list, sizeof list - 1);
    if (pl__names_new(&nm, &err) < 0 || pl__names_load_genes(nm, p, 0, &err) < 0)
        fuzz_fail("gene list: %s", err.msg);
    free(p);
    return nm;
}

static void check_model(const pl_metab *m, uint32_t n_genes)
{
    for (uint64_t i = 0; i < m->n_rmr; i++)
        if (m->rmr_rxn[i] < 0 || (uint32_t)m->rmr_rxn[i] >= m->reactions.n ||
            m->rmr_met[i] < 0 || (uint32_t)m->rmr_met[i] >= m->metabolites.n)
            fuzz_fail("RMR entry %llu outside the lists", (unsigned long long)i);
    for (uint64_t i = 0; i < m->n_gpr; i++)
        if (m->gpr_gene[i] < 0 || (uint32_t)m->gpr_gene[i] >= n_genes ||
            m->gpr_rxn[i] < 0 || (uint32_t)m->gpr_rxn[i] >= m->reactions.n)
            fuzz_fail("GPR pair %llu outside the lists", (unsigned long long)i);
    for (uint64_t i = 0; i < m->rules.n; i++) {
        uint32_t depth, at;
        uint32_t n = (uint32_t)(m->rules.off[i + 1] - m->rules.off[i]);
        if (n && pl__rule_check(m->rules.code + m->rules.off[i], n, n_genes, &depth, &at) < 0)
            fuzz_fail("rule %llu does not check", (unsigned long long)i);
    }
}

static int check_row(void *ctx, const pl_smp_row *r, pl_err *err)
{
    (void)err;
    uint32_t n_genes = *(uint32_t *)ctx;
    if (r->n_genes == 0)
        fuzz_fail("a sample without genes");
    for (uint32_t i = 0; i < r->n_genes; i++)
        if (r->genes[i] < 0 || (uint32_t)r->genes[i] >= n_genes)
            fuzz_fail("a sample gene outside the list");
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    unsigned pick;
    char path[64];
    int fd = fuzz_pick_file(data, size, 4, &pick, path);
    if (fd < 0)
        return 0;
    pl_err err = {0};
    pl_names *nm = genes();
    uint32_t n_genes = pl__names_count(nm);
    int rc;
    if (pick < 2) {
        pl_metab m;
        if (pl__metab_init(&m, nm, data[0] & 4, &err) < 0)
            fuzz_fail("init: %s", err.msg);
        rc = pick == 0 ? pl__metab_read_yeastgem(&m, path, &err)
                       : pl__metab_read_sbml(&m, path, &err);
        if (rc == 0)
            check_model(&m, n_genes);
        pl__metab_free(&m);
    } else {
        pl_smp_spec s;
        pl__smp_spec_init(&s);
        s.file = path;
        if (pick == 3) {
            s.format = PL_SMP_SGA;
        } else {
            s.comment = "#";
            s.categories[s.n_categories++] = "split";
        }
        pl_smp_result r = {0};
        rc = pl__smp_read(&s, nm, data[0] & 4, check_row, &n_genes, &r, &err);
        if (rc == 0 && r.kept + r.dropped != r.rows)
            fuzz_fail("rows %llu != kept %llu + dropped %llu", (unsigned long long)r.rows,
                      (unsigned long long)r.kept, (unsigned long long)r.dropped);
        pl__smp_result_free(&r);
    }
    fuzz_expect_named(rc, -ENOMEM, err.msg, path);
    close(fd);
    return 0;
}
