/* LinearAttention (ONNX opset 27): recurrent linear attention. query
 * [B, T, Hq * dk], key [B, T, Hkv * dk] and value [B, T, Hkv * dv] (heads
 * packed in the last dimension; the attributes q_num_heads = Hq and
 * kv_num_heads = Hkv are required, Hkv dividing Hq), the optional past_state
 * [B, Hkv, dk, dv] (zeros when omitted), decay g ([B, T, Hkv * dk] per key
 * dimension or [B, T, Hkv] per head, log-space) and beta ([B, T, Hkv] or
 * [B, T, 1]). Per KV head, for t = 0 .. T - 1, with update_rule:
 *   linear:      S = S + k_t v_t^T
 *   gated:       S = exp(g_t) S + k_t v_t^T            (exp(g_t) scales S's rows)
 *   delta:       S = S + beta_t k_t (v_t - S^T k_t)^T
 *   gated_delta: S' = exp(g_t) S, S = S' + beta_t k_t (v_t - S'^T k_t)^T  (the default)
 * and each query head h of the group reading KV head h / (Hq / Hkv) gives
 * o_t = scale q_t^T S (after the update), scale being the attribute or, when
 * 0 (the default), 1 / sqrt(dk). decay is required by the gated rules and
 * forbidden otherwise, beta likewise for the delta rules. Outputs: output
 * [B, T, Hq * dv] (query's type) and present_state, the final S (past_state's
 * type, else query's). chunk_size is a tuning hint, unused. Computed in double.
 *
 * Gradient (backpropagation through time, the states kept from a forward
 * pass): to query, key, value, decay, beta and past_state, from output and
 * present_state.
 * https://onnx.ai/onnx/operators/onnx__LinearAttention.html */
#include "util.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

typedef struct linattn {
    int64_t batch, len, hq, hkv, dk, dv;
    int gating, delta;
    int decay_per_dim; /* decay is [B, T, Hkv * dk]; else [B, T, Hkv] */
    int64_t nbeta;     /* beta's last dimension: Hkv or 1 */
    int has_past;      /* past_state is given */
    double scale;
} linattn;

enum { Q, K, V, PAST, DECAY, BETA };

static const char *const rules[4] = {"linear", "gated", "delta", "gated_delta"};

static d5_status bad_shape(const char *what, const d5_tensor_desc *d, const char *expected)
{
    char got[96];
    d5__shape_str(d, got, sizeof got);
    return d5_error(D5_ERR_SHAPE, "LinearAttention: %s has shape %s; expected %s", what, got,
                    expected);
}

static d5_status read_attrs(const d5_attrs *attrs, linattn *a)
{
    const char *rule;
    int64_t chunk;
    d5_status s = d5_attrs_int(attrs, "q_num_heads", 0, &a->hq);
    if (s == D5_OK) s = d5_attrs_int(attrs, "kv_num_heads", 0, &a->hkv);
    if (s == D5_OK) s = d5_attrs_float(attrs, "scale", 0, &a->scale);
    if (s == D5_OK) s = d5_attrs_string(attrs, "update_rule", "gated_delta", &rule);
    if (s == D5_OK) s = d5_attrs_int(attrs, "chunk_size", 64, &chunk);
    if (s != D5_OK) return s;
    if (a->hq <= 0 || a->hkv <= 0 || a->hq % a->hkv != 0)
        return d5_error(D5_ERR_INVALID,
                        "LinearAttention: q_num_heads (%lld) and kv_num_heads (%lld) are required, "
                        "> 0, and kv_num_heads must divide q_num_heads",
                        (long long)a->hq, (long long)a->hkv);
    int r = 0;
    while (r < 4 && strcmp(rule, rules[r]) != 0) r++;
    if (r == 4)
        return d5_error(D5_ERR_INVALID,
                        "LinearAttention: update_rule is \"%s\"; expected \"linear\", \"gated\", "
                        "\"delta\" or \"gated_delta\"",
                        rule);
    a->gating = r == 1 || r == 3;
    a->delta = r >= 2;
    return D5_OK;
}

static d5_status qkv_shapes(const d5_tensor *in, linattn *a)
{
    const d5_tensor_desc *q = &in[Q].desc, *k = &in[K].desc, *v = &in[V].desc;
    const char *names[3] = {"query", "key", "value"};
    for (int i = 0; i < 3; i++)
        if (in[i].desc.ndim != 3)
            return bad_shape(names[i], &in[i].desc, "3 dimensions [B, T, H * d]");
    a->batch = q->shape[0];
    a->len = q->shape[1];
    if (q->shape[2] % a->hq != 0)
        return bad_shape("query", q, "a last dimension that q_num_heads divides");
    a->dk = q->shape[2] / a->hq;
    char want[128];
    snprintf(want, sizeof want, "[%lld, %lld, %lld] (kv_num_heads * query's head size)",
             (long long)a->batch, (long long)a->len, (long long)(a->hkv * a->dk));
    if (k->shape[0] != a->batch || k->shape[1] != a->len || k->shape[2] != a->hkv * a->dk)
        return bad_shape("key", k, want);
    if (v->shape[0] != a->batch || v->shape[1] != a->len || v->shape[2] % a->hkv != 0)
        return bad_shape("value", v, "query's [B, T] and a last dimension kv_num_heads divides");
    a->dv = v->shape[2] / a->hkv;
    return D5_OK;
}

/* decay and beta: given exactly when the update rule uses them, of their shapes. */
static d5_status gate_shapes(const d5_tensor *in, int32_t nin, linattn *a)
{
    const char *names[2] = {"decay", "beta"};
    const int need[2] = {a->gating, a->delta};
    for (int g = 0; g < 2; g++) {
        int has = d5__has_input(in, nin, DECAY + g);
        if (has != need[g])
            return d5_error(D5_ERR_INVALID, "LinearAttention: update_rule %s %s input %s",
                            rules[a->gating + 2 * a->delta], need[g] ? "requires" : "forbids",
                            names[g]);
        if (!has) continue;
        const d5_tensor_desc *d = &in[DECAY + g].desc;
        int64_t last = d->ndim == 3 ? d->shape[2] : -1;
        int ok = d->ndim == 3 && d->shape[0] == a->batch && d->shape[1] == a->len &&
                 (g == 0 ? last == a->hkv || last == a->hkv * a->dk : last == a->hkv || last == 1);
        if (!ok) {
            char want[128];
            snprintf(want, sizeof want, "[%lld, %lld, %lld or %lld]", (long long)a->batch,
                     (long long)a->len, (long long)a->hkv,
                     g == 0 ? (long long)(a->hkv * a->dk) : 1LL);
            return bad_shape(names[g], d, want);
        }
        if (g == 0)
            a->decay_per_dim = last == a->hkv * a->dk && last != a->hkv;
        else
            a->nbeta = last;
    }
    return D5_OK;
}

static d5_status linattn_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    d5_status s = D5_OK;
    for (int32_t i = 0; s == D5_OK && i < 3; i++) s = d5__need_float("LinearAttention", in, nin, i);
    for (int32_t i = 1; s == D5_OK && i < 6; i++)
        if (i != PAST) s = d5__same_type("LinearAttention", in, nin, i, 0);
    if (s == D5_OK && d5__has_input(in, nin, PAST))
        s = d5__need_float("LinearAttention", in, nin, PAST);
    linattn a = {0};
    if (s == D5_OK) s = read_attrs(args->attrs, &a);
    if (s == D5_OK) s = qkv_shapes(in, &a);
    if (s == D5_OK) s = gate_shapes(in, nin, &a);
    if (s != D5_OK) return s;
    const int64_t st[4] = {a.batch, a.hkv, a.dk, a.dv};
    a.has_past = d5__has_input(in, nin, PAST);
    if (a.has_past) {
        const d5_tensor_desc *p = &in[PAST].desc;
        if (p->ndim != 4 || memcmp(p->shape, st, sizeof st) != 0) {
            char want[128];
            snprintf(want, sizeof want, "[%lld, %lld, %lld, %lld] (B, kv_num_heads, dk, dv)",
                     (long long)st[0], (long long)st[1], (long long)st[2], (long long)st[3]);
            return bad_shape("past_state", p, want);
        }
    }
    if (a.scale == 0) a.scale = 1 / sqrt((double)(a.dk > 0 ? a.dk : 1));
    d5_tensor_desc *out = args->outputs;
    out[0] = in[Q].desc;
    out[0].shape[2] = a.hq * a.dv;
    if (args->noutputs > 1) {
        out[1] = a.has_past ? in[PAST].desc : in[Q].desc;
        out[1].ndim = 4;
        memcpy(out[1].shape, st, sizeof st);
    }
    return d5__ref_state(state, &a, sizeof a, "LinearAttention");
}

/* Offsets of token t's row of head h in query (kv 0) or key and value. */
static int64_t row(const linattn *a, int64_t b, int64_t t, int64_t h, int kv, int64_t size)
{
    return ((b * a->len + t) * (kv ? a->hkv : a->hq) + h) * size;
}

/* exp(g) of state row d of KV head h at token t. */
static double gate(const linattn *a, const d5_rt *in, int64_t b, int64_t t, int64_t h, int64_t d)
{
    const double *g = in[DECAY].data;
    return exp(a->decay_per_dim ? g[row(a, b, t, h, 1, a->dk) + d] : g[row(a, b, t, h, 1, 1)]);
}

static int64_t beta_at(const linattn *a, int64_t b, int64_t t, int64_t h)
{
    return (b * a->len + t) * a->nbeta + (a->nbeta == 1 ? 0 : h);
}

/* One step of KV head h at token t: S (dk x dv) becomes the decayed S' (kept
 * in sd when not NULL) plus k u^T, u = v or beta (v - S'^T k) (r = S'^T k). */
static void step(const linattn *a, const d5_rt *in, int64_t b, int64_t t, int64_t h, double *S,
                 double *u, double *r)
{
    const double *k = in[K].data + row(a, b, t, h, 1, a->dk);
    const double *v = in[V].data + row(a, b, t, h, 1, a->dv);
    int64_t dk = a->dk, dv = a->dv;
    if (a->gating)
        for (int64_t d = 0; d < dk; d++) {
            double e = gate(a, in, b, t, h, d);
            for (int64_t m = 0; m < dv; m++) S[d * dv + m] *= e;
        }
    double beta = a->delta ? in[BETA].data[beta_at(a, b, t, h)] : 1;
    for (int64_t m = 0; m < dv; m++) {
        r[m] = 0;
        for (int64_t d = 0; a->delta && d < dk; d++) r[m] += S[d * dv + m] * k[d];
        u[m] = beta * (v[m] - r[m]);
    }
    for (int64_t d = 0; d < dk; d++)
        for (int64_t m = 0; m < dv; m++) S[d * dv + m] += k[d] * u[m];
}

/* The initial state of (b, h) into S. */
static void initial(const linattn *a, const d5_rt *in, int64_t b, int64_t h, double *S)
{
    int64_t n = a->dk * a->dv;
    for (int64_t i = 0; i < n; i++)
        S[i] = a->has_past ? in[PAST].data[(b * a->hkv + h) * n + i] : 0;
}

static d5_status linattn_forward(void *state, const d5_ref_call *call)
{
    const linattn *a = state;
    const d5_rt *in = call->inputs;
    d5_rt *out = call->outputs;
    int64_t dk = a->dk, dv = a->dv, n = dk * dv, group = a->hq / a->hkv;
    double *S = d5_alloc((size_t)(n + 2 * dv + 1) * sizeof(double), "LinearAttention state");
    if (!S) return D5_ERR_NOMEM;
    double *u = S + n, *r = u + dv;
    for (int64_t b = 0; b < a->batch; b++)
        for (int64_t h = 0; h < a->hkv; h++) {
            initial(a, in, b, h, S);
            for (int64_t t = 0; t < a->len; t++) {
                step(a, in, b, t, h, S, u, r);
                for (int64_t qh = h * group; qh < (h + 1) * group; qh++) {
                    const double *q = in[Q].data + row(a, b, t, qh, 0, dk);
                    double *o = out[0].data + row(a, b, t, qh, 0, dv);
                    for (int64_t m = 0; m < dv; m++) {
                        double acc = 0;
                        for (int64_t d = 0; d < dk; d++) acc += q[d] * S[d * dv + m];
                        o[m] = a->scale * acc;
                    }
                }
            }
            if (call->noutputs > 1)
                memcpy(out[1].data + (b * a->hkv + h) * n, S, (size_t)n * sizeof *S);
        }
    d5_free(S);
    return D5_OK;
}

/* The gradients of one token's update of KV head h, dS holding the
 * gradient of the state after it and becoming that of the state before;
 * S_prev is the state before, w scratch of dk dv + 3 dv doubles. */
static void step_backward(const linattn *a, const d5_rt *in, d5_rt *gin, int64_t b, int64_t t,
                          int64_t h, const double *S_prev, double *dS, double *w)
{
    int64_t dk = a->dk, dv = a->dv, n = dk * dv;
    double *Sp = w, *u = w + n, *r = u + dv, *du = r + dv;
    int64_t kr = row(a, b, t, h, 1, dk), vr = row(a, b, t, h, 1, dv);
    const double *k = in[K].data + kr, *v = in[V].data + vr;
    memcpy(Sp, S_prev, (size_t)n * sizeof *Sp);
    step(a, in, b, t, h, Sp, u, r); /* Sp becomes S' + k u^T: undo the k u^T */
    for (int64_t d = 0; d < dk; d++)
        for (int64_t m = 0; m < dv; m++) Sp[d * dv + m] -= k[d] * u[m];
    double *dkey = gin[K].data ? gin[K].data + kr : NULL;
    double *dval = gin[V].data ? gin[V].data + vr : NULL;
    for (int64_t m = 0; m < dv; m++) {
        du[m] = 0;
        for (int64_t d = 0; d < dk; d++) du[m] += dS[d * dv + m] * k[d];
    }
    for (int64_t d = 0; dkey && d < dk; d++)
        for (int64_t m = 0; m < dv; m++) dkey[d] += dS[d * dv + m] * u[m];
    double beta = a->delta ? in[BETA].data[beta_at(a, b, t, h)] : 1;
    for (int64_t m = 0; dval && m < dv; m++) dval[m] += beta * du[m];
    if (a->delta) { /* u = beta (v - r), r = S'^T k */
        double dbeta = 0;
        for (int64_t m = 0; m < dv; m++) dbeta += du[m] * (v[m] - r[m]);
        if (gin[BETA].data) gin[BETA].data[beta_at(a, b, t, h)] += dbeta;
        for (int64_t d = 0; d < dk; d++)
            for (int64_t m = 0; m < dv; m++) {
                double dr = -beta * du[m];
                dS[d * dv + m] += k[d] * dr;
                if (dkey) dkey[d] += Sp[d * dv + m] * dr;
            }
    }
    if (!a->gating) return;
    double *dg = gin[DECAY].data;
    for (int64_t d = 0; d < dk; d++) { /* S' = exp(g) S_prev */
        double e = gate(a, in, b, t, h, d), acc = 0;
        for (int64_t m = 0; m < dv; m++) {
            acc += dS[d * dv + m] * S_prev[d * dv + m];
            dS[d * dv + m] *= e;
        }
        if (dg)
            dg[a->decay_per_dim ? row(a, b, t, h, 1, dk) + d : row(a, b, t, h, 1, 1)] += e * acc;
    }
}

/* The reads of token t by the query heads of KV head h from the state S
 * after the update: their gradients into dquery and dS. */
static void read_backward(const linattn *a, const d5_rt *in, const d5_rt *gout, d5_rt *gin,
                          int64_t b, int64_t t, int64_t h, const double *S, double *dS)
{
    int64_t dk = a->dk, dv = a->dv, group = a->hq / a->hkv;
    for (int64_t qh = h * group; qh < (h + 1) * group; qh++) {
        const double *q = in[Q].data + row(a, b, t, qh, 0, dk);
        const double *g = gout[0].data + row(a, b, t, qh, 0, dv);
        double *dq = gin[Q].data ? gin[Q].data + row(a, b, t, qh, 0, dk) : NULL;
        for (int64_t d = 0; d < dk; d++)
            for (int64_t m = 0; m < dv; m++) {
                if (dq) dq[d] += a->scale * S[d * dv + m] * g[m];
                dS[d * dv + m] += a->scale * q[d] * g[m];
            }
    }
}

static d5_status linattn_backward(void *state, const d5_ref_call *call)
{
    const linattn *a = state;
    const d5_rt *in = call->inputs, *gout = call->grad_outputs;
    d5_rt *gin = call->grad_inputs;
    int64_t n = a->dk * a->dv, T = a->len;
    size_t count = (size_t)((T + 3) * n + 3 * a->dv + 1);
    double *Ss = d5_alloc(count * sizeof(double), "LinearAttention states");
    if (!Ss) return D5_ERR_NOMEM;
    double *dS = Ss + (T + 1) * n, *w = dS + n, *u = w + n, *r = u + a->dv;
    for (int64_t b = 0; b < a->batch; b++)
        for (int64_t h = 0; h < a->hkv; h++) {
            initial(a, in, b, h, Ss);
            for (int64_t t = 0; t < T; t++) {
                memcpy(Ss + (t + 1) * n, Ss + t * n, (size_t)n * sizeof *Ss);
                step(a, in, b, t, h, Ss + (t + 1) * n, u, r);
            }
            for (int64_t i = 0; i < n; i++)
                dS[i] = call->noutputs > 1 ? gout[1].data[(b * a->hkv + h) * n + i] : 0;
            for (int64_t t = T - 1; t >= 0; t--) {
                read_backward(a, in, gout, gin, b, t, h, Ss + (t + 1) * n, dS);
                step_backward(a, in, gin, b, t, h, Ss + t * n, dS, w);
            }
            for (int64_t i = 0; a->has_past && gin[PAST].data && i < n; i++)
                gin[PAST].data[(b * a->hkv + h) * n + i] += dS[i];
        }
    d5_free(Ss);
    return D5_OK;
}

/* Per token and KV head: the state update (about 2 dk dv, 4 with the delta
 * rule, plus dk dv for a gate) and 2 dk dv per query head's read. */
static double linattn_flops(void *state, const d5_ref_shapes *shapes)
{
    const linattn *a = state;
    (void)shapes;
    double per = (double)a->dk * (double)a->dv;
    double update = per * (2.0 + (a->delta ? 2 : 0) + (a->gating ? 1 : 0));
    return (double)(a->batch * a->len) * ((double)a->hkv * update + (double)a->hq * 2.0 * per);
}

D5_REF_OPERATOR(LinearAttention, 3, 6, 1, 2, linattn_create, linattn_forward, linattn_backward,
                NULL, linattn_flops);
