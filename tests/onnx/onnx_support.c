/* Helpers shared by the ONNX tests: a one-Relu model, network comparison,
 * the test-data list and the ONNX checker. */
#define _GNU_SOURCE
#include "onnx_support.h"

#include <criterion/criterion.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

void save_relu_model(const char *path, const char *name, int32_t ndim, const int64_t *shape,
                     const char *domain, int64_t version)
{
    d5_network *net;
    cr_assert_eq(d5_network_create(name, &net), D5_OK);
    d5_tensor_desc d;
    cr_assert_eq(d5_tensor_desc_make(D5_F32, ndim, shape, &d), D5_OK);
    cr_assert_eq(d5_network_add_input(net, "x", &d, NULL), D5_OK);
    const char *x[] = {"x"}, *y[] = {"y"};
    cr_assert_eq(d5_network_add_node(net, "r", "Relu", NULL, x, 1, y, 1, NULL, NULL), D5_OK);
    cr_assert_eq(d5_network_add_output(net, "y", &d), D5_OK);
    if (domain)
        cr_assert_eq(d5_network_set_opset(net, domain, version), D5_OK, "%s", d5_last_error());
    cr_assert_eq(d5_onnx_save(net, path), D5_OK, "%s: %s", path, d5_last_error());
    d5_network_free(net);
}

int path_exists(const char *path)
{
    return access(path, F_OK) == 0;
}

static int str_eq(const char *a, const char *b)
{
    return strcmp(a ? a : "", b ? b : "") == 0;
}

static int desc_eq(const d5_tensor_desc *a, const d5_tensor_desc *b)
{
    if (a->dtype != b->dtype || a->ndim != b->ndim) return 0;
    for (int32_t i = 0; i < a->ndim && i < D5_MAX_DIMS; i++)
        if (a->shape[i] != b->shape[i]) return 0;
    return 1;
}

static int tensor_eq(const d5_tensor *a, const d5_tensor *b)
{
    size_t bytes = 0;
    if (!desc_eq(&a->desc, &b->desc) || d5_tensor_desc_bytes(&a->desc, &bytes) != D5_OK) return 0;
    return bytes == 0 || memcmp(a->data, b->data, bytes) == 0;
}

static int attr_eq(const d5_attr *a, const d5_attr *b)
{
    if (!str_eq(a->name, b->name) || a->type != b->type) return 0;
    switch (a->type) {
    case D5_ATTR_INT: return a->i == b->i;
    case D5_ATTR_FLOAT: return memcmp(&a->f, &b->f, sizeof a->f) == 0;
    case D5_ATTR_STRING: return str_eq(a->s, b->s);
    case D5_ATTR_INTS:
        return a->count == b->count &&
               (a->count == 0 || memcmp(a->ints, b->ints, (size_t)a->count * 8) == 0);
    case D5_ATTR_FLOATS:
        return a->count == b->count &&
               (a->count == 0 || memcmp(a->floats, b->floats, (size_t)a->count * 8) == 0);
    case D5_ATTR_TENSOR: return tensor_eq(a->tensor, b->tensor);
    default: return 0;
    }
}

static int nodes_diff(const d5_network *a, const d5_network *b, char *why, size_t size)
{
    if (d5_network_node_count(a) != d5_network_node_count(b)) {
        snprintf(why, size, "%d nodes against %d", d5_network_node_count(a),
                 d5_network_node_count(b));
        return 1;
    }
    for (int32_t i = 0; i < d5_network_node_count(a); i++) {
        d5_node_info x, y;
        d5_network_node_at(a, i, &x);
        d5_network_node_at(b, i, &y);
        int same = str_eq(x.name, y.name) && str_eq(x.op_type, y.op_type) &&
                   str_eq(x.domain, y.domain) && x.ninputs == y.ninputs &&
                   x.noutputs == y.noutputs && x.attrs->count == y.attrs->count;
        for (int32_t k = 0; same && k < x.ninputs; k++) same = str_eq(x.inputs[k], y.inputs[k]);
        for (int32_t k = 0; same && k < x.noutputs; k++) same = str_eq(x.outputs[k], y.outputs[k]);
        for (int32_t k = 0; same && k < x.attrs->count; k++)
            same = attr_eq(&x.attrs->items[k], &y.attrs->items[k]);
        if (!same) {
            snprintf(why, size, "node %d ('%s', %s) differs", i, x.name, x.op_type);
            return 1;
        }
    }
    return 0;
}

static int values_diff(const d5_network *a, const d5_network *b, char *why, size_t size)
{
    int32_t na = 0, nb = 0;
    for (int32_t i = 0; i < d5_network_value_count(a); i++) {
        d5_value_info x, y;
        d5_network_value_at(a, i, &x);
        if (x.kind == D5_VALUE_INTERMEDIATE) continue;
        na++;
        int32_t j;
        if (d5_network_find_value(b, x.name, &j) != D5_OK) {
            snprintf(why, size, "value '%s' is missing", x.name);
            return 1;
        }
        d5_network_value_at(b, j, &y);
        int same = x.kind == y.kind && desc_eq(&x.desc, &y.desc);
        for (int d = 0; same && d < x.desc.ndim; d++)
            same = str_eq(x.dim_params[d], y.dim_params[d]);
        size_t bytes = 0;
        if (same && x.kind == D5_VALUE_INITIALIZER && d5_tensor_desc_bytes(&x.desc, &bytes) == 0)
            same = bytes == 0 || memcmp(x.data, y.data, bytes) == 0;
        if (!same) {
            snprintf(why, size, "value '%s' differs", x.name);
            return 1;
        }
    }
    for (int32_t i = 0; i < d5_network_value_count(b); i++) {
        d5_value_info y;
        d5_network_value_at(b, i, &y);
        nb += y.kind != D5_VALUE_INTERMEDIATE;
    }
    if (na != nb) {
        snprintf(why, size, "%d inputs and initializers against %d", na, nb);
        return 1;
    }
    return 0;
}

int net_diff(const d5_network *a, const d5_network *b, char *why, size_t size)
{
    if (!str_eq(d5_network_name(a), d5_network_name(b))) {
        snprintf(why, size, "names '%s' and '%s'", d5_network_name(a), d5_network_name(b));
        return 1;
    }
    /* b may name the default domain's opset that a assumes. */
    for (int pass = 0; pass < 2; pass++) {
        const d5_network *x = pass ? b : a, *y = pass ? a : b;
        for (int32_t i = 0; i < d5_network_opset_count(x); i++) {
            const char *domain;
            int64_t version;
            d5_network_opset_at(x, i, &domain, &version);
            if (d5_network_opset(y, domain) != version) {
                snprintf(why, size, "opset of domain '%s' differs", domain);
                return 1;
            }
        }
    }
    if (d5_network_input_count(a) != d5_network_input_count(b) ||
        d5_network_output_count(a) != d5_network_output_count(b)) {
        snprintf(why, size, "input or output counts differ");
        return 1;
    }
    for (int32_t i = 0; i < d5_network_input_count(a); i++)
        if (!str_eq(d5_network_input_name(a, i), d5_network_input_name(b, i))) {
            snprintf(why, size, "input %d differs", i);
            return 1;
        }
    for (int32_t i = 0; i < d5_network_output_count(a); i++)
        if (!str_eq(d5_network_output_name(a, i), d5_network_output_name(b, i))) {
            snprintf(why, size, "output %d differs", i);
            return 1;
        }
    return nodes_diff(a, b, why, size) || values_diff(a, b, why, size);
}

char **testdata_models(const char *folder, size_t *count)
{
    char pattern[512];
    snprintf(pattern, sizeof pattern, "%s/%s/*/model.onnx", TESTDATA, folder);
    glob_t g;
    *count = 0;
    if (glob(pattern, 0, NULL, &g) != 0) return calloc(1, sizeof(char *));
    char **paths = calloc(g.gl_pathc + 1, sizeof *paths);
    for (size_t i = 0; paths && i < g.gl_pathc; i++) paths[i] = strdup(g.gl_pathv[i]);
    *count = g.gl_pathc;
    globfree(&g);
    return paths;
}

size_t testdata_representable(const char *folder, size_t *total)
{
    static const struct {
        const char *folder;
        size_t total, representable;
    } survey[] = {
        {"node", 932, 932},
        {"simple", 23, 23},
        {"pytorch-converted", 82, 82},
        {"pytorch-operator", 35, 35},
    };
    for (size_t i = 0; i < sizeof survey / sizeof survey[0]; i++)
        if (strcmp(folder, survey[i].folder) == 0) {
            *total = survey[i].total;
            return survey[i].representable;
        }
    *total = 0;
    return 0;
}

void paths_free(char **paths)
{
    for (size_t i = 0; paths && paths[i]; i++) free(paths[i]);
    free(paths);
}

int python_check(const char *list_file)
{
    const char *python = D5_PYTHON;
    if (!python[0] || !path_exists(python)) return -2;
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s -c 'import onnx' 2>/dev/null", python);
    if (system(cmd) != 0) return -2;
    snprintf(cmd, sizeof cmd,
             "%s -c \"import onnx, sys\n"
             "def check(f):\n"
             "    onnx.checker.check_model(onnx.load(f), full_check=True)\n"
             "bad = skipped = 0\n"
             "for line in open(sys.argv[1]).read().splitlines():\n"
             "    files = line.split('\\t')\n"
             "    if len(files) > 1:\n"
             "        try:\n"
             "            check(files[1])\n"
             "        except Exception:\n"
             "            skipped += 1\n"
             "            continue\n"
             "    try:\n"
             "        check(files[0])\n"
             "    except Exception as e:\n"
             "        bad += 1\n"
             "        print(files[0], ':', e)\n"
             "print(skipped, 'models skipped: their originals fail the checker too')\n"
             "sys.exit(1 if bad else 0)\" '%s'",
             python, list_file);
    int rc = system(cmd);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}
