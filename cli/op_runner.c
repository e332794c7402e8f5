/* Running one operator on one problem size; see op_runner.h. */
#define _GNU_SOURCE
#include "cli.h"
#include "op_runner.h"

#include "../level0_operators/device.h"
#include "d5/precision.h"

#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
    return (double)d5_monotonic_ns() * 1e-9;
}

/* ---- One run, in this process ---- */

typedef struct bench_ctx {
    d5_op *op;
    d5_tensor *in, *out;
    d5_timer *gpu; /* CUDA operators: CUDA events around each forward */
    d5_timer_id key;
} bench_ctx;

static d5_status forward_once(void *arg)
{
    bench_ctx *c = arg;
    return d5_op_forward(c->op, c->in, c->out);
}

/* A CUDA operator's forward queues work and returns: one sample is the time
 * between CUDA events recorded before and after it on the default stream,
 * read once the second has passed (the GPU time of the call, launches
 * included, without the host's wait). */
static d5_status forward_sample_cuda(void *arg, double *ns)
{
    bench_ctx *c = arg;
    d5_status s = d5_timer_start_id(c->gpu, c->key);
    if (s != D5_OK) return s;
    s = d5_op_forward(c->op, c->in, c->out);
    d5_status e = d5_timer_end_id(c->gpu, c->key);
    if (s == D5_OK) s = e;
    d5_timer_series ser;
    if (s == D5_OK) s = d5_timer_series_get(c->gpu, c->key, D5_TIMER_CUDA, &ser);
    if (s == D5_OK && ser.n == 0) s = d5_error(D5_ERR_STATE, "CUDA-event timer: no sample");
    if (s == D5_OK) *ns = ser.duration_ns[ser.n - 1];
    if (s == D5_OK) s = d5_timer_reset(c->gpu); /* keep one sample at a time */
    return s;
}

/* Device copies of the inputs, device outputs and a CUDA-event timer. */
static d5_status cuda_setup(const d5_tensor *in, int32_t nin, int32_t nout, bench_ctx *c)
{
    c->gpu = NULL;
    c->in = calloc((size_t)nin + 1, sizeof *c->in);
    c->out = calloc((size_t)nout + 1, sizeof *c->out);
    if (!c->in || !c->out) return d5_error(D5_ERR_NOMEM, "device tensors: out of memory");
    d5_status s = D5_OK;
    for (int32_t i = 0; s == D5_OK && i < nin; i++) s = d5__cuda_tensor_upload(&in[i], &c->in[i]);
    for (int32_t i = 0; s == D5_OK && i < nout; i++)
        s = d5__cuda_tensor_alloc(d5_op_output_desc(c->op, i), &c->out[i]);
    d5_timer_params tp = d5_timer_default_params();
    tp.clocks = D5_TIMER_CUDA;
    if (s == D5_OK) s = d5_timer_create(&tp, &c->gpu);
    if (s == D5_OK) s = d5_timer_key(c->gpu, "forward", &c->key);
    return s;
}

static void cuda_teardown(bench_ctx *c, int32_t nin, int32_t nout)
{
    for (int32_t i = 0; c->in && i < nin; i++) d5__cuda_tensor_free(&c->in[i]);
    for (int32_t i = 0; c->out && i < nout; i++) d5__cuda_tensor_free(&c->out[i]);
    free(c->in);
    free(c->out);
    d5_timer_free(c->gpu);
}

static void free_tensors(d5_tensor *t, int32_t n)
{
    for (int32_t i = 0; t && i < n; i++) d5_tensor_free(&t[i]);
    free(t);
}

/* The recurrent operators' work as DeepBench counts it (the formulas of its
 * published results): the recurrent matrix products of every step, 2*T*N*H*H
 * per gate and direction, and T*N*H more for the vanilla cell. DeepBench's
 * cuDNN runs skip the input's product, which the ONNX operators compute too
 * (as many FLOPs again at input size = hidden). Other operators keep their
 * own count. */
static double deepbench_flops(const char *op, const op_case *c, double own)
{
    int gates = strcmp(op, "RNN") == 0    ? 1
                : strcmp(op, "GRU") == 0  ? 3
                : strcmp(op, "LSTM") == 0 ? 4
                                          : 0;
    if (!gates || c->nin < 3 || c->in[0].ndim != 3 || c->in[2].ndim != 3) return own;
    double t = (double)c->in[0].shape[0], n = (double)c->in[0].shape[1];
    double h = (double)c->in[2].shape[2], d = (double)c->in[2].shape[0];
    return d * (2.0 * gates * t * n * h * h + (gates == 1 ? t * n * h : 0));
}

/* ---- Cases in another precision (see op_runner.h) ---- */

/* The values of input i: those of its spec (a range, or given values) in any
 * precision, else the precision's own (see op_runner.h). */
/* A string input: the given words, or random lower-case words of lo..hi
 * letters (1..8 by default), in a new block that replaces t's. */
static d5_status fill_strings(const case_fill *f, d5_tensor *t, d5_rng *rng)
{
    int64_t n = d5_tensor_desc_numel(&t->desc);
    size_t cap = (size_t)n * 9 + sizeof f->words + 1;
    char *text = malloc(cap);
    const char **words = malloc(((size_t)n + 1) * sizeof *words);
    if (!text || !words) {
        free(text);
        free(words);
        return d5_error(D5_ERR_NOMEM, "out of memory for %lld strings", (long long)n);
    }
    char *p = text;
    if (f->kind == FILL_VALUES) {
        memcpy(text, f->words, sizeof f->words);
        for (int64_t k = 0; k < f->nvalues; k++) {
            words[k] = p;
            char *comma = strchr(p, ',');
            if (comma) *comma = '\0';
            p = comma ? comma + 1 : p + strlen(p);
        }
        for (int64_t k = f->nvalues; k < n; k++) words[k] = words[0]; /* one value: every element */
    } else {
        int lo = f->kind == FILL_RANGE ? (int)f->lo : 1,
            hi = f->kind == FILL_RANGE ? (int)f->hi : 8;
        lo = lo < 0 ? 0 : lo > 8 ? 8 : lo;
        hi = hi < lo ? lo : hi > 8 ? 8 : hi;
        for (int64_t k = 0; k < n; k++) {
            int len = lo + (int)d5_rng_below(rng, (uint64_t)(hi - lo + 1));
            words[k] = p;
            for (int j = 0; j < len; j++) *p++ = (char)('a' + d5_rng_below(rng, 26));
            *p++ = '\0';
        }
    }
    d5_tensor made;
    d5_status s = d5_tensor_strings(&t->desc, words, NULL, &made);
    free(text);
    free(words);
    if (s != D5_OK) return s;
    d5_tensor_free(t);
    *t = made;
    return D5_OK;
}

static d5_status fill_input(const op_case *c, int32_t i, d5_tensor *t, d5_rng *rng)
{
    int64_t n = d5_tensor_desc_numel(&t->desc);
    if (t->desc.dtype == D5_STRING) return fill_strings(&c->fill[i], t, rng);
    d5_dtype dt = (d5_dtype)t->desc.dtype;
    const case_fill *f = &c->fill[i];
    int is_float = d5_dtype_is_float(dt);
    if (f->kind != FILL_DEFAULT || (!is_float && dt != D5_U8 && dt != D5_I8) ||
        (c->precision == PREC_F32 && !is_float)) {
        /* Drawn or given in float64, converted once (integers: whole values). */
        double *x = malloc((size_t)n * sizeof *x + 1);
        if (!x) return d5_error(D5_ERR_NOMEM, "out of memory for %lld input values", (long long)n);
        double lo = f->kind == FILL_RANGE ? f->lo : dt == D5_BOOL ? 0 : is_float ? -1 : -8;
        double hi = f->kind == FILL_RANGE ? f->hi : dt == D5_BOOL ? 1 : is_float ? 1 : 8;
        for (int64_t k = 0; k < n; k++) {
            if (f->kind == FILL_VALUES) {
                x[k] = f->values[f->nvalues == 1 ? 0 : k];
            } else if (is_float) {
                x[k] = lo + (hi - lo) * d5_rng_uniform(rng);
            } else {
                double v = floor(lo + (hi - lo + 1) * d5_rng_uniform(rng));
                x[k] = v > hi ? hi : v;
            }
        }
        d5_status s = d5_convert(x, D5_F64, t->data, dt, (size_t)n);
        free(x);
        return s;
    }
    if (c->precision == PREC_F32 || (dt != D5_BF16 && dt != D5_F16 && dt != D5_U8 && dt != D5_I8)) {
        d5_tensor_fill_uniform(t, rng, -1, 1); /* as in float32 cases */
        return D5_OK;
    }
    if (dt == D5_BF16 || dt == D5_F16) {
        float *x = malloc((size_t)n * sizeof *x + 1);
        if (!x) return d5_error(D5_ERR_NOMEM, "out of memory for %lld input values", (long long)n);
        for (int64_t k = 0; k < n; k++) x[k] = (float)(2 * d5_rng_uniform(rng) - 1);
        d5_status s = d5_convert(x, D5_F32, t->data, dt, (size_t)n);
        free(x);
        return s;
    }
    /* MatMulInteger's and ConvInteger's bytes take their whole range; other
     * int8 operators small values, so that sums and products stay in range. */
    int full = c->op[0] != '\0';
    int lo = dt == D5_U8 ? 0 : full ? -128 : -8, hi = dt == D5_U8 ? 255 : full ? 127 : 8;
    for (int64_t k = 0; k < n; k++) {
        int v = lo + (int)(d5_rng_uniform(rng) * (hi - lo + 1));
        v = v > hi ? hi : v;
        if (dt == D5_U8)
            ((uint8_t *)t->data)[k] = (uint8_t)v;
        else
            ((int8_t *)t->data)[k] = (int8_t)v;
    }
    return D5_OK;
}

/* The inputs whose values the operator sees at create, as a bit mask. */
static uint32_t case_constants(const op_case *c)
{
    uint32_t m = 0;
    for (int32_t i = 0; i < c->nin && i < 32; i++)
        if (c->fill[i].known) m |= 1u << i;
    return m;
}

/* The unit roundoff of the precision's significand (0 for the exact ones). */
static double unit_roundoff(int precision)
{
    return precision == PREC_BF16 ? ldexp(1, -8) : precision == PREC_F16 ? ldexp(1, -11) : 0;
}

/* The ref operator a case in another precision is checked against, and the
 * type its inputs widen to: MatMul or Conv in float64 for MatMulInteger and
 * ConvInteger, the same operator in float32 for bfloat16 and float16, the
 * same int8 operator (D5_DTYPE_INVALID: no widening) for other int8 ones. */
static const char *reference_of(const op_case *c, const target *t, d5_dtype *wide)
{
    if (c->op[0]) {
        *wide = D5_F64;
        return strcmp(c->op, "MatMulInteger") == 0 ? "MatMul" : "Conv";
    }
    *wide = c->precision == PREC_I8 ? D5_DTYPE_INVALID : D5_F32;
    return t->desc->name;
}

/* Whether an input is of the case's precision (and widens for the reference). */
static int narrow_type(int32_t dtype)
{
    return dtype == D5_BF16 || dtype == D5_F16 || dtype == D5_U8 || dtype == D5_I8;
}

/* Copies of the inputs in the reference's types; *rin is calloc'd. */
static d5_status widen_inputs(const op_case *c, const d5_tensor *in, d5_dtype wide,
                              d5_tensor_desc *d, d5_tensor **rin)
{
    *rin = calloc((size_t)c->nin + 1, sizeof **rin);
    if (!*rin) return d5_error(D5_ERR_NOMEM, "out of memory for the reference's inputs");
    d5_status s = D5_OK;
    for (int32_t i = 0; s == D5_OK && i < c->nin; i++) {
        d[i] = c->in[i];
        if (wide != D5_DTYPE_INVALID && narrow_type(d[i].dtype)) d[i].dtype = wide;
        s = d5_tensor_alloc(&d[i], &(*rin)[i]);
        if (s == D5_OK && in)
            s = d5_convert(in[i].data, (d5_dtype)in[i].desc.dtype, (*rin)[i].data,
                           (d5_dtype)d[i].dtype, (size_t)d5_tensor_desc_numel(&d[i]));
    }
    return s;
}

/* Operations of a case in another precision, counted as its float
 * counterpart on ref counts them (2 per multiply-add). 0 when ref has none. */
static double counterpart_flops(const op_case *c, const target *t, const d5_attrs *attrs)
{
    d5_dtype wide;
    const char *name = reference_of(c, t, &wide);
    const d5_op_desc *ref;
    d5_tensor_desc d[CASE_MAX_INPUTS];
    for (int32_t i = 0; i < c->nin; i++) {
        d[i] = c->in[i];
        if (wide != D5_DTYPE_INVALID && narrow_type(d[i].dtype)) d[i].dtype = D5_F32;
    }
    d5_op *op = NULL;
    double flops = 0, bytes = 0;
    if (d5_op_find(name, "ref", &ref) == D5_OK &&
        d5_op_create_desc(ref, d, c->nin, attrs, 0, &op) == D5_OK)
        d5_op_cost(op, &flops, &bytes);
    d5_op_free(op);
    d5_error_clear();
    return flops;
}

/* Compares output 0 of a case in another precision with the ref's on the same
 * values (see op_runner.h). */
static d5_status validate_precision(const op_case *c, const target *t, const d5_attrs *attrs,
                                    const d5_tensor *in, const d5_tensor *out0, outcome *r)
{
    d5_dtype wide;
    const char *name = reference_of(c, t, &wide);
    const d5_op_desc *ref;
    if (wide == D5_DTYPE_INVALID && strcmp(t->desc->backend, "ref") == 0) return D5_OK;
    if (d5_op_find(name, "ref", &ref) != D5_OK) {
        snprintf(r->status, sizeof r->status, "ok (not validated: ref has no %s)", name);
        d5_error_clear();
        return D5_OK;
    }
    d5_tensor_desc d[CASE_MAX_INPUTS];
    d5_tensor *rin = NULL, rout[D5_CHECK_MAX_OUTPUTS], got, want;
    memset(rout, 0, sizeof rout);
    memset(&got, 0, sizeof got);
    memset(&want, 0, sizeof want);
    d5_op *op = NULL;
    d5_status s = widen_inputs(c, in, wide, d, &rin);
    if (s == D5_OK) s = d5_op_create_desc(ref, d, c->nin, attrs, 0, &op);
    int32_t nout = s == D5_OK ? d5_op_noutputs(op) : 0;
    if (nout > D5_CHECK_MAX_OUTPUTS) nout = D5_CHECK_MAX_OUTPUTS;
    for (int32_t i = 0; s == D5_OK && i < nout; i++)
        s = d5_tensor_alloc(d5_op_output_desc(op, i), &rout[i]);
    if (s == D5_OK) s = d5_op_forward(op, rin, rout);
    /* Both outputs in float64: exact for every type here. */
    d5_tensor_desc gd = out0->desc, wd = rout[0].desc;
    gd.dtype = wd.dtype = D5_F64;
    if (s == D5_OK) s = d5_tensor_alloc(&gd, &got);
    if (s == D5_OK) s = d5_tensor_alloc(&wd, &want);
    int64_t n = d5_tensor_desc_numel(&gd);
    if (s == D5_OK)
        s = d5_convert(out0->data, (d5_dtype)out0->desc.dtype, got.data, D5_F64, (size_t)n);
    if (s == D5_OK)
        s = d5_convert(rout[0].data, (d5_dtype)rout[0].desc.dtype, want.data, D5_F64,
                       (size_t)d5_tensor_desc_numel(&wd));
    d5_compare cmp;
    if (s == D5_OK) s = d5_compare_tensors(&got, &want, &cmp);
    if (s == D5_OK) {
        double scale = 0;
        const double *w = want.data;
        for (int64_t i = 0; i < n; i++)
            if (isfinite(w[i]) && fabs(w[i]) > scale) scale = fabs(w[i]);
        double k = sizes_reduction_length(name, c, &out0->desc);
        r->validated = 1;
        r->err_linf = cmp.linf;
        r->err_rel = cmp.max_rel;
        r->err_tol = unit_roundoff(c->precision) * (1 + sqrt(k)) * scale;
        r->valid = !cmp.nonfinite && cmp.linf <= r->err_tol;
        if (!r->valid)
            snprintf(r->status, sizeof r->status,
                     "FAIL: output 0 element %lld is %.7g, ref %.7g (linf %.3g > %.3g)",
                     (long long)cmp.worst, cmp.got, cmp.want, cmp.linf, r->err_tol);
    }
    d5_tensor_free(&got);
    d5_tensor_free(&want);
    for (int32_t i = 0; i < nout; i++) d5_tensor_free(&rout[i]);
    free_tensors(rin, c->nin);
    d5_op_free(op);
    return s;
}

/* Validation of a float32 run against ref, forward (and backward with
 * o->gradient), within the size limit the ref can handle. */
static d5_status validate_against_ref(const run_opts *o, const op_case *c, const target *t,
                                      const d5_attrs *attrs, d5_tensor *in, outcome *r)
{
    const d5_op_desc *ref = NULL;
    if (!(o->validate || o->gradient) || strcmp(t->desc->backend, "ref") == 0 ||
        d5_op_find(t->desc->name, "ref", &ref) != D5_OK)
        return D5_OK;
    if (r->flops > o->validate_max_gflop * 1e9) {
        snprintf(r->status, sizeof r->status,
                 "ok (not validated: %.1f GFLOP exceeds "
                 "--validate-max-gflop %g)",
                 r->flops * 1e-9, o->validate_max_gflop);
        return D5_OK;
    }
    d5_status s = D5_OK;
    d5_check_params cp = d5_check_default_params();
    cp.heatmap_csv = o->heatmap;
    cp.constants = case_constants(c);
    d5_forward_check fc;
    if (o->validate &&
        (s = d5_validate_forward(t->desc, ref, c->in, c->nin, in, attrs, 0, &cp, &fc)) == D5_OK) {
        r->validated = 1;
        r->valid = fc.passed;
        r->err_linf = fc.out[0].linf;
        r->err_rel = fc.out[0].max_rel;
        if (!fc.passed)
            snprintf(r->status, sizeof r->status,
                     "FAIL: output 0 element %lld is %.7g, ref %.7g (linf %.3g > %.3g)",
                     (long long)fc.out[0].worst, fc.out[0].got, fc.out[0].want, fc.out[0].linf,
                     fc.tol[0]);
    }
    if (s == D5_OK && o->gradient && t->desc->backward) {
        s = d5_validate_backward(t->desc, ref, c->in, c->nin, in, attrs, 0, &cp, &fc);
        if (s == D5_OK) {
            r->grad_checked = 1;
            r->grad_ok = fc.passed;
            for (int32_t i = 0; !fc.passed && i < fc.noutputs; i++)
                if (fc.out[i].linf > fc.tol[i])
                    snprintf(r->status, sizeof r->status,
                             "FAIL: gradient of input %d element %lld is %.7g, ref %.7g", i,
                             (long long)fc.out[i].worst, fc.out[i].got, fc.out[i].want);
        }
    }
    return s;
}

/* The gradient against central finite differences of the operator itself
 * (ref included), on at most o->grad_elements of each input (256 when 0). */
static d5_status check_fd_gradient(const run_opts *o, const op_case *c, const target *t,
                                   const d5_attrs *attrs, d5_tensor *in, outcome *r)
{
    if (!o->gradient || !t->desc->backward || (t->desc->flags & D5_OP_CUDA) ||
        r->flops > o->validate_max_gflop * 1e9)
        return D5_OK;
    d5_gradient_params gp = d5_gradient_default_params();
    gp.max_elements = o->grad_elements > 0 ? o->grad_elements : 256;
    gp.constants = case_constants(c);
    d5_gradient_check gc;
    int against_ref = r->grad_checked, ref_ok = r->grad_ok;
    d5_status s = d5_validate_gradient(t->desc, c->in, c->nin, in, attrs, 0, &gp, &gc);
    if (s != D5_OK) return s;
    r->grad_checked = 1;
    r->grad_fd_checked = gc.checked;
    r->grad_ok = gc.passed && (!against_ref || ref_ok);
    if (!gc.passed)
        snprintf(r->status, sizeof r->status,
                 "FAIL: gradient of input %d element %lld is %.7g, finite differences "
                 "give %.7g (|error| %.3g > %.3g)",
                 (int)gc.worst_input, (long long)gc.worst_index, gc.analytic, gc.numeric, gc.error,
                 gc.tol);
    else if (r->grad_ok && strcmp(r->status, "ok") == 0)
        snprintf(r->status, sizeof r->status,
                 "ok (gradient: %lld elements match finite differences%s)", (long long)gc.checked,
                 against_ref ? " and ref" : "");
    return D5_OK;
}

void run_here(const run_opts *o, const op_case *c, const target *t, outcome *r)
{
    memset(r, 0, sizeof *r);
    d5_attrs attrs = {c->attrs, c->nattrs};
    d5_op *op = NULL;
    d5_tensor *in = calloc((size_t)c->nin + 1, sizeof *in), known[CASE_MAX_INPUTS], *out = NULL;
    d5_rng rng;
    d5_rng_seed(&rng, 1);
    int lowp = c->precision != PREC_F32;
    d5_status s = in ? D5_OK : d5_error(D5_ERR_NOMEM, "out of memory for the inputs");
    /* The inputs first: constants (shapes, axes, indices) are seen at create. */
    for (int32_t i = 0; s == D5_OK && i < c->nin; i++) {
        if (c->in[i].dtype == D5_DTYPE_INVALID) { /* an omitted optional input */
            in[i].desc = c->in[i];
        } else {
            s = d5_tensor_alloc(&c->in[i], &in[i]);
            if (s == D5_OK) s = fill_input(c, i, &in[i], &rng);
        }
        known[i] = in[i];
        if (!c->fill[i].known) known[i].data = NULL;
    }
    if (s == D5_OK) s = d5_op_create(t->desc, known, c->nin, &attrs, 0, &op);
    int32_t nout = s == D5_OK ? d5_op_noutputs(op) : 0;
    if (s == D5_OK && !(out = calloc((size_t)nout + 1, sizeof *out)))
        s = d5_error(D5_ERR_NOMEM, "out of memory for the outputs");
    /* A backend without this precision, or one that declines the case on this
     * machine (D5_ERR_UNSUPPORTED at create: the executor would run the next
     * backend): a row that says so, not a failure. The ref backend runs every
     * case it has. */
    int declined = s == D5_ERR_UNSUPPORTED && strcmp(t->desc->backend, "ref") != 0;
    if (s != D5_OK && (lowp || declined) && in) {
        r->unsupported = 1;
        if (lowp)
            snprintf(r->status, sizeof r->status, "%s unsupported: %s",
                     d5_dtype_name(precision_dtype(c->precision)), d5_last_error());
        else
            snprintf(r->status, sizeof r->status, "declined: %s", d5_last_error());
        free_tensors(in, c->nin);
        return;
    }
    for (int32_t i = 0; s == D5_OK && i < nout; i++)
        s = d5_tensor_alloc(d5_op_output_desc(op, i), &out[i]);
    if (s == D5_OK) d5_op_cost(op, &r->flops, &r->bytes);
    if (s == D5_OK) r->flops = deepbench_flops(t->desc->name, c, r->flops);
    if (s == D5_OK && lowp) {
        double f = counterpart_flops(c, t, &attrs);
        if (f > 0) r->flops = f;
    }
    /* One trial run decides the repetitions of very long operators: at least
     * one sample always, warm-up only when it fits the budget. */
    bench_ctx ctx = {op, in, out, NULL, 0};
    int cuda = (t->desc->flags & D5_OP_CUDA) != 0, staged = s == D5_OK && cuda;
    if (staged) s = cuda_setup(in, c->nin, nout, &ctx);
    double t0 = now_s(), trial_ns = 0;
    if (s == D5_OK) s = cuda ? forward_sample_cuda(&ctx, &trial_ns) : forward_once(&ctx);
    double trial = cuda ? trial_ns * 1e-9 : now_s() - t0;
    d5_measure_params mp = d5_measure_default_params();
    mp.max_time_s = o->max_time;
    if (trial > o->max_time / 20) {
        mp.warmup = 0;
        mp.min_reps = trial > o->max_time / 2 ? 1 : 5;
    }
    if (s == D5_OK)
        s = cuda ? d5_measure_samples(forward_sample_cuda, &ctx, &mp, &r->m)
                 : d5_measure_run(forward_once, &ctx, &mp, &r->m);
    if (staged) cuda_teardown(&ctx, c->nin, nout);
    if (s == D5_OK) {
        r->ok = 1;
        snprintf(r->status, sizeof r->status, "ok");
    }
    /* Validation against ref, within the size limit the ref can handle. */
    if (s == D5_OK && lowp && o->validate) {
        if (r->flops > o->validate_max_gflop * 1e9)
            snprintf(r->status, sizeof r->status,
                     "ok (not validated: %.1f GFLOP exceeds --validate-max-gflop %g)",
                     r->flops * 1e-9, o->validate_max_gflop);
        else
            s = validate_precision(c, t, &attrs, in, &out[0], r);
    }
    if (s == D5_OK && !lowp) s = validate_against_ref(o, c, t, &attrs, in, r);
    if (s == D5_OK && !lowp) s = check_fd_gradient(o, c, t, &attrs, in, r);
    if (s != D5_OK) {
        snprintf(r->status, sizeof r->status, "error: %s", d5_last_error());
        if (r->ok) d5_measurement_free(&r->m);
        r->ok = 0;
    }
    /* In another precision, the kernel that ran where the backend names it
     * (oneDNN's implementation), so that a %peak reads against the right unit. */
    d5_op_impl impl;
    if (r->ok && lowp && strncmp(r->status, "ok", 2) == 0) {
        d5_op_impl_get(op, &impl);
        size_t used = strlen(r->status);
        if (impl.reported && impl.forward[0] && used < sizeof r->status)
            snprintf(r->status + used, sizeof r->status - used, ", via %s", impl.forward);
    }
    free_tensors(in, c->nin);
    free_tensors(out, nout);
    d5_op_free(op);
}

/* ---- One run in a child process (custom operators) ---- */

static int write_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n) {
        ssize_t w = write(fd, c, n);
        if (w <= 0) return 0;
        c += w;
        n -= (size_t)w;
    }
    return 1;
}

static int read_all(int fd, void *p, size_t n, double deadline)
{
    char *c = p;
    while (n) {
        int left = (int)((deadline - now_s()) * 1000);
        if (left <= 0) return -1;
        struct pollfd pf = {fd, POLLIN, 0};
        int pr = poll(&pf, 1, left);
        if (pr == 0) return -1;
        if (pr < 0 && errno == EINTR) continue;
        ssize_t got = read(fd, c, n);
        if (got <= 0) return 0;
        c += got;
        n -= (size_t)got;
    }
    return 1;
}

void run_isolated(const run_opts *o, const op_case *c, const target *t, outcome *r)
{
    memset(r, 0, sizeof *r);
    int fds[2];
    if (pipe(fds) != 0) {
        snprintf(r->status, sizeof r->status, "error: pipe: %s", strerror(errno));
        return;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(r->status, sizeof r->status, "error: fork: %s", strerror(errno));
        close(fds[0]);
        close(fds[1]);
        return;
    }
    if (pid == 0) {
        /* Its own process group, so that ending it ends whatever it forked. */
        setpgid(0, 0);
        close(fds[0]);
        outcome mine;
        run_here(o, c, t, &mine);
        int ok = write_all(fds[1], &mine, sizeof mine);
        if (ok && mine.ok) ok = write_all(fds[1], mine.m.samples, mine.m.n * sizeof(double));
        _exit(ok ? 0 : 1);
    }
    setpgid(pid, pid); /* also from here: no race with the child's own call */
    cli_child_started(pid);
    close(fds[1]);
    double deadline = now_s() + o->timeout;
    int got = read_all(fds[0], r, sizeof *r, deadline);
    double *samples = NULL;
    if (got == 1 && r->ok) {
        samples = d5_alloc(r->m.n * sizeof *samples, "samples");
        got = samples ? read_all(fds[0], samples, r->m.n * sizeof *samples, deadline) : 0;
        r->m.samples = samples;
    }
    close(fds[0]);
    if (got == -1) kill(-pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    kill(-pid, SIGKILL); /* what the operator forked and left running */
    cli_child_ended(pid);
    if (got != 1) {
        if (samples) d5_free(samples);
        memset(r, 0, sizeof *r);
        if (got == -1)
            snprintf(r->status, sizeof r->status, "timed out after %.0f s", o->timeout);
        else if (WIFSIGNALED(status))
            snprintf(r->status, sizeof r->status, "crashed: signal %d (%s)", WTERMSIG(status),
                     strsignal(WTERMSIG(status)));
        else
            snprintf(r->status, sizeof r->status, "crashed: exit status %d", WEXITSTATUS(status));
    }
}

void run_case(const run_opts *o, const op_case *c, const target *t, outcome *r)
{
    if (t->lib)
        run_isolated(o, c, t, r);
    else
        run_here(o, c, t, r);
}

/* ---- Loading a custom operator library in a child first ---- */

typedef struct probe_reply {
    int32_t status;
    char detail[512];
} probe_reply;

d5_status probe_library(const char *path, double timeout)
{
    /* A folder or a FIFO is refused here; a missing file is reported by the
     * loader, with dlopen's words. */
    struct stat st;
    if (stat(path, &st) == 0) {
        d5_status rs = d5_file_check_regular(path, "operator library");
        if (rs != D5_OK) return rs;
    }
    int fds[2];
    if (pipe(fds) != 0)
        return d5_error(D5_ERR_IO, "checking '%s': pipe: %s", path, strerror(errno));
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return d5_error(D5_ERR_IO, "checking '%s': fork: %s", path, strerror(errno));
    }
    if (pid == 0) {
        setpgid(0, 0);
        close(fds[0]);
        probe_reply rep;
        memset(&rep, 0, sizeof rep);
        d5_op_library *l = NULL;
        rep.status = (int32_t)d5_op_library_open(path, &l);
        if (rep.status != D5_OK) snprintf(rep.detail, sizeof rep.detail, "%s", d5_last_error());
        _exit(write_all(fds[1], &rep, sizeof rep) ? 0 : 1);
    }
    setpgid(pid, pid);
    cli_child_started(pid);
    close(fds[1]);
    probe_reply rep;
    int got = read_all(fds[0], &rep, sizeof rep, now_s() + timeout);
    close(fds[0]);
    if (got == -1) kill(-pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    kill(-pid, SIGKILL);
    cli_child_ended(pid);
    if (got == -1)
        return d5_error(D5_ERR_IO,
                        "loading '%s' did not finish within %.0f s (a constructor that hangs?); it "
                        "was not loaded into d5",
                        path, timeout);
    if (got != 1) {
        if (WIFSIGNALED(status))
            return d5_error(D5_ERR_IO,
                            "loading '%s' crashed with signal %d (%s), in a constructor or the "
                            "entry point; it was not loaded into d5",
                            path, WTERMSIG(status), strsignal(WTERMSIG(status)));
        return d5_error(D5_ERR_IO,
                        "loading '%s' ended the process with exit status %d, in a constructor or "
                        "the entry point; it was not loaded into d5",
                        path, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    }
    if (rep.status != D5_OK) {
        rep.detail[sizeof rep.detail - 1] = '\0';
        return d5_error((d5_status)rep.status, "%s", rep.detail);
    }
    return D5_OK;
}
