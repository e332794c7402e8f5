/* Graph optimisation passes: each rewrite leaves the outputs equal to the
 * unoptimised graph's, and what a pass cannot prove equal stays as it is. */
#include "optimize_support.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Running statistics, scales and shifts of every BatchNormalization drawn at
 * random, so that folding them is not the identity it is on fresh models. */
static void randomise_batchnorms(d5_network *net, unsigned seed)
{
    srand(seed);
    for (int32_t i = 0; i < d5_network_node_count(net); i++) {
        d5_node_info info;
        d5_network_node_at(net, i, &info);
        if (strcmp(info.op_type, "BatchNormalization") != 0) continue;
        for (int32_t k = 1; k < 5; k++) {
            int32_t v;
            d5_value_info vi;
            cr_assert_eq(d5_network_find_value(net, info.inputs[k], &v), D5_OK);
            d5_network_value_at(net, v, &vi);
            float *d = d5_network_initializer_data(net, info.inputs[k]);
            cr_assert_not_null(d);
            for (int64_t j = 0; j < d5_tensor_desc_numel(&vi.desc); j++) {
                float u = (float)rand() / (float)RAND_MAX;
                d[j] = k == 4 ? 0.5f + u : k == 1 ? 0.5f + u : u - 0.5f; /* var > 0 */
            }
        }
    }
}

static d5_network *model(const char *name, int64_t batch)
{
    d5_model_params p = d5_model_default_params();
    p.batch = batch;
    p.seed = 7;
    d5_network *net = NULL;
    cr_assert_eq(d5_model_build(name, &p, &net), D5_OK, "%s", d5_last_error());
    return net;
}

/* Every BatchNormalization of the ResNets follows a Conv and is folded (basic);
 * then (all) each Relu and Add is fused into a convolution: one fusion per
 * Relu after a Conv, and one per residual Add with the Relu after it. */
static void fold_model(const char *name, int64_t batch, int fusions, int ref)
{
    d5_network *net = model(name, batch);
    randomise_batchnorms(net, 11);
    int bns = count_op(net, "BatchNormalization"), convs = count_op(net, "Conv");
    int relus = count_op(net, "Relu"), adds = count_op(net, "Add");
    cr_assert_gt(bns, 0);
    d5_optimize_report r = compare_on(net, D5_OPTIMIZE_BASIC, ref);
    cr_expect_eq(applied(&r, "fold-batchnorm"), bns);
    cr_expect_eq(r.nodes_before - r.nodes_after, bns);
    cr_expect_eq(applied(&r, "fuse-conv-activation"), -1, "not a pass of basic");
    r = compare_on(net, D5_OPTIMIZE_ALL, ref);
    cr_expect_eq(applied(&r, "fuse-conv-activation"), fusions);
    cr_expect_eq(r.nodes_after, r.nodes_before - bns - relus - adds);
    d5_network *opt = NULL;
    cr_assert_eq(d5_network_clone(net, &opt), D5_OK);
    cr_assert_eq(d5_network_optimize(opt, D5_OPTIMIZE_BASIC, NULL), D5_OK);
    cr_expect_eq(count_op(opt, "BatchNormalization"), 0);
    cr_expect_eq(count_op(opt, "Conv"), convs);
    /* The statistics went with the nodes; one weight and one bias per conv remain. */
    cr_expect_lt(d5_network_value_count(opt), d5_network_value_count(net));
    d5_network_free(opt);
    d5_network_free(net);
}

/* resnet20: the stem and 9 blocks of two convolutions; resnet18: the stem and 8. */
Test(optimize, folds_and_fuses_resnet20)
{
    fold_model("resnet20", 3, 19, 1);
}
Test(optimize, folds_and_fuses_resnet18)
{
    fold_model("resnet18", 1, 17, 0); /* ref takes minutes at 1.8 GFLOP */
}

Test(optimize, none_changes_nothing)
{
    d5_network *net = model("resnet20", 1);
    int32_t before = d5_network_node_count(net);
    d5_optimize_report r;
    cr_assert_eq(d5_network_optimize(net, D5_OPTIMIZE_NONE, &r), D5_OK);
    cr_expect_eq(r.npasses, 0);
    cr_expect_eq(d5_network_node_count(net), before);
    cr_expect_eq(r.nodes_after, before);
    d5_network_free(net);
}

Test(optimize, levels_parse)
{
    d5_optimize_level l;
    cr_assert_eq(d5_optimize_parse("none", &l), D5_OK);
    cr_expect_eq(l, D5_OPTIMIZE_NONE);
    cr_assert_eq(d5_optimize_parse("basic", &l), D5_OK);
    cr_expect_eq(l, D5_OPTIMIZE_BASIC);
    cr_assert_eq(d5_optimize_parse("all", &l), D5_OK);
    cr_expect_eq(l, D5_OPTIMIZE_ALL);
    cr_expect_eq(d5_optimize_parse("fast", &l), D5_ERR_INVALID);
    cr_expect(strstr(d5_last_error(), "'fast'"), "%s", d5_last_error());
    cr_expect_eq(d5_optimize_parse(NULL, &l), D5_ERR_INVALID);
    cr_expect_str_eq(d5_optimize_name(D5_OPTIMIZE_BASIC), "basic");
    cr_expect_eq(d5_network_optimize(NULL, D5_OPTIMIZE_ALL, NULL), D5_ERR_INVALID);
}

/* ---- Small graphs built by hand ---- */

/* x[2,3,6,6] -> Conv(w[4,3,3,3]) -> c, and BatchNormalization(c) -> `bn_out`
 * with per-channel operands s, b, m, v of 4. */
static d5_network *conv_bn(int opset, const d5_attrs *bn_attrs, const char *bn_out)
{
    const int64_t xs[] = {2, 3, 6, 6}, ws[] = {4, 3, 3, 3}, cs[] = {4};
    d5_network *net = graph("conv_bn", opset, 4, xs);
    add_f32(net, "w", 4, ws, -0.05f);
    add_f32(net, "s", 1, cs, 0.8f);
    add_f32(net, "b", 1, cs, 0.1f);
    add_f32(net, "m", 1, cs, -0.2f);
    add_f32(net, "v", 1, cs, 0.6f);
    const char *cin[] = {"x", "w"}, *bin[] = {"c", "s", "b", "m", "v"};
    node(net, "conv", "Conv", cin, 2, "c", NULL);
    node(net, "bn", "BatchNormalization", bin, 5, bn_out, bn_attrs);
    return net;
}

Test(optimize, folds_conv_without_bias)
{
    d5_network *net = conv_bn(15, NULL, "y");
    cr_assert_eq(d5_network_add_output(net, "y", NULL), D5_OK);
    d5_optimize_report r = optimise_and_compare(net, D5_OPTIMIZE_BASIC);
    cr_expect_eq(applied(&r, "fold-batchnorm"), 1);
    cr_expect_eq(r.nodes_after, 1);
    d5_network_free(net);
}

/* Optimises net (freed here) and checks that its BatchNormalization stays. */
static void expect_batchnorm_kept(d5_network *net)
{
    d5_optimize_report r;
    cr_assert_eq(d5_network_optimize(net, D5_OPTIMIZE_ALL, &r), D5_OK);
    cr_expect_eq(applied(&r, "fold-batchnorm"), 0);
    cr_expect_eq(count_op(net, "BatchNormalization"), 1);
    d5_network_free(net);
}

Test(optimize, keeps_batchnorm_in_training_mode)
{
    d5_attr tm = {.name = "training_mode", .type = D5_ATTR_INT, .i = 1};
    d5_attrs a = {&tm, 1};
    d5_network *net = conv_bn(15, &a, "y");
    cr_assert_eq(d5_network_add_output(net, "y", NULL), D5_OK);
    expect_batchnorm_kept(net);
}

Test(optimize, keeps_batchnorm_when_conv_output_is_read_twice)
{
    d5_network *net = conv_bn(15, NULL, "y");
    const char *rin[] = {"c"};
    node(net, "relu", "Relu", rin, 1, "r", NULL);
    cr_assert_eq(d5_network_add_output(net, "y", NULL), D5_OK);
    cr_assert_eq(d5_network_add_output(net, "r", NULL), D5_OK);
    d5_optimize_report r = optimise_and_compare(net, D5_OPTIMIZE_ALL);
    cr_expect_eq(applied(&r, "fold-batchnorm"), 0);
    cr_expect_eq(count_op(net, "BatchNormalization"), 1);
    d5_network_free(net);
}

Test(optimize, keeps_batchnorm_when_conv_output_is_a_graph_output)
{
    d5_network *net = conv_bn(15, NULL, "y");
    cr_assert_eq(d5_network_add_output(net, "y", NULL), D5_OK);
    cr_assert_eq(d5_network_add_output(net, "c", NULL), D5_OK);
    expect_batchnorm_kept(net);
}

/* x -> Identity -> a -> Relu -> r -> Dropout -> d -> Sigmoid -> y, and
 * y -> Identity -> z (a graph output, kept: its name is the interface). */
Test(optimize, eliminates_identities)
{
    const int64_t xs[] = {3, 5};
    d5_network *net = graph("ids", 13, 2, xs);
    const char *i0[] = {"x"}, *i1[] = {"a"}, *i2[] = {"r"}, *i3[] = {"d"}, *i4[] = {"y"};
    node(net, "id0", "Identity", i0, 1, "a", NULL);
    node(net, "relu", "Relu", i1, 1, "r", NULL);
    node(net, "drop", "Dropout", i2, 1, "d", NULL);
    node(net, "sig", "Sigmoid", i3, 1, "y", NULL);
    node(net, "id1", "Identity", i4, 1, "z", NULL);
    cr_assert_eq(d5_network_add_output(net, "z", NULL), D5_OK);
    d5_optimize_report r = optimise_and_compare(net, D5_OPTIMIZE_BASIC);
    cr_expect_eq(applied(&r, "eliminate-identity"), 2);
    cr_assert_eq(d5_network_optimize(net, D5_OPTIMIZE_BASIC, NULL), D5_OK);
    cr_expect_eq(d5_network_node_count(net), 3);
    cr_expect_eq(count_op(net, "Dropout"), 0);
    cr_expect_eq(count_op(net, "Identity"), 1);
    int32_t idx;
    d5_node_info relu;
    cr_assert_eq(d5_network_find_node(net, "relu", &idx), D5_OK);
    d5_network_node_at(net, idx, &relu);
    cr_expect_str_eq(relu.inputs[0], "x");
    d5_network_free(net);
}

/* Dropout with training_mode true (a constant) or an input is left alone. */
Test(optimize, keeps_dropout_in_training_mode)
{
    const int64_t xs[] = {4, 4};
    d5_network *net = graph("drop", 13, 2, xs);
    d5_tensor_desc bd;
    cr_assert_eq(d5_tensor_desc_make(D5_BOOL, 0, NULL, &bd), D5_OK);
    d5_tensor t;
    cr_assert_eq(d5_tensor_alloc(&bd, &t), D5_OK);
    *(unsigned char *)t.data = 1;
    cr_assert_eq(d5_network_add_initializer_take(net, "train", &t), D5_OK);
    cr_assert_eq(d5_network_add_input(net, "mode", &bd, NULL), D5_OK);
    const char *a[] = {"x", "", "train"}, *b[] = {"d1", "", "mode"};
    node(net, "d1", "Dropout", a, 3, "d1", NULL);
    node(net, "d2", "Dropout", b, 3, "y", NULL);
    cr_assert_eq(d5_network_add_output(net, "y", NULL), D5_OK);
    d5_optimize_report r;
    cr_assert_eq(d5_network_optimize(net, D5_OPTIMIZE_ALL, &r), D5_OK);
    cr_expect_eq(applied(&r, "eliminate-identity"), 0);
    cr_expect_eq(count_op(net, "Dropout"), 2);
    d5_network_free(net);
}

/* x -> Conv -> c -> Add(c, z) -> s -> Relu -> y becomes one FusedConv named
 * conv+add+relu; without the Relu, FusedConv without activation; a z of
 * another shape (broadcast) is left alone. */
static d5_network *conv_add(const int64_t *zshape, int relu)
{
    const int64_t xs[] = {2, 3, 6, 6}, ws[] = {4, 3, 3, 3}, bs[] = {4};
    d5_network *net = graph("conv_add", 13, 4, xs);
    d5_tensor_desc zd = desc(4, zshape);
    cr_assert_eq(d5_network_add_input(net, "z", &zd, NULL), D5_OK);
    add_f32(net, "w", 4, ws, -0.08f);
    add_f32(net, "b", 1, bs, -0.1f);
    const char *cin[] = {"x", "w", "b"}, *ain[] = {"c", "z"}, *rin[] = {"s"};
    node(net, "conv", "Conv", cin, 3, "c", NULL);
    node(net, "add", "Add", ain, 2, relu ? "s" : "y", NULL);
    if (relu) node(net, "relu", "Relu", rin, 1, "y", NULL);
    cr_assert_eq(d5_network_add_output(net, "y", NULL), D5_OK);
    return net;
}

static void expect_fused(d5_network *net, const char *name, int ninputs, const char *activation)
{
    d5_network *opt = NULL;
    cr_assert_eq(d5_network_clone(net, &opt), D5_OK);
    cr_assert_eq(d5_network_optimize(opt, D5_OPTIMIZE_ALL, NULL), D5_OK, "%s", d5_last_error());
    cr_assert_eq(d5_network_node_count(opt), 1);
    d5_node_info n;
    d5_network_node_at(opt, 0, &n);
    cr_expect_str_eq(n.op_type, "FusedConv");
    cr_expect_str_eq(n.name, name);
    cr_expect_eq(n.ninputs, ninputs);
    cr_expect_str_eq(n.outputs[0], "y");
    const char *act = NULL;
    cr_assert_eq(d5_attrs_string(n.attrs, "activation", "", &act), D5_OK);
    cr_expect_str_eq(act, activation);
    d5_network_free(opt);
}

/* Conv + Add (+ Relu) on a Z of the convolution's shape: one fused node. */
static void fuse_conv_add(int relu, const char *name, const char *activation)
{
    const int64_t zs[] = {2, 4, 4, 4};
    d5_network *net = conv_add(zs, relu);
    d5_optimize_report r = optimise_and_compare(net, D5_OPTIMIZE_ALL);
    cr_expect_eq(applied(&r, "fuse-conv-activation"), 1);
    expect_fused(net, name, 4, activation);
    d5_network_free(net);
}

Test(optimize, fuses_conv_add_relu)
{
    fuse_conv_add(1, "conv+add+relu", "Relu");
}
Test(optimize, fuses_conv_add_without_activation)
{
    fuse_conv_add(0, "conv+add", "");
}

Test(optimize, fuses_conv_relu_without_bias)
{
    d5_network *net = conv_bn(15, NULL, "y");
    const char *rin[] = {"y"};
    node(net, "relu", "Relu", rin, 1, "r", NULL);
    cr_assert_eq(d5_network_add_output(net, "r", NULL), D5_OK);
    d5_optimize_report r = optimise_and_compare(net, D5_OPTIMIZE_ALL);
    cr_expect_eq(applied(&r, "fold-batchnorm"), 1);
    cr_expect_eq(applied(&r, "fuse-conv-activation"), 1);
    cr_expect_eq(r.nodes_after, 1);
    d5_network_free(net);
}

Test(optimize, keeps_add_that_broadcasts)
{
    const int64_t zs[] = {1, 4, 1, 1};
    d5_network *net = conv_add(zs, 1);
    d5_optimize_report r = optimise_and_compare(net, D5_OPTIMIZE_ALL);
    cr_expect_eq(applied(&r, "fuse-conv-activation"), 0);
    cr_expect_eq(r.nodes_after, 3);
    d5_network_free(net);
}

/* Layout propagation: in the optimised ResNet-20 every value between two
 * convolutions stays in oneDNN's blocked layout (the outputs were compared
 * above); a graph whose channels do not fill the blocks keeps ONNX's layout
 * and the same outputs. */
static int32_t blocked_values(d5_network *net, const char *backend)
{
    d5_executor *ex = NULL;
    d5_executor_options eo = d5_executor_default_options();
    eo.backend = backend;
    cr_assert_eq(d5_executor_create(net, &eo, &ex), D5_OK, "%s", d5_last_error());
    d5_memory_plan plan;
    d5_executor_memory(ex, &plan);
    d5_executor_free(ex);
    return plan.blocked_values;
}

Test(optimize, keeps_convolution_chains_blocked)
{
    if (d5_backend_check_list("dnnl", 0) != D5_OK) cr_skip_test("dnnl is not built here");
    d5_network *net = model("resnet20", 2);
    cr_assert_eq(d5_network_optimize(net, D5_OPTIMIZE_ALL, NULL), D5_OK);
    /* 21 convolutions write 21 values, all passed to a convolution or to the
     * pooling in the blocked layout; the stem's input is the graph's. */
    cr_expect_eq(blocked_values(net, "dnnl,ref"), 21);
    cr_expect_eq(blocked_values(net, "blas,ref"), 0);
    d5_executor_options eo = d5_executor_default_options();
    eo.keep_values = 1;
    d5_executor *ex = NULL;
    cr_assert_eq(d5_executor_create(net, &eo, &ex), D5_OK);
    d5_memory_plan plan;
    d5_executor_memory(ex, &plan);
    cr_expect_eq(plan.blocked_values, 0, "every value can be fetched with keep_values");
    d5_executor_free(ex);
    d5_network_free(net);
}

Test(optimize, leaves_partial_blocks_in_onnx_layout)
{
    if (d5_backend_check_list("dnnl", 0) != D5_OK) cr_skip_test("dnnl is not built here");
    /* conv (4 output channels) -> relu -> conv: 4 channels fill no block. */
    d5_network *net = conv_bn(15, NULL, "y");
    const char *rin[] = {"y"}, *cin[] = {"r", "w2"};
    const int64_t ws[] = {4, 4, 3, 3};
    add_f32(net, "w2", 4, ws, -0.03f);
    node(net, "relu", "Relu", rin, 1, "r", NULL);
    node(net, "conv2", "Conv", cin, 2, "z", NULL);
    cr_assert_eq(d5_network_add_output(net, "z", NULL), D5_OK);
    d5_optimize_report r = optimise_and_compare(net, D5_OPTIMIZE_ALL);
    cr_expect_eq(r.nodes_after, 2);
    cr_assert_eq(d5_network_optimize(net, D5_OPTIMIZE_ALL, NULL), D5_OK);
    cr_expect_eq(blocked_values(net, NULL), 0);
    d5_network_free(net);
}

/* ---- Layouts under backprop ---- */

/* Runs forward and backward of net on seeded inputs (keep_values: every
 * value in ONNX's layout) and returns output 0 followed by every parameter's
 * gradient; *blocked is the plan's count of blocked values. */
static float *run_backprop(d5_network *net, const char *backend, int keep, int64_t *n,
                           int32_t *blocked)
{
    d5_executor *ex = NULL;
    d5_executor_options eo = d5_executor_default_options();
    eo.backend = backend;
    eo.backprop = 1;
    eo.keep_values = keep;
    cr_assert_eq(d5_executor_create(net, &eo, &ex), D5_OK, "%s", d5_last_error());
    int32_t v;
    d5_value_info vi;
    cr_assert_eq(d5_network_find_value(net, d5_network_input_name(net, 0), &v), D5_OK);
    d5_network_value_at(net, v, &vi);
    d5_tensor t;
    cr_assert_eq(d5_tensor_alloc(&vi.desc, &t), D5_OK);
    for (int64_t j = 0; j < d5_tensor_desc_numel(&vi.desc); j++)
        ((float *)t.data)[j] = (float)sin(0.37 * (double)j);
    cr_assert_eq(d5_executor_feed(ex, vi.name, &t), D5_OK, "%s", d5_last_error());
    d5_tensor_free(&t);
    cr_assert_eq(d5_executor_inference_and_backprop(ex), D5_OK, "%s", d5_last_error());
    d5_tensor y;
    cr_assert_eq(d5_executor_fetch(ex, d5_network_output_name(net, 0), &y), D5_OK);
    int64_t total = d5_tensor_desc_numel(&y.desc);
    for (int32_t i = 0; i < d5_network_param_count(net); i++) {
        d5_tensor g;
        cr_assert_eq(d5_executor_gradient(ex, d5_network_param_name(net, i), &g), D5_OK);
        total += d5_tensor_desc_numel(&g.desc);
    }
    float *all = malloc((size_t)total * sizeof *all), *at = all;
    cr_assert_not_null(all);
    memcpy(at, y.data, (size_t)d5_tensor_desc_numel(&y.desc) * sizeof *at);
    at += d5_tensor_desc_numel(&y.desc);
    for (int32_t i = 0; i < d5_network_param_count(net); i++) {
        d5_tensor g;
        cr_assert_eq(d5_executor_gradient(ex, d5_network_param_name(net, i), &g), D5_OK);
        memcpy(at, g.data, (size_t)d5_tensor_desc_numel(&g.desc) * sizeof *at);
        at += d5_tensor_desc_numel(&g.desc);
    }
    d5_memory_plan plan;
    d5_executor_memory(ex, &plan);
    *blocked = plan.blocked_values;
    *n = total;
    d5_executor_free(ex);
    return all;
}

/* The output and every gradient agree, blocked layouts or not, within
 * float32 rounding relative to each segment's largest magnitude; returns
 * the number of blocked values. */
static int32_t compare_backprop(d5_network *net, const char *backend)
{
    int64_t na, nb;
    int32_t ba, bb;
    float *a = run_backprop(net, backend, 0, &na, &ba),
          *b = run_backprop(net, backend, 1, &nb, &bb);
    cr_assert_eq(na, nb);
    cr_expect_eq(bb, 0, "keep_values keeps ONNX's layout");
    double scale = 0, worst = 0;
    int64_t at = 0;
    for (int64_t i = 0; i < na; i++) {
        scale = fmax(scale, fabs(b[i]));
        if (fabs((double)a[i] - b[i]) > worst) worst = fabs((double)a[i] - b[i]), at = i;
    }
    cr_expect_leq(worst, 2e-5 * fmax(scale, 1e-3),
                  "backends %s: element %lld differs by %g (%g against %g; values up to %g)",
                  backend ? backend : "default", (long long)at, worst, a[at], b[at], scale);
    free(a);
    free(b);
    return ba;
}

/* Every BatchNormalization of net in training mode (batch statistics): the
 * node is replaced by one with training_mode=1 and its other attributes. */
static d5_network *train_mode(d5_network *net)
{
    for (int32_t i = 0; i < d5_network_node_count(net); i++) {
        d5_node_info info;
        d5_network_node_at(net, i, &info);
        int64_t training = 0;
        if (strcmp(info.op_type, "BatchNormalization") != 0 ||
            d5_attrs_int(info.attrs, "training_mode", 0, &training) != D5_OK || training)
            continue;
        d5_attr items[8];
        int32_t na = 0;
        for (int32_t a = 0; info.attrs && a < info.attrs->count && na < 7; a++)
            if (strcmp(info.attrs->items[a].name, "training_mode") != 0 &&
                info.attrs->items[a].type == D5_ATTR_FLOAT)
                items[na++] = (d5_attr){.name = strcmp(info.attrs->items[a].name, "epsilon") == 0
                                                    ? "epsilon"
                                                    : "momentum",
                                        .type = D5_ATTR_FLOAT,
                                        .f = info.attrs->items[a].f};
        items[na++] = (d5_attr){.name = "training_mode", .type = D5_ATTR_INT, .i = 1};
        d5_attrs attrs = {items, na};
        char name[128], io[6][128];
        snprintf(name, sizeof name, "%s", info.name);
        for (int k = 0; k < 5; k++) snprintf(io[k], sizeof io[k], "%s", info.inputs[k]);
        snprintf(io[5], sizeof io[5], "%s", info.outputs[0]);
        const char *in[5] = {io[0], io[1], io[2], io[3], io[4]}, *out[1] = {io[5]};
        cr_assert_eq(d5_network_remove_node(net, name), D5_OK);
        cr_assert_eq(
            d5_network_add_node(net, name, "BatchNormalization", NULL, in, 5, out, 1, &attrs, NULL),
            D5_OK, "%s", d5_last_error());
        i--; /* the nodes after it moved down by one */
    }
    return net;
}

Test(optimize, backprop_in_blocked_layouts)
{
    if (d5_backend_check_list("dnnl", 0) != D5_OK) cr_skip_test("dnnl is not built here");
    d5_network *net = model("resnet20", 2);
    randomise_batchnorms(net, 5);
    /* 21 Conv and 21 BatchNormalization write blocked values, and 19 Relu and
     * 9 Add; the stem's input is the graph's. */
    cr_expect_eq(compare_backprop(net, "dnnl,ref"), 70);
    cr_expect_eq(compare_backprop(train_mode(net), "dnnl,ref"), 70);
    cr_expect_eq(compare_backprop(net, "blas,ref"), 0);
    d5_network_free(net);
}

/* FusedConv writes Y over its Z when nothing reads Z afterwards (dnnl, where
 * the sum post-op then starts from Z in place); a Z read later keeps its
 * memory. z = Relu(x), s = FusedConv(x, w; Z = z), and y = s or y = s + z. */
static d5_network *conv_add_z(int read_later)
{
    const int64_t xs[] = {2, 16, 6, 6}, ws[] = {16, 16, 3, 3}, pads[] = {1, 1, 1, 1};
    d5_network *net = graph("conv_add_z", 13, 4, xs);
    add_f32(net, "w", 4, ws, -0.02f);
    d5_attr pa = {.name = "pads", .type = D5_ATTR_INTS, .ints = pads, .count = 4};
    d5_attrs attrs = {&pa, 1};
    const char *zin[] = {"x"}, *cin[] = {"x", "w"}, *ain[] = {"c", "z"}, *yin[] = {"s", "z"};
    node(net, "zr", "Relu", zin, 1, "z", NULL);
    node(net, "conv", "Conv", cin, 2, "c", &attrs);
    node(net, "add", "Add", ain, 2, read_later ? "s" : "y", NULL);
    if (read_later) node(net, "add2", "Add", yin, 2, "y", NULL);
    cr_assert_eq(d5_network_add_output(net, "y", NULL), D5_OK);
    return net;
}

Test(optimize, fused_sum_in_place_only_when_z_dies)
{
    for (int later = 0; later < 2; later++) {
        d5_network *net = conv_add_z(later);
        d5_optimize_report r = optimise_and_compare(net, D5_OPTIMIZE_ALL);
        cr_expect_eq(applied(&r, "fuse-conv-activation"), 1);
        d5_network_free(net);
    }
}

/* ResNet-20's output and gradients on dnnl (blocked layouts, Add writing a
 * gradient in place, views sharing theirs) against the ref backend, which
 * does none of these: equal within float32 rounding of the sums. */
Test(optimize, backprop_on_dnnl_matches_ref)
{
    if (d5_backend_check_list("dnnl", 0) != D5_OK) cr_skip_test("dnnl is not built here");
    d5_network *net = train_mode(model("resnet20", 2));
    randomise_batchnorms(net, 9);
    int64_t na, nb;
    int32_t ba, bb;
    float *a = run_backprop(net, "dnnl,ref", 0, &na, &ba),
          *b = run_backprop(net, "ref", 0, &nb, &bb);
    cr_assert_eq(na, nb);
    cr_expect_gt(ba, 0);
    double scale = 0, worst = 0;
    int64_t at = 0;
    for (int64_t i = 0; i < na; i++) {
        scale = fmax(scale, fabs(b[i]));
        if (fabs((double)a[i] - b[i]) > worst) worst = fabs((double)a[i] - b[i]), at = i;
    }
    cr_expect_leq(worst, 1e-4 * scale,
                  "element %lld differs by %g (%g against %g; values up to %g)", (long long)at,
                  worst, a[at], b[at], scale);
    free(a);
    free(b);
    d5_network_free(net);
}

/* Add writes dY in place only into a gradient nobody wrote before it: here
 * a is read by the Add and by a later Mul, whose backward writes a's
 * gradient (s dY) first; the Add must add its dY to it in a buffer of its
 * own. c = Conv(x, w), a = Relu(c), s = a + c, y = s * a. */
Test(optimize, add_gradient_in_place_only_when_first)
{
    if (d5_backend_check_list("dnnl", 0) != D5_OK) cr_skip_test("dnnl is not built here");
    const int64_t xs[] = {2, 16, 4, 4}, ws[] = {16, 16, 3, 3}, pads[] = {1, 1, 1, 1};
    d5_network *net = graph("adds", 13, 4, xs);
    add_f32(net, "w", 4, ws, -0.04f);
    d5_attr pa = {.name = "pads", .type = D5_ATTR_INTS, .ints = pads, .count = 4};
    d5_attrs attrs = {&pa, 1};
    const char *cin[] = {"x", "w"}, *rin[] = {"c"}, *sin_[] = {"a", "c"}, *yin[] = {"s", "a"};
    node(net, "conv", "Conv", cin, 2, "c", &attrs);
    node(net, "relu", "Relu", rin, 1, "a", NULL);
    node(net, "add1", "Add", sin_, 2, "s", NULL);
    node(net, "mul", "Mul", yin, 2, "y", NULL);
    cr_assert_eq(d5_network_add_output(net, "y", NULL), D5_OK);
    int64_t na, nb;
    int32_t ba, bb;
    float *a = run_backprop(net, "dnnl,ref", 0, &na, &ba),
          *b = run_backprop(net, "ref", 0, &nb, &bb);
    cr_assert_eq(na, nb);
    double scale = 0, worst = 0;
    for (int64_t i = 0; i < na; i++) {
        scale = fmax(scale, fabs(b[i]));
        worst = fmax(worst, fabs((double)a[i] - b[i]));
    }
    cr_expect_leq(worst, 1e-5 * scale, "largest difference %g (values up to %g)", worst, scale);
    free(a);
    free(b);
    d5_network_free(net);
}
