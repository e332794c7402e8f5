/* Range (ONNX opset 11): the 1-d sequence start, start + delta, ... short of
 * limit, of length max(ceil((limit - start) / delta), 0). start, limit and
 * delta are scalars of one data type (float32, float64, int16, int32, int64),
 * which the output takes. Their values decide the output's length, so the ref
 * backend needs them known at create (constants or initializers). No gradient.
 * https://onnx.ai/onnx/operators/onnx__Range.html */
#include "util.h"

#include <math.h>

typedef struct range {
    double start, delta;
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
    for (int32_t i = 0; i < 3; i++) {
        if (!d5__has_input(in, nin, i))
            return d5_error(D5_ERR_INVALID, "Range: input %d (%s) is required", (int)i, names[i]);
        int32_t dt = in[i].desc.dtype;
        if (dt != D5_F32 && dt != D5_F64 && dt != D5_I64 && dt != D5_I32 && dt != D5_I16)
            return d5_error(D5_ERR_INVALID,
                            "Range: input %d (%s) has data type %s, expected float32, float64, "
                            "int16, int32 or int64",
                            (int)i, names[i], d5_dtype_name((d5_dtype)dt));
        if (dt != in[0].desc.dtype)
            return d5_error(D5_ERR_INVALID, "Range: input %d (%s) is %s but start is %s", (int)i,
                            names[i], d5_dtype_name((d5_dtype)dt),
                            d5_dtype_name((d5_dtype)in[0].desc.dtype));
    }
    for (int32_t i = 0; i < 3; i++) {
        d5_status s = scalar(in, i, &v[i]);
        if (s != D5_OK) return s;
    }
    if (v[2] == 0) return d5_error(D5_ERR_INVALID, "Range: delta is 0");
    double count = ceil((v[1] - v[0]) / v[2]);
    if (!(count < 0x1p62)) /* NaN or infinite inputs, or absurdly long */
        return d5_error(D5_ERR_RANGE, "Range: start %g, limit %g, delta %g give %g elements", v[0],
                        v[1], v[2], count);
    range *r = d5_alloc(sizeof *r, "Range");
    if (!r) return D5_ERR_NOMEM;
    r->start = v[0];
    r->delta = v[2];
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
    for (int64_t i = 0; i < out[0].numel; i++) out[0].data[i] = r->start + (double)i * r->delta;
    return D5_OK;
}

D5_REF_OPERATOR_NO_BACKWARD(Range, 3, 3, 1, 1, range_create, range_forward, NULL, NULL);
