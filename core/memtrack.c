/* Heap accounting: while on, every block allocated through d5's allocator is
 * entered in a table (address -> size, block id) so that its free can be
 * counted, live and peak bytes are kept in atomic counters, and optionally
 * each allocation and free is logged with its time, size, label and scope.
 *
 * One mutex guards the table and the log: operators allocate from OpenMP
 * threads. The bookkeeping's own memory comes from the current allocator
 * without accounting (d5__raw_alloc), so it never counts itself. Blocks
 * allocated before accounting began are not in the table: their frees are
 * counted apart (foreign_frees), never subtracted. */
#define _POSIX_C_SOURCE 200809L
#include "memtrack.h"
#include "d5/timer.h"
#include "internal.h"

#include <pthread.h>
#include <string.h>

atomic_int d5__memtrack_on;

static atomic_int_least64_t live, peak, allocated, freed, nallocs, nfrees, foreign, untracked;
static atomic_int_least32_t scope;

/* One live block. key 0 marks an empty slot. */
typedef struct entry {
    uintptr_t key;
    int64_t size;
    uint64_t block;
    size_t event; /* its allocation's index in the log; SIZE_MAX when not logged */
} entry;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    entry *slots;
    size_t cap, used; /* cap a power of two, at most half full */
    uint64_t next_block;
    int log;
    d5_memory_event *events;
    size_t n, ecap, max, dropped;
    const d5_timer *clock;
    uint64_t mono0;
    double begin_ns;
} st;

d5_memory_track_params d5_memory_track_default_params(void)
{
    return (d5_memory_track_params){.log = 0, .clock = NULL, .max_events = (size_t)1 << 20};
}

static double clock_now(void)
{
    return st.clock ? d5_timer_now_ns(st.clock) : (double)(d5__mono_ns() - st.mono0);
}

static size_t slot_of(uintptr_t key, size_t cap)
{
    uint64_t h = (uint64_t)(key >> 4) * 0x9E3779B97F4A7C15ull;
    return (size_t)(h >> 32) & (cap - 1);
}

/* Places e in a table of cap slots known to have room. */
static void put(entry *slots, size_t cap, entry e)
{
    size_t i = slot_of(e.key, cap);
    while (slots[i].key) i = (i + 1) & (cap - 1);
    slots[i] = e;
}

static int grow(void)
{
    size_t cap = st.cap * 2;
    entry *slots = d5__raw_alloc(cap * sizeof *slots);
    if (!slots) return 0;
    memset(slots, 0, cap * sizeof *slots);
    for (size_t i = 0; i < st.cap; i++)
        if (st.slots[i].key) put(slots, cap, st.slots[i]);
    d5__raw_free(st.slots);
    st.slots = slots;
    st.cap = cap;
    return 1;
}

/* Removes the entry of key into *out; 0 when it is not there. Deletion
 * shifts later entries of the probe sequence back, so no tombstones. */
static int take(uintptr_t key, entry *out)
{
    size_t mask = st.cap - 1, i = slot_of(key, st.cap);
    while (st.slots[i].key && st.slots[i].key != key) i = (i + 1) & mask;
    if (!st.slots[i].key) return 0;
    *out = st.slots[i];
    size_t hole = i;
    for (size_t j = (i + 1) & mask; st.slots[j].key; j = (j + 1) & mask) {
        size_t home = slot_of(st.slots[j].key, st.cap);
        /* Move j into the hole unless its home lies cyclically in (hole, j]. */
        int stays = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
        if (stays) continue;
        st.slots[hole] = st.slots[j];
        hole = j;
    }
    st.slots[hole].key = 0;
    st.used--;
    return 1;
}

/* Appends an event labelled `label`, or with the label of event `from`
 * (a free repeats its allocation's) when label is NULL; SIZE_MAX when it was
 * not kept. */
static size_t log_event(int64_t delta, uint64_t block, const char *label, size_t from)
{
    if (!st.log) return SIZE_MAX;
    if (st.n == st.max) {
        st.dropped++;
        return SIZE_MAX;
    }
    if (st.n == st.ecap) {
        size_t cap = st.ecap ? st.ecap * 2 : 4096;
        if (cap > st.max) cap = st.max;
        d5_memory_event *e = d5__raw_alloc(cap * sizeof *e);
        if (!e) {
            st.dropped++;
            return SIZE_MAX;
        }
        if (st.n) memcpy(e, st.events, st.n * sizeof *e);
        d5__raw_free(st.events);
        st.events = e;
        st.ecap = cap;
    }
    d5_memory_event *e = &st.events[st.n];
    if (!label) label = from != SIZE_MAX ? st.events[from].label : "";
    size_t len = strnlen(label, sizeof e->label - 1);
    memcpy(e->label, label, len);
    e->label[len] = '\0';
    e->t_ns = clock_now();
    e->delta_bytes = delta;
    e->live_bytes = atomic_load_explicit(&live, memory_order_relaxed);
    e->block = block;
    e->scope = atomic_load_explicit(&scope, memory_order_relaxed);
    e->reserved = 0;
    return st.n++;
}

void d5__memtrack_alloc(void *p, size_t size, const char *what)
{
    pthread_mutex_lock(&lock);
    if (atomic_load_explicit(&d5__memtrack_on, memory_order_relaxed)) {
        if (2 * (st.used + 1) > st.cap && !grow()) {
            atomic_fetch_add_explicit(&untracked, 1, memory_order_relaxed);
        } else {
            int64_t now = atomic_load_explicit(&live, memory_order_relaxed) + (int64_t)size;
            atomic_store_explicit(&live, now, memory_order_relaxed);
            if (now > atomic_load_explicit(&peak, memory_order_relaxed))
                atomic_store_explicit(&peak, now, memory_order_relaxed);
            atomic_fetch_add_explicit(&allocated, (int64_t)size, memory_order_relaxed);
            atomic_fetch_add_explicit(&nallocs, 1, memory_order_relaxed);
            entry e = {(uintptr_t)p, (int64_t)size, ++st.next_block, SIZE_MAX};
            e.event = log_event((int64_t)size, e.block, what ? what : "", SIZE_MAX);
            put(st.slots, st.cap, e);
            st.used++;
        }
    }
    pthread_mutex_unlock(&lock);
}

void d5__memtrack_free(void *p)
{
    pthread_mutex_lock(&lock);
    entry e;
    if (!atomic_load_explicit(&d5__memtrack_on, memory_order_relaxed)) {
        /* accounting ended meanwhile */
    } else if (!take((uintptr_t)p, &e)) {
        atomic_fetch_add_explicit(&foreign, 1, memory_order_relaxed);
    } else {
        atomic_fetch_sub_explicit(&live, e.size, memory_order_relaxed);
        atomic_fetch_add_explicit(&freed, e.size, memory_order_relaxed);
        atomic_fetch_add_explicit(&nfrees, 1, memory_order_relaxed);
        log_event(-e.size, e.block, NULL, e.event);
    }
    pthread_mutex_unlock(&lock);
}

d5_status d5_memory_track_begin(const d5_memory_track_params *p)
{
    d5_memory_track_params params = p ? *p : d5_memory_track_default_params();
    if (params.max_events == 0) params.max_events = d5_memory_track_default_params().max_events;
    pthread_mutex_lock(&lock);
    if (atomic_load_explicit(&d5__memtrack_on, memory_order_relaxed)) {
        pthread_mutex_unlock(&lock);
        return d5_error(D5_ERR_STATE, "heap accounting is on already (one period at a time)");
    }
    entry *slots = d5__raw_alloc(1024 * sizeof *slots);
    if (!slots) {
        pthread_mutex_unlock(&lock);
        return d5_error(D5_ERR_NOMEM, "out of memory starting the heap accounting");
    }
    memset(slots, 0, 1024 * sizeof *slots);
    memset(&st, 0, sizeof st);
    st.slots = slots;
    st.cap = 1024;
    st.log = params.log != 0;
    st.max = params.max_events;
    st.clock = params.clock;
    st.mono0 = d5__mono_ns();
    st.begin_ns = clock_now();
    atomic_int_least64_t *counters[] = {&live,    &peak,   &allocated, &freed,
                                        &nallocs, &nfrees, &foreign,   &untracked};
    for (size_t i = 0; i < sizeof counters / sizeof counters[0]; i++)
        atomic_store_explicit(counters[i], 0, memory_order_relaxed);
    atomic_store_explicit(&d5__memtrack_on, 1, memory_order_release);
    pthread_mutex_unlock(&lock);
    return D5_OK;
}

d5_status d5_memory_track_end(d5_memory_log *out)
{
    pthread_mutex_lock(&lock);
    if (!atomic_load_explicit(&d5__memtrack_on, memory_order_relaxed)) {
        pthread_mutex_unlock(&lock);
        return d5_error(D5_ERR_STATE, "heap accounting is off: nothing to end");
    }
    atomic_store_explicit(&d5__memtrack_on, 0, memory_order_release);
    double end_ns = clock_now();
    d5__raw_free(st.slots);
    st.slots = NULL;
    if (out) {
        memset(out, 0, sizeof *out);
        out->events = st.events;
        out->n = st.n;
        out->dropped = st.dropped;
        out->begin_ns = st.begin_ns;
        out->end_ns = end_ns;
    } else {
        d5__raw_free(st.events);
    }
    st.events = NULL;
    st.clock = NULL;
    pthread_mutex_unlock(&lock);
    if (out) d5_memory_counters_get(&out->counters);
    return D5_OK;
}

void d5_memory_log_free(d5_memory_log *log)
{
    if (!log) return;
    d5__raw_free(log->events);
    memset(log, 0, sizeof *log);
}

int d5_memory_tracking(void)
{
    return atomic_load_explicit(&d5__memtrack_on, memory_order_acquire);
}

void d5_memory_counters_get(d5_memory_counters *out)
{
    out->live_bytes = atomic_load_explicit(&live, memory_order_relaxed);
    out->peak_bytes = atomic_load_explicit(&peak, memory_order_relaxed);
    out->allocated_bytes = atomic_load_explicit(&allocated, memory_order_relaxed);
    out->freed_bytes = atomic_load_explicit(&freed, memory_order_relaxed);
    out->allocations = atomic_load_explicit(&nallocs, memory_order_relaxed);
    out->frees = atomic_load_explicit(&nfrees, memory_order_relaxed);
    out->foreign_frees = atomic_load_explicit(&foreign, memory_order_relaxed);
    out->untracked = atomic_load_explicit(&untracked, memory_order_relaxed);
}

double d5_memory_now_ns(void)
{
    pthread_mutex_lock(&lock);
    double t = atomic_load_explicit(&d5__memtrack_on, memory_order_relaxed) ? clock_now() : 0;
    pthread_mutex_unlock(&lock);
    return t;
}

int32_t d5_memory_scope_set(int32_t s)
{
    return atomic_exchange_explicit(&scope, s, memory_order_relaxed);
}

int32_t d5_memory_scope_get(void)
{
    return atomic_load_explicit(&scope, memory_order_relaxed);
}
