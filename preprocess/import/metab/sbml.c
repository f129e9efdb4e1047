/* SBML models (Level 3 with the FBC package, as yeast-GEM publishes
 * model/yeast-GEM.xml) into the in-memory metabolism (metab.h), through
 * libsbml's C API.
 *
 *   metabolites  the <species> of the model, in order (their ids);
 *   reactions    the <reaction>s in order; reactants enter the RMR with
 *                their stoichiometry negated, products as written;
 *   rules        fbc:geneProductAssociation (fbc:and, fbc:or,
 *                fbc:geneProductRef) written out as rule text and compiled
 *                like a yeast-GEM gene_reaction_rule; a geneProductRef names
 *                an fbc:geneProduct whose fbc:label is the gene name (its id
 *                where it has no label).
 *
 * Ids lose the prefixes COBRApy's SBML writer adds and its reader removes:
 * "R_" of reaction ids, "M_" of species ids, "G_" of gene names, so that a
 * model written by COBRApy reads as the YAML it came from.
 *
 * The file goes through the line source (source.h), so gzip and zstd files
 * are read as downloaded; libsbml parses the decompressed text from memory.
 *
 * Before libsbml sees the text, libxml2's reader checks the shape of every
 * fbc:geneProductAssociation: notes and annotation, then one association
 * (fbc:and, fbc:or, fbc:geneProductRef), then nothing. libsbml 5.19 crashes
 * (a NULL dereference in GeneProductAssociation::createObject) on any element
 * after the association, so such a file is refused here, naming the line.
 * libsbml also recurses once per nested element (FbcOr -> loadPlugins) and
 * overflows the stack some 12,000 levels down, so elements nested deeper
 * than SBML_MAX_DEPTH are refused here too, before libsbml reads the text
 * (and below libxml2's own limit of 256, which would leave the text to
 * libsbml as not well-formed).
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libxml/xmlreader.h>
#include <sbml/SBMLTypes.h>
#include <sbml/packages/fbc/common/FbcExtensionTypes.h>

#include "metab.h"
#include "preprocess/import/source/source.h"
#include "src/core/error.h"
#include "src/core/vec.h"

enum { SBML_MAX_DEPTH = 128 };

typedef struct sb {
    const char *path;
    pl_metab *m;
    pl_strtab gp;        /* gene product ids */
    char **gp_name;      /* [gp.n] gene name of each */
    char *id;            /* an id decoded (cobra_id()) */
    uint64_t id_cap;
    char *rule;          /* rule text being written */
    uint64_t len, cap;
    pl_err *err;
} sb;

static int fail_at(sb *s, const SBase_t *b, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail_at(sb *s, const SBase_t *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = pl__metab_vfail(s->err, s->path, SBase_getLine(b), SBase_getColumn(b), fmt, ap);
    va_end(ap);
    return rc;
}

/* `id` as COBRApy reads it: without `prefix` (when something follows it),
 * each "__NN__" (an ASCII code COBRApy's writer put in place of a character
 * SBML ids cannot hold, "__45__" for '-') decoded. Into s->id (valid until
 * the next call), or NULL when out of memory. */
static const char *cobra_id(sb *s, const char *id, const char *prefix)
{
    if (!id)
        return "";
    size_t n = strlen(prefix), len = strlen(id);
    if (!strncmp(id, prefix, n) && id[n])
        id += n, len -= n;
    if (pl__grow(&s->id, &s->id_cap, len + 1, 1) < 0)
        return NULL;
    size_t o = 0;
    for (size_t i = 0; i < len;) {
        unsigned code = 0;
        size_t j = i + 2;
        while (j < len && j < i + 5 && id[j] >= '0' && id[j] <= '9')
            code = code * 10 + (unsigned)(id[j++] - '0');
        if (id[i] == '_' && i + 1 < len && id[i + 1] == '_' && j > i + 2 && j + 1 < len &&
            id[j] == '_' && id[j + 1] == '_' && code >= 32 && code < 127) {
            s->id[o++] = (char)code;
            i = j + 2;
        } else {
            s->id[o++] = id[i++];
        }
    }
    s->id[o] = 0;
    return s->id;
}

static int put(sb *s, const char *t, size_t n)
{
    if (pl__grow(&s->rule, &s->cap, s->len + n + 1, 1) < 0)
        return pl__err(s->err, -ENOMEM, "%s: out of memory", s->path);
    memcpy(s->rule + s->len, t, n);
    s->len += n;
    s->rule[s->len] = 0;
    return 0;
}

/* The gene name of a geneProductRef. */
static int gene_name(sb *s, const char *rxn, GeneProductRef_t *ref, const char **out)
{
    const char *id = GeneProductRef_getGeneProduct(ref);
    if (!id || !*id)
        return fail_at(s, (const SBase_t *)ref, "reaction '%s': a geneProductRef without "
                       "fbc:geneProduct", rxn);
    int64_t g = pl__strtab_find(&s->gp, id, strlen(id));
    if (g < 0)
        return fail_at(s, (const SBase_t *)ref, "reaction '%s': gene product '%s' is not in "
                       "the model's fbc:listOfGeneProducts", rxn, id);
    *out = s->gp_name[g];
    return 0;
}

/* The model's gene products: id -> gene name. */
static int gene_products(sb *s, Model_t *mo)
{
    SBasePlugin_t *fbc = SBase_getPlugin((SBase_t *)mo, "fbc");
    unsigned n = fbc ? FbcModelPlugin_getNumGeneProducts(fbc) : 0;
    s->m->n_model_genes = n;
    s->gp_name = calloc(n ? n : 1, sizeof *s->gp_name);
    PL_FAIL_IF(!s->gp_name || pl__strtab_init(&s->gp) < 0, s->err, -ENOMEM,
               "%s: out of memory", s->path);
    for (unsigned i = 0; i < n; i++) {
        GeneProduct_t *gp = FbcModelPlugin_getGeneProduct(fbc, i);
        const SBase_t *b = (const SBase_t *)gp;
        const char *id = GeneProduct_getId(gp);
        if (!id || !*id)
            return fail_at(s, b, "a gene product without fbc:id");
        const char *name = GeneProduct_isSetLabel(gp) ? GeneProduct_getLabel(gp) : NULL;
        name = cobra_id(s, name && *name ? name : id, "G_");
        PL_FAIL_IF(!name, s->err, -ENOMEM, "%s: out of memory", s->path);
        for (const char *c = name; *c; c++)
            if (*c == ' ' || *c == '\t' || *c == '\n' || *c == '(' || *c == ')')
                return fail_at(s, b, "gene product '%s': its name '%s' holds a blank or a "
                               "parenthesis", id, name);
        int added;
        int64_t k = pl__strtab_intern(&s->gp, id, strlen(id), &added);
        PL_FAIL_IF(k < 0, s->err, -ENOMEM, "%s: out of memory", s->path);
        if (!added)
            return fail_at(s, b, "gene product '%s' given twice", id);
        s->gp_name[k] = strdup(name);
        PL_FAIL_IF(!s->gp_name[k], s->err, -ENOMEM, "%s: out of memory", s->path);
    }
    return 0;
}

/* Write association `a` as rule text. */
static int write_assoc(sb *s, const char *rxn, FbcAssociation_t *a, int depth)
{
    const SBase_t *b = (const SBase_t *)a;
    if (depth > PL__RULE_MAX_NEST)
        return fail_at(s, b, "reaction '%s': gene associations nest too deep", rxn);
    int code = SBase_getTypeCode(b);
    if (code == SBML_FBC_GENEPRODUCTREF) {
        const char *g = NULL;
        PL_TRY(gene_name(s, rxn, (GeneProductRef_t *)a, &g));
        return put(s, g, strlen(g));
    }
    if (code != SBML_FBC_AND && code != SBML_FBC_OR)
        return fail_at(s, b, "reaction '%s': unknown gene association element", rxn);
    int and = code == SBML_FBC_AND;
    unsigned n = and ? FbcAnd_getNumAssociations((FbcAnd_t *)a)
                     : FbcOr_getNumAssociations((FbcOr_t *)a);
    if (n == 0)
        return fail_at(s, b, "reaction '%s': an empty fbc:%s", rxn, and ? "and" : "or");
    PL_TRY(put(s, "(", 1));
    for (unsigned i = 0; i < n; i++) {
        if (i)
            PL_TRY(put(s, and ? " and " : " or ", and ? 5 : 4));
        FbcAssociation_t *c = and ? FbcAnd_getAssociation((FbcAnd_t *)a, i)
                                  : FbcOr_getAssociation((FbcOr_t *)a, i);
        PL_TRY(write_assoc(s, rxn, c, depth + 1));
    }
    return put(s, ")", 1);
}

static int refs(sb *s, Reaction_t *rx, int64_t r, const char *rxn, int products)
{
    unsigned n = products ? Reaction_getNumProducts(rx) : Reaction_getNumReactants(rx);
    for (unsigned i = 0; i < n; i++) {
        SpeciesReference_t *sr = products ? Reaction_getProduct(rx, i)
                                          : Reaction_getReactant(rx, i);
        const SBase_t *b = (const SBase_t *)sr;
        const char *sp = cobra_id(s, SpeciesReference_getSpecies(sr), "M_");
        PL_FAIL_IF(!sp, s->err, -ENOMEM, "%s: out of memory", s->path);
        if (!sp || !*sp)
            return fail_at(s, b, "reaction '%s': a speciesReference without species", rxn);
        double v = SpeciesReference_getStoichiometry(sr);
        if (!SpeciesReference_isSetStoichiometry(sr) || !isfinite(v) || fabs(v) > 3.4e38)
            return fail_at(s, b, "reaction '%s': species '%s' without a finite "
                           "stoichiometry", rxn, sp);
        PL_TRY(pl__metab_rmr(s->m, s->path, SBase_getLine(b), SBase_getColumn(b), r, sp,
                             strlen(sp), products ? v : -v, s->err));
    }
    return 0;
}

static int reaction(sb *s, Reaction_t *rx)
{
    const SBase_t *b = (const SBase_t *)rx;
    const char *id = cobra_id(s, Reaction_getId(rx), "R_");
    PL_FAIL_IF(!id, s->err, -ENOMEM, "%s: out of memory", s->path);
    if (!*id)
        return fail_at(s, b, "a reaction without 'id'");
    int64_t r;
    PL_TRY(pl__metab_reaction(s->m, s->path, SBase_getLine(b), SBase_getColumn(b), id,
                              strlen(id), &r, s->err));
    id = s->m->reactions.names[r]; /* s->id is reused below */
    PL_TRY(refs(s, rx, r, id, 0));
    PL_TRY(refs(s, rx, r, id, 1));
    FbcSBasePlugin_t *fr = (FbcSBasePlugin_t *)SBase_getPlugin((SBase_t *)rx, "fbc");
    if (!fr || !FbcReactionPlugin_isSetGeneProductAssociation(fr))
        return 0;
    GeneProductAssociation_t *ga = FbcReactionPlugin_getGeneProductAssociation(fr);
    FbcAssociation_t *a = GeneProductAssociation_getAssociation(ga);
    if (!a)
        return 0;
    s->len = 0;
    PL_TRY(write_assoc(s, id, a, 0));
    const SBase_t *gb = (const SBase_t *)ga;
    return pl__metab_rule(s->m, r, s->path, SBase_getLine(gb), 0, s->rule, s->len, s->err);
}

static int model(sb *s, SBMLDocument_t *doc)
{
    unsigned ne = SBMLDocument_getNumErrors(doc);
    for (unsigned i = 0; i < ne; i++) {
        const XMLError_t *e = (const XMLError_t *)SBMLDocument_getError(doc, i);
        if (XMLError_isError(e) || XMLError_isFatal(e))
            return pl__err(s->err, PL_EPARSE, "%s:%u:%u: not a readable SBML model: %s",
                           s->path, XMLError_getLine(e), XMLError_getColumn(e),
                           XMLError_getShortMessage(e));
    }
    Model_t *mo = SBMLDocument_getModel(doc);
    if (!mo)
        return pl__err(s->err, PL_EPARSE, "%s:1:1: not an SBML model: no <model>", s->path);
    PL_TRY(gene_products(s, mo));
    for (unsigned i = 0; i < Model_getNumSpecies(mo); i++) {
        Species_t *sp = Model_getSpecies(mo, i);
        const char *id = cobra_id(s, Species_getId(sp), "M_");
        PL_FAIL_IF(!id, s->err, -ENOMEM, "%s: out of memory", s->path);
        const SBase_t *b = (const SBase_t *)sp;
        PL_TRY(pl__metab_list_met(s->m, s->path, SBase_getLine(b), SBase_getColumn(b),
                                  id ? id : "", id ? strlen(id) : 0, s->err));
    }
    for (unsigned i = 0; i < Model_getNumReactions(mo); i++)
        PL_TRY(reaction(s, Model_getReaction(mo, i)));
    return pl__metab_done(s->m, s->path, s->err);
}

/* The element children of each fbc:geneProductAssociation: notes and
 * annotation, then one association, then nothing (see the top). A text
 * that is not well-formed XML is left to libsbml, which stops at the same
 * place and reports it. @return 0 or PL_EPARSE. */
static int gpa_shape(const char *path, const char *text, size_t len, pl_err *err)
{
    xmlTextReaderPtr r = xmlReaderForMemory(text, (int)len, path, NULL,
                                            XML_PARSE_NONET | XML_PARSE_NOERROR |
                                                XML_PARSE_NOWARNING);
    PL_FAIL_IF(!r, err, -ENOMEM, "%s: out of memory", path);
    int gpa_depth = -1, assoc = 0, rc = 0, more;
    while (rc == 0 && (more = xmlTextReaderRead(r)) == 1) {
        if (xmlTextReaderNodeType(r) != XML_READER_TYPE_ELEMENT)
            continue;
        int depth = xmlTextReaderDepth(r);
        const char *name = (const char *)xmlTextReaderConstLocalName(r);
        if (depth >= SBML_MAX_DEPTH) {
            rc = pl__err(err, PL_EPARSE, "%s:%ld: XML elements nested deeper than %d (a gene "
                         "association nested too deep?)", path,
                         xmlGetLineNo(xmlTextReaderCurrentNode(r)), SBML_MAX_DEPTH);
            break;
        }
        if (gpa_depth >= 0 && depth <= gpa_depth)
            gpa_depth = -1;
        if (gpa_depth < 0) {
            if (name && !strcmp(name, "geneProductAssociation") &&
                !xmlTextReaderIsEmptyElement(r)) {
                gpa_depth = depth;
                assoc = 0;
            }
            continue;
        }
        if (depth != gpa_depth + 1)
            continue;
        int is_assoc = name && (!strcmp(name, "and") || !strcmp(name, "or") ||
                                !strcmp(name, "geneProductRef"));
        if (assoc || (!is_assoc && name && strcmp(name, "notes") && strcmp(name, "annotation")))
            rc = pl__err(err, PL_EPARSE, "%s:%ld: <%s> in an fbc:geneProductAssociation %s "
                         "(it holds notes, annotation and one association: fbc:and, fbc:or "
                         "or fbc:geneProductRef)", path,
                         xmlGetLineNo(xmlTextReaderCurrentNode(r)), name ? name : "?",
                         assoc ? "after its association" : "is not an association");
        assoc |= is_assoc;
    }
    xmlFreeTextReader(r);
    return rc;
}

int pl__metab_read_sbml(pl_metab *m, const char *path, pl_err *err)
{
    char *text;
    size_t len;
    PL_TRY(pl__src_text(path, &text, &len, err));
    int rc0 = gpa_shape(path, text, len, err);
    if (rc0 < 0) {
        free(text);
        return rc0;
    }
    SBMLDocument_t *doc = readSBMLFromString(text);
    free(text);
    PL_FAIL_IF(!doc, err, -ENOMEM, "%s: out of memory", path);
    sb s = {.path = path, .m = m, .err = err};
    int rc = model(&s, doc);
    free(s.rule);
    for (uint32_t i = 0; s.gp_name && i < s.gp.n; i++)
        free(s.gp_name[i]);
    free(s.gp_name);
    free(s.id);
    pl__strtab_free(&s.gp);
    SBMLDocument_free(doc);
    return rc;
}
