/* Problem sizes: DeepBench CSV lists (bench/deepbench, Baidu DeepBench,
 * Apache-2.0), smoke sizes, CSV files and inline specs. */
#define _POSIX_C_SOURCE 200809L
#include "sizes.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef D5_SOURCE_DIR
#define D5_SOURCE_DIR "."
#endif
#ifndef D5_INSTALL_DATA_DIR
#define D5_INSTALL_DATA_DIR "/usr/local/share/d5"
#endif

size_family sizes_family(const char *op)
{
    if (strcmp(op, "Gemm") == 0 || strcmp(op, "MatMul") == 0) return FAMILY_GEMM;
    if (strcmp(op, "Conv") == 0) return FAMILY_CONV;
    return FAMILY_SHAPE;
}

static int is_dir(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

const char *sizes_data_dir(void)
{
    const char *env = getenv("D5_DATA_DIR");
    if (env && *env) return env;
    if (is_dir(D5_INSTALL_DATA_DIR "/deepbench")) return D5_INSTALL_DATA_DIR;
    return D5_SOURCE_DIR "/bench";
}

/* ---- A row of key=value pairs ---- */

#define ROW_MAX 16
typedef struct row {
    int n;
    char key[ROW_MAX][24];
    char val[ROW_MAX][128];
} row;

static const char *row_get(const row *r, const char *key)
{
    for (int i = 0; i < r->n; i++)
        if (strcmp(r->key[i], key) == 0) return r->val[i];
    return NULL;
}

static d5_status row_int(const row *r, const char *key, int64_t def, int required, int64_t *out,
                         const char *where)
{
    const char *v = row_get(r, key);
    if (!v) {
        if (required) return d5_error(D5_ERR_FORMAT, "%s: missing %s", where, key);
        *out = def;
        return D5_OK;
    }
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (errno || end == v || *end || x < 0 || x > (1LL << 40))
        return d5_error(D5_ERR_FORMAT, "%s: %s=%s is not a size", where, key, v);
    *out = x;
    return D5_OK;
}

static int row_trans(const row *r, const char *key)
{
    const char *v = row_get(r, key);
    return v && (v[0] == 'T' || v[0] == 't' || v[0] == '1');
}

static d5_attr *add_attr(op_case *c, const char *name, int32_t type)
{
    int k = c->nattrs++;
    snprintf(c->names[k], sizeof c->names[k], "%s", name);
    c->attrs[k] = (d5_attr){.name = c->names[k], .type = type};
    return &c->attrs[k];
}

static void add_ints(op_case *c, const char *name, const int64_t *v, int n)
{
    d5_attr *a = add_attr(c, name, D5_ATTR_INTS);
    memcpy(c->ints[c->nattrs - 1], v, (size_t)n * sizeof *v);
    a->ints = c->ints[c->nattrs - 1];
    a->count = n;
}

static void add_int(op_case *c, const char *name, int64_t v)
{
    add_attr(c, name, D5_ATTR_INT)->i = v;
}

static void add_string(op_case *c, const char *name, const char *v)
{
    d5_attr *a = add_attr(c, name, D5_ATTR_STRING);
    snprintf(c->strs[c->nattrs - 1], sizeof c->strs[0], "%s", v);
    a->s = c->strs[c->nattrs - 1];
}

/* The recurrent operators take DeepBench's RNN sizes: the cell name of
 * DeepBench's column "cell" for RNN, GRU and LSTM, NULL for other operators. */
static const char *rnn_cell(const char *op)
{
    if (strcmp(op, "RNN") == 0) return "vanilla";
    if (strcmp(op, "GRU") == 0) return "gru";
    if (strcmp(op, "LSTM") == 0) return "lstm";
    return NULL;
}

/* A row of DeepBench's RNN lists: hidden, batch, timesteps and cell (the
 * operator's when absent), with d5's optional input (input size, default
 * hidden, as DeepBench runs it) and direction (forward, reverse,
 * bidirectional). X is [timesteps, batch, input], W [D, G*hidden, input], R
 * [D, G*hidden, hidden], B [D, 2*G*hidden]. As in DeepBench, RNN's cell is
 * ReLU and GRU's the one cuDNN has (linear_before_reset = 1). */
static d5_status make_rnn_case(const char *op, const row *r, const char *where, op_case *c)
{
    int64_t h, n, t, in;
    d5_status s = row_int(r, "hidden", 0, 1, &h, where);
    if (s == D5_OK) s = row_int(r, "batch", 0, 1, &n, where);
    if (s == D5_OK) s = row_int(r, "timesteps", 0, 1, &t, where);
    if (s == D5_OK) s = row_int(r, "input", h, 0, &in, where);
    if (s != D5_OK) return s;
    if (h == 0 || n == 0 || t == 0 || in == 0)
        return d5_error(D5_ERR_FORMAT, "%s: hidden, batch, timesteps and input must be positive",
                        where);
    const char *cell = row_get(r, "cell"), *dir = row_get(r, "direction");
    if (cell && strcmp(cell, rnn_cell(op)) != 0)
        return d5_error(D5_ERR_FORMAT, "%s: cell=%s, but %s is DeepBench's cell %s", where, cell,
                        op, rnn_cell(op));
    static const char *const dirs[] = {"forward", "reverse", "bidirectional"};
    int d = 0;
    while (dir && d < 3 && strcmp(dir, dirs[d]) != 0) d++;
    if (d == 3)
        return d5_error(D5_ERR_FORMAT, "%s: direction=%s is not forward, reverse or bidirectional",
                        where, dir);
    int64_t nd = d == 2 ? 2 : 1, g = op[0] == 'R' ? 1 : op[0] == 'G' ? 3 : 4;
    c->nin = 4;
    s = d5_tensor_desc_make(D5_F32, 3, (const int64_t[]){t, n, in}, &c->in[0]);
    if (s == D5_OK) s = d5_tensor_desc_make(D5_F32, 3, (const int64_t[]){nd, g * h, in}, &c->in[1]);
    if (s == D5_OK) s = d5_tensor_desc_make(D5_F32, 3, (const int64_t[]){nd, g * h, h}, &c->in[2]);
    if (s == D5_OK) s = d5_tensor_desc_make(D5_F32, 2, (const int64_t[]){nd, 2 * g * h}, &c->in[3]);
    if (s != D5_OK) return s;
    add_int(c, "hidden_size", h);
    add_string(c, "direction", dirs[d]);
    if (g == 1) add_string(c, "activations", "Relu");
    if (g == 3) add_int(c, "linear_before_reset", 1);
    /* Weights and biases drawn as frameworks initialise them (PyTorch:
     * uniform in +-1/sqrt(hidden)): at DeepBench's sizes, weights in [-1, 1]
     * make the recurrence chaotic, and comparing two kernels would compare
     * how chaos amplifies their rounding. */
    for (int i = 1; i < 4; i++)
        c->fill[i] =
            (case_fill){.kind = FILL_RANGE, .lo = -1 / sqrt((double)h), .hi = 1 / sqrt((double)h)};
    return D5_OK;
}

static void desc2(d5_tensor_desc *d, int64_t a, int64_t b)
{
    memset(d, 0, sizeof *d);
    d->dtype = D5_F32;
    d->ndim = 2;
    d->shape[0] = a;
    d->shape[1] = b;
}

static d5_status make_case(const char *op, int32_t min_inputs, const row *r, const char *where,
                           op_case *c)
{
    memset(c, 0, sizeof *c);
    size_t used = 0;
    for (int i = 0; i < r->n && used < sizeof c->label; i++)
        if (strcmp(r->key[i], "set") != 0)
            used += (size_t)snprintf(c->label + used, sizeof c->label - used, "%s%s=%s",
                                     used ? "," : "", r->key[i], r->val[i]);
    if (rnn_cell(op)) return make_rnn_case(op, r, where, c);
    d5_status s = D5_OK;
    switch (sizes_family(op)) {
    case FAMILY_GEMM: {
        int64_t m, n, k;
        s = row_int(r, "M", 0, 1, &m, where);
        if (s == D5_OK) s = row_int(r, "N", 0, 1, &n, where);
        if (s == D5_OK) s = row_int(r, "K", 0, 1, &k, where);
        if (s != D5_OK) return s;
        int ta = row_trans(r, "a_t"), tb = row_trans(r, "b_t");
        if (strcmp(op, "MatMul") == 0) ta = tb = 0; /* MatMul has no transposes */
        c->nin = 2;
        if (ta)
            desc2(&c->in[0], k, m);
        else
            desc2(&c->in[0], m, k);
        if (tb)
            desc2(&c->in[1], n, k);
        else
            desc2(&c->in[1], k, n);
        if (strcmp(op, "Gemm") == 0) {
            add_int(c, "transA", ta);
            add_int(c, "transB", tb);
        }
        return D5_OK;
    }
    case FAMILY_CONV: {
        int64_t w, h, ch, n, k, sw, sh, pw, ph, stw, sth;
        s = row_int(r, "W", 0, 1, &w, where);
        if (s == D5_OK) s = row_int(r, "H", 0, 1, &h, where);
        if (s == D5_OK) s = row_int(r, "C", 0, 1, &ch, where);
        if (s == D5_OK) s = row_int(r, "N", 0, 1, &n, where);
        if (s == D5_OK) s = row_int(r, "K", 0, 1, &k, where);
        if (s == D5_OK) s = row_int(r, "S", 1, 1, &sw, where);
        if (s == D5_OK) s = row_int(r, "R", 1, 1, &sh, where);
        if (s == D5_OK) s = row_int(r, "pad_w", 0, 0, &pw, where);
        if (s == D5_OK) s = row_int(r, "pad_h", 0, 0, &ph, where);
        if (s == D5_OK) s = row_int(r, "wstride", 1, 0, &stw, where);
        if (s == D5_OK) s = row_int(r, "hstride", 1, 0, &sth, where);
        if (s != D5_OK) return s;
        c->nin = 2;
        int64_t x[4] = {n, ch, h, w}, wt[4] = {k, ch, sh, sw};
        s = d5_tensor_desc_make(D5_F32, 4, x, &c->in[0]);
        if (s == D5_OK) s = d5_tensor_desc_make(D5_F32, 4, wt, &c->in[1]);
        if (s != D5_OK) return s;
        add_ints(c, "pads", (const int64_t[]){ph, pw, ph, pw}, 4);
        add_ints(c, "strides", (const int64_t[]){sth, stw}, 2);
        return D5_OK;
    }
    case FAMILY_SHAPE: {
        const char *v = row_get(r, "shape");
        if (!v) return d5_error(D5_ERR_FORMAT, "%s: %s takes shape=AxBx... sizes", where, op);
        d5_tensor_desc d;
        memset(&d, 0, sizeof d);
        d.dtype = D5_F32;
        const char *p = v;
        while (*p) {
            char *end;
            errno = 0;
            long long x = strtoll(p, &end, 10);
            if (errno || end == p || x <= 0 || d.ndim == D5_MAX_DIMS || (*end && *end != 'x'))
                return d5_error(D5_ERR_FORMAT, "%s: shape=%s is not AxBx... with positive sizes",
                                where, v);
            d.shape[d.ndim++] = x;
            p = *end ? end + 1 : end;
        }
        c->nin = min_inputs < 1 ? 1 : (min_inputs > CASE_MAX_INPUTS ? CASE_MAX_INPUTS : min_inputs);
        for (int32_t i = 0; i < c->nin; i++) c->in[i] = d;
        return D5_OK;
    }
    }
    return D5_OK;
}

static d5_status push(op_case **cases, size_t *n, size_t *cap, const op_case *c)
{
    for (size_t i = 0; i < *n; i++) /* DeepBench repeats some rows */
        if (strcmp((*cases)[i].label, c->label) == 0) return D5_OK;
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 32;
        op_case *g = realloc(*cases, nc * sizeof *g);
        if (!g) return d5_error(D5_ERR_NOMEM, "out of memory reading sizes");
        *cases = g;
        *cap = nc;
    }
    case_copy(&(*cases)[(*n)++], c);
    /* Attributes point into their own case: repoint after every move. */
    for (size_t i = 0; i < *n; i++) case_copy(&(*cases)[i], &(*cases)[i]);
    return D5_OK;
}

/* Copies a key or value into a row's fixed field, refusing what does not fit. */
static d5_status put_field(char *dst, size_t cap, const char *src, const char *what,
                           const char *where)
{
    size_t len = strlen(src);
    if (len >= cap)
        return d5_error(D5_ERR_FORMAT, "%s: %s '%.40s%s' has %zu characters; at most %zu", where,
                        what, src, len > 40 ? "..." : "", len, cap - 1);
    memcpy(dst, src, len + 1);
    return D5_OK;
}

/* Splits "a=1,b=2" into a row. */
static d5_status parse_inline(const char *text, row *r, const char *where)
{
    memset(r, 0, sizeof *r);
    char buf[512];
    if (strlen(text) >= sizeof buf)
        return d5_error(D5_ERR_FORMAT, "%s: a size of %zu characters; at most %zu", where,
                        strlen(text), sizeof buf - 1);
    snprintf(buf, sizeof buf, "%s", text);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(tok, '=');
        if (!eq || eq == tok)
            return d5_error(D5_ERR_FORMAT, "%s: '%s' is not KEY=VALUE", where, tok);
        if (r->n == ROW_MAX)
            return d5_error(D5_ERR_FORMAT, "%s: more than %d KEY=VALUE fields in one size", where,
                            ROW_MAX);
        *eq = '\0';
        d5_status s = put_field(r->key[r->n], sizeof r->key[0], tok, "key", where);
        if (s == D5_OK) s = put_field(r->val[r->n], sizeof r->val[0], eq + 1, "value", where);
        if (s != D5_OK) return s;
        r->n++;
    }
    return D5_OK;
}

static d5_status load_csv(const char *op, int32_t min_inputs, const char *path, op_case **cases,
                          size_t *n, size_t *cap)
{
    d5_status rs = d5_file_check_regular(path, "sizes file");
    if (rs != D5_OK) return rs;
    FILE *f = fopen(path, "r");
    if (!f) return d5_error(D5_ERR_IO, "cannot read sizes file '%s': %s", path, strerror(errno));
    char line[1024], header[ROW_MAX][24];
    int ncols = 0, lineno = 0;
    d5_status s = D5_OK;
    while (s == D5_OK && fgets(line, sizeof line, f)) {
        lineno++;
        char where[600];
        snprintf(where, sizeof where, "%s:%d", path, lineno);
        size_t len = strlen(line);
        if (len == sizeof line - 1 && line[len - 1] != '\n' && !feof(f)) {
            s = d5_error(D5_ERR_FORMAT, "%s: the line is longer than %zu characters", where,
                         sizeof line - 2);
            break;
        }
        line[strcspn(line, "\r\n")] = '\0';
        if (!line[0] || line[0] == '#') continue;
        char *save = NULL, *tok;
        if (ncols == 0) {
            for (tok = strtok_r(line, ",", &save); tok && s == D5_OK;
                 tok = strtok_r(NULL, ",", &save)) {
                if (ncols == ROW_MAX)
                    s = d5_error(D5_ERR_FORMAT, "%s: more than %d columns", where, ROW_MAX);
                else
                    s = put_field(header[ncols++], sizeof header[0], tok, "column name", where);
            }
            continue;
        }
        row r;
        memset(&r, 0, sizeof r);
        int fields = 0;
        for (tok = strtok_r(line, ",", &save); tok && s == D5_OK;
             tok = strtok_r(NULL, ",", &save), fields++) {
            if (r.n == ncols) continue; /* counted, reported below */
            s = put_field(r.key[r.n], sizeof r.key[0], header[r.n], "column name", where);
            if (s == D5_OK) s = put_field(r.val[r.n], sizeof r.val[0], tok, "value", where);
            r.n++;
        }
        if (s != D5_OK) break;
        if (fields != ncols) {
            s = d5_error(D5_ERR_FORMAT, "%s: %d fields, the header has %d", where, fields, ncols);
            break;
        }
        const char *cell = row_get(&r, "cell");
        if (rnn_cell(op) && cell && strcmp(cell, rnn_cell(op)) != 0) continue; /* another cell's */
        op_case c;
        s = make_case(op, min_inputs, &r, where, &c);
        if (s == D5_OK) s = push(cases, n, cap, &c);
    }
    fclose(f);
    if (s == D5_OK && *n == 0 && rnn_cell(op))
        s = d5_error(D5_ERR_FORMAT, "sizes file '%s' has no rows of cell %s (%s)", path,
                     rnn_cell(op), op);
    if (s == D5_OK && *n == 0) s = d5_error(D5_ERR_FORMAT, "sizes file '%s' has no rows", path);
    return s;
}

static const char *const smoke_gemm[] = {
    "M=64,N=64,K=64,a_t=N,b_t=N", "M=128,N=96,K=256,a_t=T,b_t=N", "M=256,N=32,K=128,a_t=N,b_t=T"};
static const char *const smoke_conv[] = {
    "W=16,H=16,C=8,N=2,K=16,S=3,R=3,pad_w=1,pad_h=1,wstride=1,hstride=1",
    "W=14,H=14,C=8,N=2,K=16,S=5,R=5,pad_w=2,pad_h=2,wstride=2,hstride=2"};
/* Small enough that --gradient's finite differences (two runs per element
 * checked) take well under a second on the ref backend; larger shapes with
 * --sizes shape=AxBx... */
static const char *const smoke_shape[] = {"shape=2x16x32x32", "shape=64x1000"};
/* Small rows in DeepBench's RNN columns, for tests (the DeepBench lists start
 * at hidden 256 and take seconds on the ref backend). */
static const char *const smoke_rnn[] = {"hidden=32,batch=4,timesteps=8",
                                        "hidden=64,batch=16,timesteps=4"};

d5_status sizes_load(const char *op, int32_t min_inputs, const char *spec, op_case **cases,
                     size_t *n)
{
    *cases = NULL;
    *n = 0;
    size_t cap = 0;
    size_family fam = sizes_family(op);
    d5_status s = D5_OK;
    const char *own[16];
    size_t nown = d5_op_cases(op, own, 16);
    if (strcmp(spec, "smoke") == 0 && nown > 0) {
        for (size_t i = 0; s == D5_OK && i < nown && i < 16; i++) {
            op_case c;
            char where[96];
            snprintf(where, sizeof where, "%s's default case %zu", op, i + 1);
            s = case_spec_parse(own[i], where, &c);
            if (s == D5_OK) s = push(cases, n, &cap, &c);
        }
    } else if (strcmp(spec, "smoke") == 0) {
        const char *const *list = rnn_cell(op)         ? smoke_rnn
                                  : fam == FAMILY_GEMM ? smoke_gemm
                                  : fam == FAMILY_CONV ? smoke_conv
                                                       : smoke_shape;
        size_t count = fam == FAMILY_GEMM ? 3 : 2;
        for (size_t i = 0; s == D5_OK && i < count; i++) {
            row r;
            op_case c;
            s = parse_inline(list[i], &r, "smoke sizes");
            if (s == D5_OK) s = make_case(op, min_inputs, &r, "smoke sizes", &c);
            if (s == D5_OK) s = push(cases, n, &cap, &c);
        }
    } else if (strcmp(spec, "deepbench-train") == 0 || strcmp(spec, "deepbench-infer") == 0) {
        if (fam == FAMILY_SHAPE && !rnn_cell(op))
            return d5_error(D5_ERR_INVALID,
                            "DeepBench has sizes for Gemm, MatMul and Conv (and the recurrent "
                            "RNN, GRU and LSTM), not %s: use --sizes smoke or shape=AxBx...",
                            op);
        int train = strcmp(spec, "deepbench-train") == 0;
        char path[4096];
        snprintf(path, sizeof path, "%s/deepbench/%s_%s.csv", sizes_data_dir(),
                 rnn_cell(op)         ? "rnn"
                 : fam == FAMILY_GEMM ? "gemm"
                                      : "conv",
                 train ? "training" : "inference");
        s = load_csv(op, min_inputs, path, cases, n, &cap);
    } else if (strchr(spec, '[') && access(spec, F_OK) != 0) {
        /* case specs, "f32[4,6] i64[2]={6,4}[;...]", unless a file has that name */
        char buf[2048];
        if (strlen(spec) >= sizeof buf)
            return d5_error(D5_ERR_FORMAT, "--sizes: %zu characters; at most %zu", strlen(spec),
                            sizeof buf - 1);
        snprintf(buf, sizeof buf, "%s", spec);
        for (char *save = NULL, *one = strtok_r(buf, ";", &save); s == D5_OK && one;
             one = strtok_r(NULL, ";", &save)) {
            op_case c;
            s = case_spec_parse(one, "--sizes", &c);
            if (s == D5_OK) s = push(cases, n, &cap, &c);
        }
    } else if (strchr(spec, '=')) {
        char buf[2048];
        if (strlen(spec) >= sizeof buf)
            return d5_error(D5_ERR_FORMAT, "--sizes: %zu characters; at most %zu (use a CSV file)",
                            strlen(spec), sizeof buf - 1);
        snprintf(buf, sizeof buf, "%s", spec);
        for (char *save = NULL, *one = strtok_r(buf, ";", &save); s == D5_OK && one;
             one = strtok_r(NULL, ";", &save)) {
            row r;
            op_case c;
            s = parse_inline(one, &r, "--sizes");
            if (s == D5_OK) s = make_case(op, min_inputs, &r, "--sizes", &c);
            if (s == D5_OK) s = push(cases, n, &cap, &c);
        }
    } else {
        s = load_csv(op, min_inputs, spec, cases, n, &cap);
    }
    if (s != D5_OK) {
        free(*cases);
        *cases = NULL;
        *n = 0;
    }
    return s;
}

/* ---- Precisions ---- */

static const char *const precision_names[PREC_COUNT] = {"f32", "bf16", "f16", "i8"};

const char *precision_name(int p)
{
    return p >= 0 && p < PREC_COUNT ? precision_names[p] : "?";
}

d5_dtype precision_dtype(int p)
{
    static const d5_dtype dt[PREC_COUNT] = {D5_F32, D5_BF16, D5_F16, D5_I8};
    return p >= 0 && p < PREC_COUNT ? dt[p] : D5_DTYPE_INVALID;
}

d5_status precision_parse(const char *spec, unsigned *mask)
{
    *mask = 0;
    char buf[128];
    if (!spec[0] || strlen(spec) >= sizeof buf)
        return d5_error(D5_ERR_INVALID, "'%.40s': expected f32, bf16, f16, i8 or all", spec);
    snprintf(buf, sizeof buf, "%s", spec);
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        int p = 0;
        while (p < PREC_COUNT && strcmp(tok, precision_names[p]) != 0) p++;
        if (strcmp(tok, "all") == 0)
            *mask |= (1u << PREC_COUNT) - 1;
        else if (p < PREC_COUNT)
            *mask |= 1u << p;
        else
            return d5_error(D5_ERR_INVALID,
                            "'%s' is no precision: expected f32, bf16, f16, i8 or all (or a "
                            "comma-separated list of them)",
                            tok);
    }
    if (!*mask) return d5_error(D5_ERR_INVALID, "'%s' names no precision", spec);
    return D5_OK;
}

void sizes_in_precision(const char *op, const op_case *in, int p, op_case *out)
{
    case_copy(out, in);
    out->precision = p;
    out->op[0] = '\0';
    if (p == PREC_F32) return;
    size_family fam = sizes_family(op);
    if (p == PREC_I8 && fam == FAMILY_GEMM) {
        int64_t ta = 0, tb = 0;
        d5_attrs a = {in->attrs, in->nattrs};
        if (d5_attrs_int(&a, "transA", 0, &ta) != D5_OK) ta = 0;
        if (d5_attrs_int(&a, "transB", 0, &tb) != D5_OK) tb = 0;
        const d5_tensor_desc *da = &in->in[0], *db = &in->in[1];
        desc2(&out->in[0], ta ? da->shape[1] : da->shape[0], ta ? da->shape[0] : da->shape[1]);
        desc2(&out->in[1], tb ? db->shape[1] : db->shape[0], tb ? db->shape[0] : db->shape[1]);
        out->in[0].dtype = D5_U8;
        out->in[1].dtype = D5_I8;
        out->nin = 2;
        out->nattrs = 0;
        snprintf(out->op, sizeof out->op, "MatMulInteger");
        return;
    }
    if (p == PREC_I8 && fam == FAMILY_CONV) {
        out->in[0].dtype = D5_U8;
        out->in[1].dtype = D5_I8;
        out->nin = 2;
        snprintf(out->op, sizeof out->op, "ConvInteger");
        return;
    }
    for (int32_t i = 0; i < out->nin; i++)
        if (out->in[i].dtype == D5_F32) out->in[i].dtype = precision_dtype(p);
}

double sizes_reduction_length(const char *op, const op_case *c, const d5_tensor_desc *out0)
{
    switch (sizes_family(op)) {
    case FAMILY_GEMM: {
        /* MatMulInteger's A is [M,K]; Gemm's is [K,M] under transA. */
        d5_attrs a = {c->attrs, c->nattrs};
        int64_t ta = 0;
        if (d5_attrs_int(&a, "transA", 0, &ta) != D5_OK) ta = 0;
        const d5_tensor_desc *d = &c->in[0];
        return (double)(ta ? d->shape[d->ndim - 2] : d->shape[d->ndim - 1]);
    }
    case FAMILY_CONV: {
        const d5_tensor_desc *w = &c->in[1];
        double k = 1;
        for (int i = 1; i < w->ndim; i++) k *= (double)w->shape[i];
        return k;
    }
    case FAMILY_SHAPE: break;
    }
    int64_t n_in = d5_tensor_desc_numel(&c->in[0]), n_out = out0 ? d5_tensor_desc_numel(out0) : 0;
    return n_out > 0 && n_in > n_out ? (double)n_in / (double)n_out : 1;
}
