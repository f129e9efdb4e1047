"""Which states a Loader resumes from, and its plan functions (Loader.load_state_dict; DESIGN section
22): one rank's state_dict, or every rank's agreeing but for "rank", of the
same plan parameters but the world size and rank weights."""

from . import _lib


def one_state(states):
    """The state of a list of every rank's state_dict: ValueError unless
    they agree on everything but "rank"."""
    if not states:
        raise ValueError("an empty list of state_dicts")
    first = states[0]
    for i, sd in enumerate(states[1:], 1):
        for key in sorted(set(first) | set(sd)):
            if key != "rank" and first.get(key) != sd.get(key):
                raise ValueError(f"the ranks' state_dicts differ: {key}={first.get(key)!r} "
                                 f"at rank {first.get('rank', 0)}, {sd.get(key)!r} at rank "
                                 f"{sd.get('rank', i)} (save and load one rank's state, "
                                 "taken after the same step on every rank)")
    return first


def check_state(loader, sd):
    """(sd, its world size, its rank weights, elastic) for loader: sd made
    one state (one_state), ValueError naming the key where its plan differs
    from the loader's but in the world size and rank weights ("database":
    the database fingerprint, absent from states saved before it was kept);
    elastic when those differ (the loader's weights are the new world's)."""
    if isinstance(sd, (list, tuple)):
        sd = one_state(sd)
    mine = loader.state_dict()
    for key in ("database", "batch_size", "shuffle", "drop_last", "n_samples", "subset"):
        if key in sd and sd[key] != mine[key]:
            raise ValueError(f"state_dict has {key}={sd[key]!r}, this loader {mine[key]!r}")
    for key in ("order", "block_rows", "block_window", "budget"):
        want = sd.get(key, "rows" if key == "order" else None)
        if want != getattr(loader, key):
            raise ValueError(f"state_dict has {key}={want!r}, this loader "
                             f"{getattr(loader, key)!r}")
    if bool(sd.get("pad", True)) != loader.pad:
        raise ValueError(f"state_dict has pad={sd.get('pad', True)!r}, this loader "
                         f"{loader.pad!r}")
    world = int(sd.get("world_size", loader.world_size))
    weights = sd.get("rank_weights")
    if weights is not None and len(weights) != world:
        raise ValueError(f"state_dict has {len(weights)} rank_weights for world_size {world}")
    if not 0 <= int(sd.get("from", 0)) <= loader.n_samples:
        raise ValueError(f"state_dict has from={sd['from']}, outside 0..{loader.n_samples}")
    elastic = world != loader.world_size or weights != loader.rank_weights
    if elastic and weights is not None and loader.rank_weights is None:
        raise ValueError(f"state_dict has rank_weights={weights!r} for {world} ranks; give "
                         f"this loader of {loader.world_size} rank_weights of its own (one "
                         "per rank of the new world)")
    return sd, world, weights, elastic


def plan_call(loader, fn, *args, **extra):
    """fn(n_samples, *head, batch_size, drop_last, ...), one of _lib's plan
    functions, with loader's options; args are head, the rank weights and
    the resume position (a budget's costs from the database's sample
    table)."""
    kw = dict(seed=loader.seed, epoch=loader.epoch, shuffle=loader.shuffle, **extra)
    *head, weights, start = args
    if not loader.budget:
        return fn(loader.n_samples, *head, loader.batch_size, loader.drop_last,
                  rank_weights=weights, start=start, **kw)
    kind, _, value = loader.budget.partition("=")
    database = _lib.Database(loader.db)
    try:
        return fn(loader.n_samples, *head, loader.batch_size, loader.drop_last, database,
                  (kind, int(value)), rank_weights=weights, start=start, **kw)
    finally:
        database.close()
