"""The shared graph of a database, read once (numpy) and uploaded once (torch)."""

import os

import numpy as np

from . import _lib
from ._identity import check_same_database  # noqa: F401 (pertload.check_same_database)


class OntologyGraph:
    """The ontology layers of a database (DESIGN section 10), for DCell-style
    models that run one small network per term, stratum by stratum.

    term_names        [n_terms] term ids, terms numbered in definition order
    children          (ptr int64 [n_terms + 1], idx int64): child terms (CSR)
    genes             (ptr, idx): direct genes of each term (CSR, gene rows)
    n_term_genes      int64 [n_terms]: |genes(T)|, genes of T and its descendants
    stratum           int64 [n_terms]: 0 without child terms, else 1 + the
                      maximum of the children's
    strata            [n_strata] lists of groups; a group is a dict
                      {"n_genes", "n_children", "terms": int64 array}: the terms
                      of one stratum with the same direct genes and children,
                      which a model runs as one batched matrix product
    annotation_index  int64 [2, n_annotations] (gene row, term row): the
                      ("gene", "annotated", "term") edges, in position order
    fingerprints      (gene fingerprint, {type: edge fingerprint}, database
                      fingerprint) of its database (Graph's), or None: a
                      schedule's affected() checks its batches against them
    """

    def __init__(self, o, fingerprints=None):
        i64 = np.int64
        self.fingerprints = fingerprints
        self.term_names = o["term_names"]
        self.n_terms = len(self.term_names)
        self.children = (o["child_ptr"].astype(i64), o["child_idx"].astype(i64))
        self.genes = (o["gene_ptr"].astype(i64), o["gene_idx"].astype(i64))
        self.n_term_genes = o["n_term_genes"].astype(i64)
        self.stratum = o["stratum"].astype(i64)
        sp, gp, gt = o["stratum_ptr"], o["group_ptr"], o["group_terms"].astype(i64)
        self.strata = [[{"n_genes": int(o["group_n_genes"][k]),
                         "n_children": int(o["group_n_children"][k]),
                         "terms": gt[gp[k]:gp[k + 1]]} for k in range(sp[s], sp[s + 1])]
                       for s in range(len(sp) - 1)]
        self.annotation_index = np.stack([o["ann_gene"].astype(i64), o["ann_term"].astype(i64)])
        self.n_annotations = self.annotation_index.shape[1]

    def schedule(self, width=1):
        """The DCell schedule (pertload.schedule.Schedule) of these terms:
        `width` is each term's output size, an int, an array of one int per
        term, or a function of |genes(T)| (an int) such as
        lambda n: max(20, math.ceil(0.3 * n)). See docs/dcell.md."""
        from .schedule import Schedule

        return Schedule(self, width)

    def __repr__(self):
        return (f"<pertload.OntologyGraph: {self.n_terms} terms in {len(self.strata)} strata, "
                f"{self.n_annotations} annotations>")


class Graph:
    """Edge arrays and names of a database; removed positions of batches index
    into these arrays.

    edge_index[type]  int64 [2, E_t] (src row, dst row), in input order
    gpr               int64 [2, n_gpr] (gene row, reaction row), or None
    rmr               int64 [2, n_rmr] (reaction row, metabolite row), or None
    rmr_stoich        float32 [n_rmr], or None
    gene_names, type_names, label_names, reaction_names, metabolite_names
    n_genes, n_edges (dict), n_reactions, n_metabolites, n_gpr, n_rmr,
    n_samples, n_labels, has_metabolism
    reaction_rule     "gpr" (a reaction is removed when its gene-reaction rule
                      is false) or "any" (when any of its GPR genes is deleted)
    rules             (off uint32 [n_reactions + 1], code uint32 [words]): the
                      compiled rules (PL_ARRAY_RULES in pertload.h), or None
    payload_dtype ("" without payload), payload_shape (after the sample axis)
    ontology          the ontology layers (OntologyGraph), or None
    gene_fingerprint  int: XXH64 of the gene names in order (pertload.h,
                      pl_db_info.gene_fingerprint); equal fingerprints mean
                      the same gene order
    edge_fingerprints {type: int}: XXH64 of each edge type's arrays
    db_fingerprint    int: one identity over everything the database serves
                      (pl_db_info.db_fingerprint): genes, edges, metabolism,
                      rules, ontology, labels, samples
    recipe            the recipe text of `build --recipe` ("" otherwise)
    categories        {column: [level names]} of the category columns of the
                      samples (a split name; codes 0, 1, ... into the list),
                      kept apart from the labels: a batch's labels hold a
                      category column only when the build listed it under
                      the labels too; {} when none
    label_levels      the same dict as categories (the earlier name)
    stored_features   {node type: float32 or float16 [n_nodes, F]}: the
                      matrices stored in the database (`build
                      --node-features`, recipe key features:); {} when none
    features          {node type: float32 or float16 [n_nodes, F]}: the node
                      features that layouts "pyg" and "lazy" gather as x:
                      the stored ones, each node type given to set_features
                      (Loader's features=) replacing the stored one
    """

    def __init__(self, db):
        info = db.info
        self.n_genes = int(info.n_genes)
        self.n_samples = int(info.n_samples)
        self.n_labels = int(info.n_labels)
        self.has_metabolism = bool(info.has_metabolism)
        self.n_reactions = int(info.n_reactions)
        self.n_metabolites = int(info.n_metabolites)
        self.n_gpr = int(info.n_gpr)
        self.n_rmr = int(info.n_rmr)
        self.reaction_rule = "gpr" if info.reaction_rule == 2 else "any"
        self.type_names = _lib.names(info.type_names, info.n_types)
        self.gene_names = _lib.names(info.gene_names, self.n_genes)
        self.label_names = _lib.names(info.label_names, self.n_labels)
        self.reaction_names = _lib.names(info.reaction_names, self.n_reactions)
        self.metabolite_names = _lib.names(info.metabolite_names, self.n_metabolites)
        self.n_edges = {t: int(info.n_edges[k]) for k, t in enumerate(self.type_names)}
        (self.gene_fingerprint, self.edge_fingerprints,
         self.db_fingerprint) = fingerprints(info)
        self.recipe = (info.recipe or b"").decode("utf-8", "replace")
        self.categories = categories(info)
        self.label_levels = self.categories
        self.payload_dtype = info.payload_dtype.decode("ascii")
        self.payload_shape = tuple(int(info.payload_shape[d]) for d in range(info.payload_ndim))

        def pairs(which, n):
            return db.graph_array(which, np.empty((2, n), np.int32)).astype(np.int64)

        self.edge_index = {t: pairs(k, self.n_edges[t]) for k, t in enumerate(self.type_names)}
        self.gpr = self.rmr = self.rmr_stoich = self.rules = None
        n_rules = int(info.n_rules)
        if n_rules:
            n = self.n_reactions + 1 + int(info.n_rule_words)
            words = db.graph_array(_lib.PL_ARRAY_RULES, np.empty(n, np.uint32))
            off = words[:self.n_reactions + 1].copy()
            self.rules = (off, words[self.n_reactions + 1:].copy())
        if self.has_metabolism:
            self.gpr = pairs(_lib.PL_ARRAY_GPR, self.n_gpr)
            self.rmr = pairs(_lib.PL_ARRAY_RMR, self.n_rmr)
            self.rmr_stoich = db.graph_array(_lib.PL_ARRAY_RMR_STOICH,
                                             np.empty(self.n_rmr, np.float32))
        onto = db.ontology()
        self.ontology = OntologyGraph(onto, (self.gene_fingerprint, self.edge_fingerprints,
                                             self.db_fingerprint)) if onto is not None else None
        stored = ((node, db.features(node)) for node in self.node_counts())
        self.stored_features = {node: a for node, a in stored if a is not None}
        self.features = dict(self.stored_features)
        for t, ei in self.edge_index.items():
            _check_rows(f"edge type {t}", ei, (self.n_genes, self.n_genes))
        if self.has_metabolism:
            _check_rows("gpr", self.gpr, (self.n_genes, self.n_reactions))
            _check_rows("rmr", self.rmr, (self.n_reactions, self.n_metabolites))

    def __repr__(self):
        return (f"<pertload.Graph: {self.n_genes} genes, {sum(self.n_edges.values())} edges in "
                f"{len(self.type_names)} types, {self.n_reactions} reactions, "
                f"{self.n_metabolites} metabolites>")

    def node_counts(self):
        """{node type: node count} of the graph's node types."""
        out = {"gene": self.n_genes}
        if self.has_metabolism:
            out.update(reaction=self.n_reactions, metabolite=self.n_metabolites)
        if self.ontology is not None:
            out["term"] = self.ontology.n_terms
        return out

    def node_features(self, node):
        """The feature matrix of node type `node` that layouts "pyg" and
        "lazy" gather as x (features[node]); KeyError naming the node types
        with features when it has none."""
        if node not in self.features:
            raise KeyError(f"no features for node type {node!r} (features: "
                           f"{', '.join(self.features) or 'none'})")
        return self.features[node]

    def set_features(self, features):
        """Node features: {node type: array [n_nodes, F] of float32 or
        float16, or the path of such a .npy file (memory-mapped)}, each
        replacing the database's matrix of that node type (the others stay).
        Layouts "pyg" and "lazy" then give each node store x [B * n_nodes,
        F], gathered by n_id on the device from the matrix uploaded once per
        device. A node type the graph lacks, another row count, another
        dtype or another rank, a NaN or an infinity is a ValueError naming
        them."""
        counts = self.node_counts()
        checked = {}
        for node, a in features.items():
            what = f"features of {node!r}"
            if node not in counts:
                raise ValueError(f"{what}: the graph has no node type {node!r} (it has "
                                 f"{', '.join(counts)})")
            if isinstance(a, (str, os.PathLike)):
                what += f" ({os.fspath(a)})"
                a = np.load(a, mmap_mode="r", allow_pickle=False)
            a = np.asarray(a)
            if a.dtype not in (np.float32, np.float16):
                raise ValueError(f"{what}: dtype {a.dtype}, float32 or float16 expected")
            if a.ndim != 2 or a.shape[0] != counts[node]:
                raise ValueError(f"{what}: shape {a.shape}, [{counts[node]}, F] expected "
                                 f"({counts[node]} {node} nodes)")
            bad = np.argwhere(~np.isfinite(a))
            if len(bad):
                r, c = (int(v) for v in bad[0])
                v = float(a[r, c])
                raise ValueError(f"{what}: row {r}, column {c} is "
                                 f"{'NaN' if v != v else '-inf' if v < 0 else 'inf'}; "
                                 "node features must be finite")
            checked[node] = a
        self.features = {**self.stored_features, **checked}
        self.__dict__.pop("_tensors", None)
        self.__dict__.pop("_pyg", None)

    def tensors_on(self, device):
        """to_torch(device), made once per device and kept (the shared graph
        of layout="pyg"; do not modify its tensors)."""
        cache = self.__dict__.setdefault("_tensors", {})
        key = str(device)
        if key not in cache:
            cache[key] = self.to_torch(device)
        return cache[key]

    def to_torch(self, device="cpu"):
        """The graph as torch tensors on `device`, keyed as PyG HeteroData keys:
        {"gene": {"num_nodes"}, ("gene", t, "gene"): {"edge_index"}, and with
        metabolism "reaction", "metabolite" ({"num_nodes"}), ("gene", "gpr",
        "reaction"): {"edge_index"}, ("reaction", "rmr", "metabolite"):
        {"edge_index", "stoichiometry"}}; with an ontology "term": {"num_nodes"}
        and ("gene", "annotated", "term"): {"edge_index"}."""
        import torch

        def up(a):
            return torch.from_numpy(a).to(device)

        out = {"gene": {"num_nodes": self.n_genes}}
        for node, a in self.features.items():
            out.setdefault(node, {})["x"] = up(np.array(a))  # a copy: a may be a read-only map
        for t, ei in self.edge_index.items():
            out[("gene", t, "gene")] = {"edge_index": up(ei)}
        if self.has_metabolism:
            out.setdefault("reaction", {})["num_nodes"] = self.n_reactions
            out.setdefault("metabolite", {})["num_nodes"] = self.n_metabolites
            out[("gene", "gpr", "reaction")] = {"edge_index": up(self.gpr)}
            out[("reaction", "rmr", "metabolite")] = {"edge_index": up(self.rmr),
                                                      "stoichiometry": up(self.rmr_stoich)}
        if self.ontology is not None:
            out.setdefault("term", {})["num_nodes"] = self.ontology.n_terms
            out[("gene", "annotated", "term")] = {
                "edge_index": up(self.ontology.annotation_index)}
        return out

    def to_pyg(self, device="cpu"):
        """The shared graph as a torch_geometric HeteroData on `device`, the
        `cell_graph` TorchCell's models take beside the batch; made once per
        device and kept (do not modify it; set_features makes it again).

        Node stores (gene; with metabolism reaction and metabolite; with an
        ontology term): num_nodes, node_ids (the names), x where the type
        has features (Graph.features). Edge stores, each with num_edges:
        ("gene", t, "gene") per edge type and ("gene", "annotated", "term")
        with edge_index; ("gene", "gpr", "reaction") with hyperedge_index;
        ("reaction", "rmr", "metabolite") with hyperedge_index and
        stoichiometry (as layout="lazy" names them). The whole graph: no
        batch, mask or pert_mask. Its tensors are those of
        tensors_on(device). ImportError where torch_geometric does not
        import (docs/python.md says how to install it)."""
        cache = self.__dict__.setdefault("_pyg", {})
        key = str(device)
        if key not in cache:
            cache[key] = self._hetero_data(device)
        return cache[key]

    def _hetero_data(self, device):
        """to_pyg's HeteroData, made from tensors_on(device)."""
        try:
            from torch_geometric.data import HeteroData
        except ImportError as e:
            raise ImportError("Graph.to_pyg needs torch_geometric (pip install "
                              "torch_geometric; docs/python.md)") from e
        t = self.tensors_on(device)
        names = {"gene": self.gene_names, "reaction": self.reaction_names,
                 "metabolite": self.metabolite_names,
                 "term": self.ontology.term_names if self.ontology is not None else []}
        data = HeteroData()
        for key, v in t.items():
            store = data[key]
            if not isinstance(key, tuple):
                store.num_nodes = v["num_nodes"]
                store.node_ids = list(names[key])
                if "x" in v:
                    store.x = v["x"]
                continue
            pairs = "hyperedge_index" if key[1] in ("gpr", "rmr") else "edge_index"
            store[pairs] = v["edge_index"]
            store.num_edges = int(v["edge_index"].shape[1])
            if "stoichiometry" in v:
                store.stoichiometry = v["stoichiometry"]
        return data

    def add_phenotypes(self, data, labels=None):
        """TorchCell's label keys added to the gene store of a batch of
        layout "pyg" or "lazy" (a Batch, or the mapping without PyG) from
        its labels (y, or "labels": [B, L], NaN = missing), which stay:
        phenotype_values float32, each sample's known labels in turn, in the
        order of `labels` (names; default label_names); phenotype_type_indices
        int64, each value's position in `labels`; phenotype_sample_indices
        int64, 0 (a sample is one experiment; TorchCell counts a sample's
        experiments there); phenotype_types, `labels` once per sample;
        phenotype_values_ptr [B + 1] and phenotype_values_batch, each
        value's sample (what PyG's follow_batch=["phenotype_values"] gives).
        A sample with no known label gets one NaN of type 0, as TorchCell's
        processor writes it. A Batch's get_example(i) gives sample i's.
        Returns `data`; a name that is no label is a ValueError naming the
        labels."""
        import torch

        labels = list(self.label_names if labels is None else labels)
        unknown = [n for n in labels if n not in self.label_names]
        if unknown or not labels:
            what = f"no label {', '.join(map(repr, unknown))}" if unknown else "no label given"
            raise ValueError(f"add_phenotypes: {what} (the database's labels: "
                             f"{', '.join(self.label_names) or 'none'})")
        batch = hasattr(data, "_slice_dict")
        y = data.y if batch else data["labels"]
        dev, B = y.device, y.shape[0]
        cols = torch.tensor([self.label_names.index(n) for n in labels], device=dev)
        v = y.index_select(1, cols)
        known = ~torch.isnan(v)
        known[:, 0] |= ~known.any(1)  # none known: one NaN of type 0
        where = torch.nonzero(known)
        ptr = torch.zeros(B + 1, dtype=torch.int64, device=dev)
        torch.cumsum(known.sum(1), 0, out=ptr[1:])
        new = {"phenotype_values": v[known].to(torch.float32),
               "phenotype_type_indices": where[:, 1],
               "phenotype_sample_indices": torch.zeros(len(where), dtype=torch.int64,
                                                       device=dev)}
        gene = data["gene"]
        for k, x in new.items():
            gene[k] = x
        gene["phenotype_types"] = [list(labels) for _ in range(B)]
        gene["phenotype_values_ptr"], gene["phenotype_values_batch"] = ptr, where[:, 0]
        if batch:
            sl, inc = data._slice_dict["gene"], data._inc_dict["gene"]
            zeros = torch.zeros(B, dtype=torch.int64, device=dev)
            for k in new:
                sl[k], inc[k] = ptr, zeros
            sl["phenotype_types"] = torch.arange(B + 1, device=dev)
            inc["phenotype_types"] = None
        return data


def fingerprints(info):
    """(gene fingerprint, {edge type: fingerprint}, database fingerprint) of
    a pl_db_info."""
    types = _lib.names(info.type_names, info.n_types)
    return (int(info.gene_fingerprint),
            {t: int(info.edge_fingerprint[k]) for k, t in enumerate(types)},
            int(info.db_fingerprint))


def categories(info):
    """{column: [level names]} of the category columns of a pl_db_info (its
    lines "column<TAB>level 0<TAB>level 1..."; only newlines end a line)."""
    out = {}
    for line in (info.categories or b"").decode("utf-8", "replace").split("\n"):
        if line:
            label, *levels = line.split("\t")
            out[label] = levels
    return out


label_levels = categories  # the earlier name


def _check_rows(what, ei, bounds):
    for row, n in zip(ei, bounds):
        if len(row) and (row.min() < 0 or row.max() >= n):
            raise _lib.LoaderError(f"{what}: node index outside 0..{n - 1}")


class GraphOn:
    """A Loader's graph, read on first use, and its tensors per device: the
    graph source its batches hold (called with a device: graph.to_torch(device),
    uploaded once per device), which keeps no Loader alive."""

    def __init__(self, db, features):
        self.db, self.features, self._graph = db, features, None

    def graph(self):
        """The database's Graph with the loader's features."""
        if self._graph is None:
            database = _lib.Database(self.db)
            try:
                graph = Graph(database)
                if self.features:
                    graph.set_features(self.features)
                self._graph = graph
            finally:
                database.close()
        return self._graph

    def __call__(self, device):
        return self.graph().tensors_on(device)
