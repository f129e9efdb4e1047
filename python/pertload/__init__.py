"""pertload: batches of gene-perturbation samples for PyTorch, served from a
pertload database by `pertload serve` through shared memory.

    import pertload
    loader = pertload.Loader("yeast.db", batch_size=64, shuffle=True)
    graph = loader.graph.to_torch("cuda")        # once
    for epoch in range(10):
        loader.set_epoch(epoch)
        for batch in loader:                     # numpy views of the ring
            t = batch.to_torch("cuda", graph=loader.graph)  # masks built on the GPU;
                                                 # graph: checks both share a database
            mask = t[("gene", "physical", "gene")]["mask"]

numpy is required; torch only for to_torch(), Dataset and DataModule
(torch.utils.data forms, imported on first use).
"""

from ._lib import LoaderError, library_path, program_path
from .batch import Batch, unpack_bits
from .graph import Graph, check_same_database
from .loader import Loader
from . import packed as _packed  # noqa: F401,E402 (how a Batch pickles, packs, pins)

__all__ = ["Batch", "DataModule", "Dataset", "Graph", "Loader", "LoaderError",
           "check_same_database", "library_path", "program_path", "unpack_bits"]


def __getattr__(name):
    # Dataset and DataModule need torch: imported when first asked for.
    if name in ("Dataset", "DataModule"):
        from . import data

        return getattr(data, name)
    raise AttributeError(f"module 'pertload' has no attribute {name!r}")
