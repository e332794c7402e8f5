#!/usr/bin/python3
"""Writes tests/level0/rnn_reference.h: outputs and input gradients of ONNX
RNN, GRU and LSTM computed with PyTorch (Debian's python3-torch, run with
/usr/bin/python3), independently of d5, for the tests of the recurrent
operators.

    /usr/bin/python3 tests/level0/make_rnn_reference.py

Two sources:
- PyTorch's own torch.nn.RNN, GRU and LSTM for what they share with ONNX.
  Their gate orders differ (LSTM: i f g o against i o f c; GRU: r z n against
  z r h) and their GRU is ONNX's GRU with linear_before_reset = 1. Sequence
  lengths go through pack_padded_sequence; ONNX's direction "reverse" is the
  forward pass on each sequence reversed within its length.
- The equations of the ONNX operator pages, written out below with torch
  operations, for what torch.nn lacks: peepholes, clip, input_forget, the GRU
  without linear_before_reset, other activations with their alpha and beta,
  and sequences of length 0.
The loss is sum(wY * Y) + sum(wYh * Y_h) (+ sum(wYc * Y_c)), in float64; its
gradients come from autograd.
"""
import os

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "rnn_reference.h")

# ONNX gate k is PyTorch's block ORDER[op][k].
ORDER = {"RNN": [0], "GRU": [1, 0, 2], "LSTM": [0, 3, 1, 2]}
GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}


def case(name, op, direction="forward", layout=0, T=3, N=2, I=2, H=3, activations=None,
         alpha=(), beta=(), clip=0.0, lbr=0, input_forget=0, with_b=True, with_init=True,
         with_p=False, lengths=None, manual=False):
    return dict(name=name, op=op, direction=direction, layout=layout, T=T, N=N, I=I, H=H,
                activations=activations, alpha=list(alpha), beta=list(beta), clip=clip, lbr=lbr,
                input_forget=input_forget, with_b=with_b, with_init=with_init, with_p=with_p,
                lengths=lengths, manual=manual)


CASES = [
    # torch.nn
    case("rnn_tanh", "RNN", T=4, N=3, I=2, H=3),
    case("rnn_relu_bidi_layout1", "RNN", "bidirectional", 1, 3, 2, 3, 4, "Relu", with_init=False),
    case("rnn_reverse_lengths", "RNN", "reverse", 0, 5, 3, 2, 3, lengths=[5, 2, 3]),
    case("gru_lbr", "GRU", T=4, N=2, I=3, H=3, lbr=1),
    case("gru_lbr_bidi_lengths", "GRU", "bidirectional", 0, 4, 3, 2, 3, lbr=1, lengths=[4, 1, 3]),
    case("gru_lbr_reverse_layout1", "GRU", "reverse", 1, 3, 2, 2, 4, lbr=1, with_b=False),
    case("lstm", "LSTM", T=4, N=2, I=3, H=3),
    case("lstm_lengths", "LSTM", T=5, N=3, I=2, H=3, lengths=[3, 5, 1]),
    case("lstm_bidi_layout1", "LSTM", "bidirectional", 1, 3, 2, 3, 2, with_b=False,
         lengths=[3, 2]),
    case("lstm_reverse", "LSTM", "reverse", 0, 4, 2, 2, 3, lengths=[4, 3]),
    # the ONNX equations
    case("lstm_peephole_clip_forget", "LSTM", "bidirectional", 0, 3, 3, 2, 3, clip=0.7,
         input_forget=1, with_p=True, lengths=[3, 1, 2], manual=True),
    case("lstm_activations_zero_length", "LSTM", "forward", 1, 3, 3, 3, 2,
         "HardSigmoid,ScaledTanh,Softsign", alpha=[0.3, 0.9], beta=[0.4, 1.1], with_p=True,
         lengths=[2, 0, 3], manual=True),
    case("gru_activations_clip", "GRU", "bidirectional", 0, 3, 2, 2, 3,
         "Sigmoid,Tanh,HardSigmoid,Affine", alpha=[0.25, 0.6], beta=[0.45, -0.2], clip=1.5,
         manual=True),
    case("gru_reverse_lengths", "GRU", "reverse", 1, 4, 2, 3, 2, lengths=[4, 2], manual=True),
    case("rnn_leaky_elu", "RNN", "bidirectional", 0, 3, 2, 2, 3, "LeakyRelu,Elu",
         alpha=[0.1, 0.7], lengths=[2, 3], manual=True),
    case("rnn_softplus_clip", "RNN", "reverse", 1, 3, 2, 3, 2, "Softplus", clip=0.8,
         manual=True),
]

DEFAULTS = {"RNN": ["Tanh"], "GRU": ["Sigmoid", "Tanh"], "LSTM": ["Sigmoid", "Tanh", "Tanh"]}
# (takes alpha, takes beta, default alpha, default beta), as the ONNX operators of these names.
FNS = {"Relu": (0, 0, 0, 0), "Tanh": (0, 0, 0, 0), "Sigmoid": (0, 0, 0, 0),
       "Affine": (1, 1, 1.0, 0.0), "LeakyRelu": (1, 0, 0.01, 0), "ThresholdedRelu": (1, 0, 1.0, 0),
       "ScaledTanh": (1, 1, 1.0, 1.0), "HardSigmoid": (1, 1, 0.2, 0.5), "Elu": (1, 0, 1.0, 0),
       "Softsign": (0, 0, 0, 0), "Softplus": (0, 0, 0, 0)}


def activation(name, a, b):
    f = {
        "Relu": lambda x: torch.relu(x),
        "Tanh": lambda x: torch.tanh(x),
        "Sigmoid": lambda x: torch.sigmoid(x),
        "Affine": lambda x: a * x + b,
        "LeakyRelu": lambda x: torch.where(x >= 0, x, a * x),
        "ThresholdedRelu": lambda x: torch.where(x >= a, x, torch.zeros_like(x)),
        "ScaledTanh": lambda x: a * torch.tanh(b * x),
        "HardSigmoid": lambda x: torch.clamp(a * x + b, 0, 1),
        "Elu": lambda x: torch.where(x >= 0, x, a * (torch.exp(x) - 1)),
        "Softsign": lambda x: x / (1 + x.abs()),
        "Softplus": lambda x: torch.nn.functional.softplus(x),
    }
    return f[name]


def activations(c, D):
    """The functions of each direction, alpha and beta consumed in order."""
    names = c["activations"].split(",") if c["activations"] else DEFAULTS[c["op"]] * D
    if len(names) == len(DEFAULTS[c["op"]]) and D == 2:
        names = names * 2
    alphas, betas = list(c["alpha"]), list(c["beta"])
    fns = []
    for n in names:
        ua, ub, da, db = FNS[n]
        a = alphas.pop(0) if ua and alphas else da
        b = betas.pop(0) if ub and betas else db
        fns.append(activation(n, a, b))
    k = len(DEFAULTS[c["op"]])
    return [fns[d * k:(d + 1) * k] for d in range(D)]


def manual(c, X, W, R, B, h0, c0, P, lens, D):
    """The ONNX equations, one row and one step at a time."""
    op, H, T, N = c["op"], c["H"], c["T"], c["N"]
    G = GATES[op]
    acts = activations(c, D)
    clip = (lambda v: torch.clamp(v, -c["clip"], c["clip"])) if c["clip"] else (lambda v: v)
    zero = torch.zeros(H, dtype=torch.float64)
    Y = [[[zero for _ in range(N)] for _ in range(D)] for _ in range(T)]
    Yh = [[None] * N for _ in range(D)]
    Yc = [[None] * N for _ in range(D)]
    for d in range(D):
        f = acts[d][0]
        g = acts[d][1] if G > 1 else None
        hfn = acts[d][2] if G == 4 else None
        Wd, Rd = W[d], R[d]
        Wb = B[d, :G * H] if B is not None else torch.zeros(G * H, dtype=torch.float64)
        Rb = B[d, G * H:] if B is not None else torch.zeros(G * H, dtype=torch.float64)
        blk = lambda v, k: v[k * H:(k + 1) * H]
        for n in range(N):
            h = h0[d, n] if h0 is not None else zero
            cs = c0[d, n] if c0 is not None else zero
            L = lens[n]
            rev = c["direction"] == "reverse" or d == 1
            steps = reversed(range(L)) if rev else range(L)
            for t in steps:
                x = X[t, n]
                if op == "RNN":
                    h = f(clip(Wd @ x + Rd @ h + Wb + Rb))
                elif op == "GRU":
                    z = f(clip(blk(Wd, 0) @ x + blk(Rd, 0) @ h + blk(Wb, 0) + blk(Rb, 0)))
                    r = f(clip(blk(Wd, 1) @ x + blk(Rd, 1) @ h + blk(Wb, 1) + blk(Rb, 1)))
                    if c["lbr"]:
                        hh = g(clip(blk(Wd, 2) @ x + r * (blk(Rd, 2) @ h + blk(Rb, 2)) + blk(Wb, 2)))
                    else:
                        hh = g(clip(blk(Wd, 2) @ x + blk(Rd, 2) @ (r * h) + blk(Rb, 2) + blk(Wb, 2)))
                    h = (1 - z) * hh + z * h
                else:
                    p = P[d] if P is not None else torch.zeros(3 * H, dtype=torch.float64)
                    pre = lambda k: blk(Wd, k) @ x + blk(Rd, k) @ h + blk(Wb, k) + blk(Rb, k)
                    i = f(clip(pre(0) + blk(p, 0) * cs))
                    fg = 1 - i if c["input_forget"] else f(clip(pre(2) + blk(p, 2) * cs))
                    cc = g(clip(pre(3)))
                    cs = fg * cs + i * cc
                    o = f(clip(pre(1) + blk(p, 1) * cs))
                    h = o * hfn(cs)
                Y[t][d][n] = h
            Yh[d][n] = h
            Yc[d][n] = cs
    Y = torch.stack([torch.stack([torch.stack(Y[t][d]) for d in range(D)]) for t in range(T)])
    Yh = torch.stack([torch.stack(Yh[d]) for d in range(D)])
    Yc = torch.stack([torch.stack(Yc[d]) for d in range(D)]) if op == "LSTM" else None
    return Y, Yh, Yc


def permute(t, order, H):
    """Rows of a [G*H, ...] tensor from PyTorch's gate order to ONNX's."""
    return torch.cat([t[k * H:(k + 1) * H] for k in order], 0)


def reverse_within(x, lengths):
    """x [T, N, ...] with each column's first lengths[n] steps reversed."""
    y = x.clone()
    for n, L in enumerate(lengths):
        y[:L, n] = x[:L, n].flip(0)
    return y


def torch_nn(c, X, W, R, B, h0, c0, lens, D):
    """torch.nn's module of the operator, direction by direction."""
    op, H, T, N = c["op"], c["H"], c["T"], c["N"]
    G = GATES[op]
    inv = [ORDER[op].index(k) for k in range(G)]  # ONNX -> PyTorch block order
    ys, hs, cs = [], [], []
    for d in range(D):
        kw = dict(input_size=c["I"], hidden_size=H, bias=c["with_b"], dtype=torch.float64)
        if op == "RNN":
            act = "relu" if c["activations"] == "Relu" else "tanh"
            m = torch.nn.RNN(nonlinearity=act, **kw)
        else:
            m = torch.nn.GRU(**kw) if op == "GRU" else torch.nn.LSTM(**kw)
        # The module's parameters are functions of the ONNX tensors, so that
        # autograd carries their gradients back to W, R and B.
        params = [("weight_ih_l0", permute(W[d], inv, H)), ("weight_hh_l0", permute(R[d], inv, H))]
        if c["with_b"]:
            params += [("bias_ih_l0", permute(B[d, :G * H], inv, H)),
                       ("bias_hh_l0", permute(B[d, G * H:], inv, H))]
        for pname, value in params:
            delattr(m, pname)
            setattr(m, pname, value)
        m._flat_weights = [getattr(m, wn) for wn in m._flat_weights_names]
        rev = c["direction"] == "reverse" or d == 1
        x = reverse_within(X, lens) if rev else X
        packed = torch.nn.utils.rnn.pack_padded_sequence(x, torch.tensor(lens),
                                                         enforce_sorted=False)
        h = h0[d:d + 1] if h0 is not None else torch.zeros(1, N, H, dtype=torch.float64)
        if op == "LSTM":
            cz = c0[d:d + 1] if c0 is not None else torch.zeros(1, N, H, dtype=torch.float64)
            state = (h, cz)
        else:
            state = h
        y, st = m(packed, state)
        y, _ = torch.nn.utils.rnn.pad_packed_sequence(y, total_length=T)
        ys.append(reverse_within(y, lens) if rev else y)
        if op == "LSTM":
            hs.append(st[0][0])
            cs.append(st[1][0])
        else:
            hs.append(st[0])
    Yc = torch.stack(cs, 0) if op == "LSTM" else None
    return torch.stack(ys, 1), torch.stack(hs, 0), Yc


def run(c, gen):
    op, T, N, I, H = c["op"], c["T"], c["N"], c["I"], c["H"]
    D = 2 if c["direction"] == "bidirectional" else 1
    G = GATES[op]
    rnd = lambda *shape: (torch.rand(*shape, generator=gen, dtype=torch.float64) * 2 - 1)
    X = rnd(T, N, I).requires_grad_()  # [T, N, I], layout 0
    W = rnd(D, G * H, I).requires_grad_()
    R = rnd(D, G * H, H).requires_grad_()
    B = rnd(D, 2 * G * H).requires_grad_() if c["with_b"] else None
    h0 = rnd(D, N, H).requires_grad_() if c["with_init"] else None
    c0 = rnd(D, N, H).requires_grad_() if c["with_init"] and op == "LSTM" else None
    P = rnd(D, 3 * H).requires_grad_() if c["with_p"] else None
    lens = c["lengths"] if c["lengths"] else [T] * N
    if c["manual"]:
        Y, Yh, Yc = manual(c, X, W, R, B, h0, c0, P, lens, D)
    else:
        Y, Yh, Yc = torch_nn(c, X, W, R, B, h0, c0, lens, D)
        # The written-out equations agree with torch.nn where both apply.
        mY, mYh, mYc = manual(c, X, W, R, B, h0, c0, P, lens, D)
        assert torch.allclose(Y, mY, atol=1e-12) and torch.allclose(Yh, mYh, atol=1e-12)
        assert Yc is None or torch.allclose(Yc, mYc, atol=1e-12), c["name"]
    wY, wYh = rnd(*Y.shape), rnd(*Yh.shape)
    wYc = rnd(*Yc.shape) if Yc is not None else None
    loss = (wY * Y).sum() + (wYh * Yh).sum() + ((wYc * Yc).sum() if Yc is not None else 0)
    inputs = [X, W, R, B, h0, c0, P]
    wrt = [t for t in inputs if t is not None]
    got = dict(zip([id(t) for t in wrt], torch.autograd.grad(loss, wrt)))
    g = lambda t: got[id(t)] if t is not None else None

    def lay(t, kind):
        """From layout 0 to the case's layout."""
        if t is None or c["layout"] == 0:
            return t
        return t.permute(2, 0, 1, 3) if kind == "Y" else t.permute(1, 0, 2)

    return {
        "X": lay(X, "S"), "W": W, "R": R, "B": B, "h0": lay(h0, "S"), "c0": lay(c0, "S"), "P": P,
        "Y": lay(Y, "Y"), "Yh": lay(Yh, "S"), "Yc": lay(Yc, "S"),
        "wY": lay(wY, "Y"), "wYh": lay(wYh, "S"), "wYc": lay(wYc, "S"),
        "dX": lay(g(X), "S"), "dW": g(W), "dR": g(R), "dB": g(B), "dh0": lay(g(h0), "S"),
        "dc0": lay(g(c0), "S"), "dP": g(P),
    }


def c_array(ctype, name, vals):
    """One array on one line: the file is data, left as written (clang-format off)."""
    return "static const %s %s[%d] = {%s};\n" % (ctype, name, len(vals), ", ".join(vals))


FIELDS = ["X", "W", "R", "B", "h0", "c0", "P", "Y", "Yh", "Yc", "wY", "wYh", "wYc", "dX", "dW",
          "dR", "dB", "dh0", "dc0", "dP"]


def main():
    gen = torch.Generator().manual_seed(20240611)
    out = ["/* clang-format off */\n"
           "/* Written by make_rnn_reference.py with PyTorch %s; do not edit. */\n"
           % torch.__version__,
           "#ifndef D5_TEST_RNN_REFERENCE_H\n#define D5_TEST_RNN_REFERENCE_H\n\n",
           "#include \"rnn_case.h\"\n\n"]
    rows = []
    for c in CASES:
        arrays = run(c, gen)
        name = c["name"]
        fields = {}
        for key in FIELDS:
            t = arrays[key]
            if t is None:
                fields[key] = "NULL"
                continue
            vals = ["%.17g" % v for v in t.detach().contiguous().reshape(-1).tolist()]
            out.append(c_array("double", "%s_%s" % (name, key), vals))
            fields[key] = "%s_%s" % (name, key)
        extra = {}
        for key in ("lengths", "alpha", "beta"):
            v = c[key]
            if v:
                ctype = "int32_t" if key == "lengths" else "double"
                fmt = "%d" if key == "lengths" else "%.17g"
                out.append(c_array(ctype, "%s_%s" % (name, key), [fmt % x for x in v]))
                extra[key] = "%s_%s" % (name, key)
            else:
                extra[key] = "NULL"
        acts = '"%s"' % c["activations"] if c["activations"] else "NULL"
        rows.append(
            '    {"%s", "%s", "%s", %d, %d, %d, %d, %d, %s, %s, %d, %s, %d, %.17g, %d, %d, %s, %s}' % (
                name, c["op"], c["direction"], c["layout"], c["T"], c["N"], c["I"], c["H"], acts,
                extra["alpha"], len(c["alpha"]), extra["beta"], len(c["beta"]), c["clip"],
                c["lbr"], c["input_forget"], extra["lengths"],
                ", ".join(fields[k] for k in FIELDS)))
    out.append("""
static const rnn_ref_case rnn_ref_cases[] = {
""")
    out.append(",\n".join(rows))
    out.append("};\n\n#endif\n")
    with open(OUT, "w") as f:
        f.write("".join(out))


if __name__ == "__main__":
    main()
