/* The trigonometric and hyperbolic operators, element-wise on float32 or
 * float64, each with its derivative:
 *   Sin, Cos, Tan, Asin, Acos, Atan (ONNX opset 7)
 *   https://onnx.ai/onnx/operators/onnx__Sin.html
 *   https://onnx.ai/onnx/operators/onnx__Cos.html
 *   https://onnx.ai/onnx/operators/onnx__Tan.html
 *   https://onnx.ai/onnx/operators/onnx__Asin.html
 *   https://onnx.ai/onnx/operators/onnx__Acos.html
 *   https://onnx.ai/onnx/operators/onnx__Atan.html
 *   Sinh, Cosh, Asinh, Acosh, Atanh (ONNX opset 9)
 *   https://onnx.ai/onnx/operators/onnx__Sinh.html
 *   https://onnx.ai/onnx/operators/onnx__Cosh.html
 *   https://onnx.ai/onnx/operators/onnx__Asinh.html
 *   https://onnx.ai/onnx/operators/onnx__Acosh.html
 *   https://onnx.ai/onnx/operators/onnx__Atanh.html
 * (Opset 22 only adds data types.) Outside a function's domain (Asin of 2,
 * Acosh of 0) the result is NaN, as in C's math library. */
#include "unary.h"

#include <math.h>

/* Each operator: the function, and its derivative from x or y = f(x). */
#define TRIG(NAME, F, DF)                                                                          \
    static double NAME##_f(double x, double alpha)                                                 \
    {                                                                                              \
        (void)alpha;                                                                               \
        return F;                                                                                  \
    }                                                                                              \
    static double NAME##_df(double x, double y, double alpha)                                      \
    {                                                                                              \
        (void)x;                                                                                   \
        (void)y;                                                                                   \
        (void)alpha;                                                                               \
        return DF;                                                                                 \
    }                                                                                              \
    static const d5_unary_fn NAME##_fn = {.name = #NAME, .f = NAME##_f, .df = NAME##_df};          \
    D5_UNARY_OPERATOR(NAME, NAME##_fn)

TRIG(Sin, sin(x), cos(x));
TRIG(Cos, cos(x), -sin(x));
TRIG(Tan, tan(x), 1 + y * y);
TRIG(Asin, asin(x), 1 / sqrt(1 - x * x));
TRIG(Acos, acos(x), -1 / sqrt(1 - x * x));
TRIG(Atan, atan(x), 1 / (1 + x * x));
TRIG(Sinh, sinh(x), cosh(x));
TRIG(Cosh, cosh(x), sinh(x));
TRIG(Asinh, asinh(x), 1 / sqrt(x * x + 1));
TRIG(Acosh, acosh(x), 1 / sqrt(x * x - 1));
TRIG(Atanh, atanh(x), 1 / (1 - x * x));
