/* TensorScatter (ONNX opset 24): a key or value cache update. past_cache has
 * shape [B, D1, ..., max_len, ..., Dn], the sequence axis being `axis`
 * (default -2; never 0, the batch); update has the same shape but len <=
 * max_len along the axis. present_cache is past_cache with, for every index
 * before the axis (b, ...) and s < len, the slice at sequence position
 * write_indices[b] + s replaced by update's slice s. write_indices (int64
 * [B], default zeros) is read at run time: in mode "linear" (the default)
 * a position outside [0, max_len) is D5_ERR_RANGE; in mode "circular" it is
 * taken modulo max_len (only the sequence index wraps; ONNX's reference also
 * wraps the indices before the axis, which differs only for indices >=
 * max_len, where it would write elsewhere than the spec says).
 *
 * Elements are copied as bytes, so that every type is exact (64-bit integers
 * beyond 2^53, float8, strings, whose bytes the operator copies into its own
 * storage until its next forward call).
 *
 * Gradient: dpast = dpresent with the written slices zeroed; dupdate = the
 * written slices of dpresent.
 * https://onnx.ai/onnx/operators/onnx__TensorScatter.html */
#include "util.h"

#include <stdio.h>
#include <string.h>

typedef struct scatter {
    int64_t batch; /* dims before the axis: batch * per_batch rows */
    int64_t rows;  /* product of the dims before the axis */
    int64_t max_len, len;
    int64_t inner; /* elements per sequence position: product of the dims after the axis */
    size_t esize;  /* bytes per element */
    int32_t dtype;
    int circular;
    int64_t numel;   /* of past_cache */
    d5_strpool pool; /* string outputs */
} scatter;

static d5_status scatter_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    d5_status s = d5__need_input("TensorScatter", in, nin, 0, "past_cache");
    if (s == D5_OK) s = d5__need_input("TensorScatter", in, nin, 1, "update");
    if (s == D5_OK) s = d5__same_type("TensorScatter", in, nin, 1, 0);
    if (s != D5_OK) return s;
    const d5_tensor_desc *past = &in[0].desc, *upd = &in[1].desc;
    size_t esize = d5_dtype_size((d5_dtype)past->dtype);
    if (esize == 0)
        return d5_error(D5_ERR_UNSUPPORTED, "TensorScatter: past_cache has data type %s",
                        d5_dtype_name((d5_dtype)past->dtype));
    int64_t axis;
    const char *mode;
    int32_t ax = 0;
    s = d5_attrs_int(args->attrs, "axis", -2, &axis);
    if (s == D5_OK) s = d5_attrs_string(args->attrs, "mode", "linear", &mode);
    if (s == D5_OK) s = d5__axis("TensorScatter", axis, past->ndim, &ax);
    if (s != D5_OK) return s;
    if (ax == 0)
        return d5_error(D5_ERR_INVALID,
                        "TensorScatter: axis %lld is the batch axis; expected 1 to %d or -%d to -1",
                        (long long)axis, (int)past->ndim - 1, (int)past->ndim - 1);
    if (strcmp(mode, "linear") != 0 && strcmp(mode, "circular") != 0)
        return d5_error(D5_ERR_INVALID,
                        "TensorScatter: mode is \"%s\"; expected \"linear\" or \"circular\"", mode);
    int ok = upd->ndim == past->ndim;
    for (int32_t d = 0; ok && d < past->ndim; d++)
        ok = d == ax ? upd->shape[d] <= past->shape[d] : upd->shape[d] == past->shape[d];
    if (!ok) {
        char got[96], want[96];
        d5__shape_str(upd, got, sizeof got);
        d5__shape_str(past, want, sizeof want);
        return d5_error(D5_ERR_SHAPE,
                        "TensorScatter: update has shape %s; expected past_cache's %s but at "
                        "most as long along axis %d",
                        got, want, (int)ax);
    }
    if (d5__has_input(in, nin, 2)) {
        const d5_tensor_desc *w = &in[2].desc;
        if (w->dtype != D5_I64 || w->ndim != 1 || w->shape[0] != past->shape[0]) {
            char got[96];
            d5__shape_str(w, got, sizeof got);
            return d5_error(D5_ERR_INVALID,
                            "TensorScatter: write_indices is %s%s; expected int64[%lld] (one "
                            "index per batch)",
                            d5_dtype_name((d5_dtype)w->dtype), got, (long long)past->shape[0]);
        }
    }
    scatter *c = d5_calloc(1, sizeof *c, "TensorScatter");
    if (!c) return D5_ERR_NOMEM;
    c->batch = past->shape[0];
    c->rows = 1;
    c->inner = 1;
    for (int32_t d = 0; d < ax; d++) c->rows *= past->shape[d];
    for (int32_t d = ax + 1; d < past->ndim; d++) c->inner *= past->shape[d];
    c->max_len = past->shape[ax];
    c->len = upd->shape[ax];
    c->esize = esize;
    c->dtype = past->dtype;
    c->circular = strcmp(mode, "circular") == 0;
    c->numel = d5_tensor_desc_numel(past);
    args->outputs[0] = *past;
    *state = c;
    return D5_OK;
}

static void scatter_destroy(void *state)
{
    scatter *c = state;
    if (c) d5_strpool_clear(&c->pool);
    d5_free(c);
}

/* The cache position of update position s in row r; -1 with D5_ERR_RANGE set
 * when it falls outside the cache in linear mode. */
static int64_t position(const scatter *c, const d5_tensor *windex, int64_t r, int64_t s)
{
    int64_t b = r / (c->rows / c->batch);
    int64_t w = windex && windex->data ? ((const int64_t *)windex->data)[b] : 0;
    if (c->circular) {
        int64_t p = (w % c->max_len + s % c->max_len) % c->max_len;
        return p < 0 ? p + c->max_len : p;
    }
    if (w < 0 || w > c->max_len - c->len) {
        d5_error(D5_ERR_RANGE,
                 "TensorScatter: write_indices[%lld] is %lld; in linear mode it must be 0 to "
                 "%lld (max sequence length %lld - update length %lld)",
                 (long long)b, (long long)w, (long long)(c->max_len - c->len),
                 (long long)c->max_len, (long long)c->len);
        return -1;
    }
    return w + s;
}

static const d5_tensor *write_indices(const d5_op_call *call)
{
    return call->ninputs > 2 && call->inputs[2].desc.dtype != D5_DTYPE_INVALID ? &call->inputs[2]
                                                                               : NULL;
}

/* Copies the strings of the n elements at src to dst, the bytes into the pool. */
static d5_status copy_strings(scatter *c, const char *const *src, const char **dst, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        const char *t = src[i] ? src[i] : "";
        dst[i] = d5_strpool_add(&c->pool, t, strlen(t));
        if (!dst[i]) return D5_ERR_NOMEM;
    }
    return D5_OK;
}

static d5_status scatter_forward(void *state, const d5_op_call *call)
{
    scatter *c = state;
    const char *past = call->inputs[0].data, *upd = call->inputs[1].data;
    char *out = call->outputs[0].data;
    const d5_tensor *w = write_indices(call);
    size_t slice = (size_t)c->inner * c->esize;
    int strings = c->dtype == D5_STRING;
    if (strings) d5_strpool_clear(&c->pool);
    if (!strings)
        memcpy(out, past, (size_t)c->numel * c->esize);
    else if (copy_strings(c, (const char *const *)past, (const char **)out, c->numel) != D5_OK)
        return D5_ERR_NOMEM;
    for (int64_t r = 0; r < c->rows; r++)
        for (int64_t s = 0; s < c->len; s++) {
            int64_t p = position(c, w, r, s);
            if (p < 0) return D5_ERR_RANGE;
            char *dst = out + (size_t)(r * c->max_len + p) * slice;
            const char *src = upd + (size_t)(r * c->len + s) * slice;
            if (!strings)
                memcpy(dst, src, slice);
            else if (copy_strings(c, (const char *const *)src, (const char **)dst, c->inner) !=
                     D5_OK)
                return D5_ERR_NOMEM;
        }
    return D5_OK;
}

static d5_status scatter_backward(void *state, const d5_op_call *call)
{
    const scatter *c = state;
    const char *g = call->grad_outputs[0].data;
    char *dpast = call->grad_inputs[0].data, *dupd = call->grad_inputs[1].data;
    const d5_tensor *w = write_indices(call);
    size_t slice = (size_t)c->inner * c->esize;
    if (dpast) {
        if (g)
            memcpy(dpast, g, (size_t)c->numel * c->esize);
        else
            memset(dpast, 0, (size_t)c->numel * c->esize);
    }
    for (int64_t r = 0; r < c->rows; r++)
        for (int64_t s = 0; s < c->len; s++) {
            int64_t p = position(c, w, r, s);
            if (p < 0) return D5_ERR_RANGE;
            size_t at = (size_t)(r * c->max_len + p) * slice;
            if (dupd) {
                char *dst = dupd + (size_t)(r * c->len + s) * slice;
                if (g)
                    memcpy(dst, g + at, slice);
                else
                    memset(dst, 0, slice);
            }
            if (dpast) memset(dpast + at, 0, slice); /* all-zero bytes are 0.0 */
        }
    return D5_OK;
}

/* No arithmetic; the bytes of the copy of past_cache and of the update read
 * and written. */
static void scatter_cost(void *state, double *flops, double *bytes)
{
    const scatter *c = state;
    *flops = 0;
    *bytes =
        (double)c->esize * (2.0 * (double)c->numel + 2.0 * (double)(c->rows * c->len * c->inner));
}

/* clang-format off */
const d5_op_desc d5__op_ref_TensorScatter = {
    .abi_version = D5_OP_ABI_VERSION, .flags = D5_OP_F64 | D5_OP_HAS_BACKWARD,
    .name = "TensorScatter", .backend = "ref", .min_inputs = 2, .max_inputs = 3,
    .min_outputs = 1, .max_outputs = 1, .create = scatter_create, .forward = scatter_forward,
    .backward = scatter_backward, .destroy = scatter_destroy, .cost = scatter_cost};
/* clang-format on */
