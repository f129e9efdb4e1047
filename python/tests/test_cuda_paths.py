"""The CUDA branches of Batch.to_torch and of the PyG layout, run on the CPU
X
streams and events are stand-ins that log what is queued where, and
Tensor.record_stream is a stub that only a tensor has (a plain value given
to it fails as it would on a GPU). The results are compared with the CPU
path's, which is checked against oracles elsewhere; the GPU runs the same
code with real streams (scripts/gpu-check.sh)."""

import contextlib
import itertools

import numpy as np
import pytest
import torch

import pertload
from pertload import _service, batch as batch_mod, kernels, pyg


class Double:
    """The CUDA API that to_torch uses, on the CPU, with a log of calls."""

    def __init__(self):
        self.log = []
        self.side = None  # the stream whose context is entered, if any
        double = self

        class Stream:
            def __init__(self, device=None):
                self.name = "side"

            def wait_stream(self, other):
                double.log.append(("wait", self.name, other.name))

        class Event:
            def record(self, stream=None):
                double.log.append(("record", stream.name))

            def synchronize(self):
                double.log.append(("sync",))

        self.Stream, self.Event = Stream, Event
        self.current = Stream()
        self.current.name = "current"

    @contextlib.contextmanager
    def stream(self, s):
        self.log.append(("enter", s.name))
        self.side = s
        try:
            yield
        finally:
            self.side = None
            self.log.append(("exit", s.name))

    def install(self, monkeypatch, kernels_on=False):
        """The CUDA branches on the CPU; kernels_on: the layouts by the
        library's kernels (their host twin on CPU tensors), else by the
        torch ops a library without CUDA takes."""
        d = self
        monkeypatch.setattr(batch_mod, "_on_cuda", lambda dev: True)
        monkeypatch.setattr(pyg, "_use_library", lambda ei: False)
        monkeypatch.setattr(kernels, "enabled", lambda dev: kernels_on)
        monkeypatch.setattr(batch_mod, "_streams", {})
        monkeypatch.setattr(torch.cuda, "Stream", self.Stream)
        monkeypatch.setattr(torch.cuda, "Event", self.Event)
        monkeypatch.setattr(torch.cuda, "stream", self.stream)
        monkeypatch.setattr(torch.cuda, "current_stream", lambda dev=None: d.current)
        monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
        monkeypatch.setattr(_service._Mapping, "cuda_register",
                            lambda self, addr, n: d.log.append(("register", addr)))

        def record_stream(t, s):
            assert isinstance(t, torch.Tensor)
            d.log.append(("record_stream", s.name))
        monkeypatch.setattr(torch.Tensor, "record_stream", record_stream, raising=False)
        real_to = torch.Tensor.to

        def to(t, *a, **kw):
            d.log.append(("to", d.side.name if d.side else None))
            return real_to(t, *a, **kw)
        monkeypatch.setattr(torch.Tensor, "to", to)


@pytest.fixture
def double(monkeypatch):
    d = Double()
    d.install(monkeypatch)
    return d


def flat(x, prefix=()):
    """Every tensor and value of a to_torch result by its key path."""
    if hasattr(x, "to_dict"):  # a torch_geometric HeteroData
        x = x.to_dict()
    if isinstance(x, dict):
        out = {}
        for k, v in x.items():
            out.update(flat(v, prefix + (k,)))
        return out
    return {prefix: x}


def assert_same(got, want, device="cpu"):
    """Two to_torch results alike: the same keys, values, dtypes and shapes
    (NaN labels equal), `got`'s tensors on `device` (a device type)."""
    g, w = flat(got), flat(want)
    assert g.keys() == w.keys()
    for k, v in w.items():
        if isinstance(v, torch.Tensor):
            assert isinstance(g[k], torch.Tensor) and g[k].device.type == device, k
            assert g[k].dtype == v.dtype and g[k].shape == v.shape, k
            torch.testing.assert_close(g[k].cpu(), v, rtol=0, atol=0, equal_nan=True,
                                       msg=lambda m: f"{k}: {m}")
        else:
            assert g[k] == v, k


BATCHES = 4  # of a shuffled epoch: enough to meet every branch


def cpu_results(db, layouts, **opts):
    """to_torch("cpu") of the first BATCHES batches of an epoch, per layout
    (the real CPU path)."""
    loader = pertload.Loader(db, batch_size=40, shuffle=True, **opts)
    out = [{lay: batch.to_torch("cpu", layout=lay) for lay in layouts}
           for batch in itertools.islice(loader, BATCHES)]
    loader.close()
    return out


@pytest.mark.parametrize("kernels_on", [False, True], ids=["torch-ops", "kernels"])
@pytest.mark.parametrize("opts", [{}, {"dense": "bits"}, {"dense": "bool"},
                                  {"khop": 1}])
def test_cuda_path_equals_cpu_path(medium, monkeypatch, opts, kernels_on):
    """Every layout (pyg included: its plain ints must not reach
    record_stream) gives through the CUDA branches what the CPU path gives,
    built by the library's kernels (their host twin) or by torch ops."""
    layouts = ("masks", "lists", "pyg", "lazy") if "khop" not in opts else ("masks", "lists")
    want = cpu_results(medium.db, layouts, **opts)
    d = Double()
    d.install(monkeypatch, kernels_on)
    loader = pertload.Loader(medium.db, batch_size=40, shuffle=True, **opts)
    n = 0
    for i, batch in enumerate(itertools.islice(loader, BATCHES)):
        for lay in layouts:
            got = batch.to_torch("cpu", layout=lay)  # CUDA branches: _on_cuda
            assert_same(got, want[i][lay])
            n += 1
    loader.close()
    assert n == BATCHES * len(layouts) and len(want) == BATCHES
    assert any(e[0] == "register" for e in d.log)


@pytest.mark.parametrize("kernels_on", [False, True], ids=["torch-ops", "kernels"])
def test_cuda_path_lazy_and_node_features_equal_cpu_path(medium, monkeypatch, kernels_on):
    """The lazy layout and both graph layouts' node features x (float16 and
    float32, gathered on the device) give through the CUDA branches what the
    CPU path gives."""
    rng = np.random.default_rng(11)
    feats = {"gene": rng.standard_normal((len(medium.genes), 6)).astype(np.float16),
             "reaction": rng.standard_normal((len(medium.reactions), 3)).astype(np.float32)}
    layouts = ("pyg", "lazy")
    want = cpu_results(medium.db, layouts, features=feats)
    d = Double()
    d.install(monkeypatch, kernels_on)
    loader = pertload.Loader(medium.db, batch_size=40, shuffle=True, features=feats)
    n = 0
    for i, batch in enumerate(itertools.islice(loader, BATCHES)):
        for lay in layouts:
            got = batch.to_torch("cpu", layout=lay)  # CUDA branches: _on_cuda
            assert_same(got, want[i][lay])
            x = flat(got)[("gene", "x")]
            assert x.dtype == torch.float16 and x.shape[1] == 6, lay
            n += 1
    loader.close()
    assert n == BATCHES * len(layouts) and len(want) == BATCHES
    assert any(e[0] == "register" for e in d.log)


def test_copy_event_follows_the_copies_alone(medium, double):
    """The side stream gets the copies and nothing else; the event that
    wait_copies() waits for is recorded on it after the last copy; every
    copy is waited for by the current stream and recorded for it."""
    loader = pertload.Loader(medium.db, batch_size=40)
    batch = next(iter(loader))
    double.log.clear()
    batch.to_torch("cpu", layout="pyg")
    log = double.log
    enters = [i for i, e in enumerate(log) if e == ("enter", "side")]
    assert enters
    for i in enters:  # exactly one copy inside each side-stream context
        assert log[i + 1] == ("to", "side") and log[i + 2] == ("exit", "side")
        assert log[i + 3] == ("wait", "current", "side")
        assert log[i + 4] == ("record_stream", "current")
    rec = [i for i, e in enumerate(log) if e[0] == "record"]
    assert len(rec) == 1 and log[rec[0]] == ("record", "side") and rec[0] > enters[-1]
    assert all(e[0] != "to" or e[1] != "side" for e in log[rec[0]:])
    batch.wait_copies()
    assert log[-1] == ("sync",)
    batch.wait_copies()  # once only
    assert log[-1] == ("sync",) and log.count(("sync",)) == 1
    loader.close()


def test_cuda_path_checks_the_slot_lists(medium, double):
    """The CUDA branch checks positions in the slot before its copy: a
    position out of range is refused there."""
    loader = pertload.Loader(medium.db, batch_size=40)
    batch = next(iter(loader)).copy()
    t = next(iter(batch.removed))
    pos, _ = batch.removed[t]
    if len(pos) == 0:
        pytest.fail("the medium database's first batch removes no edges of its first type")
    pos[0] = 1 << 30
    with pytest.raises(pertload.LoaderError, match="outside"):
        batch.to_torch("cpu", graph=loader.graph)
    loader.close()


# ------------------------------------------------------- _union_torch

def union_pair(ei, pos, ptr, B, shift_src, shift_dst, budget):
    p = torch.as_tensor(np.asarray(pos, np.int64))
    q = torch.as_tensor(np.asarray(ptr, np.int64))
    a = pyg._union_cpu(torch, ei, p, q, B, shift_src, shift_dst)
    b = pyg._union_torch(torch, ei, p, q, B, shift_src, shift_dst, budget=budget)
    return a, b


def lists_of(rng, B, E, p_remove):
    pos, ptr = [], [0]
    for _ in range(B):
        pos += sorted(np.flatnonzero(rng.random(E) < p_remove).tolist())
        ptr.append(len(pos))
    return pos, ptr


@pytest.mark.parametrize("budget", [None, 1, pyg._UNION_BYTES * 10, pyg._UNION_BYTES * 37 * 3])
def test_union_torch_chunked_equals_library(budget):
    """_union_torch against pl_pyg_edges, unchunked and in chunks of 1, 2,
    3 samples (a budget in bytes: pyg._UNION_BYTES an edge position), on edge cases: no
    removal, every edge removed, empty samples first and last, equal and
    different shifts, one sample."""
    rng = np.random.default_rng(5)
    E = 37
    ei = torch.as_tensor(rng.integers(0, 50, (2, E)), dtype=torch.int64)
    cases = [lists_of(rng, 7, E, 0.3), lists_of(rng, 5, E, 0.0), lists_of(rng, 4, E, 1.0),
             lists_of(rng, 1, E, 0.5)]
    mixed_pos = list(range(E)) + [3, 9] + list(range(E))
    cases.append((mixed_pos, [0, E, E, E + 2, 2 * E + 2, 2 * E + 2]))
    for pos, ptr in cases:
        B = len(ptr) - 1
        for s, t in ((300, 300), (300, 7)):
            a, b = union_pair(ei, pos, ptr, B, s, t, budget)
            assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1]), (B, s, t)
            assert a[0].shape[1] == B * E - len(pos)


def test_union_torch_chunked_on_batches(medium):
    """On every edge type of BATCHES batches of an epoch, chunks of two
    samples give what the library's kernel gives."""
    loader = pertload.Loader(medium.db, batch_size=48, shuffle=True)
    g = loader.graph.to_torch("cpu")
    n = 0
    for batch in itertools.islice(loader, BATCHES):
        for t, (pos, ptr) in batch.removed.items():
            ei = g[("gene", t, "gene")]["edge_index"]
            a, b = union_pair(ei, pos, ptr, len(batch), 300, 7,
                              budget=2 * pyg._UNION_BYTES * ei.shape[1])
            assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1]), t
            n += 1
    assert n == BATCHES * len(medium.types)
    loader.close()


def test_union_torch_chunks_keep_under_the_budget(monkeypatch):
    """The samples per chunk follow the budget: each chunk's mask holds at
    most budget / _UNION_BYTES positions (one sample at least)."""
    seen = []
    real = pyg._union_chunk

    def spy(torch_, ei, pos, ptr, B, *a, **kw):
        seen.append(B)
        return real(torch_, ei, pos, ptr, B, *a, **kw)
    monkeypatch.setattr(pyg, "_union_chunk", spy)
    rng = np.random.default_rng(1)
    E = 100
    ei = torch.as_tensor(rng.integers(0, 9, (2, E)), dtype=torch.int64)
    pos, ptr = lists_of(rng, 10, E, 0.2)
    union_pair(ei, pos, ptr, 10, 1, 1, budget=pyg._UNION_BYTES * E * 3)
    assert seen == [3, 3, 3, 1]
    seen.clear()
    union_pair(ei, pos, ptr, 10, 1, 1, budget=None)
    assert seen == [10]


def test_detach_waits_for_every_device_and_registers_portably(monkeypatch):
    """Before a slot is unregistered every device is synchronized (batches
    may have gone to devices other than the current one), and slots are
    page-locked for every context (cudaHostRegisterPortable)."""
    log = []

    class Cudart:
        def cudaHostRegister(self, addr, n, flags):
            log.append(("register", addr, n, flags))
            return 0

        def cudaHostUnregister(self, addr):
            log.append(("unregister", addr))
            return 0

    class Cuda:
        def device_count(self):
            return 3

        def synchronize(self, d=None):
            log.append(("sync", d))

        def cudart(self):
            return Cudart()

    class FakeTorch:
        cuda = Cuda()

    monkeypatch.setitem(__import__("sys").modules, "torch", FakeTorch)
    m = _service._Mapping.__new__(_service._Mapping)
    m._registered = []
    m.cuda_register(4096, 8192)
    m.cuda_register(4096, 8192)  # once per slot
    m.cuda_register(12288, 8192)
    assert log == [("register", 4096, 8192, 1), ("register", 12288, 8192, 1)]
    log.clear()
    _service._detach(None, m._registered, [-1, 0])
    assert log == [("sync", 0), ("sync", 1), ("sync", 2), ("unregister", 4096),
                   ("unregister", 12288)]
