"""What the PyTorch sides of bench/training's step comparisons share: timing
single training steps after a warm-up, and the JSON line they print."""
import json
import time

import torch


def time_steps(step, warmup, steps):
    """Runs step() warmup times untimed, then steps times; the wall time of
    each timed step in nanoseconds."""
    for _ in range(warmup):
        step()
    samples = []
    for _ in range(steps):
        t0 = time.perf_counter_ns()
        step()
        samples.append(time.perf_counter_ns() - t0)
    return samples


def print_steps(samples, **fields):
    """One JSON line: torch's version, the given fields and step_ns."""
    print(json.dumps({"torch": torch.__version__, **fields, "step_ns": samples}))
