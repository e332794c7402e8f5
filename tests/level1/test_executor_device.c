/* Values in device memory: a schedule that mixes host operators with those of
 * a device (here the simulated one of level1/ops/simdev.c, whose memory the
 * host cannot touch) keeps each value in the memory of its producer, copies
 * it once where another memory reads it, uploads constants once, brings
 * device outputs back to the host, and computes what the host alone does. */
#define _GNU_SOURCE
#include "support.h"

#include <criterion/criterion.h>
#include <dlfcn.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#ifndef D5_SIMDEV_LIB
#error "D5_SIMDEV_LIB must name the simulated device library"
#endif

TestSuite(executor_device, .timeout = D5_TIMEOUT(60));

/* x[4,8] -> Relu "r1" -> h1 (an output too) -> Gemm(W) "fc" -> h2
 *   -> Add(B) "add" -> h3 -> Relu "r2" -> y. On simdev r1, add and r2 run on
 * the device, fc on the host. */
static d5_network *mixed_net(void)
{
    d5_network *net = NULL;
    cr_assert_eq(d5_network_create("mixed", &net), D5_OK);
    d5_tensor_desc x, w;
    cr_assert_eq(d5_tensor_desc_make(D5_F32, 2, (int64_t[]){4, 8}, &x), D5_OK);
    cr_assert_eq(d5_tensor_desc_make(D5_F32, 2, (int64_t[]){8, 8}, &w), D5_OK);
    cr_assert_eq(d5_network_add_input(net, "x", &x, NULL), D5_OK);
    d5_tensor t;
    cr_assert_eq(d5_tensor_alloc(&w, &t), D5_OK);
    for (int i = 0; i < 64; i++) ((float *)t.data)[i] = (float)(i % 7) - 3;
    cr_assert_eq(d5_network_add_initializer_take(net, "W", &t), D5_OK);
    cr_assert_eq(d5_tensor_alloc(&x, &t), D5_OK);
    for (int i = 0; i < 32; i++) ((float *)t.data)[i] = (float)(i % 5) - 2.5f;
    cr_assert_eq(d5_network_add_initializer_take(net, "B", &t), D5_OK);
    const struct {
        const char *name, *op, *in[2], *out;
    } nodes[] = {{"r1", "Relu", {"x", NULL}, "h1"},
                 {"fc", "Gemm", {"h1", "W"}, "h2"},
                 {"add", "Add", {"h2", "B"}, "h3"},
                 {"r2", "Relu", {"h3", NULL}, "y"}};
    for (int i = 0; i < 4; i++)
        cr_assert_eq(d5_network_add_node(net, nodes[i].name, nodes[i].op, NULL, nodes[i].in,
                                         nodes[i].in[1] ? 2 : 1, &nodes[i].out, 1, NULL, NULL),
                     D5_OK, "%s", d5_last_error());
    cr_assert_eq(d5_network_add_output(net, "y", NULL), D5_OK);
    cr_assert_eq(d5_network_add_output(net, "h1", NULL), D5_OK);
    return net;
}

static d5_op_library *lib;
static void (*stats)(int64_t out[5]);

/* The library: $D5_SIMDEV_LIB where the tests run away from their build tree
 * (scripts/gpu_check.sh), else the one built beside them. */
static void setup(void)
{
    const char *path = getenv("D5_SIMDEV_LIB") ? getenv("D5_SIMDEV_LIB") : D5_SIMDEV_LIB;
    cr_assert_eq(d5_op_library_open(path, &lib), D5_OK, "%s", d5_last_error());
    cr_assert_not_null(d5_op_library_memory(lib));
    void *h = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
    cr_assert_not_null(h);
    void *sym = dlsym(h, "simdev_stats");
    cr_assert_not_null(sym);
    memcpy(&stats, &sym, sizeof stats);
    dlclose(h);
}

static void teardown(void)
{
    d5_op_library_close(lib);
}

static d5_status create(const d5_network *net, int with_device, int backprop, d5_executor **ex)
{
    d5_executor_options o = d5_executor_default_options();
    o.backend = "ref";
    o.libraries = with_device ? &lib : NULL;
    o.nlibraries = with_device ? 1 : 0;
    o.backprop = backprop;
    *ex = NULL;
    return d5_executor_create(net, &o, ex);
}

static void feed(d5_executor *ex, int round)
{
    float x[32];
    for (int i = 0; i < 32; i++) x[i] = (float)((i * 7 + round * 3) % 11) - 5;
    d5_tensor t = {.data = x};
    cr_assert_eq(d5_tensor_desc_make(D5_F32, 2, (int64_t[]){4, 8}, &t.desc), D5_OK);
    cr_assert_eq(d5_executor_feed(ex, "x", &t), D5_OK, "%s", d5_last_error());
}

static void fetch(const d5_executor *ex, const char *name, float *out, int n)
{
    d5_tensor t;
    cr_assert_eq(d5_executor_fetch(ex, name, &t), D5_OK, "%s", d5_last_error());
    cr_assert_eq(d5_tensor_desc_numel(&t.desc), n);
    memcpy(out, t.data, (size_t)n * sizeof *out);
}

typedef struct counts {
    int before, after;
    size_t bytes;
} counts;

static d5_status count_copies(void *user, const d5_event_info *e)
{
    counts *c = user;
    if (e->event == D5_EVENT_BEFORE_COPY) {
        c->before++;
        c->bytes += e->bytes;
        cr_assert(e->copy >= 0 && e->value);
    } else if (e->event == D5_EVENT_AFTER_COPY) {
        c->after++;
    } else {
        cr_assert_eq(e->copy, -1);
    }
    return D5_OK;
}

Test(executor_device, mixed_schedule_matches_the_host_and_copies_once, .init = setup,
     .fini = teardown)
{
    d5_network *net = mixed_net();
    d5_executor *host = NULL, *dev = NULL;
    cr_assert_eq(create(net, 0, 0, &host), D5_OK, "%s", d5_last_error());
    cr_assert_eq(create(net, 1, 0, &dev), D5_OK, "%s", d5_last_error());
    cr_assert_eq(d5_executor_copy_count(host), 0);

    /* The schedule: who runs where, and the copies it needs. */
    const char *backend[4] = {"simdev", "ref", "simdev", "simdev"};
    for (int32_t i = 0; i < 4; i++) {
        d5_exec_node n;
        d5_executor_node_at(dev, i, &n);
        cr_assert_str_eq(n.backend, backend[i], "node %s", n.name);
    }
    const struct {
        const char *value, *from, *to;
        int32_t node, once;
    } want[] = {{"x", "host", "simdev", 0, 0},   {"h1", "simdev", "host", 1, 0},
                {"h2", "host", "simdev", 2, 0},  {"B", "host", "simdev", 2, 1},
                {"h1", "simdev", "host", -1, 0}, {"y", "simdev", "host", -1, 0}};
    cr_assert_eq(d5_executor_copy_count(dev), 6);
    for (int32_t i = 0; i < 6; i++) {
        d5_exec_copy c;
        d5_executor_copy_at(dev, i, &c);
        cr_assert_str_eq(c.value, want[i].value, "copy %d", (int)i);
        cr_assert_str_eq(c.from, want[i].from, "copy %d", (int)i);
        cr_assert_str_eq(c.to, want[i].to, "copy %d", (int)i);
        cr_assert_eq(c.node, want[i].node, "copy %d", (int)i);
        cr_assert_eq(c.once, want[i].once, "copy %d", (int)i);
        cr_assert_eq(c.bytes, 128, "copy %d", (int)i);
    }
    d5_memory_plan plan;
    d5_executor_memory(dev, &plan);
    cr_assert_geq(plan.device_bytes, 3 * 128); /* h1/h3/y, x, h2 and B at once at most */

    counts c = {0};
    cr_assert_eq(d5_executor_add_handler(dev, count_copies, &c), D5_OK);
    int64_t before[5], after[5];
    stats(before);
    for (int round = 0; round < 3; round++) {
        feed(host, round);
        feed(dev, round);
        cr_assert_eq(d5_executor_inference(host), D5_OK, "%s", d5_last_error());
        cr_assert_eq(d5_executor_inference(dev), D5_OK, "%s", d5_last_error());
        float a[32], b[32];
        fetch(host, "y", a, 32);
        fetch(dev, "y", b, 32);
        cr_assert_arr_eq(a, b, sizeof a, "round %d: y differs", round);
        fetch(host, "h1", a, 32);
        fetch(dev, "h1", b, 32);
        cr_assert_arr_eq(a, b, sizeof a, "round %d: h1 differs", round);
    }
    stats(after);
    /* Per run x, h2 up and h1 (to fc), y, h1 (output) down; B up once. */
    cr_assert_eq(after[0] - before[0], 3 * 2 + 1, "uploads");
    cr_assert_eq(after[1] - before[1], 3 * 3, "downloads");
    cr_assert_eq(after[2] - before[2], (3 * 2 + 1) * 128, "upload bytes");
    cr_assert_eq(c.before, 3 * 5 + 1);
    cr_assert_eq(c.after, c.before);
    cr_assert_eq(c.bytes, (size_t)(3 * 5 + 1) * 128);
    /* With handlers each device node waits for its device. */
    cr_assert_geq(after[4] - before[4], 3 * 3);

    /* A copy runs alone, as FrameworkOverhead times nodes. */
    stats(before);
    cr_assert_eq(d5_executor_run_copy(dev, 3), D5_OK, "%s", d5_last_error());
    stats(after);
    cr_assert_eq(after[0] - before[0], 1);
    cr_assert_eq(d5_executor_run_copy(dev, 6), D5_ERR_RANGE);
    d5_executor_free(host);
    d5_executor_free(dev);
    d5_network_free(net);
}

/* The timer has a region per copy, and FrameworkOverhead's node runs do not
 * copy. */
Test(executor_device, copies_are_timer_regions, .init = setup, .fini = teardown)
{
    d5_network *net = mixed_net();
    d5_executor *dev = NULL;
    d5_timer *timer = NULL;
    cr_assert_eq(create(net, 1, 0, &dev), D5_OK, "%s", d5_last_error());
    cr_assert_eq(d5_timer_create(NULL, &timer), D5_OK);
    cr_assert_eq(d5_executor_attach_timer(dev, timer), D5_OK, "%s", d5_last_error());
    feed(dev, 0);
    cr_assert_eq(d5_executor_inference(dev), D5_OK, "%s", d5_last_error());
    cr_assert_eq(d5_executor_inference(dev), D5_OK, "%s", d5_last_error());
    int found = 0;
    for (size_t k = 0; k < d5_timer_key_count(timer); k++) {
        const char *name = d5_timer_key_name(timer, (d5_timer_id)k);
        if (strcmp(name, "copy B to simdev") == 0) {
            found++;
            cr_assert_eq(d5_timer_count(timer, (d5_timer_id)k, D5_TIMER_CPU), 1);
        }
        if (strcmp(name, "copy x to simdev") == 0) {
            found++;
            cr_assert_eq(d5_timer_count(timer, (d5_timer_id)k, D5_TIMER_CPU), 2);
        }
    }
    cr_assert_eq(found, 2);
    int64_t before[5], after[5];
    stats(before);
    for (int32_t i = 0; i < d5_executor_node_count(dev); i++)
        cr_assert_eq(d5_executor_run_node(dev, i), D5_OK, "%s", d5_last_error());
    stats(after);
    cr_assert_eq(after[0], before[0]);
    cr_assert_eq(after[1], before[1]);
    d5_executor_free(dev);
    d5_timer_free(timer);
    d5_network_free(net);
}

Test(executor_device, intermediates_on_the_device_cannot_be_fetched, .init = setup,
     .fini = teardown)
{
    d5_network *net = mixed_net();
    d5_executor *ex = NULL;
    d5_executor_options o = d5_executor_default_options();
    o.backend = "ref";
    o.libraries = &lib;
    o.nlibraries = 1;
    o.keep_values = 1;
    cr_assert_eq(d5_executor_create(net, &o, &ex), D5_OK, "%s", d5_last_error());
    feed(ex, 0);
    cr_assert_eq(d5_executor_inference(ex), D5_OK, "%s", d5_last_error());
    d5_tensor t;
    cr_assert_eq(d5_executor_fetch(ex, "h3", &t), D5_ERR_STATE);
    cr_assert(strstr(d5_last_error(), "'h3' lives in simdev device memory"), "%s",
              d5_last_error());
    cr_assert_eq(d5_executor_fetch(ex, "h2", &t), D5_OK, "%s", d5_last_error());
    d5_executor_free(ex);
    d5_network_free(net);
}

/* The mixed network with a loss: sum(y) on the host (a ReduceSum after r2),
 * or y itself, seeded with ones on the device. */
static d5_network *loss_net(int host_loss)
{
    d5_network *net = mixed_net();
    /* z = y + Neg(h1): h1's gradient comes from the host twice (fc, n1), the
     * second added on the device through a staging buffer. */
    cr_assert_eq(d5_network_add_node(net, "n1", "Neg", NULL, (const char *[]){"h1"}, 1,
                                     (const char *[]){"h1n"}, 1, NULL, NULL),
                 D5_OK, "%s", d5_last_error());
    cr_assert_eq(d5_network_add_node(net, "mix", "Add", NULL, (const char *[]){"y", "h1n"}, 2,
                                     (const char *[]){"z"}, 1, NULL, NULL),
                 D5_OK, "%s", d5_last_error());
    cr_assert_eq(d5_network_add_output(net, "z", NULL), D5_OK);
    if (host_loss) {
        d5_attr keep = {.name = "keepdims", .type = D5_ATTR_INT, .i = 0};
        d5_attrs attrs = {&keep, 1};
        cr_assert_eq(d5_network_add_node(net, "sum", "ReduceSum", NULL, (const char *[]){"z"}, 1,
                                         (const char *[]){"loss"}, 1, &attrs, NULL),
                     D5_OK, "%s", d5_last_error());
        cr_assert_eq(d5_network_add_output(net, "loss", NULL), D5_OK);
    }
    return net;
}

static void gradients(d5_executor *ex, const char *name, float *out, int n)
{
    d5_tensor t;
    cr_assert_eq(d5_executor_gradient(ex, name, &t), D5_OK, "%s", d5_last_error());
    cr_assert_eq(d5_tensor_desc_numel(&t.desc), n);
    memcpy(out, t.data, (size_t)n * sizeof *out);
}

/* Backpropagation through device operators: gradients move between host
 * and device where the schedule changes memory, and equal the host's. */
Test(executor_device, backprop_through_device_operators_matches_the_host, .init = setup,
     .fini = teardown)
{
    for (int host_loss = 0; host_loss < 2; host_loss++) {
        d5_network *net = loss_net(host_loss);
        d5_executor *ex[2] = {NULL, NULL};
        for (int dev = 0; dev < 2; dev++) {
            d5_executor_options o = d5_executor_default_options();
            o.backend = "ref";
            o.libraries = dev ? &lib : NULL;
            o.nlibraries = dev;
            o.backprop = 1;
            o.input_gradients = 1;
            o.loss = host_loss ? "loss" : "z";
            cr_assert_eq(d5_executor_create(net, &o, &ex[dev]), D5_OK, "%s", d5_last_error());
        }
        d5_exec_node n;
        d5_executor_node_at(ex[1], 2, &n);
        cr_assert_str_eq(n.backend, "simdev");
        for (int round = 0; round < 2; round++) {
            float a[64], b[64];
            for (int dev = 0; dev < 2; dev++) {
                feed(ex[dev], round);
                cr_assert_eq(d5_executor_inference_and_backprop(ex[dev]), D5_OK, "%s",
                             d5_last_error());
            }
            const struct {
                const char *name;
                int n;
            } g[] = {{"W", 64}, {"B", 32}, {"x", 32}};
            for (int i = 0; i < 3; i++) {
                gradients(ex[0], g[i].name, a, g[i].n);
                gradients(ex[1], g[i].name, b, g[i].n);
                for (int k = 0; k < g[i].n; k++)
                    cr_assert_float_eq(a[k], b[k], 1e-5f, "loss %s, round %d: d%s[%d] %g vs %g",
                                       host_loss ? "on the host" : "on the device", round,
                                       g[i].name, k, a[k], b[k]);
            }
        }
        d5_executor_free(ex[0]);
        d5_executor_free(ex[1]);
        d5_network_free(net);
    }
}
