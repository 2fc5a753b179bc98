"""What `tracec CMD --help` costs: wall time and peak memory of a fresh process per run, the
commands interleaved so that a change in the machine's load hits them alike.

    PYTHONPATH=$PWD python benchmarks/help_cost.py --runs 7 compose train

Prints one JSON line: per command the median, min and max seconds and peak RSS (MB), the ratio
of each command's median to the last command's (the reference), and the load average before and
after.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time


def one_run(argv: list[str]) -> tuple[float, float]:
    """``(seconds, peak RSS in MB)`` of one process running ``argv``."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(argv)} failed")
    return seconds, usage.ru_maxrss / 1024  # Linux: KiB


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("commands", nargs="+", help="tracec commands; the last is the reference")
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args()
    exe = shutil.which("tracec") or sys.exit("tracec is not on PATH")
    load_before = os.getloadavg()
    for cmd in args.commands:  # warm the file cache once, untimed
        one_run([exe, cmd, "--help"])
    samples: dict[str, list[tuple[float, float]]] = {c: [] for c in args.commands}
    for _ in range(args.runs):
        for cmd in args.commands:
            samples[cmd].append(one_run([exe, cmd, "--help"]))
    ref = statistics.median(s for s, _ in samples[args.commands[-1]])
    out = {"runs": args.runs, "load_before": [round(x, 2) for x in load_before],
           "load_after": [round(x, 2) for x in os.getloadavg()], "commands": {}}
    for cmd, rows in samples.items():
        secs = [s for s, _ in rows]
        out["commands"][cmd] = {
            "median_s": round(statistics.median(secs), 3), "min_s": round(min(secs), 3),
            "max_s": round(max(secs), 3), "peak_rss_mb": round(max(m for _, m in rows), 1),
            "ratio_to_reference": round(statistics.median(secs) / ref, 2)}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
