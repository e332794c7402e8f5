/* EyeLike (ONNX opset 9; opset 22 only adds data types): a 2-d tensor of the
 * input's shape (any data type; its values are not read) with ones on the
 * diagonal shifted by k (attribute, default 0: element (i, j) is 1 where
 * j - i = k, positive k above the main diagonal) and zeros elsewhere. The
 * attribute dtype (a TensorProto data type number) gives the output's data
 * type, by default the input's. No gradient.
 * https://onnx.ai/onnx/operators/onnx__EyeLike.html */
#include "extra.h"

typedef struct eyelike {
    int64_t rows, cols, k;
} eyelike;

static d5_status eyelike_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    const d5_attrs *attrs = args->attrs;
    d5_tensor_desc *out = args->outputs;
    d5_status s = d5__need_types("EyeLike", in, nin, 0, D5__ANY);
    if (s != D5_OK) return s;
    const d5_tensor_desc *x = &in[0].desc;
    if (x->ndim != 2)
        return d5_error(D5_ERR_SHAPE, "EyeLike: input has %d dims, expected 2", (int)x->ndim);
    int64_t k, onnx_type;
    int32_t dtype = x->dtype;
    s = d5_attrs_int(attrs, "k", 0, &k);
    if (s == D5_OK && d5_attrs_find(attrs, "dtype")) {
        s = d5_attrs_int(attrs, "dtype", 0, &onnx_type);
        if (s == D5_OK) s = d5__attr_dtype("EyeLike", "dtype", onnx_type, &dtype);
    }
    if (s != D5_OK) return s;
    eyelike *e = d5_alloc(sizeof *e, "EyeLike");
    if (!e) return D5_ERR_NOMEM;
    *e = (eyelike){x->shape[0], x->shape[1], k};
    *state = e;
    out[0] = *x;
    out[0].dtype = dtype;
    return D5_OK;
}

static d5_status eyelike_forward(void *state, const d5_ref_call *call)
{
    d5_rt *out = call->outputs;
    const eyelike *e = state;
    for (int64_t i = 0; i < e->rows; i++)
        for (int64_t j = 0; j < e->cols; j++) out[0].data[i * e->cols + j] = j - i == e->k;
    return D5_OK;
}

D5_REF_OPERATOR_NO_BACKWARD(EyeLike, 1, 1, 1, 1, eyelike_create, eyelike_forward, NULL, NULL);
