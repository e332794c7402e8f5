/* The executor's compute precision (options.compute_precision): checked at
 * create, passed to the dnnl backend's Conv and Gemm, and reported per node
 * (d5_executor_node_impl, d5_executor_precision_report). The operators' own
 * accuracy is tested in level0/test_dnnl_lowp.c; here the results of a small
 * network in bf16 stay near float32's and differ from them. */
#define _GNU_SOURCE
#include "support.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

TestSuite(executor_precision, .timeout = D5_TIMEOUT(120));

static void add_weight(d5_network *net, const char *name, int32_t nd, const int64_t *shape,
                       uint32_t seed)
{
    d5_tensor_desc d;
    d5_tensor t;
    cr_assert_eq(d5_tensor_desc_make(D5_F32, nd, shape, &d), D5_OK);
    cr_assert_eq(d5_tensor_alloc(&d, &t), D5_OK);
    for (int64_t i = 0; i < d5_tensor_desc_numel(&d); i++) {
        seed = seed * 1664525u + 1013904223u;
        ((float *)t.data)[i] = (float)((seed >> 8) & 0xffff) / 65535.0f * 0.4f - 0.2f;
    }
    cr_assert_eq(d5_network_add_initializer_take(net, name, &t), D5_OK, "%s", d5_last_error());
}

/* x[2,16,8,8] -> Conv "conv1" -> Conv "conv2" -> Flatten -> Gemm "fc" -> y[2,10]: c1
 * passes between the convolutions in oneDNN's blocked layout at inference. */
static d5_network *conv_net(void)
{
    d5_network *net = NULL;
    cr_assert_eq(d5_network_create("precision", &net), D5_OK);
    d5_tensor_desc x;
    cr_assert_eq(d5_tensor_desc_make(D5_F32, 4, (int64_t[]){2, 16, 8, 8}, &x), D5_OK);
    cr_assert_eq(d5_network_add_input(net, "x", &x, NULL), D5_OK);
    add_weight(net, "W1", 4, (int64_t[]){16, 16, 3, 3}, 1u);
    add_weight(net, "B1", 1, (int64_t[]){16}, 2u);
    add_weight(net, "W2", 4, (int64_t[]){16, 16, 3, 3}, 3u);
    add_weight(net, "W3", 2, (int64_t[]){10, 1024}, 4u);
    d5_attr pads = {
        .name = "pads", .type = D5_ATTR_INTS, .ints = (int64_t[]){1, 1, 1, 1}, .count = 4};
    d5_attrs conv_attrs = {&pads, 1};
    d5_attr tb = {.name = "transB", .type = D5_ATTR_INT, .i = 1};
    d5_attrs fc_attrs = {&tb, 1};
    struct {
        const char *name, *op;
        const char *in[3];
        int32_t nin;
        const char *out;
        const d5_attrs *attrs;
    } nodes[] = {{"conv1", "Conv", {"x", "W1", "B1"}, 3, "c1", &conv_attrs},
                 {"conv2", "Conv", {"c1", "W2"}, 2, "c2", &conv_attrs},
                 {"flat", "Flatten", {"c2"}, 1, "f", NULL},
                 {"fc", "Gemm", {"f", "W3"}, 2, "y", &fc_attrs}};
    for (size_t i = 0; i < sizeof nodes / sizeof nodes[0]; i++)
        cr_assert_eq(d5_network_add_node(net, nodes[i].name, nodes[i].op, NULL, nodes[i].in,
                                         nodes[i].nin, &nodes[i].out, 1, nodes[i].attrs, NULL),
                     D5_OK, "%s", d5_last_error());
    cr_assert_eq(d5_network_add_output(net, "y", NULL), D5_OK);
    return net;
}

static d5_executor *make(const d5_network *net, const char *precision, const char *backend,
                         int backprop)
{
    d5_executor_options o = d5_executor_default_options();
    o.compute_precision = precision;
    o.backend = backend;
    o.backprop = backprop;
    d5_executor *ex = NULL;
    cr_assert_eq(d5_executor_create(net, &o, &ex), D5_OK, "%s", d5_last_error());
    return ex;
}

static void feed(d5_executor *ex)
{
    d5_tensor_desc d;
    d5_tensor t;
    cr_assert_eq(d5_tensor_desc_make(D5_F32, 4, (int64_t[]){2, 16, 8, 8}, &d), D5_OK);
    cr_assert_eq(d5_tensor_alloc(&d, &t), D5_OK);
    for (int64_t i = 0; i < 2048; i++) ((float *)t.data)[i] = (float)sin(0.37 * (double)i);
    cr_assert_eq(d5_executor_feed(ex, "x", &t), D5_OK);
    d5_tensor_free(&t);
}

/* max |a - b| / max |b| over n values. */
static double rel_diff(const float *a, const float *b, int64_t n)
{
    double d = 0, m = 0;
    for (int64_t i = 0; i < n; i++) {
        d = fmax(d, fabs((double)a[i] - b[i]));
        m = fmax(m, fabs((double)b[i]));
    }
    return d / m;
}

static int bf16_available(void)
{
    d5_precision_class cls;
    char text[256];
    if (!d5_backend_available("dnnl", text, sizeof text)) return 0;
    cr_assert_eq(d5_dnnl_precision_support("bf16", &cls, text, sizeof text), D5_OK);
    return cls != D5_PRECISION_UNSUPPORTED;
}

static int starts(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

static char *report(const d5_executor *ex)
{
    size_t n = d5_executor_precision_report(ex, NULL, 0);
    char *buf = malloc(n + 1);
    cr_assert_eq(d5_executor_precision_report(ex, buf, n + 1), n);
    cr_assert_eq(strlen(buf), n);
    return buf;
}

Test(executor_precision, unknown_precision_fails_at_create)
{
    d5_network *net = conv_net();
    d5_executor_options o = d5_executor_default_options();
    o.compute_precision = "bfloat16";
    d5_executor *ex = NULL;
    cr_assert_eq(d5_executor_create(net, &o, &ex), D5_ERR_INVALID);
    cr_assert_null(ex);
    const char *e = d5_last_error();
    cr_assert(strstr(e, "options.compute_precision: 'bfloat16' is not a compute precision"), "%s",
              e);
    o.compute_precision = "f32";
    cr_assert_eq(d5_executor_create(net, &o, &ex), D5_OK, "%s", d5_last_error());
    d5_executor_free(ex);
    d5_network_free(net);
}

Test(executor_precision, float32_report_lists_the_nodes)
{
    d5_network *net = conv_net();
    d5_executor *ex = make(net, NULL, "ref", 0);
    char *r = report(ex);
    cr_assert(starts(r, "compute precision f32: 3 of 3 nodes in f32 (native)\n"), "%s", r);
    cr_assert(strstr(r, "\nconv1 Conv ref: f32 (the ref backend computes in its tensors' type)\n"),
              "%s", r);
    cr_assert(strstr(r, "\nfc Gemm ref: f32"), "%s", r);
    cr_assert_null(strstr(r, "flat"), "%s", r);
    /* A short buffer gets the start, terminated; the length stays the whole. */
    char small[16];
    cr_assert_eq(d5_executor_precision_report(ex, small, sizeof small), strlen(r));
    cr_assert_str_eq(small, "compute precisi");
    d5_op_impl impl;
    cr_assert_eq(d5_executor_node_impl(ex, 0, &impl), D5_OK);
    cr_assert_eq(impl.reported, 0);
    cr_assert_eq(d5_executor_node_impl(ex, 99, &impl), D5_ERR_RANGE);
    free(r);
    d5_executor_free(ex);
    d5_network_free(net);
}

/* bf16 on the default backends: every Conv and Gemm runs a bfloat16 kernel, the
 * convolutions still pass blocked values, and y moves by bfloat16's rounding. */
Test(executor_precision, bf16_inference_runs_bfloat16_kernels)
{
    if (!bf16_available()) cr_skip_test("no bfloat16 on oneDNN here");
    d5_network *net = conv_net();
    d5_executor *e32 = make(net, "f32", NULL, 0), *e16 = make(net, "bf16", NULL, 0);
    char *r = report(e16);
    cr_assert(starts(r, "compute precision bf16: 3 of 3 nodes in bf16"), "%s", r);
    cr_assert(strstr(r, "\nconv1 Conv dnnl: bf16 "), "%s", r);
    cr_assert(strstr(r, "\nfc Gemm dnnl: bf16 "), "%s", r);
    /* The note shared by the nodes is printed once, the nodes refer to it. */
    cr_assert(strstr(r, "\n[1] float32 operands converted to bfloat16"), "%s", r);
    cr_assert_null(strstr(r, "\n[2]"), "%s", r);
    cr_assert(strstr(strstr(r, "\nconv2 Conv dnnl: "), " [1]\n"), "%s", r);
    for (int32_t i = 0; i < d5_executor_node_count(e16); i++) {
        d5_exec_node n;
        d5_op_impl impl;
        d5_executor_node_at(e16, i, &n);
        cr_assert_eq(d5_executor_node_impl(e16, i, &impl), D5_OK);
        if (strcmp(n.op_type, "Conv") == 0 || strcmp(n.op_type, "Gemm") == 0) {
            cr_assert_str_eq(n.backend, "dnnl");
            cr_assert_str_eq(impl.precision, "bf16", "%s: %s", n.name, impl.note);
            cr_assert_str_eq(impl.requested, "bf16");
        }
    }
    d5_memory_plan p32, p16;
    d5_executor_memory(e32, &p32);
    d5_executor_memory(e16, &p16);
    cr_assert_eq(p32.blocked_values, 1);
    cr_assert_eq(p16.blocked_values, 1);
    feed(e32);
    feed(e16);
    cr_assert_eq(d5_executor_inference(e32), D5_OK, "%s", d5_last_error());
    cr_assert_eq(d5_executor_inference(e16), D5_OK, "%s", d5_last_error());
    d5_tensor y32, y16;
    cr_assert_eq(d5_executor_fetch(e32, "y", &y32), D5_OK);
    cr_assert_eq(d5_executor_fetch(e16, "y", &y16), D5_OK);
    double d = rel_diff(y16.data, y32.data, 20);
    cr_assert(d < 0.03 && d > 1e-5, "relative difference %.3g", d);
    free(r);
    d5_executor_free(e32);
    d5_executor_free(e16);
    d5_network_free(net);
}

/* Backprop in bf16: the backward kernels are bfloat16 ones too (named in the
 * report after the first pass) and the gradients stay near float32's. */
Test(executor_precision, bf16_backprop_reports_backward_kernels)
{
    if (!bf16_available()) cr_skip_test("no bfloat16 on oneDNN here");
    d5_network *net = conv_net();
    d5_executor *e32 = make(net, NULL, NULL, 1), *e16 = make(net, "bf16", NULL, 1);
    feed(e32);
    feed(e16);
    cr_assert_eq(d5_executor_inference_and_backprop(e32), D5_OK, "%s", d5_last_error());
    cr_assert_eq(d5_executor_inference_and_backprop(e16), D5_OK, "%s", d5_last_error());
    const char *params[] = {"W1", "B1", "W2", "W3"};
    for (int i = 0; i < 4; i++) {
        d5_tensor g32, g16;
        cr_assert_eq(d5_executor_gradient(e32, params[i], &g32), D5_OK);
        cr_assert_eq(d5_executor_gradient(e16, params[i], &g16), D5_OK);
        double d = rel_diff(g16.data, g32.data, d5_tensor_desc_numel(&g32.desc));
        cr_assert(d < 0.05, "%s: relative difference %.3g", params[i], d);
    }
    char *r = report(e16);
    cr_assert(starts(r, "compute precision bf16: 3 of 3 nodes in bf16"), "%s", r);
    cr_log_info("%s", r);
    const char *line = strstr(r, "\nconv2 Conv dnnl: bf16 ");
    cr_assert(line, "%s", r);
    cr_assert(strstr(line, ", backward "), "%s", r);
    d5_op_impl impl;
    cr_assert_eq(d5_executor_node_impl(e16, 0, &impl), D5_OK);
    cr_assert(strstr(impl.backward_data, "bf16"), "%s", impl.backward_data);
    free(r);
    d5_executor_free(e32);
    d5_executor_free(e16);
    d5_network_free(net);
}

/* Backends without lower-precision kernels keep float32 and the report says so. */
Test(executor_precision, bf16_on_ref_stays_float32)
{
    d5_network *net = conv_net();
    d5_executor *ex = make(net, "bf16", "ref", 0);
    char *r = report(ex);
    cr_assert(starts(r, "compute precision bf16: 0 of 3 nodes in bf16, 3 in another precision\n"),
              "%s", r);
    cr_assert(strstr(r, "\nconv2 Conv ref: f32 (the ref backend"), "%s", r);
    free(r);
    d5_executor_free(ex);
    d5_network_free(net);
}
