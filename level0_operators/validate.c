/* Forward and gradient checks of operators. */
#include "d5/validate.h"
#include "device.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static int is_float(int32_t dtype)
{
    return dtype == D5_F32 || dtype == D5_F64;
}

static double get(const d5_tensor *t, int64_t i)
{
    return t->desc.dtype == D5_F64 ? ((const double *)t->data)[i] : ((const float *)t->data)[i];
}

static void set(d5_tensor *t, int64_t i, double v)
{
    if (t->desc.dtype == D5_F64)
        ((double *)t->data)[i] = v;
    else
        ((float *)t->data)[i] = (float)v;
}

void d5_tensor_fill_uniform(d5_tensor *t, d5_rng *rng, double lo, double hi)
{
    int64_t n = d5_tensor_desc_numel(&t->desc);
    if (is_float(t->desc.dtype)) {
        for (int64_t i = 0; i < n; i++) set(t, i, lo + (hi - lo) * d5_rng_uniform(rng));
        return;
    }
    /* Other types: the same draws, converted by d5_convert's rules. */
    double v[256];
    size_t esize = d5_dtype_size((d5_dtype)t->desc.dtype);
    for (int64_t off = 0; off < n && esize; off += 256) {
        int64_t k = n - off < 256 ? n - off : 256;
        for (int64_t i = 0; i < k; i++) v[i] = lo + (hi - lo) * d5_rng_uniform(rng);
        if (d5_convert(v, D5_F64, (char *)t->data + (size_t)off * esize, (d5_dtype)t->desc.dtype,
                       (size_t)k) != D5_OK)
            return;
    }
}

d5_status d5_compare_tensors(const d5_tensor *got, const d5_tensor *want, d5_compare *out)
{
    if (!got || !want || !out) return d5_error(D5_ERR_INVALID, "d5_compare_tensors: NULL argument");
    if (!is_float(got->desc.dtype) || !is_float(want->desc.dtype))
        return d5_error(D5_ERR_UNSUPPORTED, "compare: only float32 and float64 tensors");
    int64_t n = d5_tensor_desc_numel(&got->desc);
    if (n != d5_tensor_desc_numel(&want->desc))
        return d5_error(D5_ERR_SHAPE, "compare: %lld elements against %lld", (long long)n,
                        (long long)d5_tensor_desc_numel(&want->desc));
    d5_compare c;
    memset(&c, 0, sizeof c);
    c.n = n;
    double l2 = 0, worst = -1, scale = 0;
    for (int64_t i = 0; i < n; i++)
        if (isfinite(get(want, i))) scale = fmax(scale, fabs(get(want, i)));
    double floor = fmax(1e-6 * scale, 1e-30);
    for (int64_t i = 0; i < n; i++) {
        double g = get(got, i), w = get(want, i);
        if (!isfinite(g) && isfinite(w)) c.nonfinite = 1;
        double d = fabs(g - w);
        if (isnan(d)) d = (isnan(g) && isnan(w)) ? 0 : INFINITY;
        c.l1 += d;
        l2 += d * d;
        if (d > c.linf) c.linf = d;
        double rel = d / fmax(fabs(w), floor);
        if (rel > c.max_rel) c.max_rel = rel;
        if (d > worst) {
            worst = d;
            c.worst = i;
            c.got = g;
            c.want = w;
        }
    }
    c.l2 = sqrt(l2);
    *out = c;
    return D5_OK;
}

d5_check_params d5_check_default_params(void)
{
    return (d5_check_params){
        .atol = 1e-4, .rtol = 1e-4, .seed = 1, .heatmap_csv = NULL, .constants = 0};
}

d5_gradient_params d5_gradient_default_params(void)
{
    return (d5_gradient_params){
        .step = 0, .atol = 0, .rtol = 0, .seed = 1, .wrt = 0, .max_elements = 0, .constants = 0};
}

/* A set of tensors allocated for descriptors, freed together. */
typedef struct tset {
    d5_tensor *t;
    int32_t n;
} tset;

static void tset_free(tset *s)
{
    for (int32_t i = 0; s->t && i < s->n; i++) d5_tensor_free(&s->t[i]);
    d5_free(s->t);
    s->t = NULL;
}

static d5_status tset_alloc(tset *s, const d5_tensor_desc *d, int32_t n)
{
    s->n = n;
    s->t = d5_calloc((size_t)n + 1, sizeof *s->t, "check tensors");
    if (!s->t) return D5_ERR_NOMEM;
    for (int32_t i = 0; i < n; i++) {
        if (d[i].dtype == D5_DTYPE_INVALID) {
            s->t[i].desc = d[i];
            continue;
        }
        d5_status st = d5_tensor_alloc(&d[i], &s->t[i]);
        if (st != D5_OK) {
            tset_free(s);
            return st;
        }
    }
    return D5_OK;
}

/* ---- Operators on device memory (D5_OP_CUDA) ----
 * The checks keep every tensor in host memory. An operator that works on
 * device memory runs on device copies: the tensors it reads are uploaded
 * before each call and the ones it writes are downloaded after it. */

static int on_device(const d5_op *op)
{
    return (d5_op_desc_of(op)->flags & D5_OP_CUDA) != 0;
}

static void dset_free(tset *d)
{
    for (int32_t i = 0; d->t && i < d->n; i++) d5__cuda_tensor_free(&d->t[i]);
    d5_free(d->t);
    d->t = NULL;
}

/* Device tensors for every host tensor that has data, with its contents when
 * `copy`, zeroed otherwise; tensors without data stay without. */
static d5_status dset_make(const tset *h, tset *d, int copy)
{
    d->n = h->n;
    d->t = d5_calloc((size_t)h->n + 1, sizeof *d->t, "device tensors");
    if (!d->t) return D5_ERR_NOMEM;
    for (int32_t i = 0; i < h->n; i++) {
        d5_status s = D5_OK;
        if (!h->t[i].data)
            d->t[i].desc = h->t[i].desc;
        else if (copy)
            s = d5__cuda_tensor_upload(&h->t[i], &d->t[i]);
        else
            s = d5__cuda_tensor_alloc(&h->t[i].desc, &d->t[i]);
        if (s != D5_OK) {
            dset_free(d);
            return s;
        }
    }
    return D5_OK;
}

static d5_status dset_fetch(const tset *d, tset *h)
{
    for (int32_t i = 0; i < h->n; i++)
        if (h->t[i].data && d->t[i].data) {
            d5_status s = d5__cuda_tensor_download(&d->t[i], &h->t[i]);
            if (s != D5_OK) return s;
        }
    return D5_OK;
}

/* d5_op_forward on host tensors, through device copies where needed. */
static d5_status op_forward(d5_op *op, tset *x, tset *y)
{
    if (!on_device(op)) return d5_op_forward(op, x->t, y->t);
    tset dx = {0}, dy = {0};
    d5_status s = dset_make(x, &dx, 1);
    if (s == D5_OK) s = dset_make(y, &dy, 0);
    if (s == D5_OK) s = d5_op_forward(op, dx.t, dy.t);
    if (s == D5_OK) s = dset_fetch(&dy, y);
    dset_free(&dx);
    dset_free(&dy);
    return s;
}

/* d5_op_backward likewise; only the input gradients come back. */
static d5_status op_backward(d5_op *op, tset *w, tset *x, tset *y, tset *gx)
{
    if (!on_device(op)) return d5_op_backward(op, w->t, x->t, y->t, gx->t);
    tset dw = {0}, dx = {0}, dy = {0}, dgx = {0};
    d5_status s = dset_make(w, &dw, 1);
    if (s == D5_OK) s = dset_make(x, &dx, 1);
    if (s == D5_OK) s = dset_make(y, &dy, 1);
    if (s == D5_OK) s = dset_make(gx, &dgx, 0);
    if (s == D5_OK) s = d5_op_backward(op, dw.t, dx.t, dy.t, dgx.t);
    if (s == D5_OK) s = dset_fetch(&dgx, gx);
    dset_free(&dw);
    dset_free(&dx);
    dset_free(&dy);
    dset_free(&dgx);
    return s;
}

/* The inputs as create sees them: integer inputs (shapes, axes, indices) and
 * the floating-point inputs of `constants` (bit i: input i) with their values,
 * other floating-point ones as descriptors only. */
static d5_status create_on(const d5_op_desc *desc, const tset *x, const d5_attrs *attrs,
                           int32_t noutputs, uint32_t constants, d5_op **op)
{
    d5_tensor known[64];
    if (x->n > 64) return d5_error(D5_ERR_INVALID, "%s: more than 64 inputs", desc->name);
    for (int32_t i = 0; i < x->n; i++) {
        known[i] = x->t[i];
        if (is_float(known[i].desc.dtype) && !(i < 32 && (constants >> i) & 1))
            known[i].data = NULL;
    }
    return d5_op_create(desc, known, x->n, attrs, noutputs, op);
}

/* Copies given inputs (converting float dtypes) or draws random floats. */
static d5_status fill_inputs(tset *s, const d5_tensor *given, d5_rng *rng, const char *op)
{
    for (int32_t i = 0; i < s->n; i++) {
        d5_tensor *t = &s->t[i];
        if (t->desc.dtype == D5_DTYPE_INVALID) continue;
        int64_t n = d5_tensor_desc_numel(&t->desc);
        if (given && given[i].data) {
            if (is_float(t->desc.dtype) && is_float(given[i].desc.dtype)) {
                for (int64_t k = 0; k < n; k++) set(t, k, get(&given[i], k));
            } else if (t->desc.dtype == given[i].desc.dtype) {
                memcpy(t->data, given[i].data, (size_t)n * d5_dtype_size((d5_dtype)t->desc.dtype));
            } else {
                return d5_error(D5_ERR_INVALID, "%s: input %d given as %s for %s", op, i,
                                d5_dtype_name((d5_dtype)given[i].desc.dtype),
                                d5_dtype_name((d5_dtype)t->desc.dtype));
            }
        } else if (is_float(t->desc.dtype)) {
            d5_tensor_fill_uniform(t, rng, -1, 1);
        } else {
            return d5_error(D5_ERR_INVALID, "%s: input %d is %s: give its values", op, i,
                            d5_dtype_name((d5_dtype)t->desc.dtype));
        }
    }
    return D5_OK;
}

static d5_status write_heatmap(const char *path, const d5_tensor *got, const d5_tensor *want)
{
    FILE *f = fopen(path, "w");
    if (!f) return d5_error(D5_ERR_IO, "cannot write heatmap '%s'", path);
    const d5_tensor_desc *d = &got->desc;
    int64_t cols = d->ndim ? d->shape[d->ndim - 1] : 1, n = d5_tensor_desc_numel(d);
    for (int64_t i = 0; i < n; i++)
        fprintf(f, "%.6g%c", fabs(get(got, i) - get(want, i)), (i + 1) % cols ? ',' : '\n');
    return fclose(f) == 0 ? D5_OK : d5_error(D5_ERR_IO, "cannot write heatmap '%s'", path);
}

d5_status d5_validate_forward(const d5_op_desc *cand, const d5_op_desc *ref,
                              const d5_tensor_desc *in, int32_t nin, const d5_tensor *inputs,
                              const d5_attrs *attrs, int32_t noutputs, const d5_check_params *pp,
                              d5_forward_check *out)
{
    d5_check_params p = pp ? *pp : d5_check_default_params();
    if (!cand || !ref || !out)
        return d5_error(D5_ERR_INVALID, "d5_validate_forward: NULL argument");
    d5_op *a = NULL, *b = NULL;
    tset x = {0}, ya = {0}, yb = {0};
    d5_rng rng;
    d5_rng_seed(&rng, p.seed);
    d5_status s = tset_alloc(&x, in, nin);
    if (s == D5_OK) s = fill_inputs(&x, inputs, &rng, cand->name);
    if (s == D5_OK) s = create_on(cand, &x, attrs, noutputs, p.constants, &a);
    if (s == D5_OK) s = create_on(ref, &x, attrs, noutputs, p.constants, &b);
    if (s != D5_OK) {
        tset_free(&x);
        d5_op_free(a);
        return s;
    }
    int32_t nout = d5_op_noutputs(a);
    if (nout > D5_CHECK_MAX_OUTPUTS) nout = D5_CHECK_MAX_OUTPUTS;
    d5_tensor_desc oa[D5_CHECK_MAX_OUTPUTS], ob[D5_CHECK_MAX_OUTPUTS];
    for (int32_t i = 0; i < nout; i++) {
        oa[i] = *d5_op_output_desc(a, i);
        ob[i] = *d5_op_output_desc(b, i);
    }
    s = tset_alloc(&ya, oa, nout);
    if (s == D5_OK) s = tset_alloc(&yb, ob, nout);
    if (s == D5_OK) s = op_forward(a, &x, &ya);
    if (s == D5_OK) s = op_forward(b, &x, &yb);
    d5_forward_check r;
    memset(&r, 0, sizeof r);
    r.noutputs = nout;
    r.passed = 1;
    for (int32_t i = 0; s == D5_OK && i < nout; i++) {
        if (!is_float(oa[i].dtype)) { /* integer outputs (masks, indices) must match exactly */
            int64_t n = d5_tensor_desc_numel(&oa[i]);
            size_t bytes = (size_t)n * d5_dtype_size((d5_dtype)oa[i].dtype);
            int same = oa[i].dtype == ob[i].dtype && memcmp(ya.t[i].data, yb.t[i].data, bytes) == 0;
            r.out[i].n = n;
            r.out[i].linf = same ? 0 : 1;
            r.passed &= same;
            continue;
        }
        s = d5_compare_tensors(&ya.t[i], &yb.t[i], &r.out[i]);
        if (s != D5_OK) break;
        double scale = 0;
        int64_t n = d5_tensor_desc_numel(&ob[i]);
        for (int64_t k = 0; k < n; k++) scale = fmax(scale, fabs(get(&yb.t[i], k)));
        r.tol[i] = p.atol + p.rtol * scale;
        if (!(r.out[i].linf <= r.tol[i]) || r.out[i].nonfinite) r.passed = 0;
    }
    if (s == D5_OK && p.heatmap_csv && nout > 0 && is_float(oa[0].dtype))
        s = write_heatmap(p.heatmap_csv, &ya.t[0], &yb.t[0]);
    tset_free(&x);
    tset_free(&ya);
    tset_free(&yb);
    d5_op_free(a);
    d5_op_free(b);
    if (s == D5_OK) *out = r;
    return s;
}

/* L = sum_k <w_k, y_k> after one forward call. */
/* sum_k <w_k, a_k - b_k> over the floating-point outputs: the change of the
 * loss L = sum_k <w_k, y_k> between two runs, summed term by term, so that
 * the outputs a run does not change contribute exact zeros. Differencing two
 * values of L instead loses L's rounding error, divided by the step: 4e-5 when
 * L was 3.5e5 (w drawn from the same seed as x, at 2^20 outputs). */
static double dot_diff(const tset *w, const tset *a, const tset *b)
{
    double sum = 0;
    for (int32_t k = 0; k < a->n; k++) {
        if (!is_float(a->t[k].desc.dtype) || !w->t[k].data) continue;
        int64_t n = d5_tensor_desc_numel(&a->t[k].desc);
        for (int64_t i = 0; i < n; i++)
            sum += get(&w->t[k], i) * (get(&a->t[k], i) - get(&b->t[k], i));
    }
    return sum;
}

d5_status d5_validate_gradient(const d5_op_desc *desc, const d5_tensor_desc *in0, int32_t nin,
                               const d5_tensor *inputs, const d5_attrs *attrs, int32_t noutputs,
                               const d5_gradient_params *pp, d5_gradient_check *out)
{
    d5_gradient_params p = pp ? *pp : d5_gradient_default_params();
    if (!desc || !out || nin > 32)
        return d5_error(D5_ERR_INVALID, "d5_validate_gradient: bad argument");
    if (!desc->backward)
        return d5_error(D5_ERR_UNSUPPORTED, "operator %s (%s) has no backward", desc->name,
                        desc->backend);
    int f64 = (desc->flags & D5_OP_F64) != 0;
    if (p.step == 0) p.step = f64 ? 1e-6 : 1e-2;
    if (p.atol == 0) p.atol = f64 ? 1e-5 : 2e-2;
    if (p.rtol == 0) p.rtol = f64 ? 1e-5 : 2e-2;
    d5_tensor_desc in[32];
    for (int32_t i = 0; i < nin; i++) {
        in[i] = in0[i];
        if (f64 && is_float(in[i].dtype)) in[i].dtype = D5_F64;
    }
    d5_op *op = NULL;
    tset x = {0}, y = {0}, yp = {0}, ym = {0}, w = {0}, gx = {0};
    d5_rng rng;
    d5_rng_seed(&rng, p.seed);
    d5_status s = tset_alloc(&x, in, nin);
    if (s == D5_OK) s = fill_inputs(&x, inputs, &rng, desc->name);
    if (s == D5_OK) s = create_on(desc, &x, attrs, noutputs, p.constants, &op);
    if (s != D5_OK) {
        tset_free(&x);
        return s;
    }
    int32_t nout = d5_op_noutputs(op);
    d5_tensor_desc od[32];
    for (int32_t k = 0; k < nout && k < 32; k++) od[k] = *d5_op_output_desc(op, k);
    s = tset_alloc(&y, od, nout);
    if (s == D5_OK) s = tset_alloc(&yp, od, nout);
    if (s == D5_OK) s = tset_alloc(&ym, od, nout);
    if (s == D5_OK) s = tset_alloc(&w, od, nout);
    if (s == D5_OK) s = tset_alloc(&gx, in, nin);
    for (int32_t k = 0; s == D5_OK && k < nout; k++)
        if (is_float(od[k].dtype))
            d5_tensor_fill_uniform(&w.t[k], &rng, -1, 1);
        else
            d5_tensor_free(&w.t[k]); /* no gradient flows through integer outputs */
    /* Analytic gradients. */
    if (s == D5_OK) s = op_forward(op, &x, &y);
    uint32_t wrt = 0;
    for (int32_t i = 0; i < nin; i++)
        if (is_float(in[i].dtype) && (p.wrt == 0 || (p.wrt >> i) & 1) && !((p.constants >> i) & 1))
            wrt |= 1u << i;
    for (int32_t i = 0; s == D5_OK && i < nin; i++)
        if (!((wrt >> i) & 1) && gx.t[i].data) d5_tensor_free(&gx.t[i]);
    if (s == D5_OK) s = op_backward(op, &w, &x, &y, &gx);

    d5_gradient_check r;
    memset(&r, 0, sizeof r);
    r.step = p.step;
    r.passed = 1;
    r.worst_input = -1;
    double worst_ratio = -1;
    for (int32_t i = 0; s == D5_OK && i < nin; i++) {
        if (!((wrt >> i) & 1)) continue;
        int64_t n = d5_tensor_desc_numel(&in[i]);
        int64_t stride = p.max_elements > 0 && n > p.max_elements
                             ? (n + p.max_elements - 1) / p.max_elements
                             : 1;
        for (int64_t e = 0; s == D5_OK && e < n; e += stride) {
            double v = get(&x.t[i], e);
            set(&x.t[i], e, v + p.step);
            s = op_forward(op, &x, &yp);
            set(&x.t[i], e, v - p.step);
            if (s == D5_OK) s = op_forward(op, &x, &ym);
            set(&x.t[i], e, v);
            if (s != D5_OK) break;
            double right = dot_diff(&w, &yp, &y) / p.step, left = dot_diff(&w, &y, &ym) / p.step;
            double numeric = dot_diff(&w, &yp, &ym) / (2 * p.step), analytic = get(&gx.t[i], e);
            double scale = fmax(fabs(right), fabs(left));
            /* Smooth: the slopes differ by about f'' * step. A jump of 5% or
             * more, beyond the absolute tolerance, is a kink between v - step
             * and v + step. At a kink the central difference is off by up to
             * half the jump, so a kink this test lets through stays within
             * the tolerance; a float32 step of 1e-2 once let jumps of 0.1 through. */
            if (fabs(right - left) > 0.05 * scale + p.atol) {
                r.skipped++;
                continue;
            }
            r.checked++;
            double err = fabs(analytic - numeric);
            double tol = p.atol + p.rtol * fmax(fabs(analytic), fabs(numeric));
            if (!(err <= tol)) r.passed = 0;
            if (err / tol > worst_ratio) {
                worst_ratio = err / tol;
                r.worst_input = i;
                r.worst_index = e;
                r.analytic = analytic;
                r.numeric = numeric;
                r.error = err;
                r.tol = tol;
            }
        }
    }
    tset_free(&x);
    tset_free(&y);
    tset_free(&yp);
    tset_free(&ym);
    tset_free(&w);
    tset_free(&gx);
    d5_op_free(op);
    if (s == D5_OK) *out = r;
    return s;
}

/* One backward run: creates, runs forward, then backward with gradients w. */
static d5_status run_backward(const d5_op_desc *desc, tset *x, const d5_attrs *attrs,
                              int32_t noutputs, uint32_t constants, d5_rng *wrng, tset *gx)
{
    d5_op *op = NULL;
    tset y = {0}, w = {0};
    d5_status s = create_on(desc, x, attrs, noutputs, constants, &op);
    int32_t nout = s == D5_OK ? d5_op_noutputs(op) : 0;
    d5_tensor_desc od[32];
    for (int32_t k = 0; k < nout && k < 32; k++) od[k] = *d5_op_output_desc(op, k);
    if (s == D5_OK) s = tset_alloc(&y, od, nout);
    if (s == D5_OK) s = tset_alloc(&w, od, nout);
    for (int32_t k = 0; s == D5_OK && k < nout; k++)
        if (is_float(od[k].dtype))
            d5_tensor_fill_uniform(&w.t[k], wrng, -1, 1);
        else
            d5_tensor_free(&w.t[k]);
    if (s == D5_OK) s = op_forward(op, x, &y);
    if (s == D5_OK) s = op_backward(op, &w, x, &y, gx);
    tset_free(&y);
    tset_free(&w);
    d5_op_free(op);
    return s;
}

d5_status d5_validate_backward(const d5_op_desc *cand, const d5_op_desc *ref,
                               const d5_tensor_desc *in, int32_t nin, const d5_tensor *inputs,
                               const d5_attrs *attrs, int32_t noutputs, const d5_check_params *pp,
                               d5_forward_check *out)
{
    d5_check_params p = pp ? *pp : d5_check_default_params();
    if (!cand || !ref || !out || nin > D5_CHECK_MAX_OUTPUTS)
        return d5_error(D5_ERR_INVALID, "d5_validate_backward: bad argument");
    if (!cand->backward || !ref->backward)
        return d5_error(D5_ERR_UNSUPPORTED, "operator %s: %s has no backward", cand->name,
                        cand->backward ? ref->backend : cand->backend);
    tset x = {0}, ga = {0}, gb = {0};
    d5_rng rng, w1, w2;
    d5_rng_seed(&rng, p.seed);
    d5_status s = tset_alloc(&x, in, nin);
    if (s == D5_OK) s = fill_inputs(&x, inputs, &rng, cand->name);
    if (s == D5_OK) s = tset_alloc(&ga, in, nin);
    if (s == D5_OK) s = tset_alloc(&gb, in, nin);
    for (int32_t i = 0; s == D5_OK && i < nin; i++)
        if (!is_float(in[i].dtype)) {
            d5_tensor_free(&ga.t[i]);
            d5_tensor_free(&gb.t[i]);
        }
    w1 = rng;
    w2 = rng; /* both sides get the same output gradients */
    if (s == D5_OK) s = run_backward(cand, &x, attrs, noutputs, p.constants, &w1, &ga);
    if (s == D5_OK) s = run_backward(ref, &x, attrs, noutputs, p.constants, &w2, &gb);
    d5_forward_check r;
    memset(&r, 0, sizeof r);
    r.noutputs = nin;
    r.passed = 1;
    for (int32_t i = 0; s == D5_OK && i < nin; i++) {
        if (!ga.t[i].data) continue;
        s = d5_compare_tensors(&ga.t[i], &gb.t[i], &r.out[i]);
        double scale = 0;
        int64_t n = d5_tensor_desc_numel(&in[i]);
        for (int64_t k = 0; k < n; k++) scale = fmax(scale, fabs(get(&gb.t[i], k)));
        r.tol[i] = p.atol + p.rtol * scale;
        if (!(r.out[i].linf <= r.tol[i]) || r.out[i].nonfinite) r.passed = 0;
    }
    tset_free(&x);
    tset_free(&ga);
    tset_free(&gb);
    if (s == D5_OK) *out = r;
    return s;
}
