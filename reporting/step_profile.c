/* The step profile's data and its JSON file (d5/step_profile.h). */
#include "d5/step_profile.h"

#include "json.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define SCHEMA "d5-step-profile"

d5_status d5_step_profile_alloc(d5_step_profile *p, int32_t n)
{
    if (!p || n < 0) return d5_error(D5_ERR_INVALID, "d5_step_profile_alloc: NULL or n < 0");
    size_t k = (size_t)n + 1;
    p->n = n;
    p->names = d5_calloc(k, sizeof *p->names, "step profile");
    p->elements = d5_calloc(k, sizeof *p->elements, "step profile");
    p->order = d5_calloc(k, sizeof *p->order, "step profile");
    p->ready_s = d5_calloc(k, sizeof *p->ready_s, "step profile");
    if (!p->names || !p->elements || !p->order || !p->ready_s) {
        d5_step_profile_free(p);
        return D5_ERR_NOMEM;
    }
    for (int32_t i = 0; i < n; i++) p->order[i] = i;
    p->factors = NULL;
    p->nfactors = 0;
    return D5_OK;
}

void d5_step_profile_free(d5_step_profile *p)
{
    if (!p) return;
    for (int32_t i = 0; p->names && i < p->n; i++) d5_free(p->names[i]);
    d5_free(p->names);
    d5_free(p->elements);
    d5_free(p->order);
    d5_free(p->ready_s);
    d5_free(p->factors);
    p->factors = NULL;
    p->nfactors = 0;
    p->names = NULL;
    p->elements = NULL;
    p->order = NULL;
    p->ready_s = NULL;
    p->n = 0;
}

static int bad_time(double t)
{
    return !isfinite(t) || t < 0;
}

d5_status d5_step_profile_check(const d5_step_profile *p)
{
    if (!p) return d5_error(D5_ERR_INVALID, "d5_step_profile_check: NULL profile");
    if (p->n < 1 || !p->elements || !p->order || !p->ready_s)
        return d5_error(D5_ERR_INVALID, "step profile: no parameters");
    char *seen = d5_calloc((size_t)p->n, 1, "step profile check");
    if (!seen) return D5_ERR_NOMEM;
    d5_status s = D5_OK;
    double last = 0;
    for (int32_t k = 0; s == D5_OK && k < p->n; k++) {
        int32_t i = p->order[k];
        if (i < 0 || i >= p->n)
            s = d5_error(D5_ERR_INVALID, "step profile: ready[%d] names parameter %d of %d", (int)k,
                         (int)i, (int)p->n);
        else if (seen[i]++)
            s = d5_error(D5_ERR_INVALID, "step profile: parameter %d is ready twice", (int)i);
        else if (p->elements[i] < 1)
            s = d5_error(D5_ERR_INVALID, "step profile: parameter %d has %lld elements", (int)i,
                         (long long)p->elements[i]);
        else if (bad_time(p->ready_s[k]) || p->ready_s[k] < last)
            s = d5_error(
                D5_ERR_INVALID,
                "step profile: ready[%d] at %g s, expected a time >= %g s (the one before)", (int)k,
                p->ready_s[k], last);
        else
            last = p->ready_s[k];
    }
    d5_free(seen);
    if (s != D5_OK) return s;
    const struct {
        const char *name;
        double t;
    } seq[] = {{"backward_end_s", p->backward_end_s},
               {"update_begin_s", p->update_begin_s},
               {"update_end_s", p->update_end_s},
               {"step_s", p->step_s}};
    for (size_t k = 0; k < sizeof seq / sizeof seq[0]; k++) {
        if (bad_time(seq[k].t) || seq[k].t < last)
            return d5_error(D5_ERR_INVALID, "step profile: %s is %g s, expected a time >= %g s",
                            seq[k].name, seq[k].t, last);
        last = seq[k].t;
    }
    for (int64_t k = 0; k < p->nfactors; k++)
        if (!(p->factors[k] > 0) || !isfinite(p->factors[k]))
            return d5_error(D5_ERR_INVALID, "step profile: step_factors[%lld] is %g, expected > 0",
                            (long long)k, p->factors[k]);
    if (p->steps < 1 || p->batch < 1 || p->threads < 0)
        return d5_error(D5_ERR_INVALID,
                        "step profile: %lld steps, batch %lld, %d threads: expected steps and "
                        "batch >= 1, threads >= 0",
                        (long long)p->steps, (long long)p->batch, (int)p->threads);
    return D5_OK;
}

d5_status d5_step_profile_write(const d5_step_profile *p, const char *path)
{
    if (!path) return d5_error(D5_ERR_INVALID, "d5_step_profile_write: NULL path");
    d5_status s = d5_step_profile_check(p);
    if (s != D5_OK) return s;
    json_t *doc = json_object(), *params = json_array(), *ready = json_array();
    int ok = doc && params && ready;
    ok = ok && d5__json_set(doc, "schema", json_string(SCHEMA));
    ok = ok && d5__json_set(doc, "version", json_integer(1));
    ok = ok && d5__json_set(doc, "context", d5__json_context());
    ok = ok && d5__json_set(doc, "model", json_string(p->model));
    ok = ok && d5__json_set(doc, "batch", json_integer(p->batch));
    ok = ok && d5__json_set(doc, "threads", json_integer(p->threads));
    ok = ok && d5__json_set(doc, "steps", json_integer(p->steps));
    for (int32_t i = 0; ok && i < p->n; i++) {
        json_t *e = json_object();
        ok = e && d5__json_set(e, "name", json_string(p->names[i] ? p->names[i] : "")) &&
             d5__json_set(e, "elements", json_integer(p->elements[i])) &&
             json_array_append_new(params, e) == 0;
        if (!ok) json_decref(e);
    }
    for (int32_t k = 0; ok && k < p->n; k++) {
        json_t *e = json_object();
        ok = e && d5__json_set(e, "parameter", json_integer(p->order[k])) &&
             d5__json_set(e, "s", json_real(p->ready_s[k])) && json_array_append_new(ready, e) == 0;
        if (!ok) json_decref(e);
    }
    ok = ok && json_object_set(doc, "parameters", params) == 0;
    ok = ok && json_object_set(doc, "ready", ready) == 0;
    ok = ok && d5__json_set(doc, "backward_end_s", json_real(p->backward_end_s));
    ok = ok && d5__json_set(doc, "update_begin_s", json_real(p->update_begin_s));
    ok = ok && d5__json_set(doc, "update_end_s", json_real(p->update_end_s));
    ok = ok && d5__json_set(doc, "step_s", json_real(p->step_s));
    if (p->nfactors > 0)
        ok = ok &&
             d5__json_set(doc, "step_factors", d5__json_array(p->factors, (size_t)p->nfactors));
    json_decref(params);
    json_decref(ready);
    if (!ok) {
        json_decref(doc);
        return d5_error(D5_ERR_NOMEM, "out of memory writing the step profile '%s'", path);
    }
    return d5__json_write(doc, path, JSON_INDENT(1));
}

/* ---- Reading ---- */

typedef struct reader {
    const char *path;
    d5_status s;
} reader;

static d5_status bad(reader *r, const char *what)
{
    if (r->s == D5_OK)
        r->s = d5_error(D5_ERR_FORMAT, "step profile '%s': %s (a file of d5 train --step-profile)",
                        r->path, what);
    return r->s;
}

/* o's `key` when it is an integer (or a number), else NULL and the error. */
static const json_t *need(reader *r, const json_t *o, const char *key, int integer)
{
    const json_t *v = json_object_get(o, key);
    if (integer ? json_is_integer(v) : json_is_number(v)) return v;
    char what[96];
    snprintf(what, sizeof what, "no %s \"%s\"", integer ? "integer" : "number", key);
    bad(r, what);
    return NULL;
}

static int64_t get_int(reader *r, const json_t *o, const char *key)
{
    const json_t *v = need(r, o, key, 1);
    return v ? (int64_t)json_integer_value(v) : 0;
}

static double get_num(reader *r, const json_t *o, const char *key)
{
    const json_t *v = need(r, o, key, 0);
    return v ? json_number_value(v) : 0;
}

static void read_arrays(reader *r, const json_t *doc, d5_step_profile *p)
{
    const json_t *params = json_object_get(doc, "parameters"),
                 *ready = json_object_get(doc, "ready");
    if (!json_is_array(params) || json_array_size(params) < 1 ||
        json_array_size(params) > INT32_MAX) {
        bad(r, "no array \"parameters\" of at least one parameter");
        return;
    }
    if (!json_is_array(ready) || json_array_size(ready) != json_array_size(params)) {
        bad(r, "\"ready\" must be an array with one entry a parameter");
        return;
    }
    if (d5_step_profile_alloc(p, (int32_t)json_array_size(params)) != D5_OK) {
        r->s = D5_ERR_NOMEM;
        return;
    }
    for (int32_t i = 0; r->s == D5_OK && i < p->n; i++) {
        const json_t *e = json_array_get(params, (size_t)i);
        const json_t *name = json_object_get(e, "name");
        if (!json_is_string(name)) {
            bad(r, "a parameter without a \"name\" string");
            return;
        }
        p->names[i] = d5_strdup(json_string_value(name), "step profile");
        if (!p->names[i]) r->s = D5_ERR_NOMEM;
        p->elements[i] = get_int(r, e, "elements");
    }
    for (int32_t k = 0; r->s == D5_OK && k < p->n; k++) {
        const json_t *e = json_array_get(ready, (size_t)k);
        int64_t i = get_int(r, e, "parameter");
        p->order[k] = i >= 0 && i < p->n ? (int32_t)i : -1;
        p->ready_s[k] = get_num(r, e, "s");
    }
    /* Optional: how the steps varied. */
    const json_t *f = json_object_get(doc, "step_factors");
    if (r->s != D5_OK || !f) return;
    if (!json_is_array(f)) {
        bad(r, "\"step_factors\" is not an array of numbers");
        return;
    }
    p->nfactors = (int64_t)json_array_size(f);
    p->factors = d5_alloc((size_t)(p->nfactors + 1) * sizeof *p->factors, "step profile");
    if (!p->factors) {
        r->s = D5_ERR_NOMEM;
        return;
    }
    for (int64_t k = 0; k < p->nfactors; k++) {
        const json_t *v = json_array_get(f, (size_t)k);
        if (!json_is_number(v)) {
            bad(r, "\"step_factors\" is not an array of numbers");
            return;
        }
        p->factors[k] = json_number_value(v);
    }
}

d5_status d5_step_profile_read(const char *path, d5_step_profile *out)
{
    if (!path || !out) return d5_error(D5_ERR_INVALID, "d5_step_profile_read: NULL argument");
    memset(out, 0, sizeof *out);
    d5_status s = d5_file_check_regular(path, "step profile");
    if (s != D5_OK) return s;
    json_error_t err;
    json_t *doc = json_load_file(path, 0, &err);
    if (!doc)
        return d5_error(D5_ERR_FORMAT, "step profile '%s': not JSON (line %d: %s)", path, err.line,
                        err.text);
    reader r = {path, D5_OK};
    const json_t *schema = json_object_get(doc, "schema");
    if (!json_is_string(schema) || strcmp(json_string_value(schema), SCHEMA) != 0)
        bad(&r, "\"schema\" is not \"" SCHEMA "\"");
    else if (get_int(&r, doc, "version") != 1 && r.s == D5_OK)
        bad(&r, "\"version\" is not 1, the one this d5 reads");
    const json_t *model = json_object_get(doc, "model");
    if (json_is_string(model))
        snprintf(out->model, sizeof out->model, "%s", json_string_value(model));
    if (r.s == D5_OK) {
        out->batch = get_int(&r, doc, "batch");
        out->threads = (int32_t)get_int(&r, doc, "threads");
        out->steps = get_int(&r, doc, "steps");
        out->backward_end_s = get_num(&r, doc, "backward_end_s");
        out->update_begin_s = get_num(&r, doc, "update_begin_s");
        out->update_end_s = get_num(&r, doc, "update_end_s");
        out->step_s = get_num(&r, doc, "step_s");
    }
    if (r.s == D5_OK) read_arrays(&r, doc, out);
    json_decref(doc);
    if (r.s == D5_OK) {
        d5_status c = d5_step_profile_check(out);
        if (c != D5_OK) {
            char why[512];
            snprintf(why, sizeof why, "%s", d5_last_error());
            r.s = d5_error(D5_ERR_FORMAT, "step profile '%s': %s", path, why);
        }
    }
    if (r.s != D5_OK) d5_step_profile_free(out);
    return r.s;
}
