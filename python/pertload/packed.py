"""A batch in one buffer: the form in which a batch crosses a process
boundary (DESIGN section 16, "Worker processes ship lists").

pack() copies every array of a batch (its lists, ptr arrays, labels, ids,
payload, k-hop and ontology lists: never dense masks unless the slot held
them) into one torch uint8 tensor allocated in shared memory, 64-byte
aligned, and records (name, dtype, shape, offset) per array. Pickled, such a
batch is that tensor (one shared-memory handle, which torch's
multiprocessing sends without a copy) and the small table; unpickled, its
arrays are numpy views of the tensor, and the Batch expands on the training
device with to_torch(device, layout=...)."""

import os

import numpy as np

from . import batch as _batch_mod
from .batch import Batch, fingerprints

_ALIGN = 64
# Graphs read in this process, by database path and features token (graph_of).
_GRAPHS = {}
# The features= of the Datasets made in this process, by token.
_FEATURES = {}


def features_token(features):
    """A token for a Dataset's features= (None without), registered in this
    process: the batches of its workers name it, and graph_of() of the
    process that made the Dataset finds the features by it."""
    if not features:
        return None
    token = f"{os.getpid()}-{id(features)}"
    _FEATURES[token] = features
    return token


def graph_of(db, features=None):
    """The Graph of database `db`, read once per process (DataModule.graph,
    Dataset.graph and the batches unpacked from workers share it), with the
    features registered under token `features` (features_token) set on it
    (else the database's own)."""
    from . import _lib
    from .graph import Graph

    key = (os.path.realpath(os.fspath(db)), features)
    g = _GRAPHS.get(key)
    if g is None:
        database = _lib.Database(os.fspath(db))
        try:
            g = Graph(database)
        finally:
            database.close()
        if features is not None:
            g.set_features(_FEATURES[features])
        _GRAPHS[key] = g
    return g


class GraphSource:
    """A picklable stand-in for a loader's graph: graph_of(db, features)'s
    tensors on a device, for to_torch(layout="pyg") of batches unpacked in
    another process."""

    def __init__(self, db, features=None):
        self.db = os.fspath(db)
        self.features = features

    def __call__(self, device):
        return graph_of(self.db, self.features).tensors_on(device)


def table(arrays):
    """((name, dtype, shape, offset) per array, total bytes) of `arrays`
    packed one after another, each 64-byte aligned."""
    table, off = [], 0
    for name, a in arrays.items():
        off = -(-off // _ALIGN) * _ALIGN
        table.append((name, a.dtype.str, tuple(a.shape), off))
        off += a.nbytes
    return table, off


def fill(flat, table, arrays):
    """Copies `arrays` into uint8 array `flat` where `table` places them."""
    for (name, dtype, shape, off), a in zip(table, arrays.values()):
        np.copyto(flat[off:off + a.nbytes].view(dtype).reshape(shape), a)


def _new_buffer(nbytes, shared, pinned):
    import torch

    if shared:
        storage = torch.ByteStorage._new_shared(max(nbytes, 1))
        return torch.tensor([], dtype=torch.uint8).set_(storage)[:nbytes]
    return torch.empty(nbytes, dtype=torch.uint8, pin_memory=pinned)


def pack(batch, graph_source=None, shared=True, pinned=False):
    """A Batch holding a copy of `batch` in one torch uint8 tensor (in shared
    memory, or page-locked with pinned=True), never released."""
    arrays = batch.arrays  # raises for a released batch
    tab, nbytes = table(arrays)
    buf = _new_buffer(nbytes, shared, pinned)
    fill(buf.numpy(), tab, arrays)
    return unpack(buf, tab, batch._head, batch._kinds, fingerprints(batch),
                  graph_source if graph_source is not None else batch._graph_source)


def unpack(buf, table, head, kinds, fingerprints, graph_source, held=False):
    """The Batch whose arrays are the views `table` describes of tensor (or
    uint8 numpy array) `buf`. held=True: `buf` is a mapping of its own,
    counted while a view of it lives (_slots.hold_mapping)."""
    flat = buf.numpy() if hasattr(buf, "numpy") else buf
    if held:
        from . import _slots

        _slots.hold_mapping(flat)  # every view's base (not buf: numpy() makes an alias)
    arrays = {name: np.ndarray(shape, dtype, flat, off) for name, dtype, shape, off in table}
    b = Batch(arrays, dict(head), kinds, fingerprints=fingerprints, graph_source=graph_source)
    b._packed = (buf, table)
    return b


def received(buf, table, head, kinds, fingerprints, graph_source):
    """Unpickling a packed batch (reduce): unpack() of shared tensor `buf`,
    which is one memory mapping for as long as a view of it is held. Past
    the limit of mappings kept data may hold (_slots.copy_at_delivery) its
    bytes are copied into a chunk shared with other batches instead and the
    mapping goes at once (DESIGN section 20)."""
    from . import _slots

    if buf.numel() and _slots.copy_at_delivery():
        import torch

        flat = _slots.delivery_copy(buf.data_ptr(), buf.numel())
        return unpack(torch.from_numpy(flat), table, head, kinds, fingerprints, graph_source)
    return unpack(buf, table, head, kinds, fingerprints, graph_source, held=buf.numel() > 0)


def reduce(batch):
    """Batch.__reduce__: the one buffer and its table (packed first unless
    the batch already is in shared memory; a graph source that does not
    pickle is dropped), unpickled by received(). One received from an arena
    (pertload.arena, whose reduce() pickles a worker's batch in its arena)
    is packed anew."""
    source = batch._graph_source
    if not isinstance(source, GraphSource):
        source = None
    packed = getattr(batch, "_packed", None)
    if (packed is None or getattr(batch, "_arena", None) is not None or
            not packed[0].is_shared()):  # a region, or a copy made at receipt
        batch = pack(batch)
        packed = batch._packed
    return received, (packed[0], packed[1], batch._head, batch._kinds, fingerprints(batch),
                      source)


def pin_memory(batch):
    """The batch in page-locked memory (DataLoader(pin_memory=True) calls
    Batch.pin_memory): one copy of its buffer."""
    packed = getattr(batch, "_packed", None)
    if packed is None:
        return pack(batch, shared=False, pinned=True)
    return unpack(packed[0].pin_memory(), packed[1], batch._head, batch._kinds,
                  fingerprints(batch), batch._graph_source)


_batch_mod.set_transport(pack=pack, reduce=reduce, pin_memory=pin_memory)
