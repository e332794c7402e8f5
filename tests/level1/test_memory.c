/* The memory report: heap accounting (exact counts, OpenMP threads, nothing
 * counted while off), the recorder on a chain whose plan and timeline are
 * worked out by hand below, backprop and a training step, the files read
 * back, and d5 run --memory. */
#include "support.h"
#include "trainer_support.h"

#include <criterion/criterion.h>
#include <jansson.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#define RUN(out, err, ...) run_d5(out, err, (const char *const[]){__VA_ARGS__, NULL})

static void end_tracking(d5_memory_log *log)
{
    cr_assert_eq(d5_memory_track_end(log), D5_OK, "%s", d5_last_error());
}

/* ---- Heap accounting ---------------------------------------------------------------- */

Test(memory, counters_are_exact)
{
    void *before = d5_alloc(333, "allocated before");
    cr_assert_eq(d5_memory_track_begin(NULL), D5_OK, "%s", d5_last_error());
    cr_assert(d5_memory_tracking());
    void *a = d5_alloc(100, "a"), *b = d5_calloc(20, 10, "b");
    char *c = d5_strdup("twelve bytes", "c"); /* 13 with its NUL */
    d5_free(a);
    d5_free(before); /* allocated before begin: not subtracted */
    d5_free(NULL);
    d5_memory_counters k;
    d5_memory_counters_get(&k);
    cr_assert_eq(k.allocations, 3);
    cr_assert_eq(k.frees, 1);
    cr_assert_eq(k.allocated_bytes, 100 + 200 + 13);
    cr_assert_eq(k.freed_bytes, 100);
    cr_assert_eq(k.live_bytes, 200 + 13);
    cr_assert_eq(k.peak_bytes, 100 + 200 + 13);
    cr_assert_eq(k.foreign_frees, 1);
    cr_assert_eq(d5_memory_track_begin(NULL), D5_ERR_STATE, "one period at a time");
    d5_memory_log log;
    end_tracking(&log);
    cr_assert_eq(log.n, 0, "no log unless asked for");
    cr_assert_eq(log.counters.live_bytes, 213);
    d5_memory_log_free(&log);
    d5_free(b);
    d5_free(c);
    cr_assert_eq(d5_memory_track_end(NULL), D5_ERR_STATE);
}

Test(memory, off_counts_nothing)
{
    d5_allocator user = d5_allocator_get();
    cr_assert_eq(d5_memory_track_begin(NULL), D5_OK);
    void *a = d5_alloc(64, "a");
    d5_allocator hooked = d5_allocator_get();
    d5_memory_log log;
    end_tracking(&log);
    d5_memory_log_free(&log);
    d5_memory_counters k0, k1;
    d5_memory_counters_get(&k0);
    cr_assert(!d5_memory_tracking());
    cr_assert_eq(d5_allocator_get().alloc, user.alloc, "off, the user's allocator as it is");
    cr_assert_eq(d5_memory_scope_get(), 0);
    /* Allocations and frees of every kind while off. */
    for (int i = 0; i < 100; i++) d5_free(d5_alloc((size_t)i + 1, "while off"));
    d5_tensor_desc d;
    d5_tensor t;
    cr_assert_eq(d5_tensor_desc_make(D5_F32, 1, (int64_t[]){10}, &d), D5_OK);
    cr_assert_eq(d5_tensor_alloc(&d, &t), D5_OK);
    d5_tensor_free(&t);
    void *p = hooked.alloc(hooked.ctx, 128, 64); /* hooks kept past the end still work */
    hooked.free(hooked.ctx, p);
    d5_free(a);
    d5_memory_counters_get(&k1);
    cr_assert_eq(memcmp(&k0, &k1, sizeof k0), 0, "counters unchanged while off");
    cr_assert_eq(k1.allocations, 1);
    cr_assert_eq(d5_memory_now_ns(), 0);
}

Test(memory, allocator_hook_is_counted)
{
    d5_memory_track_params p = d5_memory_track_default_params();
    p.log = 1;
    cr_assert_eq(d5_memory_track_begin(&p), D5_OK);
    d5_tensor_desc d;
    d5_tensor t;
    cr_assert_eq(d5_tensor_desc_make(D5_F32, 1, (int64_t[]){10}, &d), D5_OK);
    cr_assert_eq(d5_tensor_alloc(&d, &t), D5_OK); /* 40 bytes, rounded to 64 */
    d5_tensor_free(&t);
    d5_allocator a = d5_allocator_get();
    d5_allocator_set(&a); /* setting what get gave keeps the allocator */
    d5_memory_log log;
    end_tracking(&log);
    cr_assert_eq(log.n, 2);
    cr_assert_eq(log.events[0].delta_bytes, 64);
    cr_assert_eq(log.events[1].delta_bytes, -64);
    cr_assert_eq(log.events[0].block, log.events[1].block);
    cr_assert_str_eq(log.events[0].label, "allocator hook");
    cr_assert_str_eq(log.events[1].label, "allocator hook");
    cr_assert(log.events[1].t_ns >= log.events[0].t_ns);
    d5_memory_log_free(&log);
}

/* Every thread allocates its blocks, all are live at the barrier, then every
 * thread frees its own: the peak is the sum of all blocks exactly. */
Test(memory, openmp_threads_count_exactly)
{
    enum { T = 4, K = 200 };
    static void *blocks[T][K];
    int64_t total = 0;
    for (int t = 0; t < T; t++)
        for (int k = 0; k < K; k++) total += 16 * (t + 1) + k;
    d5_memory_track_params p = d5_memory_track_default_params();
    p.log = 1;
    cr_assert_eq(d5_memory_track_begin(&p), D5_OK);
    d5_memory_counters mid;
    int threads = 1;
#pragma omp parallel num_threads(T)
    {
        int t = 0, n = 1;
#ifdef _OPENMP
        t = omp_get_thread_num();
        n = omp_get_num_threads();
#endif
        for (int u = t; u < T; u += n)
            for (int k = 0; k < K; k++) blocks[u][k] = d5_alloc((size_t)(16 * (u + 1) + k), "b");
#pragma omp barrier
#pragma omp single
        {
            d5_memory_counters_get(&mid);
            threads = n;
        }
        for (int u = t; u < T; u += n)
            for (int k = 0; k < K; k++) d5_free(blocks[u][k]);
    }
    d5_memory_log log;
    end_tracking(&log);
#ifdef _OPENMP
    cr_assert_eq(threads, T, "the test ran on %d threads", threads);
#endif
    cr_assert_eq(mid.live_bytes, total);
    cr_assert_eq(log.counters.peak_bytes, total);
    cr_assert_eq(log.counters.live_bytes, 0);
    cr_assert_eq(log.counters.allocations, T * K);
    cr_assert_eq(log.counters.frees, T * K);
    cr_assert_eq(log.counters.allocated_bytes, total);
    cr_assert_eq(log.n, 2 * T * K);
    /* Each block twice with opposite sizes; the running sum is each event's
     * live_bytes, and it peaks at the total. */
    static int seen[2 * T * K + 1];
    memset(seen, 0, sizeof seen);
    int64_t sum = 0, top = 0;
    for (size_t i = 0; i < log.n; i++) {
        const d5_memory_event *e = &log.events[i];
        cr_assert(e->block >= 1 && e->block <= (uint64_t)(T * K));
        seen[e->block] += e->delta_bytes > 0 ? 1 : 2;
        sum += e->delta_bytes;
        cr_assert_eq(e->live_bytes, sum, "event %zu", i);
        if (sum > top) top = sum;
    }
    cr_assert_eq(top, total);
    for (int b = 1; b <= T * K; b++) cr_assert_eq(seen[b], 3, "block %d", b);
    d5_memory_log_free(&log);
}

/* ---- The recorder on a chain -------------------------------------------------------------- */

static void add_weight(d5_network *net, const char *name, int64_t r, int64_t c)
{
    d5_tensor_desc d;
    d5_tensor t;
    cr_assert_eq(d5_tensor_desc_make(D5_F32, 2, (int64_t[]){r, c}, &d), D5_OK);
    cr_assert_eq(d5_tensor_alloc(&d, &t), D5_OK);
    for (int64_t i = 0; i < r * c; i++) ((float *)t.data)[i] = (float)(i % 7) * 0.1f - 0.3f;
    cr_assert_eq(d5_network_add_initializer_take(net, name, &t), D5_OK);
}

static void node(d5_network *net, const char *name, const char *op, const char **in, int32_t nin,
                 const char *out)
{
    cr_assert_eq(
        d5_network_add_node(net, name, op, NULL, in, nin, (const char *[]){out}, 1, NULL, NULL),
        D5_OK, "%s", d5_last_error());
}

/* x[4,16] -> mm1 (W1[16,8]) -> h1[4,8] -> relu -> a1[4,8] -> mm2 (W2[8,32])
 * -> h2[4,32] -> sig -> y[4,32]: values of 128, 128, 512 and 512 bytes. */
static d5_network *chain(void)
{
    d5_network *net = NULL;
    cr_assert_eq(d5_network_create("chain", &net), D5_OK);
    d5_tensor_desc x;
    cr_assert_eq(d5_tensor_desc_make(D5_F32, 2, (int64_t[]){4, 16}, &x), D5_OK);
    cr_assert_eq(d5_network_add_input(net, "x", &x, NULL), D5_OK);
    add_weight(net, "W1", 16, 8);
    add_weight(net, "W2", 8, 32);
    node(net, "mm1", "MatMul", (const char *[]){"x", "W1"}, 2, "h1");
    node(net, "relu", "Relu", (const char *[]){"h1"}, 1, "a1");
    node(net, "mm2", "MatMul", (const char *[]){"a1", "W2"}, 2, "h2");
    node(net, "sig", "Sigmoid", (const char *[]){"h2"}, 1, "y");
    cr_assert_eq(d5_network_add_output(net, "y", NULL), D5_OK);
    return net;
}

/* Heap work at known nodes: relu allocates A (1000) and B (500) and frees B;
 * mm2 frees A and allocates C (96), which outlives the recording. */
typedef struct workload {
    void *a, *c;
} workload;

static d5_status allocate_in_nodes(void *user, const d5_event_info *e)
{
    workload *w = user;
    if (e->event != D5_EVENT_BEFORE_NODE) return D5_OK;
    if (strcmp(e->node_name, "relu") == 0) {
        w->a = d5_alloc(1000, "test workspace A");
        d5_free(d5_alloc(500, "test workspace B"));
    } else if (strcmp(e->node_name, "mm2") == 0) {
        d5_free(w->a);
        w->c = d5_alloc(96, "test workspace C");
    }
    return D5_OK;
}

static const d5_memory_row *row(const d5_memory_profile *p, const char *name, int32_t phase)
{
    for (int32_t i = 0; i < p->nrows; i++)
        if (strcmp(p->rows[i].name, name) == 0 && p->rows[i].phase == phase) return &p->rows[i];
    cr_assert_fail("no row %s (%s)", name, d5_memory_phase_name(phase));
    return NULL;
}

static void expect_row(const d5_memory_profile *p, const char *name, int64_t planned, int64_t alloc,
                       int64_t freed, int64_t heap_peak, int64_t live_peak)
{
    const d5_memory_row *r = row(p, name, D5_MEMORY_FORWARD);
    cr_assert_eq(r->planned_bytes, planned, "%s planned %lld", name, (long long)r->planned_bytes);
    cr_assert_eq(r->heap_allocated_bytes, alloc, "%s heap allocated %lld", name,
                 (long long)r->heap_allocated_bytes);
    cr_assert_eq(r->heap_freed_bytes, freed, "%s heap freed", name);
    cr_assert_eq(r->heap_peak_bytes, heap_peak, "%s heap peak %lld", name,
                 (long long)r->heap_peak_bytes);
    cr_assert_eq(r->actual_bytes, planned + heap_peak, "%s actual", name);
    cr_assert_eq(r->live_peak_bytes, live_peak, "%s live peak %lld", name,
                 (long long)r->live_peak_bytes);
    cr_assert(r->start_ms >= 0 && r->duration_ms >= 0);
}

/* The chain recorded once on the ref backend, with the workload; after a
 * first run unless `cold` (ref operators allocate their float64 buffers at
 * their first run). */
static void record_chain(d5_memory_profile *p, d5_timer *clock, int cold, int work)
{
    d5_network *net = chain();
    d5_executor_options o = d5_executor_default_options();
    o.backend = "ref";
    d5_executor *ex = NULL;
    cr_assert_eq(d5_executor_create(net, &o, &ex), D5_OK, "%s", d5_last_error());
    if (!cold) cr_assert_eq(d5_executor_inference(ex), D5_OK, "%s", d5_last_error());
    d5_memory_recorder *r = NULL;
    cr_assert_eq(d5_memory_recorder_create(ex, clock, &r), D5_OK, "%s", d5_last_error());
    workload w = {NULL, NULL};
    if (work) cr_assert_eq(d5_executor_add_handler(ex, allocate_in_nodes, &w), D5_OK);
    cr_assert_eq(d5_memory_recorder_end(r, p), D5_ERR_STATE, "not recording yet");
    cr_assert_eq(d5_memory_recorder_begin(r, "chain"), D5_OK, "%s", d5_last_error());
    cr_assert_eq(d5_memory_recorder_begin(r, "chain"), D5_ERR_STATE);
    cr_assert_eq(d5_executor_inference(ex), D5_OK, "%s", d5_last_error());
    cr_assert_eq(d5_memory_recorder_end(r, p), D5_OK, "%s", d5_last_error());
    cr_assert_eq(d5_memory_recorder_section(r, D5_MEMORY_OTHER, "x"), D5_ERR_STATE);
    d5_free(w.c);
    d5_memory_recorder_free(r);
    d5_executor_free(ex);
    d5_network_free(net);
}

/* The plan by hand: h1 lives over mm1..relu, a1 relu..mm2, h2 mm2..sig, y
 * from sig to the end. Live bytes point by point (planned + heap):
 *   mm1: +h1 128 | relu: +a1 256, +A 1256, +B 1756 (the peak), -B 1256 |
 *   -h1 1128 | mm2: +h2 1640, -A 640, +C 736 | -a1 608 | sig: +y 1120 |
 *   -h2 608. */
static const int64_t expected_live[] = {128,  256, 1256, 1756, 1256, 1128,
                                        1640, 640, 736,  608,  1120, 608};
static const int64_t expected_delta[] = {128, 128,   1000, 500,  -500, -128,
                                         512, -1000, 96,   -128, 512,  -512};

Test(memory, chain_by_hand)
{
    d5_memory_profile p;
    record_chain(&p, NULL, 0, 1);
    cr_assert_str_eq(p.name, "chain");
    cr_assert_str_eq(p.clock, "monotonic");
    cr_assert_eq(p.runs, 1);
    cr_assert_eq(p.arena_bytes, 1024);
    cr_assert_eq(p.unshared_bytes, 128 + 128 + 512 + 512);
    cr_assert_eq(p.dropped_events, 0);
    cr_assert_eq(p.npoints, 12, "%lld points", (long long)p.npoints);
    for (int64_t i = 0; i < p.npoints; i++) {
        cr_assert_eq(p.timeline[i].live_bytes, expected_live[i], "point %lld: %lld", (long long)i,
                     (long long)p.timeline[i].live_bytes);
        cr_assert_eq(p.timeline[i].delta_bytes, expected_delta[i], "point %lld", (long long)i);
        cr_assert_eq(p.timeline[i].live_bytes,
                     p.timeline[i].planned_bytes + p.timeline[i].heap_bytes);
        if (i) cr_assert(p.timeline[i].time_ms >= p.timeline[i - 1].time_ms);
    }
    expect_row(&p, "mm1", 128, 0, 0, 0, 128);
    expect_row(&p, "relu", 128, 1500, 500, 1500, 1756);
    expect_row(&p, "mm2", 512, 96, 1000, 0, 1640);
    expect_row(&p, "sig", 512, 0, 0, 0, 1120);
    cr_assert_eq(row(&p, "relu", D5_MEMORY_FORWARD)->heap_allocations, 2);
    cr_assert_eq(row(&p, "mm2", D5_MEMORY_FORWARD)->heap_frees, 1);
    /* The peak and where. */
    cr_assert_eq(p.peak_bytes, 1756);
    cr_assert_eq(p.peak_planned_bytes, 256);
    cr_assert_eq(p.peak_heap_bytes, 1500);
    cr_assert_str_eq(p.rows[p.peak_row].name, "relu");
    cr_assert_eq(p.rows[p.peak_row].phase, D5_MEMORY_FORWARD);
    cr_assert_eq(p.planned_peak_bytes, 1024);
    cr_assert_eq(p.heap_peak_bytes, 1500);
    cr_assert_eq(p.heap.allocations, 3);
    cr_assert_eq(p.heap.frees, 2);
    cr_assert_eq(p.heap.live_bytes, 96);
    /* Live at the peak: h1, a1, A and B. */
    const char *live[] = {"h1", "a1", "test workspace A", "test workspace B"};
    int64_t nlive = 0, bytes = 0;
    for (int64_t b = 0; b < p.nblocks; b++) {
        if (!p.blocks[b].live_at_peak) continue;
        nlive++;
        bytes += p.blocks[b].bytes;
        int found = 0;
        for (int k = 0; k < 4; k++) found |= strcmp(p.blocks[b].label, live[k]) == 0;
        cr_assert(found, "%s live at the peak", p.blocks[b].label);
    }
    cr_assert_eq(nlive, 4);
    cr_assert_eq(bytes, p.peak_bytes);
    d5_memory_profile_free(&p);
    d5_memory_profile_free(&p); /* zeroed: a no-op */
}

/* Without heap work the peak is the plan's: h2 and y, when sig writes y. */
Test(memory, planned_peak_inside_its_node)
{
    d5_memory_profile p;
    record_chain(&p, NULL, 0, 0);
    cr_assert_eq(p.heap.allocations, 0);
    cr_assert_eq(p.peak_bytes, 1024);
    cr_assert_eq(p.peak_heap_bytes, 0);
    cr_assert_str_eq(p.rows[p.peak_row].name, "sig");
    expect_row(&p, "mm1", 128, 0, 0, 0, 128);
    expect_row(&p, "sig", 512, 0, 0, 0, 1024);
    d5_memory_profile_free(&p);
}

/* The first run: every ref node allocates its float64 buffers (8 bytes per
 * element of each input and output it converts), kept for later runs. */
Test(memory, first_run_shows_lazy_buffers)
{
    d5_memory_profile p;
    record_chain(&p, NULL, 1, 1);
    /* mm1 converts x[4,16], W1[16,8] and h1[4,8]; relu h1 and a1. */
    cr_assert_eq(row(&p, "mm1", D5_MEMORY_FORWARD)->heap_allocated_bytes, 8 * (64 + 128 + 32));
    cr_assert_eq(row(&p, "relu", D5_MEMORY_FORWARD)->heap_allocated_bytes, 8 * (32 + 32) + 1500);
    cr_assert_eq(p.heap.frees, 2, "the buffers stay");
    d5_memory_profile_free(&p);
}

/* memory.json and memory_timeline.csv read back. */
Test(memory, files_read_back)
{
    d5_timer *timer = NULL;
    cr_assert_eq(d5_timer_create(NULL, &timer), D5_OK);
    d5_memory_profile p;
    record_chain(&p, timer, 0, 1);
    cr_assert_str_eq(p.clock, "timer");
    cr_assert(p.origin_ns > 0 && p.origin_ns <= d5_timer_now_ns(timer));
    char *dir = tmpdir_make(), path[4096];
    snprintf(path, sizeof path, "%s/out", dir);
    cr_assert_eq(d5_memory_profile_write_dir(&p, path), D5_OK, "%s", d5_last_error());

    snprintf(path, sizeof path, "%s/out/memory.json", dir);
    json_error_t err;
    json_t *doc = json_load_file(path, 0, &err);
    cr_assert(doc, "%s: %s", path, err.text);
    cr_assert(json_is_object(json_object_get(doc, "context")));
    cr_assert_str_eq(json_string_value(json_object_get(doc, "name")), "chain");
    json_t *peak = json_object_get(doc, "peak");
    cr_assert_eq(json_integer_value(json_object_get(peak, "bytes")), 1756);
    cr_assert_str_eq(json_string_value(json_object_get(peak, "phase")), "forward");
    cr_assert_str_eq(json_string_value(json_object_get(peak, "node")), "relu");
    cr_assert_str_eq(json_string_value(json_object_get(peak, "op_type")), "Relu");
    cr_assert_eq(json_integer_value(json_object_get(json_object_get(doc, "plan"), "arena_bytes")),
                 1024);
    json_t *ops = json_object_get(doc, "operators");
    cr_assert_eq(json_array_size(ops), (size_t)p.nrows);
    int found = 0;
    for (size_t i = 0; i < json_array_size(ops); i++) {
        json_t *o = json_array_get(ops, i);
        if (strcmp(json_string_value(json_object_get(o, "name")), "relu") != 0) continue;
        found = 1;
        cr_assert_eq(json_integer_value(json_object_get(o, "actual_bytes")), 1628);
        cr_assert_eq(json_integer_value(json_object_get(o, "planned_bytes")), 128);
        cr_assert_eq(json_integer_value(json_object_get(o, "heap_allocated_bytes")), 1500);
    }
    cr_assert(found);
    json_t *live = json_object_get(doc, "live_at_peak");
    cr_assert_eq(json_array_size(live), 4);
    int64_t sum = 0;
    for (size_t i = 0; i < 4; i++)
        sum += json_integer_value(json_object_get(json_array_get(live, i), "bytes"));
    cr_assert_eq(sum, 1756);
    json_decref(doc);

    snprintf(path, sizeof path, "%s/out/memory_timeline.csv", dir);
    char *csv = slurp(path, NULL);
    cr_assert(csv);
    cr_assert_eq(count_lines(csv), 13);
    cr_assert_eq(strncmp(csv, "time_ms,live_bytes,delta_bytes,label\n", 37), 0);
    char *line = strchr(csv, '\n') + 1;
    for (int i = 0; i < 12; i++) {
        double t;
        long long live_b, delta;
        char label[128];
        cr_assert_eq(sscanf(line, "%lf,%lld,%lld,%127[^\n]", &t, &live_b, &delta, label), 4,
                     "line %d: %.40s", i + 2, line);
        cr_assert_eq(live_b, expected_live[i]);
        cr_assert_eq(delta, expected_delta[i]);
        if (i == 0) cr_assert_str_eq(label, "value:h1");
        if (i == 2) cr_assert_str_eq(label, "heap:test workspace A");
        line = strchr(line, '\n') + 1;
    }
    free(csv);

    /* A Perfetto trace: the nodes as regions, memory as counter tracks. */
    snprintf(path, sizeof path, "%s/out/trace.json", dir);
    cr_assert_eq(d5_memory_profile_add_regions(&p, timer), D5_OK, "%s", d5_last_error());
    cr_assert_eq(d5_memory_profile_write_trace(&p, timer, path), D5_OK, "%s", d5_last_error());
    doc = json_load_file(path, 0, &err);
    cr_assert(doc, "%s: %s", path, err.text);
    json_t *events = json_is_array(doc) ? doc : json_object_get(doc, "traceEvents");
    size_t counters = 0, relu = 0;
    for (size_t i = 0; i < json_array_size(events); i++) {
        json_t *e = json_array_get(events, i);
        const char *ph = json_string_value(json_object_get(e, "ph"));
        const char *name = json_string_value(json_object_get(e, "name"));
        if (ph && strcmp(ph, "C") == 0 && name && strcmp(name, "memory bytes") == 0) counters++;
        if (ph && strcmp(ph, "X") == 0 && name && strcmp(name, "relu") == 0) relu++;
    }
    cr_assert_eq(counters, 3 * (size_t)(p.npoints + 1));
    cr_assert_eq(relu, 1);
    json_decref(doc);
    d5_memory_profile_free(&p);
    d5_timer_free(timer);
    rmtree(dir);
    free(dir);
}

/* With backprop every plan buffer (values, gradients, scratch gradients) is
 * born once in the run: the rows' planned bytes add up to the plan without
 * reuse, and the blocks live at the peak add up to the peak. */
Test(memory, backprop_accounts_every_buffer)
{
    d5_network *net = chain();
    d5_executor_options o = d5_executor_default_options();
    o.backend = "ref";
    o.backprop = 1;
    o.loss = "y";
    d5_executor *ex = NULL;
    cr_assert_eq(d5_executor_create(net, &o, &ex), D5_OK, "%s", d5_last_error());
    d5_memory_profile p;
    cr_assert_eq(d5_executor_record_memory(ex, 1, NULL, "chain backprop", &p), D5_OK, "%s",
                 d5_last_error());
    int64_t planned = 0, live = 0;
    int backward = 0;
    for (int32_t i = 0; i < p.nrows; i++) {
        planned += p.rows[i].planned_bytes;
        backward += p.rows[i].phase == D5_MEMORY_BACKWARD;
    }
    cr_assert_eq(backward, 4);
    cr_assert_eq(planned, p.unshared_bytes);
    for (int64_t b = 0; b < p.nblocks; b++)
        if (p.blocks[b].live_at_peak) live += p.blocks[b].bytes;
    cr_assert_eq(live, p.peak_bytes);
    cr_assert(p.planned_peak_bytes <= p.arena_bytes);
    cr_assert(p.peak_row >= 0);
    d5_memory_profile_free(&p);
    /* The recorder is gone: runs take the path without events again. */
    cr_assert_eq(d5_executor_inference_and_backprop(ex), D5_OK);
    d5_executor_free(ex);
    d5_network_free(net);
}

/* ---- A training step ------------------------------------------------------------------ */

static d5_trainer *trainer(d5_network *net, d5_optimizer **opt)
{
    d5_trainer_params tp = d5_trainer_default_params();
    tp.max_batches = 3;
    d5_trainer *t = NULL;
    cr_assert_eq(d5_trainer_create(net, &tp, &t), D5_OK, "%s", d5_last_error());
    d5_optimizer_params op = d5_optimizer_default_params();
    op.lr = 0.01;
    cr_assert_eq(d5_optimizer_create("momentum", &op, opt), D5_OK);
    cr_assert_eq(d5_trainer_set_optimizer(t, *opt), D5_OK, "%s", d5_last_error());
    return t;
}

Test(memory, training_step)
{
    d5_network *net = mlp(8);
    d5_dataset *data = synthetic(64, 3);
    d5_optimizer *opt = NULL;
    d5_trainer *t = trainer(net, &opt);
    d5_timer *timer = NULL;
    cr_assert_eq(d5_timer_create(NULL, &timer), D5_OK);
    cr_assert_eq(d5_trainer_set_timer(t, timer), D5_OK);
    const d5_memory_profile *p = NULL;
    cr_assert_eq(d5_trainer_record_memory(t, 0), D5_ERR_INVALID);
    cr_assert_eq(d5_trainer_memory_profile(t, &p), D5_ERR_STATE, "nothing asked for");
    cr_assert_eq(d5_trainer_record_memory(t, 2), D5_OK);
    d5_train_result res;
    cr_assert_eq(d5_trainer_run(t, data, NULL, 1, &res), D5_OK, "%s", d5_last_error());
    cr_assert_eq(d5_trainer_record_memory(t, 1), D5_ERR_STATE, "after the run");
    cr_assert_eq(d5_trainer_memory_profile(t, &p), D5_OK, "%s", d5_last_error());
    cr_assert_str_eq(p->name, "training step 2");
    cr_assert_str_eq(p->clock, "timer");
    cr_assert_eq(p->runs, 1);
    int fwd = 0, bwd = 0, optimizer = 0;
    int64_t planned = 0;
    for (int32_t i = 0; i < p->nrows; i++) {
        fwd += p->rows[i].phase == D5_MEMORY_FORWARD;
        bwd += p->rows[i].phase == D5_MEMORY_BACKWARD;
        if (p->rows[i].phase == D5_MEMORY_OPTIMIZER) {
            optimizer++;
            cr_assert_str_eq(p->rows[i].name, "momentum");
            cr_assert(p->rows[i].start_ms > 0);
        }
        planned += p->rows[i].planned_bytes;
    }
    cr_assert(fwd > 0 && bwd > 0);
    cr_assert_eq(optimizer, 1);
    cr_assert_eq(planned, p->unshared_bytes);
    cr_assert(p->peak_row >= 0 && p->peak_bytes > 0);
    /* The step lies within the step's BATCH region on the timer. */
    d5_timer_id id;
    d5_timer_series series;
    cr_assert_eq(d5_timer_key(timer, D5_KEY_BATCH, &id), D5_OK);
    cr_assert_eq(d5_timer_series_get(timer, id, D5_TIMER_CPU, &series), D5_OK);
    cr_assert_eq(series.n, 3);
    cr_assert(p->origin_ns <= series.start_ns[1]);
    cr_assert(p->origin_ns + p->duration_ms * 1e6 >= series.start_ns[1] + series.duration_ns[1]);
    cr_assert(p->origin_ns + p->duration_ms * 1e6 <= series.start_ns[2]);
    d5_train_result_free(&res);
    d5_trainer_free(t);

    /* A step the run never reaches. */
    d5_optimizer *opt2 = NULL;
    t = trainer(net, &opt2);
    cr_assert_eq(d5_trainer_record_memory(t, 9), D5_OK);
    cr_assert_eq(d5_trainer_run(t, data, NULL, 1, &res), D5_OK, "%s", d5_last_error());
    cr_assert_eq(d5_trainer_memory_profile(t, &p), D5_ERR_STATE);
    cr_assert(strstr(d5_last_error(), "stopped before it"), "%s", d5_last_error());
    cr_assert(!d5_memory_tracking());
    d5_train_result_free(&res);
    d5_trainer_free(t);
    d5_optimizer_free(opt);
    d5_optimizer_free(opt2);
    d5_timer_free(timer);
    d5_dataset_free(data);
    d5_network_free(net);
}

/* ---- d5 run --memory --------------------------------------------------------------------- */

Test(memory, run_writes_the_report)
{
    char *dir = tmpdir_make(), model[4096], mem[4096], path[4096], *out = NULL, *err = NULL;
    snprintf(model, sizeof model, "%s/lenet.onnx", dir);
    snprintf(mem, sizeof mem, "%s/mem.json", dir);
    cr_assert_eq(RUN(&out, &err, "model", "lenet", "--batch", "2", "-o", model), 0, "%s", err);
    free(out);
    free(err);
    int rc = RUN(&out, &err, "run", model, "--time", "0.05", "--no-overhead", "--memory", mem);
    cr_assert_eq(rc, 0, "%s", err);
    cr_assert(strstr(out, "memory peak "), "%s", out);
    cr_assert(strstr(out, "per operator memory (top 10 of "), "%s", out);
    json_error_t jerr;
    json_t *doc = json_load_file(mem, 0, &jerr);
    cr_assert(doc, "%s", jerr.text);
    cr_assert(json_integer_value(json_object_get(json_object_get(doc, "peak"), "bytes")) > 0);
    json_decref(doc);
    snprintf(path, sizeof path, "%s/mem_timeline.csv", dir);
    char *csv = slurp(path, NULL);
    cr_assert(csv && strncmp(csv, "time_ms,live_bytes,delta_bytes,label\n", 37) == 0);
    free(csv);
    snprintf(path, sizeof path, "%s/mem_trace.json", dir);
    doc = json_load_file(path, 0, &jerr);
    cr_assert(doc, "%s", jerr.text);
    json_decref(doc);
    free(out);
    free(err);
    rmtree(dir);
    free(dir);
}
