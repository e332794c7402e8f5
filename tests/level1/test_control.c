/* Control flow, sequences and optionals, resolved by the executor at create:
 * networks with If, Loop, Scan and sequence nodes built through the API,
 * their outputs against values computed here, Scan's gradient against its
 * closed form, and the errors for what cannot be resolved. */
#include "support.h"

#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

static d5_tensor_desc desc_of(d5_dtype dt, int32_t ndim, const int64_t *shape)
{
    d5_tensor_desc d;
    cr_assert_eq(d5_tensor_desc_make(dt, ndim, shape, &d), D5_OK);
    return d;
}

static void node(d5_network *net, const char *name, const char *op, const char **in, int32_t nin,
                 const char **out, int32_t nout, const d5_attrs *attrs)
{
    cr_assert_eq(d5_network_add_node(net, name, op, NULL, in, nin, out, nout, attrs, NULL), D5_OK,
                 "%s", d5_last_error());
}

static void node1(d5_network *net, const char *name, const char *op, const char **in, int32_t nin,
                  const char *out)
{
    node(net, name, op, in, nin, (const char *[]){out}, 1, NULL);
}

static void init_f32(d5_network *net, const char *name, int32_t ndim, const int64_t *shape,
                     const float *v)
{
    d5_tensor t = {desc_of(D5_F32, ndim, shape), (void *)v, 0, 0};
    cr_assert_eq(d5_network_add_initializer(net, name, &t), D5_OK, "%s", d5_last_error());
}

static void init_i64(d5_network *net, const char *name, int32_t ndim, const int64_t *shape,
                     const int64_t *v)
{
    d5_tensor t = {desc_of(D5_I64, ndim, shape), (void *)v, 0, 0};
    cr_assert_eq(d5_network_add_initializer(net, name, &t), D5_OK, "%s", d5_last_error());
}

static void init_bool(d5_network *net, const char *name, uint8_t b)
{
    d5_tensor t = {desc_of(D5_BOOL, 0, NULL), &b, 0, 0};
    cr_assert_eq(d5_network_add_initializer(net, name, &t), D5_OK, "%s", d5_last_error());
}

static d5_network *net_new(const char *name)
{
    d5_network *net = NULL;
    cr_assert_eq(d5_network_create(name, &net), D5_OK);
    return net;
}

static void input_f32(d5_network *net, const char *name, int32_t ndim, const int64_t *shape)
{
    d5_tensor_desc d = desc_of(D5_F32, ndim, shape);
    cr_assert_eq(d5_network_add_input(net, name, &d, NULL), D5_OK, "%s", d5_last_error());
}

/* A subgraph input whose type the node gives. */
static void formal(d5_network *g, const char *name)
{
    cr_assert_eq(d5_network_add_input_typed(g, name, D5_TYPE_TENSOR, NULL, NULL), D5_OK, "%s",
                 d5_last_error());
}

static void output(d5_network *net, const char *name)
{
    cr_assert_eq(d5_network_add_output(net, name, NULL), D5_OK, "%s", d5_last_error());
}

static void attach(d5_network *net, const char *node, const char *attr, d5_network *g)
{
    int32_t i;
    cr_assert_eq(d5_network_find_node(net, node, &i), D5_OK);
    cr_assert_eq(d5_network_attach_graph(net, i, attr, g), D5_OK, "%s", d5_last_error());
}

static d5_executor *create(const d5_network *net, const d5_executor_options *o)
{
    d5_executor *ex = NULL;
    cr_assert_eq(d5_executor_create(net, o, &ex), D5_OK, "%s", d5_last_error());
    return ex;
}

static const float *fetch(d5_executor *ex, const char *name, int64_t n)
{
    d5_tensor t;
    cr_assert_eq(d5_executor_fetch(ex, name, &t), D5_OK, "%s", d5_last_error());
    cr_assert_eq(d5_tensor_desc_numel(&t.desc), n, "'%s' has %lld elements, expected %lld", name,
                 (long long)d5_tensor_desc_numel(&t.desc), (long long)n);
    return t.data;
}

static void expect_values(const float *got, const float *want, int64_t n, const char *what)
{
    for (int64_t i = 0; i < n; i++)
        cr_expect_float_eq(got[i], want[i], 1e-5, "%s[%lld] is %g, expected %g", what, (long long)i,
                           got[i], want[i]);
}

/* A branch that gives x * k (k a constant of the branch) as `out`. */
static d5_network *scale_branch(const char *name, float k)
{
    d5_network *g = net_new(name);
    init_f32(g, "k", 0, NULL, &k);
    node1(g, "scale", "Mul", (const char *[]){"x", "k"}, 2, "out");
    output(g, "out");
    return g;
}

/* y = If(cond, x * 2, x * -1), x[3] an input; cond an initializer when
 * `constant`, else an input. */
static d5_network *if_net(int constant, uint8_t cond)
{
    d5_network *net = net_new("if");
    input_f32(net, "x", 1, (int64_t[]){3});
    if (constant) {
        init_bool(net, "cond", cond);
    } else {
        d5_tensor_desc b = desc_of(D5_BOOL, 0, NULL);
        cr_assert_eq(d5_network_add_input(net, "cond", &b, NULL), D5_OK);
    }
    node1(net, "if", "If", (const char *[]){"cond"}, 1, "y");
    attach(net, "if", "then_branch", scale_branch("then", 2));
    attach(net, "if", "else_branch", scale_branch("else", -1));
    output(net, "y");
    cr_assert(d5_network_has_control_flow(net));
    return net;
}

static const float x3[3] = {1, -2, 3};

/* Feeds x3 (when feed_x), runs, and expects y = x3 * 2 for the then branch,
 * x3 * -1 for the else branch. */
static void run_if(d5_executor *ex, int feed_x, uint8_t c, const char *what)
{
    d5_tensor x = {desc_of(D5_F32, 1, (int64_t[]){3}), (void *)x3, 0, 0};
    if (feed_x) cr_assert_eq(d5_executor_feed(ex, "x", &x), D5_OK, "%s", d5_last_error());
    cr_assert_eq(d5_executor_inference(ex), D5_OK, "%s", d5_last_error());
    float k = c ? 2.0f : -1.0f;
    float want[3] = {x3[0] * k, x3[1] * k, x3[2] * k};
    expect_values(fetch(ex, "y", 3), want, 3, what);
}

Test(control, if_with_a_constant_condition_becomes_its_branch)
{
    for (uint8_t c = 0; c < 2; c++) {
        d5_network *net = if_net(1, c);
        d5_executor *ex = create(net, NULL);
        const d5_network *built = d5_executor_network(ex);
        cr_expect_neq(built, net);
        cr_expect_not(d5_network_has_control_flow(built));
        int32_t i;
        cr_expect_eq(d5_network_find_value(built, c ? "if/then/out" : "if/else/out", &i), D5_OK,
                     "the branch's values are named after the node and branch");
        run_if(ex, 1, c, c ? "then" : "else");
        d5_executor_free(ex);
        d5_network_free(net);
    }
}

Test(control, if_decided_at_run_time_selects)
{
    d5_network *net = if_net(0, 0);
    d5_executor *ex = create(net, NULL);
    d5_tensor x = {desc_of(D5_F32, 1, (int64_t[]){3}), (void *)x3, 0, 0};
    cr_assert_eq(d5_executor_feed(ex, "x", &x), D5_OK);
    for (uint8_t c = 0; c < 2; c++) {
        d5_tensor cond = {desc_of(D5_BOOL, 0, NULL), &c, 0, 0};
        cr_assert_eq(d5_executor_feed(ex, "cond", &cond), D5_OK, "%s", d5_last_error());
        run_if(ex, 0, c, c ? "cond true" : "cond false");
    }
    d5_executor_free(ex);
    d5_network_free(net);
}

Test(control, if_at_run_time_needs_branches_of_one_shape)
{
    d5_network *net = net_new("if");
    d5_tensor_desc b = desc_of(D5_BOOL, 0, NULL);
    cr_assert_eq(d5_network_add_input(net, "cond", &b, NULL), D5_OK);
    node1(net, "if", "If", (const char *[]){"cond"}, 1, "y");
    d5_network *then_g = net_new("then"), *else_g = net_new("else");
    init_f32(then_g, "out", 1, (int64_t[]){2}, (const float[]){1, 2});
    init_f32(else_g, "out", 1, (int64_t[]){3}, (const float[]){1, 2, 3});
    output(then_g, "out");
    output(else_g, "out");
    attach(net, "if", "then_branch", then_g);
    attach(net, "if", "else_branch", else_g);
    output(net, "y");
    d5_executor *ex = NULL;
    cr_expect_eq(d5_executor_create(net, NULL, &ex), D5_ERR_UNSUPPORTED);
    cr_expect_null(ex);
    EXPECT_HAS(d5_last_error(), "node 'if' (If)", "its condition 'cond' is computed at run time",
               "output 'y' differs");
    d5_network_free(net);
}

/* Loop(M, cond): s += x[i] for i < M, each step's s a scan output;
 * `stop_at` > 0 ends it through the body's condition i + 1 < stop_at. */
static d5_network *loop_net_declared(int64_t m, int64_t stop_at, int data_cond, int declare)
{
    d5_network *net = net_new("loop");
    input_f32(net, "x", 1, (int64_t[]){5});
    init_f32(net, "s0", 1, (int64_t[]){1}, (const float[]){10});
    init_i64(net, "M", 0, NULL, &m);
    init_bool(net, "c0", 1);
    node(net, "loop", "Loop", (const char *[]){"M", "c0", "s0"}, 3, (const char *[]){"s", "steps"},
         2, NULL);
    d5_network *body = net_new("body");
    formal(body, "i");
    formal(body, "c");
    formal(body, "s_in");
    init_i64(body, "one", 1, (int64_t[]){1}, (const int64_t[]){1});
    init_i64(body, "zero", 1, (int64_t[]){1}, (const int64_t[]){0});
    init_i64(body, "limit", 0, NULL, &stop_at);
    node1(body, "start", "Unsqueeze", (const char *[]){"i", "zero"}, 2, "b");
    node1(body, "end", "Add", (const char *[]){"b", "one"}, 2, "e");
    node1(body, "xi", "Slice", (const char *[]){"x", "b", "e"}, 3, "xi");
    node1(body, "sum", "Add", (const char *[]){"s_in", "xi"}, 2, "s_out");
    if (data_cond) {
        /* A condition computed from the data: not known at create. */
        init_f32(body, "big", 1, (int64_t[]){1}, (const float[]){100});
        node1(body, "less", "Less", (const char *[]){"s_out", "big"}, 2, "lt");
        node1(body, "squeeze", "Squeeze", (const char *[]){"lt", "zero"}, 2, "c_out");
    } else if (stop_at > 0) {
        node1(body, "next", "Add", (const char *[]){"i", "one_s"}, 2, "n");
        int64_t one = 1;
        init_i64(body, "one_s", 0, NULL, &one);
        node1(body, "more", "Less", (const char *[]){"n", "limit"}, 2, "c_out");
    } else {
        node1(body, "keep", "Identity", (const char *[]){"c"}, 1, "c_out");
    }
    node1(body, "step", "Identity", (const char *[]){"s_out"}, 1, "scan");
    output(body, "c_out");
    output(body, "s_out");
    d5_tensor_desc one = desc_of(D5_F32, 1, (int64_t[]){1});
    cr_assert_eq(d5_network_add_output(body, "scan", declare ? &one : NULL), D5_OK);
    attach(net, "loop", "body", body);
    output(net, "s");
    output(net, "steps");
    return net;
}

static d5_network *loop_net(int64_t m, int64_t stop_at, int data_cond)
{
    return loop_net_declared(m, stop_at, data_cond, 0);
}

static const float x5[5] = {1, 2, 3, 4, 5};

static void run_loop(d5_network *net, int64_t iterations)
{
    d5_executor *ex = create(net, NULL);
    d5_tensor x = {desc_of(D5_F32, 1, (int64_t[]){5}), (void *)x5, 0, 0};
    cr_assert_eq(d5_executor_feed(ex, "x", &x), D5_OK, "%s", d5_last_error());
    cr_assert_eq(d5_executor_inference(ex), D5_OK, "%s", d5_last_error());
    float steps[5], s = 10;
    for (int64_t i = 0; i < iterations; i++) steps[i] = s += x5[i];
    expect_values(fetch(ex, "s", 1), &s, 1, "s");
    expect_values(fetch(ex, "steps", iterations), steps, iterations, "steps");
    d5_tensor t;
    cr_assert_eq(d5_executor_fetch(ex, "steps", &t), D5_OK);
    cr_expect_eq(t.desc.ndim, 2, "scan outputs are stacked on a new first axis");
    d5_executor_free(ex);
}

Test(control, loop_unrolls_its_trip_count)
{
    d5_network *net = loop_net(4, 0, 0);
    run_loop(net, 4);
    d5_network_free(net);
}

Test(control, loop_ends_when_its_body_says_so)
{
    d5_network *net = loop_net(5, 3, 0);
    run_loop(net, 3);
    d5_network_free(net);
}

/* No iteration: the carried value passes through, the scan output is empty
 * with the shape its body declares; undeclared, an error says so. */
Test(control, loop_of_no_iterations)
{
    d5_network *net = loop_net_declared(0, 0, 0, 1);
    d5_executor *ex = create(net, NULL);
    d5_tensor x = {desc_of(D5_F32, 1, (int64_t[]){5}), (void *)x5, 0, 0};
    cr_assert_eq(d5_executor_feed(ex, "x", &x), D5_OK);
    cr_assert_eq(d5_executor_inference(ex), D5_OK, "%s", d5_last_error());
    expect_values(fetch(ex, "s", 1), (const float[]){10}, 1, "s");
    d5_tensor t;
    cr_assert_eq(d5_executor_fetch(ex, "steps", &t), D5_OK);
    cr_expect(t.desc.ndim == 2 && t.desc.shape[0] == 0 && t.desc.shape[1] == 1);
    d5_executor_free(ex);
    d5_network_free(net);
    net = loop_net(0, 0, 0);
    cr_expect_eq(d5_executor_create(net, NULL, &ex), D5_ERR_SHAPE);
    EXPECT_HAS(d5_last_error(), "node 'loop' (Loop)", "no iterations",
               "element shape is not declared");
    d5_network_free(net);
}

/* A loop that would unroll past the limit of the network built. */
Test(control, loop_past_the_unrolling_limit_is_an_error, .timeout = D5_TIMEOUT(120))
{
    d5_network *net = loop_net(1000000000, 0, 0);
    d5_executor *ex = NULL;
    cr_expect_eq(d5_executor_create(net, NULL, &ex), D5_ERR_UNSUPPORTED);
    EXPECT_HAS(d5_last_error(), "node 'loop/", "would have more than 1048576 nodes");
    d5_network_free(net);
}

Test(control, loop_condition_from_data_is_an_error)
{
    d5_network *net = loop_net(4, 0, 1);
    d5_executor *ex = NULL;
    cr_expect_eq(d5_executor_create(net, NULL, &ex), D5_ERR_UNSUPPORTED);
    EXPECT_HAS(d5_last_error(), "node 'loop' (Loop)", "body's condition", "is computed at run time",
               "must be a constant");
    d5_network_free(net);
}

/* Scan over x[T, 2]: s_t = s_{t-1} * W + x_t (W[2] a parameter, outside
 * the body), scan output s_t; the loss is the sum of the final state. */
/* W is the outer graph's, or with `inner` the body's own initializer. */
static d5_network *scan_net_inner(int reverse, int64_t out_axis, int64_t out_reverse, int inner)
{
    d5_network *net = net_new("scan");
    input_f32(net, "x", 2, (int64_t[]){4, 2});
    init_f32(net, "s0", 1, (int64_t[]){2}, (const float[]){1, -1});
    if (!inner) init_f32(net, "W", 1, (int64_t[]){2}, (const float[]){0.5f, 1.5f});
    d5_attr attrs[4] = {{.name = "num_scan_inputs", .type = D5_ATTR_INT, .i = 1},
                        {.name = "scan_input_directions",
                         .type = D5_ATTR_INTS,
                         .ints = (const int64_t[]){reverse},
                         .count = 1},
                        {.name = "scan_output_axes",
                         .type = D5_ATTR_INTS,
                         .ints = (const int64_t[]){out_axis},
                         .count = 1},
                        {.name = "scan_output_directions",
                         .type = D5_ATTR_INTS,
                         .ints = (const int64_t[]){out_reverse},
                         .count = 1}};
    d5_attrs view = {attrs, 4};
    node(net, "scan", "Scan", (const char *[]){"s0", "x"}, 2, (const char *[]){"s", "all"}, 2,
         &view);
    d5_network *body = net_new("body");
    formal(body, "s_in");
    formal(body, "xt");
    if (inner) init_f32(body, "W", 1, (int64_t[]){2}, (const float[]){0.5f, 1.5f});
    node1(body, "mul", "Mul", (const char *[]){"s_in", "W"}, 2, "sw");
    node1(body, "add", "Add", (const char *[]){"sw", "xt"}, 2, "s_out");
    node1(body, "copy", "Identity", (const char *[]){"s_out"}, 1, "y");
    output(body, "s_out");
    output(body, "y");
    attach(net, "scan", "body", body);
    node1(net, "loss", "ReduceSum", (const char *[]){"s"}, 1, "l");
    output(net, "l");
    output(net, "all");
    return net;
}

static d5_network *scan_net_axes(int reverse, int64_t out_axis, int64_t out_reverse)
{
    return scan_net_inner(reverse, out_axis, out_reverse, 0);
}

static const float x42[8] = {1, 2, -1, 0.5f, 3, -2, 0.25f, 1};

/* The scan output stacked on axis 1 (or -1), last step first. */
Test(control, scan_outputs_on_another_axis_and_reversed)
{
    for (int64_t axis = -1; axis <= 1; axis += 2) {
        d5_network *net = scan_net_axes(0, axis, 1);
        d5_executor *ex = create(net, NULL);
        d5_tensor x = {desc_of(D5_F32, 2, (int64_t[]){4, 2}), (void *)x42, 0, 0};
        cr_assert_eq(d5_executor_feed(ex, "x", &x), D5_OK);
        cr_assert_eq(d5_executor_inference(ex), D5_OK, "%s", d5_last_error());
        const float w[2] = {0.5f, 1.5f};
        float v[2] = {1, -1}, want[8];
        for (int t = 0; t < 4; t++)
            for (int e = 0; e < 2; e++) {
                v[e] = v[e] * w[e] + x42[t * 2 + e];
                want[e * 4 + (3 - t)] = v[e]; /* [2, 4]: element, step reversed */
            }
        d5_tensor all;
        cr_assert_eq(d5_executor_fetch(ex, "all", &all), D5_OK);
        cr_expect(all.desc.ndim == 2 && all.desc.shape[0] == 2 && all.desc.shape[1] == 4);
        expect_values(all.data, want, 8, axis < 0 ? "axis -1" : "axis 1");
        d5_executor_free(ex);
        d5_network_free(net);
    }
}

/* Forward and reverse with the outer graph's W, then forward with the
 * body's own W, which the iterations share: one gradient, summed. */
Test(control, scan_runs_and_backprops_through_its_steps)
{
    for (int variant = 0; variant < 3; variant++) {
        int reverse = variant == 1, inner = variant == 2;
        d5_network *net = scan_net_inner(reverse, 0, 0, inner);
        d5_executor_options o = d5_executor_default_options();
        o.backprop = 1;
        o.loss = "l";
        d5_executor *ex = create(net, &o);
        d5_tensor x = {desc_of(D5_F32, 2, (int64_t[]){4, 2}), (void *)x42, 0, 0};
        cr_assert_eq(d5_executor_feed(ex, "x", &x), D5_OK);
        cr_assert_eq(d5_executor_inference_and_backprop(ex), D5_OK, "%s", d5_last_error());
        /* Closed form per element: s = W^T s0 + sum_t W^(T-1-t) x_t, with
         * dL/dW = T W^(T-1) s0 + sum_t (T-1-t) W^(T-2-t) x_t. */
        const float w[2] = {0.5f, 1.5f}, s0[2] = {1, -1};
        float s[2], g[2], all[8];
        for (int e = 0; e < 2; e++) {
            double v = s0[e], dv = 0;
            for (int t = 0; t < 4; t++) {
                double xt = x42[(reverse ? 3 - t : t) * 2 + e];
                dv = dv * w[e] + v;
                v = v * w[e] + xt;
                all[t * 2 + e] = (float)v;
            }
            s[e] = (float)v;
            g[e] = (float)dv;
        }
        float l = s[0] + s[1];
        expect_values(fetch(ex, "l", 1), &l, 1, "loss");
        expect_values(fetch(ex, "all", 8), all, 8, "scan output");
        d5_tensor grad;
        cr_assert_eq(d5_executor_gradient(ex, inner ? "scan/W" : "W", &grad), D5_OK, "%s",
                     d5_last_error());
        expect_values(grad.data, g, 2, "dL/dW");
        d5_executor_free(ex);
        d5_network_free(net);
    }
}

/* Sequences: split x[4, 2] into rows, insert x's first row at the front,
 * erase the last, stack on a new axis; the length and an element by a
 * negative position too. */
Test(control, sequences_become_tensor_nodes)
{
    d5_network *net = net_new("seq");
    input_f32(net, "x", 2, (int64_t[]){4, 2});
    d5_attr keep = {.name = "keepdims", .type = D5_ATTR_INT, .i = 0};
    d5_attrs kv = {&keep, 1};
    node(net, "split", "SplitToSequence", (const char *[]){"x"}, 1, (const char *[]){"rows"}, 1,
         &kv);
    int64_t zero = 0, minus_one = -1;
    init_i64(net, "front", 0, NULL, &zero);
    init_i64(net, "last", 0, NULL, &minus_one);
    node1(net, "first", "SequenceAt", (const char *[]){"rows", "front"}, 2, "r0");
    node1(net, "insert", "SequenceInsert", (const char *[]){"rows", "r0", "front"}, 3, "more");
    node1(net, "erase", "SequenceErase", (const char *[]){"more", "last"}, 2, "fewer");
    node1(net, "len", "SequenceLength", (const char *[]){"fewer"}, 1, "n");
    node1(net, "at", "SequenceAt", (const char *[]){"fewer", "last"}, 2, "tail");
    d5_attr cat[2] = {{.name = "axis", .type = D5_ATTR_INT, .i = 1},
                      {.name = "new_axis", .type = D5_ATTR_INT, .i = 1}};
    d5_attrs cv = {cat, 2};
    node(net, "stack", "ConcatFromSequence", (const char *[]){"fewer"}, 1,
         (const char *[]){"stacked"}, 1, &cv);
    output(net, "stacked");
    output(net, "n");
    output(net, "tail");
    d5_executor *ex = create(net, NULL);
    d5_tensor x = {desc_of(D5_F32, 2, (int64_t[]){4, 2}), (void *)x42, 0, 0};
    cr_assert_eq(d5_executor_feed(ex, "x", &x), D5_OK);
    cr_assert_eq(d5_executor_inference(ex), D5_OK, "%s", d5_last_error());
    /* Rows r0 r0 r1 r2 stacked on axis 1: [2, 4]. */
    const int rows[4] = {0, 0, 1, 2};
    float want[8];
    for (int j = 0; j < 4; j++)
        for (int e = 0; e < 2; e++) want[e * 4 + j] = x42[rows[j] * 2 + e];
    d5_tensor t;
    cr_assert_eq(d5_executor_fetch(ex, "stacked", &t), D5_OK);
    cr_expect(t.desc.ndim == 2 && t.desc.shape[0] == 2 && t.desc.shape[1] == 4);
    expect_values(t.data, want, 8, "stacked");
    cr_assert_eq(d5_executor_fetch(ex, "n", &t), D5_OK);
    cr_expect_eq(t.desc.dtype, D5_I64);
    cr_expect_eq(*(const int64_t *)t.data, 4);
    expect_values(fetch(ex, "tail", 2), x42 + 4, 2, "tail");
    d5_executor_free(ex);
    d5_network_free(net);
}

/* A sequence graph input and output, through SequenceMap (each element
 * plus a tensor), fed and fetched as d5_value. */
Test(control, sequence_inputs_and_outputs_are_values)
{
    d5_network *net = net_new("map");
    d5_tensor_desc elem = desc_of(D5_F32, 1, (int64_t[]){1});
    elem.shape[0] = -1; /* elements of several lengths */
    cr_assert_eq(d5_network_add_input_typed(net, "xs", D5_TYPE_SEQUENCE, &elem, NULL), D5_OK);
    init_f32(net, "bias", 0, NULL, (const float[]){100});
    node1(net, "map", "SequenceMap", (const char *[]){"xs", "bias"}, 2, "ys");
    d5_network *body = net_new("body");
    formal(body, "a");
    formal(body, "b");
    node1(body, "add", "Add", (const char *[]){"a", "b"}, 2, "c");
    output(body, "c");
    attach(net, "map", "body", body);
    output(net, "ys");
    cr_assert_eq(d5_network_set_output_type(net, "ys", D5_TYPE_SEQUENCE), D5_OK);

    d5_executor *ex = NULL;
    cr_expect_eq(d5_executor_create(net, NULL, &ex), D5_ERR_INVALID);
    EXPECT_HAS(d5_last_error(), "graph input 'xs' is a sequence",
               "give its value at create (d5_executor_options.values)");

    const float a[2] = {1, 2}, b[3] = {3, 4, 5};
    d5_tensor items[2] = {{desc_of(D5_F32, 1, (int64_t[]){2}), (void *)a, 0, 0},
                          {desc_of(D5_F32, 1, (int64_t[]){3}), (void *)b, 0, 0}};
    d5_value xs = {D5_TYPE_SEQUENCE, 1, D5_F32, 2, items};
    d5_executor_options o = d5_executor_default_options();
    o.value_names = (const char *[]){"xs"};
    o.values = &xs;
    o.nvalues = 1;
    ex = create(net, &o);
    cr_assert_eq(d5_executor_inference(ex), D5_OK, "%s", d5_last_error());
    d5_value ys;
    cr_assert_eq(d5_executor_fetch_value(ex, "ys", &ys), D5_OK, "%s", d5_last_error());
    cr_assert_eq(ys.type, D5_TYPE_SEQUENCE);
    cr_assert_eq(ys.count, 2);
    expect_values(ys.items[0].data, (const float[]){101, 102}, 2, "ys[0]");
    expect_values(ys.items[1].data, (const float[]){103, 104, 105}, 3, "ys[1]");
    /* New data of the same structure. */
    const float a2[2] = {-1, -2};
    items[0].data = (void *)a2;
    cr_assert_eq(d5_executor_feed_value(ex, "xs", &xs), D5_OK, "%s", d5_last_error());
    cr_assert_eq(d5_executor_inference(ex), D5_OK);
    cr_assert_eq(d5_executor_fetch_value(ex, "ys", &ys), D5_OK);
    expect_values(ys.items[0].data, (const float[]){99, 98}, 2, "ys[0] after a new feed");
    d5_value one = {D5_TYPE_SEQUENCE, 1, D5_F32, 1, items};
    cr_expect_eq(d5_executor_feed_value(ex, "xs", &one), D5_ERR_SHAPE);
    EXPECT_HAS(d5_last_error(), "graph input 'xs' was given sequence of 2 tensors");
    d5_executor_free(ex);
    d5_network_free(net);
}

Test(control, optionals_hold_a_value_or_nothing)
{
    d5_network *net = net_new("opt");
    input_f32(net, "x", 1, (int64_t[]){3});
    node1(net, "wrap", "Optional", (const char *[]){"x"}, 1, "ox");
    d5_attr type = {.name = "type", .type = D5_ATTR_STRING, .s = "tensor float32"};
    d5_attrs tv = {&type, 1};
    node(net, "none", "Optional", NULL, 0, (const char *[]){"on"}, 1, &tv);
    node1(net, "has", "OptionalHasElement", (const char *[]){"ox"}, 1, "hx");
    node1(net, "hasnt", "OptionalHasElement", (const char *[]){"on"}, 1, "hn");
    node1(net, "get", "OptionalGetElement", (const char *[]){"ox"}, 1, "y");
    output(net, "hx");
    output(net, "hn");
    output(net, "y");
    output(net, "on");
    cr_assert_eq(d5_network_set_output_type(net, "on", D5_TYPE_OPTIONAL), D5_OK);
    d5_executor *ex = create(net, NULL);
    d5_tensor x = {desc_of(D5_F32, 1, (int64_t[]){3}), (void *)x3, 0, 0};
    cr_assert_eq(d5_executor_feed(ex, "x", &x), D5_OK);
    cr_assert_eq(d5_executor_inference(ex), D5_OK, "%s", d5_last_error());
    d5_tensor t;
    cr_assert_eq(d5_executor_fetch(ex, "hx", &t), D5_OK);
    cr_expect_eq(*(const uint8_t *)t.data, 1);
    cr_assert_eq(d5_executor_fetch(ex, "hn", &t), D5_OK);
    cr_expect_eq(*(const uint8_t *)t.data, 0);
    expect_values(fetch(ex, "y", 3), x3, 3, "y");
    d5_value on;
    cr_assert_eq(d5_executor_fetch_value(ex, "on", &on), D5_OK, "%s", d5_last_error());
    cr_expect_eq(on.type, D5_TYPE_OPTIONAL);
    cr_expect_eq(on.present, 0);
    cr_expect_eq(on.count, 0);
    d5_executor_free(ex);
    d5_network_free(net);
}

Test(control, networks_with_subgraphs_copy_and_refuse_what_they_cannot)
{
    d5_network *net = if_net(1, 1);
    d5_network *copy = NULL;
    cr_assert_eq(d5_network_clone(net, &copy), D5_OK, "%s", d5_last_error());
    int32_t i;
    cr_assert_eq(d5_network_find_node(copy, "if", &i), D5_OK);
    const d5_network *then_g = d5_network_node_graph(copy, i, "then_branch");
    cr_assert_not_null(then_g, "the clone has the subgraphs");
    cr_expect_neq(then_g, d5_network_node_graph(net, i, "then_branch"));
    cr_expect_null(d5_network_node_graph(copy, i, "body"));
    d5_node_info info;
    d5_network_node_at(copy, i, &info);
    cr_expect_eq(info.ngraphs, 2);
    /* Passes leave it alone; ONNX files keep the branches. */
    d5_optimize_report r;
    cr_assert_eq(d5_network_optimize(copy, D5_OPTIMIZE_ALL, &r), D5_OK);
    cr_expect_eq(r.nodes_after, r.nodes_before);
    void *data = NULL;
    size_t size = 0;
    cr_assert_eq(d5_onnx_save_buffer(copy, &data, &size), D5_OK, "%s", d5_last_error());
    d5_network *back = NULL;
    cr_assert_eq(d5_onnx_load_buffer(data, size, NULL, "saved", &back), D5_OK, "%s",
                 d5_last_error());
    d5_free(data);
    const d5_network *else_g = d5_network_node_graph(back, 0, "else_branch");
    cr_assert_not_null(else_g);
    cr_expect_str_eq(d5_network_output_name(else_g, 0), "out");
    d5_network_free(back);
    /* A graph attribute twice. */
    cr_expect_eq(d5_network_attach_graph(copy, i, "then_branch", scale_branch("again", 1)),
                 D5_ERR_INVALID);
    d5_network_free(copy);
    d5_network_free(net);
}

/* ---- FlexAttention (ai.onnx.preview) ---- */

/* A graph attribute x -> x * k. */
static d5_network *times(const char *name, float k)
{
    d5_network *g = net_new(name);
    formal(g, "x");
    init_f32(g, "k", 0, NULL, &k);
    node1(g, "times", "Mul", (const char *[]){"x", "k"}, 2, "y");
    output(g, "y");
    return g;
}

/* Q [1, 2, 2, 2] against K, V [1, 1, 3, 2] (two query heads share one key
 * head), scale 0.25, score_mod x * 2, prob_mod x * 0.5: the nodes it becomes
 * give what the formula gives, computed here in double. */
Test(control, flex_attention_becomes_nodes_with_its_graphs_inlined)
{
    static const float q[8] = {0.5f, -1, 2, 0.25f, -0.5f, 1.5f, 1, 1};
    static const float k[6] = {1, 0, -1, 2, 0.5f, 0.5f};
    static const float v[6] = {1, 2, 3, 4, 5, 6};
    d5_network *net = net_new("flex");
    input_f32(net, "q", 4, (int64_t[]){1, 2, 2, 2});
    init_f32(net, "k", 4, (int64_t[]){1, 1, 3, 2}, k);
    init_f32(net, "v", 4, (int64_t[]){1, 1, 3, 2}, v);
    d5_attr scale = {.name = "scale", .type = D5_ATTR_FLOAT, .f = 0.25};
    d5_attrs attrs = {&scale, 1};
    cr_assert_eq(d5_network_add_node(net, "flex", "FlexAttention", "ai.onnx.preview",
                                     (const char *[]){"q", "k", "v"}, 3, (const char *[]){"y"}, 1,
                                     &attrs, NULL),
                 D5_OK, "%s", d5_last_error());
    attach(net, "flex", "score_mod", times("score_mod", 2));
    attach(net, "flex", "prob_mod", times("prob_mod", 0.5f));
    output(net, "y");
    cr_assert(d5_network_has_control_flow(net));
    d5_executor_options o = d5_executor_default_options();
    o.backend = "ref";
    d5_executor *ex = create(net, &o);
    d5_tensor_desc qd = desc_of(D5_F32, 4, (int64_t[]){1, 2, 2, 2});
    d5_tensor qt = {qd, (void *)q, 0, 0};
    cr_assert_eq(d5_executor_feed(ex, "q", &qt), D5_OK, "%s", d5_last_error());
    cr_assert_eq(d5_executor_inference(ex), D5_OK, "%s", d5_last_error());
    float want[8];
    for (int row = 0; row < 4; row++) { /* head h = row / 2, query row % 2 */
        double s[3], m = -1e300, sum = 0;
        for (int j = 0; j < 3; j++) {
            s[j] = 2 * 0.25 * (q[row * 2] * k[j * 2] + q[row * 2 + 1] * k[j * 2 + 1]);
            m = s[j] > m ? s[j] : m;
        }
        for (int j = 0; j < 3; j++) sum += s[j] = exp(s[j] - m);
        for (int c = 0; c < 2; c++) {
            double y = 0;
            for (int j = 0; j < 3; j++) y += 0.5 * s[j] / sum * v[j * 2 + c];
            want[row * 2 + c] = (float)y;
        }
    }
    expect_values(fetch(ex, "y", 8), want, 8, "flex attention");
    d5_executor_free(ex);
    d5_network_free(net);
}

Test(control, flex_attention_needs_rank_4)
{
    d5_network *net = net_new("flex3");
    input_f32(net, "q", 3, (int64_t[]){2, 2, 2});
    cr_assert_eq(d5_network_add_node(net, "flex", "FlexAttention", "ai.onnx.preview",
                                     (const char *[]){"q", "q", "q"}, 3, (const char *[]){"y"}, 1,
                                     NULL, NULL),
                 D5_OK, "%s", d5_last_error());
    output(net, "y");
    d5_executor *ex = NULL;
    cr_expect_eq(d5_executor_create(net, NULL, &ex), D5_ERR_SHAPE);
    cr_expect(strstr(d5_last_error(), "input Q has 3 dims, expected 4"), "%s", d5_last_error());
    d5_network_free(net);
}
