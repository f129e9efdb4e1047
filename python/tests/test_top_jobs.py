"""`pertload top` groups the rings of one job: ranks started with torchrun's
environment (TORCHELASTIC_RUN_ID, RANK, WORLD_SIZE) are listed together with
their samples/s and stall share, and the spread between the fastest and the
slowest rank."""

import os
import re
import subprocess
import sys
import time

from conftest import pertload_bin, unique

CONSUMER = """
import sys, time, pertload
loader = pertload.Loader(sys.argv[1], batch_size=8)
print("ready", flush=True)
for batch in loader:
    time.sleep(float(sys.argv[2]))
"""


def test_top_groups_the_ranks_of_a_job(medium, tmp_path):
    # `top` lists every ring of the machine: job ids of this run alone, and
    # checks only of this run's jobs and rings.
    job, slurm = unique("job"), str(int.from_bytes(os.urandom(4), "big"))
    procs = []
    try:
        for rank, pause in enumerate([0.04, 0.15, 0.06]):
            env = dict(os.environ, TORCHELASTIC_RUN_ID=job, RANK=str(rank), WORLD_SIZE="3")
            procs.append(subprocess.Popen([sys.executable, "-c", CONSUMER, medium.db,
                                           str(pause)], env=env, stdout=subprocess.PIPE,
                                          text=True))
        # a ring of another job and one of no job
        other = {k: v for k, v in os.environ.items() if k != "TORCHELASTIC_RUN_ID"}
        other.update(SLURM_JOB_ID=slurm, RANK="0")
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
    assert f"job torchrun {job}: 3 rings" in out, out
    assert f"job slurm {slurm}: 1 ring\n" in out, out
    block = out.split(f"job torchrun {job}")[1].split("\njob ")[0]
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
    # The ring of no job is listed but not grouped: its consumer's pid names
    # it in the table, and no job block holds its name.
    table, _, jobs = out.partition("\njob ")
    alone_ring = [ln.split()[0] for ln in table.splitlines()[1:]
                  if len(ln.split()) > 2 and ln.split()[2] == str(procs[-1].pid)]
    assert len(alone_ring) == 1, out
    assert alone_ring[0] not in jobs, out
