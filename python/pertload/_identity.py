"""Whether a batch and a graph (or a schedule) come from the same database,
by the fingerprints both carry: below the graph, the schedule and the batch,
which all check it."""

from ._lib import LoaderError


def check_same_database(batch, graph, what="the graph"):
    """Raise LoaderError unless `batch` and `graph` come from the same
    database: the same gene list, the same edge arrays and the same database
    fingerprint (metabolism, rules, ontology, samples): the batch's indices
    and positions only mean something in its own database. `graph` is a
    Graph or anything with its three fingerprint attributes (a Schedule),
    `what` its name in the message."""
    bg, be = batch.gene_fingerprint, batch.edge_fingerprints
    differ = f"the batch and {what} come from different databases"
    if bg != graph.gene_fingerprint:
        raise LoaderError(
            f"{differ}: different gene lists (gene fingerprint {bg:016x} of the batch's "
            f"database, {graph.gene_fingerprint:016x} of {what}'s)")
    if set(be) != set(graph.edge_fingerprints):
        raise LoaderError(
            f"{differ}: different edge types "
            f"({', '.join(sorted(be))} vs {', '.join(sorted(graph.edge_fingerprints))})")
    for t, fp in be.items():
        if fp != graph.edge_fingerprints[t]:
            raise LoaderError(
                f"{differ}: edge type {t!r} differs (fingerprint {fp:016x} vs "
                f"{graph.edge_fingerprints[t]:016x})")
    bd, gd = getattr(batch, "db_fingerprint", None), getattr(graph, "db_fingerprint", None)
    if bd is not None and gd is not None and bd != gd:
        raise LoaderError(
            f"{differ}: the same genes and edges, other contents (metabolism, rules, "
            f"ontology or samples; database fingerprint {bd:016x} of the batch's, {gd:016x} "
            f"of {what}'s)")
