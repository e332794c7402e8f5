// ScaledRelu: a custom operator in C++. Y = SCALE * max(0, X) with SCALE from
// -D SCALE=... (default 2). Written with std::vector and std::transform to show
// that any C++ works behind the C table.
//
//     d5 compile-op examples/ops/scaled_relu.cpp --name ScaledRelu -D SCALE=0.5
#include <d5/operator.h>

#include <algorithm>
#include <new>

#ifndef SCALE
#define SCALE 2.0f
#endif

namespace
{

struct State {
    int64_t n;
};

d5_status create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    if (in[0].desc.dtype != D5_F32)
        return d5_error(D5_ERR_UNSUPPORTED, "ScaledRelu: X must be float32");
    State *s = new (std::nothrow) State{d5_tensor_desc_numel(&in[0].desc)};
    if (!s) return d5_error(D5_ERR_NOMEM, "ScaledRelu: out of memory");
    args->outputs[0] = in[0].desc;
    *state = s;
    return D5_OK;
}

d5_status forward(void *state, const d5_op_call *call)
{
    const float *x = static_cast<const float *>(call->inputs[0].data);
    float *y = static_cast<float *>(call->outputs[0].data);
    std::transform(x, x + static_cast<State *>(state)->n, y,
                   [](float v) { return v > 0 ? static_cast<float>(SCALE) * v : 0.0f; });
    return D5_OK;
}

d5_status backward(void *state, const d5_op_call *call)
{
    float *dx = static_cast<float *>(call->grad_inputs[0].data);
    if (!dx) return D5_OK;
    const float *x = static_cast<const float *>(call->inputs[0].data);
    const float *dy = static_cast<const float *>(call->grad_outputs[0].data);
    for (int64_t i = 0; i < static_cast<State *>(state)->n; i++)
        dx[i] = x[i] > 0 ? static_cast<float>(SCALE) * dy[i] : 0.0f;
    return D5_OK;
}

void destroy(void *state)
{
    delete static_cast<State *>(state);
}

// C++17 has no designated initialisers: the fields in their order
// (abi_version, flags, name, backend, min/max inputs, min/max outputs,
// create, forward, backward, destroy, cost).
const d5_op_desc scaled_relu = {
    D5_OP_ABI_VERSION, D5_OP_HAS_BACKWARD, "ScaledRelu", "custom", 1, 1, 1, 1, create,
    forward,           backward,           destroy,      nullptr};

} // namespace

D5_OPERATOR_EXPORT(&scaled_relu)
