/* A dataset from pairs of ONNX TensorProto files, input_K.pb and output_K.pb
 * (the layout of ONNX's test data sets and of saved inputs and outputs), read
 * with d5_onnx_tensor_read. Each output says how many samples its input
 * holds; see d5_dataset_open_tensorpairs in datasets.h. */
#include "dataset_internal.h"
#include "d5/onnx.h"

#include <stdio.h>
#include <string.h>

/* The samples read so far, grown by doubling. */
typedef struct pairs {
    d5_tensor_desc sample;
    int64_t numel, n, cap, classes; /* classes: C of score outputs, 0 for integer labels */
    float *values;
    int64_t *labels;
} pairs;

static d5_status grow(pairs *p, int64_t more)
{
    if (p->n + more <= p->cap) return D5_OK;
    int64_t cap = p->cap ? p->cap : 16;
    while (cap < p->n + more) cap *= 2;
    size_t row = (size_t)p->numel * sizeof(float);
    float *v = d5_realloc(p->values, (size_t)p->n * row, (size_t)cap * row, "tensor-pair samples");
    if (!v) return D5_ERR_NOMEM;
    p->values = v;
    int64_t *l = d5_realloc(p->labels, (size_t)p->n * sizeof *l, (size_t)cap * sizeof *l,
                            "tensor-pair labels");
    if (!l) return D5_ERR_NOMEM;
    p->labels = l;
    p->cap = cap;
    return D5_OK;
}

/* Works out from the output how many samples the pair holds (*m) and whether
 * the input is one sample without a batch dimension (*single). */
static d5_status count_samples(const char *opath, const d5_tensor *out, int64_t *m, int *single)
{
    const d5_tensor_desc *d = &out->desc;
    int integer = d->dtype == D5_I64 || d->dtype == D5_I32;
    int scores = d->dtype == D5_F32;
    if ((integer && d->ndim == 0) || (scores && d->ndim == 1)) {
        *m = 1;
        *single = 1;
    } else if ((integer && d->ndim == 1) || (scores && d->ndim == 2)) {
        *m = d->shape[0];
        *single = 0;
    } else {
        char buf[160];
        d5_tensor_desc_format(d, buf, sizeof buf);
        return d5_error(D5_ERR_FORMAT,
                        "'%s': output %s is neither labels (int32/int64, scalar or [m]) nor "
                        "scores (float32, [C] or [m, C])",
                        opath, buf);
    }
    return D5_OK;
}

static d5_status append(pairs *p, const char *ipath, const char *opath, const d5_tensor *in,
                        const d5_tensor *out)
{
    int64_t m = 0;
    int single = 0;
    d5_status s = count_samples(opath, out, &m, &single);
    if (s != D5_OK) return s;
    if (in->desc.dtype != D5_F32 && in->desc.dtype != D5_F64)
        return d5_error(D5_ERR_UNSUPPORTED, "'%s': input of type %s; expected float32 or float64",
                        ipath, d5_dtype_name((d5_dtype)in->desc.dtype));
    if (!single && (in->desc.ndim < 1 || in->desc.shape[0] != m))
        return d5_error(D5_ERR_SHAPE,
                        "'%s': %lld labels in '%s' but the input's first dimension is %lld", ipath,
                        (long long)m, opath, (long long)(in->desc.ndim ? in->desc.shape[0] : 0));
    d5_tensor_desc sample;
    const int skip = single ? 0 : 1;
    if ((s = d5_tensor_desc_make(D5_F32, in->desc.ndim - skip, in->desc.shape + skip, &sample)) !=
        D5_OK)
        return s;
    int64_t numel = d5_tensor_desc_numel(&sample);
    int64_t classes = out->desc.dtype == D5_F32 ? out->desc.shape[out->desc.ndim - 1] : 0;
    if (p->n == 0 && p->cap == 0) {
        if (numel < 1) return d5_error(D5_ERR_FORMAT, "'%s': samples of no elements", ipath);
        p->sample = sample;
        p->numel = numel;
        p->classes = classes;
    } else if (sample.ndim != p->sample.ndim ||
               memcmp(sample.shape, p->sample.shape, (size_t)sample.ndim * sizeof(int64_t))) {
        char got[160], want[160];
        d5_tensor_desc_format(&sample, got, sizeof got);
        d5_tensor_desc_format(&p->sample, want, sizeof want);
        return d5_error(D5_ERR_SHAPE, "'%s': samples %s, but input_0.pb has %s", ipath, got, want);
    } else if (classes != p->classes) {
        return d5_error(D5_ERR_SHAPE, "'%s': %lld classes of scores, but output_0.pb has %lld",
                        opath, (long long)classes, (long long)p->classes);
    }
    if (classes == 0 && out->desc.dtype == D5_F32)
        return d5_error(D5_ERR_FORMAT, "'%s': scores of no classes", opath);
    if ((s = grow(p, m)) != D5_OK) return s;
    float *dst = p->values + (size_t)p->n * (size_t)numel;
    for (int64_t i = 0; i < m * numel; i++)
        dst[i] = in->desc.dtype == D5_F32 ? ((const float *)in->data)[i]
                                          : (float)((const double *)in->data)[i];
    for (int64_t k = 0; k < m; k++) {
        int64_t label = 0;
        if (out->desc.dtype == D5_I64) {
            label = ((const int64_t *)out->data)[k];
        } else if (out->desc.dtype == D5_I32) {
            label = ((const int32_t *)out->data)[k];
        } else {
            const float *row = (const float *)out->data + k * classes;
            for (int64_t c = 1; c < classes; c++)
                if (row[c] > row[label]) label = c;
        }
        if (label < 0)
            return d5_error(D5_ERR_FORMAT, "'%s': label %lld of sample %lld is negative", opath,
                            (long long)label, (long long)k);
        p->labels[p->n + k] = label;
    }
    p->n += m;
    return D5_OK;
}

/* Reads pair K; *done is set when input_K.pb does not exist. */
static d5_status read_pair(const char *dir, int k, pairs *p, int *done)
{
    char iname[32], oname[32];
    snprintf(iname, sizeof iname, "input_%d.pb", k);
    snprintf(oname, sizeof oname, "output_%d.pb", k);
    char *ipath = d5__dataset_path(dir, iname), *opath = d5__dataset_path(dir, oname);
    d5_tensor in = {0}, out = {0};
    d5_status s = ipath && opath ? D5_OK : D5_ERR_NOMEM;
    if (s == D5_OK && !d5__dataset_exists(ipath)) {
        *done = 1;
        if (k == 0) s = d5_error(D5_ERR_IO, "tensor-pair folder '%s' has no input_0.pb", dir);
    } else if (s == D5_OK && !d5__dataset_exists(opath)) {
        s = d5_error(D5_ERR_IO, "tensor-pair folder '%s' has %s but no %s", dir, iname, oname);
    } else if (s == D5_OK && (s = d5_onnx_tensor_read(ipath, &in, NULL)) == D5_OK &&
               (s = d5_onnx_tensor_read(opath, &out, NULL)) == D5_OK) {
        s = append(p, ipath, opath, &in, &out);
    }
    d5_tensor_free(&in);
    d5_tensor_free(&out);
    d5_free(ipath);
    d5_free(opath);
    return s;
}

d5_status d5_dataset_open_tensorpairs(const char *dir, d5_dataset **out)
{
    if (!dir || !out) return d5_error(D5_ERR_INVALID, "d5_dataset_open_tensorpairs: NULL argument");
    pairs p;
    memset(&p, 0, sizeof p);
    d5_status s = D5_OK;
    int done = 0;
    for (int k = 0; s == D5_OK && !done && k < 1000000; k++) s = read_pair(dir, k, &p, &done);
    d5_dataset *ds = NULL;
    if (s == D5_OK && p.n == 0)
        s = d5_error(D5_ERR_FORMAT, "tensor-pair folder '%s' holds no samples", dir);
    if (s == D5_OK) {
        char name[256];
        snprintf(name, sizeof name, "tensorpairs:%s", dir);
        s = d5__dataset_new(name, p.sample.ndim, p.sample.shape, p.n, p.classes, &ds);
    }
    if (s == D5_OK) {
        memcpy(ds->labels, p.labels, (size_t)p.n * sizeof *p.labels);
        if (p.classes == 0) d5__dataset_infer_classes(ds);
        ds->values = p.values;
        p.values = NULL;
        *out = ds;
    }
    d5_free(p.values);
    d5_free(p.labels);
    return s;
}
