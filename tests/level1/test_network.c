/* The network graph: building, checking, editing, parameters, dimensions and
 * shape inference. */
#include "support.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static d5_tensor_desc desc2(int64_t a, int64_t b)
{
    /* Built by hand: -1 (an unknown dimension) is not a valid tensor size. */
    d5_tensor_desc d;
    memset(&d, 0, sizeof d);
    d.dtype = D5_F32;
    d.ndim = 2;
    d.shape[0] = a;
    d.shape[1] = b;
    return d;
}

static void add_init(d5_network *net, const char *name, int64_t a, int64_t b)
{
    d5_tensor t;
    d5_tensor_desc d = desc2(a, b);
    cr_assert_eq(d5_tensor_alloc(&d, &t), D5_OK);
    for (int64_t i = 0; i < a * b; i++) ((float *)t.data)[i] = (float)i * 0.1f;
    cr_assert_eq(d5_network_add_initializer_take(net, name, &t), D5_OK, "%s", d5_last_error());
}

/* An unnamed network with one input, "x", of float32 [a, b]. */
static d5_network *net_with_x(int64_t a, int64_t b)
{
    d5_network *net = NULL;
    cr_assert_eq(d5_network_create(NULL, &net), D5_OK);
    d5_tensor_desc x = desc2(a, b);
    cr_assert_eq(d5_network_add_input(net, "x", &x, NULL), D5_OK);
    return net;
}

/* Adds node `name` (NULL: a generated name) applying the one-input,
 * one-output operator `op` to value `in`, writing value `out`. */
static d5_status add_unary(d5_network *net, const char *name, const char *op, const char *in,
                           const char *out)
{
    return d5_network_add_node(net, name, op, NULL, (const char *[]){in}, 1, (const char *[]){out},
                               1, NULL, NULL);
}

/* x[N,4] -> Gemm(W[3,4], transB) -> Relu -> y */
static d5_network *small_mlp(void)
{
    d5_network *net = NULL;
    cr_assert_eq(d5_network_create("mlp", &net), D5_OK);
    d5_tensor_desc x = desc2(-1, 4);
    const char *dims[] = {"N", NULL};
    cr_assert_eq(d5_network_add_input(net, "x", &x, dims), D5_OK);
    add_init(net, "W", 3, 4);
    d5_attr tb = {.name = "transB", .type = D5_ATTR_INT, .i = 1};
    d5_attrs attrs = {&tb, 1};
    cr_assert_eq(d5_network_add_node(net, "fc", "Gemm", NULL, (const char *[]){"x", "W"}, 2,
                                     (const char *[]){"h"}, 1, &attrs, NULL),
                 D5_OK);
    cr_assert_eq(add_unary(net, NULL, "Relu", "h", "y"), D5_OK);
    cr_assert_eq(d5_network_add_output(net, "y", NULL), D5_OK);
    return net;
}

Test(network, build_and_inspect)
{
    d5_network *net = small_mlp();
    cr_assert_eq(d5_network_node_count(net), 2);
    d5_node_info n;
    d5_network_node_at(net, 1, &n);
    cr_assert_str_eq(n.name, "Relu_1");
    cr_assert_str_eq(n.op_type, "Relu");
    d5_network_node_at(net, 0, &n);
    cr_assert_eq(n.attrs->count, 1);
    cr_assert_str_eq(n.attrs->items[0].name, "transB");
    cr_assert_eq(d5_network_input_count(net), 1);
    cr_assert_str_eq(d5_network_input_name(net, 0), "x");
    cr_assert_eq(d5_network_param_count(net), 1);
    cr_assert_str_eq(d5_network_param_name(net, 0), "W");
    cr_assert_eq(d5_network_param_elements(net), 12);
    int32_t order[2];
    cr_assert_eq(d5_network_check(net, order), D5_OK);
    cr_assert_eq(order[0], 0);
    cr_assert_eq(order[1], 1);
    d5_network_free(net);
}

Test(network, names_must_be_unique)
{
    d5_network *net = small_mlp();
    d5_tensor_desc x = desc2(1, 4);
    cr_assert_eq(d5_network_add_input(net, "x", &x, NULL), D5_ERR_INVALID);
    cr_assert_eq(add_unary(net, "fc", "Relu", "y", "z"), D5_ERR_INVALID);
    cr_assert(strstr(d5_last_error(), "'fc'"));
    cr_assert_eq(add_unary(net, "r2", "Relu", "x", "h"), D5_ERR_INVALID);
    cr_assert(strstr(d5_last_error(), "already written by fc"), "%s", d5_last_error());
    d5_network_free(net);
}

Test(network, order_and_cycles)
{
    d5_network *net = net_with_x(2, 2);
    /* Added out of order: b reads a's output. */
    cr_assert_eq(add_unary(net, "b", "Relu", "a_out", "b_out"), D5_OK);
    cr_assert_eq(add_unary(net, "a", "Relu", "x", "a_out"), D5_OK);
    cr_assert_eq(d5_network_add_output(net, "b_out", NULL), D5_OK);
    int32_t order[2];
    cr_assert_eq(d5_network_check(net, order), D5_OK);
    cr_assert_eq(order[0], 1);
    cr_assert_eq(order[1], 0);
    /* a now reads b's output: a cycle. */
    cr_assert_eq(d5_network_set_node_input(net, "a", 0, "b_out"), D5_OK);
    cr_assert_eq(d5_network_check(net, order), D5_ERR_INVALID);
    cr_assert(strstr(d5_last_error(), "cycle"), "%s", d5_last_error());
    /* A dangling input. */
    cr_assert_eq(d5_network_set_node_input(net, "a", 0, "nowhere"), D5_OK);
    cr_assert_eq(d5_network_check(net, NULL), D5_ERR_INVALID);
    cr_assert(strstr(d5_last_error(), "'nowhere'"), "%s", d5_last_error());
    cr_assert_eq(d5_network_set_node_input(net, "a", 5, "x"), D5_ERR_RANGE);
    d5_network_free(net);
}

Test(network, remove_node)
{
    d5_network *net = small_mlp();
    cr_assert_eq(d5_network_remove_node(net, "Relu_1"), D5_OK);
    cr_assert_eq(d5_network_node_count(net), 1);
    /* y is still a declared output, but nothing writes it now. */
    cr_assert_eq(d5_network_check(net, NULL), D5_ERR_INVALID);
    cr_assert(strstr(d5_last_error(), "'y'"), "%s", d5_last_error());
    cr_assert_eq(add_unary(net, "r", "Sigmoid", "h", "y"), D5_OK);
    cr_assert_eq(d5_network_check(net, NULL), D5_OK);
    cr_assert_eq(d5_network_remove_node(net, "nope"), D5_ERR_NOTFOUND);
    d5_network_free(net);
}

Test(network, old_ir_inputs_that_are_initializers)
{
    d5_network *net = NULL;
    cr_assert_eq(d5_network_create(NULL, &net), D5_OK);
    d5_tensor_desc w = desc2(3, 4);
    cr_assert_eq(d5_network_add_input(net, "W", &w, NULL), D5_OK);
    add_init(net, "W", 3, 4);
    cr_assert_eq(d5_network_input_count(net), 0);
    int32_t v;
    cr_assert_eq(d5_network_find_value(net, "W", &v), D5_OK);
    d5_value_info info;
    d5_network_value_at(net, v, &info);
    cr_assert_eq(info.kind, D5_VALUE_INITIALIZER);
    cr_assert_not_null(info.data);
    /* And the other way round: listed as an input after the initializer. */
    cr_assert_eq(d5_network_add_input(net, "W", &w, NULL), D5_OK);
    cr_assert_eq(d5_network_input_count(net), 0);
    d5_network_free(net);
}

Test(network, batch_binding_and_shape_inference)
{
    d5_network *net = small_mlp();
    cr_assert_eq(d5_network_infer_shapes(net), D5_ERR_SHAPE);
    cr_assert(strstr(d5_last_error(), "'N'"), "%s", d5_last_error());
    cr_assert_eq(d5_network_bind_dim(net, "M", 3), D5_ERR_NOTFOUND);
    cr_assert_eq(d5_network_bind_dim(net, "N", 5), D5_OK);
    cr_assert_eq(d5_network_infer_shapes(net), D5_OK, "%s", d5_last_error());
    int32_t v;
    cr_assert_eq(d5_network_find_value(net, "y", &v), D5_OK);
    d5_value_info info;
    d5_network_value_at(net, v, &info);
    cr_assert_eq(info.known, 1);
    cr_assert_eq(info.desc.ndim, 2);
    cr_assert_eq(info.desc.shape[0], 5);
    cr_assert_eq(info.desc.shape[1], 3);
    cr_assert_eq(d5_network_set_batch(net, 7, 1), D5_OK);
    cr_assert_eq(d5_network_infer_shapes(net), D5_OK);
    d5_network_value_at(net, v, &info);
    cr_assert_eq(info.desc.shape[0], 7);
    d5_network_free(net);
}

Test(network, folding_feeds_reshape)
{
    /* y = Reshape(x, Concat(Shape(x)[0:1], [-1])): the shape is computed by
     * Shape and Concat at create, so the Reshape gets it as a constant. */
    d5_network *net = NULL;
    cr_assert_eq(d5_network_create(NULL, &net), D5_OK);
    d5_tensor_desc x;
    cr_assert_eq(d5_tensor_desc_make(D5_F32, 3, (int64_t[]){2, 3, 4}, &x), D5_OK);
    cr_assert_eq(d5_network_add_input(net, "x", &x, NULL), D5_OK);
    d5_tensor m1;
    d5_tensor_desc d1;
    cr_assert_eq(d5_tensor_desc_make(D5_I64, 1, (int64_t[]){1}, &d1), D5_OK);
    cr_assert_eq(d5_tensor_alloc(&d1, &m1), D5_OK);
    ((int64_t *)m1.data)[0] = -1;
    cr_assert_eq(d5_network_add_initializer_take(net, "minus1", &m1), D5_OK);
    d5_attr end = {.name = "end", .type = D5_ATTR_INT, .i = 1};
    d5_attrs ends = {&end, 1};
    cr_assert_eq(d5_network_add_node(net, "shape", "Shape", NULL, (const char *[]){"x"}, 1,
                                     (const char *[]){"s"}, 1, &ends, NULL),
                 D5_OK, "%s", d5_last_error());
    d5_attr axis = {.name = "axis", .type = D5_ATTR_INT, .i = 0};
    d5_attrs axes = {&axis, 1};
    cr_assert_eq(d5_network_add_node(net, "cat", "Concat", NULL, (const char *[]){"s", "minus1"}, 2,
                                     (const char *[]){"shape2"}, 1, &axes, NULL),
                 D5_OK);
    cr_assert_eq(d5_network_add_node(net, "rs", "Reshape", NULL, (const char *[]){"x", "shape2"}, 2,
                                     (const char *[]){"y"}, 1, NULL, NULL),
                 D5_OK);
    cr_assert_eq(d5_network_add_output(net, "y", NULL), D5_OK);
    d5_status s = d5_network_infer_shapes(net);
    if (s == D5_ERR_UNSUPPORTED && strstr(d5_last_error(), "Shape is not supported"))
        cr_skip_test("the Shape operator is not built");
    cr_assert_eq(s, D5_OK, "%s", d5_last_error());
    int32_t v;
    cr_assert_eq(d5_network_find_value(net, "y", &v), D5_OK);
    d5_value_info info;
    d5_network_value_at(net, v, &info);
    cr_assert_eq(info.desc.ndim, 2);
    cr_assert_eq(info.desc.shape[0], 2);
    cr_assert_eq(info.desc.shape[1], 12);
    d5_network_free(net);
}

Test(network, folding_allocates_no_more_than_its_budget)
{
    /* y = ConstantOfShape(Shape(x)) with x declared [2^20, 2^19] float32:
     * inference folds Shape without memory behind x and leaves the 2 TiB of
     * y to run time, where creating an executor would fail cleanly. */
    d5_network *net = net_with_x((int64_t)1 << 20, (int64_t)1 << 19);
    cr_assert_eq(add_unary(net, "shape", "Shape", "x", "s"), D5_OK);
    cr_assert_eq(add_unary(net, "fill", "ConstantOfShape", "s", "y"), D5_OK);
    cr_assert_eq(d5_network_add_output(net, "y", NULL), D5_OK);
    cr_assert_eq(d5_network_infer_shapes(net), D5_OK, "%s", d5_last_error());
    int32_t v;
    cr_assert_eq(d5_network_find_value(net, "y", &v), D5_OK);
    d5_value_info info;
    d5_network_value_at(net, v, &info);
    cr_assert_eq(info.desc.dtype, D5_F32);
    cr_assert_eq(info.desc.ndim, 2);
    cr_assert_eq(info.desc.shape[0], (int64_t)1 << 20);
    cr_assert_eq(info.desc.shape[1], (int64_t)1 << 19);
    d5_network_free(net);

    /* The same from an initializer holding the shape. */
    cr_assert_eq(d5_network_create(NULL, &net), D5_OK);
    d5_tensor shape;
    d5_tensor_desc d;
    cr_assert_eq(d5_tensor_desc_make(D5_I64, 1, (int64_t[]){2}, &d), D5_OK);
    cr_assert_eq(d5_tensor_alloc(&d, &shape), D5_OK);
    ((int64_t *)shape.data)[0] = (int64_t)1 << 20;
    ((int64_t *)shape.data)[1] = (int64_t)1 << 19;
    cr_assert_eq(d5_network_add_initializer_take(net, "s", &shape), D5_OK);
    cr_assert_eq(add_unary(net, "fill", "ConstantOfShape", "s", "y"), D5_OK);
    cr_assert_eq(d5_network_add_output(net, "y", NULL), D5_OK);
    cr_assert_eq(d5_network_infer_shapes(net), D5_OK, "%s", d5_last_error());
    cr_assert_eq(d5_network_find_value(net, "y", &v), D5_OK);
    d5_network_value_at(net, v, &info);
    cr_assert_eq(info.desc.shape[0], (int64_t)1 << 20);
    d5_network_free(net);
}

Test(network, unsupported_operator_names_node)
{
    d5_network *net = net_with_x(2, 2);
    cr_assert_eq(add_unary(net, "weird", "FrobnicateV9", "x", "y"), D5_OK);
    cr_assert_eq(d5_network_add_output(net, "y", NULL), D5_OK);
    cr_assert_eq(d5_network_infer_shapes(net), D5_ERR_UNSUPPORTED);
    cr_assert(strstr(d5_last_error(), "node 'weird'"), "%s", d5_last_error());
    cr_assert(strstr(d5_last_error(), "FrobnicateV9"), "%s", d5_last_error());
    cr_assert(strstr(d5_last_error(), "Conv"), "lists the supported operators: %s",
              d5_last_error());
    d5_network_free(net);
}

Test(network, out_of_memory_is_clean)
{
    for (long budget = 0; budget < 60; budget++) {
        failing_alloc_install(budget);
        d5_network *net = NULL;
        d5_status s = d5_network_create("x", &net);
        d5_tensor_desc x = desc2(2, 2);
        if (s == D5_OK) s = d5_network_add_input(net, "x", &x, NULL);
        if (s == D5_OK) s = add_unary(net, "a", "Relu", "x", "y");
        if (s == D5_OK) s = d5_network_add_output(net, "y", NULL);
        if (s == D5_OK) s = d5_network_infer_shapes(net);
        cr_assert(s == D5_OK || s == D5_ERR_NOMEM, "budget %ld: %s", budget, d5_last_error());
        d5_network_free(net);
        long live = failing_alloc_live();
        failing_alloc_remove();
        cr_assert_eq(live, 0, "budget %ld: %ld blocks leaked", budget, live);
    }
}

Test(network, clone_is_deep)
{
    d5_network *net = small_mlp(), *copy = NULL;
    cr_assert_eq(d5_network_bind_dim(net, "N", 2), D5_OK);
    cr_assert_eq(d5_network_infer_shapes(net), D5_OK);
    cr_assert_eq(d5_network_clone(net, &copy), D5_OK, "%s", d5_last_error());
    cr_assert_eq(d5_network_node_count(copy), 2);
    cr_assert_eq(d5_network_param_elements(copy), 12);
    float *w = d5_network_initializer_data(copy, "W");
    cr_assert_not_null(w);
    cr_assert_float_eq(w[3], 0.3f, 1e-7);
    w[3] = 42;
    cr_assert_float_eq(((float *)d5_network_initializer_data(net, "W"))[3], 0.3f, 1e-7);
    cr_assert_null(d5_network_initializer_data(copy, "x"));
    int32_t v;
    d5_value_info info;
    cr_assert_eq(d5_network_find_value(copy, "y", &v), D5_OK);
    d5_network_value_at(copy, v, &info);
    cr_assert_eq(info.known, 1);
    cr_assert_eq(info.desc.shape[0], 2);
    d5_network_free(net);
    d5_network_free(copy);
}

/* A chain of Relu nodes listed last to first: the order comes out first to
 * last, in time linear in the nodes (100 000 nodes took over a minute with
 * repeated passes; the test's own timeout catches a return of that). */
Test(network, reverse_listed_chain_is_ordered_in_linear_time, .timeout = D5_TIMEOUT(60))
{
    enum { N = 100000 };
    d5_network *net;
    cr_assert_eq(d5_network_create("chain", &net), D5_OK);
    d5_tensor_desc d = desc2(1, 4);
    cr_assert_eq(d5_network_add_input(net, "v0", &d, NULL), D5_OK);
    char in[32], out[32], name[32];
    for (int i = N; i >= 1; i--) {
        snprintf(in, sizeof in, "v%d", i - 1);
        snprintf(out, sizeof out, "v%d", i);
        snprintf(name, sizeof name, "relu%d", i);
        const char *ins[] = {in}, *outs[] = {out};
        cr_assert_eq(d5_network_add_node(net, name, "Relu", NULL, ins, 1, outs, 1, NULL, NULL),
                     D5_OK);
    }
    snprintf(out, sizeof out, "v%d", N);
    cr_assert_eq(d5_network_add_output(net, out, NULL), D5_OK);
    int32_t *order = malloc(N * sizeof *order);
    cr_assert_eq(d5_network_check(net, order), D5_OK, "%s", d5_last_error());
    /* Node i (listed at index N - i) must come i-th. */
    for (int i = 0; i < N; i++) cr_assert_eq(order[i], N - 1 - i, "position %d", i);
    free(order);
    d5_network_free(net);
}

/* Independent nodes keep the order of the file. */
Test(network, ready_nodes_keep_the_file_order)
{
    d5_network *net;
    cr_assert_eq(d5_network_create("fan", &net), D5_OK);
    d5_tensor_desc d = desc2(1, 4);
    cr_assert_eq(d5_network_add_input(net, "x", &d, NULL), D5_OK);
    const char *x[] = {"x"}, *a[] = {"a"}, *b[] = {"b"}, *c[] = {"c"}, *ab[] = {"a", "c"};
    cr_assert_eq(d5_network_add_node(net, "sum", "Add", NULL, ab, 2, b, 1, NULL, NULL), D5_OK);
    cr_assert_eq(d5_network_add_node(net, "r1", "Relu", NULL, x, 1, a, 1, NULL, NULL), D5_OK);
    cr_assert_eq(d5_network_add_node(net, "r2", "Relu", NULL, x, 1, c, 1, NULL, NULL), D5_OK);
    cr_assert_eq(d5_network_add_output(net, "b", NULL), D5_OK);
    int32_t order[3];
    cr_assert_eq(d5_network_check(net, order), D5_OK);
    cr_assert_eq(order[0], 1);
    cr_assert_eq(order[1], 2);
    cr_assert_eq(order[2], 0);
    d5_network_free(net);
}

/* Out-of-range indices and NULL networks read nothing outside the network. */
Test(network, accessors_refuse_bad_indices)
{
    d5_network *net = small_mlp();
    cr_assert_null(d5_network_input_name(net, -1));
    cr_assert_null(d5_network_input_name(net, d5_network_input_count(net)));
    cr_assert_null(d5_network_output_name(net, 7));
    cr_assert_not_null(d5_network_output_name(net, 0));
    d5_node_info n;
    d5_network_node_at(net, 1000, &n);
    cr_assert_null(n.name);
    d5_value_info v;
    d5_network_value_at(net, -3, &v);
    cr_assert_null(v.name);
    cr_assert_eq(v.producer, -1);
    cr_assert_eq(d5_network_input_count(NULL), 0);
    cr_assert_eq(d5_network_node_count(NULL), 0);
    cr_assert_null(d5_network_output_name(NULL, 0));
    cr_assert_null(d5_network_name(NULL));
    d5_network_free(net);
}
