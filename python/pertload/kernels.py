"""The batch layouts' kernels: libpertload's pl_layout_* on the tensors'
device, one launch per call, queued on the current CUDA stream.

Each call writes tensors it allocates, sized from counts the host already
has (the batch size, the graph's edge and node counts, the length of a
removed list), so nothing is read back from the device and the layout of a
batch is a few launches with no synchronisation. The same calls on CPU
tensors run the kernels' host twin in the library (the same element
functions in a loop): the CPU suite checks the layouts through it, and the
device check compares the two byte for byte.
"""

import ctypes

from . import _lib
from ._lib import LoaderError

_built = None


def built():
    """True when libpertload has the CUDA kernels (built with the toolkit)."""
    global _built
    if _built is None:
        _built = bool(_lib.lib().pl_layout_cuda_built())
    return _built


def enabled(dev):
    """True when layouts on `dev` take the kernels: a CUDA device and a
    library built with CUDA. (The tests run this path on the CPU, through the
    host twin, by replacing this.)"""
    return dev.type == "cuda" and built()


def _where(torch, t):
    """(device index, stream) of a call on t's device: -1 and None on the
    CPU (the host twin)."""
    if t.device.type == "cuda":
        return t.device.index, ctypes.c_void_p(torch.cuda.current_stream(t.device).cuda_stream)
    return -1, None


def _p(t):
    return None if t is None else t.data_ptr()


def _call(name, *args):
    err = _lib.PlErr()
    rc = getattr(_lib.lib(), name)(*args, ctypes.byref(err))
    if rc < 0:
        raise LoaderError(err.text(rc))


def _lists(pos, ptr):
    """pos and ptr as the kernels read them (int64, contiguous)."""
    return pos.contiguous(), ptr.contiguous()


def union(torch, ei, pos, ptr, B, shift_src, shift_dst, attr=None):
    """Layout "pyg" of one edge type: (edge_index [2, B*E - P], ptr [B+1],
    the kept edges' attr or None) from ei [2, E] int64 and the removed lists
    (pos int64 [P], ptr int64 [B+1], every tensor on one device)."""
    E, P = ei.shape[1], len(pos)
    dev = ei.device
    ei = ei.contiguous()
    pos, ptr = _lists(pos, ptr)
    out = torch.empty((2, B * E - P), dtype=torch.int64, device=dev)
    eptr = torch.empty(B + 1, dtype=torch.int64, device=dev)
    out_attr = None
    if attr is not None:
        attr = attr.contiguous().float()
        out_attr = torch.empty(B * E - P, dtype=torch.float32, device=dev)
    _call("pl_layout_union", *_where(torch, ei), _p(ei[0]), _p(ei[1]), _p(attr), E, _p(pos),
          _p(ptr), B, P, shift_src, shift_dst, _p(out[0]), _p(out[1]), _p(out_attr),
          _p(eptr))
    return out, eptr, out_attr


def tile(torch, ei, pos, ptr, B, shift_src, shift_dst, attr=None):
    """Layout "lazy" of one edge type: (edge_index [2, B*E] tiled with each
    copy's nodes shifted, kept bool [B*E], attr tiled or None)."""
    E, P = ei.shape[1], len(pos)
    dev = ei.device
    ei = ei.contiguous()
    pos, ptr = _lists(pos, ptr)
    out = torch.empty((2, B * E), dtype=torch.int64, device=dev)
    kept = torch.empty(B * E, dtype=torch.bool, device=dev)
    out_attr = None
    if attr is not None:
        attr = attr.contiguous().float()
        out_attr = torch.empty(B * E, dtype=torch.float32, device=dev)
    _call("pl_layout_tile", *_where(torch, ei), _p(ei[0]), _p(ei[1]), _p(attr), E, _p(pos),
          _p(ptr), B, P, shift_src, shift_dst, _p(out[0]), _p(out[1]), _p(out_attr),
          _p(kept))
    return out, kept, out_attr


def nodes(torch, n, B, dev, pos=None, ptr=None, store=True, kept=True, removed=False):
    """A node type's copies: with store, {"num_nodes", "batch", "ptr", "n_id",
    "mask", "pert_mask"} (mask True = kept: not in the sample's list); without
    it only the masks asked for ("mask" kept, "pert_mask" removed), [B * n]."""
    P = 0 if pos is None else len(pos)
    if pos is not None:
        pos, ptr = _lists(pos, ptr)
    out = {}
    if store:
        out["num_nodes"] = B * n
        out["batch"] = torch.empty(B * n, dtype=torch.int64, device=dev)
        out["ptr"] = torch.empty(B + 1, dtype=torch.int64, device=dev)
        out["n_id"] = torch.empty(B * n, dtype=torch.int64, device=dev)
        kept = removed = True
    if kept:
        out["mask"] = torch.empty(B * n, dtype=torch.bool, device=dev)
    if removed:
        out["pert_mask"] = torch.empty(B * n, dtype=torch.bool, device=dev)
    anchor = out.get("mask", out.get("pert_mask"))
    _call("pl_layout_nodes", *_where(torch, anchor), n, _p(pos), _p(ptr), B, P,
          _p(out.get("batch")), _p(out.get("n_id")), _p(out.get("mask")),
          _p(out.get("pert_mask")), _p(out.get("ptr")))
    return out


def rows(torch, pos, ptr, B, shift=0, shifted=False):
    """(each entry's sample int64 [P], the entries shifted by their sample
    times `shift` or None) of a list."""
    P = len(pos)
    pos, ptr = _lists(pos, ptr)
    r = torch.empty(P, dtype=torch.int64, device=pos.device)
    s = torch.empty(P, dtype=torch.int64, device=pos.device) if shifted else None
    _call("pl_layout_rows", *_where(torch, pos), _p(pos), _p(ptr), B, P, shift, _p(r), _p(s))
    return r, s


def check(kind, pos, ptr, n, sets=False):
    """A batch's list of `kind` (numpy: positions int32 or int64, ptr int64)
    as a layout reads it: ptr from 0 to len(pos) and never decreasing, every
    position in 0 .. n - 1, with `sets` each sample's strictly increasing;
    one pass of the library's pl_layout_check. LoaderError names the rule."""
    import numpy as np

    if pos.ndim != 1 or ptr.ndim != 1:
        raise LoaderError(f"slot: {kind} positions and ptr must be one-dimensional")
    pos = np.ascontiguousarray(pos)
    if pos.dtype not in (np.int32, np.int64):
        pos = pos.astype(np.int64)
    ptr = np.ascontiguousarray(ptr, dtype=np.int64)
    if len(ptr) == 0:
        raise LoaderError(f"slot: {kind} ptr does not index its {len(pos)} positions")
    err = _lib.PlErr()
    rc = _lib.lib().pl_layout_check(pos.ctypes.data, pos.itemsize, ptr.ctypes.data,
                                    len(ptr) - 1, len(pos), n, int(sets), ctypes.byref(err))
    if rc < 0:
        raise LoaderError(f"slot: {kind} {err.text(rc)}")
