#include "op_support.h"

#include <criterion/criterion.h>
#include <string.h>

/* Checks forward and backward of a backend against ref on random inputs. */
static void same_as_ref(const char *name, const char *backend, const d5_tensor_desc *in,
                        int32_t nin, const d5_attrs *attrs)
{
    d5_check_params p = d5_check_default_params();
    p.atol = 1e-4;
    p.rtol = 1e-4;
    expect_same_as_ref(backend, name, in, nin, attrs, &p);
}

Test(blas, gemm_every_transpose_and_bias_shape)
{
    const int64_t m = 7, n = 5, k = 9;
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++)
            for (int c = 0; c < 4; c++) {
                d5_tensor_desc in[3];
                in[0] = ta ? op_fdesc(2, SHAPE(k, m)) : op_fdesc(2, SHAPE(m, k));
                in[1] = tb ? op_fdesc(2, SHAPE(n, k)) : op_fdesc(2, SHAPE(k, n));
                const int64_t cs[4][2] = {{m, n}, {1, n}, {m, 1}, {1, 1}};
                in[2] = c == 1 ? op_fdesc(1, SHAPE(n)) : op_fdesc(2, cs[c]);
                d5_attr items[] = {attr_int("transA", ta), attr_int("transB", tb),
                                   attr_float("alpha", 0.75), attr_float("beta", -1.5)};
                d5_attrs attrs = {items, 4};
                same_as_ref("Gemm", "blas", in, 3, &attrs);
                same_as_ref("Gemm", "blas", in, 2, &attrs);
            }
}

Test(blas, matmul_batched_broadcast_and_vectors)
{
    d5_tensor_desc cases[][2] = {
        {op_fdesc(2, SHAPE(6, 4)), op_fdesc(2, SHAPE(4, 3))},
        {op_fdesc(3, SHAPE(2, 6, 4)), op_fdesc(2, SHAPE(4, 3))},
        {op_fdesc(4, SHAPE(2, 1, 6, 4)), op_fdesc(3, SHAPE(3, 4, 5))},
        {op_fdesc(1, SHAPE(4)), op_fdesc(3, SHAPE(2, 4, 3))},
        {op_fdesc(3, SHAPE(2, 6, 4)), op_fdesc(1, SHAPE(4))},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        same_as_ref("MatMul", "blas", cases[i], 2, NULL);
}

Test(blas, float64_is_refused_with_the_reason)
{
    const d5_op_desc *d;
    cr_assert_eq(d5_op_find("Gemm", "blas", &d), D5_OK);
    d5_tensor_desc in[2];
    cr_assert_eq(d5_tensor_desc_make(D5_F64, 2, SHAPE(2, 2), &in[0]), D5_OK);
    in[1] = in[0];
    d5_op *op;
    cr_assert_eq(d5_op_create_desc(d, in, 2, NULL, 0, &op), D5_ERR_UNSUPPORTED);
    cr_assert(strstr(d5_last_error(), "float32 only"), "%s", d5_last_error());
}

Test(blas, conv_2d_1d_3d_groups_dilations_bias)
{
    d5_tensor_desc in[3] = {op_fdesc(4, SHAPE(2, 4, 9, 8)), op_fdesc(4, SHAPE(6, 2, 3, 2)),
                            op_fdesc(1, SHAPE(6))};
    d5_attr items[] = {attr_ints("strides", SHAPE(2, 1), 2),
                       attr_ints("pads", SHAPE(1, 0, 2, 1), 4),
                       attr_ints("dilations", SHAPE(1, 2), 2), attr_int("group", 2)};
    d5_attrs attrs = {items, 4};
    same_as_ref("Conv", "blas", in, 3, &attrs);
    same_as_ref("Conv", "blas", in, 2, &attrs);
    d5_tensor_desc c1[2] = {op_fdesc(3, SHAPE(2, 3, 11)), op_fdesc(3, SHAPE(5, 3, 4))};
    same_as_ref("Conv", "blas", c1, 2, NULL);
    d5_tensor_desc c3[2] = {op_fdesc(5, SHAPE(1, 2, 5, 4, 6)), op_fdesc(5, SHAPE(3, 2, 2, 3, 2))};
    d5_attr same[] = {attr_string("auto_pad", "SAME_LOWER")};
    d5_attrs sa = {same, 1};
    same_as_ref("Conv", "blas", c3, 2, &sa);
}
