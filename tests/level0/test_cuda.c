/* The cuda backend. With a CUDA device, every operator is validated forward
 * and backward against ref (the validator runs it on device copies of its
 * inputs). Without one, the tests that need it are skipped with the reason,
 * and the others check that the backend says so cleanly and that the
 * refusals decided before any device call work. */
#define _GNU_SOURCE
#include "../../level0_operators/device.h"
#include "op_support.h"
#include "support.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#define RUN(out, err, ...) run_d5(out, err, (const char *const[]){__VA_ARGS__, NULL})

TestSuite(cuda, .timeout = D5_TIMEOUT(600));

/* The table itself, found without the availability check of d5_op_find. */
static const d5_op_desc *table(const char *name)
{
    for (size_t i = 0; i < d5_op_count(); i++) {
        const d5_op_desc *d = d5_op_at(i);
        if (strcmp(d->name, name) == 0 && strcmp(d->backend, "cuda") == 0) return d;
    }
    cr_assert_fail("no cuda table for %s", name);
    return NULL;
}

/* Forward only (the operators of inference graphs), on the given inputs
 * (NULL: random in [-1, 1]). */
static void forward_as_ref(const char *name, const d5_tensor_desc *in, int32_t nin,
                           const d5_tensor *inputs, const d5_attrs *attrs)
{
    need_backend("cuda");
    const d5_op_desc *cand, *ref;
    cr_assert_eq(d5_op_find(name, "cuda", &cand), D5_OK, "%s", d5_last_error());
    cr_assert_eq(d5_op_find(name, "ref", &ref), D5_OK);
    cr_assert(cand->flags & D5_OP_CUDA);
    d5_check_params p = d5_check_default_params();
    d5_forward_check r;
    cr_assert_eq(d5_validate_forward(cand, ref, in, nin, inputs, attrs, 1, &p, &r), D5_OK,
                 "%s forward: %s", name, d5_last_error());
    cr_assert(r.passed, "%s forward: linf %.3g > %.3g at %lld (got %g want %g)", name,
              r.out[0].linf, r.tol[0], (long long)r.out[0].worst, r.out[0].got, r.out[0].want);
}

/* Forward and backward of the cuda operator against ref on random inputs. */
static void same_as_ref(const char *name, const d5_tensor_desc *in, int32_t nin,
                        const d5_attrs *attrs)
{
    forward_as_ref(name, in, nin, NULL, attrs);
    const d5_op_desc *cand, *ref;
    cr_assert_eq(d5_op_find(name, "cuda", &cand), D5_OK, "%s", d5_last_error());
    cr_assert_eq(d5_op_find(name, "ref", &ref), D5_OK);
    d5_check_params p = d5_check_default_params();
    d5_forward_check r;
    cr_assert_eq(d5_validate_backward(cand, ref, in, nin, NULL, attrs, 1, &p, &r), D5_OK,
                 "%s backward: %s", name, d5_last_error());
    for (int32_t i = 0; i < nin; i++)
        cr_assert(r.out[i].linf <= r.tol[i],
                  "%s gradient of input %d: linf %.3g > %.3g at %lld (got %g want %g)", name, i,
                  r.out[i].linf, r.tol[i], (long long)r.out[i].worst, r.out[i].got, r.out[i].want);
}

/* ---- Without a device (these run everywhere) ---- */

Test(cuda, without_a_device_find_says_no_cuda_device)
{
    char why[256];
    if (d5_backend_available("cuda", why, sizeof why)) cr_skip_test("a CUDA device is present");
    cr_assert(strstr(why, "no CUDA device"), "%s", why);
    const d5_op_desc *d = NULL;
    cr_assert_eq(d5_op_find("Conv", "cuda", &d), D5_ERR_NODEVICE);
    cr_assert(strstr(d5_last_error(), "no CUDA device"), "%s", d5_last_error());
    cr_assert(strstr(d5_last_error(), "Conv"), "%s", d5_last_error());
    /* Creating from the table directly fails the same way, before any CUDA call. */
    d5_tensor_desc in[2] = {op_fdesc(2, SHAPE(4, 3)), op_fdesc(2, SHAPE(3, 5))};
    d5_op *op = NULL;
    cr_assert_eq(d5_op_create_desc(table("Gemm"), in, 2, NULL, 0, &op), D5_ERR_NODEVICE);
    cr_assert(strstr(d5_last_error(), "no CUDA device"), "%s", d5_last_error());
    cr_assert_null(op);
    d5_tensor t = tf32(1, SHAPE(3), VALS(1, 2, 3)), dev;
    cr_assert_eq(d5__cuda_tensor_upload(&t, &dev), D5_ERR_NODEVICE);
    d5_tensor_free(&t);
}

/* Where the plugin is missing, the backend is listed, unavailable with the
 * reason, and its tables and device memory refuse with the same words. */
Test(cuda, without_its_plugin_the_backend_says_so)
{
    cr_assert_eq(setenv("D5_PLUGIN_DIR", "/nonexistent/d5-plugins", 1), 0);
    const char *expect = "plugin not built (no /nonexistent/d5-plugins/libd5_cuda.so)";
    d5_backend_info b;
    cr_assert_eq(d5_backend_find("cuda", &b), D5_OK);
    cr_assert_not(b.available);
    cr_assert_str_eq(b.reason, expect);
    cr_assert_eq(b.device_operators, b.operators);
    cr_assert_gt(b.operators, 0);
    const d5_op_desc *d;
    cr_assert_eq(d5_op_find("Conv", "cuda", &d), D5_ERR_NODEVICE);
    cr_assert(strstr(d5_last_error(), expect), "%s", d5_last_error());
    d5_tensor_desc in[2] = {op_fdesc(2, SHAPE(4, 3)), op_fdesc(2, SHAPE(3, 5))};
    d5_op *op = NULL;
    cr_assert_eq(d5_op_create_desc(table("Gemm"), in, 2, NULL, 0, &op), D5_ERR_UNSUPPORTED);
    cr_assert(strstr(d5_last_error(), expect), "%s", d5_last_error());
    cr_assert_null(op);
    float x = 1;
    d5_tensor t = {.desc = op_fdesc(1, SHAPE(1)), .data = &x}, dev;
    cr_assert_eq(d5__cuda_tensor_upload(&t, &dev), D5_ERR_UNSUPPORTED);
    cr_assert(strstr(d5_last_error(), "device memory: plugin not built"), "%s", d5_last_error());
}

Test(cuda, every_operator_is_a_device_operator_with_backward)
{
    static const char *const names[] = {"Gemm",        "MatMul",  "Conv",      "MaxPool",
                                        "AveragePool", "Relu",    "Sigmoid",   "Tanh",
                                        "Elu",         "Softmax", "LogSoftmax"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const d5_op_desc *d = table(names[i]);
        cr_assert_eq(d->flags & (D5_OP_CUDA | D5_OP_HAS_BACKWARD), D5_OP_CUDA | D5_OP_HAS_BACKWARD,
                     "%s", names[i]);
        cr_assert_not_null(d->backward, "%s", names[i]);
    }
}

/* The operators of inference graphs: on the device, forward only. */
Test(cuda, inference_operators_are_device_operators)
{
    static const char *const names[] = {
        "FusedConv", "BatchNormalization", "GlobalAveragePool", "GlobalMaxPool", "Add", "Sub",
        "Mul"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        cr_assert(table(names[i])->flags & D5_OP_CUDA, "%s", names[i]);
    cr_assert(table("FusedConv")->flags & D5_OP_Z_IN_PLACE);
    /* Shapes that do not broadcast are refused before any device call. */
    d5_tensor_desc bad[2] = {op_fdesc(2, SHAPE(6, 3)), op_fdesc(2, SHAPE(6, 4))};
    d5_op *op = NULL;
    cr_assert_eq(d5_op_create_desc(table("Sub"), bad, 2, NULL, 0, &op), D5_ERR_SHAPE);
    cr_assert(strstr(d5_last_error(), "do not broadcast"), "%s", d5_last_error());
    d5_tensor_desc bn[5] = {op_fdesc(4, SHAPE(2, 3, 4, 4)), op_fdesc(1, SHAPE(3)),
                            op_fdesc(1, SHAPE(3)), op_fdesc(1, SHAPE(3)), op_fdesc(1, SHAPE(3))};
    d5_attr training[] = {attr_int("training_mode", 1)};
    d5_attrs t = {training, 1};
    cr_assert_eq(d5_op_create_desc(table("BatchNormalization"), bn, 5, &t, 0, &op),
                 D5_ERR_UNSUPPORTED);
    cr_assert(strstr(d5_last_error(), "inference only"), "%s", d5_last_error());
    cr_assert_null(op);
    d5_tensor_desc x[1] = {op_fdesc(3, SHAPE(2, 3, 4))};
    d5_attr perm_items[] = {attr_ints("perm", SHAPE(0, 0, 1), 3)};
    d5_attrs perm = {perm_items, 1};
    cr_assert_eq(d5_op_create_desc(table("Transpose"), x, 1, &perm, 0, &op), D5_ERR_INVALID);
    cr_assert(strstr(d5_last_error(), "not a permutation"), "%s", d5_last_error());
    d5_tensor_desc g32[2] = {op_fdesc(2, SHAPE(10, 4)), op_fdesc(1, SHAPE(3))};
    g32[1].dtype = D5_I32;
    cr_assert_eq(d5_op_create_desc(table("Gather"), g32, 2, NULL, 0, &op), D5_ERR_UNSUPPORTED);
    cr_assert(strstr(d5_last_error(), "int64"), "%s", d5_last_error());
}

/* Refusals decided from shapes and attributes alone: D5_ERR_UNSUPPORTED, so
 * that a caller falls back to another backend. */
Test(cuda, unsupported_cases_are_declined_before_any_device_call)
{
    d5_op *op = NULL;
    d5_tensor_desc f64[2];
    cr_assert_eq(d5_tensor_desc_make(D5_F64, 2, SHAPE(4, 3), &f64[0]), D5_OK);
    cr_assert_eq(d5_tensor_desc_make(D5_F64, 2, SHAPE(3, 5), &f64[1]), D5_OK);
    cr_assert_eq(d5_op_create_desc(table("MatMul"), f64, 2, NULL, 0, &op), D5_ERR_UNSUPPORTED);
    cr_assert(strstr(d5_last_error(), "float32"), "%s", d5_last_error());

    d5_tensor_desc partial[2] = {op_fdesc(4, SHAPE(2, 3, 4, 5)), op_fdesc(3, SHAPE(3, 5, 6))};
    cr_assert_eq(d5_op_create_desc(table("MatMul"), partial, 2, NULL, 0, &op), D5_ERR_UNSUPPORTED);
    cr_assert(strstr(d5_last_error(), "strided"), "%s", d5_last_error());

    d5_tensor_desc x[1] = {op_fdesc(4, SHAPE(1, 2, 7, 7))};
    d5_attr ceil_items[] = {attr_ints("kernel_shape", SHAPE(2, 2), 2), attr_int("ceil_mode", 1)};
    d5_attrs ceil = {ceil_items, 2};
    cr_assert_eq(d5_op_create_desc(table("MaxPool"), x, 1, &ceil, 0, &op), D5_ERR_UNSUPPORTED);
    cr_assert(strstr(d5_last_error(), "ceil_mode"), "%s", d5_last_error());
    d5_attr dil_items[] = {attr_ints("kernel_shape", SHAPE(2, 2), 2),
                           attr_ints("dilations", SHAPE(2, 1), 2)};
    d5_attrs dil = {dil_items, 2};
    cr_assert_eq(d5_op_create_desc(table("AveragePool"), x, 1, &dil, 0, &op), D5_ERR_UNSUPPORTED);
    cr_assert(strstr(d5_last_error(), "dilation"), "%s", d5_last_error());
    d5_attr k_items[] = {attr_ints("kernel_shape", SHAPE(2, 2), 2)};
    d5_attrs k = {k_items, 1};
    cr_assert_eq(d5_op_create_desc(table("MaxPool"), x, 1, &k, 2, &op), D5_ERR_UNSUPPORTED);
    cr_assert(strstr(d5_last_error(), "Indices"), "%s", d5_last_error());

    d5_tensor_desc c4[2] = {op_fdesc(6, SHAPE(1, 1, 3, 3, 3, 3)),
                            op_fdesc(6, SHAPE(1, 1, 2, 2, 2, 2))};
    cr_assert_eq(d5_op_create_desc(table("Conv"), c4, 2, NULL, 0, &op), D5_ERR_UNSUPPORTED);
    cr_assert_null(op);
}

/* `d5 test-operator --backend cuda`: a clean refusal without a device, a
 * validated row with one. */
Test(cuda, test_operator_command)
{
    char *out = NULL, *err = NULL, why[256];
    if (!d5_backend_available("cuda", why, sizeof why)) {
        int rc = RUN(&out, &err, "test-operator", "Gemm", "--backend", "cuda", "--no-peak");
        cr_assert_eq(rc, 2, "exit %d: %s\n%s", rc, out, err);
        cr_assert(strstr(err, "no CUDA device"), "%s", err);
        cr_assert(strstr(err, "available here: ref"), "%s", err);
        free(out);
        free(err);
        rc = RUN(&out, &err, "test-operator", "Gemm", "--backend", "all", "--limit", "1",
                 "--max-time", "0.02", "--no-peak");
        cr_assert_eq(rc, 0, "exit %d: %s\n%s", rc, out, err);
        cr_assert(strstr(err, "skipping cuda: "), "%s", err);
        cr_assert(strstr(out, " blas "), "%s", out);
    } else {
        int rc = RUN(&out, &err, "test-operator", "Gemm", "--backend", "cuda", "--limit", "2",
                     "--validate", "--gradient", "--max-time", "0.1", "--no-peak");
        cr_assert_eq(rc, 0, "exit %d: %s\n%s", rc, out, err);
        cr_assert(strstr(out, " cuda "), "%s", out);
        cr_assert_null(strstr(out, "FAIL"), "%s", out);
        cr_assert_null(strstr(out, "error"), "%s", out);
    }
    free(out);
    free(err);
}

/* ---- With a device ---- */

Test(cuda, device_tensors_round_trip_and_host_memory_is_refused)
{
    need_backend("cuda");
    d5_tensor h = tf32(2, SHAPE(2, 3), VALS(1, 2, 3, 4, 5, 6)), back = tf32(2, SHAPE(2, 3), NULL);
    d5_tensor dev, y;
    cr_assert_eq(d5__cuda_tensor_upload(&h, &dev), D5_OK, "%s", d5_last_error());
    cr_assert_eq(dev.device, D5_DEVICE_CUDA);
    cr_assert_eq(d5__cuda_tensor_download(&dev, &back), D5_OK, "%s", d5_last_error());
    expect_values(&back, VALS(1, 2, 3, 4, 5, 6), 6, 0);
    /* Relu on the device, then on host memory (refused). */
    const d5_op_desc *relu;
    cr_assert_eq(d5_op_find("Relu", "cuda", &relu), D5_OK);
    d5_op *op;
    cr_assert_eq(d5_op_create_desc(relu, &h.desc, 1, NULL, 0, &op), D5_OK, "%s", d5_last_error());
    cr_assert_eq(d5__cuda_tensor_alloc(&h.desc, &y), D5_OK);
    ((float *)h.data)[1] = -2;
    d5__cuda_tensor_free(&dev);
    cr_assert_eq(d5__cuda_tensor_upload(&h, &dev), D5_OK);
    cr_assert_eq(d5_op_forward(op, &dev, &y), D5_OK, "%s", d5_last_error());
    cr_assert_eq(d5__cuda_tensor_download(&y, &back), D5_OK);
    expect_values(&back, VALS(1, 0, 3, 4, 5, 6), 6, 0);
    cr_assert_eq(d5_op_forward(op, &h, &back), D5_ERR_INVALID);
    cr_assert(strstr(d5_last_error(), "host memory"), "%s", d5_last_error());
    d5_op_free(op);
    d5__cuda_tensor_free(&dev);
    d5__cuda_tensor_free(&y);
    d5_tensor_free(&h);
    d5_tensor_free(&back);
}

Test(cuda, gemm_transposes_and_every_broadcast_of_c)
{
    d5_attr items[] = {attr_int("transA", 1), attr_int("transB", 1), attr_float("alpha", 0.5),
                       attr_float("beta", -1.5)};
    d5_attrs attrs = {items, 4};
    const int64_t *cshapes[] = {SHAPE(5), SHAPE(1, 5), SHAPE(7, 1), SHAPE(7, 5), SHAPE(1)};
    const int32_t cnd[] = {1, 2, 2, 2, 1};
    for (int i = 0; i < 5; i++) {
        d5_tensor_desc in[3] = {op_fdesc(2, SHAPE(9, 7)), op_fdesc(2, SHAPE(5, 9)),
                                op_fdesc(cnd[i], cshapes[i])};
        same_as_ref("Gemm", in, 3, &attrs);
    }
    d5_tensor_desc scalar_c[3] = {op_fdesc(2, SHAPE(7, 9)), op_fdesc(2, SHAPE(9, 5)),
                                  op_fdesc(0, NULL)};
    same_as_ref("Gemm", scalar_c, 3, NULL);
    d5_tensor_desc ab[2] = {op_fdesc(2, SHAPE(7, 9)), op_fdesc(2, SHAPE(9, 5))};
    same_as_ref("Gemm", ab, 2, NULL);
    d5_attr ta_items[] = {attr_int("transA", 1)};
    d5_attrs ta = {ta_items, 1};
    d5_tensor_desc at[2] = {op_fdesc(2, SHAPE(9, 7)), op_fdesc(2, SHAPE(9, 5))};
    same_as_ref("Gemm", at, 2, &ta);
}

/* DeepBench's training GEMM M=1760, N=128, K=1760. */
Test(cuda, gemm_deepbench_1760x128x1760)
{
    d5_tensor_desc in[2] = {op_fdesc(2, SHAPE(1760, 1760)), op_fdesc(2, SHAPE(1760, 128))};
    same_as_ref("Gemm", in, 2, NULL);
}

Test(cuda, matmul_2d_batched_broadcast_and_1d)
{
    d5_tensor_desc two[2] = {op_fdesc(2, SHAPE(6, 4)), op_fdesc(2, SHAPE(4, 5))};
    same_as_ref("MatMul", two, 2, NULL);
    d5_tensor_desc both[2] = {op_fdesc(4, SHAPE(2, 3, 6, 4)), op_fdesc(4, SHAPE(2, 3, 4, 5))};
    same_as_ref("MatMul", both, 2, NULL);
    d5_tensor_desc batch_single[2] = {op_fdesc(3, SHAPE(3, 6, 4)), op_fdesc(2, SHAPE(4, 5))};
    same_as_ref("MatMul", batch_single, 2, NULL);
    d5_tensor_desc single_batch[2] = {op_fdesc(2, SHAPE(6, 4)), op_fdesc(3, SHAPE(3, 4, 5))};
    same_as_ref("MatMul", single_batch, 2, NULL);
    d5_tensor_desc ones[2] = {op_fdesc(4, SHAPE(1, 1, 6, 4)), op_fdesc(3, SHAPE(3, 4, 5))};
    same_as_ref("MatMul", ones, 2, NULL);
    d5_tensor_desc vec_a[2] = {op_fdesc(1, SHAPE(4)), op_fdesc(3, SHAPE(3, 4, 5))};
    same_as_ref("MatMul", vec_a, 2, NULL);
    d5_tensor_desc vec_b[2] = {op_fdesc(3, SHAPE(3, 6, 4)), op_fdesc(1, SHAPE(4))};
    same_as_ref("MatMul", vec_b, 2, NULL);
}

Test(cuda, conv_3x3_bias_strides_dilations_groups)
{
    d5_attr pad_items[] = {attr_ints("pads", SHAPE(1, 1, 1, 1), 4)};
    d5_attrs pad = {pad_items, 1};
    d5_tensor_desc c3x3[3] = {op_fdesc(4, SHAPE(8, 16, 14, 14)), op_fdesc(4, SHAPE(32, 16, 3, 3)),
                              op_fdesc(1, SHAPE(32))};
    same_as_ref("Conv", c3x3, 3, &pad);
    d5_attr items[] = {attr_ints("strides", SHAPE(2, 1), 2),
                       attr_ints("pads", SHAPE(1, 0, 1, 0), 4),
                       attr_ints("dilations", SHAPE(1, 2), 2)};
    d5_attrs attrs = {items, 3};
    d5_tensor_desc in[3] = {op_fdesc(4, SHAPE(2, 3, 9, 8)), op_fdesc(4, SHAPE(4, 3, 3, 2)),
                            op_fdesc(1, SHAPE(4))};
    same_as_ref("Conv", in, 3, &attrs);
    same_as_ref("Conv", in, 2, &attrs);
    d5_attr gi[] = {attr_int("group", 2), attr_ints("pads", SHAPE(1, 1, 1, 1), 4)};
    d5_attrs ga = {gi, 2};
    d5_tensor_desc g[2] = {op_fdesc(4, SHAPE(1, 4, 7, 7)), op_fdesc(4, SHAPE(6, 2, 3, 3))};
    same_as_ref("Conv", g, 2, &ga);
    d5_attr di[] = {attr_int("group", 3)};
    d5_attrs da = {di, 1};
    d5_tensor_desc dw[2] = {op_fdesc(4, SHAPE(2, 3, 6, 6)), op_fdesc(4, SHAPE(3, 1, 3, 3))};
    same_as_ref("Conv", dw, 2, &da);
}

Test(cuda, conv_1d_3d_and_asymmetric_pads)
{
    d5_attr p1[] = {attr_ints("pads", SHAPE(2, 2), 2), attr_ints("strides", SHAPE(2), 1)};
    d5_attrs a1 = {p1, 2};
    d5_tensor_desc c1[3] = {op_fdesc(3, SHAPE(2, 3, 11)), op_fdesc(3, SHAPE(5, 3, 4)),
                            op_fdesc(1, SHAPE(5))};
    same_as_ref("Conv", c1, 3, &a1);
    d5_tensor_desc c3[2] = {op_fdesc(5, SHAPE(1, 2, 5, 4, 6)), op_fdesc(5, SHAPE(3, 2, 2, 3, 2))};
    same_as_ref("Conv", c3, 2, NULL);
    /* Stride 2 over 8 with pads (1, 0): the end pad adds no output position. */
    d5_attr pa[] = {attr_ints("pads", SHAPE(1, 1, 0, 0), 4), attr_ints("strides", SHAPE(2, 2), 2)};
    d5_attrs aa = {pa, 2};
    d5_tensor_desc asym[2] = {op_fdesc(4, SHAPE(1, 2, 8, 8)), op_fdesc(4, SHAPE(3, 2, 3, 3))};
    same_as_ref("Conv", asym, 2, &aa);
}

Test(cuda, maxpool_and_averagepool)
{
    d5_tensor_desc x[1] = {op_fdesc(4, SHAPE(2, 3, 9, 8))};
    d5_attr m1[] = {attr_ints("kernel_shape", SHAPE(2, 2), 2),
                    attr_ints("strides", SHAPE(2, 2), 2)};
    d5_attrs a1 = {m1, 2};
    same_as_ref("MaxPool", x, 1, &a1);
    same_as_ref("AveragePool", x, 1, &a1);
    d5_attr m2[] = {attr_ints("kernel_shape", SHAPE(3, 3), 2),
                    attr_ints("pads", SHAPE(1, 1, 1, 1), 4)};
    d5_attrs a2 = {m2, 2};
    same_as_ref("MaxPool", x, 1, &a2);
    same_as_ref("AveragePool", x, 1, &a2);
    d5_attr m3[] = {attr_ints("kernel_shape", SHAPE(3, 3), 2),
                    attr_ints("pads", SHAPE(1, 1, 1, 1), 4), attr_int("count_include_pad", 1)};
    d5_attrs a3 = {m3, 3};
    same_as_ref("AveragePool", x, 1, &a3);
    d5_tensor_desc x1[1] = {op_fdesc(3, SHAPE(2, 3, 10))};
    d5_attr k1[] = {attr_ints("kernel_shape", SHAPE(3), 1), attr_ints("strides", SHAPE(2), 1)};
    d5_attrs b1 = {k1, 2};
    same_as_ref("MaxPool", x1, 1, &b1);
    same_as_ref("AveragePool", x1, 1, &b1);
    d5_tensor_desc x3[1] = {op_fdesc(5, SHAPE(1, 2, 4, 5, 6))};
    d5_attr k3[] = {attr_ints("kernel_shape", SHAPE(2, 2, 2), 3)};
    d5_attrs b3 = {k3, 1};
    same_as_ref("MaxPool", x3, 1, &b3);
    same_as_ref("AveragePool", x3, 1, &b3);
}

Test(cuda, activations)
{
    d5_tensor_desc x[1] = {op_fdesc(3, SHAPE(3, 4, 5))};
    same_as_ref("Relu", x, 1, NULL);
    same_as_ref("Sigmoid", x, 1, NULL);
    same_as_ref("Tanh", x, 1, NULL);
    same_as_ref("Elu", x, 1, NULL);
    d5_attr alpha[] = {attr_float("alpha", 0.5)};
    d5_attrs a = {alpha, 1};
    same_as_ref("Elu", x, 1, &a);
}

Test(cuda, softmax_and_logsoftmax_on_every_axis)
{
    d5_tensor_desc x[1] = {op_fdesc(3, SHAPE(2, 5, 3))};
    const int64_t axes[] = {0, 1, 2, -1};
    for (int i = 0; i < 4; i++) {
        d5_attr items[] = {attr_int("axis", axes[i])};
        d5_attrs a = {items, 1};
        same_as_ref("Softmax", x, 1, &a);
        same_as_ref("LogSoftmax", x, 1, &a);
    }
    same_as_ref("Softmax", x, 1, NULL);
}

Test(cuda, fusedconv_with_bias_sum_and_relu)
{
    d5_tensor_desc in[4] = {op_fdesc(4, SHAPE(2, 3, 8, 8)), op_fdesc(4, SHAPE(4, 3, 3, 3)),
                            op_fdesc(1, SHAPE(4)), op_fdesc(4, SHAPE(2, 4, 8, 8))};
    d5_attr items[] = {attr_ints("pads", SHAPE(1, 1, 1, 1), 4), attr_string("activation", "Relu")};
    d5_attrs relu = {items, 2}, plain = {items, 1};
    forward_as_ref("FusedConv", in, 4, NULL, &relu);
    forward_as_ref("FusedConv", in, 3, NULL, &relu);
    forward_as_ref("FusedConv", in, 4, NULL, &plain);
}

Test(cuda, batchnormalization_inference)
{
    need_backend("cuda");
    d5_tensor_desc in[5] = {op_fdesc(4, SHAPE(2, 3, 5, 4)), op_fdesc(1, SHAPE(3)),
                            op_fdesc(1, SHAPE(3)), op_fdesc(1, SHAPE(3)), op_fdesc(1, SHAPE(3))};
    d5_tensor t[5];
    for (int i = 0; i < 5; i++) {
        cr_assert_eq(d5_tensor_alloc(&in[i], &t[i]), D5_OK);
        float *v = t[i].data;
        for (int64_t k = 0; k < d5_tensor_desc_numel(&in[i]); k++)
            v[k] = i == 4 ? 0.5f + 0.25f * (float)k : (float)((k * 7 + i) % 11) / 5.0f - 1.0f;
    }
    d5_attr eps[] = {attr_float("epsilon", 1e-3)};
    d5_attrs a = {eps, 1};
    forward_as_ref("BatchNormalization", in, 5, t, &a);
    forward_as_ref("BatchNormalization", in, 5, t, NULL);
    for (int i = 0; i < 5; i++) d5_tensor_free(&t[i]);
}

Test(cuda, global_poolings)
{
    d5_tensor_desc x[1] = {op_fdesc(4, SHAPE(2, 5, 7, 6))};
    forward_as_ref("GlobalAveragePool", x, 1, NULL, NULL);
    forward_as_ref("GlobalMaxPool", x, 1, NULL, NULL);
    d5_tensor_desc x3[1] = {op_fdesc(3, SHAPE(2, 5, 9))};
    forward_as_ref("GlobalAveragePool", x3, 1, NULL, NULL);
}

Test(cuda, add_sub_mul_with_broadcasting)
{
    static const char *const ops[] = {"Add", "Sub", "Mul"};
    d5_tensor_desc same[2] = {op_fdesc(3, SHAPE(2, 3, 4)), op_fdesc(3, SHAPE(2, 3, 4))};
    d5_tensor_desc bias[2] = {op_fdesc(4, SHAPE(2, 3, 4, 5)), op_fdesc(3, SHAPE(3, 1, 1))};
    d5_tensor_desc row[2] = {op_fdesc(2, SHAPE(6, 8)), op_fdesc(1, SHAPE(8))};
    d5_tensor_desc first[2] = {op_fdesc(1, SHAPE(8)), op_fdesc(2, SHAPE(6, 8))};
    for (int i = 0; i < 3; i++) { /* with their gradients, summed where they broadcast */
        same_as_ref(ops[i], same, 2, NULL);
        same_as_ref(ops[i], bias, 2, NULL);
        same_as_ref(ops[i], row, 2, NULL);
        same_as_ref(ops[i], first, 2, NULL);
    }
    d5_tensor_desc both[2] = {op_fdesc(3, SHAPE(4, 1, 5)), op_fdesc(2, SHAPE(3, 1))};
    forward_as_ref("Add", both, 2, NULL, NULL);
    forward_as_ref("Div", bias, 2, NULL, NULL);
}

/* Operators of transformer graphs, on the backend's own kernels. */
Test(cuda, elementwise_functions_and_pow)
{
    d5_tensor_desc x[1] = {op_fdesc(3, SHAPE(3, 7, 5))};
    static const char *const ops[] = {"Erf", "Exp", "Neg", "Gelu"};
    for (int i = 0; i < 4; i++) same_as_ref(ops[i], x, 1, NULL);
    d5_attr tanh_items[] = {attr_string("approximate", "tanh")};
    d5_attrs tanh_form = {tanh_items, 1};
    same_as_ref("Gelu", x, 1, &tanh_form);
    /* Sqrt, Reciprocal and Pow on positive inputs. */
    d5_tensor t[2];
    d5_tensor_desc two[2] = {op_fdesc(2, SHAPE(4, 6)), op_fdesc(1, SHAPE(6))};
    for (int i = 0; i < 2; i++) {
        cr_assert_eq(d5_tensor_alloc(&two[i], &t[i]), D5_OK);
        for (int64_t k = 0; k < d5_tensor_desc_numel(&two[i]); k++)
            ((float *)t[i].data)[k] = 0.25f + 0.1f * (float)((k * 5 + i) % 13);
    }
    forward_as_ref("Sqrt", two, 1, t, NULL);
    forward_as_ref("Reciprocal", two, 1, t, NULL);
    forward_as_ref("Pow", two, 2, t, NULL);
    for (int i = 0; i < 2; i++) d5_tensor_free(&t[i]);
}

Test(cuda, where_with_a_broadcast_mask)
{
    need_backend("cuda");
    d5_tensor_desc in[3] = {op_fdesc(2, SHAPE(1, 8)), op_fdesc(3, SHAPE(2, 4, 8)),
                            op_fdesc(0, NULL)};
    in[0].dtype = D5_BOOL;
    d5_tensor t[3];
    for (int i = 0; i < 3; i++) cr_assert_eq(d5_tensor_alloc(&in[i], &t[i]), D5_OK);
    for (int k = 0; k < 8; k++) ((unsigned char *)t[0].data)[k] = (unsigned char)(k % 3 == 0);
    for (int64_t k = 0; k < 64; k++) ((float *)t[1].data)[k] = (float)k;
    ((float *)t[2].data)[0] = -1e4f;
    forward_as_ref("Where", in, 3, t, NULL);
    for (int i = 0; i < 3; i++) d5_tensor_free(&t[i]);
}

Test(cuda, layernormalization_on_the_last_axes)
{
    d5_tensor_desc in[3] = {op_fdesc(3, SHAPE(2, 16, 96)), op_fdesc(1, SHAPE(96)),
                            op_fdesc(1, SHAPE(96))};
    forward_as_ref("LayerNormalization", in, 3, NULL, NULL);
    forward_as_ref("LayerNormalization", in, 2, NULL, NULL);
    d5_tensor_desc in2[3] = {op_fdesc(3, SHAPE(3, 4, 700)), op_fdesc(2, SHAPE(4, 700)),
                             op_fdesc(2, SHAPE(4, 700))};
    d5_attr axis[] = {attr_int("axis", 1), attr_float("epsilon", 1e-3)};
    d5_attrs a = {axis, 2};
    forward_as_ref("LayerNormalization", in2, 3, NULL, &a);
}

Test(cuda, transpose_concat_and_gather)
{
    d5_tensor_desc x[1] = {op_fdesc(4, SHAPE(2, 3, 4, 5))};
    d5_attr p1[] = {attr_ints("perm", SHAPE(0, 2, 1, 3), 4)};
    d5_attrs a1 = {p1, 1};
    same_as_ref("Transpose", x, 1, &a1);
    same_as_ref("Transpose", x, 1, NULL);
    d5_tensor_desc parts[3] = {op_fdesc(3, SHAPE(2, 3, 4)), op_fdesc(3, SHAPE(2, 5, 4)),
                               op_fdesc(3, SHAPE(2, 1, 4))};
    d5_attr ax[] = {attr_int("axis", 1)};
    d5_attrs a2 = {ax, 1};
    same_as_ref("Concat", parts, 3, &a2);
    need_backend("cuda");
    d5_tensor_desc g[2] = {op_fdesc(2, SHAPE(50, 16)), op_fdesc(2, SHAPE(2, 7))};
    g[1].dtype = D5_I64;
    d5_tensor t[2];
    for (int i = 0; i < 2; i++) cr_assert_eq(d5_tensor_alloc(&g[i], &t[i]), D5_OK);
    for (int k = 0; k < 800; k++) ((float *)t[0].data)[k] = (float)k * 0.01f;
    for (int k = 0; k < 14; k++) ((int64_t *)t[1].data)[k] = (k * 11) % 50 - (k == 3 ? 50 : 0);
    forward_as_ref("Gather", g, 2, t, NULL);
    d5_attr ax1[] = {attr_int("axis", 1)};
    d5_attrs a3 = {ax1, 1};
    for (int k = 0; k < 14; k++) ((int64_t *)t[1].data)[k] = k % 16;
    forward_as_ref("Gather", g, 2, t, &a3);
    for (int i = 0; i < 2; i++) d5_tensor_free(&t[i]);
}

/* d5's fused operator of the optimisation passes, as ref computes it. */
Test(cuda, transposematmul_with_perms_alpha_and_bias)
{
    d5_tensor_desc qk[2] = {op_fdesc(4, SHAPE(2, 16, 4, 8)), op_fdesc(4, SHAPE(2, 16, 4, 8))};
    d5_attr p1[] = {attr_ints("perm_a", SHAPE(0, 2, 1, 3), 4),
                    attr_ints("perm_b", SHAPE(0, 2, 3, 1), 4), attr_float("alpha", 0.125)};
    d5_attrs a1 = {p1, 3};
    forward_as_ref("TransposeMatMul", qk, 2, NULL, &a1);
    d5_tensor_desc lin[3] = {op_fdesc(3, SHAPE(4, 32, 64)), op_fdesc(2, SHAPE(64, 96)),
                             op_fdesc(1, SHAPE(96))};
    forward_as_ref("TransposeMatMul", lin, 3, NULL, NULL);
    d5_tensor_desc t2[2] = {op_fdesc(2, SHAPE(24, 10)), op_fdesc(2, SHAPE(3, 24))};
    d5_attr p2[] = {attr_ints("perm_a", SHAPE(1, 0), 2), attr_ints("perm_b", SHAPE(1, 0), 2)};
    d5_attrs a2 = {p2, 2};
    forward_as_ref("TransposeMatMul", t2, 2, NULL, &a2);
}

/* Split into three parts of lengths given as a constant input (opset 13),
 * and into equal parts. */
Test(cuda, split_into_parts)
{
    need_backend("cuda");
    const d5_op_desc *cand, *ref;
    cr_assert_eq(d5_op_find("Split", "cuda", &cand), D5_OK, "%s", d5_last_error());
    cr_assert_eq(d5_op_find("Split", "ref", &ref), D5_OK);
    d5_tensor_desc in[2] = {op_fdesc(3, SHAPE(2, 6, 5)), op_fdesc(1, SHAPE(3))};
    in[1].dtype = D5_I64;
    d5_tensor t[2];
    for (int i = 0; i < 2; i++) cr_assert_eq(d5_tensor_alloc(&in[i], &t[i]), D5_OK);
    for (int k = 0; k < 60; k++) ((float *)t[0].data)[k] = (float)k * 0.5f - 7.0f;
    int64_t lengths[3] = {2, 3, 1};
    memcpy(t[1].data, lengths, sizeof lengths);
    d5_attr ax[] = {attr_int("axis", 1)};
    d5_attrs a = {ax, 1};
    d5_check_params p = d5_check_default_params();
    p.constants = 2;
    d5_forward_check r;
    cr_assert_eq(d5_validate_forward(cand, ref, in, 2, t, &a, 3, &p, &r), D5_OK, "%s",
                 d5_last_error());
    cr_assert(r.passed, "Split: linf %.3g", r.out[0].linf);
    cr_assert_eq(d5_validate_forward(cand, ref, in, 1, t, &a, 3, &p, &r), D5_OK, "%s",
                 d5_last_error());
    cr_assert(r.passed, "Split in equal parts: linf %.3g", r.out[0].linf);
    for (int i = 0; i < 2; i++) d5_tensor_free(&t[i]);
}
