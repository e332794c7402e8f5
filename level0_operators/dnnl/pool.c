/* MaxPool and AveragePool on oneDNN's pooling_v2 primitives, float32, 1 to 3
 * spatial axes, with the semantics of the ref operators: kernel_shape,
 * strides, pads, dilations (oneDNN counts dilation - 1), auto_pad and
 * ceil_mode through the window arithmetic of ref/pool.h, and AveragePool's
 * count_include_pad (dnnl_pooling_avg_include_padding or _exclude_padding).
 *
 * oneDNN has no ceil_mode: its output size is always the floor formula, so
 * the end padding handed to it is the one that makes that formula give ref's
 * output size, (out - 1) * stride + extent - D - pads_begin (at least 0). The
 * positions it adds past the ONNX end padding are never the maximum and never
 * counted by an average that excludes padding, so both stay exact. Refused
 * with D5_ERR_UNSUPPORTED, rather than computed differently:
 *   - MaxPool's second output Indices (oneDNN keeps its argmax in an opaque
 *     workspace);
 *   - AveragePool with count_include_pad=1 where a ceil_mode window reaches
 *     past the end padding: ONNX divides by the positions inside the padded
 *     input, oneDNN by the whole kernel;
 *   - AveragePool excluding padding with a dilation larger than the input
 *     (oneDNN refuses it);
 *   - more than 3 spatial axes, and data types other than float32.
 * storage_order only numbers Indices and is accepted (0 or 1) without it.
 *
 * X, Y and their gradients stay in ONNX's plain layouts for the caller and
 * are reordered around each call into the layouts of the fastest kernels
 * (see choose_layout), so the time measured is the time an NCHW caller sees;
 * unless the executor keeps X or Y in oneDNN's blocked layout between
 * convolutions (D5_ATTR_BLOCKED, 2-d pools only), which the primitive then
 * reads and writes directly.
 * The backward, built on first use, is oneDNN's backward-data; MaxPool's
 * needs the workspace of a forward_training run, which backward recomputes
 * from the X it is given, so that backward stays a function of its
 * arguments. Small MaxPools run forward in C, and MaxPool's backward always
 * does where its window table fits (see max_forward and max_backward).
 *
 * GlobalAveragePool (ONNX opset 1) is an AveragePool whose kernel is the
 * whole spatial extent (strides 1, no padding), over 1 to 3 spatial axes;
 * X of rank 2 (no spatial axis, Y = X) and types other than float32 are
 * declined (D5_ERR_UNSUPPORTED) for the ref backend. On ONNX's layout it
 * runs in C (gap_forward, gap_backward) without any primitive; with a
 * blocked X it is the AveragePool above on oneDNN's blocked kernels. */
#include "../ref/pool.h"
#include "dnnl_util.h"
#include "kernels.h"

#include <stdio.h>
#include <string.h>

enum { POOL_MAX, POOL_AVERAGE, POOL_GLOBAL_AVERAGE };

typedef struct dpool {
    const char *name; /* "MaxPool", "AveragePool", "GlobalAveragePool" */
    int max;
    int c_global; /* GlobalAveragePool on ONNX's layout: the C loops, no primitive */
    dnnl_alg_kind_t alg;
    d5_pool p;
    d5_dnnl_ctx ctx;
    dnnl_memory_desc_t src, dst; /* plain */
    dnnl_memory_desc_t src_in;   /* the layout the primitives read X in */
    int plain_in;                /* src_in is ONNX's layout: no jit kernel takes another */
    int blocked_y;               /* Y in the blocked layout: the primitive's own */
    dnnl_dims_t strides, kernel, dilation, pad_l, pad_r;
    dnnl_primitive_t fwd;
    d5_dnnl_arg f_src, f_dst;
    /* backward, built on first use */
    dnnl_primitive_t train, bwd; /* train: MaxPool's forward_training */
    d5_dnnl_arg t_src, b_diff_dst, b_diff_src;
    dnnl_memory_t t_dst, ws; /* in the training primitive's layouts */
    int32_t *win; /* MaxPool: input offsets of every output's window, -1 past the input */
} dpool;

static void destroy(void *state)
{
    dpool *c = state;
    if (!c) return;
    d5_dnnl_arg *args[] = {&c->f_src, &c->f_dst, &c->t_src, &c->b_diff_dst, &c->b_diff_src};
    for (size_t i = 0; i < sizeof args / sizeof args[0]; i++) d5__dnnl_arg_free(args[i]);
    if (c->t_dst) dnnl_memory_destroy(c->t_dst);
    if (c->ws) dnnl_memory_destroy(c->ws);
    if (c->fwd) dnnl_primitive_destroy(c->fwd);
    if (c->train) dnnl_primitive_destroy(c->train);
    if (c->bwd) dnnl_primitive_destroy(c->bwd);
    d5__dnnl_ctx_free(&c->ctx);
    d5_free(c->win);
    d5_free(c);
}

static const dnnl_memory_desc_t *query(dnnl_primitive_desc_t pd, dnnl_query_t q)
{
    return dnnl_primitive_desc_query_md(pd, q, 0);
}

static d5_status any_md(const dpool *c, dnnl_memory_desc_t *any, const dnnl_memory_desc_t *plain)
{
    return d5__dnnl_check(
        dnnl_memory_desc_init_by_tag(any, plain->ndims, plain->dims, dnnl_f32, dnnl_format_tag_any),
        c->name, "memory descriptor");
}

/* A forward primitive descriptor: X in layout c->src_in, Y in any layout. */
static dnnl_status_t try_forward_pd(const dpool *c, dnnl_prop_kind_t kind,
                                    dnnl_primitive_desc_t *pd)
{
    dnnl_memory_desc_t dst_any = c->dst;
    dnnl_pooling_v2_desc_t d;
    dnnl_status_t st = c->blocked_y
                           ? dnnl_success
                           : dnnl_memory_desc_init_by_tag(&dst_any, c->dst.ndims, c->dst.dims,
                                                          dnnl_f32, dnnl_format_tag_any);
    if (st == dnnl_success)
        st = dnnl_pooling_v2_forward_desc_init(&d, kind, c->alg, &c->src_in, &dst_any, c->strides,
                                               c->kernel, c->dilation, c->pad_l, c->pad_r);
    if (st == dnnl_success) st = dnnl_primitive_desc_create(pd, &d, NULL, c->ctx.engine, NULL);
    return st;
}

static d5_status forward_pd(const dpool *c, dnnl_prop_kind_t kind, dnnl_primitive_desc_t *pd)
{
    return d5__dnnl_check(try_forward_pd(c, kind, pd), c->name, "forward primitive descriptor");
}

/* Picks the layout of X: a forward primitive cannot choose it ("any"), and on
 * ONNX's plain layout oneDNN 2.6 has only its slow simple_nchw and reference
 * kernels. The first channel-blocked or channels-last layout that gets a jit
 * kernel wins (on AVX2, blocks of 8 channels: about ten times faster than
 * simple_nchw, reorders included); otherwise X stays plain. */
static d5_status choose_layout(dpool *c)
{
    static const dnnl_format_tag_t tags[3][3] = {{dnnl_aBc16b, dnnl_aBc8b, dnnl_acb},
                                                 {dnnl_aBcd16b, dnnl_aBcd8b, dnnl_acdb},
                                                 {dnnl_aBcde16b, dnnl_aBcde8b, dnnl_acdeb}};
    c->src_in = c->src;
    for (int t = 0; t < 3; t++) {
        dnnl_memory_desc_t md;
        dnnl_primitive_desc_t pd = NULL;
        const char *impl = NULL;
        if (dnnl_memory_desc_init_by_tag(&md, c->src.ndims, c->src.dims, dnnl_f32,
                                         tags[c->src.ndims - 3][t]) != dnnl_success)
            continue;
        c->src_in = md;
        int jit =
            try_forward_pd(c, dnnl_forward_inference, &pd) == dnnl_success &&
            dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) == dnnl_success &&
            impl && strstr(impl, "jit");
        if (pd) dnnl_primitive_desc_destroy(pd);
        if (jit) return D5_OK;
    }
    c->src_in = c->src;
    c->plain_in = 1;
    return D5_OK;
}

/* The window geometry, with the refusals described at the top. */
static d5_status geometry(dpool *c, const d5_tensor *in, int32_t nout, const d5_attrs *attrs,
                          d5_tensor_desc *y)
{
    char op[32];
    snprintf(op, sizeof op, "%s (dnnl)", c->name);
    if (in[0].desc.dtype != D5_F32)
        return d5_error(D5_ERR_UNSUPPORTED, "%s: input 0 is %s; float32 only", op,
                        d5_dtype_name((d5_dtype)in[0].desc.dtype));
    int64_t include = 0;
    d5_status s = D5_OK;
    if (c->max) {
        int64_t order;
        if (nout > 1)
            return d5_error(D5_ERR_UNSUPPORTED,
                            "%s: the Indices output is not supported (oneDNN keeps the position "
                            "of each maximum in an opaque workspace); use the ref backend",
                            op);
        s = d5_attrs_int(attrs, "storage_order", 0, &order);
        if (s == D5_OK && order != 0 && order != 1)
            s = d5_error(D5_ERR_INVALID, "%s: storage_order is %lld, expected 0 or 1", op,
                         (long long)order);
    } else {
        s = d5_attrs_int(attrs, "count_include_pad", 0, &include);
    }
    if (s == D5_OK && in[0].desc.ndim > 5)
        s = d5_error(D5_ERR_UNSUPPORTED, "%s: %d spatial axes; oneDNN pools over 1 to 3", op,
                     (int)in[0].desc.ndim - 2);
    if (s == D5_OK) s = d5__pool_init(op, &in[0].desc, attrs, &c->p, y);
    if (s == D5_OK && (c->max || !include)) s = d5__pool_check_windows(op, &c->p);
    if (s != D5_OK) return s;
    c->alg = c->max    ? dnnl_pooling_max
             : include ? dnnl_pooling_avg_include_padding
                       : dnnl_pooling_avg_exclude_padding;
    const d5_pool *p = &c->p;
    for (int32_t i = 0; i < p->naxes; i++) {
        int64_t extent = (p->kernel[i] - 1) * p->dilation[i] + 1;
        int64_t need = (p->out[i] - 1) * p->stride[i] + extent - p->in[i] - p->pad_begin[i];
        if (need < 0) need = 0;
        if (include && need > p->pad_end[i])
            return d5_error(D5_ERR_UNSUPPORTED,
                            "%s: count_include_pad=1 with ceil_mode windows that extend past the "
                            "end padding (spatial axis %d) is not supported: ONNX divides by the "
                            "positions inside the padded input, oneDNN by the whole kernel",
                            op, (int)i);
        if (!c->max && !include && p->dilation[i] > p->in[i])
            return d5_error(D5_ERR_UNSUPPORTED,
                            "%s: count_include_pad=0 with dilation %lld larger than the input "
                            "(%lld) along spatial axis %d is not supported by oneDNN",
                            op, (long long)p->dilation[i], (long long)p->in[i], (int)i);
        c->strides[i] = p->stride[i];
        c->kernel[i] = p->kernel[i];
        c->dilation[i] = p->dilation[i] - 1;
        c->pad_l[i] = p->pad_begin[i];
        c->pad_r[i] = need;
    }
    return D5_OK;
}

/* The window of every output position of a plane, for MaxPool's backward. */
static d5_status window_table(dpool *c)
{
    const d5_pool *p = &c->p;
    if ((double)p->out_plane * (double)p->window > 1 << 26)
        return D5_OK; /* too large to tabulate: the oneDNN backward runs */
    int64_t *idx = d5_alloc((size_t)p->window * sizeof *idx, c->name);
    c->win = d5_alloc((size_t)(p->out_plane * p->window) * sizeof *c->win, c->name);
    if (!idx || !c->win) {
        d5_free(idx);
        return D5_ERR_NOMEM;
    }
    for (int64_t o = 0; o < p->out_plane; o++) {
        int64_t n = d5__pool_window(p, o, idx, NULL);
        for (int64_t k = 0; k < p->window; k++)
            c->win[o * p->window + k] = k < n ? (int32_t)idx[k] : -1;
    }
    d5_free(idx);
    return D5_OK;
}

/* MaxPool in plain C over the window table, for pools small enough that
 * oneDNN's reorders into and out of its blocked layouts cost more than the
 * pooling itself (LeNet's 64x6x28x28 -> 14x14: 0.4 ms through oneDNN on a
 * 2-core AVX2 machine, reorders included, against 0.03 ms here). Counted in
 * window positions visited. */
#define C_FORWARD_MAX_WORK (1 << 20)

/* The offset of the first maximum of output o's window in plane xp; every
 * window holds an input (check_windows). Kept out of line: inlined into
 * max_backward, LeNet's training step measured 15% slower on a 2-core AMD
 * EPYC (d5 train --dataset synthetic, BACKWARD region). */
__attribute__((noinline)) static int32_t first_max(const dpool *c, const float *xp, int64_t o)
{
    const int32_t *w = c->win + o * c->p.window;
    int32_t best = w[0];
    for (int64_t k = 1; k < c->p.window && w[k] >= 0; k++)
        if (xp[w[k]] > xp[best]) best = w[k];
    return best;
}

static void max_forward(const dpool *c, const float *x, float *y)
{
    const d5_pool *p = &c->p;
    D5_PARALLEL_FOR
    for (int64_t pl = 0; pl < p->planes; pl++) {
        const float *xp = x + pl * p->in_plane;
        float *yp = y + pl * p->out_plane;
        /* The largest value of each window, without branches (a short
         * window ends in -1 entries): which element wins depends on the
         * data, and mispredicted branches cost more than the comparisons. */
        for (int64_t o = 0; o < p->out_plane; o++) {
            const int32_t *w = c->win + o * p->window;
            float m = xp[w[0]];
            for (int64_t k = 1; k < p->window; k++) {
                float v = w[k] < 0 ? m : xp[w[k]];
                m = v > m ? v : m;
            }
            yp[o] = m;
        }
    }
}

/* MaxPool's gradient in plain C: each output's gradient goes to the first
 * maximum of its window. oneDNN's backward needs the workspace of a
 * forward-training pass, which backward would recompute in blocked layouts
 * with reorders around it: about ten times the cost of this loop. Planes are
 * split across the OpenMP threads oneDNN runs on, where d5 is built with
 * OpenMP. */
static void max_backward(const dpool *c, const float *x, const float *gy, float *gx)
{
    const d5_pool *p = &c->p;
    D5_PARALLEL_FOR
    for (int64_t pl = 0; pl < p->planes; pl++) {
        const float *xp = x + pl * p->in_plane, *gp = gy + pl * p->out_plane;
        float *gxp = gx + pl * p->in_plane;
        memset(gxp, 0, (size_t)p->in_plane * sizeof *gxp);
        for (int64_t o = 0; o < p->out_plane; o++) gxp[first_max(c, xp, o)] += gp[o];
    }
}

/* GlobalAveragePool on ONNX's layout, where every plane is contiguous: one
 * pass over each, summed in double into 8 partial sums so that the loop
 * vectorizes. oneDNN 2.6 pools such a layout only with its simple_nchw
 * kernel, or after a reorder into a blocked layout that costs more than the
 * sum (see the measurements in docs/level0.md). */
static void gap_forward(const d5_pool *p, const float *x, float *y)
{
    const int64_t size = p->in_plane;
    D5_PARALLEL_FOR
    for (int64_t pl = 0; pl < p->planes; pl++) {
        const float *xp = x + pl * size;
        double part[8] = {0}, sum = 0;
        int64_t i = 0;
        for (; i + 8 <= size; i += 8)
            for (int k = 0; k < 8; k++) part[k] += xp[i + k];
        for (; i < size; i++) sum += xp[i];
        for (int k = 0; k < 8; k++) sum += part[k];
        y[pl] = (float)(sum / (double)size);
    }
}

/* Its gradient: every position of a plane receives dY / size. */
static void gap_backward(const d5_pool *p, const float *gy, float *gx)
{
    const int64_t size = p->in_plane;
    D5_PARALLEL_FOR
    for (int64_t pl = 0; pl < p->planes; pl++) {
        const float g = (float)((double)gy[pl] / (double)size);
        float *gp = gx + pl * size;
        for (int64_t i = 0; i < size; i++) gp[i] = g;
    }
}

static d5_status pool_create(const char *name, int kind, const d5_tensor *in, const d5_attrs *attrs,
                             d5_tensor_desc *out, int32_t nout, void **state)
{
    dpool *c = d5_calloc(1, sizeof *c, name);
    if (!c) return D5_ERR_NOMEM;
    c->name = name;
    c->max = kind == POOL_MAX;
    d5_tensor_desc y;
    memset(&y, 0, sizeof y);
    y.dtype = D5_F32;
    int64_t blocked = 0;
    d5_status s = d5_attrs_int(attrs, D5_ATTR_BLOCKED, 0, &blocked);
    if (s == D5_OK) s = geometry(c, in, nout, attrs, &y);
    if (s == D5_OK && blocked && y.ndim != 4)
        s = d5_error(D5_ERR_UNSUPPORTED, "%s (dnnl): the blocked layout is for 2-d pools", name);
    /* In training, a MaxPool small enough for the C kernels runs faster on
     * ONNX's layout: oneDNN's backward recomputes the forward for its
     * workspace. The executor keeps that layout when the pool declines. */
    if (s == D5_OK && (blocked & D5_BLOCKED_BACKWARD) && c->max &&
        (double)c->p.planes * (double)c->p.out_plane * (double)c->p.window <= C_FORWARD_MAX_WORK)
        s = d5_error(D5_ERR_UNSUPPORTED,
                     "%s (dnnl): a pool of %.0f window positions runs in C on ONNX's layout", name,
                     (double)c->p.planes * (double)c->p.out_plane * (double)c->p.window);
    if (s == D5_OK && kind == POOL_GLOBAL_AVERAGE && !blocked) {
        c->c_global = 1;
        out[0] = y;
        *state = c;
        return D5_OK;
    }
    if (s == D5_OK) s = d5__dnnl_ctx_create(&c->ctx, name);
    if (s == D5_OK) s = d5__dnnl_plain_md(&c->src, in[0].desc.ndim, in[0].desc.shape, name);
    if (s == D5_OK) s = d5__dnnl_plain_md(&c->dst, y.ndim, y.shape, name);
    if (s == D5_OK && (blocked & D5_BLOCKED_X))
        s = d5__dnnl_blocked_md(&c->src, in[0].desc.shape, in[0].desc.shape[1], name);
    if (s == D5_OK && (blocked & D5_BLOCKED_Y))
        s = d5__dnnl_blocked_md(&c->dst, y.shape, y.shape[1], name);
    c->blocked_y = (blocked & D5_BLOCKED_Y) != 0;
    if (s == D5_OK && (blocked & D5_BLOCKED_X))
        c->src_in = c->src;
    else if (s == D5_OK)
        s = choose_layout(c);
    dnnl_primitive_desc_t pd = NULL;
    if (s == D5_OK) s = forward_pd(c, dnnl_forward_inference, &pd);
    if (s == D5_OK) s = d5__dnnl_check(dnnl_primitive_create(&c->fwd, pd), name, "forward");
    if (s == D5_OK) s = d5__dnnl_arg_init(&c->f_src, &c->ctx, &c->src, &c->src_in, name);
    if (s == D5_OK)
        s = d5__dnnl_arg_init(&c->f_dst, &c->ctx, &c->dst, query(pd, dnnl_query_dst_md), name);
    if (pd) dnnl_primitive_desc_destroy(pd);
    /* The C kernels read and write ONNX's layout. */
    if (s == D5_OK && c->max && !blocked) s = window_table(c);
    if (s != D5_OK) {
        destroy(c);
        return s;
    }
    out[0] = y;
    *state = c;
    return D5_OK;
}

static d5_status run(dpool *c, dnnl_primitive_t p, dnnl_exec_arg_t *args, int n, const char *what)
{
    return d5__dnnl_check(dnnl_primitive_execute(p, c->ctx.stream, n, args), c->name, what);
}

static d5_status forward(void *state, const d5_op_call *call)
{
    const d5_tensor *in = call->inputs;
    d5_tensor *out = call->outputs;
    dpool *c = state;
    if (c->c_global) {
        gap_forward(&c->p, in[0].data, out[0].data);
        return D5_OK;
    }
    if (c->max && c->win &&
        (double)c->p.planes * (double)c->p.out_plane * (double)c->p.window <= C_FORWARD_MAX_WORK) {
        max_forward(c, in[0].data, out[0].data);
        return D5_OK;
    }
    dnnl_exec_arg_t args[2];
    dnnl_memory_t m;
    d5_status s = d5__dnnl_arg_in(&c->f_src, &c->ctx, in[0].data, &m, c->name);
    args[0] = (dnnl_exec_arg_t){DNNL_ARG_SRC, m};
    if (s == D5_OK) s = d5__dnnl_arg_out(&c->f_dst, out[0].data, &m);
    args[1] = (dnnl_exec_arg_t){DNNL_ARG_DST, m};
    if (s == D5_OK) s = run(c, c->fwd, args, 2, "forward");
    if (s == D5_OK) s = d5__dnnl_arg_finish(&c->f_dst, &c->ctx, c->name);
    if (s == D5_OK) s = d5__dnnl_check(dnnl_stream_wait(c->ctx.stream), c->name, "stream");
    return s;
}

static d5_status build_backward(dpool *c)
{
    /* The forward_training primitive descriptor is the backward's hint; for
     * MaxPool its primitive also produces the workspace. */
    dnnl_primitive_desc_t tpd = NULL, bpd = NULL;
    d5_status s = forward_pd(c, dnnl_forward_training, &tpd);
    if (s == D5_OK && c->max) {
        s = d5__dnnl_check(dnnl_primitive_create(&c->train, tpd), c->name, "forward training");
        if (s == D5_OK) s = d5__dnnl_arg_init(&c->t_src, &c->ctx, &c->src, &c->src_in, c->name);
        if (s == D5_OK)
            s = d5__dnnl_check(dnnl_memory_create(&c->t_dst, query(tpd, dnnl_query_dst_md),
                                                  c->ctx.engine, DNNL_MEMORY_ALLOCATE),
                               c->name, "forward training output");
        if (s == D5_OK)
            s = d5__dnnl_check(dnnl_memory_create(&c->ws, query(tpd, dnnl_query_workspace_md),
                                                  c->ctx.engine, DNNL_MEMORY_ALLOCATE),
                               c->name, "workspace");
    }
    /* dX in the layout the forward reads X in, unless that is ONNX's. Left
     * to oneDNN ("any"), it follows dY's strides, and for dY of 1x1 planes (a
     * global pool) oneDNN 2.6 makes of nChw16c the layout acdB16b, which only
     * its reference kernel takes: 3 ms instead of 0.02 ms for 32x64x8x8. */
    dnnl_memory_desc_t src_any = c->src_in, dst_any;
    dnnl_pooling_v2_desc_t d;
    if (s == D5_OK && c->plain_in) s = any_md(c, &src_any, &c->src);
    if (s == D5_OK) s = any_md(c, &dst_any, &c->dst);
    if (s == D5_OK)
        s = d5__dnnl_check(dnnl_pooling_v2_backward_desc_init(&d, c->alg, &src_any, &dst_any,
                                                              c->strides, c->kernel, c->dilation,
                                                              c->pad_l, c->pad_r),
                           c->name, "backward descriptor");
    if (s == D5_OK)
        s = d5__dnnl_check(dnnl_primitive_desc_create(&bpd, &d, NULL, c->ctx.engine, tpd), c->name,
                           "backward primitive descriptor");
    if (s == D5_OK) s = d5__dnnl_check(dnnl_primitive_create(&c->bwd, bpd), c->name, "backward");
    if (s == D5_OK)
        s = d5__dnnl_arg_init(&c->b_diff_dst, &c->ctx, &c->dst, query(bpd, dnnl_query_diff_dst_md),
                              c->name);
    if (s == D5_OK)
        s = d5__dnnl_arg_init(&c->b_diff_src, &c->ctx, &c->src, query(bpd, dnnl_query_diff_src_md),
                              c->name);
    if (tpd) dnnl_primitive_desc_destroy(tpd);
    if (bpd) dnnl_primitive_desc_destroy(bpd);
    return s;
}

static d5_status backward(void *state, const d5_op_call *call)
{
    const d5_tensor *gout = call->grad_outputs;
    const d5_tensor *in = call->inputs;
    d5_tensor *gin = call->grad_inputs;
    dpool *c = state;
    if (!gin[0].data) return D5_OK;
    if (!gout[0].data) { /* no gradient flows in */
        memset(gin[0].data, 0, (size_t)d5_tensor_desc_numel(&in[0].desc) * sizeof(float));
        return D5_OK;
    }
    if (c->max && c->win) {
        max_backward(c, in[0].data, gout[0].data, gin[0].data);
        return D5_OK;
    }
    if (c->c_global) {
        gap_backward(&c->p, gout[0].data, gin[0].data);
        return D5_OK;
    }
    if (!c->bwd) {
        d5_status s = build_backward(c);
        if (s != D5_OK) {
            /* leave no half-built backward behind: the next call retries */
            d5_dnnl_arg *args[] = {&c->t_src, &c->b_diff_dst, &c->b_diff_src};
            for (size_t i = 0; i < sizeof args / sizeof args[0]; i++) d5__dnnl_arg_free(args[i]);
            if (c->t_dst) dnnl_memory_destroy(c->t_dst);
            if (c->ws) dnnl_memory_destroy(c->ws);
            if (c->train) dnnl_primitive_destroy(c->train);
            if (c->bwd) dnnl_primitive_destroy(c->bwd);
            c->t_dst = c->ws = NULL;
            c->train = c->bwd = NULL;
            return s;
        }
    }
    dnnl_memory_t m;
    d5_status s = D5_OK;
    if (c->max) {
        s = d5__dnnl_arg_in(&c->t_src, &c->ctx, in[0].data, &m, c->name);
        dnnl_exec_arg_t targs[3] = {
            {DNNL_ARG_SRC, m}, {DNNL_ARG_DST, c->t_dst}, {DNNL_ARG_WORKSPACE, c->ws}};
        if (s == D5_OK) s = run(c, c->train, targs, 3, "forward training");
    }
    dnnl_exec_arg_t args[3];
    int n = 0;
    if (s == D5_OK) s = d5__dnnl_arg_in(&c->b_diff_dst, &c->ctx, gout[0].data, &m, c->name);
    args[n++] = (dnnl_exec_arg_t){DNNL_ARG_DIFF_DST, m};
    if (s == D5_OK) s = d5__dnnl_arg_out(&c->b_diff_src, gin[0].data, &m);
    args[n++] = (dnnl_exec_arg_t){DNNL_ARG_DIFF_SRC, m};
    if (c->max) args[n++] = (dnnl_exec_arg_t){DNNL_ARG_WORKSPACE, c->ws};
    if (s == D5_OK) s = run(c, c->bwd, args, n, "backward");
    if (s == D5_OK) s = d5__dnnl_arg_finish(&c->b_diff_src, &c->ctx, c->name);
    if (s == D5_OK) s = d5__dnnl_check(dnnl_stream_wait(c->ctx.stream), c->name, "stream");
    return s;
}

/* One comparison or addition per window position; X read and Y written. */
static void cost(void *state, double *flops, double *bytes)
{
    const d5_pool *p = &((dpool *)state)->p;
    double out = (double)p->planes * (double)p->out_plane;
    *flops = out * (double)p->window;
    *bytes = 4.0 * ((double)p->planes * (double)p->in_plane + out);
}

static d5_status maxpool_create(const d5_op_create_args *args, void **state)
{
    return pool_create("MaxPool", POOL_MAX, args->inputs, args->attrs, args->outputs,
                       args->noutputs, state);
}

static d5_status averagepool_create(const d5_op_create_args *args, void **state)
{
    return pool_create("AveragePool", POOL_AVERAGE, args->inputs, args->attrs, args->outputs,
                       args->noutputs, state);
}

/* GlobalAveragePool as the AveragePool whose kernel_shape is X's spatial
 * shape; the executor's D5_ATTR_BLOCKED is passed on, ONNX's operator has no
 * attributes of its own. */
static d5_status globalaveragepool_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    const d5_attrs *attrs = args->attrs;
    d5_tensor_desc *out = args->outputs;
    int32_t nout = args->noutputs;
    const d5_tensor_desc *x = &in[0].desc;
    if (x->dtype != D5_F32)
        return d5_error(D5_ERR_UNSUPPORTED, "GlobalAveragePool (dnnl): input 0 is %s; float32 only",
                        d5_dtype_name((d5_dtype)x->dtype));
    if (x->ndim < 3 || x->ndim > 5)
        return d5_error(D5_ERR_UNSUPPORTED,
                        "GlobalAveragePool (dnnl): input 0 has %d dims; oneDNN pools over 1 to 3 "
                        "spatial axes (N x C x D1 [x D2 [x D3]])",
                        (int)x->ndim);
    int64_t kernel[3];
    for (int32_t i = 2; i < x->ndim; i++) {
        kernel[i - 2] = x->shape[i];
        if (x->shape[i] == 0)
            return d5_error(D5_ERR_SHAPE,
                            "GlobalAveragePool (dnnl): spatial axis %d of input 0 is empty (shape "
                            "%lld), there is no mean to take",
                            (int)(i - 2), (long long)x->shape[i]);
    }
    d5_attr items[2] = {
        {.name = "kernel_shape", .type = D5_ATTR_INTS, .ints = kernel, .count = x->ndim - 2}};
    int32_t n = 1;
    const d5_attr *blocked = d5_attrs_find(attrs, D5_ATTR_BLOCKED);
    if (blocked) items[n++] = *blocked;
    /* Y's planes are 1x1: in whole blocks of channels, the blocked layout
     * holds Y's bytes in ONNX's order, so with X blocked the primitive writes
     * Y (and reads dY) in its own layout, without reorders. */
    if (blocked && blocked->type == D5_ATTR_INT && (blocked->i & D5_BLOCKED_X))
        items[1].i |= D5_BLOCKED_Y;
    const d5_attrs gattrs = {items, n};
    return pool_create("GlobalAveragePool", POOL_GLOBAL_AVERAGE, in, &gattrs, out, nout, state);
}

/* All three take the blocked layout. */
#define POOL_FLAGS (D5_OP_HAS_BACKWARD | D5_OP_BLOCKED_LAYOUT)

/* clang-format off */
const d5_op_desc d5__op_dnnl_MaxPool = {
    .abi_version = D5_OP_ABI_VERSION, .flags = POOL_FLAGS, .name = "MaxPool", .backend = "dnnl",
    .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 2, .create = maxpool_create,
    .forward = forward, .backward = backward, .destroy = destroy, .cost = cost};
/* clang-format on */

/* clang-format off */
const d5_op_desc d5__op_dnnl_AveragePool = {
    .abi_version = D5_OP_ABI_VERSION, .flags = POOL_FLAGS, .name = "AveragePool", .backend = "dnnl",
    .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1,
    .create = averagepool_create, .forward = forward, .backward = backward, .destroy = destroy,
    .cost = cost};
/* clang-format on */

/* clang-format off */
const d5_op_desc d5__op_dnnl_GlobalAveragePool = {
    .abi_version = D5_OP_ABI_VERSION, .flags = POOL_FLAGS, .name = "GlobalAveragePool",
    .backend = "dnnl", .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1,
    .create = globalaveragepool_create, .forward = forward, .backward = backward,
    .destroy = destroy, .cost = cost};
/* clang-format on */
