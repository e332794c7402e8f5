#include "op_support.h"

#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

/* A tensor of `dtype` holding `values` (size bytes each; NULL: zeros). */
static d5_tensor typed(d5_dtype dtype, size_t size, int32_t ndim, const int64_t *shape,
                       const void *values)
{
    d5_tensor_desc d;
    cr_assert_eq(d5_tensor_desc_make(dtype, ndim, shape, &d), D5_OK);
    d5_tensor t;
    cr_assert_eq(d5_tensor_alloc(&d, &t), D5_OK);
    if (values) memcpy(t.data, values, (size_t)d5_tensor_desc_numel(&d) * size);
    return t;
}

d5_tensor tf32(int32_t ndim, const int64_t *shape, const float *values)
{
    return typed(D5_F32, sizeof(float), ndim, shape, values);
}

d5_tensor ti64(int32_t ndim, const int64_t *shape, const int64_t *values)
{
    return typed(D5_I64, sizeof(int64_t), ndim, shape, values);
}

d5_tensor traw(d5_dtype dt, int32_t ndim, const int64_t *shape, const void *values)
{
    d5_tensor_desc d;
    d5_tensor t;
    cr_assert_eq(d5_tensor_desc_make(dt, ndim, shape, &d), D5_OK);
    cr_assert_eq(d5_tensor_alloc(&d, &t), D5_OK);
    size_t bytes = (size_t)d5_tensor_desc_numel(&d) * d5_dtype_size(dt);
    if (bytes && values) memcpy(t.data, values, bytes);
    return t;
}

d5_tensor tstr(int32_t ndim, const int64_t *shape, const char *const *words)
{
    d5_tensor_desc d;
    d5_tensor t;
    cr_assert_eq(d5_tensor_desc_make(D5_STRING, ndim, shape, &d), D5_OK);
    cr_assert_eq(d5_tensor_strings(&d, words, NULL, &t), D5_OK, "%s", d5_last_error());
    return t;
}

void need_backend(const char *backend)
{
    char why[256];
    if (!d5_backend_available(backend, why, sizeof why)) cr_skip_test("%s", why);
}

void need_dnnl(void)
{
    need_backend("dnnl");
}

d5_attr attr_int(const char *name, int64_t v)
{
    return (d5_attr){.name = name, .type = D5_ATTR_INT, .i = v};
}
d5_attr attr_float(const char *name, double v)
{
    return (d5_attr){.name = name, .type = D5_ATTR_FLOAT, .f = v};
}
d5_attr attr_string(const char *name, const char *v)
{
    return (d5_attr){.name = name, .type = D5_ATTR_STRING, .s = v};
}
d5_attr attr_ints(const char *name, const int64_t *v, int64_t n)
{
    return (d5_attr){.name = name, .type = D5_ATTR_INTS, .ints = v, .count = n};
}
d5_attr attr_floats(const char *name, const double *v, int64_t n)
{
    return (d5_attr){.name = name, .type = D5_ATTR_FLOATS, .floats = v, .count = n};
}

d5_status try_op(const char *name, const char *backend, const d5_tensor *in, int32_t nin,
                 const d5_attrs *attrs, d5_tensor *out, int32_t nout)
{
    const d5_op_desc *desc;
    d5_status s = d5_op_find(name, backend, &desc);
    if (s != D5_OK) return s;
    /* As an executor would: integer inputs (shapes, axes) known at create. */
    d5_tensor known[16];
    for (int32_t i = 0; i < nin; i++) {
        known[i] = in[i];
        if (in[i].desc.dtype == D5_F32 || in[i].desc.dtype == D5_F64) known[i].data = NULL;
    }
    d5_op *op;
    s = d5_op_create(desc, known, nin, attrs, nout, &op);
    if (s != D5_OK) return s;
    for (int32_t i = 0; i < nout; i++) {
        s = d5_tensor_alloc(d5_op_output_desc(op, i), &out[i]);
        cr_assert_eq(s, D5_OK);
    }
    s = d5_op_forward(op, in, out);
    /* An operator's strings live in it: they are copied out before it goes. */
    for (int32_t i = 0; s == D5_OK && i < nout; i++) {
        if (out[i].desc.dtype != D5_STRING) continue;
        d5_tensor copy;
        cr_assert_eq(d5_tensor_clone(&out[i], &copy), D5_OK);
        d5_tensor_free(&out[i]);
        out[i] = copy;
    }
    d5_op_free(op);
    if (s != D5_OK)
        for (int32_t i = 0; i < nout; i++) d5_tensor_free(&out[i]);
    return s;
}

void run_op(const char *name, const char *backend, const d5_tensor *in, int32_t nin,
            const d5_attrs *attrs, d5_tensor *out, int32_t nout)
{
    d5_status s = try_op(name, backend, in, nin, attrs, out, nout);
    cr_assert_eq(s, D5_OK, "%s (%s): %s: %s", name, backend, d5_status_name(s), d5_last_error());
}

void expect_values(const d5_tensor *got, const float *want, int64_t n, double tol)
{
    cr_assert_eq(d5_tensor_desc_numel(&got->desc), n, "element count");
    for (int64_t i = 0; i < n; i++) {
        double g = got->desc.dtype == D5_F64 ? ((const double *)got->data)[i]
                                             : ((const float *)got->data)[i];
        cr_assert(fabs(g - want[i]) <= tol || (isnan(g) && isnan(want[i])),
                  "element %lld: got %.8g, want %.8g", (long long)i, g, (double)want[i]);
    }
}

void expect_op_values(const char *name, const d5_tensor *in, int32_t nin, const d5_attrs *attrs,
                      const float *want, int64_t n, double tol)
{
    d5_tensor y;
    run_op(name, "ref", in, nin, attrs, &y, 1);
    expect_values(&y, want, n, tol);
    d5_tensor_free(&y);
}

void expect_gradient_of(const char *label, const char *name, const d5_tensor_desc *in, int32_t nin,
                        const d5_tensor *given, const d5_attrs *attrs, int32_t nout)
{
    const d5_op_desc *desc;
    cr_assert_eq(d5_op_find(name, "ref", &desc), D5_OK, "%s", d5_last_error());
    d5_gradient_check g;
    d5_status s = d5_validate_gradient(desc, in, nin, given, attrs, nout, NULL, &g);
    cr_assert_eq(s, D5_OK, "%s gradient check: %s", label, d5_last_error());
    cr_assert(g.passed,
              "%s gradient: input %d element %lld analytic %.10g numeric %.10g (error %.3g > %.3g)",
              label, g.worst_input, (long long)g.worst_index, g.analytic, g.numeric, g.error,
              g.tol);
    cr_assert_gt(g.checked, 0, "%s: no element was checked (%lld skipped)", label,
                 (long long)g.skipped);
}

void expect_gradient(const char *name, const d5_tensor_desc *in, int32_t nin,
                     const d5_tensor *given, const d5_attrs *attrs, int32_t nout)
{
    expect_gradient_of(name, name, in, nin, given, attrs, nout);
}

void expect_gradient_given(const char *name, int32_t ndim, const int64_t *shape,
                           const d5_tensor *given, const d5_attrs *attrs, int32_t nout)
{
    d5_tensor_desc d[2] = {op_fdesc(ndim, shape), given->desc};
    d5_tensor g[2] = {{.data = NULL}, *given};
    expect_gradient(name, d, 2, g, attrs, nout);
}

void expect_same_as_ref(const char *backend, const char *name, const d5_tensor_desc *in,
                        int32_t nin, const d5_attrs *attrs, const d5_check_params *p)
{
    const d5_op_desc *cand, *ref;
    cr_assert_eq(d5_op_find(name, backend, &cand), D5_OK, "%s", d5_last_error());
    cr_assert_eq(d5_op_find(name, "ref", &ref), D5_OK);
    d5_check_params params = p ? *p : d5_check_default_params();
    d5_forward_check r;
    cr_assert_eq(d5_validate_forward(cand, ref, in, nin, NULL, attrs, 1, &params, &r), D5_OK,
                 "%s (%s) forward: %s", name, backend, d5_last_error());
    cr_assert(r.passed, "%s (%s) forward: linf %.3g > %.3g at %lld (got %g want %g)", name, backend,
              r.out[0].linf, r.tol[0], (long long)r.out[0].worst, r.out[0].got, r.out[0].want);
    cr_assert_eq(d5_validate_backward(cand, ref, in, nin, NULL, attrs, 1, &params, &r), D5_OK,
                 "%s (%s) backward: %s", name, backend, d5_last_error());
    for (int32_t i = 0; i < nin; i++)
        cr_assert(r.out[i].linf <= r.tol[i] && !r.out[i].nonfinite,
                  "%s (%s) gradient of input %d: linf %.3g > %.3g at %lld (got %g want %g)%s", name,
                  backend, i, r.out[i].linf, r.tol[i], (long long)r.out[i].worst, r.out[i].got,
                  r.out[i].want, r.out[i].nonfinite ? ", not finite" : "");
}

/* ---- Shape operators' helpers ---- */

d5_tensor_desc op_fdesc(int32_t ndim, const int64_t *shape)
{
    d5_tensor_desc d;
    cr_assert_eq(d5_tensor_desc_make(D5_F32, ndim, shape, &d), D5_OK);
    return d;
}

/* A float32 tensor holding 0, 1, 2, ... */
d5_tensor op_iota(int32_t ndim, const int64_t *shape)
{
    d5_tensor t = tf32(ndim, shape, NULL);
    for (int64_t i = 0; i < d5_tensor_desc_numel(&t.desc); i++) ((float *)t.data)[i] = (float)i;
    return t;
}

void op_free_all(d5_tensor *t, int32_t n)
{
    for (int32_t i = 0; i < n; i++) d5_tensor_free(&t[i]);
}

void op_expect_shape(const d5_tensor *t, int32_t ndim, const int64_t *shape)
{
    cr_assert_eq(t->desc.ndim, ndim, "rank %d, want %d", (int)t->desc.ndim, (int)ndim);
    for (int32_t i = 0; i < ndim; i++)
        cr_assert_eq(t->desc.shape[i], shape[i], "dim %d is %lld, want %lld", (int)i,
                     (long long)t->desc.shape[i], (long long)shape[i]);
}

/* Runs a one-output operator and checks the output's shape and values; frees
 * the inputs and the output. */
void op_check(const char *op, d5_tensor *in, int32_t nin, const d5_attrs *attrs, int32_t ndim,
              const int64_t *shape, const float *want)
{
    d5_tensor y;
    run_op(op, "ref", in, nin, attrs, &y, 1);
    op_expect_shape(&y, ndim, shape);
    expect_values(&y, want, d5_tensor_desc_numel(&y.desc), 1e-5);
    d5_tensor_free(&y);
    op_free_all(in, nin);
}

/* Runs an operator that must fail with `status` and an error containing
 * `text`; leaves the inputs to the caller. */
void op_expect_fails(const char *op, const d5_tensor *in, int32_t nin, const d5_attrs *attrs,
                     int32_t nout, d5_status status, const char *text)
{
    d5_tensor y[8];
    cr_assert_leq(nout, 8);
    d5_status s = try_op(op, "ref", in, nin, attrs, y, nout);
    cr_assert_eq(s, status, "%s: got %s (%s)", op, d5_status_name(s), d5_last_error());
    cr_assert(strstr(d5_last_error(), text), "%s: error '%s' lacks '%s'", op, d5_last_error(),
              text);
}

/* As op_expect_fails; frees the inputs. */
void op_check_fails(const char *op, d5_tensor *in, int32_t nin, const d5_attrs *attrs, int32_t nout,
                    d5_status status, const char *text)
{
    op_expect_fails(op, in, nin, attrs, nout, status, text);
    op_free_all(in, nin);
}

const d5_attrs *with_opset(opset_attrs *o, int64_t opset, const d5_attr *extra, int32_t n)
{
    cr_assert_leq(n, 3);
    for (int32_t i = 0; i < n; i++) o->items[i] = extra[i];
    o->items[n] = attr_int("__opset", opset);
    o->attrs = (d5_attrs){o->items, n + 1};
    return &o->attrs;
}
