/* The ONNX-ML operators of the ref backend (domain ai.onnx.ml): LabelEncoder,
 * ArrayFeatureExtractor, Binarizer and TreeEnsemble. The expected values are
 * worked out by hand in the comments beside them; the post transforms of
 * TreeEnsemble were computed with Debian's numpy 1.24 (softmax, logistic,
 * softmax_zero, and probit by the approximate inverse erf of ONNX's reference
 * classifiers, within 2e-4 of Python's statistics.NormalDist().inv_cdf). */
#include "op_support.h"

#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <string.h>

/* ---- Helpers ---- */

static d5_attr attr_tensor(const char *name, const d5_tensor *t)
{
    return (d5_attr){.name = name, .type = D5_ATTR_TENSOR, .tensor = t};
}

/* ONNX's STRINGS as d5 passes them: joined by commas, with their number. */
static d5_attr attr_strings(const char *name, const char *joined, int64_t count)
{
    return (d5_attr){.name = name, .type = D5_ATTR_STRING, .s = joined, .count = count};
}

static void expect_words(const d5_tensor *t, const char *const *want, int64_t n)
{
    cr_assert_eq(t->desc.dtype, D5_STRING, "got %s", d5_dtype_name((d5_dtype)t->desc.dtype));
    cr_assert_eq(d5_tensor_desc_numel(&t->desc), n);
    for (int64_t i = 0; i < n; i++)
        cr_expect_str_eq(d5_string_at(t, i), want[i], "element %lld", (long long)i);
}

static void expect_i64(const d5_tensor *t, const int64_t *want, int64_t n)
{
    cr_assert_eq(t->desc.dtype, D5_I64, "got %s", d5_dtype_name((d5_dtype)t->desc.dtype));
    cr_assert_eq(d5_tensor_desc_numel(&t->desc), n);
    for (int64_t i = 0; i < n; i++)
        cr_expect_eq(((const int64_t *)t->data)[i], want[i], "element %lld: got %lld, want %lld",
                     (long long)i, (long long)((const int64_t *)t->data)[i], (long long)want[i]);
}

static d5_attrs attrs_of(d5_attr *a, int32_t n)
{
    return (d5_attrs){a, n};
}

/* ---- LabelEncoder ---- */

Test(label_encoder, maps_strings_to_ints_as_the_operator_page_example)
{
    /* The page's example: keys [Amy, Sally], values [5, 6], default -1. */
    const char *x[] = {"Dori", "Amy", "Amy", "Sally", "Sally"};
    d5_tensor in = tstr(1, SHAPE(5), x), y;
    d5_attr a[] = {attr_strings("keys_strings", "Amy,Sally", 2),
                   attr_ints("values_int64s", IVALS(5, 6), 2)};
    d5_attrs attrs = attrs_of(a, 2);
    run_op("LabelEncoder", "ref", &in, 1, &attrs, &y, 1);
    expect_i64(&y, IVALS(-1, 5, 5, 6, 6), 5);
    d5_tensor_free(&y);
    /* default_int64 given; a string that is a key's prefix is no key */
    const char *x2[] = {"Am", "Sally", ""};
    d5_tensor in2 = tstr(2, SHAPE(1, 3), x2);
    d5_attr b[] = {a[0], a[1], attr_int("default_int64", 42)};
    attrs = attrs_of(b, 3);
    run_op("LabelEncoder", "ref", &in2, 1, &attrs, &y, 1);
    cr_expect_eq(y.desc.ndim, 2);
    expect_i64(&y, IVALS(42, 6, 42), 3);
    op_free_all((d5_tensor[]){in, in2, y}, 3);
}

Test(label_encoder, maps_ints_to_strings_and_the_last_repeated_key_wins)
{
    /* keys 1, 2, 1 -> x, y, z: 1 maps to z, its last value */
    d5_tensor in = ti64(1, SHAPE(4), IVALS(1, 2, 3, -1)), y;
    d5_attr a[] = {attr_ints("keys_int64s", IVALS(1, 2, 1), 3),
                   attr_strings("values_strings", "x,y,z", 3),
                   attr_string("default_string", "none")};
    d5_attrs attrs = attrs_of(a, 3);
    run_op("LabelEncoder", "ref", &in, 1, &attrs, &y, 1);
    expect_words(&y, (const char *[]){"z", "y", "none", "none"}, 4);
    d5_tensor_free(&y);
    /* without default_string: "_Unused"; an empty string is a value too */
    d5_attr b[] = {attr_ints("keys_int64s", IVALS(1, 2), 2),
                   attr_strings("values_strings", ",two", 2)};
    attrs = attrs_of(b, 2);
    run_op("LabelEncoder", "ref", &in, 1, &attrs, &y, 1);
    expect_words(&y, (const char *[]){"", "two", "_Unused", "_Unused"}, 4);
    op_free_all((d5_tensor[]){in, y}, 2);
}

Test(label_encoder, float_keys_match_nan_and_zero_by_value_in_opset_4_by_bits_in_opset_2)
{
    uint32_t other_nan_bits = 0x7fc00001u, nan_bits = 0x7fc00000u;
    float other_nan, nan_;
    memcpy(&other_nan, &other_nan_bits, sizeof other_nan);
    memcpy(&nan_, &nan_bits, sizeof nan_);
    float x[] = {other_nan, -0.0f, 0.0f, 2.5f, nan_, 7.0f};
    d5_tensor in = traw(D5_F32, 1, SHAPE(6), x), y;
    const double keys[] = {NAN, 0.0, 2.5}, values[] = {1.0, 2.0, 3.0};
    d5_attr a[] = {attr_floats("keys_floats", keys, 3), attr_floats("values_floats", values, 3),
                   attr_float("default_float", 9.0), attr_int("__opset", 4)};
    d5_attrs attrs = attrs_of(a, 4);
    run_op("LabelEncoder", "ref", &in, 1, &attrs, &y, 1);
    cr_expect_eq(y.desc.dtype, D5_F32);
    /* opset 4: every NaN matches the NaN key, -0.0 the key 0.0 */
    expect_values(&y, VALS(1, 2, 2, 3, 1, 9), 6, 0);
    d5_tensor_free(&y);
    a[3] = attr_int("__opset", 2);
    run_op("LabelEncoder", "ref", &in, 1, &attrs, &y, 1);
    /* opset 2: bit for bit, so only the NaN of the key's bits and +0.0 match */
    expect_values(&y, VALS(9, 9, 2, 3, 1, 9), 6, 0);
    d5_tensor_free(&y);
    /* default_float's default is -0.0 */
    attrs = attrs_of(a, 2);
    run_op("LabelEncoder", "ref", &in, 1, &attrs, &y, 1);
    cr_expect(signbit(((const float *)y.data)[5]) && ((const float *)y.data)[5] == 0.0f);
    op_free_all((d5_tensor[]){in, y}, 2);
}

Test(label_encoder, takes_keys_values_and_default_as_tensors_in_opset_4)
{
    /* float64 keys 1.5, -2.0 -> int32 10, 20, default 7 */
    d5_tensor keys = traw(D5_F64, 1, SHAPE(2), (const double[]){1.5, -2.0});
    d5_tensor values = traw(D5_I32, 1, SHAPE(2), (const int32_t[]){10, 20});
    d5_tensor def = traw(D5_I32, 1, SHAPE(1), (const int32_t[]){7});
    d5_tensor in = traw(D5_F64, 1, SHAPE(3), (const double[]){-2.0, 1.5, 3.0}), y;
    d5_attr a[] = {attr_tensor("keys_tensor", &keys), attr_tensor("values_tensor", &values),
                   attr_tensor("default_tensor", &def)};
    d5_attrs attrs = attrs_of(a, 3);
    run_op("LabelEncoder", "ref", &in, 1, &attrs, &y, 1);
    cr_assert_eq(y.desc.dtype, D5_I32);
    const int32_t *got = y.data;
    cr_expect(got[0] == 20 && got[1] == 10 && got[2] == 7, "got %d %d %d", got[0], got[1], got[2]);
    d5_tensor_free(&y);
    /* int16 keys from strings, as ONNX's test: a, b, c -> 0, 1, 2, default 42 */
    d5_tensor skeys = tstr(1, SHAPE(3), (const char *[]){"a", "b", "c"});
    d5_tensor svalues = traw(D5_I16, 1, SHAPE(3), (const int16_t[]){0, 1, 2});
    d5_tensor sdef = traw(D5_I16, 1, SHAPE(1), (const int16_t[]){42});
    d5_tensor sin = tstr(1, SHAPE(5), (const char *[]){"a", "b", "d", "c", "g"});
    d5_attr b[] = {attr_tensor("keys_tensor", &skeys), attr_tensor("values_tensor", &svalues),
                   attr_tensor("default_tensor", &sdef)};
    attrs = attrs_of(b, 3);
    run_op("LabelEncoder", "ref", &sin, 1, &attrs, &y, 1);
    cr_assert_eq(y.desc.dtype, D5_I16);
    const int16_t want16[] = {0, 1, 42, 2, 42};
    for (int i = 0; i < 5; i++) cr_expect_eq(((const int16_t *)y.data)[i], want16[i], "i=%d", i);
    op_free_all((d5_tensor[]){keys, values, def, in, y, skeys, svalues, sdef, sin}, 9);
}

Test(label_encoder, opset_1_maps_classes_strings_to_positions_and_back)
{
    d5_tensor s = tstr(1, SHAPE(3), (const char *[]){"c", "z", "a"});
    d5_tensor p = ti64(1, SHAPE(3), IVALS(1, 5, 0)), y;
    d5_attr a[] = {attr_strings("classes_strings", "a,b,c", 3), attr_int("__opset", 1),
                   attr_string("default_string", "none")};
    d5_attrs attrs = attrs_of(a, 3);
    run_op("LabelEncoder", "ref", &s, 1, &attrs, &y, 1);
    expect_i64(&y, IVALS(2, -1, 0), 3); /* default_int64 -1 */
    d5_tensor_free(&y);
    run_op("LabelEncoder", "ref", &p, 1, &attrs, &y, 1);
    expect_words(&y, (const char *[]){"b", "none", "a"}, 3);
    op_free_all((d5_tensor[]){s, p, y}, 3);
}

Test(label_encoder, refuses_bad_attributes_naming_them)
{
    d5_tensor s = tstr(1, SHAPE(2), (const char *[]){"a", "b"});
    d5_attr keys = attr_strings("keys_strings", "a,b", 2);
    d5_attr vals = attr_ints("values_int64s", IVALS(1, 2), 2);
    d5_attr two[] = {keys, attr_ints("keys_int64s", IVALS(1, 2), 2), vals};
    d5_attrs attrs = attrs_of(two, 3);
    op_expect_fails("LabelEncoder", &s, 1, &attrs, 1, D5_ERR_INVALID,
                    "LabelEncoder: both keys_strings and keys_int64s");
    attrs = attrs_of(&vals, 1);
    op_expect_fails("LabelEncoder", &s, 1, &attrs, 1, D5_ERR_INVALID, "no keys_* attribute");
    d5_attr short_values[] = {keys, attr_ints("values_int64s", IVALS(1), 1)};
    attrs = attrs_of(short_values, 2);
    op_expect_fails("LabelEncoder", &s, 1, &attrs, 1, D5_ERR_INVALID,
                    "keys_strings has 2 keys but values_int64s has 1 values");
    /* three strings said, two found: one of them had a comma */
    d5_attr comma[] = {attr_strings("keys_strings", "a,b", 3),
                       attr_ints("values_int64s", IVALS(1, 2, 3), 3)};
    attrs = attrs_of(comma, 2);
    op_expect_fails("LabelEncoder", &s, 1, &attrs, 1, D5_ERR_UNSUPPORTED, "comma");
    d5_attr wrong_type[] = {attr_ints("keys_int64s", IVALS(1, 2), 2), vals};
    attrs = attrs_of(wrong_type, 2);
    op_expect_fails("LabelEncoder", &s, 1, &attrs, 1, D5_ERR_INVALID,
                    "input X has data type string but the keys (keys_int64s) are int64");
    d5_tensor t = tstr(1, SHAPE(2), (const char *[]){"a", "b"});
    d5_attr tensor2[] = {attr_tensor("keys_tensor", &t), vals, attr_int("__opset", 2)};
    attrs = attrs_of(tensor2, 3);
    op_expect_fails("LabelEncoder", &s, 1, &attrs, 1, D5_ERR_INVALID,
                    "keys_tensor is an attribute of ai.onnx.ml opset 4");
    d5_tensor bad_def = traw(D5_I32, 1, SHAPE(1), (const int32_t[]){3});
    d5_attr def[] = {keys, vals, attr_tensor("default_tensor", &bad_def)};
    attrs = attrs_of(def, 3);
    op_expect_fails("LabelEncoder", &s, 1, &attrs, 1, D5_ERR_INVALID,
                    "default_tensor must be a tensor of one int64");
    d5_attr floats_as_ints[] = {keys, attr_ints("values_floats", IVALS(1, 2), 2)};
    attrs = attrs_of(floats_as_ints, 2);
    op_expect_fails("LabelEncoder", &s, 1, &attrs, 1, D5_ERR_INVALID,
                    "values_floats must be a list of floats");
    d5_tensor u8 = traw(D5_U8, 1, SHAPE(1), (const uint8_t[]){1});
    attrs = attrs_of(two + 1, 2);
    op_expect_fails("LabelEncoder", &u8, 1, &attrs, 1, D5_ERR_UNSUPPORTED,
                    "LabelEncoder: input 0 has data type uint8");
    op_free_all((d5_tensor[]){s, t, bad_def, u8}, 4);
}

/* ---- ArrayFeatureExtractor ---- */

Test(array_feature_extractor, picks_along_the_last_axis)
{
    /* ONNX's test: x = 0..11 as [3, 4], y = [0, 1] -> [[0, 1], [4, 5], [8, 9]] */
    d5_tensor in[2] = {op_iota(2, SHAPE(3, 4)), ti64(1, SHAPE(2), IVALS(0, 1))};
    op_check("ArrayFeatureExtractor", in, 2, NULL, 2, SHAPE(3, 2), VALS(0, 1, 4, 5, 8, 9));
    /* a 1-d x gives [1, n]; y of any shape is read flat, positions may repeat */
    d5_tensor one[2] = {tf32(1, SHAPE(5), VALS(10, 20, 30, 40, 50)),
                        ti64(2, SHAPE(2, 2), IVALS(4, 0, 0, 2))};
    op_check("ArrayFeatureExtractor", one, 2, NULL, 2, SHAPE(1, 4), VALS(50, 10, 10, 30));
}

Test(array_feature_extractor, copies_int64_exactly_and_strings)
{
    const int64_t big[] = {INT64_MAX, (INT64_C(1) << 53) + 1, -7};
    d5_tensor in[2] = {traw(D5_I64, 2, SHAPE(1, 3), big), ti64(1, SHAPE(2), IVALS(1, 0))}, y;
    run_op("ArrayFeatureExtractor", "ref", in, 2, NULL, &y, 1);
    expect_i64(&y, IVALS((INT64_C(1) << 53) + 1, INT64_MAX), 2);
    d5_tensor_free(&y);
    d5_tensor s[2] = {tstr(2, SHAPE(2, 3), (const char *[]){"a", "b", "c", "d", "e", "f"}),
                      ti64(1, SHAPE(2), IVALS(2, 0))};
    run_op("ArrayFeatureExtractor", "ref", s, 2, NULL, &y, 1);
    op_expect_shape(&y, 2, SHAPE(2, 2));
    expect_words(&y, (const char *[]){"c", "a", "f", "d"}, 4);
    op_free_all((d5_tensor[]){in[0], in[1], s[0], s[1], y}, 5);
}

Test(array_feature_extractor, refuses_positions_out_of_range_at_create_or_forward)
{
    d5_tensor in[2] = {op_iota(2, SHAPE(2, 3)), ti64(1, SHAPE(2), IVALS(0, 3))};
    op_expect_fails("ArrayFeatureExtractor", in, 2, NULL, 1, D5_ERR_RANGE,
                    "input Y's element 1 is 3, outside [0, 3)");
    /* Y unknown at create: the forward call checks */
    const d5_op_desc *desc;
    cr_assert_eq(d5_op_find("ArrayFeatureExtractor", "ref", &desc), D5_OK);
    d5_tensor_desc descs[2] = {in[0].desc, in[1].desc};
    d5_op *op;
    cr_assert_eq(d5_op_create_desc(desc, descs, 2, NULL, 1, &op), D5_OK, "%s", d5_last_error());
    d5_tensor y;
    cr_assert_eq(d5_tensor_alloc(d5_op_output_desc(op, 0), &y), D5_OK);
    ((int64_t *)in[1].data)[1] = -1;
    cr_expect_eq(d5_op_forward(op, in, &y), D5_ERR_RANGE);
    cr_expect(strstr(d5_last_error(), "is -1, outside") != NULL, "%s", d5_last_error());
    d5_op_free(op);
    d5_tensor scalar[2] = {tf32(0, NULL, VALS(1)), ti64(1, SHAPE(1), IVALS(0))};
    op_expect_fails("ArrayFeatureExtractor", scalar, 2, NULL, 1, D5_ERR_SHAPE, "scalar");
    d5_tensor i32 = traw(D5_I32, 1, SHAPE(1), (const int32_t[]){0});
    d5_tensor wrong[2] = {in[0], i32};
    op_expect_fails("ArrayFeatureExtractor", wrong, 2, NULL, 1, D5_ERR_UNSUPPORTED,
                    "ArrayFeatureExtractor: input 1 has data type int32");
    op_free_all((d5_tensor[]){in[0], in[1], y, scalar[0], scalar[1], i32}, 6);
}

/* ---- Binarizer ---- */

Test(binarizer, maps_values_above_the_threshold_to_one)
{
    /* threshold 1: 1.0 itself and NaN give 0 */
    d5_tensor x = tf32(1, SHAPE(6), VALS(-1, 0.5f, 1, 1.5f, NAN, 3));
    d5_attr a = attr_float("threshold", 1.0);
    d5_attrs attrs = {&a, 1};
    expect_op_values("Binarizer", &x, 1, &attrs, VALS(0, 0, 0, 1, 0, 1), 6, 0);
    d5_tensor_free(&x);
    /* int32, default threshold 0 */
    d5_tensor xi = traw(D5_I32, 1, SHAPE(3), (const int32_t[]){-2, 0, 5}), y;
    run_op("Binarizer", "ref", &xi, 1, NULL, &y, 1);
    cr_assert_eq(y.desc.dtype, D5_I32);
    const int32_t *g = y.data;
    cr_expect(g[0] == 0 && g[1] == 0 && g[2] == 1, "got %d %d %d", g[0], g[1], g[2]);
    d5_tensor u8 = traw(D5_U8, 1, SHAPE(1), (const uint8_t[]){1});
    op_expect_fails("Binarizer", &u8, 1, NULL, 1, D5_ERR_UNSUPPORTED,
                    "Binarizer: input 0 has data type uint8");
    op_free_all((d5_tensor[]){xi, y, u8}, 3);
}

/* ---- TreeEnsemble ---- */

Test(tree_ensemble, follows_onnx_single_tree_with_tensor_attributes)
{
    /* ONNX's test_ai_onnx_ml_tree_ensemble_single_tree: node 0 (x0 <= 3.14)
     * -> node 1 (x0 <= 1.2: leaves 0 / 2) or node 2 (x0 <= 4.2: leaves 1 / 3).
     * Rows x0 = 1.2, -0.12, 4.14: leaf 0 (5.23 to target 0), leaf 0, leaf 1
     * (12.12 to target 1). */
    d5_tensor modes = traw(D5_U8, 1, SHAPE(3), (const uint8_t[]){0, 0, 0});
    d5_tensor splits = traw(D5_F64, 1, SHAPE(3), (const double[]){3.14, 1.2, 4.2});
    d5_tensor weights = traw(D5_F64, 1, SHAPE(4), (const double[]){5.23, 12.12, -12.23, 7.21});
    d5_attr a[] = {attr_int("n_targets", 2),
                   attr_ints("tree_roots", IVALS(0), 1),
                   attr_tensor("nodes_modes", &modes),
                   attr_ints("nodes_featureids", IVALS(0, 0, 0), 3),
                   attr_tensor("nodes_splits", &splits),
                   attr_ints("nodes_truenodeids", IVALS(1, 0, 1), 3),
                   attr_ints("nodes_trueleafs", IVALS(0, 1, 1), 3),
                   attr_ints("nodes_falsenodeids", IVALS(2, 2, 3), 3),
                   attr_ints("nodes_falseleafs", IVALS(0, 1, 1), 3),
                   attr_ints("leaf_targetids", IVALS(0, 1, 0, 1), 4),
                   attr_tensor("leaf_weights", &weights)};
    d5_attrs attrs = attrs_of(a, 11);
    /* float64 X, as ONNX's test: in float32, 1.2 would exceed the split 1.2 */
    d5_tensor x = traw(D5_F64, 2, SHAPE(3, 2), (const double[]){1.2, 3.4, -0.12, 1.66, 4.14, 1.77});
    d5_tensor y;
    run_op("TreeEnsemble", "ref", &x, 1, &attrs, &y, 1);
    op_expect_shape(&y, 2, SHAPE(3, 2));
    expect_values(&y, VALS(5.23f, 0, 5.23f, 0, 0, 12.12f), 6, 1e-6);
    op_free_all((d5_tensor[]){modes, splits, weights, x, y}, 5);
}

Test(tree_ensemble, tests_set_membership)
{
    /* ONNX's test_ai_onnx_ml_tree_ensemble_set_membership: node 0 (x <= 11)
     * -> node 1 (x in {1.2, 3.7, 8, 9}: leaf 0, else node 2) or leaf 2; node 2
     * (x in {12, 7}: leaf 1, else leaf 3). Leaf k adds w[k] to target k. */
    const double members[] = {1.2f, 3.7f, 8, 9, NAN, 12, 7, NAN};
    d5_attr a[] = {attr_int("n_targets", 4),
                   attr_ints("tree_roots", IVALS(0), 1),
                   attr_ints("nodes_modes", IVALS(0, 6, 6), 3),
                   attr_ints("nodes_featureids", IVALS(0, 0, 0), 3),
                   attr_floats("nodes_splits", (const double[]){11, 232344.0, NAN}, 3),
                   attr_ints("nodes_truenodeids", IVALS(1, 0, 1), 3),
                   attr_ints("nodes_trueleafs", IVALS(0, 1, 1), 3),
                   attr_ints("nodes_falsenodeids", IVALS(2, 2, 3), 3),
                   attr_ints("nodes_falseleafs", IVALS(1, 0, 1), 3),
                   attr_ints("leaf_targetids", IVALS(0, 1, 2, 3), 4),
                   attr_floats("leaf_weights", (const double[]){1, 10, 1000, 100}, 4),
                   attr_floats("membership_values", members, 8)};
    d5_attrs attrs = attrs_of(a, 12);
    d5_tensor x = tf32(2, SHAPE(6, 1), VALS(1.2f, 3.4f, -0.12f, NAN, 12, 7));
    op_check(
        "TreeEnsemble", &x, 1, &attrs, 2, SHAPE(6, 4),
        VALS(1, 0, 0, 0, 0, 0, 0, 100, 0, 0, 0, 100, 0, 0, 1000, 0, 0, 0, 1000, 0, 0, 10, 0, 0));
    /* a set of mode 6 with no NaN-ended set left */
    a[11] = attr_floats("membership_values", members, 5);
    x = tf32(2, SHAPE(1, 1), VALS(1));
    op_check_fails("TreeEnsemble", &x, 1, &attrs, 1, D5_ERR_INVALID,
                   "no NaN-ended set left for node 2");
    attrs.count = 11;
    x = tf32(2, SHAPE(1, 1), VALS(1));
    op_check_fails("TreeEnsemble", &x, 1, &attrs, 1, D5_ERR_INVALID,
                   "membership_values is required: node 1 has mode 6");
}

Test(tree_ensemble, finds_members_of_a_set_given_in_any_order)
{
    /* one node: x in {9, 3, 5, 1} ? 1 : 0 */
    d5_attr a[] = {attr_int("n_targets", 1),
                   attr_ints("tree_roots", IVALS(0), 1),
                   attr_ints("nodes_modes", IVALS(6), 1),
                   attr_ints("nodes_featureids", IVALS(0), 1),
                   attr_floats("nodes_splits", (const double[]){0}, 1),
                   attr_ints("nodes_truenodeids", IVALS(0), 1),
                   attr_ints("nodes_trueleafs", IVALS(1), 1),
                   attr_ints("nodes_falsenodeids", IVALS(1), 1),
                   attr_ints("nodes_falseleafs", IVALS(1), 1),
                   attr_ints("leaf_targetids", IVALS(0, 0), 2),
                   attr_floats("leaf_weights", (const double[]){1, 0}, 2),
                   attr_floats("membership_values", (const double[]){9, 3, 5, 1, NAN}, 5)};
    d5_attrs attrs = attrs_of(a, 12);
    d5_tensor x = tf32(2, SHAPE(6, 1), VALS(1, 3, 5, 9, 4, NAN));
    op_check("TreeEnsemble", &x, 1, &attrs, 2, SHAPE(6, 1), VALS(1, 1, 1, 1, 0, 0));
    /* values after the last set are refused */
    a[11] = attr_floats("membership_values", (const double[]){9, NAN, 2}, 3);
    x = tf32(2, SHAPE(1, 1), VALS(1));
    op_check_fails("TreeEnsemble", &x, 1, &attrs, 1, D5_ERR_INVALID, "values after the 1 sets");
}

/* Two trees on two features into three targets (f32 X):
 * tree 0: x0 <= 0.5 ? leaf 0 (1 to target 0) : leaf 1 (2 to target 1);
 * tree 1: x1 < 0 ? leaf 2 (4 to target 0) : leaf 3 (-3 to target 0).
 * Rows (0.2, -1) and (0.9, 1) reach leaves 0, 2 and 1, 3. */
static const double two_weights[] = {1, 2, 4, -3}, two_splits[] = {0.5, 0};
static const int64_t two_roots[] = {0, 1}, two_modes[] = {0, 1}, two_features[] = {0, 1},
                     two_true[] = {0, 2}, two_false[] = {1, 3}, two_leafs[] = {1, 1},
                     two_targets[] = {0, 1, 0, 0};

static d5_attrs two_trees(d5_attr *a, int64_t aggregate, int64_t post)
{
    int32_t n = 0;
    a[n++] = attr_int("n_targets", 3);
    a[n++] = attr_ints("tree_roots", two_roots, 2);
    a[n++] = attr_ints("nodes_modes", two_modes, 2);
    a[n++] = attr_ints("nodes_featureids", two_features, 2);
    a[n++] = attr_floats("nodes_splits", two_splits, 2);
    a[n++] = attr_ints("nodes_truenodeids", two_true, 2);
    a[n++] = attr_ints("nodes_trueleafs", two_leafs, 2);
    a[n++] = attr_ints("nodes_falsenodeids", two_false, 2);
    a[n++] = attr_ints("nodes_falseleafs", two_leafs, 2);
    a[n++] = attr_ints("leaf_targetids", two_targets, 4);
    a[n++] = attr_floats("leaf_weights", two_weights, 4);
    a[n++] = attr_int("aggregate_function", aggregate);
    a[n++] = attr_int("post_transform", post);
    return attrs_of(a, n);
}

static void expect_two_trees(int64_t aggregate, int64_t post, const float *want, double tol)
{
    d5_attr a[16];
    d5_attrs attrs = two_trees(a, aggregate, post);
    d5_tensor x = tf32(2, SHAPE(2, 2), VALS(0.2f, -1, 0.9f, 1)), y;
    run_op("TreeEnsemble", "ref", &x, 1, &attrs, &y, 1);
    op_expect_shape(&y, 2, SHAPE(2, 3));
    expect_values(&y, want, 6, tol);
    op_free_all((d5_tensor[]){x, y}, 2);
}

Test(tree_ensemble, aggregates_by_sum_average_min_and_max)
{
    /* row 0: target 0 gets 1 and 4; row 1: target 0 gets -3, target 1 gets 2 */
    expect_two_trees(1, 0, VALS(5, 0, 0, -3, 2, 0), 0);
    expect_two_trees(0, 0, VALS(2.5f, 0, 0, -1.5f, 1, 0), 0); /* each leaf / 2 trees */
    /* a target no leaf reaches keeps float32's largest (MIN) or lowest (MAX) */
    expect_two_trees(2, 0, VALS(1, FLT_MAX, FLT_MAX, -3, 2, FLT_MAX), 0);
    expect_two_trees(3, 0, VALS(4, -FLT_MAX, -FLT_MAX, -3, 2, -FLT_MAX), 0);
}

Test(tree_ensemble, applies_the_post_transforms)
{
    /* on the sums [5, 0, 0] and [-3, 2, 0], numpy: */
    expect_two_trees(
        1, 1,
        VALS(0.986703291f, 0.006648354f, 0.006648354f, 0.00589975f, 0.875600595f, 0.118499655f),
        1e-6);
    expect_two_trees(1, 2, VALS(0.993307149f, 0.5f, 0.5f, 0.047425873f, 0.880797078f, 0.5f), 1e-6);
    /* softmax_zero: zeros stay zero */
    expect_two_trees(1, 3, VALS(1, 0, 0, 0.006692851f, 0.993307149f, 0), 1e-6);
    /* probit of one tree's leaves 0.25 and 0.9 */
    d5_attr a[] = {attr_int("n_targets", 1),
                   attr_ints("tree_roots", IVALS(0), 1),
                   attr_ints("nodes_modes", IVALS(3), 1),
                   attr_ints("nodes_featureids", IVALS(0), 1),
                   attr_floats("nodes_splits", (const double[]){0}, 1),
                   attr_ints("nodes_truenodeids", IVALS(0), 1),
                   attr_ints("nodes_trueleafs", IVALS(1), 1),
                   attr_ints("nodes_falsenodeids", IVALS(1), 1),
                   attr_ints("nodes_falseleafs", IVALS(1), 1),
                   attr_ints("leaf_targetids", IVALS(0, 0), 2),
                   attr_floats("leaf_weights", (const double[]){0.25, 0.9}, 2),
                   attr_int("post_transform", 4)};
    d5_attrs attrs = attrs_of(a, 12);
    d5_tensor x = tf32(2, SHAPE(2, 1), VALS(1, -1));
    op_check("TreeEnsemble", &x, 1, &attrs, 2, SHAPE(2, 1), VALS(-0.674574246f, 1.281712897f));
}

/* One node of `mode` (split 1) on x0: leaf 0 (1) when true, leaf 1 (0) when
 * false; nan_true sets nodes_missing_value_tracks_true. */
static void expect_mode(int64_t mode, int64_t nan_true, const float *want)
{
    d5_attr a[] = {attr_int("n_targets", 1),
                   attr_ints("tree_roots", IVALS(0), 1),
                   attr_ints("nodes_modes", &mode, 1),
                   attr_ints("nodes_featureids", IVALS(0), 1),
                   attr_floats("nodes_splits", (const double[]){1}, 1),
                   attr_ints("nodes_truenodeids", IVALS(0), 1),
                   attr_ints("nodes_trueleafs", IVALS(1), 1),
                   attr_ints("nodes_falsenodeids", IVALS(1), 1),
                   attr_ints("nodes_falseleafs", IVALS(1), 1),
                   attr_ints("leaf_targetids", IVALS(0, 0), 2),
                   attr_floats("leaf_weights", (const double[]){1, 0}, 2),
                   attr_ints("nodes_missing_value_tracks_true", &nan_true, 1)};
    d5_attrs attrs = attrs_of(a, 12);
    d5_tensor x = tf32(2, SHAPE(4, 1), VALS(0.5f, 1, 1.5f, NAN));
    cr_log_info("mode %lld, nan_true %lld", (long long)mode, (long long)nan_true);
    op_check("TreeEnsemble", &x, 1, &attrs, 2, SHAPE(4, 1), want);
}

Test(tree_ensemble, compares_by_each_mode_and_sends_nan_where_told)
{
    /* x = 0.5, 1, 1.5, NaN against 1 */
    expect_mode(0, 0, VALS(1, 1, 0, 0)); /* <= */
    expect_mode(1, 0, VALS(1, 0, 0, 0)); /* < */
    expect_mode(2, 0, VALS(0, 1, 1, 0)); /* >= */
    expect_mode(3, 0, VALS(0, 0, 1, 0)); /* > */
    expect_mode(4, 0, VALS(0, 1, 0, 0)); /* == */
    expect_mode(5, 0, VALS(1, 0, 1, 1)); /* != (NaN != 1) */
    expect_mode(3, 1, VALS(0, 0, 1, 1)); /* NaN takes the true branch */
}

Test(tree_ensemble, takes_a_root_with_one_leaf_as_that_leaf)
{
    /* both branches leaf 0: the node's feature (5, beyond X's 1) is never read */
    d5_attr a[] = {attr_int("n_targets", 1),
                   attr_ints("tree_roots", IVALS(0), 1),
                   attr_ints("nodes_modes", IVALS(0), 1),
                   attr_ints("nodes_featureids", IVALS(5), 1),
                   attr_floats("nodes_splits", (const double[]){0}, 1),
                   attr_ints("nodes_truenodeids", IVALS(0), 1),
                   attr_ints("nodes_trueleafs", IVALS(1), 1),
                   attr_ints("nodes_falsenodeids", IVALS(0), 1),
                   attr_ints("nodes_falseleafs", IVALS(1), 1),
                   attr_ints("leaf_targetids", IVALS(0), 1),
                   attr_floats("leaf_weights", (const double[]){7.5}, 1)};
    d5_attrs attrs = attrs_of(a, 11);
    d5_tensor x = tf32(2, SHAPE(2, 1), VALS(-4, 4));
    /* no comparison: the cost is one operation per row and target */
    const d5_op_desc *desc;
    d5_op *op;
    double flops, bytes;
    cr_assert_eq(d5_op_find("TreeEnsemble", "ref", &desc), D5_OK);
    cr_assert_eq(d5_op_create_desc(desc, &x.desc, 1, &attrs, 1, &op), D5_OK, "%s", d5_last_error());
    d5_op_cost(op, &flops, &bytes);
    cr_expect_eq(flops, 2.0, "flops %g", flops);
    d5_op_free(op);
    op_check("TreeEnsemble", &x, 1, &attrs, 2, SHAPE(2, 1), VALS(7.5f, 7.5f));
}

/* Runs the two-tree ensemble with attribute k replaced and expects failure. */
static void expect_two_trees_fail(int32_t k, d5_attr replace, d5_status status, const char *text)
{
    d5_attr a[16];
    d5_attrs attrs = two_trees(a, 1, 0);
    a[k] = replace;
    d5_tensor x = tf32(2, SHAPE(2, 2), NULL);
    op_check_fails("TreeEnsemble", &x, 1, &attrs, 1, status, text);
}

Test(tree_ensemble, refuses_malformed_trees_naming_the_attribute)
{
    /* node 0's true branch to node 1 and node 1's to node 0 */
    d5_attr a[16];
    d5_attrs attrs = two_trees(a, 1, 0);
    a[6] = attr_ints("nodes_trueleafs", IVALS(0, 0), 2);
    a[5] = attr_ints("nodes_truenodeids", IVALS(1, 0), 2);
    d5_tensor x = tf32(2, SHAPE(2, 2), NULL);
    op_check_fails("TreeEnsemble", &x, 1, &attrs, 1, D5_ERR_INVALID, "the nodes form a cycle");
    expect_two_trees_fail(3, attr_ints("nodes_featureids", IVALS(0, 2), 2), D5_ERR_RANGE,
                          "nodes_featureids[1] is 2; X has 2 features");
    expect_two_trees_fail(9, attr_ints("leaf_targetids", IVALS(0, 1, 3, 0), 4), D5_ERR_RANGE,
                          "leaf_targetids[2] is 3; n_targets is 3");
    expect_two_trees_fail(2, attr_ints("nodes_modes", IVALS(0, 7), 2), D5_ERR_INVALID,
                          "nodes_modes[1] is 7; expected 0 to 6");
    expect_two_trees_fail(7, attr_ints("nodes_falsenodeids", IVALS(1, 4), 2), D5_ERR_RANGE,
                          "nodes_falsenodeids[1] is 4, not a leaf (0 to 3)");
    expect_two_trees_fail(4, attr_floats("nodes_splits", two_weights, 3), D5_ERR_INVALID,
                          "nodes_splits has 3 values, nodes_modes 2");
    expect_two_trees_fail(1, attr_ints("tree_roots", IVALS(2), 1), D5_ERR_RANGE,
                          "tree_roots[0] is 2, not a node");
    expect_two_trees_fail(0, attr_int("n_targets", 0), D5_ERR_INVALID, "n_targets is below 1");
    expect_two_trees_fail(11, attr_int("aggregate_function", 4), D5_ERR_INVALID,
                          "aggregate_function is 4");
    expect_two_trees_fail(12, attr_int("post_transform", 5), D5_ERR_INVALID, "post_transform is 5");
    expect_two_trees_fail(10, attr_string("leaf_weights", "1"), D5_ERR_INVALID,
                          "leaf_weights must be a tensor");
    x = tf32(1, SHAPE(2), NULL);
    attrs = two_trees(a, 1, 0);
    op_check_fails("TreeEnsemble", &x, 1, &attrs, 1, D5_ERR_SHAPE, "input X has 1 dims");
}
