#!/usr/bin/python3
"""Writes the quantised-model fixtures of tests/onnx/data/quant/ with the onnx
package and numpy (Debian's python3-onnx and python3-numpy, run with
/usr/bin/python3), independently of d5:

    /usr/bin/python3 tests/onnx/make_quant_fixtures.py          # rewrite data/quant/
    /usr/bin/python3 tests/onnx/make_quant_fixtures.py --print  # the unit tests' values

Each fixture is a folder in the layout of ONNX's backend tests (model.onnx,
test_data_set_0/input_K.pb and output_K.pb), so that `d5 onnx-test` and
d5_onnx_test_run run it:

  qdq  QDQ form: float Conv and Relu between QuantizeLinear/DequantizeLinear
       pairs (activations per tensor, uint8; weights per output channel,
       int8), and a per-axis int8 QuantizeLinear along axis -1.
  qop  QOperator form: QuantizeLinear, QLinearConv (groups, asymmetric pads,
       strides, dilations, int32 bias, per-channel weights), QLinearMatMul
       (4-d a broadcast against 2-d b, per-column b), DequantizeLinear;
       DynamicQuantizeLinear feeding MatMulInteger (per-column b zero point);
       ConvInteger (auto_pad SAME_UPPER, per-channel w zero point).

The expected outputs come from the numpy functions below, which follow the
ONNX specification: round half to even (np.rint), saturation, quotients and
requantisation multipliers in float32, integer sums exact. Before writing,
they are checked against the outputs of ONNX's own node tests in
libonnx-testdata (qlinearconv, qlinearmatmul, dynamicquantizelinear,
quantizelinear, dequantizelinear, matmulinteger, convinteger).
"""
import glob
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "data", "quant")
TESTDATA = "/usr/share/libonnx-testdata/data/node"

# ---- numpy reference -------------------------------------------------------------------------


def qrange(dtype):
    return (0, 255) if np.dtype(dtype) == np.uint8 else (-128, 127)


def per_axis(p, ndim, axis):
    """A scale or zero point shaped to broadcast along `axis` of an ndim tensor."""
    p = np.asarray(p)
    if p.size == 1:
        return p.reshape(())
    shape = [1] * ndim
    shape[axis] = p.size
    return p.reshape(shape)


def quantize(x, scale, zp, axis=1):
    zp = np.asarray(zp)
    s = per_axis(np.asarray(scale, np.float32), x.ndim, axis)
    q = np.rint(x.astype(np.float32) / s)  # float32 quotient, ties to even
    lo, hi = qrange(zp.dtype)
    z = per_axis(zp, x.ndim, axis).astype(np.float64)
    return np.clip(q.astype(np.float64) + z, lo, hi).astype(zp.dtype)


def dequantize(x, scale, zp, axis=1):
    s = per_axis(np.asarray(scale, np.float32), x.ndim, axis)
    z = per_axis(np.asarray(zp), x.ndim, axis).astype(np.int64)
    return (x.astype(np.int64) - z).astype(np.float32) * s


def dynamic_quantize(x):
    x = x.astype(np.float32)
    hi = np.float32(max(0.0, float(np.max(x))))
    lo = np.float32(min(0.0, float(np.min(x))))
    scale = np.float32(np.float32(1.0) if hi == lo else hi - lo) / np.float32(255)
    zp = np.rint(np.clip(np.float32(0) - lo / scale, 0, 255))
    y = np.clip(np.rint(x / scale).astype(np.float64) + zp, 0, 255).astype(np.uint8)
    return y, np.array(scale, np.float32), np.array(zp, np.uint8)


def conv_int(x, w, group=1, pads=(0, 0, 0, 0), strides=(1, 1), dilations=(1, 1)):
    """Exact 2-d convolution of int64 x [N, C, H, W] and w [M, C/g, kh, kw];
    x must already have its zero point subtracted (padding is 0)."""
    n, c, h, wd = x.shape
    m, cg, kh, kw = w.shape
    xp = np.zeros((n, c, h + pads[0] + pads[2], wd + pads[1] + pads[3]), np.int64)
    xp[:, :, pads[0]:pads[0] + h, pads[1]:pads[1] + wd] = x
    dh, dw = (kh - 1) * dilations[0] + 1, (kw - 1) * dilations[1] + 1
    oh = (xp.shape[2] - dh) // strides[0] + 1
    ow = (xp.shape[3] - dw) // strides[1] + 1
    y = np.zeros((n, m, oh, ow), np.int64)
    mg = m // group
    for o in range(m):
        g = o // mg
        for i in range(oh):
            for j in range(ow):
                r0, c0 = i * strides[0], j * strides[1]
                patch = xp[:, g * cg:(g + 1) * cg, r0:r0 + dh:dilations[0], c0:c0 + dw:dilations[1]]
                y[:, o, i, j] = (patch * w[o]).sum(axis=(1, 2, 3))
    return y


def same_upper_pads(size, k, stride, dilation=1):
    out = -(-size // stride)
    total = max(0, (out - 1) * stride + (k - 1) * dilation + 1 - size)
    return total // 2, total - total // 2


def requantize(acc, mult, yzp):
    lo, hi = qrange(np.asarray(yzp).dtype)
    y = np.rint(acc.astype(np.float64) * mult.astype(np.float64)) + float(yzp)
    return np.clip(y, lo, hi).astype(np.asarray(yzp).dtype)


def qlinearconv(x, xs, xzp, w, ws, wzp, ys, yzp, bias=None, **conv):
    m = w.shape[0]
    wz = np.broadcast_to(np.asarray(wzp).astype(np.int64).reshape(-1), (m,))
    acc = conv_int(x.astype(np.int64) - int(xzp), w.astype(np.int64) - wz[:, None, None, None],
                   **conv)
    if bias is not None:
        acc = acc + bias.astype(np.int64)[None, :, None, None]
    wsv = np.broadcast_to(np.asarray(ws, np.float32).reshape(-1), (m,))
    mult = (np.float32(xs) * wsv) / np.float32(ys)  # float32, as the operator forms it
    return requantize(acc, mult[None, :, None, None], yzp)


def convinteger(x, w, xzp=0, wzp=0, **conv):
    m = w.shape[0]
    wz = np.broadcast_to(np.asarray(wzp).astype(np.int64).reshape(-1), (m,))
    return conv_int(x.astype(np.int64) - int(xzp), w.astype(np.int64) - wz[:, None, None, None],
                    **conv).astype(np.int32)


def row_param(p, a):
    """a's per-tensor or per-row parameter shaped [..., M, 1]."""
    p = np.asarray(p)
    return p.reshape(()) if p.size == 1 else (p.reshape(-1, 1) if p.ndim == 1 else p)


def col_param(p):
    p = np.asarray(p)
    return p.reshape(()) if p.size == 1 else p


def matmulinteger(a, b, azp=0, bzp=0):
    return np.matmul(a.astype(np.int64) - row_param(azp, a).astype(np.int64),
                     b.astype(np.int64) - col_param(bzp).astype(np.int64)).astype(np.int32)


def qlinearmatmul(a, a_s, azp, b, b_s, bzp, ys, yzp):
    acc = np.matmul(a.astype(np.int64) - row_param(azp, a).astype(np.int64),
                    b.astype(np.int64) - col_param(bzp).astype(np.int64))
    mult = (row_param(np.asarray(a_s, np.float32), a) * col_param(np.asarray(b_s, np.float32)))
    mult = mult.astype(np.float32) / np.float32(ys)
    return requantize(acc, mult, yzp)


# ---- checks against ONNX's node tests ----------------------------------------------------------


def load_case(name):
    folder = os.path.join(TESTDATA, name)
    model = onnx.load(os.path.join(folder, "model.onnx"))
    def read(kind):
        out = []
        for path in sorted(glob.glob(os.path.join(folder, "test_data_set_0", kind + "_*.pb"))):
            t = TensorProto()
            with open(path, "rb") as f:
                t.ParseFromString(f.read())
            out.append(numpy_helper.to_array(t))
        return out
    return model.graph.node[-1], read("input"), read("output")


def check_against_onnx():
    if not os.path.isdir(TESTDATA):
        print("libonnx-testdata not found: the numpy reference is not cross-checked")
        return
    def same(name, got, want):
        for g, w in zip(got, want):
            if g.dtype != w.dtype or g.shape != w.shape or not np.array_equal(g, w):
                sys.exit(f"numpy reference differs from ONNX's {name}: {g} vs {w}")
    _, i, o = load_case("test_qlinearconv")
    same("test_qlinearconv", [qlinearconv(*i)], o)
    for case in ["test_qlinearmatmul_2D", "test_qlinearmatmul_3D"]:
        _, i, o = load_case(case)
        same(case, [qlinearmatmul(*i)], o)
    for case in ["test_dynamicquantizelinear", "test_dynamicquantizelinear_max_adjusted",
                 "test_dynamicquantizelinear_min_adjusted"]:
        _, i, o = load_case(case)
        same(case, list(dynamic_quantize(*i)), o)
    for case in ["test_quantizelinear", "test_quantizelinear_axis"]:
        _, i, o = load_case(case)
        same(case, [quantize(*i)], o)
    for case in ["test_dequantizelinear", "test_dequantizelinear_axis"]:
        _, i, o = load_case(case)
        same(case, [dequantize(*i)], o)
    _, i, o = load_case("test_matmulinteger")
    same("test_matmulinteger", [matmulinteger(*i)], o)
    _, i, o = load_case("test_convinteger_with_padding")
    same("test_convinteger_with_padding", [convinteger(*i, pads=(1, 1, 1, 1))], o)


# ---- fixtures ----------------------------------------------------------------------------------


def init(name, array):
    return numpy_helper.from_array(np.asarray(array), name)


def save(folder, graph, inputs, outputs, opset=13):
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              producer_name="d5 tests/onnx/make_quant_fixtures.py")
    model.ir_version = 7
    onnx.checker.check_model(model, full_check=True)
    path = os.path.join(DATA, folder)
    os.makedirs(os.path.join(path, "test_data_set_0"), exist_ok=True)
    onnx.save(model, os.path.join(path, "model.onnx"))
    for kind, values in (("input", inputs), ("output", outputs)):
        for k, (name, array) in enumerate(values):
            t = numpy_helper.from_array(np.asarray(array), name)
            with open(os.path.join(path, "test_data_set_0", f"{kind}_{k}.pb"), "wb") as f:
                f.write(t.SerializeToString())


def qdq(rng):
    T = TensorProto
    x = rng.uniform(-8, 8, (1, 4, 5, 5)).astype(np.float32)
    xs, xzp = np.float32(1 / 16), np.uint8(128)
    wq = rng.integers(-127, 128, (6, 2, 3, 3)).astype(np.int8)
    ws = (2.0 ** -rng.integers(5, 8, 6)).astype(np.float32)  # powers of two: sums exact
    wzp = np.zeros(6, np.int8)
    bias = (rng.integers(-32, 33, 6) / 16).astype(np.float32)
    ys, yzp = np.float32(1 / 8), np.uint8(0)
    axs = np.array([0.5, 0.25, 1, 2, 0.125], np.float32)
    axzp = np.array([-3, 0, 5, 127, -128], np.int8)
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "x_scale", "x_zp"], ["xq"]),
        helper.make_node("DequantizeLinear", ["xq", "x_scale", "x_zp"], ["xf"]),
        helper.make_node("DequantizeLinear", ["wq", "w_scale", "w_zp"], ["wf"], axis=0),
        helper.make_node("Conv", ["xf", "wf", "bias"], ["c"], group=2, pads=[1, 1, 1, 1],
                         strides=[2, 2]),
        helper.make_node("Relu", ["c"], ["r"]),
        helper.make_node("QuantizeLinear", ["r", "y_scale", "y_zp"], ["rq"]),
        helper.make_node("DequantizeLinear", ["rq", "y_scale", "y_zp"], ["y"]),
        helper.make_node("QuantizeLinear", ["x", "ax_scale", "ax_zp"], ["xa"], axis=-1),
    ]
    inits = [init("x_scale", xs), init("x_zp", xzp), init("wq", wq), init("w_scale", ws),
             init("w_zp", wzp), init("bias", bias), init("y_scale", ys), init("y_zp", yzp),
             init("ax_scale", axs), init("ax_zp", axzp)]
    graph = helper.make_graph(nodes, "qdq", [helper.make_tensor_value_info("x", T.FLOAT, x.shape)],
                              [helper.make_tensor_value_info("y", T.FLOAT, [1, 6, 3, 3]),
                               helper.make_tensor_value_info("xa", T.INT8, x.shape)], inits)
    # Expected: dequantised values are multiples of powers of two, so the
    # float Conv is exact in float32 and float64 alike.
    xf = dequantize(quantize(x, xs, xzp), xs, xzp).astype(np.float64)
    wf = dequantize(wq, ws, wzp, axis=0).astype(np.float64)
    c = np.zeros((1, 6, 3, 3))
    xp = np.pad(xf, ((0, 0), (0, 0), (1, 1), (1, 1)))
    for o in range(6):
        g = o // 3
        for i in range(3):
            for j in range(3):
                c[0, o, i, j] = (xp[0, 2 * g:2 * g + 2, 2 * i:2 * i + 3, 2 * j:2 * j + 3] *
                                 wf[o]).sum() + bias[o]
    r = np.maximum(c, 0).astype(np.float32)
    y = dequantize(quantize(r, ys, yzp), ys, yzp)
    xa = quantize(x, axs, axzp, axis=3)
    save("qdq", graph, [("x", x)], [("y", y), ("xa", xa)])


def qop(rng):
    T = TensorProto
    x = rng.uniform(-6, 6, (2, 4, 6, 6)).astype(np.float32)
    x2 = rng.uniform(-3, 5, (3, 5)).astype(np.float32)
    xs, xzp = np.float32(0.05), np.uint8(120)
    w = rng.integers(-128, 128, (6, 2, 3, 3)).astype(np.int8)
    ws = rng.uniform(0.002, 0.02, 6).astype(np.float32)
    wzp = np.array([0, 1, -1, 2, 0, -2], np.int8)
    bias = rng.integers(-2000, 2000, 6).astype(np.int32)
    ys, yzp = np.float32(0.1), np.uint8(100)
    conv = dict(group=2, pads=(1, 0, 2, 1), strides=(2, 1), dilations=(1, 2))
    b = rng.integers(-128, 128, (3, 3)).astype(np.int8)  # QLinearConv's output width is 3
    bs = np.array([0.01, 0.02, 0.005], np.float32)
    bzp = np.array([0, -5, 3], np.int8)
    zs, zzp = np.float32(0.5), np.int8(-10)
    b2 = rng.integers(-128, 128, (5, 4)).astype(np.int8)
    b2zp = np.array([1, -1, 0, 7], np.int8)
    w2 = rng.integers(0, 256, (3, 4, 2, 2)).astype(np.uint8)
    w2zp = np.array([128, 0, 255], np.uint8)
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "x_scale", "x_zp"], ["xq"]),
        helper.make_node("QLinearConv", ["xq", "x_scale", "x_zp", "w", "w_scale", "w_zp",
                                         "c_scale", "c_zp", "bias"], ["cq"],
                         group=2, pads=[1, 0, 2, 1], strides=[2, 1], dilations=[1, 2]),
        helper.make_node("QLinearMatMul", ["cq", "c_scale", "c_zp", "b", "b_scale", "b_zp",
                                           "z_scale", "z_zp"], ["zq"]),
        helper.make_node("DequantizeLinear", ["zq", "z_scale", "z_zp"], ["y"]),
        helper.make_node("DynamicQuantizeLinear", ["x2"], ["q2", "s2", "zp2"]),
        helper.make_node("MatMulInteger", ["q2", "b2", "zp2", "b2_zp"], ["mmi"]),
        helper.make_node("ConvInteger", ["xq", "w2", "x_zp", "w2_zp"], ["ci"],
                         auto_pad="SAME_UPPER", strides=[2, 2]),
    ]
    inits = [init("x_scale", xs), init("x_zp", xzp), init("w", w), init("w_scale", ws),
             init("w_zp", wzp), init("c_scale", ys), init("c_zp", yzp), init("bias", bias),
             init("b", b), init("b_scale", bs), init("b_zp", bzp), init("z_scale", zs),
             init("z_zp", zzp), init("b2", b2), init("b2_zp", b2zp), init("w2", w2),
             init("w2_zp", w2zp)]
    graph = helper.make_graph(
        nodes, "qop",
        [helper.make_tensor_value_info("x", T.FLOAT, x.shape),
         helper.make_tensor_value_info("x2", T.FLOAT, x2.shape)],
        [helper.make_tensor_value_info("y", T.FLOAT, [2, 6, 4, 3]),
         helper.make_tensor_value_info("mmi", T.INT32, [3, 4]),
         helper.make_tensor_value_info("ci", T.INT32, [2, 3, 3, 3]),
         helper.make_tensor_value_info("s2", T.FLOAT, []),
         helper.make_tensor_value_info("zp2", T.UINT8, [])], inits)
    xq = quantize(x, xs, xzp)
    cq = qlinearconv(xq, xs, xzp, w, ws, wzp, ys, yzp, bias, **conv)
    assert cq.shape == (2, 6, 4, 3), cq.shape
    zq = qlinearmatmul(cq, ys, yzp, b, bs, bzp, zs, zzp)
    y = dequantize(zq, zs, zzp)
    q2, s2, zp2 = dynamic_quantize(x2)
    mmi = matmulinteger(q2, b2, zp2, b2zp)
    ph, pw = same_upper_pads(6, 2, 2), same_upper_pads(6, 2, 2)
    ci = convinteger(xq, w2, xzp, w2zp, pads=(ph[0], pw[0], ph[1], pw[1]), strides=(2, 2))
    save("qop", graph, [("x", x), ("x2", x2)],
         [("y", y), ("mmi", mmi), ("ci", ci), ("s2", s2), ("zp2", zp2)])


def unit_values():
    """Prints the expected values of tests/level0/test_ref_quant.c."""
    def show(name, a):
        a = np.asarray(a)
        print(f"{name} {a.dtype} {list(a.shape)}: {', '.join(str(v) for v in a.ravel().tolist())}")
    ramp = lambda shape, lo, mod: ((np.arange(np.prod(shape)) * 7) % mod + lo).reshape(shape)
    # QLinearConv: 1x4x5x5 uint8 x, 4x2x2x3 int8 w, group 2, pads, strides, dilations, bias.
    x = ramp((1, 4, 5, 5), 0, 256).astype(np.uint8)
    w = ramp((4, 2, 2, 3), -60, 121).astype(np.int8)
    show("qlinearconv", qlinearconv(x, 0.02, 7, w, np.array([0.01, 0.02, 0.03, 0.04], np.float32),
                                    np.array([0, 1, -2, 3], np.int8), 0.5, np.int8(-3),
                                    np.array([100, -200, 300, -400], np.int32), group=2,
                                    pads=(1, 0, 0, 2), strides=(2, 1), dilations=(1, 2)))
    show("convinteger", convinteger(x[:, :2], w[:3, :, :, :2].astype(np.int8), 3,
                                    np.array([1, -1, 2], np.int8), pads=(0, 1, 1, 0),
                                    strides=(1, 2)))
    a = ramp((2, 3, 4), 0, 256).astype(np.uint8)
    b = ramp((4, 5), -100, 200).astype(np.int8)
    show("matmulinteger", matmulinteger(a, b, np.array([[[1], [2], [3]], [[4], [5], [6]]], np.uint8),
                                        np.array([1, -1, 0, 2, -2], np.int8)))
    show("qlinearmatmul", qlinearmatmul(a, np.array([0.1, 0.2, 0.3], np.float32).reshape(3, 1),
                                        np.array([1, 2, 3], np.uint8).reshape(3, 1), b,
                                        np.array([0.01, 0.02, 0.03, 0.04, 0.05], np.float32),
                                        np.array([1, -1, 0, 2, -2], np.int8), np.float32(0.7),
                                        np.int8(5)))


def main():
    check_against_onnx()
    if "--print" in sys.argv:
        unit_values()
        return
    rng = np.random.default_rng(16)
    qdq(rng)
    qop(rng)


if __name__ == "__main__":
    main()
