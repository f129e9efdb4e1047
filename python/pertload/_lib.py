"""ctypes bindings of libpertload and the location of the `pertload` program.

Paths: the environment variables PERTLOAD_LIB and PERTLOAD_BIN win; otherwise
the _paths module meson generates (build tree or installation) names them;
without it, the system's library search path and PATH are tried.
"""

import ctypes
import ctypes.util
import os
import shutil
import weakref

import numpy as np

PL_MAX_TYPES = 64
PL_RING_NAME_MAX = 64
PL_ARRAY_GPR = -1
PL_ARRAY_RMR = -2
PL_ARRAY_RMR_STOICH = -3
PL_ARRAY_RULES = -4
PL_RING_RUNNING, PL_RING_DONE, PL_RING_FAILED = 0, 1, 2


class LoaderError(RuntimeError):
    """A failure of the database, the producer process or the ring."""


PL_ERR_MSG_MAX = 8192


class PlErr(ctypes.Structure):
    """struct pl_err (its size is part of the library's ABI, soversion 1)."""

    _fields_ = [("code", ctypes.c_int), ("msg", ctypes.c_char * PL_ERR_MSG_MAX)]

    def text(self, rc):
        msg = self.msg.decode("utf-8", "replace")
        return msg or strerror(rc)


_c_str_array = ctypes.POINTER(ctypes.c_char_p)


class DbInfo(ctypes.Structure):
    """struct pl_db_info, field for field."""

    _fields_ = [
        ("format_version", ctypes.c_uint32),
        ("n_types", ctypes.c_uint32),
        ("n_genes", ctypes.c_uint64),
        ("n_reactions", ctypes.c_uint64),
        ("n_metabolites", ctypes.c_uint64),
        ("n_gpr", ctypes.c_uint64),
        ("n_rmr", ctypes.c_uint64),
        ("n_samples", ctypes.c_uint64),
        ("n_labels", ctypes.c_uint32),
        ("has_metabolism", ctypes.c_uint32),
        ("n_edges", ctypes.c_uint64 * PL_MAX_TYPES),
        ("type_names", _c_str_array),
        ("gene_names", _c_str_array),
        ("label_names", _c_str_array),
        ("reaction_names", _c_str_array),
        ("metabolite_names", _c_str_array),
        ("params", ctypes.c_char_p),
        ("block_rows", ctypes.c_uint32),
        ("n_blocks", ctypes.c_uint64),
        ("payload_dtype", ctypes.c_char * 8),
        ("payload_ndim", ctypes.c_uint32),
        ("payload_shape", ctypes.c_uint64 * 8),
        ("payload_row_bytes", ctypes.c_uint64),
        ("graph_bytes", ctypes.c_uint64),
        ("samples_bytes", ctypes.c_uint64),
        ("payload_bytes", ctypes.c_uint64),
        ("reaction_rule", ctypes.c_uint32),
        ("n_categories", ctypes.c_uint32),
        ("n_rules", ctypes.c_uint64),
        ("n_rule_words", ctypes.c_uint64),
        ("n_terms", ctypes.c_uint64),
        ("n_term_annotations", ctypes.c_uint64),
        ("n_strata", ctypes.c_uint32),
        ("n_term_groups", ctypes.c_uint32),
        ("gene_fingerprint", ctypes.c_uint64),
        ("edge_fingerprint", ctypes.c_uint64 * PL_MAX_TYPES),
        ("recipe", ctypes.c_char_p),
        ("recipe_inputs", ctypes.c_char_p),
        ("recipe_sources", ctypes.c_char_p),
        ("categories", ctypes.c_char_p),
        ("db_fingerprint", ctypes.c_uint64),
    ]


class PlanOpts(ctypes.Structure):
    """struct pl_plan_opts."""

    _fields_ = [
        ("n_samples", ctypes.c_uint64),
        ("seed", ctypes.c_uint64),
        ("epoch", ctypes.c_uint64),
        ("rank", ctypes.c_uint32),
        ("world_size", ctypes.c_uint32),
        ("batch_size", ctypes.c_uint32),
        ("shuffle", ctypes.c_int),
        ("drop_last", ctypes.c_int),
        ("order", ctypes.c_uint32),
        ("block_rows", ctypes.c_uint32),
        ("window_blocks", ctypes.c_uint32),
        ("budget", ctypes.c_uint64),
        ("rank_weights", ctypes.POINTER(ctypes.c_uint32)),
        ("from_", ctypes.c_uint64),  # pl_plan_opts.from (a Python keyword)
    ]


class RingStats(ctypes.Structure):
    """struct pl_ring_stats."""

    _fields_ = [
        ("batches_produced", ctypes.c_uint64),
        ("samples_produced", ctypes.c_uint64),
        ("batches_consumed", ctypes.c_uint64),
        ("samples_consumed", ctypes.c_uint64),
        ("producer_wait_ns", ctypes.c_uint64),
        ("consumer_wait_ns", ctypes.c_uint64),
        ("n_batches", ctypes.c_uint64),
        ("created_ns", ctypes.c_uint64),
        ("slot_bytes", ctypes.c_uint64),
        ("total_bytes", ctypes.c_uint64),
        ("n_slots", ctypes.c_uint32),
        ("producer_pid", ctypes.c_int32),
        ("consumer_pid", ctypes.c_int32),
        ("state", ctypes.c_uint32),
        ("name", ctypes.c_char * (PL_RING_NAME_MAX + 1)),
    ]

    def as_dict(self):
        d = {name: getattr(self, name) for name, _ in self._fields_}
        d["name"] = self.name.decode("ascii", "replace")
        return d


class RingSource(ctypes.Structure):
    """struct pl_ring_source."""

    _fields_ = [
        ("known", ctypes.c_uint32),
        ("n_types", ctypes.c_uint32),
        ("gene_fingerprint", ctypes.c_uint64),
        ("edge_fingerprint", ctypes.c_uint64 * PL_MAX_TYPES),
        ("db_fingerprint", ctypes.c_uint64),
    ]


_vp = ctypes.c_void_p
_err_p = ctypes.POINTER(PlErr)
_u32p = ctypes.POINTER(ctypes.c_uint32)
_u64p = ctypes.POINTER(ctypes.c_uint64)


class Ontology(ctypes.Structure):
    """struct pl_ontology, field for field."""
    _fields_ = [
        ("n_terms", ctypes.c_uint32), ("n_strata", ctypes.c_uint32),
        ("n_groups", ctypes.c_uint32), ("n_genes", ctypes.c_uint32),
        ("n_annotations", ctypes.c_uint64),
        ("term_names", ctypes.POINTER(ctypes.c_char_p)),
        ("child_ptr", _u32p), ("child_idx", _u32p),
        ("gene_ptr", _u32p), ("gene_idx", _u32p),
        ("n_term_genes", _u32p), ("stratum", _u32p), ("stratum_ptr", _u32p),
        ("group_ptr", _u32p), ("group_terms", _u32p),
        ("group_n_genes", _u32p), ("group_n_children", _u32p),
        ("ann_gene", _u32p), ("ann_term", _u32p),
        ("gene_term_ptr", _u64p), ("gene_term_idx", _u32p),
        ("gene_ann_ptr", _u64p), ("gene_ann_idx", _u32p),
    ]

class ScheduleMap(ctypes.Structure):
    """struct pl_schedule_map, field for field."""
    _fields_ = [
        ("n_terms", ctypes.c_uint32), ("n_groups", ctypes.c_uint32),
        ("n_strata", ctypes.c_uint32), ("term_slot", _vp), ("group_ptr", _vp),
        ("stratum_ptr", _vp), ("slot_in_ptr", _vp), ("slot_in", _vp), ("slot_out", _vp),
    ]


class ScheduleAffectedOut(ctypes.Structure):
    """struct pl_schedule_affected_out, field for field."""
    _fields_ = [(name, _vp) for name in (
        "group_ptr", "positions", "sample_ptr", "sample_slots", "gather_ptr", "gather",
        "scatter_ptr", "scatter", "rest_group_ptr", "rest_positions", "rest_gather_ptr",
        "rest_gather", "rest_scatter_ptr", "rest_scatter")]


# name: (restype, argtypes) of every function this package calls.
_PROTOTYPES = {
    "pl_strerror": (ctypes.c_char_p, [ctypes.c_int]),
    "pl_errname": (ctypes.c_char_p, [ctypes.c_int]),
    "pl_db_open": (ctypes.c_int, [ctypes.c_char_p, ctypes.POINTER(_vp), _err_p]),
    "pl_db_close": (None, [_vp]),
    "pl_db_info_get": (ctypes.POINTER(DbInfo), [_vp]),
    "pl_db_gene_index": (ctypes.c_int64, [_vp, ctypes.c_char_p]),
    "pl_db_graph_array": (ctypes.c_int64, [_vp, ctypes.c_int, _vp, ctypes.c_size_t, _err_p]),
    "pl_db_features": (ctypes.c_int, [_vp, ctypes.c_char_p, ctypes.POINTER(ctypes.c_uint64),
                                      ctypes.POINTER(ctypes.c_uint64), ctypes.c_char * 4,
                                      ctypes.POINTER(_vp), _err_p]),
    "pl_db_level_rows": (ctypes.c_int64, [_vp, ctypes.c_char_p, ctypes.c_char_p, _vp,
                                          ctypes.c_uint64, _err_p]),
    "pl_plan_new": (ctypes.c_int, [ctypes.POINTER(PlanOpts), ctypes.POINTER(_vp), _err_p]),
    "pl_plan_free": (None, [_vp]),
    "pl_plan_new_db": (ctypes.c_int, [_vp, ctypes.POINTER(PlanOpts), ctypes.c_int,
                                      ctypes.POINTER(_vp), _err_p]),
    "pl_plan_n_batches": (ctypes.c_uint64, [_vp]),
    "pl_plan_n_samples": (ctypes.c_uint64, [_vp]),
    "pl_plan_position": (ctypes.c_uint64, [_vp, ctypes.c_uint64]),
    "pl_plan_batch": (ctypes.c_uint32, [_vp, ctypes.c_uint64, ctypes.POINTER(ctypes.c_uint64)]),
    "pl_ring_attach": (ctypes.c_int, [ctypes.c_char_p, ctypes.c_int, ctypes.POINTER(_vp), _err_p]),
    "pl_ring_next": (ctypes.c_int, [_vp, ctypes.c_uint64, ctypes.POINTER(_vp), _err_p]),
    "pl_ring_next_within": (ctypes.c_int, [_vp, ctypes.c_uint64, ctypes.c_int64,
                                           ctypes.POINTER(_vp), _err_p]),
    "pl_ring_release": (None, [_vp, ctypes.c_uint64, ctypes.c_uint32]),
    "pl_ring_detach": (None, [_vp]),
    "pl_ring_stats_get": (None, [_vp, ctypes.POINTER(RingStats)]),
    "pl_ring_source_get": (None, [_vp, ctypes.POINTER(RingSource)]),
    "pl_slot_check": (ctypes.c_int, [_vp, ctypes.c_uint64, _err_p]),
    "pl_pyg_edges": (ctypes.c_int, [_vp, _vp, ctypes.c_uint64, _vp, _vp, ctypes.c_uint32,
                                    ctypes.c_int64, ctypes.c_int64, _vp, _vp, _vp, _err_p]),
    "pl_layout_check": (ctypes.c_int, [_vp, ctypes.c_int, _vp, ctypes.c_uint32, ctypes.c_uint64,
                                       ctypes.c_uint64, ctypes.c_int, _err_p]),
    "pl_layout_cuda_built": (ctypes.c_int, []),
    "pl_layout_union": (ctypes.c_int, [ctypes.c_int, _vp, _vp, _vp, _vp, ctypes.c_uint64, _vp,
                                       _vp, ctypes.c_uint32, ctypes.c_uint64, ctypes.c_int64,
                                       ctypes.c_int64, _vp, _vp, _vp, _vp, _err_p]),
    "pl_layout_tile": (ctypes.c_int, [ctypes.c_int, _vp, _vp, _vp, _vp, ctypes.c_uint64, _vp,
                                      _vp, ctypes.c_uint32, ctypes.c_uint64, ctypes.c_int64,
                                      ctypes.c_int64, _vp, _vp, _vp, _vp, _err_p]),
    "pl_layout_nodes": (ctypes.c_int, [ctypes.c_int, _vp, ctypes.c_uint64, _vp, _vp,
                                       ctypes.c_uint32, ctypes.c_uint64, _vp, _vp, _vp, _vp,
                                       _vp, _err_p]),
    "pl_layout_rows": (ctypes.c_int, [ctypes.c_int, _vp, _vp, _vp, ctypes.c_uint32,
                                      ctypes.c_uint64, ctypes.c_int64, _vp, _vp, _err_p]),
    "pl_ontology_load": (ctypes.c_int, [_vp, ctypes.POINTER(ctypes.POINTER(Ontology)), _err_p]),
    "pl_ontology_free": (None, [ctypes.POINTER(Ontology)]),
    "pl_schedule_affected": (ctypes.c_int, [ctypes.POINTER(ScheduleMap), _vp, _vp,
                                            ctypes.c_uint32,
                                            ctypes.POINTER(ScheduleAffectedOut), _err_p]),
}


def _generated_paths():
    try:
        from . import _paths
    except ImportError:
        return None, None
    return _paths.LIBRARY, _paths.PROGRAM


def _wheel_paths():
    """(library, program) where `pip install` put them, or (None, None) when
    this package did not come from a wheel: meson-python puts what meson
    installs into libdir into .pertload.mesonpy.libs beside the package, and
    the program into the environment's scripts directory."""
    libs = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        ".pertload.mesonpy.libs")
    if not os.path.isdir(libs):
        return None, None
    import sysconfig

    # The wheel holds the library under its full versioned name (links are
    # not copied into wheels).
    found = sorted(f for f in os.listdir(libs) if f.startswith("libpertload.so"))
    lib = os.path.join(libs, found[-1]) if found else None
    return lib, os.path.join(sysconfig.get_path("scripts"), "pertload")


def library_path():
    """Path of libpertload.so this package loads."""
    env = os.environ.get("PERTLOAD_LIB")
    if env:
        return env
    lib, _ = _wheel_paths()
    if lib and os.path.exists(lib):
        return lib
    lib, _ = _generated_paths()
    if lib and os.path.exists(lib):
        return lib
    found = ctypes.util.find_library("pertload")
    if found:
        return found
    raise LoaderError("libpertload not found: set PERTLOAD_LIB to the path of libpertload.so")


def program_path():
    """Path of the `pertload` program that serves batches."""
    env = os.environ.get("PERTLOAD_BIN")
    if env:
        return env
    _, prog = _wheel_paths()
    if prog and os.path.exists(prog):
        return prog
    _, prog = _generated_paths()
    if prog and os.path.exists(prog):
        return prog
    found = shutil.which("pertload")
    if found:
        return found
    raise LoaderError("the pertload program was not found: set PERTLOAD_BIN to its path")


_lib = None


def finalize(obj, fn, *args):
    """weakref.finalize(obj, fn, *args), run only in the process that made
    it: a forked child (a DataLoader worker) inherits the parent's objects
    and may collect them, but must not stop the parent's serve, detach its
    ring, touch its CUDA state or remove its files."""
    return weakref.finalize(obj, _in_process, os.getpid(), fn, *args)


def _in_process(pid, fn, *args):
    if os.getpid() == pid:
        fn(*args)


def lib():
    """The loaded library, with every prototype declared (loaded once)."""
    global _lib
    if _lib is None:
        handle = ctypes.CDLL(library_path())
        for name, (restype, argtypes) in _PROTOTYPES.items():
            fn = getattr(handle, name)
            fn.restype = restype
            fn.argtypes = argtypes
        _lib = handle
    return _lib


def strerror(rc):
    return lib().pl_strerror(rc).decode("utf-8", "replace")


def check(rc, err, what):
    """Raise LoaderError for a negative return code, with the library's message."""
    if rc < 0:
        raise LoaderError(f"{what}: {err.text(rc)}")
    return rc


def names(array, n):
    """A list of n strings from a `const char *const *`."""
    if n == 0 or not array:
        return []
    return [array[i].decode("utf-8") for i in range(n)]


class Database:
    """An open database (pl_db); closed by close() or when collected."""

    def __init__(self, path):
        self.path = os.fspath(path)
        self._h = _vp()
        self._pid = os.getpid()
        err = PlErr()
        check(lib().pl_db_open(os.fsencode(self.path), ctypes.byref(self._h), ctypes.byref(err)),
              err, f"opening {self.path}")
        self.info = lib().pl_db_info_get(self._h).contents

    @property
    def handle(self):
        if not self._h:
            raise LoaderError(f"database {self.path} is closed")
        return self._h

    def gene_index(self, name):
        """Index of a gene by name, or -1."""
        return lib().pl_db_gene_index(self.handle, name.encode("utf-8"))

    def graph_array(self, which, out):
        """Copy graph array `which` into the numpy array `out` (C order)."""
        err = PlErr()
        n = lib().pl_db_graph_array(self.handle, which, out.ctypes.data_as(_vp), out.nbytes,
                                    ctypes.byref(err))
        check(n, err, f"{self.path}: reading graph array {which}")
        if n != out.nbytes:
            raise LoaderError(f"{self.path}: graph array {which} has {n} bytes, "
                              f"{out.nbytes} expected")
        return out

    def features(self, node):
        """The feature matrix of node type `node` stored in the database
        (pl_db_features) as a numpy copy, float32 or float16 [n_nodes, F], or
        None when it stores none for that type."""
        err = PlErr()
        rows, cols, data = ctypes.c_uint64(), ctypes.c_uint64(), _vp()
        dtype = (ctypes.c_char * 4)()
        rc = lib().pl_db_features(self.handle, node.encode("utf-8"), ctypes.byref(rows),
                                  ctypes.byref(cols), dtype, ctypes.byref(data), ctypes.byref(err))
        if rc < 0 and lib().pl_errname(rc) == b"ENOENT":
            return None
        check(rc, err, f"{self.path}: reading the features of {node!r}")
        dt = np.dtype(dtype.value.decode("ascii"))
        n = rows.value * cols.value
        flat = np.ctypeslib.as_array(ctypes.cast(data, ctypes.POINTER(ctypes.c_uint8)),
                                     (n * dt.itemsize,))
        return flat.view(dt).reshape(rows.value, cols.value).copy()

    def level_rows(self, column, level):
        """The rows (ascending, uint32) whose category column `column` holds
        `level` (pl_db_level_rows, from the category store); ValueError
        naming an unknown column or level, or a label that is no category
        column."""
        err = PlErr()
        cap = int(self.info.n_samples)
        out = np.empty(max(cap, 1), np.uint32)
        n = lib().pl_db_level_rows(self.handle, column.encode("utf-8"), level.encode("utf-8"),
                                   out.ctypes.data_as(_vp), cap, ctypes.byref(err))
        if n < 0 and lib().pl_errname(n) == b"PL_EUSAGE":
            raise ValueError(f"split {column}={level}: {err.text(n)}")
        check(n, err, f"{self.path}: the rows of {column}={level}")
        return out[:n].copy()

    def ontology(self):
        """The ontology layers as a dict of numpy copies (pl_ontology), or None."""
        if not self.info.n_terms:
            return None
        err = PlErr()
        p = ctypes.POINTER(Ontology)()
        check(lib().pl_ontology_load(self.handle, ctypes.byref(p), ctypes.byref(err)), err,
              f"{self.path}: reading the ontology")
        try:
            o = p.contents
            T, G, S, A, N = (o.n_terms, o.n_groups, o.n_strata, int(o.n_annotations),
                             o.n_genes)

            def arr(ptr, n, dtype=np.uint32):
                return np.ctypeslib.as_array(ptr, (n,)).astype(dtype) if n else \
                    np.zeros(0, dtype)

            d = {"term_names": names(o.term_names, T),
                 "child_ptr": arr(o.child_ptr, T + 1), "gene_ptr": arr(o.gene_ptr, T + 1),
                 "n_term_genes": arr(o.n_term_genes, T), "stratum": arr(o.stratum, T),
                 "stratum_ptr": arr(o.stratum_ptr, S + 1), "group_ptr": arr(o.group_ptr, G + 1),
                 "group_terms": arr(o.group_terms, T), "group_n_genes": arr(o.group_n_genes, G),
                 "group_n_children": arr(o.group_n_children, G),
                 "ann_gene": arr(o.ann_gene, A), "ann_term": arr(o.ann_term, A),
                 "gene_term_ptr": arr(o.gene_term_ptr, N + 1, np.uint64),
                 "gene_ann_ptr": arr(o.gene_ann_ptr, N + 1, np.uint64)}
            d["child_idx"] = arr(o.child_idx, int(d["child_ptr"][-1]))
            d["gene_idx"] = arr(o.gene_idx, int(d["gene_ptr"][-1]))
            d["gene_term_idx"] = arr(o.gene_term_idx, int(d["gene_term_ptr"][-1]))
            d["gene_ann_idx"] = arr(o.gene_ann_idx, int(d["gene_ann_ptr"][-1]))
            return d
        finally:
            lib().pl_ontology_free(p)

    def close(self):
        if self._h:
            lib().pl_db_close(self._h)
            self._h = _vp()
            self.info = None

    def __del__(self):
        # A forked child (a DataLoader worker) leaves the parent's handle
        # alone: closing it there would clear the parent's LMDB reader slots.
        if getattr(self, "_pid", None) == os.getpid():
            self.close()


def _plan(n_samples, rank, world_size, batch_size, drop_last, database, budget, seed, epoch,
          shuffle, rank_weights, start):
    """A new pl_plan handle (pl_plan_free it) of these options."""
    # ctypes would keep only the low 32 bits of these (2**32 reads as 0).
    for key, v in (("rank", rank), ("world_size", world_size), ("batch_size", batch_size)):
        if v >= 1 << 32:
            raise LoaderError(f"epoch plan: {key} {v} does not fit in 32 bits")
    opts = PlanOpts(n_samples=n_samples, seed=seed, epoch=epoch, rank=rank,
                    world_size=world_size, batch_size=batch_size, shuffle=int(bool(shuffle)),
                    drop_last=int(bool(drop_last)), from_=start)
    if rank_weights:
        weights = (ctypes.c_uint32 * world_size)(*rank_weights)
        opts.rank_weights = weights  # kept alive by `weights` through the call
    plan = _vp()
    err = PlErr()
    if budget:
        opts.budget = budget[1]
        check(lib().pl_plan_new_db(database._h, ctypes.byref(opts), int(budget[0] == "payload"),
                                   ctypes.byref(plan), ctypes.byref(err)), err, "epoch plan")
    else:
        check(lib().pl_plan_new(ctypes.byref(opts), ctypes.byref(plan), ctypes.byref(err)),
              err, "epoch plan")
    return plan


def plan_n_batches(n_samples, rank, world_size, batch_size, drop_last, database=None,
                   budget=None, seed=0, epoch=0, shuffle=False, rank_weights=None, start=0):
    """Batches of one rank's epoch (pl_plan_n_batches). Without a budget the
    count does not depend on the seed, the epoch or shuffling; with budget =
    ("removed" or "payload", N) it does, and `database` (an open Database)
    gives the rows' costs (pl_plan_new_db). start: the elastic resume
    position (pl_plan_opts.from)."""
    plan = _plan(n_samples, rank, world_size, batch_size, drop_last, database, budget, seed,
                 epoch, shuffle, rank_weights, start)
    try:
        return lib().pl_plan_n_batches(plan)
    finally:
        lib().pl_plan_free(plan)


def plan_position(n_samples, world_size, batch_size, drop_last, database=None, budget=None,
                  seed=0, epoch=0, shuffle=False, rank_weights=None, start=0, steps=0):
    """(position, steps of the epoch) of this world's plan: the entries of
    the epoch's order that `steps` steps of every rank consume
    (pl_plan_position; the same on every rank, and for the block order the
    row order's, B * world_size entries a step), an elastic resume's
    position, and the plan's batch count (pl_plan_n_batches)."""
    plan = _plan(n_samples, 0, world_size, batch_size, drop_last, database, budget, seed,
                 epoch, shuffle, rank_weights, start)
    try:
        return lib().pl_plan_position(plan, steps), lib().pl_plan_n_batches(plan)
    finally:
        lib().pl_plan_free(plan)
