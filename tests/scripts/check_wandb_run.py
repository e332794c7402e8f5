#!/usr/bin/env python3
"""Reads a W&B offline run directory written by d5_runlog_write_wandb and
checks it against what was logged, without the wandb package.

usage: check_wandb_run.py RUN_DIR EXPECTED.json

RUN_DIR is offline-run-YYYYMMDD_HHMMSS-<id>/. EXPECTED.json holds what the test
put into the run log, as it went in:

  {"project", "name", "start_ms", "end_ms", "failed",
   "params": [[key, text], ...], "tags": [[key, text], ...],
   "metrics": [[key, value, step, timestamp_ms], ...] (in the order logged),
   "require_chunks": ["FIRST", "MIDDLE", "LAST", ...] (optional)}

The reader follows the format of wandb/sdk/internal/datastore.py and
core/pkg/leveldb/record.go in the wandb/wandb repository: a 7-byte header
(":W&B", magic 0xBEE1 little-endian, version 0), 32 KiB blocks counted from the
start of the file, chunks (CRC-32 of type byte and payload, uint16 length, type
FULL/FIRST/MIDDLE/LAST) that never cross a block, zero padding at a block's end.
The records are decoded with google.protobuf from a schema built here with
W&B's field numbers (wandb/proto/wandb_internal.proto), and what the run should
hold (config, history rows grouped by step, summary, exit code) is computed
here from the logged values. Exits 0 when everything matches, 1 otherwise.
"""
import json
import os
import re
import struct
import sys
import zlib

from google.protobuf import descriptor_pb2, descriptor_pool
try:
    from google.protobuf.message_factory import GetMessageClass
except ImportError:  # protobuf before 4.21.8
    GetMessageClass = None
    from google.protobuf import message_factory

BLOCK = 32768
HEADER = 7
CHUNK_NAMES = {1: "FULL", 2: "FIRST", 3: "MIDDLE", 4: "LAST"}


class Mismatch(Exception):
    pass


def expect(cond, what):
    if not cond:
        raise Mismatch(what)


# ---- CRC-32 (IEEE 802.3, reflected polynomial 0xEDB88320), table-driven ----

def _crc_table():
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ 0xEDB88320 if c & 1 else c >> 1
        table.append(c)
    return table


CRC_TABLE = _crc_table()


def crc32(data, crc=0):
    crc ^= 0xFFFFFFFF
    for b in data:
        crc = CRC_TABLE[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


# ---- The record file ----

def read_records(data):
    """Returns (payloads, chunk type names seen)."""
    expect(len(data) >= HEADER, f"file of {len(data)} bytes has no header")
    ident, magic, version = struct.unpack("<4sHB", data[:HEADER])
    expect(ident == b":W&B", f"header ident {ident!r}, expected b':W&B'")
    expect(magic == 0xBEE1, f"header magic {magic:#x}, expected 0xbee1")
    expect(version == 0, f"header version {version}, expected 0")
    pos, records, seen, partial = HEADER, [], set(), None
    while pos < len(data):
        left = BLOCK - pos % BLOCK
        if left < HEADER:
            pad = data[pos:pos + left]
            expect(pad == bytes(len(pad)), f"non-zero padding at offset {pos}")
            pos += left
            continue
        expect(pos + HEADER <= len(data), f"truncated chunk header at offset {pos}")
        crc, length, kind = struct.unpack("<IHB", data[pos:pos + HEADER])
        expect(kind in CHUNK_NAMES, f"chunk type {kind} at offset {pos}")
        expect(HEADER + length <= left, f"chunk at offset {pos} crosses its block")
        payload = data[pos + HEADER:pos + HEADER + length]
        expect(len(payload) == length, f"truncated chunk at offset {pos}")
        computed = crc32(payload, crc32(bytes([kind])))
        expect(crc == computed, f"CRC {crc:#010x} at offset {pos}, computed {computed:#010x}")
        seen.add(CHUNK_NAMES[kind])
        if kind == 1:
            expect(partial is None, f"FULL chunk inside a record at offset {pos}")
            records.append(payload)
        elif kind == 2:
            expect(partial is None, f"FIRST chunk inside a record at offset {pos}")
            partial = payload
        else:
            expect(partial is not None, f"{CHUNK_NAMES[kind]} chunk without FIRST at offset {pos}")
            partial += payload
            if kind == 4:
                records.append(partial)
                partial = None
        pos += HEADER + length
    expect(partial is None, "the file ends inside a record")
    return records, seen


# ---- The messages (field numbers of wandb/proto/wandb_internal.proto) ----

T = descriptor_pb2.FieldDescriptorProto
SCHEMA = {
    "Timestamp": [("seconds", 1, T.TYPE_INT64), ("nanos", 2, T.TYPE_INT32)],
    "Record": [("num", 1, T.TYPE_INT64), ("history", 2, "HistoryRecord", 0),
               ("summary", 3, "SummaryRecord", 0), ("config", 5, "ConfigRecord", 0),
               ("run", 17, "RunRecord", 0), ("exit", 18, "RunExitRecord", 0),
               ("final", 20, "FinalRecord", 0), ("header", 21, "HeaderRecord", 0),
               ("uuid", 19, T.TYPE_STRING)],
    "VersionInfo": [("producer", 1, T.TYPE_STRING), ("min_consumer", 2, T.TYPE_STRING)],
    "HeaderRecord": [("version_info", 1, "VersionInfo")],
    "FinalRecord": [],
    "RunRecord": [("run_id", 1, T.TYPE_STRING), ("entity", 2, T.TYPE_STRING),
                  ("project", 3, T.TYPE_STRING), ("config", 4, "ConfigRecord"),
                  ("summary", 5, "SummaryRecord"), ("display_name", 8, T.TYPE_STRING),
                  ("tags", 10, T.TYPE_STRING, "repeated"), ("host", 13, T.TYPE_STRING),
                  ("start_time", 17, "Timestamp"), ("runtime", 20, T.TYPE_INT32)],
    "RunExitRecord": [("exit_code", 1, T.TYPE_INT32), ("runtime", 2, T.TYPE_INT32)],
    "HistoryStep": [("num", 1, T.TYPE_INT64)],
    "HistoryRecord": [("item", 1, "HistoryItem", "repeated"), ("step", 2, "HistoryStep")],
    "ConfigRecord": [("update", 1, "ConfigItem", "repeated"),
                     ("remove", 2, "ConfigItem", "repeated")],
    "SummaryRecord": [("update", 1, "SummaryItem", "repeated"),
                      ("remove", 2, "SummaryItem", "repeated")],
}
for _item in ("HistoryItem", "ConfigItem", "SummaryItem"):
    SCHEMA[_item] = [("key", 1, T.TYPE_STRING), ("nested_key", 2, T.TYPE_STRING, "repeated"),
                     ("value_json", 16, T.TYPE_STRING)]
ONEOF = {"history", "summary", "config", "run", "exit", "final", "header"}


def message_classes():
    f = descriptor_pb2.FileDescriptorProto(name="wandb_check.proto", package="wandb_check",
                                           syntax="proto3")
    for name, fields in SCHEMA.items():
        m = f.message_type.add(name=name)
        if name == "Record":
            m.oneof_decl.add(name="record_type")
        for spec in fields:
            fname, number, ftype = spec[:3]
            repeated = "repeated" in spec[3:]
            fd = m.field.add(name=fname, number=number,
                             label=T.LABEL_REPEATED if repeated else T.LABEL_OPTIONAL)
            if isinstance(ftype, str):
                fd.type = T.TYPE_MESSAGE
                fd.type_name = f".wandb_check.{ftype}"
            else:
                fd.type = ftype
            if name == "Record" and fname in ONEOF:
                fd.oneof_index = 0
    pool = descriptor_pool.DescriptorPool()
    pool.Add(f)
    classes = {}
    for name in SCHEMA:
        d = pool.FindMessageTypeByName(f"wandb_check.{name}")
        classes[name] = GetMessageClass(d) if GetMessageClass else \
            message_factory.MessageFactory(pool).GetPrototype(d)
    return classes


# ---- What the run should hold, from what was logged ----

JSON_NUMBER = re.compile(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?\Z")


def config_value(text):
    if text in ("true", "false"):
        return text == "true"
    if JSON_NUMBER.match(text):
        v = json.loads(text)
        if not (isinstance(v, float) and v in (float("inf"), float("-inf"))):
            return v
    return text


def expected_config(exp):
    config = {k: config_value(v) for k, v in exp["params"]}
    if exp["tags"]:
        config["d5_tags"] = {k: v for k, v in exp["tags"]}
    return config


def expected_history(exp):
    rows = {}
    for key, value, step, ts in exp["metrics"]:
        row = rows.setdefault(step, {"values": {}, "ts": ts})
        row["values"][key] = value  # a key logged twice at one step: the last one
        row["ts"] = max(row["ts"], ts)
    out = []
    for step in sorted(rows):
        r = dict(rows[step]["values"])
        ts = rows[step]["ts"]
        r["_step"] = step
        r["_runtime"] = max(0.0, (ts - exp["start_ms"]) / 1000.0)
        r["_timestamp"] = ts / 1000.0
        out.append(r)
    return out


def expected_summary(exp, history):
    s = {}
    for key, value, _, _ in exp["metrics"]:
        s[key] = value
    if history:
        s["_step"] = history[-1]["_step"]
        s["_timestamp"] = history[-1]["_timestamp"]
    runtime = max(0, (exp["end_ms"] - exp["start_ms"]) // 1000)
    s["_runtime"] = runtime
    s["_wandb"] = {"runtime": runtime}
    return s


def same(got, want, where):
    """Equal keys and values, numbers exactly (bool is not a number here)."""
    expect(isinstance(got, dict) and set(got) == set(want),
           f"{where}: keys {sorted(got) if isinstance(got, dict) else got!r}, "
           f"expected {sorted(want)}")
    for k in want:
        if isinstance(want[k], dict):
            same(got[k], want[k], f"{where}.{k}")
            continue
        number = lambda v: isinstance(v, (int, float)) and not isinstance(v, bool)
        kinds_agree = type(got[k]) is type(want[k]) or (number(got[k]) and number(want[k]))
        expect(kinds_agree and got[k] == want[k], f"{where}.{k}: {got[k]!r}, expected {want[k]!r}")


def items_to_dict(items, where):
    d = {}
    for it in items:
        v = json.loads(it.value_json)
        if it.nested_key:
            expect(not it.key, f"{where}: item with both key and nested_key")
            node = d
            for k in it.nested_key[:-1]:
                node = node.setdefault(k, {})
            node[it.nested_key[-1]] = v
        else:
            expect(it.key and it.key not in d, f"{where}: empty or repeated key {it.key!r}")
            d[it.key] = v
    return d


def check(run_dir, exp):
    name = os.path.basename(os.path.normpath(run_dir))
    m = re.fullmatch(r"offline-run-(\d{8}_\d{6})-([a-z0-9]{8})", name)
    expect(m, f"run directory name {name!r}")
    run_id = m.group(2)
    wandb_files = [f for f in os.listdir(run_dir) if f.endswith(".wandb")]
    expect(wandb_files == [f"run-{run_id}.wandb"], f".wandb files in the run: {wandb_files}")
    expect(not [f for f in os.listdir(run_dir) if f == "wandb-metadata.json"],
           "wandb-metadata.json beside the record file makes `wandb sync` skip the run")
    with open(os.path.join(run_dir, wandb_files[0]), "rb") as f:
        data = f.read()
    payloads, chunks = read_records(data)
    for c in exp.get("require_chunks", []):
        expect(c in chunks, f"no {c} chunk in the file (seen: {sorted(chunks)})")

    cls = message_classes()
    records = []
    for i, p in enumerate(payloads):
        r = cls["Record"]()
        r.ParseFromString(p)
        expect(r.num == i + 1, f"record {i}: num {r.num}, expected {i + 1}")
        records.append(r)
    kinds = [r.WhichOneof("record_type") for r in records]
    history = expected_history(exp)
    want = ["header", "run"] + ["history"] * len(history) + ["summary", "exit", "final"]
    expect(kinds == want, f"record kinds {kinds}, expected {want}")

    expect(records[0].header.version_info.producer.startswith("d5 "),
           f"producer {records[0].header.version_info.producer!r}")
    run = records[1].run
    expect(run.run_id == run_id, f"run_id {run.run_id!r}, directory says {run_id!r}")
    expect(run.project == exp["project"], f"project {run.project!r}")
    expect(run.display_name == exp["name"], f"display_name {run.display_name!r}")
    start = run.start_time.seconds * 1000 + run.start_time.nanos // 1000000
    expect(start == exp["start_ms"] and run.start_time.nanos % 1000000 == 0,
           f"start_time {run.start_time}, expected {exp['start_ms']} ms")
    same(items_to_dict(run.config.update, "config"), expected_config(exp), "config")

    for i, row in enumerate(history):
        h = records[2 + i].history
        expect(h.step.num == row["_step"], f"history {i}: step {h.step.num}, expected {row['_step']}")
        same(items_to_dict(h.item, f"history[{i}]"), row, f"history[{i}]")
        expect([it.key for it in h.item][-3:] == ["_step", "_runtime", "_timestamp"],
               f"history {i}: item order {[it.key for it in h.item]}")

    summary = expected_summary(exp, history)
    same(items_to_dict(records[-3].summary.update, "summary"), summary, "summary")
    ex = records[-2].exit
    expect(ex.exit_code == (1 if exp["failed"] else 0), f"exit code {ex.exit_code}")
    expect(ex.runtime == summary["_runtime"], f"exit runtime {ex.runtime}")

    with open(os.path.join(run_dir, "files", "wandb-summary.json"), encoding="utf-8") as f:
        same(json.load(f), summary, "files/wandb-summary.json")
    config_yaml = os.path.join(run_dir, "files", "config.yaml")
    try:
        import yaml
    except ImportError:
        yaml = None
    if yaml:
        with open(config_yaml, encoding="utf-8") as f:
            doc = yaml.safe_load(f) or {}
        same({k: v["value"] for k, v in doc.items()}, expected_config(exp), "files/config.yaml")
    return len(records), sorted(chunks), len(data)


def main(argv):
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    # The CRC implementation against the standard check value and zlib's.
    assert crc32(b"123456789") == 0xCBF43926
    assert crc32(b"\x01payload") == zlib.crc32(b"\x01payload")
    with open(argv[2], encoding="utf-8") as f:
        exp = json.load(f)
    try:
        n, chunks, size = check(argv[1], exp)
    except Mismatch as e:
        print(f"check_wandb_run: {argv[1]}: {e}", file=sys.stderr)
        return 1
    print(f"check_wandb_run: {n} records, {size} bytes, chunks {','.join(chunks)}: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
