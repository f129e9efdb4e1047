"""How a DataLoader worker hands its batches to the main process: regions of
one shared-memory arena per worker, reused (DESIGN section 16, "Worker
processes ship lists").

torch's own transport of a shared tensor creates a shared-memory object a
batch and passes its descriptor over a socket per batch: most of the cost
of a worker's batch in the main process. Here each worker makes one file
in /dev/shm of REGIONS equal regions behind a one-page header and copies
each batch into a free region: the bytes of its ring slot when the
worker's Loader left the slot unparsed (a SlotBatch: one part, not
trimmed; the main process checks them as a slot read from the ring), else
its arrays as a table places them (pertload.packed); the
pickled batch is the file's name, the region and what to read there. The
main process maps the file once (and removes its name), each region as an
mmap of its own whose views are the batch's arrays.

A region is free again when the main process no longer holds any view of
it: the header has, per region, the number of the batch the worker put
there (`issued`, written by the worker only) and the number the main
process gave back (`released`, written by the main process only, when the
region's mmap is referenced by nothing else: checked at each batch it
receives). The worker reuses a region only when the two are equal, so an
array a training loop keeps is never overwritten; with no region free it
ships the batch in a shared tensor of its own (packed.pack), as does a
batch larger than a region (the next arena is made twice its size). The
release is stored after the views are gone, in program order, with the
interpreter's own atomic operations between (its lock switches).

Names: pertload-arena-<main pid>-<worker pid>-<random>; the worker removes
its name at exit if the main process never mapped it. A worker killed by
SIGKILL before the main process received its first batch leaves its file:
`pertload clean` (and every serve at its start) removes it once the main
process is gone too. The worker holds the arena's liveness lock while it
lives (src/core/shm.h: an OFD read lock on the file's first byte, which
the kernel drops at its death), so that a clean in another PID namespace,
where the pids of the identity at the start of its header name nobody,
leaves a live worker's arena alone."""

import ctypes
import fcntl
import mmap
import os
import secrets
import struct
import sys

import numpy as np

from . import packed

REGIONS = 8
_HEADER = mmap.PAGESIZE
_MIN_REGION = 1 << 16
# This worker process's arena (by pid: a forked child makes its own).
_OWN = {}
# The arenas mapped in this (main) process, by name.
_MAPPED = {}


def _round(n):
    return -(-n // mmap.PAGESIZE) * mmap.PAGESIZE


# The header's first bytes: who made the arena (pl__arena_id, ring/reclaim.h:
# `pertload clean` removes an arena whose main process and worker are both
# dead); its words follow at _WORDS.
_ID = struct.Struct("<8siiQQ")
_WORDS = 64


def _start_time(pid):
    """The start time of process `pid` (field 22 of /proc/<pid>/stat), or 0."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return int(f.read().rsplit(b")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return 0


# struct flock (Linux, 64 bits): l_type, l_whence, l_start, l_len, l_pid.
_FLOCK = struct.Struct("hhqqi4x")


def _hold(fd):
    """Holds byte 0 of the liveness lock of the arena open as `fd`
    (PL__SHM_LOCK_OWNER: an OFD read lock) until `fd` is closed or this
    process dies; `pertload clean` removes the arena only when it can take
    the byte itself."""
    fcntl.fcntl(fd, fcntl.F_OFD_SETLKW, _FLOCK.pack(fcntl.F_RDLCK, os.SEEK_SET, 0, 1, 0))


def _words(m):
    """(retired, issued[REGIONS], released[REGIONS]) views of a header."""
    w = np.frombuffer(m, np.uint64, count=1 + 2 * REGIONS, offset=_WORDS)
    return w[:1], w[1:1 + REGIONS], w[1 + REGIONS:]


def _unlink(path):
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


class _Arena:
    """A worker's arena: REGIONS regions of `region` bytes each."""

    def __init__(self, region):
        import multiprocessing.util as mp_util

        self.region = region
        self.path = (f"/dev/shm/pertload-arena-{os.getppid()}-{os.getpid()}-"
                     f"{secrets.token_hex(4)}")
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            _hold(fd)  # before the file has a size: clean skips it until then
            os.ftruncate(fd, _HEADER + REGIONS * region)
            self.map = mmap.mmap(fd, _HEADER + REGIONS * region)
        except BaseException:
            _unlink(self.path)
            os.close(fd)
            raise
        # The lock lives as long as this descriptor: closed with the arena
        # (registered first, so that at exit it is closed after the unlink).
        mp_util.Finalize(self, os.close, (fd,), exitpriority=0)
        main, me = os.getppid(), os.getpid()
        _ID.pack_into(self.map, 0, b"PLARENA1", main, me, _start_time(main), _start_time(me))
        self.retired, self.issued, self.released = _words(self.map)
        self.data = np.frombuffer(self.map, np.uint8, offset=_HEADER)
        self.count = 0
        # A worker process ends through multiprocessing's exit, which runs
        # these finalizers (not weakref's).
        mp_util.Finalize(self, _unlink, (self.path,), exitpriority=0)

    def take(self):
        """A free region's index, or None."""
        free = np.flatnonzero(self.issued == self.released)
        return int(free[0]) if free.size else None


def ship(batch, graph_source, light=False):
    """What a worker yields for `batch`: its bytes in a region of this
    process's arena (a SlotBatch's slot bytes, a Batch's arrays one after
    another), pickled as the arena's name, the
    region and what to read there; a shared tensor of its own
    (packed.pack) when no region is free. light=True: an object that only
    pickles so (no Batch made of the region here)."""
    from .batch import SlotBatch

    if isinstance(batch, SlotBatch):
        batch._live()
        if not batch.used:
            batch = batch.parsed()  # raises what is wrong with the slot
    whole = isinstance(batch, SlotBatch)  # shipped as its slot's bytes
    arrays = None if whole else batch.arrays  # raises for a released batch
    table, nbytes = (None, batch.used) if whole else packed.table(arrays)
    arena = _OWN.get(os.getpid())
    if arena is None or nbytes > arena.region:
        if arena is not None:
            arena.retired[0] = 1  # the main process lets its mapping go
        arena = _OWN[os.getpid()] = _Arena(max(_MIN_REGION, _round(2 * nbytes)))
    i = arena.take()
    if i is None:
        return packed.pack(batch.parsed() if whole else batch, graph_source)
    flat = arena.data[i * arena.region:i * arena.region + nbytes]
    if whole:
        batch._ring.check_size()  # the copy reads the slot
        ctypes.memmove(flat.ctypes.data, batch._slot_addr, nbytes)
    else:
        packed.fill(flat, table, arrays)
    arena.count += 1
    arena.issued[i] = arena.count
    source = graph_source if graph_source is not None else batch._graph_source
    shipped = (arena.path, arena.region, i, arena.count, nbytes, table)
    if light:
        return _Shipment(shipped, batch, source)
    b = _batch(flat, table, nbytes, batch._head, batch._kinds, packed.fingerprints(batch),
               source)
    b._shipped = shipped
    return b


class _Shipment:
    """A batch in a region of this worker's arena, as it pickles."""

    def __init__(self, shipped, batch, source):
        self._shipped = shipped
        self._head = batch._head
        self._kinds = batch._kinds
        self.gene_fingerprint, self.edge_fingerprints, self.db_fingerprint = \
            packed.fingerprints(batch)
        self._graph_source = source

    def __reduce__(self):
        return packed.reduce(self)


def _batch(flat, table, nbytes, head, kinds, fingerprints, graph_source):
    """The Batch of `nbytes` bytes of uint8 array (or tensor) `flat`: a slot
    (table None; checked) or arrays as `table` places them."""
    from .batch import Batch, parse_slot

    if table is not None:
        return packed.unpack(flat, table, head, kinds, fingerprints, graph_source)
    mv = flat.numpy() if hasattr(flat, "numpy") else flat
    slot_head, arrays = parse_slot(mv, nbytes)
    return Batch(arrays, slot_head, kinds, fingerprints=fingerprints, graph_source=graph_source)


class _Mapped:
    """The main process's mapping of a worker's arena: the header and one
    mmap per region; `held` the batch number each region holds here."""

    def __init__(self, path, region):
        fd = os.open(path, os.O_RDWR)
        try:
            self.header = mmap.mmap(fd, _HEADER)
            self.regions = [mmap.mmap(fd, region, offset=_HEADER + i * region)
                            for i in range(REGIONS)]
        finally:
            os.close(fd)
            _unlink(path)  # mapped: nothing is left behind whatever happens next
        self.retired, self.issued, self.released = _words(self.header)
        self.worker = _ID.unpack_from(self.header)[2]  # the pid that made it
        self.held = {}
        self.last = 0  # the highest batch number received from the arena

    def give_back(self):
        """Releases each region whose views are all gone."""
        for i, count in list(self.held.items()):
            # The list's reference and the argument's: nothing else holds it.
            if sys.getrefcount(self.regions[i]) <= 2:
                self.released[i] = count
                del self.held[i]

    def finished(self):
        """Whether the worker let this arena go and no region is held here:
        it exited (its queue was flushed before, so every batch it sent came
        before any later arena's first), or it retired the arena for a
        larger one and every batch it put here was received (one sent just
        before may come after the new arena's first)."""
        if self.held:
            return False
        if self.retired[0] and int(self.issued.max()) <= self.last:
            return True
        try:
            os.kill(self.worker, 0)
        except ProcessLookupError:
            return True
        except PermissionError:
            pass
        return False


def receive(path, region, i, count, nbytes, table, head, kinds, fingerprints, graph_source):
    """Unpickling in the main process: the Batch of region i of the arena
    at `path` (mapped once), its arrays views of that region."""
    import torch

    m = _MAPPED.get(path)
    if m is None:
        for old in _MAPPED.values():
            old.give_back()
        for name in [n for n, old in _MAPPED.items() if old.finished()]:
            del _MAPPED[name]  # unmapped as their last views go
        m = _MAPPED[path] = _Mapped(path, region)
    m.give_back()
    m.held[i] = count
    m.last = max(m.last, count)
    buf = torch.from_numpy(np.frombuffer(m.regions[i], np.uint8, count=nbytes))
    b = _batch(buf, table, nbytes, head, kinds, fingerprints, graph_source)
    b._arena = (path, region, i, count)
    return b
