/* The dnnl backend's recurrent operators (rnn.c): what the conversions
 * between ONNX's tensors and oneDNN's (rnn_stage.c) need to know. */
#ifndef D5_DNNL_RNN_H
#define D5_DNNL_RNN_H

#include "dnnl_util.h"

/* The cells, as oneDNN has them. */
enum { D5_DNNL_VANILLA, D5_DNNL_GRU, D5_DNNL_LBR_GRU, D5_DNNL_LSTM };

/* Sizes and the parts of the conversion that depend on the cell. */
typedef struct d5_dnnl_rnn_shape {
    int32_t cell;             /* D5_DNNL_* */
    int64_t T, N, I, H, D, G; /* G: gates of W and R (1, 3, 4) */
    int64_t GB;               /* gates of oneDNN's bias: G, or 4 for the LBR GRU */
    int32_t layout;           /* ONNX's layout attribute */
} d5_dnnl_rnn_shape;

/* W [D, G*H, I] or R [D, G*H, H] (cols = I or H) in ONNX's gate order, into
 * oneDNN's ldigo layout [D, cols, G, H] in oneDNN's gate order (the plain
 * layout from which oneDNN 2.6 reorders into its packed ones); and back. */
void d5__dnnl_rnn_weights_in(const d5_dnnl_rnn_shape *s, const float *onnx, int64_t cols,
                             float *dnnl);
void d5__dnnl_rnn_weights_out(const d5_dnnl_rnn_shape *s, const float *dnnl, int64_t cols,
                              float *onnx);
/* B [D, 2*G*H] (NULL: zeros) into oneDNN's bias [D, GB, H]: Wb + Rb per gate,
 * or for the LBR GRU Wbz + Rbz, Wbr + Rbr, Wbh and Rbh. Back: the gradient of
 * oneDNN's bias into the gradient of B. */
void d5__dnnl_rnn_bias_in(const d5_dnnl_rnn_shape *s, const float *onnx, float *dnnl);
void d5__dnnl_rnn_bias_out(const d5_dnnl_rnn_shape *s, const float *dnnl, float *onnx);
/* LSTM's P [D, 3*H] (i, o, f) into oneDNN's peephole weights [D, 3, H] (i,
 * f, o); and back. */
void d5__dnnl_rnn_peephole_in(const d5_dnnl_rnn_shape *s, const float *onnx, float *dnnl);
void d5__dnnl_rnn_peephole_out(const d5_dnnl_rnn_shape *s, const float *dnnl, float *onnx);
/* Y of a bidirectional operator with layout 0, [T, 2, N, H], from oneDNN's
 * dst_layer [T, N, 2*H]; and its gradient the other way. */
void d5__dnnl_rnn_y_out(const d5_dnnl_rnn_shape *s, const float *dnnl, float *onnx);
void d5__dnnl_rnn_y_in(const d5_dnnl_rnn_shape *s, const float *onnx, float *dnnl);

#endif
