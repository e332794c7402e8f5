/* The ref backend's wrapper: converts tensors to and from double arrays around
 * each reference kernel. Buffers are allocated on first use and kept. */
#include "ref.h"

#include <string.h>

typedef struct ref_state {
    const d5_ref_vtable *vt;
    void *inner;
    int32_t nin, nout;
    d5_tensor_desc *in_desc, *out_desc;
    d5_rt *in, *out, *gin, *gout; /* views handed to the kernel */
    double **own;                 /* conversion buffers, NULL where not needed */
    int32_t nown;
    double flops;
} ref_state;

static int64_t numel_of(const d5_tensor_desc *d)
{
    return d->dtype == D5_DTYPE_INVALID ? 0 : d5_tensor_desc_numel(d);
}

/* A tensor's n elements as doubles, and back, with d5_convert's rules: every
 * d5 type widens exactly (int64 and uint64 up to 2^53); narrowing rounds once
 * to nearest even (float16 and bfloat16 straight from the double), and an
 * integer output is truncated toward zero and saturated, NaN giving 0. */
static d5_status to_double(const d5_tensor *t, double *dst, int64_t n)
{
    return d5_convert(t->data, (d5_dtype)t->desc.dtype, dst, D5_F64, (size_t)n);
}

static d5_status from_double(const double *src, d5_tensor *t, int64_t n)
{
    return d5_convert(src, D5_F64, t->data, (d5_dtype)t->desc.dtype, (size_t)n);
}

static int convertible(int32_t dtype)
{
    return d5_dtype_size((d5_dtype)dtype) != 0;
}

void d5__ref_keep(void *state)
{
    (void)state;
}

d5_status d5__ref_state(void **state, const void *src, size_t size, const char *op)
{
    void *copy = d5_alloc(size, op);
    if (!copy) return D5_ERR_NOMEM;
    memcpy(copy, src, size);
    *state = copy;
    return D5_OK;
}

void d5__ref_destroy(void *state)
{
    ref_state *s = state;
    if (!s) return;
    if (s->inner) {
        if (s->vt->destroy)
            s->vt->destroy(s->inner);
        else
            d5_free(s->inner);
    }
    for (int32_t i = 0; i < s->nown; i++) d5_free(s->own[i]);
    d5_free(s->own);
    d5_free(s->in_desc);
    d5_free(s->out_desc);
    d5_free(s->in);
    d5_free(s->out);
    d5_free(s->gin);
    d5_free(s->gout);
    d5_free(s);
}

/* Buffers: one per input, output, input gradient and output gradient,
 * allocated on first use (`buffer`), so that creating an operator (shape
 * inference, planning) costs no memory and inference none for gradients. */
static d5_status alloc_buffers(ref_state *s)
{
    int32_t n = 2 * (s->nin + s->nout);
    s->own = d5_calloc((size_t)n, sizeof *s->own, "reference buffers");
    if (!s->own) return D5_ERR_NOMEM;
    s->nown = n;
    d5_rt *views[4] = {s->in, s->gin, s->out, s->gout};
    const d5_tensor_desc *descs[4] = {s->in_desc, s->in_desc, s->out_desc, s->out_desc};
    int32_t counts[4] = {s->nin, s->nin, s->nout, s->nout};
    int32_t k = 0;
    for (int v = 0; v < 4; v++)
        for (int32_t i = 0; i < counts[v]; i++, k++) {
            views[v][i].desc = &descs[v][i];
            views[v][i].numel = numel_of(&descs[v][i]);
        }
    return D5_OK;
}

/* Buffer k of `alloc_buffers`' order, allocated when first asked for. */
static d5_status buffer(ref_state *s, int32_t k, int64_t numel, double **out)
{
    if (!s->own[k]) {
        size_t bytes = (size_t)(numel ? numel : 1) * sizeof(double);
        s->own[k] = d5_alloc(bytes, "reference buffer");
        if (!s->own[k]) return D5_ERR_NOMEM;
    }
    *out = s->own[k];
    return D5_OK;
}

d5_status d5__ref_create(const d5_ref_vtable *vt, const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    d5_tensor_desc *out = args->outputs;
    int32_t nout = args->noutputs;
    for (int32_t i = 0; i < nin; i++)
        if (in[i].desc.dtype != D5_DTYPE_INVALID && !convertible(in[i].desc.dtype))
            return d5_error(D5_ERR_UNSUPPORTED, "%s (ref): input %d has data type %s", vt->name, i,
                            d5_dtype_name((d5_dtype)in[i].desc.dtype));
    ref_state *s = d5_calloc(1, sizeof *s, "reference operator");
    if (!s) return D5_ERR_NOMEM;
    s->vt = vt;
    s->nin = nin;
    s->nout = nout;
    s->in_desc = d5_calloc((size_t)nin + 1, sizeof *s->in_desc, "reference operator");
    s->out_desc = d5_calloc((size_t)nout + 1, sizeof *s->out_desc, "reference operator");
    s->in = d5_calloc((size_t)nin + 1, sizeof *s->in, "reference operator");
    s->gin = d5_calloc((size_t)nin + 1, sizeof *s->gin, "reference operator");
    s->out = d5_calloc((size_t)nout + 1, sizeof *s->out, "reference operator");
    s->gout = d5_calloc((size_t)nout + 1, sizeof *s->gout, "reference operator");
    if (!s->in_desc || !s->out_desc || !s->in || !s->gin || !s->out || !s->gout) {
        d5__ref_destroy(s);
        return D5_ERR_NOMEM;
    }
    for (int32_t i = 0; i < nin; i++) s->in_desc[i] = in[i].desc;
    for (int32_t i = 0; i < nout; i++) {
        memset(&out[i], 0, sizeof out[i]);
        out[i].dtype = nin > 0 ? in[0].desc.dtype : D5_F32;
    }
    d5_status st = vt->create(args, &s->inner);
    if (st == D5_OK) {
        for (int32_t i = 0; i < nout; i++) {
            size_t bytes;
            st = d5_tensor_desc_bytes(&out[i], &bytes);
            if (st != D5_OK) break;
        }
    }
    if (st == D5_OK) {
        memcpy(s->out_desc, out, (size_t)nout * sizeof *out);
        st = alloc_buffers(s);
    }
    if (st != D5_OK) {
        d5__ref_destroy(s);
        return st;
    }
    const d5_ref_shapes shapes = {s->in_desc, nin, s->out_desc, nout};
    s->flops = vt->flops ? vt->flops(s->inner, &shapes) : 0;
    *state = s;
    return D5_OK;
}

/* Input i as doubles in s->in[i]; its data stays NULL when the input is
 * omitted. */
static d5_status stage_input(ref_state *s, const d5_tensor *in, int32_t i)
{
    s->in[i].data = NULL;
    if (s->in_desc[i].dtype == D5_DTYPE_INVALID || !in[i].data) return D5_OK;
    d5_status st = buffer(s, i, s->in[i].numel, &s->in[i].data);
    return st == D5_OK ? to_double(&in[i], s->in[i].data, s->in[i].numel) : st;
}

/* The buffer of output i (written by forward, read by backward). */
static d5_status stage_output(ref_state *s, int32_t i)
{
    return buffer(s, 2 * s->nin + i, s->out[i].numel, &s->out[i].data);
}

d5_status d5__ref_forward(void *state, const d5_op_call *call)
{
    const d5_tensor *in = call->inputs;
    int32_t nin = call->ninputs;
    d5_tensor *out = call->outputs;
    int32_t nout = call->noutputs;
    ref_state *s = state;
    d5_status st = D5_OK;
    for (int32_t i = 0; i < nin && st == D5_OK; i++) st = stage_input(s, in, i);
    for (int32_t i = 0; i < nout && st == D5_OK; i++) st = stage_output(s, i);
    const d5_ref_call views = {
        .inputs = s->in, .ninputs = nin, .outputs = s->out, .noutputs = nout};
    if (st == D5_OK) st = s->vt->forward(s->inner, &views);
    for (int32_t i = 0; i < nout && st == D5_OK; i++)
        st = from_double(s->out[i].data, &out[i], s->out[i].numel);
    return st;
}

d5_status d5__ref_backward(void *state, const d5_op_call *call)
{
    const d5_tensor *gout = call->grad_outputs;
    int32_t nout = call->noutputs;
    const d5_tensor *in = call->inputs;
    int32_t nin = call->ninputs;
    const d5_tensor *out = call->outputs;
    d5_tensor *gin = call->grad_inputs;
    ref_state *s = state;
    d5_status st = D5_OK;
    for (int32_t i = 0; i < nin && st == D5_OK; i++) {
        st = stage_input(s, in, i);
        s->gin[i].data = NULL;
        if (st == D5_OK && gin[i].data && s->in_desc[i].dtype != D5_DTYPE_INVALID) {
            st = buffer(s, s->nin + i, s->gin[i].numel, &s->gin[i].data);
            if (st == D5_OK) memset(s->gin[i].data, 0, (size_t)s->gin[i].numel * sizeof(double));
        }
    }
    for (int32_t i = 0; i < nout && st == D5_OK; i++) {
        st = stage_output(s, i);
        if (st == D5_OK)
            st = buffer(s, 2 * s->nin + s->nout + i, s->gout[i].numel, &s->gout[i].data);
        if (st == D5_OK) st = to_double(&out[i], s->out[i].data, s->out[i].numel);
        if (st != D5_OK) break;
        if (gout[i].data)
            st = to_double(&gout[i], s->gout[i].data, s->gout[i].numel);
        else
            memset(s->gout[i].data, 0, (size_t)s->gout[i].numel * sizeof(double));
    }
    const d5_ref_call views = {.inputs = s->in,
                               .ninputs = nin,
                               .outputs = s->out,
                               .noutputs = nout,
                               .grad_outputs = s->gout,
                               .grad_inputs = s->gin};
    if (st == D5_OK) st = s->vt->backward(s->inner, &views);
    for (int32_t i = 0; i < nin && st == D5_OK; i++)
        if (s->gin[i].data) st = from_double(s->gin[i].data, &gin[i], s->gin[i].numel);
    return st;
}

void d5__ref_cost(void *state, double *flops, double *bytes)
{
    ref_state *s = state;
    double b = 0;
    for (int32_t i = 0; i < s->nin; i++)
        b += (double)s->in[i].numel * (double)d5_dtype_size((d5_dtype)s->in_desc[i].dtype);
    for (int32_t i = 0; i < s->nout; i++)
        b += (double)s->out[i].numel * (double)d5_dtype_size((d5_dtype)s->out_desc[i].dtype);
    *flops = s->flops;
    *bytes = b;
}
