/* The run log: parameters, tags and metric series of one run. */
#include "d5/runlog.h"
#include "internal.h"

#include <math.h>
#include <string.h>

typedef struct list {
    d5_runlog_entry *v;
    size_t n, cap;
} list;

struct d5_runlog {
    char *name;
    int64_t start_ms, end_ms;
    int failed;
    list lists[3];
};

static int64_t now_ms(void)
{
    return (int64_t)(d5__wall_ns() / 1000000u);
}

d5_status d5_runlog_create(const char *name, d5_runlog **out)
{
    if (!out) return d5_error(D5_ERR_INVALID, "d5_runlog_create: out is NULL");
    *out = NULL;
    if (!name || !*name) return d5_error(D5_ERR_INVALID, "d5_runlog_create: the name is empty");
    d5_runlog *log = d5_calloc(1, sizeof *log, "run log");
    if (!log) return D5_ERR_NOMEM;
    log->name = d5_strdup(name, "run log name");
    if (!log->name) {
        d5_free(log);
        return D5_ERR_NOMEM;
    }
    log->start_ms = now_ms();
    log->end_ms = -1;
    *out = log;
    return D5_OK;
}

void d5_runlog_free(d5_runlog *log)
{
    if (!log) return;
    for (int k = 0; k < 3; k++) {
        for (size_t i = 0; i < log->lists[k].n; i++) {
            d5_free((char *)log->lists[k].v[i].key);
            d5_free((char *)log->lists[k].v[i].text);
        }
        d5_free(log->lists[k].v);
    }
    d5_free(log->name);
    d5_free(log);
}

static const char *kind_name(d5_runlog_kind kind)
{
    return kind == D5_RUNLOG_PARAM ? "parameter" : kind == D5_RUNLOG_TAG ? "tag" : "metric";
}

static d5_status check_key(const char *key, d5_runlog_kind kind)
{
    if (!key || !*key)
        return d5_error(D5_ERR_INVALID, "run log: a %s key is empty", kind_name(kind));
    size_t n = strlen(key);
    int bad = key[0] == '/' || key[n - 1] == '/' || strstr(key, "..") != NULL;
    for (const char *c = key; !bad && *c; c++)
        bad = (unsigned char)*c < 0x20 || *c == 0x7f || *c == ':' || *c == '\\';
    if (bad)
        return d5_error(D5_ERR_INVALID,
                        "run log: %s key '%s' cannot name a file (no '/' at either end, no "
                        "'..', ':', '\\' or control characters)",
                        kind_name(kind), key);
    return D5_OK;
}

static d5_runlog_entry *find(list *l, const char *key)
{
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->v[i].key, key) == 0) return &l->v[i];
    return NULL;
}

static d5_runlog_entry *append(list *l)
{
    if (d5_grow(&l->v, &l->cap, l->n + 1, sizeof *l->v, "run log entries") != D5_OK) return NULL;
    d5_runlog_entry *e = &l->v[l->n];
    memset(e, 0, sizeof *e);
    return e;
}

static d5_status set_text(d5_runlog *log, d5_runlog_kind kind, const char *key, const char *value)
{
    if (!log) return d5_error(D5_ERR_INVALID, "run log: the log is NULL");
    d5_status s = check_key(key, kind);
    if (s != D5_OK) return s;
    if (!value)
        return d5_error(D5_ERR_INVALID, "run log: %s '%s' has no value", kind_name(kind), key);
    char *text = d5_strdup(value, "run log value");
    if (!text) return D5_ERR_NOMEM;
    list *l = &log->lists[kind];
    d5_runlog_entry *e = find(l, key);
    if (e) {
        d5_free((char *)e->text);
        e->text = text;
        return D5_OK;
    }
    char *k = d5_strdup(key, "run log key");
    e = k ? append(l) : NULL;
    if (!e) {
        d5_free(k);
        d5_free(text);
        return D5_ERR_NOMEM;
    }
    e->key = k;
    e->text = text;
    l->n++;
    return D5_OK;
}

d5_status d5_runlog_param(d5_runlog *log, const char *key, const char *value)
{
    return set_text(log, D5_RUNLOG_PARAM, key, value);
}

d5_status d5_runlog_tag(d5_runlog *log, const char *key, const char *value)
{
    return set_text(log, D5_RUNLOG_TAG, key, value);
}

d5_status d5_runlog_metric(d5_runlog *log, const char *key, double value, int64_t step,
                           int64_t timestamp_ms)
{
    if (!log) return d5_error(D5_ERR_INVALID, "run log: the log is NULL");
    d5_status s = check_key(key, D5_RUNLOG_METRIC);
    if (s != D5_OK) return s;
    if (!isfinite(value))
        return d5_error(D5_ERR_INVALID, "run log: metric '%s' at step %lld is not finite", key,
                        (long long)step);
    char *k = d5_strdup(key, "run log key");
    d5_runlog_entry *e = k ? append(&log->lists[D5_RUNLOG_METRIC]) : NULL;
    if (!e) {
        d5_free(k);
        return D5_ERR_NOMEM;
    }
    e->key = k;
    e->value = value;
    e->step = step;
    e->timestamp_ms = timestamp_ms < 0 ? now_ms() : timestamp_ms;
    log->lists[D5_RUNLOG_METRIC].n++;
    return D5_OK;
}

void d5_runlog_finish(d5_runlog *log, int failed)
{
    if (!log) return;
    log->end_ms = now_ms();
    log->failed = failed != 0;
}

const char *d5_runlog_name(const d5_runlog *log)
{
    return log ? log->name : NULL;
}

int64_t d5_runlog_start_ms(const d5_runlog *log)
{
    return log ? log->start_ms : -1;
}

int64_t d5_runlog_end_ms(const d5_runlog *log)
{
    return log ? log->end_ms : -1;
}

int d5_runlog_failed(const d5_runlog *log)
{
    return log ? log->failed : 0;
}

const d5_runlog_entry *d5_runlog_entries(const d5_runlog *log, d5_runlog_kind kind, size_t *n)
{
    if (n) *n = 0;
    if (!log || kind < D5_RUNLOG_PARAM || kind > D5_RUNLOG_METRIC) return NULL;
    if (n) *n = log->lists[kind].n;
    return log->lists[kind].v;
}

const char *d5_runlog_lookup(const d5_runlog *log, d5_runlog_kind kind, const char *key)
{
    if (!log || !key || kind == D5_RUNLOG_METRIC || kind < D5_RUNLOG_PARAM) return NULL;
    d5_runlog_entry *e = find((list *)&log->lists[kind], key);
    return e ? e->text : NULL;
}
