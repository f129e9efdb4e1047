"""An epoch of the Loader (_Epoch: the iterator over one run of the
producer), what it checks of its caller, and its deliveries copied out of
their slot."""

import ctypes
import os
import threading

from . import _lib, _slots
from ._lib import LoaderError
from ._service import _EINTR
from .batch import HEADER, Batch, SlotBatch, merge_parts, parse_slot, slot_head

# pl_ring_next_within: "not yet" after a wait of about _WAIT_SLICE_NS.
_NOT_YET = 2
_WAIT_SLICE_NS = 100_000_000


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
    nothing to copy. Counted in loader.delivery_copies. The slot is checked
    as one delivered zero-copy is; its arrays alone are copied (packed:
    _slots.delivery_arrays), before the Batch checks them."""
    head, views = parse_slot((ctypes.c_char * mapping.slot_bytes).from_address(addr),
                             mapping.slot_bytes)
    arrays = _slots.delivery_arrays(views)
    del views
    loader.delivery_copies += 1
    return Batch(arrays, head, loader._kinds, fingerprints=loader._fingerprints,
                 graph_source=loader._graph_on)


def _mark_released(batch):
    batch.release(f"batch {batch.index} of epoch {batch.epoch} was released: its ring slot "
                  "was handed back for reuse when the next batch was asked for (keep "
                  "batch.copy() or batch.to_torch() to use a batch past its step)")


def _fps(gene, edges, database):
    return (f"gene {gene:016x}, edges [{', '.join(f'{e:016x}' for e in edges)}], "
            f"database {database:016x}")


def _source_changed(loader, source):
    """What differs between the database `loader` opened and the one its
    serve process opened (the ring's record, Mapping.source()), or ""."""
    gene, edges, database = loader._fingerprints
    edges = list(edges.values())
    if source is None:
        return "pertload serve recorded no database fingerprints in its ring"
    if source == (gene, edges, database):
        return ""
    return (f"the Loader's fingerprints are {_fps(gene, edges, database)}, pertload serve opened "
            f"{_fps(*source)}")


class _Epoch:
    """Iterator over the batches of one run of the producer.

    The ring carries deliveries: whole batches, which are yielded as views of
    their slot, and the parts of a batch too large for one slot, which are
    copied out and yielded as one batch (merge_parts)."""

    def __init__(self, loader, start, n_batches, serve_batches):
        self._loader = loader
        self._start = start
        self._n = n_batches  # batches yielded; serve's plan may pad more (pad=False)
        self._padding_left = serve_batches > n_batches
        self._i = 0          # deliveries taken from the ring
        self._b = 0          # batches yielded
        self._prev = None    # the last batch yielded, while it holds its slot
        self._producer = None
        self._finalizer = None
        self._last = None    # persistent: the epoch's last delivery, once released
        self.consumed = start  # the loader's batches taken so far
        self.deferred = False
        self._caller = Caller()  # the process and thread it is iterated in
        if n_batches > start:
            self._producer = p = loader._producer(start)
            self._finalizer = _lib.finalize(self, p.stop)
            self._i = self._end = p.first  # deliveries in the ring's numbering
            self._end += p.n_deliveries
            if p.n_batches != serve_batches - start:
                self.close()
                raise LoaderError(f"pertload serve announced {p.n_batches} batches, "
                                  f"{serve_batches - start} expected")
            changed = _source_changed(loader, p.mapping.source())
            if changed:
                self.close()
                raise LoaderError(f"database at {loader.db} changed since the Loader opened "
                                  f"it: {changed}; make a new Loader to use it")

    @property
    def process(self):
        """The serve process (subprocess.Popen), or None when not running."""
        p = self._producer
        return p.proc if p is not None and not p._stopped else None

    def stats(self):
        """The ring's shared counters (pl_ring_stats as a dict), or None."""
        p = self._producer
        return p.mapping.stats() if p is not None and p.mapping is not None else None

    def __iter__(self):
        return self

    def _take(self):
        """The next delivery as a Batch of its slot (views), or None at the
        end of the epoch."""
        p = self._producer
        m = p.mapping
        lib = _lib.lib()
        # Before the header is touched (a truncated segment faults), and again
        # before the slot is, as the wait for it may be long.
        self._check_size(m)
        slot = ctypes.c_void_p()
        err = _lib.PlErr()
        rc = _NOT_YET
        while rc in (_EINTR, _NOT_YET):
            # A wait returns at a signal to this thread and after a slice:
            # Python runs the handlers of signals delivered to any thread
            # between the calls, also while a stopped producer publishes
            # nothing (KeyboardInterrupt or a SIGTERM handler's SystemExit
            # leave from there; a handler that returns lets the wait go on).
            rc = lib.pl_ring_next_within(m.handle, self._i, _WAIT_SLICE_NS, ctypes.byref(slot),
                                         ctypes.byref(err))
        if rc == 1:
            return None
        if rc < 0:
            msg = err.text(rc)
            if p.proc.poll() is not None:
                msg += f" ({p.exit_message()})"
            self.close()
            raise LoaderError(msg)
        self._i += 1
        try:
            m.check_size()
            copy = _slots.copy_at_delivery()
            batch = self._unparsed(m, slot.value) if self._loader._unparsed and not copy else None
            if batch is not None:
                head = batch._head
            elif copy:
                batch = copied_delivery(self._loader, m, slot.value)
                head = batch._head
            else:
                buf = m.buffer(slot.value)
                head, arrays = parse_slot(buf, m.slot_bytes)
                batch = Batch(arrays, head, self._loader._kinds, m, ctypes.addressof(buf),
                              m.slot_bytes, self._loader._fingerprints, self._loader._graph_on,
                              owner=buf)
                del buf, arrays
            want = self._start + self._b
            if batch.index != want or batch.epoch != self._loader.epoch:
                raise LoaderError(f"ring '{p.name}': slot holds batch {batch.index} of epoch "
                                  f"{batch.epoch}, batch {want} of epoch "
                                  f"{self._loader.epoch} expected")
        except Exception as e:
            self.close()
            if isinstance(e, LoaderError):
                raise
            raise LoaderError(f"ring '{p.name}': batch {self._start + self._b}: {e!r}") from e
        return head, batch

    def _unparsed(self, m, addr):
        """The SlotBatch of the slot at `addr` when it holds one whole batch
        to yield as it is (one part, not trimmed), else None."""
        lo = self._loader
        head = slot_head(ctypes.string_at(addr, HEADER.size))
        keep = lo._keep(head["batch"])
        if head["n_parts"] != 1 or (keep is not None and keep < head["n_samples"]):
            return None
        return SlotBatch(head, lo._kinds, m, addr, m.slot_bytes, lo._fingerprints, lo._graph_on)

    def _release(self, batch):
        """Hand the slot of the last delivery taken back to the producer. The
        batch is released (its arrays may no longer be read through it) and
        what the user still holds of it becomes a private copy first (DESIGN
        section 15: kept data never changes), except for the epoch's last
        delivery, whose slot is never refilled: it stays valid."""
        batch.wait_copies()
        m = self._producer.mapping
        self._check_size(m)  # the copy reads the slot; the release touches the header
        if self._i < self._end:
            try:
                self._loader._hand_back(m, batch)
            except BaseException:  # a failed copy: the slot, still viewed, never goes back
                self.close()
                raise
        elif self._producer.more_epochs:
            self._last = batch  # handed back when serve is asked for another epoch
        _lib.lib().pl_ring_release(m.handle, self._i - 1, len(batch))

    def _gather(self, head, batch):
        """The remaining parts of a split batch, merged with its first."""
        n_parts, parts = head["n_parts"], []
        while True:
            if (head["part"] != len(parts) or head["n_parts"] != n_parts or
                    head["first"] != sum(h["n_samples"] for h, _ in parts)):
                self.close()
                raise LoaderError(f"ring '{self._producer.name}': batch {batch.index}: part "
                                  f"{head['part']} of {head['n_parts']} at sample "
                                  f"{head['first']} out of order")
            last = len(parts) + 1 == n_parts
            # The last part is merged straight from its slot; the others are
            # copied first, as their slots are handed back before the next.
            parts.append((head, batch.arrays if last else
                          {k: v.copy() for k, v in batch.arrays.items()}))
            if last:
                merged_head, arrays = merge_parts(parts)
                merged = Batch(arrays, merged_head, self._loader._kinds,
                               fingerprints=self._loader._fingerprints,
                               graph_source=self._loader._graph_on)
                parts = arrays = None  # no view of the slot left: no copy on hand-back
                self._release(batch)
                return merged
            self._release(batch)
            got = self._take()
            if got is None:
                self.close()
                raise LoaderError(f"ring '{self._producer.name}': the epoch ended within "
                                  f"batch {batch.index} ({len(parts)} of {n_parts} parts)")
            head, batch = got

    def __next__(self):
        self._caller.check()
        p = self._producer
        if p is None or p._stopped:
            raise StopIteration
        if self._padding_left and self._start + self._b >= self._n:
            # pad=False: the rank's samples are out; the rest of serve's plan
            # is padding. The last batch stays valid: its slot is not refilled.
            if not self._skip_padding():
                self.close()
            raise StopIteration
        prev, self._prev = self._prev, None
        if prev is not None:
            self._release(prev)
        got = self._take()
        if got is None:
            # The last batch stays valid: its slot is never refilled.
            self.close(finish=True)
            raise StopIteration
        head, batch = got
        if head["n_parts"] > 1:
            batch = self._gather(head, batch)
        keep = self._loader._keep(batch.index)
        if keep is not None and keep < len(batch):
            batch = batch.trimmed(keep)
        if head["n_parts"] == 1:
            self._prev, self._i_prev = batch, self._i - 1
        self._b += 1
        self.consumed = self._start + self._b
        if not self.deferred:  # a DevicePrefetch counts deliveries itself
            self._loader._consumed = self.consumed
        return batch

    def _skip_padding(self):
        """pad=False with a kept serve: take the padding left in serve's plan
        without yielding it, so that serve ends its epoch and is kept for the
        next, the last batch yielded staying valid until then (its slot is
        handed back when the next epoch starts). Only where the padding's
        deliveries fit in the other slots; else, or when serve fails
        meanwhile, False (the caller stops serve)."""
        p, prev = self._producer, self._prev
        if not p.more_epochs or self._end - self._i >= p.mapping.stats()["n_slots"]:
            return False
        lib, m = _lib.lib(), p.mapping
        if prev is not None:  # no delivery of this epoch goes to its slot now
            lib.pl_ring_release(m.handle, self._i_prev, len(prev))
        try:
            while (got := self._take()) is not None:
                lib.pl_ring_release(m.handle, self._i - 1, len(got[1]))
                del got
        except LoaderError:
            return False  # _take closed the epoch
        self._last = prev
        self.close(finish=True)
        return True

    def _check_size(self, m):
        try:
            m.check_size()
        except LoaderError:
            self.close()
            raise

    def close(self, finish=False):
        """Stop the producer and drop the ring (also on garbage collection);
        in a forked child, only let go of the parent's."""
        p, self._prev = self._producer, None
        if os.getpid() != self._caller.pid:
            self._producer = None
            return
        if p is None or p._stopped:
            return
        try:  # the final counters, for Loader.stats() after the epoch
            self._loader._last_stats = self.stats()
        except LoaderError:
            pass
        if finish and p.more_epochs:
            # serve waits for the next epoch: the Loader keeps it.
            self._finalizer.detach()
            self._producer = None
            self._loader._keep_producer(p, self._last)
            # An iterator still referenced once done (a loop's `it`) keeps
            # neither the Loader nor its kept serve alive.
            self._loader = self._last = None
        elif finish:
            p.finish()
        else:
            p.stop()
