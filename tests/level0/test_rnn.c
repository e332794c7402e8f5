/* The ref backend's recurrent operators RNN, GRU and LSTM: outputs and input
 * gradients against PyTorch (rnn_reference.h: torch.nn and the ONNX equations
 * with autograd), the ONNX node tests' data, gradients against central finite
 * differences in float64 for every attribute, and the errors of bad inputs. */
#include "rnn_support.h"

#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

TestSuite(rnn_ref, .timeout = 120);

#define NCASES ((int)(sizeof rnn_ref_cases / sizeof rnn_ref_cases[0]))

Test(rnn_ref, pytorch_cases_float64)
{
    for (int i = 0; i < NCASES; i++) rnn_check_case(&rnn_ref_cases[i], "ref", D5_F64, 1e-9);
}

Test(rnn_ref, pytorch_cases_float32)
{
    for (int i = 0; i < NCASES; i++) rnn_check_case(&rnn_ref_cases[i], "ref", D5_F32, 2e-5);
}

/* ---- The ONNX node tests (libonnx-testdata), run on the operator directly ---- */

Test(rnn_ref, onnx_node_tests)
{
    rnn_check_onnx_node_tests("ref");
}

/* ---- Gradients against finite differences ---- */

typedef struct cfg {
    const char *op;
    int64_t T, N, I, H, D, layout;
    int b, h0, c0, p;    /* the optional inputs given */
    const int32_t *lens; /* NULL: none */
} cfg;

/* The inputs' descriptors (float) and the given values (sequence_lens). */
static int32_t inputs(const cfg *c, d5_tensor_desc *in, d5_tensor *given)
{
    int64_t G = strcmp(c->op, "RNN") == 0 ? 1 : strcmp(c->op, "GRU") == 0 ? 3 : 4;
    int64_t st[3] = {c->layout ? c->N : c->D, c->layout ? c->D : c->N, c->H};
    memset(in, 0, 8 * sizeof *in);
    memset(given, 0, 8 * sizeof *given);
    in[0] = op_fdesc(3, c->layout ? SHAPE(c->N, c->T, c->I) : SHAPE(c->T, c->N, c->I));
    in[1] = op_fdesc(3, SHAPE(c->D, G * c->H, c->I));
    in[2] = op_fdesc(3, SHAPE(c->D, G * c->H, c->H));
    if (c->b) in[3] = op_fdesc(2, SHAPE(c->D, 2 * G * c->H));
    if (c->lens) {
        cr_assert_eq(d5_tensor_desc_make(D5_I32, 1, SHAPE(c->N), &in[4]), D5_OK);
        cr_assert_eq(d5_tensor_alloc(&in[4], &given[4]), D5_OK);
        memcpy(given[4].data, c->lens, (size_t)c->N * sizeof(int32_t));
    }
    if (c->h0) in[5] = op_fdesc(3, st);
    if (G < 4) return 6;
    if (c->c0) in[6] = op_fdesc(3, st);
    if (c->p) in[7] = op_fdesc(2, SHAPE(c->D, 3 * c->H));
    return 8;
}

static void gradient(const cfg *c, const d5_attrs *attrs, int32_t nout)
{
    d5_tensor_desc in[8];
    d5_tensor given[8];
    int32_t nin = inputs(c, in, given);
    expect_gradient(c->op, in, nin, given, attrs, nout);
    d5_tensor_free(&given[4]);
}

/* direction "reverse", layout 1 and clip, with the flag of one operator
 * (LSTM's input_forget, GRU's linear_before_reset) set. */
static void reverse_layout1_clip(rnn_attrs *a, const char *flag, double clip)
{
    rnn_attr_add(a, attr_string("direction", "reverse"));
    rnn_attr_add(a, attr_int("layout", 1));
    rnn_attr_add(a, attr_int(flag, 1));
    rnn_attr_add(a, attr_float("clip", clip));
}

static const int32_t lens_302[3] = {3, 0, 2}, lens_23[2] = {2, 3}, lens_31[2] = {3, 1};

Test(rnn_ref, lstm_gradient_bidirectional_peepholes_lengths)
{
    cfg c = {"LSTM", 3, 3, 2, 3, 2, 0, 1, 1, 1, 1, lens_302};
    rnn_attrs a = {0};
    rnn_attr_add(&a, attr_string("direction", "bidirectional"));
    gradient(&c, &a.attrs, 3);
}

Test(rnn_ref, lstm_gradient_input_forget_clip_reverse_layout1)
{
    cfg c = {"LSTM", 3, 2, 3, 2, 1, 1, 1, 1, 1, 1, lens_23};
    rnn_attrs a = {0};
    reverse_layout1_clip(&a, "input_forget", 0.9);
    gradient(&c, &a.attrs, 3);
}

Test(rnn_ref, lstm_gradient_activations)
{
    static const double alpha[3] = {0.8, 0.5, 1.3}, beta[2] = {1.2, 0.1};
    cfg c = {"LSTM", 3, 2, 2, 3, 1, 0, 1, 1, 1, 1, NULL};
    rnn_attrs a = {0};
    rnn_attr_add(&a, attr_string("activations", "ScaledTanh, Affine, Elu"));
    rnn_attr_add(&a, attr_floats("activation_alpha", alpha, 3));
    rnn_attr_add(&a, attr_floats("activation_beta", beta, 2));
    gradient(&c, &a.attrs, 3);
}

Test(rnn_ref, gru_gradient_bidirectional_lengths)
{
    cfg c = {"GRU", 3, 2, 3, 3, 2, 0, 1, 1, 0, 0, lens_31};
    rnn_attrs a = {0};
    rnn_attr_add(&a, attr_string("direction", "bidirectional"));
    gradient(&c, &a.attrs, 2);
}

Test(rnn_ref, gru_gradient_linear_before_reset_clip_layout1)
{
    cfg c = {"GRU", 3, 2, 2, 3, 1, 1, 1, 1, 0, 0, NULL};
    rnn_attrs a = {0};
    reverse_layout1_clip(&a, "linear_before_reset", 0.8);
    gradient(&c, &a.attrs, 2);
}

Test(rnn_ref, gru_gradient_activations)
{
    cfg c = {"GRU", 3, 2, 2, 2, 2, 0, 0, 1, 0, 0, NULL};
    rnn_attrs a = {0};
    rnn_attr_add(&a, attr_string("direction", "bidirectional"));
    rnn_attr_add(&a, attr_string("activations", "Softsign,Softplus,Sigmoid,Tanh"));
    gradient(&c, &a.attrs, 2);
}

Test(rnn_ref, rnn_gradient_leaky_relu_layout1_lengths)
{
    static const double alpha[1] = {0.2};
    cfg c = {"RNN", 3, 2, 2, 3, 2, 1, 1, 1, 0, 0, lens_23};
    rnn_attrs a = {0};
    rnn_attr_add(&a, attr_string("direction", "bidirectional"));
    rnn_attr_add(&a, attr_int("layout", 1));
    rnn_attr_add(&a, attr_string("activations", "LeakyRelu,Tanh"));
    rnn_attr_add(&a, attr_floats("activation_alpha", alpha, 1));
    gradient(&c, &a.attrs, 2);
}

Test(rnn_ref, rnn_gradient_y_only_without_bias)
{
    cfg c = {"RNN", 4, 2, 3, 2, 1, 0, 0, 0, 0, 0, NULL};
    gradient(&c, NULL, 1);
}

/* ---- Shapes, costs and errors ---- */

Test(rnn_ref, output_shapes_and_flops)
{
    d5_tensor_desc in[8];
    d5_tensor given[8];
    cfg c = {"LSTM", 5, 3, 4, 6, 2, 1, 1, 1, 1, 1, NULL};
    int32_t nin = inputs(&c, in, given);
    rnn_attrs a = {0};
    rnn_attr_add(&a, attr_string("direction", "bidirectional"));
    rnn_attr_add(&a, attr_int("layout", 1));
    const d5_op_desc *desc;
    cr_assert_eq(d5_op_find("LSTM", "ref", &desc), D5_OK);
    d5_op *op;
    cr_assert_eq(d5_op_create_desc(desc, in, nin, &a.attrs, 3, &op), D5_OK, "%s", d5_last_error());
    const d5_tensor_desc *y = d5_op_output_desc(op, 0), *yh = d5_op_output_desc(op, 1);
    cr_assert_eq(y->ndim, 4);
    cr_assert(y->shape[0] == 3 && y->shape[1] == 5 && y->shape[2] == 2 && y->shape[3] == 6);
    cr_assert(yh->ndim == 3 && yh->shape[0] == 3 && yh->shape[1] == 2 && yh->shape[2] == 6);
    double flops, bytes;
    d5_op_cost(op, &flops, &bytes);
    /* 2 directions x 5 steps x 3 rows: 2 * 4 gates * 6 * (4 + 6) products + 16 * 6 */
    cr_assert_float_eq(flops, 30.0 * (2 * 4 * 6 * 10 + 16 * 6), 1e-9);
    d5_op_free(op);
}

static void fails(const cfg *c, const d5_attrs *attrs, d5_status status, const char *text)
{
    d5_tensor_desc in[8];
    d5_tensor given[8], t[8];
    int32_t nin = inputs(c, in, given);
    memset(t, 0, sizeof t);
    for (int32_t i = 0; i < nin; i++) {
        if (in[i].dtype == D5_DTYPE_INVALID) continue;
        if (i == 4) {
            t[4] = given[4];
            continue;
        }
        cr_assert_eq(d5_tensor_alloc(&in[i], &t[i]), D5_OK);
        memset(t[i].data, 0, (size_t)d5_tensor_desc_numel(&in[i]) * 4);
    }
    op_expect_fails(c->op, t, nin, attrs, 1, status, text);
    rnn_free_all(t, nin);
}

Test(rnn_ref, bad_attributes)
{
    cfg c = {"LSTM", 3, 2, 2, 3, 1, 0, 1, 1, 1, 0, NULL};
    rnn_attrs a = {0};
    rnn_attr_add(&a, attr_string("activations", "Sigmoid,Tanh,Cosh"));
    fails(&c, &a.attrs, D5_ERR_INVALID, "activation 'Cosh' is none of");
    memset(&a, 0, sizeof a);
    rnn_attr_add(&a, attr_string("activations", "Sigmoid,Tanh"));
    fails(&c, &a.attrs, D5_ERR_INVALID, "2 activations given, expected 3");
    memset(&a, 0, sizeof a);
    rnn_attr_add(&a, attr_string("direction", "sideways"));
    fails(&c, &a.attrs, D5_ERR_INVALID, "direction is 'sideways'");
    memset(&a, 0, sizeof a);
    rnn_attr_add(&a, attr_float("clip", -1));
    fails(&c, &a.attrs, D5_ERR_INVALID, "clip is -1");
    memset(&a, 0, sizeof a);
    rnn_attr_add(&a, attr_int("hidden_size", 4));
    fails(&c, &a.attrs, D5_ERR_SHAPE, "hidden_size is 4 but R has shape");
    memset(&a, 0, sizeof a);
    rnn_attr_add(&a, attr_int("layout", 1));
    rnn_attr_add(&a, attr_int("__opset", 7));
    fails(&c, &a.attrs, D5_ERR_INVALID, "layout is an attribute of opset 14 and later");
    memset(&a, 0, sizeof a);
    rnn_attr_add(&a, attr_int("__opset", 1));
    fails(&c, &a.attrs, D5_ERR_UNSUPPORTED, "opset 1");
    memset(&a, 0, sizeof a);
    rnn_attr_add(&a, attr_string("direction", "bidirectional")); /* W has one direction */
    fails(&c, &a.attrs, D5_ERR_SHAPE, "input 1 (W) has shape [1,12,2], expected [2,12,2]");
}

Test(rnn_ref, bad_shapes_and_lengths)
{
    cfg c = {"GRU", 3, 2, 2, 3, 1, 0, 1, 1, 0, 0, NULL};
    /* B of the wrong size. */
    d5_tensor t[6];
    memset(t, 0, sizeof t);
    t[0] = tf32(3, SHAPE(3, 2, 2), NULL);
    t[1] = tf32(3, SHAPE(1, 9, 2), NULL);
    t[2] = tf32(3, SHAPE(1, 9, 3), NULL);
    t[3] = tf32(2, SHAPE(1, 9), NULL);
    op_expect_fails("GRU", t, 4, NULL, 1, D5_ERR_SHAPE,
                    "input 3 (B) has shape [1,9], expected [1,18]");
    d5_tensor_free(&t[3]);
    /* A length beyond seq_length, known at create. */
    static const int32_t bad[2] = {3, 4};
    cfg l = c;
    l.lens = bad;
    fails(&l, NULL, D5_ERR_INVALID, "sequence_lens[1] = 4 is outside [0, 3]");
    /* initial_h of layout 0 given to layout 1. */
    t[3] = tf32(2, SHAPE(1, 18), NULL);
    t[5] = tf32(3, SHAPE(1, 2, 3), NULL);
    rnn_attrs a = {0};
    rnn_attr_add(&a, attr_int("layout", 1));
    d5_tensor_free(&t[0]);
    t[0] = tf32(3, SHAPE(2, 3, 2), NULL);
    op_expect_fails("GRU", t, 6, &a.attrs, 1, D5_ERR_SHAPE,
                    "input 5 (initial_h) has shape [1,2,3], expected [2,1,3]");
    rnn_free_all(t, 6);
}

/* A length not known at create is checked when the operator runs. */
Test(rnn_ref, length_checked_at_forward)
{
    const d5_op_desc *desc;
    cr_assert_eq(d5_op_find("RNN", "ref", &desc), D5_OK);
    d5_tensor t[5];
    memset(t, 0, sizeof t);
    t[0] = tf32(3, SHAPE(2, 2, 1), VALS(1, 2, 3, 4));
    t[1] = tf32(3, SHAPE(1, 1, 1), VALS(0.5));
    t[2] = tf32(3, SHAPE(1, 1, 1), VALS(0.5));
    cr_assert_eq(d5_tensor_desc_make(D5_I32, 1, SHAPE(2), &t[4].desc), D5_OK);
    d5_op *op;
    cr_assert_eq(d5_op_create(desc, t, 5, NULL, 1, &op), D5_OK, "%s", d5_last_error());
    d5_tensor_desc lens = t[4].desc;
    cr_assert_eq(d5_tensor_alloc(&lens, &t[4]), D5_OK);
    ((int32_t *)t[4].data)[0] = 2;
    ((int32_t *)t[4].data)[1] = -1;
    d5_tensor y = tf32(4, SHAPE(2, 1, 2, 1), NULL);
    d5_status s = d5_op_forward(op, t, &y);
    cr_assert_eq(s, D5_ERR_INVALID, "%s: %s", d5_status_name(s), d5_last_error());
    cr_assert(strstr(d5_last_error(), "sequence_lens[1] = -1"), "%s", d5_last_error());
    /* Row 1 with length 0: its Y is 0 and its Y_h the initial state (0). */
    ((int32_t *)t[4].data)[1] = 0;
    cr_assert_eq(d5_op_forward(op, t, &y), D5_OK, "%s", d5_last_error());
    float *v = y.data; /* Y[t][0][b][0] */
    cr_assert_float_eq(v[0], tanhf(0.5f * 1), 1e-6);
    cr_assert_float_eq(v[1], 0, 0);
    cr_assert_float_eq(v[2], tanhf(0.5f * 3 + 0.5f * tanhf(0.5f)), 1e-6);
    cr_assert_float_eq(v[3], 0, 0);
    d5_op_free(op);
    d5_tensor_free(&y);
    rnn_free_all(t, 5);
}
