/* The presets of `pertload synth` (see synth_preset.h).
 *
 * yeast: the figures of DESIGN section 1 and of yeast-GEM 9.0.2.
 * human: DESIGN section 23. 20,000 genes; each edge type has the yeast count times
 * 12,000,000 / 2,495,908 (about 4.81), so the types keep their yeast proportions and
 * the whole graph has 12M edges before duplicates; the metabolic layer (reactions,
 * metabolites, genes with reactions) is yeast-GEM's times 20,000 / 6,607 genes, which
 * is about Human-GEM's size (13,000 reactions, 8,400 metabolites, 3,600 genes). The
 * degree shapes follow from the generator (synth.c), the same for both. */
#include "synth_preset.h"

#include <string.h>

#define SMALL_TYPE_EDGES 100000 /* yeast types smaller than this use half the genes */

static const char *const type_names[PL_SYNTH_TYPES] = {
    "physical",
    "regulatory",
    "tflink",
    "string12_0_neighborhood",
    "string12_0_fusion",
    "string12_0_cooccurence",
    "string12_0_coexpression",
    "string12_0_experimental",
    "string12_0_database",
};

static const pl_synth_preset presets[] = {
    {"yeast", 6607, 1000000,
     {144211, 44310, 207250, 153320, 18394, 17692, 1002806, 828701, 79224},
     4131, 2806, 1161},
    {"human", 20000, 2000000,
     {693348, 213037, 996431, 737143, 88436, 85061, 4821360, 3984286, 380899},
     12505, 8494, 3514},
};

const char *pl__synth_type_name(uint32_t t) { return t < PL_SYNTH_TYPES ? type_names[t] : NULL; }

int pl__synth_type_half(uint32_t t)
{
    return t < PL_SYNTH_TYPES && presets[0].edges[t] < SMALL_TYPE_EDGES;
}

const pl_synth_preset *pl__synth_preset(const char *name)
{
    if (!name || !*name)
        return &presets[0];
    for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++)
        if (!strcmp(name, presets[i].name))
            return &presets[i];
    return NULL;
}

const char *pl__synth_preset_names(void) { return "yeast, human"; }
