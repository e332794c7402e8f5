/* The ref backend: clear, naive reference operators, written once in double
 * precision. The wrapper in ref.c gives every kernel its inputs and outputs as
 * arrays of doubles, converting float32 (and integer or bool) tensors on the
 * way in and out, so that one kernel serves float32 runs and the float64
 * gradient checker alike.
 *
 * Adding an operator: one file ref/<name>.c that ends with D5_REF_OPERATOR(...)
 * and one line D5_OP(<Name>, ref) in a ref/ops_*.def table.
 */
#ifndef D5_REF_H
#define D5_REF_H

#include "d5/operator.h"

#include <stdint.h>

/* A tensor as a reference kernel sees it. `data` is NULL for an omitted
 * optional input or an unwanted gradient. Kernels never write to inputs. */
typedef struct d5_rt {
    const d5_tensor_desc *desc;
    double *data;
    int64_t numel;
} d5_rt;

/* What a reference kernel's forward and backward receive: d5_op_call's
 * fields as d5_rt views of doubles (include/d5/operator.h documents them).
 * In backward, grad_inputs[i].data arrays are zeroed before the call, so
 * kernels may accumulate (+=); skip those whose data is NULL.
 * grad_outputs[i].data is never NULL (zeros when the caller has no gradient
 * for that output). In forward both are NULL. */
typedef struct d5_ref_call {
    const d5_rt *inputs;
    int32_t ninputs;
    d5_rt *outputs; /* written by forward; read only in backward */
    int32_t noutputs;
    const d5_rt *grad_outputs;
    d5_rt *grad_inputs;
} d5_ref_call;

/* The descriptors a FLOPs count reads: those of create. */
typedef struct d5_ref_shapes {
    const d5_tensor_desc *inputs;
    int32_t ninputs;
    const d5_tensor_desc *outputs;
    int32_t noutputs;
} d5_ref_shapes;

/* Checks args->inputs and args->attrs, fills args->outputs[i] (dtype and
 * shape: shape inference) and may allocate *state with d5_alloc (freed with
 * d5_free unless the operator gives a destroy function). inputs[i].desc is
 * always set; inputs[i].data only for inputs known at create (read them with
 * d5__const_ints). outputs[i] arrives with dtype = inputs[0]'s and must get
 * its ndim and shape. Errors name the operator and what is wrong ("Conv:
 * weight has 3 dims, expected 4"). */
typedef d5_status (*d5_ref_create_fn)(const d5_op_create_args *args, void **state);
typedef d5_status (*d5_ref_forward_fn)(void *state, const d5_ref_call *call);
typedef d5_status (*d5_ref_backward_fn)(void *state, const d5_ref_call *call);
typedef void (*d5_ref_destroy_fn)(void *state);
/* FLOPs of one forward call (NULL: 0). */
typedef double (*d5_ref_flops_fn)(void *state, const d5_ref_shapes *shapes);

typedef struct d5_ref_vtable {
    d5_ref_create_fn create;
    d5_ref_forward_fn forward;
    d5_ref_backward_fn backward;
    d5_ref_destroy_fn destroy;
    d5_ref_flops_fn flops;
    const char *name;
} d5_ref_vtable;

d5_status d5__ref_create(const d5_ref_vtable *vt, const d5_op_create_args *args, void **state);
d5_status d5__ref_forward(void *state, const d5_op_call *call);
d5_status d5__ref_backward(void *state, const d5_op_call *call);
void d5__ref_destroy(void *state);
void d5__ref_cost(void *state, double *flops, double *bytes);

/* Defines the operator table d5__op_ref_<NAME> of a differentiable operator;
 * DESTROY and FLOPS may be NULL. */
#define D5_REF_OPERATOR(NAME, MIN_IN, MAX_IN, MIN_OUT, MAX_OUT, CREATE, FORWARD, BACKWARD,         \
                        DESTROY, FLOPS)                                                            \
    D5__REF_OPERATOR(NAME, MIN_IN, MAX_IN, MIN_OUT, MAX_OUT, CREATE, FORWARD, BACKWARD,            \
                     d5__ref_backward, D5_OP_F64 | D5_OP_HAS_BACKWARD, DESTROY, FLOPS)
/* The same for an operator without a gradient (Shape, Equal, ...). */
#define D5_REF_OPERATOR_NO_BACKWARD(NAME, MIN_IN, MAX_IN, MIN_OUT, MAX_OUT, CREATE, FORWARD,       \
                                    DESTROY, FLOPS)                                                \
    D5__REF_OPERATOR(NAME, MIN_IN, MAX_IN, MIN_OUT, MAX_OUT, CREATE, FORWARD, NULL, NULL,          \
                     D5_OP_F64, DESTROY, FLOPS)

/* Defines NAME##_create, the create function of one operator of a family
 * whose kernels are shared and told apart by IMPL, a static constant of the
 * operator's file: it returns CREATE(&IMPL, inputs, ninputs, attrs, outputs,
 * state) of its d5_op_create_args. */
#define D5_REF_CREATE_WITH(NAME, CREATE, IMPL)                                                     \
    static d5_status NAME##_create(const d5_op_create_args *args, void **state)                    \
    {                                                                                              \
        return CREATE(&IMPL, args->inputs, args->ninputs, args->attrs, args->outputs, state);      \
    }

/* The destroy function of an operator whose state points at static data
 * (the IMPL of D5_REF_CREATE_WITH): it frees nothing. */
void d5__ref_keep(void *state);

/* The end of a create whose state is a plain struct: keeps a copy of its
 * `size` bytes at src as *state (freed with d5_free unless the operator gives
 * a destroy function). D5_OK, or D5_ERR_NOMEM naming `op`. */
d5_status d5__ref_state(void **state, const void *src, size_t size, const char *op);

#define D5__REF_OPERATOR(NAME, MIN_IN, MAX_IN, MIN_OUT, MAX_OUT, CREATE, FORWARD, BACKWARD,        \
                         DESC_BACKWARD, FLAGS, DESTROY, FLOPS)                                     \
    static const d5_ref_vtable ref_vtable_##NAME = {.create = CREATE,                              \
                                                    .forward = FORWARD,                            \
                                                    .backward = BACKWARD,                          \
                                                    .destroy = DESTROY,                            \
                                                    .flops = FLOPS,                                \
                                                    .name = #NAME};                                \
    static d5_status ref_create_##NAME(const d5_op_create_args *args, void **state)                \
    {                                                                                              \
        return d5__ref_create(&ref_vtable_##NAME, args, state);                                    \
    }                                                                                              \
    const d5_op_desc d5__op_ref_##NAME = {.abi_version = D5_OP_ABI_VERSION,                        \
                                          .flags = FLAGS,                                          \
                                          .name = #NAME,                                           \
                                          .backend = "ref",                                        \
                                          .min_inputs = MIN_IN,                                    \
                                          .max_inputs = MAX_IN,                                    \
                                          .min_outputs = MIN_OUT,                                  \
                                          .max_outputs = MAX_OUT,                                  \
                                          .create = ref_create_##NAME,                             \
                                          .forward = d5__ref_forward,                              \
                                          .backward = DESC_BACKWARD,                               \
                                          .destroy = d5__ref_destroy,                              \
                                          .cost = d5__ref_cost}

#endif
