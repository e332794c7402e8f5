/* Det (ONNX opset 11; opset 22 only adds data types): the determinant of each
 * square matrix in the last two dimensions of X ([*, M, M], floating point);
 * the output has shape [*]. Computed by LU decomposition with partial
 * pivoting. The gradient is dY * the cofactor matrix: det(A) * inverse(A)^T
 * for an invertible A, the cofactors themselves (determinants of the minors)
 * for a singular one.
 * https://onnx.ai/onnx/operators/onnx__Det.html */
#include "util.h"

#include <math.h>
#include <string.h>

typedef struct det_state {
    int64_t count, m; /* count matrices of m x m */
    double *lu;       /* scratch: 2 m x m matrices and m pivots */
} det_state;

static void det_destroy(void *state)
{
    det_state *d = state;
    if (!d) return;
    d5_free(d->lu);
    d5_free(d);
}

static d5_status det_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    d5_tensor_desc *out = args->outputs;
    d5_status s = d5__need_float("Det", in, nin, 0);
    if (s != D5_OK) return s;
    const d5_tensor_desc *x = &in[0].desc;
    if (x->ndim < 2 || x->shape[x->ndim - 1] != x->shape[x->ndim - 2]) {
        char xs[96];
        d5__shape_str(x, xs, sizeof xs);
        return d5_error(D5_ERR_SHAPE, "Det: input X is %s, expected [*, M, M] (square matrices)",
                        xs);
    }
    det_state *d = d5_calloc(1, sizeof *d, "Det");
    if (!d) return D5_ERR_NOMEM;
    d->m = x->shape[x->ndim - 1];
    d->count = 1;
    for (int32_t k = 0; k < x->ndim - 2; k++) d->count *= x->shape[k];
    size_t mm = (size_t)(d->m * d->m);
    d->lu = d5_alloc((2 * mm + (size_t)d->m + 1) * sizeof(double), "Det");
    if (!d->lu) {
        d5_free(d);
        return D5_ERR_NOMEM;
    }
    *state = d;
    out[0] = *x;
    out[0].ndim = x->ndim - 2;
    return D5_OK;
}

/* Decomposes a (m x m, row-major, overwritten) in place into L\U with row
 * pivots perm; returns the determinant (0 when a pivot is 0). */
static double lu(double *a, int64_t m, double *perm)
{
    double det = 1;
    for (int64_t i = 0; i < m; i++) perm[i] = (double)i;
    for (int64_t k = 0; k < m; k++) {
        int64_t p = k;
        for (int64_t i = k + 1; i < m; i++)
            if (fabs(a[i * m + k]) > fabs(a[p * m + k])) p = i;
        if (p != k) {
            for (int64_t j = 0; j < m; j++) {
                double t = a[k * m + j];
                a[k * m + j] = a[p * m + j];
                a[p * m + j] = t;
            }
            double t = perm[k];
            perm[k] = perm[p];
            perm[p] = t;
            det = -det;
        }
        double pivot = a[k * m + k];
        det *= pivot;
        if (pivot == 0) return 0 * det;
        for (int64_t i = k + 1; i < m; i++) {
            double f = a[i * m + k] /= pivot;
            for (int64_t j = k + 1; j < m; j++) a[i * m + j] -= f * a[k * m + j];
        }
    }
    return det;
}

static d5_status det_forward(void *state, const d5_ref_call *call)
{
    const d5_rt *in = call->inputs;
    d5_rt *out = call->outputs;
    det_state *d = state;
    size_t mm = (size_t)(d->m * d->m);
    for (int64_t c = 0; c < d->count; c++) {
        memcpy(d->lu, in[0].data + (size_t)c * mm, mm * sizeof(double));
        out[0].data[c] = lu(d->lu, d->m, d->lu + 2 * mm);
    }
    return D5_OK;
}

/* The determinant of a with row r and column col removed (scratch: d's
 * second matrix). */
static double minor_det(det_state *d, const double *a, int64_t r, int64_t col)
{
    int64_t m = d->m, n = m - 1, k = 0;
    double *b = d->lu + (size_t)(m * m);
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; i != r && j < m; j++)
            if (j != col) b[k++] = a[i * m + j];
    return n == 0 ? 1 : lu(b, n, d->lu + 2 * (size_t)(m * m));
}

static d5_status det_backward(void *state, const d5_ref_call *call)
{
    const d5_rt *gout = call->grad_outputs;
    const d5_rt *in = call->inputs;
    d5_rt *gin = call->grad_inputs;
    det_state *d = state;
    if (!gin[0].data) return D5_OK;
    int64_t m = d->m;
    size_t mm = (size_t)(m * m);
    double *perm = d->lu + 2 * mm;
    for (int64_t c = 0; c < d->count; c++) {
        const double *a = in[0].data + (size_t)c * mm;
        double *g = gin[0].data + (size_t)c * mm, gy = gout[0].data[c];
        memcpy(d->lu, a, mm * sizeof(double));
        double dt = lu(d->lu, m, perm);
        if (dt == 0 || !isfinite(dt)) {
            for (int64_t i = 0; i < m; i++)
                for (int64_t j = 0; j < m; j++)
                    g[i * m + j] += gy * ((i + j) % 2 ? -1 : 1) * minor_det(d, a, i, j);
            continue;
        }
        /* Column j of inverse(A): solve A z = e_j with the LU factors
         * (P A = L U); cofactor(i, j) = det * inverse(A)[j][i]. */
        double *z = d->lu + mm;
        for (int64_t j = 0; j < m; j++) {
            for (int64_t i = 0; i < m; i++) z[i] = perm[i] == (double)j;
            for (int64_t i = 0; i < m; i++)
                for (int64_t k = 0; k < i; k++) z[i] -= d->lu[i * m + k] * z[k];
            for (int64_t i = m - 1; i >= 0; i--) {
                for (int64_t k = i + 1; k < m; k++) z[i] -= d->lu[i * m + k] * z[k];
                z[i] /= d->lu[i * m + i];
            }
            for (int64_t i = 0; i < m; i++) g[j * m + i] += gy * dt * z[i];
        }
    }
    return D5_OK;
}

D5_REF_OPERATOR(Det, 1, 1, 1, 1, det_create, det_forward, det_backward, det_destroy, NULL);
