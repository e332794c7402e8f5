/* ONNX's control flow, sequence and optional node tests: each must pass (not
 * merely be skipped) on the reference operators and on the default
 * backends; and the SequenceProto and OptionalProto files they hold. */
#include "onnx_support.h"
#include "support.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

static const char *const cases[] = {"test_if",
                                    "test_if_seq",
                                    "test_if_opt",
                                    "test_loop11",
                                    "test_loop13_seq",
                                    "test_loop16_seq_none",
                                    "test_scan_sum",
                                    "test_scan9_sum",
                                    "test_range_float_type_positive_delta_expanded",
                                    "test_range_int32_type_negative_delta_expanded",
                                    "test_identity_opt",
                                    "test_identity_sequence",
                                    "test_optional_get_element",
                                    "test_optional_get_element_sequence",
                                    "test_optional_has_element",
                                    "test_optional_has_element_empty",
                                    "test_sequence_insert_at_back",
                                    "test_sequence_insert_at_front",
                                    "test_sequence_map_add_1_sequence_1_tensor",
                                    "test_sequence_map_add_1_sequence_1_tensor_expanded",
                                    "test_sequence_map_add_2_sequences",
                                    "test_sequence_map_add_2_sequences_expanded",
                                    "test_sequence_map_extract_shapes",
                                    "test_sequence_map_extract_shapes_expanded",
                                    "test_sequence_map_identity_1_sequence",
                                    "test_sequence_map_identity_1_sequence_expanded",
                                    "test_sequence_map_identity_1_sequence_1_tensor",
                                    "test_sequence_map_identity_1_sequence_1_tensor_expanded",
                                    "test_sequence_map_identity_2_sequences",
                                    "test_sequence_map_identity_2_sequences_expanded"};

static void run_all(const char *backend)
{
    char dir[512];
    if (!path_exists(TESTDATA "/node/test_if")) cr_skip_test("no libonnx-testdata");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(dir, sizeof dir, "%s/node/%s", TESTDATA, cases[i]);
        d5_onnx_test_params p = d5_onnx_test_default_params();
        p.backend = backend;
        d5_onnx_test_result r;
        cr_assert_eq(d5_onnx_test_run(dir, &p, &r), D5_OK, "%s: %s", cases[i], d5_last_error());
        cr_expect_eq(r.outcome, D5_ONNX_TEST_PASS, "%s on %s: %s", cases[i],
                     backend ? backend : "the default backends", r.detail);
        cr_expect_geq(r.datasets, 1, "%s", cases[i]);
    }
}

Test(onnx_control, node_tests_pass_on_ref, .timeout = D5_TIMEOUT(300))
{
    run_all("ref");
}

Test(onnx_control, node_tests_pass_on_the_default_backends, .timeout = D5_TIMEOUT(300))
{
    run_all(NULL);
}

Test(onnx_control, value_files)
{
    const char *seq = TESTDATA "/node/test_sequence_insert_at_back/test_data_set_0/input_0.pb";
    if (!path_exists(seq)) cr_skip_test("no libonnx-testdata");
    d5_value v;
    char *name = NULL;
    cr_assert_eq(d5_onnx_value_read(seq, D5_TYPE_SEQUENCE, &v, &name), D5_OK, "%s",
                 d5_last_error());
    cr_expect_eq(v.type, D5_TYPE_SEQUENCE);
    cr_expect_eq(v.count, 3);
    cr_expect_eq(v.dtype, D5_I64);
    cr_expect_str_eq(name, "sequence");
    d5_free(name);
    d5_value_free(&v);
    cr_expect_eq(v.items, NULL);

    const char *none = TESTDATA "/node/test_optional_has_element_empty/test_data_set_0/input_0.pb";
    cr_assert_eq(d5_onnx_value_read(none, D5_TYPE_OPTIONAL, &v, NULL), D5_OK, "%s",
                 d5_last_error());
    cr_expect_eq(v.present, 0);
    cr_expect_eq(v.count, 0);
    d5_value_free(&v);

    /* A sequence of maps, by its element type: not a d5 value. */
    char *dir = tmpdir_make();
    write_text(dir, "map.pb", "\x0a\x01s\x10\x04");
    char *path = path_join(dir, "map.pb");
    cr_expect_eq(d5_onnx_value_read(path, D5_TYPE_SEQUENCE, &v, NULL), D5_ERR_UNSUPPORTED);
    EXPECT_HAS(d5_last_error(), path, "a sequence of a map; d5 supports sequences of tensors");
    /* Not a protobuf message. */
    write_text(dir, "bad.pb", "\xff\xff\xff");
    free(path);
    path = path_join(dir, "bad.pb");
    cr_expect_eq(d5_onnx_value_read(path, D5_TYPE_OPTIONAL, &v, NULL), D5_ERR_FORMAT);
    EXPECT_HAS(d5_last_error(), path, "not an ONNX OptionalProto");
    cr_expect_eq(v.items, NULL, "nothing is left half-read");
    free(path);
    rmtree(dir);
    free(dir);
}
