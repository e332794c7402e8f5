/* Mean (ONNX opset 13): element-wise mean of 1..N inputs with multidirectional
 * (numpy) broadcasting. Each input's gradient is the output gradient summed
 * over the axes it was broadcast along, divided by N.
 * https://onnx.ai/onnx/operators/onnx__Mean.html */
#include "util.h"

static d5_status mean_create(const d5_tensor *in, int32_t nin, const d5_attrs *attrs,
                             d5_tensor_desc *out, int32_t nout, void **state)
{
    (void)attrs;
    (void)nout;
    (void)state;
    return d5__broadcast_create("Mean", in, nin, out);
}

static d5_status mean_forward(void *state, const d5_rt *in, int32_t nin, d5_rt *out, int32_t nout)
{
    (void)state;
    (void)nout;
    for (int64_t i = 0; i < out[0].numel; i++) {
        double acc = 0;
        for (int32_t k = 0; k < nin; k++)
            acc += in[k].data[d5__broadcast_index(out[0].desc, in[k].desc, i)];
        out[0].data[i] = acc / nin;
    }
    return D5_OK;
}

static d5_status mean_backward(void *state, const d5_rt *gout, int32_t nout, const d5_rt *in,
                               int32_t nin, const d5_rt *out, d5_rt *gin)
{
    (void)state;
    (void)nout;
    for (int32_t k = 0; k < nin; k++)
        if (gin[k].data)
            for (int64_t i = 0; i < out[0].numel; i++)
                gin[k].data[d5__broadcast_index(out[0].desc, in[k].desc, i)] +=
                    gout[0].data[i] / nin;
    return D5_OK;
}

static double mean_flops(void *state, const d5_tensor_desc *in, int32_t nin,
                         const d5_tensor_desc *out, int32_t nout)
{
    (void)state;
    (void)in;
    (void)nout;
    return (double)nin * (double)d5_tensor_desc_numel(&out[0]);
}

D5_REF_OPERATOR(Mean, 1, INT32_MAX, 1, 1, mean_create, mean_forward, mean_backward, NULL,
                mean_flops);
