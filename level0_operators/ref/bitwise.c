/* The bitwise operators of ONNX opset 18 on integers (int8 to int64, uint8 to
 * uint64; every input and the output of one type):
 *   BitwiseAnd, BitwiseOr, BitwiseXor   C = A & B, A | B, A ^ B element-wise,
 *                                       with numpy broadcasting
 *   BitwiseNot                          Y = ~X
 * Like Cast, they work on the tensors' own bits rather than through the ref
 * backend's doubles, so that 64-bit values stay exact beyond 2^53. No
 * gradient (the inputs are integers).
 * https://onnx.ai/onnx/operators/onnx__BitwiseAnd.html
 * https://onnx.ai/onnx/operators/onnx__BitwiseOr.html
 * https://onnx.ai/onnx/operators/onnx__BitwiseXor.html
 * https://onnx.ai/onnx/operators/onnx__BitwiseNot.html */
#include "util.h"

#include <string.h>

typedef enum bitwise_kind { AND, OR, XOR, NOT } bitwise_kind;

typedef struct bitwise {
    bitwise_kind kind;
    d5_tensor_desc a, b, c; /* b unused by BitwiseNot */
    size_t size;            /* bytes per element */
} bitwise;

static const char *const names[] = {"BitwiseAnd", "BitwiseOr", "BitwiseXor", "BitwiseNot"};

static d5_status bitwise_create(bitwise_kind kind, const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    const char *op = names[kind];
    int32_t n = kind == NOT ? 1 : 2;
    d5_status s = D5_OK;
    for (int32_t i = 0; i < n && s == D5_OK; i++) s = d5__need_types(op, in, nin, i, D5__INTS);
    if (s == D5_OK && n == 2) s = d5__same_type(op, in, nin, 1, 0);
    if (s != D5_OK) return s;
    bitwise b = {.kind = kind, .a = in[0].desc};
    b.c = in[0].desc;
    if (n == 2) {
        const d5_tensor_desc *both[2] = {&in[0].desc, &in[1].desc};
        b.b = in[1].desc;
        if ((s = d5__broadcast(op, both, 2, &b.c)) != D5_OK) return s;
    }
    b.size = d5_dtype_size((d5_dtype)b.c.dtype);
    args->outputs[0] = b.c;
    return d5__ref_state(state, &b, sizeof b, op);
}

/* Element i of an integer tensor of `size` bytes per element, as its bits. */
static uint64_t load(const void *data, size_t size, int64_t i)
{
    const unsigned char *p = (const unsigned char *)data + (size_t)i * size;
    switch (size) {
    case 1: return *p;
    case 2: {
        uint16_t v;
        memcpy(&v, p, sizeof v);
        return v;
    }
    case 4: {
        uint32_t v;
        memcpy(&v, p, sizeof v);
        return v;
    }
    default: {
        uint64_t v;
        memcpy(&v, p, sizeof v);
        return v;
    }
    }
}

/* Stores the low `size` bytes of v as element i (little-endian hosts). */
static void store(void *data, size_t size, int64_t i, uint64_t v)
{
    unsigned char *p = (unsigned char *)data + (size_t)i * size;
    switch (size) {
    case 1: *p = (unsigned char)v; break;
    case 2: {
        uint16_t w = (uint16_t)v;
        memcpy(p, &w, sizeof w);
        break;
    }
    case 4: {
        uint32_t w = (uint32_t)v;
        memcpy(p, &w, sizeof w);
        break;
    }
    default: memcpy(p, &v, sizeof v); break;
    }
}

static d5_status bitwise_forward(void *state, const d5_op_call *call)
{
    const bitwise *b = state;
    const d5_tensor *in = call->inputs;
    void *y = call->outputs[0].data;
    int64_t n = d5_tensor_desc_numel(&b->c);
    for (int64_t i = 0; i < n; i++) {
        uint64_t x = load(in[0].data, b->size, d5__broadcast_index(&b->c, &b->a, i)), z;
        if (b->kind == NOT) {
            z = ~x;
        } else {
            uint64_t w = load(in[1].data, b->size, d5__broadcast_index(&b->c, &b->b, i));
            z = b->kind == AND ? x & w : b->kind == OR ? x | w : x ^ w;
        }
        store(y, b->size, i, z);
    }
    return D5_OK;
}

static void bitwise_destroy(void *state)
{
    d5_free(state);
}

/* No floating-point work; the bytes of the inputs and the output. */
static void bitwise_cost(void *state, double *flops, double *bytes)
{
    const bitwise *b = state;
    double n = (double)d5_tensor_desc_numel(&b->c);
    *flops = 0;
    *bytes = (double)b->size * (n + (double)d5_tensor_desc_numel(&b->a) +
                                (b->kind == NOT ? 0 : (double)d5_tensor_desc_numel(&b->b)));
}

#define BITWISE(NAME, KIND, NIN)                                                                   \
    static d5_status NAME##_create(const d5_op_create_args *args, void **state)                    \
    {                                                                                              \
        return bitwise_create(KIND, args, state);                                                  \
    }                                                                                              \
    const d5_op_desc d5__op_ref_##NAME = {.abi_version = D5_OP_ABI_VERSION,                        \
                                          .flags = D5_OP_F64,                                      \
                                          .name = #NAME,                                           \
                                          .backend = "ref",                                        \
                                          .min_inputs = NIN,                                       \
                                          .max_inputs = NIN,                                       \
                                          .min_outputs = 1,                                        \
                                          .max_outputs = 1,                                        \
                                          .create = NAME##_create,                                 \
                                          .forward = bitwise_forward,                              \
                                          .destroy = bitwise_destroy,                              \
                                          .cost = bitwise_cost}

BITWISE(BitwiseAnd, AND, 2);
BITWISE(BitwiseOr, OR, 2);
BITWISE(BitwiseXor, XOR, 2);
BITWISE(BitwiseNot, NOT, 1);
