/* TfIdfVectorizer (ONNX opset 9): counts, in each row of the int32 or int64 X
 * ([C], or [N, C] of N rows), the n-grams of a pool given as attributes, and
 * writes one float32 value per pooled n-gram into Y ([K] or [N, K], K =
 * max(ngram_indexes) + 1; entries no n-gram maps to stay 0).
 *
 * The pool is pool_int64s: ngram_counts[k] is where its n-grams of length
 * k + 1 start (each n consecutive values, up to the next start or the end),
 * and ngram_indexes[g] is the output index of the g-th pooled n-gram, in pool
 * order. An n-gram of the row starts at any position and takes every
 * (skip + 1)-th element, for each skip in 0..max_skip_count (a 1-gram is
 * counted once, whatever the skips); lengths min_gram_length..max_gram_length
 * are counted. mode "TF" writes the counts, "IDF" weights[index] (1 without
 * weights) where the count is positive, "TFIDF" the count times weights[index]
 * (1 without weights). pool_strings (string inputs) is unsupported. No
 * gradient. https://onnx.ai/onnx/operators/onnx__TfIdfVectorizer.html */
#include "util.h"

#include <string.h>

typedef enum { TF, IDF, TFIDF } tfidf_mode;

typedef struct tfidf {
    tfidf_mode mode;
    int64_t min_len, max_len, max_skip;
    int64_t rows, cols, width; /* width: K */
    int64_t ngrams;            /* pooled n-grams */
    int64_t *len, *at, *index; /* per n-gram: length, offset in pool, output index */
    int64_t *pool;
    double *weights; /* NULL: 1 */
} tfidf;

static void tfidf_destroy(void *state)
{
    tfidf *t = state;
    if (!t) return;
    d5_free(t->len);
    d5_free(t->pool);
    d5_free(t->weights);
    d5_free(t);
}

static d5_status read_mode(const d5_attrs *attrs, tfidf *t)
{
    static const char *const names[] = {"TF", "IDF", "TFIDF"};
    const char *m;
    d5_status s = d5_attrs_string(attrs, "mode", NULL, &m);
    if (s != D5_OK) return s;
    if (!m) return d5_error(D5_ERR_INVALID, "TfIdfVectorizer: attribute mode is required");
    for (int i = 0; i < 3; i++)
        if (strcmp(m, names[i]) == 0) {
            t->mode = (tfidf_mode)i;
            return D5_OK;
        }
    return d5_error(D5_ERR_INVALID, "TfIdfVectorizer: mode is '%s', expected TF, IDF or TFIDF", m);
}

static d5_status read_lengths(const d5_attrs *attrs, tfidf *t)
{
    d5_status s = d5_attrs_int(attrs, "min_gram_length", 0, &t->min_len);
    if (s == D5_OK) s = d5_attrs_int(attrs, "max_gram_length", 0, &t->max_len);
    if (s == D5_OK) s = d5_attrs_int(attrs, "max_skip_count", 0, &t->max_skip);
    if (s != D5_OK) return s;
    if (t->min_len < 1 || t->max_len < t->min_len)
        return d5_error(D5_ERR_INVALID,
                        "TfIdfVectorizer: min_gram_length %lld and max_gram_length %lld must "
                        "satisfy 1 <= min <= max",
                        (long long)t->min_len, (long long)t->max_len);
    return d5__need_not_negative("TfIdfVectorizer", "max_skip_count", t->max_skip);
}

/* Splits the pool into n-grams with their output indices. */
static d5_status read_pool(const d5_attrs *attrs, tfidf *t)
{
    const int64_t *pool, *counts, *indexes;
    int64_t npool, ncounts, nindexes;
    d5_status s = d5_attrs_ints(attrs, "pool_int64s", &pool, &npool);
    if (s == D5_OK) s = d5_attrs_ints(attrs, "ngram_counts", &counts, &ncounts);
    if (s == D5_OK) s = d5_attrs_ints(attrs, "ngram_indexes", &indexes, &nindexes);
    if (s != D5_OK) return s;
    if (d5_attrs_find(attrs, "pool_strings"))
        return d5_error(D5_ERR_UNSUPPORTED,
                        "TfIdfVectorizer: pool_strings is not supported (ref backend: int32 and "
                        "int64 inputs with pool_int64s)");
    if (!pool || !counts)
        return d5_error(D5_ERR_INVALID,
                        "TfIdfVectorizer: attributes pool_int64s and ngram_counts are required");
    int64_t ngrams = 0;
    for (int64_t k = 0; k < ncounts; k++) {
        int64_t end = k + 1 < ncounts ? counts[k + 1] : npool;
        if (counts[k] < 0 || end < counts[k] || end > npool || (end - counts[k]) % (k + 1) != 0)
            return d5_error(D5_ERR_INVALID,
                            "TfIdfVectorizer: ngram_counts[%lld] = %lld does not start a whole "
                            "number of %lld-grams in pool_int64s (%lld values)",
                            (long long)k, (long long)counts[k], (long long)(k + 1),
                            (long long)npool);
        ngrams += (end - counts[k]) / (k + 1);
    }
    if (nindexes != ngrams)
        return d5_error(D5_ERR_INVALID,
                        "TfIdfVectorizer: ngram_indexes has %lld values, expected %lld (one per "
                        "pooled n-gram)",
                        (long long)nindexes, (long long)ngrams);
    t->ngrams = ngrams;
    t->len = d5_alloc((size_t)(3 * ngrams + 1) * sizeof(int64_t), "TfIdfVectorizer");
    t->pool = d5_alloc((size_t)(npool + 1) * sizeof(int64_t), "TfIdfVectorizer");
    if (!t->len || !t->pool) return D5_ERR_NOMEM;
    if (npool) memcpy(t->pool, pool, (size_t)npool * sizeof(int64_t));
    t->at = t->len + ngrams;
    t->index = t->at + ngrams;
    int64_t g = 0;
    t->width = 0;
    for (int64_t k = 0; k < ncounts; k++) {
        int64_t end = k + 1 < ncounts ? counts[k + 1] : npool;
        for (int64_t at = counts[k]; at < end; at += k + 1, g++) {
            if (indexes[g] < 0)
                return d5_error(D5_ERR_INVALID, "TfIdfVectorizer: ngram_indexes[%lld] is %lld",
                                (long long)g, (long long)indexes[g]);
            t->len[g] = k + 1;
            t->at[g] = at;
            t->index[g] = indexes[g];
            if (indexes[g] + 1 > t->width) t->width = indexes[g] + 1;
        }
    }
    return D5_OK;
}

static d5_status read_weights(const d5_attrs *attrs, tfidf *t)
{
    const d5_attr *w = d5_attrs_find(attrs, "weights");
    if (!w || w->count == 0) return D5_OK;
    if (w->type != D5_ATTR_FLOATS || w->count != t->ngrams)
        return d5_error(D5_ERR_INVALID,
                        "TfIdfVectorizer: weights must be %lld floats (one per pooled n-gram)",
                        (long long)t->ngrams);
    t->weights = d5_alloc((size_t)w->count * sizeof(double), "TfIdfVectorizer");
    if (!t->weights) return D5_ERR_NOMEM;
    memcpy(t->weights, w->floats, (size_t)w->count * sizeof(double));
    return D5_OK;
}

static d5_status tfidf_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    const d5_attrs *attrs = args->attrs;
    d5_tensor_desc *out = args->outputs;
    d5_status s = d5__need_types("TfIdfVectorizer", in, nin, 0, D5__DT(D5_I32) | D5__DT(D5_I64));
    if (s != D5_OK) return s;
    const d5_tensor_desc *x = &in[0].desc;
    if (x->ndim != 1 && x->ndim != 2)
        return d5_error(D5_ERR_SHAPE,
                        "TfIdfVectorizer: input 0 (X) has %d dims, expected 1 ([C]) or 2 ([N, C])",
                        (int)x->ndim);
    tfidf *t = d5_calloc(1, sizeof *t, "TfIdfVectorizer");
    if (!t) return D5_ERR_NOMEM;
    s = read_mode(attrs, t);
    if (s == D5_OK) s = read_lengths(attrs, t);
    if (s == D5_OK) s = read_pool(attrs, t);
    if (s == D5_OK) s = read_weights(attrs, t);
    if (s != D5_OK) {
        tfidf_destroy(t);
        return s;
    }
    t->rows = x->ndim == 2 ? x->shape[0] : 1;
    t->cols = x->shape[x->ndim - 1];
    out[0].dtype = D5_F32;
    out[0].ndim = x->ndim;
    if (x->ndim == 2) out[0].shape[0] = t->rows;
    out[0].shape[x->ndim - 1] = t->width;
    *state = t;
    return D5_OK;
}

/* 1 when the row's elements start, start + step, ... match pooled n-gram g. */
static int matches(const tfidf *t, const double *row, int64_t start, int64_t step, int64_t g)
{
    if (start + (t->len[g] - 1) * step >= t->cols) return 0;
    for (int64_t j = 0; j < t->len[g]; j++)
        if (row[start + j * step] != (double)t->pool[t->at[g] + j]) return 0;
    return 1;
}

static d5_status tfidf_forward(void *state, const d5_ref_call *call)
{
    const d5_rt *in = call->inputs;
    d5_rt *out = call->outputs;
    const tfidf *t = state;
    memset(out[0].data, 0, (size_t)out[0].numel * sizeof(double));
    for (int64_t r = 0; r < t->rows; r++) {
        const double *row = in[0].data + r * t->cols;
        double *y = out[0].data + r * t->width;
        for (int64_t g = 0; g < t->ngrams; g++) {
            if (t->len[g] < t->min_len || t->len[g] > t->max_len) continue;
            /* A 1-gram is the same whatever the skip: count it once. */
            int64_t skips = t->len[g] == 1 ? 0 : t->max_skip;
            for (int64_t skip = 0; skip <= skips; skip++)
                for (int64_t i = 0; i < t->cols; i++)
                    y[t->index[g]] += matches(t, row, i, skip + 1, g);
        }
        for (int64_t g = 0; g < t->ngrams; g++) {
            double w = t->weights ? t->weights[g] : 1;
            double *v = &y[t->index[g]];
            if (t->mode == IDF && *v > 0) *v = w;
            if (t->mode == TFIDF) *v *= w;
        }
    }
    return D5_OK;
}

D5_REF_OPERATOR_NO_BACKWARD(TfIdfVectorizer, 1, 1, 1, 1, tfidf_create, tfidf_forward, tfidf_destroy,
                            NULL);
