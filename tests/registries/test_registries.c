/* The tables that make d5 extensible agree with the files they name
 * (docs/architecture.md): every command of cli/commands.def has its file
 * cmd_<name>.c and each such file a row, `d5 --help` and README.md name every
 * command; every scheme of include/d5/dist_schemes.def has its file under
 * level3_distributed/schemes/ and its enum value, and each such file a row;
 * every backend of level0_operators/backends.def has its folder, its probe,
 * and, when built, each of its operator rows registered. The tables are read
 * as text from the source tree, as a newcomer edits them. */
#define _POSIX_C_SOURCE 200809L
#include "support.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ROWS 1024

/* One row of a table: its first two arguments, as written (quotes kept). */
typedef struct row {
    char a[64], b[96];
} row;

/* The path of a file of the source tree (static buffer). */
static const char *src(const char *fmt, const char *x, const char *y)
{
    static char path[2][512];
    static int k;
    char rel[256];
    int n = snprintf(rel, sizeof rel, fmt, x, y);
    cr_assert(n >= 0 && (size_t)n < sizeof rel, "path too long: %s", fmt);
    k ^= 1;
    n = snprintf(path[k], sizeof path[k], "%s/%s", D5_SOURCE_DIR, rel);
    cr_assert(n >= 0 && (size_t)n < sizeof path[k], "path too long: %s", rel);
    return path[k];
}

static char *read_or_fail(const char *path)
{
    char *s = slurp(path, NULL);
    cr_assert(s, "cannot read %s", path);
    return s;
}

static void copy_arg(char *dst, size_t size, const char *p, size_t n)
{
    while (n && (*p == ' ' || *p == '\n')) p++, n--;
    while (n && (p[n - 1] == ' ' || p[n - 1] == '\n')) n--;
    cr_assert_lt(n, size, "argument too long: %.*s", (int)n, p);
    memcpy(dst, p, n);
    dst[n] = '\0';
}

/* The rows "MACRO(a, b, ..." of `text` that start a line; returns the count. */
static size_t rows_of(const char *text, const char *macro, row *out, size_t max)
{
    size_t n = 0, len = strlen(macro);
    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
        if (strncmp(p, macro, len) != 0 || p[len] != '(') continue;
        const char *a = p + len + 1, *c1 = strchr(a, ','), *c2 = c1 ? strpbrk(c1 + 1, ",)") : NULL;
        cr_assert(c1 && c2, "a %s row without two arguments: %.40s", macro, p);
        cr_assert_lt(n, max);
        copy_arg(out[n].a, sizeof out[n].a, a, (size_t)(c1 - a));
        copy_arg(out[n].b, sizeof out[n].b, c1 + 1, (size_t)(c2 - c1 - 1));
        n++;
    }
    return n;
}

static int file_exists(const char *path)
{
    FILE *f = fopen(path, "r");
    if (f) fclose(f);
    return f != NULL;
}

/* Whether `text` holds `word` not followed by a letter, digit, '_' or '-'. */
static int mentions(const char *text, const char *word)
{
    size_t n = strlen(word);
    for (const char *p = strstr(text, word); p; p = strstr(p + 1, word)) {
        char c = p[n];
        if (!(c == '_' || c == '-' || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))) return 1;
    }
    return 0;
}

/* Calls f(name) for each file of folder `dir` named prefix*.c (name without ".c"). */
static size_t each_c_file(const char *dir, const char *prefix, void (*f)(const char *, void *),
                          void *ctx)
{
    DIR *d = opendir(dir);
    cr_assert(d, "cannot open %s", dir);
    size_t n = 0;
    for (struct dirent *e; (e = readdir(d));) {
        size_t len = strlen(e->d_name);
        if (len < 3 || strcmp(e->d_name + len - 2, ".c") != 0) continue;
        if (strncmp(e->d_name, prefix, strlen(prefix)) != 0) continue;
        char stem[256];
        snprintf(stem, sizeof stem, "%.*s", (int)(len - 2), e->d_name);
        f(stem, ctx);
        n++;
    }
    closedir(d);
    return n;
}

/* ---- Commands ---- */

typedef struct commands {
    row r[MAX_ROWS];
    size_t n;
} commands;

static void load_commands(commands *c)
{
    char *text = read_or_fail(src("cli/commands.def", NULL, NULL));
    c->n = rows_of(text, "D5_COMMAND", c->r, MAX_ROWS);
    free(text);
    cr_assert_gt(c->n, 0, "cli/commands.def has no D5_COMMAND row");
    for (size_t i = 0; i < c->n; i++) { /* the name without its quotes */
        size_t len = strlen(c->r[i].a);
        cr_assert(len > 2 && c->r[i].a[0] == '"' && c->r[i].a[len - 1] == '"',
                  "commands.def: the name %s is not a string", c->r[i].a);
        memmove(c->r[i].a, c->r[i].a + 1, len - 2);
        c->r[i].a[len - 2] = '\0';
    }
}

Test(registries, every_command_row_has_its_file)
{
    static commands c;
    load_commands(&c);
    for (size_t i = 0; i < c.n; i++) {
        /* "compile-op" is cmd_compile_op in cmd_compile_op.c */
        char fn[96] = "cmd_";
        for (size_t k = 0; c.r[i].a[k] && k + 5 < sizeof fn; k++)
            fn[4 + k] = c.r[i].a[k] == '-' ? '_' : c.r[i].a[k];
        cr_expect_str_eq(c.r[i].b, fn, "commands.def: command %s calls %s, expected %s", c.r[i].a,
                         c.r[i].b, fn);
        const char *path = src("cli/%s.c", c.r[i].b, NULL);
        cr_assert(file_exists(path), "commands.def: command %s has no file %s", c.r[i].a, path);
        char *text = read_or_fail(path);
        char def[160];
        snprintf(def, sizeof def, "int %s(int argc, char **argv)\n{", c.r[i].b);
        cr_expect(strstr(text, def), "%s does not define %s", path, def);
        free(text);
    }
}

static void command_file_has_row(const char *stem, void *ctx)
{
    const commands *c = ctx;
    for (size_t i = 0; i < c->n; i++)
        if (strcmp(c->r[i].b, stem) == 0) return;
    cr_expect_fail("cli/%s.c has no row in cli/commands.def", stem);
}

Test(registries, every_command_file_has_its_row)
{
    static commands c;
    load_commands(&c);
    size_t files = each_c_file(src("cli", NULL, NULL), "cmd_", command_file_has_row, &c);
    cr_expect_eq(files, c.n, "%zu cli/cmd_*.c files, %zu rows in commands.def", files, c.n);
}

Test(registries, help_and_readme_name_every_command, .timeout = D5_TIMEOUT(60))
{
    static commands c;
    load_commands(&c);
    char *out = NULL, *err = NULL;
    const char *args[] = {"--help", NULL};
    cr_assert_eq(run_d5(&out, &err, args), 0, "d5 --help: %s", err ? err : "");
    char *readme = read_or_fail(src("README.md", NULL, NULL));
    for (size_t i = 0; i < c.n; i++) {
        char line[96], cmd[96];
        snprintf(line, sizeof line, "\n  %s ", c.r[i].a);
        snprintf(cmd, sizeof cmd, "d5 %s", c.r[i].a);
        cr_expect(strstr(out, line), "d5 --help does not list %s", c.r[i].a);
        cr_expect(mentions(readme, cmd), "README.md does not mention '%s'", cmd);
    }
    free(readme);
    free(out);
    free(err);
}

/* ---- Distributed schemes ---- */

typedef struct schemes {
    row r[64];
    size_t n;
} schemes;

static void load_schemes(schemes *s)
{
    char *text = read_or_fail(src("include/d5/dist_schemes.def", NULL, NULL));
    s->n = rows_of(text, "D5_DIST_SCHEME", s->r, 64);
    free(text);
    cr_assert_gt(s->n, 0, "include/d5/dist_schemes.def has no row");
}

/* The enum, as the public header makes it from the same table. */
static const struct {
    int32_t value;
    const char *name;
} enum_values[] = {
#define D5_DIST_SCHEME(ENUM, NAME) {D5_DIST_##ENUM, #NAME},
#include "d5/dist_schemes.def"
#undef D5_DIST_SCHEME
};

Test(registries, every_scheme_row_has_its_file_and_value)
{
    static schemes s;
    load_schemes(&s);
    cr_assert_eq(s.n, (size_t)D5_DIST_SCHEME_COUNT, "%zu rows, D5_DIST_SCHEME_COUNT %d", s.n,
                 (int)D5_DIST_SCHEME_COUNT);
    cr_assert_eq(s.n, sizeof enum_values / sizeof enum_values[0]);
    for (size_t i = 0; i < s.n; i++) {
        const char *name = s.r[i].b;
        const char *path = src("level3_distributed/schemes/%s.c", name, NULL);
        cr_assert(file_exists(path), "scheme %s has no file %s", name, path);
        char *text = read_or_fail(path);
        char def[96];
        snprintf(def, sizeof def, "const d5__scheme d5__scheme_%s = {", name);
        cr_expect(strstr(text, def), "%s does not define d5__scheme_%s", path, name);
        free(text);
        cr_expect_eq(enum_values[i].value, (int32_t)i, "D5_DIST_%s is %d, its row %zu", s.r[i].a,
                     (int)enum_values[i].value, i);
        int32_t parsed = -1;
        cr_expect_eq(d5_dist_scheme_parse(name, &parsed), D5_OK, "%s: %s", name, d5_last_error());
        cr_expect_eq(parsed, (int32_t)i, "%s parsed as %d", name, (int)parsed);
        const char *back = d5_dist_scheme_name((int32_t)i);
        cr_expect(back && strcmp(back, name) == 0, "scheme %zu is named %s, its row %s", i,
                  back ? back : "(null)", name);
    }
}

static void scheme_file_has_row(const char *stem, void *ctx)
{
    const schemes *s = ctx;
    for (size_t i = 0; i < s->n; i++)
        if (strcmp(s->r[i].b, stem) == 0) return;
    cr_expect_fail("level3_distributed/schemes/%s.c has no row in d5/dist_schemes.def", stem);
}

Test(registries, every_scheme_file_has_its_row)
{
    static schemes s;
    load_schemes(&s);
    size_t files =
        each_c_file(src("level3_distributed/schemes", NULL, NULL), "", scheme_file_has_row, &s);
    cr_expect_eq(files, s.n, "%zu files in schemes/, %zu rows", files, s.n);
}

/* ---- Operator backends ---- */

static int registered(const char *op, const char *backend)
{
    for (size_t i = 0; i < d5_op_count(); i++) {
        const d5_op_desc *d = d5_op_at(i);
        if (d && strcmp(d->name, op) == 0 && strcmp(d->backend, backend) == 0) return 1;
    }
    return 0;
}

/* Every D5_OP and D5_PLUGIN_OP row of `text` for `backend` is registered;
 * returns the number of rows. */
static size_t check_op_rows(const char *text, const char *backend, const char *file)
{
    static row r[MAX_ROWS];
    size_t n = 0;
    const char *macros[] = {"D5_OP", "D5_PLUGIN_OP"};
    for (size_t m = 0; m < 2; m++) {
        size_t k = rows_of(text, macros[m], r, MAX_ROWS);
        for (size_t i = 0; i < k; i++) {
            cr_expect_str_eq(r[i].b, backend, "%s: row %s(%s, %s) in %s's list", file, macros[m],
                             r[i].a, r[i].b, backend);
            cr_expect(registered(r[i].a, r[i].b), "%s: %s on %s is not registered", file, r[i].a,
                      r[i].b);
        }
        n += k;
    }
    return n;
}

static int names_backend(const row *rows, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(rows[i].a, name) == 0) return 1;
    return 0;
}

/* Whether some .c file of `dir` (or the file `only` there) defines the
 * function `probe`. */
static int defines(const char *dir, const char *probe, const char *only)
{
    DIR *d = opendir(dir);
    if (!d) return 0;
    int found = 0;
    char def[128];
    snprintf(def, sizeof def, "int %s(char *why, size_t why_size)\n{", probe);
    for (struct dirent *e; !found && (e = readdir(d));) {
        size_t len = strlen(e->d_name);
        if (len < 3 || strcmp(e->d_name + len - 2, ".c") != 0) continue;
        if (only && strcmp(e->d_name, only) != 0) continue;
        char path[768];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        char *text = slurp(path, NULL);
        found = text && strstr(text, def);
        free(text);
    }
    closedir(d);
    return found;
}

Test(registries, every_backend_row_has_its_folder_and_operators)
{
    static row b[64];
    char *text = read_or_fail(src("level0_operators/backends.def", NULL, NULL));
    size_t n = rows_of(text, "D5_BACKEND", b, 64);
    free(text);
    cr_assert_gt(n, 0);
    cr_expect_eq(n, d5_backend_count(), "%zu rows, %zu backends registered", n, d5_backend_count());
    char *built = read_or_fail(D5_BACKENDS_OPS_DEF);
    for (size_t i = 0; i < n; i++) {
        const char *name = b[i].a, *probe = b[i].b;
        d5_backend_info info;
        cr_expect_eq(d5_backend_find(name, &info), D5_OK, "%s: %s", name, d5_last_error());
        const char *dir = src("level0_operators/%s", name, NULL);
        DIR *d = opendir(dir);
        cr_expect(d, "backend %s has no folder %s", name, dir);
        if (d) closedir(d);
        /* The probe, in its folder; for an optional backend in none/ too. */
        if (strcmp(probe, "d5__backend_always") != 0) {
            /* A plugin's probe is in its loader, <name>_plugin.c (cuda). */
            char loader[96];
            int len = snprintf(loader, sizeof loader, "%s_plugin.c", name);
            cr_assert(len > 0 && (size_t)len < sizeof loader);
            cr_expect(defines(dir, probe, NULL) ||
                          defines(src("level0_operators", NULL, NULL), probe, loader),
                      "%s defines no %s", dir, probe);
            if (file_exists(src("level0_operators/%s/backend.cmake", name, NULL)))
                cr_expect(defines(src("level0_operators/%s/none", name, NULL), probe, NULL),
                          "%s/none defines no %s for builds without it", dir, probe);
        }
        char list[160];
        int len = snprintf(list, sizeof list, "\"%s/ops_%s.def\"", name, name);
        cr_assert(len > 0 && (size_t)len < sizeof list);
        int in_build = strstr(built, list) != NULL;
        size_t rows = 0;
        if (in_build) {
            char *ops = read_or_fail(src("level0_operators/%s/ops_%s.def", name, name));
            rows = check_op_rows(ops, name, list);
            free(ops);
        } else if (strcmp(name, "ref") == 0) { /* ref's lists, by area (ops.def) */
            char *ops = read_or_fail(src("level0_operators/ops.def", NULL, NULL));
            for (const char *p = strstr(ops, "#include \"ref/"); p;
                 p = strstr(p + 1, "#include \"ref/")) {
                char file[96];
                cr_assert_eq(sscanf(p, "#include \"%95[^\"]\"", file), 1);
                char *area = read_or_fail(src("level0_operators/%s", file, NULL));
                rows += check_op_rows(area, name, file);
                free(area);
            }
            free(ops);
        }
        if (in_build || strcmp(name, "ref") == 0)
            cr_expect_eq((size_t)info.operators, rows, "backend %s: %zu rows, %d registered", name,
                         rows, (int)info.operators);
    }
    /* And every registered operator belongs to a row. */
    for (size_t i = 0; i < d5_op_count(); i++)
        cr_expect(names_backend(b, n, d5_op_at(i)->backend), "operator %s has the backend %s",
                  d5_op_at(i)->name, d5_op_at(i)->backend);
    free(built);
}
