"""Two simulated nodes of 8 ranks each on one machine: every node reads its
own copy of the database (as a database copied to node-local disk), the 16
ranks run at once as separate processes with torchrun's environment, and
together they see every sample exactly once (padding aside) in the same
number of steps; a rank stopped mid-epoch resumes with exactly the rest."""

import json
import os
import shutil
import subprocess
import sys

import pytest

from conftest import block_plan_batches, plan_batches

RANK = """
import json, os, sys, pertload
db, out, kw, stop = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), int(sys.argv[4])
loader = pertload.Loader(db, seed=7, **kw)   # RANK and WORLD_SIZE from the environment
rows, it = [], iter(loader)
for batch in it:
    rows.append(batch.row.tolist())
    if len(rows) == stop:
        break
state = loader.state_dict()
loader.close()
if stop:
    again = pertload.Loader(db, seed=0, **kw)
    again.load_state_dict(state)
    rows += [b.row.tolist() for b in again]
json.dump({"rows": rows, "len": len(loader) if not stop else None}, open(out, "w"))
"""


@pytest.mark.parametrize("kw", [{"batch_size": 16, "shuffle": True},
                                {"batch_size": 16, "order": "block", "block_rows": 4},
                                {"batch_size": 64, "shuffle": True, "budget": "removed=40000"}])
def test_two_nodes_of_eight_ranks(medium, tmp_path, kw):
    nodes = [tmp_path / f"node{i}" / "db" for i in range(2)]
    for d in nodes:
        shutil.copytree(medium.db, d)
    procs = []
    for rank in range(16):
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE="16", LOCAL_RANK=str(rank % 8),
                   LOCAL_WORLD_SIZE="8", GROUP_RANK=str(rank // 8),
                   TORCHELASTIC_RUN_ID="sim", MASTER_ADDR="127.0.0.1", MASTER_PORT="29500")
        stop = 3 if rank % 5 == 0 else 0  # some ranks stop and resume
        procs.append(subprocess.Popen([sys.executable, "-c", RANK, str(nodes[rank // 8]),
                                       str(tmp_path / f"r{rank}.json"), json.dumps(kw),
                                       str(stop)], env=env))
    assert all(p.wait(timeout=300) == 0 for p in procs)
    got = [json.load(open(tmp_path / f"r{rank}.json")) for rank in range(16)]
    steps = {len(g["rows"]) for g in got}
    assert len(steps) == 1, [len(g["rows"]) for g in got]
    assert all(g["len"] == len(g["rows"]) for g in got if g["len"] is not None)
    flat = [r for g in got for b in g["rows"] for r in b]
    assert set(flat) == set(range(medium.n))
    if "budget" not in kw:
        # the documented plans, rank by rank (resumed ranks included)
        for rank, g in enumerate(got):
            if kw.get("order") == "block":
                want = block_plan_batches(medium.n, 7, 0, rank, 16, 16, False, 4)
            else:
                want = plan_batches(medium.n, 7, 0, True, rank, 16, 16, False)
            assert g["rows"] == want, rank
        assert len(flat) - medium.n < 16 * 16  # padding fills the last step only
    else:
        # batches are dealt whole: padding repeats at most one step's batches
        assert len(flat) - medium.n <= 16 * 64
