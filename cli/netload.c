/* Loading a model for the network commands (run, summary, onnx-test): the
 * file, the batch size, the inputs. */
#define _POSIX_C_SOURCE 200809L
#include "cli.h"
#include "netload.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

d5_status netload_open(const char *path, int64_t batch, int64_t symbolic_batch, d5_network **out)
{
    d5_network *net = NULL;
    d5_status s = d5_onnx_load(path, &net);
    if (s == D5_OK && batch > 0) s = d5_network_set_batch(net, batch, 1);
    if (s == D5_OK && batch <= 0 && symbolic_batch > 0)
        s = d5_network_set_batch(net, symbolic_batch, 0);
    if (s == D5_OK) {
        /* A symbolic dimension other than the batch has no size to take. */
        for (int32_t i = 0; i < d5_network_input_count(net) && s == D5_OK; i++) {
            int32_t v;
            d5_value_info info;
            s = d5_network_find_value(net, d5_network_input_name(net, i), &v);
            if (s != D5_OK) break;
            d5_network_value_at(net, v, &info);
            if (info.known) continue;
            for (int32_t d = 0; d < info.desc.ndim; d++)
                if (info.desc.shape[d] < 0)
                    s = d5_error(D5_ERR_SHAPE, "%s: input '%s' dimension %d%s%s%s has no size%s",
                                 path, info.name, (int)d, info.dim_params[d] ? " ('" : "",
                                 info.dim_params[d] ? info.dim_params[d] : "",
                                 info.dim_params[d] ? "')" : "",
                                 d == 0 ? ": give it one with --batch N" : "");
            if (s == D5_OK)
                s = d5_error(D5_ERR_SHAPE, "%s: input '%s' has no shape", path, info.name);
        }
    }
    if (s != D5_OK) {
        d5_network_free(net);
        return s;
    }
    *out = net;
    return D5_OK;
}

/* Floating inputs get uniform [-1, 1); integer inputs zeros (valid indices). */
static void fill_random(d5_tensor *t, d5_rng *rng)
{
    int64_t n = d5_tensor_desc_numel(&t->desc);
    if (t->desc.dtype == D5_F32)
        for (int64_t i = 0; i < n; i++)
            ((float *)t->data)[i] = (float)(2 * d5_rng_uniform(rng) - 1);
    else if (t->desc.dtype == D5_F64)
        for (int64_t i = 0; i < n; i++) ((double *)t->data)[i] = 2 * d5_rng_uniform(rng) - 1;
    else if (t->desc.dtype == D5_F16 || t->desc.dtype == D5_BF16)
        for (int64_t i = 0; i < n; i++) {
            float x = (float)(2 * d5_rng_uniform(rng) - 1);
            ((uint16_t *)t->data)[i] =
                t->desc.dtype == D5_F16 ? d5_f16_from_f32(x) : d5_bf16_from_f32(x);
        }
}

d5_status netload_inputs(const d5_network *net, const char *list, uint64_t seed, d5_tensor **out,
                         int32_t *count)
{
    int32_t n = d5_network_input_count(net);
    d5_tensor *t = calloc((size_t)n + 1, sizeof *t);
    if (!t) return d5_error(D5_ERR_NOMEM, "out of memory for the inputs");
    d5_status s = D5_OK;
    char *copy = list ? strdup(list) : NULL, *save = NULL;
    char *file = copy ? strtok_r(copy, ",", &save) : NULL;
    d5_rng rng;
    d5_rng_seed(&rng, seed);
    for (int32_t i = 0; i < n && s == D5_OK; i++) {
        const char *name = d5_network_input_name(net, i);
        int32_t v;
        d5_value_info info;
        if ((s = d5_network_find_value(net, name, &v)) != D5_OK) break;
        d5_network_value_at(net, v, &info);
        if (list && !file) {
            s = d5_error(D5_ERR_INVALID, "--inputs gives fewer files than the model's %d inputs",
                         (int)n);
            break;
        }
        if (file) {
            s = d5_onnx_tensor_read(file, &t[i], NULL);
            if (s == D5_OK &&
                (t[i].desc.dtype != info.desc.dtype || t[i].desc.ndim != info.desc.ndim ||
                 memcmp(t[i].desc.shape, info.desc.shape,
                        (size_t)info.desc.ndim * sizeof(int64_t)) != 0)) {
                char a[128], b[128];
                d5_tensor_desc_format(&t[i].desc, a, sizeof a);
                d5_tensor_desc_format(&info.desc, b, sizeof b);
                s = d5_error(D5_ERR_SHAPE, "%s holds %s; input '%s' is %s", file, a, name, b);
            }
            file = strtok_r(NULL, ",", &save);
        } else {
            s = d5_tensor_alloc(&info.desc, &t[i]);
            if (s == D5_OK) fill_random(&t[i], &rng);
        }
    }
    if (s == D5_OK && file)
        s = d5_error(D5_ERR_INVALID, "--inputs gives more files than the model's %d inputs",
                     (int)n);
    free(copy);
    if (s != D5_OK) {
        netload_inputs_free(t, n);
        return s;
    }
    *out = t;
    *count = n;
    return D5_OK;
}

void netload_inputs_free(d5_tensor *t, int32_t n)
{
    if (!t) return;
    for (int32_t i = 0; i < n; i++) d5_tensor_free(&t[i]);
    free(t);
}

int netload_write_json(json_t *root, const char *path)
{
    char *text = json_dumps(root, JSON_INDENT(2));
    if (!text) return -1;
    d5_status s = d5_file_write_atomic(path, text, strlen(text));
    free(text);
    return s == D5_OK ? 0 : -1;
}

int netload_optimize_level(const char *cmd, const char *text, int backprop,
                           d5_optimize_level *level)
{
    if (!text) {
        *level = backprop ? D5_OPTIMIZE_NONE : D5_OPTIMIZE_ALL;
        return -1;
    }
    if (d5_optimize_parse(text, level) != D5_OK) {
        fprintf(stderr, "d5 %s: --optimize %s: expected none, basic or all\n", cmd, text);
        return D5_EXIT_USAGE;
    }
    if (backprop && *level != D5_OPTIMIZE_NONE) {
        fprintf(stderr,
                "d5 %s: --optimize %s folds parameters into others; --backprop needs the "
                "graph as it is (--optimize none)\n",
                cmd, text);
        return D5_EXIT_USAGE;
    }
    return -1;
}

void netload_optimize_text(const d5_optimize_report *r, char *buf, size_t size)
{
    size_t at = (size_t)snprintf(buf, size, "%s", d5_optimize_name((d5_optimize_level)r->level));
    for (int32_t i = 0; i < r->npasses && at < size; i++)
        at += (size_t)snprintf(buf + at, size - at, "%s %s %d", i ? "," : ":", r->passes[i].name,
                               (int)r->passes[i].applied);
    if (at < size)
        snprintf(buf + at, size - at, "; %d nodes -> %d", (int)r->nodes_before,
                 (int)r->nodes_after);
}
