/* Helpers of the recurrent operators' tests; see rnn_support.h. */
#define _GNU_SOURCE
#include "rnn_support.h"

#include "d5/onnx.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef D5_ONNX_TESTDATA
#define D5_ONNX_TESTDATA "/usr/share/libonnx-testdata/data"
#endif

const d5_attrs *rnn_attr_add(rnn_attrs *a, d5_attr attr)
{
    cr_assert_lt(a->attrs.count, 12);
    a->items[a->attrs.count++] = attr;
    a->attrs.items = a->items;
    return &a->attrs;
}

const d5_attrs *rnn_case_attrs(const rnn_ref_case *c, rnn_attrs *a)
{
    memset(a, 0, sizeof *a);
    rnn_attr_add(a, attr_int("hidden_size", c->H));
    rnn_attr_add(a, attr_string("direction", c->direction));
    rnn_attr_add(a, attr_int("layout", c->layout));
    if (c->activations) rnn_attr_add(a, attr_string("activations", c->activations));
    if (c->nalpha) rnn_attr_add(a, attr_floats("activation_alpha", c->alpha, c->nalpha));
    if (c->nbeta) rnn_attr_add(a, attr_floats("activation_beta", c->beta, c->nbeta));
    if (c->clip > 0) rnn_attr_add(a, attr_float("clip", c->clip));
    if (strcmp(c->op, "GRU") == 0) rnn_attr_add(a, attr_int("linear_before_reset", c->lbr));
    if (strcmp(c->op, "LSTM") == 0) rnn_attr_add(a, attr_int("input_forget", c->input_forget));
    return &a->attrs;
}

static int64_t dirs(const rnn_ref_case *c)
{
    return strcmp(c->direction, "bidirectional") == 0 ? 2 : 1;
}

static int64_t gates(const rnn_ref_case *c)
{
    return strcmp(c->op, "RNN") == 0 ? 1 : strcmp(c->op, "GRU") == 0 ? 3 : 4;
}

/* A tensor of data type dt holding `values` (NULL: an omitted input). */
static d5_tensor make(d5_dtype dt, int32_t nd, const int64_t *shape, const double *values)
{
    d5_tensor t;
    memset(&t, 0, sizeof t);
    if (!values) return t;
    d5_tensor_desc d;
    cr_assert_eq(d5_tensor_desc_make(dt, nd, shape, &d), D5_OK);
    cr_assert_eq(d5_tensor_alloc(&d, &t), D5_OK);
    int64_t n = d5_tensor_desc_numel(&d);
    for (int64_t i = 0; i < n; i++) {
        if (dt == D5_F64)
            ((double *)t.data)[i] = values[i];
        else
            ((float *)t.data)[i] = (float)values[i];
    }
    return t;
}

static void state_shape(const rnn_ref_case *c, int64_t *s)
{
    s[0] = c->layout ? c->N : dirs(c);
    s[1] = c->layout ? dirs(c) : c->N;
    s[2] = c->H;
}

int32_t rnn_case_inputs(const rnn_ref_case *c, d5_dtype dt, d5_tensor *in)
{
    const int64_t D = dirs(c), G = gates(c), H = c->H;
    int64_t st[3];
    state_shape(c, st);
    int64_t x[3] = {c->layout ? c->N : c->T, c->layout ? c->T : c->N, c->I};
    in[0] = make(dt, 3, x, c->X);
    in[1] = make(dt, 3, SHAPE(D, G * H, c->I), c->W);
    in[2] = make(dt, 3, SHAPE(D, G * H, H), c->R);
    in[3] = make(dt, 2, SHAPE(D, 2 * G * H), c->B);
    memset(&in[4], 0, sizeof in[4]);
    if (c->lens) {
        d5_tensor_desc d;
        cr_assert_eq(d5_tensor_desc_make(D5_I32, 1, SHAPE(c->N), &d), D5_OK);
        cr_assert_eq(d5_tensor_alloc(&d, &in[4]), D5_OK);
        memcpy(in[4].data, c->lens, (size_t)c->N * sizeof(int32_t));
    }
    in[5] = make(dt, 3, st, c->h0);
    if (G != 4) return 6;
    in[6] = make(dt, 3, st, c->c0);
    in[7] = make(dt, 2, SHAPE(D, 3 * H), c->P);
    return 8;
}

void rnn_free_all(d5_tensor *t, int32_t n)
{
    for (int32_t i = 0; i < n; i++) d5_tensor_free(&t[i]);
}

int rnn_case_ragged(const rnn_ref_case *c)
{
    for (int64_t b = 0; c->lens && b < c->N; b++)
        if (c->lens[b] != c->T) return 1;
    return 0;
}

static double value(const d5_tensor *t, int64_t i)
{
    return t->desc.dtype == D5_F64 ? ((const double *)t->data)[i]
                                   : (double)((const float *)t->data)[i];
}

static void expect_close(const char *what, const char *name, const d5_tensor *got,
                         const double *want, double tol)
{
    int64_t n = d5_tensor_desc_numel(&got->desc);
    for (int64_t i = 0; i < n; i++) {
        double g = value(got, i), w = want[i];
        cr_assert(fabs(g - w) <= tol * (1 + fabs(w)), "%s: %s element %lld is %.12g, want %.12g",
                  name, what, (long long)i, g, w);
    }
}

d5_status rnn_case_create_status(const rnn_ref_case *c, const char *backend)
{
    const d5_op_desc *desc;
    cr_assert_eq(d5_op_find(c->op, backend, &desc), D5_OK, "%s", d5_last_error());
    d5_tensor in[8];
    int32_t nin = rnn_case_inputs(c, D5_F32, in);
    rnn_attrs a;
    d5_op *op = NULL;
    d5_status s = d5_op_create(desc, in, nin, rnn_case_attrs(c, &a), gates(c) == 4 ? 3 : 2, &op);
    d5_op_free(op);
    rnn_free_all(in, nin);
    return s;
}

void rnn_check_case(const rnn_ref_case *c, const char *backend, d5_dtype dt, double tol)
{
    const d5_op_desc *desc;
    cr_assert_eq(d5_op_find(c->op, backend, &desc), D5_OK, "%s", d5_last_error());
    d5_tensor in[8], out[3], gout[3], gin[8];
    memset(out, 0, sizeof out);
    memset(gout, 0, sizeof gout);
    memset(gin, 0, sizeof gin);
    int32_t nin = rnn_case_inputs(c, dt, in), nout = gates(c) == 4 ? 3 : 2;
    rnn_attrs a;
    d5_op *op = NULL;
    /* Only sequence_lens is known at create, as in a graph. */
    d5_tensor known[8];
    for (int32_t i = 0; i < nin; i++) {
        known[i] = in[i];
        if (i != 4) known[i].data = NULL;
    }
    cr_assert_eq(d5_op_create(desc, known, nin, rnn_case_attrs(c, &a), nout, &op), D5_OK,
                 "%s on %s: %s", c->name, backend, d5_last_error());
    for (int32_t k = 0; k < nout; k++)
        cr_assert_eq(d5_tensor_alloc(d5_op_output_desc(op, k), &out[k]), D5_OK);
    cr_assert_eq(d5_op_forward(op, in, out), D5_OK, "%s: %s", c->name, d5_last_error());
    const double *want[3] = {c->Y, c->Yh, c->Yc}, *w[3] = {c->wY, c->wYh, c->wYc};
    static const char *const outs[3] = {"Y", "Y_h", "Y_c"};
    for (int32_t k = 0; k < nout; k++) expect_close(outs[k], c->name, &out[k], want[k], tol);

    for (int32_t k = 0; k < nout; k++)
        gout[k] = make(dt, out[k].desc.ndim, out[k].desc.shape, w[k]);
    for (int32_t i = 0; i < nin; i++)
        if (i != 4 && in[i].data) cr_assert_eq(d5_tensor_alloc(&in[i].desc, &gin[i]), D5_OK);
    cr_assert_eq(d5_op_backward(op, gout, in, out, gin), D5_OK, "%s: %s", c->name, d5_last_error());
    const double *grads[8] = {c->dX, c->dW, c->dR, c->dB, NULL, c->dh0, c->dc0, c->dP};
    static const char *const names[8] = {"dX", "dW",         "dR",         "dB",
                                         "",   "dinitial_h", "dinitial_c", "dP"};
    for (int32_t i = 0; i < nin; i++)
        if (gin[i].data) expect_close(names[i], c->name, &gin[i], grads[i], tol);
    d5_op_free(op);
    rnn_free_all(in, nin);
    rnn_free_all(out, nout);
    rnn_free_all(gout, nout);
    rnn_free_all(gin, nin);
}

/* One node test (data/node/<test>): its nin inputs (input_k.pb, into slots
 * 0..nin-1) through `op` on `backend` with hidden_size `hidden` and `layout`;
 * output_k.pb is the operator's output outs[k] (nouts of them). */
/* An ONNX node test of a recurrent operator: its folder, the operator, its
 * hidden_size and layout, how many inputs it reads and which outputs
 * (nouts of them) its files hold. */
typedef struct node_case {
    const char *test, *op;
    int64_t hidden, layout;
    int32_t nin;
    const int32_t *outs;
    int32_t nouts;
} node_case;

static void node_test(const node_case *c, const char *backend)
{
    rnn_attrs a = {0};
    rnn_attr_add(&a, attr_int("hidden_size", c->hidden));
    if (c->layout) rnn_attr_add(&a, attr_int("layout", c->layout));
    rnn_attr_add(&a, attr_int("__opset", 14));
    char dir[512], path[600];
    snprintf(dir, sizeof dir, "%s/node/%s/test_data_set_0", D5_ONNX_TESTDATA, c->test);
    if (access(dir, R_OK) != 0) cr_skip_test("%s is not installed", dir);
    d5_tensor in[8], want[3], out[3];
    memset(in, 0, sizeof in);
    memset(out, 0, sizeof out);
    for (int32_t i = 0; i < c->nin; i++) {
        snprintf(path, sizeof path, "%s/input_%d.pb", dir, (int)i);
        cr_assert_eq(d5_onnx_tensor_read(path, &in[i], NULL), D5_OK, "%s", d5_last_error());
    }
    for (int32_t k = 0; k < c->nouts; k++) {
        snprintf(path, sizeof path, "%s/output_%d.pb", dir, (int)k);
        cr_assert_eq(d5_onnx_tensor_read(path, &want[k], NULL), D5_OK, "%s", d5_last_error());
    }
    const d5_op_desc *desc;
    cr_assert_eq(d5_op_find(c->op, backend, &desc), D5_OK, "%s", d5_last_error());
    /* Integer inputs (sequence_lens) are known at create, as onnx-test binds them. */
    d5_tensor known[8];
    for (int32_t i = 0; i < c->nin; i++) {
        known[i] = in[i];
        if (in[i].desc.dtype == D5_F32) known[i].data = NULL;
    }
    int32_t nout = 0;
    for (int32_t k = 0; k < c->nouts; k++)
        if (c->outs[k] + 1 > nout) nout = c->outs[k] + 1;
    d5_op *o = NULL;
    cr_assert_eq(d5_op_create(desc, known, c->nin, &a.attrs, nout, &o), D5_OK, "%s on %s: %s",
                 c->test, backend, d5_last_error());
    for (int32_t k = 0; k < nout; k++)
        cr_assert_eq(d5_tensor_alloc(d5_op_output_desc(o, k), &out[k]), D5_OK);
    cr_assert_eq(d5_op_forward(o, in, out), D5_OK, "%s: %s", c->test, d5_last_error());
    for (int32_t k = 0; k < c->nouts; k++) {
        const d5_tensor *got = &out[c->outs[k]];
        int64_t n = d5_tensor_desc_numel(&want[k].desc);
        cr_assert_eq(d5_tensor_desc_numel(&got->desc), n, "%s: output %d size", c->test, (int)k);
        for (int64_t e = 0; e < n; e++) {
            double g = ((const float *)got->data)[e], w = ((const float *)want[k].data)[e];
            /* ONNX's tolerances: rtol 1e-3, atol 1e-7 (1e-5 for tanh on the fast backends). */
            cr_assert(fabs(g - w) <= 1e-5 + 1e-3 * fabs(w),
                      "%s on %s: output %d element %lld is %.9g, want %.9g", c->test, backend,
                      (int)k, (long long)e, g, w);
        }
    }
    d5_op_free(o);
    rnn_free_all(in, c->nin);
    rnn_free_all(want, c->nouts);
    rnn_free_all(out, nout);
}

/* The models name Y "" where only Y_h is an output. */
static const int32_t Y_AND_YH[2] = {0, 1}, YH[1] = {1};

static const node_case node_cases[] = {
    {"test_simple_rnn_defaults", "RNN", 4, 0, 3, YH, 1},
    {"test_simple_rnn_with_initial_bias", "RNN", 5, 0, 4, YH, 1},
    {"test_simple_rnn_batchwise", "RNN", 4, 1, 3, Y_AND_YH, 2},
    {"test_rnn_seq_length", "RNN", 5, 0, 4, YH, 1},
    {"test_gru_defaults", "GRU", 5, 0, 3, YH, 1},
    {"test_gru_with_initial_bias", "GRU", 3, 0, 4, YH, 1},
    {"test_gru_seq_length", "GRU", 5, 0, 4, YH, 1},
    {"test_gru_batchwise", "GRU", 6, 1, 3, Y_AND_YH, 2},
    {"test_lstm_defaults", "LSTM", 3, 0, 3, YH, 1},
    {"test_lstm_with_initial_bias", "LSTM", 4, 0, 4, YH, 1},
    {"test_lstm_with_peepholes", "LSTM", 3, 0, 8, YH, 1},
    {"test_lstm_batchwise", "LSTM", 7, 1, 3, Y_AND_YH, 2},
};

void rnn_check_onnx_node_tests(const char *backend)
{
    for (size_t i = 0; i < sizeof node_cases / sizeof node_cases[0]; i++)
        node_test(&node_cases[i], backend);
}
