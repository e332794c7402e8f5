/* Einsum (ONNX opset 12): the Einstein summation given by `equation`, as
 * numpy.einsum evaluates it, over one or more inputs of one numeric data type.
 * The equation is "term,term,...->output" or, without "->", the implicit form
 * whose output is the ellipsis dimensions followed by the letters that occur
 * exactly once, in alphabetical (ASCII) order. A term is letters (a-z, A-Z),
 * one per dimension, and at most one "..." standing for the dimensions its
 * letters leave; spaces are ignored. A letter repeated within a term takes
 * the diagonal; a letter absent from the output is summed over; the
 * dimensions of the ellipses broadcast against each other from the right, as
 * numpy broadcasts (a dimension of 1 stretches), and are summed when an
 * explicit output has no "...". Every dimension of one letter must have the
 * same size. The output has at most 8 dimensions.
 *
 * Evaluated naively: one loop over every combination of the letters' (and
 * ellipsis dimensions') values, multiplying one element of each input. The
 * gradient of input k is, over the same loop, dY times the product of the
 * other inputs' elements, added where repeated letters meet on a diagonal.
 * https://onnx.ai/onnx/operators/onnx__Einsum.html */
#include "util.h"

#include <stdio.h>
#include <string.h>

/* Labels: the letters 'A'..'Z' are 0..25, 'a'..'z' 26..51, and the ellipsis
 * dimensions 52.. (the ellipsis's leftmost dimension first). */
#define LETTERS 52
#define NLABELS (LETTERS + D5_MAX_DIMS)

typedef struct einsum {
    int32_t nin;
    int32_t nloop;         /* labels looped over: the output's, then the summed */
    int64_t size[NLABELS]; /* per loop label */
    int64_t out_stride[NLABELS];
    int64_t *offs;    /* nin: scratch of the loop, in the block below */
    int64_t stride[]; /* nin x NLABELS: input i's stride for loop label l */
} einsum;

static int label_of(char c)
{
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return 26 + (c - 'a');
    return -1;
}

/* One term of the equation, parsed. */
typedef struct term {
    int32_t nletters;
    int labels[D5_MAX_DIMS + 1]; /* letters in order; ELLIPSIS where "..." stands */
    int ellipsis;                /* 1 when the term has "..." */
} term;
#define ELLIPSIS (-1)

/* Parses one term from s[0..len) (spaces already removed); `name` names it
 * in messages ("input term 1", "the output term"). */
static d5_status parse_term(const char *s, size_t len, const char *name, term *t)
{
    memset(t, 0, sizeof *t);
    for (size_t i = 0; i < len; i++) {
        if (t->nletters > D5_MAX_DIMS)
            return d5_error(D5_ERR_INVALID, "Einsum: %s of the equation has more than %d labels",
                            name, D5_MAX_DIMS);
        if (s[i] == '.') {
            if (t->ellipsis || i + 2 >= len || s[i + 1] != '.' || s[i + 2] != '.')
                return d5_error(D5_ERR_INVALID,
                                "Einsum: %s of the equation has a '.' that is not part of one "
                                "\"...\"",
                                name);
            t->ellipsis = 1;
            t->labels[t->nletters++] = ELLIPSIS;
            i += 2;
            continue;
        }
        int l = label_of(s[i]);
        if (l < 0)
            return d5_error(D5_ERR_INVALID,
                            "Einsum: %s of the equation has '%c', expected letters, \"...\", "
                            "',' and \"->\"",
                            name, s[i]);
        t->labels[t->nletters++] = l;
    }
    return D5_OK;
}

/* Splits the equation (spaces removed, into buf) into input terms and the
 * output term; *has_output is 0 for the implicit form. */
static d5_status parse(const char *equation, int32_t nin, term *terms, term *output,
                       int *has_output)
{
    char buf[512];
    size_t n = 0;
    for (const char *p = equation; *p; p++)
        if (*p != ' ') {
            if (n + 1 >= sizeof buf)
                return d5_error(D5_ERR_INVALID,
                                "Einsum: the equation is longer than %zu characters",
                                sizeof buf - 1);
            buf[n++] = *p;
        }
    buf[n] = 0;
    char *arrow = strstr(buf, "->");
    *has_output = arrow != NULL;
    size_t lhs = arrow ? (size_t)(arrow - buf) : n;
    int32_t k = 0;
    size_t start = 0;
    for (size_t i = 0; i <= lhs; i++) {
        if (i < lhs && buf[i] != ',') continue;
        if (k == nin)
            return d5_error(D5_ERR_INVALID,
                            "Einsum: the equation '%s' has more terms than the %d "
                            "inputs",
                            equation, (int)nin);
        char name[32];
        snprintf(name, sizeof name, "input term %d", (int)k);
        d5_status s = parse_term(buf + start, i - start, name, &terms[k]);
        if (s != D5_OK) return s;
        k++;
        start = i + 1;
    }
    if (k != nin)
        return d5_error(D5_ERR_INVALID, "Einsum: the equation '%s' has %d terms for %d inputs",
                        equation, (int)k, (int)nin);
    if (!arrow) return D5_OK;
    if (strstr(arrow + 2, "->"))
        return d5_error(D5_ERR_INVALID, "Einsum: the equation '%s' has two \"->\"", equation);
    const char *rhs = arrow + 2;
    if (strchr(rhs, ','))
        return d5_error(D5_ERR_INVALID, "Einsum: the output of '%s' has a ','", equation);
    return parse_term(rhs, strlen(rhs), "the output term", output);
}

/* Checks the inputs against the terms, finds every label's size and each
 * input's stride per label (into st->stride, indexed by label for now). */
static d5_status bind_sizes(const d5_tensor *in, int32_t nin, const term *terms, einsum *st,
                            int64_t *size, int *count, int32_t *ndots)
{
    *ndots = 0;
    for (int32_t i = 0; i < nin; i++) {
        int32_t letters = terms[i].nletters - terms[i].ellipsis;
        int32_t dots = in[i].desc.ndim - letters;
        if (dots < 0 || (!terms[i].ellipsis && dots != 0))
            return d5_error(D5_ERR_SHAPE,
                            "Einsum: input %d has %d dims, but its term has %d "
                            "letters%s",
                            (int)i, (int)in[i].desc.ndim, (int)letters,
                            terms[i].ellipsis ? " and \"...\"" : " and no \"...\"");
        if (dots > *ndots) *ndots = dots;
    }
    for (int l = 0; l < NLABELS; l++) size[l] = -1;
    for (int32_t i = 0; i < nin; i++) {
        const term *t = &terms[i];
        const d5_tensor_desc *d = &in[i].desc;
        int32_t dots = d->ndim - (t->nletters - t->ellipsis);
        int64_t strides[D5_MAX_DIMS];
        d5__strides(d, strides);
        int64_t *is = st->stride + (size_t)i * NLABELS;
        int32_t dim = 0;
        for (int32_t k = 0; k < t->nletters; k++) {
            if (t->labels[k] != ELLIPSIS) {
                int l = t->labels[k];
                if (size[l] >= 0 && size[l] != d->shape[dim])
                    return d5_error(D5_ERR_SHAPE,
                                    "Einsum: letter '%c' has size %lld in input %d but %lld "
                                    "elsewhere",
                                    l < 26 ? 'A' + l : 'a' + (l - 26), (long long)d->shape[dim],
                                    (int)i, (long long)size[l]);
                size[l] = d->shape[dim];
                is[l] += strides[dim];
                count[l]++;
                dim++;
                continue;
            }
            for (int32_t e = 0; e < dots; e++, dim++) {
                int l = LETTERS + (*ndots - dots + e);
                int64_t n = d->shape[dim];
                if (size[l] >= 0 && size[l] != n && size[l] != 1 && n != 1)
                    return d5_error(D5_ERR_SHAPE,
                                    "Einsum: the ellipsis dimensions of input %d do not broadcast "
                                    "against the others (%lld against %lld)",
                                    (int)i, (long long)n, (long long)size[l]);
                if (n != 1) is[l] += strides[dim];
                if (size[l] < n) size[l] = n;
                count[l]++;
            }
        }
    }
    return D5_OK;
}

static d5_status einsum_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    const d5_attrs *attrs = args->attrs;
    d5_tensor_desc *out = args->outputs;
    const char *equation;
    d5_status s = D5_OK;
    for (int32_t i = 0; i < nin && s == D5_OK; i++) {
        s = d5__need_types("Einsum", in, nin, i, D5__NUMBERS);
        if (s == D5_OK) s = d5__same_type("Einsum", in, nin, i, 0);
    }
    if (s != D5_OK) return s;
    if (!d5_attrs_find(attrs, "equation"))
        return d5_error(D5_ERR_INVALID, "Einsum: attribute equation is required");
    if ((s = d5_attrs_string(attrs, "equation", "", &equation)) != D5_OK) return s;
    term *terms = d5_calloc((size_t)nin, sizeof *terms, "Einsum");
    einsum *st = d5_calloc(1, sizeof *st + (size_t)nin * (NLABELS + 1) * sizeof(int64_t), "Einsum");
    if (!terms || !st) {
        d5_free(terms);
        d5_free(st);
        return D5_ERR_NOMEM;
    }
    term output;
    int has_output = 0;
    int64_t size[NLABELS];
    int count[NLABELS] = {0};
    int32_t ndots = 0;
    s = parse(equation, nin, terms, &output, &has_output);
    if (s == D5_OK) s = bind_sizes(in, nin, terms, st, size, count, &ndots);
    d5_free(terms);
    /* The output's labels, in order. */
    int outl[NLABELS], nout_labels = 0, in_output[NLABELS] = {0};
    if (s == D5_OK && has_output) {
        for (int32_t k = 0; k < output.nletters && s == D5_OK; k++) {
            int l = output.labels[k];
            if (l == ELLIPSIS) {
                for (int32_t e = 0; e < ndots; e++) outl[nout_labels++] = LETTERS + e;
                continue;
            }
            char c = (char)(l < 26 ? 'A' + l : 'a' + (l - 26));
            if (!count[l])
                s = d5_error(D5_ERR_INVALID,
                             "Einsum: output letter '%c' of '%s' is in no input term", c, equation);
            else if (in_output[l])
                s = d5_error(D5_ERR_INVALID, "Einsum: output letter '%c' of '%s' is repeated", c,
                             equation);
            in_output[l] = 1;
            outl[nout_labels++] = l;
        }
    } else if (s == D5_OK) {
        for (int32_t e = 0; e < ndots; e++) outl[nout_labels++] = LETTERS + e;
        for (int l = 0; l < LETTERS; l++)
            if (count[l] == 1) outl[nout_labels++] = l;
    }
    if (s == D5_OK && nout_labels > D5_MAX_DIMS)
        s = d5_error(D5_ERR_UNSUPPORTED,
                     "Einsum: the output of '%s' would have %d dims, at most %d", equation,
                     nout_labels, D5_MAX_DIMS);
    if (s != D5_OK) {
        d5_free(st);
        return s;
    }
    for (int k = 0; k < nout_labels; k++) in_output[outl[k]] = 1;
    /* Loop labels: the output's, then every other label used. */
    int loop[NLABELS], nloop = 0;
    for (int k = 0; k < nout_labels; k++) loop[nloop++] = outl[k];
    for (int l = 0; l < NLABELS; l++)
        if (count[l] && !in_output[l]) loop[nloop++] = l;
    /* Re-index the strides from labels to loop positions. */
    int64_t tmp[NLABELS];
    for (int32_t i = 0; i < nin; i++) {
        int64_t *is = st->stride + (size_t)i * NLABELS;
        for (int k = 0; k < nloop; k++) tmp[k] = is[loop[k]];
        memset(is, 0, NLABELS * sizeof *is);
        memcpy(is, tmp, (size_t)nloop * sizeof *is);
    }
    st->nin = nin;
    st->nloop = nloop;
    st->offs = st->stride + (size_t)nin * NLABELS;
    out[0].dtype = in[0].desc.dtype;
    out[0].ndim = nout_labels;
    int64_t stride = 1;
    for (int k = nloop - 1; k >= 0; k--) {
        st->size[k] = size[loop[k]];
        st->out_stride[k] = k < nout_labels ? stride : 0;
        if (k < nout_labels) {
            out[0].shape[k] = st->size[k];
            stride *= st->size[k];
        }
    }
    *state = st;
    return D5_OK;
}

/* Runs the loop: forward (skip < 0) adds the product of every input's element
 * into y; backward adds, into gx, dY times the product of the inputs but
 * input `skip`. */
static void run(einsum *st, const d5_rt *in, double *y, const double *gy, int32_t skip, double *gx)
{
    int64_t idx[NLABELS] = {0}, yoff = 0, *offs = st->offs;
    for (int k = 0; k < st->nloop; k++)
        if (st->size[k] == 0) return;
    memset(offs, 0, (size_t)st->nin * sizeof *offs);
    for (;;) {
        double p = skip < 0 ? 1 : gy[yoff];
        for (int32_t i = 0; i < st->nin; i++)
            if (i != skip) p *= in[i].data[offs[i]];
        if (skip < 0)
            y[yoff] += p;
        else
            gx[offs[skip]] += p;
        int k = st->nloop - 1;
        for (; k >= 0; k--) {
            idx[k]++;
            yoff += st->out_stride[k];
            for (int32_t i = 0; i < st->nin; i++) offs[i] += st->stride[(size_t)i * NLABELS + k];
            if (idx[k] < st->size[k]) break;
            yoff -= st->out_stride[k] * st->size[k];
            for (int32_t i = 0; i < st->nin; i++)
                offs[i] -= st->stride[(size_t)i * NLABELS + k] * st->size[k];
            idx[k] = 0;
        }
        if (k < 0) break;
    }
}

static d5_status einsum_forward(void *state, const d5_ref_call *call)
{
    const d5_rt *in = call->inputs;
    d5_rt *out = call->outputs;
    memset(out[0].data, 0, (size_t)out[0].numel * sizeof(double));
    run(state, in, out[0].data, NULL, -1, NULL);
    d5__wrap_ints(&out[0]);
    return D5_OK;
}

static d5_status einsum_backward(void *state, const d5_ref_call *call)
{
    const d5_rt *gout = call->grad_outputs;
    const d5_rt *in = call->inputs;
    int32_t nin = call->ninputs;
    d5_rt *gin = call->grad_inputs;
    for (int32_t k = 0; k < nin; k++)
        if (gin[k].data) run(state, in, NULL, gout[0].data, k, gin[k].data);
    return D5_OK;
}

/* One multiply-add per input and loop iteration. */
static double einsum_flops(void *state, const d5_ref_shapes *shapes)
{
    int32_t nin = shapes->ninputs;
    const einsum *st = state;
    double iterations = 1;
    for (int k = 0; k < st->nloop; k++) iterations *= (double)st->size[k];
    return iterations * (double)nin;
}

D5_REF_OPERATOR(Einsum, 1, INT32_MAX, 1, 1, einsum_create, einsum_forward, einsum_backward, NULL,
                einsum_flops);
