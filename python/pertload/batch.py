"""Batches: zero-copy numpy views of one ring slot, and their torch form.

A slot is a self-describing block (collate/slot.h): a 64-byte header, then
n_arrays 240-byte descriptors (name, numpy dtype string, shape, offset and
size relative to the slot), then the arrays. The slot was written by another
process, so the library checks every descriptor against the slot
(pl_slot_check) before a view is made.
"""

import ctypes
import struct

import numpy as np

from . import _lib, kernels, lazy, pyg
from ._lib import LoaderError
from ._identity import check_same_database

# How a batch crosses a process boundary (pack, reduce for pickling,
# pin_memory): the transport, a stage above (pertload.packed; pertload.arena
# for a worker's batch in its arena), sets these when imported, and the
# package imports it (pertload/__init__.py).
_TRANSPORT = {}


def set_transport(**functions):
    """Install the transport's functions pack(batch, graph_source),
    reduce(batch) and pin_memory(batch) (pertload.packed, pertload.arena)."""
    _TRANSPORT.update(functions)


def fingerprints(batch):
    """The fingerprints a batch carries (gene list, edge arrays, database)."""
    return (batch.gene_fingerprint, batch.edge_fingerprints, batch.db_fingerprint)

SLOT_MAGIC = b"PLBATCH1"
SLOT_VERSION = 2  # PL_SLOT_VERSION
DENSE_NONE, DENSE_BITS, DENSE_BOOL = 0, 1, 2

# struct pl_slot_header and struct pl_slot_array (collate/slot.h).
HEADER = struct.Struct("<8sIIQQIIQIIQ")
ARRAY = struct.Struct("<128s8sIIQQ10Q")
assert HEADER.size == 64 and ARRAY.size == 240

_DTYPES = {s.encode(): np.dtype(s) for s in ("<u8", "<i8", "<i4", "<f4", "<f2", "|u1", "|b1")}
_DT = {k.decode(): v for k, v in _DTYPES.items()}
# The same, keyed by the 8 NUL-padded bytes of a descriptor's dtype field.
_DTYPES_PADDED = {k.ljust(8, b"\0"): v for k, v in _DTYPES.items()}
# Names seen in descriptors (a run repeats the same few dozen), by raw field.
_NAMES = {}

# The metabolic lists: slot name, PyG key of the edge or node they mask.
META_KEYS = {
    "gpr": ("gene", "gpr", "reaction"),
    "reaction": "reaction",
    "rmr": ("reaction", "rmr", "metabolite"),
}


def unpack_bits(words, n):
    """Dense bit masks (uint64 words, LSB first, [B, ceil(n/64)]) as bool [B, n]."""
    words = np.ascontiguousarray(words, dtype="<u8")
    bits = np.unpackbits(words.view(np.uint8), axis=-1, bitorder="little")
    return bits[..., :n].astype(bool)


# The ontology lists (DESIGN section 10): slot name, PyG key of what they mask.
ONTOLOGY_KEYS = {
    "ontology/term": "term",
    "ontology/annotation": ("gene", "annotated", "term"),
}


def list_kinds(info, ontology=True):
    """(PyG key, slot name, positions) of every list kind of a database's
    batches (info: its pl_db_info): genes, each edge type, then with
    metabolism gpr, reaction and rmr, then with an ontology (unless
    ontology is False: serve --no-ontology) its affected terms and removed
    annotations."""
    types = _lib.names(info.type_names, info.n_types)
    kinds = [("gene", "gene", int(info.n_genes))]
    kinds += [(("gene", t, "gene"), "edges/" + t, int(info.n_edges[k]))
              for k, t in enumerate(types)]
    if info.has_metabolism:
        kinds += [(META_KEYS["gpr"], "gpr", int(info.n_gpr)),
                  (META_KEYS["reaction"], "reaction", int(info.n_reactions)),
                  (META_KEYS["rmr"], "rmr", int(info.n_rmr))]
    if ontology and info.n_terms:
        kinds += [(ONTOLOGY_KEYS["ontology/term"], "ontology/term", int(info.n_terms)),
                  (ONTOLOGY_KEYS["ontology/annotation"], "ontology/annotation",
                   int(info.n_term_annotations))]
    return kinds


def parse_slot(buf, slot_bytes):
    """Check a slot's header and descriptors; return (header, {name: ndarray}).

    `buf` is any writable object exposing the slot's `slot_bytes` bytes; the
    arrays are views of it (no copy). header: dict of batch, epoch, n_samples,
    dense, used, n_arrays. The header and the descriptor table are copied
    into private memory first; the library's pl_slot_check() validates that
    copy (bounds, overflow, dtypes, names, overlaps; it reads nothing past the
    descriptor table) and the views are made from it alone, so a rewrite of
    the shared slot after the copy cannot change a checked descriptor. A part
    of a split batch also has part, n_parts and first (its first sample
    within the batch) in its header."""
    mv = memoryview(buf).cast("B")
    if len(mv) < slot_bytes:
        raise LoaderError(f"slot: {len(mv)} bytes, {slot_bytes} expected")
    head = bytes(mv[:min(HEADER.size, slot_bytes)])
    table = head
    if len(head) == HEADER.size:
        # The table as long as this copy's n_arrays says, within the slot: if
        # it does not fit, the check refuses the header before any descriptor.
        end = min(HEADER.size + ARRAY.size * int.from_bytes(head[12:16], "little"), slot_bytes)
        table = head + bytes(mv[HEADER.size:end])
    err = _lib.PlErr()
    rc = _lib.lib().pl_slot_check(table, slot_bytes, ctypes.byref(err))
    if rc < 0:
        raise LoaderError(err.text(rc))
    head = slot_head(table)
    arrays = {}
    for rec in ARRAY.iter_unpack(memoryview(table)[HEADER.size:]):
        raw, dtype, ndim, off = rec[0], rec[1], rec[2], rec[4]
        name = _NAMES.get(raw)
        if name is None:
            if len(_NAMES) > 4096:
                _NAMES.clear()
            name = _NAMES[raw] = raw[:raw.index(b"\0")].decode("utf-8", "replace")
        dt = _DTYPES_PADDED.get(dtype)
        if dt is None:  # bytes after the NUL that ends the type string
            dt = _DTYPES[dtype[:dtype.index(b"\0")]]
        # (np.ndarray on the buffer costs a third of np.frombuffer and a reshape)
        arrays[name] = np.ndarray(rec[6:6 + ndim], dt, buf, off)
    return head, arrays


def slot_head(raw):
    """The header dict (as parse_slot returns it) of a slot's first
    HEADER.size bytes `raw`, unchecked."""
    (_, _, n_arrays, batch, epoch, n_samples, dense, used, part, n_parts,
     first) = HEADER.unpack_from(raw)
    return {"batch": batch, "epoch": epoch, "n_samples": n_samples, "dense": dense,
            "used": used, "n_arrays": n_arrays, "part": part, "n_parts": n_parts,
            "first": first}


class SlotBatch:
    """A batch left unparsed in its ring slot (one part, not trimmed): what
    a DataLoader worker copies whole into its arena (pertload.arena), where
    the receiving process checks and parses it as a slot read from the ring.
    It has a Batch's index, epoch, parts and length, and the slot's header
    (`_head`, as read) and address; `used` is its bytes in use, at most the
    slot's size. parsed() is the Batch of the slot."""

    parts = 1
    _packed = _shipped = None

    def __init__(self, head, kinds, ring, slot_addr, slot_bytes, fingerprints, graph_source):
        self._head, self._kinds, self._ring = head, kinds, ring
        self._slot_addr, self._slot_bytes = slot_addr, slot_bytes
        self._graph_source = graph_source
        self.gene_fingerprint, self.edge_fingerprints, *database = fingerprints
        self.db_fingerprint = database[0] if database else None
        self.index, self.epoch = head["batch"], head["epoch"]
        self.used = head["used"] if HEADER.size <= head["used"] <= slot_bytes else 0
        self._released = None

    def __len__(self):
        return self._head["n_samples"]

    def _live(self):
        """Raise LoaderError when the slot was handed back."""
        if self._released is not None:
            raise LoaderError(self._released)

    def parsed(self):
        """The Batch of the slot (checked; views of it)."""
        self._live()
        buf = self._ring.buffer(self._slot_addr)
        head, arrays = parse_slot(buf, self._slot_bytes)
        return Batch(arrays, head, self._kinds, self._ring, self._slot_addr, self._slot_bytes,
                     fingerprints(self), self._graph_source, owner=buf)

    def release(self, why):
        self._released = why

    def take_owner(self):
        return None, self.used

    def wait_copies(self):
        pass


def merge_parts(parts):
    """One batch from the parts of a batch split over several slots: `parts`
    are the (head, arrays) of its parts in order (each checked as a Batch).
    Arrays with a row per sample are stacked, removed lists concatenated and
    their ptr arrays shifted by the positions before each part. The result
    owns its memory (the parts' slots may be reused)."""
    head = dict(parts[0][0])
    head.update(n_samples=sum(h["n_samples"] for h, _ in parts), part=0, first=0, used=0)
    names = parts[0][1].keys()
    if any(a.keys() != names for _, a in parts):
        raise LoaderError(f"batch {head['batch']}: its parts hold different arrays")
    out = {}
    for name in names:
        pieces = [a[name] for _, a in parts]
        if name == "perturbation_ptr" or name.endswith("/ptr"):
            shift, shifted = 0, [pieces[0][:1]]
            for ptr in pieces:
                shifted.append(ptr[1:] + shift)
                shift += int(ptr[-1])
            out[name] = np.concatenate(shifted)
        else:
            out[name] = np.concatenate(pieces)
    return head, out


def _list_ptr(name, arrays):
    """The ptr array's name of list array `name`, or None for a ptr array or
    an array with a row per sample."""
    if name == "perturbation_ptr" or name.endswith("/ptr"):
        return None
    if name == "perturbation_indices":
        return "perturbation_ptr"
    if name.endswith("/removed"):
        return name[:-len("/removed")] + "/ptr"
    return name + "/ptr" if name + "/ptr" in arrays else None


def trim_arrays(arrays, k):
    """The arrays of a batch's first k samples (views): rows cut to k, ptr
    arrays to k + 1, lists to their first k samples' positions."""
    out = {}
    for name, a in arrays.items():
        ptr = _list_ptr(name, arrays)
        if ptr is not None:
            out[name] = a[:int(arrays[ptr][k])]
        elif name == "perturbation_ptr" or name.endswith("/ptr"):
            out[name] = a[:k + 1]
        else:
            out[name] = a[:k]
    return out


class Batch:
    """One batch of B samples, as numpy views of its ring slot (no copy).

    Lifetime: the loader hands the slot back to the producer, which refills
    it, when it is asked for the next batch of the epoch: the batch is
    *released* then. From then on reading any of its arrays,
    to_torch() or copy() raises LoaderError, so a batch kept past its step
    (`list(loader)`, a list of batches, a batch kept across epochs) never
    shows another batch's data. To keep a batch, take batch.copy() (memory
    of its own, valid for ever) or to_torch() (tensors own their memory)
    during the step. numpy arrays taken out of a batch (`ids =
    batch.sample_id`) are the zero-copy path: plain views of the slot, valid
    until the batch is released; copy them to keep them. The last batch an
    epoch yielded (at its end, or when it was stopped by close(), a break or
    garbage collection) stays valid: its slot is never refilled.
    A batch too large for one slot came in several (`parts` of them) and was
    put together in memory of its own: its arrays are not views of the ring
    and it is never released (as a copy()).

    Attributes: index (the batch's position in the epoch plan), epoch, parts
    (the slots it came in: 1, more when it was split to fit the ring),
    sample_id, row (sample-store rows), labels [B, L], perturbation_indices,
    perturbation_ptr [B+1], removed[type] -> (positions, ptr), gpr, reaction,
    rmr -> (positions, ptr) or None, ontology (with an ontology, unless
    Loader(ontology=False), else None): {"term": (terms, ptr), "annotation":
    (positions, ptr)}, per sample the affected terms (genes(T) meets the
    deleted set) and the removed annotations (their gene is deleted), each
    ascending, payload or None, dense (PyG key -> mask
    as stored: bool [B, n] or uint64 bit words [B, ceil(n/64)], LSB first),
    dense_format ("bits", "bool" or None), arrays (every array by slot name),
    khop (with Loader(khop=...), else None): {"genes": (genes, ptr),
    "capped": uint8 [B], "edges": {type: (positions, ptr)}}, per sample the
    genes within k hops of its deleted genes and, per walked type, the
    positions of the edges with both ends among them.
    gene_fingerprint, edge_fingerprints and db_fingerprint (of its database,
    as Graph's; db_fingerprint None when not known).
    Sample i's entries of a list are positions[ptr[i]:ptr[i+1]].
    """

    def __init__(self, arrays, head, kinds, ring=None, slot_addr=0, slot_bytes=0,
                 fingerprints=(None, {}), graph_source=None, owner=None):
        self._released = None  # why the arrays may no longer be read, once released
        # The object every array of the slot is a view of (_slots.Windows).
        self._owner = owner
        self._head = head
        self.gene_fingerprint, self.edge_fingerprints, *database = fingerprints
        self.db_fingerprint = database[0] if database else None
        self.index = int(head["batch"])
        self.epoch = int(head["epoch"])
        self._n = B = int(head["n_samples"])
        dense = int(head["dense"])  # 0, 1 or 2: pl_slot_check refuses others
        self.dense_format = {DENSE_NONE: None, DENSE_BITS: "bits", DENSE_BOOL: "bool"}[dense]
        self._kinds = kinds
        self.parts = int(head.get("n_parts", 1))
        self._ring = ring
        self._slot_addr = slot_addr
        self._slot_bytes = slot_bytes
        self._copy_done = None
        self._graph_source = graph_source

        def get(name, rows=None, dtype=None):
            a = arrays.get(name)
            if a is None:
                raise LoaderError(f"slot: array {name!r} missing")
            if dtype is not None and a.dtype is not _DT[dtype] and a.dtype != _DT[dtype]:
                raise LoaderError(f"slot: array {name!r} is {a.dtype}, {dtype} expected")
            if rows is not None and a.shape[0] != rows:
                raise LoaderError(f"slot: array {name!r} has {a.shape[0]} rows, {rows} "
                                  "expected")
            return a

        v = self._v = {"arrays": arrays, "gpr": None, "reaction": None, "rmr": None,
                       "ontology": None}
        v["sample_id"] = get("sample_id", B, "<u8")
        v["row"] = get("row", B, "<u8")
        v["labels"] = get("labels", B, "<f4")
        v["payload"] = payload = arrays.get("payload")
        if payload is not None and payload.shape[0] != B:
            raise LoaderError("slot: payload rows do not match the batch size")
        v["removed"], v["dense"] = removed, dense_masks = {}, {}
        self._lists = {}
        for key, slot_name, n in kinds:
            if slot_name == "gene":
                lists = (get("perturbation_indices", None, "<i4"),
                         get("perturbation_ptr", B + 1, "<i8"))
                v["perturbation_indices"], v["perturbation_ptr"] = lists
                self._n_pert = len(lists[0])
            else:
                lists = (get(slot_name + "/removed", None, "<i4"),
                         get(slot_name + "/ptr", B + 1, "<i8"))
                if slot_name.startswith("edges/"):
                    removed[slot_name[6:]] = lists
                elif slot_name.startswith("ontology/"):
                    v["ontology"] = v["ontology"] or {}
                    v["ontology"][slot_name[9:]] = lists
                else:
                    v[slot_name] = lists
            _check_ptr(slot_name, *lists)
            self._lists[slot_name] = lists
            if dense:
                m = get(slot_name + "/mask", B)
                width = n if dense == DENSE_BOOL else (n + 63) // 64
                if m.ndim != 2 or m.shape[1] != width:
                    raise LoaderError(f"slot: mask {slot_name!r} has shape {m.shape}, "
                                      f"[{B}, {width}] expected")
                dense_masks[key] = m
        v["khop"] = None
        if "khop/genes" in arrays:
            genes = (get("khop/genes", None, "<i4"), get("khop/genes/ptr", B + 1, "<i8"))
            _check_ptr("khop/genes", *genes)
            edges = {}
            for name in arrays:
                if name.startswith("khop/edges/") and not name.endswith("/ptr"):
                    t = name[len("khop/edges/"):]
                    edges[t] = (get(name, None, "<i4"), get(name + "/ptr", B + 1, "<i8"))
                    _check_ptr(name, *edges[t])
            v["khop"] = {"genes": genes, "capped": get("khop/capped", B, "|u1"),
                      "edges": edges}

    def _live(self):
        """Raise LoaderError when the batch's slot was handed back."""
        if self._released is not None:
            raise LoaderError(self._released)

    def release(self, why):
        """Mark the batch released (the loader calls it before it hands the
        slot back): every later read of its arrays raises LoaderError(why)."""
        if self._ring is not None:
            self._released = why

    def take_owner(self):
        """Drop the batch's own references to its slot's arrays (it must be
        released) and return (the owner of those views or None, the bytes of
        the slot in use): what still holds the owner is the user's."""
        owner, self._owner = self._owner, None
        self._v = self._lists = None
        return owner, int(self._head["used"])

    @property
    def released(self):
        """True once the batch's slot was handed back (see the class doc)."""
        return self._released is not None

    def copy(self):
        """The batch in memory of its own (never released), e.g. to keep it
        in a list past its step."""
        self._live()
        arrays = {k: a.copy() for k, a in self._v["arrays"].items()}
        return Batch(arrays, self._head, self._kinds,
                     fingerprints=(self.gene_fingerprint, self.edge_fingerprints,
                                   self.db_fingerprint),
                     graph_source=self._graph_source)

    def __len__(self):
        return self._n

    # (buffer tensor, table) of a batch in one buffer (pertload.packed).
    _packed = None
    # A worker's batch in a region of its arena: what its pickle names
    # (pertload.arena.ship); the main process's copy: (name, region size,
    # region, batch number) of the region its arrays are views of.
    _shipped = None
    _arena = None

    def pack(self, graph_source=None):
        """The batch copied into one torch uint8 tensor in shared memory, as
        a Batch of views of it (never released): what a DataLoader worker
        sends, one shared-memory handle a batch (pertload.packed). Pickling
        a batch packs it (once)."""
        return _TRANSPORT["pack"](self, graph_source)

    def __reduce__(self):
        return _TRANSPORT["reduce"](self)

    def pin_memory(self):
        """The batch in page-locked memory, one buffer (DataLoader's
        pin_memory=True calls it)."""
        return _TRANSPORT["pin_memory"](self)

    def trimmed(self, k):
        """The batch's first k samples, as views of the same memory (the
        evaluation loader's last batch without the padding, Loader(pad=False));
        this batch must not be used afterwards."""
        self._live()
        head = dict(self._head, n_samples=k)
        return Batch(trim_arrays(self._v["arrays"], k), head, self._kinds, self._ring,
                     self._slot_addr, self._slot_bytes,
                     (self.gene_fingerprint, self.edge_fingerprints, self.db_fingerprint),
                     self._graph_source, owner=self._owner)

    def __repr__(self):
        return (f"<pertload.Batch {self.index} of epoch {self.epoch}: {self._n} samples, "
                f"{self._n_pert} deleted genes{', released' if self.released else ''}>")

    def to_torch(self, device="cpu", non_blocking=True, layout="masks", graph=None,
                 edge_types=None):
        """The batch as torch tensors on `device`, keyed as PyG HeteroData keys.

        layout="lists": the same without the masks (the removed lists and
        ptr as int64 tensors, cheap to pin and move; expand them where
        needed).

        layout="pyg": the disjoint union of the samples' graphs that PyG
        models consume (pertload.pyg); layout="lazy": every sample's full
        graph with boolean masks, TorchCell's lazy batch (pertload.lazy).
        Where torch_geometric imports, a torch_geometric Batch of HeteroData
        (num_graphs, get_example, to_data_list; node stores num_nodes,
        batch, ptr, n_id, mask, pert_mask, x with features; gene
        perturbation_indices with its _ptr and _batch; y, sample_id, row,
        payload), else a mapping of the same stores with, in layout "pyg",
        each edge type's "ptr" [B+1], the gene store's "perturbed" (deleted
        genes' batch indices) and "labels" (docs/models.md). edge_types:
        the relations to build (gene-gene types, "gpr", "rmr",
        "annotated"; default all). Built from the shared graph on the
        device (default the loader's, uploaded once per device; or
        `graph`) with a few vectorised ops per type, no dense masks.

        With `graph` (a Graph), first checks that both come from the same
        database (gene list and edge arrays, by their fingerprints) and raises
        LoaderError when not: the batch's indices would address the wrong
        genes and edges; layout="pyg" then uses that graph's tensors (kept
        per device on the Graph). `graph` may also be the mapping
        Graph.to_torch(device) returned (layouts "pyg" and "lazy"; not
        checked).

        Returns {("gene", t, "gene"): {"mask" bool [B, E_t] (True = kept),
        "removed" int64, "ptr" int64}, "gene": {"pert_mask", "mask",
        "perturbation_indices", "perturbation_ptr"}, ("gene", "gpr",
        "reaction"), "reaction", ("reaction", "rmr", "metabolite") (with
        metabolism; "mask", "removed", "ptr"), "labels", "sample_id", "row",
        "payload" (when present)}. With an ontology (Batch.ontology), "term"
        {"mask" bool [B, n_terms] (True = kept: the term sees no deleted
        gene), "removed", "ptr"} and ("gene", "annotated", "term") likewise
        over the annotations (True = kept). Every tensor owns its memory.
        With k-hop lists (Loader(khop=...)), "gene" also holds "khop_mask"
        bool [B, N] (True = within k hops), "khop_genes", "khop_ptr" (int64)
        and "khop_capped" bool [B], and each walked type's key "khop_mask"
        bool [B, E_t] (True = both ends within k hops), "khop_edges" and
        "khop_ptr".

        Dense masks are built on the device from the removed lists by one
        indexed store per mask, or taken from the slot when it holds them.
        The lists are checked before those stores: on the CPU in their copies,
        so a rewrite of the slot meanwhile cannot slip past the check; on CUDA
        in the slot, before the copy.
        On CUDA the slot's memory is page-locked once (cudaHostRegister) and
        copied asynchronously on a side stream that the current stream then
        waits for; everything else runs on the current stream. The loader
        waits for the copies alone (wait_copies()) before it lets the
        producer reuse the slot.
        """
        graph_tensors = None
        if graph is not None and not isinstance(graph, dict):
            check_same_database(self, graph)
        elif graph is not None:
            graph_tensors, graph = graph, None
        import torch

        self._live()
        if layout not in ("masks", "lists", "pyg", "lazy"):
            raise ValueError(f"layout is 'masks', 'lists', 'pyg' or 'lazy', not {layout!r}")
        pyg_lists = {} if layout in ("pyg", "lazy") else None
        dev = torch.device(device)
        if edge_types is not None:
            if pyg_lists is None:
                raise ValueError("edge_types is an option of layout='pyg' and layout='lazy'")
            edge_types = set(edge_types)
            unknown = edge_types - {k[1] for k, _, _ in self._kinds if isinstance(k, tuple)}
            if unknown:
                raise ValueError(f"edge_types: no edge type {sorted(unknown)[0]!r}")
        if graph_tensors is not None and pyg_lists is None:
            raise ValueError("graph as tensors (Graph.to_torch()) is for layout='pyg' or "
                             "'lazy'; pass the Graph for a check of the database")
        if pyg_lists is not None and graph_tensors is None:
            if graph is not None:
                graph_tensors = graph.tensors_on(dev)
            elif self._graph_source is not None:
                graph_tensors = self._graph_source(dev)
            else:
                raise ValueError(f"layout={layout!r} needs graph= (a Graph) for a batch made "
                                 "outside a Loader")
        cuda = _on_cuda(dev)
        if cuda and self._ring is not None:
            self._ring.cuda_register(self._slot_addr, self._slot_bytes)
        B = self._n
        if cuda:
            # Copies on the side stream, the rest on the current stream, which
            # waits for each copy; the copy event completes with the copies
            # alone (wait_copies() does not wait for the ops after them).
            stream = _side_stream(torch, dev)
            current = torch.cuda.current_stream(dev)
            slab = self._slab(torch, dev, stream, current, non_blocking)

            def up(a):
                t = slab(a) if slab is not None else None
                if t is not None:  # a view of the slot's one copy
                    return t
                with torch.cuda.stream(stream):
                    t = torch.from_numpy(a).to(dev, non_blocking=non_blocking, copy=True)
                current.wait_stream(stream)
                t.record_stream(current)  # allocated on the side stream, used on this
                return t
        else:
            def up(a):
                return torch.from_numpy(a).clone()

        def up_long(a):
            return up(a).long() if cuda else torch.from_numpy(a).long()

        out = {}
        for key, slot_name, n in self._kinds:
            if edge_types is not None and isinstance(key, tuple) and key[1] not in edge_types:
                continue  # an edge type the layout leaves out: its list stays on the host
            pos, ptr = self._lists[slot_name]
            if cuda:  # checked in the slot (one pass of the library), then copied from it
                # (on the CPU pl_pyg_edges checks that they are sets)
                kernels.check(slot_name, pos, ptr, n, sets=pyg_lists is not None)
            pos_t, ptr_t = up_long(pos), up(ptr)
            if not cuda:  # the copies are checked: the slot may change meanwhile
                _check_ptr(slot_name, pos_t.numpy(), ptr_t.numpy())
                _check_positions(slot_name, pos_t.numpy(), ptr_t.numpy(), n)
            if pyg_lists is not None:
                pyg_lists[slot_name] = (pos_t, ptr_t)
                continue
            if layout == "lists":
                out[key] = ({"perturbation_indices": pos_t, "perturbation_ptr": ptr_t}
                            if key == "gene" else {"removed": pos_t, "ptr": ptr_t})
                continue
            if key in self.dense:
                mask = self._dense_mask(torch, up(_signed(self.dense[key])), n)
            elif kernels.enabled(dev):  # one launch, nothing read back
                mask = kernels.nodes(torch, n, B, dev, pos_t, ptr_t, store=False)["mask"]
                mask = mask.view(B, n)
            else:
                rows = torch.repeat_interleave(torch.arange(B, device=dev),
                                               ptr_t[1:] - ptr_t[:-1],
                                               output_size=len(pos))
                mask = torch.ones(B * n, dtype=torch.bool, device=dev)
                mask[pos_t + rows * n] = False
                mask = mask.view(B, n)
            if key == "gene":
                out["gene"] = {"pert_mask": ~mask, "mask": mask,
                               "perturbation_indices": pos_t, "perturbation_ptr": ptr_t}
            else:
                out[key] = {"mask": mask, "removed": pos_t, "ptr": ptr_t}
        if pyg_lists is not None:
            out = (lazy if layout == "lazy" else pyg).build(
                torch, pyg_lists, graph_tensors, B, self._kinds, dev, edge_types)
        if self.khop is not None:
            self._khop_torch(torch, out, up, up_long, cuda, dev)
        out["labels"] = up(self.labels)
        out["sample_id"] = up(_signed(self.sample_id))
        out["row"] = up(_signed(self.row))
        if self.payload is not None:
            out["payload"] = up(self.payload)
        if cuda:
            done = torch.cuda.Event()
            done.record(stream)  # after the last copy, before any later op
            self._copy_done = done
        return out if pyg_lists is None else pyg.finish(torch, out, B, layout, pyg_lists)

    def _slab(self, torch, dev, stream, current, non_blocking):
        """The slot's bytes in use copied to `dev` in one copy on the side
        stream, as a function giving a slot array's device view (None for an
        array outside the slot: a trimmed or merged batch's own); None when
        the batch is not a ring slot's."""
        used = int(self._head.get("used", 0)) if self._ring is not None else 0
        if not self._slot_addr or used <= 0 or used > self._slot_bytes:
            return None
        host = np.ctypeslib.as_array((ctypes.c_uint8 * used).from_address(self._slot_addr))
        with torch.cuda.stream(stream):
            d = torch.from_numpy(host).to(dev, non_blocking=non_blocking, copy=True)
        current.wait_stream(stream)
        d.record_stream(current)  # allocated on the side stream, used on this
        base = self._slot_addr

        def view(a):
            off = a.__array_interface__["data"][0] - base
            if off < 0 or off + a.nbytes > used or not a.flags.c_contiguous:
                return None
            dt = _TORCH_DTYPES.get(a.dtype.str)
            if dt is None or off % a.itemsize:
                return None
            return d[off:off + a.nbytes].view(dt).view(a.shape)
        return view

    def _khop_torch(self, torch, out, up, up_long, cuda, dev):
        """The k-hop lists and their masks (True = in the neighbourhood)."""
        B = self._n
        n_of = {slot_name: n for _, slot_name, n in self._kinds}
        key_of = {slot_name: key for key, slot_name, _ in self._kinds}

        def lists(name, pos, ptr, n):
            if cuda:
                kernels.check(name, pos, ptr, n)
            pos_t, ptr_t = up_long(pos), up(ptr)
            if not cuda:
                _check_ptr(name, pos_t.numpy(), ptr_t.numpy())
                _check_positions(name, pos_t.numpy(), ptr_t.numpy(), n)
            if kernels.enabled(dev):
                mask = kernels.nodes(torch, n, B, dev, pos_t, ptr_t, store=False, kept=False,
                                     removed=True)["pert_mask"]
                return pos_t, ptr_t, mask.view(B, n)
            rows = torch.repeat_interleave(torch.arange(B, device=dev), ptr_t[1:] - ptr_t[:-1],
                                           output_size=len(pos))
            mask = torch.zeros(B * n, dtype=torch.bool, device=dev)
            mask[pos_t + rows * n] = True
            return pos_t, ptr_t, mask.view(B, n)

        genes, ptr = self.khop["genes"]
        g, gp, gm = lists("khop/genes", genes, ptr, n_of["gene"])
        out["gene"].update({"khop_mask": gm, "khop_genes": g, "khop_ptr": gp,
                            "khop_capped": up(self.khop["capped"]).bool()})
        for t, (pos, ptr) in self.khop["edges"].items():
            slot_name = "edges/" + t
            if slot_name not in n_of:
                raise LoaderError(f"slot: k-hop edges of an unknown type {t!r}")
            if key_of[slot_name] not in out:
                continue  # a type the layout leaves out (edge_types)
            e, ep, em = lists("khop/edges/" + t, pos, ptr, n_of[slot_name])
            out[key_of[slot_name]].update({"khop_mask": em, "khop_edges": e, "khop_ptr": ep})

    def _dense_mask(self, torch, stored, n):
        if self.dense_format == "bool":
            return stored
        # uint64 words, LSB first: the little-endian bytes of word w hold bits
        # 64w .. 64w+63 in order, so unpack bytes LSB first.
        B = stored.shape[0]
        shifts = torch.arange(8, dtype=torch.uint8, device=stored.device)
        by = stored.view(torch.uint8).view(B, -1, 1)
        return ((by >> shifts) & 1).view(B, -1)[:, :n].bool()

    def wait_copies(self):
        """Block until the asynchronous device copies of to_torch() finished."""
        if self._copy_done is not None:
            self._copy_done.synchronize()
            self._copy_done = None


def _view(name, doc):
    def get(self):
        if self._released is not None:
            raise LoaderError(self._released)
        return self._v[name]
    return property(get, doc=doc)


for _name, _doc in (("arrays", "every array by slot name"),
                    ("sample_id", "uint64 [B]"), ("row", "sample-store rows, uint64 [B]"),
                    ("labels", "float32 [B, L]"), ("payload", "as stored [B, ...] or None"),
                    ("perturbation_indices", "int32 [P]"), ("perturbation_ptr", "int64 [B+1]"),
                    ("removed", "edge type -> (positions int32, ptr int64 [B+1])"),
                    ("gpr", "(positions, ptr) or None"), ("reaction", "(positions, ptr) or None"),
                    ("rmr", "(positions, ptr) or None"),
                    ("dense", "PyG key -> dense mask as stored"),
                    ("khop", "the k-hop lists (serve --khop) or None"),
                    ("ontology", "{'term': (terms, ptr), 'annotation': (positions, ptr)} "
                                 "or None")):
    setattr(Batch, _name, _view(_name, _doc))
del _name, _doc


class _TorchDtypes(dict):
    """numpy dtype string -> torch dtype, filled at the first use (torch is
    imported only by to_torch)."""

    def get(self, key, default=None):
        if not self:
            import torch

            self.update({"<i8": torch.int64, "<u8": torch.int64, "<i4": torch.int32,
                         "<f4": torch.float32, "<f2": torch.float16, "|u1": torch.uint8,
                         "|b1": torch.bool})
        return dict.get(self, key, default)


_TORCH_DTYPES = _TorchDtypes()


def _check_ptr(kind, pos, ptr):
    """The ends of a ptr array (slicing with it is safe in numpy regardless)."""
    if pos.ndim != 1 or ptr.ndim != 1:
        raise LoaderError(f"slot: {kind} positions and ptr must be one-dimensional")
    first, last = int(ptr[0]), int(ptr[-1])  # (a fancy index costs eight times more)
    if first != 0 or last != len(pos):
        raise LoaderError(f"slot: {kind} ptr does not index its {len(pos)} positions")


def _check_positions(kind, pos, ptr, n):
    """Positions in range and ptr non-decreasing before an indexed store uses them."""
    if len(pos) and (int(pos.min()) < 0 or int(pos.max()) >= n):
        raise LoaderError(f"slot: {kind} holds a position outside 0..{n - 1}")
    if np.any(ptr[1:] < ptr[:-1]):
        raise LoaderError(f"slot: {kind} ptr decreases")


def _signed(a):
    """uint64 arrays as int64 (torch has no uint64): the same bytes."""
    return a.view(np.int64) if a.dtype == np.uint64 else a


def _on_cuda(dev):
    """True when to_torch() takes its CUDA path for `dev` (the tests' device
    double runs that path on the CPU by replacing this)."""
    return dev.type == "cuda"


_streams = {}


def _side_stream(torch, dev):
    """One copy stream per device, reused for every batch."""
    idx = dev.index if dev.index is not None else torch.cuda.current_device()
    s = _streams.get(idx)
    if s is None:
        s = _streams[idx] = torch.cuda.Stream(device=idx)
    return s
