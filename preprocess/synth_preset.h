/* The presets of `pertload synth` (synth_preset.c): the shape of a synthetic data set,
 * yeast (the default) or human (DESIGN section 23). */
#ifndef PL_PREPROCESS_SYNTH_PRESET_H
#define PL_PREPROCESS_SYNTH_PRESET_H

#include <stdint.h>

#define PL_SYNTH_TYPES 9 /* the nine yeast edge types */

/** One preset: counts at --scale 1. */
typedef struct pl_synth_preset {
    const char *name;
    uint64_t n_genes;                /**< default --genes */
    uint64_t n_samples;              /**< default --samples */
    uint64_t edges[PL_SYNTH_TYPES];  /**< edges of each type, before duplicates are added */
    double reactions, metabolites;   /**< the metabolic layer */
    double metabolic_genes;          /**< genes with reactions, at n_genes genes */
} pl_synth_preset;

/** Name of edge type t < PL_SYNTH_TYPES (the file edges/<name>.tsv). */
const char *pl__synth_type_name(uint32_t t);

/** Whether edge type t draws from half of the genes only (the small yeast types), so that
 *  the other half is isolated there in every preset. */
int pl__synth_type_half(uint32_t t);

/** The preset called `name` ("yeast", "human"); NULL or "" is yeast.
 *  @return the preset, or NULL when there is none of that name. */
const pl_synth_preset *pl__synth_preset(const char *name);

/** The names of the presets, comma-separated, for messages. */
const char *pl__synth_preset_names(void);

#endif
