#!/usr/bin/env python3
"""Runs `d5 bench --quick`, then replays its history.jsonl through
scripts/wandb_replay.py against a stand-in `wandb` module that records every
call, and checks what reached it.

usage: test_wandb_replay.py D5_BINARY REPLAY_SCRIPT
"""
import json
import os
import subprocess
import sys
import tempfile
import textwrap

d5, script = sys.argv[1], sys.argv[2]
with tempfile.TemporaryDirectory() as tmp:
    out = os.path.join(tmp, "bench")
    subprocess.run([d5, "bench", "--quick", "--out", out], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    history = os.path.join(out, "history.jsonl")
    samples = [json.loads(l) for l in open(history) if '"type":"sample"' in l]
    assert samples, "history.jsonl has no samples"

    fake = os.path.join(tmp, "fake")
    os.mkdir(fake)
    log = os.path.join(tmp, "calls.json")
    with open(os.path.join(fake, "wandb.py"), "w") as f:
        f.write(textwrap.dedent(f"""
            import json
            calls = {{"init": None, "define": [], "log": [], "summary": {{}}, "finished": False}}
            class _Run:
                summary = calls["summary"]
                def log(self, data):
                    calls["log"].append(data)
                def finish(self):
                    calls["finished"] = True
                    json.dump(calls, open({log!r}, "w"))
            def init(**kw):
                calls["init"] = kw
                return _Run()
            def define_metric(name, step_metric=None):
                calls["define"].append([name, step_metric])
        """))
    env = dict(os.environ, PYTHONPATH=fake)
    res = subprocess.run([sys.executable, script, history, "--project", "d5-test", "--offline"],
                         env=env, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert f"logged {len(samples)} samples" in res.stdout, res.stdout
    calls = json.load(open(log))
    assert calls["finished"]
    assert calls["init"]["project"] == "d5-test" and calls["init"]["mode"] == "offline"
    assert calls["init"]["name"] == "d5 bench"
    assert "d5" in calls["init"]["config"]["context"]
    assert len(calls["log"]) == len(samples)
    first = samples[0]
    metric = "time/" + first["key"]
    assert [metric, metric + "/step"] in calls["define"]
    assert abs(calls["log"][0][metric] - first["duration_ns"] * 1e-9) < 1e-12
    assert calls["log"][0][metric + "/step"] == first["step"]
    assert metric + "/median_s" in calls["summary"]

    # A file that is not a history is refused with the file named.
    bad = os.path.join(tmp, "bad.jsonl")
    open(bad, "w").write('{"type": "sample"}\n')
    res = subprocess.run([sys.executable, script, bad, "--project", "p"], env=env,
                         capture_output=True, text=True)
    assert res.returncode != 0 and "bad.jsonl" in res.stderr, res.stderr
print("1 passed, 0 failed")
