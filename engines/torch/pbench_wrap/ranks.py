"""What each rank's row in a wrapped job's result says beyond its samples/s
and stall (docs/wrap.md, "The straggler"): its loader's columns and what it
could deliver, and its stall per window of the measured time with the
windows it was the slowest rank in. The relay (pbench_wrap.relay's
ranks_rows) builds the rows; pbench's bench/analyze/straggler.c reads them
to name the rank that holds the others back."""


def window_stalls(taken, edges):
    """The % of each window (edges: its bounds) the loop waited in next(),
    its batches' waits cut at the windows' bounds."""
    out = []
    for lo, hi in zip(edges, edges[1:]):
        wait = sum(max(0, min(t, hi) - max(w, lo)) for w, t, _ in taken)
        out.append(round(100.0 * wait / (hi - lo), 1) if hi > lo else 0.0)
    return out


def slowest_windows(rows, count):
    """Marks in rows (each with its window_stall_pct and window_samples)
    how many of the count windows each was the slowest rank in: the one
    whose loop waited most on its loader, else the one that took fewest
    samples."""
    for r in rows:
        r["windows"], r["slowest_windows"] = count, 0
    for k in range(count if rows else 0):
        max(rows, key=lambda r: (r["window_stall_pct"][k],
                                 -r["window_samples"][k]))["slowest_windows"] += 1


def rank_loading(loader, built):
    """A rank's loader over the window, from the batches it built there
    (built: worker, samples, time building them, columns, records, the
    records' bytes): the samples/s its workers could deliver (each
    worker's samples over its time building them), its samples' CPU and
    each stage column's CPU and wall time, and the column (getitem or a
    transform) with the most CPU."""
    names = loader.columns or []
    per_worker = {}
    cpu = [0] * len(names)
    wall = [0] * len(names)
    timed = 0
    for worker, samples, busy, width, count, rows in built:
        done = per_worker.setdefault(worker, [0, 0])
        done[0] += samples
        done[1] += max(0, busy)
        if not width or width != len(names) or len(rows) != 8 * count * (1 + 3 * width):
            continue
        values = memoryview(rows).cast("Q")
        stride = 1 + 3 * width
        timed += count
        for r in range(count):
            for c in range(width):
                at = r * stride + 1 + 3 * c
                cpu[c] += values[at + 2]
                if values[at + 1] >= values[at] > 0:
                    wall[c] += values[at + 1] - values[at]
    out = {"loader_samples_per_s": round(sum(n * 1e9 / b for n, b in per_worker.values()
                                             if b > 0), 2) if per_worker else None,
           "workers_seen": len(per_worker)}
    if not timed:
        return out
    loading = [c for c, n in enumerate(names) if n != "worker_start"]
    out["timed_samples"] = timed
    out["cpu_ns_per_sample"] = round(sum(cpu[c] for c in loading) / timed)
    out["stages"] = [{"name": names[c], "cpu_ns_per_sample": round(cpu[c] / timed),
                      "wall_ns_per_sample": round(wall[c] / timed)} for c in loading]
    own = [c for c in loading if names[c] != "collate"]
    if own and max(cpu[c] for c in own) > 0:
        out["top_stage"] = names[max(own, key=lambda c: cpu[c])]
    return out


def ranks_rows(job):
    """Each rank's busiest DataLoader over the measured window: its
    samples/s, stall and step, as the point's figures are rank 0's; what
    its loader could deliver, its own stage columns and top stage, its
    workers' CPU; and per window of about a second, its stall, with how
    many windows it was the slowest rank in (bench/analyze/straggler.c
    reads them)."""
    start, end = job.window
    rows = []
    if end <= start:
        return rows
    span = (end - start) / 1e9
    count = max(1, min(30, int(span)))
    edges = [start + (end - start) * k // count for k in range(count + 1)]
    for pid, hello in job.pythons.items():
        rank = hello.get("rank")
        loaders = [l for l in job.loaders.values() if l.key[0] == pid]
        if rank is None or not loaders:
            continue
        loader = max(loaders, key=lambda l: l.batches)
        inside = [b for b in loader.taken if start <= b[0] and b[1] <= end]
        if not inside:
            continue
        wait = sum(t - w for w, t, _ in inside)
        row = {"rank": rank.get("rank"), "world": rank.get("size"),
               "host": hello.get("host") or job.relay.here,
               "local_rank": rank.get("local"), "pid": hello.get("real_pid", pid),
               "site": loader.site, "batches": len(inside),
               "samples": sum(n for _, _, n in inside),
               "samples_per_s": round(sum(n for _, _, n in inside) / span, 2),
               "stall_pct": round(100.0 * wait / (span * 1e9), 2),
               # the loop's time outside next() a batch: its step (and,
               # in a synchronous job, its wait for the other ranks)
               "step_ms": round((span * 1e9 - wait) / len(inside) / 1e6, 3)}
        # the measured loader's records were taken for its batch frames
        # (count_worker keeps them); another's wait in their queues
        row.update(rank_loading(loader, loader.built if loader.key == job.measured else
                                [(f[2], f[3], f[7] - f[6], f[4], f[5], rows)
                                 for queue in loader.queues.values() for f, rows in queue
                                 if f[6] and start <= f[7] <= end]))
        row["window_stall_pct"] = window_stalls(inside, edges)
        row["window_samples"] = [sum(n for _, t, n in inside if lo <= t < hi)
                                 for lo, hi in zip(edges, edges[1:])]
        rows.append(row)
    slowest_windows(rows, count)
    return sorted(rows, key=lambda r: r["rank"])

# -- the end --------------------------------------------------------------
