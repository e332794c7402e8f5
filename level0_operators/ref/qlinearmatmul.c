/* QLinearMatMul (ONNX opsets 10 and 21): numpy.matmul of quantised a and b (uint8 or
 * int8, each on its own) into quantised y (the type of y_zero_point):
 *   acc[t, i, j] = sum over p of (a[t, i, p] - a_zero_point) * (b[t, p, j] - b_zero_point)
 *   y = saturate(round(acc * (a_scale * b_scale / y_scale)) + y_zero_point)
 * rounding half to even, saturating to y's type; the multiplier is formed in
 * the scales' type (float32, or from opset 21 float16 or bfloat16, rounded
 * after each operation as numpy does) and the product in double. a's scale and zero point hold one
 * value or one per row ([M] or [..., M, 1]), b's one value or one per column ([N] or
 * [..., 1, N]); y's hold one value. Batch dimensions broadcast.
 * https://onnx.ai/onnx/operators/onnx__QLinearMatMul.html */
#include "quant.h"

typedef struct qlinearmatmul {
    d5_qmatmul g;
    d5_qmatmul_param as, azp, bs, bzp;
    double lo, hi;
    int32_t scale_type; /* float32, or float16 and bfloat16 from opset 21 */
} qlinearmatmul;

/* a_scale * b_scale / y_scale in the scales' type, as numpy computes it:
 * float16 and bfloat16 through float32, rounded after each operation. */
static double multiplier(int32_t type, double as, double bs, double ys)
{
    if (type == D5_F16) {
        float p = d5_f32_from_f16(d5_f16_from_f32((float)(as * bs)));
        return d5_f32_from_f16(d5_f16_from_f32(p / (float)ys));
    }
    if (type == D5_BF16) {
        float p = d5_f32_from_bf16(d5_bf16_from_f32((float)(as * bs)));
        return d5_f32_from_bf16(d5_bf16_from_f32(p / (float)ys));
    }
    return d5__quant_multiplier(as, bs, ys);
}

static const char *const names[] = {"a",       "a_scale",      "a_zero_point", "b",
                                    "b_scale", "b_zero_point", "y_scale",      "y_zero_point"};

/* Scale (input i) and zero point (i + 1) of operand i - 1, on `side`. */
static d5_status operand_params(const d5_tensor *in, int32_t i, char side, const d5_qmatmul *g,
                                d5_qmatmul_param *scale, d5_qmatmul_param *zp)
{
    const char *op = "QLinearMatMul";
    if (in[i].desc.dtype != in[6].desc.dtype)
        return d5_error(D5_ERR_INVALID,
                        "%s: input %d (%s) has data type %s, expected %s (that of y_scale)", op,
                        (int)i, names[i], d5_dtype_name((d5_dtype)in[i].desc.dtype),
                        d5_dtype_name((d5_dtype)in[6].desc.dtype));
    if (in[i + 1].desc.dtype != in[i - 1].desc.dtype)
        return d5_error(D5_ERR_INVALID,
                        "%s: input %d (%s) has data type %s, expected %s (that of %s)", op,
                        (int)(i + 1), names[i + 1], d5_dtype_name((d5_dtype)in[i + 1].desc.dtype),
                        d5_dtype_name((d5_dtype)in[i - 1].desc.dtype), names[i - 1]);
    d5_status s = d5__qmatmul_param(op, names[i], &in[i].desc, side, g, scale);
    if (s == D5_OK) s = d5__qmatmul_param(op, names[i + 1], &in[i + 1].desc, side, g, zp);
    return s;
}

static d5_status qlinearmatmul_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    d5_tensor_desc *out = args->outputs;
    const char *op = "QLinearMatMul";
    for (int32_t i = 0; i < 8; i++)
        if (!d5__has_input(in, nin, i))
            return d5_error(D5_ERR_INVALID, "%s: input %d (%s) is required", op, (int)i, names[i]);
    d5_status s = d5__quant_need_int8(op, in, nin, 0, "a");
    if (s == D5_OK) s = d5__quant_need_int8(op, in, nin, 3, "b");
    if (s == D5_OK && in[6].desc.dtype != D5_F32 && in[6].desc.dtype != D5_F16 &&
        in[6].desc.dtype != D5_BF16)
        s = d5_error(
            D5_ERR_INVALID,
            "%s: input 6 (y_scale) has data type %s, expected float32, float16 or bfloat16", op,
            d5_dtype_name((d5_dtype)in[6].desc.dtype));
    if (s == D5_OK) { /* the checks of a float32 scale, whatever its type */
        d5_tensor scale = in[6];
        scale.desc.dtype = D5_F32;
        d5_tensor all[8];
        for (int32_t i = 0; i < 8; i++) all[i] = i == 6 ? scale : in[i];
        s = d5__quant_need_scalar_scale(op, all, nin, 6, "y_scale");
    }
    if (s == D5_OK) s = d5__quant_need_int8(op, in, nin, 7, "y_zero_point");
    if (s == D5_OK)
        s = d5__quant_need_scalar_zp(op, in, nin, 7, "y_zero_point", in[7].desc.dtype, "y");
    if (s != D5_OK) return s;
    qlinearmatmul m;
    m.scale_type = in[6].desc.dtype;
    d5__quant_range(in[7].desc.dtype, &m.lo, &m.hi);
    out[0].dtype = in[7].desc.dtype;
    s = d5__qmatmul_geometry(op, &in[0].desc, &in[3].desc, &m.g, &out[0]);
    if (s == D5_OK) s = operand_params(in, 1, 'a', &m.g, &m.as, &m.azp);
    if (s == D5_OK) s = operand_params(in, 4, 'b', &m.g, &m.bs, &m.bzp);
    if (s != D5_OK) return s;
    qlinearmatmul *p = d5_alloc(sizeof *p, op);
    if (!p) return D5_ERR_NOMEM;
    *p = m;
    *state = p;
    return D5_OK;
}

static d5_status qlinearmatmul_forward(void *state, const d5_ref_call *call)
{
    const d5_rt *in = call->inputs;
    d5_rt *out = call->outputs;
    const qlinearmatmul *m = state;
    const d5_qmatmul *g = &m->g;
    double *y = out[0].data, ys = in[6].data[0], yzp = in[7].data[0];
    d5__qmatmul_accumulate(g, in[0].data, in[2].data, &m->azp, in[3].data, in[5].data, &m->bzp, y);
    int64_t batch = d5_tensor_desc_numel(&g->y_batch);
    for (int64_t t = 0; t < batch; t++) {
        int64_t ta = d5__broadcast_index(&g->y_batch, &g->a_batch, t);
        int64_t tb = d5__broadcast_index(&g->y_batch, &g->b_batch, t);
        for (int64_t i = 0; i < g->m; i++) {
            double as = in[1].data[d5__qmatmul_param_index(&m->as, ta, i)];
            for (int64_t j = 0; j < g->n; j++) {
                double bs = in[4].data[d5__qmatmul_param_index(&m->bs, tb, j)];
                double *v = &y[(t * g->m + i) * g->n + j];
                *v = d5__quant_requantize(*v, multiplier(m->scale_type, as, bs, ys), yzp, m->lo,
                                          m->hi);
            }
        }
    }
    return D5_OK;
}

static double qlinearmatmul_flops(void *state, const d5_ref_shapes *shapes)
{
    (void)shapes;
    return d5__qmatmul_flops(&((const qlinearmatmul *)state)->g);
}

D5_REF_OPERATOR_NO_BACKWARD(QLinearMatMul, 8, 8, 1, 1, qlinearmatmul_create, qlinearmatmul_forward,
                            NULL, qlinearmatmul_flops);
