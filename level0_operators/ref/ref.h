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

/* Checks the inputs and attributes, fills out[i] (dtype and shape: shape
 * inference) and may allocate *state with d5_alloc (freed with d5_free unless
 * the operator gives a destroy function). in[i].desc is always set; in[i].data
 * only for inputs known at create (read them with d5__const_ints). out[i]
 * arrives with dtype = in[0]'s and must get its ndim and shape. Errors name the
 * operator and what is wrong ("Conv: weight has 3 dims, expected 4"). */
typedef d5_status (*d5_ref_create_fn)(const d5_tensor *in, int32_t nin, const d5_attrs *attrs,
                                      d5_tensor_desc *out, int32_t nout, void **state);
typedef d5_status (*d5_ref_forward_fn)(void *state, const d5_rt *in, int32_t nin, d5_rt *out,
                                       int32_t nout);
/* gin[i].data arrays are zeroed before the call, so kernels may accumulate
 * (+=); skip those whose data is NULL. gout[i].data is never NULL (zeros when
 * the caller has no gradient for that output). */
typedef d5_status (*d5_ref_backward_fn)(void *state, const d5_rt *gout, int32_t nout,
                                        const d5_rt *in, int32_t nin, const d5_rt *out, d5_rt *gin);
typedef void (*d5_ref_destroy_fn)(void *state);
/* FLOPs of one forward call (NULL: 0). */
typedef double (*d5_ref_flops_fn)(void *state, const d5_tensor_desc *in, int32_t nin,
                                  const d5_tensor_desc *out, int32_t nout);

typedef struct d5_ref_vtable {
    d5_ref_create_fn create;
    d5_ref_forward_fn forward;
    d5_ref_backward_fn backward;
    d5_ref_destroy_fn destroy;
    d5_ref_flops_fn flops;
    const char *name;
} d5_ref_vtable;

d5_status d5__ref_create(const d5_ref_vtable *vt, const d5_tensor *in, int32_t nin,
                         const d5_attrs *attrs, d5_tensor_desc *out, int32_t nout, void **state);
d5_status d5__ref_forward(void *state, const d5_tensor *in, int32_t nin, d5_tensor *out,
                          int32_t nout);
d5_status d5__ref_backward(void *state, const d5_tensor *gout, int32_t nout, const d5_tensor *in,
                           int32_t nin, const d5_tensor *out, d5_tensor *gin);
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
 * operator's file: it returns CREATE(&IMPL, in, nin, attrs, out, state). */
#define D5_REF_CREATE_WITH(NAME, CREATE, IMPL)                                                     \
    static d5_status NAME##_create(const d5_tensor *in, int32_t nin, const d5_attrs *attrs,        \
                                   d5_tensor_desc *out, int32_t nout, void **state)                \
    {                                                                                              \
        (void)nout;                                                                                \
        return CREATE(&IMPL, in, nin, attrs, out, state);                                          \
    }

/* The destroy function of an operator whose state points at static data
 * (the IMPL of D5_REF_CREATE_WITH): it frees nothing. */
void d5__ref_keep(void *state);

#define D5__REF_OPERATOR(NAME, MIN_IN, MAX_IN, MIN_OUT, MAX_OUT, CREATE, FORWARD, BACKWARD,        \
                         DESC_BACKWARD, FLAGS, DESTROY, FLOPS)                                     \
    static const d5_ref_vtable ref_vtable_##NAME = {CREATE,  FORWARD, BACKWARD,                    \
                                                    DESTROY, FLOPS,   #NAME};                      \
    static d5_status ref_create_##NAME(const d5_tensor *in, int32_t nin, const d5_attrs *attrs,    \
                                       d5_tensor_desc *out, int32_t nout, void **state)            \
    {                                                                                              \
        return d5__ref_create(&ref_vtable_##NAME, in, nin, attrs, out, nout, state);               \
    }                                                                                              \
    const d5_op_desc d5__op_ref_##NAME = {D5_OP_ABI_VERSION,                                       \
                                          FLAGS,                                                   \
                                          #NAME,                                                   \
                                          "ref",                                                   \
                                          MIN_IN,                                                  \
                                          MAX_IN,                                                  \
                                          MIN_OUT,                                                 \
                                          MAX_OUT,                                                 \
                                          ref_create_##NAME,                                       \
                                          d5__ref_forward,                                         \
                                          DESC_BACKWARD,                                           \
                                          d5__ref_destroy,                                         \
                                          d5__ref_cost}

#endif
