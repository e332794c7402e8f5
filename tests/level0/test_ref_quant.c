/* The reference quantisation operators of ref/ops_quant.def: QuantizeLinear,
 * DequantizeLinear, DynamicQuantizeLinear, MatMulInteger, QLinearMatMul,
 * ConvInteger and QLinearConv, their create-time checks, and two quantised
 * models (QDQ and QOperator forms) run through the executor.
 *
 * Where the expected values come from: cases marked "ONNX" are ONNX's own
 * node tests (onnx/backend/test/case/node/, onnx 1.12, the data of
 * libonnx-testdata); the rounding and saturation cases are worked by hand
 * (each says how); the cases marked "numpy" were printed by
 * `/usr/bin/python3 tests/onnx/make_quant_fixtures.py --print`, whose numpy
 * functions reproduce ONNX's node tests before printing; the models and
 * their outputs are written by the same script (tests/onnx/data/quant/). */
#include "more_support.h"

#include "d5/onnx.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>

#define NONE ((d5_tensor){0}) /* an omitted optional input */
#define INTS_ATTR(name, ...)                                                                       \
    attr_ints(name, IVALS(__VA_ARGS__), (int64_t)(sizeof(IVALS(__VA_ARGS__)) / sizeof(int64_t)))

static d5_tensor u8(int32_t ndim, const int64_t *shape, const double *v)
{
    return tmake(D5_U8, ndim, shape, v);
}
static d5_tensor i8(int32_t ndim, const int64_t *shape, const double *v)
{
    return tmake(D5_I8, ndim, shape, v);
}
static d5_tensor f32(int32_t ndim, const int64_t *shape, const double *v)
{
    return tmake(D5_F32, ndim, shape, v);
}
static d5_tensor scalar(d5_dtype dt, double v)
{
    return tmake(dt, 0, SHAPE(0), DV(v));
}

/* v[i] = (7 i) mod `mod` + lo, the ramp() of make_quant_fixtures.py --print. */
static d5_tensor ramp(d5_dtype dt, int32_t ndim, const int64_t *shape, int64_t lo, int64_t mod)
{
    d5_tensor t = tmake(dt, ndim, shape, NULL);
    for (int64_t i = 0; i < d5_tensor_desc_numel(&t.desc); i++) {
        int64_t v = 7 * i % mod + lo;
        if (dt == D5_U8)
            ((uint8_t *)t.data)[i] = (uint8_t)v;
        else
            ((int8_t *)t.data)[i] = (int8_t)v;
    }
    return t;
}

/* ---- QuantizeLinear -------------------------------------------------------------------------- */

/* Ties go to the even integer: 0.5 -> 0, 1.5 -> 2, 2.5 -> 2, -2.5 -> -2. */
Test(quantizelinear, rounds_half_to_even)
{
    d5_tensor in[3] = {f32(1, SHAPE(8), DV(0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 2.4999998, 7.5)),
                       scalar(D5_F32, 1), scalar(D5_I8, 0)};
    check("QuantizeLinear", in, 3, NULL, D5_I8, 1, SHAPE(8), DV(0, 2, 2, 0, -2, -2, 2, 8));
}

/* x / scale is a float32 quotient: 0.35f / 0.1f is 3.5 in float32 (3.4999999
 * in double), which rounds to 4; 0.45000002f / 0.1f is 4.5 in float32
 * (4.5000001 in double): 4. Worked with numpy's float32 division. */
Test(quantizelinear, divides_in_float32)
{
    d5_tensor in[3] = {f32(1, SHAPE(4), DV(0.35, 0.45000002, 0.75, 0.85)), scalar(D5_F32, 0.1),
                       scalar(D5_U8, 0)};
    check("QuantizeLinear", in, 3, NULL, D5_U8, 1, SHAPE(4), DV(4, 4, 8, 8));
}

/* ONNX test_quantizelinear, then int8 saturation, NaN and infinities by hand:
 * 1000 / 2 - 10 = 490 -> 127; -300 / 2 - 10 = -160 -> -128; NaN -> the zero
 * point; -inf -> -128. */
Test(quantizelinear, saturates)
{
    d5_tensor in[3] = {f32(1, SHAPE(6), DV(0, 2, 3, 1000, -254, -1000)), scalar(D5_F32, 2),
                       scalar(D5_U8, 128)};
    check("QuantizeLinear", in, 3, NULL, D5_U8, 1, SHAPE(6), DV(128, 129, 130, 255, 1, 0));
    d5_tensor s[3] = {f32(1, SHAPE(6), DV(1000, -300, NAN, INFINITY, -INFINITY, 7)),
                      scalar(D5_F32, 2), scalar(D5_I8, -10)};
    check("QuantizeLinear", s, 3, NULL, D5_I8, 1, SHAPE(6), DV(127, -128, -10, 127, -128, -6));
}

/* Without y_zero_point the output is uint8 with zero point 0. */
Test(quantizelinear, defaults_to_uint8)
{
    d5_tensor in[2] = {f32(1, SHAPE(4), DV(-1, 1.4, 2.6, 300)), scalar(D5_F32, 1)};
    check("QuantizeLinear", in, 2, NULL, D5_U8, 1, SHAPE(4), DV(0, 1, 3, 255));
}

/* ONNX test_quantizelinear_axis (axis 1 by default), then axis -1 on int32 x
 * by hand: x / [1, 4] + [0, -1], 10 / 4 = 2.5 -> 2, -6 / 4 = -1.5 -> -2. */
Test(quantizelinear, per_axis)
{
    d5_tensor in[3] = {f32(4, SHAPE(1, 3, 3, 2),
                           DV(-162, 10, -100, 232, -20, -50, -76, 0, 0, 252, 32, -44, 245, -485,
                              -960, -270, -375, -470)),
                       f32(1, SHAPE(3), DV(2, 4, 5)), u8(1, SHAPE(3), DV(84, 24, 196))};
    check("QuantizeLinear", in, 3, NULL, D5_U8, 4, SHAPE(1, 3, 3, 2),
          DV(3, 89, 34, 200, 74, 59, 5, 24, 24, 87, 32, 13, 245, 99, 4, 142, 121, 102));
    d5_tensor x[3] = {tmake(D5_I32, 2, SHAPE(2, 2), DV(3, 10, -3, -6)), f32(1, SHAPE(2), DV(1, 4)),
                      i8(1, SHAPE(2), DV(0, -1))};
    check("QuantizeLinear", x, 3, ATTRS(attr_int("axis", -1)), D5_I8, 2, SHAPE(2, 2),
          DV(3, 1, -3, -3));
}

/* A float16 or bfloat16 tensor of `values` (each exact in the type). */
static d5_tensor half(d5_dtype dt, int32_t ndim, const int64_t *shape, const double *values)
{
    d5_tensor t;
    d5_tensor_desc d;
    cr_assert_eq(d5_tensor_desc_make(dt, ndim, shape, &d), D5_OK);
    cr_assert_eq(d5_tensor_alloc(&d, &t), D5_OK);
    for (int64_t i = 0; i < d5_tensor_desc_numel(&d); i++)
        ((uint16_t *)t.data)[i] =
            dt == D5_F16 ? d5_f16_from_f64(values[i]) : d5_bf16_from_f64(values[i]);
    return t;
}

/* Opset 19: float16 x with a float16 scale (by hand: x / 0.5, -4.5 -> -4,
 * 200 -> 127, 0.3 is 0.30005 in float16 -> 0.6001 -> 1), bfloat16 x with a
 * float32 scale; opset 13 refuses both. */
Test(quantizelinear, opset19_half_types)
{
    d5_tensor in[3] = {half(D5_F16, 1, SHAPE(4), DV(1.5, -2.25, 100, 0.300048828125)),
                       half(D5_F16, 0, SHAPE(0), DV(0.5)), scalar(D5_I8, 0)};
    check("QuantizeLinear", in, 3, NULL, D5_I8, 1, SHAPE(4), DV(3, -4, 127, 1));
    d5_tensor b[3] = {half(D5_BF16, 1, SHAPE(2), DV(2.5, -3)), scalar(D5_F32, 1),
                      scalar(D5_U8, 10)};
    check("QuantizeLinear", b, 3, NULL, D5_U8, 1, SHAPE(2), DV(12, 7));
    d5_tensor c[2] = {half(D5_F16, 1, SHAPE(2), DV(1, 2)), half(D5_F16, 0, SHAPE(0), DV(1))};
    check_fails("QuantizeLinear", c, 2, ATTRS(OPSET(13)), D5_ERR_INVALID,
                "QuantizeLinear: input 0 (x) has data type float16, expected float32 or int32 "
                "(float16 and bfloat16 from opset 19)");
}

/* Opset 21: int16 by hand (x / 0.5 + 100, 20000 -> 32767 saturated), and
 * back; opset 19 refuses int16; blocks need a scale of blocks. */
Test(quantizelinear, opset21_int16)
{
    opset_attrs o;
    d5_tensor in[3] = {f32(1, SHAPE(3), DV(-1.25, 3, 20000)), scalar(D5_F32, 0.5),
                       scalar(D5_I16, 100)};
    d5_tensor y;
    run_op("QuantizeLinear", "ref", in, 3, with_opset(&o, 21, NULL, 0), &y, 1);
    expect_tensor(&y, D5_I16, 1, SHAPE(3), DV(98, 106, 32767), 0, "QuantizeLinear int16");
    d5_tensor dq[3] = {y, scalar(D5_F32, 0.5), scalar(D5_I16, 100)};
    check("DequantizeLinear", dq, 3, with_opset(&o, 21, NULL, 0), D5_F32, 1, SHAPE(3),
          DV(-1, 3, 16333.5));
    op_expect_fails("QuantizeLinear", in, 3, ATTRS(OPSET(19)), 1, D5_ERR_INVALID,
                    "QuantizeLinear: the output type int16 (y_zero_point's or output_dtype's) is "
                    "too new for this opset");
    op_check_fails("QuantizeLinear", in, 3,
                   ATTRS(OPSET(21), attr_int("block_size", 2), attr_int("axis", 0)), 1,
                   D5_ERR_SHAPE,
                   "QuantizeLinear: input 1 (y_scale) has shape [] but x has shape [3]: blocks "
                   "of 2 along axis 0 need x's shape with ceil(3 / 2) = 2 there");
}

/* The narrow types (opsets 19 to 25), by hand. int4, scale 0.5, zero point 1:
 * x / 0.5 = -2, 0.52, 6, 200, -31 -> rounded -2, 1, 6, 200, -31 -> + 1 ->
 * clipped to [-8, 7]: -1, 2, 7, 7, -8. uint4 by output_dtype (21 = UINT4):
 * 0.25 / 0.5 = 0.5 -> 0 (half to even), 7.5 -> 15 (30 saturates to 15). int2
 * at opset 25. Refused at opset 19. */
Test(quantizelinear, narrow_integers)
{
    opset_attrs o;
    d5_tensor in[3] = {f32(1, SHAPE(5), DV(-1, 0.26, 3, 100, -15.5)), scalar(D5_F32, 0.5),
                       scalar(D5_I4, 1)};
    d5_tensor y;
    run_op("QuantizeLinear", "ref", in, 3, with_opset(&o, 21, NULL, 0), &y, 1);
    expect_tensor(&y, D5_I4, 1, SHAPE(5), DV(-1, 2, 7, 7, -8), 0, "QuantizeLinear int4");
    d5_tensor dq[3] = {y, scalar(D5_F32, 0.5), scalar(D5_I4, 1)};
    check("DequantizeLinear", dq, 3, with_opset(&o, 21, NULL, 0), D5_F32, 1, SHAPE(5),
          DV(-1, 0.5, 3, 3, -4.5));
    op_expect_fails("QuantizeLinear", in, 3, ATTRS(OPSET(19)), 1, D5_ERR_INVALID,
                    "the output type int4 (y_zero_point's or output_dtype's) is too new for this "
                    "opset");
    op_free_all(in, 3);
    d5_tensor u[2] = {f32(1, SHAPE(3), DV(0.25, 7.5, 30)), scalar(D5_F32, 0.5)};
    d5_attr od = attr_int("output_dtype", 21);
    check("QuantizeLinear", u, 2, with_opset(&o, 21, &od, 1), D5_U4, 1, SHAPE(3), DV(0, 15, 15));
    d5_tensor m[3] = {f32(1, SHAPE(3), DV(1, 2, 3)), scalar(D5_F32, 1), scalar(D5_U8, 0)};
    od = attr_int("output_dtype", 22);
    check_fails("QuantizeLinear", m, 3, with_opset(&o, 21, &od, 1), D5_ERR_INVALID,
                "QuantizeLinear: output_dtype is int4 but y_zero_point is uint8; they must agree");
    d5_tensor t[3] = {f32(1, SHAPE(4), DV(-5, -1, 0.4, 9)), scalar(D5_F32, 1), scalar(D5_I2, 0)};
    check("QuantizeLinear", t, 3, with_opset(&o, 25, NULL, 0), D5_I2, 1, SHAPE(4),
          DV(-2, -1, 0, 1));
}

/* float8: x / scale to the nearest code (the zero point, 0, not added),
 * saturated by default (1000 -> 448 in E4M3FN), NaN without saturation;
 * float4 adds its zero point and always saturates. Worked from the types'
 * tables: 0.3 / 0.5 = 0.6 lies between 0.5625 and 0.625 (E4M3FN steps of
 * 1/16 there), nearer 0.625 (0x32; 2 / 0.5 = 4 is 0x48); in float4, 0.6 + 1 = 1.6 -> 1.5 (0x3),
 * -20 -> -6 (0xF). */
Test(quantizelinear, narrow_floats)
{
    opset_attrs o;
    d5_tensor in[3] = {f32(1, SHAPE(4), DV(0.3, 500, -1000, 2)), scalar(D5_F32, 0.5),
                       tmake(D5_F8E4M3FN, 0, SHAPE(0), DV(0))};
    d5_tensor y;
    run_op("QuantizeLinear", "ref", in, 3, with_opset(&o, 19, NULL, 0), &y, 1);
    const uint8_t sat[] = {0x32, 0x7E, 0xFE, 0x48};
    cr_expect(memcmp(y.data, sat, 4) == 0, "E4M3FN saturated: %02X %02X %02X %02X",
              ((uint8_t *)y.data)[0], ((uint8_t *)y.data)[1], ((uint8_t *)y.data)[2],
              ((uint8_t *)y.data)[3]);
    d5_tensor_free(&y);
    d5_attr s0 = attr_int("saturate", 0);
    run_op("QuantizeLinear", "ref", in, 3, with_opset(&o, 19, &s0, 1), &y, 1);
    const uint8_t raw[] = {0x32, 0x7F, 0xFF, 0x48};
    cr_expect(memcmp(y.data, raw, 4) == 0, "E4M3FN unsaturated: %02X %02X %02X %02X",
              ((uint8_t *)y.data)[0], ((uint8_t *)y.data)[1], ((uint8_t *)y.data)[2],
              ((uint8_t *)y.data)[3]);
    d5_tensor dq[2] = {y, scalar(D5_F32, 0.5)};
    d5_tensor back;
    run_op("DequantizeLinear", "ref", dq, 2, with_opset(&o, 19, NULL, 0), &back, 1);
    const float *b = back.data;
    cr_expect(b[0] == 0.3125f && isnan(b[1]) && isnan(b[2]) && b[3] == 2, "%g %g %g %g", b[0], b[1],
              b[2], b[3]);
    d5_tensor_free(&back);
    d5_tensor_free(&y);
    d5_tensor_free(&dq[1]);
    op_free_all(in, 3);
    d5_tensor f[3] = {f32(1, SHAPE(2), DV(0.3, -10)), scalar(D5_F32, 0.5),
                      tmake(D5_F4E2M1, 0, SHAPE(0), DV(1))};
    run_op("QuantizeLinear", "ref", f, 3, with_opset(&o, 23, NULL, 0), &y, 1);
    cr_expect(((uint8_t *)y.data)[0] == 0x3 && ((uint8_t *)y.data)[1] == 0xF, "float4: %X %X",
              ((uint8_t *)y.data)[0], ((uint8_t *)y.data)[1]);
    d5_tensor_free(&y);
    op_free_all(f, 3);
}

/* Blocked quantisation (opset 21): x [2, 5], blocks of 2 along axis 1, so a
 * scale [2, 3]; element (r, c) uses scale (r, c / 2). Worked by hand:
 * row 0 scales 1, 2, 4 -> x / s = 1, 2, 1.5, 2, 1.25 -> 1, 2, 2, 2, 1; row 1
 * scales 0.5, 1, 8 -> 2, 4, 3, 4, 4 (32 / 8). And back. */
Test(quantizelinear, blocked)
{
    opset_attrs o;
    d5_attr bs[2] = {attr_int("block_size", 2), attr_int("axis", 1)};
    d5_tensor in[3] = {f32(2, SHAPE(2, 5), DV(1, 2, 3, 4, 5, 1, 2, 3, 4, 32)),
                       f32(2, SHAPE(2, 3), DV(1, 2, 4, 0.5, 1, 8)),
                       tmake(D5_I8, 2, SHAPE(2, 3), DV(0, 0, 0, 0, 0, 0))};
    d5_tensor y;
    run_op("QuantizeLinear", "ref", in, 3, with_opset(&o, 21, bs, 2), &y, 1);
    expect_tensor(&y, D5_I8, 2, SHAPE(2, 5), DV(1, 2, 2, 2, 1, 2, 4, 3, 4, 4), 0, "blocked");
    d5_tensor dq[3] = {y, in[1], in[2]};
    check("DequantizeLinear", dq, 3, with_opset(&o, 21, bs, 2), D5_F32, 2, SHAPE(2, 5),
          DV(1, 2, 4, 4, 4, 1, 2, 3, 4, 32));
    d5_tensor_free(&in[0]);
}

/* DequantizeLinear's output_dtype (opset 23) chooses float16 over the
 * scale's float32. */
Test(dequantizelinear, output_dtype)
{
    opset_attrs o;
    d5_attr od = attr_int("output_dtype", 10);
    d5_tensor in[2] = {tmake(D5_U4, 1, SHAPE(3), DV(0, 7, 15)), scalar(D5_F32, 0.25)};
    d5_tensor y;
    run_op("DequantizeLinear", "ref", in, 2, with_opset(&o, 23, &od, 1), &y, 1);
    cr_expect_eq(y.desc.dtype, D5_F16);
    const uint16_t want[3] = {0x0000, 0x3F00, 0x4380}; /* 0, 1.75, 3.75 */
    cr_expect(memcmp(y.data, want, sizeof want) == 0);
    d5_tensor_free(&y);
    check_fails("DequantizeLinear", in, 2, with_opset(&o, 21, &od, 1), D5_ERR_INVALID,
                "DequantizeLinear: attribute output_dtype is 10; expected float32, float16 or "
                "bfloat16, from opset 23");
}

/* ---- DequantizeLinear ------------------------------------------------------------------------ */

Test(dequantizelinear, onnx_cases)
{
    /* ONNX test_dequantizelinear and test_dequantizelinear_axis. */
    d5_tensor in[3] = {u8(1, SHAPE(4), DV(0, 3, 128, 255)), scalar(D5_F32, 2), scalar(D5_U8, 128)};
    check("DequantizeLinear", in, 3, NULL, D5_F32, 1, SHAPE(4), DV(-256, -250, 0, 254));
    d5_tensor ax[3] = {
        u8(4, SHAPE(1, 3, 3, 2),
           DV(3, 89, 34, 200, 74, 59, 5, 24, 24, 87, 32, 13, 245, 99, 4, 142, 121, 102)),
        f32(1, SHAPE(3), DV(2, 4, 5)), u8(1, SHAPE(3), DV(84, 24, 196))};
    check("DequantizeLinear", ax, 3, NULL, D5_F32, 4, SHAPE(1, 3, 3, 2),
          DV(-162, 10, -100, 232, -20, -50, -76, 0, 0, 252, 32, -44, 245, -485, -960, -270, -375,
             -470));
}

/* By hand: int8 along axis 0, (x - [1, -2]) * [0.5, 0.25]; int32 x with no
 * zero point, x * 0.5. */
Test(dequantizelinear, int8_axis0_and_int32)
{
    d5_tensor in[3] = {i8(2, SHAPE(2, 3), DV(-128, 1, 127, -128, -2, 127)),
                       f32(1, SHAPE(2), DV(0.5, 0.25)), i8(1, SHAPE(2), DV(1, -2))};
    check("DequantizeLinear", in, 3, ATTRS(attr_int("axis", 0)), D5_F32, 2, SHAPE(2, 3),
          DV(-64.5, 0, 63, -31.5, 0, 32.25));
    d5_tensor i[2] = {tmake(D5_I32, 1, SHAPE(3), DV(-2147483648.0, 7, 2147483647.0)),
                      scalar(D5_F32, 0.5)};
    check("DequantizeLinear", i, 2, NULL, D5_F32, 1, SHAPE(3),
          DV(-1073741824.0, 3.5, 1073741824.0));
}

/* Opset 19: a float16 scale makes y float16: (x - 10) * 0.25; opset 13
 * refuses it. */
Test(dequantizelinear, opset19_float16_scale)
{
    d5_tensor in[3] = {u8(1, SHAPE(3), DV(0, 10, 255)), half(D5_F16, 0, SHAPE(0), DV(0.25)),
                       scalar(D5_U8, 10)};
    d5_tensor y;
    run_op("DequantizeLinear", "ref", in, 3, NULL, &y, 1);
    cr_assert_eq(y.desc.dtype, D5_F16, "y has data type %s", d5_dtype_name(y.desc.dtype));
    const double want[3] = {-2.5, 0, 61.25};
    for (int i = 0; i < 3; i++)
        cr_assert_eq(d5_f32_from_f16(((const uint16_t *)y.data)[i]), want[i], "element %d", i);
    d5_tensor_free(&y);
    op_expect_fails("DequantizeLinear", in, 3, ATTRS(OPSET(13)), 1, D5_ERR_INVALID,
                    "DequantizeLinear: input 1 (x_scale) has data type float16, expected float32 "
                    "(float16 and bfloat16 from opset 19)");
    op_free_all(in, 3);
}

/* ---- DynamicQuantizeLinear ------------------------------------------------------------------- */

static void dynamic(d5_tensor x, const double *y, double scale, double zp)
{
    d5_tensor out[3];
    run_op("DynamicQuantizeLinear", "ref", &x, 1, NULL, out, 3);
    expect_tensor(&out[0], D5_U8, x.desc.ndim, x.desc.shape, y, 0, "y");
    expect_tensor(&out[1], D5_F32, 0, NULL, DV((float)scale), 0, "y_scale");
    expect_tensor(&out[2], D5_U8, 0, NULL, DV(zp), 0, "y_zero_point");
    op_free_all(out, 3);
    d5_tensor_free(&x);
}

Test(dynamicquantizelinear, onnx_cases)
{
    /* ONNX test_dynamicquantizelinear, _max_adjusted, _min_adjusted: scales
     * 5 / 255, 4 / 255 and 4 / 255 in float32. */
    dynamic(f32(1, SHAPE(6), DV(0, 2, -3, -2.5, 1.34, 0.5)), DV(153, 255, 0, 26, 221, 179),
            5.0f / 255.0f, 153);
    dynamic(f32(1, SHAPE(6), DV(-1, -2.1, -1.3, -2.5, -3.34, -4)), DV(191, 121, 172, 96, 42, 0),
            4.0f / 255.0f, 255);
    dynamic(f32(2, SHAPE(3, 4), DV(1, 2.1, 1.3, 2.5, 3.34, 4, 1.5, 2.6, 3.9, 4, 3, 2.345)),
            DV(64, 134, 83, 159, 213, 255, 96, 166, 249, 255, 191, 149), 4.0f / 255.0f, 0);
}

/* All zeros: the range is empty, the scale 1 / 255 (as in ONNX's reference),
 * everything quantises to the zero point 0. */
Test(dynamicquantizelinear, zero_range)
{
    dynamic(f32(1, SHAPE(3), DV(0, 0, 0)), DV(0, 0, 0), 1.0f / 255.0f, 0);
}

/* ---- MatMulInteger --------------------------------------------------------------------------- */

Test(matmulinteger, onnx_case)
{
    /* ONNX test_matmulinteger. */
    d5_tensor in[4] = {u8(2, SHAPE(4, 3), DV(11, 7, 3, 10, 6, 2, 9, 5, 1, 8, 4, 0)),
                       u8(2, SHAPE(3, 2), DV(1, 4, 2, 5, 3, 6)), u8(1, SHAPE(1), DV(12)),
                       u8(1, SHAPE(1), DV(0))};
    check("MatMulInteger", in, 4, NULL, D5_I32, 2, SHAPE(4, 2),
          DV(-38, -83, -44, -98, -50, -113, -56, -128));
}

/* numpy: a [2, 3, 4] uint8 with a zero point per row of each batch matrix
 * ([2, 3, 1]), b [4, 5] int8 with one per column ([5]), b broadcast over the
 * batch. */
Test(matmulinteger, per_row_and_column)
{
    d5_tensor in[4] = {
        ramp(D5_U8, 3, SHAPE(2, 3, 4), 0, 256), ramp(D5_I8, 2, SHAPE(4, 5), -100, 200),
        u8(3, SHAPE(2, 3, 1), DV(1, 2, 3, 4, 5, 6)), i8(1, SHAPE(5), DV(1, -1, 0, 2, -2))};
    check("MatMulInteger", in, 4, NULL, D5_I32, 3, SHAPE(2, 3, 5),
          DV(-618, -276, -48, 142, 560, -5856, -4542, -3666, -2936, -1330, -11094, -8808, -7284,
             -6014, -3220, -16332, -13074, -10902, -9092, -5110, -21570, -17340, -14520, -12170,
             -7000, -26808, -21606, -18138, -15248, -8890));
}

/* By hand: without zero points, a 1-d A [K] times B [K, N]: [1, 2] x [[3, 4],
 * [-5, 6]] = [-7, 16], the row dimension removed; int8 A with uint8 B. */
Test(matmulinteger, vector_without_zero_points)
{
    d5_tensor in[4] = {i8(1, SHAPE(2), DV(1, 2)), u8(2, SHAPE(2, 2), DV(3, 4, 0, 6)), NONE,
                       u8(1, SHAPE(2), DV(0, 0))};
    check("MatMulInteger", in, 4, NULL, D5_I32, 1, SHAPE(2), DV(3, 16));
    d5_tensor two[2] = {i8(1, SHAPE(2), DV(-128, 127)), u8(2, SHAPE(2, 1), DV(255, 255))};
    check("MatMulInteger", two, 2, NULL, D5_I32, 1, SHAPE(1), DV(-255));
}

/* ---- QLinearMatMul --------------------------------------------------------------------------- */

Test(qlinearmatmul, onnx_case)
{
    /* ONNX test_qlinearmatmul_2D. */
    d5_tensor in[8] = {
        u8(2, SHAPE(2, 4), DV(208, 236, 0, 238, 3, 214, 255, 29)),
        f32(1, SHAPE(1), DV(0.0066)),
        u8(1, SHAPE(1), DV(113)),
        u8(2, SHAPE(4, 3), DV(152, 51, 244, 60, 26, 255, 0, 127, 246, 127, 254, 247)),
        f32(1, SHAPE(1), DV(0.00705)),
        u8(1, SHAPE(1), DV(114)),
        f32(1, SHAPE(1), DV(0.0107)),
        u8(1, SHAPE(1), DV(118))};
    check("QLinearMatMul", in, 8, NULL, D5_U8, 2, SHAPE(2, 3), DV(168, 115, 255, 1, 66, 151));
}

/* numpy: per-row a scale and zero point ([3, 1]), per-column b ([5]), int8
 * output that saturates at -128. */
Test(qlinearmatmul, per_row_and_column)
{
    d5_tensor in[8] = {ramp(D5_U8, 3, SHAPE(2, 3, 4), 0, 256),
                       f32(2, SHAPE(3, 1), DV(0.1, 0.2, 0.3)),
                       u8(2, SHAPE(3, 1), DV(1, 2, 3)),
                       ramp(D5_I8, 2, SHAPE(4, 5), -100, 200),
                       f32(1, SHAPE(5), DV(0.01, 0.02, 0.03, 0.04, 0.05)),
                       i8(1, SHAPE(5), DV(1, -1, 0, 2, -2)),
                       scalar(D5_F32, 0.7),
                       scalar(D5_I8, 5)};
    check("QLinearMatMul", in, 8, NULL, D5_I8, 3, SHAPE(2, 3, 5),
          DV(4, 4, 5, 6, 9, -12, -21, -26, -29, -14, -43, -70, -89, -98, -64, -19, -34, -43, -49,
             -33, -58, -97, -123, -128, -98, -112, -128, -128, -128, -128));
}

/* ---- ConvInteger and QLinearConv ------------------------------------------------------------- */

Test(convinteger, onnx_case)
{
    /* ONNX test_convinteger_with_padding. */
    d5_tensor in[3] = {u8(4, SHAPE(1, 1, 3, 3), DV(2, 3, 4, 5, 6, 7, 8, 9, 10)),
                       u8(4, SHAPE(1, 1, 2, 2), DV(1, 1, 1, 1)), scalar(D5_U8, 1)};
    check("ConvInteger", in, 3, ATTRS(INTS_ATTR("pads", 1, 1, 1, 1)), D5_I32, 4, SHAPE(1, 1, 4, 4),
          DV(1, 3, 5, 3, 5, 12, 16, 9, 11, 24, 28, 15, 7, 15, 17, 9));
}

/* The first `n` elements along the last axis of w [4, 2, 2, 3] for the first m
 * output channels: numpy's w[:m, :, :, :n]. */
static d5_tensor weights(int64_t m, int64_t n)
{
    d5_tensor w = ramp(D5_I8, 4, SHAPE(4, 2, 2, 3), -60, 121);
    d5_tensor t = tmake(D5_I8, 4, SHAPE(m, 2, 2, n), NULL);
    for (int64_t i = 0; i < m * 4; i++)
        for (int64_t k = 0; k < n; k++)
            ((int8_t *)t.data)[i * n + k] = ((const int8_t *)w.data)[i * 3 + k];
    d5_tensor_free(&w);
    return t;
}

/* numpy: uint8 x [1, 2, 5, 5], int8 w [3, 2, 2, 2] with a zero point per
 * output channel, asymmetric pads, strides (1, 2). */
Test(convinteger, per_channel_zero_point)
{
    d5_tensor in[4] = {ramp(D5_U8, 4, SHAPE(1, 2, 5, 5), 0, 256), weights(3, 2), scalar(D5_U8, 3),
                       i8(1, SHAPE(3), DV(1, -1, 2))};
    check("ConvInteger", in, 4, ATTRS(INTS_ATTR("pads", 0, 1, 1, 0), INTS_ATTR("strides", 1, 2)),
          D5_I32, 4, SHAPE(1, 3, 5, 3),
          DV(-1095, -7132, -10044, -4245, -16716, -20140, -9699, -21436, -19484, -9777, -23852,
             -26764, -8070, -18975, -21019, -11866, -26532, -26588, -11446, -20016, -11624, -4370,
             324, 14092, 8082, 14008, 13952, 1752, 1740, 1124, 17673, 34268, 36508, 20963, 25788,
             15740, 10173, 10396, 5724, 4759, 9084, 11324, 808, 713, 1245));
}

/* numpy: uint8 x [1, 4, 5, 5], int8 w [4, 2, 2, 3] in 2 groups, per-channel
 * w scale and zero point, int32 bias, pads (1, 0, 0, 2), strides (2, 1),
 * dilations (1, 2), int8 output. */
Test(qlinearconv, groups_pads_strides_dilations_bias)
{
    d5_tensor in[9] = {ramp(D5_U8, 4, SHAPE(1, 4, 5, 5), 0, 256),
                       scalar(D5_F32, 0.02),
                       scalar(D5_U8, 7),
                       weights(4, 3),
                       f32(1, SHAPE(4), DV(0.01, 0.02, 0.03, 0.04)),
                       i8(1, SHAPE(4), DV(0, 1, -2, 3)),
                       scalar(D5_F32, 0.5),
                       scalar(D5_I8, -3),
                       tmake(D5_I32, 1, SHAPE(4), DV(100, -200, 300, -400))};
    check("QLinearConv", in, 9,
          ATTRS(attr_int("group", 2), INTS_ATTR("pads", 1, 0, 0, 2), INTS_ATTR("strides", 2, 1),
                INTS_ATTR("dilations", 1, 2)),
          D5_I8, 4, SHAPE(1, 4, 3, 3),
          DV(-1, -2, -2, -11, -9, -10, -15, -12, -13, -14, -12, -12, -23, -21, -14, 15, 7, 7, 3, 3,
             5, 18, 17, 19, 29, 33, 30, -14, -12, -12, -47, -38, -40, -59, -54, -45));
}

/* By hand: a 1x1 convolution of one channel, multiplier 1 * 2 / 4 = 0.5:
 * ((4 - 10) * 5 + 3) * 0.5 = -13.5 -> -14 (half to even), + 100 = 86;
 * ((255 - 10) * 5 + 3) * 0.5 = 614, + 100 -> 255 (saturated). */
Test(qlinearconv, bias_rounding_saturation)
{
    d5_tensor in[9] = {u8(4, SHAPE(1, 1, 1, 2), DV(4, 255)),
                       scalar(D5_F32, 1),
                       scalar(D5_U8, 10),
                       u8(4, SHAPE(1, 1, 1, 1), DV(5)),
                       f32(1, SHAPE(1), DV(2)),
                       u8(1, SHAPE(1), DV(0)),
                       scalar(D5_F32, 4),
                       scalar(D5_U8, 100),
                       tmake(D5_I32, 1, SHAPE(1), DV(3))};
    check("QLinearConv", in, 9, NULL, D5_U8, 4, SHAPE(1, 1, 1, 2), DV(86, 255));
}

/* ---- Checks at create ------------------------------------------------------------------------ */

Test(quant_checks, quantize_dequantize)
{
    const d5_status INV = D5_ERR_INVALID, SH = D5_ERR_SHAPE;
    d5_tensor a[3] = {f32(1, SHAPE(2), NULL), scalar(D5_F32, 1), scalar(D5_F32, 0)};
    check_fails("QuantizeLinear", a, 3, NULL, INV,
                "QuantizeLinear: the output type float32 (y_zero_point's or output_dtype's) is "
                "not a quantised type; expected uint8 or int8");
    d5_tensor b[2] = {i8(1, SHAPE(2), NULL), scalar(D5_F32, 1)};
    check_fails("QuantizeLinear", b, 2, NULL, INV,
                "input 0 (x) has data type int8, expected float32 or int32");
    d5_tensor c[2] = {f32(1, SHAPE(2), NULL), tmake(D5_F64, 0, SHAPE(0), DV(1))};
    check_fails("QuantizeLinear", c, 2, ATTRS(OPSET(13)), INV,
                "input 1 (y_scale) has data type float64, expected float32 (x's type from "
                "opset 19)");
    d5_tensor d[3] = {f32(2, SHAPE(2, 3), NULL), f32(1, SHAPE(2), NULL), u8(1, SHAPE(2), NULL)};
    check_fails("QuantizeLinear", d, 3, NULL, SH,
                "input 1 (y_scale) has shape [2] but x has shape [2,3]: per-axis parameters "
                "need x.shape[1] = 3 values");
    d5_tensor e[3] = {f32(2, SHAPE(2, 3), NULL), f32(1, SHAPE(3), NULL), u8(1, SHAPE(2), NULL)};
    check_fails("QuantizeLinear", e, 3, NULL, SH,
                "input 2 (y_zero_point) has shape [2] but input 1 (y_scale) has [3], expected "
                "the same shape");
    d5_tensor f[2] = {f32(2, SHAPE(2, 3), NULL), f32(1, SHAPE(3), NULL)};
    check_fails("QuantizeLinear", f, 2, ATTRS(attr_int("axis", 2)), INV,
                "QuantizeLinear: axis 2 is outside [-2, 1]");
    d5_tensor g[2] = {f32(2, SHAPE(2, 3), NULL), f32(1, SHAPE(3), NULL)};
    check_fails("QuantizeLinear", g, 2, ATTRS(OPSET(10)), SH,
                "opset 10 quantises per tensor only (per axis from opset 13)");
    d5_tensor h[2] = {f32(2, SHAPE(2, 3), NULL), f32(2, SHAPE(1, 3), NULL)};
    check_fails("QuantizeLinear", h, 2, NULL, SH,
                "input 1 (y_scale) has shape [1,3], expected one value (per tensor) or a 1-d");
    d5_tensor i[3] = {u8(1, SHAPE(2), NULL), scalar(D5_F32, 1), scalar(D5_I8, 0)};
    check_fails("DequantizeLinear", i, 3, NULL, INV,
                "DequantizeLinear: input 2 (x_zero_point) has data type int8, expected uint8 "
                "(that of x)");
    d5_tensor j[2] = {f32(1, SHAPE(2), NULL), scalar(D5_F32, 1)};
    check_fails("DequantizeLinear", j, 2, NULL, INV,
                "input 0 (x) has data type float32, expected uint8, int8 or int32");
    d5_tensor k[1] = {u8(1, SHAPE(2), NULL)};
    op_check_fails("DynamicQuantizeLinear", k, 1, NULL, 3, INV,
                   "DynamicQuantizeLinear: input 0 (x) has data type uint8, expected float32");
}

Test(quant_checks, matmuls)
{
    const d5_status INV = D5_ERR_INVALID, SH = D5_ERR_SHAPE;
    d5_tensor a[3] = {u8(2, SHAPE(3, 4), NULL), u8(2, SHAPE(4, 2), NULL), u8(1, SHAPE(4), NULL)};
    check_fails("MatMulInteger", a, 3, NULL, SH,
                "MatMulInteger: a_zero_point has shape [4], expected one value (per tensor), [3] "
                "(one per row of a) or a shape that broadcasts to [3,1]");
    d5_tensor b[4] = {u8(2, SHAPE(3, 4), NULL), i8(2, SHAPE(4, 2), NULL), NONE,
                      i8(2, SHAPE(2, 1), NULL)};
    check_fails("MatMulInteger", b, 4, NULL, SH,
                "b_zero_point has shape [2,1], expected one value (per tensor), [2] (one per "
                "column of b) or a shape that broadcasts to [1,2]");
    d5_tensor c[2] = {u8(2, SHAPE(3, 4), NULL), u8(2, SHAPE(3, 2), NULL)};
    check_fails("MatMulInteger", c, 2, NULL, SH, "inner dimensions 4 and 3 differ");
    d5_tensor d[2] = {f32(2, SHAPE(3, 4), NULL), u8(2, SHAPE(4, 2), NULL)};
    check_fails("MatMulInteger", d, 2, NULL, INV,
                "MatMulInteger: input 0 (A) has data type float32, expected uint8 or int8");
    d5_tensor e[4] = {u8(2, SHAPE(3, 4), NULL), i8(2, SHAPE(4, 2), NULL), NONE,
                      u8(1, SHAPE(2), NULL)};
    check_fails("MatMulInteger", e, 4, NULL, INV,
                "input 3 (b_zero_point) has data type uint8, expected int8 (that of B)");
    d5_tensor q[8] = {u8(2, SHAPE(2, 4), NULL), scalar(D5_F32, 1), scalar(D5_U8, 0),
                      u8(2, SHAPE(4, 3), NULL), scalar(D5_F32, 1), scalar(D5_I8, 0),
                      scalar(D5_F32, 1),        scalar(D5_U8, 0)};
    op_expect_fails("QLinearMatMul", q, 8, NULL, 1, INV,
                    "QLinearMatMul: input 5 (b_zero_point) has data type int8, expected uint8 "
                    "(that of b)");
    d5_tensor_free(&q[5]);
    q[5] = scalar(D5_U8, 0);
    d5_tensor_free(&q[6]);
    q[6] = f32(1, SHAPE(2), NULL);
    op_expect_fails("QLinearMatMul", q, 8, NULL, 1, SH,
                    "QLinearMatMul: input 6 (y_scale) has shape [2], expected one value");
    d5_tensor_free(&q[6]);
    q[6] = scalar(D5_F32, 1);
    d5_tensor_free(&q[1]);
    q[1] = f32(1, SHAPE(4), NULL);
    op_check_fails("QLinearMatMul", q, 8, NULL, 1, SH,
                   "QLinearMatMul: a_scale has shape [4], expected one value (per tensor), [2] "
                   "(one per row of a)");
}

Test(quant_checks, convolutions)
{
    const d5_status INV = D5_ERR_INVALID, SH = D5_ERR_SHAPE;
    d5_tensor q[9] = {u8(4, SHAPE(1, 2, 3, 3), NULL),
                      scalar(D5_F32, 1),
                      scalar(D5_U8, 0),
                      i8(4, SHAPE(2, 2, 1, 1), NULL),
                      f32(1, SHAPE(3), NULL),
                      scalar(D5_I8, 0),
                      scalar(D5_F32, 1),
                      scalar(D5_U8, 0),
                      f32(1, SHAPE(2), NULL)};
    op_expect_fails("QLinearConv", q, 9, NULL, 1, INV,
                    "QLinearConv: B has data type float32, expected int32");
    d5_tensor_free(&q[8]);
    q[8] = tmake(D5_I32, 1, SHAPE(2), NULL);
    op_expect_fails("QLinearConv", q, 9, NULL, 1, SH,
                    "QLinearConv: input 4 (w_scale) has shape [3], expected one value (per "
                    "tensor) or [2] (one per output channel)");
    d5_tensor_free(&q[4]);
    q[4] = f32(1, SHAPE(2), NULL);
    op_expect_fails("QLinearConv", q, 9, ATTRS(attr_int("group", 2)), 1, SH,
                    "QLinearConv: X has 2 channels but W.shape[1] * group = 2 * 2 = 4");
    d5_tensor_free(&q[1]);
    q[1] = f32(1, SHAPE(2), NULL);
    op_expect_fails("QLinearConv", q, 9, NULL, 1, SH,
                    "QLinearConv: input 1 (x_scale) has shape [2], expected one value");
    d5_tensor_free(&q[1]);
    q[1] = scalar(D5_F32, 1);
    d5_tensor_free(&q[7]);
    q[7] = scalar(D5_I32, 0);
    op_check_fails("QLinearConv", q, 9, NULL, 1, INV,
                   "QLinearConv: input 7 (y_zero_point) has data type int32, expected uint8 or "
                   "int8");
    d5_tensor c[4] = {u8(4, SHAPE(1, 2, 3, 3), NULL), u8(4, SHAPE(3, 2, 2, 2), NULL), NONE,
                      u8(1, SHAPE(5), NULL)};
    check_fails("ConvInteger", c, 4, NULL, SH,
                "ConvInteger: input 3 (w_zero_point) has shape [5], expected one value (per "
                "tensor) or [3] (one per output channel)");
    d5_tensor d[2] = {u8(4, SHAPE(1, 2, 3, 3), NULL), u8(4, SHAPE(3, 2, 2, 2), NULL)};
    check_fails("ConvInteger", d, 2, ATTRS(INTS_ATTR("pads", 1, 1)), INV,
                "ConvInteger: pads has 2 values for a 2-d convolution, expected 4");
    d5_tensor e[2] = {u8(2, SHAPE(2, 3), NULL), u8(2, SHAPE(3, 2), NULL)};
    check_fails("ConvInteger", e, 2, NULL, SH,
                "ConvInteger: x has 2 dimensions, expected at least 3 (N, C, D1, ...)");
}

/* ---- Quantised models through the executor --------------------------------------------------- */

/* Runs tests/onnx/data/quant/<name> (written with its expected outputs by
 * make_quant_fixtures.py) on the ref backend; every output must match
 * exactly: the fixtures are built so that the float parts are exact too. */
static void run_model(const char *name)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s/tests/onnx/data/quant/%s", D5_SOURCE_DIR, name);
    d5_onnx_test_params p = d5_onnx_test_default_params();
    p.backend = "ref";
    p.rtol = p.atol = 0;
    d5_onnx_test_result r;
    d5_status s = d5_onnx_test_run(dir, &p, &r);
    cr_assert_eq(s, D5_OK, "%s: %s", name, d5_last_error());
    cr_assert_eq(r.outcome, D5_ONNX_TEST_PASS, "%s: %s", name, r.detail);
    cr_assert_eq(r.datasets, 1);
}

Test(quant_models, qdq)
{
    run_model("qdq");
}

Test(quant_models, qoperator)
{
    run_model("qop");
}

/* Opset 21's float16 scales: the multiplier is formed in float16, as numpy
 * does (Debian's numpy 1.24): 0.1 * 0.3 / 0.5 is 0.059997559 in float16 and
 * 0.060000002 in float32, so that 25 * it rounds to 1 and to 2. */
Test(quant_checks, qlinearmatmul_float16_scales)
{
    static const d5_dtype types[2] = {D5_F16, D5_F32};
    static const double want[2] = {1, 2};
    for (int k = 0; k < 2; k++) {
        d5_tensor q[8] = {tmake(D5_U8, 2, SHAPE(1, 1), DV(5)),
                          scalar(types[k], 0.1),
                          scalar(D5_U8, 0),
                          tmake(D5_U8, 2, SHAPE(1, 1), DV(5)),
                          scalar(types[k], 0.3),
                          scalar(D5_U8, 0),
                          scalar(types[k], 0.5),
                          scalar(D5_U8, 0)};
        d5_tensor y;
        run_op("QLinearMatMul", "ref", q, 8, NULL, &y, 1);
        cr_expect_eq(((const uint8_t *)y.data)[0], want[k], "%s scales: %d",
                     d5_dtype_name(types[k]), ((const uint8_t *)y.data)[0]);
        d5_tensor_free(&y);
        for (int i = 0; i < 8; i++) d5_tensor_free(&q[i]);
    }
}
