#!/usr/bin/python3
"""Writes the small ONNX fixtures of tests/onnx/data/ with the onnx package
(Debian's python3-onnx, run with /usr/bin/python3), independently of d5.

    /usr/bin/python3 tests/onnx/make_fixtures.py            # rewrite data/
    /usr/bin/python3 tests/onnx/make_fixtures.py --survey   # expected load counts

--survey classifies every model of libonnx-testdata by what d5 can represent
(tensor data types, tensor-typed inputs and outputs, attribute types, named
node outputs) and prints the counts that test_onnx_load.c expects.
"""
import glob
import os
import struct
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "data")
TESTDATA = "/usr/share/libonnx-testdata/data"
D5_TYPES = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26}
# STRINGS joined by commas; GRAPH becomes a subgraph; TYPE_PROTO a STRING.
D5_ATTRS = {1, 2, 3, 4, 5, 6, 7, 8, 13}


def write(path, message):
    path = os.path.join(DATA, path)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(message.SerializeToString())


def tensor(name, data_type, dims, **fields):
    t = TensorProto()
    t.name = name
    if data_type is not None:
        t.data_type = data_type
    t.dims.extend(dims)
    for key, values in fields.items():
        if key == "raw_data":
            t.raw_data = values
        else:
            getattr(t, key).extend(values)
    return t


def external(name, data_type, dims, **keys):
    t = tensor(name, data_type, dims)
    t.data_location = TensorProto.EXTERNAL
    for key, value in keys.items():
        entry = t.external_data.add()
        entry.key, entry.value = key, str(value)
    return t


def f16_bits(values):
    return [int(b) for b in np.array(values, dtype=np.float16).view(np.uint16)]


def tensors():
    """TensorProto files with values in the typed fields, bad ones, external data."""
    T = TensorProto
    good = {
        "typed_float": tensor("f", T.FLOAT, [2, 3], float_data=[1.5, -2, 3.25, 0, 1e-3, -7]),
        "typed_double": tensor("d", T.DOUBLE, [3], double_data=[1 / 3, -2.5, 1e300]),
        "typed_int8": tensor("i8", T.INT8, [4], int32_data=[-128, -1, 0, 127]),
        "typed_uint8": tensor("u8", T.UINT8, [3], int32_data=[0, 200, 255]),
        "typed_int16": tensor("i16", T.INT16, [3], int32_data=[-32768, 5, 32767]),
        "typed_int32": tensor("i32", T.INT32, [3], int32_data=[-2**31, 0, 2**31 - 1]),
        "typed_int64": tensor("i64", T.INT64, [3], int64_data=[-2**63, 1, 2**63 - 1]),
        "typed_bool": tensor("b", T.BOOL, [2, 2], int32_data=[1, 0, 0, 1]),
        "typed_float16": tensor("h", T.FLOAT16, [3], int32_data=f16_bits([1.0, -2.0, 0.5])),
        "typed_bfloat16": tensor("bf", T.BFLOAT16, [2], int32_data=[0x3F80, 0xC040]),
        "typed_uint16": tensor("u16", T.UINT16, [3], int32_data=[0, 40000, 65535]),
        "typed_uint32": tensor("u32", T.UINT32, [3], uint64_data=[0, 3000000000, 2**32 - 1]),
        "typed_uint64": tensor("u64", T.UINT64, [3], uint64_data=[0, 2**63 + 5, 2**64 - 1]),
        "typed_scalar": tensor("s", T.FLOAT, [], float_data=[42]),
        "typed_string": tensor("str", T.STRING, [2, 2],
                               string_data=[b"alpha", b"", "\u00e9t\u00e9".encode(), b"x y"]),
        "typed_empty": tensor("e", T.FLOAT, [0, 3]),
        "raw_float": numpy_helper.from_array(
            np.array([[0.25, -1], [3, 1e-7]], dtype=np.float32), "r"),
        "raw_int64": numpy_helper.from_array(np.array([5, -6, 2**40], dtype=np.int64), "r64"),
    }
    bad = {
        "bad_string": tensor("str", T.STRING, [2], string_data=[b"a\0b", b"c"]),
        "bad_string_raw": tensor("str", T.STRING, [1], raw_data=b"abc"),
        "bad_string_count": tensor("str", T.STRING, [3], string_data=[b"a", b"b"]),
        "bad_complex": tensor("c", T.COMPLEX64, [1], raw_data=b"\0" * 8),
        "bad_9dims": tensor("nine", T.FLOAT, [1] * 9, float_data=[1]),
        "bad_raw_size": tensor("raw", T.FLOAT, [2, 2], raw_data=b"\0" * 12),
        "bad_count": tensor("count", T.FLOAT, [5], float_data=[1, 2, 3, 4]),
        "bad_wrong_field": tensor("wrong", T.INT64, [2], float_data=[1, 2]),
        "bad_negative_dim": tensor("neg", T.FLOAT, [-1, 2], float_data=[1, 2]),
        "bad_no_type": tensor("untyped", None, [1], float_data=[1]),
        "bad_raw_size_int4": tensor("i4", 22, [5], raw_data=b"\x21\x8f"),
        "bad_range_int4": tensor("i4", 22, [3], int32_data=[0x21, 300]),
        "bad_range_uint8": tensor("u8", T.UINT8, [3], int32_data=[1, 300, 2]),
        "bad_range_float16": tensor("h", T.FLOAT16, [2], int32_data=[0x3C00, 70000]),
        "bad_range_uint32": tensor("u32", T.UINT32, [2], uint64_data=[7, 2**32]),
        "bad_uint64_field": tensor("u64", T.UINT64, [2], int64_data=[1, 2]),
        "bad_huge": tensor("huge", T.FLOAT, [2**40], float_data=[1]),
        "bad_overflow": tensor("overflow", T.FLOAT, [2**40, 2**40], float_data=[1]),
    }
    # The narrow types (ONNX 1.14 to 1.20; numbers, as Debian's onnx lacks
    # their names): 4-bit elements two a byte and 2-bit ones four a byte, the
    # first in the low bits; int32_data holds one packed byte each (one code
    # each for the 8-bit ones).
    narrow = {
        # int4 1, 2, -1, -8, 7
        "narrow_int4_raw": tensor("i4", 22, [5], raw_data=b"\x21\x8f\x07"),
        # uint2 0, 1, 2, 3, 2, 0
        "narrow_uint2_typed": tensor("u2", 25, [6], int32_data=[0xE4, 0x02]),
        # float4 e2m1 0.5, 6, -6
        "narrow_float4_raw": tensor("f4", 23, [3], raw_data=b"\x71\x0f"),
        # float8 e4m3fn 1, 448, -NaN; e5m2 -inf, 57344; e8m0 2^-127, 1, NaN
        "narrow_e4m3fn_typed": tensor("f8", 17, [3], int32_data=[0x38, 0x7E, 0xFF]),
        "narrow_e5m2_raw": tensor("f8", 19, [2], raw_data=b"\xfc\x7b"),
        "narrow_e8m0_raw": tensor("e8", 24, [3], raw_data=b"\x00\x7f\xff"),
    }
    for name, t in {**good, **bad, **narrow}.items():
        write(f"tensors/{name}.pb", t)

    # raw_data of every type, written by numpy_helper (numpy has no bfloat16:
    # its bit patterns go in by hand); the same values as test_onnx_tensor.c.
    raw = {
        "float32": np.array([1.5, -2, 3.25, 0, 1e-3, -7], dtype=np.float32),
        "float64": np.array([1 / 3, -2.5, 1e300]),
        "float16": np.array([0x3C00, 0xC000, 0x3800, 0x7BFF, 0x0001, 0xFC00],
                            dtype=np.uint16).view(np.float16),
        "int8": np.array([-128, -1, 0, 127], dtype=np.int8),
        "uint8": np.array([0, 200, 255], dtype=np.uint8),
        "int16": np.array([-32768, 5, 32767], dtype=np.int16),
        "int32": np.array([-2**31, 0, 2**31 - 1], dtype=np.int32),
        "int64": np.array([-2**63, 1, 2**63 - 1], dtype=np.int64),
        "bool": np.array([True, False, False, True]),
        "uint16": np.array([0, 40000, 65535], dtype=np.uint16),
        "uint32": np.array([0, 3000000000, 2**32 - 1], dtype=np.uint32),
        "uint64": np.array([0, 2**63 + 5, 2**64 - 1], dtype=np.uint64),
    }
    for name, values in raw.items():
        write(f"tensors/raw_all_{name}.pb", numpy_helper.from_array(values, "r_" + name))
    bf16 = struct.pack("<4H", 0x3F80, 0xC040, 0x7F7F, 0x0001)
    write("tensors/raw_all_bfloat16.pb", tensor("r_bfloat16", T.BFLOAT16, [4], raw_data=bf16))

    # weights.bin: 8 bytes of padding, 4 floats, 4 more bytes.
    floats = struct.pack("<4f", 1.0, -2.0, 0.5, 8.0)
    with open(os.path.join(DATA, "tensors", "weights.bin"), "wb") as f:
        f.write(b"PADDING!" + floats + b"TAIL")
    ext = {
        "ext_ok": external("x", T.FLOAT, [4], location="weights.bin", offset=8, length=16),
        "ext_escape": external("x", T.FLOAT, [4], location="../tensors/weights.bin"),
        "ext_absolute": external("x", T.FLOAT, [4], location="/etc/hostname"),
        "ext_missing": external("x", T.FLOAT, [4], location="missing.bin"),
        "ext_short": external("x", T.FLOAT, [4], location="weights.bin", offset=20),
        "ext_length": external("x", T.FLOAT, [4], location="weights.bin", length=12),
        "ext_link": external("x", T.FLOAT, [4], location="link.bin"),
        "ext_no_location": external("x", T.FLOAT, [4], offset=8),
    }
    for name, t in ext.items():
        write(f"tensors/{name}.pb", t)


def models():
    """Small models for the import, export and error tests."""
    T = TensorProto
    w = numpy_helper.from_array(np.arange(6, dtype=np.float32).reshape(2, 3), "w")
    attrs = [
        helper.make_attribute("i", -7),
        helper.make_attribute("f", 0.25),
        helper.make_attribute("s", "text"),
        helper.make_attribute("ints", [1, -2, 3]),
        helper.make_attribute("floats", [0.5, -1.5]),
        helper.make_attribute("t", numpy_helper.from_array(np.array([1, 2], dtype=np.int64))),
    ]
    empty = onnx.AttributeProto()
    empty.name, empty.type = "empty_ints", onnx.AttributeProto.INTS
    attrs.append(empty)
    custom = helper.make_node("AllAttrs", ["x", "w"], ["y"], name="all", domain="test.d5")
    custom.attribute.extend(attrs)
    graph = helper.make_graph(
        [custom,
         helper.make_node("Relu", ["y"], ["z"]),  # unnamed: d5 names it
         helper.make_node("Identity", ["z"], ["out"])],
        "attrs",
        [helper.make_tensor_value_info("x", T.FLOAT, ["N", 3])],
        [helper.make_tensor_value_info("out", T.FLOAT, ["N", None])],
        [w])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13),
                                                    helper.make_opsetid("test.d5", 1)])
    write("models/attrs.onnx", model)

    dup = helper.make_graph([helper.make_node("Add", ["x", "w"], ["y"])], "dup",
                            [helper.make_tensor_value_info("x", T.FLOAT, [2, 3])],
                            [helper.make_tensor_value_info("y", T.FLOAT, [2, 3])], [w, w])
    write("models/dup_init.onnx", helper.make_model(dup))

    nograph = onnx.ModelProto()
    nograph.ir_version = 8
    write("models/no_graph.onnx", nograph)

    strs = helper.make_node("Foo", ["x"], ["y"], names=["a", "b"])
    g = helper.make_graph([strs], "strs", [helper.make_tensor_value_info("x", T.FLOAT, [1])],
                          [helper.make_tensor_value_info("y", T.FLOAT, [1])])
    write("models/strings_attr.onnx", helper.make_model(g))

    seq = helper.make_graph(
        [helper.make_node("SequenceLength", ["s"], ["n"])], "seq",
        [helper.make_tensor_sequence_value_info("s", T.FLOAT, None)],
        [helper.make_tensor_value_info("n", T.INT64, [])])
    write("models/sequence_input.onnx", helper.make_model(seq))
    nested = helper.make_sequence_type_proto(
        helper.make_sequence_type_proto(helper.make_tensor_type_proto(T.FLOAT, None)))
    seq2 = helper.make_graph(
        [helper.make_node("SequenceLength", ["s"], ["n"])], "seq2",
        [helper.make_value_info("s", nested)],
        [helper.make_tensor_value_info("n", T.INT64, [])])
    write("models/nested_sequence_input.onnx", helper.make_model(seq2))

    # An initializer kept in weights.bin beside the model.
    wext = external("w", T.FLOAT, [4], location="weights.bin", offset=8, length=16)
    g = helper.make_graph([helper.make_node("Add", ["x", "w"], ["y"])], "external",
                          [helper.make_tensor_value_info("x", T.FLOAT, [4])],
                          [helper.make_tensor_value_info("y", T.FLOAT, [4])], [wext])
    write("models/external.onnx", helper.make_model(g))
    wesc = external("w", T.FLOAT, [4], location="../tensors/weights.bin", offset=8)
    g = helper.make_graph([helper.make_node("Add", ["x", "w"], ["y"])], "external",
                          [helper.make_tensor_value_info("x", T.FLOAT, [4])],
                          [helper.make_tensor_value_info("y", T.FLOAT, [4])], [wesc])
    write("models/external_escape.onnx", helper.make_model(g))
    with open(os.path.join(DATA, "models", "weights.bin"), "wb") as f:
        f.write(b"PADDING!" + struct.pack("<4f", 1.0, -2.0, 0.5, 8.0) + b"TAIL")


def value_type_ok(t):
    """A tensor of a d5 type, a sequence of one, or an optional of either."""
    kind = t.WhichOneof("value")
    if kind is None:
        return True
    if kind == "optional_type":
        return value_type_ok(t.optional_type.elem_type)
    if kind == "sequence_type":
        e = t.sequence_type.elem_type
        return e.WhichOneof("value") in (None, "tensor_type") and value_type_ok(e)
    if kind != "tensor_type":
        return False
    return t.tensor_type.elem_type in D5_TYPES or t.tensor_type.elem_type == 0


def graph_representable(g, top):
    if g.sparse_initializer:
        return "sparse initializers"
    for t in g.initializer:
        if t.data_type not in D5_TYPES:
            return "initializer type"
    names = {t.name for t in g.initializer}
    for v in list(g.input) + list(g.output):
        if v.name in names and v in g.input:
            continue
        if not value_type_ok(v.type):
            return "value type"
        if top and v.type.WhichOneof("value") == "tensor_type" and v.type.tensor_type.elem_type == 0:
            return "value type"
    for n in g.node:
        for a in n.attribute:
            if a.type not in D5_ATTRS:
                return "attribute type"
            if a.type == onnx.AttributeProto.GRAPH:
                why = graph_representable(a.g, False)
                if why:
                    return why
        # Omitted outputs at the end are dropped, one before a given one is named.
        outs = list(n.output)
        while outs and outs[-1] == "":
            outs.pop()
        if not outs:
            return "no outputs"
    return None


def representable(model):
    """Why d5 cannot represent a model, or None."""
    if model.functions:
        return "functions"
    return graph_representable(model.graph, True)


def survey():
    for folder in ("node", "simple", "pytorch-converted", "pytorch-operator"):
        files = sorted(glob.glob(f"{TESTDATA}/{folder}/*/model.onnx"))
        ok = sum(representable(onnx.load(f)) is None for f in files)
        print(f"{folder}: {len(files)} models, {ok} representable")


if __name__ == "__main__":
    if "--survey" in sys.argv:
        survey()
    else:
        tensors()
        models()
