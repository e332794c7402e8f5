/* Case specs: an operator's inputs (types, shapes, values) and attributes in
 * one line, as the D5_OP_CASE rows of the registry and `d5 test-operator
 * --sizes` write them. The grammar is in sizes.h and docs/level0.md. */
#define _POSIX_C_SOURCE 200809L
#include "sizes.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Short type names beside d5's own ("float32"). */
static const struct {
    const char *name;
    d5_dtype dtype;
} short_types[] = {{"f32", D5_F32},   {"f64", D5_F64},   {"f16", D5_F16}, {"bf16", D5_BF16},
                   {"i8", D5_I8},     {"u8", D5_U8},     {"i16", D5_I16}, {"u16", D5_U16},
                   {"i32", D5_I32},   {"u32", D5_U32},   {"i64", D5_I64}, {"u64", D5_U64},
                   {"bool", D5_BOOL}, {"str", D5_STRING}};

static d5_status parse_type(const char *name, const char *where, d5_dtype *out)
{
    for (size_t i = 0; i < sizeof short_types / sizeof short_types[0]; i++)
        if (strcmp(short_types[i].name, name) == 0) {
            *out = short_types[i].dtype;
            return D5_OK;
        }
    if (d5_dtype_parse(name, out) == D5_OK) return D5_OK;
    d5_error_clear();
    return d5_error(D5_ERR_FORMAT,
                    "%s: '%s' is no element type (f32, f64, f16, bf16, i8, u8, "
                    "i16, u16, i32, u32, i64, u64, bool, str)",
                    where, name);
}

/* Reads a bracketed list of numbers "[a,b,...]" at *p (after the opening
 * character `open`, up to `close`); *p moves past it. `ints` is cleared when
 * an element is not an integer literal. */
static d5_status parse_numbers(const char **p, char close, const char *where, const char *what,
                               double *v, int32_t max, int32_t *n, int *ints)
{
    const char *s = *p;
    *n = 0;
    *ints = 1;
    if (*s == close) {
        *p = s + 1;
        return D5_OK;
    }
    for (;;) {
        char *end;
        errno = 0;
        double x = strtod(s, &end);
        if (end == s || errno == ERANGE)
            return d5_error(D5_ERR_FORMAT, "%s: %s: expected a number at '%.20s'", where, what, s);
        if (*n == max)
            return d5_error(D5_ERR_FORMAT, "%s: %s: more than %d values", where, what, (int)max);
        for (const char *q = s; q < end; q++)
            if (*q == '.' || *q == 'e' || *q == 'E' || *q == 'n' || *q == 'i') *ints = 0;
        v[(*n)++] = x;
        s = end;
        if (*s == close) break;
        if (*s != ',')
            return d5_error(D5_ERR_FORMAT, "%s: %s: expected ',' or '%c' at '%.20s'", where, what,
                            close, s);
        s++;
    }
    *p = s + 1;
    return D5_OK;
}

/* One input: "-" or TYPE[D,...][={...}|~[lo,hi]][!]. */
static d5_status parse_input(const char *tok, const char *where, d5_tensor_desc *d, case_fill *f)
{
    memset(d, 0, sizeof *d);
    memset(f, 0, sizeof *f);
    if (strcmp(tok, "-") == 0) return D5_OK; /* omitted: D5_DTYPE_INVALID */
    const char *br = strchr(tok, '[');
    char type[16];
    if (!br || (size_t)(br - tok) >= sizeof type)
        return d5_error(D5_ERR_FORMAT, "%s: input '%s': expected TYPE[dims], as f32[2,3]", where,
                        tok);
    memcpy(type, tok, (size_t)(br - tok));
    type[br - tok] = '\0';
    d5_dtype dt;
    d5_status s = parse_type(type, where, &dt);
    if (s != D5_OK) return s;
    const char *p = br + 1;
    double dims[D5_MAX_DIMS];
    int32_t nd;
    int ints;
    s = parse_numbers(&p, ']', where, "dims", dims, D5_MAX_DIMS, &nd, &ints);
    if (s != D5_OK) return s;
    int64_t shape[D5_MAX_DIMS];
    double elements = 1;
    for (int32_t i = 0; i < nd; i++) {
        if (!ints || dims[i] < 0 || dims[i] > (double)(1LL << 40))
            return d5_error(D5_ERR_FORMAT, "%s: input '%s': dims must be sizes >= 0", where, tok);
        shape[i] = (int64_t)dims[i];
        elements *= dims[i] > 0 ? dims[i] : 1; /* every partial product counts */
    }
    if (elements > (double)(1LL << 40))
        return d5_error(D5_ERR_FORMAT, "%s: input '%s': its sizes multiply to %.3g; at most 2^40",
                        where, tok, elements);
    s = d5_tensor_desc_make(dt, nd, shape, d);
    if (s != D5_OK) return s;
    int64_t numel = d5_tensor_desc_numel(d);
    if (dt == D5_STRING && p[0] == '=' && p[1] == '{') { /* words */
        const char *close = strchr(p + 2, '}');
        size_t len = close ? (size_t)(close - (p + 2)) : 0;
        if (!close || len >= sizeof f->words)
            return d5_error(D5_ERR_FORMAT,
                            "%s: input '%s': expected ={word,...} of at most %zu "
                            "characters",
                            where, tok, sizeof f->words - 1);
        memcpy(f->words, p + 2, len);
        f->words[len] = '\0';
        f->nvalues = 1;
        for (const char *q = f->words; *q; q++) f->nvalues += *q == ',';
        if (f->nvalues != 1 && f->nvalues != numel)
            return d5_error(D5_ERR_FORMAT, "%s: input '%s' has %lld elements but %d values", where,
                            tok, (long long)numel, (int)f->nvalues);
        f->kind = FILL_VALUES;
        p = close + 1;
    } else if (p[0] == '=' && p[1] == '{') {
        p += 2;
        s = parse_numbers(&p, '}', where, "values", f->values, CASE_MAX_VALUES, &f->nvalues, &ints);
        if (s != D5_OK) return s;
        if (f->nvalues != 1 && f->nvalues != numel)
            return d5_error(D5_ERR_FORMAT, "%s: input '%s' has %lld elements but %d values", where,
                            tok, (long long)numel, (int)f->nvalues);
        /* {} of an empty tensor: nothing to fill, but known at create */
        f->kind = f->nvalues > 0 ? FILL_VALUES : FILL_DEFAULT;
        f->known = 1;
    } else if (p[0] == '~' && p[1] == '[') {
        p += 2;
        double r[2];
        int32_t n;
        s = parse_numbers(&p, ']', where, "range", r, 2, &n, &ints);
        if (s != D5_OK) return s;
        if (n != 2 || !(r[0] <= r[1]))
            return d5_error(D5_ERR_FORMAT, "%s: input '%s': expected ~[lo,hi] with lo <= hi", where,
                            tok);
        f->kind = FILL_RANGE;
        f->lo = r[0];
        f->hi = r[1];
    }
    if (*p == '!') {
        f->known = 1;
        p++;
    }
    if (!d5_dtype_is_float(dt)) f->known = 1;
    if (*p) return d5_error(D5_ERR_FORMAT, "%s: input '%s': unexpected '%s'", where, tok, p);
    return D5_OK;
}

/* Copies what `v` encloses (its first character, then `close` at its end)
 * into dst, refusing what does not fit. */
static d5_status put_enclosed(char *dst, size_t cap, const char *v, char close, const char *what,
                              const char *where, const char *tok)
{
    size_t len = strlen(v);
    if (len < 2 || v[len - 1] != close || len - 2 >= cap)
        return d5_error(D5_ERR_FORMAT, "%s: attribute '%s': %s of at most %zu characters", where,
                        tok, what, cap - 1);
    memcpy(dst, v + 1, len - 2);
    dst[len - 2] = '\0';
    return D5_OK;
}

/* One attribute: NAME=VALUE into slot k of the case. */
static d5_status parse_attr(const char *tok, const char *where, op_case *c)
{
    const char *eq = strchr(tok, '=');
    int k = c->nattrs;
    if (!eq || eq == tok || (size_t)(eq - tok) >= sizeof c->names[0])
        return d5_error(D5_ERR_FORMAT, "%s: attribute '%s' is not NAME=VALUE", where, tok);
    if (k == CASE_MAX_ATTRS)
        return d5_error(D5_ERR_FORMAT, "%s: more than %d attributes", where, CASE_MAX_ATTRS);
    memcpy(c->names[k], tok, (size_t)(eq - tok));
    c->names[k][eq - tok] = '\0';
    d5_attr *a = &c->attrs[k];
    memset(a, 0, sizeof *a);
    const char *v = eq + 1;
    size_t len = strlen(v);
    char *end;
    if (v[0] == '[') {
        const char *p = v + 1;
        double x[8];
        int32_t n;
        int ints;
        d5_status s = parse_numbers(&p, ']', where, c->names[k], x, 8, &n, &ints);
        if (s == D5_OK && *p)
            return d5_error(D5_ERR_FORMAT, "%s: attribute '%s': unexpected '%s'", where, tok, p);
        if (s != D5_OK && isalpha((unsigned char)v[1])) { /* [Sigmoid,Tanh]: ONNX STRINGS */
            d5_error_clear();
            s = put_enclosed(c->strs[k], sizeof c->strs[0], v, ']', "a [list]", where, tok);
            if (s != D5_OK) return s;
            a->type = D5_ATTR_STRING;
            a->count = 1;
            for (const char *q = c->strs[k]; *q; q++) a->count += *q == ',';
        } else if (s != D5_OK) {
            return s;
        } else {
            a->type = ints ? D5_ATTR_INTS : D5_ATTR_FLOATS;
            a->count = n;
            for (int32_t i = 0; i < n; i++) {
                if (ints && !(fabs(x[i]) < 0x1p63))
                    return d5_error(D5_ERR_FORMAT, "%s: attribute '%s': %g is beyond int64", where,
                                    tok, x[i]);
                if (ints) c->ints[k][i] = (int64_t)x[i];
                c->floats[k][i] = x[i];
            }
        }
    } else if (v[0] == '"') {
        d5_status s =
            put_enclosed(c->strs[k], sizeof c->strs[0], v, '"', "a \"string\"", where, tok);
        if (s != D5_OK) return s;
        a->type = D5_ATTR_STRING;
    } else if (errno = 0, a->i = strtoll(v, &end, 10), *v && !*end && !errno) {
        a->type = D5_ATTR_INT;
    } else if (errno = 0, a->f = strtod(v, &end), *v && !*end && !errno) {
        a->type = D5_ATTR_FLOAT;
    } else {
        if (!*v || len >= sizeof c->strs[0])
            return d5_error(D5_ERR_FORMAT, "%s: attribute '%s': expected a value", where, tok);
        memcpy(c->strs[k], v, len + 1);
        a->type = D5_ATTR_STRING;
    }
    c->nattrs++;
    case_copy(c, c); /* point the attribute into its storage */
    return D5_OK;
}

d5_status case_spec_parse(const char *spec, const char *where, op_case *c)
{
    memset(c, 0, sizeof *c);
    snprintf(c->label, sizeof c->label, "%s", spec);
    char buf[1024];
    if (strlen(spec) >= sizeof buf)
        return d5_error(D5_ERR_FORMAT, "%s: a case of %zu characters; at most %zu", where,
                        strlen(spec), sizeof buf - 1);
    snprintf(buf, sizeof buf, "%s", spec);
    char *bar = strchr(buf, '|');
    if (bar) *bar = '\0';
    d5_status s = D5_OK;
    for (char *save = NULL, *tok = strtok_r(buf, " \t", &save); s == D5_OK && tok;
         tok = strtok_r(NULL, " \t", &save)) {
        if (c->nin == CASE_MAX_INPUTS)
            return d5_error(D5_ERR_FORMAT, "%s: more than %d inputs", where, CASE_MAX_INPUTS);
        s = parse_input(tok, where, &c->in[c->nin], &c->fill[c->nin]);
        c->nin++;
    }
    if (s == D5_OK && c->nin == 0 && !bar)
        s = d5_error(D5_ERR_FORMAT, "%s: '%s' names no input (write '|' before attributes alone)",
                     where, spec);
    /* Attributes: quoted strings may hold spaces. */
    for (char *p = bar ? bar + 1 : NULL; s == D5_OK && p && *p;) {
        while (*p == ' ' || *p == '\t') p++;
        if (!*p) break;
        char *q = p;
        while (*q && *q != ' ' && *q != '\t') {
            if (*q == '"') {
                char *close = strchr(q + 1, '"');
                q = close ? close : q + strlen(q) - 1;
            }
            q++;
        }
        char save = *q;
        *q = '\0';
        s = parse_attr(p, where, c);
        *q = save;
        p = q;
    }
    return s;
}

void case_copy(op_case *dst, const op_case *src)
{
    if (dst != src) *dst = *src;
    for (int32_t k = 0; k < dst->nattrs; k++) {
        d5_attr *a = &dst->attrs[k];
        a->name = dst->names[k];
        if (a->type == D5_ATTR_INTS) a->ints = dst->ints[k];
        if (a->type == D5_ATTR_FLOATS) a->floats = dst->floats[k];
        if (a->type == D5_ATTR_STRING) a->s = dst->strs[k];
    }
}
