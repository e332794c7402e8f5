/* String tensors and the operators on them: Cast to and from text (the
 * strings numpy's astype(str) gives, written here from a run of Debian's
 * numpy 1.24), StringNormalizer, StringConcat, StringSplit (Python's
 * str.split), RegexFullMatch and Equal on strings. */
#include "op_support.h"

#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

static void expect_words(const d5_tensor *t, const char *const *want, int64_t n, const char *what)
{
    cr_assert_eq(t->desc.dtype, D5_STRING, "%s: %s", what, d5_dtype_name((d5_dtype)t->desc.dtype));
    cr_assert_eq(d5_tensor_desc_numel(&t->desc), n, "%s: %lld elements, want %lld", what,
                 (long long)d5_tensor_desc_numel(&t->desc), (long long)n);
    for (int64_t i = 0; i < n; i++)
        cr_expect_str_eq(d5_string_at(t, i), want[i], "%s: element %lld", what, (long long)i);
}

static d5_tensor raw(d5_dtype dt, int64_t n, const void *values)
{
    return traw(dt, 1, &n, values);
}

/* Cast of x (freed) to ONNX type `to`. */
static d5_tensor cast(d5_tensor x, int64_t to)
{
    d5_attr a[1] = {attr_int("to", to)};
    d5_attrs attrs = {a, 1};
    d5_tensor y;
    run_op("Cast", "ref", &x, 1, &attrs, &y, 1);
    d5_tensor_free(&x);
    return y;
}

Test(strings, tensors_clone_and_free_their_bytes)
{
    const char *w[] = {"alpha", NULL, "", "gamma"};
    d5_tensor t = tstr(1, SHAPE(4), w), c;
    cr_assert_eq(d5_tensor_clone(&t, &c), D5_OK);
    d5_tensor_free(&t); /* the clone owns its own bytes */
    const char *want[] = {"alpha", "", "", "gamma"};
    expect_words(&c, want, 4, "clone");
    d5_tensor_free(&c);
    /* lengths: bytes, not NUL-terminated; a byte 0 inside is refused */
    d5_tensor_desc d;
    cr_assert_eq(d5_tensor_desc_make(D5_STRING, 1, SHAPE(2), &d), D5_OK);
    const char *parts[] = {"abcdef", "xyz"};
    size_t lens[] = {3, 2};
    cr_assert_eq(d5_tensor_strings(&d, parts, lens, &t), D5_OK);
    const char *cut[] = {"abc", "xy"};
    expect_words(&t, cut, 2, "lengths");
    d5_tensor_free(&t);
    const char *nul[] = {"a\0b", "c"};
    size_t nul_lens[] = {3, 1};
    cr_expect_eq(d5_tensor_strings(&d, nul, nul_lens, &t), D5_ERR_INVALID);
    cr_expect(strstr(d5_last_error(), "element 0") != NULL, "%s", d5_last_error());
    /* d5_tensor_alloc gives empty strings */
    cr_assert_eq(d5_tensor_alloc(&d, &t), D5_OK);
    cr_expect_str_eq(d5_string_at(&t, 1), "");
    d5_tensor_free(&t);
}

Test(strings, pool_keeps_every_string_until_cleared)
{
    d5_strpool pool = {NULL};
    const char *first = d5_strpool_add(&pool, "first", 5);
    char big[10000];
    memset(big, 'x', sizeof big);
    const char *large = d5_strpool_add(&pool, big, sizeof big); /* beyond a chunk */
    const char *part = d5_strpool_add(&pool, "partial", 4);
    cr_assert(first && large && part);
    cr_expect_str_eq(first, "first");
    cr_expect_eq(strlen(large), sizeof big);
    cr_expect_str_eq(part, "part");
    d5_strpool_clear(&pool);
    cr_expect_null(pool.head);
}

Test(strings, convert_refuses_strings_to_numbers)
{
    const char *w[] = {"1"};
    float f;
    cr_expect_eq(d5_convert(w, D5_STRING, &f, D5_F32, 1), D5_ERR_UNSUPPORTED);
    cr_expect(strstr(d5_last_error(), "Cast") != NULL, "%s", d5_last_error());
}

Test(strings, cast_writes_numbers_as_numpy_does)
{
    const float f32[] = {
        1.0f,         100.0f,     1e-4f,     1e-5f,  1e16f,         123456789.0f,    -0.0f,
        NAN,          INFINITY,   -INFINITY, 0.1f,   3.4028235e38f, 1.17549435e-38f, 1e-45f,
        0.039187793f, 9999999.0f, 1e15f,     2.5e-4f};
    const char *want32[] = {"1.0",
                            "100.0",
                            "1e-04",
                            "1e-05",
                            "1e+16",
                            "123456790.0",
                            "-0.0",
                            "nan",
                            "inf",
                            "-inf",
                            "0.1",
                            "3.4028235e+38",
                            "1.1754944e-38",
                            "1e-45",
                            "0.039187793",
                            "9999999.0",
                            "1000000000000000.0",
                            "0.00025"};
    d5_tensor y = cast(raw(D5_F32, 18, f32), 8);
    expect_words(&y, want32, 18, "float32");
    d5_tensor_free(&y);
    const double f64[] = {0.1, 1e16, 1e-300, 9007199254740992.0, 1.0 / 3, -123.456, 5e-324};
    const char *want64[] = {
        "0.1", "1e+16", "1e-300", "9007199254740992.0", "0.3333333333333333", "-123.456", "5e-324"};
    y = cast(raw(D5_F64, 7, f64), 8);
    expect_words(&y, want64, 7, "float64");
    d5_tensor_free(&y);
    const uint16_t f16[] = {d5_f16_from_f64(0.1), d5_f16_from_f64(65504), d5_f16_from_f64(1e-4),
                            d5_f16_from_f64(-2.5), d5_f16_from_f64(0.333)};
    const char *want16[] = {"0.1", "65500.0", "0.0001", "-2.5", "0.333"};
    y = cast(raw(D5_F16, 5, f16), 8);
    expect_words(&y, want16, 5, "float16");
    d5_tensor_free(&y);
    const int8_t i8[] = {-128, 127};
    const char *wanti8[] = {"-128", "127"};
    y = cast(raw(D5_I8, 2, i8), 8);
    expect_words(&y, wanti8, 2, "int8");
    d5_tensor_free(&y);
    const uint64_t u64[] = {UINT64_MAX};
    const char *wantu64[] = {"18446744073709551615"};
    y = cast(raw(D5_U64, 1, u64), 8);
    expect_words(&y, wantu64, 1, "uint64");
    d5_tensor_free(&y);
    const uint8_t b[] = {1, 0};
    const char *wantb[] = {"True", "False"};
    y = cast(raw(D5_BOOL, 2, b), 8);
    expect_words(&y, wantb, 2, "bool");
    d5_tensor_free(&y);
}

Test(strings, cast_reads_text_as_numbers)
{
    const char *w[] = {"1e-5", " 2.5 ", "+INF", "NaN", "-0", "1E8", "-inf", "0.47892547"};
    d5_tensor y = cast(tstr(1, SHAPE(8), w), 1);
    const float *f = y.data;
    cr_expect_eq(f[0], 1e-5f);
    cr_expect_eq(f[1], 2.5f);
    cr_expect(isinf(f[2]) && f[2] > 0);
    cr_expect(isnan(f[3]));
    cr_expect(f[4] == 0 && signbit(f[4]));
    cr_expect_eq(f[5], 1e8f);
    cr_expect(isinf(f[6]) && f[6] < 0);
    cr_expect_eq(f[7], 0.47892547f);
    d5_tensor_free(&y);
    /* integers exactly, beyond float64's 53 bits; a fraction truncated */
    const char *ints[] = {"9007199254740993", "-7", "100.9"};
    y = cast(tstr(1, SHAPE(3), ints), 7);
    const int64_t *v = y.data;
    cr_expect_eq(v[0], 9007199254740993LL);
    cr_expect_eq(v[1], -7);
    cr_expect_eq(v[2], 100);
    d5_tensor_free(&y);
    const char *flags[] = {"true", "False", "0", "2"};
    y = cast(tstr(1, SHAPE(4), flags), 9);
    const uint8_t want[] = {1, 0, 0, 1};
    cr_expect(memcmp(y.data, want, 4) == 0);
    d5_tensor_free(&y);
    /* text that is no number: an error naming the element */
    const char *bad[] = {"1", "two"};
    d5_tensor x = tstr(1, SHAPE(2), bad), out;
    d5_attr a[1] = {attr_int("to", 1)};
    d5_attrs attrs = {a, 1};
    cr_expect_eq(try_op("Cast", "ref", &x, 1, &attrs, &out, 1), D5_ERR_INVALID);
    cr_expect(strstr(d5_last_error(), "element 1 is 'two'") != NULL, "%s", d5_last_error());
    d5_tensor_free(&x);
}

Test(strings, cast_round_trips_every_float16)
{
    /* Every finite float16 written as text and read back is itself. */
    uint16_t h[65536];
    int64_t n = 0;
    for (uint32_t u = 0; u < 65536; u++)
        if ((u & 0x7c00u) != 0x7c00u) h[n++] = (uint16_t)u;
    d5_tensor y = cast(cast(raw(D5_F16, n, h), 8), 10);
    const uint16_t *back = y.data;
    for (int64_t i = 0; i < n; i++)
        cr_assert_eq(back[i], h[i], "float16 0x%04x came back as 0x%04x", h[i], back[i]);
    d5_tensor_free(&y);
}

Test(strings, normalizer_drops_stopwords_and_changes_case)
{
    const char *w[] = {"Monday", "tuesday", "wednesday", "Monday", "tuesday", "wednesday"};
    d5_tensor x = tstr(2, SHAPE(1, 6), w), y;
    d5_attr a[2] = {attr_string("case_change_action", "UPPER"), attr_string("stopwords", "monday")};
    a[1].count = 1;
    d5_attrs attrs = {a, 2};
    run_op("StringNormalizer", "ref", &x, 1, &attrs, &y, 1);
    cr_expect_eq(y.desc.ndim, 2);
    cr_expect_eq(y.desc.shape[1], 4);
    const char *want[] = {"TUESDAY", "WEDNESDAY", "TUESDAY", "WEDNESDAY"};
    expect_words(&y, want, 4, "case-insensitive stopwords");
    d5_tensor_free(&y);
    /* case-sensitive: "Monday" stays; lower-cased, UTF-8 too */
    const char *u[] = {"Monday", "monday", "ÉTÉ"};
    d5_tensor x2 = tstr(1, SHAPE(3), u);
    d5_attr b[3] = {attr_string("case_change_action", "LOWER"), attr_string("stopwords", "monday"),
                    attr_int("is_case_sensitive", 1)};
    b[1].count = 1;
    d5_attrs battrs = {b, 3};
    run_op("StringNormalizer", "ref", &x2, 1, &battrs, &y, 1);
    const char *want2[] = {"monday", "été"};
    expect_words(&y, want2, 2, "case-sensitive");
    d5_tensor_free(&y);
    /* everything dropped: one empty string */
    const char *all[] = {"monday", "MONDAY"};
    d5_tensor x3 = tstr(1, SHAPE(2), all);
    run_op("StringNormalizer", "ref", &x3, 1, &attrs, &y, 1);
    const char *empty[] = {""};
    expect_words(&y, empty, 1, "all dropped");
    d5_tensor_free(&y);
    d5_tensor_free(&x);
    d5_tensor_free(&x2);
    d5_tensor_free(&x3);
}

Test(strings, concat_broadcasts)
{
    const char *a[] = {"cat", "dog", "的"}, *b[] = {"s"};
    d5_tensor in[2] = {tstr(1, SHAPE(3), a), tstr(1, SHAPE(1), b)}, y;
    run_op("StringConcat", "ref", in, 2, NULL, &y, 1);
    const char *want[] = {"cats", "dogs", "的s"};
    expect_words(&y, want, 3, "concat");
    d5_tensor_free(&y);
    d5_tensor_free(&in[0]);
    d5_tensor_free(&in[1]);
}

Test(strings, split_as_python)
{
    /* delimiter ".", no limit: ["a","b","c"], ["d","","e"], ["f"], ["g",""] */
    const char *w[] = {"a.b.c", "d..e", "f", "g."};
    d5_tensor x = tstr(1, SHAPE(4), w), y[2];
    d5_attr a[1] = {attr_string("delimiter", ".")};
    d5_attrs attrs = {a, 1};
    run_op("StringSplit", "ref", &x, 1, &attrs, y, 2);
    cr_assert_eq(y[0].desc.ndim, 2);
    cr_assert_eq(y[0].desc.shape[1], 3);
    const char *want[] = {"a", "b", "c", "d", "", "e", "f", "", "", "g", "", ""};
    expect_words(&y[0], want, 12, "split by '.'");
    const int64_t lengths[] = {3, 3, 1, 2};
    cr_expect(memcmp(y[1].data, lengths, sizeof lengths) == 0);
    d5_tensor_free(&y[0]);
    d5_tensor_free(&y[1]);
    d5_tensor_free(&x);
    /* blanks, at most one split: " a b  c " -> ["a", "b  c "] */
    const char *b[] = {" a b  c ", "   "};
    x = tstr(1, SHAPE(2), b);
    d5_attr m[1] = {attr_int("maxsplit", 1)};
    d5_attrs mattrs = {m, 1};
    run_op("StringSplit", "ref", &x, 1, &mattrs, y, 2);
    const char *want2[] = {"a", "b  c ", "", ""};
    expect_words(&y[0], want2, 4, "split at blanks");
    const int64_t lengths2[] = {2, 0};
    cr_expect(memcmp(y[1].data, lengths2, sizeof lengths2) == 0);
    d5_tensor_free(&y[0]);
    d5_tensor_free(&y[1]);
    d5_tensor_free(&x);
}

Test(strings, regex_matches_whole_elements)
{
    const char *w[] = {"www.google.com", "www.bbc.co.uk", "xwww.google.com", "account@gmail.com"};
    d5_tensor x = tstr(1, SHAPE(4), w), y;
    d5_attr a[1] = {attr_string("pattern", "www\\.[\\w.-]+\\.\\bcom\\b")};
    d5_attrs attrs = {a, 1};
    run_op("RegexFullMatch", "ref", &x, 1, &attrs, &y, 1);
    const uint8_t want[] = {1, 0, 0, 0};
    cr_expect(memcmp(y.data, want, 4) == 0, "%d %d %d %d", ((uint8_t *)y.data)[0],
              ((uint8_t *)y.data)[1], ((uint8_t *)y.data)[2], ((uint8_t *)y.data)[3]);
    d5_tensor_free(&y);
    /* a pattern that does not compile: the error says where */
    d5_attr bad[1] = {attr_string("pattern", "(ab")};
    d5_attrs battrs = {bad, 1};
    cr_expect_eq(try_op("RegexFullMatch", "ref", &x, 1, &battrs, &y, 1), D5_ERR_INVALID);
    cr_expect(strstr(d5_last_error(), "offset 3") != NULL, "%s", d5_last_error());
    d5_tensor_free(&x);
}

Test(strings, equal_compares_bytes)
{
    const char *a[] = {"abc", "ab", ""}, *b[] = {"abc"};
    d5_tensor in[2] = {tstr(1, SHAPE(3), a), tstr(1, SHAPE(1), b)}, y;
    run_op("Equal", "ref", in, 2, NULL, &y, 1);
    const uint8_t want[] = {1, 0, 0};
    cr_expect(memcmp(y.data, want, 3) == 0);
    d5_tensor_free(&y);
    d5_tensor_free(&in[0]);
    d5_tensor_free(&in[1]);
}
