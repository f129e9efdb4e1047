#!/usr/bin/python3
"""A DCell-style model driven by pertload's schedule (docs/dcell.md).

One small network per ontology term, run from the leaves to the roots,
stratum by stratum: term T reads its children's outputs and its direct
annotations (1 = kept, 0 = the annotated gene is deleted) and writes
tanh(x W_T + b_T), width(T) values; each term has an auxiliary head
(a_T . y + c_T) trained against the label as DCell does, and a linear layer
over the roots' outputs predicts the label.

Everything comes from pertload: graph.ontology.schedule(width=...) groups the
terms of each stratum by (input size, output size), so that each group runs
as one torch.bmm over index arrays the schedule holds (one gather per
stratum); schedule.affected(batch) says which terms any sample of the batch
affects (built in C), so that forward(..., affected=...) computes only those
and takes the wild type's outputs for the rest (exact: a term that sees no
deleted gene has the wild type's inputs); by="pair" (the default here)
computes each affected term only on the samples that affect it.

usage: dcell.py DB [--steps 20] [--batch-size 64] [--min-width 4]
                   [--width-share 0.3] [--all-terms] [--by pair] [--seed 0]
                   [--split COLUMN [--epochs 2] [--train-level train]
                    [--eval-level LEVEL]]

DB is a database with an ontology and at least one label (the first label
is the target). Widths: max(min_width, ceil(width_share * |genes(T)|)).
With --split, the rows of one level of the category column COLUMN train
the model for --epochs epochs (each its whole level) and, after each epoch,
the rows of another level are evaluated (no update): one line per epoch
with both losses. The evaluated level is --eval-level, by default the
column's other level when it has two, else its first of val, validation,
valid, dev, test.
"""
import argparse
import math
import time

import numpy as np
import torch
from torch import nn

import pertload


class State:
    """The state rows of a forward pass (one row per sample, the schedule's
    state layout) outside autograd, with one gradient buffer of the same
    shape: a stratum's gather adds its gradient into the buffer at the
    gathered columns, and the write of a stratum's outputs hands the buffer's
    columns back as their gradient once every later stratum's gather has
    added to them (a token tensor chains the writes and gathers so that
    autograd runs them in that order). No pass allocates or sums a
    full-width gradient per stratum, as index_select and slice assignment on
    one autograd state tensor would."""

    def __init__(self, kept, state_size):
        rows = kept.shape[0]
        self.buf = kept.new_zeros((rows, state_size))
        self.buf[:, :kept.shape[1]] = kept.detach()
        self.grad = kept.new_zeros((rows, state_size))
        self.token = kept.new_zeros(1, requires_grad=True)

    def gather(self, idx):
        """buf[:, idx] (autograd through the buffer)."""
        return _Gather.apply(self.token, self, idx)

    def write(self, lo, hi, out):
        """buf[:, lo:hi] = out."""
        self.token = _Write.apply(out, self.token, self, lo, hi)

    def gather_at(self, flat):
        """buf.view(-1)[flat]: single entries (row * state_size + column)."""
        return _Gather.apply(self.token, self, flat, True)

    def write_at(self, flat, values):
        """buf.view(-1)[flat] = values, over what an earlier write put there:
        those entries' gradient goes to `values` only."""
        self.token = _WriteAt.apply(values, self.token, self, flat)


class _Gather(torch.autograd.Function):
    @staticmethod
    def forward(ctx, token, st, idx, flat=False):
        ctx.st, ctx.idx, ctx.flat = st, idx, flat
        if flat:
            return st.buf.view(-1).index_select(0, idx)
        return st.buf.index_select(1, idx)

    @staticmethod
    def backward(ctx, g):
        if ctx.flat:
            ctx.st.grad.view(-1).index_add_(0, ctx.idx, g)
        else:
            ctx.st.grad.index_add_(1, ctx.idx, g)
        return g.new_zeros(1), None, None, None


class _Write(torch.autograd.Function):
    @staticmethod
    def forward(ctx, out, token, st, lo, hi):
        st.buf[:, lo:hi] = out
        ctx.st, ctx.lo, ctx.hi = st, lo, hi
        return token.clone()

    @staticmethod
    def backward(ctx, g_token):
        return ctx.st.grad[:, ctx.lo:ctx.hi].clone(), g_token, None, None, None


class _WriteAt(torch.autograd.Function):
    @staticmethod
    def forward(ctx, values, token, st, flat):
        st.buf.view(-1).index_copy_(0, flat, values.reshape(-1))
        ctx.st, ctx.flat, ctx.shape = st, flat, values.shape
        return token.clone()

    @staticmethod
    def backward(ctx, g_token):
        grad = ctx.st.grad.view(-1)
        g = grad.index_select(0, ctx.flat).view(ctx.shape)
        grad.index_fill_(0, ctx.flat, 0)  # overwritten: the earlier write gets none
        return g, g_token, None, None


class DCell(nn.Module):
    """The model over a Schedule (numpy or on a device). Parameters per
    group: weight [K, I, W], bias [K, 1, W], aux_weight [K, W], aux_bias
    [K]; `head` over the roots' outputs."""

    def __init__(self, schedule, dtype=torch.float32):
        super().__init__()
        if schedule.device is None:
            schedule = schedule.to("cpu")
        self.s = schedule
        self.weight, self.bias = nn.ParameterList(), nn.ParameterList()
        self.aux_weight, self.aux_bias = nn.ParameterList(), nn.ParameterList()
        for g in schedule.groups:
            K, I, W = len(g.terms), g.n_inputs, g.width
            bound = 1 / math.sqrt(max(I, 1))
            self.weight.append(nn.Parameter(torch.empty(K, I, W, dtype=dtype).uniform_(-bound,
                                                                                       bound)))
            self.bias.append(nn.Parameter(torch.empty(K, 1, W, dtype=dtype).uniform_(-bound,
                                                                                     bound)))
            self.aux_weight.append(nn.Parameter(torch.empty(K, W, dtype=dtype).uniform_(-1, 1)))
            self.aux_bias.append(nn.Parameter(torch.zeros(K, dtype=dtype)))
        widths = schedule.width
        roots = schedule.roots
        n_root = int(sum(int(widths[int(r)]) for r in roots))
        self.head = nn.Linear(n_root, 1, dtype=dtype)
        self._slot_maps()
        self.root_cols = np.concatenate([np.arange(int(schedule.term_offset[int(r)]),
                                                   int(schedule.term_offset[int(r)]) +
                                                   int(widths[int(r)])) for r in roots])

    def _slot_maps(self):
        """Host arrays for _pair_layout(): per slot its group, input columns
        (CSR: in_ptr, in), first output column and width; per group its size,
        first slot and input size."""
        s = self.s

        def host(a):
            return np.asarray(a.cpu()) if torch.is_tensor(a) else np.asarray(a)

        sizes = [len(g.terms) for g in s.groups]
        self._group_inputs = np.array([g.n_inputs for g in s.groups], np.int64)
        n_in = np.repeat(self._group_inputs, sizes)
        self._slots = {
            "group": np.repeat(np.arange(len(s.groups)), sizes),
            "size": np.array(sizes, np.int64),
            "slot_lo": np.array([g.slot_lo for g in s.groups], np.int64),
            "in": np.concatenate([host(g.input).ravel() for g in s.groups]).astype(np.int64),
            "in_ptr": np.concatenate(([0], np.cumsum(n_in))),
            "out": host(s.term_offset)[host(s.slot_term)],
            "width": host(s.width)[host(s.slot_term)]}

    def term_parameters(self, term):
        """(W_T [I, W], b_T [W], a_T [W], c_T) of a term (for a per-term
        reference or inspection)."""
        for k, g in enumerate(self.s.groups):
            hit = (torch.as_tensor(g.terms) == term).nonzero()
            if len(hit):
                j = int(hit[0, 0])
                return (self.weight[k][j], self.bias[k][j, 0], self.aux_weight[k][j],
                        self.aux_bias[k][j])
        raise KeyError(term)

    def _run(self, k, x, B, pos=None):
        """Group k on inputs x [B, n * I] (all its terms, or those at `pos`):
        (outputs [B, n * W], aux [n, B])."""
        g = self.s.groups[k]
        n = len(g.terms) if pos is None else len(pos)
        y, aux = self._terms(k, x.reshape(B, n, g.n_inputs).transpose(0, 1), pos)
        return y.transpose(0, 1).reshape(B, n * g.width), aux

    def _terms(self, k, x, pos=None):
        """Group k's terms (all, or those at `pos`) on inputs x [n, rows, I],
        term by term: (outputs [n, rows, W], aux [n, rows])."""
        w, b, aw, ab = self.weight[k], self.bias[k], self.aux_weight[k], self.aux_bias[k]
        if pos is not None and len(pos) < w.shape[0]:  # a part of the group
            w, b, aw, ab = w[pos], b[pos], aw[pos], ab[pos]
        y = torch.tanh(torch.baddbmm(b, x, w))
        return y, torch.baddbmm(ab.view(-1, 1, 1), y, aw.unsqueeze(2)).squeeze(2)

    def wild_type(self, like):
        """(state [1, state_size], aux [1, n_terms] in slot order) with every
        annotation kept."""
        kept = like.new_ones((1, self.s.n_annotations))
        return self.full(kept)[:2]

    def full(self, kept):
        """Every term for annotation inputs kept [B, n_annotations] (float):
        (state values [B, state_size], aux [B, n_terms] in slot order, the
        roots' outputs [B, root columns])."""
        B = kept.shape[0]
        state = State(kept, self.s.state_size)
        aux, k0 = [], 0
        for st in self.s.strata:
            x = state.gather(torch.as_tensor(st.gather, device=kept.device))
            outs = []
            # split, not slices: one backward copy per stratum, not one per group
            for i, xg in enumerate(x.split(np.diff(st.gather_ptr).tolist(), 1)):
                o, a = self._run(k0 + i, xg, B)
                outs.append(o)
                aux.append(a)
            state.write(st.out_lo, st.out_hi, torch.cat(outs, 1))
            k0 += len(st.groups)
        return state.buf, torch.cat(aux).T, state.gather(self._root_cols(kept))

    def _root_cols(self, like):
        return torch.as_tensor(self.root_cols, device=like.device)

    def _kept(self, removed, ptr):
        """The annotation inputs [B + 1, n_annotations]: 1 = kept, the last
        row the wild type's (all kept)."""
        B = len(ptr) - 1
        kept = self.head.weight.new_ones((B + 1, self.s.n_annotations))
        rows = torch.repeat_interleave(torch.arange(B, device=ptr.device), ptr.diff())
        kept[rows, removed] = 0
        return kept

    def _rows(self, removed, ptr):
        """(state [B + 1, state_size] with the annotation inputs, the last row
        the wild type's, aux [B + 1, n_terms] zeros)."""
        kept = self._kept(removed, ptr)
        state = kept.new_zeros((kept.shape[0], self.s.state_size))
        state[:, :self.s.n_annotations] = kept
        return state, kept.new_zeros((kept.shape[0], self.s.n_terms))

    def affected_groups(self, removed, ptr, aff):
        """The groups holding a term of `aff` (an AffectedSchedule) on every
        sample, the other groups on the wild type alone, their outputs taken
        by every sample: removed/ptr are the batch's removed annotation
        positions (batch.ontology["annotation"]) as tensors. The wild type is
        one more state row (the last). A group with an affected term runs
        whole (its other terms give the wild type's outputs): no weight is
        gathered, one torch.bmm per group as in full()."""
        B = len(ptr) - 1
        state = State(self._kept(removed, ptr), self.s.state_size)
        aux, k0 = [], 0
        for st in self.s.strata:
            hit = [aff.counts[k0 + i] > 0 for i in range(len(st.groups))]
            # one gather per stratum, as in full(); a group without an
            # affected term takes the wild type's row of its inputs only
            x = state.gather(torch.as_tensor(st.gather, device=ptr.device))
            outs = []
            for i, (h, xg) in enumerate(zip(hit, x.split(np.diff(st.gather_ptr).tolist(), 1))):
                o, a = self._run(k0 + i, xg if h else xg[B:], B + 1 if h else 1)
                outs.append(o if h else o.expand(B + 1, -1))
                aux.append(a if h else a.expand(-1, B + 1))
            state.write(st.out_lo, st.out_hi, torch.cat(outs, 1))
            k0 += len(st.groups)
        root = state.gather(self._root_cols(ptr))
        return state.buf[:B], torch.cat(aux).T[:B], root[:B]

    def affected_only(self, removed, ptr, aff):
        """The terms of `aff` (an AffectedSchedule) only on every sample, every
        term on the wild type, whose outputs the other terms take: as
        affected_groups() but term by term (the weights of the affected terms
        of a group gathered), after a wild-type pass over every group."""
        B = len(ptr) - 1
        state, aux = self._rows(removed, ptr)
        k0, p0 = 0, 0
        for si, st in enumerate(self.s.strata):
            # the wild type: every group whole, on the last row, copied to every row
            x = state[B:].index_select(1, torch.as_tensor(st.gather, device=state.device))
            outs, auxs = [], []
            for i, xg in enumerate(x.split(np.diff(st.gather_ptr).tolist(), 1)):
                o, a = self._run(k0 + i, xg, 1)
                outs.append(o)
                auxs.append(a)
            lo, hi = st.groups[0].slot_lo, st.groups[-1].slot_lo + len(st.groups[-1].terms)
            state[:, st.out_lo:st.out_hi] = torch.cat(outs, 1).expand(B + 1, -1)
            aux[:, lo:hi] = torch.cat(auxs).T.expand(B + 1, -1)
            p0 = self._part(state, aux, st, k0, p0, si, aff)
            k0 += len(st.groups)
        return state[:B], aux[:B], state[:B, self._root_cols(ptr)]

    def _part(self, state, aux, st, k0, p0, si, aff):
        """Stratum st's affected terms (aff.positions from p0) computed on
        every row and written over the wild type's; returns the position
        offset after the stratum."""
        gl, gh = int(aff.gather_ptr[si]), int(aff.gather_ptr[si + 1])
        if gl == gh:
            return p0 + sum(aff.counts[k0:k0 + len(st.groups)])
        x = state.index_select(1, aff.gather[gl:gh])
        rows = x.shape[0]
        run = [(i, g, aff.counts[k0 + i]) for i, g in enumerate(st.groups) if aff.counts[k0 + i]]
        outs, auxs, slots = [], [], []
        for (i, g, n), xg in zip(run, x.split([n * g.n_inputs for _, g, n in run], 1)):
            pos = aff.positions[p0:p0 + n]
            o, a = self._run(k0 + i, xg, rows, pos)
            outs.append(o)
            auxs.append(a)
            slots.append(pos + g.slot_lo)
            p0 += n
        cols = aff.scatter[int(aff.scatter_ptr[si]):int(aff.scatter_ptr[si + 1])]
        state.index_copy_(1, cols, torch.cat(outs, 1))
        aux.index_copy_(1, torch.cat(slots), torch.cat(auxs).T)
        return p0

    def affected_pairs(self, removed, ptr, aff):
        """Each term of `aff` (an AffectedSchedule) only on the samples that
        affect it (aff.sample_slots), every term once on the wild type, whose
        outputs the other (sample, term) pairs take. Each group runs as one
        torch.bmm over a block [K terms, rows, I] (_pair_layout): row 0 of
        every term is the wild type's, rows 1.. the samples that affect it,
        padded with the wild type's row to the group's most affected term.
        Row 0's outputs go to every state row, then the pairs' outputs over
        them at their rows only."""
        B, S, dev = len(ptr) - 1, self.s.state_size, ptr.device
        state = State(self._kept(removed, ptr), S)
        lay = self._pair_layout(aff, B, dev)
        wt_aux, pair_aux = [], []
        for st, (groups, sizes, gather, scatter) in zip(self.s.strata, lay):
            wt, vals = [], []
            for (k, rows, valid), xg in zip(groups, state.gather_at(gather).split(sizes)):
                g = self.s.groups[k]
                y, a = self._terms(k, xg.view(len(g.terms), rows, g.n_inputs))
                wt.append(y[:, 0].reshape(-1))
                wt_aux.append(a[:, :1])
                if len(valid):
                    vals.append(y.reshape(-1, g.width).index_select(0, valid).reshape(-1))
                    pair_aux.append(a.reshape(-1).index_select(0, valid))
            state.write(st.out_lo, st.out_hi, torch.cat(wt).expand(B + 1, -1))
            if vals:
                state.write_at(scatter, torch.cat(vals))
        aux = torch.cat(wt_aux).T.expand(B, -1)
        if pair_aux:
            aux = aux.index_put(lay[-1], torch.cat(pair_aux))
        root = state.gather(self._root_cols(ptr))
        return state.buf[:B], aux, root[:B]

    def _pair_layout(self, aff, B, dev):
        """Per stratum (groups, sizes, gather, scatter) for affected_pairs():
        per group (k, rows = 1 + the largest count of samples affecting one
        of its terms, valid = the rows of its [K * rows] outputs that are
        (sample, term) pairs); the flat state indices (row * state_size +
        column) of the inputs of every group's [K, rows, I] block (sizes:
        their lengths; row B, the wild type's, for row 0 and the padding)
        and of the pairs' outputs. Last, the pairs' (sample, slot) index."""
        m, S = self._slots, self.s.state_size
        sp, slots = (np.asarray(v.cpu()) if torch.is_tensor(v) else np.asarray(v)
                     for v in (aff.sample_ptr, aff.sample_slots))
        sample = np.repeat(np.arange(B), np.diff(sp))
        order = np.lexsort((sample, slots))  # by slot, then sample
        slots, sample = slots[order], sample[order]
        T, lo, K = len(m["group"]), m["slot_lo"], m["size"]
        n = np.bincount(slots, minlength=T)  # samples per slot
        first = np.concatenate(([0], np.cumsum(n)))
        grows = 1 + np.maximum.reduceat(n, lo)  # per group
        rows_of = np.repeat(grows, K)
        blk = np.concatenate(([0], np.cumsum(K * grows)))
        base = np.repeat(blk[:-1], K) + (np.arange(T) - np.repeat(lo, K)) * rows_of
        at = base[slots] + 1 + np.arange(len(slots)) - first[slots]
        row = np.full(blk[-1], B, np.int64)  # row 0 and padding: the wild type's
        row[at] = sample
        pad_slot = np.repeat(np.arange(T), rows_of)
        width = m["in_ptr"][pad_slot + 1] - m["in_ptr"][pad_slot]
        start = np.concatenate(([0], np.cumsum(width)))
        idx = np.arange(start[-1]) - np.repeat(start[:-1] - m["in_ptr"][pad_slot], width)
        gather = m["in"][idx] + np.repeat(row * S, width)
        w = m["width"][slots]
        wstart = np.concatenate(([0], np.cumsum(w)))
        scatter = (np.arange(wstart[-1]) - np.repeat(wstart[:-1], w)
                   + np.repeat(sample * S + m["out"][slots], w))

        def up(a):
            return torch.from_numpy(np.ascontiguousarray(a, np.int64)).to(dev)

        gsize = K * grows * self._group_inputs
        gstart = np.concatenate(([0], np.cumsum(gsize)))
        pstart = first[np.append(lo, T)]  # pairs per group, in order
        out, k0 = [], 0
        for st in self.s.strata:
            k1 = k0 + len(st.groups)
            groups = [(k, int(grows[k]), up(at[pstart[k]:pstart[k + 1]] - blk[k]))
                      for k in range(k0, k1)]
            out.append((groups, gsize[k0:k1].tolist(), up(gather[gstart[k0]:gstart[k1]]),
                        up(scatter[wstart[pstart[k0]]:wstart[pstart[k1]]])))
            k0 = k1
        return out + [(up(sample), up(slots))]

    def forward(self, removed, ptr, affected=None, by="group"):
        """(prediction [B], aux [B, n_terms] in slot order, state) of a batch
        given its removed annotation positions and ptr (int64 tensors);
        with `affected` (schedule.affected(batch)) only the groups holding an
        affected term (by="group", affected_groups()) or only the affected
        terms (by="term", affected_only()) run on every sample, or each
        affected term only on the samples that affect it (by="pair",
        affected_pairs())."""
        if affected is not None:
            run = {"group": self.affected_groups, "term": self.affected_only,
                   "pair": self.affected_pairs}[by]
            state, aux, root = run(removed, ptr, affected)
        else:
            state, aux, root = self.full(self._kept(removed, ptr)[:-1])
        return self.head(root)[:, 0], aux, state


def dcell_loss(pred, aux, y, aux_weight=0.3):
    """DCell's loss: the root's squared error plus aux_weight times every
    term's auxiliary squared error, over the samples whose label is known."""
    ok = ~torch.isnan(y)
    y, pred, aux = y[ok], pred[ok], aux[ok]
    return ((pred - y) ** 2).mean() + aux_weight * ((aux - y[:, None]) ** 2).mean(0).sum()


EVAL_LEVELS = ("val", "validation", "valid", "dev", "test")


def split_levels(graph, column, train, evaluate):
    """(train level, evaluated level) of the category column `column`; a
    column, level or choice the database lacks is a SystemExit naming
    what it has."""
    cats = graph.categories
    if column not in cats:
        raise SystemExit(f"--split {column}: the database has no category column {column!r} "
                         f"(its category columns: {', '.join(cats) or 'none'})")
    levels = cats[column]
    listed = f"(its levels: {', '.join(levels)})"
    if train not in levels:
        raise SystemExit(f"--train-level {train}: column {column!r} has no such level {listed}")
    others = [lv for lv in levels if lv != train]
    if evaluate is None:
        evaluate = (others[0] if len(others) == 1 else
                    next((lv for lv in EVAL_LEVELS if lv in others), None))
        if evaluate is None:
            raise SystemExit(f"--split {column}: name the level to evaluate with --eval-level "
                             f"{listed}")
    if evaluate not in others:
        raise SystemExit(f"--eval-level {evaluate}: a level of column {column!r} other than "
                         f"the trained {train!r} is expected {listed}")
    return train, evaluate


def run_batch(model, b, a):
    """(prediction, aux, label, affected term count) of batch b."""
    removed, ptr = (torch.from_numpy(v.astype(np.int64)) for v in b.ontology["annotation"])
    aff = None if a.all_terms else model.s.affected(b)
    pred, aux, _ = model(removed, ptr, aff, a.by)
    n_aff = len(aff.terms) if aff is not None else model.s.n_terms
    return pred, aux, torch.from_numpy(b.labels[:, 0].copy()), n_aff


def train_split(model, opt, a, graph):
    """--split: --epochs epochs over the train level, each followed by an
    evaluation of the other level (graph: the database's); one line per
    epoch."""
    train, evaluate = split_levels(graph, a.split, a.train_level, a.eval_level)
    fit = pertload.Loader(a.db, batch_size=a.batch_size, shuffle=True, seed=a.seed,
                          split=(a.split, train))
    held = pertload.Loader(a.db, batch_size=a.batch_size, split=(a.split, evaluate),
                           pad=False)
    print(f"--split {a.split}: training on {train!r} ({fit.n_samples} samples), "
          f"evaluating {evaluate!r} ({held.n_samples} samples)")
    for epoch in range(a.epochs):
        fit.set_epoch(epoch)
        model.train()
        total, known = 0.0, 0
        for b in fit:
            pred, aux, y, _ = run_batch(model, b, a)
            n = int((~torch.isnan(y)).sum())
            if n == 0:  # no known label: nothing to learn from
                continue
            loss = dcell_loss(pred, aux, y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total, known = total + loss.item() * n, known + n
        model.eval()
        ev, sq, ev_known = 0.0, 0.0, 0
        with torch.no_grad():
            for b in held:
                pred, aux, y, _ = run_batch(model, b, a)
                ok = ~torch.isnan(y)
                n = int(ok.sum())
                if n:
                    ev += dcell_loss(pred, aux, y).item() * n
                    sq += float(((pred[ok] - y[ok]) ** 2).sum())
                    ev_known += n
        print(f"epoch {epoch}: {train} loss {total / max(known, 1):.4f} ({known} labels), "
              f"{evaluate} loss {ev / max(ev_known, 1):.4f}, root MSE "
              f"{sq / max(ev_known, 1):.4f} ({ev_known} labels)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("db")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--min-width", type=int, default=4)
    ap.add_argument("--width-share", type=float, default=0.3)
    ap.add_argument("--all-terms", action="store_true",
                    help="compute every term (default: affected terms only)")
    ap.add_argument("--by", choices=("group", "term", "pair"), default="pair",
                    help="without --all-terms: run the affected groups on every sample, "
                    "the affected terms on every sample, or each affected term on the "
                    "samples that affect it (default)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--split", metavar="COLUMN",
                    help="train on one level of this category column, evaluate another "
                    "after each epoch")
    ap.add_argument("--epochs", type=int, default=2, help="with --split (default 2)")
    ap.add_argument("--train-level", default="train", help="with --split (default train)")
    ap.add_argument("--eval-level", help="with --split (default: the other level)")
    a = ap.parse_args()
    torch.manual_seed(a.seed)
    loader = pertload.Loader(a.db, batch_size=a.batch_size, shuffle=True, seed=a.seed)
    onto = loader.graph.ontology
    if onto is None or not loader.graph.n_labels:
        raise SystemExit(f"{a.db}: a database with an ontology and a label is needed")
    sched = onto.schedule(width=lambda n: max(a.min_width, math.ceil(a.width_share * n)))
    print(f"{sched.n_terms} terms, {len(sched.strata)} strata, {len(sched.groups)} groups, "
          f"state {sched.state_size} columns; {'all' if a.all_terms else 'affected'} terms")
    model = DCell(sched)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    if a.split is not None:
        loader.close()
        return train_split(model, opt, a, loader.graph)
    step, t0 = 0, time.perf_counter()
    while step < a.steps:
        for b in loader:
            pred, aux, y, n_aff = run_batch(model, b, a)
            loss = dcell_loss(pred, aux, y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            print(f"step {step}: loss {loss.item():.4f}, {n_aff} of {sched.n_terms} terms")
            step += 1
            if step == a.steps:
                break
    print(f"{step} steps in {time.perf_counter() - t0:.2f} s")


if __name__ == "__main__":
    main()
