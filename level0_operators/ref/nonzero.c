/* NonZero (ONNX opset 13; opset 9 the same without bfloat16): the indices of
 * the nonzero elements of X (any data type; NaN counts as nonzero), an int64
 * tensor [rank(X), count] whose column j holds the coordinates of the j-th
 * nonzero element in row-major order, as numpy.nonzero stacks them; a scalar
 * gives [0, count], as the spec says. The output's shape depends on X's values,
 * so X must be known at create (a constant or initializer): otherwise
 * D5_ERR_UNSUPPORTED. No gradient.
 * https://onnx.ai/onnx/operators/onnx__NonZero.html */
#include "extra.h"

typedef struct nonzero {
    int64_t count; /* nonzero elements of X at create */
} nonzero;

static int64_t count_nonzero(const double *x, int64_t n)
{
    int64_t count = 0;
    for (int64_t i = 0; i < n; i++) count += x[i] != 0;
    return count;
}

static d5_status nonzero_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    d5_tensor_desc *out = args->outputs;
    d5_status s = d5__need_types("NonZero", in, nin, 0, D5__ANY);
    double *x = NULL;
    int64_t n = 0;
    if (s == D5_OK) s = d5__known_values("NonZero", in, nin, 0, "X", &x, &n);
    if (s != D5_OK) return s;
    nonzero *z = d5_alloc(sizeof *z, "NonZero");
    if (!z) {
        d5_free(x);
        return D5_ERR_NOMEM;
    }
    z->count = count_nonzero(x, n);
    d5_free(x);
    *state = z;
    out[0].dtype = D5_I64;
    out[0].ndim = 2;
    out[0].shape[0] = in[0].desc.ndim;
    out[0].shape[1] = z->count;
    return D5_OK;
}

static d5_status nonzero_forward(void *state, const d5_ref_call *call)
{
    const d5_rt *in = call->inputs;
    d5_rt *out = call->outputs;
    const nonzero *z = state;
    const d5_tensor_desc *x = in[0].desc;
    int64_t count = count_nonzero(in[0].data, in[0].numel);
    if (count != z->count)
        return d5_error(D5_ERR_SHAPE,
                        "NonZero: input X has %lld nonzero elements, but %lld at create, which "
                        "sized the output",
                        (long long)count, (long long)z->count);
    int64_t j = 0;
    for (int64_t i = 0; i < in[0].numel; i++) {
        if (in[0].data[i] == 0) continue;
        int64_t rest = i;
        for (int32_t d = x->ndim - 1; d >= 0; d--) {
            out[0].data[d * count + j] = (double)(rest % x->shape[d]);
            rest /= x->shape[d];
        }
        j++;
    }
    return D5_OK;
}

D5_REF_OPERATOR_NO_BACKWARD(NonZero, 1, 1, 1, 1, nonzero_create, nonzero_forward, NULL, NULL);
