/* Synthetic input files for `pertload build` at yeast or human scale (demos, tests,
 * benchmarks). */
#ifndef PL_PREPROCESS_SYNTH_H
#define PL_PREPROCESS_SYNTH_H

#include <stdint.h>

#include "pertload.h"

/** Options of pl__synth(); the CLI defaults are in brackets. */
typedef struct pl_synth_opts {
    const char *out;      /**< output directory, created if absent */
    uint64_t n_genes;     /**< genes, >= 1 [6607] */
    uint64_t n_samples;   /**< sample rows, may be 0 [1000000] */
    uint64_t seed;        /**< PRNG seed [1] */
    double scale;         /**< multiplies edge, reaction and metabolite counts [1.0] */
    uint32_t payload_dim; /**< payload.npy values a row (a cell's); 0 = no payload [0] */
    int progress;         /**< 1: progress on stderr; 0: quiet; -1: if stderr is a tty */
    const char *preset;   /**< "yeast" or "human" (synth_preset.h); NULL = yeast */
    uint32_t payload_cells; /**< 0: payload [S, D]; C >= 1: cell sets [S, C, D] [0] */
    int payload_f16;      /**< 1: payload in float16 ('<f2'); 0: float32 [0] */
} pl_synth_opts;

/** Write a synthetic data set into `o->out`, shaped by the preset `o->preset` (edge,
 *  reaction and metabolite counts, times `o->scale`; the metabolic genes in proportion
 *  to `o->n_genes`): genes.txt, edges/<type>.tsv for the nine
 *  yeast edge types (heavy-tailed degrees, isolated genes, ~0.1% self-loops, ~0.5%
 *  duplicate edges), reactions.txt, rules.tsv (gene-reaction rules with a header line:
 *  one gene, isozymes, complexes, complexes sharing a subunit, complexes of isozymes),
 *  gpr.tsv (the rules' genes, in order), rmr.tsv, samples.tsv (single, double and
 *  triple deletions with fitness and gene_interaction labels, some missing),
 *  payload.npy when payload_dim > 0 (float32 or float16, [S, payload_dim] or, with
 *  payload_cells C, [S, C, payload_dim]), and build-args.txt:
 *  the arguments of `pertload build` after `-o DB`, one per line (with --rules).
 *
 *  The output is a function of the options only: the same options give byte-identical
 *  files. Each file is written under a temporary name and renamed when complete, so a
 *  failure leaves no half-written file. Memory does not grow with n_samples.
 *  When `o->progress` is not 0, a summary is printed on stdout at the end.
 *  @return 0, PL_EUSAGE (bad option), or -errno with `err` naming the file. */
int pl__synth(const pl_synth_opts *o, pl_err *err);

#endif
