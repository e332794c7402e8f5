#!/usr/bin/env python3
"""The reference for d5's region timer: a Python timer in the style of the
MAELSTROM benchmarking timer (time.perf_counter, a dict of open regions and a
dict of lists of durations), timed the way bench_timer.c times d5's.

Prints one sample a line: the mean cost in ns of one start+end pair over a
batch of pairs. Runs for --seconds after --warmup batches.
"""
import argparse
import time
from collections import defaultdict


class Timer:
    def __init__(self):
        self.open = {}
        self.elapsed = defaultdict(list)

    def start(self, key):
        if key in self.open:
            raise ValueError(f"timer key {key!r}: started again before its end")
        self.open[key] = time.perf_counter()

    def end(self, key):
        now = time.perf_counter()
        try:
            begin = self.open.pop(key)
        except KeyError:
            raise ValueError(f"timer key {key!r}: end without a start") from None
        self.elapsed[key].append(now - begin)

    def reset(self):
        self.elapsed.clear()


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--batch", type=int, default=1000)
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--warmup", type=int, default=3)
    args = ap.parse_args()
    t = Timer()
    clock = time.perf_counter_ns
    deadline = None
    batches = 0
    while True:
        t.reset()
        t0 = clock()
        for _ in range(args.batch):
            t.start("FORWARD")
            t.end("FORWARD")
        dt = clock() - t0
        batches += 1
        if batches <= args.warmup:
            if batches == args.warmup:
                deadline = time.monotonic() + args.seconds
            continue
        print(f"{dt / args.batch:.3f}", flush=False)
        if deadline is None:
            deadline = time.monotonic() + args.seconds
        if time.monotonic() >= deadline:
            break


if __name__ == "__main__":
    main()
