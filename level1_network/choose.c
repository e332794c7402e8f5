/* The backend of each node: a per-node override, else a custom operator of the
 * same name, else the first backend of the preference list that has the
 * operator and accepts the node, with ref as the last resort; or, for "auto",
 * the fastest of all candidates, measured once at create. Explicit lists and
 * overrides are checked at create (d5_executor_check_backends,
 * d5_executor_check_node_backends), so that no name given is skipped. */
#include "executor_internal.h"

#include <stdio.h>
#include <string.h>

#define MAX_CANDIDATES 8

/* The names of the supported operators, for the error of an unknown one. */
static void supported_list(char *buf, size_t size)
{
    size_t used = 0;
    buf[0] = 0;
    for (size_t i = 0; i < d5_op_count(); i++) {
        const d5_op_desc *d = d5_op_at(i);
        if (strcmp(d->backend, "ref") != 0) continue;
        int n = snprintf(buf + used, size - used, "%s%s", used ? ", " : "", d->name);
        if (n < 0 || (size_t)n >= size - used) break;
        used += (size_t)n;
    }
}

d5_status d5__unsupported(const d5__node *node)
{
    char list[4096];
    supported_list(list, sizeof list);
    if (node->domain[0])
        return d5_error(D5_ERR_UNSUPPORTED,
                        "node '%s': operator %s of domain '%s' is not supported by d5 (load a "
                        "custom operator library that exports it)",
                        node->name, node->op_type, node->domain);
    return d5_error(D5_ERR_UNSUPPORTED,
                    "node '%s': operator %s is not supported by d5; supported operators: %s",
                    node->name, node->op_type, list);
}

/* ---- Checks of the backend options ---------------------------------------------------- */

d5_status d5_executor_check_backends(const char *list)
{
    return d5_backend_check_list(list, 1);
}

/* "a, b, c": the network's node names, the first ones when they are many. */
static void node_names(const d5_network *net, char *buf, size_t size)
{
    size_t used = 0;
    int32_t i = 0;
    buf[0] = '\0';
    for (; i < net->nnodes; i++) {
        const char *name = net->nodes[i].name;
        if (used + strlen(name) + 2 > 400 && i > 0) break;
        int n = snprintf(buf + used, size - used, "%s%s", i ? ", " : "", name);
        if (n < 0 || (size_t)n >= size - used) break;
        used += (size_t)n;
    }
    if (i < net->nnodes)
        snprintf(buf + used, size - used, "%s... and %d more", used ? ", " : "",
                 (int)(net->nnodes - i));
    if (net->nnodes == 0) snprintf(buf, size, "none");
}

static int32_t find_node(const d5_network *net, const char *name, size_t len)
{
    for (int32_t i = 0; i < net->nnodes; i++)
        if (strlen(net->nodes[i].name) == len && strncmp(net->nodes[i].name, name, len) == 0)
            return i;
    return -1;
}

/* Checks the item p[0..len-1] of `spec`: NODE=BACKEND. */
static d5_status check_override(const d5_network *net, const char *spec, const char *p, size_t len)
{
    const char *eq = NULL;
    for (const char *q = p; q < p + len; q++)
        if (*q == '=') eq = q;
    if (len == 0) return d5_error(D5_ERR_INVALID, "empty item in '%.200s'", spec);
    if (!eq || eq == p || eq == p + len - 1)
        return d5_error(D5_ERR_INVALID, "'%.*s' is not NODE=BACKEND", len > 200 ? 200 : (int)len,
                        p);
    size_t nlen = (size_t)(eq - p);
    int nshow = nlen > 200 ? 200 : (int)nlen;
    if (find_node(net, p, nlen) < 0) {
        char list[600];
        node_names(net, list, sizeof list);
        return d5_error(D5_ERR_NOTFOUND, "no node named '%.*s' in the network (nodes: %s)", nshow,
                        p, list);
    }
    for (const char *q = spec; q < p;) { /* an earlier item for the same node */
        const char *end = strchr(q, ',');
        if ((size_t)(end - q) > nlen && strncmp(q, p, nlen) == 0 && q[nlen] == '=')
            return d5_error(D5_ERR_INVALID, "node '%.*s' is given twice in '%.200s'", nshow, p,
                            spec);
        q = end + 1;
    }
    char backend[64];
    size_t blen = len - nlen - 1;
    snprintf(backend, sizeof backend, "%.*s",
             (int)(blen < sizeof backend ? blen : sizeof backend - 1), eq + 1);
    d5_status s = d5_backend_check_list(backend, 0);
    if (s != D5_OK) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", d5_last_error());
        return d5_error(s, "node '%.*s': %s", nshow, p, msg);
    }
    return D5_OK;
}

d5_status d5_executor_check_node_backends(const d5_network *net, const char *spec)
{
    if (!net) return d5_error(D5_ERR_INVALID, "d5_executor_check_node_backends: NULL network");
    if (!spec || !spec[0]) return D5_OK;
    for (const char *p = spec;;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        d5_status s = check_override(net, spec, p, len);
        if (s != D5_OK || !end) return s;
        p = end + 1;
    }
}

/* ---- The choice ------------------------------------------------------------------------ */

/* The override of this node in "NAME=BACKEND,..." or NULL; copied into buf. */
static const char *override_for(const char *spec, const char *node, char *buf, size_t size)
{
    size_t len = strlen(node);
    for (const char *p = spec; p && *p;) {
        const char *end = strchr(p, ',');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        if (n > len + 1 && strncmp(p, node, len) == 0 && p[len] == '=') {
            size_t m = n - len - 1 < size - 1 ? n - len - 1 : size - 1;
            memcpy(buf, p + len + 1, m);
            buf[m] = 0;
            return buf;
        }
        p = end ? end + 1 : NULL;
    }
    return NULL;
}

typedef struct candidate {
    const d5_op_desc *desc;
    d5_op *op;
} candidate;

/* Adds the table for op on backend b when it exists here and fits. */
static void consider(const char *op_type, const char *b, int need_backward, candidate *c, int *n)
{
    const d5_op_desc *desc = NULL;
    if (*n >= MAX_CANDIDATES || d5_op_find(op_type, b, &desc) != D5_OK) return;
    if (need_backward && !(desc->flags & D5_OP_HAS_BACKWARD)) return;
    for (int i = 0; i < *n; i++)
        if (c[i].desc == desc) return;
    c[(*n)++].desc = desc;
}

typedef struct one_call {
    d5_op *op;
    const d5_tensor *in;
    d5_tensor *out;
} one_call;

static d5_status run_call(void *ctx)
{
    one_call *c = ctx;
    return d5_op_forward(c->op, c->in, c->out);
}

/* Median forward time of a created operator on scratch tensors (zeros for
 * unknown inputs, which keeps indices in range). */
static d5_status time_op(d5_op *op, const d5_tensor *in, int32_t nin, int reps, double *median)
{
    d5_tensor t_in[32], t_out[16];
    int32_t nout = d5_op_noutputs(op);
    d5_status s = D5_OK;
    memset(t_in, 0, sizeof t_in);
    memset(t_out, 0, sizeof t_out);
    if (nin > 32 || nout > 16) return d5_error(D5_ERR_UNSUPPORTED, "too many tensors to time");
    for (int32_t k = 0; k < nin && s == D5_OK; k++) {
        t_in[k] = in[k];
        if (in[k].desc.dtype != D5_DTYPE_INVALID && !in[k].data)
            s = d5_tensor_alloc(&in[k].desc, &t_in[k]);
    }
    for (int32_t k = 0; k < nout && s == D5_OK; k++)
        s = d5_tensor_alloc(d5_op_output_desc(op, k), &t_out[k]);
    /* The statistics of the foundation: one warm-up run, `reps` timed runs. */
    one_call call = {op, t_in, t_out};
    d5_measure_params mp = d5_measure_default_params();
    mp.warmup = 1;
    mp.min_reps = mp.max_reps = (uint32_t)reps;
    d5_measurement m;
    memset(&m, 0, sizeof m);
    if (s == D5_OK) s = d5_measure_run(run_call, &call, &mp, &m);
    if (s == D5_OK) *median = m.stats.median;
    d5_measurement_free(&m);
    for (int32_t k = 0; k < nin; k++)
        if (t_in[k].data != in[k].data) d5_tensor_free(&t_in[k]);
    for (int32_t k = 0; k < nout; k++) d5_tensor_free(&t_out[k]);
    return s;
}

/* 1 for the domains whose operators are d5's built-in ones: ONNX's default
 * domain, its training preview (Momentum, Adagrad and Adam are ref
 * operators) and ONNX-ML (LabelEncoder, TreeEnsemble, ...: no name of it is
 * also one of the default domain's); other domains come from custom operator
 * libraries only. */
static int builtin_domain(const char *domain)
{
    return !domain[0] || strcmp(domain, "ai.onnx.preview.training") == 0 ||
           strcmp(domain, "ai.onnx.ml") == 0;
}

d5_status d5__choose(d5_executor *ex, const d5__node *node, const d5_tensor *in, int32_t nin,
                     const d5_attrs *attrs, int32_t need_backward, const d5_op_desc **desc,
                     d5_op **op)
{
    candidate c[MAX_CANDIDATES];
    int n = 0;
    char buf[64];
    memset(c, 0, sizeof c);
    const char *forced = override_for(ex->opt.node_backends, node->name, buf, sizeof buf);
    if (forced) {
        const d5_op_desc *d = NULL;
        d5_status s = d5_op_find(node->op_type, forced, &d);
        if (s != D5_OK) return d5__node_error(node, s);
        c[n++].desc = d;
    } else {
        for (int32_t i = 0; i < ex->opt.nlibraries && n == 0; i++) {
            const d5_op_desc *d = NULL;
            if (d5_op_library_find(ex->opt.libraries[i], node->op_type, &d) == D5_OK)
                c[n++].desc = d;
        }
        int is_auto = strcmp(ex->opt.backend, "auto") == 0;
        const char *list = is_auto ? d5_backend_default_list() : ex->opt.backend;
        if (ex->infer_only) list = "ref";
        for (const char *p = list; p && *p;) {
            const char *end = strchr(p, ',');
            size_t len = end ? (size_t)(end - p) : strlen(p);
            if (len > 0 && len < sizeof buf) {
                memcpy(buf, p, len);
                buf[len] = 0;
                if (builtin_domain(node->domain))
                    consider(node->op_type, buf, need_backward, c, &n);
            }
            p = end ? end + 1 : NULL;
        }
        if (builtin_domain(node->domain)) consider(node->op_type, "ref", 0, c, &n);
        if (n == 0) {
            const d5_op_desc *d = NULL;
            if (!builtin_domain(node->domain) || d5_op_find(node->op_type, "ref", &d) != D5_OK)
                return d5__unsupported(node);
        }
        if (!is_auto || ex->infer_only) {
            /* The first candidate that accepts the node wins. */
            d5_status s = D5_ERR_UNSUPPORTED;
            for (int i = 0; i < n; i++) {
                s = d5_op_create(c[i].desc, in, nin, attrs, node->nout, op);
                if (s == D5_OK) {
                    *desc = c[i].desc;
                    goto check;
                }
            }
            return d5__node_error(node, s);
        }
    }
    /* Forced, or auto: create every candidate, keep the fastest. */
    d5_status s = D5_ERR_UNSUPPORTED, last = D5_ERR_UNSUPPORTED;
    double best = 0;
    int pick = -1;
    for (int i = 0; i < n; i++) {
        s = d5_op_create(c[i].desc, in, nin, attrs, node->nout, &c[i].op);
        if (s != D5_OK) {
            last = s;
            continue;
        }
        double t = 0;
        if (n > 1 && (s = time_op(c[i].op, in, nin, ex->opt.auto_reps, &t)) != D5_OK) {
            d5_op_free(c[i].op);
            c[i].op = NULL;
            last = s;
            continue;
        }
        if (pick < 0 || t < best) {
            best = t;
            pick = i;
        }
    }
    for (int i = 0; i < n; i++)
        if (i != pick) d5_op_free(c[i].op);
    if (pick < 0) return d5__node_error(node, last);
    *desc = c[pick].desc;
    *op = c[pick].op;
check:
    if (need_backward && !((*desc)->flags & D5_OP_HAS_BACKWARD)) {
        const char *b = (*desc)->backend;
        d5_op_free(*op);
        *op = NULL;
        return d5_error(D5_ERR_UNSUPPORTED,
                        "node '%s' (%s): backend %s has no backward for %s, which backprop "
                        "needs",
                        node->name, node->op_type, b, node->op_type);
    }
    return D5_OK;
}
