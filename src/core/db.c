/* Opening, describing and verifying a database. */
#include "db.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checksum.h"
#include "error.h"
#include "rule.h"
#include "fileio.h"
#include "npy.h"

enum { N_GENES, N_TYPES, N_LABELS, N_REACTIONS, N_METABOLITES };
static const char *const name_keys[5] = {"genes", "types", "labels", "reactions",
                                         "metabolites"};

/* The `n` names stored under names/<key>, as pointers into the map. */
static int load_names(pl_db *db, int which, uint64_t n, pl_err *err)
{
    const char *key = name_keys[which];
    const void *v = "";
    size_t len = 0;
    int rc = pl__db_get(db->txn, db->dbi[PL_DBI_NAMES], PL_DBI_NAMES, key, strlen(key), &v,
                        &len, err);
    if (rc == -ENOENT && n != 0)
        return pl__err(err, PL_ECORRUPT, "key names/%s: missing", key);
    if (rc < 0 && rc != -ENOENT)
        return rc;
    return pl__names_split(key, v, len, n, &db->names[which], err);
}

static int open_meta(pl_db *db, pl_err *err)
{
    const void *v;
    size_t len;
    MDB_val k = {4, "meta"}, raw;
    int rc = mdb_get(db->txn, db->dbi[PL_DBI_META], &k, &raw);
    PL_FAIL_IF(rc == MDB_NOTFOUND, err, PL_ECORRUPT, "%s: key meta/meta missing", db->path);
    PL_FAIL_IF(rc, err, pl__lmdb_code(rc), "%s: %s", db->path, mdb_strerror(rc));
    /* The version first: another version may lay the record out differently. */
    if (raw.mv_size >= 12 && memcmp(raw.mv_data, PL_META_MAGIC, 8) == 0) {
        uint32_t ver;
        memcpy(&ver, (const char *)raw.mv_data + 8, 4);
        PL_FAIL_IF(ver != PL_FORMAT_VERSION, err, PL_EFORMAT,
                   "%s: database format version %u; this pertload reads version %u "
                   "(rebuild the database)",
                   db->path, ver, PL_FORMAT_VERSION);
    }
    PL_TRY(pl__db_get(db->txn, db->dbi[PL_DBI_META], PL_DBI_META, "meta", 4, &v, &len, err));
    rc = pl__meta_decode(v, len, &db->meta, err);
    if (rc < 0)
        pl__err_prefix(err, "%s", db->path);
    return rc;
}

static int open_blocks(pl_db *db, pl_err *err)
{
    const void *v;
    size_t len;
    uint64_t nb = db->meta.n_blocks;
    int rc = pl__db_get(db->txn, db->dbi[PL_DBI_META], PL_DBI_META, "blocks", 6, &v, &len,
                        err);
    PL_FAIL_IF(rc == -ENOENT, err, PL_ECORRUPT, "%s: key meta/blocks missing", db->path);
    PL_TRY(rc);
    rc = pl__blocks_decode(v, len, &db->meta, &db->blocks, err);
    if (rc < 0) {
        pl__err_prefix(err, "%s", db->path);
        return rc;
    }
    size_t max_raw = 0, max_comp = 0;
    for (uint64_t b = 0; b < nb; b++) {
        if (db->blocks[b].raw_size > max_raw)
            max_raw = db->blocks[b].raw_size;
        if (db->blocks[b].comp_size > max_comp)
            max_comp = db->blocks[b].comp_size;
    }
    db->raw_cap = max_raw;
    db->blockbuf_cap = max_comp + PL_BLOCK_HEADER;
    db->raw = aligned_alloc(64, (max_raw + 63) / 64 * 64 + 64);
    db->blockbuf = malloc(db->blockbuf_cap);
    db->dctx = ZSTD_createDCtx();
    if (!db->raw || !db->blockbuf || !db->dctx)
        return pl__err(err, -ENOMEM, "out of memory");
    return 0;
}

/* Open samples.pls and parse its header: it records the size and checksum
 * of data.mdb, checked before LMDB reads any page of it. */
static int open_samples(pl_db *db, pl__sstore_header *h, pl_err *err)
{
    char p[4096];
    pl__path_join(p, sizeof p, db->path, PL_FILE_SAMPLES);
    db->samples_fd = pl__open_regular(p, 0, err);
    if (db->samples_fd < 0)
        return db->samples_fd;
    char hdr[PL_SSTORE_HEADER];
    PL_TRY(pl__read_all(db->samples_fd, hdr, sizeof hdr, 0, p, err));
    return pl__sstore_read_header(hdr, h, err);
}

/* File `p` of the database holds `bytes` bytes where the database expects
 * `want`: PL_ECORRUPT, naming both. */
static int size_mismatch(const char *p, uint64_t bytes, uint64_t want, pl_err *err)
{
    return pl__err(err, PL_ECORRUPT, "%s: %llu bytes, the database expects %llu (truncated or "
                   "replaced)", p, (unsigned long long)bytes, (unsigned long long)want);
}

/* LMDB trusts the page structure of the file it maps: check the whole of
 * data.mdb against the size and XXH64 build recorded, first. */
static int check_lmdb_file(const char *p, const pl__sstore_header *h, pl_err *err)
{
    uint64_t bytes, sum;
    PL_TRY(pl__file_xxh64(p, &bytes, &sum, err));
    if (bytes != h->lmdb_bytes)
        return size_mismatch(p, bytes, h->lmdb_bytes, err);
    PL_FAIL_IF(sum != h->lmdb_checksum, err, PL_ECORRUPT,
               "%s: checksum mismatch (the file is damaged or was modified after build)", p);
    return 0;
}

/* The sample store against the metadata: size and header counts. */
static int check_samples(pl_db *db, const pl__sstore_header *h, pl_err *err)
{
    char p[4096];
    pl__path_join(p, sizeof p, db->path, PL_FILE_SAMPLES);
    struct stat st;
    PL_FAIL_IF(fstat(db->samples_fd, &st) < 0, err, -errno, "%s: %s", p, strerror(errno));
    if ((uint64_t)st.st_size != db->meta.samples_bytes)
        return size_mismatch(p, (uint64_t)st.st_size, db->meta.samples_bytes, err);
    return pl__sstore_check_header(h, db->meta.n_samples, db->meta.n_blocks,
                                   db->meta.n_labels, err);
}

/* "(20000, 16)": the shape of an array of `rows` rows of shape[0..ndim). */
static void shape_text(char *buf, size_t cap, uint64_t rows, const uint64_t *shape,
                       uint32_t ndim)
{
    int len = snprintf(buf, cap, "(%llu%s", (unsigned long long)rows, ndim ? "" : ",");
    for (uint32_t i = 0; i < ndim && len > 0 && (size_t)len < cap; i++)
        len += snprintf(buf + len, cap - (size_t)len, ", %llu", (unsigned long long)shape[i]);
    if (len > 0 && (size_t)len < cap)
        snprintf(buf + len, cap - (size_t)len, ")");
}

/* The header of payload.npy against what the build recorded: a smaller valid
 * .npy put in its place would otherwise be read past its rows. */
static int payload_matches(const pl_db *db, const pl__npy *n, pl_err *err)
{
    const struct pl__meta *m = &db->meta;
    PL_FAIL_IF(strcmp(n->descr, m->payload_dtype) != 0, err, PL_ECORRUPT,
               "%s: dtype '%s', the database was built with '%s' (the file was replaced)",
               n->path, n->descr, m->payload_dtype);
    int same = n->ndim == m->payload_ndim + 1 && n->shape[0] == m->n_samples;
    for (uint32_t i = 0; same && i < m->payload_ndim; i++)
        same = n->shape[i + 1] == m->payload_shape[i];
    if (!same) {
        char got[256], want[256];
        if (n->ndim == 0)
            snprintf(got, sizeof got, "()");
        else
            shape_text(got, sizeof got, n->shape[0], n->shape + 1, n->ndim - 1);
        shape_text(want, sizeof want, m->n_samples, m->payload_shape, m->payload_ndim);
        return pl__err(err, PL_ECORRUPT, "%s: shape %s, the database was built with %s (the "
                       "file was replaced)", n->path, got, want);
    }
    PL_FAIL_IF(n->offset != m->payload_offset || n->file_size != m->payload_bytes, err,
               PL_ECORRUPT, "%s: data at byte %llu of %llu, the database expects byte %llu of "
               "%llu (the file was rewritten)", n->path, (unsigned long long)n->offset,
               (unsigned long long)n->file_size, (unsigned long long)m->payload_offset,
               (unsigned long long)m->payload_bytes);
    return 0;
}

/* The path of payload.npy in p[0..cap): 1, or 0 (p untouched) when the
 * database has no payload. */
static int payload_path(const pl_db *db, char *p, size_t cap)
{
    if (!db->meta.payload_dtype[0])
        return 0;
    pl__path_join(p, cap, db->path, PL_FILE_PAYLOAD);
    return 1;
}

/* Open payload.npy and check it against the metadata. */
static int open_payload(pl_db *db, pl_err *err)
{
    const struct pl__meta *m = &db->meta;
    char p[4096];
    if (!payload_path(db, p, sizeof p))
        return 0;
    int fd = pl__open_regular(p, 0, err);
    if (fd < 0)
        return fd;
    pl__npy n;
    int rc = pl__npy_open_fd(&n, fd, p, err);
    if (rc < 0 && n.file_size != m->payload_bytes)
        rc = size_mismatch(p, n.file_size, m->payload_bytes, err);
    else if (rc < 0 && rc != -ENOMEM)
        rc = pl__err_code(err, PL_ECORRUPT); /* a bad header: its message names it */
    else if (rc == 0)
        rc = payload_matches(db, &n, err);
    if (rc < 0) {
        pl__npy_close(&n);
        return rc;
    }
    db->payload_fd = n.fd;
    return 0;
}

static void fill_info(pl_db *db)
{
    const struct pl__meta *m = &db->meta;
    pl_db_info *i = &db->info;
    i->format_version = m->format_version;
    i->n_types = m->n_types;
    i->n_genes = m->n_genes;
    i->n_reactions = m->n_reactions;
    i->n_metabolites = m->n_metabolites;
    i->n_gpr = m->n_gpr;
    i->n_rmr = m->n_rmr;
    i->n_samples = m->n_samples;
    i->n_labels = m->n_labels;
    i->has_metabolism = m->has_metabolism;
    memcpy(i->n_edges, m->n_edges, sizeof i->n_edges);
    i->gene_names = db->names[N_GENES];
    i->type_names = db->names[N_TYPES];
    i->label_names = db->names[N_LABELS];
    i->reaction_names = db->names[N_REACTIONS];
    i->metabolite_names = db->names[N_METABOLITES];
    i->block_rows = m->block_rows;
    i->n_blocks = m->n_blocks;
    memcpy(i->payload_dtype, m->payload_dtype, sizeof i->payload_dtype);
    i->payload_dtype[7] = '\0';
    i->payload_ndim = m->payload_ndim;
    memcpy(i->payload_shape, m->payload_shape, sizeof i->payload_shape);
    i->payload_row_bytes = m->payload_row_bytes;
    i->samples_bytes = m->samples_bytes;
    i->payload_bytes = m->payload_bytes;
    i->reaction_rule = m->reaction_rule;
    i->n_categories = m->n_categories;
    i->n_rules = m->n_rules;
    i->n_rule_words = m->n_rule_words;
    i->n_terms = m->n_terms;
    i->n_term_annotations = m->n_term_ann;
    i->n_strata = m->n_strata;
    i->n_term_groups = m->n_term_groups;
    i->gene_fingerprint = m->gene_fingerprint;
    memcpy(i->edge_fingerprint, m->edge_fingerprint, sizeof i->edge_fingerprint);
    char p[4096];
    i->graph_bytes = pl__file_size(pl__path_join(p, sizeof p, db->path, PL_FILE_LMDB));
}

/* An optional NUL-terminated text under meta/`key`: "" when absent or not
 * NUL-terminated (its checksum was right: a writer's choice, not damage). */
static int meta_text(pl_db *db, const char *key, const char **out, pl_err *err)
{
    const void *v;
    size_t len;
    int rc = pl__db_get(db->txn, db->dbi[PL_DBI_META], PL_DBI_META, key, strlen(key), &v, &len,
                        err);
    *out = "";
    if (rc == -ENOENT)
        return 0;
    PL_TRY(rc);
    if (len > 0 && ((const char *)v)[len - 1] == '\0')
        *out = v;
    return 0;
}

/* The gene fingerprint recorded at build against the names stored. */
static int check_gene_fingerprint(pl_db *db, pl_err *err)
{
    const void *v;
    size_t len;
    PL_TRY(pl__db_get(db->txn, db->dbi[PL_DBI_NAMES], PL_DBI_NAMES, "genes", 5, &v, &len, err));
    uint64_t fp = pl__xxh64(v, len, 0);
    PL_FAIL_IF(fp != db->meta.gene_fingerprint, err, PL_ECORRUPT,
               "%s: the gene fingerprint %016llx of key meta/meta is not that of the stored "
               "gene names (%016llx)", db->path, (unsigned long long)db->meta.gene_fingerprint,
               (unsigned long long)fp);
    return 0;
}

static int open_db(pl_db *db, const char *path, pl_err *err)
{
    char p[4096];
    struct stat st;
    PL_FAIL_IF(stat(path, &st) < 0, err, -errno, "%s: %s", path, strerror(errno));
    PL_FAIL_IF(!S_ISDIR(st.st_mode), err, -ENOTDIR, "%s: not a pertload database directory",
               path);
    pl__sstore_header sh;
    PL_TRY(open_samples(db, &sh, err));
    pl__path_join(p, sizeof p, path, PL_FILE_LMDB);
    PL_TRY(check_lmdb_file(p, &sh, err));
    PL_FAIL_IF(stat(p, &st) < 0, err, -errno, "%s: %s", p, strerror(errno));
    /* LMDB maps the file and trusts its meta pages: a truncated file would
     * fault on access, so sizes are checked before and after opening. */
    long page = sysconf(_SC_PAGESIZE);
    PL_FAIL_IF((uint64_t)st.st_size < 2 * (uint64_t)page, err, PL_ECORRUPT,
               "%s: %lld bytes, too small for an LMDB environment (truncated)", p,
               (long long)st.st_size);
    int rc = mdb_env_create(&db->env);
    PL_FAIL_IF(rc, err, pl__lmdb_code(rc), "%s: %s", path, mdb_strerror(rc));
    mdb_env_set_maxdbs(db->env, PL_DBI_COUNT);
    /* Map just the file (read-only, it cannot grow); the map size recorded at
     * build time is far larger and would not fit under valgrind. */
    mdb_env_set_mapsize(db->env, ((size_t)st.st_size + (size_t)page - 1) / (size_t)page *
                                     (size_t)page);
    rc = mdb_env_open(db->env, path, MDB_RDONLY | MDB_NOLOCK | MDB_NOTLS, 0644);
    PL_FAIL_IF(rc, err, pl__lmdb_code(rc), "%s: %s", p, mdb_strerror(rc));
    MDB_envinfo ei;
    MDB_stat ms;
    mdb_env_info(db->env, &ei);
    mdb_env_stat(db->env, &ms);
    uint64_t need = ((uint64_t)ei.me_last_pgno + 1) * ms.ms_psize;
    PL_FAIL_IF((uint64_t)st.st_size < need, err, PL_ECORRUPT,
               "%s: %lld bytes, the environment needs %llu (truncated)", p,
               (long long)st.st_size, (unsigned long long)need);
    rc = mdb_txn_begin(db->env, NULL, MDB_RDONLY, &db->txn);
    PL_FAIL_IF(rc, err, pl__lmdb_code(rc), "%s: %s", p, mdb_strerror(rc));
    /* The meta record first: a database of another version may lack a
     * sub-database of this one, and is refused as of another version. */
    for (int i = 0; i < PL_DBI_COUNT; i++) {
        rc = mdb_dbi_open(db->txn, pl__dbi_names[i], 0, &db->dbi[i]);
        PL_FAIL_IF(rc, err, rc == MDB_NOTFOUND ? PL_ECORRUPT : pl__lmdb_code(rc),
                   "%s: sub-database %s: %s", p, pl__dbi_names[i], mdb_strerror(rc));
        if (i == PL_DBI_META)
            PL_TRY(open_meta(db, err));
    }
    const struct pl__meta *m = &db->meta;
    PL_TRY(load_names(db, N_GENES, m->n_genes, err));
    PL_TRY(load_names(db, N_TYPES, m->n_types, err));
    PL_TRY(load_names(db, N_LABELS, m->n_labels, err));
    PL_TRY(load_names(db, N_REACTIONS, m->n_reactions, err));
    PL_TRY(load_names(db, N_METABOLITES, m->n_metabolites, err));
    PL_TRY(check_gene_fingerprint(db, err));
    PL_TRY(pl__db_fingerprint(db, &db->info.db_fingerprint, err));
    PL_TRY(meta_text(db, "params", &db->info.params, err));
    PL_TRY(meta_text(db, "recipe", &db->info.recipe, err));
    PL_TRY(meta_text(db, "inputs", &db->info.recipe_inputs, err));
    PL_TRY(meta_text(db, "sources", &db->info.recipe_sources, err));
    PL_TRY(pl__db_open_cats(db, err));
    PL_TRY(open_blocks(db, err));
    PL_TRY(check_samples(db, &sh, err));
    PL_TRY(open_payload(db, err));
    PL_FAIL_IF(pl__strtab_init(&db->gene_index) < 0, err, -ENOMEM, "out of memory");
    for (uint64_t g = 0; g < m->n_genes; g++) {
        const char *name = db->names[N_GENES][g];
        PL_FAIL_IF(pl__strtab_intern(&db->gene_index, name, strlen(name), NULL) < 0, err,
                   -ENOMEM, "out of memory");
    }
    fill_info(db);
    return 0;
}

PL_API int pl_db_open(const char *path, pl_db **out, pl_err *err)
{
    *out = NULL;
    pl_db *db = calloc(1, sizeof *db);
    if (!db)
        return pl__err(err, -ENOMEM, "out of memory");
    db->samples_fd = db->payload_fd = -1;
    db->cached_block = -1;
    db->path = strdup(path);
    int rc = db->path ? open_db(db, path, err) : pl__err(err, -ENOMEM, "out of memory");
    if (rc < 0) {
        pl_db_close(db);
        return rc;
    }
    *out = db;
    return 0;
}

PL_API void pl_db_close(pl_db *db)
{
    if (!db)
        return;
    if (db->txn)
        mdb_txn_abort(db->txn);
    if (db->env)
        mdb_env_close(db->env);
    for (int i = 0; i < 5; i++)
        free(db->names[i]);
    pl__strtab_free(&db->gene_index);
    free(db->blocks);
    if (db->samples_fd >= 0)
        close(db->samples_fd);
    if (db->payload_fd >= 0)
        close(db->payload_fd);
    for (int t = 0; t < PL_N_NODE_TYPES; t++)
        free(db->feat_copy[t]);
    ZSTD_freeDCtx(db->dctx);
    free(db->blockbuf);
    free(db->raw);
    free(db->path);
    free(db);
}

PL_API const pl_db_info *pl_db_info_get(const pl_db *db) { return &db->info; }

PL_API int64_t pl_db_gene_index(const pl_db *db, const char *name)
{
    return pl__strtab_find(&db->gene_index, name, strlen(name));
}

int pl__db_load_block(pl_db *db, uint64_t b, pl_err *err)
{
    const struct pl__block_entry *e = &db->blocks[b];
    size_t len = PL_BLOCK_HEADER + e->comp_size;
    db->cached_block = -1;
    PL_TRY(pl__read_all(db->samples_fd, db->blockbuf, len, e->offset, PL_FILE_SAMPLES, err));
    PL_TRY(pl__block_decode(db->blockbuf, len, e, b, db->meta.n_labels, db->meta.n_genes,
                            db->dctx, db->raw, &db->view, err));
    db->cached_block = (int64_t)b;
    return 0;
}

PL_API int pl_db_sample(pl_db *db, uint64_t row, pl_sample *s, pl_err *err)
{
    PL_FAIL_IF(row >= db->meta.n_samples, err, PL_ERANGE,
               "row %llu out of range (the database has %llu samples)",
               (unsigned long long)row, (unsigned long long)db->meta.n_samples);
    uint64_t b = row / PL_BLOCK_ROWS;
    if (db->cached_block != (int64_t)b)
        PL_TRY(pl__db_load_block(db, b, err));
    uint32_t i = (uint32_t)(row - db->blocks[b].first_row);
    const pl__block_view *v = &db->view;
    s->id = v->ids[i];
    s->n_genes = v->gptr[i + 1] - v->gptr[i];
    s->genes = v->genes + v->gptr[i];
    s->labels = v->labels + (size_t)i * db->meta.n_labels;
    return 0;
}

PL_API int64_t pl_db_graph_array(pl_db *db, int which, void *out, size_t cap, pl_err *err)
{
    const struct pl__meta *m = &db->meta;
    unsigned char ekey[2];
    const void *key;
    size_t klen = 3, want, skip = 0, len;
    if (which >= 0 && (uint32_t)which < m->n_types) {
        pl__edges_key(ekey, (uint32_t)which);
        key = ekey;
        klen = 2;
        want = len = 8 * m->n_edges[which];
    } else if (which == PL_ARRAY_GPR && m->has_metabolism) {
        key = "gpr";
        want = len = 8 * m->n_gpr;
    } else if ((which == PL_ARRAY_RMR || which == PL_ARRAY_RMR_STOICH) && m->has_metabolism) {
        key = "rmr";
        want = 12 * m->n_rmr;
        len = which == PL_ARRAY_RMR ? 8 * m->n_rmr : 4 * m->n_rmr;
        skip = which == PL_ARRAY_RMR ? 0 : 8 * m->n_rmr;
    } else if (which == PL_ARRAY_RULES && m->n_rules) {
        key = "rules";
        klen = 5;
        want = len = 4 * (m->n_reactions + 1 + m->n_rule_words);
    } else {
        return pl__err(err, PL_ERANGE, "no graph array %d in this database", which);
    }
    PL_FAIL_IF(cap < len, err, PL_ERANGE, "graph array %d needs %zu bytes, %zu given", which,
               len, cap);
    void *buf;
    int rc = pl__db_get_zstd(db->txn, db->dbi[PL_DBI_EDGES], PL_DBI_EDGES, key, klen, want,
                             &buf, err);
    PL_FAIL_IF(rc == -ENOENT, err, PL_ECORRUPT, "graph array %d missing", which);
    PL_TRY(rc);
    memcpy(out, (char *)buf + skip, len);
    free(buf);
    return (int64_t)len;
}

PL_API int pl_db_features(pl_db *db, const char *type, uint64_t *rows, uint64_t *cols,
                          char dtype[4], const void **data, pl_err *err)
{
    int t = pl__node_type(type);
    PL_FAIL_IF(t < 0, err, PL_EUSAGE, "'%s' is not a node type (gene, reaction, metabolite, "
               "term)", type);
    const void *v;
    size_t len;
    int rc = pl__db_get(db->txn, db->dbi[PL_DBI_FEAT], PL_DBI_FEAT, type, strlen(type), &v,
                        &len, err);
    PL_FAIL_IF(rc == -ENOENT, err, -ENOENT, "%s: no features stored for node type '%s'",
               db->path, type);
    PL_TRY(rc);
    struct pl__feat_header h;
    const void *d;
    PL_TRY(pl__feat_decode(v, len, &db->meta, t, &h, &d, err));
    size_t item = h.dtype[2] == '4' ? 4 : 2, bytes = len - sizeof h;
    /* A small value lies in an LMDB leaf, aligned to 2 bytes only. */
    if ((uintptr_t)d % item) {
        if (!db->feat_copy[t]) {
            db->feat_copy[t] = malloc(bytes);
            PL_FAIL_IF(!db->feat_copy[t], err, -ENOMEM, "out of memory");
            memcpy(db->feat_copy[t], d, bytes);
        }
        d = db->feat_copy[t];
    }
    *rows = h.rows;
    *cols = h.cols;
    memcpy(dtype, h.dtype, 4);
    *data = d;
    return 0;
}

/* ------------------------------------------------------------------ verify */

static int verify_inc(pl_db *db, const MDB_val *k, const MDB_val *v, pl_err *err)
{
    char kd[96];
    pl__key_describe(PL_DBI_INC, k->mv_data, k->mv_size, kd, sizeof kd);
    PL_FAIL_IF(k->mv_size != 6, err, PL_ECORRUPT, "key %s: bad key", kd);
    const unsigned char *kb = k->mv_data;
    uint32_t kind = (uint32_t)kb[0] << 8 | kb[1];
    uint32_t gene = (uint32_t)kb[2] << 24 | (uint32_t)kb[3] << 16 | (uint32_t)kb[4] << 8 | kb[5];
    const struct pl__meta *m = &db->meta;
    uint64_t limit;
    if (kind < m->n_types)
        limit = m->n_edges[kind];
    else if (m->has_metabolism && kind - m->n_types <= PL_LIST_REACTION)
        limit = kind - m->n_types == PL_LIST_GPR ? m->n_gpr : m->n_reactions;
    else
        return pl__err(err, PL_ECORRUPT, "key %s: unknown list kind", kd);
    PL_FAIL_IF(gene >= m->n_genes, err, PL_ECORRUPT, "key %s: gene out of range", kd);
    uint32_t *vals = NULL;
    uint64_t cap = 0, n = 0;
    int rc = pl__inc_decode(v->mv_data, v->mv_size - 8, limit, &vals, &cap, &n, kd, err);
    free(vals);
    return rc;
}

/* A "feat" value: a node type's name as key, its header and size. */
static int verify_feat(pl_db *db, const MDB_val *k, const MDB_val *v, pl_err *err)
{
    char name[16] = "";
    if (k->mv_size < sizeof name)
        memcpy(name, k->mv_data, k->mv_size);
    int t = memchr(name, '\0', k->mv_size) ? -1 : pl__node_type(name);
    PL_FAIL_IF(t < 0, err, PL_ECORRUPT, "key feat/%.*s: not a node type",
               (int)(k->mv_size < 64 ? k->mv_size : 64), (const char *)k->mv_data);
    struct pl__feat_header h;
    const void *d;
    return pl__feat_decode(v->mv_data, v->mv_size - 8, &db->meta, t, &h, &d, err);
}

static int verify_payload(pl_db *db, pl_err *err)
{
    const struct pl__meta *m = &db->meta;
    char p[4096];
    if (!payload_path(db, p, sizeof p))
        return 0;
    const void *v;
    size_t len;
    int rc = pl__db_get(db->txn, db->dbi[PL_DBI_META], PL_DBI_META, "payload", 7, &v, &len,
                        err);
    PL_FAIL_IF(rc == -ENOENT, err, PL_ECORRUPT, "key meta/payload missing");
    PL_TRY(rc);
    uint64_t data = m->payload_row_bytes * m->n_samples;
    uint64_t chunks = (data + PL_PAYLOAD_CHUNK - 1) / PL_PAYLOAD_CHUNK;
    PL_FAIL_IF(len != chunks * 8, err, PL_ECORRUPT, "key meta/payload: wrong size");
    int fd = db->payload_fd;
    struct stat st;
    PL_FAIL_IF(fstat(fd, &st) < 0, err, -errno, "%s: %s", p, strerror(errno));
    PL_FAIL_IF((uint64_t)st.st_size != m->payload_bytes ||
                   m->payload_bytes != m->payload_offset + data,
               err, PL_ECORRUPT, "%s: %llu bytes, the database expects %llu (truncated?)", p,
               (unsigned long long)st.st_size, (unsigned long long)m->payload_bytes);
    char *buf = malloc(PL_PAYLOAD_CHUNK);
    rc = buf ? 0 : pl__err(err, -ENOMEM, "out of memory");
    for (uint64_t c = 0; rc == 0 && c < chunks; c++) {
        uint64_t off = c * PL_PAYLOAD_CHUNK;
        size_t n = (size_t)(data - off < PL_PAYLOAD_CHUNK ? data - off : PL_PAYLOAD_CHUNK);
        uint64_t want;
        memcpy(&want, (const char *)v + 8 * c, 8);
        rc = pl__read_all(fd, buf, n, m->payload_offset + off, p, err);
        if (rc == 0 && pl__xxh64(buf, n, 0) != want)
            rc = pl__err(err, PL_ECORRUPT, "%s: chunk %llu (bytes %llu..%llu): checksum "
                         "mismatch", p, (unsigned long long)c,
                         (unsigned long long)(m->payload_offset + off),
                         (unsigned long long)(m->payload_offset + off + n));
    }
    free(buf);
    return rc;
}

/* The gene-reaction rules: every program well formed (rule.h). */
static int verify_rules(pl_db *db, pl_err *err)
{
    const struct pl__meta *m = &db->meta;
    const uint32_t *off, *code;
    uint32_t depth;
    void *v;
    size_t len = (m->n_reactions + 1 + m->n_rule_words) * sizeof(uint32_t);
    int rc = pl__db_get_zstd(db->txn, db->dbi[PL_DBI_EDGES], PL_DBI_EDGES, "rules", 5, len,
                             &v, err);
    PL_FAIL_IF(rc == -ENOENT, err, PL_ECORRUPT, "key edges/rules missing");
    PL_TRY(rc);
    rc = pl__rules_decode(v, len, m->n_reactions, m->n_rule_words, m->n_rules, m->n_genes,
                          &off, &code, &depth, err);
    free(v);
    return rc;
}

PL_API int pl_db_verify(pl_db *db, pl_err *err)
{
    for (int d = 0; d < PL_DBI_COUNT; d++) {
        MDB_cursor *cur;
        MDB_val k, v;
        int rc = mdb_cursor_open(db->txn, db->dbi[d], &cur);
        PL_FAIL_IF(rc, err, pl__lmdb_code(rc), "%s: %s", db->path, mdb_strerror(rc));
        for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
             rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
            int r = pl__db_check(d, &k, &v, err);
            if (r == 0 && d == PL_DBI_INC)
                r = verify_inc(db, &k, &v, err);
            if (r == 0 && d == PL_DBI_FEAT)
                r = verify_feat(db, &k, &v, err);
            if (r < 0) {
                mdb_cursor_close(cur);
                return r;
            }
        }
        mdb_cursor_close(cur);
        PL_FAIL_IF(rc != MDB_NOTFOUND, err, pl__lmdb_code(rc), "%s: %s", db->path,
                   mdb_strerror(rc));
    }
    /* Edge arrays: decompress and range-check. */
    const struct pl__meta *m = &db->meta;
    if (m->n_terms) {
        pl_ontology *on;
        PL_TRY(pl_ontology_load(db, &on, err));
        pl_ontology_free(on);
    }
    for (uint32_t t = 0; t < m->n_types; t++) {
        unsigned char key[2];
        pl__edges_key(key, t);
        int32_t *e;
        int rc = pl__db_get_zstd(db->txn, db->dbi[PL_DBI_EDGES], PL_DBI_EDGES, key, 2,
                                 8 * m->n_edges[t], (void **)&e, err);
        PL_FAIL_IF(rc == -ENOENT, err, PL_ECORRUPT, "key edges/type %u missing", t);
        PL_TRY(rc);
        uint64_t bad = 0;
        for (uint64_t i = 0; i < 2 * m->n_edges[t]; i++)
            bad += (e[i] < 0 || (uint64_t)e[i] >= m->n_genes);
        uint64_t fp = pl__xxh64(e, 8 * m->n_edges[t], 0);
        free(e);
        PL_FAIL_IF(bad, err, PL_ECORRUPT, "key edges/type %u: gene index out of range", t);
        PL_FAIL_IF(fp != m->edge_fingerprint[t], err, PL_ECORRUPT,
                   "key edges/type %u: the arrays' fingerprint %016llx is not the one in "
                   "meta/meta (%016llx)", t, (unsigned long long)fp,
                   (unsigned long long)m->edge_fingerprint[t]);
    }
    if (m->has_metabolism) {
        int32_t *a;
        const struct {
            const char *key;
            uint64_t n, width, limit0, limit1;
        } arr[2] = {{"gpr", m->n_gpr, 2, m->n_genes, m->n_reactions},
                    {"rmr", m->n_rmr, 3, m->n_reactions, m->n_metabolites}};
        for (int k = 0; k < 2; k++) {
            int rc = pl__db_get_zstd(db->txn, db->dbi[PL_DBI_EDGES], PL_DBI_EDGES, arr[k].key,
                                     3, 4 * arr[k].width * arr[k].n, (void **)&a, err);
            PL_FAIL_IF(rc == -ENOENT, err, PL_ECORRUPT, "key edges/%s missing", arr[k].key);
            PL_TRY(rc);
            uint64_t bad = 0;
            for (uint64_t i = 0; i < arr[k].n; i++)
                bad += a[i] < 0 || (uint64_t)a[i] >= arr[k].limit0 || a[arr[k].n + i] < 0 ||
                       (uint64_t)a[arr[k].n + i] >= arr[k].limit1;
            free(a);
            PL_FAIL_IF(bad, err, PL_ECORRUPT, "key edges/%s: index out of range", arr[k].key);
        }
    }
    if (m->n_rules)
        PL_TRY(verify_rules(db, err));
    for (uint64_t b = 0; b < m->n_blocks; b++)
        PL_TRY(pl__db_load_block(db, b, err));
    return verify_payload(db, err);
}
