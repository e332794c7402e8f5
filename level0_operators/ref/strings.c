/* The text operators of ONNX, on string tensors (include/d5/core.h, "Strings"):
 *
 * StringNormalizer (opset 10): drops the stopwords from a 1-d [C] or 2-d
 *   [1, C] input (compared exactly, or ignoring case when is_case_sensitive
 *   is 0, the default) and changes the case of the rest (case_change_action
 *   LOWER, UPPER or NONE, the default), keeping the input's rank; when every
 *   element is dropped the output is one empty string ([1] or [1, 1]). Case
 *   follows Unicode through the C library's UTF-8 locale (C.UTF-8), whatever
 *   `locale` names; ASCII alone where that locale is missing. The output's
 *   length depends on the values when there are stopwords: then the input
 *   must be known at create.
 * StringConcat (opset 20): Y = X + Y element-wise with numpy broadcasting.
 * StringSplit (opset 20): splits each element of X at `delimiter` (Python's
 *   str.split(delimiter, maxsplit)), or at runs of blanks with blanks at the
 *   ends ignored when the delimiter is absent or empty (str.split()); at most
 *   `maxsplit` splits when given. Outputs Y, X's shape plus one axis as long
 *   as the most parts, padded with "", and Z (int64, X's shape), the number
 *   of parts. X must be known at create: its values decide Y's shape.
 * RegexFullMatch (opset 20): Y (bool) tells whether the whole element matches
 *   `pattern`. ONNX names RE2's syntax; d5 compiles the pattern with PCRE2
 *   (UTF-8), whose syntax is a superset of RE2's for what RE2 accepts, so a
 *   valid RE2 pattern means the same, anchored at both ends.
 * None has a gradient. Strings an operator makes live in its state until its
 * next forward call.
 * https://onnx.ai/onnx/operators/onnx__StringNormalizer.html
 * https://onnx.ai/onnx/operators/onnx__StringConcat.html
 * https://onnx.ai/onnx/operators/onnx__StringSplit.html
 * https://onnx.ai/onnx/operators/onnx__RegexFullMatch.html */
#define _GNU_SOURCE
#define PCRE2_CODE_UNIT_WIDTH 8
#include "util.h"

#include <ctype.h>
#include <locale.h>
#include <pcre2.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>
#include <wctype.h>

static d5_status need_strings(const char *op, const d5_tensor *in, int32_t nin, int32_t i)
{
    if (!d5__has_input(in, nin, i))
        return d5_error(D5_ERR_INVALID, "%s: input %d is required", op, (int)i);
    if (in[i].desc.dtype != D5_STRING)
        return d5_error(D5_ERR_UNSUPPORTED, "%s: input %d has data type %s, expected string", op,
                        (int)i, d5_dtype_name((d5_dtype)in[i].desc.dtype));
    return D5_OK;
}

/* ---- Case ---- */

/* C.UTF-8 for the wide-character case functions, made once. */
static locale_t utf8_locale(void)
{
    static locale_t loc;
    static int tried;
    if (!__atomic_load_n(&tried, __ATOMIC_ACQUIRE)) {
        locale_t l = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
        locale_t none = (locale_t)0;
        if (!__atomic_compare_exchange_n(&loc, &none, l, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE) &&
            l)
            freelocale(l);
        __atomic_store_n(&tried, 1, __ATOMIC_RELEASE);
    }
    return __atomic_load_n(&loc, __ATOMIC_ACQUIRE);
}

enum { CASE_NONE, CASE_LOWER, CASE_UPPER };

/* s with its case changed into the pool; NULL when memory runs out. Bytes
 * that are no UTF-8 are kept as they are. */
static const char *change_case(const char *s, int action, d5_strpool *pool)
{
    size_t n = strlen(s);
    if (action == CASE_NONE) return d5_strpool_add(pool, s, n);
    char *buf = malloc(n * 2 + MB_LEN_MAX + 1);
    if (!buf) {
        d5_error(D5_ERR_NOMEM, "out of memory changing the case of %zu bytes", n);
        return NULL;
    }
    locale_t loc = utf8_locale();
    size_t k = 0;
    if (!loc) {
        for (size_t i = 0; i < n; i++)
            buf[k++] = (char)(action == CASE_LOWER ? tolower((unsigned char)s[i])
                                                   : toupper((unsigned char)s[i]));
    } else {
        locale_t old = uselocale(loc);
        mbstate_t in_state, out_state;
        memset(&in_state, 0, sizeof in_state);
        memset(&out_state, 0, sizeof out_state);
        for (size_t i = 0; i < n;) {
            wchar_t w;
            size_t used = mbrtowc(&w, s + i, n - i, &in_state);
            if (used == (size_t)-1 || used == (size_t)-2 || used == 0) { /* keep the byte */
                memset(&in_state, 0, sizeof in_state);
                buf[k++] = s[i++];
                continue;
            }
            wint_t c = action == CASE_LOWER ? towlower((wint_t)w) : towupper((wint_t)w);
            char out[MB_LEN_MAX];
            size_t wrote = wcrtomb(out, (wchar_t)c, &out_state);
            if (wrote == (size_t)-1 || k + wrote > n * 2 + MB_LEN_MAX) {
                memcpy(buf + k, s + i, used);
                k += used;
            } else {
                memcpy(buf + k, out, wrote);
                k += wrote;
            }
            i += used;
        }
        uselocale(old);
    }
    const char *r = d5_strpool_add(pool, buf, k);
    free(buf);
    return r;
}

/* ---- StringNormalizer ---- */

typedef struct normalizer {
    int action, case_sensitive;
    int64_t kept; /* output elements */
    int32_t nstop;
    const char **stop; /* the stopwords, lower-cased when case is ignored, in `words` */
    d5_strpool words, pool;
} normalizer;

static void normalizer_destroy(void *state)
{
    normalizer *z = state;
    if (!z) return;
    d5_strpool_clear(&z->words);
    d5_strpool_clear(&z->pool);
    d5_free(z->stop);
    d5_free(z);
}

/* 1 when s is a stopword. `scratch` holds the lower-cased copy. */
static d5_status is_stopword(normalizer *z, const char *s, d5_strpool *scratch, int *stop)
{
    *stop = 0;
    if (z->nstop == 0) return D5_OK;
    const char *key = s;
    if (!z->case_sensitive && !(key = change_case(s, CASE_LOWER, scratch))) return D5_ERR_NOMEM;
    for (int32_t k = 0; k < z->nstop && !*stop; k++) *stop = strcmp(key, z->stop[k]) == 0;
    return D5_OK;
}

static d5_status count_kept(normalizer *z, const d5_tensor *x, int64_t *kept)
{
    d5_strpool scratch = {NULL};
    int64_t n = d5_tensor_desc_numel(&x->desc), count = 0;
    d5_status s = D5_OK;
    for (int64_t i = 0; s == D5_OK && i < n; i++) {
        int stop;
        if ((s = is_stopword(z, d5_string_at(x, i), &scratch, &stop)) == D5_OK) count += !stop;
    }
    d5_strpool_clear(&scratch);
    *kept = count;
    return s;
}

static d5_status normalizer_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    const d5_attrs *attrs = args->attrs;
    d5_status s = need_strings("StringNormalizer", in, args->ninputs, 0);
    if (s != D5_OK) return s;
    const d5_tensor_desc *x = &in[0].desc;
    if (!(x->ndim == 1 || (x->ndim == 2 && x->shape[0] == 1)))
        return d5_error(D5_ERR_SHAPE,
                        "StringNormalizer: input X has shape %s; expected [C] or [1, C]",
                        x->ndim == 2 ? "[N, C] with N != 1" : "of another rank");
    const char *action = NULL;
    int64_t sensitive = 0;
    if ((s = d5_attrs_string(attrs, "case_change_action", "NONE", &action)) != D5_OK ||
        (s = d5_attrs_int(attrs, "is_case_sensitive", 0, &sensitive)) != D5_OK)
        return s;
    int act = strcmp(action, "NONE") == 0    ? CASE_NONE
              : strcmp(action, "LOWER") == 0 ? CASE_LOWER
              : strcmp(action, "UPPER") == 0 ? CASE_UPPER
                                             : -1;
    if (act < 0)
        return d5_error(
            D5_ERR_INVALID,
            "StringNormalizer: case_change_action is '%s'; expected LOWER, UPPER or NONE", action);
    normalizer *z = d5_calloc(1, sizeof *z, "StringNormalizer");
    if (!z) return D5_ERR_NOMEM;
    z->action = act;
    z->case_sensitive = sensitive != 0;
    /* ONNX's STRINGS arrive joined by commas, their number in `count`. */
    const d5_attr *sw = d5_attrs_find(attrs, "stopwords");
    if (sw && sw->type == D5_ATTR_STRING && sw->s && sw->count > 0) {
        if (!(z->stop = d5_calloc((size_t)sw->count, sizeof *z->stop, "stopwords")))
            s = D5_ERR_NOMEM;
        const char *p = sw->s;
        for (int64_t k = 0; s == D5_OK && k < sw->count; k++) {
            const char *comma = k + 1 < sw->count ? strchr(p, ',') : NULL;
            size_t len = comma ? (size_t)(comma - p) : strlen(p);
            const char *w = d5_strpool_add(&z->words, p, len);
            if (w && !z->case_sensitive) w = change_case(w, CASE_LOWER, &z->words);
            if (!w) s = D5_ERR_NOMEM;
            z->stop[z->nstop++] = w;
            p = comma ? comma + 1 : p + len;
        }
    } else if (sw && sw->type != D5_ATTR_STRING) {
        s = d5_error(D5_ERR_INVALID, "StringNormalizer: stopwords must be strings");
    }
    int64_t c = x->shape[x->ndim - 1];
    if (s == D5_OK && z->nstop > 0) {
        if (!in[0].data)
            s = d5_error(D5_ERR_UNSUPPORTED,
                         "StringNormalizer: input 0 (X) must be a constant: its values decide the "
                         "output shape when there are stopwords");
        else
            s = count_kept(z, &in[0], &c);
    }
    if (s != D5_OK) {
        normalizer_destroy(z);
        return s;
    }
    z->kept = c;
    *state = z;
    d5_tensor_desc *out = args->outputs;
    out[0] = *x;
    out[0].dtype = D5_STRING;
    out[0].shape[out[0].ndim - 1] = c > 0 ? c : 1;
    return D5_OK;
}

static d5_status normalizer_forward(void *state, const d5_op_call *call)
{
    normalizer *z = state;
    const d5_tensor *x = &call->inputs[0];
    const char **y = call->outputs[0].data;
    d5_strpool scratch = {NULL};
    d5_strpool_clear(&z->pool);
    int64_t n = d5_tensor_desc_numel(&x->desc), k = 0;
    d5_status s = D5_OK;
    for (int64_t i = 0; s == D5_OK && i < n; i++) {
        const char *e = d5_string_at(x, i);
        int stop;
        if ((s = is_stopword(z, e, &scratch, &stop)) != D5_OK || stop) continue;
        if (k == z->kept) {
            s = d5_error(D5_ERR_SHAPE,
                         "StringNormalizer: input X keeps more than the %lld elements it kept at "
                         "create, which sized the output",
                         (long long)z->kept);
            break;
        }
        if (!(y[k++] = change_case(e, z->action, &z->pool))) s = D5_ERR_NOMEM;
    }
    d5_strpool_clear(&scratch);
    if (s == D5_OK && k != z->kept)
        s = d5_error(D5_ERR_SHAPE,
                     "StringNormalizer: input X keeps %lld elements, %lld at create, which sized "
                     "the output",
                     (long long)k, (long long)z->kept);
    if (s == D5_OK && z->kept == 0) y[0] = "";
    return s;
}

/* ---- StringConcat ---- */

typedef struct concat {
    d5_strpool pool;
} concat;

static void concat_destroy(void *state)
{
    concat *c = state;
    if (c) d5_strpool_clear(&c->pool);
    d5_free(c);
}

static d5_status concat_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    d5_status s = need_strings("StringConcat", in, args->ninputs, 0);
    if (s == D5_OK) s = need_strings("StringConcat", in, args->ninputs, 1);
    const d5_tensor_desc *both[2] = {&in[0].desc, &in[1].desc};
    if (s == D5_OK) s = d5__broadcast("StringConcat", both, 2, &args->outputs[0]);
    if (s != D5_OK) return s;
    args->outputs[0].dtype = D5_STRING;
    concat *c = d5_calloc(1, sizeof *c, "StringConcat");
    if (!c) return D5_ERR_NOMEM;
    *state = c;
    return D5_OK;
}

static d5_status concat_forward(void *state, const d5_op_call *call)
{
    concat *c = state;
    const d5_tensor *in = call->inputs;
    d5_tensor *out = call->outputs;
    d5_strpool_clear(&c->pool);
    int64_t n = d5_tensor_desc_numel(&out[0].desc);
    const char **y = out[0].data;
    for (int64_t i = 0; i < n; i++) {
        const char *a = d5_string_at(&in[0], d5__broadcast_index(&out[0].desc, &in[0].desc, i));
        const char *b = d5_string_at(&in[1], d5__broadcast_index(&out[0].desc, &in[1].desc, i));
        size_t la = strlen(a), lb = strlen(b);
        char *buf = malloc(la + lb + 1);
        if (!buf) return d5_error(D5_ERR_NOMEM, "StringConcat: out of memory");
        memcpy(buf, a, la);
        memcpy(buf + la, b, lb);
        y[i] = d5_strpool_add(&c->pool, buf, la + lb);
        free(buf);
        if (!y[i]) return D5_ERR_NOMEM;
    }
    return D5_OK;
}

/* ---- StringSplit ---- */

typedef struct split {
    char *delimiter;  /* NULL or "": blanks */
    int64_t maxsplit; /* < 0: no limit */
    int64_t width;    /* Y's last dimension */
    d5_strpool pool;
} split;

static void split_destroy(void *state)
{
    split *z = state;
    if (!z) return;
    d5_strpool_clear(&z->pool);
    d5_free(z->delimiter);
    d5_free(z);
}

/* The parts of s: each as (start, length) into parts[] when not NULL (room
 * for `room`); returns their number. */
static int64_t split_parts(const split *z, const char *s, const char **start, size_t *len,
                           int64_t room)
{
    int64_t n = 0, splits = 0;
    const char *d = z->delimiter;
    if (d && d[0]) {
        size_t dl = strlen(d);
        const char *p = s;
        for (;;) {
            const char *hit = z->maxsplit >= 0 && splits >= z->maxsplit ? NULL : strstr(p, d);
            const char *end = hit ? hit : p + strlen(p);
            if (start && n < room) start[n] = p, len[n] = (size_t)(end - p);
            n++;
            if (!hit) break;
            splits++;
            p = hit + dl;
        }
        return n;
    }
    const char *p = s;
    for (;;) {
        while (*p && isspace((unsigned char)*p)) p++;
        if (!*p) break;
        const char *end = p;
        if (z->maxsplit >= 0 && splits >= z->maxsplit) {
            end = p + strlen(p); /* the rest, trailing blanks kept, as Python's */
        } else {
            while (*end && !isspace((unsigned char)*end)) end++;
        }
        if (start && n < room) start[n] = p, len[n] = (size_t)(end - p);
        n++;
        splits++;
        p = end;
        if (z->maxsplit >= 0 && splits > z->maxsplit) break;
    }
    return n;
}

static d5_status split_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    d5_status s = need_strings("StringSplit", in, args->ninputs, 0);
    if (s != D5_OK) return s;
    if (in[0].desc.ndim == D5_MAX_DIMS)
        return d5_error(D5_ERR_UNSUPPORTED, "StringSplit: input X has %d dims; at most %d",
                        (int)D5_MAX_DIMS, D5_MAX_DIMS - 1);
    const char *delim = NULL;
    int64_t maxsplit = -1;
    if ((s = d5_attrs_string(args->attrs, "delimiter", "", &delim)) != D5_OK ||
        (s = d5_attrs_int(args->attrs, "maxsplit", -1, &maxsplit)) != D5_OK)
        return s;
    if (!in[0].data)
        return d5_error(D5_ERR_UNSUPPORTED,
                        "StringSplit: input 0 (X) must be a constant: its values decide the output "
                        "shape");
    split *z = d5_calloc(1, sizeof *z, "StringSplit");
    if (!z) return D5_ERR_NOMEM;
    z->maxsplit = maxsplit;
    if (!(z->delimiter = d5_strdup(delim, "StringSplit delimiter"))) {
        split_destroy(z);
        return D5_ERR_NOMEM;
    }
    int64_t n = d5_tensor_desc_numel(&in[0].desc), width = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t parts = split_parts(z, d5_string_at(&in[0], i), NULL, NULL, 0);
        if (parts > width) width = parts;
    }
    z->width = width;
    *state = z;
    d5_tensor_desc *out = args->outputs;
    out[0] = in[0].desc;
    out[0].dtype = D5_STRING;
    out[0].shape[out[0].ndim++] = width;
    if (args->noutputs > 1) {
        out[1] = in[0].desc;
        out[1].dtype = D5_I64;
    }
    return D5_OK;
}

static d5_status split_forward(void *state, const d5_op_call *call)
{
    split *z = state;
    const d5_tensor *x = &call->inputs[0];
    const char **y = call->outputs[0].data;
    int64_t *count = call->noutputs > 1 ? call->outputs[1].data : NULL;
    d5_strpool_clear(&z->pool);
    int64_t n = d5_tensor_desc_numel(&x->desc), w = z->width;
    const char **start = d5_calloc((size_t)(w > 0 ? w : 1), sizeof *start, "StringSplit parts");
    size_t *len = d5_calloc((size_t)(w > 0 ? w : 1), sizeof *len, "StringSplit parts");
    d5_status s = start && len ? D5_OK : D5_ERR_NOMEM;
    for (int64_t i = 0; s == D5_OK && i < n; i++) {
        int64_t parts = split_parts(z, d5_string_at(x, i), start, len, w);
        if (parts > w) {
            s = d5_error(D5_ERR_SHAPE,
                         "StringSplit: element %lld has %lld parts; %lld at most at create, which "
                         "sized the output",
                         (long long)i, (long long)parts, (long long)w);
            break;
        }
        for (int64_t k = 0; s == D5_OK && k < w; k++) {
            const char *e = k < parts ? d5_strpool_add(&z->pool, start[k], len[k]) : "";
            if (!e) s = D5_ERR_NOMEM;
            y[i * w + k] = e;
        }
        if (count) count[i] = parts;
    }
    d5_free(start);
    d5_free(len);
    return s;
}

/* ---- RegexFullMatch ---- */

typedef struct regex {
    pcre2_code *code;
    pcre2_match_data *match;
} regex;

static void regex_destroy(void *state)
{
    regex *r = state;
    if (!r) return;
    pcre2_match_data_free(r->match);
    pcre2_code_free(r->code);
    d5_free(r);
}

static d5_status regex_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    d5_status s = need_strings("RegexFullMatch", in, args->ninputs, 0);
    const char *pattern = NULL;
    if (s == D5_OK) s = d5_attrs_string(args->attrs, "pattern", NULL, &pattern);
    if (s != D5_OK) return s;
    if (!pattern)
        return d5_error(D5_ERR_INVALID, "RegexFullMatch: attribute 'pattern' is required");
    int err;
    PCRE2_SIZE at;
    pcre2_code *code =
        pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED,
                      PCRE2_UTF | PCRE2_ANCHORED | PCRE2_ENDANCHORED, &err, &at, NULL);
    if (!code) {
        PCRE2_UCHAR msg[160];
        pcre2_get_error_message(err, msg, sizeof msg);
        return d5_error(D5_ERR_INVALID, "RegexFullMatch: pattern '%s' at offset %zu: %s", pattern,
                        (size_t)at, (const char *)msg);
    }
    regex *r = d5_calloc(1, sizeof *r, "RegexFullMatch");
    if (r) r->code = code;
    if (r && !(r->match = pcre2_match_data_create_from_pattern(code, NULL))) {
        regex_destroy(r);
        r = NULL;
    } else if (!r) {
        pcre2_code_free(code);
    }
    if (!r) return d5_error(D5_ERR_NOMEM, "RegexFullMatch: out of memory");
    *state = r;
    args->outputs[0] = in[0].desc;
    args->outputs[0].dtype = D5_BOOL;
    return D5_OK;
}

static d5_status regex_forward(void *state, const d5_op_call *call)
{
    regex *r = state;
    const d5_tensor *x = &call->inputs[0];
    uint8_t *y = call->outputs[0].data;
    int64_t n = d5_tensor_desc_numel(&x->desc);
    for (int64_t i = 0; i < n; i++) {
        const char *e = d5_string_at(x, i);
        int rc = pcre2_match(r->code, (PCRE2_SPTR)e, strlen(e), 0, 0, r->match, NULL);
        if (rc < 0 && rc != PCRE2_ERROR_NOMATCH) {
            PCRE2_UCHAR msg[160];
            pcre2_get_error_message(rc, msg, sizeof msg);
            return d5_error(D5_ERR_INVALID, "RegexFullMatch: element %lld: %s", (long long)i,
                            (const char *)msg);
        }
        y[i] = rc >= 0;
    }
    return D5_OK;
}

static void no_cost(void *state, double *flops, double *bytes)
{
    (void)state;
    *flops = 0;
    *bytes = 0;
}

/* clang-format off */
const d5_op_desc d5__op_ref_StringNormalizer = {
    .abi_version = D5_OP_ABI_VERSION, .name = "StringNormalizer", .backend = "ref",
    .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1,
    .create = normalizer_create, .forward = normalizer_forward, .destroy = normalizer_destroy,
    .cost = no_cost};
const d5_op_desc d5__op_ref_StringConcat = {
    .abi_version = D5_OP_ABI_VERSION, .name = "StringConcat", .backend = "ref",
    .min_inputs = 2, .max_inputs = 2, .min_outputs = 1, .max_outputs = 1,
    .create = concat_create, .forward = concat_forward, .destroy = concat_destroy,
    .cost = no_cost};
const d5_op_desc d5__op_ref_StringSplit = {
    .abi_version = D5_OP_ABI_VERSION, .name = "StringSplit", .backend = "ref",
    .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 2,
    .create = split_create, .forward = split_forward, .destroy = split_destroy,
    .cost = no_cost};
const d5_op_desc d5__op_ref_RegexFullMatch = {
    .abi_version = D5_OP_ABI_VERSION, .name = "RegexFullMatch", .backend = "ref",
    .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1,
    .create = regex_create, .forward = regex_forward, .destroy = regex_destroy,
    .cost = no_cost};
/* clang-format on */
