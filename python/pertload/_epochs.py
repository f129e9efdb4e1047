"""What an epoch of the Loader (loader._Epoch) checks of its caller, and
its deliveries copied out of their slot."""

import ctypes
import os
import threading

from . import _slots
from ._lib import LoaderError
from .batch import HEADER, Batch, parse_slot, slot_head


class Caller:
    """The process and the thread an epoch is iterated in: its ring is read
    and handed back by one consumer, so a next() from a forked child or a
    second thread is refused with what happened (the thread is the one of
    the first next())."""

    def __init__(self):
        self.pid = os.getpid()
        self.thread = None
        self._lock = threading.Lock()

    def check(self):
        """Raise LoaderError unless called from the epoch's process and thread."""
        if os.getpid() != self.pid:
            raise LoaderError(
                f"a Loader's epoch iterated in a forked child (pid {os.getpid()}) of the "
                f"process that started the epoch (pid {self.pid}): its ring is that "
                "process's; start an epoch in the child instead (iter(loader))")
        me = threading.get_ident()
        if self.thread != me:
            with self._lock:
                if self.thread is None:
                    self.thread = me
            if self.thread != me:
                raise LoaderError(
                    f"one Loader iterated from two threads: its epoch is read by thread "
                    f"{self.thread}, next() was called from thread {me}; iterate an epoch "
                    "in one thread (a Loader each for more)")


def copied_delivery(loader, mapping, addr):
    """The delivery in the slot at `addr` of the ring `mapping` as a Batch of
    a copy of its bytes in use (kept copies near the mapping limit:
    _slots.copy_at_delivery): never released, the slot goes back with
    nothing to copy. Counted in loader.delivery_copies."""
    used = slot_head(ctypes.string_at(addr, HEADER.size))["used"]
    buf = _slots.delivery_copy(addr, min(max(used, HEADER.size), mapping.slot_bytes))
    head, arrays = parse_slot(buf, len(buf))
    loader.delivery_copies += 1
    return Batch(arrays, head, loader._kinds, fingerprints=loader._fingerprints,
                 graph_source=loader._graph_on)
