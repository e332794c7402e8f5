/* d5 summary: a model summary in the manner of torchinfo: per node its
 * operator, shapes, parameters and multiply-adds, then totals. */
#include "output_options.h"
#include "netload.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

static void shapes_of(const d5_network *net, const char *const *names, int32_t n, int skip_init,
                      char *buf, size_t size)
{
    size_t used = 0;
    buf[0] = 0;
    for (int32_t k = 0; k < n; k++) {
        int32_t v;
        d5_value_info info;
        if (!names[k][0] || d5_network_find_value(net, names[k], &v) != D5_OK) continue;
        d5_network_value_at(net, v, &info);
        if (skip_init && info.kind == D5_VALUE_INITIALIZER) continue;
        char s[96] = "?";
        if (info.known) {
            int p = snprintf(s, sizeof s, "[");
            for (int32_t d = 0; d < info.desc.ndim && p < (int)sizeof s; d++)
                p += snprintf(s + p, sizeof s - (size_t)p, d ? ",%lld" : "%lld",
                              (long long)info.desc.shape[d]);
            if (p < (int)sizeof s) snprintf(s + p, sizeof s - (size_t)p, "]");
        }
        int w = snprintf(buf + used, size - used, "%s%s", used ? " " : "", s);
        if (w < 0 || (size_t)w >= size - used) break;
        used += (size_t)w;
    }
}

static void group(double x, char *buf, size_t size)
{
    char raw[64], out[96];
    snprintf(raw, sizeof raw, "%.0f", x);
    size_t n = strlen(raw), j = 0;
    for (size_t i = 0; i < n && j + 2 < sizeof out; i++) {
        out[j++] = raw[i];
        if ((n - i - 1) % 3 == 0 && i + 1 < n) out[j++] = ',';
    }
    out[j] = 0;
    if (j >= size) j = size - 1;
    memcpy(buf, out, j);
    buf[j] = 0;
}

int cmd_summary(int argc, char **argv)
{
    const char *model = NULL, *optimize = "none";
    cli_outputs files = {0};
    int batch = 0;
    const cli_opt opts[] = {
        {"batch", CLI_INT, &batch, "N",
         "batch size: the first dimension of every input (default: the model's, 1 where it is "
         "symbolic)",
         1, 1 << 20},
        {"optimize", CLI_STRING, &optimize, "none|basic|all",
         "summarise the graph after these optimisation passes (default none: as in the file)", 0,
         0},
        CLI_OUTPUT_JSON_AS(&files, "also write the table as JSON"),
    };
    const cli_spec spec = {
        CLI_SPEC(
            "summary", "MODEL.onnx [--batch N] [--optimize LEVEL] [--json FILE]",
            "Prints a summary of an ONNX model like torchinfo's: for every node its name,\n"
            "operator, input and output shapes, parameters it introduces (initializers it is\n"
            "the first to read), their share of the total, and multiply-adds (half the FLOPs of\n"
            "the node's reference implementation); then total parameters, multiply-adds,\n"
            "parameter bytes and the bytes of all values a forward pass writes.",
            opts),
        .positional = "MODEL", .pos_value = &model};
    int rc = cli_parse(&spec, argc, argv);
    if (rc >= 0) return rc;
    d5_optimize_level level;
    if ((rc = netload_optimize_level("summary", optimize, 0, &level)) >= 0) return rc;
    cli_echo(stdout, &spec);
    if (!cli_outputs_check("summary", &files)) return D5_EXIT_INPUT;
    printf("#   %-14s = %s\n", "MODEL", model);

    d5_network *net = NULL;
    d5_executor *ex = NULL;
    d5_optimize_report opt;
    memset(&opt, 0, sizeof opt);
    d5_status s = netload_open(model, batch, 1, &net);
    if (s == D5_OK) s = d5_network_optimize(net, level, &opt);
    if (s == D5_OK) s = d5_network_infer_shapes(net);
    d5_executor_options eo = d5_executor_default_options();
    eo.backend = "ref";
    if (s == D5_OK) s = d5_executor_create(net, &eo, &ex);
    if (s != D5_OK) {
        d5_network_free(net);
        return cli_fail("summary", s);
    }
    int32_t nvalues = d5_network_value_count(net);
    unsigned char *seen = calloc((size_t)nvalues + 1, 1);
    double total_params = (double)d5_network_param_elements(net), total_macs = 0, act_bytes = 0;
    double param_bytes = 0;
    json_t *rows = json_array();
    printf("%-32s %-20s %-24s %-20s %12s %7s %14s\n", "node", "operator", "input shapes",
           "output shapes", "params", "%", "mult-adds");
    for (int32_t i = 0; i < d5_executor_node_count(ex); i++) {
        d5_exec_node en;
        d5_node_info node;
        d5_executor_node_at(ex, i, &en);
        d5_network_node_at(net, en.network_index, &node);
        double params = 0;
        for (int32_t k = 0; k < node.ninputs; k++) {
            int32_t v;
            d5_value_info info;
            if (!node.inputs[k][0] || d5_network_find_value(net, node.inputs[k], &v) != D5_OK)
                continue;
            d5_network_value_at(net, v, &info);
            if (info.kind != D5_VALUE_INITIALIZER || seen[v]) continue;
            seen[v] = 1;
            if (info.desc.dtype != D5_F32 && info.desc.dtype != D5_F64 &&
                info.desc.dtype != D5_F16 && info.desc.dtype != D5_BF16)
                continue;
            params += (double)d5_tensor_desc_numel(&info.desc);
            param_bytes += (double)d5_tensor_desc_numel(&info.desc) *
                           (double)d5_dtype_size((d5_dtype)info.desc.dtype);
        }
        for (int32_t k = 0; k < node.noutputs; k++) {
            int32_t v;
            d5_value_info info;
            if (d5_network_find_value(net, node.outputs[k], &v) != D5_OK) continue;
            d5_network_value_at(net, v, &info);
            if (info.known)
                act_bytes += (double)d5_tensor_desc_numel(&info.desc) *
                             (double)d5_dtype_size((d5_dtype)info.desc.dtype);
        }
        double macs = en.flops / 2;
        total_macs += macs;
        char ins[256], outs[256], p[32], mm[32];
        shapes_of(net, node.inputs, node.ninputs, 1, ins, sizeof ins);
        shapes_of(net, node.outputs, node.noutputs, 0, outs, sizeof outs);
        group(params, p, sizeof p);
        group(macs, mm, sizeof mm);
        printf("%-32.32s %-20.20s %-24s %-20s %12s %6.2f%% %14s\n", node.name, node.op_type, ins,
               outs, p, total_params > 0 ? 100 * params / total_params : 0, mm);
        json_array_append_new(rows, json_pack("{s:s, s:s, s:s, s:s, s:f, s:f}", "name", node.name,
                                              "op", node.op_type, "inputs", ins, "outputs", outs,
                                              "params", params, "macs", macs));
    }
    char a[32], b[32];
    group(total_params, a, sizeof a);
    group(total_macs, b, sizeof b);
    char opt_text[512];
    netload_optimize_text(&opt, opt_text, sizeof opt_text);
    printf("\nnodes: %d run, %d folded at load\n", (int)d5_executor_node_count(ex),
           (int)d5_executor_folded_count(ex));
    printf("optimisation:      %s\n", opt_text);
    printf("total parameters:  %s\n", a);
    printf("total mult-adds:   %s (%.3f G)\n", b, total_macs / 1e9);
    printf("parameter size:    %.2f MB\n", param_bytes / 1e6);
    printf("forward pass size: %.2f MB (every value written once)\n", act_bytes / 1e6);
    free(seen);
    if (files.json) {
        json_t *root =
            json_pack("{s:s, s:i, s:s, s:o, s:f, s:f, s:f, s:f}", "model", model, "batch", batch,
                      "optimize", opt_text, "nodes", rows, "params", total_params, "macs",
                      total_macs, "param_bytes", param_bytes, "activation_bytes", act_bytes);
        s = cli_json_write(&spec, NULL, root, files.json);
        if (s != D5_OK) {
            d5_executor_free(ex);
            d5_network_free(net);
            return cli_fail("summary", s);
        }
    } else {
        json_decref(rows);
    }
    d5_executor_free(ex);
    d5_network_free(net);
    return D5_EXIT_OK;
}
