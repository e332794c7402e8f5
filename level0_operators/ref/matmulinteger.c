/* MatMulInteger (ONNX opset 10): the matrix product of numpy.matmul on 8-bit
 * integers, with int32 output:
 *   Y[t, i, j] = sum over p of (A[t, i, p] - a_zero_point) * (B[t, p, j] - b_zero_point)
 * A and B are uint8 or int8 (each on its own), batch dimensions broadcast. The
 * optional zero points (of A's and B's types, 0 when omitted) hold one value,
 * one per row of A ([M] or [..., M, 1]) or one per column of B ([N] or
 * [..., 1, N]). The sum is exact; a result outside int32 saturates (the
 * specification allows overflow only in 32-bit accumulation).
 * https://onnx.ai/onnx/operators/onnx__MatMulInteger.html */
#include "quant.h"

typedef struct matmulinteger {
    d5_qmatmul g;
    d5_qmatmul_param azp, bzp;
} matmulinteger;

static d5_status matmulinteger_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    d5_tensor_desc *out = args->outputs;
    const char *op = "MatMulInteger";
    d5_status s = d5__quant_need_int8(op, in, nin, 0, "A");
    if (s == D5_OK) s = d5__quant_need_int8(op, in, nin, 1, "B");
    if (s != D5_OK) return s;
    static const char *const names[] = {"a_zero_point", "b_zero_point"};
    for (int32_t i = 2; i < 4; i++)
        if (d5__has_input(in, nin, i) && in[i].desc.dtype != in[i - 2].desc.dtype)
            return d5_error(D5_ERR_INVALID,
                            "MatMulInteger: input %d (%s) has data type %s, expected %s (that of "
                            "%c)",
                            (int)i, names[i - 2], d5_dtype_name((d5_dtype)in[i].desc.dtype),
                            d5_dtype_name((d5_dtype)in[i - 2].desc.dtype), "AB"[i - 2]);
    matmulinteger m;
    out[0].dtype = D5_I32;
    s = d5__qmatmul_geometry(op, &in[0].desc, &in[1].desc, &m.g, &out[0]);
    if (s == D5_OK)
        s = d5__qmatmul_param(op, names[0], nin > 2 ? &in[2].desc : NULL, 'a', &m.g, &m.azp);
    if (s == D5_OK)
        s = d5__qmatmul_param(op, names[1], nin > 3 ? &in[3].desc : NULL, 'b', &m.g, &m.bzp);
    if (s != D5_OK) return s;
    matmulinteger *p = d5_alloc(sizeof *p, op);
    if (!p) return D5_ERR_NOMEM;
    *p = m;
    *state = p;
    return D5_OK;
}

static d5_status matmulinteger_forward(void *state, const d5_ref_call *call)
{
    const d5_rt *in = call->inputs;
    int32_t nin = call->ninputs;
    d5_rt *out = call->outputs;
    const matmulinteger *m = state;
    d5__qmatmul_accumulate(&m->g, in[0].data, nin > 2 ? in[2].data : NULL, &m->azp, in[1].data,
                           nin > 3 ? in[3].data : NULL, &m->bzp, out[0].data);
    return D5_OK;
}

static double matmulinteger_flops(void *state, const d5_ref_shapes *shapes)
{
    (void)shapes;
    return d5__qmatmul_flops(&((const matmulinteger *)state)->g);
}

D5_REF_OPERATOR_NO_BACKWARD(MatMulInteger, 2, 4, 1, 1, matmulinteger_create, matmulinteger_forward,
                            NULL, matmulinteger_flops);
