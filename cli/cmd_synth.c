/* pertload synth: generate synthetic input files, yeast or human scale. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "preprocess/synth.h"
#include "preprocess/synth_preset.h"

static const char usage[] = "OUT [--preset yeast|human] [--genes N] [--samples S] [--seed X] "
                            "[--scale F] [--payload-dim D] [--payload-cells C] "
                            "[--payload-dtype float32|float16] [--quiet]";

static void help(void)
{
    printf("usage: pertload synth %s\n\n"
           "Write a synthetic data set into directory OUT (created if absent):\n"
           "genes.txt, edges/<type>.tsv for the nine yeast edge types, reactions.txt,\n"
           "rules.tsv (gene-reaction rules), gpr.tsv (their gene-reaction pairs),\n"
           "rmr.tsv, samples.tsv, payload.npy (with --payload-dim) and\n"
           "build-args.txt, the arguments of `pertload build -o DB` for these files, one\n"
           "per line:  xargs -d '\\n' -a OUT/build-args.txt pertload build -o DB\n"
           "The same options give byte-identical files.\n\n"
           "options:\n"
           "  --preset P       yeast (default): 6,607 genes, 2.5M edges, 1M samples;\n"
           "                   human: 20,000 genes, 12M edges, 2M samples\n"
           "  --genes N        number of genes (default: the preset's)\n"
           "  --samples S      number of samples (default: the preset's)\n"
           "  --seed X         random seed (default 1)\n"
           "  --scale F        multiply edge, reaction and metabolite counts (default 1.0)\n"
           "  --payload-dim D  write payload.npy, [S, D] (default 0: none)\n"
           "  --payload-cells C  a sample's payload is a cell set: [S, C, D]\n"
           "  --payload-dtype T  float32 (default) or float16\n"
           "  --quiet          no progress and no summary\n",
           usage);
}

int pl_cmd_synth(int argc, char **argv)
{
    pl_synth_opts o = {.seed = 1, .scale = 1.0, .progress = -1};
    int have_genes = 0, have_samples = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            help();
            return 0;
        }
        if (!strcmp(a, "--quiet") || !strcmp(a, "-q")) {
            o.progress = 0;
            continue;
        }
        if (a[0] != '-' || !a[1]) {
            if (o.out)
                return pl_cli_usage("synth", usage, "more than one OUT ('%s', '%s')", o.out,
                                    a);
            o.out = a;
            continue;
        }
        /* options with a value: "--opt V" or "--opt=V" */
        char opt[32];
        const char *eq = strchr(a, '='), *v;
        size_t len = eq ? (size_t)(eq - a) : strlen(a);
        if (len >= sizeof opt)
            return pl_cli_usage("synth", usage, "unknown option '%s'", a);
        memcpy(opt, a, len);
        opt[len] = '\0';
        if (eq)
            v = eq + 1;
        else if (i + 1 < argc)
            v = argv[++i];
        else
            return pl_cli_usage("synth", usage, "%s needs a value", opt);
        unsigned long long u;
        if (!strcmp(opt, "--preset")) {
            if (!pl__synth_preset(v))
                return pl_cli_usage("synth", usage, "--preset: no preset '%s' (there are: %s)",
                                    v, pl__synth_preset_names());
            o.preset = v;
        } else if (!strcmp(opt, "--payload-dtype")) {
            if (strcmp(v, "float32") && strcmp(v, "float16"))
                return pl_cli_usage("synth", usage,
                                    "--payload-dtype: '%s' is not float32 or float16", v);
            o.payload_f16 = !strcmp(v, "float16");
        } else if (!strcmp(opt, "--scale")) {
            if (pl_cli_f64(v, &o.scale) < 0 || !isfinite(o.scale) || o.scale < 0)
                return pl_cli_usage("synth", usage, "--scale: '%s' is not a number >= 0", v);
        } else if (!strcmp(opt, "--genes") || !strcmp(opt, "--samples") ||
                   !strcmp(opt, "--seed") || !strcmp(opt, "--payload-dim") ||
                   !strcmp(opt, "--payload-cells")) {
            if (pl_cli_u64("synth", opt, v, &u) < 0)
                return 2;
            if (!strcmp(opt, "--genes")) {
                o.n_genes = u;
                have_genes = 1;
            } else if (!strcmp(opt, "--samples")) {
                o.n_samples = u;
                have_samples = 1;
            } else if (!strcmp(opt, "--seed"))
                o.seed = u;
            else if (u > UINT32_MAX)
                return pl_cli_usage("synth", usage, "%s: %llu is too large", opt, u);
            else if (!strcmp(opt, "--payload-cells"))
                o.payload_cells = (uint32_t)u;
            else
                o.payload_dim = (uint32_t)u;
        } else {
            return pl_cli_usage("synth", usage, "unknown option '%s'", opt);
        }
    }
    if (!o.out)
        return pl_cli_usage("synth", usage, "missing OUT");
    const pl_synth_preset *ps = pl__synth_preset(o.preset);
    if (!have_genes)
        o.n_genes = ps->n_genes;
    if (!have_samples)
        o.n_samples = ps->n_samples;

    pl_err err = {0};
    int rc = pl__synth(&o, &err);
    if (rc == PL_EUSAGE)
        return pl_cli_usage("synth", usage, "%s", err.msg);
    return rc < 0 ? pl_cli_fail("synth", rc, &err) : 0;
}
