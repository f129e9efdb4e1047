#!/usr/bin/env bash
# Build a database of the real yeast graph from the files in tests/data/real
# (plain conversions with zcat and awk; see tests/data/real/SOURCES.md):
#   physical        BIM (BioGRID + IntAct + MINT), ORF pairs with a weight
#   physical_apms   Krogan 2006 AP-MS pairs
#   regulatory      YEASTRACT TF;target (symbols mapped to ORFs through
#                   orftogene.txt, then SGD's standard names; others dropped)
#   coexpression    Hu 2007
#   gi_profile      Costanzo 2016 profile similarity
#   string_*        STRING neighborhood, fusion, cooccurence, database
#                   (DANGO's 1-based indices into its gene list)
#   metabolism      yeast-GEM: gene-reaction rules (--rules), stoichiometry
# Genes: SGD's systematic names, then any other name the files use.
# Samples: S random deletions (as `pertload synth` mixes them: 0.04% single,
# 97.2% double, 2.8% triple) of uniformly drawn genes, seeded.
#
# usage: real_yeast.sh PERTLOAD_BINARY OUT [SAMPLES] [--reaction-rule any|gpr]
#   writes OUT/in/* and the database OUT/db (OUT must not hold a db yet)
set -euo pipefail
bin=$1
out=$2
samples=${3:-1000000}
shift $(($# < 3 ? $# : 3))
here=$(cd "$(dirname "$0")" && pwd)
data=${PERTLOAD_REAL_DATA:-$here/../tests/data}/real
in=$out/in
mkdir -p "$in/edges"

# ORF pairs of a space- or tab-separated file, weight kept when present.
zcat "$data/scl-bioinfo/BIM.txt.gz" | awk '{print $1 "\t" $2 "\t" $3}' > "$in/edges/physical.tsv"
zcat "$data/bionic/Krogan-2006.txt.gz" | awk '{print $1 "\t" $2}' > "$in/edges/physical_apms.tsv"
zcat "$data/bionic/Hu-2007.txt.gz" | awk '{print $1 "\t" $2 "\t" $3}' > "$in/edges/coexpression.tsv"
zcat "$data/bionic/Costanzo-2016.txt.gz" | awk '{print $1 "\t" $2 "\t" $3}' \
    > "$in/edges/gi_profile.tsv"
zcat "$data/dango-string/yeast_string_genes.txt.gz" | awk 'NF {print $1}' > "$in/string_genes.txt"
for ch in neighborhood fusion cooccurence database; do
    zcat "$data/dango-string/yeast_string_${ch}_adjacency.txt.gz" |
        awk 'NR == FNR {g[FNR] = $1; next} {print g[$1] "\t" g[$2] "\t" $3}' \
            "$in/string_genes.txt" - > "$in/edges/string_$ch.tsv"
done
# YEASTRACT symbols -> ORFs.
zcat "$data/yeastract/orftogene.txt.gz" | awk -F'\t' 'NR > 1 {print $1 "\t" $2}' > "$in/sym.tsv"
zcat "$data/yeast-gem/SGDgeneNames.tsv.gz" |
    awk -F'\t' 'NR > 1 && $2 != "" {print $2 "\t" $1}' >> "$in/sym.tsv"
zcat "$data/yeast-gem/SGDgeneNames.tsv.gz" | awk -F'\t' 'NR > 1 {print $1 "\t" $1}' >> "$in/sym.tsv"
zcat "$data/yeastract/RegulationTwoColumnTable_both.tsv.gz" |
    awk -F';' 'NR == FNR {split($0, a, "\t"); if (!(a[1] in m)) m[a[1]] = a[2]; next}
               ($1 in m) && ($2 in m) {print m[$1] "\t" m[$2]}' "$in/sym.tsv" - \
        > "$in/edges/regulatory.tsv"
# Metabolism.
zcat "$data/yeast-gem/reactions.tsv.gz" | awk -F'\t' '{print $1 "\t" $6}' > "$in/rules.tsv"
zcat "$data/yeast-gem/rxn_met_stoich.tsv.gz" | awk 'NR > 1' > "$in/rmr.tsv"
# Genes: SGD's, then every other name of the edge and rule files.
{
    zcat "$data/yeast-gem/SGDgeneNames.tsv.gz" | awk -F'\t' 'NR > 1 {print $1}'
    zcat "$data/yeast-gem/genes.tsv.gz" | awk -F'\t' 'NR > 1 {print $1}'
    cat "$in/edges/"*.tsv | awk -F'\t' '{print $1; print $2}'
} | awk 'NF && !seen[$0]++' > "$in/genes.txt"
awk -v n="$samples" 'BEGIN {srand(1)} {g[NR] = $1}
    END {
        print "genes\tfitness"
        for (i = 0; i < n; i++) {
            u = rand(); k = u < 0.0004 ? 1 : u < 0.972 ? 2 : 3
            s = g[1 + int(rand() * NR)]
            for (j = 1; j < k; j++) s = s ";" g[1 + int(rand() * NR)]
            printf "%s\t%.4f\n", s, rand()
        }
    }' "$in/genes.txt" > "$in/samples.tsv"
args=(--genes "$in/genes.txt")
for f in "$in/edges/"*.tsv; do
    args+=(--edges "$(basename "$f" .tsv)=$f")
done
"$bin" build -o "$out/db" "${args[@]}" --rules "$in/rules.tsv" --rmr "$in/rmr.tsv" \
    --samples "$in/samples.tsv" "$@"
