/* The dnnl backend in lower precisions, the matrix products: Gemm and
 * MatMul on bfloat16 tensors (forward and backward), float32 tensors under a
 * compute precision (D5_ATTR_PRECISION), and compute precisions it does not
 * know. The bounds are those of lowp_support.h. */
#include "lowp_support.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

/* ---- Gemm ----------------------------------------------------------------------------------- */

/* Y = alpha A' B' + beta C in double; C a row of n values or NULL. */
static ref_out gemm_ref(const float *a, const float *b, const float *c, int ta, int tb, int64_t m,
                        int64_t n, int64_t k, double alpha, double beta)
{
    ref_out r = ref_alloc(m * n);
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double s = 0, sabs = 0;
            for (int64_t p = 0; p < k; p++) {
                double x = a[ta ? p * m + i : i * k + p], w = b[tb ? j * k + p : p * n + j];
                s += x * w;
                sabs += fabs(x * w);
            }
            r.y[i * n + j] = alpha * s + (c ? beta * c[j] : 0);
            r.tol[i * n + j] = fabs(alpha) * sabs + (c ? fabs(beta * c[j]) : 0);
        }
    return r;
}

static void gemm_attrs(d5_attr *items, int ta, int tb, double alpha, double beta)
{
    items[0] = attr_int("transA", ta);
    items[1] = attr_int("transB", tb);
    items[2] = attr_float("alpha", alpha);
    items[3] = attr_float("beta", beta);
}

Test(dnnl_lowp, gemm_bf16_forward_backward_matches_double)
{
    need_bf16_tensors();
    const int64_t m = 7, n = 9, k = 33;
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++) {
            float *av, *bv, *cv, *dyv;
            d5_tensor in[3];
            in[0] = random_tensor(D5_BF16, 2, ta ? SHAPE(k, m) : SHAPE(m, k), 1u + ta, 0, &av);
            in[1] = random_tensor(D5_BF16, 2, tb ? SHAPE(n, k) : SHAPE(k, n), 7u + tb, 0, &bv);
            in[2] = random_tensor(D5_BF16, 1, SHAPE(n), 11u, 0, &cv);
            d5_attr items[4];
            gemm_attrs(items, ta, tb, 0.75, 1.5);
            d5_attrs attrs = {items, 4};
            d5_tensor y;
            run_op("Gemm", "dnnl", in, 3, &attrs, &y, 1);
            cr_assert_eq(y.desc.dtype, D5_BF16);
            ref_out r = gemm_ref(av, bv, cv, ta, tb, m, n, k, 0.75, 1.5);
            ref_bound(&r, BF16_OUT, K_SUM(k + 1));
            expect_close(&y, &r, "Y");
            ref_free(&r);

            /* Backward: dA = alpha dY B'^T, dB = alpha A'^T dY, dC = beta sum_i dY. */
            d5_op *op = lowp_create("Gemm", in, 3, &attrs);
            d5_tensor dy = random_tensor(D5_BF16, 2, SHAPE(m, n), 99u, 0, &dyv), gin[3];
            lowp_backward(op, &dy, in, 3, &y, gin);
            /* dA' (m x k) = dY (m x n) B'^T: a Gemm of dY by B' transposed. */
            ref_out da = gemm_ref(dyv, bv, NULL, 0, !tb, m, k, n, 0.75, 0);
            if (ta) ref_transpose(&da, m, k); /* stored (k x m) */
            ref_bound(&da, BF16_OUT, K_SUM(n));
            expect_close(&gin[0], &da, "dA");
            ref_out db = gemm_ref(av, dyv, NULL, !ta, 0, k, n, m, 0.75, 0); /* A'^T dY (k x n) */
            if (tb) ref_transpose(&db, k, n);                               /* stored (n x k) */
            ref_bound(&db, BF16_OUT, K_SUM(m));
            expect_close(&gin[1], &db, "dB");
            ref_out dc = ref_alloc(n);
            for (int64_t j = 0; j < n; j++)
                for (int64_t i = 0; i < m; i++) {
                    dc.y[j] += 1.5 * dyv[i * n + j];
                    dc.tol[j] += fabs(1.5 * dyv[i * n + j]);
                }
            ref_bound(&dc, BF16_OUT, K_SUM(m));
            expect_close(&gin[2], &dc, "dC");
            ref_free(&da);
            ref_free(&db);
            ref_free(&dc);
            lowp_free_run(op, in, gin, 3, &y, &dy);
            free(av);
            free(bv);
            free(cv);
            free(dyv);
        }
}

/* Float32 tensors with the compute precision bf16: the operands are rounded
 * to bfloat16, the result is float32. It matches the double product of the
 * rounded operands to float32 accumulation, stays within 2^-7 S of the exact
 * float32 result, and is measurably not that float32 result. */
Test(dnnl_lowp, gemm_compute_precision_bf16_rounds_the_operands)
{
    need_dnnl();
    d5_precision_class cls;
    char text[256];
    need_bf16(&cls, text, sizeof text);
    const int64_t m = 16, n = 24, k = 64;
    float *av, *bv, *ar, *br;
    d5_tensor in[2] = {random_tensor(D5_F32, 2, SHAPE(m, k), 3u, 0, &av),
                       random_tensor(D5_F32, 2, SHAPE(k, n), 5u, 0, &bv)};
    d5_tensor scratch[2] = {random_tensor(D5_F32, 2, SHAPE(m, k), 3u, 1, &ar),
                            random_tensor(D5_F32, 2, SHAPE(k, n), 5u, 1, &br)};
    d5_attr items[] = {attr_string(D5_ATTR_PRECISION, "bf16")};
    d5_attrs attrs = {items, 1};
    const d5_op_desc *desc;
    d5_op *op;
    cr_assert_eq(d5_op_find("Gemm", "dnnl", &desc), D5_OK);
    cr_assert_eq(d5_op_create(desc, in, 2, &attrs, 1, &op), D5_OK, "%s", d5_last_error());
    d5_op_impl impl;
    d5_op_impl_get(op, &impl);
    cr_assert_eq(impl.reported, 1);
    cr_assert_str_eq(impl.precision, "bf16", "%s (%s)", impl.forward, impl.note);
    cr_assert_str_eq(impl.requested, "bf16");
    cr_assert_neq(impl.forward[0], 0);
    cr_assert(strstr(impl.note, "converted to bfloat16") || strstr(impl.note, "fpmath"), "%s",
              impl.note);
    d5_tensor y;
    cr_assert_eq(d5_tensor_alloc(d5_op_output_desc(op, 0), &y), D5_OK);
    cr_assert_eq(d5_op_forward(op, in, &y), D5_OK, "%s", d5_last_error());
    cr_assert_eq(y.desc.dtype, D5_F32);
    ref_out rounded = gemm_ref(ar, br, NULL, 0, 0, m, n, k, 1, 0);
    ref_bound(&rounded, 0, K_SUM(k));
    expect_close(&y, &rounded, "Y against the rounded operands");
    ref_out exact = gemm_ref(av, bv, NULL, 0, 0, m, n, k, 1, 0);
    ref_bound(&exact, 0, ldexp(1.0, -7) + K_SUM(k));
    double worst = expect_close(&y, &exact, "Y against float32");
    cr_assert(worst > 1e-4, "the result is float32's (largest difference %.3g)", worst);
    ref_free(&rounded);
    ref_free(&exact);

    /* The plain float32 Gemm runs dnnl_sgemm and says so. */
    d5_op *plain;
    cr_assert_eq(d5_op_create(desc, in, 2, NULL, 1, &plain), D5_OK);
    d5_op_impl_get(plain, &impl);
    cr_assert_str_eq(impl.precision, "f32");
    cr_assert_str_eq(impl.forward, "dnnl_sgemm");
    d5_op_free(plain);
    d5_op_free(op);
    for (int i = 0; i < 2; i++) {
        d5_tensor_free(&in[i]);
        d5_tensor_free(&scratch[i]);
    }
    d5_tensor_free(&y);
    free(av);
    free(bv);
    free(ar);
    free(br);
}

/* The operator `name` on dnnl with the inputs of `known` (bit i: input i)
 * given at create, the others by their descriptors only. */
static d5_op *create_knowing(const char *name, const d5_tensor *in, int32_t nin,
                             const d5_attrs *attrs, unsigned known)
{
    d5_tensor given[3];
    for (int32_t i = 0; i < nin; i++) {
        given[i] = in[i];
        if (!(known >> i & 1)) given[i].data = NULL;
    }
    return lowp_create(name, given, nin, attrs);
}

/* From D5_DNNL_MM_BLOCKED_ROWS rows of Y, or with B known at create, oneDNN
 * reads B in its blocked layout: reordered at every run when B is an input
 * (a second run with another B gives that B's product), once when it is a
 * constant. Both transpositions of each operand. */
Test(dnnl_lowp, gemm_bf16_blocked_b_follows_every_b)
{
    need_bf16_tensors();
    const int64_t n = 24, k = 40;
    const int64_t ms[] = {1040, 40};
    for (int mi = 0; mi < 2; mi++)
        for (int ta = 0; ta < 2; ta++)
            for (int tb = 0; tb < 2; tb++) {
                const int64_t m = ms[mi];
                float *av, *bv, *b2v;
                d5_tensor in[2], b2;
                in[0] = random_tensor(D5_BF16, 2, ta ? SHAPE(k, m) : SHAPE(m, k), 31u + ta, 0, &av);
                in[1] = random_tensor(D5_BF16, 2, tb ? SHAPE(n, k) : SHAPE(k, n), 37u + tb, 0, &bv);
                b2 = random_tensor(D5_BF16, 2, tb ? SHAPE(n, k) : SHAPE(k, n), 41u + tb, 0, &b2v);
                d5_attr items[4];
                gemm_attrs(items, ta, tb, 0.5, 0);
                d5_attrs attrs = {items, 4};
                /* B an input for the rows of D5_DNNL_MM_BLOCKED_ROWS, a constant below them. */
                int constant = m < 1024;
                d5_op *op = create_knowing("Gemm", in, 2, &attrs, constant ? 3u : 1u);
                d5_tensor y;
                lowp_forward(op, in, D5_BF16, &y);
                ref_out r = gemm_ref(av, bv, NULL, ta, tb, m, n, k, 0.5, 0);
                ref_bound(&r, BF16_OUT, K_SUM(k));
                expect_close(&y, &r, "Y");
                ref_free(&r);
                if (!constant) {
                    d5_tensor other[2] = {in[0], b2};
                    cr_assert_eq(d5_op_forward(op, other, &y), D5_OK, "%s", d5_last_error());
                    r = gemm_ref(av, b2v, NULL, ta, tb, m, n, k, 0.5, 0);
                    ref_bound(&r, BF16_OUT, K_SUM(k));
                    expect_close(&y, &r, "Y of the second B");
                    ref_free(&r);
                }
                d5_op_free(op);
                d5_tensor_free(&in[0]);
                d5_tensor_free(&in[1]);
                d5_tensor_free(&b2);
                d5_tensor_free(&y);
                free(av);
                free(bv);
                free(b2v);
            }
}

/* ---- MatMul ---------------------------------------------------------------------------------- */

/* Y[b] = A[b] B[b] with numpy broadcasting of 3-d operands (batch 1 broadcasts). */
static ref_out matmul_ref(const float *a, const int64_t *as, const float *b, const int64_t *bs)
{
    int64_t nb = as[0] > bs[0] ? as[0] : bs[0], m = as[1], k = as[2], n = bs[2];
    ref_out r = ref_alloc(nb * m * n);
    for (int64_t q = 0; q < nb; q++)
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                double s = 0, sabs = 0;
                for (int64_t p = 0; p < k; p++) {
                    double x = a[((as[0] == 1 ? 0 : q) * m + i) * k + p];
                    double w = b[((bs[0] == 1 ? 0 : q) * k + p) * n + j];
                    s += x * w;
                    sabs += fabs(x * w);
                }
                r.y[(q * m + i) * n + j] = s;
                r.tol[(q * m + i) * n + j] = sabs;
            }
    return r;
}

/* The gradients of a broadcast 3-d MatMul in double: dA = dY B^T, dB = A^T dY,
 * summed over the batch where the operand broadcasts. */
static void matmul_grad_ref(const float *a, const int64_t *as, const float *b, const int64_t *bs,
                            const float *dy, ref_out *da, ref_out *db)
{
    int64_t nb = as[0] > bs[0] ? as[0] : bs[0], m = as[1], k = as[2], n = bs[2];
    *da = ref_alloc(as[0] * m * k);
    *db = ref_alloc(bs[0] * k * n);
    for (int64_t q = 0; q < nb; q++) {
        int64_t qa = as[0] == 1 ? 0 : q, qb = bs[0] == 1 ? 0 : q;
        for (int64_t i = 0; i < m; i++)
            for (int64_t p = 0; p < k; p++)
                for (int64_t j = 0; j < n; j++) {
                    double g = dy[(q * m + i) * n + j];
                    double x = a[(qa * m + i) * k + p], w = b[(qb * k + p) * n + j];
                    da->y[(qa * m + i) * k + p] += g * w;
                    da->tol[(qa * m + i) * k + p] += fabs(g * w);
                    db->y[(qb * k + p) * n + j] += x * g;
                    db->tol[(qb * k + p) * n + j] += fabs(x * g);
                }
    }
}

static void matmul_case(const int64_t *as, const int64_t *bs)
{
    int64_t nb = as[0] > bs[0] ? as[0] : bs[0];
    float *av, *bv, *dyv;
    d5_tensor in[2] = {random_tensor(D5_BF16, 3, as, 21u, 0, &av),
                       random_tensor(D5_BF16, 3, bs, 23u, 0, &bv)};
    d5_op *op = lowp_create("MatMul", in, 2, NULL);
    d5_tensor y, gin[2];
    lowp_forward(op, in, D5_BF16, &y);
    ref_out r = matmul_ref(av, as, bv, bs);
    ref_bound(&r, BF16_OUT, K_SUM(as[2]));
    expect_close(&y, &r, "Y");
    d5_tensor dy = random_tensor(D5_BF16, 3, SHAPE(nb, as[1], bs[2]), 29u, 0, &dyv);
    lowp_backward(op, &dy, in, 2, &y, gin);
    ref_out da, db;
    matmul_grad_ref(av, as, bv, bs, dyv, &da, &db);
    ref_bound(&da, BF16_OUT, K_SUM(nb * bs[2]));
    ref_bound(&db, BF16_OUT, K_SUM(nb * as[1]));
    expect_close(&gin[0], &da, "dA");
    expect_close(&gin[1], &db, "dB");
    d5_op_impl impl;
    d5_op_impl_get(op, &impl);
    cr_assert_str_eq(impl.precision, "bf16");
    cr_assert_neq(impl.backward_data[0], 0);
    cr_assert_neq(impl.backward_weights[0], 0);
    ref_free(&r);
    ref_free(&da);
    ref_free(&db);
    lowp_free_run(op, in, gin, 2, &y, &dy);
    free(av);
    free(bv);
    free(dyv);
}

/* Same batches (gradients direct), a B shared by the batch (dB as one flat
 * product), an A shared by the batch (dA summed from scratch). */
Test(dnnl_lowp, matmul_bf16_broadcast_forward_backward)
{
    need_bf16_tensors();
    matmul_case(SHAPE(3, 5, 17), SHAPE(3, 17, 6));
    matmul_case(SHAPE(4, 5, 17), SHAPE(1, 17, 6));
    matmul_case(SHAPE(1, 5, 17), SHAPE(4, 17, 6));
}

/* A [1040, 40] by B [40, 24]: B read blocked, reordered at every run (a
 * second B gives its own product). */
Test(dnnl_lowp, matmul_bf16_blocked_b_follows_every_b)
{
    need_bf16_tensors();
    const int64_t as[] = {1, 1040, 40}, bs[] = {1, 40, 24};
    float *av, *bv, *b2v;
    d5_tensor in[2] = {random_tensor(D5_BF16, 2, SHAPE(as[1], as[2]), 43u, 0, &av),
                       random_tensor(D5_BF16, 2, SHAPE(bs[1], bs[2]), 47u, 0, &bv)};
    d5_tensor b2 = random_tensor(D5_BF16, 2, SHAPE(bs[1], bs[2]), 53u, 0, &b2v);
    d5_op *op = create_knowing("MatMul", in, 2, NULL, 1u);
    d5_tensor y;
    lowp_forward(op, in, D5_BF16, &y);
    ref_out r = matmul_ref(av, as, bv, bs);
    ref_bound(&r, BF16_OUT, K_SUM(as[2]));
    expect_close(&y, &r, "Y");
    ref_free(&r);
    d5_tensor other[2] = {in[0], b2};
    cr_assert_eq(d5_op_forward(op, other, &y), D5_OK, "%s", d5_last_error());
    r = matmul_ref(av, as, b2v, bs);
    ref_bound(&r, BF16_OUT, K_SUM(as[2]));
    expect_close(&y, &r, "Y of the second B");
    ref_free(&r);
    d5_op_free(op);
    d5_tensor_free(&in[0]);
    d5_tensor_free(&in[1]);
    d5_tensor_free(&b2);
    d5_tensor_free(&y);
    free(av);
    free(bv);
    free(b2v);
}

Test(dnnl_lowp, unknown_compute_precision_is_invalid)
{
    need_dnnl();
    d5_tensor_desc a, b;
    cr_assert_eq(d5_tensor_desc_make(D5_F32, 2, SHAPE(4, 4), &a), D5_OK);
    cr_assert_eq(d5_tensor_desc_make(D5_F32, 2, SHAPE(4, 4), &b), D5_OK);
    d5_attr items[] = {attr_string(D5_ATTR_PRECISION, "fp8")};
    d5_attrs attrs = {items, 1};
    const char *ops[] = {"Gemm", "MatMul"};
    for (int i = 0; i < 2; i++) {
        const d5_op_desc *desc;
        d5_op *op = NULL;
        cr_assert_eq(d5_op_find(ops[i], "dnnl", &desc), D5_OK);
        cr_assert_eq(d5_op_create_desc(desc, (d5_tensor_desc[]){a, b}, 2, &attrs, 1, &op),
                     D5_ERR_INVALID);
        cr_assert(strstr(d5_last_error(), "'fp8'"), "%s", d5_last_error());
    }
}
