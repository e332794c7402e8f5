/* RNN, GRU and LSTM (ONNX opsets 7 to 22) on oneDNN's RNN primitives, float32,
 * with the semantics of the ref operators (ref/rnn_common.c, ref/rnn.c,
 * ref/rnn_gru.c, ref/rnn_lstm.c):
 * - RNN on the vanilla RNN cell with Tanh, Relu, Sigmoid or LeakyRelu (the
 *   same in both directions);
 * - GRU on oneDNN's GRU cell, or with linear_before_reset on its
 *   linear-before-reset GRU cell, with the default activations;
 * - LSTM on the LSTM cell, with peepholes when P is given, with the default
 *   activations.
 * forward, reverse and bidirectional directions (bidirectional_concat), both
 * layouts, optional B, initial_h, initial_c and the outputs Y_h and Y_c.
 *
 * Inputs are validated by the ref operator's create, so both backends refuse
 * the same mistakes with the same words. What oneDNN cannot compute is
 * declined with D5_ERR_UNSUPPORTED, so that the executor runs the ref
 * operator instead: other data types than float32, other activations, clip,
 * LSTM's input_forget, sequence_lens not known at create or not all equal to
 * seq_length, and empty tensors.
 *
 * ONNX's gate orders differ from oneDNN's (rnn_stage.c): W, R, B and P are
 * copied into oneDNN's order before each call, or once at create when they are
 * known then (weights of an inference graph), and the weights reordered into
 * the layout the primitive prefers. X, Y and the states are reordered between
 * ONNX's plain layouts and the primitive's. Backward (built on first use)
 * recomputes the forward pass in training mode for its workspace, then runs
 * oneDNN's backward primitive, whose weight gradients start from zero (oneDNN
 * accumulates into them). https://onnx.ai/onnx/operators/onnx__LSTM.html */
#include "rnn.h"

#include <string.h>

extern const d5_op_desc d5__op_ref_RNN, d5__op_ref_GRU, d5__op_ref_LSTM;

/* The arguments of the primitives: the forward ones, then their gradients
 * (DIFF + slot). */
enum {
    SRC_LAYER,
    SRC_ITER,
    SRC_ITER_C,
    W_LAYER,
    W_ITER,
    W_PEEP,
    BIAS,
    DST_LAYER,
    DST_ITER,
    DST_ITER_C,
    DIFF
};
#define NSLOT (2 * DIFF)
/* The arguments the forward and the backward primitives write. */
#define FWD_OUTS (1u << DST_LAYER | 1u << DST_ITER | 1u << DST_ITER_C)
#define BWD_OUTS (0x7Fu << DIFF) /* DIFF + SRC_LAYER .. DIFF + BIAS */

static const int slot_arg[NSLOT] = {DNNL_ARG_SRC_LAYER,
                                    DNNL_ARG_SRC_ITER,
                                    DNNL_ARG_SRC_ITER_C,
                                    DNNL_ARG_WEIGHTS_LAYER,
                                    DNNL_ARG_WEIGHTS_ITER,
                                    DNNL_ARG_WEIGHTS_PEEPHOLE,
                                    DNNL_ARG_BIAS,
                                    DNNL_ARG_DST_LAYER,
                                    DNNL_ARG_DST_ITER,
                                    DNNL_ARG_DST_ITER_C,
                                    DNNL_ARG_DIFF_SRC_LAYER,
                                    DNNL_ARG_DIFF_SRC_ITER,
                                    DNNL_ARG_DIFF_SRC_ITER_C,
                                    DNNL_ARG_DIFF_WEIGHTS_LAYER,
                                    DNNL_ARG_DIFF_WEIGHTS_ITER,
                                    DNNL_ARG_DIFF_WEIGHTS_PEEPHOLE,
                                    DNNL_ARG_DIFF_BIAS,
                                    DNNL_ARG_DIFF_DST_LAYER,
                                    DNNL_ARG_DIFF_DST_ITER,
                                    DNNL_ARG_DIFF_DST_ITER_C};

typedef struct rnn_kind {
    const char *name;
    const d5_op_desc *ref; /* validates the inputs */
    int64_t gates;
    int32_t nact;
    const char *defaults[3];
    const char *defaults_text; /* for messages */
    double elementwise;        /* FLOPs per hidden unit and step besides the products */
} rnn_kind;

static const rnn_kind kind_rnn = {"RNN", &d5__op_ref_RNN, 1, 1, {"Tanh"}, "Tanh", 3.0};
static const rnn_kind kind_gru = {
    "GRU", &d5__op_ref_GRU, 3, 2, {"Sigmoid", "Tanh"}, "Sigmoid and Tanh", 12.0};
static const rnn_kind kind_lstm = {
    "LSTM", &d5__op_ref_LSTM, 4, 3, {"Sigmoid", "Tanh", "Tanh"}, "Sigmoid, Tanh and Tanh", 16.0};

/* A primitive with its arguments (user layout on one side, the primitive's on
 * the other). */
typedef struct prim {
    dnnl_primitive_desc_t pd;
    dnnl_primitive_t p;
    d5_dnnl_arg a[NSLOT];
    int used[NSLOT];
    dnnl_memory_t ws; /* forward_training: the workspace backward reads */
} prim;

typedef struct drnn {
    const rnn_kind *k;
    d5_dnnl_rnn_shape s;
    dnnl_rnn_direction_t dir;
    dnnl_alg_kind_t act; /* the vanilla cell's activation */
    float alpha;         /* LeakyRelu's slope */
    int peephole, packed;
    d5_dnnl_ctx ctx;
    dnnl_memory_desc_t user[DIFF]; /* ONNX's layouts, and the staged weights' */
    prim inf, train, bwd;          /* train and bwd built on first backward */
    float *wl, *wi, *b, *p;        /* weights in oneDNN's gate order */
    float *dwl, *dwi, *db, *dp;    /* their gradients */
    float *zeros;                  /* absent states and output gradients */
    float *scratch;                /* outputs and gradients nobody asked for */
    float *ystage;                 /* bidirectional, layout 0: Y as oneDNN's [T, N, 2H] */
    float *tdst[3];                /* the training forward's outputs */
} drnn;

static void prim_free(prim *p)
{
    for (int k = 0; k < NSLOT; k++) d5__dnnl_arg_free(&p->a[k]);
    if (p->ws) dnnl_memory_destroy(p->ws);
    if (p->p) dnnl_primitive_destroy(p->p);
    if (p->pd) dnnl_primitive_desc_destroy(p->pd);
    memset(p, 0, sizeof *p);
}

static void destroy(void *state)
{
    drnn *r = state;
    if (!r) return;
    prim_free(&r->inf);
    prim_free(&r->train);
    prim_free(&r->bwd);
    /* wi, b and p live in wl's allocation, dwi, db and dp in dwl's. */
    float *bufs[] = {r->wl,     r->dwl,     r->zeros,   r->scratch,
                     r->ystage, r->tdst[0], r->tdst[1], r->tdst[2]};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) d5_free(bufs[i]);
    d5__dnnl_ctx_free(&r->ctx);
    d5_free(r);
}

/* ---- What oneDNN can run ---- */

static int same_name(const char *a, size_t n, const char *b)
{
    if (strlen(b) != n) return 0;
    for (size_t i = 0; i < n; i++) {
        char x = a[i], y = b[i];
        if (x >= 'A' && x <= 'Z') x = (char)(x - 'A' + 'a');
        if (y >= 'A' && y <= 'Z') y = (char)(y - 'A' + 'a');
        if (x != y) return 0;
    }
    return 1;
}

/* The activations: GRU's and LSTM's must be the defaults; RNN's one of the
 * vanilla cell's, alike in both directions (alpha and beta are consumed in
 * the order of the list, as the ref operators do). */
static d5_status read_activations(drnn *r, const d5_attrs *attrs)
{
    const rnn_kind *k = r->k;
    const d5_attr *a = d5_attrs_find(attrs, "activations");
    const d5_attr *alphas = d5_attrs_find(attrs, "activation_alpha");
    r->act = dnnl_eltwise_tanh;
    r->alpha = 0;
    if (!a || !a->s) return D5_OK; /* the defaults (the ref create checked the type) */
    const char *name[6];
    size_t len[6];
    int n = 0;
    for (const char *p = a->s; n < 6;) {
        while (*p == ' ') p++;
        size_t l = strcspn(p, ","), end = l;
        while (end > 0 && p[end - 1] == ' ') end--;
        name[n] = p;
        len[n++] = end;
        if (!p[l]) break;
        p += l + 1;
    }
    if (n == k->nact && r->s.D == 2) /* one list for both directions */
        for (int i = 0; i < k->nact; i++) {
            name[n] = name[i];
            len[n++] = len[i];
        }
    dnnl_alg_kind_t acts[2] = {dnnl_eltwise_tanh, dnnl_eltwise_tanh};
    float slopes[2] = {0, 0};
    int64_t used_alpha = 0;
    for (int i = 0; i < n; i++) {
        const char *p = name[i];
        int l = (int)(len[i] > 40 ? 40 : len[i]);
        if (k->gates > 1) {
            if (!same_name(p, len[i], k->defaults[i % k->nact]))
                return d5_error(D5_ERR_UNSUPPORTED,
                                "%s (dnnl): activation '%.*s': oneDNN's cell has %s; the ref "
                                "backend runs others",
                                k->name, l, p, k->defaults_text);
            continue;
        }
        if (same_name(p, len[i], "Tanh")) {
            acts[i] = dnnl_eltwise_tanh;
        } else if (same_name(p, len[i], "Relu")) {
            acts[i] = dnnl_eltwise_relu;
        } else if (same_name(p, len[i], "Sigmoid")) {
            acts[i] = dnnl_eltwise_logistic;
        } else if (same_name(p, len[i], "LeakyRelu")) {
            acts[i] = dnnl_eltwise_relu;
            slopes[i] = 0.01f;
            if (alphas && alphas->type == D5_ATTR_FLOATS && used_alpha < alphas->count)
                slopes[i] = (float)alphas->floats[used_alpha++];
        } else {
            return d5_error(D5_ERR_UNSUPPORTED,
                            "RNN (dnnl): activation '%.*s': oneDNN's vanilla cell has Tanh, "
                            "Relu, Sigmoid and LeakyRelu; the ref backend runs others",
                            l, p);
        }
    }
    if (k->gates == 1 && n == 2 && (acts[0] != acts[1] || slopes[0] != slopes[1]))
        return d5_error(D5_ERR_UNSUPPORTED,
                        "RNN (dnnl): the two directions have different activations; oneDNN "
                        "takes one, the ref backend runs both");
    r->act = acts[0];
    r->alpha = slopes[0];
    return D5_OK;
}

/* The attributes and inputs, after the ref create validated them. */
static d5_status check(drnn *r, const d5_tensor *in, int32_t nin, const d5_attrs *attrs)
{
    const rnn_kind *k = r->k;
    for (int32_t i = 0; i < nin; i++)
        if (i != 4 && in[i].desc.dtype != D5_DTYPE_INVALID && in[i].desc.dtype != D5_F32)
            return d5_error(D5_ERR_UNSUPPORTED, "%s (dnnl): input %d is %s; float32 only", k->name,
                            i, d5_dtype_name((d5_dtype)in[i].desc.dtype));
    int64_t layout, lbr = 0, forget = 0;
    const char *dir;
    d5_status s = d5_attrs_int(attrs, "layout", 0, &layout);
    if (s == D5_OK) s = d5_attrs_string(attrs, "direction", "forward", &dir);
    if (s == D5_OK && k->gates == 3) s = d5_attrs_int(attrs, "linear_before_reset", 0, &lbr);
    if (s == D5_OK && k->gates == 4) s = d5_attrs_int(attrs, "input_forget", 0, &forget);
    if (s != D5_OK) return s;
    if (d5_attrs_find(attrs, "clip"))
        return d5_error(D5_ERR_UNSUPPORTED,
                        "%s (dnnl): clip: oneDNN's cells do not bound the gates; the ref backend "
                        "runs it",
                        k->name);
    if (forget)
        return d5_error(D5_ERR_UNSUPPORTED,
                        "LSTM (dnnl): input_forget: oneDNN's cell has no coupled forget gate; the "
                        "ref backend runs it");
    d5_dnnl_rnn_shape *sh = &r->s;
    const d5_tensor_desc *x = &in[0].desc;
    sh->layout = (int32_t)layout;
    sh->T = layout ? x->shape[1] : x->shape[0];
    sh->N = layout ? x->shape[0] : x->shape[1];
    sh->I = x->shape[2];
    sh->H = in[2].desc.shape[2];
    sh->D = strcmp(dir, "bidirectional") == 0 ? 2 : 1;
    sh->G = k->gates;
    sh->cell = k->gates == 1   ? D5_DNNL_VANILLA
               : k->gates == 4 ? D5_DNNL_LSTM
               : lbr           ? D5_DNNL_LBR_GRU
                               : D5_DNNL_GRU;
    sh->GB = sh->cell == D5_DNNL_LBR_GRU ? 4 : sh->G;
    r->dir = sh->D == 2                    ? dnnl_bidirectional_concat
             : strcmp(dir, "reverse") == 0 ? dnnl_unidirectional_right2left
                                           : dnnl_unidirectional_left2right;
    r->peephole = nin > 7 && in[7].desc.dtype != D5_DTYPE_INVALID;
    if (sh->T == 0 || sh->N == 0 || sh->I == 0)
        return d5_error(D5_ERR_UNSUPPORTED, "%s (dnnl): empty tensors are not supported", k->name);
    if (nin > 4 && in[4].desc.dtype != D5_DTYPE_INVALID) {
        if (!in[4].data)
            return d5_error(D5_ERR_UNSUPPORTED,
                            "%s (dnnl): sequence_lens is not known at create; oneDNN runs every "
                            "row for seq_length steps, the ref backend runs other lengths",
                            k->name);
        for (int64_t b = 0; b < sh->N; b++) {
            int64_t v = in[4].desc.dtype == D5_I32 ? ((const int32_t *)in[4].data)[b]
                                                   : ((const int64_t *)in[4].data)[b];
            if (v != sh->T)
                return d5_error(D5_ERR_UNSUPPORTED,
                                "%s (dnnl): sequence_lens[%lld] is %lld, not seq_length %lld; "
                                "oneDNN runs every row for seq_length steps, the ref backend "
                                "runs other lengths",
                                k->name, (long long)b, (long long)v, (long long)sh->T);
        }
    }
    return read_activations(r, attrs);
}

/* ---- Memory descriptors and primitives ---- */

static d5_status md_tag(dnnl_memory_desc_t *md, int nd, const int64_t *dims, dnnl_format_tag_t tag,
                        const char *op)
{
    dnnl_dims_t d;
    for (int i = 0; i < nd; i++) d[i] = dims[i];
    return d5__dnnl_check(dnnl_memory_desc_init_by_tag(md, nd, d, dnnl_f32, tag), op,
                          "memory descriptor");
}

/* The tensors as ONNX (and the staged weights) hold them. */
static d5_status user_mds(drnn *r)
{
    const d5_dnnl_rnn_shape *s = &r->s;
    const char *op = r->k->name;
    const int64_t x[3] = {s->T, s->N, s->I}, y[3] = {s->T, s->N, s->D * s->H};
    const int64_t st[4] = {1, s->D, s->N, s->H}, wl[5] = {1, s->D, s->I, s->G, s->H};
    const int64_t wi[5] = {1, s->D, s->H, s->G, s->H}, b[4] = {1, s->D, s->GB, s->H};
    const int64_t p[4] = {1, s->D, 3, s->H};
    dnnl_format_tag_t data = s->layout ? dnnl_ntc : dnnl_tnc;
    d5_status e = md_tag(&r->user[SRC_LAYER], 3, x, data, op);
    if (e == D5_OK) e = md_tag(&r->user[DST_LAYER], 3, y, data, op);
    if (e == D5_OK && s->layout == 0) e = md_tag(&r->user[SRC_ITER], 4, st, dnnl_ldnc, op);
    if (e == D5_OK && s->layout == 1) { /* [N, D, H] */
        dnnl_dims_t d = {1, s->D, s->N, s->H}, strides = {s->D * s->N * s->H, s->H, s->D * s->H, 1};
        e = d5__dnnl_check(
            dnnl_memory_desc_init_by_strides(&r->user[SRC_ITER], 4, d, dnnl_f32, strides), op,
            "memory descriptor");
    }
    r->user[SRC_ITER_C] = r->user[DST_ITER] = r->user[DST_ITER_C] = r->user[SRC_ITER];
    if (e == D5_OK) e = md_tag(&r->user[W_LAYER], 5, wl, dnnl_ldigo, op);
    if (e == D5_OK) e = md_tag(&r->user[W_ITER], 5, wi, dnnl_ldigo, op);
    if (e == D5_OK) e = md_tag(&r->user[BIAS], 4, b, dnnl_ldgo, op);
    if (e == D5_OK) e = md_tag(&r->user[W_PEEP], 4, p, dnnl_ldgo, op);
    return e;
}

/* Descriptors of every argument for the primitive descriptor: the layouts left
 * to the primitive, but the bias's and the peepholes' (ldgo only). */
static d5_status any_mds(const drnn *r, dnnl_memory_desc_t *m)
{
    d5_status e = D5_OK;
    for (int k = 0; k < DIFF && e == D5_OK; k++) {
        const dnnl_memory_desc_t *u = &r->user[k];
        e = d5__dnnl_check(dnnl_memory_desc_init_by_tag(
                               &m[k], u->ndims, u->dims, dnnl_f32,
                               k == BIAS || k == W_PEEP ? dnnl_ldgo : dnnl_format_tag_any),
                           r->k->name, "memory descriptor");
        m[DIFF + k] = m[k];
    }
    return e;
}

static dnnl_status_t init_desc(const drnn *r, dnnl_prop_kind_t kind, const dnnl_memory_desc_t *m,
                               dnnl_rnn_desc_t *d)
{
    const dnnl_memory_desc_t *x = m, *g = m + DIFF;
    const dnnl_memory_desc_t *peep = r->peephole ? &x[W_PEEP] : NULL;
    const dnnl_memory_desc_t *dpeep = r->peephole ? &g[W_PEEP] : NULL;
    int bwd = kind == dnnl_backward;
    switch (r->s.cell) {
    case D5_DNNL_VANILLA:
        return bwd ? dnnl_vanilla_rnn_backward_desc_init(
                         d, kind, r->act, r->dir, &x[SRC_LAYER], &x[SRC_ITER], &x[W_LAYER],
                         &x[W_ITER], &x[BIAS], &x[DST_LAYER], &x[DST_ITER], &g[SRC_LAYER],
                         &g[SRC_ITER], &g[W_LAYER], &g[W_ITER], &g[BIAS], &g[DST_LAYER],
                         &g[DST_ITER], 0, r->alpha, 0)
                   : dnnl_vanilla_rnn_forward_desc_init(
                         d, kind, r->act, r->dir, &x[SRC_LAYER], &x[SRC_ITER], &x[W_LAYER],
                         &x[W_ITER], &x[BIAS], &x[DST_LAYER], &x[DST_ITER], 0, r->alpha, 0);
    case D5_DNNL_GRU:
        return bwd ? dnnl_gru_backward_desc_init(
                         d, kind, r->dir, &x[SRC_LAYER], &x[SRC_ITER], &x[W_LAYER], &x[W_ITER],
                         &x[BIAS], &x[DST_LAYER], &x[DST_ITER], &g[SRC_LAYER], &g[SRC_ITER],
                         &g[W_LAYER], &g[W_ITER], &g[BIAS], &g[DST_LAYER], &g[DST_ITER], 0)
                   : dnnl_gru_forward_desc_init(d, kind, r->dir, &x[SRC_LAYER], &x[SRC_ITER],
                                                &x[W_LAYER], &x[W_ITER], &x[BIAS], &x[DST_LAYER],
                                                &x[DST_ITER], 0);
    case D5_DNNL_LBR_GRU:
        return bwd ? dnnl_lbr_gru_backward_desc_init(
                         d, kind, r->dir, &x[SRC_LAYER], &x[SRC_ITER], &x[W_LAYER], &x[W_ITER],
                         &x[BIAS], &x[DST_LAYER], &x[DST_ITER], &g[SRC_LAYER], &g[SRC_ITER],
                         &g[W_LAYER], &g[W_ITER], &g[BIAS], &g[DST_LAYER], &g[DST_ITER], 0)
                   : dnnl_lbr_gru_forward_desc_init(d, kind, r->dir, &x[SRC_LAYER], &x[SRC_ITER],
                                                    &x[W_LAYER], &x[W_ITER], &x[BIAS],
                                                    &x[DST_LAYER], &x[DST_ITER], 0);
    default:
        return bwd ? dnnl_lstm_backward_desc_init_v2(
                         d, kind, r->dir, &x[SRC_LAYER], &x[SRC_ITER], &x[SRC_ITER_C], &x[W_LAYER],
                         &x[W_ITER], peep, &x[BIAS], &x[DST_LAYER], &x[DST_ITER], &x[DST_ITER_C],
                         &g[SRC_LAYER], &g[SRC_ITER], &g[SRC_ITER_C], &g[W_LAYER], &g[W_ITER],
                         dpeep, &g[BIAS], &g[DST_LAYER], &g[DST_ITER], &g[DST_ITER_C], 0)
                   : dnnl_lstm_forward_desc_init_v2(d, kind, r->dir, &x[SRC_LAYER], &x[SRC_ITER],
                                                    &x[SRC_ITER_C], &x[W_LAYER], &x[W_ITER], peep,
                                                    &x[BIAS], &x[DST_LAYER], &x[DST_ITER],
                                                    &x[DST_ITER_C], 0);
    }
}

/* An argument the primitive only reads: as d5__dnnl_arg_init, without the
 * reorder back to the user's layout, which oneDNN 2.6 does not have from its
 * packed RNN weights. */
static d5_status arg_init_in(d5_dnnl_arg *a, const d5_dnnl_ctx *c, const dnnl_memory_desc_t *user,
                             const dnnl_memory_desc_t *inner, const char *op)
{
    memset(a, 0, sizeof *a);
    a->user_md = *user;
    a->inner_md = *inner;
    a->same = dnnl_memory_desc_equal(user, inner);
    d5_status s = d5__dnnl_check(
        dnnl_memory_create(&a->user_mem, user, c->engine, DNNL_MEMORY_NONE), op, "memory");
    if (s != D5_OK || a->same) return s;
    s = d5__dnnl_check(dnnl_memory_create(&a->inner_mem, inner, c->engine, DNNL_MEMORY_ALLOCATE),
                       op, "reorder buffer");
    dnnl_primitive_desc_t pd = NULL;
    if (s == D5_OK)
        s = d5__dnnl_check(
            dnnl_reorder_primitive_desc_create(&pd, user, c->engine, inner, c->engine, NULL), op,
            "reorder");
    if (s == D5_OK) s = d5__dnnl_check(dnnl_primitive_create(&a->to_inner, pd), op, "reorder");
    if (pd) dnnl_primitive_desc_destroy(pd);
    return s;
}

/* Builds a primitive of the given kind and its arguments; user[k] is the
 * layout the caller holds argument k in (ndims 0: the primitive's own), and
 * bit k of `outputs` is set for the arguments it writes. */
static d5_status prim_create(drnn *r, prim *p, dnnl_prop_kind_t kind, dnnl_primitive_desc_t hint,
                             const dnnl_memory_desc_t *user, uint32_t outputs)
{
    const char *op = r->k->name;
    dnnl_memory_desc_t any[NSLOT];
    dnnl_rnn_desc_t d;
    d5_status s = any_mds(r, any);
    if (s == D5_OK) s = d5__dnnl_check(init_desc(r, kind, any, &d), op, "RNN descriptor");
    if (s == D5_OK)
        s = d5__dnnl_check(dnnl_primitive_desc_create(&p->pd, &d, NULL, r->ctx.engine, hint), op,
                           "RNN primitive descriptor");
    if (s == D5_OK) s = d5__dnnl_check(dnnl_primitive_create(&p->p, p->pd), op, "RNN primitive");
    int n = kind == dnnl_backward ? NSLOT : DIFF;
    for (int k = 0; k < n && s == D5_OK; k++) {
        const dnnl_memory_desc_t *md =
            dnnl_primitive_desc_query_md(p->pd, dnnl_query_exec_arg_md, slot_arg[k]);
        if (!md || md->ndims == 0) continue;
        p->used[k] = 1;
        const dnnl_memory_desc_t *u = user[k].ndims ? &user[k] : md;
        s = (outputs >> k) & 1 ? d5__dnnl_arg_init(&p->a[k], &r->ctx, u, md, op)
                               : arg_init_in(&p->a[k], &r->ctx, u, md, op);
    }
    if (s == D5_OK && kind == dnnl_forward_training) {
        const dnnl_memory_desc_t *md =
            dnnl_primitive_desc_query_md(p->pd, dnnl_query_workspace_md, 0);
        if (md && md->ndims)
            s = d5__dnnl_check(dnnl_memory_create(&p->ws, md, r->ctx.engine, DNNL_MEMORY_ALLOCATE),
                               op, "workspace");
    }
    return s;
}

/* Runs a primitive on the caller's pointers ptr[k]; `outputs` has bit k set
 * for the arguments it writes; weight gradients start from zero. */
static d5_status prim_run(drnn *r, prim *p, void *const *ptr, uint32_t outputs, dnnl_memory_t ws)
{
    const char *op = r->k->name;
    dnnl_exec_arg_t args[NSLOT + 1];
    int n = 0;
    d5_status s = D5_OK;
    for (int k = 0; k < NSLOT && s == D5_OK; k++) {
        if (!p->used[k]) continue;
        dnnl_memory_t mem = NULL;
        if ((outputs >> k) & 1) {
            s = d5__dnnl_arg_out(&p->a[k], ptr[k], &mem);
            if (s == D5_OK && k >= DIFF + W_LAYER && k <= DIFF + BIAS) {
                const dnnl_memory_desc_t *md;
                void *h = NULL;
                s = d5__dnnl_check(dnnl_memory_get_memory_desc(mem, &md), op, "memory");
                if (s == D5_OK)
                    s = d5__dnnl_check(dnnl_memory_get_data_handle(mem, &h), op, "memory");
                if (s == D5_OK) memset(h, 0, dnnl_memory_desc_get_size(md));
            }
        } else {
            s = d5__dnnl_arg_in(&p->a[k], &r->ctx, ptr[k], &mem, op);
        }
        args[n++] = (dnnl_exec_arg_t){slot_arg[k], mem};
    }
    if (ws) args[n++] = (dnnl_exec_arg_t){DNNL_ARG_WORKSPACE, ws};
    if (s == D5_OK)
        s = d5__dnnl_check(dnnl_primitive_execute(p->p, r->ctx.stream, n, args), op, "execute");
    for (int k = 0; k < NSLOT && s == D5_OK; k++)
        if (p->used[k] && ((outputs >> k) & 1)) s = d5__dnnl_arg_finish(&p->a[k], &r->ctx, op);
    if (s == D5_OK) s = d5__dnnl_check(dnnl_stream_wait(r->ctx.stream), op, "stream");
    return s;
}

/* ---- Weights ---- */

static size_t weight_sizes(const drnn *r, size_t *wl, size_t *wi, size_t *b, size_t *p)
{
    const d5_dnnl_rnn_shape *s = &r->s;
    *wl = (size_t)(s->D * s->G * s->H * s->I);
    *wi = (size_t)(s->D * s->G * s->H * s->H);
    *b = (size_t)(s->D * s->GB * s->H);
    *p = (size_t)(s->D * 3 * s->H);
    return *wl + *wi + *b + *p;
}

/* One allocation for the four staged tensors. */
static d5_status alloc_weights(const drnn *r, float **wl, float **wi, float **b, float **p)
{
    size_t nwl, nwi, nb, np, n = weight_sizes(r, &nwl, &nwi, &nb, &np);
    *wl = d5_calloc(n, sizeof(float), "RNN weights (dnnl)");
    if (!*wl) return D5_ERR_NOMEM;
    *wi = *wl + nwl;
    *b = *wi + nwi;
    *p = *b + nb;
    return D5_OK;
}

static void stage(drnn *r, const void *W, const void *R, const void *B, const void *P)
{
    d5__dnnl_rnn_weights_in(&r->s, W, r->s.I, r->wl);
    d5__dnnl_rnn_weights_in(&r->s, R, r->s.H, r->wi);
    d5__dnnl_rnn_bias_in(&r->s, B, r->b);
    if (P) d5__dnnl_rnn_peephole_in(&r->s, P, r->p);
}

static const void *opt(const d5_tensor *t, int32_t n, int32_t i)
{
    return i < n && t[i].desc.dtype != D5_DTYPE_INVALID ? t[i].data : NULL;
}

/* ---- The operator ---- */

static d5_status rnn_create(const rnn_kind *k, const d5_tensor *in, int32_t nin,
                            const d5_attrs *attrs, d5_tensor_desc *out, int32_t nout, void **state)
{
    void *ref = NULL; /* the ref operator checks everything and infers the outputs */
    const d5_op_create_args args = {
        .inputs = in, .ninputs = nin, .outputs = out, .noutputs = nout, .attrs = attrs};
    d5_status s = k->ref->create(&args, &ref);
    if (s != D5_OK) return s;
    k->ref->destroy(ref);
    drnn *r = d5_calloc(1, sizeof *r, "RNN (dnnl)");
    if (!r) return D5_ERR_NOMEM;
    r->k = k;
    s = check(r, in, nin, attrs);
    if (s == D5_OK) s = d5__dnnl_ctx_create(&r->ctx, k->name);
    if (s == D5_OK) s = user_mds(r);
    if (s == D5_OK) s = prim_create(r, &r->inf, dnnl_forward_inference, NULL, r->user, FWD_OUTS);
    if (s == D5_OK) s = alloc_weights(r, &r->wl, &r->wi, &r->b, &r->p);
    const d5_dnnl_rnn_shape *sh = &r->s;
    size_t states = (size_t)(sh->D * sh->N * sh->H), ys = (size_t)(sh->T * sh->N * sh->D * sh->H);
    if (s == D5_OK) {
        r->zeros = d5_calloc(ys > states ? ys : states, sizeof(float), "RNN (dnnl)");
        r->scratch =
            d5_alloc((2 * states + (size_t)(sh->T * sh->N * sh->I)) * sizeof(float), "RNN (dnnl)");
        if (sh->D == 2 && sh->layout == 0) r->ystage = d5_alloc(ys * sizeof(float), "RNN (dnnl)");
        if (!r->zeros || !r->scratch || (sh->D == 2 && sh->layout == 0 && !r->ystage))
            s = D5_ERR_NOMEM;
    }
    /* Weights known now are converted and reordered once. */
    const void *W = opt(in, nin, 1), *R = opt(in, nin, 2), *B = opt(in, nin, 3);
    const void *P = opt(in, nin, 7);
    int has_b = nin > 3 && in[3].desc.dtype != D5_DTYPE_INVALID;
    if (s == D5_OK && W && R && (B || !has_b) && (P || !r->peephole)) {
        stage(r, W, R, B, P);
        void *ptr[4] = {r->wl, r->wi, r->b, r->p};
        const int slots[4] = {W_LAYER, W_ITER, BIAS, W_PEEP};
        for (int i = 0; i < 4 && s == D5_OK; i++)
            if (r->inf.used[slots[i]])
                s = d5__dnnl_arg_pack(&r->inf.a[slots[i]], &r->ctx, ptr[i], k->name);
        r->packed = s == D5_OK;
    }
    if (s != D5_OK) {
        destroy(r);
        return s;
    }
    *state = r;
    return D5_OK;
}

/* The pointers of the forward arguments: X, the initial states (or zeros),
 * the staged weights and the outputs given. */
static void forward_ptrs(drnn *r, const d5_tensor *in, int32_t nin, void **ptr)
{
    size_t states = (size_t)(r->s.D * r->s.N * r->s.H);
    const void *h0 = opt(in, nin, 5), *c0 = opt(in, nin, 6);
    ptr[SRC_LAYER] = in[0].data;
    ptr[SRC_ITER] = h0 ? (void *)h0 : r->zeros;
    ptr[SRC_ITER_C] = c0 ? (void *)c0 : r->zeros;
    ptr[W_LAYER] = r->wl;
    ptr[W_ITER] = r->wi;
    ptr[BIAS] = r->b;
    ptr[W_PEEP] = r->p;
    ptr[DST_ITER] = r->scratch;
    ptr[DST_ITER_C] = r->scratch + states;
}

static d5_status forward(void *state, const d5_op_call *call)
{
    const d5_tensor *in = call->inputs;
    int32_t nin = call->ninputs;
    d5_tensor *out = call->outputs;
    int32_t nout = call->noutputs;
    drnn *r = state;
    if (!r->packed) stage(r, in[1].data, in[2].data, opt(in, nin, 3), opt(in, nin, 7));
    void *ptr[NSLOT] = {0};
    forward_ptrs(r, in, nin, ptr);
    ptr[DST_LAYER] = r->ystage ? (void *)r->ystage : out[0].data;
    if (nout > 1) ptr[DST_ITER] = out[1].data;
    if (nout > 2) ptr[DST_ITER_C] = out[2].data;
    d5_status s = prim_run(r, &r->inf, ptr, FWD_OUTS, NULL);
    if (s == D5_OK && r->ystage) d5__dnnl_rnn_y_out(&r->s, r->ystage, out[0].data);
    return s;
}

static d5_status build_backward(drnn *r)
{
    const char *op = r->k->name;
    dnnl_memory_desc_t own[NSLOT], user[NSLOT];
    memset(own, 0, sizeof own);
    memcpy(own, r->user, sizeof r->user);
    for (int k = DST_LAYER; k <= DST_ITER_C; k++) memset(&own[k], 0, sizeof own[k]);
    d5_status s = prim_create(r, &r->train, dnnl_forward_training, NULL, own, FWD_OUTS);
    /* The backward primitive reads the training forward's outputs in that
     * primitive's layouts, everything else as the caller holds it. */
    memcpy(user, r->user, sizeof r->user);
    memcpy(user + DIFF, r->user, sizeof r->user);
    for (int k = DST_LAYER; k <= DST_ITER_C && s == D5_OK; k++) {
        memset(&user[k], 0, sizeof user[k]);
        if (!r->train.used[k]) continue;
        user[k] = r->train.a[k].inner_md;
        r->tdst[k - DST_LAYER] = d5_alloc(dnnl_memory_desc_get_size(&user[k]), "RNN (dnnl)");
        if (!r->tdst[k - DST_LAYER]) s = D5_ERR_NOMEM;
    }
    if (s == D5_OK) s = prim_create(r, &r->bwd, dnnl_backward, r->train.pd, user, BWD_OUTS);
    if (s == D5_OK) s = alloc_weights(r, &r->dwl, &r->dwi, &r->db, &r->dp);
    if (s == D5_OK && !r->train.ws)
        s = d5_error(D5_ERR_BACKEND, "%s (dnnl): the training forward has no workspace", op);
    if (s != D5_OK) { /* leave no half-built backward behind: the next call retries */
        prim_free(&r->train);
        prim_free(&r->bwd);
        for (int i = 0; i < 3; i++) {
            d5_free(r->tdst[i]);
            r->tdst[i] = NULL;
        }
        d5_free(r->dwl);
        r->dwl = r->dwi = r->db = r->dp = NULL;
    }
    return s;
}

static d5_status backward(void *state, const d5_op_call *call)
{
    const d5_tensor *gout = call->grad_outputs;
    int32_t nout = call->noutputs;
    const d5_tensor *in = call->inputs;
    int32_t nin = call->ninputs;
    d5_tensor *gin = call->grad_inputs;
    drnn *r = state;
    d5_status s = r->train.p ? D5_OK : build_backward(r);
    if (s != D5_OK) return s;
    const d5_dnnl_rnn_shape *sh = &r->s;
    size_t states = (size_t)(sh->D * sh->N * sh->H);
    stage(r, in[1].data, in[2].data, opt(in, nin, 3), opt(in, nin, 7));
    void *ptr[NSLOT] = {0};
    forward_ptrs(r, in, nin, ptr);
    for (int k = 0; k < 3; k++) ptr[DST_LAYER + k] = r->tdst[k];
    s = prim_run(r, &r->train, ptr, FWD_OUTS, r->train.ws);
    if (s != D5_OK) return s;
    /* Output gradients (zeros for those not given), input gradients (scratch
     * for those not wanted), and the staged weight gradients. */
    const void *gy = nout > 0 ? gout[0].data : NULL;
    if (gy && r->ystage) {
        d5__dnnl_rnn_y_in(sh, gy, r->ystage);
        gy = r->ystage;
    }
    ptr[DIFF + DST_LAYER] = gy ? (void *)gy : r->zeros;
    ptr[DIFF + DST_ITER] = nout > 1 && gout[1].data ? gout[1].data : r->zeros;
    ptr[DIFF + DST_ITER_C] = nout > 2 && gout[2].data ? gout[2].data : r->zeros;
    ptr[DIFF + SRC_LAYER] = gin[0].data ? gin[0].data : r->scratch + 2 * states;
    ptr[DIFF + SRC_ITER] = opt(in, nin, 5) && gin[5].data ? gin[5].data : r->scratch;
    ptr[DIFF + SRC_ITER_C] = opt(in, nin, 6) && gin[6].data ? gin[6].data : r->scratch + states;
    ptr[DIFF + W_LAYER] = r->dwl;
    ptr[DIFF + W_ITER] = r->dwi;
    ptr[DIFF + BIAS] = r->db;
    ptr[DIFF + W_PEEP] = r->dp;
    s = prim_run(r, &r->bwd, ptr, BWD_OUTS, r->train.ws);
    if (s != D5_OK) return s;
    if (gin[1].data) d5__dnnl_rnn_weights_out(sh, r->dwl, sh->I, gin[1].data);
    if (gin[2].data) d5__dnnl_rnn_weights_out(sh, r->dwi, sh->H, gin[2].data);
    if (opt(in, nin, 3) && gin[3].data) d5__dnnl_rnn_bias_out(sh, r->db, gin[3].data);
    if (opt(in, nin, 7) && gin[7].data) d5__dnnl_rnn_peephole_out(sh, r->dp, gin[7].data);
    return D5_OK;
}

/* The ref operators' count: the matrix products and the cells' element-wise
 * work. Bytes: X, the weights and Y. */
static void cost(void *state, double *flops, double *bytes)
{
    const drnn *r = state;
    const d5_dnnl_rnn_shape *s = &r->s;
    double rows = (double)(s->D * s->T * s->N);
    *flops =
        rows * (2.0 * (double)(s->G * s->H * (s->I + s->H)) + r->k->elementwise * (double)s->H);
    *bytes = 4.0 * ((double)(s->T * s->N * s->I) + (double)(s->D * s->G * s->H * (s->I + s->H)) +
                    rows * (double)s->H);
}

#define RNN_OPERATOR(NAME, KIND, MAX_IN, MAX_OUT)                                                  \
    static d5_status create_##NAME(const d5_op_create_args *args, void **state)                    \
    {                                                                                              \
        return rnn_create(&KIND, args->inputs, args->ninputs, args->attrs, args->outputs,          \
                          args->noutputs, state);                                                  \
    }                                                                                              \
    const d5_op_desc d5__op_dnnl_##NAME = {.abi_version = D5_OP_ABI_VERSION,                       \
                                           .flags = D5_OP_HAS_BACKWARD,                            \
                                           .name = #NAME,                                          \
                                           .backend = "dnnl",                                      \
                                           .min_inputs = 3,                                        \
                                           .max_inputs = MAX_IN,                                   \
                                           .min_outputs = 1,                                       \
                                           .max_outputs = MAX_OUT,                                 \
                                           .create = create_##NAME,                                \
                                           .forward = forward,                                     \
                                           .backward = backward,                                   \
                                           .destroy = destroy,                                     \
                                           .cost = cost}

RNN_OPERATOR(RNN, kind_rnn, 6, 2);
RNN_OPERATOR(GRU, kind_gru, 6, 2);
RNN_OPERATOR(LSTM, kind_lstm, 8, 3);
