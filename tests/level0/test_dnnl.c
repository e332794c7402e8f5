#include "op_support.h"

#include <criterion/criterion.h>
#include <string.h>

/* Checks forward and backward of the dnnl backend against ref on random inputs. */
static void same_as_ref(const char *name, const d5_tensor_desc *in, int32_t nin,
                        const d5_attrs *attrs)
{
    need_dnnl();
    expect_same_as_ref("dnnl", name, in, nin, attrs, NULL);
}

Test(dnnl, conv2d_strides_pads_dilations_bias)
{
    d5_tensor_desc in[3] = {op_fdesc(4, SHAPE(2, 3, 9, 8)), op_fdesc(4, SHAPE(4, 3, 3, 2)),
                            op_fdesc(1, SHAPE(4))};
    d5_attr items[] = {attr_ints("strides", SHAPE(2, 1), 2),
                       attr_ints("pads", SHAPE(1, 0, 2, 1), 4),
                       attr_ints("dilations", SHAPE(1, 2), 2)};
    d5_attrs attrs = {items, 3};
    same_as_ref("Conv", in, 3, &attrs);
    same_as_ref("Conv", in, 2, &attrs);
}

/* One input channel with unit strides: the weight gradient runs in C
 * (conv_wgrad.c). Widths that are and are not multiples of the vector width,
 * asymmetric pads, a kernel wider than tall, with and without a bias. */
Test(dnnl, conv_one_input_channel_weight_gradient)
{
    d5_tensor_desc a[3] = {op_fdesc(4, SHAPE(3, 1, 12, 12)), op_fdesc(4, SHAPE(4, 1, 5, 5)),
                           op_fdesc(1, SHAPE(4))};
    d5_attr ai[] = {attr_ints("pads", SHAPE(2, 2, 2, 2), 4)};
    d5_attrs aa = {ai, 1};
    same_as_ref("Conv", a, 3, &aa);
    d5_tensor_desc b[3] = {op_fdesc(4, SHAPE(2, 1, 9, 21)), op_fdesc(4, SHAPE(3, 1, 2, 4)),
                           op_fdesc(1, SHAPE(3))};
    d5_attr bi[] = {attr_ints("pads", SHAPE(1, 0, 0, 3), 4)};
    d5_attrs ba = {bi, 1};
    same_as_ref("Conv", b, 3, &ba);
    same_as_ref("Conv", b, 2, &ba);
    d5_tensor_desc c[2] = {op_fdesc(4, SHAPE(1, 1, 40, 37)), op_fdesc(4, SHAPE(2, 1, 3, 3))};
    same_as_ref("Conv", c, 2, NULL);
}

Test(dnnl, conv_grouped_depthwise_1d_3d)
{
    d5_tensor_desc g[2] = {op_fdesc(4, SHAPE(1, 4, 7, 7)), op_fdesc(4, SHAPE(6, 2, 3, 3))};
    d5_attr gi[] = {attr_int("group", 2), attr_string("auto_pad", "SAME_UPPER")};
    d5_attrs ga = {gi, 2};
    same_as_ref("Conv", g, 2, &ga);
    d5_tensor_desc dw[2] = {op_fdesc(4, SHAPE(2, 3, 6, 6)), op_fdesc(4, SHAPE(3, 1, 3, 3))};
    d5_attr di[] = {attr_int("group", 3)};
    d5_attrs da = {di, 1};
    same_as_ref("Conv", dw, 2, &da);
    d5_tensor_desc c1[2] = {op_fdesc(3, SHAPE(2, 3, 11)), op_fdesc(3, SHAPE(5, 3, 4))};
    same_as_ref("Conv", c1, 2, NULL);
    d5_tensor_desc c3[2] = {op_fdesc(5, SHAPE(1, 2, 5, 4, 6)), op_fdesc(5, SHAPE(3, 2, 2, 3, 2))};
    same_as_ref("Conv", c3, 2, NULL);
}

Test(dnnl, gemm_matches_ref)
{
    d5_tensor_desc in[3] = {op_fdesc(2, SHAPE(9, 7)), op_fdesc(2, SHAPE(5, 9)),
                            op_fdesc(1, SHAPE(5))};
    d5_attr items[] = {attr_int("transA", 1), attr_int("transB", 1), attr_float("alpha", 0.5)};
    d5_attrs attrs = {items, 3};
    same_as_ref("Gemm", in, 3, &attrs);
}

Test(dnnl, float64_and_bad_shapes_are_refused)
{
    need_dnnl();
    const d5_op_desc *d;
    cr_assert_eq(d5_op_find("Conv", "dnnl", &d), D5_OK);
    d5_tensor_desc in[2];
    cr_assert_eq(d5_tensor_desc_make(D5_F64, 4, SHAPE(1, 1, 4, 4), &in[0]), D5_OK);
    cr_assert_eq(d5_tensor_desc_make(D5_F64, 4, SHAPE(1, 1, 3, 3), &in[1]), D5_OK);
    d5_op *op;
    cr_assert_eq(d5_op_create_desc(d, in, 2, NULL, 0, &op), D5_ERR_UNSUPPORTED);
    cr_assert(strstr(d5_last_error(), "float32 only"), "%s", d5_last_error());
    in[0] = op_fdesc(4, SHAPE(1, 2, 4, 4));
    in[1] = op_fdesc(4, SHAPE(1, 3, 3, 3));
    cr_assert_neq(d5_op_create_desc(d, in, 2, NULL, 0, &op), D5_OK);
    cr_assert(strstr(d5_last_error(), "Conv"), "%s", d5_last_error());
}
