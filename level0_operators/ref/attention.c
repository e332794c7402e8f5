/* Attention (ONNX opsets 23 to 25): scaled dot-product attention of query,
 * key and value heads. Inputs Q, K, V (3-d [B, S, heads * size] with the
 * attributes q_num_heads and kv_num_heads, or 4-d [B, heads, S, size]), the
 * optional attn_mask (bool: true attends; or a float added to the scores; it
 * broadcasts to [B, q_heads, q_len, total_len], and keys past its last
 * dimension are masked), past_key and past_value ([B, kv_heads, past, size],
 * put before K and V) and, from opset 24, nonpad_kv_seqlen (int64 [B]: keys
 * j >= nonpad_kv_seqlen[b] are masked; an external cache, without a past).
 * Per query head h (its key and value head h / (q_heads / kv_heads):
 * grouped-query attention) and query position i:
 *   s_j = scale * q_i . k_j, then softcap * tanh(s_j / softcap) if softcap > 0,
 *   b_j = the mask's bias, plus -inf for j > i + offset when is_causal, and
 *         from opset 25 for j < i + offset - left_window_size (when >= 0) or
 *         j > i + offset + right_window_size (when >= 0),
 *   p = softmax(s + b), y_i = sum_j p_j v_j,
 * where offset is past with a past, nonpad_kv_seqlen[b] - q_len with that
 * input, else 0; a row whose bias is -inf at every key gives y_i = 0.
 * Outputs Y (Q's layout), present_key and present_value (past and new keys,
 * 4-d) and qk_matmul_output: the scores s (modes 0 and 1), s + b (2) or p
 * (3). Computed in double, one row at a time; the gradient flows to Q, K, V,
 * the past, a float mask and from every output.
 * https://onnx.ai/onnx/operators/onnx__Attention.html */
#include "attention.h"
#include "ref.h"
#include "util.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const char *const input_names[7] = {
    "Q", "K", "V", "attn_mask", "past_key", "past_value", "nonpad_kv_seqlen"};

static d5_status bad_shape(const char *what, const d5_tensor_desc *d, const char *expected)
{
    char got[96];
    d5__shape_str(d, got, sizeof got);
    return d5_error(D5_ERR_SHAPE, "Attention: %s has shape %s; expected %s", what, got, expected);
}

/* Heads and head size of a 3-d input of `width` values per position. */
static d5_status split_heads(const char *what, int64_t width, int64_t heads, int64_t *size)
{
    if (heads <= 0 || width % heads != 0)
        return d5_error(D5_ERR_SHAPE,
                        "Attention: %s has %lld values per position, which %lld heads do not "
                        "divide",
                        what, (long long)width, (long long)heads);
    *size = width / heads;
    return D5_OK;
}

static d5_status qkv_geometry(const d5_tensor *in, const d5_attrs *attrs, d5_attention *a)
{
    const d5_tensor_desc *q = &in[0].desc, *k = &in[1].desc, *v = &in[2].desc;
    if (q->ndim != 3 && q->ndim != 4) return bad_shape("Q", q, "3 or 4 dimensions");
    if (k->ndim != q->ndim)
        return bad_shape("K", k, q->ndim == 3 ? "3 dimensions, as Q" : "4 dimensions, as Q");
    if (v->ndim != q->ndim)
        return bad_shape("V", v, q->ndim == 3 ? "3 dimensions, as Q" : "4 dimensions, as Q");
    a->rank3 = q->ndim == 3;
    a->batch = q->shape[0];
    if (a->rank3) {
        int64_t hq, hkv, dk = 0;
        d5_status s = d5_attrs_int(attrs, "q_num_heads", 0, &hq);
        if (s == D5_OK) s = d5_attrs_int(attrs, "kv_num_heads", 0, &hkv);
        if (s != D5_OK) return s;
        if (hq <= 0 || hkv <= 0)
            return d5_error(D5_ERR_INVALID,
                            "Attention: 3-d Q, K and V need the attributes q_num_heads and "
                            "kv_num_heads (> 0); got %lld and %lld",
                            (long long)hq, (long long)hkv);
        a->q_heads = hq;
        a->kv_heads = hkv;
        a->q_len = q->shape[1];
        a->kv_len = k->shape[1];
        s = split_heads("Q", q->shape[2], hq, &a->head_size);
        if (s == D5_OK) s = split_heads("K", k->shape[2], hkv, &dk);
        if (s == D5_OK) s = split_heads("V", v->shape[2], hkv, &a->v_head_size);
        if (s != D5_OK) return s;
        if (dk != a->head_size)
            return d5_error(D5_ERR_SHAPE,
                            "Attention: K's heads have %lld values, Q's %lld; they must be equal",
                            (long long)dk, (long long)a->head_size);
        if (v->shape[1] != k->shape[1])
            return bad_shape("V", v, "K's sequence length in dimension 1");
    } else {
        a->q_heads = q->shape[1];
        a->kv_heads = k->shape[1];
        a->q_len = q->shape[2];
        a->kv_len = k->shape[2];
        a->head_size = q->shape[3];
        a->v_head_size = v->shape[3];
        if (k->shape[3] != a->head_size) return bad_shape("K", k, "Q's head size in dimension 3");
        if (v->shape[1] != k->shape[1] || v->shape[2] != k->shape[2])
            return bad_shape("V", v, "K's heads and sequence length in dimensions 1 and 2");
    }
    if (k->shape[0] != a->batch || v->shape[0] != a->batch)
        return bad_shape(k->shape[0] != a->batch ? "K" : "V", k->shape[0] != a->batch ? k : v,
                         "Q's batch size in dimension 0");
    if (a->kv_heads <= 0 || a->q_heads % a->kv_heads != 0)
        return d5_error(D5_ERR_SHAPE,
                        "Attention: %lld query heads and %lld key and value heads; the key heads "
                        "must divide the query heads",
                        (long long)a->q_heads, (long long)a->kv_heads);
    return D5_OK;
}

static d5_status past_geometry(const d5_tensor *in, int32_t nin, d5_attention *a)
{
    int pk = d5__has_input(in, nin, 4), pv = d5__has_input(in, nin, 5);
    if (pk != pv)
        return d5_error(D5_ERR_INVALID,
                        "Attention: past_key and past_value come together; only %s is given",
                        pk ? "past_key" : "past_value");
    a->has_past = pk;
    if (!pk) return D5_OK;
    for (int32_t i = 4; i < 6; i++) {
        const d5_tensor_desc *p = &in[i].desc;
        int64_t size = i == 4 ? a->head_size : a->v_head_size;
        if (p->dtype != in[0].desc.dtype)
            return d5_error(D5_ERR_INVALID, "Attention: %s has data type %s, Q %s", input_names[i],
                            d5_dtype_name((d5_dtype)p->dtype),
                            d5_dtype_name((d5_dtype)in[0].desc.dtype));
        if (p->ndim != 4 || p->shape[0] != a->batch || p->shape[1] != a->kv_heads ||
            p->shape[3] != size || p->shape[2] != in[4].desc.shape[2]) {
            char want[128];
            snprintf(want, sizeof want,
                     "[%lld, %lld, past, %lld] (batch, key heads, past, head size)",
                     (long long)a->batch, (long long)a->kv_heads, (long long)size);
            return bad_shape(input_names[i], p, want);
        }
    }
    a->past_len = in[4].desc.shape[2];
    return D5_OK;
}

static d5_status mask_geometry(const d5_tensor *in, int32_t nin, d5_attention *a)
{
    a->has_mask = d5__has_input(in, nin, 3);
    if (!a->has_mask) return D5_OK;
    const d5_tensor_desc *m = &in[3].desc;
    a->mask_bool = m->dtype == D5_BOOL;
    if (!a->mask_bool && m->dtype != in[0].desc.dtype)
        return d5_error(
            D5_ERR_INVALID, "Attention: attn_mask has data type %s; expected bool or Q's %s",
            d5_dtype_name((d5_dtype)m->dtype), d5_dtype_name((d5_dtype)in[0].desc.dtype));
    const int64_t full[4] = {a->batch, a->q_heads, a->q_len, a->total_len};
    int64_t strides[D5_MAX_DIMS];
    d5__strides(m, strides);
    int ok = m->ndim >= 1 && m->ndim <= 4 && m->shape[m->ndim - 1] <= a->total_len;
    memset(a->mask_stride, 0, sizeof a->mask_stride);
    for (int32_t d = 0; ok && d < m->ndim; d++) {
        int32_t axis = 4 - m->ndim + d;
        int64_t n = m->shape[d];
        if (axis == 3) {
            a->mask_len = n;
            a->mask_stride[3] = strides[d];
        } else {
            ok = n == full[axis] || n == 1;
            a->mask_stride[axis] = n == 1 ? 0 : strides[d];
        }
    }
    if (!ok) {
        char want[160];
        snprintf(want, sizeof want,
                 "at most 4 dimensions that broadcast to [%lld, %lld, %lld, %lld] (batch, query "
                 "heads, queries, keys), the last at most %lld",
                 (long long)full[0], (long long)full[1], (long long)full[2], (long long)full[3],
                 (long long)full[3]);
        return bad_shape("attn_mask", m, want);
    }
    return D5_OK;
}

/* nonpad_kv_seqlen (opset 24, input 6) and the window attributes (opset 25). */
static d5_status cache_geometry(const d5_op_create_args *args, d5_attention *a)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    const char *windows[2] = {"left_window_size", "right_window_size"};
    int64_t *sizes[2] = {&a->left_window, &a->right_window};
    for (int k = 0; k < 2; k++) {
        d5_status s = d5_attrs_int(args->attrs, windows[k], -1, sizes[k]);
        if (s != D5_OK) return s;
        if (*sizes[k] < -1)
            return d5_error(D5_ERR_INVALID,
                            "Attention: %s is %lld; expected -1 (unbounded) or a size >= 0",
                            windows[k], (long long)*sizes[k]);
    }
    a->has_nonpad = d5__has_input(in, nin, 6);
    if (!a->has_nonpad) return D5_OK;
    const d5_tensor_desc *n = &in[6].desc;
    if (n->dtype != D5_I64)
        return d5_error(D5_ERR_INVALID,
                        "Attention: nonpad_kv_seqlen has data type %s; expected int64",
                        d5_dtype_name((d5_dtype)n->dtype));
    if (n->ndim != 1 || n->shape[0] != a->batch) {
        char want[64];
        snprintf(want, sizeof want, "[%lld] (the batch size)", (long long)a->batch);
        return bad_shape("nonpad_kv_seqlen", n, want);
    }
    if (a->has_past)
        return d5_error(D5_ERR_INVALID, "Attention: nonpad_kv_seqlen (an external cache) cannot be "
                                        "combined with past_key and past_value");
    int64_t opset;
    d5_status s = d5__ref_opset("Attention", args->attrs, 25, &opset);
    if (s != D5_OK) return s;
    if (opset >= 25 && args->noutputs > 1)
        return d5_error(D5_ERR_INVALID,
                        "Attention: nonpad_kv_seqlen (an external cache) cannot be combined with "
                        "the outputs present_key and present_value (opset %lld)",
                        (long long)opset);
    return D5_OK;
}

/* The full geometry, opsets 23 to 25 (ref's kernel). */
static d5_status geometry(const d5_op_create_args *args, d5_attention *a)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    memset(a, 0, sizeof *a);
    d5_status s = D5_OK;
    for (int32_t i = 0; s == D5_OK && i < 3; i++) s = d5__need_float("Attention", in, nin, i);
    for (int32_t i = 1; s == D5_OK && i < 3; i++) s = d5__same_type("Attention", in, nin, i, 0);
    if (s != D5_OK) return s;
    int64_t causal;
    s = qkv_geometry(in, args->attrs, a);
    if (s == D5_OK) s = past_geometry(in, nin, a);
    if (s == D5_OK) s = cache_geometry(args, a);
    if (s != D5_OK) return s;
    a->total_len = a->past_len + a->kv_len;
    s = mask_geometry(in, nin, a);
    if (s == D5_OK) s = d5_attrs_int(args->attrs, "is_causal", 0, &causal);
    if (s == D5_OK)
        s = d5_attrs_float(args->attrs, "scale",
                           1 / sqrt((double)(a->head_size ? a->head_size : 1)), &a->scale);
    if (s == D5_OK) s = d5_attrs_float(args->attrs, "softcap", 0, &a->softcap);
    if (s == D5_OK) s = d5_attrs_int(args->attrs, "qk_matmul_output_mode", 0, &a->qk_mode);
    if (s != D5_OK) return s;
    if (a->qk_mode < 0 || a->qk_mode > 3)
        return d5_error(D5_ERR_INVALID, "Attention: qk_matmul_output_mode is %lld; expected 0 to 3",
                        (long long)a->qk_mode);
    a->causal = causal != 0;
    d5_tensor_desc *out = args->outputs;
    int32_t nout = args->noutputs;
    int64_t b = a->batch, hq = a->q_heads, hkv = a->kv_heads, t = a->total_len;
    out[0] = in[0].desc;
    if (a->rank3)
        out[0].shape[2] = hq * a->v_head_size;
    else
        out[0].shape[3] = a->v_head_size;
    const int64_t shapes[3][4] = {
        {b, hkv, t, a->head_size}, {b, hkv, t, a->v_head_size}, {b, hq, a->q_len, t}};
    for (int32_t k = 1; k < nout && k < 4; k++) {
        out[k] = in[0].desc;
        out[k].ndim = 4;
        memcpy(out[k].shape, shapes[k - 1], sizeof shapes[k - 1]);
    }
    a->qk_output = nout > 3;
    return D5_OK;
}

d5_status d5__attention_geometry(const d5_op_create_args *args, d5_attention *a)
{
    d5_status s = geometry(args, a);
    if (s != D5_OK) return s;
    if (a->has_nonpad)
        return d5_error(D5_ERR_UNSUPPORTED,
                        "Attention: input 6 (nonpad_kv_seqlen, opset 24) is not supported by "
                        "this kernel; ref's is");
    if (a->left_window != -1 || a->right_window != -1)
        return d5_error(D5_ERR_UNSUPPORTED,
                        "Attention: a sliding window (left_window_size %lld, right_window_size "
                        "%lld; opset 25) is not supported by this kernel; ref's is",
                        (long long)a->left_window, (long long)a->right_window);
    return D5_OK;
}

static d5_status attention_create(const d5_op_create_args *args, void **state)
{
    d5_attention a;
    d5_status s = geometry(args, &a);
    return s == D5_OK ? d5__ref_state(state, &a, sizeof a, "Attention") : s;
}

/* Key or value row j of head h in batch b: past_key/past_value, then K or V. */
static int64_t key_row(const d5_attention *a, int64_t b, int64_t h, int64_t j, int v, int *past)
{
    int64_t size = v ? a->v_head_size : a->head_size;
    *past = j < a->past_len;
    return *past ? ((b * a->kv_heads + h) * a->past_len + j) * size
                 : d5__attention_kv_row(a, b, h, j - a->past_len, v);
}

static const double *key_ptr(const d5_attention *a, const d5_rt *in, int64_t b, int64_t h,
                             int64_t j, int v)
{
    int past;
    int64_t r = key_row(a, b, h, j, v, &past);
    return in[past ? 4 + v : 1 + v].data + r;
}

/* The bias of key j for query i of head h in batch b. */
static double bias_of(const d5_attention *a, const d5_rt *in, int64_t b, int64_t h, int64_t i,
                      int64_t j)
{
    double bias = 0;
    int64_t p = i + (a->has_nonpad ? (int64_t)in[6].data[b] - a->q_len : a->past_len);
    if (a->causal && j > p) return -INFINITY;
    if (a->left_window >= 0 && j < p - a->left_window) return -INFINITY;
    if (a->right_window >= 0 && j > p + a->right_window) return -INFINITY;
    if (a->has_nonpad && (double)j >= in[6].data[b]) return -INFINITY;
    if (a->has_mask) {
        if (j >= a->mask_len) return -INFINITY;
        const int64_t *ms = a->mask_stride;
        double m = in[3].data[b * ms[0] + h * ms[1] + i * ms[2] + j * ms[3]];
        bias = a->mask_bool ? (m != 0 ? 0 : -INFINITY) : m;
    }
    return bias;
}

typedef struct row {
    double *raw; /* scale * q . k */
    double *s;   /* after softcap */
    double *bias;
    double *p; /* probabilities; all 0 when every key is masked */
} row;

/* Scores, bias and probabilities of query i of head h in batch b. */
static void scores(const d5_attention *a, const d5_rt *in, int64_t b, int64_t h, int64_t i, row *r)
{
    int64_t kh = h / (a->q_heads / a->kv_heads), t = a->total_len;
    const double *q = in[0].data + d5__attention_q_row(a, b, h, i, 0);
    double max_bias = -INFINITY, max = -INFINITY;
    for (int64_t j = 0; j < t; j++) {
        const double *k = key_ptr(a, in, b, kh, j, 0);
        double dot = 0;
        for (int64_t d = 0; d < a->head_size; d++) dot += q[d] * k[d];
        r->raw[j] = a->scale * dot;
        r->s[j] = a->softcap > 0 ? a->softcap * tanh(r->raw[j] / a->softcap) : r->raw[j];
        r->bias[j] = bias_of(a, in, b, h, i, j);
        max_bias = r->bias[j] > max_bias ? r->bias[j] : max_bias;
        double sb = r->s[j] + r->bias[j];
        max = sb > max ? sb : max;
    }
    double sum = 0;
    for (int64_t j = 0; j < t; j++) {
        r->p[j] = max == -INFINITY ? 0 : exp(r->s[j] + r->bias[j] - max);
        sum += r->p[j];
    }
    for (int64_t j = 0; j < t; j++) r->p[j] = max_bias == -INFINITY || sum == 0 ? 0 : r->p[j] / sum;
}

static d5_status rows_alloc(const d5_attention *a, row *r, double **buf)
{
    int64_t t = a->total_len > 0 ? a->total_len : 1;
    *buf = d5_alloc((size_t)(4 * t) * sizeof(double), "Attention scores");
    if (!*buf) return D5_ERR_NOMEM;
    *r = (row){*buf, *buf + t, *buf + 2 * t, *buf + 3 * t};
    return D5_OK;
}

/* present_key and present_value: the past, then K or V, in 4-d. */
static void write_present(const d5_attention *a, const d5_rt *in, d5_rt *out, int32_t nout)
{
    for (int v = 0; v < 2; v++) {
        if (nout <= 1 + v || !out[1 + v].data) continue;
        int64_t size = v ? a->v_head_size : a->head_size;
        for (int64_t b = 0; b < a->batch; b++)
            for (int64_t h = 0; h < a->kv_heads; h++)
                for (int64_t j = 0; j < a->total_len; j++)
                    memcpy(out[1 + v].data + ((b * a->kv_heads + h) * a->total_len + j) * size,
                           key_ptr(a, in, b, h, j, v), (size_t)size * sizeof(double));
    }
}

static d5_status attention_forward(void *state, const d5_ref_call *call)
{
    const d5_attention *a = state;
    const d5_rt *in = call->inputs;
    d5_rt *out = call->outputs;
    row r;
    double *buf;
    d5_status s = rows_alloc(a, &r, &buf);
    if (s != D5_OK) return s;
    int64_t t = a->total_len, dv = a->v_head_size, kpg = a->q_heads / a->kv_heads;
    for (int64_t b = 0; b < a->batch; b++)
        for (int64_t h = 0; h < a->q_heads; h++)
            for (int64_t i = 0; i < a->q_len; i++) {
                scores(a, in, b, h, i, &r);
                double *y = out[0].data + d5__attention_q_row(a, b, h, i, 1);
                for (int64_t d = 0; d < dv; d++) y[d] = 0;
                for (int64_t j = 0; j < t; j++) {
                    const double *v = key_ptr(a, in, b, h / kpg, j, 1);
                    for (int64_t d = 0; d < dv; d++) y[d] += r.p[j] * v[d];
                }
                if (!a->qk_output || !out[3].data) continue;
                double *qk = out[3].data + ((b * a->q_heads + h) * a->q_len + i) * t;
                for (int64_t j = 0; j < t; j++)
                    qk[j] = a->qk_mode <= 1   ? r.s[j]
                            : a->qk_mode == 2 ? r.s[j] + r.bias[j]
                                              : r.p[j];
            }
    write_present(a, in, out, call->noutputs);
    d5_free(buf);
    return D5_OK;
}

/* The gradient of key or value row j (v) of head h: past or new. */
static double *key_grad(const d5_attention *a, d5_rt *gin, int64_t b, int64_t h, int64_t j, int v)
{
    int past;
    int64_t r = key_row(a, b, h, j, v, &past);
    double *g = gin[past ? 4 + v : 1 + v].data;
    return g ? g + r : NULL;
}

/* With dY and the gradient g of qk_matmul_output, per query row:
 *   dp_j = dY . v_j (+ g_j in mode 3),  dV_j += p_j dY,
 *   d(s + b)_j = p_j (dp_j - sum_k p_k dp_k) (+ g_j in mode 2): a float mask's gradient,
 *   ds_j = that (+ g_j in modes 0 and 1), times 1 - tanh^2(raw_j / softcap) under a softcap,
 *   dQ_i += scale sum_j ds_j k_j,  dK_j += scale ds_j q_i;
 * present_key and present_value pass their gradients to the past and K, V. */
static d5_status attention_backward(void *state, const d5_ref_call *call)
{
    const d5_attention *a = state;
    const d5_rt *in = call->inputs, *gout = call->grad_outputs;
    d5_rt *gin = call->grad_inputs;
    int32_t nout = call->noutputs;
    row r;
    double *buf;
    d5_status s = rows_alloc(a, &r, &buf);
    if (s != D5_OK) return s;
    int64_t t = a->total_len, dk = a->head_size, dv = a->v_head_size;
    int64_t kpg = a->q_heads / a->kv_heads;
    double *dmask = a->has_mask && !a->mask_bool ? gin[3].data : NULL;
    for (int64_t b = 0; b < a->batch; b++)
        for (int64_t h = 0; h < a->q_heads; h++)
            for (int64_t i = 0; i < a->q_len; i++) {
                scores(a, in, b, h, i, &r);
                const double *dy = gout[0].data + d5__attention_q_row(a, b, h, i, 1);
                const double *g3 =
                    nout > 3 ? gout[3].data + ((b * a->q_heads + h) * a->q_len + i) * t : NULL;
                const double *q = in[0].data + d5__attention_q_row(a, b, h, i, 0);
                double *dq = gin[0].data ? gin[0].data + d5__attention_q_row(a, b, h, i, 0) : NULL;
                double dot = 0;
                for (int64_t j = 0; j < t; j++) { /* r.raw becomes dp */
                    const double *v = key_ptr(a, in, b, h / kpg, j, 1);
                    double dp = g3 && a->qk_mode == 3 ? g3[j] : 0;
                    for (int64_t d = 0; d < dv; d++) dp += dy[d] * v[d];
                    double *gv = key_grad(a, gin, b, h / kpg, j, 1);
                    for (int64_t d = 0; gv && d < dv; d++) gv[d] += r.p[j] * dy[d];
                    dot += r.p[j] * dp;
                    r.bias[j] = dp; /* kept: the bias is not needed below */
                }
                for (int64_t j = 0; j < t; j++) {
                    double dsb = r.p[j] * (r.bias[j] - dot) + (g3 && a->qk_mode == 2 ? g3[j] : 0);
                    if (dmask && j < a->mask_len) {
                        const int64_t *ms = a->mask_stride;
                        dmask[b * ms[0] + h * ms[1] + i * ms[2] + j * ms[3]] += dsb;
                    }
                    double ds = dsb + (g3 && a->qk_mode <= 1 ? g3[j] : 0);
                    if (a->softcap > 0) {
                        double th = r.s[j] / a->softcap;
                        ds *= 1 - th * th;
                    }
                    if (ds == 0) continue;
                    const double *k = key_ptr(a, in, b, h / kpg, j, 0);
                    double *gk = key_grad(a, gin, b, h / kpg, j, 0);
                    for (int64_t d = 0; dq && d < dk; d++) dq[d] += a->scale * ds * k[d];
                    for (int64_t d = 0; gk && d < dk; d++) gk[d] += a->scale * ds * q[d];
                }
            }
    for (int v = 0; v < 2; v++) { /* present_key, present_value */
        if (nout <= 1 + v) continue;
        int64_t size = v ? dv : dk;
        for (int64_t b = 0; b < a->batch; b++)
            for (int64_t h = 0; h < a->kv_heads; h++)
                for (int64_t j = 0; j < t; j++) {
                    double *g = key_grad(a, gin, b, h, j, v);
                    const double *gp = gout[1 + v].data + ((b * a->kv_heads + h) * t + j) * size;
                    for (int64_t d = 0; g && d < size; d++) g[d] += gp[d];
                }
    }
    d5_free(buf);
    return D5_OK;
}

/* Two products per score (Q K^T and P V) and a few operations for the
 * softmax. */
static double attention_flops(void *state, const d5_ref_shapes *shapes)
{
    const d5_attention *a = state;
    (void)shapes;
    double rows = (double)a->batch * (double)a->q_heads * (double)a->q_len;
    return rows * (double)a->total_len * (2.0 * (double)(a->head_size + a->v_head_size) + 5);
}

D5_REF_OPERATOR(Attention, 3, 7, 1, 4, attention_create, attention_forward, attention_backward,
                NULL, attention_flops);
