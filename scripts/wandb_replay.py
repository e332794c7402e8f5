#!/usr/bin/env python3
"""Replay a d5 timer history (JSONL) into Weights & Biases.

d5 writes the history with d5_report_jsonl() and as history.jsonl in every
`d5 bench` results folder. Each line is one JSON object:

  {"type": "run", "name", "context", "timer", "schema_version"}   first line
  {"type": "sample", "key", "clock", "step", "start_ns", "duration_ns", "timestamp_ms"}
  {"type": "summary", "key", "clock", "unit", "stats": {...}}

This script logs every sample as the metric "time/<key>" (CPU clock) or
"time_gpu/<key>" (CUDA events), in seconds, against its own step axis
"<metric>/step", and puts each key's statistics into the run summary
("<metric>/median_s", ".../ci_low_s", ...). The run's config holds the
context block (machine, d5 build).

Usage (needs the official SDK: pip install wandb; then wandb login):

  python3 scripts/wandb_replay.py d5-results/bench-.../history.jsonl \\
      --project my-benchmarks [--entity TEAM] [--name RUN] [--offline]
"""
import argparse
import json
import sys

PREFIX = {"cuda-event": "time_gpu"}


def metric_name(record):
    return f"{PREFIX.get(record['clock'], 'time')}/{record['key']}"


def read_history(path):
    with open(path, encoding="utf-8") as f:
        records = []
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError as e:
                raise SystemExit(f"{path}:{number}: not JSON: {e}")
    if not records or records[0].get("type") != "run":
        raise SystemExit(f"{path}: the first line must be the run record ({{\"type\": \"run\", ...}})")
    return records


def replay(records, wandb, project, entity=None, name=None, offline=False):
    head = records[0]
    run = wandb.init(project=project, entity=entity, name=name or head.get("name"),
                     config={"context": head.get("context"), "timer": head.get("timer")},
                     mode="offline" if offline else None)
    defined = set()
    logged = 0
    for r in records[1:]:
        if r.get("type") == "sample":
            metric = metric_name(r)
            if metric not in defined:
                wandb.define_metric(f"{metric}/step")
                wandb.define_metric(metric, step_metric=f"{metric}/step")
                defined.add(metric)
            run.log({metric: r["duration_ns"] * 1e-9, f"{metric}/step": r["step"]})
            logged += 1
        elif r.get("type") == "summary":
            metric = metric_name(r)
            for field in ("median", "ci_low", "ci_high", "mean", "stdev", "min", "max", "p95"):
                run.summary[f"{metric}/{field}_s"] = r["stats"][field] * 1e-9
            run.summary[f"{metric}/n"] = r["stats"]["n"]
    run.finish()
    return logged


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("history", help="a d5 JSONL history file")
    ap.add_argument("--project", required=True, help="W&B project")
    ap.add_argument("--entity", help="W&B entity (team or user)")
    ap.add_argument("--name", help="run name (default: the timer's name)")
    ap.add_argument("--offline", action="store_true", help="log offline; sync later with 'wandb sync'")
    args = ap.parse_args(argv)
    try:
        import wandb
    except ImportError:
        raise SystemExit("the Weights & Biases SDK is not installed: pip install wandb")
    records = read_history(args.history)
    n = replay(records, wandb, args.project, args.entity, args.name, args.offline)
    print(f"logged {n} samples from {args.history}")


if __name__ == "__main__":
    sys.exit(main())
