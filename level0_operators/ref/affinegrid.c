/* AffineGrid (ONNX opset 20), as torch.nn.functional.affine_grid: theta
 * (input 0, floating point) holds N affine matrices, [N, 2, 3] in 2-d or
 * [N, 3, 4] in 3-d; size (input 1, int64, known at create) is the target
 * image's [N, C, H, W] or [N, C, D, H, W]. The output grid, of theta's type,
 * is [N, H, W, 2] or [N, D, H, W, 3]: grid[n, ..., r] = sum over c of
 * theta[n, r, c] * p[c], where p = (x, y, 1) or (x, y, z, 1) is the
 * position's homogeneous coordinates, x along W, y along H, z along D. Along
 * an axis of size s, index i lies at -1 + (2 i + 1) / s (align_corners 0, the
 * default: -1 and 1 are the outer edges of the corner pixels) or at
 * -1 + 2 i / (s - 1) (align_corners 1: their centres); an axis of size 1
 * lies at 0 in both, as in torch.
 *
 * The gradient with respect to theta: dtheta[n, r, c] = sum over the
 * positions of dgrid[n, ..., r] * p[c]. size has none.
 * https://onnx.ai/onnx/operators/onnx__AffineGrid.html */
#include "util.h"

typedef struct affinegrid {
    int32_t dims;    /* 2 or 3: the spatial axes */
    int64_t batch;   /* N */
    int64_t size[3]; /* (H, W) or (D, H, W) */
    int64_t points;  /* H * W or D * H * W */
    int align_corners;
} affinegrid;

static d5_status affinegrid_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    affinegrid g = {0};
    int64_t size[5], n, align;
    d5_status s = d5__need_float("AffineGrid", in, nin, 0);
    if (s == D5_OK) s = d5__const_ints("AffineGrid", in, nin, 1, "size", size, 5, &n);
    if (s == D5_OK) s = d5_attrs_int(args->attrs, "align_corners", 0, &align);
    if (s != D5_OK) return s;
    if (n != 4 && n != 5)
        return d5_error(D5_ERR_INVALID,
                        "AffineGrid: size (input 1) has %lld values, expected 4 ([N, C, H, W]) or "
                        "5 ([N, C, D, H, W])",
                        (long long)n);
    if (align != 0 && align != 1)
        return d5_error(D5_ERR_INVALID, "AffineGrid: align_corners is %lld, expected 0 or 1",
                        (long long)align);
    g.dims = (int32_t)n - 2;
    g.batch = size[0];
    g.align_corners = (int)align;
    const d5_tensor_desc *theta = &in[0].desc;
    if (theta->ndim != 3 || theta->shape[0] != size[0] || theta->shape[1] != g.dims ||
        theta->shape[2] != g.dims + 1) {
        char got[96];
        d5__shape_str(theta, got, sizeof got);
        return d5_error(D5_ERR_SHAPE,
                        "AffineGrid: theta (input 0) has shape %s, expected [%lld, %d, %d] for a "
                        "%d-d size",
                        got, (long long)size[0], (int)g.dims, (int)g.dims + 1, (int)g.dims);
    }
    d5_tensor_desc *y = &args->outputs[0];
    y->ndim = g.dims + 2;
    y->shape[0] = g.batch;
    y->shape[g.dims + 1] = g.dims;
    g.points = 1;
    for (int32_t d = 0; d < g.dims; d++) {
        if (size[2 + d] < 0)
            return d5_error(D5_ERR_INVALID, "AffineGrid: size[%d] is %lld, must be >= 0",
                            (int)(2 + d), (long long)size[2 + d]);
        g.size[d] = size[2 + d];
        y->shape[1 + d] = g.size[d];
        g.points *= g.size[d];
    }
    return d5__ref_state(state, &g, sizeof g, "AffineGrid");
}

/* The normalised coordinate of index i along an axis of s positions. */
static double coordinate(const affinegrid *g, int64_t i, int64_t s)
{
    if (s <= 1) return 0;
    return g->align_corners ? -1 + 2 * (double)i / (double)(s - 1)
                            : -1 + (2 * (double)i + 1) / (double)s;
}

/* The homogeneous coordinates p[0..dims] of position q: x (the last axis)
 * first, then y (and z), then 1. */
static void position(const affinegrid *g, int64_t q, double *p)
{
    for (int32_t d = g->dims - 1; d >= 0; d--) {
        p[g->dims - 1 - d] = coordinate(g, q % g->size[d], g->size[d]);
        q /= g->size[d];
    }
    p[g->dims] = 1;
}

static d5_status affinegrid_forward(void *state, const d5_ref_call *call)
{
    const affinegrid *g = state;
    int32_t k = g->dims, cols = k + 1;
    const double *theta = call->inputs[0].data;
    double *grid = call->outputs[0].data, p[4];
    for (int64_t n = 0; n < g->batch; n++)
        for (int64_t q = 0; q < g->points; q++) {
            position(g, q, p);
            const double *t = theta + n * k * cols;
            double *out = grid + (n * g->points + q) * k;
            for (int32_t r = 0; r < k; r++) {
                double acc = 0;
                for (int32_t c = 0; c < cols; c++) acc += t[r * cols + c] * p[c];
                out[r] = acc;
            }
        }
    return D5_OK;
}

static d5_status affinegrid_backward(void *state, const d5_ref_call *call)
{
    const affinegrid *g = state;
    int32_t k = g->dims, cols = k + 1;
    double *gtheta = call->grad_inputs[0].data, p[4];
    const double *ggrid = call->grad_outputs[0].data;
    if (!gtheta) return D5_OK;
    for (int64_t n = 0; n < g->batch; n++)
        for (int64_t q = 0; q < g->points; q++) {
            position(g, q, p);
            double *t = gtheta + n * k * cols;
            const double *dy = ggrid + (n * g->points + q) * k;
            for (int32_t r = 0; r < k; r++)
                for (int32_t c = 0; c < cols; c++) t[r * cols + c] += dy[r] * p[c];
        }
    return D5_OK;
}

/* A multiply-add per entry of theta's row, per output element. */
static double affinegrid_flops(void *state, const d5_ref_shapes *shapes)
{
    const affinegrid *g = state;
    return 2.0 * (g->dims + 1) * (double)d5_tensor_desc_numel(&shapes->outputs[0]);
}

D5_REF_OPERATOR(AffineGrid, 2, 2, 1, 1, affinegrid_create, affinegrid_forward, affinegrid_backward,
                NULL, affinegrid_flops);
