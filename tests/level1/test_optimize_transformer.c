/* The graph optimisation passes of transformer blocks (fuse-gelu,
 * fold-transpose-matmul, fuse-matmul-bias, fuse-matmul-scale): each rewrite
 * leaves the outputs equal to the unoptimised graph's, and what a pass
 * cannot prove equal stays as it is. */
#include "optimize_support.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- fuse-gelu ---- */

/* x[4,6] -> Div(sqrt 2) -> Erf -> Add(1) -> Mul(x, .) -> Mul(., 0.5) -> y, the
 * form PyTorch's nn.GELU() exports; with `half_first`, Mul(x, 0.5) -> Mul(., a)
 * instead. With `leak`, the Erf's output is also a graph output. */
static d5_network *gelu_graph(int half_first, int leak)
{
    const int64_t xs[] = {4, 6}, one[] = {1};
    d5_network *net = graph("gelu", 17, 2, xs);
    add_f32(net, "sqrt2", 1, one, 1.41421356f);
    add_f32(net, "one", 1, one, 1.0f);
    add_f32(net, "half", 1, one, 0.5f);
    const char *i0[] = {"x", "sqrt2"}, *i1[] = {"d"}, *i2[] = {"one", "e"};
    node(net, "div", "Div", i0, 2, "d", NULL);
    node(net, "erf", "Erf", i1, 1, "e", NULL);
    node(net, "add", "Add", i2, 2, "a", NULL);
    if (half_first) {
        const char *i3[] = {"half", "x"}, *i4[] = {"h", "a"};
        node(net, "mul_half", "Mul", i3, 2, "h", NULL);
        node(net, "mul", "Mul", i4, 2, "y", NULL);
    } else {
        const char *i3[] = {"x", "a"}, *i4[] = {"m", "half"};
        node(net, "mul", "Mul", i3, 2, "m", NULL);
        node(net, "mul_half", "Mul", i4, 2, "y", NULL);
    }
    cr_assert_eq(d5_network_add_output(net, "y", NULL), D5_OK);
    if (leak) cr_assert_eq(d5_network_add_output(net, "e", NULL), D5_OK);
    return net;
}

/* The node that is left of `net` after `pass`, expected to have rewritten
 * the whole graph, once, into one `op_type` node. */
static d5_node_info fused_into(d5_network *net, const char *pass, const char *op_type)
{
    d5_node_info n;
    cr_expect_eq(fused_to_one(net, pass, &n), 1, "%s: rewrites", pass);
    cr_expect_str_eq(n.op_type, op_type, "%s", pass);
    return n;
}

/* Checks that net became one Gelu(x) -> y whose attribute approximate is
 * `approximate` (NULL: absent, ONNX's default "none"), then frees net. */
static void expect_gelu(d5_network *net, const char *approximate)
{
    d5_node_info g = fused_into(net, "fuse-gelu", "Gelu");
    cr_expect_str_eq(g.inputs[0], "x");
    cr_expect_str_eq(g.outputs[0], "y");
    const d5_attr *a = d5_attrs_find(g.attrs, "approximate");
    if (approximate)
        cr_expect(a && a->type == D5_ATTR_STRING && strcmp(a->s, approximate) == 0,
                  "the Gelu is approximate=\"%s\"", approximate);
    else
        cr_expect_null(a, "the Gelu of the Erf form has no approximate attribute");
    d5_network_free(net);
}

static void fuse_gelu_form(int half_first)
{
    expect_gelu(gelu_graph(half_first, 0), NULL);
}

Test(optimize_transformer, fuses_gelu_erf_form)
{
    fuse_gelu_form(0);
}

Test(optimize_transformer, fuses_gelu_half_first)
{
    fuse_gelu_form(1);
}

Test(optimize_transformer, keeps_gelu_parts_read_elsewhere)
{
    d5_network *net = gelu_graph(0, 1);
    d5_optimize_report r = optimise_and_compare(net, D5_OPTIMIZE_ALL);
    cr_expect_eq(applied(&r, "fuse-gelu"), 0);
    cr_expect_eq(count_op(net, "Erf"), 1);
    d5_network_free(net);
}

/* The tanh form, as PyTorch exports nn.GELU(approximate="tanh") and GPT-2's
 * gelu_new: h = Mul(x, 0.5); c = Mul(Pow(x, 3), 0.044715); i = Add(x, c);
 * s = Mul(i, sqrt(2/pi)); t = Tanh(s); a = Add(t, 1); y = Mul(h, a). With
 * `exponent` other than 3 the graph is no GELU. */
static d5_network *gelu_tanh_graph(float exponent)
{
    const int64_t xs[] = {4, 6}, one[] = {1};
    d5_network *net = graph("gelu_tanh", 17, 2, xs);
    /* clang-format off */
    const struct { const char *name; float value; } constants[] = {
        {"half", 0.5f}, {"exponent", exponent}, {"cubic", 0.044715f}, {"scale", 0.7978845608f},
        {"one", 1.0f}};
    static const char *const nodes[][5] = { /* name, operator, inputs, output */
        {"mul_half", "Mul", "x", "half", "h"}, {"pow", "Pow", "x", "exponent", "p"},
        {"mul_cubic", "Mul", "cubic", "p", "c"}, {"add_inner", "Add", "x", "c", "i"},
        {"mul_scale", "Mul", "i", "scale", "s"}, {"tanh", "Tanh", "s", NULL, "t"},
        {"add_one", "Add", "one", "t", "a"}, {"mul", "Mul", "h", "a", "y"}};
    /* clang-format on */
    for (size_t k = 0; k < sizeof constants / sizeof constants[0]; k++)
        add_f32(net, constants[k].name, 1, one, constants[k].value);
    for (size_t k = 0; k < sizeof nodes / sizeof nodes[0]; k++)
        node(net, nodes[k][0], nodes[k][1], &nodes[k][2], nodes[k][3] ? 2 : 1, nodes[k][4], NULL);
    cr_assert_eq(d5_network_add_output(net, "y", NULL), D5_OK);
    return net;
}

Test(optimize_transformer, fuses_gelu_tanh_form)
{
    expect_gelu(gelu_tanh_graph(3.0f), "tanh");
}

Test(optimize_transformer, keeps_a_tanh_form_of_another_power)
{
    d5_network *net = gelu_tanh_graph(2.0f);
    d5_optimize_report r = optimise_and_compare(net, D5_OPTIMIZE_ALL);
    cr_expect_eq(applied(&r, "fuse-gelu"), 0);
    cr_expect_eq(count_op(net, "Tanh"), 1);
    d5_network_free(net);
}

/* ---- fold-transpose-matmul ---- */

/* x[2,3,4,5] -> Transpose([0,2,1,3]) -> a[2,4,3,5]; w[2,6,4,5] ->
 * Transpose([0,2,3,1]) -> b[2,4,5,6]; MatMul(a, b) -> y[2,4,3,6]. With
 * `twice`, a is also read by a Relu whose output is a second graph output. */
static d5_network *transpose_matmul(int twice)
{
    const int64_t xs[] = {2, 3, 4, 5}, ws[] = {2, 6, 4, 5};
    const int64_t pa[] = {0, 2, 1, 3}, pb[] = {0, 2, 3, 1};
    d5_network *net = graph("tmm", 17, 4, xs);
    add_f32(net, "w", 4, ws, -0.05f);
    d5_attr a1 = {.name = "perm", .type = D5_ATTR_INTS, .ints = pa, .count = 4};
    d5_attr a2 = {.name = "perm", .type = D5_ATTR_INTS, .ints = pb, .count = 4};
    d5_attrs at1 = {&a1, 1}, at2 = {&a2, 1};
    const char *i0[] = {"x"}, *i1[] = {"w"}, *i2[] = {"a", "b"}, *i3[] = {"a"};
    node(net, "ta", "Transpose", i0, 1, "a", &at1);
    node(net, "tb", "Transpose", i1, 1, "b", &at2);
    node(net, "mm", "MatMul", i2, 2, "y", NULL);
    cr_assert_eq(d5_network_add_output(net, "y", NULL), D5_OK);
    if (twice) {
        node(net, "relu", "Relu", i3, 1, "r", NULL);
        cr_assert_eq(d5_network_add_output(net, "r", NULL), D5_OK);
    }
    return net;
}

Test(optimize_transformer, folds_transposes_into_matmul)
{
    d5_network *net = transpose_matmul(0);
    d5_node_info m = fused_into(net, "fold-transpose-matmul", "TransposeMatMul");
    cr_expect_str_eq(m.inputs[0], "x");
    cr_expect_str_eq(m.inputs[1], "w");
    d5_network_free(net);
}

Test(optimize_transformer, keeps_transpose_read_twice)
{
    d5_network *net = transpose_matmul(1);
    d5_optimize_report r = optimise_and_compare(net, D5_OPTIMIZE_ALL);
    cr_expect_eq(applied(&r, "fold-transpose-matmul"), 1); /* B only */
    cr_assert_eq(d5_network_optimize(net, D5_OPTIMIZE_ALL, NULL), D5_OK);
    cr_expect_eq(count_op(net, "Transpose"), 1);
    cr_expect_eq(count_op(net, "TransposeMatMul"), 1);
    d5_network_free(net);
}

/* ---- fuse-matmul-bias ---- */

/* x[2,3,5] -> MatMul(w[5,4]) -> p -> Add(c) -> y, c of `cshape` (cnd dims). */
static d5_network *matmul_bias(int32_t cnd, const int64_t *cshape)
{
    const int64_t xs[] = {2, 3, 5}, ws[] = {5, 4};
    d5_network *net = graph("mmb", 17, 3, xs);
    add_f32(net, "w", 2, ws, -0.05f);
    add_f32(net, "c", cnd, cshape, 0.3f);
    const char *i0[] = {"x", "w"}, *i1[] = {"c", "p"};
    node(net, "mm", "MatMul", i0, 2, "p", NULL);
    node(net, "add", "Add", i1, 2, "y", NULL);
    cr_assert_eq(d5_network_add_output(net, "y", NULL), D5_OK);
    return net;
}

Test(optimize_transformer, fuses_matmul_bias)
{
    const int64_t cs[] = {1, 4};
    d5_network *net = matmul_bias(2, cs);
    d5_node_info m = fused_into(net, "fuse-matmul-bias", "TransposeMatMul");
    cr_expect_eq(m.ninputs, 3);
    cr_expect_str_eq(m.inputs[2], "c");
    cr_expect_str_eq(m.outputs[0], "y");
    d5_network_free(net);
}

/* A C of [3, 4] is not one value per column: the Add stays. */
Test(optimize_transformer, keeps_add_of_a_matrix)
{
    const int64_t cs[] = {3, 4};
    d5_network *net = matmul_bias(2, cs);
    d5_optimize_report r = optimise_and_compare(net, D5_OPTIMIZE_ALL);
    cr_expect_eq(applied(&r, "fuse-matmul-bias"), 0);
    d5_network_free(net);
}

/* ---- fuse-matmul-scale ---- */

/* x[2,3,5] -> MatMul(w[5,4]) -> p -> Div(p, 8) (or Mul(0.125, p)) -> y. */
static d5_network *matmul_scale(int mul)
{
    const int64_t xs[] = {2, 3, 5}, ws[] = {5, 4}, one[] = {1};
    d5_network *net = graph("mms", 17, 3, xs);
    add_f32(net, "w", 2, ws, -0.05f);
    add_f32(net, "c", 1, one, mul ? 0.125f : 8.0f);
    const char *i0[] = {"x", "w"}, *i1[] = {"p", "c"}, *i2[] = {"c", "p"};
    node(net, "mm", "MatMul", i0, 2, "p", NULL);
    node(net, "scale", mul ? "Mul" : "Div", mul ? i2 : i1, 2, "y", NULL);
    cr_assert_eq(d5_network_add_output(net, "y", NULL), D5_OK);
    return net;
}

static void fuse_scale(int mul)
{
    d5_network *net = matmul_scale(mul);
    fused_into(net, "fuse-matmul-scale", "TransposeMatMul");
    d5_network_free(net);
}

Test(optimize_transformer, fuses_matmul_div)
{
    fuse_scale(0);
}

Test(optimize_transformer, fuses_matmul_mul)
{
    fuse_scale(1);
}

/* ---- fuse-attention ---- */

static void add_tensor(d5_network *net, const char *name, d5_dtype dtype, int32_t ndim,
                       const int64_t *shape, const void *values)
{
    d5_tensor_desc d;
    d5_tensor t;
    cr_assert_eq(d5_tensor_desc_make(dtype, ndim, shape, &d), D5_OK);
    cr_assert_eq(d5_tensor_alloc(&d, &t), D5_OK);
    size_t bytes = 0;
    cr_assert_eq(d5_tensor_desc_bytes(&d, &bytes), D5_OK);
    memcpy(t.data, values, bytes);
    cr_assert_eq(d5_network_add_initializer_take(net, name, &t), D5_OK, "%s", d5_last_error());
}

typedef enum { NO_MASK, CAUSAL, ADDED_MASK, ROW_SEES_NOTHING } mask_kind;

/* x[1,T,32] -> MatMul(wq), MatMul(wk), MatMul(wv) -> Reshape [1,T,4,8] ->
 * Transpose to heads (K's to [0,2,3,1]) -> MatMul -> Div(sqrt 8) -> the
 * mask -> Softmax -> MatMul(., V) -> Transpose back -> Reshape [1,T,32] -> y:
 * attention as PyTorch exports it. With `leak` the probabilities are also a
 * graph output. */
static d5_network *attention_graph(int64_t t, mask_kind mask, int leak)
{
    const int64_t xs[] = {1, t, 32}, ws[] = {32, 32}, one[] = {1}, four[] = {4}, three[] = {3};
    d5_network *net = graph("attention", 17, 3, xs);
    add_f32(net, "wq", 2, ws, -0.08f);
    add_f32(net, "wk", 2, ws, 0.05f);
    add_f32(net, "wv", 2, ws, -0.02f);
    add_f32(net, "sqrt_d", 1, one, 2.828427f);
    const int64_t heads[4] = {1, t, 4, 8}, merged[3] = {1, t, 32};
    add_tensor(net, "heads", D5_I64, 1, four, heads);
    add_tensor(net, "merged", D5_I64, 1, three, merged);
    const int64_t p0213[4] = {0, 2, 1, 3}, p0231[4] = {0, 2, 3, 1};
    d5_attr a0213 = {.name = "perm", .type = D5_ATTR_INTS, .ints = p0213, .count = 4};
    d5_attr a0231 = {.name = "perm", .type = D5_ATTR_INTS, .ints = p0231, .count = 4};
    d5_attrs to_heads = {&a0213, 1}, keys_t = {&a0231, 1};
    const char *names[3] = {"q", "k", "v"}, *ws_[3] = {"wq", "wk", "wv"};
    for (int i = 0; i < 3; i++) {
        char n3[8], n4[8], nh[8];
        snprintf(n3, sizeof n3, "%s3", names[i]);
        snprintf(n4, sizeof n4, "%s4", names[i]);
        snprintf(nh, sizeof nh, "%sh", names[i]);
        const char *mm[] = {"x", ws_[i]}, *rs[] = {n3, "heads"}, *tr[] = {n4};
        node(net, n3, "MatMul", mm, 2, n3, NULL);
        node(net, n4, "Reshape", rs, 2, n4, NULL);
        node(net, nh, "Transpose", tr, 1, nh, i == 1 ? &keys_t : &to_heads);
    }
    const char *qk[] = {"qh", "kh"}, *scale[] = {"scores", "sqrt_d"}, *pv[] = {"p", "vh"};
    node(net, "scores", "MatMul", qk, 2, "scores", NULL);
    node(net, "scaled", "Div", scale, 2, "scaled", NULL);
    const char *logits = "scaled";
    if (mask == ADDED_MASK) {
        const int64_t ms[4] = {1, 1, 1, t};
        add_f32(net, "mask", 4, ms, -3.0f);
        const char *add[] = {"scaled", "mask"};
        node(net, "masked", "Add", add, 2, "masked", NULL);
        logits = "masked";
    } else if (mask == CAUSAL || mask == ROW_SEES_NOTHING) {
        const int64_t cs[4] = {1, 1, t, t};
        unsigned char *c = malloc((size_t)(t * t));
        cr_assert_not_null(c);
        for (int64_t i = 0; i < t; i++)
            for (int64_t j = 0; j < t; j++) c[i * t + j] = mask == CAUSAL ? j <= i : i != 2;
        add_tensor(net, "cond", D5_BOOL, 4, cs, c);
        free(c);
        add_f32(net, "fill", 1, one, -1e9f);
        const char *where[] = {"cond", "scaled", "fill"};
        node(net, "masked", "Where", where, 3, "masked", NULL);
        logits = "masked";
    }
    const char *sm[] = {logits}, *ctx[] = {"ctx"}, *back[] = {"ctx_t", "merged"};
    node(net, "softmax", "Softmax", sm, 1, "p", NULL);
    node(net, "ctx", "MatMul", pv, 2, "ctx", NULL);
    node(net, "ctx_t", "Transpose", ctx, 1, "ctx_t", &to_heads);
    node(net, "y", "Reshape", back, 2, "y", NULL);
    cr_assert_eq(d5_network_add_output(net, "y", NULL), D5_OK);
    if (leak) cr_assert_eq(d5_network_add_output(net, "p", NULL), D5_OK);
    return net;
}

/* Optimises net (outputs checked against the unoptimised graph on dnnl and
 * on blas,ref), expects `fused` Attention nodes, and returns the first. */
static int32_t attention_fusions(d5_network *net, d5_node_info *att)
{
    d5_optimize_report r = compare_on(net, D5_OPTIMIZE_ALL, 0);
    cr_assert_eq(d5_network_optimize(net, D5_OPTIMIZE_ALL, NULL), D5_OK, "%s", d5_last_error());
    for (int32_t i = 0; att && i < d5_network_node_count(net); i++) {
        d5_network_node_at(net, i, att);
        if (strcmp(att->op_type, "Attention") == 0) break;
    }
    return applied(&r, "fuse-attention");
}

static void expect_attention(mask_kind mask, int32_t inputs)
{
    d5_network *net = attention_graph(1024, mask, 0);
    d5_node_info a;
    cr_expect_eq(attention_fusions(net, &a), 1);
    cr_expect_eq(count_op(net, "Attention"), 1);
    cr_expect_eq(count_op(net, "Softmax") + count_op(net, "Transpose"), 0);
    cr_assert_str_eq(a.op_type, "Attention");
    cr_expect_eq(a.ninputs, inputs);
    cr_expect_str_eq(a.inputs[0], "q3");
    cr_expect_str_eq(a.inputs[1], "k3");
    cr_expect_str_eq(a.inputs[2], "v3");
    cr_expect_str_eq(a.outputs[0], "y");
    int64_t heads = 0, causal = 0;
    double scale = 0;
    cr_expect_eq(d5_attrs_int(a.attrs, "q_num_heads", 0, &heads), D5_OK);
    cr_expect_eq(heads, 4);
    cr_expect_eq(d5_attrs_int(a.attrs, "is_causal", 0, &causal), D5_OK);
    cr_expect_eq(causal, mask == CAUSAL);
    cr_expect_eq(d5_attrs_float(a.attrs, "scale", 0, &scale), D5_OK);
    cr_expect_float_eq(scale, 1 / 2.828427, 1e-6);
    d5_network_free(net);
}

Test(optimize_transformer, fuses_causal_attention, .timeout = 120)
{
    expect_attention(CAUSAL, 3);
}

Test(optimize_transformer, fuses_attention_with_an_added_mask, .timeout = 120)
{
    expect_attention(ADDED_MASK, 4);
}

Test(optimize_transformer, fuses_attention_without_a_mask, .timeout = 120)
{
    expect_attention(NO_MASK, 3);
}

/* Below 1024 keys the parts are faster; a condition with a row that attends
 * to nothing (Where averages it, Attention zeroes it) and probabilities read
 * elsewhere keep the graph as it is. */
Test(optimize_transformer, keeps_attention_it_cannot_fuse, .timeout = 120)
{
    d5_network *nets[3] = {attention_graph(512, CAUSAL, 0),
                           attention_graph(1024, ROW_SEES_NOTHING, 0),
                           attention_graph(1024, NO_MASK, 1)};
    for (int i = 0; i < 3; i++) {
        cr_expect_eq(attention_fusions(nets[i], NULL), 0, "graph %d", i);
        cr_expect_eq(count_op(nets[i], "Attention"), 0, "graph %d", i);
        d5_network_free(nets[i]);
    }
}
