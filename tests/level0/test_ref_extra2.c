/* The operators of ref/ops_extra2.def and Resize's cubic mode and
 * tf_crop_and_resize. Expected values come from torch 1.13
 * (torch.nn.functional.interpolate and grid_sample, in float64), from the
 * numpy implementation in ONNX 1.12's backend test cases
 * (onnx/backend/test/case/node/resize.py: interpolate_nd), or by hand where
 * stated; gradients are checked against central differences in float64. */
#include "more_support.h"

#include <criterion/criterion.h>
#include <string.h>

static d5_tensor omitted(void)
{
    d5_tensor t;
    memset(&t, 0, sizeof t);
    return t;
}

/* X [1, 1, 3, 4]: 0..11 with element (1, 2) set to 20. */
static d5_tensor resize_x(void)
{
    return f64(4, SHAPE(1, 1, 3, 4), DV(0, 1, 2, 3, 4, 5, 20, 7, 8, 9, 10, 11));
}

/* Runs Resize with every input known at create and checks Y. */
static void resize_check(d5_tensor *in, int32_t nin, const d5_attrs *attrs, const int64_t *shape,
                         const double *want)
{
    d5_tensor y;
    cr_assert_eq(run_known("Resize", in, nin, attrs, &y, NULL, NULL), D5_OK, "%s", d5_last_error());
    expect_tensor(&y, D5_F64, 4, shape, want, 1e-12, "Resize");
    d5_tensor_free(&y);
    op_free_all(in, nin);
}

Test(resize_cubic, half_pixel_and_align_corners_against_torch)
{
    /* interpolate(X, size=(5, 7), mode='bicubic', align_corners=False) */
    d5_tensor in[4] = {resize_x(), omitted(), omitted(), ti64(1, SHAPE(4), IVALS(1, 1, 5, 7))};
    resize_check(in, 4, ATTRS(attr_string("mode", "cubic")), SHAPE(1, 1, 5, 7),
                 DV(-0.4832164723032071, -0.022101311953353367, 0.574674198250728,
                    0.31799999999999806, 0.3902237609329409, 1.7961421282798804, 2.8485634110787172,
                    1.1647835276967877, 1.147199708454802, 1.8631180758017414, 6.5877499999999936,
                    9.73641253644314, 6.575188046647222, 3.72426239067055, 3.9007835276967913,
                    3.4182762390670476, 4.249908892128275, 13.8125, 19.949070699708457,
                    12.352131924198249, 5.7101858600583135, 6.636783527696785, 6.619199708454799,
                    7.33511807580174, 12.059749999999996, 15.208412536443147, 12.047188046647221,
                    9.196262390670556, 8.284783527696792, 8.745898688046646, 9.342674198250728,
                    9.086000000000002, 9.158223760932946, 10.564142128279883, 11.61656341107873));
    /* interpolate(X, size=(2, 6), mode='bicubic', align_corners=True) */
    d5_tensor in2[4] = {resize_x(), omitted(), omitted(), ti64(1, SHAPE(4), IVALS(1, 1, 2, 6))};
    resize_check(in2, 4,
                 ATTRS(attr_string("mode", "cubic"),
                       attr_string("coordinate_transformation_mode", "align_corners")),
                 SHAPE(1, 1, 2, 6),
                 DV(0.0, 0.504, 1.248, 1.752, 2.496, 3.0, 8.0, 8.504, 9.248, 9.752, 10.496, 11.0));
}

Test(resize_cubic, exclude_outside_with_a_minus_half_against_onnx_numpy)
{
    /* interpolate_nd(X, lambda r: cubic_coeffs(r, A=-0.5), scale_factors=[1, 1,
     * 0.8, 1.6], exclude_outside=True) */
    d5_tensor in[3] = {resize_x(), omitted(), f64(1, SHAPE(4), DV(1, 1, 0.8, 1.6))};
    resize_check(in, 3,
                 ATTRS(attr_string("mode", "cubic"), attr_float("cubic_coeff_a", -0.5),
                       attr_int("exclude_outside", 1)),
                 SHAPE(1, 1, 2, 6),
                 DV(0.22254567839247824, 0.5778535660351802, 1.4039562612855312, 2.9547224942480197,
                    3.6029378241780954, 3.3061034224770993, 5.701664486242617, 5.6268293758732835,
                    7.21367146391195, 15.282505417226963, 15.708282737040063, 9.106981249693673));
}

/* interpolate_nd(X, linear_coeffs / cubic_coeffs, output_size=[1, 1, 3, 4],
 * roi=[0, 0, 0.2, -0.3, 1, 1, 0.9, 0.8],
 * coordinate_transformation_mode='tf_crop_and_resize',
 * extrapolation_value=-7) in `mode`: the first column maps left of the input. */
static void crop_and_resize(const char *mode, const double *want)
{
    const double roi[] = {0, 0, 0.2, -0.3, 1, 1, 0.9, 0.8};
    d5_tensor in[4] = {resize_x(), f64(1, SHAPE(8), roi), omitted(),
                       ti64(1, SHAPE(4), IVALS(1, 1, 3, 4))};
    resize_check(in, 4,
                 ATTRS(attr_string("mode", mode),
                       attr_string("coordinate_transformation_mode", "tf_crop_and_resize"),
                       attr_float("extrapolation_value", -7)),
                 SHAPE(1, 1, 3, 4), want);
}

Test(resize_crop, tf_crop_and_resize_with_extrapolation_against_onnx_numpy)
{
    crop_and_resize("linear",
                    DV(-7.0, 1.8, 4.58, 7.36, -7.0, 4.6, 9.48, 14.36, -7.0, 7.4, 9.34, 11.28));
    crop_and_resize("cubic", DV(-7.0, 1.26144, 4.70705, 8.3968, -7.0, 4.39414, 10.383440625,
                                16.9328, -7.0, 7.4768, 9.6475, 11.904));
}

Test(resize_crop, roi_of_the_wrong_length_is_named)
{
    d5_tensor in[4] = {resize_x(), f64(1, SHAPE(4), DV(0, 0, 1, 1)), omitted(),
                       ti64(1, SHAPE(4), IVALS(1, 1, 3, 4))};
    d5_tensor y;
    d5_status s = run_known(
        "Resize", in, 4, ATTRS(attr_string("coordinate_transformation_mode", "tf_crop_and_resize")),
        &y, NULL, NULL);
    cr_assert_eq(s, D5_ERR_INVALID);
    cr_assert(strstr(d5_last_error(), "roi (input 1) has 4 values, expected 8"), "%s",
              d5_last_error());
    op_free_all(in, 4);
}

Test(resize_cubic, gradient_of_x)
{
    d5_tensor given[4] = {omitted(), omitted(), omitted(), ti64(1, SHAPE(4), IVALS(1, 2, 5, 3))};
    d5_tensor_desc d[4] = {op_fdesc(4, SHAPE(1, 2, 3, 4)), {0}, {0}, given[3].desc};
    expect_gradient("Resize", d, 4, given,
                    ATTRS(attr_string("mode", "cubic"), attr_int("exclude_outside", 1)), 1);
    d5_tensor_free(&given[3]);
}

/* ---- GridSample ---- */

/* torch.nn.functional.grid_sample(X, G, mode, padding_mode, align_corners)
 * in float64, for X [1, 2, 3, 4] and G [1, 2, 3, 2] below: points inside,
 * on the corner and outside the image. */
static const struct {
    const char *mode, *padding;
    int align;
    double y[12];
} grid_cases[] = {
    {"bilinear", "zeros", 0, {0.25, -2.185, 0.5, 0, 9.935, 0, 0, 0.19, 0.085, 0, 3.555, 0}},
    {"bilinear", "zeros", 1, {1, 0.1675, 4.2, 3.44, 8.870625, 0, 0, 1.175, 0.63, 0.84, 3.08375, 0}},
    {"bilinear", "border", 0, {1, -2.3, 5, 9, 9.935, 4, 0, 0.2, 0.85, 2, 3.555, 2}},
    {"bilinear", "border", 1, {1, 0.1675, 6, 8.6, 8.870625, 4, 0, 1.175, 0.9, 2.1, 3.08375, 2}},
    {"bilinear", "reflection", 0, {1, -2.3, 5, 9.3, 9.935, 4.8275, 0, 0.2, 0.85, 2, 3.555, 1.83}},
    {"bilinear",
     "reflection",
     1,
     {1, 0.1675, 6.42, 9.23, 8.870625, 5.47, 0, 1.175, 1.86, 1.92, 3.08375, 1.14}},
    {"nearest", "zeros", 0, {1, -3, 0, 0, 11, 0, 0, 0, 0, 0, 5, 0}},
    {"nearest", "zeros", 1, {1, -3, 8, 0, 11, 0, 0, 0, 1, 0, 5, 0}},
    {"nearest", "border", 0, {1, -3, 8, 9, 11, 4, 0, 0, 1, 2, 5, 2}},
    {"nearest", "border", 1, {1, -3, 8, 9, 11, 4, 0, 0, 1, 2, 5, 2}},
    {"nearest", "reflection", 0, {1, -3, 8, 9, 11, 5, 0, 0, 1, 2, 5, 3}},
    {"nearest", "reflection", 1, {1, -3, 8, 10, 11, 6.5, 0, 0, 1, 2, 5, 0}},
    {"bicubic",
     "zeros",
     0,
     {0.02001953125, -2.9305063398437494, 0.43968436718749992, -0.71080242187499865,
      13.5422484921875, 0, -0.22265625, -0.019390390624999622, 0.039663437500000676,
      -0.1348598671874997, 4.5349264687500002, 0}},
    {"bicubic",
     "zeros",
     1,
     {1, -0.8133940976562416, 4.538337562499998, 3.5077819999999922, 12.334072587707517, 0, 0,
      1.0242992656250038, 0.2320368750000007, 0.88247099999999867, 4.0691445671386726, 0}},
    {"bicubic",
     "border",
     0,
     {0.53564453125, -3.0628444179687411, 5.7541477343750094, 9.443624999999999, 12.365924304687505,
      3.9999999999999964, -0.41015625, -0.028529101562497584, 0.76631422656250192,
      1.8890937499999998, 4.1440095000000019, 1.9999999999999982}},
    {"bicubic",
     "border",
     1,
     {1, -0.47839258203124058, 6.4560918749999816, 8.6238049999999973, 10.998078560852056,
      3.9730000000000087, 0, 1.0272312265625039, 0.47493056249999993, 2.1219060000000005,
      3.6322419412841827, 2.0067500000000011}},
    {"bicubic",
     "reflection",
     0,
     {0.080078125, -3.080375703125005, 5.5991023437500118, 9.8864167968749932, 12.365924304687505,
      4.5876293867187492, -0.890625, -0.035464843750003035, 0.54386101562500355, 1.8385001562499967,
      4.1440095000000019, 1.7730112265624982}},
    {"bicubic",
     "reflection",
     1,
     {1, -1.5795402968749921, 6.7617060000000073, 9.3786980000000018, 11.639473970947266,
      5.2064380000000048, 0, 0.59003140625000339, 1.637119687500004, 1.6625550000000029,
      3.8221662265625018, 0.87714900000000384}},
};

static d5_tensor grid_x(void)
{
    return f64(4, SHAPE(1, 2, 3, 4),
               DV(1, 2, -3, 4, 5, 6.5, 7, 8, 9, 10, 11, -12, 0, 1, 0, 2, 3, 0, 4, 1, 2, 2, 5, 0));
}

static d5_tensor grid_g(void)
{
    return f64(4, SHAPE(1, 2, 3, 2),
               DV(-1, -1, 0.3, -0.7, 1.2, 0.1, -1.4, 0.9, 0.05, 0.55, 2.6, -1.9));
}

Test(gridsample, every_mode_padding_and_alignment_against_torch)
{
    for (size_t k = 0; k < sizeof grid_cases / sizeof grid_cases[0]; k++) {
        d5_tensor in[2] = {grid_x(), grid_g()};
        d5_tensor y;
        cr_assert_eq(run_known("GridSample", in, 2,
                               ATTRS(attr_string("mode", grid_cases[k].mode),
                                     attr_string("padding_mode", grid_cases[k].padding),
                                     attr_int("align_corners", grid_cases[k].align)),
                               &y, NULL, NULL),
                     D5_OK, "%s", d5_last_error());
        char what[96];
        snprintf(what, sizeof what, "GridSample %s %s align_corners=%d", grid_cases[k].mode,
                 grid_cases[k].padding, grid_cases[k].align);
        expect_tensor(&y, D5_F64, 4, SHAPE(1, 2, 2, 3), grid_cases[k].y, 1e-12, what);
        d5_tensor_free(&y);
        op_free_all(in, 2);
    }
}

Test(gridsample, float32_and_bad_inputs)
{
    /* The first case in float32: the same values within float32's precision. */
    const double x[] = {1, 2, -3, 4, 5, 6.5, 7, 8, 9, 10, 11, -12,
                        0, 1, 0,  2, 3, 0,   4, 1, 2, 2,  5,  0};
    const double g[] = {-1, -1, 0.3, -0.7, 1.2, 0.1, -1.4, 0.9, 0.05, 0.55, 2.6, -1.9};
    d5_tensor in[2] = {tmake(D5_F32, 4, SHAPE(1, 2, 3, 4), x),
                       tmake(D5_F32, 4, SHAPE(1, 2, 3, 2), g)};
    check_within("GridSample", in, 2, NULL, D5_F32, 4, SHAPE(1, 2, 2, 3), grid_cases[0].y, 1e-5,
                 1e-5);
    d5_tensor bad_grid[2] = {grid_x(), f64(4, SHAPE(1, 2, 2, 3), NULL)};
    check_fails("GridSample", bad_grid, 2, NULL, D5_ERR_SHAPE,
                "GridSample: input 1 (grid) has shape [1,2,2,3], expected [1, Ho, Wo, 2]");
    d5_tensor three_d[2] = {f64(3, SHAPE(1, 2, 3), NULL), grid_g()};
    check_fails("GridSample", three_d, 2, NULL, D5_ERR_UNSUPPORTED,
                "GridSample: input 0 (X) has 3 dims, expected 4");
    d5_tensor mode[2] = {grid_x(), grid_g()};
    check_fails("GridSample", mode, 2, ATTRS(attr_string("mode", "area")), D5_ERR_INVALID,
                "GridSample: mode is 'area'");
    d5_tensor pad[2] = {grid_x(), grid_g()};
    check_fails("GridSample", pad, 2, ATTRS(attr_string("padding_mode", "wrap")), D5_ERR_INVALID,
                "GridSample: padding_mode is 'wrap'");
}

Test(gridsample, points_far_outside_read_padding)
{
    /* Bilinear, zeros: a point at x = 1e30 reads only zeros; border clamps it
     * to the last column, and y = 0 is row 1 of 3 with align_corners=1:
     * X[0, c, 1, 3] = 8 and 1. */
    d5_tensor in[2] = {grid_x(), f64(4, SHAPE(1, 1, 1, 2), DV(1e30, 0))};
    check("GridSample", in, 2, NULL, D5_F64, 4, SHAPE(1, 2, 1, 1), DV(0, 0));
    d5_tensor b[2] = {grid_x(), f64(4, SHAPE(1, 1, 1, 2), DV(1e30, 0))};
    check("GridSample", b, 2,
          ATTRS(attr_string("padding_mode", "border"), attr_int("align_corners", 1)), D5_F64, 4,
          SHAPE(1, 2, 1, 1), DV(8, 1));
}

/* ---- NonMaxSuppression ----
 * By hand: box 0 is [0, 0, 2, 2] (area 4); box 1, [2, 2, 0, 1] with its
 * corners swapped, covers y 0..2, x 1..2 (area 2) and overlaps box 0 with IoU
 * 2 / (4 + 2 - 2) = 0.5; box 2, [5, 5, 6, 7], overlaps neither. */
static const double nms_corners[] = {0, 0, 2, 2, 2, 2, 0, 1, 5, 5, 6, 7};
/* The same boxes as [x_center, y_center, width, height]. */
static const double nms_centers[] = {1, 1, 2, 2, 1.5, 1, 1, 2, 6, 5.5, 2, 1};
/* Class 0 then class 1. */
static const double nms_scores[] = {0.9, 0.8, 0.1, 0.2, 0.7, 0.6};

static void nms_check(const double *boxes, int64_t center, double iou, int64_t nrows,
                      const double *want)
{
    d5_tensor in[5] = {f64(3, SHAPE(1, 3, 4), boxes), f64(3, SHAPE(1, 2, 3), nms_scores),
                       ti64(1, SHAPE(1), IVALS(2)), f64(1, SHAPE(1), DV(iou)),
                       f64(1, SHAPE(1), DV(0.15))};
    d5_tensor y;
    cr_assert_eq(run_known("NonMaxSuppression", in, 5, ATTRS(attr_int("center_point_box", center)),
                           &y, NULL, NULL),
                 D5_OK, "%s", d5_last_error());
    expect_tensor(&y, D5_I64, 2, SHAPE(nrows, 3), want, 0, "NonMaxSuppression");
    d5_tensor_free(&y);
    op_free_all(in, 5);
}

Test(nonmaxsuppression, both_box_formats_thresholds_and_limit_by_hand)
{
    /* iou_threshold 0.4: class 0 keeps box 0 and suppresses box 1 (IoU 0.5);
     * box 2 scores under 0.15. Class 1 takes boxes 1 and 2 by score, then
     * stops at max_output_boxes_per_class = 2. */
    const double want[] = {0, 0, 0, 0, 1, 1, 0, 1, 2};
    nms_check(nms_corners, 0, 0.4, 3, want);
    nms_check(nms_centers, 1, 0.4, 3, want);
    /* An IoU equal to the threshold does not suppress. */
    nms_check(nms_corners, 0, 0.5, 4, DV(0, 0, 0, 0, 0, 1, 0, 1, 1, 0, 1, 2));
}

Test(nonmaxsuppression, defaults_select_nothing_and_unknown_inputs_are_named)
{
    /* Without max_output_boxes_per_class nothing is selected. */
    d5_tensor in[2] = {f64(3, SHAPE(1, 3, 4), nms_corners), f64(3, SHAPE(1, 2, 3), nms_scores)};
    d5_tensor y;
    cr_assert_eq(run_known("NonMaxSuppression", in, 2, NULL, &y, NULL, NULL), D5_OK, "%s",
                 d5_last_error());
    expect_tensor(&y, D5_I64, 2, SHAPE(0, 3), NULL, 0, "NonMaxSuppression");
    d5_tensor_free(&y);
    /* The output's size needs the boxes at create. */
    cr_assert_eq(create_unknown("NonMaxSuppression", in, 2, NULL), D5_ERR_UNSUPPORTED);
    cr_assert(strstr(d5_last_error(), "input 0 (boxes) must be a constant"), "%s", d5_last_error());
    op_free_all(in, 2);
    d5_tensor bad[2] = {f64(3, SHAPE(1, 3, 4), nms_corners), f64(3, SHAPE(1, 2, 4), NULL)};
    check_fails("NonMaxSuppression", bad, 2, NULL, D5_ERR_SHAPE,
                "input 1 (scores) must be [1, classes, 3] for boxes [1, 3, 4]");
}

Test(nonmaxsuppression, other_values_at_run_time_than_at_create_fail)
{
    d5_tensor in[3] = {f64(3, SHAPE(1, 3, 4), nms_corners), f64(3, SHAPE(1, 2, 3), nms_scores),
                       ti64(1, SHAPE(1), IVALS(3))};
    const d5_op_desc *desc;
    d5_op *op;
    cr_assert_eq(d5_op_find("NonMaxSuppression", "ref", &desc), D5_OK);
    cr_assert_eq(d5_op_create(desc, in, 3, NULL, 1, &op), D5_OK, "%s", d5_last_error());
    d5_tensor y;
    cr_assert_eq(d5_tensor_alloc(d5_op_output_desc(op, 0), &y), D5_OK);
    /* Box 1 moved clear of box 0: all three selected in both classes. */
    ((double *)in[0].data)[4] = 10;
    ((double *)in[0].data)[6] = 12;
    cr_assert_eq(d5_op_forward(op, in, &y), D5_ERR_SHAPE);
    cr_assert(strstr(d5_last_error(), "select 6 boxes, but 4 at create"), "%s", d5_last_error());
    d5_op_free(op);
    d5_tensor_free(&y);
    op_free_all(in, 3);
}

/* ---- TfIdfVectorizer ----
 * By hand, for rows [1, 2, 3, 1, 2, 4] and [3, 3, 4, 1, 5, 2] and the pool
 * 1-grams {1 -> output 2, 4 -> 0} and 2-grams {(1, 2) -> 1, (3, 4) -> 3}:
 * with skips 0 and 1, row 0 has 1 twice, 4 once, (1, 2) twice (adjacent) and
 * (3, 4) never; row 1 has 1 and 4 once, (1, 2) once (one apart) and (3, 4)
 * twice (adjacent and one apart). */
static void tfidf_check(const char *mode, int64_t min_len, int64_t skip, const double *weights,
                        const double *want)
{
    const int64_t pool[] = {1, 4, 1, 2, 3, 4}, counts[] = {0, 2}, indexes[] = {2, 0, 1, 3};
    d5_attr items[] = {attr_string("mode", mode),
                       attr_int("min_gram_length", min_len),
                       attr_int("max_gram_length", 2),
                       attr_int("max_skip_count", skip),
                       attr_ints("pool_int64s", pool, 6),
                       attr_ints("ngram_counts", counts, 2),
                       attr_ints("ngram_indexes", indexes, 4),
                       {.name = "weights", .type = D5_ATTR_FLOATS, .floats = weights, .count = 4}};
    d5_attrs attrs = {items, weights ? 8 : 7};
    d5_tensor in[1] = {tmake(D5_I32, 2, SHAPE(2, 6), DV(1, 2, 3, 1, 2, 4, 3, 3, 4, 1, 5, 2))};
    check("TfIdfVectorizer", in, 1, &attrs, D5_F32, 2, SHAPE(2, 4), want);
}

Test(tfidfvectorizer, modes_skips_and_lengths_by_hand)
{
    const double w[] = {0.5, 2, 0.25, 3}; /* per pooled n-gram, in pool order */
    tfidf_check("TF", 1, 1, NULL, DV(1, 2, 2, 0, 1, 1, 1, 2));
    tfidf_check("TF", 1, 0, NULL, DV(1, 2, 2, 0, 1, 0, 1, 1));
    tfidf_check("TF", 2, 1, NULL, DV(0, 2, 0, 0, 0, 1, 0, 2));
    tfidf_check("TFIDF", 1, 1, w, DV(2, 0.5, 1, 0, 2, 0.25, 0.5, 6));
    tfidf_check("IDF", 1, 1, w, DV(2, 0.25, 0.5, 0, 2, 0.25, 0.5, 3));
    tfidf_check("IDF", 1, 1, NULL, DV(1, 1, 1, 0, 1, 1, 1, 1));
}

Test(tfidfvectorizer, bad_attributes_and_types_are_named)
{
    const int64_t pool[] = {1, 4, 1, 2, 3}, counts[] = {0, 2}, indexes[] = {0, 1, 2};
    d5_tensor x[1] = {ti64(1, SHAPE(3), IVALS(1, 2, 3))};
    check_fails("TfIdfVectorizer", x, 1,
                ATTRS(attr_string("mode", "TF"), attr_int("min_gram_length", 1),
                      attr_int("max_gram_length", 2), attr_ints("pool_int64s", pool, 5),
                      attr_ints("ngram_counts", counts, 2), attr_ints("ngram_indexes", indexes, 3)),
                D5_ERR_INVALID, "ngram_counts[1] = 2 does not start a whole number of 2-grams");
    d5_tensor y[1] = {ti64(1, SHAPE(3), IVALS(1, 2, 3))};
    check_fails("TfIdfVectorizer", y, 1, ATTRS(attr_string("mode", "BM25")), D5_ERR_INVALID,
                "mode is 'BM25', expected TF, IDF or TFIDF");
    d5_tensor f[1] = {f64(1, SHAPE(3), NULL)};
    check_fails("TfIdfVectorizer", f, 1, ATTRS(attr_string("mode", "TF")), D5_ERR_UNSUPPORTED,
                "TfIdfVectorizer: input 0 has data type float64");
}

/* ---- DFT ---- numpy.fft in float64. */

Test(dft, onesided_padded_and_inverse_truncated_against_numpy)
{
    /* numpy.fft.rfft([1, -2, 3.5, 0.25, 4], n=8) as [real, imaginary] pairs. */
    d5_tensor in[2] = {f64(3, SHAPE(1, 5, 1), DV(1, -2, 3.5, 0.25, 4)), ti64(0, NULL, IVALS(8))};
    d5_tensor y;
    cr_assert_eq(run_known("DFT", in, 2, ATTRS(attr_int("onesided", 1)), &y, NULL, NULL), D5_OK,
                 "%s", d5_last_error());
    expect_tensor(&y, D5_F64, 3, SHAPE(1, 5, 2),
                  DV(6.75, 0, -4.5909902576697323, -2.2625631329235416, 1.5, 2.25,
                     -1.4090097423302679, 4.7374368670764584, 10.25, 0),
                  1e-12, "DFT onesided");
    d5_tensor_free(&y);
    op_free_all(in, 2);
    /* numpy.fft.ifft(z, n=3, axis=1) of the complex z [2, 4] held as [1, 2, 4, 2]. */
    d5_tensor inv[2] = {
        f64(4, SHAPE(1, 2, 4, 2),
            DV(-2.5, -2, -1.5, -1, -0.5, 0, 0.5, 1, 1.5, 2, 2.5, 3, 3.5, 4, 4.5, 5)),
        ti64(1, SHAPE(1), IVALS(3))};
    cr_assert_eq(run_known("DFT", inv, 2, ATTRS(attr_int("inverse", 1), attr_int("axis", 2)), &y,
                           NULL, NULL),
                 D5_OK, "%s", d5_last_error());
    expect_tensor(&y, D5_F64, 4, SHAPE(1, 2, 3, 2),
                  DV(-1.5, -1, -0.21132486540518713, -0.78867513459481275, -0.78867513459481275,
                     -0.21132486540518713, 2.5, 3, -0.21132486540518713, -0.78867513459481275,
                     -0.78867513459481275, -0.21132486540518713),
                  1e-12, "DFT inverse");
    d5_tensor_free(&y);
    op_free_all(inv, 2);
}

Test(dft, bad_shapes_and_attributes_are_named)
{
    d5_tensor a[1] = {f64(3, SHAPE(1, 4, 3), NULL)};
    check_fails("DFT", a, 1, NULL, D5_ERR_SHAPE,
                "DFT: input 0 must be [batch, signal dims..., 1 or 2]");
    d5_tensor b[1] = {f64(3, SHAPE(1, 4, 1), NULL)};
    check_fails("DFT", b, 1, ATTRS(attr_int("axis", 2)), D5_ERR_INVALID,
                "DFT: axis is out of range");
    d5_tensor c[1] = {f64(3, SHAPE(1, 4, 1), NULL)};
    check_fails("DFT", c, 1, ATTRS(attr_int("inverse", 1), attr_int("onesided", 1)), D5_ERR_SHAPE,
                "IRFFT) takes a complex input");
    d5_tensor e[1] = {f64(3, SHAPE(1, 4, 2), NULL)};
    check_fails("DFT", e, 1, ATTRS(attr_int("axis", 1), attr_int("__opset", 20)), D5_ERR_INVALID,
                "from opset 20 the axis is input 2");
}

/* The inverse of the one-sided transform, as numpy's irfft (Debian's numpy
 * 1.24: np.fft.irfft([1, 2+1j, -1j, 0.5-2j]) and, cut to 5 points, of the
 * first three bins), and opset 20's axis as an input. */
Test(dft, irfft_and_axis_input)
{
    d5_tensor in[3] = {
        f64(3, SHAPE(1, 4, 2), DV(1, 0, 2, 1, 0, -1, 0.5, -2)),
        omitted(),
        ti64(0, NULL, IVALS(1)),
    };
    d5_tensor y;
    cr_assert_eq(
        run_known("DFT", in, 3,
                  ATTRS(attr_int("inverse", 1), attr_int("onesided", 1), attr_int("__opset", 20)),
                  &y, NULL, NULL),
        D5_OK, "%s", d5_last_error());
    expect_tensor(&y, D5_F64, 3, SHAPE(1, 6, 1),
                  DV(0.9166666666666666, 0.41666666666666663, -0.660683602522959,
                     -0.5833333333333333, 0.49401693585629236, 0.4166666666666666),
                  1e-12, "IRFFT, n = 2 * (4 - 1)");
    d5_tensor_free(&y);
    d5_tensor three[2] = {f64(3, SHAPE(1, 3, 2), DV(1, 0, 2, 1, 0, -1)), ti64(0, NULL, IVALS(5))};
    cr_assert_eq(
        run_known("DFT", three, 2,
                  ATTRS(attr_int("inverse", 1), attr_int("onesided", 1), attr_int("__opset", 20)),
                  &y, NULL, NULL),
        D5_OK, "%s", d5_last_error());
    expect_tensor(
        &y, D5_F64, 3, SHAPE(1, 5, 1),
        DV(1.0, 0.3019050898988858, -1.0627503029350087, 0.16832311193509267, 0.5925221011010301),
        1e-12, "IRFFT, n = 5");
    d5_tensor_free(&y);
    op_free_all(in, 3);
    op_free_all(three, 2);
}

/* ---- RoiAlign ----
 * By hand: on X[y][x] = 4 y + x bilinear reads are exact, so an avg bin is X
 * at the mean of its sampling points, the bin's centre. */
static void roialign_check(const char *coord, const double *want)
{
    d5_tensor in[3] = {op_iota(4, SHAPE(1, 1, 4, 4)), f64(2, SHAPE(1, 4), DV(0.5, 1, 2.5, 3)),
                       ti64(1, SHAPE(1), IVALS(0))};
    d5_tensor y;
    cr_assert_eq(run_known("RoiAlign", in, 3,
                           ATTRS(attr_string("coordinate_transformation_mode", coord),
                                 attr_int("output_height", 2), attr_int("output_width", 2),
                                 attr_int("sampling_ratio", 2)),
                           &y, NULL, NULL),
                 D5_OK, "%s", d5_last_error());
    expect_tensor(&y, D5_F32, 4, SHAPE(1, 1, 2, 2), want, 1e-6, coord);
    d5_tensor_free(&y);
    op_free_all(in, 3);
}

Test(roialign, avg_in_both_coordinate_modes_and_max_by_hand)
{
    /* output_half_pixel: bins of 1 x 1 from (x, y) = (0.5, 1): centres y 1.5,
     * 2.5 and x 1, 2. half_pixel: the same shifted by -0.5. */
    roialign_check("output_half_pixel", DV(7, 8, 11, 12));
    roialign_check("half_pixel", DV(4.5, 5.5, 8.5, 9.5));
    /* max: one point at the centre of [[1, 2], [3, 4]], weights 1/4: the
     * largest weighted corner term is 4 / 4; avg gives 2.5. The second roi
     * reads image 1 (X + 10). */
    d5_tensor in[3] = {f64(4, SHAPE(2, 1, 2, 2), DV(1, 2, 3, 4, 11, 12, 13, 14)),
                       f64(2, SHAPE(2, 4), DV(0, 0, 1, 1, 0, 0, 1, 1)),
                       ti64(1, SHAPE(2), IVALS(0, 1))};
    d5_tensor y;
    cr_assert_eq(
        run_known("RoiAlign", in, 3,
                  ATTRS(attr_string("mode", "max"), attr_int("sampling_ratio", 1),
                        attr_string("coordinate_transformation_mode", "output_half_pixel")),
                  &y, NULL, NULL),
        D5_OK, "%s", d5_last_error());
    expect_tensor(&y, D5_F64, 4, SHAPE(2, 1, 1, 1), DV(1, 3.5), 1e-12, "RoiAlign max");
    d5_tensor_free(&y);
    cr_assert_eq(
        run_known("RoiAlign", in, 3,
                  ATTRS(attr_int("sampling_ratio", 1),
                        attr_string("coordinate_transformation_mode", "output_half_pixel")),
                  &y, NULL, NULL),
        D5_OK, "%s", d5_last_error());
    expect_tensor(&y, D5_F64, 4, SHAPE(2, 1, 1, 1), DV(2.5, 12.5), 1e-12, "RoiAlign avg");
    d5_tensor_free(&y);
    /* A batch index outside X's batch fails at run time. */
    ((int64_t *)in[2].data)[1] = 2;
    cr_assert_eq(run_known("RoiAlign", in, 3, NULL, &y, NULL, NULL), D5_ERR_RANGE);
    cr_assert(strstr(d5_last_error(), "RoiAlign: batch_indices[1] is 2, outside [0, 2)"), "%s",
              d5_last_error());
    d5_tensor_free(&y); /* allocated before the forward call that failed */
    op_free_all(in, 3);
}

/* ---- STFT ---- numpy.fft.fft of each (windowed) frame, in float64. */

Test(stft, windowed_onesided_and_complex_twosided_against_numpy)
{
    const double sig[] = {0.5, -1, 2, 3, -0.25, 1.5, 4, -2, 0, 1.25};
    /* fft(sig[3f:3f+4] * window)[:3] for frames f = 0, 1, 2. */
    d5_tensor in[3] = {f64(3, SHAPE(1, 10, 1), sig), ti64(0, NULL, IVALS(3)),
                       f64(1, SHAPE(4), DV(0.1, 0.6, 1.0, 0.3))};
    d5_tensor y;
    cr_assert_eq(run_known("STFT", in, 3, NULL, &y, NULL, NULL), D5_OK, "%s", d5_last_error());
    expect_tensor(&y, D5_F64, 4, SHAPE(1, 3, 3, 2),
                  DV(2.35, 0, -1.95, 1.5, 1.75, 0, 2.85, 0, -1.2, 1.35, 0.75, 0, -0.425, 0, 0.4,
                     1.575, 1.225, 0),
                  1e-12, "STFT windowed");
    d5_tensor_free(&y);
    op_free_all(in, 3);
    /* z = sig[:8] + 0.5j * arange(8); fft(z[2f:2f+3]) for f = 0, 1, 2. */
    d5_tensor cin[4] = {f64(3, SHAPE(1, 8, 2),
                            DV(0.5, 0, -1, 0.5, 2, 1, 3, 1.5, -0.25, 2, 1.5, 2.5, 4, 3, -2, 3.5)),
                        ti64(1, SHAPE(1), IVALS(2)), omitted(), ti64(0, NULL, IVALS(3))};
    cr_assert_eq(run_known("STFT", cin, 4, ATTRS(attr_int("onesided", 0)), &y, NULL, NULL), D5_OK,
                 "%s", d5_last_error());
    expect_tensor(&y, D5_F64, 4, SHAPE(1, 3, 3, 2),
                  DV(1.5, 1.5, -0.4330127018922193, 1.848076211353316, 0.4330127018922193,
                     -3.348076211353316, 4.75, 4.5, 0.1919872981077807, -3.5645825622994254,
                     1.0580127018922192, 2.0645825622994254, 5.25, 7.5, -3.4330127018922192,
                     1.4150635094610964, -2.5669872981077808, -2.9150635094610964),
                  1e-12, "STFT complex");
    d5_tensor_free(&y);
    op_free_all(cin, 4);
}

Test(stft, missing_frame_and_mismatched_lengths_are_named)
{
    d5_tensor a[2] = {f64(3, SHAPE(1, 8, 1), NULL), ti64(0, NULL, IVALS(2))};
    check_fails("STFT", a, 2, NULL, D5_ERR_INVALID,
                "STFT: one of window (input 2) and frame_length (input 3) is required");
    d5_tensor b[4] = {f64(3, SHAPE(1, 8, 1), NULL), ti64(0, NULL, IVALS(2)), f64(1, SHAPE(4), NULL),
                      ti64(0, NULL, IVALS(5))};
    check_fails("STFT", b, 4, NULL, D5_ERR_INVALID,
                "STFT: input 3 (frame_length) is 5 but the window has 4 values");
    d5_tensor c[4] = {f64(3, SHAPE(1, 8, 2), NULL), ti64(0, NULL, IVALS(2)), omitted(),
                      ti64(0, NULL, IVALS(4))};
    check_fails("STFT", c, 4, NULL, D5_ERR_INVALID, "STFT: onesided=1 needs a real signal");
}

/* ---- MelWeightMatrix ----
 * Against the numpy formula of ONNX 1.12's node test (melweightmatrix.py) for
 * 4 bands, dft_length 20, 16 kHz, 100 to 7000 Hz: the points fall on bins 0,
 * 0, 1, 2, 3, 6, so band 0's rise is empty (1 at bin 0). */
Test(melweightmatrix, bands_against_the_onnx_numpy_formula)
{
    d5_tensor in[5] = {ti64(0, NULL, IVALS(4)), ti64(0, NULL, IVALS(20)),
                       ti64(0, NULL, IVALS(16000)), f64(0, NULL, DV(100)), f64(0, NULL, DV(7000))};
    d5_tensor y;
    cr_assert_eq(
        run_known("MelWeightMatrix", in, 5, ATTRS(attr_int("output_datatype", 11)), &y, NULL, NULL),
        D5_OK, "%s", d5_last_error());
    double want[11 * 4] = {1, 0, 0, 0, 0, 1, 0, 0,       0, 0, 1, 0,
                           0, 0, 0, 1, 0, 0, 0, 2.0 / 3, 0, 0, 0, 1.0 / 3};
    expect_tensor(&y, D5_F64, 2, SHAPE(11, 4), want, 1e-12, "MelWeightMatrix");
    d5_tensor_free(&y);
    /* An upper edge above the Nyquist frequency falls past the last bin. */
    ((double *)in[4].data)[0] = 20000;
    cr_assert_eq(run_known("MelWeightMatrix", in, 5, NULL, &y, NULL, NULL), D5_ERR_RANGE);
    cr_assert(strstr(d5_last_error(), "outside the 11 bins of the spectrum"), "%s",
              d5_last_error());
    d5_tensor_free(&y);
    op_free_all(in, 5);
}
