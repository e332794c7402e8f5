/* The executor: inference against values computed here, backprop against
 * finite differences, backends against ref, memory reuse, events, the timer
 * and FrameworkOverhead. */
#include "support.h"

#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

static void add_param(d5_network *net, const char *name, d5_dtype dt, int32_t ndim,
                      const int64_t *shape, uint64_t seed)
{
    d5_tensor_desc d;
    d5_tensor t;
    cr_assert_eq(d5_tensor_desc_make(dt, ndim, shape, &d), D5_OK);
    cr_assert_eq(d5_tensor_alloc(&d, &t), D5_OK);
    d5_rng r;
    d5_rng_seed(&r, seed);
    int64_t n = d5_tensor_desc_numel(&d);
    for (int64_t i = 0; i < n; i++) {
        double u = d5_rng_uniform(&r) - 0.5;
        if (dt == D5_F32)
            ((float *)t.data)[i] = (float)u;
        else
            ((double *)t.data)[i] = u;
    }
    cr_assert_eq(d5_network_add_initializer_take(net, name, &t), D5_OK);
}

static void node(d5_network *net, const char *name, const char *op, const char **in, int32_t nin,
                 const char *out, const d5_attrs *attrs)
{
    cr_assert_eq(
        d5_network_add_node(net, name, op, NULL, in, nin, (const char *[]){out}, 1, attrs, NULL),
        D5_OK, "%s", d5_last_error());
}

/* A network `name` (NULL: unnamed) whose one input `input` has type dt and
 * `shape`; the input's descriptor in *desc when desc is not NULL. */
static d5_network *with_input(const char *name, const char *input, d5_dtype dt, int32_t ndim,
                              const int64_t *shape, d5_tensor_desc *desc)
{
    d5_network *net = NULL;
    cr_assert_eq(d5_network_create(name, &net), D5_OK);
    d5_tensor_desc d;
    cr_assert_eq(d5_tensor_desc_make(dt, ndim, shape, &d), D5_OK);
    cr_assert_eq(d5_network_add_input(net, input, &d, NULL), D5_OK);
    if (desc) *desc = d;
    return net;
}

/* An executor of net with options o (NULL: the defaults), asserting success. */
static d5_executor *executor(d5_network *net, const d5_executor_options *o)
{
    d5_executor *ex = NULL;
    cr_assert_eq(d5_executor_create(net, o, &ex), D5_OK, "%s", d5_last_error());
    return ex;
}

/* x[B,4] -> Gemm(W1[5,4], b1, transB) -> Tanh = h;
 * y = Gemm(h, W2[3,5], b2, transB) + Sigmoid(h) @ ... kept simple: h feeds two
 * branches (Tanh, Sigmoid) that are added, so h's gradient accumulates. The
 * loss is MeanSquaredError(y, t) when `loss` is set. */
static d5_network *two_layer(d5_dtype dt, int64_t batch, int loss)
{
    d5_network *net = with_input("two_layer", "x", dt, 2, (int64_t[]){batch, 4}, NULL);
    add_param(net, "W1", dt, 2, (int64_t[]){5, 4}, 1);
    add_param(net, "b1", dt, 1, (int64_t[]){5}, 2);
    add_param(net, "W2", dt, 2, (int64_t[]){3, 5}, 3);
    add_param(net, "b2", dt, 1, (int64_t[]){3}, 4);
    d5_attr tb = {.name = "transB", .type = D5_ATTR_INT, .i = 1};
    d5_attrs attrs = {&tb, 1};
    node(net, "fc1", "Gemm", (const char *[]){"x", "W1", "b1"}, 3, "h", &attrs);
    node(net, "tanh", "Tanh", (const char *[]){"h"}, 1, "a", NULL);
    node(net, "sig", "Sigmoid", (const char *[]){"h"}, 1, "b", NULL);
    node(net, "add", "Add", (const char *[]){"a", "b"}, 2, "ab", NULL);
    node(net, "fc2", "Gemm", (const char *[]){"ab", "W2", "b2"}, 3, "y", &attrs);
    if (loss) {
        d5_tensor_desc t;
        cr_assert_eq(d5_tensor_desc_make(dt, 2, (int64_t[]){batch, 3}, &t), D5_OK);
        cr_assert_eq(d5_network_add_input(net, "t", &t, NULL), D5_OK);
        node(net, "mse", "MeanSquaredError", (const char *[]){"y", "t"}, 2, "loss", NULL);
        cr_assert_eq(d5_network_add_output(net, "loss", NULL), D5_OK);
    } else {
        cr_assert_eq(d5_network_add_output(net, "y", NULL), D5_OK);
    }
    return net;
}

static double get(const d5_tensor *t, int64_t i)
{
    return t->desc.dtype == D5_F32 ? ((const float *)t->data)[i] : ((const double *)t->data)[i];
}

static void fill(d5_tensor *t, uint64_t seed)
{
    d5_rng r;
    d5_rng_seed(&r, seed);
    int64_t n = d5_tensor_desc_numel(&t->desc);
    for (int64_t i = 0; i < n; i++) {
        double u = 2 * d5_rng_uniform(&r) - 1;
        if (t->desc.dtype == D5_F32)
            ((float *)t->data)[i] = (float)u;
        else
            ((double *)t->data)[i] = u;
    }
}

static const double *param(const d5_network *net, const char *name)
{
    int32_t v;
    cr_assert_eq(d5_network_find_value(net, name, &v), D5_OK);
    d5_value_info info;
    d5_network_value_at(net, v, &info);
    return info.data;
}

/* The forward pass computed here in double. */
static void expected(const d5_network *net, const double *x, int64_t batch, double *y)
{
    const double *W1 = param(net, "W1"), *b1 = param(net, "b1");
    const double *W2 = param(net, "W2"), *b2 = param(net, "b2");
    for (int64_t n = 0; n < batch; n++) {
        double ab[5];
        for (int j = 0; j < 5; j++) {
            double h = b1[j];
            for (int k = 0; k < 4; k++) h += x[n * 4 + k] * W1[j * 4 + k];
            ab[j] = tanh(h) + 1 / (1 + exp(-h));
        }
        for (int o = 0; o < 3; o++) {
            double s = b2[o];
            for (int j = 0; j < 5; j++) s += ab[j] * W2[o * 5 + j];
            y[n * 3 + o] = s;
        }
    }
}

Test(executor, inference_matches_hand_computation)
{
    d5_network *net = two_layer(D5_F64, 3, 0);
    d5_executor_options o = d5_executor_default_options();
    o.backend = "ref";
    d5_executor *ex = executor(net, &o);
    d5_tensor x;
    d5_tensor_desc xd;
    cr_assert_eq(d5_tensor_desc_make(D5_F64, 2, (int64_t[]){3, 4}, &xd), D5_OK);
    cr_assert_eq(d5_tensor_alloc(&xd, &x), D5_OK);
    fill(&x, 9);
    cr_assert_eq(d5_executor_feed(ex, "x", &x), D5_OK);
    cr_assert_eq(d5_executor_inference(ex), D5_OK, "%s", d5_last_error());
    d5_tensor y;
    cr_assert_eq(d5_executor_fetch(ex, "y", &y), D5_OK);
    double want[9];
    expected(net, x.data, 3, want);
    for (int i = 0; i < 9; i++) cr_assert_float_eq(get(&y, i), want[i], 1e-12, "y[%d]", i);
    /* An intermediate is not kept... */
    cr_assert_eq(d5_executor_fetch(ex, "h", &y), D5_ERR_STATE);
    cr_assert_eq(d5_executor_fetch(ex, "nope", &y), D5_ERR_NOTFOUND);
    /* ...and a feed of the wrong shape names both. */
    d5_tensor bad = x;
    bad.desc.shape[0] = 2;
    cr_assert_eq(d5_executor_feed(ex, "x", &bad), D5_ERR_SHAPE);
    cr_assert(strstr(d5_last_error(), "float64[3,4]"), "%s", d5_last_error());
    d5_tensor_free(&x);
    d5_executor_free(ex);
    d5_network_free(net);
}

/* Central differences of the loss with respect to each parameter element. */
Test(executor, backprop_matches_finite_differences)
{
    d5_network *net = two_layer(D5_F64, 2, 1);
    d5_executor_options o = d5_executor_default_options();
    o.backend = "ref";
    o.backprop = 1;
    o.input_gradients = 1;
    d5_executor *ex = executor(net, &o);
    d5_tensor x, t;
    d5_tensor_desc xd, td;
    cr_assert_eq(d5_tensor_desc_make(D5_F64, 2, (int64_t[]){2, 4}, &xd), D5_OK);
    cr_assert_eq(d5_tensor_desc_make(D5_F64, 2, (int64_t[]){2, 3}, &td), D5_OK);
    cr_assert_eq(d5_tensor_alloc(&xd, &x), D5_OK);
    cr_assert_eq(d5_tensor_alloc(&td, &t), D5_OK);
    fill(&x, 11);
    fill(&t, 12);
    cr_assert_eq(d5_executor_feed(ex, "x", &x), D5_OK);
    cr_assert_eq(d5_executor_feed(ex, "t", &t), D5_OK);
    cr_assert_eq(d5_executor_inference_and_backprop(ex), D5_OK, "%s", d5_last_error());
    const char *names[] = {"W1", "b1", "W2", "b2", "x"};
    for (int p = 0; p < 5; p++) {
        d5_tensor g;
        cr_assert_eq(d5_executor_gradient(ex, names[p], &g), D5_OK, "%s", d5_last_error());
        int64_t n = d5_tensor_desc_numel(&g.desc);
        double *analytic = malloc((size_t)n * sizeof *analytic);
        memcpy(analytic, g.data, (size_t)n * sizeof *analytic);
        double *w = p < 4 ? (double *)param(net, names[p]) : x.data;
        for (int64_t i = 0; i < n; i++) {
            double keep = w[i], h = 1e-6, lp, lm;
            d5_tensor l;
            w[i] = keep + h;
            if (p == 4) cr_assert_eq(d5_executor_feed(ex, "x", &x), D5_OK);
            cr_assert_eq(d5_executor_inference(ex), D5_OK);
            cr_assert_eq(d5_executor_fetch(ex, "loss", &l), D5_OK);
            lp = get(&l, 0);
            w[i] = keep - h;
            if (p == 4) cr_assert_eq(d5_executor_feed(ex, "x", &x), D5_OK);
            cr_assert_eq(d5_executor_inference(ex), D5_OK);
            cr_assert_eq(d5_executor_fetch(ex, "loss", &l), D5_OK);
            lm = get(&l, 0);
            w[i] = keep;
            double numeric = (lp - lm) / (2 * h);
            cr_assert(fabs(numeric - analytic[i]) <= 1e-6 * (1 + fabs(numeric)),
                      "d loss / d %s[%lld]: analytic %.10g, numeric %.10g", names[p], (long long)i,
                      analytic[i], numeric);
        }
        free(analytic);
    }
    d5_tensor g;
    cr_assert_eq(d5_executor_gradient(ex, "t", &g), D5_OK); /* an input, with input_gradients */
    cr_assert_eq(d5_executor_gradient(ex, "h", &g), D5_ERR_NOTFOUND);
    d5_tensor_free(&x);
    d5_tensor_free(&t);
    d5_executor_free(ex);
    d5_network_free(net);
}

/* The fast backends give ref's results, forward and backward (float32). */
Test(executor, backends_agree_with_ref)
{
    /* NULL: the default list, whose backends not built here are skipped. */
    const char *lists[] = {NULL, "blas,ref", "auto"};
    d5_network *net = two_layer(D5_F32, 8, 1);
    d5_tensor_desc xd, td;
    d5_tensor x, t;
    cr_assert_eq(d5_tensor_desc_make(D5_F32, 2, (int64_t[]){8, 4}, &xd), D5_OK);
    cr_assert_eq(d5_tensor_desc_make(D5_F32, 2, (int64_t[]){8, 3}, &td), D5_OK);
    cr_assert_eq(d5_tensor_alloc(&xd, &x), D5_OK);
    cr_assert_eq(d5_tensor_alloc(&td, &t), D5_OK);
    fill(&x, 5);
    fill(&t, 6);
    float want_loss = 0, want_g[20];
    for (int k = -1; k < 3; k++) {
        d5_executor_options o = d5_executor_default_options();
        o.backend = k < 0 ? "ref" : lists[k];
        o.backprop = 1;
        d5_executor *ex = NULL;
        const char *name = o.backend ? o.backend : "default";
        cr_assert_eq(d5_executor_create(net, &o, &ex), D5_OK, "%s: %s", name, d5_last_error());
        cr_assert_eq(d5_executor_feed(ex, "x", &x), D5_OK);
        cr_assert_eq(d5_executor_feed(ex, "t", &t), D5_OK);
        cr_assert_eq(d5_executor_inference_and_backprop(ex), D5_OK, "%s", d5_last_error());
        d5_tensor l, g;
        cr_assert_eq(d5_executor_fetch(ex, "loss", &l), D5_OK);
        cr_assert_eq(d5_executor_gradient(ex, "W1", &g), D5_OK);
        if (k < 0) {
            want_loss = ((float *)l.data)[0];
            memcpy(want_g, g.data, sizeof want_g);
        } else {
            cr_assert_float_eq(((float *)l.data)[0], want_loss, 1e-5, "%s", name);
            for (int i = 0; i < 20; i++)
                cr_assert_float_eq(((float *)g.data)[i], want_g[i], 1e-5, "%s: dW1[%d]", name, i);
        }
        d5_executor_free(ex);
    }
    d5_tensor_free(&x);
    d5_tensor_free(&t);
    d5_network_free(net);
}

/* A chain of 12 Relus needs two live buffers at a time, not twelve. */
Test(executor, memory_plan_reuses_buffers)
{
    d5_network *net = with_input(NULL, "v0", D5_F32, 2, (int64_t[]){64, 64}, NULL);
    char in[16], out[16];
    for (int i = 0; i < 12; i++) {
        snprintf(in, sizeof in, "v%d", i);
        snprintf(out, sizeof out, "v%d", i + 1);
        node(net, NULL, "Relu", (const char *[]){in}, 1, out, NULL);
    }
    cr_assert_eq(d5_network_add_output(net, "v12", NULL), D5_OK);
    d5_executor *ex = executor(net, NULL);
    d5_memory_plan p;
    d5_executor_memory(ex, &p);
    cr_assert_eq(p.buffers, 12);
    cr_assert_eq(p.unshared_bytes, 12 * 64 * 64 * 4);
    cr_assert_eq(p.arena_bytes, 2 * 64 * 64 * 4, "arena %zu", p.arena_bytes);
    d5_executor_free(ex);
    d5_executor_options o = d5_executor_default_options();
    o.keep_values = 1;
    cr_assert_eq(d5_executor_create(net, &o, &ex), D5_OK);
    d5_executor_memory(ex, &p);
    cr_assert_eq(p.arena_bytes, p.unshared_bytes);
    d5_tensor v;
    cr_assert_eq(d5_executor_fetch(ex, "v5", &v), D5_OK);
    d5_executor_free(ex);
    d5_network_free(net);
}

typedef struct counts {
    int before_exec, after_exec, before_node, after_node, after_inf, after_bp, backward_nodes;
} counts;

static d5_status count_events(void *user, const d5_event_info *e)
{
    counts *c = user;
    switch (e->event) {
    case D5_EVENT_BEFORE_EXECUTOR: c->before_exec++; break;
    case D5_EVENT_AFTER_EXECUTOR: c->after_exec++; break;
    case D5_EVENT_BEFORE_NODE:
        c->before_node++;
        cr_assert_not_null(e->node_name);
        if (e->phase == D5_PHASE_BACKWARD) c->backward_nodes++;
        break;
    case D5_EVENT_AFTER_NODE: c->after_node++; break;
    case D5_EVENT_AFTER_INFERENCE: c->after_inf++; break;
    case D5_EVENT_AFTER_BACKPROP: c->after_bp++; break;
    }
    return D5_OK;
}

static d5_status stop_at_add(void *user, const d5_event_info *e)
{
    (void)user;
    if (e->event == D5_EVENT_BEFORE_NODE && strcmp(e->node_name, "add") == 0)
        return d5_error(D5_ERR_STATE, "stopped by a handler");
    return D5_OK;
}

Test(executor, events_and_timer)
{
    d5_network *net = two_layer(D5_F32, 2, 1);
    d5_executor_options o = d5_executor_default_options();
    o.backprop = 1;
    d5_executor *ex = executor(net, &o);
    counts c = {0};
    cr_assert_eq(d5_executor_add_handler(ex, count_events, &c), D5_OK);
    d5_timer *timer = NULL;
    d5_timer_params tp = d5_timer_default_params();
    cr_assert_eq(d5_timer_create(&tp, &timer), D5_OK);
    cr_assert_eq(d5_executor_attach_timer(ex, timer), D5_OK);
    cr_assert_eq(d5_executor_inference_and_backprop(ex), D5_OK, "%s", d5_last_error());
    cr_assert_eq(d5_executor_inference(ex), D5_OK);
    cr_assert_eq(c.before_exec, 2);
    cr_assert_eq(c.after_exec, 2);
    cr_assert_eq(c.after_inf, 2);
    cr_assert_eq(c.after_bp, 1);
    /* 6 nodes forward twice; backward through all 6 (fc1 for W1). */
    cr_assert_eq(c.backward_nodes, 6);
    cr_assert_eq(c.before_node, 18);
    cr_assert_eq(c.after_node, 18);
    d5_timer_id id;
    cr_assert_eq(d5_timer_key(timer, "fc1", &id), D5_OK);
    cr_assert_eq(d5_timer_count(timer, id, D5_TIMER_CPU), 2);
    cr_assert_eq(d5_timer_key(timer, "fc1/backward", &id), D5_OK);
    cr_assert_eq(d5_timer_count(timer, id, D5_TIMER_CPU), 1);
    cr_assert_eq(d5_timer_key(timer, "BACKWARD", &id), D5_OK);
    cr_assert_eq(d5_timer_count(timer, id, D5_TIMER_CPU), 1);
    cr_assert_eq(d5_executor_add_handler(ex, stop_at_add, NULL), D5_OK);
    cr_assert_eq(d5_executor_inference(ex), D5_ERR_STATE);
    d5_executor_free(ex);
    d5_timer_free(timer);
    d5_network_free(net);
}

Test(executor, framework_overhead)
{
    d5_network *net = two_layer(D5_F32, 16, 0);
    d5_executor *ex = executor(net, NULL);
    d5_measure_params mp = d5_measure_default_params();
    mp.max_time_s = 0.05;
    mp.min_reps = 10;
    d5_overhead o;
    cr_assert_eq(d5_overhead_measure(ex, &mp, &o), D5_OK, "%s", d5_last_error());
    cr_assert_eq(o.nodes, 5);
    cr_assert(o.sum_median > 0);
    cr_assert(o.graph.stats.median > 0);
    cr_assert(o.graph.n >= 10);
    cr_assert(o.sum_lo <= o.sum_median && o.sum_median <= o.sum_hi);
    cr_assert_eq(o.graph.n, (size_t)o.rounds); /* paired: see test_overhead.c */
    cr_assert(o.overhead_lo <= o.overhead + 1e-12 && o.overhead <= o.overhead_hi + 1e-12);
    d5_overhead_free(&o);
    d5_executor_free(ex);
    d5_network_free(net);
}

Test(executor, backprop_needs_a_reachable_loss)
{
    d5_network *net = two_layer(D5_F32, 2, 1);
    d5_executor_options o = d5_executor_default_options();
    o.backprop = 1;
    o.loss = "missing";
    d5_executor *ex = NULL;
    cr_assert_eq(d5_executor_create(net, &o, &ex), D5_ERR_NOTFOUND);
    cr_assert(strstr(d5_last_error(), "'missing'"));
    o.loss = "x";
    cr_assert_eq(d5_executor_create(net, &o, &ex), D5_ERR_INVALID);
    cr_assert(strstr(d5_last_error(), "does not depend on any parameter"), "%s", d5_last_error());
    o.loss = NULL;
    o.backprop = 0;
    cr_assert_eq(d5_executor_create(net, &o, &ex), D5_OK);
    cr_assert_eq(d5_executor_inference_and_backprop(ex), D5_ERR_STATE);
    d5_executor_free(ex);
    d5_network_free(net);
}

Test(executor, node_backend_override)
{
    d5_network *net = two_layer(D5_F32, 2, 0);
    d5_executor_options o = d5_executor_default_options();
    o.node_backends = "fc1=ref,fc2=blas";
    d5_executor *ex = executor(net, &o);
    for (int32_t i = 0; i < d5_executor_node_count(ex); i++) {
        d5_exec_node n;
        d5_executor_node_at(ex, i, &n);
        if (strcmp(n.name, "fc1") == 0) cr_assert_str_eq(n.backend, "ref");
        if (strcmp(n.name, "fc2") == 0) cr_assert_str_eq(n.backend, "blas");
    }
    d5_executor_free(ex);
    o.node_backends = "fc1=nosuch";
    cr_assert_neq(d5_executor_create(net, &o, &ex), D5_OK);
    cr_assert(strstr(d5_last_error(), "fc1"), "%s", d5_last_error());
    d5_network_free(net);
}

/* Views share memory: Relu -> Flatten -> Relu runs two nodes and plans two
 * buffers, with the right values. */
Test(executor, views_share_memory)
{
    d5_tensor_desc xd;
    d5_network *net = with_input(NULL, "x", D5_F32, 3, (int64_t[]){2, 3, 4}, &xd);
    node(net, "r1", "Neg", (const char *[]){"x"}, 1, "a", NULL);
    node(net, "flat", "Flatten", (const char *[]){"a"}, 1, "b", NULL);
    node(net, "r2", "Neg", (const char *[]){"b"}, 1, "y", NULL);
    cr_assert_eq(d5_network_add_output(net, "y", NULL), D5_OK);
    d5_executor *ex = executor(net, NULL);
    d5_exec_node n;
    d5_executor_node_at(ex, 1, &n);
    cr_assert_str_eq(n.name, "flat");
    cr_assert_eq(n.view, 1);
    d5_memory_plan p;
    d5_executor_memory(ex, &p);
    cr_assert_eq(p.buffers, 2);
    d5_tensor x, y;
    cr_assert_eq(d5_tensor_alloc(&xd, &x), D5_OK);
    fill(&x, 3);
    cr_assert_eq(d5_executor_feed(ex, "x", &x), D5_OK);
    cr_assert_eq(d5_executor_inference(ex), D5_OK, "%s", d5_last_error());
    cr_assert_eq(d5_executor_fetch(ex, "y", &y), D5_OK);
    cr_assert_eq(y.desc.ndim, 2);
    cr_assert_eq(y.desc.shape[1], 12);
    for (int i = 0; i < 24; i++) cr_assert_eq(((float *)y.data)[i], ((float *)x.data)[i]);
    d5_executor_free(ex);
    d5_tensor_free(&x);
    d5_network_free(net);
}

/* Under backprop a view runs no backward either: its output's gradient is
 * its input's buffer. y = Flatten(Neg(x)) * W, seeded with ones: dW = -x
 * and dx = -W, through the Flatten. */
Test(executor, views_share_gradients)
{
    d5_tensor_desc xd, wd;
    d5_network *net = with_input(NULL, "x", D5_F32, 3, (int64_t[]){2, 3, 4}, &xd);
    cr_assert_eq(d5_tensor_desc_make(D5_F32, 2, (int64_t[]){2, 12}, &wd), D5_OK);
    d5_tensor w;
    cr_assert_eq(d5_tensor_alloc(&wd, &w), D5_OK);
    fill(&w, 5);
    cr_assert_eq(d5_network_add_initializer(net, "W", &w), D5_OK);
    node(net, "neg", "Neg", (const char *[]){"x"}, 1, "a", NULL);
    node(net, "flat", "Flatten", (const char *[]){"a"}, 1, "b", NULL);
    node(net, "mul", "Mul", (const char *[]){"b", "W"}, 2, "y", NULL);
    cr_assert_eq(d5_network_add_output(net, "y", NULL), D5_OK);
    d5_executor_options o = d5_executor_default_options();
    o.backend = "ref";
    o.backprop = 1;
    o.input_gradients = 1;
    d5_executor *ex = executor(net, &o);
    d5_exec_node n;
    d5_executor_node_at(ex, 1, &n);
    cr_assert_str_eq(n.name, "flat");
    cr_assert_eq(n.view, 1, "the Flatten is a view under backprop too");
    d5_tensor x, gw, gx;
    cr_assert_eq(d5_tensor_alloc(&xd, &x), D5_OK);
    fill(&x, 3);
    cr_assert_eq(d5_executor_feed(ex, "x", &x), D5_OK);
    cr_assert_eq(d5_executor_inference_and_backprop(ex), D5_OK, "%s", d5_last_error());
    cr_assert_eq(d5_executor_gradient(ex, "W", &gw), D5_OK, "%s", d5_last_error());
    cr_assert_eq(d5_executor_gradient(ex, "x", &gx), D5_OK, "%s", d5_last_error());
    for (int i = 0; i < 24; i++) {
        cr_assert_eq(((float *)gw.data)[i], -((float *)x.data)[i], "dW[%d]", i);
        cr_assert_eq(((float *)gx.data)[i], -((float *)w.data)[i], "dx[%d]", i);
    }
    d5_executor_free(ex);
    d5_tensor_free(&x);
    d5_tensor_free(&w);
    d5_network_free(net);
}
