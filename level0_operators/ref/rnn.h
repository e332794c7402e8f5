/* The recurrent operators of the ref backend, RNN, GRU and LSTM (ONNX opsets
 * 7 to 22): the part they share (rnn_common.c: attributes, shapes, directions,
 * sequence lengths, layouts, the time loop and back-propagation through time)
 * and what each cell adds (rnn.c, rnn_gru.c, rnn_lstm.c: one time step of one
 * batch row, forward and backward).
 *
 * Inputs: X, W, R, B, sequence_lens, initial_h, and for LSTM initial_c and P.
 * Outputs: Y, Y_h, and for LSTM Y_c. All in double precision (ref.h). */
#ifndef D5_REF_RNN_H
#define D5_REF_RNN_H

#include "ref.h"

/* ONNX's activation functions of the recurrent operators, with their alpha
 * and beta (the defaults of the ONNX operators of the same name). */
enum {
    D5_RNN_RELU,
    D5_RNN_TANH,
    D5_RNN_SIGMOID,
    D5_RNN_AFFINE,
    D5_RNN_LEAKYRELU,
    D5_RNN_THRESHOLDEDRELU,
    D5_RNN_SCALEDTANH,
    D5_RNN_HARDSIGMOID,
    D5_RNN_ELU,
    D5_RNN_SOFTSIGN,
    D5_RNN_SOFTPLUS
};

typedef struct d5_rnn_act {
    int32_t fn; /* D5_RNN_* */
    double alpha, beta;
} d5_rnn_act;

/* The function and its derivative at x. */
double d5__rnn_act(const d5_rnn_act *a, double x);
double d5__rnn_act_grad(const d5_rnn_act *a, double x);

typedef struct d5_rnn d5_rnn;
typedef struct d5_rnn_dir d5_rnn_dir;

/* What a cell adds to the common part. `step` computes one time step of one
 * batch row: from x (input_size values), h and c (the previous hidden and
 * cell state, hidden_size values; c only for LSTM) the new hn and cn, and
 * writes to `cache` (cache * hidden_size values) what `back` needs. `back`
 * takes the gradients dhn and dcn of the new state and adds (+=) the
 * gradients of x, h and c to dx, dh and dc and those of the parameters to the
 * direction's gradients; `scratch` has 8 * hidden_size values. */
typedef struct d5_rnn_cell {
    const char *name;        /* "LSTM" */
    int32_t gates;           /* G: W and R have G * hidden_size rows */
    int32_t nact;            /* activations per direction */
    const char *defaults[3]; /* their defaults */
    int32_t max_inputs;      /* 6, or 8 with LSTM's initial_c and P */
    int32_t outputs;         /* 2, or 3 with LSTM's Y_c */
    int32_t cache;           /* values per hidden unit that a step keeps */
    double elementwise;      /* FLOPs per hidden unit and step besides the products */
    void (*step)(const d5_rnn *r, const d5_rnn_dir *w, const double *x, const double *h,
                 const double *c, double *hn, double *cn, double *cache);
    void (*back)(const d5_rnn *r, const d5_rnn_dir *w, const double *x, const double *h,
                 const double *c, const double *cache, const double *dhn, const double *dcn,
                 double *dx, double *dh, double *dc, double *scratch);
} d5_rnn_cell;

/* An operator instance: the shapes and attributes. */
struct d5_rnn {
    const d5_rnn_cell *cell;
    int64_t T, N, I, H, D; /* seq_length, batch_size, input_size, hidden_size, num_directions */
    int32_t layout;        /* 0: X is [T, N, I]; 1: [N, T, I] */
    int32_t reverse;       /* direction "reverse" (one direction, last step first) */
    int32_t lbr;           /* GRU's linear_before_reset */
    int32_t input_forget;  /* LSTM's input_forget: f = 1 - i */
    double clip;           /* bound of the gates' pre-activations; 0: none */
    d5_rnn_act act[2][3];  /* per direction */
};

/* One direction's parameters (W: [G*H, I], R: [G*H, H], Wb and Rb: [G*H],
 * P: [3*H]; Wb, Rb and P NULL when absent) and, in backward, their gradients
 * (NULL where not wanted). */
struct d5_rnn_dir {
    const double *W, *R, *Wb, *Rb, *P;
    double *dW, *dR, *dWb, *dRb, *dP;
    const d5_rnn_act *act;
};

/* A pre-activation bounded by `clip`, and whether the bound cut it (its
 * gradient is then 0). */
double d5__rnn_clip(const d5_rnn *r, double v);
int d5__rnn_clipped(const d5_rnn *r, double v);
/* The activation k of a direction applied to a raw pre-activation (clipped
 * first), and its derivative there (0 where the clip cut it). */
double d5__rnn_apply(const d5_rnn *r, const d5_rnn_dir *w, int k, double raw);
double d5__rnn_apply_grad(const d5_rnn *r, const d5_rnn_dir *w, int k, double raw);
/* out = W_g x + Wb_g, the input part of gate g. */
void d5__rnn_input(const d5_rnn *r, const d5_rnn_dir *w, int g, const double *x, double *out);
/* out += R_g v + Rb_g, the recurrent part of gate g on the vector v. */
void d5__rnn_recur(const d5_rnn *r, const d5_rnn_dir *w, int g, const double *v, double *out);
/* The gradients of d5__rnn_input and d5__rnn_recur for dA, the gradient of
 * their output: dx += W_g^T dA, dW_g += dA x^T, dWb_g += dA (and the same
 * with R, v, dv and Rb). */
void d5__rnn_input_back(const d5_rnn *r, const d5_rnn_dir *w, int g, const double *dA,
                        const double *x, double *dx);
void d5__rnn_recur_back(const d5_rnn *r, const d5_rnn_dir *w, int g, const double *dA,
                        const double *v, double *dv);

/* The ref kernels of the three operators (d5_ref_vtable functions). */
d5_status d5__rnn_create(const d5_rnn_cell *cell, const d5_tensor *in, int32_t nin,
                         const d5_attrs *attrs, d5_tensor_desc *out, int32_t nout, void **state);
d5_status d5__rnn_forward(void *state, const d5_ref_call *call);
d5_status d5__rnn_backward(void *state, const d5_ref_call *call);
double d5__rnn_flops(void *state, const d5_ref_shapes *shapes);

#endif
