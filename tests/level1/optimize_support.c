/* What the tests of the graph optimisation passes share: running a network,
 * comparing it with its optimised clone, reading the report, and building
 * small graphs by hand. */
#include "optimize_support.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

int count_op(const d5_network *net, const char *op_type)
{
    int n = 0;
    for (int32_t i = 0; i < d5_network_node_count(net); i++) {
        d5_node_info info;
        d5_network_node_at(net, i, &info);
        n += strcmp(info.op_type, op_type) == 0;
    }
    return n;
}

/* Runs net on seeded inputs with the backends `backend` (NULL: the default
 * list) and returns a copy of output 0. */
float *run_output(d5_network *net, const char *backend, int64_t *n)
{
    d5_executor *ex = NULL;
    d5_executor_options eo = d5_executor_default_options();
    eo.backend = backend;
    cr_assert_eq(d5_executor_create(net, &eo, &ex), D5_OK, "%s", d5_last_error());
    for (int32_t i = 0; i < d5_network_input_count(net); i++) {
        int32_t v;
        d5_value_info vi;
        cr_assert_eq(d5_network_find_value(net, d5_network_input_name(net, i), &v), D5_OK);
        d5_network_value_at(net, v, &vi);
        d5_tensor t;
        cr_assert_eq(d5_tensor_alloc(&vi.desc, &t), D5_OK);
        float *x = t.data;
        for (int64_t j = 0; j < d5_tensor_desc_numel(&vi.desc); j++)
            x[j] = (float)sin(0.37 * (double)j + i);
        cr_assert_eq(d5_executor_feed(ex, vi.name, &t), D5_OK, "%s", d5_last_error());
        d5_tensor_free(&t);
    }
    cr_assert_eq(d5_executor_inference(ex), D5_OK, "%s", d5_last_error());
    d5_tensor y;
    cr_assert_eq(d5_executor_fetch(ex, d5_network_output_name(net, 0), &y), D5_OK);
    *n = d5_tensor_desc_numel(&y.desc);
    float *copy = malloc((size_t)*n * sizeof *copy);
    cr_assert_not_null(copy);
    memcpy(copy, y.data, (size_t)*n * sizeof *copy);
    d5_executor_free(ex);
    return copy;
}

/* Optimises a clone of net at `level` and checks that output 0 is the same
 * within float32 rounding (relative to the output's largest magnitude), on the
 * default backends (dnnl), on blas and, with `ref`, on the ref backend too:
 * each has its own FusedConv. */
d5_optimize_report compare_on(d5_network *net, d5_optimize_level level, int ref)
{
    d5_network *opt = NULL;
    cr_assert_eq(d5_network_clone(net, &opt), D5_OK);
    d5_optimize_report r;
    cr_assert_eq(d5_network_optimize(opt, level, &r), D5_OK, "%s", d5_last_error());
    cr_assert_eq(d5_network_check(opt, NULL), D5_OK, "%s", d5_last_error());
    static const char *const backends[] = {NULL, "blas,ref", "ref"};
    for (size_t k = 0; k < (ref ? 3u : 2u); k++) {
        int64_t na, nb;
        float *a = run_output(net, backends[k], &na), *b = run_output(opt, backends[k], &nb);
        cr_assert_eq(na, nb);
        double scale = 0, worst = 0;
        for (int64_t i = 0; i < na; i++) {
            scale = fmax(scale, fabs(a[i]));
            worst = fmax(worst, fabs((double)a[i] - b[i]));
        }
        cr_expect_leq(worst, 1e-5 * fmax(scale, 1.0),
                      "backends %s: largest difference %g (outputs up to %g)",
                      backends[k] ? backends[k] : "default", worst, scale);
        free(a);
        free(b);
    }
    d5_network_free(opt);
    return r;
}

d5_optimize_report optimise_and_compare(d5_network *net, d5_optimize_level level)
{
    return compare_on(net, level, 1);
}

int32_t applied(const d5_optimize_report *r, const char *pass)
{
    for (int32_t i = 0; i < r->npasses; i++)
        if (strcmp(r->passes[i].name, pass) == 0) return r->passes[i].applied;
    return -1;
}

d5_tensor_desc desc(int32_t ndim, const int64_t *shape)
{
    d5_tensor_desc d;
    cr_assert_eq(d5_tensor_desc_make(D5_F32, ndim, shape, &d), D5_OK);
    return d;
}

void add_f32(d5_network *net, const char *name, int32_t ndim, const int64_t *shape, float base)
{
    d5_tensor_desc d = desc(ndim, shape);
    d5_tensor t;
    cr_assert_eq(d5_tensor_alloc(&d, &t), D5_OK);
    for (int64_t i = 0; i < d5_tensor_desc_numel(&d); i++)
        ((float *)t.data)[i] = base + 0.01f * (float)(i % 17);
    cr_assert_eq(d5_network_add_initializer_take(net, name, &t), D5_OK, "%s", d5_last_error());
}

void node(d5_network *net, const char *name, const char *op, const char *const *in, int32_t nin,
          const char *out, const d5_attrs *attrs)
{
    const char *outs[] = {out};
    cr_assert_eq(d5_network_add_node(net, name, op, NULL, in, nin, outs, 1, attrs, NULL), D5_OK,
                 "%s", d5_last_error());
}

/* An empty network of `opset` with the float32 input x of `shape`. */
d5_network *graph(const char *name, int opset, int32_t ndim, const int64_t *shape)
{
    d5_network *net = NULL;
    cr_assert_eq(d5_network_create(name, &net), D5_OK);
    cr_assert_eq(d5_network_set_opset(net, "", opset), D5_OK);
    d5_tensor_desc xd = desc(ndim, shape);
    cr_assert_eq(d5_network_add_input(net, "x", &xd, NULL), D5_OK);
    return net;
}

int32_t fused_to_one(d5_network *net, const char *pass, d5_node_info *out)
{
    d5_optimize_report r = optimise_and_compare(net, D5_OPTIMIZE_ALL);
    int32_t n = applied(&r, pass);
    cr_assert_eq(d5_network_optimize(net, D5_OPTIMIZE_ALL, NULL), D5_OK, "%s", d5_last_error());
    cr_expect_eq(d5_network_node_count(net), 1, "%s: %d nodes left", pass,
                 (int)d5_network_node_count(net));
    d5_network_node_at(net, 0, out);
    return n;
}
