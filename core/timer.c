#define _POSIX_C_SOURCE 200809L
/* The keyed region timer. The hot path (start/end of a known key on the CPU
 * clock) is a pointer-keyed cache probe, one clock read and an append. */
#include "d5/timer.h"
#include "cuda_clock.h"
#include "internal.h"

#include <math.h>
#include <string.h>

typedef struct tkey {
    char *name;
    uint32_t hash;
    int open;
    uint64_t open_tick;  /* CPU clock at start */
    uint32_t open_event; /* CUDA event at start */
    uint64_t *ticks;     /* CPU samples: start, end pairs */
    size_t n, cap;
    uint32_t *events; /* CUDA samples not yet read: start, end pairs */
    size_t nev, capev;
    double *gpu; /* CUDA samples read: start_ns, duration_ns pairs */
    size_t ngpu, capgpu;
    double *view_start, *view_dur; /* series handed out by d5_timer_series_get */
    size_t view_cap;
} tkey;

typedef struct cache_slot {
    const char *ptr;
    d5_timer_id id;
} cache_slot;

#define CACHE_SLOTS 64

struct d5_timer {
    uint32_t clocks;
    int use_tsc;
    double ns_per_tick;
    uint64_t origin_tick;
    uint64_t origin_unix_ns;
    char *name;
    tkey *keys;
    size_t nkeys, capkeys;
    uint32_t *table; /* open addressing: key index + 1, 0 = empty */
    size_t table_cap;
    cache_slot cache[CACHE_SLOTS];
    d5__cuda_clock *cuda;
};

static const char *const default_keys[D5_KEY_ID_DEFAULT_COUNT] = {
    D5_KEY_EPOCH, D5_KEY_BATCH, D5_KEY_FORWARD, D5_KEY_BACKWARD,
    D5_KEY_COMM,  D5_KEY_IO,    D5_KEY_OTHER};

d5_timer_params d5_timer_default_params(void)
{
    return (d5_timer_params){
        .clocks = D5_TIMER_CPU, .cpu_clock = D5_CPU_CLOCK_AUTO, .cuda_stream = NULL, .name = "d5"};
}

static inline uint64_t cpu_now(const d5_timer *t)
{
    return t->use_tsc ? d5__ticks() : d5__mono_ns();
}

static uint32_t hash_str(const char *s)
{
    uint32_t h = 2166136261u; /* FNV-1a */
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 16777619u;
    return h;
}

static d5_status table_rebuild(d5_timer *t, size_t cap)
{
    uint32_t *tab = d5_calloc(cap, sizeof *tab, "timer key table");
    if (!tab) return D5_ERR_NOMEM;
    for (size_t i = 0; i < t->nkeys; i++) {
        size_t j = t->keys[i].hash & (cap - 1);
        while (tab[j]) j = (j + 1) & (cap - 1);
        tab[j] = (uint32_t)i + 1;
    }
    d5_free(t->table);
    t->table = tab;
    t->table_cap = cap;
    return D5_OK;
}

static d5_status key_check(const char *key)
{
    if (!key) return d5_error(D5_ERR_INVALID, "timer key is NULL");
    size_t len = strnlen(key, D5_TIMER_KEY_MAX + 1);
    if (len == 0) return d5_error(D5_ERR_INVALID, "timer key is empty");
    if (len > D5_TIMER_KEY_MAX)
        return d5_error(D5_ERR_INVALID, "timer key '%.32s...' is longer than %d bytes", key,
                        D5_TIMER_KEY_MAX);
    return D5_OK;
}

/* Finds a key by content; registers it when `create` is set. */
static d5_status key_find(d5_timer *t, const char *key, int create, d5_timer_id *id)
{
    d5_status s = key_check(key);
    if (s != D5_OK) return s;
    uint32_t h = hash_str(key);
    size_t j = h & (t->table_cap - 1);
    while (t->table[j]) {
        tkey *k = &t->keys[t->table[j] - 1];
        if (k->hash == h && strcmp(k->name, key) == 0) {
            *id = t->table[j] - 1;
            return D5_OK;
        }
        j = (j + 1) & (t->table_cap - 1);
    }
    if (!create) return d5_error(D5_ERR_NOTFOUND, "timer has no key '%s'", key);
    if (t->nkeys == t->capkeys) {
        size_t cap = t->capkeys * 2;
        tkey *nk = d5_realloc(t->keys, t->capkeys * sizeof *nk, cap * sizeof *nk, "timer keys");
        if (!nk) return D5_ERR_NOMEM;
        t->keys = nk;
        t->capkeys = cap;
    }
    char *name = d5_strdup(key, "timer key name");
    if (!name) return D5_ERR_NOMEM;
    tkey *k = &t->keys[t->nkeys];
    memset(k, 0, sizeof *k);
    k->name = name;
    k->hash = h;
    t->table[j] = (uint32_t)t->nkeys + 1;
    *id = (d5_timer_id)t->nkeys++;
    if (2 * t->nkeys > t->table_cap) {
        s = table_rebuild(t, t->table_cap * 2);
        if (s != D5_OK) return s; /* the key is registered; the table stays valid, only fuller */
    }
    return D5_OK;
}

/* The fast path: strings passed by the same pointer hit the cache; the content
 * is still compared, so a reused buffer holding another name is never confused. */
static inline d5_status key_lookup(d5_timer *t, const char *key, d5_timer_id *id)
{
    cache_slot *c = &t->cache[((uintptr_t)key >> 3) & (CACHE_SLOTS - 1)];
    if (c->ptr == key && key && strcmp(t->keys[c->id].name, key) == 0) {
        *id = c->id;
        return D5_OK;
    }
    d5_status s = key_find(t, key, 1, id);
    if (s == D5_OK) {
        c->ptr = key;
        c->id = *id;
    }
    return s;
}

d5_status d5_timer_create(const d5_timer_params *params, d5_timer **out)
{
    d5_timer_params p = params ? *params : d5_timer_default_params();
    if (!out) return d5_error(D5_ERR_INVALID, "d5_timer_create: NULL output");
    if (p.clocks == 0 || (p.clocks & ~(uint32_t)(D5_TIMER_CPU | D5_TIMER_CUDA)))
        return d5_error(D5_ERR_INVALID,
                        "timer clocks 0x%x: expected D5_TIMER_CPU and/or D5_TIMER_CUDA", p.clocks);
    if (p.cpu_clock > D5_CPU_CLOCK_MONOTONIC)
        return d5_error(D5_ERR_INVALID, "unknown CPU clock %d", (int)p.cpu_clock);
    const d5__tsc_info *tsc = d5__tsc();
    if (p.cpu_clock == D5_CPU_CLOCK_TSC && !tsc->usable)
        return d5_error(D5_ERR_UNSUPPORTED,
                        "TSC clock requested, but this CPU has no invariant time-stamp counter");
    d5_timer *t = d5_calloc(1, sizeof *t, "timer");
    if (!t) return D5_ERR_NOMEM;
    t->clocks = p.clocks;
    t->use_tsc = p.cpu_clock != D5_CPU_CLOCK_MONOTONIC && tsc->usable;
    t->ns_per_tick = t->use_tsc ? tsc->ns_per_tick : 1.0;
    t->capkeys = 16;
    t->keys = d5_calloc(t->capkeys, sizeof *t->keys, "timer keys");
    t->name = d5_strdup(p.name ? p.name : "d5", "timer name");
    d5_status s = (t->keys && t->name) ? table_rebuild(t, 32) : D5_ERR_NOMEM;
    for (int i = 0; s == D5_OK && i < D5_KEY_ID_DEFAULT_COUNT; i++) {
        d5_timer_id id;
        s = key_find(t, default_keys[i], 1, &id);
    }
    if (s == D5_OK && (p.clocks & D5_TIMER_CUDA))
        s = d5__cuda_clock_create(p.cuda_stream, &t->cuda);
    if (s != D5_OK) {
        d5_timer_free(t);
        return s;
    }
    t->origin_unix_ns = d5__wall_ns();
    t->origin_tick = cpu_now(t);
    *out = t;
    return D5_OK;
}

static void key_clear(tkey *k)
{
    d5_free(k->ticks);
    d5_free(k->events);
    d5_free(k->gpu);
    d5_free(k->view_start);
    d5_free(k->view_dur);
}

void d5_timer_free(d5_timer *t)
{
    if (!t) return;
    for (size_t i = 0; i < t->nkeys; i++) {
        key_clear(&t->keys[i]);
        d5_free(t->keys[i].name);
    }
    d5__cuda_clock_free(t->cuda);
    d5_free(t->keys);
    d5_free(t->table);
    d5_free(t->name);
    d5_free(t);
}

static d5_status grow_u64(uint64_t **a, size_t *cap, const char *key)
{
    size_t nc = *cap ? *cap * 2 : 64;
    uint64_t *g = d5_realloc(*a, *cap * 2 * sizeof **a, nc * 2 * sizeof **a, "timer samples");
    if (!g) return d5_error(D5_ERR_NOMEM, "out of memory storing samples of timer key '%s'", key);
    *a = g;
    *cap = nc;
    return D5_OK;
}

d5_status d5_timer_start_id(d5_timer *t, d5_timer_id id)
{
    if (!t || id >= t->nkeys)
        return d5_error(D5_ERR_INVALID, "d5_timer_start_id: %s",
                        t ? "unknown key id" : "NULL timer");
    tkey *k = &t->keys[id];
    if (k->open)
        return d5_error(D5_ERR_STATE, "timer key '%s': started again before its end", k->name);
    if (t->cuda) {
        d5_status s = d5__cuda_clock_record(t->cuda, &k->open_event);
        if (s != D5_OK) return s;
    }
    k->open = 1;
    k->open_tick = cpu_now(t); /* last, so that bookkeeping stays outside the region */
    return D5_OK;
}

static d5_status append_cuda(d5_timer *t, tkey *k)
{
    uint32_t end_event;
    d5_status s = d5__cuda_clock_record(t->cuda, &end_event);
    if (s != D5_OK) {
        d5__cuda_clock_release(t->cuda, k->open_event);
        return s;
    }
    if (k->nev == k->capev) {
        size_t nc = k->capev ? k->capev * 2 : 64;
        uint32_t *g = d5_realloc(k->events, k->capev * 2 * sizeof *g, nc * 2 * sizeof *g,
                                 "timer CUDA events");
        if (!g) {
            d5__cuda_clock_release(t->cuda, k->open_event);
            d5__cuda_clock_release(t->cuda, end_event);
            return d5_error(D5_ERR_NOMEM, "out of memory storing events of timer key '%s'",
                            k->name);
        }
        k->events = g;
        k->capev = nc;
    }
    k->events[2 * k->nev] = k->open_event;
    k->events[2 * k->nev + 1] = end_event;
    k->nev++;
    return D5_OK;
}

/* Closes the open region of k at `now` (read before any bookkeeping). */
static inline d5_status close_region(d5_timer *t, tkey *k, uint64_t now)
{
    if (!k->open) return d5_error(D5_ERR_STATE, "timer key '%s': end without a start", k->name);
    k->open = 0;
    d5_status s = D5_OK;
    if (t->cuda) s = append_cuda(t, k);
    if (k->n == k->cap) {
        d5_status g = grow_u64(&k->ticks, &k->cap, k->name);
        if (g != D5_OK) return g;
    }
    k->ticks[2 * k->n] = k->open_tick;
    k->ticks[2 * k->n + 1] = now;
    k->n++;
    return s;
}

d5_status d5_timer_end_id(d5_timer *t, d5_timer_id id)
{
    uint64_t now = t ? cpu_now(t) : 0; /* first, so that bookkeeping stays outside the region */
    if (!t || id >= t->nkeys)
        return d5_error(D5_ERR_INVALID, "d5_timer_end_id: %s", t ? "unknown key id" : "NULL timer");
    return close_region(t, &t->keys[id], now);
}

d5_status d5_timer_start(d5_timer *t, const char *key)
{
    if (!t) return d5_error(D5_ERR_INVALID, "d5_timer_start: NULL timer");
    d5_timer_id id;
    d5_status s = key_lookup(t, key, &id);
    if (s != D5_OK) return s;
    return d5_timer_start_id(t, id);
}

d5_status d5_timer_end(d5_timer *t, const char *key)
{
    uint64_t now = t ? cpu_now(t) : 0;
    if (!t) return d5_error(D5_ERR_INVALID, "d5_timer_end: NULL timer");
    d5_timer_id id;
    d5_status s = key_lookup(t, key, &id);
    if (s != D5_OK) return s;
    return close_region(t, &t->keys[id], now);
}

d5_status d5_timer_key(d5_timer *t, const char *key, d5_timer_id *id)
{
    if (!t || !id) return d5_error(D5_ERR_INVALID, "d5_timer_key: NULL argument");
    return key_find(t, key, 1, id);
}

double d5_timer_now_ns(const d5_timer *t)
{
    return (double)(cpu_now(t) - t->origin_tick) * t->ns_per_tick;
}

d5_status d5_timer_add(d5_timer *t, const char *key, double start_ns, double duration_ns)
{
    if (!t) return d5_error(D5_ERR_INVALID, "d5_timer_add: NULL timer");
    if (!(start_ns >= 0) || !(duration_ns >= 0) || isinf(start_ns) || isinf(duration_ns))
        return d5_error(D5_ERR_INVALID,
                        "timer key '%s': sample start %g ns, duration %g ns must "
                        "be finite and non-negative",
                        key ? key : "(null)", start_ns, duration_ns);
    d5_timer_id id;
    d5_status s = key_find(t, key, 1, &id);
    if (s != D5_OK) return s;
    tkey *k = &t->keys[id];
    if (k->n == k->cap && (s = grow_u64(&k->ticks, &k->cap, k->name)) != D5_OK) return s;
    uint64_t a = t->origin_tick + (uint64_t)llround(start_ns / t->ns_per_tick);
    k->ticks[2 * k->n] = a;
    k->ticks[2 * k->n + 1] = a + (uint64_t)llround(duration_ns / t->ns_per_tick);
    k->n++;
    return D5_OK;
}

size_t d5_timer_key_count(const d5_timer *t)
{
    return t ? t->nkeys : 0;
}

const char *d5_timer_key_name(const d5_timer *t, d5_timer_id id)
{
    return (t && id < t->nkeys) ? t->keys[id].name : NULL;
}

size_t d5_timer_count(const d5_timer *t, d5_timer_id id, d5_timer_clock clock)
{
    if (!t || id >= t->nkeys || !(t->clocks & clock)) return 0;
    const tkey *k = &t->keys[id];
    return clock == D5_TIMER_CUDA ? k->ngpu + k->nev : k->n;
}

int d5_timer_has_clock(const d5_timer *t, d5_timer_clock clock)
{
    return t && (t->clocks & clock) != 0;
}

const char *d5_timer_clock_name(const d5_timer *t, d5_timer_clock clock)
{
    if (clock == D5_TIMER_CUDA) return "cuda-event";
    return t && t->use_tsc ? "tsc" : "monotonic";
}

/* Reads the pending CUDA events of one key into start/duration pairs. */
static d5_status resolve_cuda(d5_timer *t, tkey *k)
{
    if (k->nev == 0) return D5_OK;
    if (k->ngpu + k->nev > k->capgpu) {
        size_t nc = k->capgpu ? k->capgpu : 64;
        while (nc < k->ngpu + k->nev) nc *= 2;
        double *g =
            d5_realloc(k->gpu, k->capgpu * 2 * sizeof *g, nc * 2 * sizeof *g, "timer CUDA samples");
        if (!g) return D5_ERR_NOMEM;
        k->gpu = g;
        k->capgpu = nc;
    }
    size_t done = 0;
    d5_status s = D5_OK;
    for (; done < k->nev; done++) {
        uint32_t a = k->events[2 * done], b = k->events[2 * done + 1];
        double start, dur;
        s = d5__cuda_clock_elapsed_ns(t->cuda, D5__CUDA_REF, a, &start);
        if (s == D5_OK) s = d5__cuda_clock_elapsed_ns(t->cuda, a, b, &dur);
        if (s != D5_OK) break;
        k->gpu[2 * k->ngpu] = start;
        k->gpu[2 * k->ngpu + 1] = dur;
        k->ngpu++;
        d5__cuda_clock_release(t->cuda, a);
        d5__cuda_clock_release(t->cuda, b);
    }
    memmove(k->events, k->events + 2 * done, (k->nev - done) * 2 * sizeof *k->events);
    k->nev -= done;
    return s;
}

d5_status d5_timer_sync(d5_timer *t)
{
    if (!t) return d5_error(D5_ERR_INVALID, "d5_timer_sync: NULL timer");
    for (size_t i = 0; t->cuda && i < t->nkeys; i++) {
        d5_status s = resolve_cuda(t, &t->keys[i]);
        if (s != D5_OK) return s;
    }
    return D5_OK;
}

d5_status d5_timer_series_get(d5_timer *t, d5_timer_id id, d5_timer_clock clock,
                              d5_timer_series *out)
{
    if (!t || !out || id >= t->nkeys)
        return d5_error(D5_ERR_INVALID, "d5_timer_series_get: %s",
                        (!t || !out) ? "NULL argument" : "unknown key id");
    if (clock != D5_TIMER_CPU && clock != D5_TIMER_CUDA)
        return d5_error(D5_ERR_INVALID, "d5_timer_series_get: clock must be one of "
                                        "D5_TIMER_CPU, D5_TIMER_CUDA");
    if (!(t->clocks & clock))
        return d5_error(D5_ERR_STATE, "timer does not record the %s clock",
                        clock == D5_TIMER_CUDA ? "CUDA-event" : "CPU");
    tkey *k = &t->keys[id];
    if (clock == D5_TIMER_CUDA) {
        d5_status s = resolve_cuda(t, k);
        if (s != D5_OK) return s;
    }
    size_t n = clock == D5_TIMER_CUDA ? k->ngpu : k->n;
    if (n > k->view_cap) {
        double *a = d5_alloc(n * sizeof *a, "timer series");
        double *b = a ? d5_alloc(n * sizeof *b, "timer series") : NULL;
        if (!b) {
            d5_free(a);
            return D5_ERR_NOMEM;
        }
        d5_free(k->view_start);
        d5_free(k->view_dur);
        k->view_start = a;
        k->view_dur = b;
        k->view_cap = n;
    }
    for (size_t i = 0; i < n; i++) {
        if (clock == D5_TIMER_CUDA) {
            k->view_start[i] = k->gpu[2 * i];
            k->view_dur[i] = k->gpu[2 * i + 1];
        } else {
            /* Signed: a sample added with d5_timer_add may not precede the origin,
             * but the subtraction is done in double to stay safe. */
            k->view_start[i] = ((double)k->ticks[2 * i] - (double)t->origin_tick) * t->ns_per_tick;
            k->view_dur[i] = (double)(k->ticks[2 * i + 1] - k->ticks[2 * i]) * t->ns_per_tick;
        }
    }
    out->start_ns = k->view_start;
    out->duration_ns = k->view_dur;
    out->n = n;
    return D5_OK;
}

d5_status d5_timer_stats(d5_timer *t, const char *key, d5_timer_clock clock, d5_stats *out)
{
    if (!t || !out) return d5_error(D5_ERR_INVALID, "d5_timer_stats: NULL argument");
    d5_timer_id id;
    d5_status s = key_find(t, key, 0, &id);
    if (s != D5_OK) return s;
    d5_timer_series ser;
    s = d5_timer_series_get(t, id, clock, &ser);
    if (s != D5_OK) return s;
    if (ser.n == 0) return d5_error(D5_ERR_NOTFOUND, "timer key '%s' has no samples", key);
    return d5_stats_compute(ser.duration_ns, ser.n, out);
}

d5_status d5_timer_reset(d5_timer *t)
{
    if (!t) return d5_error(D5_ERR_INVALID, "d5_timer_reset: NULL timer");
    for (size_t i = 0; i < t->nkeys; i++)
        if (t->keys[i].open)
            return d5_error(D5_ERR_STATE, "cannot reset the timer: region '%s' is open",
                            t->keys[i].name);
    for (size_t i = 0; i < t->nkeys; i++) {
        tkey *k = &t->keys[i];
        for (size_t j = 0; t->cuda && j < 2 * k->nev; j++)
            d5__cuda_clock_release(t->cuda, k->events[j]);
        k->n = k->nev = k->ngpu = 0;
    }
    return D5_OK;
}

uint64_t d5_timer_origin_unix_ns(const d5_timer *t)
{
    return t ? t->origin_unix_ns : 0;
}

const char *d5_timer_name(const d5_timer *t)
{
    return t ? t->name : NULL;
}
