"""The Loader: runs `pertload serve` for an epoch and yields its batches."""

import logging
import os
import re
import shutil
import weakref

from . import _lib
from ._epochs import _Epoch, _mark_released
from ._service import _start_producer
from .batch import list_kinds
from .graph import GraphOn, fingerprints
from .prefetch import DevicePrefetch
from .resume import check_state, plan_call
from .subset import split_rows, split_spec, subset

def _env_int(name, default):
    v = os.environ.get(name)
    return int(v) if v not in (None, "") else default


_log = logging.getLogger("pertload")
_env_logged = False


def _rank_world(rank, world_size):
    """rank and world_size, each from torchrun's RANK / WORLD_SIZE where not
    given (else 0 and 1); logged once per process when the environment set
    them, as a loader that takes a rank's share by surprise (an evaluation
    loader under torchrun) would silently see part of the data."""
    global _env_logged
    from_env = []
    if rank is None:
        rank = _env_int("RANK", 0)
        if os.environ.get("RANK"):
            from_env.append(f"rank {rank} (RANK)")
    if world_size is None:
        world_size = _env_int("WORLD_SIZE", 1)
        if os.environ.get("WORLD_SIZE"):
            from_env.append(f"world_size {world_size} (WORLD_SIZE)")
    if from_env and world_size > 1 and not _env_logged:
        _env_logged = True
        _log.warning("pertload.Loader: %s from the environment: each loader yields this "
                     "rank's share of the samples; pass rank=0, world_size=1 for a loader "
                     "over all of them (evaluation)", " and ".join(from_env))
    return rank, world_size


def rank_samples(n, rank, world_size):
    """Samples of rank `rank`'s share of n without padding (loader/plan.h
    step 2: entries rank, rank + world_size, ... below n)."""
    return max(0, -(-(n - rank) // world_size))


def epoch_batches(n, rank, world_size, batch_size, drop_last, pad=True):
    """Batches of one rank's epoch over n samples in the row order: the
    plan's (equal on every rank) or, with pad=False, those of the rank's
    samples alone (uneven across ranks, every sample once)."""
    if pad or drop_last:
        return _lib.plan_n_batches(n, rank, world_size, batch_size, drop_last)
    return -(-rank_samples(n, rank, world_size) // batch_size)


class Loader:
    """Batches of a pertload database, produced by a `pertload serve` process.

    Loader(db, batch_size=64, shuffle=False, seed=0, drop_last=False,
           rank=None, world_size=None, dense=None, threads=2, ring=None,
           timeout=30.0, slots=None, max_ring_bytes=None, rows=None, khop=None,
           khop_types=None, khop_max_genes=None, order="rows", block_rows=None,
           block_window=None, budget=None, rank_weights=None, ontology=None,
           split=None, pad=True, shared_table=True, persistent=True,
           device=None, layout="masks", edge_types=None, prefetch=2)

    pad: with pad=True (training) every rank runs the same number of steps:
    the plan pads the order by repeating its first samples (loader/plan.h
    step 2), so a sample may come twice in an epoch. pad=False (evaluation)
    yields each rank's own samples only: every sample of the subset exactly
    once across ranks (and Dataset workers), the step counts may differ by
    one between ranks, and a rank's last batch may be short. It takes the
    row order; drop_last, budget and rank_weights pad nothing anyway.

    rank and world_size default, each on its own, to torchrun's RANK and
    WORLD_SIZE (else 0 and 1): under torchrun every loader then yields its
    rank's share, an evaluation loader too; pass rank=0, world_size=1 for
    all samples. When the environment sets them a warning is logged once
    per process (logger "pertload").
    rows: the subset of the database's rows the epochs run over (a range, or
    a sequence of distinct row indices: a train, validation or test split):
    the plan (shuffle, ranks, batches, resume) runs over the subset's
    positions, so every row of it comes exactly once per epoch across ranks
    (without padding); n_samples is the subset's size.
    split: the subset of a split column instead (serve --split): a level
    name, split="train", takes the rows whose category column "split" holds
    it; split=("column", "level") names the column. The column is a text
    column of the sample table stored as a category at build (recipe
    `categories: [split]`; Graph.categories lists the levels). The rows
    are those of the level in ascending order, as if given as rows= (the
    same plan and state_dict); a level no row holds, an unknown column or
    level, a label that is no category and a database with no sample are
    ValueErrors naming them.

    Each iteration runs one epoch (set_epoch() chooses it): it starts
    `pertload serve` on a ring of its own, yields Batch objects (numpy views of
    the ring, valid until the next batch); the process is kept for the next
    epoch (persistent=True, the default, below) or stopped at its end
    (persistent=False), and stopped on break, close() or garbage
    collection. dense="bits" or "bool" asks the
    producer for dense masks in the slots. ring names the ring (default
    "py<pid>-<64 random bits in hex>", a fresh one per serve and again when
    the name is taken); timeout bounds the producer's start in seconds.
    khop=K adds to every batch the perturbation neighbourhoods (Batch.khop):
    the genes within K hops of each sample's deleted genes walking the edge
    types khop_types (names, a list or a comma-separated string; default every
    type) both ways, and the walked types' edges among them; khop_max_genes
    caps a set (default 1024: a hop that would pass it is dropped whole and
    the sample flagged in khop["capped"]).

    ontology: with a database that holds an ontology (DESIGN section 10),
    every batch carries its lists (Batch.ontology: per sample the affected
    terms and the removed annotations; to_torch keys "term" and ("gene",
    "annotated", "term")) unless ontology=False (serve --no-ontology);
    ontology=True raises ValueError for a database without one.
    shared_table: serve keeps one sample table per database and node in
    shared memory (default); shared_table=False gives each serve its own
    (serve --no-shared-table). An object of another user at the shared
    table's name never stops serve: it warns and keeps a private table.

    order="block" reads a payload in long runs: blocks of block_rows
    consecutive rows (default 16) are shuffled, then rows within windows of
    block_window blocks (default: one batch); ranks take whole batches and the
    rows of a batch come sorted (serve --order block, loader/plan.h). shuffle
    is not read in this order.

    budget="removed=N" or "payload=BYTES" fills each batch up to a budget
    instead of batch_size samples (then the most a batch holds): a sample
    costs its removed positions as serve sizes slots for them (an upper
    bound), or its payload bytes. Every rank still runs the same number of
    steps (serve --budget, loader/plan.h steps 2c-3c); the count depends on
    the seed and epoch, so len() is computed from the database's sample table
    (decoded for it) at construction, set_epoch() and load_state_dict().

    rank_weights=[w0, w1, ...] (integers >= 1, one per rank; serve
    --rank-weights) gives mixed GPUs shares in proportion: rank r's batches
    hold about batch_size * w[r] / max(w) samples, every rank the same number
    of steps (loader/plan.h step 2d).

    The ring in /dev/shm takes at most max_ring_bytes (default: serve's, 256
    MiB) with at most `slots` slots (default 16), each sized for a typical
    batch; a batch too large for a slot comes in parts that are put together
    here, so every batch still has its batch_size samples (Batch.parts says
    how many slots it took).

    features={node type: float32/float16 array [n_nodes, F] or .npy path}:
    node features that to_torch(layout="pyg" or "lazy") gathers as each
    node store's x on the device (Graph.set_features; checked here).

    persistent=True (the default) keeps the serve process (and its ring)
    between epochs:
    once an epoch was iterated to its end, the next iteration with the same
    options (any epoch, any start batch of load_state_dict()) asks that
    process for its epoch through its stdin (serve --more-epochs) instead of
    starting a new one, and the epoch's last batch is released then (what
    is held of it copied first). Changed options, or a serve found dead,
    start a new one; an epoch left early stops it; close() or garbage
    collection ends it.

    device (e.g. "cuda"): the iteration yields batch.to_torch(device,
    layout=layout, edge_types=edge_types) instead of the Batch, built up to
    `prefetch` batches (default 2) ahead of the consumer on a thread and a
    side stream of its own (pertload.prefetch.DevicePrefetch): the next
    batch's copies and layout overlap the current step, the current stream
    waits for them by an event, nothing is synchronised on the host.

    state_dict() saves the position in the epoch (batches delivered, not
    prefetched), the same on every rank but for "rank" (save one rank's);
    load_state_dict() (one state, or a list of every rank's, refused unless
    they agree) makes the next iteration yield exactly the remaining
    batches. A state of another world size or other rank weights (this
    loader's are the new world's) resumes elastically (loader/plan.h step
    1e): the samples every old rank consumed are left out and the rest is
    dealt to the new ranks, no sample twice (padding at its end aside), the
    next epoch the new world's own (docs/ranks.md). A producer failure or
    death raises LoaderError.

    The serve process is sent SIGKILL if the thread that started the
    iteration exits (PR_SET_PDEATHSIG), so iterate from a thread that outlives
    the epoch, such as the main thread.
    """

    # True in a DataLoader worker of the lists layout (pertload.data): a
    # batch its slot holds whole is yielded as a SlotBatch, copied unparsed.
    _unparsed = False

    def __init__(self, db, batch_size=64, shuffle=False, seed=0, drop_last=False, rank=None,
                 world_size=None, dense=None, threads=2, ring=None, timeout=30.0, slots=None,
                 max_ring_bytes=None, rows=None, khop=None, khop_types=None,
                 khop_max_genes=None, order="rows", block_rows=None, block_window=None,
                 budget=None, rank_weights=None, ontology=None,
                 split=None, features=None, pad=True, shared_table=True, persistent=True,
                 device=None, layout="masks", edge_types=None, prefetch=2):
        rank, world_size = _rank_world(rank, world_size)
        if device is None and (layout != "masks" or edge_types is not None):
            raise ValueError("layout and edge_types are options of device= (or of "
                             "batch.to_torch())")
        if device is not None and layout not in ("masks", "lists", "pyg", "lazy"):
            raise ValueError(f"layout is 'masks', 'lists', 'pyg' or 'lazy', not {layout!r}")
        if int(prefetch) < 1:
            raise ValueError(f"prefetch is at least 1, not {prefetch}")
        self.device, self.layout, self.edge_types = device, layout, edge_types
        self.prefetch = int(prefetch)
        if not pad and order != "rows":
            raise ValueError("pad=False takes the row order, not order='block'")
        if budget is not None and rows is not None:
            raise ValueError("rows and budget cannot be combined")
        if split is not None and rows is not None:
            raise ValueError("rows and split cannot be combined (one subset)")
        if split is not None and budget is not None:
            raise ValueError("split and budget cannot be combined")
        self.split = None if split is None else split_spec(split)
        if batch_size < 1 or world_size < 1 or not 0 <= rank < world_size:
            raise ValueError(f"batch_size {batch_size}, rank {rank}, world_size {world_size}: "
                             "need batch_size >= 1 and 0 <= rank < world_size")
        if dense not in (None, "bits", "bool"):
            raise ValueError(f"dense is None, 'bits' or 'bool', not {dense!r}")
        if threads < 1 or (slots is not None and slots < 1):
            raise ValueError("threads and slots must be at least 1")
        if order not in ("rows", "block"):
            raise ValueError(f"order is 'rows' or 'block', not {order!r}")
        if order != "block" and (block_rows is not None or block_window is not None):
            raise ValueError("block_rows and block_window need order='block'")
        for key, v in (("block_rows", block_rows), ("block_window", block_window)):
            if v is not None and not 1 <= v <= 1 << 30:
                raise ValueError(f"{key} {v}: must be 1 to 2**30")
        self.budget = None
        if budget is not None:
            kind, _, value = str(budget).partition("=")
            if kind not in ("removed", "payload") or not value.isdigit() or int(value) < 1:
                raise ValueError(f"budget is 'removed=N' or 'payload=BYTES' (N >= 1), "
                                 f"not {budget!r}")
            if order != "rows":
                raise ValueError("budget takes the row order, not order='block'")
            self.budget = f"{kind}={int(value)}"
        self.rank_weights = None
        if rank_weights is not None:
            rank_weights = [int(w) for w in rank_weights]
            if len(rank_weights) != world_size or not all(1 <= w <= 1 << 20
                                                           for w in rank_weights):
                raise ValueError(f"rank_weights {rank_weights}: one weight (1 to 2**20) per "
                                 f"rank of {world_size}")
            if budget is not None or order != "rows":
                raise ValueError("rank_weights take the row order and no budget")
            self.rank_weights = rank_weights
        if max_ring_bytes is not None and max_ring_bytes < 1:
            raise ValueError(f"max_ring_bytes {max_ring_bytes}: must be at least 1")
        if ring is not None and not re.fullmatch(r"[A-Za-z0-9_.-]{1,%d}" % _lib.PL_RING_NAME_MAX,
                                                 ring):
            raise ValueError(f"ring name {ring!r}: 1 to {_lib.PL_RING_NAME_MAX} of "
                             "[A-Za-z0-9_.-]")
        if khop is None and (khop_types is not None or khop_max_genes is not None):
            raise ValueError("khop_types and khop_max_genes need khop")
        if khop is not None and not 0 <= int(khop) <= 64:
            raise ValueError(f"khop {khop!r}: 0 to 64 hops")
        if khop_max_genes is not None and int(khop_max_genes) < 1:
            raise ValueError("khop_max_genes must be at least 1")
        if isinstance(khop_types, str):
            khop_types = khop_types.split(",")
        self.khop = None if khop is None else int(khop)
        self.khop_types = None if khop_types is None else [str(t) for t in khop_types]
        self.khop_max_genes = None if khop_max_genes is None else int(khop_max_genes)
        if ontology not in (None, True, False):
            raise ValueError(f"ontology is None, True or False, not {ontology!r}")
        self.db = os.fspath(db)
        self.shared_table = bool(shared_table)
        self.persistent = bool(persistent)
        # persistent: (options key, serve, its last epoch's last batch, finalizer)
        # between two epochs
        self._kept = None
        self.batch_size = int(batch_size)
        self.shuffle = bool(shuffle)
        self.seed = int(seed)
        self.drop_last = bool(drop_last)
        self.rank = int(rank)
        self.world_size = int(world_size)
        self.dense = dense
        self.threads = int(threads)
        self.ring = ring
        self.timeout = float(timeout)
        self.slots = slots
        self.max_ring_bytes = None if max_ring_bytes is None else int(max_ring_bytes)
        self.order = order
        self.block_rows = None if block_rows is None else int(block_rows)
        self.block_window = None if block_window is None else int(block_window)
        # pad=False: each rank's own samples only (evaluation; budget and
        # rank_weights pad nothing, drop_last cuts instead).
        self.pad = bool(pad) or bool(drop_last) or budget is not None or bool(rank_weights)
        self.epoch = 0
        self._start = 0      # batch the next iteration starts at
        self._from = 0       # elastic resume: entries of the order consumed before
        self._from_next = False  # the next iteration runs the plan from self._from
        self._consumed = 0   # batches of this epoch consumed
        self._epoch_it = None
        # What the batches expand against (not the loader: a batch kept past
        # its epoch keeps no Loader, nor its kept serve, alive).
        self._graph_on = GraphOn(self.db, features)
        if features:
            self.graph  # noqa: B018 (read now: the features are checked against it)
        self._last_stats = None
        # Batches copied when their slot was handed back, as something taken
        # out of them was still held (DESIGN section 15), and their bytes.
        self.kept_batches = self.kept_bytes = 0
        self.delivery_copies = 0  # copied at delivery, near the mapping limit (_slots)
        database = _lib.Database(self.db)
        try:
            self.db_samples = int(database.info.n_samples)
            if ontology and not database.info.n_terms:
                raise ValueError(f"ontology=True: {self.db} has no ontology")
            self.ontology = bool(database.info.n_terms) and ontology is not False
            self._no_ontology = bool(database.info.n_terms) and ontology is False
            self._kinds = list_kinds(database.info, self.ontology)
            self._fingerprints = fingerprints(database.info)
            if self.khop is not None and self.khop_types is None:
                self.khop_types = _lib.names(database.info.type_names, database.info.n_types)
            if self.split is not None:
                rows = split_rows(database, *self.split)
        finally:
            database.close()
        if self.db_samples == 0:
            raise ValueError(f"{self.db} holds no sample: a Loader over it would yield no batch")
        self._rows_spec, self._subset_digest, self.n_samples, self._rows_dir = subset(
            rows, self.db_samples, self.split)
        if self._rows_dir is not None:
            self._rows_cleanup = _lib.finalize(self, shutil.rmtree, self._rows_dir, True)
        self._replan()

    def _hand_back(self, mapping, batch):
        """Release `batch` and hand its slot back (a private copy of what the
        user still holds of it first), counting the copies."""
        if batch._ring is None:
            return  # copied at delivery (_epochs.copied_delivery): nothing on the slot
        _mark_released(batch)
        kept = mapping.hand_back(batch)
        if kept:
            self.kept_batches += 1
            self.kept_bytes += kept

    def _serve_key(self):
        """serve's options but the epoch and the first batch: a kept serve
        runs the next epoch only while they are unchanged."""
        a = self._serve_args(0, "")
        for opt in ("--epoch", "--start-batch", "--ring"):
            a[a.index(opt) + 1] = None
        return tuple(a) + (self.ring,)

    def _keep_producer(self, p, last):
        """persistent: keep serve `p` after its epoch (its ring's last batch
        `last`, still valid) for the next one; close() or garbage collection
        stops it."""
        self._drop_kept()
        self._kept = (self._serve_key(), p, last, _lib.finalize(self, p.stop))

    def _drop_kept(self):
        kept, self._kept = self._kept, None
        if kept is not None:
            kept[3]()  # stops serve (not from a forked child: _lib.finalize)

    def _producer(self, start):
        """The serve of the next epoch, from plan batch `start`: with
        persistent=True the one kept from the last epoch when it still runs
        with the same options (asked for the epoch through its stdin), else a
        new one. A kept serve found dead is replaced by a new one."""
        kept, self._kept = self._kept, None
        if kept is not None:
            key, p, last, fin = kept
            if key == self._serve_key() and p.alive():
                fin.detach()
                try:
                    m = p.mapping
                    m.check_size()  # the copy reads the slot
                    if last is not None:  # its slot is refilled now
                        self._hand_back(m, last)
                    p.next_epoch(self.epoch, start, self.timeout)
                except BaseException:
                    p.stop()
                    raise
                return p
            fin()
        return _start_producer(self, start)

    def _keep(self, index):
        """Samples of plan batch `index` to yield: all but the padding with
        pad=False (only a rank's last batch holds any)."""
        if self.pad:
            return None
        return self._rank_samples - index * self.batch_size

    def _serve_count(self):
        """Batches of the epoch serve runs (the padded plan)."""
        if self.pad:
            return self._n_batches
        return _lib.plan_n_batches(self.n_samples - self._from, self.rank, self.world_size,
                                   self.batch_size, self.drop_last)

    def _count(self):
        """Batches of the rank's epoch (with a budget: of this seed and epoch),
        from the elastic resume position self._from on."""
        if not self.pad:
            return epoch_batches(self.n_samples - self._from, self.rank, self.world_size,
                                 self.batch_size, self.drop_last, pad=False)
        return plan_call(self, _lib.plan_n_batches, self.rank, self.world_size,
                         self.rank_weights, self._from)

    def _replan(self):
        """The counts of the rank's plan from self._from on."""
        self._n_batches = self._count()
        self._rank_samples = rank_samples(self.n_samples - self._from, self.rank,
                                          self.world_size)

    def __len__(self):
        return self._n_batches - self._start

    def __iter__(self):
        self._stop_epoch()
        if not self._from_next and self._from:  # after an elastic resume's epoch
            self._from = 0
            self._replan()
        self._from_next = False
        start, self._start = self._start, 0
        self._consumed = start
        it = _Epoch(self, start, self._n_batches, self._serve_count())
        if self.device is not None:
            it.deferred = True
            it = DevicePrefetch(it, self.device, self.layout, self.edge_types, self.prefetch,
                                on_delivery=self._delivered)
        self._epoch_it = weakref.ref(it)
        return it

    def _delivered(self, consumed):
        self._consumed = consumed

    def set_epoch(self, epoch):
        """Choose the epoch of the next iteration (its order depends on it)."""
        self._stop_epoch()
        self.epoch = int(epoch)
        self._start = self._consumed = 0
        self._from_next = False
        if self.budget or self._from:
            self._from = 0
            self._replan()

    def state_dict(self):
        """The position in the epoch: the same on every rank but for "rank"
        (every rank runs the same steps), so a job saves one rank's."""
        return {"epoch": self.epoch, "seed": self.seed, "batches_consumed": self._consumed,
                "batch_size": self.batch_size, "shuffle": self.shuffle,
                "drop_last": self.drop_last, "rank": self.rank,
                "world_size": self.world_size, "n_samples": self.n_samples,
                "subset": self._subset_digest, "database": "%016x" % self._fingerprints[2],
                **self._order_state()}

    def _order_state(self):
        """The order's part of state_dict (none for the default row order)."""
        out = {"budget": self.budget} if self.budget else {}
        if self.rank_weights:
            out["rank_weights"] = list(self.rank_weights)
        if self.order != "rows":
            out.update(order=self.order, block_rows=self.block_rows,
                       block_window=self.block_window)
        if not self.pad:
            out["pad"] = False
        if self._from:
            out["from"] = self._from
        return out

    def load_state_dict(self, sd):
        """Resume: the next iteration yields the rest of sd's epoch (any world
        size: see the class documentation), the later ones as usual."""
        sd, world, weights, elastic = check_state(self, sd)
        consumed, start = int(sd["batches_consumed"]), int(sd.get("from", 0))
        epoch, seed, old = self.epoch, self.seed, self._from
        self.epoch, self.seed, self._from = int(sd["epoch"]), int(sd["seed"]), start
        # the plan sd was taken from: the position, or the count to resume in
        # (the loader's own unless a budget's epoch or the position differ)
        same = start == old and (not self.budget or (self.epoch, self.seed) == (epoch, seed))
        try:
            if elastic:
                start, n_batches = plan_call(self, _lib.plan_position, world, weights, start,
                                             steps=consumed)
            else:
                n_batches = self._n_batches if same else self._count()
        finally:
            self.epoch, self.seed, self._from = epoch, seed, old
        if not 0 <= consumed <= n_batches:
            raise ValueError(f"batches_consumed {consumed} is outside 0..{n_batches}")
        self._stop_epoch()
        self.epoch = int(sd["epoch"])
        self.seed = int(sd["seed"])
        self._from, self._from_next = start, True
        if elastic or not same:
            self._replan()
        self._start = self._consumed = 0 if elastic else consumed

    @property
    def graph(self):
        """The database's graph (Graph), read on first use."""
        return self._graph_on.graph()

    @property
    def _proc(self):
        """The running serve process (subprocess.Popen), or None."""
        it = self._epoch_it() if self._epoch_it is not None else None
        return it.process if it is not None else None

    def stats(self):
        """Counters of the running epoch's ring (dict); after an epoch ended or
        was stopped, its final counters; None before the first epoch."""
        it = self._epoch_it() if self._epoch_it is not None else None
        st = it.stats() if it is not None else None
        return st if st is not None else self._last_stats

    def _serve_args(self, start, name):
        a = [_lib.program_path(), "serve", "--ring", name,
             "--batch-size", str(self.batch_size), "--seed", str(self.seed),
             "--epoch", str(self.epoch), "--rank", str(self.rank),
             "--world-size", str(self.world_size), "--threads", str(self.threads),
             "--start-batch", str(start), "--consumer-pid", str(os.getpid())]
        if self.shuffle:
            a.append("--shuffle")
        if self.drop_last:
            a.append("--drop-last")
        if self.order != "rows":
            a += ["--order", self.order]
        if self.block_rows:
            a += ["--block-rows", str(self.block_rows)]
        if self.block_window:
            a += ["--block-window", str(self.block_window)]
        if self.budget:
            a += ["--budget", self.budget]
        if self.rank_weights:
            a += ["--rank-weights", ",".join(map(str, self.rank_weights))]
        if self.dense:
            a += ["--dense", self.dense]
        if self.slots:
            a += ["--slots", str(self.slots)]
        if self.max_ring_bytes:
            a += ["--max-ring-bytes", str(self.max_ring_bytes)]
        if self._from:
            a += ["--from", str(self._from)]
        if self._rows_spec:
            a += ["--rows", self._rows_spec]
        if self._no_ontology:
            a.append("--no-ontology")
        if not self.shared_table:
            a.append("--no-shared-table")
        if self.persistent:
            a.append("--more-epochs")
        if self.split is not None:
            a += ["--split", "=".join(self.split)]
        if self.khop is not None:
            a += ["--khop", str(self.khop), "--khop-types", ",".join(self.khop_types)]
            if self.khop_max_genes is not None:
                a += ["--khop-max-genes", str(self.khop_max_genes)]
        return a + ["--", self.db]  # the path may start with '-'

    def _stop_epoch(self):
        it = self._epoch_it() if self._epoch_it is not None else None
        if it is not None:
            it.close()
        self._epoch_it = None

    def close(self):
        """Stop the running epoch's producer, if any (and the serve kept for
        the next epoch: persistent=True)."""
        self._stop_epoch()
        self._drop_kept()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
