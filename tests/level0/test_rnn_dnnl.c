/* The dnnl backend's recurrent operators: against PyTorch (rnn_reference.h)
 * and the ONNX node tests' data where oneDNN runs them, against the ref
 * backend (forward and backward) for every cell, direction and layout oneDNN
 * has, with weights given at run time and known at create; and the cases it
 * declines so that the ref backend runs them. */
#include "rnn_support.h"

#include <criterion/criterion.h>
#include <string.h>

TestSuite(rnn_dnnl, .init = need_dnnl, .timeout = 120);

#define NCASES ((int)(sizeof rnn_ref_cases / sizeof rnn_ref_cases[0]))

/* Every PyTorch case: run where oneDNN can, declined where it cannot. */
Test(rnn_dnnl, pytorch_cases)
{
    int ran = 0;
    for (int i = 0; i < NCASES; i++) {
        const rnn_ref_case *c = &rnn_ref_cases[i];
        int runs = !rnn_case_ragged(c) && c->clip == 0 && !c->input_forget &&
                   (!c->activations || strcmp(c->activations, "Relu") == 0);
        if (!runs) {
            cr_assert_eq(rnn_case_create_status(c, "dnnl"), D5_ERR_UNSUPPORTED, "%s", c->name);
            continue;
        }
        rnn_check_case(c, "dnnl", D5_F32, 1e-4);
        ran++;
    }
    cr_assert_geq(ran, 5);
}

Test(rnn_dnnl, onnx_node_tests)
{
    rnn_check_onnx_node_tests("dnnl");
}

/* ---- Against ref on random inputs ---- */

typedef struct cfg {
    const char *op;
    int64_t T, N, I, H, D, layout;
    int b, h0, c0, p, lens; /* the optional inputs given (lens: all seq_length) */
} cfg;

/* Inputs uniform in [-1, 1], weights (W, R, P) in [-scale, scale]. */
static int32_t inputs_scaled(const cfg *c, d5_tensor_desc *in, d5_tensor *x, uint64_t seed,
                             double scale)
{
    int64_t G = strcmp(c->op, "RNN") == 0 ? 1 : strcmp(c->op, "GRU") == 0 ? 3 : 4;
    int64_t st[3] = {c->layout ? c->N : c->D, c->layout ? c->D : c->N, c->H};
    int32_t nin = G == 4 ? 8 : 6;
    memset(in, 0, 8 * sizeof *in);
    memset(x, 0, 8 * sizeof *x);
    in[0] = op_fdesc(3, c->layout ? SHAPE(c->N, c->T, c->I) : SHAPE(c->T, c->N, c->I));
    in[1] = op_fdesc(3, SHAPE(c->D, G * c->H, c->I));
    in[2] = op_fdesc(3, SHAPE(c->D, G * c->H, c->H));
    if (c->b) in[3] = op_fdesc(2, SHAPE(c->D, 2 * G * c->H));
    if (c->lens) cr_assert_eq(d5_tensor_desc_make(D5_I32, 1, SHAPE(c->N), &in[4]), D5_OK);
    if (c->h0) in[5] = op_fdesc(3, st);
    if (G == 4 && c->c0) in[6] = op_fdesc(3, st);
    if (G == 4 && c->p) in[7] = op_fdesc(2, SHAPE(c->D, 3 * c->H));
    d5_rng rng;
    d5_rng_seed(&rng, seed);
    for (int32_t i = 0; i < nin; i++) {
        if (in[i].dtype == D5_DTYPE_INVALID) continue;
        cr_assert_eq(d5_tensor_alloc(&in[i], &x[i]), D5_OK);
        if (i != 4) {
            double r = i == 1 || i == 2 || i == 7 ? scale : 1;
            d5_tensor_fill_uniform(&x[i], &rng, -r, r);
            continue;
        }
        for (int64_t b = 0; b < c->N; b++) ((int32_t *)x[4].data)[b] = (int32_t)c->T;
    }
    return nin;
}

static int32_t inputs(const cfg *c, d5_tensor_desc *in, d5_tensor *x, uint64_t seed)
{
    return inputs_scaled(c, in, x, seed, 1);
}

/* Forward (every output) and backward (every input) of dnnl against ref. */
static void same_as_ref_scaled(const cfg *c, const d5_attrs *attrs, double scale)
{
    const d5_op_desc *cand, *ref;
    cr_assert_eq(d5_op_find(c->op, "dnnl", &cand), D5_OK, "%s", d5_last_error());
    cr_assert_eq(d5_op_find(c->op, "ref", &ref), D5_OK);
    d5_tensor_desc in[8];
    d5_tensor x[8];
    int32_t nin = inputs_scaled(c, in, x, 11, scale);
    int32_t nout = strcmp(c->op, "LSTM") == 0 ? 3 : 2;
    d5_check_params p = d5_check_default_params();
    d5_forward_check r;
    cr_assert_eq(d5_validate_forward(cand, ref, in, nin, x, attrs, nout, &p, &r), D5_OK, "%s: %s",
                 c->op, d5_last_error());
    for (int32_t k = 0; k < r.noutputs; k++)
        cr_assert(r.out[k].linf <= r.tol[k] && !r.out[k].nonfinite,
                  "%s forward, output %d: linf %.3g > %.3g at %lld (got %g want %g)", c->op, k,
                  r.out[k].linf, r.tol[k], (long long)r.out[k].worst, r.out[k].got, r.out[k].want);
    cr_assert_eq(d5_validate_backward(cand, ref, in, nin, x, attrs, nout, &p, &r), D5_OK, "%s: %s",
                 c->op, d5_last_error());
    for (int32_t i = 0; i < nin; i++)
        cr_assert(r.out[i].linf <= r.tol[i] && !r.out[i].nonfinite,
                  "%s gradient of input %d: linf %.3g > %.3g at %lld (got %g want %g)", c->op, i,
                  r.out[i].linf, r.tol[i], (long long)r.out[i].worst, r.out[i].got, r.out[i].want);
    cr_assert(r.passed);
    rnn_free_all(x, nin);
}

static void same_as_ref(const cfg *c, const d5_attrs *attrs)
{
    same_as_ref_scaled(c, attrs, 1);
}

static const d5_attrs *dir_layout(rnn_attrs *a, const char *dir, int64_t layout)
{
    memset(a, 0, sizeof *a);
    rnn_attr_add(a, attr_string("direction", dir));
    return rnn_attr_add(a, attr_int("layout", layout));
}

Test(rnn_dnnl, lstm_every_direction_and_layout)
{
    static const char *const dirs[3] = {"forward", "reverse", "bidirectional"};
    for (int d = 0; d < 3; d++)
        for (int64_t layout = 0; layout < 2; layout++) {
            cfg c = {"LSTM", 4, 3, 5, 6, d == 2 ? 2 : 1, layout, 1, 1, 1, 1, 1};
            rnn_attrs a;
            same_as_ref(&c, dir_layout(&a, dirs[d], layout));
        }
}

Test(rnn_dnnl, lstm_without_optional_inputs)
{
    cfg c = {"LSTM", 3, 2, 4, 5, 2, 0, 0, 0, 0, 0, 0};
    rnn_attrs a;
    same_as_ref(&c, dir_layout(&a, "bidirectional", 0));
    cfg h = {"LSTM", 3, 2, 4, 5, 1, 1, 1, 1, 0, 0, 0}; /* initial_h without initial_c */
    same_as_ref(&h, dir_layout(&a, "forward", 1));
}

Test(rnn_dnnl, gru_both_cells)
{
    static const char *const dirs[3] = {"forward", "reverse", "bidirectional"};
    for (int lbr = 0; lbr < 2; lbr++)
        for (int d = 0; d < 3; d++) {
            cfg c = {"GRU", 4, 3, 5, 6, d == 2 ? 2 : 1, d == 1, 1, 1, 0, 0, 0};
            rnn_attrs a;
            dir_layout(&a, dirs[d], d == 1);
            same_as_ref(&c, rnn_attr_add(&a, attr_int("linear_before_reset", lbr)));
        }
}

Test(rnn_dnnl, rnn_activations)
{
    static const char *const acts[4] = {"Tanh", "Relu", "Sigmoid", "LeakyRelu,LeakyRelu"};
    static const double alpha[2] = {0.3, 0.3};
    for (int k = 0; k < 4; k++) {
        cfg c = {"RNN", 4, 3, 5, 6, 2, k % 2, 1, 1, 0, 0, 0};
        rnn_attrs a;
        dir_layout(&a, "bidirectional", k % 2);
        rnn_attr_add(&a, attr_string("activations", acts[k]));
        same_as_ref(&c, rnn_attr_add(&a, (d5_attr){.name = "activation_alpha",
                                                   .type = D5_ATTR_FLOATS,
                                                   .floats = alpha,
                                                   .count = 2}));
    }
}

/* A size where the products dominate, with weights of the usual scale,
 * 1/sqrt(hidden): the backward pass of oneDNN agrees with ref's on every
 * input. (With weights in [-1, 1] the gates saturate, the gradients grow to
 * hundreds over 25 steps and float32 rounding alone moves them by 1e-3.) */
Test(rnn_dnnl, lstm_larger)
{
    cfg c = {"LSTM", 25, 16, 128, 128, 1, 0, 1, 1, 1, 0, 0};
    rnn_attrs a;
    same_as_ref_scaled(&c, dir_layout(&a, "forward", 0), 0.09);
}

/* Weights known at create are converted once; later calls use them. */
Test(rnn_dnnl, weights_known_at_create)
{
    cfg c = {"LSTM", 3, 2, 4, 5, 2, 0, 1, 1, 1, 1, 0};
    d5_tensor_desc in[8];
    d5_tensor x[8], y[2][3];
    int32_t nin = inputs(&c, in, x, 5);
    rnn_attrs a;
    const d5_attrs *attrs = dir_layout(&a, "bidirectional", 0);
    const char *backends[2] = {"ref", "dnnl"};
    for (int k = 0; k < 2; k++) {
        const d5_op_desc *desc;
        cr_assert_eq(d5_op_find("LSTM", backends[k], &desc), D5_OK);
        d5_tensor known[8];
        memcpy(known, x, sizeof known);
        known[0].data = NULL; /* X at run time, the weights at create */
        d5_op *op;
        cr_assert_eq(d5_op_create(desc, known, nin, attrs, 3, &op), D5_OK, "%s", d5_last_error());
        for (int j = 0; j < 3; j++)
            cr_assert_eq(d5_tensor_alloc(d5_op_output_desc(op, j), &y[k][j]), D5_OK);
        for (int rep = 0; rep < 2; rep++)
            cr_assert_eq(d5_op_forward(op, x, y[k]), D5_OK, "%s", d5_last_error());
        d5_op_free(op);
    }
    for (int j = 0; j < 3; j++) {
        d5_compare cmp;
        cr_assert_eq(d5_compare_tensors(&y[1][j], &y[0][j], &cmp), D5_OK);
        cr_assert_lt(cmp.linf, 1e-5, "output %d: linf %g", j, cmp.linf);
        d5_tensor_free(&y[0][j]);
        d5_tensor_free(&y[1][j]);
    }
    rnn_free_all(x, nin);
}

/* ---- What oneDNN cannot run is declined, for the ref backend to run ---- */

static void declined(const cfg *c, const d5_attrs *attrs, int lens_known, const char *text)
{
    const d5_op_desc *desc;
    cr_assert_eq(d5_op_find(c->op, "dnnl", &desc), D5_OK);
    d5_tensor_desc in[8];
    d5_tensor x[8];
    int32_t nin = inputs(c, in, x, 3);
    d5_tensor known[8];
    memcpy(known, x, sizeof known);
    for (int32_t i = 0; i < nin; i++)
        if (i != 4 || !lens_known) known[i].data = NULL;
    if (lens_known && c->lens) ((int32_t *)x[4].data)[0] = 1;
    d5_op *op = NULL;
    d5_status s = d5_op_create(desc, known, nin, attrs, 1, &op);
    cr_assert_eq(s, D5_ERR_UNSUPPORTED, "%s: %s (%s)", c->op, d5_status_name(s), d5_last_error());
    cr_assert(strstr(d5_last_error(), text), "'%s' lacks '%s'", d5_last_error(), text);
    /* ref runs it. */
    cr_assert_eq(d5_op_find(c->op, "ref", &desc), D5_OK);
    cr_assert_eq(d5_op_create(desc, known, nin, attrs, 1, &op), D5_OK, "%s", d5_last_error());
    d5_op_free(op);
    rnn_free_all(x, nin);
}

Test(rnn_dnnl, declines)
{
    cfg lstm = {"LSTM", 3, 2, 2, 3, 1, 0, 1, 1, 1, 0, 0};
    rnn_attrs a = {0};
    declined(&lstm, rnn_attr_add(&a, attr_float("clip", 2)), 0, "clip");
    memset(&a, 0, sizeof a);
    declined(&lstm, rnn_attr_add(&a, attr_int("input_forget", 1)), 0, "input_forget");
    memset(&a, 0, sizeof a);
    declined(&lstm, rnn_attr_add(&a, attr_string("activations", "Sigmoid,Tanh,Relu")), 0,
             "activation 'Relu'");
    cfg gru = {"GRU", 3, 2, 2, 3, 1, 0, 1, 1, 0, 0, 0};
    memset(&a, 0, sizeof a);
    declined(&gru, rnn_attr_add(&a, attr_string("activations", "HardSigmoid,Tanh")), 0,
             "activation 'HardSigmoid'");
    cfg rnn = {"RNN", 3, 2, 2, 3, 2, 0, 1, 1, 0, 0, 0};
    memset(&a, 0, sizeof a);
    rnn_attr_add(&a, attr_string("direction", "bidirectional"));
    declined(&rnn, rnn_attr_add(&a, attr_string("activations", "Tanh,Relu")), 0,
             "different activations");
    memset(&a, 0, sizeof a);
    rnn_attr_add(&a, attr_string("direction", "bidirectional"));
    declined(&rnn, rnn_attr_add(&a, attr_string("activations", "Softsign")), 0,
             "activation 'Softsign'");
    cfg lens = {"GRU", 3, 2, 2, 3, 1, 0, 1, 1, 0, 0, 1};
    declined(&lens, NULL, 0, "sequence_lens is not known at create");
    declined(&lens, NULL, 1, "sequence_lens[0] is 1, not seq_length 3");
}

Test(rnn_dnnl, declines_float64)
{
    const d5_op_desc *desc;
    cr_assert_eq(d5_op_find("RNN", "dnnl", &desc), D5_OK);
    d5_tensor_desc in[3];
    cr_assert_eq(d5_tensor_desc_make(D5_F64, 3, SHAPE(2, 1, 2), &in[0]), D5_OK);
    cr_assert_eq(d5_tensor_desc_make(D5_F64, 3, SHAPE(1, 3, 2), &in[1]), D5_OK);
    cr_assert_eq(d5_tensor_desc_make(D5_F64, 3, SHAPE(1, 3, 3), &in[2]), D5_OK);
    d5_op *op = NULL;
    cr_assert_eq(d5_op_create_desc(desc, in, 3, NULL, 1, &op), D5_ERR_UNSUPPORTED);
    cr_assert(strstr(d5_last_error(), "float32 only"), "%s", d5_last_error());
}
