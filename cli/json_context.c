/* The "context" block and "schema_version" of every --json document the
 * commands write (cli.h: cli_json_write and its two companions).
 *
 * The block is core's (core/json.c: date, host, CPU, caches, load, the d5
 * build with its version, commit, compiler and library versions), the one
 * d5_results_write_json puts in every results file; this module reads it back
 * from such a file, written beside the output and removed at once, rather than
 * build a second one. It adds what a command knows: its name, a machine
 * summary, its resolved configuration and the schema version. */
#define _POSIX_C_SOURCE 200809L
#include "cli.h"

#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A hidden file beside `path` for a document on its way: ".<name>.<tag>-<pid>". */
static char *sibling(const char *path, const char *tag)
{
    const char *slash = strrchr(path, '/');
    size_t dir = slash ? (size_t)(slash - path + 1) : 0, n = strlen(path) + strlen(tag) + 32;
    char *p = malloc(n);
    if (p) snprintf(p, n, "%.*s.%s.%s-%ld", (int)dir, path, path + dir, tag, (long)getpid());
    return p;
}

/* Loads the JSON document another writer put in `tmp`, then removes it. */
static d5_status load_and_remove(const char *tmp, const char *path, json_t **out)
{
    json_error_t err;
    *out = json_load_file(tmp, 0, &err);
    unlink(tmp);
    if (!*out || !json_is_object(*out)) {
        json_decref(*out);
        *out = NULL;
        return d5_error(D5_ERR_IO, "%s: cannot read back the document written for it: %s", path,
                        err.text);
    }
    return D5_OK;
}

/* Core's context block. */
static d5_status core_context(const char *path, json_t **out)
{
    char *text = d5_report_context_text();
    json_error_t err;
    *out = text ? json_loads(text, 0, &err) : NULL;
    d5_free(text);
    if (!*out) return d5_error(D5_ERR_NOMEM, "%s: out of memory for the context block", path);
    return D5_OK;
}

/* What the machine is, in a few fields (the whole description is d5 machine's). */
static json_t *machine_summary(void)
{
    d5_machine_info m;
    if (d5_machine_query(&m) != D5_OK) return json_null();
    return json_pack("{s:s, s:s, s:s, s:i, s:i, s:I, s:f, s:s, s:i, s:s}", "cpu_model", m.cpu_model,
                     "isa", m.isa, "kernel", m.kernel, "logical_cpus", m.logical_cpus,
                     "physical_cores", m.physical_cores, "memory_bytes", (json_int_t)m.memory_bytes,
                     "tsc_ghz", m.tsc_ghz, "openblas_core", m.openblas_core, "cuda_devices",
                     m.cuda_device_count, "cuda_status", m.cuda_status);
}

/* The command line as given, from /proc/self/cmdline (NULL-separated). */
static json_t *arguments(void)
{
    json_t *a = json_array();
    FILE *f = fopen("/proc/self/cmdline", "rb");
    if (!f || !a) {
        if (f) fclose(f);
        return a;
    }
    char buf[8192];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    for (size_t i = 0; i < n; i += strlen(buf + i) + 1)
        json_array_append_new(a, json_string(buf + i));
    return a;
}

/* Every option's resolved value, typed as its kind. */
static json_t *options(const cli_spec *spec)
{
    json_t *o = json_object();
    for (size_t k = 0; o && k < spec->nopts; k++) {
        const cli_opt *op = &spec->opts[k];
        json_t *v = NULL;
        switch (op->kind) {
        case CLI_FLAG: v = json_boolean(*(int *)op->dest); break;
        case CLI_INT: v = json_integer(*(int *)op->dest); break;
        case CLI_DOUBLE: v = json_real(*(double *)op->dest); break;
        case CLI_STRING: {
            const char *s = *(const char **)op->dest;
            v = s ? json_string(s) : json_null();
            break;
        }
        }
        json_object_set_new(o, op->name, v);
    }
    if (o && spec->positional && spec->pos_value && *spec->pos_value)
        json_object_set_new(o, spec->positional, json_string(*spec->pos_value));
    return o;
}

d5_status cli_json_write(const cli_spec *spec, const char *command, json_t *doc, const char *path)
{
    if (!doc || !json_is_object(doc) || !path) {
        json_decref(doc);
        return d5_error(D5_ERR_NOMEM, "out of memory building the JSON for '%s'",
                        path ? path : "(none)");
    }
    /* Core's block, unless the document has it already (a results file). */
    json_t *own = json_object_get(doc, "context"), *ctx = NULL;
    d5_status s = D5_OK;
    if (own && json_object_get(own, "d5")) {
        ctx = json_incref(own);
    } else if ((s = core_context(path, &ctx)) == D5_OK && json_is_object(own)) {
        /* What the command put in its own block stays, beside core's. */
        const char *key;
        json_t *value;
        json_object_foreach(own, key, value) json_object_set(ctx, key, value);
    }
    if (s != D5_OK) {
        json_decref(doc);
        return s;
    }
    char name[64];
    snprintf(name, sizeof name, "d5 %s", spec ? spec->command : command ? command : "");
    json_t *config = json_pack("{s:o}", "arguments", arguments());
    if (config && spec) json_object_set_new(config, "options", options(spec));
    json_object_set_new(ctx, "schema_version", json_integer(D5_REPORT_SCHEMA_VERSION));
    json_object_set_new(ctx, "command", json_string(name));
    if (!json_object_get(ctx, "machine")) json_object_set_new(ctx, "machine", machine_summary());
    json_object_set_new(ctx, "configuration", config);
    /* schema_version and context first, then the document as it was. */
    json_t *out =
        json_pack("{s:i, s:o}", "schema_version", D5_REPORT_SCHEMA_VERSION, "context", ctx);
    const char *key;
    json_t *value;
    json_object_foreach(doc, key, value)
    {
        if (out && strcmp(key, "context") != 0 && strcmp(key, "schema_version") != 0)
            json_object_set(out, key, value);
    }
    json_decref(doc);
    char *text = out ? json_dumps(out, JSON_INDENT(2) | JSON_REAL_PRECISION(12)) : NULL;
    json_decref(out);
    if (!text) return d5_error(D5_ERR_NOMEM, "out of memory writing '%s'", path);
    size_t len = strlen(text);
    text[len] = '\n'; /* json_dumps ends at the NUL: one byte more is ours to write */
    s = d5_file_write_atomic(path, text, len + 1);
    free(text);
    return s;
}

d5_status cli_json_write_results(const cli_spec *spec, const char *command, const d5_results *r,
                                 const char *path)
{
    char *tmp = path ? sibling(path, "results") : NULL;
    if (!tmp) return d5_error(D5_ERR_NOMEM, "out of memory writing '%s'", path ? path : "");
    json_t *doc = NULL;
    d5_status s = d5_results_write_json(r, tmp);
    if (s == D5_OK) s = load_and_remove(tmp, path, &doc);
    free(tmp);
    return s == D5_OK ? cli_json_write(spec, command, doc, path) : s;
}

d5_status cli_json_amend(const cli_spec *spec, const char *command, const char *written,
                         const char *path)
{
    json_t *doc = NULL;
    d5_status s = load_and_remove(written, path, &doc);
    return s == D5_OK ? cli_json_write(spec, command, doc, path) : s;
}

char *cli_json_sibling(const char *path)
{
    return sibling(path, "part");
}

/* An option's resolved value as text, as cli_echo prints it. */
static void option_text(const cli_opt *op, char *buf, size_t size)
{
    switch (op->kind) {
    case CLI_FLAG: snprintf(buf, size, "%s", *(int *)op->dest ? "yes" : "no"); break;
    case CLI_INT: snprintf(buf, size, "%d", *(int *)op->dest); break;
    case CLI_DOUBLE: snprintf(buf, size, "%.15g", *(double *)op->dest); break;
    case CLI_STRING: {
        const char *s = *(const char **)op->dest;
        snprintf(buf, size, "%s", s ? s : "none");
        break;
    }
    }
}

d5_status cli_runlog_context(d5_runlog *log, const cli_spec *spec)
{
    if (!log || !spec) return d5_error(D5_ERR_INVALID, "cli_runlog_context: NULL argument");
    d5_status s = D5_OK;
    char buf[4096];
    for (size_t k = 0; s == D5_OK && k < spec->nopts; k++) {
        option_text(&spec->opts[k], buf, sizeof buf);
        s = d5_runlog_param(log, spec->opts[k].name, buf);
    }
    if (s == D5_OK && spec->positional && spec->pos_value && *spec->pos_value)
        s = d5_runlog_param(log, spec->positional, *spec->pos_value);
    /* The command line, as the run's description. */
    json_t *args = arguments();
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; args && i < json_array_size(args) && used < sizeof buf; i++)
        used += (size_t)snprintf(buf + used, sizeof buf - used, "%s%s", i ? " " : "",
                                 json_string_value(json_array_get(args, i)));
    json_decref(args);
    char command[64];
    snprintf(command, sizeof command, "d5 %s", spec->command);
    d5_build_info b;
    d5_build_info_get(&b);
    d5_machine_info m;
    int have_m = d5_machine_query(&m) == D5_OK;
    char cpus[32], cores[32], mem[32], schema[16];
    snprintf(schema, sizeof schema, "%d", D5_REPORT_SCHEMA_VERSION);
    snprintf(cpus, sizeof cpus, "%d", have_m ? m.logical_cpus : 0);
    snprintf(cores, sizeof cores, "%d", have_m ? m.physical_cores : 0);
    snprintf(mem, sizeof mem, "%llu", have_m ? (unsigned long long)m.memory_bytes : 0ull);
    const char *const tags[][2] = {
        {"mlflow.source.name", command},
        {"mlflow.source.git.commit", b.git_commit},
        {"mlflow.note.content", buf},
        {"d5.command_line", buf},
        {"d5.version", b.version},
        {"d5.git_commit", b.git_commit},
        {"d5.compiler", b.compiler},
        {"d5.build_type", b.build_type},
        {"d5.flags", b.flags},
        {"d5.system", b.system},
        {"d5.cuda_toolkit", b.cuda ? b.cuda_toolkit : "not built"},
        {"d5.schema_version", schema},
        {"lib.jansson", b.jansson},
        {"lib.zlib", b.zlib},
        {"lib.openblas", b.openblas},
        {"host", have_m ? m.hostname : "unknown"},
        {"machine.cpu_model", have_m ? m.cpu_model : "unknown"},
        {"machine.isa", have_m ? m.isa : "unknown"},
        {"machine.kernel", have_m ? m.kernel : "unknown"},
        {"machine.logical_cpus", cpus},
        {"machine.physical_cores", cores},
        {"machine.memory_bytes", mem},
        {"machine.cuda", have_m ? m.cuda_status : "unknown"},
    };
    for (size_t i = 0; s == D5_OK && i < sizeof tags / sizeof tags[0]; i++)
        s = d5_runlog_tag(log, tags[i][0], tags[i][1]);
    return s;
}
