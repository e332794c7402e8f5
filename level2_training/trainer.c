/* The trainer object: the training graph (the network with a loss), its
 * executor bound to the caller's weights, the table of parameters and
 * gradient buffers, and the parts a caller sets (optimizer, sampler, timer).
 * The run is in trainer_loop.c, the hooks in trainer_hooks.c. */
#include "trainer_internal.h"

#include <string.h>

#define LABELS D5__TRAINER_LABELS
#define LOSS   D5__TRAINER_LOSS

d5_trainer_params d5_trainer_default_params(void)
{
    d5_trainer_params p;
    memset(&p, 0, sizeof p);
    p.epochs = 1;
    p.check_numerics = 1;
    p.loss_scale = d5_loss_scale_default_params();
    return p;
}

void d5_train_result_free(d5_train_result *r)
{
    if (!r) return;
    d5_free(r->epochs);
    d5_free(r->losses);
    d5_free(r->lrs);
    d5_free(r->step_seconds);
    d5_free(r->snapshots);
    r->epochs = NULL;
    r->losses = NULL;
    r->lrs = r->step_seconds = NULL;
    r->snapshots = NULL;
    r->nsnapshots = 0;
    r->nepochs = 0;
    r->nlosses = 0;
}

/* FORWARD and BACKWARD regions from the executor's events, during training
 * steps and with a timer. */
/* Announces, to the gradient_ready hooks, every parameter whose gradient is
 * final once the backward of schedule node `node` has run (-1: all the rest,
 * at the end of the pass). */
static d5_status announce_ready(d5_trainer *t, int32_t node)
{
    d5_status s = D5_OK;
    while (s == D5_OK && t->ready_next < t->nparams &&
           (node < 0 || t->ready_node[t->ready_next] >= node))
        s = d5__hooks_gradient_ready(t, t->step + 1, t->ready_order[t->ready_next++]);
    return s;
}

static d5_status on_event(void *user, const d5_event_info *e)
{
    d5_trainer *t = user;
    if (!t->training) return D5_OK;
    if (e->event == D5_EVENT_BEFORE_EXECUTOR) t->ready_next = 0;
    if (t->want_ready && e->phase == D5_PHASE_BACKWARD) {
        if (e->event == D5_EVENT_AFTER_NODE) return announce_ready(t, e->node);
        if (e->event == D5_EVENT_AFTER_BACKPROP) return announce_ready(t, -1);
    }
    if (!t->timer) return D5_OK;
    switch (e->event) {
    case D5_EVENT_BEFORE_EXECUTOR: return d5_timer_start(t->timer, D5_KEY_FORWARD);
    case D5_EVENT_AFTER_INFERENCE: {
        d5_status s = d5_timer_end(t->timer, D5_KEY_FORWARD);
        if (s == D5_OK && !t->in_backward) {
            t->in_backward = 1;
            s = d5_timer_start(t->timer, D5_KEY_BACKWARD);
        }
        return s;
    }
    case D5_EVENT_AFTER_EXECUTOR:
        if (!t->in_backward) return D5_OK;
        t->in_backward = 0;
        return d5_timer_end(t->timer, D5_KEY_BACKWARD);
    default: return D5_OK;
    }
}

/* The training graph: the network, a labels input and the loss. */
static d5_status build(d5_trainer *t)
{
    const d5_network *net = t->net;
    if (d5_network_input_count(net) != 1 || d5_network_output_count(net) < 1)
        return d5_error(D5_ERR_INVALID,
                        "trainer: the network needs one input and an output of logits; it has "
                        "%d inputs and %d outputs",
                        (int)d5_network_input_count(net), (int)d5_network_output_count(net));
    d5_status s = d5_network_clone(net, &t->tnet);
    if (s == D5_OK) s = d5__bn_train_prepare(t->tnet, t->net, &t->bn);
    if (s != D5_OK) return s;
    t->input = d5_network_input_name(t->tnet, 0);
    t->logits = d5_network_output_name(t->tnet, 0);
    if ((s = d5_network_infer_shapes(t->tnet)) != D5_OK) return s;
    int32_t v;
    d5_value_info in, out;
    if ((s = d5_network_find_value(t->tnet, t->input, &v)) != D5_OK) return s;
    d5_network_value_at(t->tnet, v, &in);
    if ((s = d5_network_find_value(t->tnet, t->logits, &v)) != D5_OK) return s;
    d5_network_value_at(t->tnet, v, &out);
    t->xdesc = in.desc;
    t->batch = in.desc.ndim > 0 ? in.desc.shape[0] : 0;
    t->sample = t->batch > 0 ? d5_tensor_desc_numel(&in.desc) / t->batch : 0;
    const int ids = in.desc.dtype == D5_I64 || in.desc.dtype == D5_I32;
    if ((in.desc.dtype != D5_F32 && !ids) || t->batch < 1 || t->sample < 1) {
        char a[128];
        d5_tensor_desc_format(&in.desc, a, sizeof a);
        return d5_error(D5_ERR_SHAPE,
                        "trainer: the network's input '%s' is %s; it must be float32 [batch, "
                        "sample...], or token ids int64 or int32 [batch, sequence...], with "
                        "batch >= 1",
                        t->input, a);
    }
    /* A language model: token ids [batch, S] in, logits [batch, S, vocabulary]
     * out; each position learns the next token. */
    t->lm = ids && in.desc.ndim == 2 && out.desc.ndim == 3 && out.desc.shape[0] == t->batch &&
                    out.desc.shape[1] == in.desc.shape[1] && in.desc.shape[1] >= 2
                ? in.desc.shape[1]
                : 0;
    t->classes = out.desc.ndim == 2 ? out.desc.shape[1] : t->lm ? out.desc.shape[2] : 0;
    if (t->classes < 1 || out.desc.shape[0] != t->batch) {
        char a[128];
        d5_tensor_desc_format(&out.desc, a, sizeof a);
        return d5_error(D5_ERR_SHAPE,
                        "trainer: the output '%s' is %s; it must be logits [%lld, classes], or "
                        "[%lld, sequence, vocabulary] for a model of token ids [%lld, sequence]",
                        t->logits, a, (long long)t->batch, (long long)t->batch,
                        (long long)t->batch);
    }
    const int64_t lshape[2] = {t->batch, t->lm};
    if ((s = d5_tensor_desc_make(D5_I64, t->lm ? 2 : 1, lshape, &t->ldesc)) != D5_OK) return s;
    if ((s = d5_network_add_input(t->tnet, LABELS, &t->ldesc, NULL)) != D5_OK) return s;
    const char *li[] = {t->logits, LABELS}, *lo[] = {LOSS};
    d5_attr ignore = {0};
    ignore.name = "ignore_index";
    ignore.type = D5_ATTR_INT;
    ignore.i = D5__TRAINER_NO_LABEL;
    const d5_attrs lm_attrs = {&ignore, 1};
    if (t->lm) { /* the class axis second: SoftmaxCrossEntropyLoss's [N, C, S] */
        static const int64_t perm[3] = {0, 2, 1};
        d5_attr pa = {0};
        pa.name = "perm";
        pa.type = D5_ATTR_INTS;
        pa.ints = perm;
        pa.count = 3;
        const d5_attrs ta = {&pa, 1};
        const char *to[] = {"__d5_logits_by_class"};
        s = d5_network_add_node(t->tnet, "__d5_logits_by_class", "Transpose", NULL, li, 1, to, 1,
                                &ta, NULL);
        li[0] = to[0];
    }
    if (s == D5_OK)
        s = d5_network_add_node(t->tnet, "__d5_loss", "SoftmaxCrossEntropyLoss", NULL, li, 2, lo, 1,
                                t->lm ? &lm_attrs : NULL, NULL);
    if (s == D5_OK) s = d5_network_add_output(t->tnet, LOSS, NULL);
    if (s != D5_OK || !t->scaling) return s;
    /* Loss scaling: backpropagation starts from loss * scale, so that every
     * gradient comes out multiplied by the scale. */
    const char *si[] = {LOSS, D5__TRAINER_LOSS_SCALE}, *so[] = {D5__TRAINER_SCALED_LOSS};
    s = d5_tensor_desc_make(D5_F32, 0, NULL, &t->sdesc);
    if (s == D5_OK) s = d5_network_add_input(t->tnet, D5__TRAINER_LOSS_SCALE, &t->sdesc, NULL);
    if (s == D5_OK)
        s = d5_network_add_node(t->tnet, "__d5_loss_scaling", "Mul", NULL, si, 2, so, 1, NULL,
                                NULL);
    if (s == D5_OK) s = d5_network_add_output(t->tnet, D5__TRAINER_SCALED_LOSS, NULL);
    return s;
}

/* The order in which parameters' gradients become final in a backward pass,
 * which runs the schedule backwards: a parameter's gradient is complete once
 * the backward of the first scheduled node that reads it has run. */
static d5_status ready_order(d5_trainer *t)
{
    int32_t n = t->nparams, nodes = d5_executor_node_count(t->ex);
    t->ready_order = d5_alloc((size_t)(n + 1) * sizeof *t->ready_order, "gradient order");
    t->ready_node = d5_alloc((size_t)(n + 1) * sizeof *t->ready_node, "gradient order");
    if (!t->ready_order || !t->ready_node) return D5_ERR_NOMEM;
    int32_t *first = t->ready_node; /* first reader per parameter, then sorted in place */
    for (int32_t i = 0; i < n; i++) first[i] = -1;
    for (int32_t j = nodes - 1; j >= 0; j--) {
        d5_exec_node en;
        d5_node_info ni;
        d5_executor_node_at(t->ex, j, &en);
        d5_network_node_at(t->tnet, en.network_index, &ni);
        for (int32_t k = 0; k < ni.ninputs; k++)
            for (int32_t i = 0; i < n; i++)
                if (strcmp(ni.inputs[k], t->names[i]) == 0) first[i] = j;
    }
    /* Insertion sort by first reader, latest first; ties in parameter order. */
    int32_t *key = d5_alloc((size_t)(n + 1) * sizeof *key, "gradient order");
    if (!key) return D5_ERR_NOMEM;
    for (int32_t i = 0; i < n; i++) {
        int32_t k = i;
        while (k > 0 && key[k - 1] < first[i]) {
            key[k] = key[k - 1];
            t->ready_order[k] = t->ready_order[k - 1];
            k--;
        }
        key[k] = first[i];
        t->ready_order[k] = i;
    }
    memcpy(t->ready_node, key, (size_t)n * sizeof *key);
    d5_free(key);
    return D5_OK;
}

/* The executor and the parameter table: the executor reads, and the
 * optimizer will update, the caller's weights. */
static d5_status setup(d5_trainer *t)
{
    d5_executor_options o = d5_executor_default_options();
    o.backend = t->p.backend;
    o.backprop = 1;
    o.loss = t->scaling ? D5__TRAINER_SCALED_LOSS : LOSS;
    o.compute_precision = t->p.precision;
    d5_status s = d5_executor_create(t->tnet, &o, &t->ex);
    if (s == D5_OK) s = d5_executor_add_handler(t->ex, on_event, t);
    if (s == D5_OK) s = d5__bn_train_bind(&t->bn, t->ex);
    if (s != D5_OK) return s;
    /* Listing the parameters allocates: -1 and NULL mean out of memory. */
    t->nparams = d5_network_param_count(t->tnet);
    if (t->nparams < 0)
        return d5_error(D5_ERR_NOMEM, "trainer: out of memory listing the parameters");
    t->grads = d5_calloc((size_t)t->nparams + 1, sizeof *t->grads, "gradients");
    t->names = d5_calloc((size_t)t->nparams + 1, sizeof *t->names, "gradients");
    t->params = d5_calloc((size_t)t->nparams + 1, sizeof *t->params, "parameters");
    t->sizes = d5_calloc((size_t)t->nparams + 1, sizeof *t->sizes, "parameters");
    t->x = d5_alloc((size_t)(t->batch * t->sample) * sizeof *t->x, "training batch");
    if (t->xdesc.dtype != D5_F32) {
        t->ids = d5_alloc((size_t)(t->batch * t->sample) * d5_dtype_size((d5_dtype)t->xdesc.dtype),
                          "training batch ids");
        if (!t->ids) return D5_ERR_NOMEM;
    }
    t->labels =
        d5_calloc((size_t)(t->batch * (t->lm ? t->lm : 1)), sizeof *t->labels, "training labels");
    if (!t->grads || !t->names || !t->params || !t->sizes || !t->x || !t->labels)
        return D5_ERR_NOMEM;
    for (int32_t i = 0; i < t->nparams && s == D5_OK; i++) {
        const char *name = d5_network_param_name(t->tnet, i);
        if (!name) return d5_error(D5_ERR_NOMEM, "trainer: out of memory listing the parameters");
        float *data = d5_network_initializer_data(t->net, name);
        int32_t v;
        d5_value_info info;
        d5_tensor g;
        if ((s = d5_network_find_value(t->tnet, name, &v)) != D5_OK) break;
        d5_network_value_at(t->tnet, v, &info);
        if (info.desc.dtype != D5_F32)
            return d5_error(D5_ERR_UNSUPPORTED, "trainer: parameter '%s' is %s; float32 only", name,
                            d5_dtype_name((d5_dtype)info.desc.dtype));
        if (!data)
            return d5_error(D5_ERR_STATE, "trainer: parameter '%s' is not in the network", name);
        s = d5_executor_bind_param(t->ex, name, data);
        if (s == D5_OK) s = d5_executor_gradient(t->ex, name, &g);
        if (s != D5_OK) break;
        t->grads[i] = g.data;
        t->names[i] = name;
        t->params[i] = data;
        t->sizes[i] = d5_tensor_desc_numel(&info.desc);
    }
    return s == D5_OK ? ready_order(t) : s;
}

d5_tensor d5__trainer_input(d5_trainer *t)
{
    d5_tensor x = {t->xdesc, t->x, D5_DEVICE_CPU, 0};
    if (!t->ids) return x;
    const int64_t n = t->batch * t->sample;
    if (t->xdesc.dtype == D5_I64)
        for (int64_t i = 0; i < n; i++) ((int64_t *)t->ids)[i] = (int64_t)t->x[i];
    else
        for (int64_t i = 0; i < n; i++) ((int32_t *)t->ids)[i] = (int32_t)t->x[i];
    /* A language model's labels: the next token at each position, none after the last. */
    for (int64_t i = 0; t->lm && i < n; i++)
        t->labels[i] = (i + 1) % t->lm ? (int64_t)t->x[i + 1] : D5__TRAINER_NO_LABEL;
    x.data = t->ids;
    return x;
}

d5_status d5__trainer_feed(d5_trainer *t)
{
    d5_tensor x = d5__trainer_input(t), l = {t->ldesc, t->labels, D5_DEVICE_CPU, 0};
    d5_status s = d5_executor_feed(t->ex, t->input, &x);
    if (s == D5_OK) s = d5_executor_feed(t->ex, LABELS, &l);
    if (s == D5_OK && t->scaling) {
        t->scale_fed = (float)t->ls.scale;
        d5_tensor c = {t->sdesc, &t->scale_fed, D5_DEVICE_CPU, 0};
        s = d5_executor_feed(t->ex, D5__TRAINER_LOSS_SCALE, &c);
    }
    return s;
}

void d5__trainer_precision_report(const d5_trainer *t, char *buf, size_t size)
{
    size_t n = d5_executor_precision_report(t->ex, buf, size);
    /* A report longer than the buffer ends in "..." on its last line. */
    if (size > 4 && n >= size) memcpy(buf + size - 4, "...", 4);
}

d5_status d5__trainer_check_dataset(const d5_trainer *t, const d5_dataset *ds, const char *who)
{
    const d5_tensor_desc *sd = d5_dataset_sample_desc(ds);
    if (d5_tensor_desc_numel(sd) != t->sample) {
        char a[128], b[128];
        d5_tensor_desc_format(&t->xdesc, a, sizeof a);
        d5_tensor_desc_format(sd, b, sizeof b);
        return d5_error(D5_ERR_SHAPE,
                        "%s: the network's input '%s' is %s; the dataset '%s' has samples %s (the "
                        "input must be float32 [batch, sample...] with the same number of "
                        "elements per sample)",
                        who, t->input, a, d5_dataset_name(ds), b);
    }
    if (t->classes < d5_dataset_classes(ds))
        return d5_error(D5_ERR_SHAPE,
                        "%s: the output '%s' has %lld classes; the dataset '%s' has %lld (logits "
                        "must be [%lld, classes >= %lld])",
                        who, t->logits, (long long)t->classes, d5_dataset_name(ds),
                        (long long)d5_dataset_classes(ds), (long long)t->batch,
                        (long long)d5_dataset_classes(ds));
    return D5_OK;
}

/* The compute precisions a trainer takes (d5_executor_options). */
static int known_precision(const char *p)
{
    return !p || strcmp(p, "f32") == 0 || strcmp(p, "bf16") == 0 || strcmp(p, "f16") == 0;
}

static d5_status check_params(const d5_trainer_params *p)
{
    if (!known_precision(p->precision))
        return d5_error(D5_ERR_INVALID, "trainer: precision '%s'; expected f32, bf16 or f16",
                        p->precision);
    if (p->loss_scaling < D5_LOSS_SCALING_AUTO || p->loss_scaling > D5_LOSS_SCALING_ON)
        return d5_error(D5_ERR_INVALID,
                        "trainer: loss_scaling = %d; expected D5_LOSS_SCALING_AUTO (0), _OFF (1) "
                        "or _ON (2)",
                        (int)p->loss_scaling);
    if (p->epochs < 1)
        return d5_error(D5_ERR_INVALID, "trainer: epochs = %d, expected >= 1", (int)p->epochs);
    if (p->max_batches < 0 || p->eval_every < 0 || p->snapshot_every < 0)
        return d5_error(D5_ERR_INVALID,
                        "trainer: max_batches = %lld, eval_every = %lld, snapshot_every = %lld; "
                        "none may be negative",
                        (long long)p->max_batches, (long long)p->eval_every,
                        (long long)p->snapshot_every);
    return d5_schedule_check(&p->schedule);
}

d5_status d5_trainer_create(d5_network *net, const d5_trainer_params *p, d5_trainer **out)
{
    if (!net || !out) return d5_error(D5_ERR_INVALID, "d5_trainer_create: NULL argument");
    d5_trainer_params params = p ? *p : d5_trainer_default_params();
    d5_status s = check_params(&params);
    if (s != D5_OK) return s;
    d5_trainer *t = d5_calloc(1, sizeof *t, "trainer");
    if (!t) return D5_ERR_NOMEM;
    t->p = params;
    t->net = net;
    if (params.backend && !(t->p.backend = t->backend = d5_strdup(params.backend, "trainer")))
        s = D5_ERR_NOMEM;
    if (s == D5_OK && params.checkpoint &&
        !(t->p.checkpoint = t->checkpoint = d5_strdup(params.checkpoint, "trainer")))
        s = D5_ERR_NOMEM;
    if (s == D5_OK && params.precision &&
        !(t->p.precision = t->precision = d5_strdup(params.precision, "trainer")))
        s = D5_ERR_NOMEM;
    t->scaling = params.loss_scaling == D5_LOSS_SCALING_ON ||
                 (params.loss_scaling == D5_LOSS_SCALING_AUTO && params.precision &&
                  strcmp(params.precision, "f16") == 0);
    if (s == D5_OK && t->scaling) s = d5_loss_scale_init(&t->ls, &params.loss_scale);
    if (s == D5_OK) s = build(t);
    if (s == D5_OK) s = setup(t);
    if (s != D5_OK) {
        d5_trainer_free(t);
        return s;
    }
    *out = t;
    return D5_OK;
}

void d5_trainer_free(d5_trainer *t)
{
    if (!t) return;
    d5__trainer_memory_free(t); /* the recorder before its executor */
    d5_executor_free(t->ex);
    d5_executor_free(t->eval);
    d5__bn_train_free(&t->bn);
    d5_network_free(t->tnet);
    d5__hooks_free(t);
    d5_free(t->grads);
    d5_free(t->names);
    d5_free(t->params);
    d5_free(t->sizes);
    d5_free(t->ready_order);
    d5_free(t->ready_node);
    d5_free(t->x);
    d5_free(t->ids);
    d5_free(t->labels);
    d5_free(t->backend);
    d5_free(t->checkpoint);
    d5_free(t->precision);
    d5_free(t);
}

/* D5_ERR_STATE for a setter called while the trainer runs. */
static d5_status settable(const d5_trainer *t, const char *fn)
{
    if (!t) return d5_error(D5_ERR_INVALID, "%s: NULL trainer", fn);
    if (t->running) return d5_error(D5_ERR_STATE, "%s: called while the trainer runs", fn);
    return D5_OK;
}

d5_status d5_trainer_set_optimizer(d5_trainer *t, d5_optimizer *opt)
{
    d5_status s = settable(t, "d5_trainer_set_optimizer");
    if (s != D5_OK) return s;
    if (!opt) return d5_error(D5_ERR_INVALID, "d5_trainer_set_optimizer: NULL optimizer");
    if (t->ran)
        return d5_error(D5_ERR_STATE, "d5_trainer_set_optimizer: the trainer has run already");
    if (d5_optimizer_param_count(opt) != 0)
        return d5_error(D5_ERR_STATE,
                        "d5_trainer_set_optimizer: optimizer '%s' already has %d parameters; "
                        "give the trainer a fresh one",
                        d5_optimizer_name(opt), (int)d5_optimizer_param_count(opt));
    for (int32_t i = 0; i < t->nparams && s == D5_OK; i++)
        s = d5_optimizer_add_param(opt, t->names[i], t->params[i], t->sizes[i], NULL);
    if (s == D5_OK) t->opt = opt;
    return s;
}

d5_status d5_trainer_set_sampler(d5_trainer *t, d5_sampler *smp)
{
    d5_status s = settable(t, "d5_trainer_set_sampler");
    if (s != D5_OK || !smp) {
        if (s == D5_OK) t->smp = NULL;
        return s;
    }
    const d5_sampler_params *sp = d5_sampler_get_params(smp);
    if (sp->batch != t->batch)
        return d5_error(D5_ERR_SHAPE,
                        "d5_trainer_set_sampler: the sampler draws batches of %lld samples; the "
                        "network's input '%s' takes %lld",
                        (long long)sp->batch, t->input, (long long)t->batch);
    s = d5__trainer_check_dataset(t, d5_sampler_dataset(smp), "d5_trainer_set_sampler");
    if (s == D5_OK) t->smp = smp;
    return s;
}

d5_status d5_trainer_set_timer(d5_trainer *t, d5_timer *timer)
{
    d5_status s = settable(t, "d5_trainer_set_timer");
    if (s == D5_OK) t->timer = timer;
    return s;
}

int32_t d5_trainer_param_count(const d5_trainer *t)
{
    return t ? t->nparams : 0;
}

const char *d5_trainer_param_name(const d5_trainer *t, int32_t i)
{
    return t && i >= 0 && i < t->nparams ? t->names[i] : NULL;
}

int64_t d5_trainer_param_size(const d5_trainer *t, int32_t i)
{
    return t && i >= 0 && i < t->nparams ? t->sizes[i] : 0;
}

float *d5_trainer_param(d5_trainer *t, int32_t i)
{
    return t && i >= 0 && i < t->nparams ? t->params[i] : NULL;
}

float *d5_trainer_gradient(d5_trainer *t, int32_t i)
{
    return t && i >= 0 && i < t->nparams ? t->grads[i] : NULL;
}

int64_t d5_trainer_batch(const d5_trainer *t)
{
    return t ? t->batch : 0;
}

int64_t d5_trainer_step(const d5_trainer *t)
{
    return t ? t->step : 0;
}

d5_optimizer *d5_trainer_optimizer(const d5_trainer *t)
{
    return t ? t->opt : NULL;
}

double d5_trainer_loss_scale(const d5_trainer *t)
{
    return t && t->scaling ? t->ls.scale : 1.0;
}

d5_status d5_train(d5_network *net, const d5_dataset *train, const d5_dataset *test,
                   d5_optimizer *opt, const d5_trainer_params *params, uint64_t seed,
                   d5_timer *timer, d5_train_result *out)
{
    if (!net || !train || !opt || !out)
        return d5_error(D5_ERR_INVALID, "d5_train: network, dataset, optimizer and result are "
                                        "required");
    memset(out, 0, sizeof *out);
    d5_trainer *t = NULL;
    d5_status s = d5_trainer_create(net, params, &t);
    /* The dataset first: a network that cannot take it is the likelier
     * mistake, and it leaves the optimizer unused. */
    if (s == D5_OK) s = d5__trainer_check_dataset(t, train, "d5_train");
    if (s == D5_OK) s = d5_trainer_set_timer(t, timer);
    if (s == D5_OK) s = d5_trainer_set_optimizer(t, opt);
    if (s == D5_OK) s = d5_trainer_run(t, train, test, seed, out);
    d5_trainer_free(t);
    return s;
}
