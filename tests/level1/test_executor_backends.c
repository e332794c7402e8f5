/* The executor's backend options: explicit lists and per-node overrides are
 * checked at create (no name is skipped), and the executor reports the backend
 * that runs each node. */
#define _GNU_SOURCE
#include "support.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

TestSuite(executor_backends, .timeout = D5_TIMEOUT(60));

/* x[2,4] -> Gemm(W[3,4], transB) "fc" -> Relu "relu" -> y. */
static d5_network *small_net(void)
{
    d5_network *net = NULL;
    cr_assert_eq(d5_network_create("small", &net), D5_OK);
    d5_tensor_desc x, w;
    cr_assert_eq(d5_tensor_desc_make(D5_F32, 2, (int64_t[]){2, 4}, &x), D5_OK);
    cr_assert_eq(d5_tensor_desc_make(D5_F32, 2, (int64_t[]){3, 4}, &w), D5_OK);
    cr_assert_eq(d5_network_add_input(net, "x", &x, NULL), D5_OK);
    d5_tensor t;
    cr_assert_eq(d5_tensor_alloc(&w, &t), D5_OK);
    for (int i = 0; i < 12; i++) ((float *)t.data)[i] = (float)(i % 5) - 2;
    cr_assert_eq(d5_network_add_initializer_take(net, "W", &t), D5_OK);
    d5_attr tb = {.name = "transB", .type = D5_ATTR_INT, .i = 1};
    d5_attrs attrs = {&tb, 1};
    cr_assert_eq(d5_network_add_node(net, "fc", "Gemm", NULL, (const char *[]){"x", "W"}, 2,
                                     (const char *[]){"h"}, 1, &attrs, NULL),
                 D5_OK, "%s", d5_last_error());
    cr_assert_eq(d5_network_add_node(net, "relu", "Relu", NULL, (const char *[]){"h"}, 1,
                                     (const char *[]){"y"}, 1, NULL, NULL),
                 D5_OK, "%s", d5_last_error());
    cr_assert_eq(d5_network_add_output(net, "y", NULL), D5_OK);
    return net;
}

static d5_status create(const d5_network *net, const char *backend, const char *nodes,
                        d5_executor **ex)
{
    d5_executor_options o = d5_executor_default_options();
    o.backend = backend;
    o.node_backends = nodes;
    *ex = NULL;
    return d5_executor_create(net, &o, ex);
}

Test(executor_backends, unknown_backend_fails_at_create)
{
    d5_network *net = small_net();
    d5_executor *ex = NULL;
    cr_assert_eq(create(net, "dnn", NULL, &ex), D5_ERR_UNSUPPORTED);
    cr_assert_null(ex);
    const char *e = d5_last_error();
    cr_assert(strstr(e, "options.backend: unknown backend 'dnn'"), "%s", e);
    cr_assert(strstr(e, "available here: ref"), "%s", e);
    cr_assert_eq(create(net, "blas,dnn,ref", NULL, &ex), D5_ERR_UNSUPPORTED);
    cr_assert_eq(create(net, "ref,,blas", NULL, &ex), D5_ERR_INVALID);
    cr_assert_eq(d5_executor_check_backends("dnn"), D5_ERR_UNSUPPORTED);
    cr_assert_eq(d5_executor_check_backends("auto"), D5_OK);
    cr_assert_eq(d5_executor_check_backends("blas,ref"), D5_OK, "%s", d5_last_error());
    cr_assert_eq(create(net, "blas,ref", NULL, &ex), D5_OK, "%s", d5_last_error());
    d5_executor_free(ex);
    d5_network_free(net);
}

/* cuda without a device fails at create and says why; with one, its nodes
 * run on device memory and compute what ref does. */
Test(executor_backends, cuda_fails_at_create_without_a_device)
{
    d5_network *net = small_net();
    d5_executor *ex = NULL;
    d5_backend_info cuda;
    cr_assert_eq(d5_backend_find("cuda", &cuda), D5_OK);
    d5_status s = create(net, "cuda", NULL, &ex);
    if (!cuda.available) {
        cr_assert_null(ex);
        cr_assert_eq(s, D5_ERR_NODEVICE, "%s", d5_status_name(s));
        cr_assert(strstr(d5_last_error(), cuda.reason), "%s", d5_last_error());
        cr_assert_neq(create(net, NULL, "fc=cuda", &ex), D5_OK);
        cr_assert(strstr(d5_last_error(), "node 'fc'"), "%s", d5_last_error());
        d5_network_free(net);
        return;
    }
    cr_assert_eq(s, D5_OK, "%s", d5_last_error());
    d5_executor *ref = NULL;
    cr_assert_eq(create(net, "ref", NULL, &ref), D5_OK, "%s", d5_last_error());
    float x[8] = {1, -2, 3, -4, 0.5f, 2, -1, 1};
    d5_tensor t = {.data = x};
    cr_assert_eq(d5_tensor_desc_make(D5_F32, 2, (int64_t[]){2, 4}, &t.desc), D5_OK);
    cr_assert_eq(d5_executor_feed(ex, "x", &t), D5_OK);
    cr_assert_eq(d5_executor_feed(ref, "x", &t), D5_OK);
    cr_assert_eq(d5_executor_inference(ex), D5_OK, "%s", d5_last_error());
    cr_assert_eq(d5_executor_inference(ref), D5_OK, "%s", d5_last_error());
    d5_tensor a, b;
    cr_assert_eq(d5_executor_fetch(ex, "y", &a), D5_OK, "%s", d5_last_error());
    cr_assert_eq(d5_executor_fetch(ref, "y", &b), D5_OK, "%s", d5_last_error());
    for (int i = 0; i < 6; i++)
        cr_assert_float_eq(((float *)a.data)[i], ((float *)b.data)[i], 1e-5f, "y[%d]", i);
    cr_assert_geq(d5_executor_copy_count(ex), 2); /* x up, y down */
    d5_executor_free(ex);
    d5_executor_free(ref);
    d5_network_free(net);
}

Test(executor_backends, node_backend_typos_fail_at_create)
{
    d5_network *net = small_net();
    d5_executor *ex = NULL;
    cr_assert_eq(create(net, NULL, "nosuchnode=ref", &ex), D5_ERR_NOTFOUND);
    cr_assert_null(ex);
    const char *e = d5_last_error();
    cr_assert(strstr(e, "options.node_backends: no node named 'nosuchnode'"), "%s", e);
    cr_assert(strstr(e, "nodes: fc, relu"), "%s", e);
    cr_assert_eq(create(net, NULL, "fc=dnn", &ex), D5_ERR_UNSUPPORTED);
    cr_assert(strstr(d5_last_error(), "node 'fc': unknown backend 'dnn'"), "%s", d5_last_error());
    cr_assert_eq(create(net, NULL, "fc=ref,relu=ref,fcc=ref", &ex), D5_ERR_NOTFOUND);
    cr_assert(strstr(d5_last_error(), "'fcc'"), "%s", d5_last_error());
    const char *invalid[] = {"fc", "fc=", "=ref", "fc=ref,", "fc=ref,fc=blas", "fc=auto"};
    for (size_t i = 0; i < sizeof invalid / sizeof invalid[0]; i++)
        cr_assert_eq(d5_executor_check_node_backends(net, invalid[i]), D5_ERR_INVALID, "'%s': %s",
                     invalid[i], d5_last_error());
    cr_assert_eq(d5_executor_check_node_backends(net, NULL), D5_OK);
    cr_assert_eq(d5_executor_check_node_backends(net, ""), D5_OK);
    cr_assert_eq(create(net, "ref", "fc=blas", &ex), D5_OK, "%s", d5_last_error());
    d5_exec_node n;
    d5_executor_node_at(ex, 0, &n);
    cr_assert_str_eq(n.name, "fc");
    cr_assert_str_eq(n.backend, "blas");
    d5_executor_free(ex);
    d5_network_free(net);
}

/* A network of many nodes: the error lists the first ones and counts the rest. */
Test(executor_backends, long_node_lists_are_shortened)
{
    d5_network *net = NULL;
    cr_assert_eq(d5_network_create("chain", &net), D5_OK);
    d5_tensor_desc x;
    cr_assert_eq(d5_tensor_desc_make(D5_F32, 1, (int64_t[]){4}, &x), D5_OK);
    cr_assert_eq(d5_network_add_input(net, "v0", &x, NULL), D5_OK);
    for (int i = 0; i < 200; i++) {
        char name[64], in[16], out[16];
        snprintf(name, sizeof name, "a_rather_long_node_name_number_%d", i);
        snprintf(in, sizeof in, "v%d", i);
        snprintf(out, sizeof out, "v%d", i + 1);
        cr_assert_eq(d5_network_add_node(net, name, "Relu", NULL, (const char *[]){in}, 1,
                                         (const char *[]){out}, 1, NULL, NULL),
                     D5_OK);
    }
    cr_assert_eq(d5_network_add_output(net, "v200", NULL), D5_OK);
    cr_assert_eq(d5_executor_check_node_backends(net, "relu=ref"), D5_ERR_NOTFOUND);
    const char *e = d5_last_error();
    cr_assert(strstr(e, "a_rather_long_node_name_number_0, "), "%s", e);
    cr_assert(strstr(e, "more)"), "%s", e);
    cr_assert_null(strstr(e, "a_rather_long_node_name_number_199"), "%s", e);
    cr_assert_lt(strlen(e), 600, "%s", e);
    cr_assert_eq(d5_executor_check_node_backends(net, "a_rather_long_node_name_number_199=ref"),
                 D5_OK, "%s", d5_last_error());
    d5_network_free(net);
}

Test(executor_backends, backend_nodes_report_what_runs)
{
    d5_network *net = small_net();
    d5_executor *ex = NULL;
    cr_assert_eq(create(net, "ref", "fc=blas", &ex), D5_OK, "%s", d5_last_error());
    d5_backend_nodes used[4];
    memset(used, 0, sizeof used);
    cr_assert_eq(d5_executor_backend_nodes(ex, used, 4), 2);
    cr_assert_str_eq(used[0].backend, "blas");
    cr_assert_eq(used[0].nodes, 1);
    cr_assert_str_eq(used[1].backend, "ref");
    cr_assert_eq(used[1].nodes, 1);
    memset(used, 0, sizeof used);
    cr_assert_eq(d5_executor_backend_nodes(ex, used, 1), 2); /* counted, one written */
    cr_assert_str_eq(used[1].backend, "");
    cr_assert_eq(d5_executor_backend_nodes(ex, NULL, 0), 2);
    d5_executor_free(ex);
    d5_network_free(net);
}

/* Without a list, every node runs on a backend of the default list (or ref,
 * the last resort), and only on ones available here. */
Test(executor_backends, default_list_resolves_per_node)
{
    d5_network *net = small_net();
    d5_executor *ex = NULL;
    cr_assert_eq(create(net, NULL, NULL, &ex), D5_OK, "%s", d5_last_error());
    char list[128];
    snprintf(list, sizeof list, ",%s,", d5_backend_default_list());
    for (int32_t i = 0; i < d5_executor_node_count(ex); i++) {
        d5_exec_node n;
        d5_executor_node_at(ex, i, &n);
        char item[64];
        snprintf(item, sizeof item, ",%s,", n.backend);
        cr_assert(strstr(list, item), "%s runs on %s", n.name, n.backend);
        cr_assert(d5_backend_available(n.backend, NULL, 0), "%s", n.backend);
    }
    d5_executor_free(ex);
    d5_network_free(net);
}

/* tf32 is the cuda backend's tensor-core precision: the CPU backends compute
 * float32 under it, bit for bit as without it. */
Test(executor_backends, tf32_is_float32_on_the_cpu)
{
    d5_network *net = small_net();
    d5_executor *a = NULL, *b = NULL;
    d5_executor_options o = d5_executor_default_options();
    cr_assert_eq(d5_executor_create(net, &o, &a), D5_OK, "%s", d5_last_error());
    o.compute_precision = "tf32";
    cr_assert_eq(d5_executor_create(net, &o, &b), D5_OK, "%s", d5_last_error());
    float x[8] = {1, -2, 3, -4, 0.5f, 2, -1, 1};
    d5_tensor t = {.data = x};
    cr_assert_eq(d5_tensor_desc_make(D5_F32, 2, (int64_t[]){2, 4}, &t.desc), D5_OK);
    cr_assert_eq(d5_executor_feed(a, "x", &t), D5_OK);
    cr_assert_eq(d5_executor_feed(b, "x", &t), D5_OK);
    cr_assert_eq(d5_executor_inference(a), D5_OK, "%s", d5_last_error());
    cr_assert_eq(d5_executor_inference(b), D5_OK, "%s", d5_last_error());
    d5_tensor ya, yb;
    cr_assert_eq(d5_executor_fetch(a, "y", &ya), D5_OK);
    cr_assert_eq(d5_executor_fetch(b, "y", &yb), D5_OK);
    cr_assert_arr_eq(ya.data, yb.data, 6 * sizeof(float));
    o.compute_precision = "fp8";
    d5_executor *c = NULL;
    cr_assert_eq(d5_executor_create(net, &o, &c), D5_ERR_INVALID);
    cr_assert(strstr(d5_last_error(), "tf32"), "%s", d5_last_error());
    d5_executor_free(a);
    d5_executor_free(b);
    d5_network_free(net);
}
