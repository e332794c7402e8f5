#!/usr/bin/python3
"""Writes the seed corpora of the libFuzzer targets (scripts/fuzz.sh) into
tests/fuzz/corpus/<target>/: a few small valid inputs and a few slightly
broken ones each, independently of d5 (Debian's /usr/bin/python3 with
python3-onnx). The output is deterministic; rerun it after changing it:

    /usr/bin/python3 tests/fuzz/make_corpus.py

Files whose names start with "regress-" are inputs that once found a bug; this
script leaves them alone.
"""
import gzip
import os
import shutil
import struct

from onnx import TensorProto, helper

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "corpus")
TESTDATA = "/usr/share/libonnx-testdata/data/node"


def target(name):
    """The target's folder, emptied of generated seeds."""
    d = os.path.join(CORPUS, name)
    os.makedirs(d, exist_ok=True)
    for f in os.listdir(d):
        if not f.startswith("regress-"):
            os.remove(os.path.join(d, f))
    return d


def write(d, name, data):
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def gz(data):
    return gzip.compress(data, compresslevel=9, mtime=0)


# ---- fuzz_idx: IDX files (big-endian magic 0x000008NN, NN sizes, bytes) ----

def idx(dims, data, magic_type=0x08):
    head = struct.pack(">BBBB", 0, 0, magic_type, len(dims))
    return head + b"".join(struct.pack(">I", d) for d in dims) + bytes(data)


def make_idx():
    d = target("fuzz_idx")
    images = idx([2, 4, 4], range(32))
    labels = idx([5], [3, 1, 4, 1, 5])
    write(d, "images-3d.idx", images)
    write(d, "images-4d.idx", idx([2, 3, 2, 2], range(24)))
    write(d, "labels.idx", labels)
    write(d, "labels-empty.idx", idx([0], []))
    write(d, "images-3d.idx.gz", gz(images))
    write(d, "labels.idx.gz", gz(labels))
    write(d, "truncated.idx", images[:-1])
    write(d, "trailing.idx", labels + b"\x00")
    write(d, "bad-type.idx", idx([5], range(5), magic_type=0x09))
    write(d, "short-header.idx", images[:10])
    write(d, "huge.idx", idx([0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF], []))
    write(d, "truncated.idx.gz", gz(images)[:-6])


# ---- fuzz_cifar: records of 1 (CIFAR-10) or 2 (CIFAR-100) label bytes + 3072 pixels ----

def cifar_record(labels, seed):
    return bytes(labels) + bytes((seed * 31 + i * 7) % 256 for i in range(3072))


def make_cifar():
    d = target("fuzz_cifar")
    write(d, "cifar10-1.bin", cifar_record([3], 1))
    write(d, "cifar10-2.bin", cifar_record([9], 2) + cifar_record([0], 3))
    write(d, "cifar100-1.bin", cifar_record([5, 42], 4))
    write(d, "cifar100-2.bin", cifar_record([19, 99], 5) + cifar_record([0, 0], 6))
    write(d, "cifar10-bad-label.bin", cifar_record([10], 7))
    write(d, "cifar100-bad-coarse.bin", cifar_record([20, 1], 8))
    write(d, "partial.bin", cifar_record([1], 9)[:3000])


# ---- fuzz_tensor: TensorProto files ----

def make_tensor():
    d = target("fuzz_tensor")
    # Real ones from ONNX's node tests: float, float16, bfloat16, bool, int8,
    # int64, double and string (which d5 refuses) data.
    for test, name in [("test_abs", "input_0.pb"),
                       ("test_cast_FLOAT_to_FLOAT16", "output_0.pb"),
                       ("test_cast_FLOAT_to_BFLOAT16", "output_0.pb"),
                       ("test_not_2d", "input_0.pb"),
                       ("test_clip_default_int8_inbounds", "input_0.pb"),
                       ("test_argmax_default_axis_example", "output_0.pb"),
                       ("test_castlike_FLOAT_to_DOUBLE", "output_0.pb"),
                       ("test_cast_FLOAT_to_STRING", "output_0.pb")]:
        src = os.path.join(TESTDATA, test, "test_data_set_0", name)
        if os.path.exists(src):
            shutil.copyfile(src, os.path.join(d, "%s-%s" % (test[5:], name)))
    # Typed fields instead of raw_data, a scalar, an empty tensor.
    write(d, "typed-int32.pb", helper.make_tensor(
        "i", TensorProto.INT32, [2, 3], [1, -2, 3, -4, 5, -6]).SerializeToString())
    write(d, "typed-int64-scalar.pb",
          helper.make_tensor("s", TensorProto.INT64, [], [7]).SerializeToString())
    write(d, "empty.pb", helper.make_tensor("e", TensorProto.FLOAT, [0, 4], []).SerializeToString())
    # External data in the tensor's own folder: the fuzz input itself.
    ext = proto("x", TensorProto.UINT8, [4])
    ext.data_location = TensorProto.EXTERNAL
    for k, v in [("location", "input.pb"), ("offset", "0"), ("length", "4")]:
        e = ext.external_data.add()
        e.key, e.value = k, v
    write(d, "external-self.pb", ext.SerializeToString())
    # Broken: raw_data one byte short, a negative size, a wrong count, a cut.
    short = proto("r", TensorProto.FLOAT, [2])
    short.raw_data = b"\x00" * 7
    write(d, "raw-short.pb", short.SerializeToString())
    write(d, "negative-dim.pb", proto("n", TensorProto.FLOAT, [-1]).SerializeToString())
    count = proto("c", TensorProto.FLOAT, [3])
    count.float_data.extend([1.0, 2.0])
    write(d, "count-mismatch.pb", count.SerializeToString())
    write(d, "cut.pb", helper.make_tensor(
        "t", TensorProto.FLOAT, [3], [1.0, 2.0, 3.0]).SerializeToString()[:-3])


def proto(name, data_type, dims):
    """A TensorProto without values, which helper.make_tensor refuses."""
    t = TensorProto()
    t.name, t.data_type = name, data_type
    t.dims.extend(dims)
    return t


# ---- fuzz_sizes: byte 0 = operator (bits 0-1) and mode (bit 2: CSV), then the spec ----

GEMM, CONV, RELU, ADD, CSV = 0, 1, 2, 3, 4


def make_sizes():
    d = target("fuzz_sizes")
    seeds = {
        "gemm-inline": (GEMM, "M=64,N=32,K=16,a_t=N,b_t=T;M=8,N=8,K=8"),
        "conv-inline": (CONV, "W=16,H=16,C=8,N=2,K=16,S=3,R=3,pad_w=1,pad_h=1,"
                              "wstride=1,hstride=1"),
        "relu-inline": (RELU, "shape=2x3x4;shape=8"),
        "add-inline": (ADD, "shape=1024x1024"),
        "relu-scalar": (RELU, "shape="),
        "gemm-csv": (GEMM | CSV, "# DeepBench\nM,N,K,a_t,b_t\n1760,16,1760,N,N\n"
                                 "2048,32,2048,T,N\n"),
        "conv-csv": (CONV | CSV, "W,H,C,N,K,S,R,pad_w,pad_h,wstride,hstride\n"
                                 "7,7,832,16,256,1,1,0,0,1,1\r\n"),
        "relu-csv": (RELU | CSV, "shape\n2x3\n4x5x6\n"),
        "gemm-missing-value": (GEMM, "M=64,N=,K=1"),
        "conv-missing-keys": (CONV, "W=1"),
        "gemm-too-large": (GEMM, "M=99999999999999999999,N=1,K=1"),
        "relu-bad-shape": (RELU, "shape=2xx3"),
        "csv-field-count": (GEMM | CSV, "M,N,K\n1,2\n"),
        "csv-header-only": (ADD | CSV, "shape\n"),
        "case-typed": (RELU, "f32[2,8,16,16] i64[2]={24,-1} - bool[4]~[0,1]! | "
                             "kernel_shape=[3,3] alpha=0.5 mode=nearest eq=\"ij,jk->ik\" "
                             "acts=[Sigmoid,Tanh] f=[0.5,1.0]"),
        "case-attrs-only": (ADD, "| value_floats=[1.0,2.0,3.0];f32[] ~[1,2]"),
    }
    for name, (ctl, text) in seeds.items():
        write(d, name, bytes([ctl]) + text.encode())


# ---- fuzz_options: arguments separated by NUL bytes ----

def make_options():
    d = target("fuzz_options")
    seeds = {
        "positional": ["Gemm"],
        "every-kind": ["--threads", "8", "--max-time=2.5", "--verbose", "--json", "out.json",
                       "Relu"],
        "help": ["--help"],
        "int-range": ["--threads=99999", "X"],
        "unknown": ["--unknown", "X"],
        "many": ["a", "b", "--", "c"],
        "nan": ["--max-time", "nan", "X"],
        "empty-string": ["--json=", "X"],
        "flag-value": ["--verbose=1", "X"],
        "missing-value": ["X", "--threads"],
    }
    for name, args in seeds.items():
        write(d, name, b"\0".join(a.encode() for a in args))


if __name__ == "__main__":
    make_idx()
    make_cifar()
    make_tensor()
    make_sizes()
    make_options()
