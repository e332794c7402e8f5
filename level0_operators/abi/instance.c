/* Operator instances: one create, many forward and backward calls. */
#include "d5/operator.h"

#include "abi.h"

#include <string.h>

struct d5_op {
    const d5_op_desc *desc;
    void *state;
    int32_t nin, nout;
    d5_tensor_desc *in, *out;
};

static d5_status check_desc(const d5_op_desc *d)
{
    if (!d) return d5_error(D5_ERR_INVALID, "operator table is NULL");
    /* Nothing else is read from a table of another ABI: its layout may differ. */
    if (d->abi_version != D5_OP_ABI_VERSION) {
        char why[320];
        d5__op_abi_mismatch(d->abi_version, why, sizeof why);
        return d5_error(D5_ERR_UNSUPPORTED, "operator table %s", why);
    }
    if (!d->name || !d->create || !d->forward)
        return d5_error(D5_ERR_INVALID, "operator table '%s' lacks a name, create or forward",
                        d->name ? d->name : "?");
    return D5_OK;
}

d5_status d5_op_create(const d5_op_desc *desc, const d5_tensor *inputs, int32_t ninputs,
                       const d5_attrs *attrs, int32_t noutputs, d5_op **out)
{
    d5_status s = check_desc(desc);
    if (s != D5_OK) return s;
    if (!out || (ninputs > 0 && !inputs))
        return d5_error(D5_ERR_INVALID, "d5_op_create(%s): NULL argument", desc->name);
    if (noutputs == 0) noutputs = desc->min_outputs;
    if (ninputs < desc->min_inputs || ninputs > desc->max_inputs)
        return d5_error(D5_ERR_INVALID, "operator %s (%s) takes %d..%d inputs, got %d", desc->name,
                        desc->backend, desc->min_inputs, desc->max_inputs, ninputs);
    if (noutputs < desc->min_outputs || noutputs > desc->max_outputs)
        return d5_error(D5_ERR_INVALID, "operator %s (%s) has %d..%d outputs, %d asked for",
                        desc->name, desc->backend, desc->min_outputs, desc->max_outputs, noutputs);
    d5_op *op = d5_calloc(1, sizeof *op, "operator instance");
    if (!op) return D5_ERR_NOMEM;
    op->desc = desc;
    op->nin = ninputs;
    op->nout = noutputs;
    op->in = d5_calloc((size_t)ninputs + 1, sizeof *op->in, "operator inputs");
    op->out = d5_calloc((size_t)noutputs + 1, sizeof *op->out, "operator outputs");
    if (!op->in || !op->out) {
        d5_op_free(op);
        return D5_ERR_NOMEM;
    }
    for (int32_t i = 0; i < ninputs; i++) op->in[i] = inputs[i].desc;
    const d5_op_create_args args = {.inputs = inputs,
                                    .ninputs = ninputs,
                                    .outputs = op->out,
                                    .noutputs = noutputs,
                                    .attrs = attrs};
    s = desc->create(&args, &op->state);
    if (s != D5_OK) {
        op->state = NULL;
        d5_op_free(op);
        return s;
    }
    *out = op;
    return D5_OK;
}

d5_status d5_op_create_desc(const d5_op_desc *desc, const d5_tensor_desc *inputs, int32_t ninputs,
                            const d5_attrs *attrs, int32_t noutputs, d5_op **out)
{
    if (ninputs < 0 || ninputs > 64 || (ninputs > 0 && !inputs))
        return d5_error(D5_ERR_INVALID, "d5_op_create_desc(%s): bad inputs",
                        desc && desc->name ? desc->name : "?");
    d5_tensor t[65];
    memset(t, 0, sizeof t);
    for (int32_t i = 0; i < ninputs; i++) t[i].desc = inputs[i];
    return d5_op_create(desc, t, ninputs, attrs, noutputs, out);
}

void d5_op_free(d5_op *op)
{
    if (!op) return;
    if (op->state && op->desc->destroy) op->desc->destroy(op->state);
    d5_free(op->in);
    d5_free(op->out);
    d5_free(op);
}

/* The state its create returned, for the backend that made it (d5_op_impl_get). */
void *d5__op_state(const d5_op *op);
void *d5__op_state(const d5_op *op)
{
    return op ? op->state : NULL;
}

const d5_op_desc *d5_op_desc_of(const d5_op *op)
{
    return op->desc;
}
int32_t d5_op_ninputs(const d5_op *op)
{
    return op->nin;
}
int32_t d5_op_noutputs(const d5_op *op)
{
    return op->nout;
}
const d5_tensor_desc *d5_op_input_desc(const d5_op *op, int32_t i)
{
    return i >= 0 && i < op->nin ? &op->in[i] : NULL;
}
const d5_tensor_desc *d5_op_output_desc(const d5_op *op, int32_t i)
{
    return i >= 0 && i < op->nout ? &op->out[i] : NULL;
}

static int same_desc(const d5_tensor_desc *a, const d5_tensor_desc *b)
{
    if (a->dtype != b->dtype || a->ndim != b->ndim) return 0;
    for (int32_t i = 0; i < a->ndim; i++)
        if (a->shape[i] != b->shape[i]) return 0;
    return 1;
}

static d5_status check_tensors(const d5_op *op, const char *what, const d5_tensor *t,
                               const d5_tensor_desc *want, int32_t n, int allow_null)
{
    for (int32_t i = 0; i < n; i++) {
        if (want[i].dtype == D5_DTYPE_INVALID) continue; /* omitted optional input */
        if (!t[i].data) {
            if (allow_null) continue;
            return d5_error(D5_ERR_INVALID, "operator %s (%s): %s %d has no data", op->desc->name,
                            op->desc->backend, what, i);
        }
        if (!same_desc(&t[i].desc, &want[i])) {
            char a[160], b[160];
            d5_tensor_desc_format(&t[i].desc, a, sizeof a);
            d5_tensor_desc_format(&want[i], b, sizeof b);
            return d5_error(D5_ERR_SHAPE, "operator %s (%s): %s %d is %s, created for %s",
                            op->desc->name, op->desc->backend, what, i, a, b);
        }
    }
    return D5_OK;
}

d5_status d5_op_forward(d5_op *op, const d5_tensor *inputs, d5_tensor *outputs)
{
    if (!op || (op->nin && !inputs) || !outputs)
        return d5_error(D5_ERR_INVALID, "d5_op_forward: NULL argument");
    d5_status s = check_tensors(op, "input", inputs, op->in, op->nin, 0);
    if (s == D5_OK) s = check_tensors(op, "output", outputs, op->out, op->nout, 0);
    if (s != D5_OK) return s;
    const d5_op_call call = {
        .inputs = inputs, .ninputs = op->nin, .outputs = outputs, .noutputs = op->nout};
    return op->desc->forward(op->state, &call);
}

d5_status d5_op_backward(d5_op *op, const d5_tensor *grad_outputs, const d5_tensor *inputs,
                         const d5_tensor *outputs, d5_tensor *grad_inputs)
{
    if (!op || !grad_outputs || (op->nin && (!inputs || !grad_inputs)) || !outputs)
        return d5_error(D5_ERR_INVALID, "d5_op_backward: NULL argument");
    if (!op->desc->backward)
        return d5_error(D5_ERR_UNSUPPORTED, "operator %s (%s) has no backward", op->desc->name,
                        op->desc->backend);
    d5_status s = check_tensors(op, "gradient of output", grad_outputs, op->out, op->nout, 1);
    if (s == D5_OK) s = check_tensors(op, "input", inputs, op->in, op->nin, 0);
    if (s == D5_OK) s = check_tensors(op, "output", outputs, op->out, op->nout, 0);
    if (s == D5_OK) s = check_tensors(op, "gradient of input", grad_inputs, op->in, op->nin, 1);
    if (s != D5_OK) return s;
    /* outputs is read only in backward (d5_op_call says so). */
    const d5_op_call call = {.inputs = inputs,
                             .ninputs = op->nin,
                             .outputs = (d5_tensor *)outputs,
                             .noutputs = op->nout,
                             .grad_outputs = grad_outputs,
                             .grad_inputs = grad_inputs};
    return op->desc->backward(op->state, &call);
}

void d5_op_cost(const d5_op *op, double *flops, double *bytes)
{
    double f = 0, b = 0;
    if (op->desc->cost) {
        op->desc->cost(op->state, &f, &b);
    } else {
        size_t n;
        for (int32_t i = 0; i < op->nin; i++)
            if (op->in[i].dtype != D5_DTYPE_INVALID &&
                d5_tensor_desc_bytes(&op->in[i], &n) == D5_OK)
                b += (double)n;
        for (int32_t i = 0; i < op->nout; i++)
            if (d5_tensor_desc_bytes(&op->out[i], &n) == D5_OK) b += (double)n;
    }
    if (flops) *flops = f;
    if (bytes) *bytes = b;
}
