/* The batch slot layout: one contiguous, self-describing block of named arrays.
 *
 * A slot starts with struct pl_slot_header, followed by n_arrays
 * struct pl_slot_array descriptors; array data follow at 64-byte aligned
 * offsets relative to the slot start. Every integer is little-endian. A
 * consumer needs nothing else to map the arrays (numpy: dtype = `dtype`,
 * shape = shape[0..ndim), buffer = slot + offset, nbytes bytes).
 *
 * Arrays of a batch of B samples (L labels, n_types edge types):
 *   sample_id                 <u8 [B]
 *   row                       <u8 [B]   sample-store row (input order)
 *   labels                    <f4 [B, L]   NaN where missing
 *   perturbation_indices      <i4 [P]   per sample sorted ascending, unique
 *   perturbation_ptr          <i8 [B+1]
 *   edges/<type>/removed      <i4 [R_t] removed edge positions of type t
 *   edges/<type>/ptr          <i8 [B+1]
 *   gpr/removed, gpr/ptr, reaction/removed, reaction/ptr, rmr/removed,
 *   rmr/ptr                   (when the database has metabolism)
 *   payload                   as stored [B, ...] (when the database has one;
 *                             its offset is a multiple of PL_SLOT_PAGE)
 * and, with perturbation neighbourhoods (k-hop, masks/khop.h; walked types T):
 *   khop/genes                <i4 [G]   per sample its set S, ascending
 *   khop/genes/ptr            <i8 [B+1]
 *   khop/capped               |u1 [B]   1 where the cap cut the walk
 *   khop/edges/<type>         <i4 [K_t] per sample, ascending, positions of the
 *                             type-t edges with both ends in S (t in T)
 *   khop/edges/<type>/ptr     <i8 [B+1]
 * and, with an ontology (DESIGN section 10; on unless turned off):
 *   ontology/term/removed     <i4 [R_T] per sample, ascending, the affected
 *                             terms (genes(T) meets the deleted set)
 *   ontology/term/ptr         <i8 [B+1]
 *   ontology/annotation/removed <i4 [R_A] the removed annotation positions
 *                             (their gene is deleted), ascending
 *   ontology/annotation/ptr   <i8 [B+1]
 * and, when dense masks are asked for, mask = kept (not removed):
 *   edges/<type>/mask         |b1 [B, E_t]            (bool)
 *                             <u8 [B, ceil(E_t/64)]   (bits, LSB first)
 *   gene/mask, gpr/mask, reaction/mask, rmr/mask   likewise over genes,
 *                             GPR edges, reactions, RMR edges
 *   ontology/term/mask, ontology/annotation/mask   likewise over terms and
 *                             annotations (with an ontology)
 * Sample i's entries of a removed list are removed[ptr[i] .. ptr[i+1]).
 *
 * A batch too large for one slot comes in n_parts slots, one after another
 * (loader/parts.h): each holds the samples first .. first + n_samples - 1 of
 * the batch, laid out as above, and the same `batch`; n_parts is 1 for a
 * whole batch.
 * A consumer checks a slot with pl_slot_check() (slot.c) before it trusts any
 * descriptor.
 */
#ifndef PL_COLLATE_SLOT_H
#define PL_COLLATE_SLOT_H

#include <stdint.h>

#define PL_SLOT_MAGIC "PLBATCH1"
#define PL_SLOT_VERSION 2u
#define PL_SLOT_ALIGN 64u
#define PL_SLOT_PAGE 4096u   /* slots start on a page; so does the payload array */
#define PL_SLOT_NAME_MAX 128u
#define PL_SLOT_MAX_DIMS 10u
#define PL_SLOT_MAX_ARRAYS 1024u  /* descriptors a slot may hold */

/** One array of a slot (240 bytes). */
struct pl_slot_array {
    char name[PL_SLOT_NAME_MAX]; /* NUL-terminated */
    char dtype[8];               /* numpy type string: "<u8" "<i8" "<i4" "<f4" "<f2" "|u1" "|b1" */
    uint32_t ndim;
    uint32_t reserved;
    uint64_t offset;             /* from the slot start, multiple of PL_SLOT_ALIGN */
    uint64_t nbytes;
    uint64_t shape[PL_SLOT_MAX_DIMS];
};

/** The head of a slot (64 bytes). */
struct pl_slot_header {
    char magic[8];               /* PL_SLOT_MAGIC */
    uint32_t version;            /* PL_SLOT_VERSION */
    uint32_t n_arrays;
    uint64_t batch;              /* batch index within the epoch */
    uint64_t epoch;
    uint32_t n_samples;          /* B */
    uint32_t dense;              /* 0 none, 1 bits, 2 bool */
    uint64_t used;               /* bytes of the slot in use */
    uint32_t part;               /* 0..n_parts-1 */
    uint32_t n_parts;            /* >= 1: the batch came in this many slots */
    uint64_t first;              /* the part's first sample within the batch */
};

_Static_assert(sizeof(struct pl_slot_array) == 240, "slot array descriptor size");
_Static_assert(sizeof(struct pl_slot_header) == 64, "slot header size");

#endif
