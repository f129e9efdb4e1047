"""Copy-on-keep of ring slots (DESIGN section 15): data a user holds never
changes.

Every slot is read through a mapping of its own (a *window*: the slot's
pages of the ring's segment, mapped shared once and reused while nothing
keeps them). The arrays of one delivery are numpy views of one owner object
(a ctypes array over the window); numpy and torch keep that object alive
through their base chains, so its reference count says whether anything
taken out of the batch is still held. When the slot is handed back:

- nothing held (the loop that drops each batch before the next): the window
  stays the slot's, no copy;
- something held: the used bytes of the window are copied into private
  pages, which then replace the window's pages at the same address
  (mremap), so every held view reads the same values from memory of its own;
  the slot gets a new window for its next batch. When the last view of a
  copy goes, its pages return to a small pool of this process (_POOL), and
  the next copy reuses them: pages already allocated and mapped, not fresh
  zeroed ones (a view held for one step, such as a loop variable, costs the
  copy alone; a pooled copy is cut or grown, mremap, to the next one's
  size).

Both happen before the producer may refill the slot, so the copy reads the
batch the user saw. A copy that fails (no memory) hands nothing back: the
loader ends its epoch with the error, the slot still the user's.

Each kept copy is a mapping of its own, and a process has at most
vm.max_map_count of them (65,530 by default); so is a batch a DataLoader
worker sent in a shared tensor (packed.received counts those alive too).
Once they hold half of that (at most 32,765: _kept_limit()), deliveries are copied out of
their slot (or tensor) at once, into chunks of _SLAB_BYTES shared by many
batches (a mapping a chunk; a slot's arrays packed, at their bytes rounded
to 64 each), and the slot goes back with nothing to copy;
a warning says so once per process.
Zero-copy delivery comes back when the kept copies fall below half the
limit again."""

import ctypes
import logging
import mmap
import sys
import weakref

import numpy as np

from ._lib import LoaderError

_PAGE = mmap.PAGESIZE
_PROT_RW = mmap.PROT_READ | mmap.PROT_WRITE
_MAP_SHARED, _MAP_PRIVATE = mmap.MAP_SHARED, mmap.MAP_PRIVATE
_MAP_ANONYMOUS = mmap.MAP_ANONYMOUS
# Page tables filled by the call, not by a fault a page (Linux).
_MAP_POPULATE = getattr(mmap, "MAP_POPULATE", 0x8000)
_MREMAP_MAYMOVE, _MREMAP_FIXED = 1, 2
_MAP_FAILED = ctypes.c_void_p(-1).value

_libc = ctypes.CDLL(None, use_errno=True)
_mmap = _libc.mmap
_mmap.restype = ctypes.c_void_p
_mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                  ctypes.c_long]
_munmap = _libc.munmap
_munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_mremap = _libc.mremap
_mremap.restype = ctypes.c_void_p
_mremap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t, ctypes.c_int,
                    ctypes.c_void_p]

# References to an owner that are not a user's: hand_back's variable and
# getrefcount's argument.
_OWN_REFS = 2
# Private copies whose views are gone, (address, size) each, for the next
# copies to reuse: at most _POOL_MAX of them and _POOL_BYTES in all (their
# pages stay this process's; a larger copy is unmapped).
_POOL = []
_POOL_MAX = 4
_POOL_BYTES = 64 << 20
# Private copies alive (a mapping each); the most of them before deliveries
# are copied (None: _kept_limit() reads it at first use); whether
# deliveries are copied now; whether the switch was logged.
_KEPT = [0]
_KEPT_MAX = None
_COPYING = [False]
_SAID = []
# Deliveries copied out of their slot are carved out of chunks of this size
# (numpy arrays; a batch's views keep its chunk alive): [chunk, offset].
_SLAB_BYTES = 4 << 20
_SLAB = [None, 0]
_ALIGN = 64


def _private_pages(size):
    """The address of `size` bytes of private pages for a copy: a pooled
    copy's (its tail unmapped when it is larger; grown in place or moved,
    mremap, when smaller: only the pages added are new), else fresh ones,
    populated in one call."""
    if _POOL:
        addr, have = _POOL.pop()
        if have > size:
            _munmap(addr + size, have - size)
        elif have < size:
            new = _mremap(addr, have, size, _MREMAP_MAYMOVE, None)
            if new in (None, _MAP_FAILED):
                _munmap(addr, have)
                _fail(f"growing {have} bytes to {size} for a kept batch")
            addr = new
        return addr
    addr = _mmap(None, size, _PROT_RW, _MAP_PRIVATE | _MAP_ANONYMOUS | _MAP_POPULATE, -1, 0)
    if addr in (None, _MAP_FAILED):
        _fail(f"allocating {size} bytes for a kept batch")
    return addr


def _fail(what):
    err = ctypes.get_errno()
    import os
    raise LoaderError(f"{what}: {os.strerror(err)}")


class _Window:
    """One mapping of a slot's pages: shared with the ring, or, once kept,
    private memory holding a copy. Unmapped when the last owner of it goes."""

    __slots__ = ("addr", "size", "offset", "private")

    def __init__(self, fd, offset, length):
        self.offset = offset  # the slot's offset in the segment
        self.private = False  # True once privatize() made it a copy
        self.addr = None      # None until mapped: nothing to unmap
        start = offset - offset % _PAGE
        self.size = (offset - start + length + _PAGE - 1) // _PAGE * _PAGE
        addr = _mmap(None, self.size, _PROT_RW, _MAP_SHARED | _MAP_POPULATE, fd, start)
        if addr in (None, _MAP_FAILED):
            _fail(f"mapping a ring slot ({self.size} bytes at offset {start})")
        self.addr = addr + (offset - start)  # the slot's first byte

    @property
    def base(self):
        return self.addr - self.addr % _PAGE

    def privatize(self, nbytes):
        """Replace the window's pages that hold the slot's first `nbytes`
        bytes by private ones holding a copy of them, at the same addresses,
        and unmap the rest of the window. Returns the bytes copied."""
        base = self.base
        n = min(self.addr - base + nbytes, self.size)
        size = max((n + _PAGE - 1) // _PAGE * _PAGE, _PAGE)
        new = _private_pages(size)
        ctypes.memmove(new, base, n)
        got = _mremap(new, size, size, _MREMAP_MAYMOVE | _MREMAP_FIXED, base)
        if got in (None, _MAP_FAILED) or got != base:
            _munmap(new, size)
            _fail("moving a kept batch's copy in place")
        if size < self.size:
            _munmap(base + size, self.size - size)
            self.size = size
        self.private = True
        _KEPT[0] += 1
        return n

    def __del__(self):
        if _munmap is None or self.addr is None:  # interpreter shutdown; never mapped
            return
        if self.private:
            _KEPT[0] -= 1
        if (self.private and _POOL is not None and len(_POOL) < _POOL_MAX and
                sum(s for _, s in _POOL) + self.size <= _POOL_BYTES):
            _POOL.append((self.base, self.size))
        else:
            _munmap(self.base, self.size)


def _let_go():
    _KEPT[0] -= 1


def hold_mapping(obj):
    """Count `obj` (the array over a received batch's shared tensor, a
    mapping of its own) with the kept copies until it is collected."""
    _KEPT[0] += 1
    weakref.finalize(obj, _let_go)


# The most private copies alive whatever vm.max_map_count allows: half of
# its default. A private copy costs its slot's pages (8 KiB or more), a copy
# at delivery its arrays' bytes, so past this many the latter are cheaper
# (systems that raise the limit to 1,048,576 would otherwise hold 524,288
# private copies, 4 GiB or more, before the switch).
_KEPT_CAP = 65530 // 2


def kept_limit_for(max_map_count):
    """The most private copies alive before deliveries are copied, for a
    vm.max_map_count: half of it (the rest is the process's own), at most
    _KEPT_CAP."""
    return max(min(max_map_count // 2, _KEPT_CAP), 1)


def _kept_limit():
    """kept_limit_for() of this system's vm.max_map_count, read once."""
    global _KEPT_MAX
    if _KEPT_MAX is None:
        try:
            with open("/proc/sys/vm/max_map_count") as f:
                _KEPT_MAX = kept_limit_for(int(f.read()))
        except (OSError, ValueError):
            _KEPT_MAX = kept_limit_for(65530)
    return _KEPT_MAX


def copy_at_delivery():
    """Whether the next delivery is to be copied out of its slot at once
    (kept copies near the mapping limit; see the module doc)."""
    limit = _kept_limit()
    if _COPYING[0]:
        _COPYING[0] = _KEPT[0] >= limit // 2
    elif _KEPT[0] >= limit:
        _COPYING[0] = True
        if not _SAID:
            _SAID.append(True)
            logging.getLogger("pertload").warning(
                "pertload: %d kept batches hold a memory mapping each (the limit for them "
                "is %d: half of vm.max_map_count, at most 32,765): batches are now copied "
                "at delivery, one "
                "copy each, until fewer than %d remain", _KEPT[0], limit,
                limit // 2)
    return _COPYING[0]


def _carve(nbytes):
    """`nbytes` bytes (a uint8 numpy array), 64-byte aligned, of the current
    chunk (a new one when they do not fit): views of it keep it alive."""
    chunk, off = _SLAB
    if chunk is None or off + nbytes > len(chunk):
        raw = np.empty(max(_SLAB_BYTES, nbytes) + _ALIGN, np.uint8)
        chunk, off = raw[-raw.ctypes.data % _ALIGN:][:len(raw) - _ALIGN], 0
    _SLAB[:] = chunk, off + -(-nbytes // _ALIGN) * _ALIGN
    return chunk[off:off + nbytes]


def delivery_copy(addr, nbytes):
    """A uint8 numpy array holding a copy of the `nbytes` bytes at `addr`,
    64-byte aligned, carved out of a chunk shared with other deliveries."""
    out = _carve(nbytes)
    ctypes.memmove(out.ctypes.data, addr, nbytes)
    return out


def delivery_arrays(views):
    """Copies of the arrays `views` ({name: contiguous ndarray}), each 64-byte
    aligned, packed together in a chunk shared with other deliveries: what a
    delivery copied out of its slot costs is its arrays' bytes, not the
    slot's (descriptor table and alignment gaps included)."""
    sizes = [-(-v.nbytes // _ALIGN) * _ALIGN for v in views.values()]
    block = _carve(max(sum(sizes), 1))
    out, off = {}, 0
    for (name, v), size in zip(views.items(), sizes):
        a = out[name] = np.ndarray(v.shape, v.dtype, block, off)
        a[...] = v
        off += size
    return out


class Windows:
    """The slot windows of one ring mapping (fd: a descriptor on its segment,
    base: the address the ring's own mapping starts at)."""

    def __init__(self, fd, base, slot_bytes):
        self.fd, self.base, self.slot_bytes = fd, base, slot_bytes
        self._slot_type = ctypes.c_char * slot_bytes
        self._windows = {}       # slot offset -> _Window shared with the ring

    def owner(self, addr, mapping):
        """The owner object of a delivery in the slot that the ring's mapping
        has at `addr`: a ctypes array over the slot's window that keeps the
        window (and `mapping`) alive; numpy views of it hold it."""
        offset = addr - self.base
        w = self._windows.get(offset)
        if w is None:
            w = self._windows[offset] = _Window(self.fd, offset, self.slot_bytes)
        buf = self._slot_type.from_address(w.addr)
        buf._window = w
        buf._mapping = mapping
        return buf

    def hand_back(self, batch, unregister=None):
        """Before the slot of `batch` returns to the producer: the batch drops
        its views (batch.take_owner()); when anything taken out of it still
        holds their owner, the owner's window becomes a private copy of the
        slot's used bytes and leaves the ring (the slot gets a new window).
        `unregister(addr)` is called first for the window, which may have been
        page-locked for device copies. Returns the bytes copied."""
        owner, used = batch.take_owner()
        if owner is None or sys.getrefcount(owner) <= _OWN_REFS:
            return 0
        w = owner._window
        if self._windows.get(w.offset) is w:
            del self._windows[w.offset]
        if unregister is not None:
            unregister(w.addr)
        n = w.privatize(used)
        # The copy no longer needs the ring: held views do not keep its
        # segment mapped.
        owner._mapping = None
        return n
