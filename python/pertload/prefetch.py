"""Batches laid out on the training device ahead of the step that needs them.

DevicePrefetch(batches, device, layout="pyg", edge_types=None, depth=2)
iterates `batches` (a Loader's epoch, or a DataLoader over a Dataset, that
yields pertload.Batch) on a thread of its own and, for each batch, copies
its lists to `device` and builds `layout` there (Batch.to_torch) on a side
stream, up to `depth` batches ahead of the consumer. The consumer gets a
batch whose layout is ready, or is being built, on the side stream: its own
current stream waits for that work (an event, no host synchronisation) and
every tensor of the batch is recorded for the consumer's stream (by the
thread, for the stream current when the iteration began; at delivery for
another), so CUDA's caching allocator reuses none of their memory before
the step that reads them is done. The ring slot a batch came from is handed back once its copies
finished; the consumer holds only device tensors that own their memory.

On the CPU (or any device that is not CUDA) the same thread builds the
layouts ahead, with no streams.
"""

import queue
import threading
import time
import weakref

from . import batch as batch_mod

_END = object()


def tensors(x, seen=None):
    """Every torch tensor of a to_torch() result: nested mappings, lists and
    a torch_geometric Batch (its stores and its slice and increment dicts)."""
    import torch

    if isinstance(x, torch.Tensor):
        yield x
        return
    if hasattr(x, "stores") and hasattr(x, "_slice_dict"):  # a PyG Batch
        for store in x.stores:
            yield from tensors(dict(store.items()))
        yield from tensors(getattr(x, "_slice_dict", None) or {})
        yield from tensors(getattr(x, "_inc_dict", None) or {})
        return
    if isinstance(x, dict):
        for v in x.values():
            yield from tensors(v)
    elif isinstance(x, (list, tuple)):
        for v in x:
            yield from tensors(v)


def _fill(it, out, stop, build, cuda_stream, consumer):
    """The thread: take, lay out and queue batches until the end, an error
    or `stop`; it alone touches the epoch's ring, and closes it when
    stopped. Each batch's tensors are recorded for the `consumer` stream
    here, off the consumer's thread."""
    import torch

    try:
        while not stop.is_set():
            try:
                b = next(it)
            except StopIteration:
                break
            if cuda_stream is not None:
                with torch.cuda.stream(cuda_stream):
                    item = build(b)
                    ready = torch.cuda.Event()
                    ready.record(cuda_stream)
                for t in tensors(item):
                    t.record_stream(consumer)
            else:
                item, ready = build(b), None
            consumed = getattr(it, "consumed", None)
            del b  # the slot goes back at the next take: nothing holds a view of it
            while not stop.is_set():
                try:
                    out.put((item, ready, consumed), timeout=0.1)
                    break
                except queue.Full:
                    continue
        else:
            close = getattr(it, "close", None)
            if close is not None:
                close()
        if not stop.is_set():
            out.put((_END, None, None))
    except BaseException as e:  # handed to the consumer, raised there
        out.put((e, None, None))


class DevicePrefetch:
    """Iterator of batches laid out on `device` (see the module's text).

    Yields what batch.to_torch(device, layout=layout, edge_types=edge_types)
    returns. `on_delivery(consumed)` is called with the epoch's count of
    consumed batches when a batch reaches the consumer (the Loader's
    state_dict counts delivered batches, not prefetched ones)."""

    def __init__(self, batches, device, layout="pyg", edge_types=None, depth=2,
                 on_delivery=None):
        import torch

        if depth < 1:
            raise ValueError(f"prefetch depth is at least 1, not {depth}")
        self.device = dev = torch.device(device)
        self._source = batches
        self._on_delivery = on_delivery
        self._stream = self._consumer = None
        if batch_mod._on_cuda(dev):
            idx = dev.index if dev.index is not None else torch.cuda.current_device()
            self._stream = torch.cuda.Stream(device=idx)
            # the stream the consumer's step runs on: the thread records the
            # batches' tensors for it (another at delivery is recorded then)
            self._consumer = torch.cuda.current_stream(dev)

        def build(b):
            return b.to_torch(dev, layout=layout, edge_types=edge_types)

        self._queue = queue.Queue(maxsize=depth)
        self._stop = threading.Event()
        self._done = False
        # seconds next() spent blocked on the queue (the thread behind) and
        # handing a ready batch over (the stream's wait, record_stream)
        self.blocked_s = self.handoff_s = 0.0
        self._thread = threading.Thread(target=_fill, name="pertload-prefetch", daemon=True,
                                        args=(iter(batches), self._queue, self._stop, build,
                                              self._stream, self._consumer))
        self._thread.start()
        self._finalizer = weakref.finalize(self, _shut, self._stop, self._queue, self._thread)

    def __iter__(self):
        return self

    def __next__(self):
        import torch

        if self._done:
            raise StopIteration
        t0 = time.perf_counter()
        item, ready, consumed = self._queue.get()
        t1 = time.perf_counter()
        self.blocked_s += t1 - t0
        if item is _END:
            self._done = True
            self._thread.join()
            raise StopIteration
        if isinstance(item, BaseException):
            self._done = True
            self._thread.join()
            raise item
        if ready is not None:
            current = torch.cuda.current_stream(self.device)
            current.wait_event(ready)
            if current != self._consumer:  # the step moved to another stream
                for t in tensors(item):
                    t.record_stream(current)
        self.handoff_s += time.perf_counter() - t1
        if self._on_delivery is not None and consumed is not None:
            self._on_delivery(consumed)
        return item

    @property
    def process(self):
        """The serve process of the epoch iterated, where it has one."""
        return getattr(self._source, "process", None)

    def stats(self):
        """The epoch's ring counters, where it has them."""
        stats = getattr(self._source, "stats", None)
        return stats() if stats is not None else None

    def close(self):
        """Stop the thread (it closes the epoch it iterates) and drop what
        it had prefetched."""
        self._done = True
        self._finalizer()


def _shut(stop, q, thread):
    stop.set()
    while thread.is_alive():
        try:  # a thread blocked on a full queue sees the stop within 0.1 s
            q.get(timeout=0.05)
        except queue.Empty:
            pass
        if thread is threading.current_thread():
            return
        thread.join(timeout=0.05)
    while True:
        try:
            q.get_nowait()
        except queue.Empty:
            return
