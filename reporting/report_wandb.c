/* A Weights & Biases offline run written from a run log: the directory that
 * the W&B client leaves when it runs offline, and that `wandb sync` uploads.
 *
 * DIR/offline-run-YYYYMMDD_HHMMSS-<id>/run-<id>.wandb is W&B's transaction
 * log: LevelDB's log format (github.com/google/leveldb, doc/log_format.md)
 * behind a 7-byte W&B header, as read and written by
 * wandb/sdk/internal/datastore.py, core/pkg/leveldb/record.go and
 * core/internal/transactionlog/ of the wandb/wandb repository:
 *
 *   header  ":W&B", magic 0xBEE1 (uint16, little-endian), version 0
 *   blocks  32768 bytes, counted from the start of the file (the header lies
 *           in the first); a chunk never crosses a block boundary, and a block
 *           tail shorter than a chunk header is zero padding
 *   chunk   CRC (uint32 LE), payload length (uint16 LE), type (1 FULL,
 *           2 FIRST, 3 MIDDLE, 4 LAST), payload; a record is one FULL chunk or
 *           FIRST, MIDDLE..., LAST
 *   CRC     CRC-32 (IEEE 802.3, zlib's crc32), not masked, over the type byte
 *           and the payload: W&B opens its logs with CRCAlgoIEEE, not with
 *           LevelDB's masked CRC-32C
 *
 * Each record is a protobuf Record of W&B's wandb_internal.proto
 * (wandb_record.proto holds the part written here), in the client's order:
 * header, run (id, project, name, start time, config), one history record per
 * step, summary, exit, final. files/ holds config.yaml and
 * wandb-summary.json, as the client leaves them.
 */
#define _GNU_SOURCE
#include "d5/runlog.h"
#include "internal.h"
#include "json.h"

#include "wandb_record.pb-c.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

enum { BLOCK = 32768, CHUNK_HEADER = 7, ID_LEN = 8 };
enum { CHUNK_FULL = 1, CHUNK_FIRST = 2, CHUNK_MIDDLE = 3, CHUNK_LAST = 4 };

/* The config key that holds the log's tags, as one object. */
static const char TAGS_KEY[] = "d5_tags";

/* ---- Strings ---- */

/* Every string this writer allocates, freed together. */
typedef struct pool {
    char **v;
    size_t n, cap;
} pool;

static char *pool_keep(pool *p, char *s)
{
    if (!s) return NULL;
    if (d5_grow(&p->v, &p->cap, p->n + 1, sizeof *p->v, "W&B strings") != D5_OK) {
        d5_free(s);
        return NULL;
    }
    p->v[p->n++] = s;
    return s;
}

/* Frees the strings and keeps the pool for more. */
static void pool_clear(pool *p)
{
    for (size_t i = 0; i < p->n; i++) d5_free(p->v[i]);
    p->n = 0;
}

static void pool_free(pool *p)
{
    pool_clear(p);
    d5_free(p->v);
}

/* A copy of a string that jansson allocated (freed here), kept in the pool. */
static char *pool_keep_json(pool *p, char *s)
{
    if (!s) return NULL;
    char *c = d5_strdup(s, "W&B JSON value");
    free(s);
    return pool_keep(p, c);
}

/* Whether s is well-formed UTF-8 (no overlong forms, no surrogates, nothing
 * above U+10FFFF): protobuf readers reject string fields that are not. */
static int utf8_valid(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        unsigned c = *p;
        int n = c < 0x80             ? 0
                : (c & 0xE0) == 0xC0 ? 1
                : (c & 0xF0) == 0xE0 ? 2
                : (c & 0xF8) == 0xF0 ? 3
                                     : -1;
        if (n < 0) return 0;
        unsigned cp = n == 0 ? c : n == 1 ? c & 0x1F : n == 2 ? c & 0x0F : c & 0x07;
        for (int i = 1; i <= n; i++) {
            if ((p[i] & 0xC0) != 0x80) return 0;
            cp = (cp << 6) | (p[i] & 0x3F);
        }
        static const unsigned min[4] = {0, 0x80, 0x800, 0x10000};
        if (cp < min[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
        p += n + 1;
    }
    return 1;
}

/* Whether text is a JSON number (RFC 8259 grammar) that a double holds. */
static int json_number(const char *t)
{
    const char *c = t;
    if (*c == '-') c++;
    if (*c == '0')
        c++;
    else if (*c >= '1' && *c <= '9')
        while (*c >= '0' && *c <= '9') c++;
    else
        return 0;
    if (*c == '.') {
        if (!(*++c >= '0' && *c <= '9')) return 0;
        while (*c >= '0' && *c <= '9') c++;
    }
    if (*c == 'e' || *c == 'E') {
        c++;
        if (*c == '+' || *c == '-') c++;
        if (!(*c >= '0' && *c <= '9')) return 0;
        while (*c >= '0' && *c <= '9') c++;
    }
    return *c == '\0' && isfinite(strtod(t, NULL));
}

/* A parameter's value as JSON: numbers and true/false as they are written,
 * anything else as a string. */
static char *param_json(pool *p, const char *text)
{
    if (json_number(text) || strcmp(text, "true") == 0 || strcmp(text, "false") == 0)
        return pool_keep(p, d5_strdup(text, "W&B config value"));
    json_t *j = json_string(text);
    char *s = j ? json_dumps(j, JSON_ENCODE_ANY) : NULL;
    json_decref(j);
    return pool_keep_json(p, s);
}

/* The shortest decimal text that reads back as v (v is finite). */
static char *double_json(pool *p, double v)
{
    char buf[40];
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, v);
        if (strtod(buf, NULL) == v) break;
    }
    return pool_keep(p, d5_strdup(buf, "W&B number"));
}

static char *int_json(pool *p, long long v)
{
    char buf[24];
    snprintf(buf, sizeof buf, "%lld", v);
    return pool_keep(p, d5_strdup(buf, "W&B number"));
}

/* ---- The record file ---- */

typedef struct wbuf {
    uint8_t *p;
    size_t n, cap;
} wbuf;

static int wbuf_put(wbuf *b, const void *data, size_t len)
{
    if (d5_grow(&b->p, &b->cap, b->n + len, 1, "W&B run file") != D5_OK) return 0;
    if (len) memcpy(b->p + b->n, data, len);
    b->n += len;
    return 1;
}

/* Appends one record as chunks, the way datastore.py and record.go split it. */
static int put_record(wbuf *b, const uint8_t *data, size_t len)
{
    static const uint8_t zeros[CHUNK_HEADER];
    for (int first = 1;; first = 0) {
        size_t left = BLOCK - b->n % BLOCK;
        if (left < CHUNK_HEADER) {
            if (!wbuf_put(b, zeros, left)) return 0;
            left = BLOCK;
        }
        size_t room = left - CHUNK_HEADER, take = len < room ? len : room;
        int last = take == len;
        uint8_t type = first && last ? CHUNK_FULL
                       : first       ? CHUNK_FIRST
                       : last        ? CHUNK_LAST
                                     : CHUNK_MIDDLE;
        uLong crc = crc32(crc32(0L, &type, 1), data, (uInt)take);
        uint8_t h[CHUNK_HEADER] = {(uint8_t)crc,
                                   (uint8_t)(crc >> 8),
                                   (uint8_t)(crc >> 16),
                                   (uint8_t)(crc >> 24),
                                   (uint8_t)take,
                                   (uint8_t)(take >> 8),
                                   type};
        if (!wbuf_put(b, h, sizeof h) || !wbuf_put(b, data, take)) return 0;
        data += take;
        len -= take;
        if (last) return 1;
    }
}

static d5_status emit(wbuf *b, int64_t *num, D5Wandb__Record *r)
{
    r->num = ++*num;
    size_t n = d5_wandb__record__get_packed_size(r);
    uint8_t *buf = d5_alloc(n ? n : 1, "W&B record");
    if (!buf) return D5_ERR_NOMEM;
    d5_wandb__record__pack(r, buf);
    int ok = put_record(b, buf, n);
    d5_free(buf);
    return ok ? D5_OK : D5_ERR_NOMEM;
}

/* ---- Records ---- */

/* One item of a history, summary or config record. */
typedef struct item {
    const char *key;
    const char *value_json;
    const char *nested[2]; /* a two-level key instead of key */
    size_t src;            /* the summary's metric entry */
} item;

typedef struct items {
    item *v;
    size_t n, cap;
} items;

static item *items_add(items *l, const char *key, const char *value_json)
{
    if (!value_json) return NULL;
    if (d5_grow(&l->v, &l->cap, l->n + 1, sizeof *l->v, "W&B items") != D5_OK) return NULL;
    item *it = &l->v[l->n++];
    memset(it, 0, sizeof *it);
    it->key = key;
    it->value_json = value_json;
    return it;
}

/* The protobuf-c messages for the items of l: an array of structs and one of
 * pointers to them (both freed with d5_free; NULL when out of memory). */
static D5Wandb__Item **item_messages(const items *l, D5Wandb__Item **structs)
{
    D5Wandb__Item *v = d5_calloc(l->n ? l->n : 1, sizeof *v, "W&B items");
    D5Wandb__Item **ptrs = d5_calloc(l->n ? l->n : 1, sizeof *ptrs, "W&B items");
    if (!v || !ptrs) {
        d5_free(v);
        d5_free(ptrs);
        *structs = NULL;
        return NULL;
    }
    for (size_t i = 0; i < l->n; i++) {
        D5Wandb__Item init = D5_WANDB__ITEM__INIT;
        v[i] = init;
        if (l->v[i].nested[0]) {
            v[i].n_nested_key = 2;
            v[i].nested_key = (char **)l->v[i].nested;
        } else {
            v[i].key = (char *)l->v[i].key;
        }
        v[i].value_json = (char *)l->v[i].value_json;
        ptrs[i] = &v[i];
    }
    *structs = v;
    return ptrs;
}

/* Emits record r whose message list (*n, *v) holds the items of l. */
static d5_status emit_items(wbuf *b, int64_t *num, const items *l, D5Wandb__Record *r, size_t *n,
                            D5Wandb__Item ***v)
{
    D5Wandb__Item *structs = NULL, **ptrs = item_messages(l, &structs);
    d5_status s = ptrs ? D5_OK : D5_ERR_NOMEM;
    if (s == D5_OK) {
        *n = l->n;
        *v = ptrs;
        s = emit(b, num, r);
    }
    d5_free(structs);
    d5_free(ptrs);
    return s;
}

static int reserved_metric(const char *key)
{
    return strcmp(key, "_step") == 0 || strcmp(key, "_runtime") == 0 ||
           strcmp(key, "_timestamp") == 0 || strcmp(key, "_wandb") == 0;
}

/* A metric's place in the history: ordered by step, then as logged. */
typedef struct slot {
    int64_t step;
    size_t index;
} slot;

static int by_step(const void *a, const void *b)
{
    const slot *x = a, *y = b;
    if (x->step != y->step) return x->step < y->step ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

typedef struct writer {
    const d5_runlog *log;
    pool strings;
    wbuf file;
    int64_t num;
    int64_t start_ms, end_ms;
    items config, summary;
    int64_t last_step, last_ms;
    int have_rows;
} writer;

static d5_status write_history(writer *w)
{
    size_t n;
    const d5_runlog_entry *m = d5_runlog_entries(w->log, D5_RUNLOG_METRIC, &n);
    if (n == 0) return D5_OK;
    slot *order = d5_alloc(n * sizeof *order, "W&B history order");
    if (!order) return D5_ERR_NOMEM;
    for (size_t i = 0; i < n; i++) order[i] = (slot){m[i].step, i};
    qsort(order, n, sizeof *order, by_step);
    d5_status s = D5_OK;
    items row = {0};
    pool text = {0}; /* the row's values, freed once it is written */
    for (size_t a = 0; s == D5_OK && a < n;) {
        size_t b = a;
        int64_t step = m[order[a].index].step, ms = m[order[a].index].timestamp_ms;
        row.n = 0;
        pool_clear(&text);
        for (; s == D5_OK && b < n && m[order[b].index].step == step; b++) {
            const d5_runlog_entry *e = &m[order[b].index];
            if (e->timestamp_ms > ms) ms = e->timestamp_ms;
            const char *v = double_json(&text, e->value);
            size_t k = 0;
            while (k < row.n && strcmp(row.v[k].key, e->key) != 0) k++;
            if (k < row.n)
                row.v[k].value_json = v; /* logged twice at one step: the last one */
            else if (!items_add(&row, e->key, v))
                s = D5_ERR_NOMEM;
            if (s == D5_OK && !v) s = D5_ERR_NOMEM;
        }
        double runtime = (double)(ms - w->start_ms) / 1000.0;
        if (s == D5_OK &&
            (!items_add(&row, "_step", int_json(&text, step)) ||
             !items_add(&row, "_runtime", double_json(&text, runtime > 0 ? runtime : 0)) ||
             !items_add(&row, "_timestamp", double_json(&text, (double)ms / 1000.0))))
            s = D5_ERR_NOMEM;
        if (s == D5_OK) {
            D5Wandb__HistoryStep hs = D5_WANDB__HISTORY_STEP__INIT;
            hs.num = step;
            D5Wandb__HistoryRecord h = D5_WANDB__HISTORY_RECORD__INIT;
            h.step = &hs;
            D5Wandb__Record r = D5_WANDB__RECORD__INIT;
            r.record_type_case = D5_WANDB__RECORD__RECORD_TYPE_HISTORY;
            r.history = &h;
            s = emit_items(&w->file, &w->num, &row, &r, &h.n_item, &h.item);
        }
        w->last_step = step;
        w->last_ms = ms;
        w->have_rows = 1;
        a = b;
    }
    pool_free(&text);
    d5_free(row.v);
    d5_free(order);
    return s;
}

/* The summary: each metric's last logged value, then the client's own keys. */
static d5_status build_summary(writer *w)
{
    size_t n;
    const d5_runlog_entry *m = d5_runlog_entries(w->log, D5_RUNLOG_METRIC, &n);
    for (size_t i = 0; i < n; i++) {
        size_t k = 0;
        while (k < w->summary.n && strcmp(w->summary.v[k].key, m[i].key) != 0) k++;
        item *it = k < w->summary.n ? &w->summary.v[k] : items_add(&w->summary, m[i].key, "");
        if (!it) return D5_ERR_NOMEM;
        it->src = i;
    }
    for (size_t k = 0; k < w->summary.n; k++)
        if (!(w->summary.v[k].value_json = double_json(&w->strings, m[w->summary.v[k].src].value)))
            return D5_ERR_NOMEM;
    long long runtime = (w->end_ms - w->start_ms) / 1000;
    if (runtime < 0) runtime = 0;
    if (w->have_rows && (!items_add(&w->summary, "_step", int_json(&w->strings, w->last_step)) ||
                         !items_add(&w->summary, "_timestamp",
                                    double_json(&w->strings, (double)w->last_ms / 1000.0))))
        return D5_ERR_NOMEM;
    const char *rt = int_json(&w->strings, runtime);
    item *it = rt ? items_add(&w->summary, "_runtime", rt) : NULL;
    it = it ? items_add(&w->summary, NULL, rt) : NULL;
    if (!it) return D5_ERR_NOMEM;
    it->nested[0] = "_wandb";
    it->nested[1] = "runtime";
    return D5_OK;
}

static d5_status write_summary(writer *w)
{
    D5Wandb__SummaryRecord sr = D5_WANDB__SUMMARY_RECORD__INIT;
    D5Wandb__Record r = D5_WANDB__RECORD__INIT;
    r.record_type_case = D5_WANDB__RECORD__RECORD_TYPE_SUMMARY;
    r.summary = &sr;
    return emit_items(&w->file, &w->num, &w->summary, &r, &sr.n_update, &sr.update);
}

static d5_status build_config(writer *w)
{
    size_t n;
    const d5_runlog_entry *p = d5_runlog_entries(w->log, D5_RUNLOG_PARAM, &n);
    for (size_t i = 0; i < n; i++)
        if (!items_add(&w->config, p[i].key, param_json(&w->strings, p[i].text)))
            return D5_ERR_NOMEM;
    const d5_runlog_entry *t = d5_runlog_entries(w->log, D5_RUNLOG_TAG, &n);
    if (n == 0) return D5_OK;
    json_t *tags = json_object();
    int ok = tags != NULL;
    for (size_t i = 0; ok && i < n; i++) ok = d5__json_set(tags, t[i].key, json_string(t[i].text));
    char *s = ok ? json_dumps(tags, JSON_ENCODE_ANY | JSON_PRESERVE_ORDER) : NULL;
    json_decref(tags);
    return items_add(&w->config, TAGS_KEY, pool_keep_json(&w->strings, s)) ? D5_OK : D5_ERR_NOMEM;
}

static d5_status write_head(writer *w, const char *run_id, const char *project)
{
    char producer[64];
    snprintf(producer, sizeof producer, "d5 %s", d5_version());
    D5Wandb__VersionInfo vi = D5_WANDB__VERSION_INFO__INIT;
    vi.producer = producer;
    D5Wandb__HeaderRecord hr = D5_WANDB__HEADER_RECORD__INIT;
    hr.version_info = &vi;
    D5Wandb__Record r = D5_WANDB__RECORD__INIT;
    r.record_type_case = D5_WANDB__RECORD__RECORD_TYPE_HEADER;
    r.header = &hr;
    d5_status s = emit(&w->file, &w->num, &r);
    if (s != D5_OK) return s;

    D5Wandb__ConfigRecord cr = D5_WANDB__CONFIG_RECORD__INIT;
    D5Wandb__Timestamp ts = D5_WANDB__TIMESTAMP__INIT;
    ts.seconds = w->start_ms / 1000;
    ts.nanos = (int32_t)(w->start_ms % 1000) * 1000000;
    D5Wandb__RunRecord run = D5_WANDB__RUN_RECORD__INIT;
    run.run_id = (char *)run_id;
    run.project = (char *)project;
    run.display_name = (char *)d5_runlog_name(w->log);
    run.config = &cr;
    run.start_time = &ts;
    D5Wandb__Record rr = D5_WANDB__RECORD__INIT;
    rr.record_type_case = D5_WANDB__RECORD__RECORD_TYPE_RUN;
    rr.run = &run;
    return emit_items(&w->file, &w->num, &w->config, &rr, &cr.n_update, &cr.update);
}

static d5_status write_tail(writer *w)
{
    int64_t runtime = (w->end_ms - w->start_ms) / 1000;
    D5Wandb__RunExitRecord ex = D5_WANDB__RUN_EXIT_RECORD__INIT;
    ex.exit_code = d5_runlog_failed(w->log) ? 1 : 0;
    ex.runtime = (int32_t)(runtime < 0 ? 0 : runtime > INT32_MAX ? INT32_MAX : runtime);
    D5Wandb__Record r = D5_WANDB__RECORD__INIT;
    r.record_type_case = D5_WANDB__RECORD__RECORD_TYPE_EXIT;
    r.exit = &ex;
    d5_status s = emit(&w->file, &w->num, &r);
    /* The Python syncer holds the exit record back until a final record. */
    D5Wandb__FinalRecord fin = D5_WANDB__FINAL_RECORD__INIT;
    D5Wandb__Record f = D5_WANDB__RECORD__INIT;
    f.record_type_case = D5_WANDB__RECORD__RECORD_TYPE_FINAL;
    f.final = &fin;
    return s == D5_OK ? emit(&w->file, &w->num, &f) : s;
}

/* ---- files/ ---- */

/* config.yaml as the client writes it ("key:\n  value: ..."), every key and
 * value in JSON's notation, which YAML reads the same. */
static d5_status write_config_yaml(writer *w, const char *path)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    if (!m) return d5_error(D5_ERR_NOMEM, "out of memory writing the W&B config.yaml");
    d5_status s = D5_OK;
    for (size_t i = 0; s == D5_OK && i < w->config.n; i++) {
        json_t *k = json_string(w->config.v[i].key);
        char *ks = k ? json_dumps(k, JSON_ENCODE_ANY) : NULL;
        if (ks)
            fprintf(m, "%s:\n  value: %s\n", ks, w->config.v[i].value_json);
        else
            s = D5_ERR_NOMEM;
        free(ks);
        json_decref(k);
    }
    if (fclose(m) != 0 && s == D5_OK) s = D5_ERR_NOMEM;
    if (s == D5_OK) s = d5_file_write_atomic(path, buf, len);
    free(buf);
    return s;
}

/* wandb-summary.json: one object, the values as they are in the records. */
static d5_status write_summary_json(writer *w, const char *path)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    if (!m) return d5_error(D5_ERR_NOMEM, "out of memory writing the W&B wandb-summary.json");
    d5_status s = D5_OK;
    fputc('{', m);
    for (size_t i = 0; s == D5_OK && i < w->summary.n; i++) {
        const item *it = &w->summary.v[i];
        json_t *k = json_string(it->nested[0] ? it->nested[0] : it->key);
        json_t *k2 = it->nested[0] ? json_string(it->nested[1]) : NULL;
        char *ks = k ? json_dumps(k, JSON_ENCODE_ANY) : NULL;
        char *ks2 = k2 ? json_dumps(k2, JSON_ENCODE_ANY) : NULL;
        if (!ks || (it->nested[0] && !ks2))
            s = D5_ERR_NOMEM;
        else if (it->nested[0])
            fprintf(m, "%s%s: {%s: %s}", i ? ", " : "", ks, ks2, it->value_json);
        else
            fprintf(m, "%s%s: %s", i ? ", " : "", ks, it->value_json);
        free(ks);
        free(ks2);
        json_decref(k);
        json_decref(k2);
    }
    fputs("}\n", m);
    if (fclose(m) != 0 && s == D5_OK) s = D5_ERR_NOMEM;
    if (s == D5_OK) s = d5_file_write_atomic(path, buf, len);
    free(buf);
    return s;
}

/* ---- The directory ---- */

static void new_run_id(char id[ID_LEN + 1])
{
    static const char alphabet[] = "0123456789abcdefghijklmnopqrstuvwxyz";
    unsigned char b[64];
    FILE *f = fopen("/dev/urandom", "rb");
    size_t got = f ? fread(b, 1, sizeof b, f) : 0;
    if (f) fclose(f);
    d5_rng r;
    d5_rng_seed(&r, d5__wall_ns() ^ ((uint64_t)getpid() << 32) ^ d5__mono_ns());
    size_t k = 0;
    for (size_t i = 0; k < ID_LEN; i++) {
        /* Bytes below 252 (7 x 36) map evenly onto the alphabet. */
        unsigned v = i < got ? b[i] : (unsigned)d5_rng_below(&r, 252);
        if (v < 252) id[k++] = alphabet[v % 36];
    }
    id[ID_LEN] = '\0';
}

static d5_status check_inputs(const d5_runlog *log, const char *project)
{
    size_t n = strlen(project);
    if (n == 0 || n > 128 || strpbrk(project, "/\\#?%:") || !utf8_valid(project))
        return d5_error(
            D5_ERR_INVALID,
            "W&B project '%s': expected 1 to 128 bytes of UTF-8 without / \\ # ? %% :", project);
    for (const char *c = project; *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f)
            return d5_error(D5_ERR_INVALID, "W&B project name holds a control character");
    if (!utf8_valid(d5_runlog_name(log)))
        return d5_error(D5_ERR_INVALID, "W&B run name '%s' is not UTF-8", d5_runlog_name(log));
    static const char *const kinds[3] = {"parameter", "tag", "metric"};
    for (int k = D5_RUNLOG_PARAM; k <= D5_RUNLOG_METRIC; k++) {
        size_t count;
        const d5_runlog_entry *e = d5_runlog_entries(log, (d5_runlog_kind)k, &count);
        for (size_t i = 0; i < count; i++) {
            if (!utf8_valid(e[i].key) || (e[i].text && !utf8_valid(e[i].text)))
                return d5_error(D5_ERR_INVALID, "W&B run: %s '%s' is not UTF-8", kinds[k],
                                e[i].key);
            if (k == D5_RUNLOG_METRIC && reserved_metric(e[i].key))
                return d5_error(D5_ERR_INVALID,
                                "W&B run: metric '%s' is a name W&B keeps for itself "
                                "(_step, _runtime, _timestamp, _wandb)",
                                e[i].key);
            if (k == D5_RUNLOG_METRIC && e[i].step < 0)
                return d5_error(D5_ERR_INVALID,
                                "W&B run: metric '%s' has step %lld; W&B steps start at 0",
                                e[i].key, (long long)e[i].step);
            if (k == D5_RUNLOG_PARAM &&
                (strcmp(e[i].key, "_wandb") == 0 || strcmp(e[i].key, TAGS_KEY) == 0))
                return d5_error(D5_ERR_INVALID,
                                "W&B run: parameter '%s' would clash with the config key "
                                "that holds %s",
                                e[i].key,
                                strcmp(e[i].key, TAGS_KEY) == 0 ? "the tags" : "W&B's own data");
        }
    }
    return D5_OK;
}

/* The paths of one run directory while it is built. */
typedef struct paths {
    char *final, *staging, *files, *wandb_file, *config_yaml, *summary_json;
} paths;

/* Removes what was written of the staging directory (nothing is allocated
 * here, so that it works when memory has run out). */
static void remove_partial(const paths *p)
{
    unlink(p->config_yaml);
    unlink(p->summary_json);
    unlink(p->wandb_file);
    rmdir(p->files);
    rmdir(p->staging);
}

d5_status d5_runlog_write_wandb(const d5_runlog *log, const char *dir, const char *project,
                                char *run_id, size_t run_id_size)
{
    if (!log || !dir || !project)
        return d5_error(D5_ERR_INVALID, "d5_runlog_write_wandb: NULL argument");
    if (run_id && run_id_size < ID_LEN + 1)
        return d5_error(D5_ERR_INVALID, "W&B run id buffer needs %d bytes, got %zu", ID_LEN + 1,
                        run_id_size);
    d5_status s = check_inputs(log, project);
    if (s == D5_OK) s = d5_mkdirs(dir);
    if (s != D5_OK) return s;

    writer w = {0};
    w.log = log;
    w.start_ms = d5_runlog_start_ms(log);
    w.end_ms = d5_runlog_end_ms(log);
    if (w.end_ms < 0) w.end_ms = (int64_t)(d5__wall_ns() / 1000000u);

    char id[ID_LEN + 1], stamp[32], name[96], staging_name[112], file_name[32];
    new_run_id(id);
    time_t start = (time_t)(w.start_ms / 1000);
    struct tm tm;
    if (!localtime_r(&start, &tm) || strftime(stamp, sizeof stamp, "%Y%m%d_%H%M%S", &tm) == 0)
        snprintf(stamp, sizeof stamp, "19700101_000000");
    snprintf(name, sizeof name, "offline-run-%s-%s", stamp, id);
    snprintf(staging_name, sizeof staging_name, ".%s.partial", name);
    snprintf(file_name, sizeof file_name, "run-%s.wandb", id);
    paths p = {0};
    p.final = d5_path_join(dir, name);
    p.staging = d5_path_join(dir, staging_name);
    p.files = p.staging ? d5_path_join(p.staging, "files") : NULL;
    p.wandb_file = p.staging ? d5_path_join(p.staging, file_name) : NULL;
    p.config_yaml = p.files ? d5_path_join(p.files, "config.yaml") : NULL;
    p.summary_json = p.files ? d5_path_join(p.files, "wandb-summary.json") : NULL;
    int made = 0;
    if (!p.final || !p.wandb_file || !p.config_yaml || !p.summary_json) s = D5_ERR_NOMEM;
    if (s == D5_OK) {
        s = d5_mkdirs(p.files);
        made = 1;
    }

    /* The W&B header: ident, magic, version. */
    static const uint8_t header[CHUNK_HEADER] = {':', 'W', '&', 'B', 0xE1, 0xBE, 0};
    if (s == D5_OK && !wbuf_put(&w.file, header, sizeof header)) s = D5_ERR_NOMEM;
    if (s == D5_OK) s = build_config(&w);
    if (s == D5_OK) s = write_head(&w, id, project);
    if (s == D5_OK) s = write_history(&w);
    if (s == D5_OK) s = build_summary(&w);
    if (s == D5_OK) s = write_summary(&w);
    if (s == D5_OK) s = write_tail(&w);
    if (s == D5_OK) s = d5_file_write_atomic(p.wandb_file, w.file.p, w.file.n);
    if (s == D5_OK) s = write_config_yaml(&w, p.config_yaml);
    if (s == D5_OK) s = write_summary_json(&w, p.summary_json);
    if (s == D5_OK && rename(p.staging, p.final) != 0)
        s = d5_error(D5_ERR_IO, "cannot move the W&B run into '%s': %s", p.final, strerror(errno));
    if (s != D5_OK && made) remove_partial(&p);
    if (s == D5_OK && run_id) snprintf(run_id, run_id_size, "%s", id);

    d5_free(w.config.v);
    d5_free(w.summary.v);
    d5_free(w.file.p);
    pool_free(&w.strings);
    d5_free(p.final);
    d5_free(p.staging);
    d5_free(p.files);
    d5_free(p.wandb_file);
    d5_free(p.config_yaml);
    d5_free(p.summary_json);
    return s;
}
