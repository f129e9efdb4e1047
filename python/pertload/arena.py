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

Names: pertload-arena-<main pid>-<worker pid>-<random> (the main process:
the one that started the worker, multiprocessing's parent). A name is
removed by the main process once it has mapped the file, or by the worker
at its exit (DESIGN section 20), never when an arena is collected: a batch
still queued for the main process may name an arena the worker retired for
a larger one. A worker killed by SIGKILL before the main process received
its first batch leaves its file: `pertload clean` (and every serve at its
start) removes it once the main process is gone too, by the identity at the
start of its header. The worker holds the arena's liveness lock as long as
its name may stand (src/core/shm.h: an OFD read lock on the file's first
byte, which the kernel drops at its death), so that a clean in another PID
namespace, where the pids of the identity name nobody, leaves a live
worker's arena alone.

The main process maps an arena only after the checks the ring gets
(docs/threat-model.md): a regular file of this user, mode 0600, one link,
opened without following a symbolic link, its size that of the regions the
pickle names, and a header whose identity names this process as the main
process and the worker of the name; anything else is refused with a
LoaderError naming the file. Each arena's size is reserved when it is made
(posix_fallocate): with /dev/shm too full for it the batch goes in a shared
tensor of its own (packed.pack) instead of faulting later."""

import ctypes
import errno
import fcntl
import mmap
import os
import re
import secrets
import struct
import sys

import numpy as np

from . import batch as _batch_mod
from . import packed
from ._lib import LoaderError
from .batch import Batch, SlotBatch, parse_slot

REGIONS = 8
_HEADER = mmap.PAGESIZE
_MIN_REGION = 1 << 16
_SHM = "/dev/shm"
_NAME = re.compile(r"pertload-arena-([0-9]+)-([0-9]+)-[0-9a-f]+")
# This worker process's arena (by pid: a forked child makes its own).
_OWN = {}
# The names this process made, as (path, (st_dev, st_ino)), removed at its
# exit when they still name the file made; _MADE_BY: the pid they are of.
_MADE = []
_MADE_BY = [0]
# Whether this process said once that /dev/shm had no room for an arena.
_NO_ROOM_SAID = []
# The arenas mapped in this (main) process, by name.
_MAPPED = {}


def _round(n):
    return -(-n // mmap.PAGESIZE) * mmap.PAGESIZE


# The header's first bytes: who made the arena (pl__arena_id, ring/reclaim.h:
# `pertload clean` removes an arena whose main process and worker are both
# dead); its words follow at _WORDS.
_ID = struct.Struct("<8siiQQ")
_MAGIC = b"PLARENA1"
# The size of each region, after the identity: the main process checks the
# file's size against it.
_REGION = struct.Struct("<Q")
_REGION_AT = 48
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


def _unlink_same(path, ident):
    """Remove `path` if it still names the file `ident` ((st_dev, st_ino))."""
    try:
        st = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return
    if (st.st_dev, st.st_ino) == ident:
        _unlink(path)


def _unlink_made():
    """At this process's exit: remove the names of the arenas it made that
    the main process has not mapped (and removed)."""
    if _MADE_BY[0] == os.getpid():
        for path, ident, _ in _MADE:
            _unlink_same(path, ident)
        for _, _, fd in _MADE:  # the liveness locks, once the names are gone
            os.close(fd)
        _MADE.clear()


def _made(path, ident, fd):
    """Record an arena this process made, for _unlink_made at its exit."""
    if _MADE_BY[0] != os.getpid():  # the first of this process (a forked child's too)
        import multiprocessing.util as mp_util

        _MADE.clear()
        _MADE_BY[0] = os.getpid()
        # A worker process ends through multiprocessing's exit, which runs
        # these finalizers (not weakref's, nor atexit's).
        mp_util.Finalize(None, _unlink_made, exitpriority=0)
    _MADE.append((path, ident, fd))


def _main_pid():
    """The pid of the main process that receives this worker's batches: the
    process that started it (multiprocessing's parent, also with spawn and
    forkserver), else the parent process."""
    import multiprocessing

    parent = multiprocessing.parent_process()
    return parent.pid if parent is not None and parent.pid else os.getppid()


class NoRoom(Exception):
    """/dev/shm has no room for an arena (ship falls back to packed.pack)."""


def _reserve(fd, path, total):
    """Size the file and reserve its pages (posix_fallocate, as the ring's
    segment): a full /dev/shm is an error now, not a SIGBUS at a later
    write into a region."""
    os.ftruncate(fd, total)
    try:
        os.posix_fallocate(fd, 0, total)
    except OSError as e:
        if e.errno in (errno.EOPNOTSUPP, errno.EINVAL):
            return  # a file system without fallocate: sized only
        raise NoRoom(f"cannot reserve {total} bytes in {_SHM} for a DataLoader worker's "
                     f"arena ({path}): {e.strerror}") from None


class _Arena:
    """A worker's arena: REGIONS regions of `region` bytes each. `main`: the
    pid of the process that maps it (default: _main_pid())."""

    def __init__(self, region, main=None):
        self.region = region
        main = _main_pid() if main is None else main
        me = os.getpid()
        self.path = f"{_SHM}/pertload-arena-{main}-{me}-{secrets.token_hex(4)}"
        total = _HEADER + REGIONS * region
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW |
                     os.O_CLOEXEC, 0o600)
        try:
            st = os.fstat(fd)
            _hold(fd)  # before the file has a size: clean skips it until then
            _reserve(fd, self.path, total)
            self.map = mmap.mmap(fd, total)
        except BaseException:
            _unlink(self.path)
            os.close(fd)
            raise
        _ID.pack_into(self.map, 0, _MAGIC, main, me, _start_time(main), _start_time(me))
        _REGION.pack_into(self.map, _REGION_AT, region)
        self.retired, self.issued, self.released = _words(self.map)
        self.data = np.frombuffer(self.map, np.uint8, offset=_HEADER)
        self.count = 0
        self.ident = (st.st_dev, st.st_ino)
        # Removed at this process's exit unless the main process mapped it
        # first; never on collection (a queued batch may name it). The lock
        # (`fd`) is held as long as the name may stand: closed at exit too.
        _made(self.path, self.ident, fd)

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
            _retire(arena)
        try:
            arena = _OWN[os.getpid()] = _Arena(max(_MIN_REGION, _round(2 * nbytes)))
        except NoRoom as e:
            arena = None  # tried again at the next batch
            if not _NO_ROOM_SAID:
                _NO_ROOM_SAID.append(True)
                import logging

                logging.getLogger("pertload").warning(
                    "%s: batches go in shared tensors of their own until it fits", e)
    i = arena.take() if arena is not None else None
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


def _retire(arena):
    """Let `arena` go for a larger one: the main process lets its mapping go
    once it received every batch put there. Its name stays until the main
    process maps it (a batch naming it may still be queued), or is removed
    now when no batch was put there."""
    del _OWN[os.getpid()]
    arena.retired[0] = 1
    if arena.count == 0:
        _unlink_same(arena.path, arena.ident)


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
        return reduce(self)


def reduce(batch):
    """Batch.__reduce__ once this module is imported: a worker's batch in
    its arena (ship) pickles as the arena's name, the region and what to
    read there, unpickled by receive(); any other batch as packed.reduce."""
    shipped = getattr(batch, "_shipped", None)
    if shipped is None:
        return packed.reduce(batch)
    source = batch._graph_source
    if not isinstance(source, packed.GraphSource):
        source = None
    return receive, (*shipped, batch._head, batch._kinds, packed.fingerprints(batch), source)


def _batch(flat, table, nbytes, head, kinds, fingerprints, graph_source):
    """The Batch of `nbytes` bytes of uint8 array (or tensor) `flat`: a slot
    (table None; checked) or arrays as `table` places them."""
    if table is not None:
        return packed.unpack(flat, table, head, kinds, fingerprints, graph_source)
    mv = flat.numpy() if hasattr(flat, "numpy") else flat
    slot_head, arrays = parse_slot(mv, nbytes)
    return Batch(arrays, slot_head, kinds, fingerprints=fingerprints, graph_source=graph_source)


def _refusal(st, path, region):
    """Why the arena file `path` (os.fstat `st`) must not be read as one of
    `region`-byte regions, or None: the ring's checks (pl__shm_check_owner)."""
    import stat

    if not stat.S_ISREG(st.st_mode):
        return "it is not a regular file"
    if st.st_uid != os.geteuid():
        return (f"it belongs to uid {st.st_uid}, not to this user (uid {os.geteuid()}); "
                "another user's file is never read")
    if st.st_mode & 0o077:
        return (f"it has mode {stat.S_IMODE(st.st_mode):04o}; an arena must be closed to "
                "group and others (0600)")
    if st.st_nlink != 1:
        return f"it has {st.st_nlink} links, an arena has one"
    if region <= 0 or region % mmap.PAGESIZE:
        return f"the batch names regions of {region} bytes, not a whole number of pages"
    if st.st_size != _HEADER + REGIONS * region:
        return (f"it has {st.st_size} bytes, {_HEADER + REGIONS * region} expected "
                f"({REGIONS} regions of {region} bytes after a {_HEADER}-byte header)")
    return None


def _check_header(header, path, region):
    """Why the header of arena `path` does not name this process as its main
    process, the worker of its name and `region`-byte regions, or None."""
    magic, main, worker, main_start, _ = _ID.unpack_from(header)
    named = _NAME.fullmatch(os.path.basename(path))
    if magic != _MAGIC:
        return "its header is not an arena's"
    if main != os.getpid() or main_start != _start_time(os.getpid()):
        return (f"its header names process {main} (started at {main_start}) as the one "
                f"receiving its batches, not this process ({os.getpid()})")
    if worker != int(named[2]):
        return f"its header names worker {worker}, its name worker {named[2]}"
    if _REGION.unpack_from(header, _REGION_AT)[0] != region:
        return (f"its header says regions of {_REGION.unpack_from(header, _REGION_AT)[0]} "
                f"bytes, the batch {region}")
    return None


def _open_arena(path, region):
    """(descriptor, os.fstat) of the arena a worker's batch names, after the
    checks of the ring's segments; LoaderError naming the file otherwise."""
    named = _NAME.fullmatch(os.path.basename(path))
    if os.path.dirname(path) != _SHM or named is None:
        raise LoaderError(f"a worker's batch names {path!r}, not an arena in {_SHM}")
    try:
        fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as e:
        why = ("a symbolic link, never followed" if e.errno == errno.ELOOP else e.strerror)
        raise LoaderError(f"cannot open the DataLoader worker arena {path}: {why}") from None
    try:
        st = os.fstat(fd)
        why = _refusal(st, path, region)
        if why is None and int(named[1]) != os.getpid():
            why = f"its name is of main process {named[1]}, not of this process"
        if why is not None:
            raise LoaderError(f"DataLoader worker arena {path}: {why}; refusing to read "
                              "batches from it")
    except BaseException:
        os.close(fd)
        raise
    return fd, st


class _Mapped:
    """The main process's mapping of a worker's arena: the header and one
    mmap per region; `held` the batch number each region holds here. The
    file is checked first (_open_arena, _check_header); its name is removed
    once mapped."""

    def __init__(self, path, region):
        fd, st = _open_arena(path, region)
        self.regions = []
        try:
            self.header = mmap.mmap(fd, _HEADER)
            why = _check_header(self.header, path, region)
            if why is not None:
                raise LoaderError(f"DataLoader worker arena {path}: {why}; refusing to read "
                                  "batches from it")
            self.regions = [mmap.mmap(fd, region, offset=_HEADER + i * region)
                            for i in range(REGIONS)]
        finally:
            os.close(fd)
        # Mapped: nothing is left behind whatever happens next.
        _unlink_same(path, (st.st_dev, st.st_ino))
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


_batch_mod.set_transport(reduce=reduce)
