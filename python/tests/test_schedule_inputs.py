"""The inputs of a DCell schedule refused rather than truncated or wrapped
(docs/dcell.md): widths that are not positive ints or that would make the
state wider than MAX_COLUMNS; term lists of a batch whose ids do not fit,
whose ptr runs past the terms, or that come from another database; and, in
C, a schedule map inconsistent with its own sizes (pl_schedule_affected
checks every index before it writes)."""

import random

import numpy as np
import pytest

import pertload
from pertload import _lib
from pertload.schedule import MAX_COLUMNS, AffectedSchedule
from conftest import run_cli
from test_ontology import write_ontology
from test_ontology_batches import random_onto  # noqa: F401 (a fixture)


@pytest.fixture(scope="module")
def onto(random_onto):
    return random_onto


@pytest.mark.parametrize("width", [2**62, 2**31, MAX_COLUMNS, "sum"])
def test_widths_past_the_column_limit_are_refused(onto, width):
    o = onto.o
    if width == "sum":  # each width fits, their sum does not
        width = MAX_COLUMNS // o.n_terms + 1
    with pytest.raises(ValueError, match=r"schedule: width.*(the limit|at most) 2147483647"):
        o.schedule(width=width)
    with pytest.raises(ValueError, match="width of term 0 is 4611686018427387904; every width "
                       "must be >= 1 and at most 2147483647"):
        o.schedule(width=np.full(o.n_terms, 2**62, np.uint64))
    with pytest.raises(ValueError, match=r"width\(\d+\) \(the function's result\) is -1"):
        o.schedule(width=lambda n: -1)


@pytest.mark.parametrize("width", [2.7, "3", True, np.bool_(True), 3.0, None,
                                   lambda n: 2.5, lambda n: "2", lambda n: True,
                                   lambda n: None, "array-float", "array-bool"])
def test_widths_that_are_not_ints_are_refused(onto, width):
    T = onto.o.n_terms
    if width == "array-float":
        width = np.full(T, 2.0)
    elif width == "array-bool":
        width = np.ones(T, bool)
    with pytest.raises(TypeError, match=r"schedule: width"):
        onto.o.schedule(width=width)


def test_int_widths_of_every_kind_are_taken(onto):
    T = onto.o.n_terms
    for w in (3, np.int64(3), np.uint8(3), lambda n: np.int32(3), [3] * T,
              np.full(T, 3, np.uint16)):
        s = onto.o.schedule(width=w)
        assert s.width.tolist() == [3] * T and s.state_size == onto.o.n_annotations + 3 * T


def test_affected_refuses_term_lists_that_do_not_fit(onto):
    s = onto.o.schedule(width=2)
    with pytest.raises(ValueError, match=r"affected: terms holds 4294967297"):
        AffectedSchedule(s, np.array([2**32 + 1], np.int64), np.array([0, 1]))
    with pytest.raises(ValueError, match=r"affected: ptr\[-1\] = 5 is outside 0..2"):
        AffectedSchedule(s, np.array([0, 1], np.int32), np.array([0, 5]))
    with pytest.raises(ValueError, match=r"affected: ptr has 0 entries"):
        AffectedSchedule(s, np.zeros(0, np.int32), np.zeros(0, np.int64))
    with pytest.raises(TypeError, match=r"affected: terms must be a 1-D integer array"):
        AffectedSchedule(s, np.array([0.0, 1.0]), np.array([0, 2]))
    with pytest.raises(TypeError, match=r"affected: ptr must be a 1-D integer array"):
        AffectedSchedule(s, np.array([0, 1]), np.array([[0, 2]]))
    # a ptr running past the terms before it decreases: refused before a read
    with pytest.raises(_lib.LoaderError, match=r"ptr\[2\] = 2 is below ptr\[1\] = 1000000"):
        AffectedSchedule(s, np.array([0, 1], np.int32), np.array([0, 1000000, 2]))
    ok = AffectedSchedule(s, np.array([0, 1, 1], np.int32), np.array([0, 2, 3]))
    assert sorted(ok.terms.tolist()) == [0, 1]


class FakeBatch:
    """A batch-like object: the term lists of a sample and a database's
    fingerprints."""

    def __init__(self, batch, terms):
        self.gene_fingerprint = batch.gene_fingerprint
        self.edge_fingerprints = batch.edge_fingerprints
        self.db_fingerprint = batch.db_fingerprint
        self.ontology = {"term": (np.array(terms, np.uint32), np.array([0, len(terms)]))}


def test_affected_refuses_a_batch_of_another_database(small, onto, tmp_path):
    # the same genes and edges, the same DAG over other genes (as many terms:
    # every id of the other's batches names a term of this schedule)
    write_ontology(tmp_path / "onto.txt", small.genes[::-1], random.Random(11))
    run_cli("build", "-o", tmp_path / "db", *small.build_args, "--ontology-dcell",
            tmp_path / "onto.txt", "--quiet")
    other = pertload.Loader(tmp_path / "db").graph
    mine = pertload.Loader(onto.db).graph
    assert (other.gene_fingerprint, other.edge_fingerprints) == (mine.gene_fingerprint,
                                                                  mine.edge_fingerprints)
    assert other.db_fingerprint != mine.db_fingerprint
    assert other.ontology.n_terms == onto.o.n_terms
    s = onto.o.schedule(width=2)
    for sched in (s, s.to("cpu")):
        for b in pertload.Loader(tmp_path / "db", batch_size=16):
            with pytest.raises(_lib.LoaderError, match="the batch and the schedule come from "
                               "different databases: the same genes and edges, other"):
                sched.affected(b)
            break
    # the schedule of the other database takes them; a fake batch naming the
    # first database is refused by it
    batch = next(iter(pertload.Loader(onto.db, batch_size=16)))
    theirs = other.ontology.schedule(width=2)
    for b in pertload.Loader(tmp_path / "db", batch_size=16):
        assert theirs.affected(b).n_samples == len(b.row)
    assert sorted(s.affected(FakeBatch(batch, [0, 3])).terms.tolist()) == [0, 3]
    fake = FakeBatch(batch, [0, 3])
    with pytest.raises(_lib.LoaderError, match="different databases"):
        theirs.affected(fake)
    fake.gene_fingerprint, fake.edge_fingerprints, fake.db_fingerprint = None, {}, None
    assert sorted(theirs.affected(fake).terms.tolist()) == [0, 3]  # nothing to check


@pytest.mark.parametrize("what", ["term_slot", "group_ptr", "stratum_ptr", "slot_in_ptr",
                                  "slot_out", "slot_out_end", "columns"])
def test_the_c_side_checks_the_map_against_its_sizes(onto, what):
    """The map pl_schedule_affected is given, made inconsistent in place:
    each is refused naming the array, before a write."""
    s = onto.o.schedule(width=2)
    m = s._map
    T = m.n_terms
    match = {"term_slot": f"term_slot\\[0\\] = {T}, outside",
             "group_ptr": f"group_ptr\\[{m.n_groups}\\] is {T + 7}, not {T}",
             "stratum_ptr": "stratum_ptr\\[0\\] is .*, not 0",
             "slot_in_ptr": "slot_in_ptr\\[2\\] = 0 is below slot_in_ptr\\[1\\]",
             "slot_out": "slot_out\\[2\\] = .* is below slot_out\\[1\\]",
             "slot_out_end": f"slot_out\\[{T}\\] = .* is below",
             "columns": r"\d+ state columns, more than the limit 2147483647"}[what]
    if what == "term_slot":
        m.term_slot[0] = T
    elif what == "group_ptr":
        m.group_ptr[-1] = T + 7
    elif what == "stratum_ptr":
        m.stratum_ptr[0] = m.stratum_ptr[1] + 1
    elif what == "slot_in_ptr":
        m.slot_in_ptr[2] = 0
    elif what == "slot_out":  # a wrapped cumulative sum: too little room for slot 2
        m.slot_out[1] = 2**63
    elif what == "slot_out_end":
        m.slot_out[-1] = m.slot_out[0]
    else:  # the same room, past the column limit
        m.slot_out += np.uint64(2**31)
    with pytest.raises(_lib.LoaderError, match="schedule map: " + match):
        AffectedSchedule(s, np.array([0, 1], np.int32), np.array([0, 2]))
