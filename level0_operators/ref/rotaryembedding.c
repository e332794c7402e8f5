/* RotaryEmbedding (ONNX opset 23): rotary positional embeddings (RoPE). X is
 * 4-d [B, heads, S, head_size] or 3-d [B, S, heads * head_size] with the
 * attribute num_heads. The first rd = rotary_embedding_dim (0: head_size)
 * values of each head are rotated, the rest pass unchanged: they split into
 * pairs (x1_k, x2_k), k < rd / 2, the halves (x_k, x_{k + rd/2}) or, with
 * interleaved = 1, the neighbours (x_2k, x_2k+1), and
 *   x1_k' = cos_k x1_k - sin_k x2_k,   x2_k' = sin_k x1_k + cos_k x2_k,
 * where cos and sin are row position_ids[b, s] of cos_cache and sin_cache
 * ([max_position + 1, rd / 2]) when position_ids (int64 [B, S]) is given,
 * else their row [b, s] ([B, S, rd / 2]; a dimension of 1 broadcasts, as in
 * ONNX's reference). A position outside the caches' rows is D5_ERR_RANGE at
 * run time.
 *
 * Gradient: the transposed rotation for X (dx1 = cos dx1' + sin dx2',
 * dx2 = cos dx2' - sin dx1'), and for the caches dcos = x1 dx1' + x2 dx2',
 * dsin = x1 dx2' - x2 dx1', summed over heads (and positions sharing a row).
 * https://onnx.ai/onnx/operators/onnx__RotaryEmbedding.html */
#include "util.h"

#include <stdio.h>

typedef struct rope {
    int64_t batch, seq, heads, head_size, half; /* half = rd / 2 */
    int rank3, interleaved, has_pos;
    int64_t rows;            /* of the caches with position_ids */
    int64_t cache_stride[2]; /* per batch and position, without position_ids */
    int64_t pos_stride[2];   /* of position_ids per batch and position */
} rope;

static d5_status bad_shape(const char *what, const d5_tensor_desc *d, const char *expected)
{
    char got[96];
    d5__shape_str(d, got, sizeof got);
    return d5_error(D5_ERR_SHAPE, "RotaryEmbedding: %s has shape %s; expected %s", what, got,
                    expected);
}

/* The strides of a [B or 1, S or 1, ...] tensor's first two dims (0 where 1). */
static int lead_strides(const d5_tensor_desc *d, const rope *r, int64_t inner, int64_t *stride)
{
    const int64_t full[2] = {r->batch, r->seq};
    int64_t step[2] = {d->shape[1] * inner, inner};
    for (int k = 0; k < 2; k++) {
        if (d->shape[k] != full[k] && d->shape[k] != 1) return 0;
        stride[k] = d->shape[k] == 1 ? 0 : step[k];
    }
    return 1;
}

static d5_status x_geometry(const d5_tensor_desc *x, const d5_attrs *attrs, rope *r)
{
    int64_t heads, rd;
    d5_status s = d5_attrs_int(attrs, "num_heads", 0, &heads);
    if (s == D5_OK) s = d5_attrs_int(attrs, "rotary_embedding_dim", 0, &rd);
    if (s != D5_OK) return s;
    if (x->ndim != 3 && x->ndim != 4) return bad_shape("X", x, "3 or 4 dimensions");
    r->rank3 = x->ndim == 3;
    r->batch = x->shape[0];
    if (r->rank3) {
        if (heads <= 0 || x->shape[2] % heads != 0)
            return d5_error(D5_ERR_INVALID,
                            "RotaryEmbedding: a 3-d X of %lld values per position needs the "
                            "attribute num_heads (> 0) dividing them; got %lld",
                            (long long)x->shape[2], (long long)heads);
        r->seq = x->shape[1];
        r->heads = heads;
        r->head_size = x->shape[2] / heads;
    } else {
        r->heads = x->shape[1];
        r->seq = x->shape[2];
        r->head_size = x->shape[3];
    }
    if (rd == 0) rd = r->head_size;
    if (rd < 0 || rd > r->head_size || rd % 2 != 0)
        return d5_error(D5_ERR_INVALID,
                        "RotaryEmbedding: rotary_embedding_dim is %lld; expected an even size "
                        "of at most the head size %lld (0: the head size)",
                        (long long)rd, (long long)r->head_size);
    r->half = rd / 2;
    return D5_OK;
}

static d5_status cache_geometry(const d5_tensor *in, int32_t nin, rope *r)
{
    r->has_pos = d5__has_input(in, nin, 3);
    char want[160];
    for (int32_t i = 1; i < 3; i++) {
        const d5_tensor_desc *c = &in[i].desc;
        const char *name = i == 1 ? "cos_cache" : "sin_cache";
        if (r->has_pos) {
            snprintf(want, sizeof want, "[positions, %lld] (2-d with position_ids)",
                     (long long)r->half);
            if (c->ndim != 2 || c->shape[1] != r->half ||
                (i == 2 && c->shape[0] != in[1].desc.shape[0]))
                return bad_shape(name, c, want);
            r->rows = c->shape[0];
        } else {
            snprintf(want, sizeof want, "[%lld, %lld, %lld] (3-d without position_ids)",
                     (long long)r->batch, (long long)r->seq, (long long)r->half);
            if (c->ndim != 3 || c->shape[2] != r->half ||
                !lead_strides(c, r, r->half, r->cache_stride) ||
                (i == 2 && !d5__same_shape(c, &in[1].desc)))
                return bad_shape(name, c, want);
        }
    }
    if (!r->has_pos) return D5_OK;
    const d5_tensor_desc *p = &in[3].desc;
    if (p->dtype != D5_I64)
        return d5_error(D5_ERR_INVALID,
                        "RotaryEmbedding: position_ids has data type %s; expected int64",
                        d5_dtype_name((d5_dtype)p->dtype));
    snprintf(want, sizeof want, "[%lld, %lld] (batch, sequence)", (long long)r->batch,
             (long long)r->seq);
    if (p->ndim != 2 || !lead_strides(p, r, 1, r->pos_stride))
        return bad_shape("position_ids", p, want);
    return D5_OK;
}

static d5_status rope_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    d5_status s = d5__need_float("RotaryEmbedding", in, nin, 0);
    for (int32_t i = 1; s == D5_OK && i < 3; i++)
        s = d5__same_type("RotaryEmbedding", in, nin, i, 0);
    if (s == D5_OK && (!d5__has_input(in, nin, 1) || !d5__has_input(in, nin, 2)))
        return d5_error(D5_ERR_INVALID, "RotaryEmbedding: cos_cache and sin_cache are required");
    rope r = {0};
    if (s == D5_OK) s = x_geometry(&in[0].desc, args->attrs, &r);
    if (s == D5_OK) s = cache_geometry(in, nin, &r);
    int64_t interleaved = 0;
    if (s == D5_OK) s = d5_attrs_int(args->attrs, "interleaved", 0, &interleaved);
    if (s != D5_OK) return s;
    r.interleaved = interleaved != 0;
    args->outputs[0] = in[0].desc;
    return d5__ref_state(state, &r, sizeof r, "RotaryEmbedding");
}

/* The offset of head h's row at (b, position i) in X. */
static int64_t x_row(const rope *r, int64_t b, int64_t i, int64_t h)
{
    return r->rank3 ? ((b * r->seq + i) * r->heads + h) * r->head_size
                    : ((b * r->heads + h) * r->seq + i) * r->head_size;
}

/* The offset of the caches' row for (b, i); -1 with D5_ERR_RANGE set for a
 * position outside them. */
static int64_t cache_row(const rope *r, const d5_rt *in, int64_t b, int64_t i)
{
    if (!r->has_pos) return b * r->cache_stride[0] + i * r->cache_stride[1];
    double p = in[3].data[b * r->pos_stride[0] + i * r->pos_stride[1]];
    if (p < 0 || p >= (double)r->rows) {
        d5_error(D5_ERR_RANGE,
                 "RotaryEmbedding: position_ids[%lld, %lld] is %.0f; the caches have rows 0 to "
                 "%lld",
                 (long long)b, (long long)i, p, (long long)r->rows - 1);
        return -1;
    }
    return (int64_t)p * r->half;
}

/* The indices in a head of pair k's two values. */
static void pair(const rope *r, int64_t k, int64_t *i1, int64_t *i2)
{
    *i1 = r->interleaved ? 2 * k : k;
    *i2 = r->interleaved ? 2 * k + 1 : k + r->half;
}

static d5_status rope_forward(void *state, const d5_ref_call *call)
{
    const rope *r = state;
    const d5_rt *in = call->inputs;
    double *y = call->outputs[0].data;
    for (int64_t b = 0; b < r->batch; b++)
        for (int64_t i = 0; i < r->seq; i++) {
            int64_t c = cache_row(r, in, b, i);
            if (c < 0) return D5_ERR_RANGE;
            const double *cs = in[1].data + c, *sn = in[2].data + c;
            for (int64_t h = 0; h < r->heads; h++) {
                int64_t o = x_row(r, b, i, h), i1, i2;
                const double *x = in[0].data + o;
                for (int64_t d = 2 * r->half; d < r->head_size; d++) y[o + d] = x[d];
                for (int64_t k = 0; k < r->half; k++) {
                    pair(r, k, &i1, &i2);
                    y[o + i1] = cs[k] * x[i1] - sn[k] * x[i2];
                    y[o + i2] = sn[k] * x[i1] + cs[k] * x[i2];
                }
            }
        }
    return D5_OK;
}

static d5_status rope_backward(void *state, const d5_ref_call *call)
{
    const rope *r = state;
    const d5_rt *in = call->inputs;
    const double *dy = call->grad_outputs[0].data;
    double *dx = call->grad_inputs[0].data, *dc = call->grad_inputs[1].data,
           *ds = call->grad_inputs[2].data;
    for (int64_t b = 0; b < r->batch; b++)
        for (int64_t i = 0; i < r->seq; i++) {
            int64_t c = cache_row(r, in, b, i);
            if (c < 0) return D5_ERR_RANGE;
            const double *cs = in[1].data + c, *sn = in[2].data + c;
            for (int64_t h = 0; h < r->heads; h++) {
                int64_t o = x_row(r, b, i, h), i1, i2;
                const double *x = in[0].data + o, *g = dy + o;
                for (int64_t d = 2 * r->half; dx && d < r->head_size; d++) dx[o + d] += g[d];
                for (int64_t k = 0; k < r->half; k++) {
                    pair(r, k, &i1, &i2);
                    if (dx) {
                        dx[o + i1] += cs[k] * g[i1] + sn[k] * g[i2];
                        dx[o + i2] += cs[k] * g[i2] - sn[k] * g[i1];
                    }
                    if (dc) dc[c + k] += x[i1] * g[i1] + x[i2] * g[i2];
                    if (ds) ds[c + k] += x[i1] * g[i2] - x[i2] * g[i1];
                }
            }
        }
    return D5_OK;
}

/* Six operations per rotated pair. */
static double rope_flops(void *state, const d5_ref_shapes *shapes)
{
    const rope *r = state;
    (void)shapes;
    return 6.0 * (double)r->batch * (double)r->seq * (double)r->heads * (double)r->half;
}

D5_REF_OPERATOR(RotaryEmbedding, 3, 4, 1, 1, rope_create, rope_forward, rope_backward, NULL,
                rope_flops);
