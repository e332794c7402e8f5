/* bench/network: running ort_bench.js and reading its JSON line (see
 * ort_side.h). The child is started with popen; its standard output is read
 * whole, its standard error goes to a file whose last line explains a crash. */
#define _POSIX_C_SOURCE 200809L
#include "ort_side.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#define CMD_MAX 8192

/* Appends `arg` to cmd as one single-quoted shell word. */
static d5_status append_word(char *cmd, size_t *len, const char *arg)
{
    size_t n = *len;
    if (n + 3 >= CMD_MAX) goto full;
    cmd[n++] = ' ';
    cmd[n++] = '\'';
    for (const char *p = arg; *p; p++) {
        if (n + 6 >= CMD_MAX) goto full;
        if (*p == '\'') {
            memcpy(cmd + n, "'\\''", 4);
            n += 4;
        } else {
            cmd[n++] = *p;
        }
    }
    cmd[n++] = '\'';
    cmd[n] = '\0';
    *len = n;
    return D5_OK;
full:
    return d5_error(D5_ERR_INVALID, "ONNX Runtime: the node command line exceeds %d bytes",
                    CMD_MAX);
}

static d5_status append_number(char *cmd, size_t *len, double v)
{
    char buf[64];
    snprintf(buf, sizeof buf, "%.17g", v);
    return append_word(cmd, len, buf);
}

static d5_status stderr_path(const ort_side *o, char *buf, size_t size)
{
    int n = snprintf(buf, size, "%s/ort_stderr.txt", o->tmpdir);
    if (n < 0 || (size_t)n >= size)
        return d5_error(D5_ERR_INVALID, "ONNX Runtime: the folder %s has too long a name",
                        o->tmpdir);
    return D5_OK;
}

/* The last non-empty line of node's standard error, for error messages. */
static void last_stderr_line(const ort_side *o, char *buf, size_t size)
{
    char path[4096], line[1024];
    buf[0] = '\0';
    FILE *f = stderr_path(o, path, sizeof path) == D5_OK ? fopen(path, "r") : NULL;
    if (!f) return;
    while (fgets(line, sizeof line, f)) {
        size_t n = strcspn(line, "\r\n");
        line[n] = '\0';
        if (n > 0 && snprintf(buf, size, "%s", line) < 0) buf[0] = '\0';
    }
    fclose(f);
}

d5_status ort_probe(const ort_side *o)
{
    char path[4096];
    struct stat st;
    if (!o->dir)
        return d5_error(D5_ERR_NOTFOUND,
                        "no --ort-dir given (install with bench/network/install.sh DIR, then "
                        "pass --ort-dir DIR)");
    int n = snprintf(path, sizeof path, "%s/node_modules/onnxruntime-node/package.json", o->dir);
    if (n < 0 || (size_t)n >= sizeof path || stat(path, &st) != 0)
        return d5_error(D5_ERR_NOTFOUND,
                        "onnxruntime-node is not installed in %s (run bench/network/install.sh "
                        "%s)",
                        o->dir, o->dir);
    if (stat(o->script, &st) != 0)
        return d5_error(D5_ERR_NOTFOUND, "the script %s is missing", o->script);
    char cmd[CMD_MAX] = "";
    size_t len = 0;
    d5_status s = append_word(cmd, &len, o->node);
    if (s != D5_OK) return s;
    snprintf(cmd + len, sizeof cmd - len, " --version 2>/dev/null");
    FILE *p = popen(cmd, "r");
    char version[64] = "";
    if (p) {
        if (!fgets(version, sizeof version, p)) version[0] = '\0';
        int rc = pclose(p);
        if (rc != 0) version[0] = '\0';
    }
    if (version[0] != 'v')
        return d5_error(D5_ERR_NOTFOUND, "'%s --version' does not run: Node.js is unavailable",
                        o->node);
    return D5_OK;
}

/* Reads the whole stream into a NUL-terminated buffer from d5_alloc. */
static d5_status read_all(FILE *f, char **out, size_t *size)
{
    char *buf = NULL;
    size_t cap = 0, n = 0, got;
    do {
        /* Room for one more byte at least, and the NUL. */
        d5_status s = d5_grow(&buf, &cap, n + 2, 1, "ONNX Runtime output");
        if (s != D5_OK) {
            d5_free(buf);
            return s;
        }
        got = fread(buf + n, 1, cap - n - 1, f);
        n += got;
    } while (got > 0);
    buf[n] = '\0';
    *out = buf;
    *size = n;
    return D5_OK;
}

static double number_or(const json_t *obj, const char *key, double fallback)
{
    const json_t *v = json_object_get(obj, key);
    return json_is_number(v) ? json_number_value(v) : fallback;
}

/* Fills *out from the parsed JSON line. */
static d5_status parse_result(const json_t *root, ort_result *out)
{
    const json_t *samples = json_object_get(root, "samples_ns");
    if (!json_is_array(samples) || json_array_size(samples) == 0)
        return d5_error(D5_ERR_FORMAT, "ONNX Runtime: the JSON line has no samples_ns");
    out->n = json_array_size(samples);
    out->samples = d5_alloc(out->n * sizeof *out->samples, "ONNX Runtime samples");
    if (!out->samples) return D5_ERR_NOMEM;
    for (size_t i = 0; i < out->n; i++) {
        const json_t *v = json_array_get(samples, i);
        if (!json_is_number(v))
            return d5_error(D5_ERR_FORMAT, "ONNX Runtime: samples_ns[%zu] is not a number", i);
        out->samples[i] = json_number_value(v);
    }
    out->load_ms = number_or(root, "load_ms", 0);
    out->rss_before = number_or(root, "rss_before_bytes", 0);
    out->rss = number_or(root, "rss_bytes", 0);
    out->max_rss = number_or(root, "max_rss_bytes", 0);
    const json_t *version = json_object_get(root, "version");
    snprintf(out->version, sizeof out->version, "%s",
             json_is_string(version) ? json_string_value(version) : "unknown");
    const json_t *output = json_object_get(root, "output");
    if (json_is_array(output) && json_array_size(output) > 0) {
        out->noutput = json_array_size(output);
        out->output = d5_alloc(out->noutput * sizeof *out->output, "ONNX Runtime output");
        if (!out->output) return D5_ERR_NOMEM;
        for (size_t i = 0; i < out->noutput; i++)
            out->output[i] = (float)json_number_value(json_array_get(output, i));
    }
    return D5_OK;
}

static d5_status build_command(const ort_side *o, const ort_request *rq, char *cmd)
{
    size_t len = 0;
    char err[4096];
    d5_status s = append_word(cmd, &len, o->node);
    if (s == D5_OK) s = append_word(cmd, &len, o->script);
    if (s == D5_OK) s = append_word(cmd, &len, rq->model);
    if (s == D5_OK) s = append_number(cmd, &len, (double)rq->batch);
    if (s == D5_OK) s = append_number(cmd, &len, o->threads);
    if (s == D5_OK) s = append_number(cmd, &len, rq->seconds);
    if (s == D5_OK) s = append_number(cmd, &len, rq->warmup);
    if (s == D5_OK) s = append_number(cmd, &len, rq->max_reps);
    if (s == D5_OK) s = append_word(cmd, &len, "--ort-dir");
    if (s == D5_OK) s = append_word(cmd, &len, o->dir);
    if (s == D5_OK && rq->shape) s = append_word(cmd, &len, "--shape");
    if (s == D5_OK && rq->shape) s = append_word(cmd, &len, rq->shape);
    if (s == D5_OK && rq->load_only) s = append_word(cmd, &len, "--load-only");
    if (s == D5_OK && rq->ids > 0) s = append_word(cmd, &len, "--ids");
    if (s == D5_OK && rq->ids > 0) s = append_number(cmd, &len, (double)rq->ids);
    if (s == D5_OK) s = stderr_path(o, err, sizeof err);
    if (s == D5_OK && len + 4 >= CMD_MAX)
        s = d5_error(D5_ERR_INVALID, "ONNX Runtime: the node command line exceeds %d bytes",
                     CMD_MAX);
    if (s == D5_OK) {
        memcpy(cmd + len, " 2>", 4); /* "2> 'file'" redirects standard error */
        len += 3;
        s = append_word(cmd, &len, err);
    }
    return s;
}

d5_status ort_run(const ort_side *o, const ort_request *rq, ort_result *out)
{
    memset(out, 0, sizeof *out);
    char cmd[CMD_MAX] = "";
    d5_status s = build_command(o, rq, cmd);
    if (s != D5_OK) return s;
    FILE *p = popen(cmd, "r");
    if (!p) return d5_error(D5_ERR_IO, "ONNX Runtime: cannot start '%s'", o->node);
    char *text = NULL;
    size_t size = 0;
    s = read_all(p, &text, &size);
    int rc = pclose(p);
    if (s != D5_OK) return s;
    /* The JSON line is the last line that starts with '{'. */
    char *line = NULL;
    for (char *c = text; c && *c; c = strchr(c, '\n') ? strchr(c, '\n') + 1 : NULL)
        if (*c == '{') line = c;
    json_error_t jerr;
    json_t *root = line ? json_loads(line, JSON_DISABLE_EOF_CHECK, &jerr) : NULL;
    d5_free(text);
    const json_t *error = root ? json_object_get(root, "error") : NULL;
    if (json_is_string(error)) {
        s = d5_error(D5_ERR_BACKEND, "ONNX Runtime: %s", json_string_value(error));
    } else if (!json_is_object(root)) {
        char last[512];
        last_stderr_line(o, last, sizeof last);
        int code = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
        s = d5_error(D5_ERR_BACKEND, "ONNX Runtime: node exited with status %d and no JSON%s%s",
                     code, last[0] ? ": " : "", last);
    } else {
        s = parse_result(root, out);
    }
    json_decref(root);
    if (s != D5_OK) ort_result_free(out);
    return s;
}

void ort_result_free(ort_result *r)
{
    if (!r) return;
    d5_free(r->samples);
    d5_free(r->output);
    r->samples = NULL;
    r->output = NULL;
    r->n = r->noutput = 0;
}
