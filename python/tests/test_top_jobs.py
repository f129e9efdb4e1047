"""`pertload top` groups the rings of one job: ranks started with torchrun's
environment (TORCHELASTIC_RUN_ID, RANK, WORLD_SIZE) are listed together with
their samples/s and stall share, and the spread between the fastest and the
slowest rank."""

import os
import re
import subprocess
import sys
import time

from conftest import pertload_bin

CONSUMER = """
import sys, time, pertload
loader = pertload.Loader(sys.argv[1], batch_size=8)
print("ready", flush=True)
for batch in loader:
    time.sleep(float(sys.argv[2]))
"""


def test_top_groups_the_ranks_of_a_job(medium, tmp_path):
    procs = []
    try:
        for rank, pause in enumerate([0.04, 0.15, 0.06]):
            env = dict(os.environ, TORCHELASTIC_RUN_ID="job42", RANK=str(rank), WORLD_SIZE="3")
            procs.append(subprocess.Popen([sys.executable, "-c", CONSUMER, medium.db,
                                           str(pause)], env=env, stdout=subprocess.PIPE,
                                          text=True))
        # a ring of another job and one of no job
        other = dict(os.environ, SLURM_JOB_ID="77", RANK="0")
        procs.append(subprocess.Popen([sys.executable, "-c", CONSUMER, medium.db, "0.02"],
                                      env=other, stdout=subprocess.PIPE, text=True))
        alone = {k: v for k, v in os.environ.items()
                 if k not in ("TORCHELASTIC_RUN_ID", "SLURM_JOB_ID", "MASTER_ADDR", "RANK")}
        procs.append(subprocess.Popen([sys.executable, "-c", CONSUMER, medium.db, "0.02"],
                                      env=alone, stdout=subprocess.PIPE, text=True))
        for p in procs:
            assert p.stdout.readline().strip() == "ready"
        time.sleep(0.3)
        out = subprocess.run([pertload_bin(), "top", "--once", "--interval", "1"],
                             capture_output=True, text=True, timeout=60).stdout
    finally:
        for p in procs:
            p.kill()
            p.wait()
    assert "job torchrun job42: 3 rings" in out, out
    assert "job slurm 77: 1 ring" in out, out
    block = out.split("job torchrun job42")[1].split("\njob ")[0]
    rates = {}
    for line in block.splitlines():
        m = re.match(r"\s+(\d)\s+(\S+)\s+([\d.]+)\s+([\d.]+)%", line)
        if m:
            rates[int(m.group(1))] = float(m.group(3))
    assert sorted(rates) == [0, 1, 2], block
    # the rank that sleeps longest per batch consumes slowest
    assert rates[1] < rates[0] and rates[1] < rates[2], rates
    m = re.search(r"spread: fastest ([\d.]+) samples/s \(rank (\d)\), slowest ([\d.]+) "
                  r"\(rank 1\): ([\d.]+)x", block)
    assert m, block
    assert float(m.group(4)) > 1.5
    assert out.count("\njob ") == 2  # the ring of no job is not grouped
