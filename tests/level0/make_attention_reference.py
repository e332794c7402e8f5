#!/usr/bin/python3
"""Writes tests/level0/attention_reference.h: outputs of ONNX Attention
(opset 23) computed with PyTorch (Debian's python3-torch, run with
/usr/bin/python3) in float64 from the operator page's equations, independently
of d5, for the tests of the Attention operator.

    /usr/bin/python3 tests/level0/make_attention_reference.py

Per query head h (key and value head h // (q_heads // kv_heads)):
scores = scale * Q K^T, softcap * tanh(scores / softcap) when softcap > 0,
plus the bias (a float mask, or 0 / -inf from a bool mask; -inf past the
mask's last dimension; -inf above the diagonal shifted by the past length
when causal), softmax over the keys (a row masked everywhere gives zeros),
then the product with V. 3-d inputs are [B, S, heads * size].
"""
import math
import os

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "attention_reference.h")


def case(name, rank=4, B=1, Hq=2, Hkv=2, Sq=5, Skv=5, D=4, Dv=4, past=0, mask=None,
         mshape=None, causal=0, scale=0.0, softcap=0.0, qk_mode=0, nout=1, masked_row=False):
    return dict(name=name, rank=rank, B=B, Hq=Hq, Hkv=Hkv, Sq=Sq, Skv=Skv, D=D, Dv=Dv, past=past,
                mask=mask, mshape=mshape, causal=causal, scale=scale, softcap=softcap,
                qk_mode=qk_mode, nout=nout, masked_row=masked_row)


CASES = [
    case("mha4d"),
    case("gqa3d_float_mask", rank=3, B=2, Hq=4, Hkv=2, Sq=3, Skv=6, D=4, Dv=3, mask="float",
         mshape=[2, 1, 3, 6]),
    case("causal_bool_softcap_scale", Sq=6, Skv=6, D=8, Dv=5, mask="bool", mshape=[6, 6],
         causal=1, scale=0.3, softcap=1.5),
    case("past_causal_present", B=2, Hq=2, Hkv=1, Sq=2, Skv=2, past=3, causal=1, nout=3),
    case("qk_after_softmax", Sq=4, Skv=7, mask="float", mshape=[1, 4, 7], qk_mode=3, nout=4),
    case("qk_with_bias", rank=3, Hq=2, Hkv=2, Sq=3, Skv=4, D=2, Dv=2, mask="float",
         mshape=[3, 4], qk_mode=2, nout=4, softcap=0.7),
    case("short_bool_mask_masked_row", Sq=4, Skv=6, mask="bool", mshape=[4, 4],
         masked_row=True),
    case("mqa_causal_cross", rank=3, B=1, Hq=3, Hkv=1, Sq=3, Skv=5, D=2, Dv=4, causal=1),
]


def to_heads(x, heads):
    """[B, S, heads * size] -> [B, heads, S, size]"""
    b, s, w = x.shape
    return x.reshape(b, s, heads, w // heads).transpose(1, 2)


def attention(c, q, k, v, mask, pk, pv):
    if c["rank"] == 3:
        q, k, v = to_heads(q, c["Hq"]), to_heads(k, c["Hkv"]), to_heads(v, c["Hkv"])
    if pk is not None:
        k = torch.cat([pk, k], dim=2)
        v = torch.cat([pv, v], dim=2)
    present_k, present_v = k, v
    group = c["Hq"] // c["Hkv"]
    k = k.repeat_interleave(group, dim=1)
    v = v.repeat_interleave(group, dim=1)
    scale = c["scale"] if c["scale"] else 1.0 / math.sqrt(q.shape[-1])
    s = scale * (q @ k.transpose(-1, -2))
    if c["softcap"] > 0:
        s = c["softcap"] * torch.tanh(s / c["softcap"])
    sq, t = s.shape[-2], s.shape[-1]
    bias = torch.zeros(sq, t, dtype=torch.float64)
    if mask is not None:
        if mask.dtype == torch.bool:
            m = torch.zeros(mask.shape, dtype=torch.float64).masked_fill(~mask, -math.inf)
        else:
            m = mask
        pad = t - m.shape[-1]
        if pad > 0:
            m = torch.cat([m, torch.full(m.shape[:-1] + (pad,), -math.inf, dtype=torch.float64)],
                          dim=-1)
        bias = bias + m
    if c["causal"]:
        i = torch.arange(sq).reshape(sq, 1)
        j = torch.arange(t).reshape(1, t)
        bias = bias + torch.zeros(sq, t, dtype=torch.float64).masked_fill(j > i + c["past"],
                                                                          -math.inf)
    sb = s + bias
    dead = torch.isneginf(bias.max(dim=-1, keepdim=True).values)
    p = torch.softmax(sb, dim=-1)
    p = torch.where(dead, torch.zeros_like(p), p)
    y = p @ v
    if c["rank"] == 3:
        y = y.transpose(1, 2).reshape(y.shape[0], sq, -1)
    qk = {0: s, 1: s, 2: sb, 3: p}[c["qk_mode"]]
    return y, present_k, present_v, qk


def values(t):
    return ", ".join(repr(float(x)) if math.isfinite(float(x)) else ("-INFINITY" if float(x) < 0 else "INFINITY")
                     for x in t.reshape(-1).tolist())


def main():
    g = torch.Generator().manual_seed(23)
    lines = ["/* clang-format off */",
             "/* Written by make_attention_reference.py with PyTorch %s; do not edit. */" %
             torch.__version__,
             "#ifndef D5_TEST_ATTENTION_REFERENCE_H", "#define D5_TEST_ATTENTION_REFERENCE_H", "",
             "#include <math.h>", "#include <stddef.h>", "#include <stdint.h>", "",
             "typedef struct attention_case {",
             "    const char *name;",
             "    int32_t rank, mask_ndim, nout;",
             "    int64_t q[4], k[4], v[4], mask[4], past_k[4], past_v[4];",
             "    int mask_bool, causal;",
             "    double scale, softcap;",
             "    int64_t q_heads, kv_heads, qk_mode;",
             "    const double *Q, *K, *V, *M, *PK, *PV, *Y, *PRK, *PRV, *QK;",
             "} attention_case;", ""]
    rows = []
    for c in CASES:
        B, Hq, Hkv, Sq, Skv, D, Dv = (c[x] for x in ("B", "Hq", "Hkv", "Sq", "Skv", "D", "Dv"))
        if c["rank"] == 4:
            qs, ks, vs = [B, Hq, Sq, D], [B, Hkv, Skv, D], [B, Hkv, Skv, Dv]
        else:
            qs, ks, vs = [B, Sq, Hq * D], [B, Skv, Hkv * D], [B, Skv, Hkv * Dv]
        rand = lambda shape: torch.rand(shape, generator=g, dtype=torch.float64) * 2 - 1
        q, k, v = rand(qs), rand(ks), rand(vs)
        mask = None
        if c["mask"] == "float":
            mask = rand(c["mshape"])
        elif c["mask"] == "bool":
            mask = torch.rand(c["mshape"], generator=g) < 0.7
            if c["causal"]:
                mask[..., 0] = True
            if c["masked_row"]:
                mask[..., 1, :] = False
        pk = rand([B, Hkv, c["past"], D]) if c["past"] else None
        pv = rand([B, Hkv, c["past"], Dv]) if c["past"] else None
        y, prk, prv, qk = attention(c, q, k, v, mask, pk, pv)
        n = c["name"]
        arrays = {"Q": q, "K": k, "V": v, "Y": y}
        if mask is not None:
            arrays["M"] = mask.double()
        if pk is not None:
            arrays["PK"], arrays["PV"] = pk, pv
        if c["nout"] >= 3:
            arrays["PRK"], arrays["PRV"] = prk, prv
        if c["nout"] >= 4:
            arrays["QK"] = qk
        for key, t in arrays.items():
            lines.append("static const double att_%s_%s[%d] = {%s};" % (n, key, t.numel(), values(t)))
        dims = lambda s: "{%s}" % ", ".join(str(x) for x in (s or [0]))
        ref = lambda key: ("att_%s_%s" % (n, key)) if key in arrays else "NULL"
        rows.append(
            "    {\"%s\", %d, %d, %d, %s, %s, %s, %s, %s, %s, %d, %d, %r, %r, %d, %d, %d,\n"
            "     %s, %s, %s, %s, %s, %s, %s, %s, %s, %s}," %
            (n, c["rank"], len(c["mshape"]) if c["mshape"] else 0, c["nout"], dims(qs), dims(ks),
             dims(vs), dims(c["mshape"]), dims([B, Hkv, c["past"], D] if c["past"] else None),
             dims([B, Hkv, c["past"], Dv] if c["past"] else None), c["mask"] == "bool",
             c["causal"], c["scale"], c["softcap"], Hq, Hkv, c["qk_mode"], ref("Q"), ref("K"),
             ref("V"), ref("M"), ref("PK"), ref("PV"), ref("Y"), ref("PRK"), ref("PRV"), ref("QK")))
    lines += ["", "static const attention_case attention_cases[] = {"] + rows + ["};", "",
                                                                                "#endif", ""]
    with open(OUT, "w") as f:
        f.write("\n".join(lines))


if __name__ == "__main__":
    main()
