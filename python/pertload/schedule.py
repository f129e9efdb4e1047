"""The DCell schedule of an ontology (docs/dcell.md): the terms of each stratum
in groups of equal (input size, output size), with the int64 index arrays a
model needs to run each group as one batched matrix product (torch.bmm), and
per batch the affected-term schedule (AffectedSchedule), built in C.

The state layout. A model keeps one state row per sample, `state_size`
columns wide:
  columns [0, n_annotations)       the annotation inputs: column p is
                                   annotation position p (graph.ontology.
                                   annotation_index[:, p]), 1 = kept, 0 =
                                   removed (its gene is deleted)
  columns [term_offset[T], + width[T])  term T's output (its state)
Terms are laid out in schedule order (their slots): stratum by stratum,
group by group, the terms of a group by ascending id, so that the outputs of
a group, and of a stratum, are one contiguous column range.

Term T's input is its children's outputs (children in the order of
graph.ontology.children, width[c] columns each), then its direct
annotations (in position order): n_inputs(T) = sum of the children's widths
+ its number of direct annotations.
"""

import ctypes

import numpy as np

from . import _lib
from ._identity import check_same_database

MAX_COLUMNS = 2**31 - 1
"""The most columns a schedule's state may have (annotations and every
term's output; pertload.h, PL_SCHEDULE_MAX_COLUMNS): wider widths are
refused."""

PAD = -1
"""Sentinel of the padded index arrays (child_rows, annotations) of a group
whose terms differ in their numbers of children or annotations; their masks
say which entries are real."""


class Group:
    """Terms of one stratum with equal input size and output size.

    terms        int64 [K] term ids, ascending
    n_inputs     I, width W (output size of each term)
    input        int64 [K, I] state columns of each term's input (children's
                 outputs, then direct annotations): x = state[:, input]
    child_rows   int64 [K, C] state columns of the children's outputs (C the
                 most any term of the group has; PAD where fewer) and
                 child_mask bool [K, C]
    annotations  int64 [K, A] direct annotation positions (= state columns),
                 PAD-padded likewise, and annotation_mask bool [K, A]
    out_lo, out_hi  the group's output columns: term j of the group writes
                 columns out_lo + j * W .. out_lo + (j + 1) * W
    slot_lo      the schedule slot of the group's first term
    stratum      its stratum
    """

    _TENSORS = ("terms", "input", "child_rows", "child_mask", "annotations", "annotation_mask")

    def __repr__(self):
        return (f"<pertload.schedule.Group: stratum {self.stratum}, {len(self.terms)} terms, "
                f"{self.n_inputs} -> {self.width}>")


class Stratum:
    """groups (list of Group), gather int64 [sum of K * I over the groups]:
    the groups' `input` arrays flattened and concatenated (one index_select
    per stratum gathers every group's input; group k's part starts at
    gather_ptr[k]), and out_lo, out_hi: the stratum's output columns."""


class Schedule:
    """The schedule of an OntologyGraph for given term widths; see the module
    documentation for the state layout.

    width        int64 [n_terms] output size of each term
    term_offset  int64 [n_terms] first state column of each term's output
    slot_term    int64 [n_terms] the term of each slot (schedule order);
                 term_slot its inverse
    state_size   columns of the state (n_annotations + sum of the widths)
    strata       list of Stratum; groups: every Group in schedule order
    roots        int64 term ids of the terms without a parent
    n_annotations  the annotation columns at the start of the state
    fingerprints (gene_fingerprint, edge_fingerprints, db_fingerprint)
                 those of its database (OntologyGraph.fingerprints), or None

    .to(device) gives the same schedule with every index array a torch
    tensor on `device`; .affected(batch) the batch's affected-term schedule.
    """

    def __init__(self, onto, width):
        i64 = np.int64
        T = onto.n_terms
        self.n_terms, self.n_annotations = T, onto.n_annotations
        self.term_names = onto.term_names
        # the identity of the database of `onto` (OntologyGraph.fingerprints)
        self.fingerprints = getattr(onto, "fingerprints", None)
        if self.fingerprints is not None:
            (self.gene_fingerprint, self.edge_fingerprints,
             self.db_fingerprint) = self.fingerprints
        self.width = _widths(width, onto.n_term_genes, T)
        cptr, cidx = onto.children
        ann_term = onto.annotation_index[1]
        ann_order = np.argsort(ann_term, kind="stable")
        ann_ptr = np.zeros(T + 1, i64)
        np.cumsum(np.bincount(ann_term, minlength=T), out=ann_ptr[1:])
        n_ann = np.diff(ann_ptr)
        parent = np.repeat(np.arange(T), np.diff(cptr))
        n_child_cols = np.bincount(parent, weights=self.width[cidx], minlength=T).astype(i64)
        n_in = n_child_cols + n_ann
        # slot order: stratum, input size, output size, term id
        order = np.lexsort((np.arange(T), self.width, n_in, onto.stratum))
        self.slot_term = order.astype(i64)
        self.term_slot = np.empty(T, i64)
        self.term_slot[order] = np.arange(T)
        self.term_offset = np.empty(T, i64)
        self.state_size = int(self.n_annotations) + int(self.width.sum())
        if self.state_size > MAX_COLUMNS:
            raise ValueError(f"schedule: width: the state would have {self.state_size} columns "
                             f"({self.n_annotations} annotations and the {T} terms' widths), "
                             f"more than the limit {MAX_COLUMNS}")
        self.term_offset[order] = self.n_annotations + np.concatenate(
            ([0], np.cumsum(self.width[order])[:-1])).astype(i64) if T else 0
        has_parent = np.zeros(T, bool)
        has_parent[cidx] = True
        self.roots = np.flatnonzero(~has_parent).astype(i64)

        def term_inputs(t):
            cols = [np.arange(self.term_offset[c], self.term_offset[c] + self.width[c])
                    for c in cidx[cptr[t]:cptr[t + 1]]]
            return (np.concatenate(cols).astype(i64) if cols else np.zeros(0, i64),
                    ann_order[ann_ptr[t]:ann_ptr[t + 1]].astype(i64))

        key = np.stack([onto.stratum[order], n_in[order], self.width[order]], 1) if T else \
            np.zeros((0, 3), i64)
        starts = np.flatnonzero(np.any(np.diff(key, axis=0) != 0, axis=1)) + 1
        bounds = np.concatenate(([0], starts, [T])).astype(i64) if T else np.zeros(1, i64)
        self.groups, self.strata = [], []
        for k in range(len(bounds) - 1):
            lo, hi = int(bounds[k]), int(bounds[k + 1])
            g = Group()
            g.terms = order[lo:hi].astype(i64)
            g.stratum, g.n_inputs, g.width = (int(v) for v in key[lo])
            g.slot_lo = lo
            g.out_lo = int(self.term_offset[g.terms[0]])
            g.out_hi = g.out_lo + len(g.terms) * g.width
            parts = [term_inputs(t) for t in g.terms]
            g.input = np.stack([np.concatenate(p) for p in parts]).reshape(len(parts), g.n_inputs)
            g.child_rows, g.child_mask = _padded([p[0] for p in parts])
            g.annotations, g.annotation_mask = _padded([p[1] for p in parts])
            self.groups.append(g)
            if not self.strata or self.strata[-1].groups[0].stratum != g.stratum:
                s = Stratum()
                s.groups = []
                self.strata.append(s)
            self.strata[-1].groups.append(g)
        for s in self.strata:
            sizes = [g.input.size for g in s.groups]
            s.gather_ptr = np.concatenate(([0], np.cumsum(sizes))).astype(i64)
            s.gather = np.concatenate([g.input.reshape(-1) for g in s.groups])
            s.out_lo, s.out_hi = s.groups[0].out_lo, s.groups[-1].out_hi
        self._map = _CMap(self)
        self.device = None

    def __repr__(self):
        return (f"<pertload.Schedule: {self.n_terms} terms, {len(self.strata)} strata, "
                f"{len(self.groups)} groups, state {self.state_size} columns"
                f"{'' if self.device is None else ' on ' + str(self.device)}>")

    def to(self, device):
        """A copy whose index arrays (width, term_offset, slot_term,
        term_slot, roots; per group terms, input, child_rows, child_mask,
        annotations, annotation_mask; per stratum gather, gather_ptr) are torch
        tensors on `device`; the numpy schedule (self) is unchanged."""
        import copy

        import torch

        def up(a):
            return torch.from_numpy(np.ascontiguousarray(a)).to(device)

        out = copy.copy(self)
        for name in ("width", "term_offset", "slot_term", "term_slot", "roots"):
            setattr(out, name, up(getattr(self, name)))
        out.groups, out.strata = [], []
        for s in self.strata:
            t = copy.copy(s)
            t.groups = []
            for g in s.groups:
                h = copy.copy(g)
                for name in Group._TENSORS:
                    setattr(h, name, up(getattr(g, name)))
                t.groups.append(h)
                out.groups.append(h)
            t.gather, t.gather_ptr = up(s.gather), s.gather_ptr
            out.strata.append(t)
        out.device = torch.device(device)
        return out

    def affected(self, batch, device=None):
        """The affected-term schedule of a batch (AffectedSchedule), from its
        ontology lists (batch.ontology["term"]: per sample the terms whose
        genes(T) meets the deleted set), built in C; its arrays are torch
        tensors on `device` (default: this schedule's device), or numpy
        arrays when neither is given. A batch of another database than the
        schedule's is a LoaderError (check_same_database; not checked for a
        batch that carries no fingerprints, one made outside a Loader)."""
        if getattr(batch, "ontology", None) is None:
            raise _lib.LoaderError("the batch carries no ontology lists (a database without an "
                                   "ontology, or Loader(ontology=False))")
        if self.fingerprints is not None and getattr(batch, "gene_fingerprint", None) is not None:
            check_same_database(batch, self, "the schedule")
        terms, ptr = batch.ontology["term"]
        return AffectedSchedule(self, terms, ptr, self.device if device is None else device)


class AffectedSchedule:
    """The terms of a batch's schedule a model must compute: every other term
    sees no deleted gene in any sample, so its output is the wild type's.

    group_ptr   int64 [n_groups + 1]; positions[group_ptr[k]:group_ptr[k+1]]
                are the positions (0..K-1, ascending) in group k of the terms
                affected by any sample of the batch; counts: their number per
                group (a list of ints, on the host)
    gather, gather_ptr   per stratum s, gather[gather_ptr[s]:gather_ptr[s+1]]
                is the state columns of the inputs of those terms, group by
                group (the rows input[positions] of each group, flattened)
    scatter, scatter_ptr  per stratum, the output columns of those terms
                (in the same order): state[:, scatter_s] = outputs
    terms       int64: the affected terms (union over the batch), in slot order
    sample_slots, sample_ptr  per sample b, the slots (schedule positions,
                ascending) of its affected terms:
                sample_slots[sample_ptr[b]:sample_ptr[b+1]]
    rest_group_ptr, rest_positions, rest_counts, rest_gather(_ptr),
    rest_scatter(_ptr), rest_terms   the same of the other terms (no sample
                affects them): a model computes these on the wild type alone
    Arrays are torch tensors on `device`, or numpy arrays without one;
    the _ptr arrays of gather and scatter, and counts, stay on the host
    (numpy / list).
    """

    def __init__(self, sched, terms, ptr, device=None):
        m = sched._map
        terms = _index_array(terms, "terms", np.int32)
        ptr = _index_array(ptr, "ptr", np.int64)
        if not 1 <= len(ptr) <= 2**32:
            raise ValueError(f"affected: ptr has {len(ptr)} entries; 1 to 2**32 (one more than "
                             "the samples) expected")
        if not 0 <= ptr[-1] <= len(terms):
            raise ValueError(f"affected: ptr[-1] = {int(ptr[-1])} is outside 0..{len(terms)} "
                             f"(terms has {len(terms)} entries)")
        n_samples = len(ptr) - 1
        i64, vp = np.int64, ctypes.c_void_p
        room = {"group_ptr": m.n_groups + 1, "positions": max(m.n_terms, 1),
                "gather_ptr": m.n_strata + 1, "gather": max(int(m.slot_in_ptr[-1]), 1),
                "scatter_ptr": m.n_strata + 1,
                "scatter": max(int(m.slot_out[-1] - m.slot_out[0]), 1)}
        out = {"sample_ptr": np.zeros(n_samples + 1, i64),
               "sample_slots": np.empty(max(len(terms), 1), i64)}
        for k, n in room.items():
            out[k] = np.zeros(n, i64)
            out["rest_" + k] = np.zeros(n, i64)
        err = _lib.PlErr()
        res = _lib.ScheduleAffectedOut(**{k: v.ctypes.data_as(vp) for k, v in out.items()})
        rc = _lib.lib().pl_schedule_affected(
            ctypes.byref(m.struct), terms.ctypes.data_as(vp), ptr.ctypes.data_as(vp), n_samples,
            ctypes.byref(res), ctypes.byref(err))
        _lib.check(rc, err, "the affected-term schedule")
        sp = out["sample_ptr"]
        arrays = {"sample_ptr": sp, "sample_slots": out["sample_slots"][:sp[-1]]}
        for pre in ("", "rest_"):
            gp = out[pre + "group_ptr"]
            counts = np.diff(gp)
            setattr(self, pre + "counts", counts.tolist())
            setattr(self, pre + "gather_ptr", out[pre + "gather_ptr"])
            setattr(self, pre + "scatter_ptr", out[pre + "scatter_ptr"])
            arrays[pre + "group_ptr"] = gp
            arrays[pre + "positions"] = out[pre + "positions"][:gp[-1]]
            arrays[pre + "gather"] = out[pre + "gather"][:out[pre + "gather_ptr"][-1]]
            arrays[pre + "scatter"] = out[pre + "scatter"][:out[pre + "scatter_ptr"][-1]]
            arrays[pre + "terms"] = m.slot_term[
                np.repeat(m.group_slot_lo, counts) + arrays[pre + "positions"]] \
                if m.n_groups else np.zeros(0, i64)
        self.device = None
        if device is not None:
            import torch

            self.device = torch.device(device)
            arrays = {k: torch.from_numpy(np.ascontiguousarray(v)).to(device)
                      for k, v in arrays.items()}
        for k, v in arrays.items():
            setattr(self, k, v)
        self.n_samples = n_samples

    def __repr__(self):
        return (f"<pertload.AffectedSchedule: {len(self.terms)} affected terms over "
                f"{self.n_samples} samples>")


class _CMap:
    """The schedule's maps for pl_schedule_affected (numpy arrays kept alive
    beside the ctypes struct that points into them)."""

    def __init__(self, s):
        u32, u64, i64, vp = np.uint32, np.uint64, np.int64, ctypes.c_void_p
        self.n_terms, self.n_groups, self.n_strata = s.n_terms, len(s.groups), len(s.strata)
        self.term_slot = s.term_slot.astype(u32)
        self.group_slot_lo = np.array([g.slot_lo for g in s.groups], i64)
        self.group_ptr = np.append(self.group_slot_lo, s.n_terms).astype(u32)
        gps, n = [0], 0
        for st in s.strata:
            n += len(st.groups)
            gps.append(n)
        self.stratum_ptr = np.array(gps, u32)
        self.slot_term = s.slot_term
        per_slot = [g.input[j] for g in s.groups for j in range(len(g.terms))]
        sizes = np.array([len(r) for r in per_slot], u64)
        self.slot_in_ptr = np.concatenate(([0], np.cumsum(sizes))).astype(u64)
        self.slot_in = np.concatenate(per_slot).astype(i64) if per_slot else np.zeros(1, i64)
        w = s.width[s.slot_term]
        self.slot_out = (s.n_annotations + np.concatenate(([0], np.cumsum(w)))).astype(u64)
        self.struct = _lib.ScheduleMap(
            n_terms=self.n_terms, n_groups=self.n_groups, n_strata=self.n_strata,
            term_slot=self.term_slot.ctypes.data_as(vp),
            group_ptr=self.group_ptr.ctypes.data_as(vp),
            stratum_ptr=self.stratum_ptr.ctypes.data_as(vp),
            slot_in_ptr=self.slot_in_ptr.ctypes.data_as(vp),
            slot_in=self.slot_in.ctypes.data_as(vp),
            slot_out=self.slot_out.ctypes.data_as(vp))


def _is_int(v):
    """An int or a numpy integer, not a bool (nor a float, a string...)."""
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def _width_of(v, what):
    """The width `v` as an int in 1..MAX_COLUMNS; TypeError or ValueError
    naming `what` (the argument, or the function's result) otherwise."""
    if not _is_int(v):
        raise TypeError(f"schedule: {what} must be an int, not {type(v).__name__} {v!r}")
    if not 1 <= v <= MAX_COLUMNS:
        raise ValueError(f"schedule: {what} is {int(v)}; every width must be >= 1 and at most "
                         f"{MAX_COLUMNS}")
    return int(v)


def _widths(width, n_term_genes, n_terms):
    """int64 [n_terms] widths from an int, a per-term array or a function of
    |genes(T)| (called with each term's gene count, an int, and returning an
    int); each in 1..MAX_COLUMNS, else TypeError or ValueError naming width."""
    if callable(width):
        w = np.array([_width_of(width(int(n)), f"width({int(n)}) (the function's result)")
                      for n in n_term_genes], np.int64)
    elif np.ndim(width) == 0:
        w = np.full(n_terms, _width_of(width, "width"), np.int64)
    else:
        w = np.asarray(width)
        if w.shape != (n_terms,) or not np.issubdtype(w.dtype, np.integer):
            error = ValueError if np.issubdtype(w.dtype, np.integer) else TypeError
            raise error(f"schedule: width must be an int, a function of |genes(T)| or "
                        f"{n_terms} integers (one per term), not {w.dtype} {w.shape}")
        if n_terms and not (w.min() >= 1 and w.max() <= MAX_COLUMNS):
            t = int(np.argmin(w)) if w.min() < 1 else int(np.argmax(w))
            raise ValueError(f"schedule: width of term {t} is {int(w[t])}; every width must "
                             f"be >= 1 and at most {MAX_COLUMNS}")
        w = w.astype(np.int64)
    return w


def _index_array(a, what, dtype):
    """`a` as a contiguous 1-D array of `dtype` (int32 or int64): TypeError
    unless it is a 1-D integer array, ValueError when a value does not fit."""
    a = np.asarray(a)
    if a.ndim != 1 or not np.issubdtype(a.dtype, np.integer):
        raise TypeError(f"affected: {what} must be a 1-D integer array, not {a.dtype} "
                        f"{a.shape}")
    lim = np.iinfo(dtype)
    if len(a) and (a.min() < lim.min or a.max() > lim.max):
        bad = a.min() if a.min() < lim.min else a.max()
        raise ValueError(f"affected: {what} holds {int(bad)}, outside the {np.dtype(dtype)} "
                         "range")
    return np.ascontiguousarray(a, dtype)


def _padded(rows):
    """(int64 [K, max len] padded with PAD, bool mask) of K int64 arrays."""
    n = max((len(r) for r in rows), default=0)
    out = np.full((len(rows), n), PAD, np.int64)
    mask = np.zeros((len(rows), n), bool)
    for j, r in enumerate(rows):
        out[j, :len(r)] = r
        mask[j, :len(r)] = True
    return out, mask
