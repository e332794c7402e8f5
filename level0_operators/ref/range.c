/* Range (ONNX opsets 11 and 27): the 1-d sequence start, start + delta, ...
 * short of limit, of length max(ceil((limit - start) / delta), 0). start,
 * limit and delta are scalars of one data type (float32, float64, int16,
 * int32, int64; from opset 27 float16 and bfloat16 too), which the output
 * takes. For float16 and bfloat16, the attribute stash_type (opset 27: 1,
 * float32, the default, or 11, float64) is the precision in which the length
 * and the elements start + i * delta are computed, from start, limit and
 * delta converted to it, before each element is rounded back to the input
 * type; it is ignored for the other types. Their values decide the output's
 * length, so the ref backend needs them known at create (constants or
 * initializers). No gradient.
 * https://onnx.ai/onnx/operators/onnx__Range.html */
#include "util.h"

#include <math.h>

typedef struct range {
    double start, delta;
    int stash_f32; /* float16 or bfloat16 computed in float32 */
} range;

static const char *const names[3] = {"start", "limit", "delta"};

/* The value of scalar input i, known at create. */
static d5_status scalar(const d5_tensor *in, int32_t i, double *v)
{
    const d5_tensor *t = &in[i];
    if (d5_tensor_desc_numel(&t->desc) != 1 || t->desc.ndim > 1)
        return d5_error(D5_ERR_INVALID, "Range: input %d (%s) must be a scalar", (int)i, names[i]);
    if (!t->data)
        return d5_error(D5_ERR_UNSUPPORTED,
                        "Range: input %d (%s) must be a constant: the inputs' values decide the "
                        "output's length",
                        (int)i, names[i]);
    switch (t->desc.dtype) {
    case D5_F32: *v = *(const float *)t->data; break;
    case D5_F64: *v = *(const double *)t->data; break;
    case D5_I64: *v = (double)*(const int64_t *)t->data; break;
    case D5_I32: *v = *(const int32_t *)t->data; break;
    case D5_F16: *v = d5_f32_from_f16(*(const uint16_t *)t->data); break;
    case D5_BF16: *v = d5_f32_from_bf16(*(const uint16_t *)t->data); break;
    default: *v = *(const int16_t *)t->data; break;
    }
    return D5_OK;
}

static d5_status range_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    d5_tensor_desc *out = args->outputs;
    double v[3];
    int64_t opset, stash_type;
    d5_status s = d5__ref_opset("Range", args->attrs, 27, &opset);
    if (s == D5_OK) s = d5_attrs_int(args->attrs, "stash_type", 1, &stash_type);
    if (s != D5_OK) return s;
    d5_dtypes types =
        D5__DT(D5_F32) | D5__DT(D5_F64) | D5__DT(D5_I64) | D5__DT(D5_I32) | D5__DT(D5_I16);
    if (opset >= 27) types |= D5__DT(D5_F16) | D5__DT(D5_BF16);
    for (int32_t i = 0; i < 3; i++) {
        if (!d5__has_input(in, nin, i))
            return d5_error(D5_ERR_INVALID, "Range: input %d (%s) is required", (int)i, names[i]);
        int32_t dt = in[i].desc.dtype;
        if (!d5__in_types(dt, types))
            return d5_error(D5_ERR_INVALID,
                            "Range: input %d (%s) has data type %s, expected float32, float64, "
                            "%sint16, int32 or int64%s",
                            (int)i, names[i], d5_dtype_name((d5_dtype)dt),
                            opset >= 27 ? "float16, bfloat16, " : "",
                            opset >= 27 ? "" : " (float16 and bfloat16 from opset 27)");
        if (dt != in[0].desc.dtype)
            return d5_error(D5_ERR_INVALID, "Range: input %d (%s) is %s but start is %s", (int)i,
                            names[i], d5_dtype_name((d5_dtype)dt),
                            d5_dtype_name((d5_dtype)in[0].desc.dtype));
    }
    for (int32_t i = 0; i < 3 && s == D5_OK; i++) s = scalar(in, i, &v[i]);
    if (s != D5_OK) return s;
    int half = in[0].desc.dtype == D5_F16 || in[0].desc.dtype == D5_BF16;
    if (half && stash_type != 1 && stash_type != 11)
        return d5_error(D5_ERR_INVALID,
                        "Range: stash_type is %lld, expected 1 (float32) or 11 (float64)",
                        (long long)stash_type);
    if (v[2] == 0) return d5_error(D5_ERR_INVALID, "Range: delta is 0");
    int f32 = half && stash_type == 1;
    double count =
        f32 ? ceilf((float)((float)v[1] - (float)v[0]) / (float)v[2]) : ceil((v[1] - v[0]) / v[2]);
    if (!(count < 0x1p62)) /* NaN or infinite inputs, or absurdly long */
        return d5_error(D5_ERR_RANGE, "Range: start %g, limit %g, delta %g give %g elements", v[0],
                        v[1], v[2], count);
    range *r = d5_alloc(sizeof *r, "Range");
    if (!r) return D5_ERR_NOMEM;
    r->start = v[0];
    r->delta = v[2];
    r->stash_f32 = f32;
    *state = r;
    out[0].dtype = in[0].desc.dtype;
    out[0].ndim = 1;
    out[0].shape[0] = count > 0 ? (int64_t)count : 0;
    return D5_OK;
}

static d5_status range_forward(void *state, const d5_ref_call *call)
{
    d5_rt *out = call->outputs;
    const range *r = state;
    for (int64_t i = 0; i < out[0].numel; i++)
        out[0].data[i] = r->stash_f32 ? (double)((float)r->start + (float)i * (float)r->delta)
                                      : r->start + (double)i * r->delta;
    return D5_OK;
}

D5_REF_OPERATOR_NO_BACKWARD(Range, 3, 3, 1, 1, range_create, range_forward, NULL, NULL);
