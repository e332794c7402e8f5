/* The geometry of an ONNX Attention node (opsets 23 to 25), shared by the ref
 * operator and the dnnl backend's tiled kernel: sizes, where each head's rows
 * lie in Q, K, V and Y (3-d [B, S, heads * size] or 4-d [B, heads, S, size]),
 * the mask's strides after broadcasting, and the attributes.
 * https://onnx.ai/onnx/operators/onnx__Attention.html */
#ifndef D5_REF_ATTENTION_H
#define D5_REF_ATTENTION_H

#include "d5/operator.h"

#include <stdint.h>

typedef struct d5_attention {
    int64_t batch, q_heads, kv_heads;
    int64_t q_len;     /* query positions */
    int64_t kv_len;    /* key positions in K and V */
    int64_t past_len;  /* key positions in past_key and past_value (0 without) */
    int64_t total_len; /* past_len + kv_len: the keys every query sees */
    int64_t head_size; /* of Q and K */
    int64_t v_head_size;
    int rank3;        /* Q, K, V and Y are [B, S, heads * size] */
    int causal;       /* a query at i sees the keys j <= i + offset: past_len, or
                         nonpad_kv_seqlen[b] - q_len with that input */
    double scale;     /* of Q K^T: the attribute, or 1 / sqrt(head_size) */
    double softcap;   /* > 0: scores become softcap * tanh(scores / softcap) */
    int64_t qk_mode;  /* qk_matmul_output_mode: 0 to 3 */
    int has_mask;     /* attn_mask given */
    int mask_bool;    /* bool: true attends; else added to the scores */
    int64_t mask_len; /* the mask's last dimension: keys at and past it are masked */
    int64_t
        mask_stride[4]; /* element strides along (batch, head, query, key); 0 where it broadcasts */
    int has_past;
    int qk_output; /* output 3 (qk_matmul_output) is asked for */
    /* Opset 24's input 6, nonpad_kv_seqlen (int64 [B]), is given: in batch b
     * the keys j >= nonpad_kv_seqlen[b] are masked. */
    int has_nonpad;
    /* Opset 25's sliding window: a query at i sees the keys j with
     * i + offset - left_window <= j <= i + offset + right_window; -1 leaves
     * that side unbounded. */
    int64_t left_window, right_window;
} d5_attention;

/* Checks an Attention node's inputs and attributes, fills *a and the output
 * descriptors (args->outputs): Y, present_key, present_value,
 * qk_matmul_output. Errors name the input or attribute at fault. This is the
 * geometry for kernels of opset 23's features: a node with nonpad_kv_seqlen
 * or a window (left_window_size or right_window_size other than -1) gets
 * D5_ERR_UNSUPPORTED, so that the executor runs it on ref, whose kernel alone
 * implements them. */
D5_NODISCARD d5_status d5__attention_geometry(const d5_op_create_args *args, d5_attention *a);

/* Element offsets of the row (b, head h, position i) in Q (or Y: v = 1, the
 * value head size) and in K or V (the new keys only: i < kv_len). */
static inline int64_t d5__attention_q_row(const d5_attention *a, int64_t b, int64_t h, int64_t i,
                                          int v)
{
    int64_t size = v ? a->v_head_size : a->head_size;
    return a->rank3 ? (b * a->q_len + i) * a->q_heads * size + h * size
                    : ((b * a->q_heads + h) * a->q_len + i) * size;
}

static inline int64_t d5__attention_kv_row(const d5_attention *a, int64_t b, int64_t h, int64_t i,
                                           int v)
{
    int64_t size = v ? a->v_head_size : a->head_size;
    return a->rank3 ? (b * a->kv_len + i) * a->kv_heads * size + h * size
                    : ((b * a->kv_heads + h) * a->kv_len + i) * size;
}

/* The distance between consecutive rows of one head in Q or Y (kv 0) and K
 * or V (kv 1); v chooses the value head size. */
static inline int64_t d5__attention_ld(const d5_attention *a, int kv, int v)
{
    int64_t size = v ? a->v_head_size : a->head_size;
    return a->rank3 ? (kv ? a->kv_heads : a->q_heads) * size : size;
}

#endif
