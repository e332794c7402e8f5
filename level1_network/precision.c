/* What the scheduled nodes compute in: d5_executor_node_impl and the report of
 * options.compute_precision (d5_executor_precision_report). The operators say
 * it themselves (d5_op_impl_get); the executor groups their answers. */
#include "executor_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

d5_status d5_executor_node_impl(const d5_executor *ex, int32_t i, d5_op_impl *out)
{
    if (!ex || !out) return d5_error(D5_ERR_INVALID, "d5_executor_node_impl: NULL argument");
    if (i < 0 || i >= ex->nnodes)
        return d5_error(D5_ERR_RANGE, "node %d of a schedule of %d", (int)i, (int)ex->nnodes);
    d5_op_impl_get(ex->nodes[i].op, out);
    return D5_OK;
}

/* The operators a compute precision applies to. */
static int precision_op(const char *op_type)
{
    return strcmp(op_type, "Conv") == 0 || strcmp(op_type, "Gemm") == 0 ||
           strcmp(op_type, "MatMul") == 0 || strcmp(op_type, "FusedConv") == 0;
}

/* "f32", "bf16", "f16", "f64", or the type's full name. */
static const char *short_name(int32_t dtype)
{
    switch (dtype) {
    case D5_F32: return "f32";
    case D5_BF16: return "bf16";
    case D5_F16: return "f16";
    case D5_F64: return "f64";
    default: return d5_dtype_name((d5_dtype)dtype);
    }
}

/* Appends to a report that may outgrow its buffer: `len` counts every byte. */
typedef struct text {
    char *buf;
    size_t size, len;
} text;

static void add(text *t, const char *fmt, ...) D5_PRINTF(2, 3);
static void add(text *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *at = t->len < t->size ? t->buf + t->len : NULL;
    int n = vsnprintf(at, at ? t->size - t->len : 0, fmt, ap);
    va_end(ap);
    if (n > 0) t->len += (size_t)n;
}

/* What node i computed in: the backend's word, or its output's type. */
static void node_precision(const d5_executor *ex, int32_t i, d5_op_impl *impl)
{
    d5_op_impl_get(ex->nodes[i].op, impl);
    if (impl->reported) return;
    const d5_tensor_desc *y = d5_op_output_desc(ex->nodes[i].op, 0);
    snprintf(impl->precision, sizeof impl->precision, "%s", short_name(y->dtype));
    impl->support = D5_PRECISION_NATIVE;
}

/* Distinct notes, printed once under the summary and referred to by number. */
#define MAX_NOTES 8
typedef struct notes {
    char text[MAX_NOTES][sizeof((d5_op_impl *)0)->note];
    int n;
} notes;

/* The number (from 1) of `note` among the notes, added when new; 0 when
 * there is no room. */
static int note_number(notes *ns, const char *note)
{
    for (int i = 0; i < ns->n; i++)
        if (strcmp(ns->text[i], note) == 0) return i + 1;
    if (ns->n == MAX_NOTES) return 0;
    snprintf(ns->text[ns->n], sizeof ns->text[ns->n], "%s", note);
    return ++ns->n;
}

static void node_line(const d5_executor *ex, int32_t i, const d5_op_impl *impl, notes *ns, text *t)
{
    const xnode *n = &ex->nodes[i];
    const d5__node *node = &ex->net->nodes[n->net_index];
    add(t, "%s %s %s: %s", node->name, node->op_type, n->desc->backend, impl->precision);
    if (!impl->reported) {
        add(t, " (the %s backend computes in its tensors' type)\n", n->desc->backend);
        return;
    }
    add(t, " %s", d5_precision_class_name(impl->support));
    if (impl->forward[0]) add(t, ", forward %s", impl->forward);
    if (impl->backward_data[0] || impl->backward_weights[0])
        add(t, ", backward %s / %s", impl->backward_data[0] ? impl->backward_data : "-",
            impl->backward_weights[0] ? impl->backward_weights : "-");
    int k = impl->note[0] ? note_number(ns, impl->note) : -1;
    if (k > 0)
        add(t, " [%d]", k);
    else if (k == 0)
        add(t, " (%s)", impl->note);
    add(t, "\n");
}

/* Whether node i is one a compute precision applies to. */
static int concerned(const d5_executor *ex, int32_t i)
{
    const d5__node *node = &ex->net->nodes[ex->nodes[i].net_index];
    return !ex->nodes[i].alias && !node->domain[0] && precision_op(node->op_type);
}

size_t d5_executor_precision_report(const d5_executor *ex, char *buf, size_t size)
{
    text t = {buf, buf ? size : 0, 0};
    if (t.size) buf[0] = 0;
    if (!ex) return 0;
    const char *want = ex->opt.compute_precision ? ex->opt.compute_precision : "f32";
    int32_t nodes = 0, in_want = 0, native = 0;
    notes ns;
    ns.n = 0;
    d5_op_impl impl;
    for (int32_t i = 0; i < ex->nnodes; i++) {
        if (!concerned(ex, i)) continue;
        node_precision(ex, i, &impl);
        nodes++;
        if (impl.note[0]) note_number(&ns, impl.note);
        if (strcmp(impl.precision, want) == 0) {
            in_want++;
            native += impl.support == D5_PRECISION_NATIVE;
        }
    }
    add(&t, "compute precision %s: %d of %d nodes in %s", want, (int)in_want, (int)nodes, want);
    if (in_want > 0)
        add(&t, " (%s)",
            native == in_want ? "native"
            : native == 0     ? "emulated"
                              : "partly emulated");
    if (in_want < nodes) add(&t, ", %d in another precision", (int)(nodes - in_want));
    add(&t, "\n");
    for (int k = 0; k < ns.n; k++) add(&t, "[%d] %s\n", k + 1, ns.text[k]);
    for (int32_t i = 0; i < ex->nnodes; i++) {
        if (!concerned(ex, i)) continue;
        node_precision(ex, i, &impl);
        node_line(ex, i, &impl, &ns, &t);
    }
    return t.len;
}
