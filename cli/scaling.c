/* d5 scaling: reading the runs' JSON, the modelled rows, the table and the
 * output files; see scaling.h. */
#define _POSIX_C_SOURCE 200809L
#include "scaling.h"

#include "d5/distributed.h"
#include "d5/report.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A JSON number (integer or real) or NaN: null, absent, another type. */
static double number(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

static scaling_stat read_stat(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    scaling_stat s = {number(v, "median"), number(v, "ci_low"), number(v, "ci_high")};
    return s;
}

static void text(const json_t *o, const char *key, char *buf, size_t size)
{
    const json_t *v = json_object_get(o, key);
    snprintf(buf, size, "%s", json_is_string(v) ? json_string_value(v) : "");
}

d5_status scaling_row_read(const char *path, scaling_row *out)
{
    json_error_t err;
    json_t *root = json_load_file(path, 0, &err);
    if (!root) return d5_error(err.line <= 0 ? D5_ERR_IO : D5_ERR_FORMAT, "%s: %s", path, err.text);
    const json_t *d = json_object_get(root, "distributed");
    d5_status s = D5_OK;
    if (!json_is_object(d))
        s = d5_error(D5_ERR_FORMAT,
                     "%s has no \"distributed\" object: does this d5 train take --distributed?",
                     path);
    scaling_row r;
    memset(&r, 0, sizeof r);
    if (s == D5_OK) {
        double ranks = number(d, "ranks");
        r.ranks = isfinite(ranks) ? (int64_t)ranks : 0;
        r.workers = number(d, "workers");
        r.servers = number(d, "servers");
        r.global_batch = number(d, "global_batch");
        r.local_batch = number(d, "local_batch");
        r.steps = number(d, "steps");
        const json_t *o = json_object_get(d, "oversubscribed");
        r.oversubscribed = json_is_boolean(o) ? json_is_true(o) : -1;
        r.samples_per_s = number(d, "samples_per_second");
        r.step = read_stat(d, "step_time_s");
        r.compute = read_stat(d, "compute_time_s");
        r.comm = read_stat(d, "exposed_comm_s");
        r.gradient_bytes = number(d, "gradient_bytes");
        r.sent_per_step = number(d, "bytes_sent_per_step");
        r.recv_per_step = number(d, "bytes_recv_per_step");
        text(d, "scheme", r.scheme, sizeof r.scheme);
        text(d, "comm", r.comm_backend, sizeof r.comm_backend);
        r.speedup = r.efficiency = r.comm_share = NAN;
        if (r.ranks < 1 || !(r.samples_per_s >= 0) || !(r.step.median >= 0))
            s = d5_error(D5_ERR_FORMAT,
                         "%s: \"distributed\" needs \"ranks\" (at least 1), "
                         "\"samples_per_second\" and \"step_time_s\".median (numbers)",
                         path);
    }
    json_decref(root);
    if (s == D5_OK) *out = r;
    return s;
}

/* alpha and beta from the context of a `d5 pingpong --fit --json` file. */
/* The number `key` of the context, or NaN. */
static double ctx_number(json_t *c, const char *key)
{
    json_t *v = json_object_get(c, key);
    return json_is_number(v) && isfinite(json_number_value(v)) ? json_number_value(v) : NAN;
}

d5_status scaling_fit_read(const char *path, scaling_fit *out)
{
    memset(out, 0, sizeof *out);
    json_error_t err;
    json_t *root = json_load_file(path, 0, &err);
    if (!root) return d5_error(err.line <= 0 ? D5_ERR_IO : D5_ERR_FORMAT, "%s: %s", path, err.text);
    json_t *c = json_object_get(root, "context");
    d5_status s = D5_OK;
    double nseg = ctx_number(c, "exchange_segments");
    out->alpha_s = ctx_number(c, "alpha_s");
    out->beta_s_per_byte = ctx_number(c, "beta_s_per_byte");
    if (nseg >= 1 && nseg <= D5_PIECEWISE_MAX) {
        /* d5 pingpong --exchange --fit: the piecewise model of a ring's step. */
        char key[64];
        out->piecewise = 1;
        out->exchange.nseg = (int32_t)nseg;
        for (int32_t k = 0; k < out->exchange.nseg; k++) {
            snprintf(key, sizeof key, "exchange_%d_from_bytes", (int)k);
            out->exchange.from_bytes[k] = ctx_number(c, key);
            snprintf(key, sizeof key, "exchange_%d_alpha_s", (int)k);
            out->exchange.alpha_s[k] = ctx_number(c, key);
            snprintf(key, sizeof key, "exchange_%d_beta_s_per_byte", (int)k);
            out->exchange.beta_s_per_byte[k] = ctx_number(c, key);
            if (!isfinite(out->exchange.from_bytes[k] + out->exchange.alpha_s[k] +
                          out->exchange.beta_s_per_byte[k]))
                s = d5_error(D5_ERR_FORMAT, "%s: segment %d of the exchange's fit is incomplete",
                             path, (int)k);
        }
        out->reduce.alpha_s = ctx_number(c, "reduce_alpha_s");
        out->reduce.beta_s_per_byte = ctx_number(c, "reduce_s_per_byte");
        if (s == D5_OK && !isfinite(out->reduce.alpha_s + out->reduce.beta_s_per_byte))
            s = d5_error(D5_ERR_FORMAT, "%s: no context.reduce_alpha_s and reduce_s_per_byte",
                         path);
    } else if (!isfinite(out->alpha_s) || !isfinite(out->beta_s_per_byte)) {
        s = d5_error(D5_ERR_FORMAT,
                     "%s: no numbers context.alpha_s and context.beta_s_per_byte, nor a "
                     "piecewise fit: write it with mpirun -n 2 d5 pingpong --fit --json FILE (or "
                     "--exchange --fit)",
                     path);
    }
    json_decref(root);
    return s;
}

void scaling_rows_relate(scaling_row *rows, size_t n, const scaling_row *base)
{
    double x1 = base ? base->samples_per_s : NAN;
    for (size_t i = 0; i < n; i++) {
        scaling_row *r = &rows[i];
        r->speedup = x1 > 0 ? r->samples_per_s / x1 : NAN;
        r->efficiency = r->speedup / (double)r->ranks;
        r->comm_share = r->step.median > 0 ? r->comm.median / r->step.median : NAN;
    }
}

void scaling_model_row(const scaling_model *m, int64_t ranks, double compute_s, double global_batch,
                       scaling_row *out)
{
    scaling_row r;
    memset(&r, 0, sizeof r);
    double comm = m->fit && m->fit->piecewise
                      ? d5_piecewise_ring_allreduce_s(&m->fit->exchange, &m->fit->reduce,
                                                      m->gradient_bytes, ranks)
                      : d5_alpha_beta_ring_allreduce_s(m->alpha_s, m->beta_s_per_byte,
                                                       m->gradient_bytes, ranks);
    double step = compute_s + comm;
    r.modelled = 1;
    r.ranks = ranks;
    r.workers = (double)ranks;
    r.servers = 0;
    r.global_batch = global_batch;
    r.local_batch = global_batch / (double)ranks;
    r.steps = NAN;
    r.oversubscribed = -1;
    r.samples_per_s = step > 0 ? global_batch / step : NAN;
    r.step = (scaling_stat){step, NAN, NAN};
    r.compute = (scaling_stat){compute_s, NAN, NAN};
    r.comm = (scaling_stat){comm, NAN, NAN};
    r.gradient_bytes = m->gradient_bytes;
    /* The ring's traffic per rank: 2 (P - 1) / P of the gradient each way. */
    r.sent_per_step = r.recv_per_step =
        2.0 * (double)(ranks - 1) / (double)ranks * m->gradient_bytes;
    r.speedup = r.efficiency = r.comm_share = NAN;
    snprintf(r.scheme, sizeof r.scheme, "dsgd");
    snprintf(r.comm_backend, sizeof r.comm_backend, "ring (alpha-beta)");
    *out = r;
}

/* ---- The table ---- */

static void cell(char *buf, size_t size, const char *fmt, double x)
{
    if (isfinite(x))
        snprintf(buf, size, fmt, x);
    else
        snprintf(buf, size, "-");
}

void scaling_print_header(FILE *f)
{
    fprintf(f, "# %7s %7s %7s  %-30s %11s %8s %10s %6s\n", "ranks", "workers", "batch",
            "step(ms) median [95% CI]", "samples/s", "speedup", "efficiency", "comm%");
}

void scaling_print_row(FILE *f, const scaling_row *r)
{
    char workers[24], batch[24], step[64], x[24], sp[24], eff[24], share[24];
    cell(workers, sizeof workers, "%.0f", r->workers);
    cell(batch, sizeof batch, "%.0f", r->global_batch);
    if (!isfinite(r->step.median))
        snprintf(step, sizeof step, "-");
    else if (isfinite(r->step.ci_low) && isfinite(r->step.ci_high))
        snprintf(step, sizeof step, "%.3f [%.3f, %.3f]", r->step.median * 1e3, r->step.ci_low * 1e3,
                 r->step.ci_high * 1e3);
    else
        snprintf(step, sizeof step, "%.3f", r->step.median * 1e3);
    cell(x, sizeof x, "%.1f", r->samples_per_s);
    cell(sp, sizeof sp, "%.2f", r->speedup);
    cell(eff, sizeof eff, "%.3f", r->efficiency);
    cell(share, sizeof share, "%.1f", r->comm_share * 100);
    const char *mark = r->simulated             ? "simulated"
                       : r->modelled            ? "modelled"
                       : r->oversubscribed == 1 ? "oversubscribed"
                                                : "";
    fprintf(f, "  %7lld %7s %7s  %-30s %11s %8s %10s %6s%s%s\n", (long long)r->ranks, workers,
            batch, step, x, sp, eff, share, *mark ? "  " : "", mark);
    fflush(f);
}

/* ---- Output files ---- */

static json_t *jnum(double x)
{
    return isfinite(x) ? json_real(x) : json_null();
}

/* A count (ranks, batch, steps): an integer when it is one. */
static json_t *jcount(double x)
{
    if (isfinite(x) && x == floor(x) && fabs(x) < 9e15) return json_integer((json_int_t)x);
    return jnum(x);
}

static json_t *jstat(const scaling_stat *s)
{
    return json_pack("{s:o, s:o, s:o}", "median", jnum(s->median), "ci_low", jnum(s->ci_low),
                     "ci_high", jnum(s->ci_high));
}

static json_t *row_json(const scaling_row *r)
{
    json_t *o = json_pack(
        "{s:b, s:I, s:s, s:s, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o}",
        "modelled", r->modelled, "ranks", (json_int_t)r->ranks, "scheme", r->scheme, "comm",
        r->comm_backend, "workers", jcount(r->workers), "servers", jcount(r->servers),
        "global_batch", jcount(r->global_batch), "local_batch", jcount(r->local_batch), "steps",
        jcount(r->steps), "samples_per_second", jnum(r->samples_per_s), "step_time_s",
        jstat(&r->step), "compute_time_s", jstat(&r->compute), "exposed_comm_s", jstat(&r->comm),
        "comm_share", jnum(r->comm_share), "speedup", jnum(r->speedup), "efficiency",
        jnum(r->efficiency), "gradient_bytes", jcount(r->gradient_bytes));
    if (!o) return NULL;
    json_object_set_new(o, "simulated", json_boolean(r->simulated));
    json_object_set_new(o, "oversubscribed",
                        r->oversubscribed < 0 ? json_null() : json_boolean(r->oversubscribed));
    json_object_set_new(o, "bytes_sent_per_step", jnum(r->sent_per_step));
    json_object_set_new(o, "bytes_recv_per_step", jnum(r->recv_per_step));
    return o;
}

static json_t *jtext(const char *s)
{
    return s ? json_string(s) : json_null();
}

d5_status scaling_write_json(const char *path, const scaling_context *ctx, const scaling_row *rows,
                             size_t n)
{
    d5_build_info bi;
    d5_build_info_get(&bi);
    json_t *series = json_array();
    for (size_t i = 0; series && i < n; i++) {
        json_t *r = row_json(&rows[i]);
        if (!r || json_array_append_new(series, r) != 0) {
            json_decref(series);
            series = NULL;
        }
    }
    json_t *root =
        series ? json_pack("{s:{s:s, s:i, s:s, s:s, s:s, s:s, s:o, s:b, s:o, s:o, s:o, "
                           "s:o, s:o}, s:o}",
                           "context", "command", "d5 scaling", "schema_version", 1, "d5_version",
                           bi.version, "git_commit", bi.git_commit, "mode", ctx->mode, "launcher",
                           ctx->launcher, "train_command", jtext(ctx->train_command), "complete",
                           ctx->complete, "failed_ranks",
                           ctx->failed_ranks ? json_integer(ctx->failed_ranks) : json_null(),
                           "alpha_s", jnum(ctx->alpha_s), "beta_s_per_byte", jnum(ctx->beta_s),
                           "alpha_beta_source", jtext(ctx->alpha_beta_source), "model_compute",
                           jtext(ctx->compute_source), "series", series)
               : NULL;
    char *dump = root ? json_dumps(root, JSON_INDENT(2) | JSON_REAL_PRECISION(12)) : NULL;
    json_decref(root);
    if (!dump) return d5_error(D5_ERR_NOMEM, "%s: out of memory for the JSON", path);
    d5_status s = d5_file_write_atomic(path, dump, strlen(dump));
    free(dump);
    return s;
}

/* A CSV field: the number, or empty where there is none. */
static void field(FILE *f, double x)
{
    if (isfinite(x))
        fprintf(f, ",%.9g", x);
    else
        fputc(',', f);
}

d5_status scaling_write_csv(const char *path, const scaling_row *rows, size_t n)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return d5_error(D5_ERR_NOMEM, "%s: out of memory for the CSV", path);
    fprintf(f, "modelled,ranks,scheme,workers,servers,global_batch,local_batch,oversubscribed,"
               "steps,samples_per_second,step_time_s,step_time_ci_low_s,step_time_ci_high_s,"
               "compute_time_s,exposed_comm_s,comm_share,speedup,efficiency,gradient_bytes,"
               "bytes_sent_per_step,bytes_recv_per_step\n");
    for (size_t i = 0; i < n; i++) {
        const scaling_row *r = &rows[i];
        fprintf(f, "%s,%lld,", r->modelled ? "true" : "false", (long long)r->ranks);
        d5_csv_field(f, r->scheme);
        field(f, r->workers);
        field(f, r->servers);
        field(f, r->global_batch);
        field(f, r->local_batch);
        fprintf(f, ",%s", r->oversubscribed < 0 ? "" : r->oversubscribed ? "true" : "false");
        const double v[] = {r->steps,        r->samples_per_s,  r->step.median,    r->step.ci_low,
                            r->step.ci_high, r->compute.median, r->comm.median,    r->comm_share,
                            r->speedup,      r->efficiency,     r->gradient_bytes, r->sent_per_step,
                            r->recv_per_step};
        for (size_t k = 0; k < sizeof v / sizeof v[0]; k++) field(f, v[k]);
        fputc('\n', f);
    }
    if (fclose(f) != 0) {
        free(buf);
        return d5_error(D5_ERR_NOMEM, "%s: out of memory for the CSV", path);
    }
    d5_status s = d5_file_write_atomic(path, buf, len);
    free(buf);
    return s;
}
