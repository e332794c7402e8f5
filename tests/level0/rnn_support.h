/* Helpers of the recurrent operators' tests (test_rnn.c, test_rnn_dnnl.c):
 * the PyTorch reference cases of rnn_reference.h, the ONNX node tests of
 * Debian's libonnx-testdata, and attribute lists. */
#ifndef D5_TEST_RNN_SUPPORT_H
#define D5_TEST_RNN_SUPPORT_H

#include "op_support.h"
#include "rnn_reference.h"

/* Up to 12 attributes and the storage their lists point into. */
typedef struct rnn_attrs {
    d5_attr items[12];
    d5_attrs attrs;
} rnn_attrs;

/* Appends one attribute; returns &a->attrs. */
const d5_attrs *rnn_attr_add(rnn_attrs *a, d5_attr attr);
/* The attributes of a reference case. */
const d5_attrs *rnn_case_attrs(const rnn_ref_case *c, rnn_attrs *a);
/* The inputs of a reference case in data type dt (sequence_lens int32), the
 * omitted ones with dtype D5_DTYPE_INVALID; returns their count (6, or 8 for
 * LSTM). Free with rnn_free_all. */
int32_t rnn_case_inputs(const rnn_ref_case *c, d5_dtype dt, d5_tensor *in);
void rnn_free_all(d5_tensor *t, int32_t n);
/* 1 when the case has sequence lengths other than seq_length. */
int rnn_case_ragged(const rnn_ref_case *c);
/* Runs the case on `backend` in data type dt: every output against PyTorch's,
 * then backward with the case's output gradients, every input gradient
 * against PyTorch's; elements pass when |got - want| <= tol * (1 + |want|). */
void rnn_check_case(const rnn_ref_case *c, const char *backend, d5_dtype dt, double tol);
/* The status of creating the case's operator on `backend` (float32). */
d5_status rnn_case_create_status(const rnn_ref_case *c, const char *backend);

/* The 12 RNN, GRU and LSTM node tests of libonnx-testdata (data/node/<test>,
 * opset 14) on `backend`: each test's inputs through the operator, its
 * outputs compared with ONNX's tolerances. Skipped when the test data is not
 * installed. */
void rnn_check_onnx_node_tests(const char *backend);

#endif
