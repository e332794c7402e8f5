/* bench/operators/conv: convolution forward on DeepBench training sizes, d5's
 * backends against oneDNN called directly, in one run:
 *   d5 dnnl / d5 blas  - Conv through d5_op_forward, NCHW in and out;
 *   oneDNN NCHW        - a oneDNN primitive in its preferred layouts with
 *                        reorders from and to NCHW around it (what an NCHW
 *                        caller of oneDNN gets);
 *   oneDNN blocked     - the primitive alone on data already in its layouts
 *                        (the floor: no layout conversion at all);
 *   d5 ref             - the reference, on the smallest size only.
 * Medians with 95% CIs, ratios of medians and Mann-Whitney p-values.
 *
 *     d5-bench-conv [--time S]
 */
#include "cli.h"
#include "sizes.h"

#include <oneapi/dnnl/dnnl.h>
#include <stdlib.h>
#include <string.h>

static const char *const sizes[] = {
    "W=28,H=28,C=192,N=16,K=64,S=1,R=1,pad_w=0,pad_h=0,wstride=1,hstride=1",
    "W=56,H=56,C=64,N=16,K=64,S=3,R=3,pad_w=1,pad_h=1,wstride=1,hstride=1",
    "W=28,H=28,C=128,N=16,K=128,S=3,R=3,pad_w=1,pad_h=1,wstride=1,hstride=1",
    "W=14,H=14,C=512,N=16,K=48,S=5,R=5,pad_w=2,pad_h=2,wstride=1,hstride=1",
    "W=224,H=224,C=3,N=16,K=64,S=7,R=7,pad_w=3,pad_h=3,wstride=2,hstride=2",
};

#define CHECK(x)                                                                                   \
    do {                                                                                           \
        if ((x) != dnnl_success) {                                                                 \
            fprintf(stderr, "oneDNN call failed: %s\n", #x);                                       \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

/* A oneDNN convolution set up by hand, as a user of oneDNN would. */
typedef struct direct {
    dnnl_engine_t eng;
    dnnl_stream_t strm;
    dnnl_primitive_t conv, r_src, r_wei, r_dst;
    dnnl_memory_t u_src, u_wei, u_dst, p_src, p_wei, p_dst;
    int blocked_only;
} direct;

static dnnl_primitive_t reorder(dnnl_engine_t e, const dnnl_memory_desc_t *from,
                                const dnnl_memory_desc_t *to)
{
    if (dnnl_memory_desc_equal(from, to)) return NULL;
    dnnl_primitive_desc_t pd;
    dnnl_primitive_t p;
    CHECK(dnnl_reorder_primitive_desc_create(&pd, from, e, to, e, NULL));
    CHECK(dnnl_primitive_create(&p, pd));
    dnnl_primitive_desc_destroy(pd);
    return p;
}

static void direct_init(direct *d, const int64_t *x, const int64_t *w, const int64_t *y,
                        const int64_t *pads, const int64_t *strides, const float *in,
                        const float *wt, float *out)
{
    memset(d, 0, sizeof *d);
    CHECK(dnnl_engine_create(&d->eng, dnnl_cpu, 0));
    CHECK(dnnl_stream_create(&d->strm, d->eng, dnnl_stream_default_flags));
    dnnl_dims_t xd = {x[0], x[1], x[2], x[3]}, wd = {w[0], w[1], w[2], w[3]},
                yd = {y[0], y[1], y[2], y[3]};
    dnnl_memory_desc_t ux, uw, uy, ax, aw, ay;
    CHECK(dnnl_memory_desc_init_by_tag(&ux, 4, xd, dnnl_f32, dnnl_nchw));
    CHECK(dnnl_memory_desc_init_by_tag(&uw, 4, wd, dnnl_f32, dnnl_oihw));
    CHECK(dnnl_memory_desc_init_by_tag(&uy, 4, yd, dnnl_f32, dnnl_nchw));
    CHECK(dnnl_memory_desc_init_by_tag(&ax, 4, xd, dnnl_f32, dnnl_format_tag_any));
    CHECK(dnnl_memory_desc_init_by_tag(&aw, 4, wd, dnnl_f32, dnnl_format_tag_any));
    CHECK(dnnl_memory_desc_init_by_tag(&ay, 4, yd, dnnl_f32, dnnl_format_tag_any));
    dnnl_dims_t st = {strides[0], strides[1]}, dil = {0, 0}, pl = {pads[0], pads[1]},
                pr = {pads[2], pads[3]};
    dnnl_convolution_desc_t cd;
    CHECK(dnnl_dilated_convolution_forward_desc_init(&cd, dnnl_forward_inference,
                                                     dnnl_convolution_direct, &ax, &aw, NULL, &ay,
                                                     st, dil, pl, pr));
    dnnl_primitive_desc_t pd;
    CHECK(dnnl_primitive_desc_create(&pd, &cd, NULL, d->eng, NULL));
    CHECK(dnnl_primitive_create(&d->conv, pd));
    const dnnl_memory_desc_t *px = dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0);
    const dnnl_memory_desc_t *pw = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    const dnnl_memory_desc_t *py = dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0);
    CHECK(dnnl_memory_create(&d->u_src, &ux, d->eng, (void *)in));
    CHECK(dnnl_memory_create(&d->u_wei, &uw, d->eng, (void *)wt));
    CHECK(dnnl_memory_create(&d->u_dst, &uy, d->eng, out));
    CHECK(dnnl_memory_create(&d->p_src, px, d->eng, DNNL_MEMORY_ALLOCATE));
    CHECK(dnnl_memory_create(&d->p_wei, pw, d->eng, DNNL_MEMORY_ALLOCATE));
    CHECK(dnnl_memory_create(&d->p_dst, py, d->eng, DNNL_MEMORY_ALLOCATE));
    d->r_src = reorder(d->eng, &ux, px);
    d->r_wei = reorder(d->eng, &uw, pw);
    d->r_dst = reorder(d->eng, py, &uy);
    dnnl_primitive_desc_destroy(pd);
}

static void run_reorder(direct *d, dnnl_primitive_t r, dnnl_memory_t from, dnnl_memory_t to)
{
    if (!r) return;
    dnnl_exec_arg_t a[2] = {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}};
    CHECK(dnnl_primitive_execute(r, d->strm, 2, a));
}

static d5_status direct_run(void *arg)
{
    direct *d = arg;
    int plain = !d->blocked_only;
    if (plain) {
        run_reorder(d, d->r_src, d->u_src, d->p_src);
        run_reorder(d, d->r_wei, d->u_wei, d->p_wei);
    }
    dnnl_exec_arg_t a[3] = {{DNNL_ARG_SRC, d->r_src ? d->p_src : d->u_src},
                            {DNNL_ARG_WEIGHTS, d->r_wei ? d->p_wei : d->u_wei},
                            {DNNL_ARG_DST, d->r_dst ? d->p_dst : d->u_dst}};
    CHECK(dnnl_primitive_execute(d->conv, d->strm, 3, a));
    if (plain) run_reorder(d, d->r_dst, d->p_dst, d->u_dst);
    CHECK(dnnl_stream_wait(d->strm));
    return D5_OK;
}

static void direct_free(direct *d)
{
    dnnl_primitive_t ps[4] = {d->conv, d->r_src, d->r_wei, d->r_dst};
    for (int i = 0; i < 4; i++)
        if (ps[i]) dnnl_primitive_destroy(ps[i]);
    dnnl_memory_t ms[6] = {d->u_src, d->u_wei, d->u_dst, d->p_src, d->p_wei, d->p_dst};
    for (int i = 0; i < 6; i++) dnnl_memory_destroy(ms[i]);
    dnnl_stream_destroy(d->strm);
    dnnl_engine_destroy(d->eng);
}

typedef struct d5run {
    d5_op *op;
    d5_tensor in[2], out;
} d5run;

static d5_status d5_once(void *arg)
{
    d5run *r = arg;
    return d5_op_forward(r->op, r->in, &r->out);
}

static d5_status measure(d5_run_fn fn, void *ctx, double seconds, int reps, d5_measurement *m)
{
    d5_measure_params p = d5_measure_default_params();
    p.max_time_s = seconds;
    if (reps) {
        p.warmup = 0;
        p.min_reps = p.max_reps = (uint32_t)reps;
    }
    return d5_measure_run(fn, ctx, &p, m);
}

static void row(const char *what, const d5_measurement *m, double gflop, const d5_measurement *base)
{
    const d5_stats *s = &m->stats;
    printf("  %-16s %9.3f ms [%.3f, %.3f] n=%-4zu %7.1f GFLOP/s", what, s->median * 1e-6,
           s->ci_low * 1e-6, s->ci_high * 1e-6, s->n, gflop / (s->median * 1e-9));
    if (base) {
        d5_mwu u;
        if (d5_mann_whitney(m->samples, m->n, base->samples, base->n, &u) == D5_OK)
            printf("  x%.3f of d5 dnnl (p = %.2g)", s->median / base->stats.median, u.p_value);
    }
    printf("\n");
}

int main(int argc, char **argv)
{
    cli_wait_policy_restart(argv); /* d5's OpenMP wait policy, as the d5 tool has it */
    double seconds = 2.0;
    int skip_ref = 0;
    const cli_opt opts[] = {
        {"time", CLI_DOUBLE, &seconds, "S", "time budget per measurement (default 2)", 0.01, 600},
        {"no-ref", CLI_FLAG, &skip_ref, NULL, "skip the reference backend", 0, 0},
    };
    const cli_spec spec = {CLI_SPEC("bench-conv", "[--time S] [--no-ref]",
                                    "Conv forward: d5 backends against oneDNN called directly.",
                                    opts)};
    int rc = cli_parse(&spec, argc, argv);
    if (rc >= 0) return rc;
    cli_echo(stdout, &spec);
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        op_case *c;
        size_t n;
        d5_status s = sizes_load("Conv", 2, sizes[i], &c, &n);
        if (s != D5_OK) return cli_fail("bench-conv", s);
        d5_attrs attrs = {c[0].attrs, c[0].nattrs};
        const int64_t *x = c[0].in[0].shape, *w = c[0].in[1].shape;
        printf("\n%s\n", c[0].label);
        d5_measurement md = {0}, mb = {0}, mr = {0}, mp = {0}, mk = {0};
        double gflop = 0;
        d5run runs[3];
        memset(runs, 0, sizeof runs);
        const char *names[3] = {"dnnl", "blas", "ref"};
        for (int b = 0; b < 3; b++) {
            if (b == 2 && (skip_ref || i != 0)) continue;
            const d5_op_desc *d;
            d5run *r = &runs[b];
            memset(r, 0, sizeof *r);
            s = d5_op_find("Conv", names[b], &d);
            if (s == D5_OK) s = d5_op_create_desc(d, c[0].in, 2, &attrs, 0, &r->op);
            if (s == D5_OK) s = d5_tensor_alloc(&c[0].in[0], &r->in[0]);
            if (s == D5_OK) s = d5_tensor_alloc(&c[0].in[1], &r->in[1]);
            if (s == D5_OK) s = d5_tensor_alloc(d5_op_output_desc(r->op, 0), &r->out);
            if (s != D5_OK) return cli_fail("bench-conv", s);
            d5_rng rng;
            d5_rng_seed(&rng, 1);
            d5_tensor_fill_uniform(&r->in[0], &rng, -1, 1);
            d5_tensor_fill_uniform(&r->in[1], &rng, -1, 1);
            double f;
            d5_op_cost(r->op, &f, NULL);
            gflop = f * 1e-9;
            s = measure(d5_once, r, seconds, b == 2 ? 2 : 0, b == 0 ? &md : b == 1 ? &mb : &mr);
            if (s != D5_OK) return cli_fail("bench-conv", s);
        }
        const d5_tensor_desc *y = d5_op_output_desc(runs[0].op, 0);
        const d5_attr *pads = d5_attrs_find(&attrs, "pads"),
                      *str = d5_attrs_find(&attrs, "strides");
        direct dd;
        direct_init(&dd, x, w, y->shape, pads->ints, str->ints, runs[0].in[0].data,
                    runs[0].in[1].data, runs[0].out.data);
        s = measure(direct_run, &dd, seconds, 0, &mp);
        dd.blocked_only = 1;
        if (s == D5_OK) s = measure(direct_run, &dd, seconds, 0, &mk);
        direct_free(&dd);
        if (s != D5_OK) return cli_fail("bench-conv", s);
        row("d5 dnnl", &md, gflop, NULL);
        row("d5 blas", &mb, gflop, &md);
        row("oneDNN NCHW", &mp, gflop, &md);
        row("oneDNN blocked", &mk, gflop, &md);
        if (mr.n) row("d5 ref", &mr, gflop, &md);
        for (int b = 0; b < 3; b++) {
            if (!runs[b].op) continue;
            d5_tensor_free(&runs[b].in[0]);
            d5_tensor_free(&runs[b].in[1]);
            d5_tensor_free(&runs[b].out);
            d5_op_free(runs[b].op);
        }
        d5_measurement *all[5] = {&md, &mb, &mr, &mp, &mk};
        for (int k = 0; k < 5; k++) d5_measurement_free(all[k]);
        free(c);
    }
    return D5_EXIT_OK;
}
