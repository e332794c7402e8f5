#!/usr/bin/python3
"""Writes tests/core/narrow_reference.h: ONNX's own conversions of the narrow
types, for the exhaustive tests of d5's (test_narrow.c). They come from the
pure-Python reference helpers of ONNX releases, read from a git clone of
onnx/onnx (bare or not) and run here, not from d5:

    /usr/bin/python3 tests/core/make_narrow_reference.py PATH/TO/onnx.git

- ONNX 1.18.0: float8 E4M3FN, E4M3FNUZ, E5M2, E5M2FNUZ both ways with and
  without saturation (onnx/helper.py, onnx/numpy_helper.py), float4 E2M1
  both ways and float to int4/uint4 (onnx/subbyte.py; numpy only);
- ONNX's main branch of 2026-08-22 (commit f7546912): float to float8 E8M0
  with each round_mode, saturated or not (onnx/numpy_helper.py's
  to_float8e8m0; numpy only). 1.20.0's tested the fraction with the mask
  0x4FFFFF, so that "up" missed fractions in bits 20 and 21 (0.625 gave
  2^-1); main tests 0x7FFFFF.
Only the named functions are taken from those files (their decorators
dropped), and run with numpy; nothing of ONNX is installed or imported.

Per type: the value of every code, and for a set of float32 inputs (every
value of the type, the midpoints between neighbours and the float32 values
next to them, values past the largest, tiny ones, zeros, infinities, NaN,
and seeded random ones) the code ONNX gives.
"""
import ast
import math
import os
import struct
import subprocess
import sys
import types

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "narrow_reference.h")
E8M0_COMMIT = "f7546912001bc31e92a238b17068a21b373d882e"


def source(repo, tag, path):
    return subprocess.run(["git", "-C", repo, "show", f"{tag}:{path}"], check=True,
                          capture_output=True, text=True).stdout


def functions(text, names, namespace):
    """Compiles the named top-level functions of a module's text into namespace."""
    tree = ast.parse(text)
    wanted = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in names]
    missing = set(names) - {n.name for n in wanted}
    if missing:
        raise SystemExit(f"not found: {sorted(missing)}")
    for n in wanted:
        n.decorator_list = []
        n.returns = None
        for a in n.args.args + n.args.kwonlyargs:
            a.annotation = None
    module = ast.Module(body=wanted, type_ignores=[])
    exec(compile(ast.fix_missing_locations(module), "<onnx>", "exec"), namespace)


def f32(x):
    with np.errstate(over="ignore"):
        return float(np.float32(x))


def f32_bits(x):
    return struct.unpack("<I", struct.pack("<f", x))[0]


def next32(x, up):
    return float(np.nextafter(np.float32(x), np.float32(np.inf if up else -np.inf)))


def inputs_for(values, rng):
    """Float32 inputs that probe a type whose finite values are `values`."""
    finite = sorted({v for v in values if math.isfinite(v)})
    xs = set()
    for v in finite:
        xs.add(v)
    for a, b in zip(finite, finite[1:]):
        m = f32((a + b) / 2)
        xs.update([m, next32(m, True), next32(m, False)])
    top = finite[-1]
    for k in (1.0001, 1.03, 1.07, 1.1, 1.5, 2, 1e3):
        xs.update([f32(top * k), f32(-top * k)])
    xs.update([0.0, -0.0, 1e-30, -1e-30, 1e30, -1e30, 3.4e38, -3.4e38, math.inf, -math.inf])
    xs.update(f32(x) for x in rng.uniform(-1, 1, 200) * top * 1.2)
    xs.update(f32(x) for x in np.exp(rng.uniform(-80, 80, 200)))
    out = sorted(xs, key=lambda v: (v, math.copysign(1, v)))
    out.append(math.nan)
    return out


def c_double(v):
    if math.isnan(v):
        return "NAN"
    if math.isinf(v):
        return "INFINITY" if v > 0 else "-INFINITY"
    return repr(float(v))


def array(lines, ctype, name, items):
    lines.append(f"static const {ctype} {name}[{len(items)}] = {{{', '.join(items)}}};")


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    repo = sys.argv[1]
    ns = {"np": np, "struct": struct, "math": math}
    functions(source(repo, "v1.18.0", "onnx/helper.py"),
              ["_float32_to_float8e4m3", "_float32_to_float8e5m2"], ns)
    functions(source(repo, "v1.18.0", "onnx/numpy_helper.py"),
              ["_float8e4m3_to_float32_scalar", "_float8e5m2_to_float32_scalar",
               "unpacked_float4e2m1_to_float32"], ns)
    sub = source(repo, "v1.18.0", "onnx/subbyte.py")
    ns.update(INT4_MIN=-8, INT4_MAX=7, UINT4_MIN=0, UINT4_MAX=15)
    functions(sub, ["_float32_to_4bit_unpacked", "_float32_to_float4e2m1_unpacked"], ns)
    ns["ml_dtypes"] = types.SimpleNamespace(float8_e8m0fnu=np.uint8)
    functions(source(repo, E8M0_COMMIT, "onnx/numpy_helper.py"), ["to_float8e8m0"], ns)

    f8 = {  # d5 name: (encode, decode)
        "e4m3fn": (lambda x, s: ns["_float32_to_float8e4m3"](x, fn=True, uz=False, saturate=s),
                   lambda c: ns["_float8e4m3_to_float32_scalar"](c, True, False)),
        "e4m3fnuz": (lambda x, s: ns["_float32_to_float8e4m3"](x, fn=True, uz=True, saturate=s),
                     lambda c: ns["_float8e4m3_to_float32_scalar"](c, True, True)),
        "e5m2": (lambda x, s: ns["_float32_to_float8e5m2"](x, fn=False, uz=False, saturate=s),
                 lambda c: ns["_float8e5m2_to_float32_scalar"](c, False, False)),
        "e5m2fnuz": (lambda x, s: ns["_float32_to_float8e5m2"](x, fn=True, uz=True, saturate=s),
                     lambda c: ns["_float8e5m2_to_float32_scalar"](c, True, True)),
    }
    rng = np.random.default_rng(26)
    lines = ["/* clang-format off */",
             "/* Written by make_narrow_reference.py from the reference helpers of ONNX 1.18.0",
             " * and of ONNX's main branch (E8M0); do not edit. */",
             "#ifndef D5_TEST_NARROW_REFERENCE_H", "#define D5_TEST_NARROW_REFERENCE_H", "",
             "#include <math.h>", "#include <stdint.h>", ""]
    for name, (enc, dec) in f8.items():
        values = [float(dec(c)) for c in range(256)]
        array(lines, "double", f"{name}_value", [c_double(v) for v in values])
        xs = inputs_for(values, rng)
        array(lines, "uint32_t", f"{name}_in", [hex(f32_bits(x)) for x in xs])
        for sat in (1, 0):
            array(lines, "uint8_t", f"{name}_sat{sat}", [str(int(enc(x, bool(sat)))) for x in xs])
    # float4: its 16 codes; encoding saturates (NaN -> 6)
    values = [float(v) for v in ns["unpacked_float4e2m1_to_float32"](np.arange(16, dtype=np.uint8))]
    array(lines, "double", "e2m1_value", [c_double(v) for v in values])
    xs = inputs_for(values, rng)
    codes = ns["_float32_to_float4e2m1_unpacked"](np.array(xs, dtype=np.float32))
    array(lines, "uint32_t", "e2m1_in", [hex(f32_bits(x)) for x in xs])
    array(lines, "uint8_t", "e2m1_code", [str(int(c)) for c in codes])
    # int4, uint4 from float32 (ONNX 1.18: clipped, then rounded half to even)
    xs = sorted({f32(x) for x in np.arange(-20, 20, 0.25)} | {f32(x) for x in rng.uniform(-30, 30, 100)})
    array(lines, "uint32_t", "int4_in", [hex(f32_bits(x)) for x in xs])
    for signed, name in ((True, "int4"), (False, "uint4")):
        v = ns["_float32_to_4bit_unpacked"](np.array(xs, dtype=np.float32), signed)
        array(lines, "int", f"{name}_clipped", [str(int(t)) for t in v])
    # e8m0 from float32, per round_mode and saturation (ONNX main)
    e8 = [0.0, -0.0, 1.0, -1.0, 0.5, 1.5, 0.75, 0.625, 1.25, 1.75, 3.0, 2.0 ** -127, 2.0 ** -149,
          1e-40, 2.0 ** 127, 1.5 * 2.0 ** 127, 3.4e38, math.inf, -math.inf, math.nan]
    e8 += [f32(x) for x in np.exp(rng.uniform(-100, 100, 300))]
    e8 += [f32(math.ldexp(1 + k / 8.0, e)) for k in range(8) for e in (-3, 0, 5)]
    array(lines, "uint32_t", "e8m0_in", [hex(f32_bits(x)) for x in e8])
    for mode in ("up", "down", "nearest"):
        for sat in (1, 0):
            v = ns["to_float8e8m0"](np.array(e8, dtype=np.float32), bool(sat), mode)
            array(lines, "uint8_t", f"e8m0_{mode}_sat{sat}", [str(int(t)) for t in v.view(np.uint8)])
    lines += ["", "#endif", ""]
    with open(OUT, "w") as f:
        f.write("\n".join(lines))
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
