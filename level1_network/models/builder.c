/* Layers for the model builders: each helper adds one ONNX node and the
 * initializers it reads. Operators used (ai.onnx, the same meaning in opsets
 * 7 to 22): Conv, BatchNormalization, Relu, MaxPool, Add, GlobalAveragePool,
 * Flatten, Gemm; https://onnx.ai/onnx/operators/.
 *
 * Random initializers draw from their own d5_rng stream, seeded by the model's
 * seed and the initializer's name, so that a weight does not change when a
 * builder adds layers in another order or when only the number of classes
 * changes. */
#include "builder.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const char *d5__mb_name(char *buf, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, D5__MB_NAME, fmt, ap);
    va_end(ap);
    return buf;
}

/* FNV-1a of the name mixed with the seed: the seed of one initializer's stream. */
static uint64_t stream_seed(uint64_t seed, const char *name)
{
    uint64_t h = d5_fnv1a(D5_FNV1A_OFFSET, name, strlen(name));
    return h ^ (seed * 0x9e3779b97f4a7c15ull);
}

/* Prefixes the detail message of a failed network call with the model's name. */
static d5_status wrap(const d5__mb *b, d5_status s)
{
    char detail[512];
    snprintf(detail, sizeof detail, "%s", d5_last_error());
    return d5_error(s, "model '%s': %s", b->model, detail);
}

d5_status d5__mb_init(d5__mb *b, const char *layer, const char *suffix, int32_t ndim,
                      const int64_t *shape, d5__mb_fill kind, double a, int param)
{
    d5_tensor_desc desc;
    D5__TRY(d5_tensor_desc_make(D5_F32, ndim, shape, &desc));
    if (param) b->params += d5_tensor_desc_numel(&desc);
    if (!b->net) return D5_OK;

    char name[D5__MB_NAME];
    d5__mb_name(name, "%s.%s", layer, suffix);
    d5_tensor t;
    D5__TRY(d5_tensor_alloc(&desc, &t));
    float *v = t.data;
    int64_t n = d5_tensor_desc_numel(&desc);
    d5_rng rng;
    d5_rng_seed(&rng, stream_seed(b->seed, name));
    for (int64_t i = 0; i < n; i++) {
        switch (kind) {
        case D5__MB_CONST: v[i] = (float)a; break;
        case D5__MB_NORMAL: v[i] = (float)(a * d5_rng_normal(&rng)); break;
        case D5__MB_UNIFORM: v[i] = (float)(a * (2.0 * d5_rng_uniform(&rng) - 1.0)); break;
        }
    }
    d5_status s = d5_network_add_initializer_take(b->net, name, &t);
    return s == D5_OK ? D5_OK : wrap(b, s);
}

d5_status d5__mb_const(d5__mb *b, const char *name, d5_dtype dtype, int32_t ndim,
                       const int64_t *shape, const void *data)
{
    if (!b->net) return D5_OK;
    d5_tensor_desc desc;
    d5_tensor t;
    D5__TRY(d5_tensor_desc_make(dtype, ndim, shape, &desc));
    D5__TRY(d5_tensor_alloc(&desc, &t));
    memcpy(t.data, data, (size_t)d5_tensor_desc_numel(&desc) * d5_dtype_size(dtype));
    d5_status s = d5_network_add_initializer_take(b->net, name, &t);
    return s == D5_OK ? D5_OK : wrap(b, s);
}

d5_status d5__mb_node_outs(d5__mb *b, const char *name, const char *op, const char *const *inputs,
                           int32_t ninputs, const char *const *outputs, int32_t noutputs,
                           const d5_attr *attrs, int32_t nattrs)
{
    if (!b->net) return D5_OK;
    const d5_attrs a = {attrs, nattrs};
    d5_status s = d5_network_add_node(b->net, name, op, "", inputs, ninputs, outputs, noutputs,
                                      nattrs ? &a : NULL, NULL);
    return s == D5_OK ? D5_OK : wrap(b, s);
}

d5_status d5__mb_node(d5__mb *b, const char *name, const char *op, const char *const *inputs,
                      int32_t ninputs, const char *out, const d5_attr *attrs, int32_t nattrs)
{
    const char *outputs[1] = {out ? out : name};
    return d5__mb_node_outs(b, name, op, inputs, ninputs, outputs, 1, attrs, nattrs);
}

d5_attr d5__mb_attr(const char *name, int32_t type, int64_t i, double f, const int64_t *ints)
{
    d5_attr a = {0};
    a.name = name;
    a.type = type;
    a.i = type == D5_ATTR_INT ? i : 0;
    a.f = f;
    a.ints = ints;
    a.count = type == D5_ATTR_INTS ? i : 0;
    return a;
}

d5_status d5__mb_graph_io(d5__mb *b, d5_dtype in_type, int32_t in_ndim, const int64_t *in_shape,
                          int32_t out_ndim, const int64_t *out_shape)
{
    if (!b->net) return D5_OK;
    const int64_t n = b->batch > 0 ? b->batch : -1;
    d5_tensor_desc in = {0}, out = {0};
    in.dtype = in_type;
    out.dtype = D5_F32;
    in.ndim = in_ndim;
    out.ndim = out_ndim;
    in.shape[0] = out.shape[0] = n;
    for (int32_t i = 1; i < in_ndim; i++) in.shape[i] = in_shape[i - 1];
    for (int32_t i = 1; i < out_ndim; i++) out.shape[i] = out_shape[i - 1];
    const char *const dims[D5_MAX_DIMS] = {b->batch > 0 ? NULL : "N"};
    d5_status s = d5_network_add_input(b->net, "input", &in, dims);
    if (s == D5_OK) s = d5_network_add_output(b->net, "logits", &out);
    return s == D5_OK ? D5_OK : wrap(b, s);
}

d5_status d5__mb_io(d5__mb *b, int64_t c, int64_t h, int64_t w)
{
    const int64_t in[3] = {c, h, w};
    return d5__mb_graph_io(b, D5_F32, 4, in, 2, &b->classes);
}

d5_status d5__mb_conv(d5__mb *b, const char *name, const char *x, int64_t cin, int64_t cout,
                      int64_t k, int64_t stride, int64_t pad, int bias)
{
    const int64_t wshape[4] = {cout, cin, k, k};
    if (b->conv_torch_default)
        D5__TRY(d5__mb_init(b, name, "weight", 4, wshape, D5__MB_UNIFORM,
                            1.0 / sqrt((double)(cin * k * k)), 1));
    else
        D5__TRY(d5__mb_init(b, name, "weight", 4, wshape, D5__MB_NORMAL,
                            sqrt(2.0 / (double)(cout * k * k)), 1));
    if (bias)
        D5__TRY(d5__mb_init(b, name, "bias", 1, &cout, D5__MB_UNIFORM,
                            1.0 / sqrt((double)(cin * k * k)), 1));
    char wname[D5__MB_NAME], bname[D5__MB_NAME];
    const char *inputs[3] = {x, d5__mb_name(wname, "%s.weight", name),
                             d5__mb_name(bname, "%s.bias", name)};
    const int64_t kernel[2] = {k, k}, strides[2] = {stride, stride}, pads[4] = {pad, pad, pad, pad};
    const d5_attr attrs[3] = {d5__mb_ints("kernel_shape", kernel, 2),
                              d5__mb_ints("strides", strides, 2), d5__mb_ints("pads", pads, 4)};
    return d5__mb_node(b, name, "Conv", inputs, bias ? 3 : 2, NULL, attrs, 3);
}

d5_status d5__mb_bn(d5__mb *b, const char *name, const char *x, int64_t c)
{
    D5__TRY(d5__mb_init(b, name, "weight", 1, &c, D5__MB_CONST, 1.0, 1));
    D5__TRY(d5__mb_init(b, name, "bias", 1, &c, D5__MB_CONST, 0.0, 1));
    D5__TRY(d5__mb_init(b, name, "running_mean", 1, &c, D5__MB_CONST, 0.0, 0));
    D5__TRY(d5__mb_init(b, name, "running_var", 1, &c, D5__MB_CONST, 1.0, 0));
    char n[4][D5__MB_NAME];
    const char *inputs[5] = {
        x, d5__mb_name(n[0], "%s.weight", name), d5__mb_name(n[1], "%s.bias", name),
        d5__mb_name(n[2], "%s.running_mean", name), d5__mb_name(n[3], "%s.running_var", name)};
    d5_attr eps = {0};
    eps.name = "epsilon";
    eps.type = D5_ATTR_FLOAT;
    eps.f = 1e-5;
    return d5__mb_node(b, name, "BatchNormalization", inputs, 5, NULL, &eps, 1);
}

d5_status d5__mb_relu(d5__mb *b, const char *name, const char *x)
{
    return d5__mb_node(b, name, "Relu", &x, 1, NULL, NULL, 0);
}

d5_status d5__mb_maxpool(d5__mb *b, const char *name, const char *x, int64_t k, int64_t stride,
                         int64_t pad)
{
    const int64_t kernel[2] = {k, k}, strides[2] = {stride, stride}, pads[4] = {pad, pad, pad, pad};
    const d5_attr attrs[3] = {d5__mb_ints("kernel_shape", kernel, 2),
                              d5__mb_ints("strides", strides, 2), d5__mb_ints("pads", pads, 4)};
    return d5__mb_node(b, name, "MaxPool", &x, 1, NULL, attrs, 3);
}

d5_status d5__mb_add(d5__mb *b, const char *name, const char *x, const char *y)
{
    const char *inputs[2] = {x, y};
    return d5__mb_node(b, name, "Add", inputs, 2, NULL, NULL, 0);
}

d5_status d5__mb_global_avgpool(d5__mb *b, const char *name, const char *x)
{
    return d5__mb_node(b, name, "GlobalAveragePool", &x, 1, NULL, NULL, 0);
}

d5_status d5__mb_flatten(d5__mb *b, const char *name, const char *x)
{
    d5_attr axis = {0};
    axis.name = "axis";
    axis.type = D5_ATTR_INT;
    axis.i = 1;
    return d5__mb_node(b, name, "Flatten", &x, 1, NULL, &axis, 1);
}

d5_status d5__mb_linear(d5__mb *b, const char *name, const char *x, int64_t in, int64_t out,
                        const char *y)
{
    const int64_t wshape[2] = {out, in};
    const double bound = 1.0 / sqrt((double)in);
    D5__TRY(d5__mb_init(b, name, "weight", 2, wshape, D5__MB_UNIFORM, bound, 1));
    D5__TRY(d5__mb_init(b, name, "bias", 1, &out, D5__MB_UNIFORM, bound, 1));
    char wname[D5__MB_NAME], bname[D5__MB_NAME];
    const char *inputs[3] = {x, d5__mb_name(wname, "%s.weight", name),
                             d5__mb_name(bname, "%s.bias", name)};
    d5_attr tb = {0};
    tb.name = "transB";
    tb.type = D5_ATTR_INT;
    tb.i = 1;
    return d5__mb_node(b, name, "Gemm", inputs, 3, y, &tb, 1);
}
