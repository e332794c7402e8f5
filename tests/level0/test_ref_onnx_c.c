/* The reference operators of ONNX's attention family, opsets 23 to 27:
 * Attention's nonpad_kv_seqlen (opset 24) and sliding window (opset 25),
 * RotaryEmbedding, TensorScatter, LinearAttention and CausalConvWithState.
 * Expected values come from an independent numpy implementation of each
 * operator's equations (Debian's numpy 1.24, written for these tests;
 * the inputs are those below), printed to 6 significant digits. */
#include "op_support.h"

#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

TestSuite(ref_onnx_c, .timeout = 120);

#define NONE ((d5_tensor){.desc = {.dtype = D5_DTYPE_INVALID}})
#define ATTRS(...)                                                                                 \
    (&(d5_attrs){(const d5_attr[]){__VA_ARGS__},                                                   \
                 (int32_t)(sizeof((const d5_attr[]){__VA_ARGS__}) / sizeof(d5_attr))})

/* Runs the ref operator with nout outputs and checks output k's n values. */
static void expect_output(const char *op, const d5_tensor *in, int32_t nin, const d5_attrs *attrs,
                          int32_t nout, int32_t k, const float *want, int64_t n, double tol)
{
    d5_tensor y[4];
    run_op(op, "ref", in, nin, attrs, y, nout);
    expect_values(&y[k], want, n, tol);
    op_free_all(y, nout);
}

/* The descriptors of n tensors, for expect_gradient. */
static void descs_of(const d5_tensor *in, int32_t n, d5_tensor_desc *d)
{
    for (int32_t i = 0; i < n; i++) d[i] = in[i].desc;
}

/* Expects forward (create, or the run for run-time errors) to fail. */
static void expect_run_fails(const char *op, const d5_tensor *in, int32_t nin,
                             const d5_attrs *attrs, int32_t nout, d5_status status,
                             const char *text)
{
    d5_tensor y[4];
    memset(y, 0, sizeof y);
    d5_status s = try_op(op, "ref", in, nin, attrs, y, nout);
    cr_assert_eq(s, status, "%s: got %s (%s)", op, d5_status_name(s), d5_last_error());
    cr_assert(strstr(d5_last_error(), text), "%s: '%s' lacks '%s'", op, d5_last_error(), text);
    op_free_all(y, nout);
}

/* ---- Attention: nonpad_kv_seqlen and the sliding window ---- */

/* Q [2,1,2,2] = (i - 3) / 4, K [2,1,3,2] = (i % 5 - 2) / 3, V [2,1,3,2] = i / 2. */
static void attention_inputs(d5_tensor *in)
{
    float q[8], k[12], v[12];
    for (int i = 0; i < 8; i++) q[i] = (float)(i - 3) / 4;
    for (int i = 0; i < 12; i++) k[i] = (float)(i % 5 - 2) / 3, v[i] = (float)i / 2;
    in[0] = tf32(4, SHAPE(2, 1, 2, 2), q);
    in[1] = tf32(4, SHAPE(2, 1, 3, 2), k);
    in[2] = tf32(4, SHAPE(2, 1, 3, 2), v);
    in[3] = in[4] = in[5] = NONE;
}

Test(ref_onnx_c, attention_nonpad_kv_seqlen)
{
    d5_tensor in[7];
    attention_inputs(in);
    /* Batch 0 sees 2 keys, batch 1 all 3; causal offsets 0 and 1. */
    in[6] = ti64(1, SHAPE(2), IVALS(2, 3));
    expect_output("Attention", in, 7, ATTRS(attr_int("is_causal", 1)), 1, 0,
                  VALS(0, 0.5, 0.470571, 0.970571, 3.58748, 4.08748, 3.9143, 4.4143), 8, 1e-5);
    d5_tensor_free(&in[6]);
    /* Without is_causal: batch 0 sees key 0 only, batch 1 none (rows of zeros). */
    in[6] = ti64(1, SHAPE(2), IVALS(1, 0));
    expect_output("Attention", in, 7, NULL, 1, 0, VALS(0, 0.5, 0, 0.5, 0, 0, 0, 0), 8, 1e-6);
    d5_tensor_free(&in[6]);
    op_free_all(in, 3);
}

Test(ref_onnx_c, attention_sliding_window)
{
    float q[8], k[8], v[8];
    for (int i = 0; i < 8; i++) q[i] = sinf((float)i), k[i] = cosf((float)i), v[i] = (float)i;
    d5_tensor in[3] = {tf32(4, SHAPE(1, 1, 4, 2), q), tf32(4, SHAPE(1, 1, 4, 2), k),
                       tf32(4, SHAPE(1, 1, 4, 2), v)};
    /* Query i sees keys i - 1 and i; then keys 0 to i + 1. */
    expect_output("Attention", in, 3,
                  ATTRS(attr_int("left_window_size", 1), attr_int("right_window_size", 0)), 1, 0,
                  VALS(0, 1, 0.51338, 1.51338, 2.64753, 3.64753, 4.94984, 5.94984), 8, 1e-5);
    expect_output("Attention", in, 3, ATTRS(attr_int("right_window_size", 1)), 1, 0,
                  VALS(0.573779, 1.57378, 1.21115, 2.21115, 2.67676, 3.67676, 3.23036, 4.23036), 8,
                  1e-5);
    op_free_all(in, 3);
}

Test(ref_onnx_c, attention_new_inputs_errors)
{
    d5_tensor in[7];
    attention_inputs(in);
    in[6] = ti64(1, SHAPE(3), IVALS(1, 2, 3));
    op_expect_fails("Attention", in, 7, NULL, 1, D5_ERR_SHAPE, "nonpad_kv_seqlen has shape [3]");
    d5_tensor_free(&in[6]);
    in[6] = ti64(1, SHAPE(2), IVALS(1, 2));
    op_expect_fails("Attention", in, 7, NULL, 3, D5_ERR_INVALID,
                    "cannot be combined with the outputs present_key");
    in[4] = tf32(4, SHAPE(2, 1, 1, 2), NULL);
    in[5] = tf32(4, SHAPE(2, 1, 1, 2), NULL);
    op_expect_fails("Attention", in, 7, NULL, 1, D5_ERR_INVALID,
                    "cannot be combined with past_key and past_value");
    op_expect_fails("Attention", in, 3, ATTRS(attr_int("left_window_size", -2)), 1, D5_ERR_INVALID,
                    "left_window_size is -2");
    op_free_all(in, 7);
}

/* dnnl's kernel declines what it does not implement, so that ref runs it. */
Test(ref_onnx_c, attention_dnnl_declines_new_inputs)
{
    need_dnnl();
    d5_tensor in[7], y;
    attention_inputs(in);
    in[6] = ti64(1, SHAPE(2), IVALS(2, 3));
    cr_assert_eq(try_op("Attention", "dnnl", in, 7, NULL, &y, 1), D5_ERR_UNSUPPORTED);
    cr_assert(strstr(d5_last_error(), "nonpad_kv_seqlen"), "%s", d5_last_error());
    cr_assert_eq(try_op("Attention", "dnnl", in, 3, ATTRS(attr_int("left_window_size", 1)), &y, 1),
                 D5_ERR_UNSUPPORTED);
    cr_assert(strstr(d5_last_error(), "sliding window"), "%s", d5_last_error());
    op_free_all(in, 3);
    d5_tensor_free(&in[6]);
}

Test(ref_onnx_c, attention_new_inputs_gradient)
{
    d5_tensor in[7], given[7];
    d5_tensor_desc d[7];
    attention_inputs(in);
    in[3] = tf32(4, SHAPE(1, 1, 2, 3), NULL); /* a float mask, which gets a gradient */
    in[6] = ti64(1, SHAPE(2), IVALS(2, 3));
    descs_of(in, 7, d);
    memset(given, 0, sizeof given);
    given[6] = in[6];
    expect_gradient("Attention", d, 7, given, ATTRS(attr_int("is_causal", 1)), 1);
    expect_gradient("Attention", d, 7, given,
                    ATTRS(attr_int("left_window_size", 0), attr_int("right_window_size", 1),
                          attr_int("__opset", 24)),
                    4); /* opset 24 allows the present outputs with nonpad_kv_seqlen */
    op_free_all(in, 4);
    d5_tensor_free(&in[6]);
}

/* ---- RotaryEmbedding ---- */

Test(ref_onnx_c, rotary_embedding_values)
{
    float x[16], c[6], s[6];
    for (int i = 0; i < 16; i++) x[i] = (float)i / 4 - 1;
    for (int i = 0; i < 6; i++) c[i] = cosf((float)i / 3), s[i] = sinf((float)i / 3);
    /* 4-d X [1, 2 heads, 2, 4], caches [3, 2] read at positions 1 and 0. */
    d5_tensor in[4] = {tf32(4, SHAPE(1, 2, 2, 4), x), tf32(2, SHAPE(3, 2), c),
                       tf32(2, SHAPE(3, 2), s), ti64(2, SHAPE(1, 2), IVALS(1, 0))};
    expect_output("RotaryEmbedding", in, 4, NULL, 1, 0,
                  VALS(-0.476702, -0.194859, -1.01131, -0.766179, 0, -0.00915679, 0.5, 0.790516,
                       -0.141667, -0.797196, 1.7972, 1.99737, 2, 1.22637, 2.5, 3.33482),
                  16, 1e-5);
    op_free_all(in, 4);
    /* 3-d X [1, 2, 2 heads * 6], the first 4 of each head rotated in pairs
     * of neighbours, caches [1, 2, 2] without position_ids. */
    float x3[24], c3[4], s3[4];
    for (int i = 0; i < 24; i++) x3[i] = (float)i / 8 - 1;
    for (int i = 0; i < 4; i++)
        c3[i] = cosf((float)i / 2 + 0.3f), s3[i] = sinf((float)i / 2 + 0.3f);
    d5_tensor in3[3] = {tf32(3, SHAPE(1, 2, 12), x3), tf32(3, SHAPE(1, 2, 2), c3),
                        tf32(3, SHAPE(1, 2, 2), s3)};
    expect_output("RotaryEmbedding", in3, 3,
                  ATTRS(attr_int("num_heads", 2), attr_int("rotary_embedding_dim", 4),
                        attr_int("interleaved", 1)),
                  1, 0,
                  VALS(-0.696756, -1.13144, -0.0741825, -0.973459, -0.5, -0.375, -0.201894,
                       -0.193297, -0.0896695, 0.0870883, 0.25, 0.375, -0.468474, 0.648966, -1.02252,
                       0.531584, 1, 1.125, -0.990519, 1.57226, -1.92331, 1.09157, 1.75, 1.875),
                  24, 1e-5);
    op_free_all(in3, 3);
}

Test(ref_onnx_c, rotary_embedding_errors)
{
    d5_tensor in[4] = {tf32(3, SHAPE(1, 2, 12), NULL), tf32(2, SHAPE(4, 3), NULL),
                       tf32(2, SHAPE(4, 3), NULL), ti64(2, SHAPE(1, 2), IVALS(0, 4))};
    op_expect_fails("RotaryEmbedding", in, 4, NULL, 1, D5_ERR_INVALID, "num_heads");
    op_expect_fails("RotaryEmbedding", in, 4,
                    ATTRS(attr_int("num_heads", 2), attr_int("rotary_embedding_dim", 5)), 1,
                    D5_ERR_INVALID, "rotary_embedding_dim is 5");
    op_expect_fails("RotaryEmbedding", in, 4, ATTRS(attr_int("num_heads", 3)), 1, D5_ERR_SHAPE,
                    "cos_cache has shape [4,3]");
    expect_run_fails("RotaryEmbedding", in, 4, ATTRS(attr_int("num_heads", 2)), 1, D5_ERR_RANGE,
                     "position_ids[0, 1] is 4");
    op_expect_fails("RotaryEmbedding", in, 3, ATTRS(attr_int("num_heads", 2)), 1, D5_ERR_SHAPE,
                    "3-d without position_ids");
    op_free_all(in, 4);
}

Test(ref_onnx_c, rotary_embedding_gradient)
{
    d5_tensor pos = ti64(2, SHAPE(2, 3), IVALS(0, 2, 1, 4, 4, 3));
    d5_tensor_desc d[4] = {op_fdesc(4, SHAPE(2, 2, 3, 6)), op_fdesc(2, SHAPE(5, 2)),
                           op_fdesc(2, SHAPE(5, 2)), pos.desc};
    d5_tensor given[4] = {NONE, NONE, NONE, pos};
    given[0].data = given[1].data = given[2].data = NULL;
    expect_gradient("RotaryEmbedding", d, 4, given, ATTRS(attr_int("rotary_embedding_dim", 4)), 1);
    expect_gradient("RotaryEmbedding", d, 4, given,
                    ATTRS(attr_int("rotary_embedding_dim", 4), attr_int("interleaved", 1)), 1);
    d5_tensor_free(&pos);
}

/* ---- TensorScatter ---- */

Test(ref_onnx_c, tensor_scatter_values)
{
    /* Cache [2, 4, 1] of zeros, update [2, 2, 1] = 1..4 along axis 1 (-2). */
    d5_tensor in[3] = {tf32(3, SHAPE(2, 4, 1), NULL), tf32(3, SHAPE(2, 2, 1), VALS(1, 2, 3, 4)),
                       ti64(1, SHAPE(2), IVALS(1, 3))};
    expect_output("TensorScatter", in, 2, NULL, 1, 0, VALS(1, 2, 0, 0, 3, 4, 0, 0), 8, 0);
    expect_output("TensorScatter", in, 3, ATTRS(attr_string("mode", "circular")), 1, 0,
                  VALS(0, 1, 2, 0, 4, 0, 0, 3), 8, 0);
    expect_run_fails("TensorScatter", in, 3, NULL, 1, D5_ERR_RANGE, "write_indices[1] is 3");
    op_free_all(in, 3);
    /* Axis 2 of [1, 2, 3, 1]; the dims after the axis are copied whole. */
    d5_tensor c[3] = {tf32(4, SHAPE(1, 2, 3, 1), VALS(9, 9, 9, 9, 9, 9)),
                      tf32(4, SHAPE(1, 2, 1, 1), VALS(5, 6)), ti64(1, SHAPE(1), IVALS(2))};
    expect_output("TensorScatter", c, 3, ATTRS(attr_int("axis", 2)), 1, 0, VALS(9, 9, 5, 9, 9, 6),
                  6, 0);
    op_free_all(c, 3);
}

/* Bytes are copied: int64 values beyond 2^53 stay exact. */
Test(ref_onnx_c, tensor_scatter_int64_exact)
{
    const int64_t big = ((int64_t)1 << 60) + 1;
    d5_tensor in[3] = {ti64(2, SHAPE(1, 3), IVALS(big, big + 2, big + 4)),
                       ti64(2, SHAPE(1, 1), IVALS(-big)), ti64(1, SHAPE(1), IVALS(1))};
    d5_tensor y;
    run_op("TensorScatter", "ref", in, 3, ATTRS(attr_int("axis", 1)), &y, 1);
    const int64_t *v = y.data;
    cr_assert(v[0] == big && v[1] == -big && v[2] == big + 4, "%lld %lld %lld", (long long)v[0],
              (long long)v[1], (long long)v[2]);
    d5_tensor_free(&y);
    op_free_all(in, 3);
}

Test(ref_onnx_c, tensor_scatter_errors)
{
    d5_tensor in[3] = {tf32(3, SHAPE(2, 4, 3), NULL), tf32(3, SHAPE(2, 5, 3), NULL),
                       ti64(1, SHAPE(3), IVALS(0, 0, 0))};
    op_expect_fails("TensorScatter", in, 2, NULL, 1, D5_ERR_SHAPE, "update has shape [2,5,3]");
    op_expect_fails("TensorScatter", in, 2, ATTRS(attr_int("axis", 0)), 1, D5_ERR_INVALID,
                    "the batch axis");
    d5_tensor_free(&in[1]);
    in[1] = tf32(3, SHAPE(2, 2, 3), NULL);
    op_expect_fails("TensorScatter", in, 2, ATTRS(attr_string("mode", "ring")), 1, D5_ERR_INVALID,
                    "mode is \"ring\"");
    op_expect_fails("TensorScatter", in, 3, NULL, 1, D5_ERR_INVALID, "write_indices is int64[3]");
    op_free_all(in, 3);
}

Test(ref_onnx_c, tensor_scatter_gradient)
{
    d5_tensor w = ti64(1, SHAPE(2), IVALS(3, 1));
    d5_tensor_desc d[3] = {op_fdesc(3, SHAPE(2, 5, 2)), op_fdesc(3, SHAPE(2, 3, 2)), w.desc};
    d5_tensor given[3] = {NONE, NONE, w};
    given[0].data = given[1].data = NULL;
    expect_gradient("TensorScatter", d, 3, given, ATTRS(attr_string("mode", "circular")), 1);
    expect_gradient("TensorScatter", d, 2, NULL, NULL, 1);
    d5_tensor_free(&w);
}

/* ---- LinearAttention ---- */

/* B = 1, T = 3, 2 query heads and 1 KV head of dk = dv = 2: query, key,
 * value, past_state, decay per key dimension, decay per head, beta. */
static void linear_inputs(d5_tensor *t)
{
    t[0] = tf32(3, SHAPE(1, 3, 4), VALS(0.5, -0.25, 1, 0.5, 0.25, 0.5, -0.5, 1, 1, 0, 0.5, -0.5));
    t[1] = tf32(3, SHAPE(1, 3, 2), VALS(0.6, 0.8, 1, 0, 0, 1));
    t[2] = tf32(3, SHAPE(1, 3, 2), VALS(1, 2, -1, 0.5, 0.5, -2));
    t[3] = tf32(4, SHAPE(1, 1, 2, 2), VALS(0.1, -0.2, 0.3, 0.4));
    t[4] = tf32(3, SHAPE(1, 3, 2), VALS(-0.1, -0.2, -0.3, 0, -0.5, -0.1));
    t[5] = tf32(3, SHAPE(1, 3, 1), VALS(-0.2, -0.4, -0.1));
    t[6] = tf32(3, SHAPE(1, 3, 1), VALS(0.5, 0.9, 0.1));
}

#define HEADS attr_int("q_num_heads", 2), attr_int("kv_num_heads", 1)

Test(ref_onnx_c, linear_attention_values)
{
    d5_tensor t[7];
    linear_inputs(t);
    d5_tensor in[6] = {t[0], t[1], t[2], NONE, NONE, NONE};
    const d5_attrs *lin =
        ATTRS(HEADS, attr_string("update_rule", "linear"), attr_float("scale", 0.5));
    expect_output("LinearAttention", in, 3, lin, 2, 0,
                  VALS(0.05, 0.1, 0.5, 1, 0.15, 0.6125, 0.5, 0.375, -0.2, 0.85, -0.425, 0.525), 12,
                  1e-6);
    expect_output("LinearAttention", in, 3, lin, 2, 1, VALS(-0.4, 1.7, 1.3, -0.4), 4, 1e-6);
    in[3] = t[3];
    in[4] = t[4];
    const d5_attrs *gated = ATTRS(HEADS, attr_string("update_rule", "gated"));
    expect_output("LinearAttention", in, 5, gated, 2, 0,
                  VALS(0.0592818, 0.0195467, 0.857928, 1.40204, 0.283331, 0.903312, 0.912067,
                       0.919262, -0.209499, 0.538212, -0.616028, 0.359592),
                  12, 1e-5);
    expect_output("LinearAttention", in, 5, gated, 2, 1,
                  VALS(-0.296276, 0.761146, 1.44612, -0.255933), 4, 1e-5);
    in[4] = NONE;
    in[5] = t[6];
    const d5_attrs *delta = ATTRS(HEADS, attr_string("update_rule", "delta"));
    expect_output("LinearAttention", in, 6, delta, 2, 0,
                  VALS(0.00707107, -0.0777817, 0.424264, 0.636396, 0.051442, 0.48154, 0.71736,
                       0.62084, -0.614476, 0.34224, -0.50947, -0.114551),
                  12, 1e-5);
    expect_output("LinearAttention", in, 6, delta, 2, 1, VALS(-0.869, 0.484, 0.572, 0.808), 4,
                  1e-5);
    in[4] = t[5]; /* the default rule, gated_delta, with a decay per head */
    expect_output("LinearAttention", in, 6, ATTRS(HEADS), 2, 0,
                  VALS(0.0121981, -0.0508646, 0.411446, 0.649214, -0.0257234, 0.335823, 0.570342,
                       0.335098, -0.562617, 0.304521, -0.404627, 0.0180096),
                  12, 1e-5);
    expect_output("LinearAttention", in, 6, ATTRS(HEADS), 2, 1,
                  VALS(-0.795661, 0.430657, 0.348798, 0.379719), 4, 1e-5);
    op_free_all(t, 7);
}

Test(ref_onnx_c, linear_attention_errors)
{
    d5_tensor t[7];
    linear_inputs(t);
    d5_tensor in[6] = {t[0], t[1], t[2], NONE, NONE, t[6]};
    op_expect_fails("LinearAttention", in, 6, ATTRS(attr_int("q_num_heads", 2)), 1, D5_ERR_INVALID,
                    "q_num_heads (2) and kv_num_heads (0)");
    op_expect_fails("LinearAttention", in, 6, ATTRS(HEADS), 1, D5_ERR_INVALID,
                    "update_rule gated_delta requires input decay");
    op_expect_fails("LinearAttention", in, 6, ATTRS(HEADS, attr_string("update_rule", "linear")), 1,
                    D5_ERR_INVALID, "update_rule linear forbids input beta");
    op_expect_fails("LinearAttention", in, 6, ATTRS(HEADS, attr_string("update_rule", "fast")), 1,
                    D5_ERR_INVALID, "update_rule is \"fast\"");
    in[3] = t[4]; /* [1, 3, 2] as past_state */
    op_expect_fails("LinearAttention", in, 6, ATTRS(HEADS, attr_string("update_rule", "delta")), 1,
                    D5_ERR_SHAPE, "past_state has shape [1,3,2]");
    in[3] = NONE;
    in[4] = t[0]; /* [1, 3, 4]: neither 1 nor 2 per token */
    op_expect_fails("LinearAttention", in, 6, ATTRS(HEADS), 1, D5_ERR_SHAPE,
                    "decay has shape [1,3,4]");
    op_free_all(t, 7);
}

Test(ref_onnx_c, linear_attention_gradient)
{
    /* Two batches, 4 query heads on 2 KV heads, dk = 3, dv = 2, T = 4. */
    d5_tensor_desc d[6] = {op_fdesc(3, SHAPE(2, 4, 12)), op_fdesc(3, SHAPE(2, 4, 6)),
                           op_fdesc(3, SHAPE(2, 4, 4)),  op_fdesc(4, SHAPE(2, 2, 3, 2)),
                           op_fdesc(3, SHAPE(2, 4, 6)),  op_fdesc(3, SHAPE(2, 4, 2))};
    expect_gradient("LinearAttention", d, 6, NULL,
                    ATTRS(attr_int("q_num_heads", 4), attr_int("kv_num_heads", 2)), 2);
    d[4] = op_fdesc(3, SHAPE(2, 4, 2)); /* a decay per head */
    d[5] = op_fdesc(3, SHAPE(2, 4, 1)); /* one beta for both heads */
    expect_gradient("LinearAttention", d, 6, NULL,
                    ATTRS(attr_int("q_num_heads", 4), attr_int("kv_num_heads", 2)), 2);
    d5_tensor_desc lin[4] = {d[0], d[1], d[2], d[3]};
    expect_gradient("LinearAttention", lin, 4, NULL,
                    ATTRS(attr_int("q_num_heads", 4), attr_int("kv_num_heads", 2),
                          attr_string("update_rule", "linear")),
                    2);
}

/* ---- CausalConvWithState ---- */

Test(ref_onnx_c, causal_conv_values)
{
    /* B = 1, C = 2, L = 3, k = 3. */
    d5_tensor in[4] = {tf32(3, SHAPE(1, 2, 3), VALS(1, 2, 3, -1, 0.5, 2)),
                       tf32(3, SHAPE(2, 1, 3), VALS(0.5, -1, 2, 1, 0.25, -0.5)),
                       tf32(1, SHAPE(2), VALS(0.1, -0.2)),
                       tf32(3, SHAPE(1, 2, 2), VALS(4, 5, 0, -3))};
    expect_output("CausalConvWithState", in, 4, NULL, 2, 0,
                  VALS(-0.9, 5.6, 4.6, -0.45, -3.7, -2.075), 6, 1e-6);
    expect_output("CausalConvWithState", in, 4, NULL, 2, 1, VALS(2, 3, 0.5, 2), 4, 0);
    d5_tensor two[4] = {in[0], in[1], NONE, NONE};
    expect_output("CausalConvWithState", two, 2, ATTRS(attr_string("activation", "silu")), 2, 0,
                  VALS(1.76159, 2.85772, 4.45056, 0.31123, -0.18877, -0.249308), 6, 1e-5);
    /* L = 1 < k - 1: the new state keeps the last old value. */
    d5_tensor one[4] = {tf32(3, SHAPE(1, 2, 1), VALS(1, -1)), in[1], NONE, in[3]};
    expect_output("CausalConvWithState", one, 4, ATTRS(attr_string("activation", "swish")), 2, 1,
                  VALS(5, 1, -3, -1), 4, 0);
    expect_output("CausalConvWithState", one, 4, NULL, 2, 0, VALS(-1, -0.25), 2, 1e-6);
    d5_tensor_free(&one[0]);
    op_free_all(in, 4);
}

Test(ref_onnx_c, causal_conv_errors)
{
    d5_tensor in[4] = {tf32(3, SHAPE(1, 2, 3), NULL), tf32(3, SHAPE(2, 1, 3), NULL),
                       tf32(1, SHAPE(3), NULL), tf32(3, SHAPE(1, 2, 3), NULL)};
    op_expect_fails("CausalConvWithState", in, 2, ATTRS(attr_string("activation", "relu")), 1,
                    D5_ERR_INVALID, "activation is \"relu\"");
    op_expect_fails("CausalConvWithState", in, 3, NULL, 1, D5_ERR_SHAPE, "bias has shape [3]");
    d5_tensor with_state[4] = {in[0], in[1], NONE, in[3]};
    op_expect_fails("CausalConvWithState", with_state, 4, NULL, 1, D5_ERR_SHAPE,
                    "past_state has shape [1,2,3]; expected [1, 2, 2]");
    op_expect_fails("CausalConvWithState", in + 1, 2, NULL, 1, D5_ERR_SHAPE,
                    "weight has shape [3]");
    op_free_all(in, 4);
}

Test(ref_onnx_c, causal_conv_gradient)
{
    d5_tensor_desc d[4] = {op_fdesc(3, SHAPE(2, 3, 5)), op_fdesc(3, SHAPE(3, 1, 4)),
                           op_fdesc(1, SHAPE(3)), op_fdesc(3, SHAPE(2, 3, 3))};
    expect_gradient("CausalConvWithState", d, 4, NULL, NULL, 2);
    expect_gradient("CausalConvWithState", d, 4, NULL, ATTRS(attr_string("activation", "silu")), 2);
    d[0] = op_fdesc(3, SHAPE(2, 3, 2)); /* shorter than the state */
    expect_gradient("CausalConvWithState", d, 4, NULL, NULL, 2);
}
