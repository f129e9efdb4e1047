"""`pertload bench --preset human`: the human-scale figures beside the yeast
figures of the same run (DESIGN section 23, issue 40).

For each of the two `pertload synth` presets, one after the other on this
machine: the build (wall time and peak memory of `pertload build`), the
database's size, the masks engine on one core (`pertload bench masks`, stored
samples), and the ring into this Python process (2 worker threads, batches of
64, shuffled): the serve's start (Loader() to the first batch) and samples/s
over the first --ring-samples samples. Per-sample costs are also divided by the
removed positions, the figure the targets compare: human within 2x of yeast.
"""
import os
import shutil
import time

TARGET_BUILD_S, TARGET_PEAK = 300.0, 8 * 2**30


def ring(db, samples, batch_size=64, threads=2):
    """(serve start seconds, samples/s, removed positions a sample) of a
    shuffled epoch through the ring, cut after `samples` samples."""
    import pertload
    t0 = time.perf_counter()
    loader = pertload.Loader(db, batch_size=batch_size, shuffle=True, threads=threads)
    n = removed = 0
    try:
        it = iter(loader)
        batch = next(it)
        start = time.perf_counter() - t0
        t1 = time.perf_counter()
        while True:
            for positions, _ in batch.removed.values():
                removed += positions.shape[0]
            n += len(batch)
            if n >= samples:
                break
            batch = next(it, None)
            if batch is None:
                break
        dt = time.perf_counter() - t1
    finally:
        loader.close()
    return start, n / dt, removed / n


def run(dataset, bench, work, samples, ring_samples, scale, log):
    """Figures of both presets; dataset() and bench() are report.py's."""
    r = {"load_before": os.getloadavg()}
    for preset in ("yeast", "human"):
        n = samples.get(preset)  # None: the preset's
        db, b = dataset(work, preset, n, scale, preset=preset)
        m = bench("masks", db, "--samples", min(n, 200000) if n else 200000,
                  "--peer-samples", 0, work=work)
        log(f"\n$ ring into Python, {preset}: {ring_samples:,} samples")
        start, rate, rm = ring(db, ring_samples)
        r[preset] = {"build": b, "edges": m["edges"],
                     "engine_samples_per_s": m["engine_samples_per_s"],
                     "removed_per_sample": m["removed_per_sample"],
                     "ring_start_seconds": start, "ring_samples_per_s": rate,
                     "ring_removed_per_sample": rm, "load": os.getloadavg()}
        shutil.rmtree(db)
    return r


def markdown(r, machine, command):
    y, h = r["yeast"], r["human"]
    lines = ["# pertload benchmark report: human scale beside yeast", "",
             f"{machine['cpu']}, {machine['cores']} cores, "
             f"{machine['memory_bytes'] / 2**30:.0f} GiB, Linux {machine['kernel']}, "
             f"{machine['date']}; command: `pertload bench {command}`; load average "
             f"{r['load_before'][0]:.1f} at the start, {y['load'][0]:.1f} after yeast, "
             f"{h['load'][0]:.1f} after human.", "",
             "| figure | yeast | human | human / yeast | target |", "|---|---|---|---|---|"]

    def row(name, a, b, ratio="", target=""):
        lines.append(f"| {name} | {a} | {b} | {ratio} | {target} |")

    def per_pos(p, rate, rm):
        return 1e9 / p[rate] / p[rm]

    def rate_rows(name, rate, rm):
        """Samples/s of both presets (human's cost), then the ns per removed
        position (`rm` of them a sample), the figure the 2x target compares."""
        row(name, f"{y[rate]:,.0f} samples/s", f"{h[rate]:,.0f} samples/s",
            f"{y[rate] / h[rate]:.2f} (cost)")
        yp, hp = per_pos(y, rate, rm), per_pos(h, rate, rm)
        row("  ns per removed position", f"{yp:.2f}", f"{hp:.2f}", f"{hp / yp:.2f}",
            f"<= 2x: {'met' if hp <= 2 * yp else '**not met**'}")

    row("edges", f"{y['edges']:,}", f"{h['edges']:,}", f"{h['edges'] / y['edges']:.2f}")
    row("samples", f"{y['build']['samples']:,}", f"{h['build']['samples']:,}")
    yb, hb = y["build"], h["build"]
    row("build (`pertload build` of the synth files)", f"{yb['build_seconds']:.1f} s",
        f"{hb['build_seconds']:.1f} s", f"{hb['build_seconds'] / yb['build_seconds']:.2f}",
        f"<= {TARGET_BUILD_S:.0f} s: {'met' if hb['build_seconds'] <= TARGET_BUILD_S else '**not met**'}")
    row("build peak memory", f"{yb['build_peak_rss_bytes'] / 2**20:,.0f} MiB",
        f"{hb['build_peak_rss_bytes'] / 2**20:,.0f} MiB",
        f"{hb['build_peak_rss_bytes'] / yb['build_peak_rss_bytes']:.2f}",
        f"<= 8 GiB: {'met' if hb['build_peak_rss_bytes'] <= TARGET_PEAK else '**not met**'}")
    for f, name in (("data.mdb", "database: graph part (data.mdb)"),):
        a, b = yb["files"].get(f, 0), hb["files"].get(f, 0)
        row(name, f"{a / 1e6:,.1f} MB", f"{b / 1e6:,.1f} MB", f"{b / a:.2f}" if a else "")
    a, b = sum(yb["files"].values()), sum(hb["files"].values())
    row("database: all files", f"{a / 1e6:,.1f} MB", f"{b / 1e6:,.1f} MB", f"{b / a:.2f}")
    row("removed positions a sample (stored samples)", f"{y['removed_per_sample']:,.0f}",
        f"{h['removed_per_sample']:,.0f}", f"{h['removed_per_sample'] / y['removed_per_sample']:.2f}")
    rate_rows("masks engine, one core", "engine_samples_per_s", "removed_per_sample")
    rate_rows("ring into Python, 2 worker threads", "ring_samples_per_s",
              "ring_removed_per_sample")
    row("serve start (Loader() to the first batch)", f"{y['ring_start_seconds']:.2f} s",
        f"{h['ring_start_seconds']:.2f} s",
        f"{h['ring_start_seconds'] / y['ring_start_seconds']:.2f}")
    return "\n".join(lines) + "\n"
