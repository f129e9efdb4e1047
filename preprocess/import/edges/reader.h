/* Readers of downloaded interaction files: each turns a source (source.h)
 * into edge records, one call of `emit` per edge it keeps.
 *
 * A reader recognises its file's header by column names, applies the
 * format's own filters (channel minimum score, BioGRID system type, ...) and
 * hands out the two gene names of each kept row as they are written in the
 * file (STRING's "TAXON." prefix stripped); name resolution, duplicates and
 * strictness are the caller's business (names.h, import.h). Malformed rows
 * are errors "file:line:col: reason" (pl__src_fail()).
 *
 * Formats (pl__imp_format()):
 *   string     STRING protein.links / .detailed / .full / protein.physical.links
 *              (v11, v12): space-separated, header "protein1 protein2 ...";
 *              `channel` picks a score column by name (default combined_score;
 *              "experimental" and "experiments" name the same channel), an
 *              edge is kept when its score >= `min_score`.
 *   biogrid    BioGRID TAB 3.0 (and the older TAB 2.0): tab-separated, header
 *              "#BioGRID Interaction ID ..."; filters `system_type`
 *              (physical / genetic), `systems` (Experimental System names,
 *              checked against BioGRID's list), `organisms` (taxon ids, both
 *              interactors), `throughput` (low / high: rows listing it);
 *              `id` chooses the name columns: systematic (default), symbol,
 *              entrez or biogrid.
 *   yeastract  YEASTRACT regulation table: "TF;target" per line, no header;
 *              names are kept whole (commas belong to names: ADE5,7).
 *   tflink     TFLink TSV (simpleFormat): header with UniprotID.TF,
 *              UniprotID.Target, NCBI.GeneID.TF, NCBI.GeneID.Target, Name.TF,
 *              Name.Target, ..., Small-scale.evidence; `id` = name (default),
 *              uniprot or entrez; `small_scale` keeps rows marked "Yes".
 *   dango      DANGO adjacency: "i j weight" (tabs or spaces), i and j 1-based
 *              indices into the `gene_list` file (one name a line); kept when
 *              weight >= `min_score`.
 *   string_actions
 *              STRING protein.actions (v11, v11.5): tab-separated, header
 *              "item_id_a item_id_b mode action is_directional a_is_acting
 *              score"; `modes` keeps rows of those modes (default all),
 *              `min_score`; `directed` keeps only rows with is_directional
 *              and a_is_acting both "t", edge from item_id_a to item_id_b
 *              (and makes as_listed the default pair policy).
 *   delim      generic delimited edge list: `sep` (default tab), `header`
 *              (true/false), `source`/`target`/`score` columns by 1-based
 *              number or, with a header, by name; `min_score`; lines starting
 *              with `comment` (default none) are skipped.
 */
#ifndef PL_IMPORT_READER_H
#define PL_IMPORT_READER_H

#include <stddef.h>
#include <stdint.h>

#include "preprocess/import/source/fields.h"
#include "preprocess/import/source/source.h"

/** One edge as read: the names are views into the current line (valid during
 *  the `emit` call only); `score` is NAN where the format has none. */
typedef struct pl_imp_edge {
    pl__field src, dst;
    double score;
    uint32_t mode; /**< string_actions: index of its mode in opts.modes (0: all kept) */
} pl_imp_edge;

/** Called for each kept edge; `src` is the source being read (for its path,
 *  line and pl__src_fail()). A negative return stops the reader with it. */
typedef int (*pl_imp_emit)(void *ctx, const pl_imp_edge *e, const pl_src *src, pl_err *err);

enum { PL_IMP_MAX_LIST = 64 };

/** Options of a reader; a format reads only the keys of its `keys` mask.
 *  Strings are borrowed (the recipe owns them). */
typedef struct pl_imp_opts {
    const char *channel;     /**< string: score column (NULL: combined_score) */
    double min_score;        /**< string, dango, delim: NAN = no minimum */
    const char *system_type; /**< biogrid: "physical", "genetic" or NULL */
    const char *systems[PL_IMP_MAX_LIST]; /**< biogrid: Experimental System names */
    uint32_t n_systems;
    uint64_t organisms[PL_IMP_MAX_LIST];  /**< biogrid: taxon ids */
    uint32_t n_organisms;
    const char *throughput;  /**< biogrid: "low", "high" or NULL */
    const char *id;          /**< biogrid, tflink: which name columns */
    const char *gene_list;   /**< dango: path of the index -> name list */
    char sep;                /**< delim: separator (0: tab; ' ': runs of blanks) */
    int header;              /**< delim: 1 when the first line names columns */
    const char *comment;     /**< delim: prefix of lines to skip, or NULL */
    const char *col_src, *col_dst, *col_score; /**< delim: number or name */
    int small_scale;         /**< tflink: keep only Small-scale.evidence == Yes */
    const char *modes[PL_IMP_MAX_LIST]; /**< string_actions: modes kept (none: all) */
    uint32_t n_modes;
    int directed;            /**< string_actions: acting protein -> the other only */
} pl_imp_opts;

/** Fill `o` with the defaults (NAN minimum, everything else unset). */
void pl__imp_opts_init(pl_imp_opts *o);

/** Counts of one read. */
typedef struct pl_imp_stats {
    uint64_t rows;     /**< data rows read (header and comment lines not counted) */
    uint64_t filtered; /**< rows dropped by the format's filters */
    uint64_t emitted;  /**< edges handed to `emit` */
    uint64_t bytes;    /**< decompressed bytes read */
} pl_imp_stats;

/** Option keys (bits of pl_imp_format.keys). */
enum {
    PL_IMP_K_CHANNEL = 1u << 0,
    PL_IMP_K_MIN_SCORE = 1u << 1,
    PL_IMP_K_SYSTEM_TYPE = 1u << 2,
    PL_IMP_K_SYSTEMS = 1u << 3,
    PL_IMP_K_ORGANISMS = 1u << 4,
    PL_IMP_K_THROUGHPUT = 1u << 5,
    PL_IMP_K_ID = 1u << 6,
    PL_IMP_K_GENE_LIST = 1u << 7,
    PL_IMP_K_SEP = 1u << 8,
    PL_IMP_K_HEADER = 1u << 9,
    PL_IMP_K_COMMENT = 1u << 10,
    PL_IMP_K_COLUMNS = 1u << 11,
    PL_IMP_K_SMALL_SCALE = 1u << 12,
    PL_IMP_K_MODES = 1u << 13,
    PL_IMP_K_DIRECTED = 1u << 14,
};

/** A reader. */
typedef struct pl_imp_format {
    const char *name;
    unsigned keys;  /**< PL_IMP_K_* options it reads */
    int undirected; /**< default pair policy: 1 = one edge per unordered pair */
    /** Check option values that need no file (names of channels or systems);
     *  the message is the bare reason. @return 0 or PL_EUSAGE. */
    int (*check)(const pl_imp_opts *o, pl_err *err);
    /** Read the whole source, calling `emit` per kept edge.
     *  @return 0 or a negative code (with a message naming file:line). */
    int (*read)(pl_src *src, const pl_imp_opts *o, pl_imp_emit emit, void *ctx,
                pl_imp_stats *st, pl_err *err);
} pl_imp_format;

/** The reader called `name`, or NULL. */
const pl_imp_format *pl__imp_format(const char *name);

/** Open `path` and run `fmt` over it (stats zeroed first, bytes filled).
 *  @return 0 or a negative code. */
int pl__imp_read_file(const pl_imp_format *fmt, const char *path, const pl_imp_opts *o,
                      pl_imp_emit emit, void *ctx, pl_imp_stats *st, pl_err *err);

/* Readers, one file each (string.c, biogrid.c, yeastract.c, tflink.c,
 * dango.c, delim.c, string_actions.c). */
extern const pl_imp_format pl__imp_string, pl__imp_biogrid, pl__imp_yeastract,
    pl__imp_tflink, pl__imp_dango, pl__imp_delim, pl__imp_string_actions;

/* Helpers shared by the readers (formats.c). */

/** The end of a reader's row: edge `e` counted filtered in `st` when its
 *  score is under o->min_score (never when either is NAN: no score, no
 *  minimum), else counted emitted and handed to `emit`.
 *  @return 0, or emit's negative code. */
int pl__imp_keep(const pl_imp_opts *o, const pl_imp_edge *e, pl_imp_emit emit, void *ctx,
                 const pl_src *src, pl_imp_stats *st, pl_err *err);

/** Index of the field equal to `name` among `f[0..n)`, or -1. */
int pl__imp_col(const pl__field *f, int n, const char *name);

/** Parse a score field (decimal, finite); on failure fail with
 *  "file:line:col: bad <what> '<text>'". @return 0 or PL_EPARSE. */
int pl__imp_score(const pl_src *src, const pl__field *f, const char *what, double *out,
                  pl_err *err);

/** Fail with "file:line: expected N fields, found M" unless n >= need. */
int pl__imp_need(const pl_src *src, int n, int need, pl_err *err);

/** The first line of a file with a header into *line, *len; an empty file
 *  fails with "file:1: empty file (expected <expected>)".
 *  @return 1, or a negative code. */
int pl__imp_first_line(pl_src *src, const char **line, size_t *len, const char *expected,
                       pl_err *err);

/** Read the header line of a tab-separated table with named columns into
 *  f[0..max] (room for max + 1 fields); an empty file fails with
 *  "file:1: empty file (expected <expected>)".
 *  @return the header's field count (max + 1: more than max columns), or a
 *  negative code. */
int pl__imp_header(pl_src *src, pl__field *f, int max, const char *expected, pl_err *err);

/** The next non-blank row of such a table, split at tabs into f[0..max]; a
 *  row without exactly `ncols` fields fails naming file:line and both counts.
 *  @return 1 a row, 0 at the end, or a negative code. */
int pl__imp_row(pl_src *src, pl__field *f, int max, int ncols, pl_err *err);

/** pl__imp_row() of a table whose fields `sep` separates (STRING's links:
 *  ' '); the count error says "tab-separated" for '\t' only. */
int pl__imp_row_sep(pl_src *src, char sep, pl__field *f, int max, int ncols, pl_err *err);

#endif
