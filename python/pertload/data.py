"""torch.utils.data forms of a loader: an IterableDataset for DataLoader
(batch_size=None, worker processes taking disjoint shares) and a
DataModule-shaped helper over train/validation/test splits that follows
PyTorch Lightning's conventions without importing Lightning."""

import multiprocessing.util as mp_util
import os

import torch.utils.data as tud

from . import _lib, arena
from .graph import categories
from .loader import Loader, _rank_world, epoch_batches
from .packed import GraphSource, features_token, graph_of
from .prefetch import DevicePrefetch

# The levels of a split column each DataModule loader takes, in the order
# looked for: the first one the column has.
SPLIT_LEVELS = {"train": ("train",), "val": ("val", "validation", "valid", "dev"),
                "test": ("test",)}

_LAYOUTS = ("masks", "lists", "pyg", "lazy")


class Dataset(tud.IterableDataset):
    """Batches of a pertload database as an IterableDataset.

    Dataset(db, batch_size=64, shuffle=False, seed=0, drop_last=False,
            rank=None, world_size=None, rows=None, split=None, layout="lists",
            edge_types=None, transform=None, pad=True, **loader_options)

    Use it as DataLoader(ds, batch_size=None, num_workers=N,
    pin_memory=..., persistent_workers=...): the dataset yields whole
    batches.

    layout="lists" (the default) yields pertload.Batch objects, the lists as
    served: in a worker process each batch is copied into one buffer, a
    region of the worker's shared-memory arena (pertload.arena: one file a
    worker, regions reused once the main process holds no view of them;
    about 0.4 MB for 64 samples of the yeast graph), unpacked in the main
    process as numpy views of it; without workers the batch itself (ring
    views, no copy). Expand it on the training device in the main process, from the
    graph already there: batch.to_torch(device, layout="masks" | "pyg" |
    "lists"). Dense masks then never cross a process boundary.
    layout="masks" or "pyg" yields batch.to_torch("cpu", layout=layout,
    edge_types=edge_types) built in the worker (dense masks shipped through
    shared memory: 160 MB a batch of 64 for the nine yeast types; slow).
    transform(that) is yielded instead when transform is given.

    Shares: rank and world_size default as Loader's (torchrun's RANK and
    WORLD_SIZE); worker w of N on rank r runs a Loader of rank r * N + w in
    a world of world_size * N, so ranks x workers take disjoint shares of
    the epoch plan (loader/plan.h). pad=True (training): every share runs
    the same number of steps, padded with repeated samples; pad=False
    (evaluation): every sample of `rows` or `split` (Loader's; default all)
    exactly once, the shares' step counts may differ. Each worker runs its
    own `pertload serve`, kept across its epochs (Loader persistent=True:
    one process for every epoch of a persistent worker); without workers
    the dataset's own Loader keeps one serve for every epoch (close() ends
    it, as does garbage collection). set_epoch(e) chooses the next
    iteration's order (a DataLoader copies the dataset into its workers
    when they start, so set it before iterating; with persistent_workers
    each worker's copy moves to the next epoch at every iteration after its
    first; DataModule's loaders advance it by themselves).
    len(ds) is the rank's batch count over all its workers, for N = 1 or
    the DataLoader's num_workers once it ran. ds.graph is the database's
    Graph, read once per process: its features (x of layouts "pyg" and
    "lazy") are the database's stored matrices, those of the loader option
    features= replacing them per node type.
    """

    def __init__(self, db, batch_size=64, shuffle=False, seed=0, drop_last=False, rank=None,
                 world_size=None, rows=None, split=None, layout="lists", edge_types=None,
                 transform=None, pad=True, **loader_options):
        if layout not in _LAYOUTS:
            raise ValueError(f"layout is one of {_LAYOUTS}, not {layout!r}")
        self.rank, self.world_size = _rank_world(rank, world_size)
        self.db, self.batch_size, self.shuffle = db, int(batch_size), bool(shuffle)
        self.seed, self.drop_last, self.rows = int(seed), bool(drop_last), rows
        self.split = split
        self.layout, self.edge_types, self.transform = layout, edge_types, transform
        self.loader_options = loader_options
        self._features = features_token(loader_options.get("features"))
        self.epoch = 0
        self.num_workers = 1
        self._worker_iterations = 0
        # Checks the options and the subset once, here, rather than in every worker.
        probe = Loader(db, batch_size=batch_size, rank=self.rank, world_size=self.world_size,
                       rows=rows, split=split, drop_last=drop_last, pad=pad, **loader_options)
        self.n_samples = probe.n_samples
        self.pad = probe.pad
        probe.close()
        if probe._rows_dir is not None:
            probe._rows_cleanup()

    @property
    def graph(self):
        """The database's Graph, read once per process (shared with
        DataModule.graph and the batches unpacked from workers)."""
        return graph_of(self.db, self._features)

    def set_epoch(self, epoch):
        self.epoch = int(epoch)

    def share(self, worker=0, num_workers=1):
        """(rank, world_size) of the Loader of worker `worker` of `num_workers`."""
        return self.rank * num_workers + worker, self.world_size * num_workers

    def __len__(self):
        return sum(epoch_batches(self.n_samples, *self.share(w, self.num_workers),
                                 self.batch_size, self.drop_last, self.pad)
                   for w in range(self.num_workers))

    def loader(self, **options):
        """The Loader of the calling worker (or of the main process); options
        override the dataset's loader options."""
        info = tud.get_worker_info()
        w, n = (info.id, info.num_workers) if info is not None else (0, 1)
        rank, world = self.share(w, n)
        loader = Loader(self.db, batch_size=self.batch_size, shuffle=self.shuffle,
                        seed=self.seed, drop_last=self.drop_last, rank=rank, world_size=world,
                        rows=self.rows, split=self.split, pad=self.pad,
                        **{**self.loader_options, **options})
        loader.set_epoch(self.epoch)
        return loader

    def _kept(self, worker):
        """The Loader of this process, kept by this copy of the dataset
        across iterations, so that every epoch goes through one `pertload
        serve` (Loader persistent=True): the main process's (a DataLoader
        without workers iterates the dataset itself), or a worker's with
        persistent_workers (each worker iterates its own copy). A worker's is
        closed when the worker process exits; the main process's by close()
        or garbage collection."""
        loader = getattr(self, "_kept_loader", None)
        if loader is not None and loader._pid == os.getpid():
            if loader._proc is not None:
                # An iteration of this dataset still runs (two at once): this
                # one gets a loader of its own, closed at its end.
                return self.loader()
            loader.set_epoch(self.epoch)
            return loader
        loader = self._kept_loader = self.loader()
        loader._pid = os.getpid()
        if worker:
            loader._unparsed = self.layout == "lists"  # copied whole into the arena
            # A worker process ends through multiprocessing's exit, which runs
            # these finalizers (not weakref's).
            mp_util.Finalize(None, _close_loader, (loader,), exitpriority=0)
        return loader

    def close(self):
        """End the serve the main process's loader keeps between epochs (a
        DataLoader without workers), if any; the next iteration starts a new
        one."""
        loader = self.__dict__.pop("_kept_loader", None)
        if loader is not None and loader._pid == os.getpid():
            _close_loader(loader)

    def __getstate__(self):
        state = dict(self.__dict__)
        state.pop("_kept_loader", None)  # a worker's own
        return state

    def __iter__(self):
        worker = tud.get_worker_info() is not None
        if worker:
            # A worker's copy of the dataset moves on to the next epoch at
            # every iteration after its first (persistent workers).
            self.epoch += self._worker_iterations
            self._worker_iterations = 1
        loader = self._kept(worker)
        source = GraphSource(self.db, self._features) if worker else None
        try:
            for batch in loader:
                if self.layout == "lists":
                    out = (arena.ship(batch, source, light=self.transform is None)
                           if worker else batch)
                else:
                    out = batch.to_torch("cpu", layout=self.layout, edge_types=self.edge_types)
                # Not held here while the consumer has it: a slot still
                # referenced when handed back would be copied (copy-on-keep).
                del batch
                out = self.transform(out) if self.transform is not None else out
                yield out
                del out
        finally:  # an epoch left early stops its serve; a finished one is kept
            if loader is self.__dict__.get("_kept_loader"):
                loader._stop_epoch()
            else:
                _close_loader(loader)


def _close_loader(loader):
    loader.close()
    # A worker process ends without running weakref finalizers: the
    # subset's file goes now.
    if loader._rows_dir is not None:
        loader._rows_cleanup()


def _is_split(s):
    """Whether a DataModule split is a (column, level) pair rather than rows."""
    return isinstance(s, tuple) and len(s) == 2 and all(isinstance(x, str) for x in s)


def _column_splits(db, column, named):
    """{"train": (column, level), ...} from the levels of the database's
    category column `column` (SPLIT_LEVELS), and the column's levels."""
    database = _lib.Database(db)
    try:
        levels = categories(database.info)
    finally:
        database.close()
    if column not in levels:
        have = ", ".join(repr(c) for c in levels) or "none"
        raise ValueError((f"split_column {column!r} is not a category column of {db}" if named
                          else f"no splits given and {db} has no category column 'split'") +
                         f" (category columns: {have}); pass splits= or split_column=")
    splits = {}
    for name, wanted in SPLIT_LEVELS.items():
        level = next((lv for lv in wanted if lv in levels[column]), None)
        if level is not None:
            splits[name] = (column, level)
    if not splits:
        raise ValueError(f"category column {column!r} of {db} has none of the levels "
                         f"{', '.join(lv for w in SPLIT_LEVELS.values() for lv in w)} "
                         f"(its levels: {', '.join(map(repr, levels[column]))})")
    return splits, tuple(levels[column])


class _EpochDataLoader(tud.DataLoader):
    """A DataLoader whose every iteration is the next epoch of its Dataset."""

    def __init__(self, dataset, first_epoch, **kw):
        super().__init__(dataset, batch_size=None, **kw)
        self._next_epoch = first_epoch

    def __iter__(self):
        self.dataset.set_epoch(self._next_epoch)
        self.dataset.num_workers = max(1, self.num_workers)
        self._next_epoch += 1
        return super().__iter__()


class _DeviceLoader:
    """A DataLoader's batches laid out on a device ahead of the step
    (DevicePrefetch), then transformed; len() is the DataLoader's."""

    def __init__(self, dataloader, device, layout, edge_types, prefetch, transform):
        self.dataloader = dataloader
        self._args = (device, layout, edge_types, prefetch)
        self.transform = transform

    def __len__(self):
        return len(self.dataloader)

    def __iter__(self):
        device, layout, edge_types, depth = self._args
        it = DevicePrefetch(self.dataloader, device, layout, edge_types, depth)
        try:
            for out in it:
                yield self.transform(out) if self.transform is not None else out
        finally:
            it.close()


class DataModule:
    """Train, validation and test DataLoaders over splits of one database,
    shaped like a LightningDataModule (no Lightning import): pass its
    methods to Lightning's Trainer, or call them yourself.

    DataModule(db, splits=None, batch_size=64, num_workers=0, pin_memory=False,
               seed=0, layout="lists", edge_types=None, transform=None,
               split_column=None, persistent_workers=False, device=None, prefetch=2,
               **loader_options)

    The loaders yield what Dataset yields (default: pertload.Batch lists,
    expanded in the training step with batch.to_torch(device,
    layout="masks" | "pyg" | "lists"); dm.graph is the database's Graph,
    read once). num_workers defaults to 0: the batches are collated by
    `pertload serve`'s threads (Loader's threads, a loader option), which
    feed one process faster than DataLoader workers do; workers ship each
    batch in one shared-memory buffer. train_dataloader() pads the epoch for
    equal steps on every rank and worker; val_dataloader() and
    test_dataloader() serve every row of their split exactly once
    (pad=False; step counts may differ between ranks).

    splits maps "train", "val" and "test" (any of them) to rows (a range or
    a sequence of distinct rows; see Loader's rows) or to a split (a level
    name of split_column, default "split", or a (column, level) pair; see
    Loader's split). Without splits, the loaders take the levels of the
    category column split_column (default "split") of the database: train
    its level "train", val the first of "val", "validation", "valid" and
    "dev" it has, test "test" (SPLIT_LEVELS); a loader whose level the
    column lacks is not made. train_dataloader()
    shuffles; with device (e.g. "cuda") the loaders yield the batches as
    batch.to_torch(device, layout=layout, edge_types=edge_types), built on
    the device up to `prefetch` batches ahead of the step on a side stream
    (pertload.prefetch; the workers then ship the lists, transform applies
    to the device batch); every iteration of a loader it returns is the next epoch
    (from set_epoch()'s value, default 0), as Lightning iterates it once per
    epoch. rank and world_size come from torchrun's environment as for
    Loader, or from the options.

    One `pertload serve` runs every epoch of a loader: without workers the
    split's Dataset keeps its Loader's; with persistent_workers=True the
    same DataLoader is returned for every epoch and each worker keeps its
    own (without, new workers and serves start every epoch). teardown()
    ends them.
    """

    def __init__(self, db, splits=None, batch_size=64, num_workers=0, pin_memory=False, seed=0,
                 layout="lists", edge_types=None, transform=None, split_column=None,
                 persistent_workers=False, device=None, prefetch=2, **loader_options):
        column = "split" if split_column is None else split_column
        self._levels = None  # the split column's levels when the splits come from it
        if splits is None:
            splits, self._levels = _column_splits(db, column, split_column is not None)
        self._column = column
        unknown = set(splits) - {"train", "val", "test"}
        if unknown:
            raise ValueError(f"splits: unknown split {sorted(unknown)[0]!r} (train, val, test)")
        splits = {name: (column, s) if isinstance(s, str) else s for name, s in splits.items()}
        self.db, self.splits, self.batch_size = db, splits, batch_size
        self.num_workers, self.pin_memory, self.seed = num_workers, pin_memory, seed
        self.layout, self.edge_types, self.transform = layout, edge_types, transform
        self.device, self.prefetch = device, int(prefetch)
        if device is not None:
            if layout not in ("masks", "lists", "pyg", "lazy"):
                raise ValueError(f"layout is 'masks', 'lists', 'pyg' or 'lazy', not {layout!r}")
            if self.prefetch < 1:
                raise ValueError(f"prefetch is at least 1, not {prefetch}")
            # the workers (or the main process) serve the lists; the layout is
            # built on the device, ahead of the step (pertload.prefetch)
            layout, transform = "lists", None
        self.persistent_workers = bool(persistent_workers) and num_workers > 0
        self.loader_options = loader_options = dict(loader_options)
        train_pad = loader_options.pop("pad", True)
        self.epoch = 0
        self.datasets = {}
        self._loaders = {}
        for name, rows in self.splits.items():
            split = rows if _is_split(rows) else None
            self.datasets[name] = Dataset(db, batch_size=batch_size, shuffle=name == "train",
                                          seed=seed, rows=None if split else rows,
                                          split=split, layout=layout,
                                          edge_types=edge_types, transform=transform,
                                          pad=train_pad if name == "train" else False,
                                          **loader_options)

    @property
    def graph(self):
        """The database's Graph (edge arrays, names, ontology; to_torch(device)),
        read once per process: the graph the batches expand against."""
        return next(iter(self.datasets.values())).graph if self.datasets else graph_of(self.db)

    def set_epoch(self, epoch):
        """The epoch the loaders returned from now on start at."""
        self.epoch = int(epoch)

    def _dataloader(self, name):
        dl = self._plain_dataloader(name)
        if self.device is None:
            return dl
        return _DeviceLoader(dl, self.device, self.layout, self.edge_types, self.prefetch,
                             self.transform)

    def _plain_dataloader(self, name):
        ds = self.datasets.get(name)
        if ds is None and self._levels is not None:
            raise ValueError(f"no {name!r} split: category column {self._column!r} of "
                             f"{self.db} has none of the levels "
                             f"{', '.join(map(repr, SPLIT_LEVELS[name]))} (its levels: "
                             f"{', '.join(map(repr, self._levels))}); pass splits= or "
                             f"split_column=")
        if ds is None:
            raise ValueError(f"no {name!r} split was given (splits= names "
                             f"{', '.join(map(repr, self.splits)) or 'none'})")
        if self.persistent_workers:
            # The same DataLoader (and its workers, each keeping its Loader)
            # for every epoch.
            dl = self._loaders.get(name)
            if dl is None:
                dl = self._loaders[name] = _EpochDataLoader(
                    ds, self.epoch, num_workers=self.num_workers, pin_memory=self.pin_memory,
                    persistent_workers=True)
            return dl
        return _EpochDataLoader(ds, self.epoch, num_workers=self.num_workers,
                                pin_memory=self.pin_memory)

    def teardown(self, stage=None):
        """End the serves the loaders keep between epochs (Lightning calls
        it after fit, validate or test); the next iteration starts new
        ones."""
        self._loaders.clear()  # persistent workers end with their DataLoader
        for ds in self.datasets.values():
            ds.close()

    def train_dataloader(self):
        return self._dataloader("train")

    def val_dataloader(self):
        return self._dataloader("val")

    def test_dataloader(self):
        return self._dataloader("test")

