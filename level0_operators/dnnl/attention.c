/* Attention (ONNX opset 23) on the dnnl backend, float32, tiled in the
 * manner of flash attention: no [queries, keys] matrix is ever whole in
 * memory. Work items are (batch, query head, block of 64 queries), split
 * among the threads; each walks the keys in blocks of up to 2048: the block's
 * scores by oneDNN's sgemm (Q rows against K rows, scaled), the softcap, the
 * mask and the causal limit, then a running softmax (each row's maximum m
 * and sum l so far: when a block raises the maximum, what was summed is
 * rescaled by exp(m_old - m_new)) and the block's probabilities times V added
 * to the output rows by a second sgemm. At the end each row is divided by its
 * sum; a row that saw no key gives zeros, as the operator asks. Keys past the
 * causal limit or the mask's last dimension are not visited. 3-d and 4-d
 * inputs are read in place (a head's rows are strided), grouped-query heads
 * share their key and value rows. past_key, present outputs and
 * qk_matmul_output are declined (D5_ERR_UNSUPPORTED: ref runs them), as is
 * the backward (training runs ref's). */
#include "../ref/attention.h"
#include "kernels.h"

#include <oneapi/dnnl/dnnl.h>
#include <float.h>
#include <math.h>

extern const d5_op_desc d5__op_ref_Attention;

enum { QB = 64, KB_MAX = 2048 };

static d5_status create(const d5_op_create_args *args, void **state)
{
    d5_status s = d5__dnnl_need_f32("Attention", args->inputs, 0);
    d5_attention a;
    if (s == D5_OK) s = d5__attention_geometry(args, &a);
    if (s != D5_OK) return s;
    if (a.has_past || args->noutputs > 1)
        return d5_error(D5_ERR_UNSUPPORTED,
                        "Attention (dnnl): %s; the dnnl kernel computes Y alone, without a past",
                        a.has_past ? "past_key and past_value are given"
                                   : "present_key, present_value or qk_matmul_output is asked for");
    d5_attention *d = d5_alloc(sizeof *d, "Attention");
    if (!d) return D5_ERR_NOMEM;
    *d = a;
    *state = d;
    return D5_OK;
}

/* One row of a score block: softcap, bias, then exp(s - m_new) in place
 * (probabilities below the smallest normal float become 0: denormals would
 * slow the next product); returns the row's new maximum in *m and adds to
 * *l, after rescaling *l and returning the factor for the output row. */
static D5_CLONES float block_row(const d5_attention *a, float *restrict s, int64_t nk,
                                 const float *mask_f, const uint8_t *mask_b, int64_t mstride,
                                 int64_t visible, float *m, float *l)
{
    float cap = (float)a->softcap, inv_cap = cap > 0 ? 1.0f / cap : 0;
    if (cap > 0) {
        D5_SIMD
        for (int64_t j = 0; j < nk; j++) s[j] = cap * d5__tanhf(s[j] * inv_cap);
    }
    if (mask_f) {
        D5_SIMD
        for (int64_t j = 0; j < nk; j++) s[j] += mask_f[j * mstride];
    } else if (mask_b) {
        D5_SIMD
        for (int64_t j = 0; j < nk; j++) s[j] = mask_b[j * mstride] ? s[j] : -INFINITY;
    }
    for (int64_t j = visible < 0 ? 0 : visible; j < nk; j++) s[j] = -INFINITY;
    float mx = -INFINITY;
    D5_SIMD_MAX(mx)
    for (int64_t j = 0; j < nk; j++) mx = s[j] > mx ? s[j] : mx;
    float mnew = mx > *m ? mx : *m;
    if (mnew == -INFINITY) { /* nothing seen yet */
        memset(s, 0, (size_t)nk * sizeof *s);
        return 1.0f;
    }
    float sum = 0;
    D5_SIMD_SUM(sum)
    for (int64_t j = 0; j < nk; j++) {
        float e = d5__expf(s[j] - mnew);
        e = e < FLT_MIN ? 0.0f : e;
        s[j] = e;
        sum += e;
    }
    float alpha = *m == -INFINITY ? 0.0f : d5__expf(*m - mnew);
    *l = *l * alpha + sum;
    *m = mnew;
    return alpha;
}

typedef struct block_buf {
    int64_t kb; /* keys per block */
    float m[QB], l[QB];
    float *s; /* QB x kb scores */
    float *o; /* QB x v_head_size */
} block_buf;

static d5_status run_item(const d5_attention *a, const d5_op_call *call, int64_t item, block_buf *w)
{
    int64_t qblocks = (a->q_len + QB - 1) / QB;
    int64_t qb = item % qblocks, bh = item / qblocks;
    int64_t b = bh / a->q_heads, h = bh % a->q_heads, kh = h / (a->q_heads / a->kv_heads);
    int64_t i0 = qb * QB, nq = a->q_len - i0 < QB ? a->q_len - i0 : QB;
    int64_t dk = a->head_size, dv = a->v_head_size;
    int64_t ldq = d5__attention_ld(a, 0, 0), ldk = d5__attention_ld(a, 1, 0),
            ldv = d5__attention_ld(a, 1, 1), ldy = d5__attention_ld(a, 0, 1);
    const float *q = (const float *)call->inputs[0].data + d5__attention_q_row(a, b, h, i0, 0);
    const float *k = (const float *)call->inputs[1].data + d5__attention_kv_row(a, b, kh, 0, 0);
    const float *v = (const float *)call->inputs[2].data + d5__attention_kv_row(a, b, kh, 0, 1);
    float *y = (float *)call->outputs[0].data + d5__attention_q_row(a, b, h, i0, 1);
    const void *mask = a->has_mask ? call->inputs[3].data : NULL;
    const int64_t *ms = a->mask_stride;
    int64_t end = a->total_len;
    if (a->causal && i0 + nq + a->past_len < end) end = i0 + nq + a->past_len;
    if (a->has_mask && a->mask_len < end) end = a->mask_len;
    for (int64_t r = 0; r < nq; r++) w->m[r] = -INFINITY, w->l[r] = 0;
    memset(w->o, 0, (size_t)(nq * dv) * sizeof *w->o);
    for (int64_t j0 = 0; j0 < end; j0 += w->kb) {
        int64_t KB = w->kb, nk = end - j0 < KB ? end - j0 : KB;
        dnnl_status_t st = dnnl_sgemm('N', 'T', nq, nk, dk, (float)a->scale, q, ldq, k + j0 * ldk,
                                      ldk, 0.0f, w->s, KB);
        if (st != dnnl_success)
            return d5_error(D5_ERR_BACKEND, "Attention (dnnl): sgemm of the scores failed (%d)",
                            (int)st);
        for (int64_t r = 0; r < nq; r++) {
            int64_t i = i0 + r, moff = b * ms[0] + h * ms[1] + i * ms[2] + j0 * ms[3];
            const float *mf = mask && !a->mask_bool ? (const float *)mask + moff : NULL;
            const uint8_t *mb = mask && a->mask_bool ? (const uint8_t *)mask + moff : NULL;
            int64_t visible = a->causal ? i + a->past_len + 1 - j0 : nk;
            float *o = w->o + r * dv;
            float alpha =
                block_row(a, w->s + r * KB, nk, mf, mb, ms[3], visible, &w->m[r], &w->l[r]);
            if (alpha != 1.0f) {
                D5_SIMD
                for (int64_t d = 0; d < dv; d++) o[d] *= alpha;
            }
        }
        st = dnnl_sgemm('N', 'N', nq, dv, nk, 1.0f, w->s, KB, v + j0 * ldv, ldv, 1.0f, w->o, dv);
        if (st != dnnl_success)
            return d5_error(D5_ERR_BACKEND, "Attention (dnnl): sgemm of P V failed (%d)", (int)st);
    }
    for (int64_t r = 0; r < nq; r++) {
        float inv = w->l[r] > 0 ? 1.0f / w->l[r] : 0.0f;
        for (int64_t d = 0; d < dv; d++) y[r * ldy + d] = w->o[r * dv + d] * inv;
    }
    return D5_OK;
}

static int thread_index(void)
{
#ifdef _OPENMP
    return omp_get_thread_num();
#else
    return 0;
#endif
}

static int max_threads(void)
{
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

/* Per thread: its block buffers and the status of its items. */
typedef struct worker {
    block_buf *w;
    d5_status s;
} worker;

static d5_status forward(void *state, const d5_op_call *call)
{
    const d5_attention *a = state;
    int64_t items = a->batch * a->q_heads * ((a->q_len + QB - 1) / QB);
    double work =
        (double)items * QB * (double)a->total_len * (double)(a->head_size + a->v_head_size);
    int parallel = items > 1 && work >= D5_PARALLEL_BYTES;
    int nt = parallel ? max_threads() : 1;
    int64_t kb = a->total_len < KB_MAX ? (a->total_len > 0 ? a->total_len : 1) : KB_MAX;
    size_t obytes = (size_t)(QB * (a->v_head_size + kb)) * sizeof(float);
    worker *ws = d5_calloc((size_t)nt, sizeof *ws, "Attention workers");
    d5_status status = ws ? D5_OK : D5_ERR_NOMEM;
    for (int t = 0; status == D5_OK && t < nt; t++) {
        ws[t].w = d5_alloc(sizeof *ws[t].w + obytes, "Attention block");
        if (!ws[t].w)
            status = D5_ERR_NOMEM;
        else {
            ws[t].w->kb = kb;
            ws[t].w->o = (float *)(ws[t].w + 1);
            ws[t].w->s = ws[t].w->o + QB * a->v_head_size;
        }
    }
    if (status == D5_OK) {
        D5_PARALLEL_RANGE(items, parallel, lo, hi, {
            worker *me = &ws[thread_index() % nt];
            for (int64_t it = lo; me->s == D5_OK && it < hi; it++)
                me->s = run_item(a, call, it, me->w);
        })
        for (int t = 0; t < nt; t++)
            if (ws[t].s != D5_OK) status = ws[t].s;
    }
    for (int t = 0; ws && t < nt; t++) d5_free(ws[t].w);
    d5_free(ws);
    return status;
}

static void destroy(void *state)
{
    d5_free(state);
}

static void cost(void *state, double *flops, double *bytes)
{
    const d5_attention *a = state;
    double rows = (double)a->batch * (double)a->q_heads * (double)a->q_len;
    double kv = (double)a->batch * (double)a->kv_heads * (double)a->total_len;
    *flops = rows * (double)a->total_len * (2.0 * (double)(a->head_size + a->v_head_size) + 5);
    *bytes = 4 * (rows * (double)(a->head_size + a->v_head_size) +
                  kv * (double)(a->head_size + a->v_head_size));
}

/* clang-format off */
const d5_op_desc d5__op_dnnl_Attention = {
    .abi_version = D5_OP_ABI_VERSION, .name = "Attention", .backend = "dnnl",
    .min_inputs = 3, .max_inputs = 7, .min_outputs = 1, .max_outputs = 4,
    .create = create, .forward = forward, .destroy = destroy, .cost = cost};
/* clang-format on */
