/* Conversions between ONNX's recurrent tensors and oneDNN's (see rnn.h).
 * ONNX orders LSTM's gates i, o, f, c and its peepholes i, o, f; oneDNN
 * orders them i, f, c, o and i, f, o. GRU's z, r, h are oneDNN's u, r, o. */
#include "kernels.h"
#include "rnn.h"

#include <string.h>

/* The ONNX gate of oneDNN's gate k. */
static int64_t onnx_gate(const d5_dnnl_rnn_shape *s, int64_t k)
{
    static const int64_t lstm[4] = {0, 2, 3, 1};
    return s->cell == D5_DNNL_LSTM ? lstm[k] : k;
}

/* dst[c * dst_ld + r] = src[r * src_ld + c] for r < rows, c < cols (one gate
 * of W or R into ldigo and back, the ldigo side's stride G * H), through a
 * 16 x 16 tile read and written row by row: element by element, the strides
 * of G * H floats (multiples of 4 KiB for DeepBench's sizes) fall into one
 * cache set, and a 512 x 512 gate took 2.5 ms instead of 0.45 ms. */
#define TILE 16
static void transpose(const float *src, int64_t src_ld, int64_t rows, int64_t cols, float *dst,
                      int64_t dst_ld)
{
    D5_PARALLEL_FOR
    for (int64_t rb = 0; rb < rows; rb += TILE) {
        float t[TILE][TILE];
        int64_t re = rb + TILE < rows ? rb + TILE : rows;
        for (int64_t cb = 0; cb < cols; cb += TILE) {
            int64_t ce = cb + TILE < cols ? cb + TILE : cols;
            for (int64_t r = rb; r < re; r++)
                for (int64_t c = cb; c < ce; c++) t[c - cb][r - rb] = src[r * src_ld + c];
            for (int64_t c = cb; c < ce; c++)
                for (int64_t r = rb; r < re; r++) dst[c * dst_ld + r] = t[c - cb][r - rb];
        }
    }
}

/* ONNX's element (d, g, o, c) of W or R, [D, G*H, cols], is oneDNN's ldigo
 * element (d, c, k, o) with g = onnx_gate(k). */
void d5__dnnl_rnn_weights_in(const d5_dnnl_rnn_shape *s, const float *onnx, int64_t cols,
                             float *dnnl)
{
    const int64_t G = s->G, H = s->H;
    for (int64_t d = 0; d < s->D; d++)
        for (int64_t k = 0; k < G; k++)
            transpose(onnx + (d * G + onnx_gate(s, k)) * H * cols, cols, H, cols,
                      dnnl + d * cols * G * H + k * H, G * H);
}

void d5__dnnl_rnn_weights_out(const d5_dnnl_rnn_shape *s, const float *dnnl, int64_t cols,
                              float *onnx)
{
    const int64_t G = s->G, H = s->H;
    for (int64_t d = 0; d < s->D; d++)
        for (int64_t k = 0; k < G; k++)
            transpose(dnnl + d * cols * G * H + k * H, G * H, cols, H,
                      onnx + (d * G + onnx_gate(s, k)) * H * cols, cols);
}

void d5__dnnl_rnn_bias_in(const d5_dnnl_rnn_shape *s, const float *onnx, float *dnnl)
{
    const int64_t H = s->H, GH = s->G * H;
    for (int64_t d = 0; d < s->D; d++) {
        const float *wb = onnx ? onnx + d * 2 * GH : NULL, *rb = wb ? wb + GH : NULL;
        float *dst = dnnl + d * s->GB * H;
        for (int64_t k = 0; k < s->G; k++) {
            int64_t g = onnx_gate(s, k);
            int lbr_h = s->cell == D5_DNNL_LBR_GRU && k == 2; /* Wbh alone */
            for (int64_t j = 0; j < H; j++)
                dst[k * H + j] = wb ? wb[g * H + j] + (lbr_h ? 0.f : rb[g * H + j]) : 0.f;
        }
        if (s->cell == D5_DNNL_LBR_GRU) /* u': Rbh, inside the reset gate's product */
            for (int64_t j = 0; j < H; j++) dst[3 * H + j] = rb ? rb[2 * H + j] : 0.f;
    }
}

void d5__dnnl_rnn_bias_out(const d5_dnnl_rnn_shape *s, const float *dnnl, float *onnx)
{
    const int64_t H = s->H, GH = s->G * H;
    for (int64_t d = 0; d < s->D; d++) {
        float *wb = onnx + d * 2 * GH, *rb = wb + GH;
        const float *src = dnnl + d * s->GB * H;
        for (int64_t k = 0; k < s->G; k++) {
            int64_t g = onnx_gate(s, k);
            int lbr_h = s->cell == D5_DNNL_LBR_GRU && k == 2;
            for (int64_t j = 0; j < H; j++) {
                wb[g * H + j] = src[k * H + j];
                rb[g * H + j] = lbr_h ? src[3 * H + j] : src[k * H + j];
            }
        }
    }
}

/* oneDNN's peephole k (i, f, o) is ONNX's row pk[k] (i, o, f). */
static const int64_t pk[3] = {0, 2, 1};

void d5__dnnl_rnn_peephole_in(const d5_dnnl_rnn_shape *s, const float *onnx, float *dnnl)
{
    for (int64_t d = 0; d < s->D; d++)
        for (int64_t k = 0; k < 3; k++)
            memcpy(dnnl + (d * 3 + k) * s->H, onnx + (d * 3 + pk[k]) * s->H,
                   (size_t)s->H * sizeof(float));
}

void d5__dnnl_rnn_peephole_out(const d5_dnnl_rnn_shape *s, const float *dnnl, float *onnx)
{
    for (int64_t d = 0; d < s->D; d++)
        for (int64_t k = 0; k < 3; k++)
            memcpy(onnx + (d * 3 + pk[k]) * s->H, dnnl + (d * 3 + k) * s->H,
                   (size_t)s->H * sizeof(float));
}

void d5__dnnl_rnn_y_out(const d5_dnnl_rnn_shape *s, const float *dnnl, float *onnx)
{
    const int64_t H = s->H, N = s->N;
    for (int64_t t = 0; t < s->T; t++)
        for (int64_t d = 0; d < 2; d++)
            for (int64_t n = 0; n < N; n++)
                memcpy(onnx + ((t * 2 + d) * N + n) * H, dnnl + (t * N + n) * 2 * H + d * H,
                       (size_t)H * sizeof(float));
}

void d5__dnnl_rnn_y_in(const d5_dnnl_rnn_shape *s, const float *onnx, float *dnnl)
{
    const int64_t H = s->H, N = s->N;
    for (int64_t t = 0; t < s->T; t++)
        for (int64_t d = 0; d < 2; d++)
            for (int64_t n = 0; n < N; n++)
                memcpy(dnnl + (t * N + n) * 2 * H + d * H, onnx + ((t * 2 + d) * N + n) * H,
                       (size_t)H * sizeof(float));
}
