/* NonMaxSuppression (ONNX opsets 10 and 11): inputs boxes [B, N, 4] and
 * scores [B, C, N] (float), and the optional scalars max_output_boxes_per_class
 * (int64, default 0: nothing is selected), iou_threshold and score_threshold
 * (float, defaults 0 and none). For each batch and class, the boxes whose score
 * exceeds score_threshold are taken in descending order of score (the lower
 * index first among equal scores); each is selected unless its
 * intersection-over-union with a box selected before exceeds iou_threshold,
 * until max_output_boxes_per_class are selected. A box is [y1, x1, y2, x2]
 * (any two opposite corners) with center_point_box=0, the default, and
 * [x_center, y_center, width, height] with 1; a box of no area overlaps
 * nothing. The output selected_indices is int64 [count, 3] of rows (batch,
 * class, box), by batch, then class, then order of selection.
 *
 * count depends on the values of every input, so all of them must be known at
 * create (constants or initializers); otherwise D5_ERR_UNSUPPORTED. No
 * gradient. https://onnx.ai/onnx/operators/onnx__NonMaxSuppression.html */
#include "extra.h"

#include <math.h>

typedef struct nms {
    int64_t batches, classes, boxes;
    int center;    /* center_point_box */
    int64_t count; /* rows of the output, found at create */
} nms;

/* The values an NMS run reads: boxes, scores and the three scalars. */
typedef struct nms_args {
    const double *boxes, *scores;
    int64_t max_out;
    double iou, score_min;
    int has_score_min;
} nms_args;

/* A box as its sorted corners. */
typedef struct corners {
    double y1, x1, y2, x2;
} corners;

static corners box_at(const nms *m, const double *b)
{
    corners c;
    if (m->center) {
        c.x1 = b[0] - b[2] / 2;
        c.x2 = b[0] + b[2] / 2;
        c.y1 = b[1] - b[3] / 2;
        c.y2 = b[1] + b[3] / 2;
    } else {
        c.y1 = fmin(b[0], b[2]);
        c.y2 = fmax(b[0], b[2]);
        c.x1 = fmin(b[1], b[3]);
        c.x2 = fmax(b[1], b[3]);
    }
    return c;
}

/* 1 when the intersection over union of a and b exceeds threshold. */
static int overlaps(corners a, corners b, double threshold)
{
    double area_a = (a.y2 - a.y1) * (a.x2 - a.x1), area_b = (b.y2 - b.y1) * (b.x2 - b.x1);
    if (area_a <= 0 || area_b <= 0) return 0;
    double h = fmin(a.y2, b.y2) - fmax(a.y1, b.y1), w = fmin(a.x2, b.x2) - fmax(a.x1, b.x1);
    if (h <= 0 || w <= 0) return 0;
    double inter = h * w;
    return inter / (area_a + area_b - inter) > threshold;
}

/* Orders candidate boxes by descending score. */
static int by_score(const void *ctx, int64_t a, int64_t b)
{
    const double *scores = ctx;
    return (scores[a] < scores[b]) - (scores[a] > scores[b]);
}

/* Runs the selection; writes the rows into rows (when not NULL) and returns
 * their number in *count. idx and picked are scratch of `boxes` entries. */
static d5_status select_boxes(const nms *m, const nms_args *a, int64_t *idx, int64_t *picked,
                              double *rows, int64_t *count)
{
    int64_t total = 0;
    for (int64_t b = 0; b < m->batches; b++)
        for (int64_t c = 0; c < m->classes; c++) {
            const double *scores = a->scores + (b * m->classes + c) * m->boxes;
            const double *boxes = a->boxes + b * m->boxes * 4;
            int64_t n = 0, npicked = 0;
            for (int64_t i = 0; i < m->boxes; i++)
                if (!a->has_score_min || scores[i] > a->score_min) idx[n++] = i;
            d5_status s = d5__sort_indices(idx, n, by_score, scores);
            if (s != D5_OK) return s;
            for (int64_t k = 0; k < n && npicked < a->max_out; k++) {
                corners cand = box_at(m, boxes + idx[k] * 4);
                int keep = 1;
                for (int64_t j = 0; j < npicked && keep; j++)
                    keep = !overlaps(cand, box_at(m, boxes + picked[j] * 4), a->iou);
                if (!keep) continue;
                picked[npicked++] = idx[k];
                if (rows) {
                    rows[3 * total] = (double)b;
                    rows[3 * total + 1] = (double)c;
                    rows[3 * total + 2] = (double)idx[k];
                }
                total++;
            }
        }
    *count = total;
    return D5_OK;
}

/* Reads the scalar input i (a one-value tensor) into *v; `def` when omitted. */
static d5_status scalar(const d5_tensor *in, int32_t nin, int32_t i, const char *what,
                        d5_dtypes types, double def, double *v, int *given)
{
    *v = def;
    if (given) *given = 0;
    if (!d5__has_input(in, nin, i)) return D5_OK;
    d5_status s = d5__need_types("NonMaxSuppression", in, nin, i, types);
    double *vals = NULL;
    int64_t n = 0;
    if (s == D5_OK) s = d5__known_values("NonMaxSuppression", in, nin, i, what, &vals, &n);
    if (s != D5_OK) return s;
    if (n > 1)
        s = d5_error(D5_ERR_SHAPE, "NonMaxSuppression: input %d (%s) has %lld values, expected one",
                     (int)i, what, (long long)n);
    if (s == D5_OK && n == 1) {
        *v = vals[0];
        if (given) *given = 1;
    }
    d5_free(vals);
    return s;
}

/* Reads the three optional scalars from in[2..4] (descriptors and values). */
static d5_status read_scalars(const d5_tensor *in, int32_t nin, nms_args *a)
{
    double max_out;
    d5_status s =
        scalar(in, nin, 2, "max_output_boxes_per_class", D5__DT(D5_I64), 0, &max_out, NULL);
    if (s == D5_OK) s = scalar(in, nin, 3, "iou_threshold", D5__FLOATS, 0, &a->iou, NULL);
    if (s == D5_OK)
        s = scalar(in, nin, 4, "score_threshold", D5__FLOATS, 0, &a->score_min, &a->has_score_min);
    if (s != D5_OK) return s;
    a->max_out = max_out < 0 ? 0 : max_out > 1e18 ? INT64_MAX : (int64_t)max_out;
    return D5_OK;
}

static d5_status check_shapes(const d5_tensor *in, int32_t nin, nms *m)
{
    d5_status s = d5__need_float("NonMaxSuppression", in, nin, 0);
    if (s == D5_OK) s = d5__need_float("NonMaxSuppression", in, nin, 1);
    if (s != D5_OK) return s;
    const d5_tensor_desc *b = &in[0].desc, *sc = &in[1].desc;
    if (b->ndim != 3 || b->shape[2] != 4)
        return d5_error(D5_ERR_SHAPE,
                        "NonMaxSuppression: input 0 (boxes) has %d dims, expected 3: [batches, "
                        "boxes, 4]",
                        (int)b->ndim);
    if (sc->ndim != 3 || sc->shape[0] != b->shape[0] || sc->shape[2] != b->shape[1])
        return d5_error(D5_ERR_SHAPE,
                        "NonMaxSuppression: input 1 (scores) must be [%lld, classes, %lld] for "
                        "boxes [%lld, %lld, 4]",
                        (long long)b->shape[0], (long long)b->shape[1], (long long)b->shape[0],
                        (long long)b->shape[1]);
    m->batches = b->shape[0];
    m->boxes = b->shape[1];
    m->classes = sc->shape[1];
    return D5_OK;
}

/* Runs select_boxes with its scratch space. */
static d5_status run(const nms *m, const nms_args *a, double *rows, int64_t *count)
{
    int64_t *scratch = d5_alloc((size_t)(2 * m->boxes + 1) * sizeof *scratch, "NonMaxSuppression");
    if (!scratch) return D5_ERR_NOMEM;
    d5_status s = select_boxes(m, a, scratch, scratch + m->boxes, rows, count);
    d5_free(scratch);
    return s;
}

static d5_status nms_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    const d5_attrs *attrs = args->attrs;
    d5_tensor_desc *out = args->outputs;
    nms m = {0};
    nms_args a = {0};
    int64_t center;
    double *boxes = NULL, *scores = NULL;
    int64_t nb, ns;
    d5_status s = check_shapes(in, nin, &m);
    if (s == D5_OK) s = d5_attrs_int(attrs, "center_point_box", 0, &center);
    if (s == D5_OK && center != 0 && center != 1)
        s = d5_error(D5_ERR_INVALID, "NonMaxSuppression: center_point_box is %lld, expected 0 or 1",
                     (long long)center);
    if (s == D5_OK) s = read_scalars(in, nin, &a);
    if (s == D5_OK) s = d5__known_values("NonMaxSuppression", in, nin, 0, "boxes", &boxes, &nb);
    if (s == D5_OK) s = d5__known_values("NonMaxSuppression", in, nin, 1, "scores", &scores, &ns);
    if (s == D5_OK) {
        m.center = (int)center;
        a.boxes = boxes;
        a.scores = scores;
        s = run(&m, &a, NULL, &m.count);
    }
    d5_free(boxes);
    d5_free(scores);
    if (s != D5_OK) return s;
    out[0].dtype = D5_I64;
    out[0].ndim = 2;
    out[0].shape[0] = m.count;
    out[0].shape[1] = 3;
    return d5__ref_state(state, &m, sizeof m, "NonMaxSuppression");
}

/* One value of an optional scalar input at run time. */
static double rt_scalar(const d5_rt *in, int32_t nin, int32_t i, double def, int *given)
{
    int has = i < nin && in[i].data && in[i].numel == 1;
    if (given) *given = has;
    return has ? in[i].data[0] : def;
}

static d5_status nms_forward(void *state, const d5_ref_call *call)
{
    const d5_rt *in = call->inputs;
    int32_t nin = call->ninputs;
    d5_rt *out = call->outputs;
    const nms *m = state;
    nms_args a = {in[0].data, in[1].data, 0, 0, 0, 0};
    double max_out = rt_scalar(in, nin, 2, 0, NULL);
    a.max_out = max_out < 0 ? 0 : max_out > 1e18 ? INT64_MAX : (int64_t)max_out;
    a.iou = rt_scalar(in, nin, 3, 0, NULL);
    a.score_min = rt_scalar(in, nin, 4, 0, &a.has_score_min);
    int64_t count;
    d5_status s = run(m, &a, NULL, &count);
    if (s != D5_OK) return s;
    if (count != m->count)
        return d5_error(D5_ERR_SHAPE,
                        "NonMaxSuppression: the inputs select %lld boxes, but %lld at create, "
                        "which sized the output",
                        (long long)count, (long long)m->count);
    return run(m, &a, out[0].data, &count);
}

D5_REF_OPERATOR_NO_BACKWARD(NonMaxSuppression, 2, 5, 1, 1, nms_create, nms_forward, NULL, NULL);
