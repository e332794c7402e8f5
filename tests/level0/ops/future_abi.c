/* A library exported by this d5's entry point whose operator table declares
 * ABI version 99: the loader must refuse it on that number alone. */
#include <d5/operator.h>

static d5_status future_create(const d5_tensor *inputs, int32_t ninputs, const d5_attrs *attrs,
                               d5_tensor_desc *outputs, int32_t noutputs, void **state)
{
    (void)inputs, (void)ninputs, (void)attrs, (void)outputs, (void)noutputs, (void)state;
    return D5_OK;
}

static d5_status future_forward(void *state, const d5_tensor *inputs, int32_t ninputs,
                                d5_tensor *outputs, int32_t noutputs)
{
    (void)state, (void)inputs, (void)ninputs, (void)outputs, (void)noutputs;
    return D5_OK;
}

static const d5_op_desc future = {
    99, 0, "Future", "custom", 1, 1, 1, 1, future_create, future_forward, NULL, NULL, NULL};

D5_OPERATOR_EXPORT(&future)
