/* Weights & Biases offline runs (d5_runlog_write_wandb), read back by an
 * independent reader: tests/scripts/check_wandb_run.py on Debian's Python,
 * which parses the record file block by block, checks every CRC, decodes the
 * records with google.protobuf and compares them with what the test logged
 * (written by the test into expected.json). */
#define _GNU_SOURCE
#include "support.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef D5_PYTHON
#define D5_PYTHON "/usr/bin/python3"
#endif

static json_t *expected; /* what the test logged, for the reader */

static void setup(void)
{
    test_dir_make();
    expected = json_pack("{s:[], s:[], s:[]}", "params", "tags", "metrics");
    cr_assert_not_null(expected);
}
static void teardown(void)
{
    test_dir_remove();
    json_decref(expected);
}

TestSuite(wandb, .init = setup, .fini = teardown, .timeout = D5_TIMEOUT(120));

/* ---- Logging, with the expectation written down beside it ---- */

static d5_runlog *new_log(const char *name)
{
    d5_runlog *log;
    cr_assert_eq(d5_runlog_create(name, &log), D5_OK);
    json_object_set_new(expected, "name", json_string(name));
    return log;
}

static void param(d5_runlog *log, const char *key, const char *value)
{
    cr_assert_eq(d5_runlog_param(log, key, value), D5_OK);
    json_array_append_new(json_object_get(expected, "params"), json_pack("[s,s]", key, value));
}

static void tag(d5_runlog *log, const char *key, const char *value)
{
    cr_assert_eq(d5_runlog_tag(log, key, value), D5_OK);
    json_array_append_new(json_object_get(expected, "tags"), json_pack("[s,s]", key, value));
}

static void metric(d5_runlog *log, const char *key, double value, int64_t step, int64_t ts)
{
    cr_assert_eq(d5_runlog_metric(log, key, value, step, ts), D5_OK);
    json_array_append_new(json_object_get(expected, "metrics"),
                          json_pack("[s,f,I,I]", key, value, (json_int_t)step, (json_int_t)ts));
}

/* The one entry of `d` (asserting there is exactly one, so that nothing else,
 * such as a staging directory, is left), as a malloc'd path. */
static char *only_entry(const char *d)
{
    DIR *h = opendir(d);
    cr_assert_not_null(h);
    char *found = NULL;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(h))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        n++;
        free(found);
        cr_assert_geq(asprintf(&found, "%s/%s", d, e->d_name), 0);
    }
    closedir(h);
    cr_assert_eq(n, 1, "%s holds %d entries, expected 1", d, n);
    return found;
}

static int entries(const char *d)
{
    DIR *h = opendir(d);
    if (!h) return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(h)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
    closedir(h);
    return n;
}

/* Runs the reader on run_dir; returns its exit status. A reader expected to
 * object (quiet) writes nothing to the test's output. */
static int run_reader_quiet(const char *run_dir, int quiet)
{
    char *exp_path;
    cr_assert_geq(asprintf(&exp_path, "%s.expected.json", test_dir), 0);
    cr_assert_eq(json_dump_file(expected, exp_path, JSON_INDENT(1) | JSON_REAL_PRECISION(17)), 0);
    fflush(NULL);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        if (quiet && !freopen("/dev/null", "w", stdout)) _exit(126);
        if (quiet && !freopen("/dev/null", "w", stderr)) _exit(126);
        execl(D5_PYTHON, D5_PYTHON, D5_WANDB_CHECK, run_dir, exp_path, (char *)NULL);
        _exit(127);
    }
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    unlink(exp_path);
    free(exp_path);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static int run_reader(const char *run_dir)
{
    return run_reader_quiet(run_dir, 0);
}

static void skip_without_python(void)
{
    if (access(D5_PYTHON, X_OK) != 0) cr_skip_test("no Debian python3 at %s", D5_PYTHON);
}

/* Writes the log as project "d5-tests" and returns the run directory. */
static char *write_run(d5_runlog *log, int failed, char id[16])
{
    d5_runlog_finish(log, failed);
    json_object_set_new(expected, "project", json_string("d5-tests"));
    json_object_set_new(expected, "failed", json_boolean(failed));
    json_object_set_new(expected, "start_ms", json_integer(d5_runlog_start_ms(log)));
    json_object_set_new(expected, "end_ms", json_integer(d5_runlog_end_ms(log)));
    d5_status s = d5_runlog_write_wandb(log, test_dir, "d5-tests", id, 16);
    cr_assert_eq(s, D5_OK, "%s: %s", d5_status_name(s), d5_last_error());
    char *run_dir = only_entry(test_dir);
    cr_assert_eq(strlen(id), 8);
    const char *base = strrchr(run_dir, '/') + 1;
    cr_assert(strncmp(base, "offline-run-", 12) == 0, "%s", base);
    cr_assert_str_eq(base + strlen(base) - 8, id);
    return run_dir;
}

/* A run `name` (skipped without python) of one loss value at its start,
 * written with `failed` and accepted by the reader; returns its folder
 * (free it) and its id. */
static char *loss_run(const char *name, double loss, int failed, char id[16])
{
    skip_without_python();
    d5_runlog *log = new_log(name);
    metric(log, "loss", loss, 0, d5_runlog_start_ms(log));
    char *run_dir = write_run(log, failed, id);
    cr_assert_eq(run_reader(run_dir), 0, "the reader rejected %s", run_dir);
    d5_runlog_free(log);
    return run_dir;
}

/* ---- Runs read back ---- */

Test(wandb, config_history_summary_and_exit_read_back)
{
    skip_without_python();
    d5_runlog *log = new_log("lenet mnist ü");
    int64_t t0 = d5_runlog_start_ms(log);
    param(log, "lr", "0.1");
    param(log, "batch", "64");
    param(log, "momentum", "-9.5e-1");
    param(log, "nesterov", "true");
    param(log, "model", "lenet");
    param(log, "version", "0.1.0");                  /* not a JSON number: a string */
    param(log, "seed", "007");                       /* nor is this */
    param(log, "note", "quotes \" and \\ and\ttab"); /* escaped in JSON and YAML */
    param(log, "lr", "0.05");                        /* replaced */
    tag(log, "host", "node-7");
    tag(log, "git_commit", "abc123");
    /* Logged out of step order, one key twice at one step, an epoch metric
     * every third step. */
    for (int step = 0; step < 9; step++) {
        metric(log, "train/loss", 2.5 / (step + 1), step, t0 + 1000 * step + 17);
        if (step % 3 == 2) metric(log, "test/accuracy", 0.9 + step * 1e-3, step, t0 + 1000 * step);
    }
    metric(log, "train/loss", 0.1, 4, t0 + 99999);
    metric(log, "lr", 0.05, 2, t0 + 2500);
    metric(log, "lr", 1.0 / 3.0, 0, t0 + 5);
    char id[16];
    char *run_dir = write_run(log, 0, id);
    cr_assert_eq(run_reader(run_dir), 0, "the reader rejected %s", run_dir);
    free(run_dir);
    d5_runlog_free(log);
}

Test(wandb, failed_run_has_exit_code_1)
{
    char id[16];
    char *run_dir = loss_run("diverged", 1e308, 1, id);
    /* The same directory read as a finished run: the reader sees exit code 1. */
    json_object_set_new(expected, "failed", json_false());
    cr_assert_eq(run_reader_quiet(run_dir, 1), 1);
    free(run_dir);
}

Test(wandb, empty_log_is_a_run_with_a_summary)
{
    skip_without_python();
    d5_runlog *log = new_log("nothing logged");
    char id[16];
    char *run_dir = write_run(log, 0, id);
    cr_assert_eq(run_reader(run_dir), 0);
    free(run_dir);
    d5_runlog_free(log);
}

/* A 100 KB parameter makes the run record span four blocks (FIRST, MIDDLE,
 * MIDDLE, LAST); 3000 history records cross block boundaries, some with a
 * FIRST chunk too short for any payload or a tail of padding. */
Test(wandb, records_across_blocks)
{
    skip_without_python();
    d5_runlog *log = new_log("long");
    char *big = malloc(100001);
    cr_assert_not_null(big);
    for (int i = 0; i < 100000; i++) big[i] = (char)('a' + i % 26);
    big[100000] = '\0';
    param(log, "big", big);
    free(big);
    int64_t t0 = d5_runlog_start_ms(log);
    for (int step = 0; step < 3000; step++) {
        metric(log, "a", step * 0.5, step, t0 + step);
        metric(log, "b", -step, step, t0 + step);
    }
    json_object_set_new(expected, "require_chunks",
                        json_pack("[s,s,s,s]", "FULL", "FIRST", "MIDDLE", "LAST"));
    char id[16];
    char *run_dir = write_run(log, 0, id);
    cr_assert_eq(run_reader(run_dir), 0);
    free(run_dir);
    d5_runlog_free(log);
}

/* ---- The bytes, checked here too ---- */

/* CRC-32 (IEEE), bit by bit. */
static uint32_t crc32_bits(uint32_t crc, const uint8_t *p, size_t n)
{
    crc = ~crc;
    for (size_t i = 0; i < n; i++) {
        crc ^= p[i];
        for (int k = 0; k < 8; k++) crc = crc & 1 ? (crc >> 1) ^ 0xEDB88320u : crc >> 1;
    }
    return ~crc;
}

Test(wandb, header_and_first_chunk)
{
    cr_assert_eq(crc32_bits(0, (const uint8_t *)"123456789", 9), 0xCBF43926u);
    d5_runlog *log = new_log("bytes");
    char id[16];
    char *run_dir = write_run(log, 0, id);
    char *path;
    cr_assert_geq(asprintf(&path, "%s/run-%s.wandb", run_dir, id), 0);
    size_t len;
    uint8_t *b = (uint8_t *)slurp(path, &len);
    cr_assert_not_null(b);
    static const uint8_t header[7] = {':', 'W', '&', 'B', 0xE1, 0xBE, 0};
    cr_assert_gt(len, 14);
    cr_assert_arr_eq(b, header, 7);
    uint32_t crc = b[7] | b[8] << 8 | b[9] << 16 | (uint32_t)b[10] << 24;
    size_t n = b[11] | b[12] << 8;
    cr_assert_eq(b[13], 1, "the header record is one FULL chunk");
    cr_assert_leq(14 + n, len);
    cr_assert_eq(crc, crc32_bits(crc32_bits(0, &b[13], 1), &b[14], n));
    /* Record.num = 1 (field 1, varint), then the header record (field 21). */
    cr_assert_eq(b[14], 0x08);
    cr_assert_eq(b[15], 0x01);
    cr_assert_eq(b[16], 0xAA); /* (21 << 3) | 2, as a two-byte varint */
    cr_assert_eq(b[17], 0x01);
    free(b);
    free(path);
    free(run_dir);
    d5_runlog_free(log);
}

/* The chunks of a record file, walked here as LevelDB's reader does: each
 * CRC checked, no chunk across a block, zero padding where fewer than 7 bytes
 * are left. Returns the number of chunks (at most max). */
typedef struct chunk {
    size_t offset, len, pad_before;
    int type;
} chunk;

static size_t walk(const uint8_t *b, size_t len, chunk *out, size_t max)
{
    size_t pos = 7, n = 0, pad = 0;
    while (pos < len) {
        size_t left = 32768 - pos % 32768;
        if (left < 7) {
            for (size_t i = 0; i < left; i++) cr_assert_eq(b[pos + i], 0, "padding at %zu", pos);
            pad = left;
            pos += left;
            continue;
        }
        cr_assert_leq(pos + 7, len);
        size_t clen = b[pos + 4] | b[pos + 5] << 8;
        uint32_t crc = b[pos] | b[pos + 1] << 8 | b[pos + 2] << 16 | (uint32_t)b[pos + 3] << 24;
        cr_assert_leq(7 + clen, left, "chunk at %zu crosses its block", pos);
        cr_assert_leq(pos + 7 + clen, len);
        cr_assert_eq(crc, crc32_bits(crc32_bits(0, &b[pos + 6], 1), &b[pos + 7], clen),
                     "CRC of the chunk at %zu", pos);
        cr_assert_lt(n, max);
        out[n++] = (chunk){pos, clen, pad, b[pos + 6]};
        pad = 0;
        pos += 7 + clen;
    }
    return n;
}

/* Writes a run whose "pad" parameter is n bytes long and returns its file's
 * bytes (free them) and its chunks; *run_dir receives the directory. */
static uint8_t *padded_run(size_t n, chunk *c, size_t *nc, char **run_dir)
{
    d5_runlog *log = new_log("edge");
    char *pad = malloc(n + 1);
    cr_assert_not_null(pad);
    memset(pad, 'x', n);
    pad[n] = '\0';
    param(log, "pad", pad);
    free(pad);
    /* A timestamp before the start: _runtime is 0, so sizes do not vary. */
    metric(log, "loss", 0.25, 0, 1000000000000);
    char id[16], *path;
    *run_dir = write_run(log, 0, id);
    cr_assert_geq(asprintf(&path, "%s/run-%s.wandb", *run_dir, id), 0);
    size_t len;
    uint8_t *b = (uint8_t *)slurp(path, &len);
    cr_assert_not_null(b);
    *nc = walk(b, len, c, 16);
    cr_assert_geq(*nc, 3);
    free(path);
    d5_runlog_free(log);
    return b;
}

/* The run record made to end k = 0 to 9 bytes before the end of the first
 * block: the next record then starts a new block (0), after zero padding (1 to
 * 6), with an empty FIRST chunk (7), or with a short FIRST chunk (8, 9). The
 * run record's start time takes 0 to 5 bytes depending on its millisecond, so
 * the length is found by trial. */
Test(wandb, records_at_a_block_boundary)
{
    size_t n = 32000;
    for (int k = 0; k <= 9; k++) {
        chunk c[16];
        size_t nc, end = 0;
        char *run_dir = NULL;
        uint8_t *b = NULL;
        for (int attempt = 0; attempt < 40; attempt++) {
            free(b);
            if (run_dir) rmtree(run_dir);
            free(run_dir);
            b = padded_run(n, c, &nc, &run_dir);
            /* A run record too long for the block is split: step back. */
            end = c[1].type == 1 ? c[1].offset + 7 + c[1].len : 32768 + 8;
            if (end == 32768 - (size_t)k) break;
            n = n + 32768 - (size_t)k - end;
        }
        cr_assert_eq(end, 32768 - (size_t)k, "k=%d: the run record ends at %zu", k, end);
        cr_assert_eq(c[2].pad_before, k >= 1 && k <= 6 ? (size_t)k : 0, "k=%d", k);
        cr_assert_eq(c[2].type, k >= 7 ? 2 : 1, "k=%d: chunk type %d", k, c[2].type);
        if (k >= 7) cr_assert_eq(c[2].len, (size_t)k - 7, "k=%d", k);
        if (k >= 7) cr_assert_eq(c[3].type, 4, "k=%d: LAST follows", k);
        if ((k == 0 || k == 3 || k == 7) && access(D5_PYTHON, X_OK) == 0)
            cr_assert_eq(run_reader(run_dir), 0, "k=%d", k);
        free(b);
        rmtree(run_dir);
        free(run_dir);
        json_decref(expected);
        expected = json_pack("{s:[], s:[], s:[]}", "params", "tags", "metrics");
    }
}

/* One changed payload byte: the reader must notice (the CRC). */
Test(wandb, reader_detects_a_corrupt_byte)
{
    char id[16];
    char *run_dir = loss_run("corrupt", 1.0, 0, id);
    char *path;
    cr_assert_geq(asprintf(&path, "%s/run-%s.wandb", run_dir, id), 0);
    FILE *f = fopen(path, "r+b");
    cr_assert_not_null(f);
    cr_assert_eq(fseek(f, 20, SEEK_SET), 0);
    int c = fgetc(f);
    cr_assert_eq(fseek(f, 20, SEEK_SET), 0);
    fputc(c ^ 0x40, f);
    fclose(f);
    cr_assert_eq(run_reader_quiet(run_dir, 1), 1);
    free(path);
    free(run_dir);
}

/* ---- Refusals: a status, a message, nothing left behind ---- */

static void refused(const d5_runlog *log, const char *project, const char *needle)
{
    char id[16];
    d5_status s = d5_runlog_write_wandb(log, test_dir, project, id, sizeof id);
    cr_assert_eq(s, D5_ERR_INVALID, "project '%s': %s", project, d5_status_name(s));
    cr_assert(strstr(d5_last_error(), needle), "message '%s' lacks '%s'", d5_last_error(), needle);
    cr_assert_eq(entries(test_dir), 0, "something was left in %s", test_dir);
}

Test(wandb, bad_inputs_are_refused)
{
    d5_runlog *log = new_log("ok");
    char id[16];
    cr_assert_eq(d5_runlog_write_wandb(NULL, test_dir, "p", id, sizeof id), D5_ERR_INVALID);
    cr_assert_eq(d5_runlog_write_wandb(log, NULL, "p", id, sizeof id), D5_ERR_INVALID);
    cr_assert_eq(d5_runlog_write_wandb(log, test_dir, NULL, id, sizeof id), D5_ERR_INVALID);
    cr_assert_eq(d5_runlog_write_wandb(log, test_dir, "p", id, 8), D5_ERR_INVALID);
    cr_assert(strstr(d5_last_error(), "9 bytes"), "%s", d5_last_error());
    refused(log, "", "W&B project ''");
    refused(log, "team/project", "team/project");
    refused(log, "what?", "what?");
    refused(log, "50%", "50%");
    char longname[130];
    memset(longname, 'p', 129);
    longname[129] = '\0';
    refused(log, longname, "1 to 128 bytes");
    refused(log, "bad\xff", "W&B project");
    d5_runlog_free(log);

    struct {
        const char *kind, *key, *value;
        int64_t step;
        const char *needle;
    } cases[] = {
        {"metric", "_step", NULL, 0, "'_step' is a name W&B keeps"},
        {"metric", "_wandb", NULL, 0, "'_wandb'"},
        {"metric", "loss", NULL, -1, "step -1"},
        {"metric", "l\xc3", NULL, 0, "is not UTF-8"},
        {"metric", "\xc0\xaf", NULL, 0, "is not UTF-8"},     /* overlong '/' */
        {"metric", "\xed\xa0\x80", NULL, 0, "is not UTF-8"}, /* a surrogate */
        {"param", "d5_tags", "x", 0, "clash with the config key that holds the tags"},
        {"param", "_wandb", "x", 0, "W&B's own data"},
        {"tag", "host", "\xff", 0, "tag 'host' is not UTF-8"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cr_assert_eq(d5_runlog_create("case", &log), D5_OK);
        d5_status s = !strcmp(cases[i].kind, "metric")
                          ? d5_runlog_metric(log, cases[i].key, 1.0, cases[i].step, -1)
                      : !strcmp(cases[i].kind, "param")
                          ? d5_runlog_param(log, cases[i].key, cases[i].value)
                          : d5_runlog_tag(log, cases[i].key, cases[i].value);
        cr_assert_eq(s, D5_OK);
        refused(log, "p", cases[i].needle);
        d5_runlog_free(log);
    }
    cr_assert_eq(d5_runlog_create("bad name \xfe", &log), D5_OK);
    refused(log, "p", "run name");
    d5_runlog_free(log);
}

Test(wandb, unwritable_directory_is_an_io_error)
{
    d5_runlog *log = new_log("io");
    char *file;
    cr_assert_geq(asprintf(&file, "%s/plain-file", test_dir), 0);
    FILE *f = fopen(file, "w");
    cr_assert_not_null(f);
    fclose(f);
    char id[16] = "unchanged";
    d5_status s = d5_runlog_write_wandb(log, file, "p", id, sizeof id);
    cr_assert_eq(s, D5_ERR_IO, "%s", d5_status_name(s));
    cr_assert(strstr(d5_last_error(), file), "%s", d5_last_error());
    cr_assert_str_eq(id, "unchanged");
    free(file);
    d5_runlog_free(log);
}

/* Every allocation failing in turn: D5_ERR_NOMEM, no block kept, no directory
 * left; with enough memory, a complete run. */
Test(wandb, out_of_memory_leaves_nothing)
{
    d5_runlog *log = new_log("oom");
    int64_t t0 = d5_runlog_start_ms(log);
    param(log, "lr", "0.1");
    tag(log, "host", "h");
    for (int step = 0; step < 40; step++) metric(log, "loss", 1.0 / (step + 1), step, t0 + step);
    d5_runlog_finish(log, 0);
    d5_status s = D5_ERR_NOMEM;
    long budget = 0;
    for (; s == D5_ERR_NOMEM && budget < 5000; budget++) {
        failing_alloc_install(budget);
        char id[16];
        s = d5_runlog_write_wandb(log, test_dir, "p", id, sizeof id);
        long live = failing_alloc_live();
        failing_alloc_remove();
        cr_assert(s == D5_OK || s == D5_ERR_NOMEM, "budget %ld: %s (%s)", budget, d5_status_name(s),
                  d5_last_error());
        cr_assert_eq(live, 0, "budget %ld leaks %ld blocks", budget, live);
        if (s != D5_OK) cr_assert_eq(entries(test_dir), 0, "budget %ld left files behind", budget);
    }
    cr_assert_eq(s, D5_OK);
    cr_assert_gt(budget, 10, "only %ld allocations", budget);
    free(only_entry(test_dir));
    d5_runlog_free(log);
}
