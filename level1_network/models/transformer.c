/* Transformers (Vaswani et al., "Attention Is All You Need", 2017) in the
 * three forms most benchmarked, each written node by node as PyTorch exports
 * the usual code of the model to ONNX (opset 17 and later), so that d5's
 * graph passes meet the patterns they meet in exported files.
 *
 * bert-tiny, bert-base (Devlin et al., 2019; Hugging Face's BertModel and a
 * classifier): input token ids int64 [N, S] (vocabulary 30,522). Word,
 * position and token type embeddings (token type 0 throughout) are added and
 * normalized; each layer is post-LN: separate query, key and value
 * projections, scores divided by sqrt(d), Softmax, the output projection, the
 * residual Add and LayerNormalization, then the feed-forward block (4 x the
 * width, GELU in its Erf form) with its Add and LayerNormalization
 * (epsilon 1e-12). The pooler (first token, dense, Tanh) feeds "classifier":
 * logits [N, classes], 2 classes by default. bert-base: 12 layers, width 768,
 * 12 heads, 109,482,240 parameters before the classifier (Hugging Face's
 * count); bert-tiny: 2 layers, width 128, 2 heads, 4,385,920.
 *
 * gpt2-small (Radford et al., 2019; Hugging Face's GPT2LMHeadModel): input
 * token ids int64 [N, S], vocabulary 50,257 (--classes changes it), 1,024
 * positions. Each block is pre-LN (epsilon 1e-5): one query-key-value
 * projection ("attn.c_attn") and a Split, the causal mask as Where(mask,
 * scores, lowest float), GELU in its tanh form; a last LayerNormalization
 * and the output projection tied to the token embedding (MatMul with its
 * Transpose): logits [N, S, vocabulary]. 12 layers, width 768, 12 heads,
 * 124,439,808 parameters.
 *
 * vit-tiny, vit-b16 (Dosovitskiy et al., 2021; torchvision's vit_b_16, DeiT's
 * tiny variant): input float32 [N, 3, 224, 224], 16x16 patches by a strided
 * Conv, a class token (Expand to the batch) concatenated before the 196
 * patches, position embeddings, pre-LN blocks (epsilon 1e-6, one fused
 * query-key-value projection and a Split, GELU in its Erf form), a last
 * LayerNormalization and "heads.head" on the class token: logits
 * [N, classes], 1000 by default. vit-b16: 12 layers, width 768, 12 heads,
 * 86,567,656 parameters; vit-tiny: width 192, 3 heads, 5,717,416.
 *
 * --sequence (not for ViT, whose sequence follows from the image), --layers,
 * --hidden and --heads change the sizes; without --heads a new width keeps
 * the heads 64 wide. The feed-forward width is 4 x the width. Projections
 * store their weight [in, out] (as exporters write it, read by MatMul);
 * weights, biases and embeddings are normal with standard deviation 0.02
 * (the models' own init; biases too, so that each one shows in the
 * outputs), LayerNormalization scales 1 and shifts 0; the classifiers are
 * initialized as nn.Linear. */
#include "builder.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Standard deviation of the transformers' weights and embeddings. */
#define INIT_STD 0.02
/* Width of one head when --hidden is given without --heads. */
#define HEAD_WIDTH 64
/* Bounds of the sizes, beyond which a model is no longer a benchmark but a typo. */
#define MAX_WIDTH  65536
#define MAX_LAYERS 1024

typedef enum tf_kind { TF_BERT, TF_GPT2, TF_VIT } tf_kind;

typedef struct tf_spec {
    tf_kind kind;
    int64_t hidden, ff, sequence, positions, vocab;
    int32_t layers, heads;
    double eps;
    int64_t image, patch; /* ViT */
} tf_spec;

/* Defaults of each variant (the `variant` of the registry rows). */
static const tf_spec defaults[] = {
    /* kind     hidden ff  seq  positions vocab  layers heads eps  image patch */
    {TF_BERT, 128, 512, 128, 512, 30522, 2, 2, 1e-12, 0, 0},    /* 0: bert-tiny */
    {TF_BERT, 768, 3072, 128, 512, 30522, 12, 12, 1e-12, 0, 0}, /* 1: bert-base */
    {TF_GPT2, 768, 3072, 128, 1024, 50257, 12, 12, 1e-5, 0, 0}, /* 2: gpt2-small */
    {TF_VIT, 192, 768, 197, 197, 0, 12, 3, 1e-6, 224, 16},      /* 3: vit-tiny */
    {TF_VIT, 768, 3072, 197, 197, 0, 12, 12, 1e-6, 224, 16},    /* 4: vit-b16 */
};

/* The sizes of variant v with the builder's overrides; D5_ERR_RANGE names
 * the size that cannot be. */
static d5_status sizes(const d5__mb *b, int32_t v, tf_spec *t)
{
    *t = defaults[v];
    if (b->layers) t->layers = b->layers;
    if (b->hidden) {
        t->hidden = b->hidden;
        t->ff = 4 * b->hidden;
        t->heads = (int32_t)(b->hidden >= HEAD_WIDTH ? b->hidden / HEAD_WIDTH : 1);
    }
    if (b->heads) t->heads = b->heads;
    if (b->sequence) t->sequence = b->sequence;
    if (t->layers < 1 || t->layers > MAX_LAYERS)
        return d5_error(D5_ERR_RANGE, "model '%s': %d layers, expected 1..%d", b->model,
                        (int)t->layers, MAX_LAYERS);
    if (t->hidden < 1 || t->hidden > MAX_WIDTH)
        return d5_error(D5_ERR_RANGE, "model '%s': hidden %lld, expected 1..%d", b->model,
                        (long long)t->hidden, MAX_WIDTH);
    if (t->heads < 1 || t->hidden % t->heads != 0)
        return d5_error(D5_ERR_RANGE,
                        "model '%s': %d heads do not divide the width %lld (give --heads)",
                        b->model, (int)t->heads, (long long)t->hidden);
    if (t->sequence < 1 || t->sequence > t->positions)
        return d5_error(D5_ERR_RANGE, "model '%s': sequence %lld, expected 1..%lld (its positions)",
                        b->model, (long long)t->sequence, (long long)t->positions);
    if (t->kind == TF_GPT2) t->vocab = b->classes;
    return D5_OK;
}

/* ---- Layers ---- */

/* The scalar constants every model shares. */
#define C_SQRT2  "const.sqrt2"
#define C_ONE    "const.one"
#define C_HALF   "const.half"
#define C_ZERO_I "const.index0"

/* A float32 scalar as a Constant node, as exporters write them (an
 * initializer would count as a parameter, and be trained). */
static d5_status scalar(d5__mb *b, const char *name, float v)
{
    d5_tensor t = {0};
    t.desc.dtype = D5_F32;
    t.data = &v;
    d5_attr value = {0};
    value.name = "value";
    value.type = D5_ATTR_TENSOR;
    value.tensor = &t;
    return d5__mb_node(b, name, "Constant", NULL, 0, NULL, &value, 1);
}

/* A projection of the last axis as exporters write nn.Linear on a sequence:
 * MatMul with the weight [in, out], then Add of the bias. Writes `y`, or the
 * value `name` when y is NULL. */
static d5_status linear(d5__mb *b, const char *name, const char *x, int64_t in, int64_t out,
                        const char *y)
{
    const int64_t wshape[2] = {in, out};
    D5__TRY(d5__mb_init(b, name, "weight", 2, wshape, D5__MB_NORMAL, INIT_STD, 1));
    D5__TRY(d5__mb_init(b, name, "bias", 1, &out, D5__MB_NORMAL, INIT_STD, 1));
    char mm[D5__MB_NAME], w[D5__MB_NAME], bias[D5__MB_NAME];
    d5__mb_name(mm, "%s.matmul", name);
    const char *mi[2] = {x, d5__mb_name(w, "%s.weight", name)};
    D5__TRY(d5__mb_node(b, mm, "MatMul", mi, 2, NULL, NULL, 0));
    const char *ai[2] = {mm, d5__mb_name(bias, "%s.bias", name)};
    return d5__mb_node(b, name, "Add", ai, 2, y, NULL, 0);
}

static d5_status layer_norm(d5__mb *b, const tf_spec *t, const char *name, const char *x)
{
    D5__TRY(d5__mb_init(b, name, "weight", 1, &t->hidden, D5__MB_CONST, 1.0, 1));
    D5__TRY(d5__mb_init(b, name, "bias", 1, &t->hidden, D5__MB_CONST, 0.0, 1));
    char w[D5__MB_NAME], bias[D5__MB_NAME];
    const char *in[3] = {x, d5__mb_name(w, "%s.weight", name), d5__mb_name(bias, "%s.bias", name)};
    const d5_attr attrs[2] = {d5__mb_int("axis", -1), d5__mb_float("epsilon", t->eps)};
    return d5__mb_node(b, name, "LayerNormalization", in, 3, NULL, attrs, 2);
}

/* Two-input node "<p>.<op>" (lower case), output of the same name. */
static const char *binary(d5__mb *b, d5_status *s, char *buf, const char *p, const char *suffix,
                          const char *op, const char *x, const char *y)
{
    d5__mb_name(buf, "%s.%s", p, suffix);
    const char *in[2] = {x, y};
    if (*s == D5_OK) *s = d5__mb_node(b, buf, op, in, 2, NULL, NULL, 0);
    return buf;
}

/* GELU as PyTorch exports it. Erf form (nn.GELU()):
 *   x * (erf(x / sqrt(2)) + 1) * 0.5
 * tanh form (GPT-2's gelu_new):
 *   0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))) */
static d5_status gelu(d5__mb *b, const tf_spec *t, const char *p, const char *x, const char *y)
{
    char v[7][D5__MB_NAME];
    d5_status s = D5_OK;
    if (t->kind != TF_GPT2) {
        const char *d = binary(b, &s, v[0], p, "div", "Div", x, C_SQRT2);
        char e[D5__MB_NAME];
        d5__mb_name(e, "%s.erf", p);
        if (s == D5_OK) s = d5__mb_node(b, e, "Erf", &d, 1, NULL, NULL, 0);
        const char *a = binary(b, &s, v[1], p, "add", "Add", e, C_ONE);
        const char *m = binary(b, &s, v[2], p, "mul", "Mul", x, a);
        const char *in[2] = {m, C_HALF};
        return s == D5_OK ? d5__mb_node(b, y, "Mul", in, 2, NULL, NULL, 0) : s;
    }
    const char *half = binary(b, &s, v[0], p, "half", "Mul", x, C_HALF);
    const char *cube = binary(b, &s, v[1], p, "pow", "Pow", x, "const.three");
    const char *cs = binary(b, &s, v[2], p, "cubic", "Mul", cube, "const.gelu_cubic");
    const char *inner = binary(b, &s, v[3], p, "inner", "Add", x, cs);
    const char *sc = binary(b, &s, v[4], p, "scale", "Mul", inner, "const.sqrt_2_pi");
    char th[D5__MB_NAME];
    d5__mb_name(th, "%s.tanh", p);
    if (s == D5_OK) s = d5__mb_node(b, th, "Tanh", &sc, 1, NULL, NULL, 0);
    const char *a = binary(b, &s, v[5], p, "add", "Add", th, C_ONE);
    const char *in[2] = {half, a};
    return s == D5_OK ? d5__mb_node(b, y, "Mul", in, 2, NULL, NULL, 0) : s;
}

/* Reshape of `x` to `shape` (an int64 constant), then Transpose by perm. */
static d5_status reshape_transpose(d5__mb *b, const char *p, const char *x, const char *shape,
                                   const int64_t perm[4], const char *y)
{
    char r[D5__MB_NAME];
    d5__mb_name(r, "%s.reshape", p);
    const char *ri[2] = {x, shape};
    D5__TRY(d5__mb_node(b, r, "Reshape", ri, 2, NULL, NULL, 0));
    const char *ti = r;
    const d5_attr a = d5__mb_ints("perm", perm, 4);
    return d5__mb_node(b, y, "Transpose", &ti, 1, NULL, &a, 1);
}

/* Multi-head self-attention of x [N, S, H] into `y` [N, S, H]: projections
 * (separate for BERT, one with a Split for GPT-2 and ViT), heads
 * [N, heads, S, d], scores Q K^T / sqrt(d), the causal mask for GPT-2,
 * Softmax, the context merged back and the output projection. */
static d5_status attention(d5__mb *b, const tf_spec *t, const char *p, const char *x,
                           const char *qkv_name, const char *out_name, const char *y)
{
    char proj[3][D5__MB_NAME], heads[3][D5__MB_NAME], n[D5__MB_NAME];
    const int64_t h = t->hidden;
    if (t->kind == TF_BERT) {
        static const char *const names[3] = {"query", "key", "value"};
        for (int i = 0; i < 3; i++)
            D5__TRY(linear(b, d5__mb_name(proj[i], "%s.%s", qkv_name, names[i]), x, h, h, NULL));
    } else {
        D5__TRY(linear(b, qkv_name, x, h, 3 * h, NULL));
        const char *outs[3] = {d5__mb_name(proj[0], "%s.q", qkv_name),
                               d5__mb_name(proj[1], "%s.k", qkv_name),
                               d5__mb_name(proj[2], "%s.v", qkv_name)};
        const char *in[2] = {qkv_name, "const.qkv_split"};
        const d5_attr axis = d5__mb_int("axis", -1);
        D5__TRY(d5__mb_node_outs(b, d5__mb_name(n, "%s.split", qkv_name), "Split", in, 2, outs, 3,
                                 &axis, 1));
    }
    static const int64_t to_heads[4] = {0, 2, 1, 3}, keys_t[4] = {0, 2, 3, 1};
    for (int i = 0; i < 3; i++)
        D5__TRY(reshape_transpose(b, proj[i], proj[i], "const.heads_shape",
                                  i == 1 ? keys_t : to_heads,
                                  d5__mb_name(heads[i], "%s.heads", proj[i])));
    d5_status s = D5_OK;
    char v[6][D5__MB_NAME];
    const char *scores = binary(b, &s, v[0], p, "scores", "MatMul", heads[0], heads[1]);
    scores = binary(b, &s, v[1], p, "scaled", "Div", scores, "const.sqrt_head");
    if (t->kind == TF_GPT2 && s == D5_OK) {
        const char *in[3] = {"const.causal_mask", scores, "const.lowest"};
        s = d5__mb_node(b, d5__mb_name(v[2], "%s.masked", p), "Where", in, 3, NULL, NULL, 0);
        scores = v[2];
    }
    const d5_attr axis = d5__mb_int("axis", -1);
    if (s == D5_OK)
        s = d5__mb_node(b, d5__mb_name(v[3], "%s.softmax", p), "Softmax", &scores, 1, NULL, &axis,
                        1);
    const char *ctx = binary(b, &s, v[4], p, "context", "MatMul", v[3], heads[2]);
    if (s != D5_OK) return s;
    static const int64_t from_heads[4] = {0, 2, 1, 3};
    const d5_attr perm = d5__mb_ints("perm", from_heads, 4);
    D5__TRY(d5__mb_node(b, d5__mb_name(v[5], "%s.merge", p), "Transpose", &ctx, 1, NULL, &perm, 1));
    char r[D5__MB_NAME];
    const char *ri[2] = {v[5], "const.merge_shape"};
    D5__TRY(d5__mb_node(b, d5__mb_name(r, "%s.merged", p), "Reshape", ri, 2, NULL, NULL, 0));
    return linear(b, out_name, r, h, h, y);
}

/* The constants the layers read: scalars, reshape shapes, the Split sizes,
 * position ids, the causal mask. */
static d5_status constants(d5__mb *b, const tf_spec *t)
{
    const int64_t d = t->hidden / t->heads;
    D5__TRY(scalar(b, C_SQRT2, (float)sqrt(2.0)));
    D5__TRY(scalar(b, C_ONE, 1.0f));
    D5__TRY(scalar(b, C_HALF, 0.5f));
    D5__TRY(scalar(b, "const.sqrt_head", (float)sqrt((double)d)));
    const int64_t zero = 0, four = 4, three = 3;
    D5__TRY(d5__mb_const(b, C_ZERO_I, D5_I64, 0, NULL, &zero));
    const int64_t heads_shape[4] = {0, 0, t->heads, d}, merge_shape[3] = {0, 0, t->hidden};
    D5__TRY(d5__mb_const(b, "const.heads_shape", D5_I64, 1, &four, heads_shape));
    D5__TRY(d5__mb_const(b, "const.merge_shape", D5_I64, 1, &three, merge_shape));
    if (t->kind != TF_BERT) {
        const int64_t split[3] = {t->hidden, t->hidden, t->hidden};
        D5__TRY(d5__mb_const(b, "const.qkv_split", D5_I64, 1, &three, split));
    }
    if (t->kind == TF_GPT2) {
        D5__TRY(scalar(b, "const.three", 3.0f));
        D5__TRY(scalar(b, "const.gelu_cubic", 0.044715f));
        D5__TRY(scalar(b, "const.sqrt_2_pi", (float)sqrt(2.0 / 3.14159265358979323846)));
        D5__TRY(scalar(b, "const.lowest", -FLT_MAX));
    }
    if (!b->net || t->kind == TF_VIT) return D5_OK;

    const int64_t s = t->sequence;
    int64_t *ids = malloc((size_t)s * sizeof *ids);
    uint8_t *mask = t->kind == TF_GPT2 ? malloc((size_t)(s * s)) : NULL;
    d5_status st = D5_OK;
    if (!ids || (t->kind == TF_GPT2 && !mask))
        st = d5_error(D5_ERR_NOMEM, "model '%s': out of memory for its constants", b->model);
    const int64_t ids_shape[2] = {1, s}, mask_shape[4] = {1, 1, s, s};
    if (st == D5_OK) {
        for (int64_t i = 0; i < s; i++) ids[i] = i;
        st = d5__mb_const(b, "const.position_ids", D5_I64, 2, ids_shape, ids);
    }
    if (st == D5_OK && t->kind == TF_BERT) {
        memset(ids, 0, (size_t)s * sizeof *ids);
        st = d5__mb_const(b, "const.token_type_ids", D5_I64, 2, ids_shape, ids);
    }
    if (st == D5_OK && mask) {
        for (int64_t i = 0; i < s; i++)
            for (int64_t j = 0; j < s; j++) mask[i * s + j] = j <= i;
        st = d5__mb_const(b, "const.causal_mask", D5_BOOL, 4, mask_shape, mask);
    }
    free(ids);
    free(mask);
    return st;
}

/* The first token of x [N, S, H]: Gather on axis 1 with a scalar index, [N, H]. */
static d5_status first_token(d5__mb *b, const char *name, const char *x)
{
    const char *in[2] = {x, C_ZERO_I};
    const d5_attr axis = d5__mb_int("axis", 1);
    return d5__mb_node(b, name, "Gather", in, 2, NULL, &axis, 1);
}

/* An embedding table "<name>.weight" [rows, H] looked up by `ids`. */
static d5_status embedding(d5__mb *b, const tf_spec *t, const char *name, int64_t rows,
                           const char *ids)
{
    const int64_t shape[2] = {rows, t->hidden};
    D5__TRY(d5__mb_init(b, name, "weight", 2, shape, D5__MB_NORMAL, INIT_STD, 1));
    char w[D5__MB_NAME];
    const char *in[2] = {d5__mb_name(w, "%s.weight", name), ids};
    return d5__mb_node(b, name, "Gather", in, 2, NULL, NULL, 0);
}

/* The feed-forward block fc1 -> GELU -> fc2 into `y`. */
static d5_status mlp(d5__mb *b, const tf_spec *t, const char *p, const char *x, const char *fc1,
                     const char *fc2, const char *y)
{
    char g[D5__MB_NAME], act[D5__MB_NAME];
    D5__TRY(linear(b, fc1, x, t->hidden, t->ff, NULL));
    D5__TRY(gelu(b, t, d5__mb_name(g, "%s.gelu", p), fc1, d5__mb_name(act, "%s.act", p)));
    return linear(b, fc2, act, t->ff, t->hidden, y);
}

/* The module names of a pre-LN block (GPT-2's, ViT's) after its prefix
 * "<stem><index>.". */
typedef struct pre_ln_names {
    const char *stem;
    const char *ln1, *attn, *qkv, *proj, *attn_residual, *ln2, *mlp, *fc1, *fc2;
} pre_ln_names;

/* Block i of a pre-LN stack: h = x + attention(LN1(x)), then h + MLP(LN2(h)).
 * x (D5__MB_NAME bytes) names the block's input and receives its output's. */
static d5_status pre_ln_block(d5__mb *b, const tf_spec *t, const pre_ln_names *nm, int32_t i,
                              char *x)
{
    char p[D5__MB_NAME], n[9][D5__MB_NAME];
    d5__mb_name(p, "%s%d", nm->stem, (int)i);
    D5__TRY(layer_norm(b, t, d5__mb_name(n[0], "%s.%s", p, nm->ln1), x));
    D5__TRY(attention(b, t, d5__mb_name(n[1], "%s.%s", p, nm->attn), n[0],
                      d5__mb_name(n[2], "%s.%s", p, nm->qkv),
                      d5__mb_name(n[3], "%s.%s", p, nm->proj), NULL));
    d5_status s = D5_OK;
    const char *r = binary(b, &s, n[4], p, nm->attn_residual, "Add", x, n[3]);
    if (s != D5_OK) return s;
    D5__TRY(layer_norm(b, t, d5__mb_name(n[5], "%s.%s", p, nm->ln2), r));
    D5__TRY(mlp(b, t, d5__mb_name(n[8], "%s.%s", p, nm->mlp), n[5],
                d5__mb_name(n[6], "%s.%s", p, nm->fc1), d5__mb_name(n[7], "%s.%s", p, nm->fc2),
                NULL));
    char next[D5__MB_NAME];
    binary(b, &s, next, p, "mlp.residual", "Add", r, n[7]);
    if (s == D5_OK) memcpy(x, next, D5__MB_NAME);
    return s;
}

/* ---- Models ---- */

d5_status d5__model_bert(d5__mb *b, int32_t variant)
{
    tf_spec t;
    D5__TRY(sizes(b, variant, &t));
    D5__TRY(d5__mb_graph_io(b, D5_I64, 2, &t.sequence, 2, &b->classes));
    D5__TRY(constants(b, &t));
    D5__TRY(embedding(b, &t, "embeddings.word_embeddings", t.vocab, "input"));
    D5__TRY(embedding(b, &t, "embeddings.position_embeddings", t.positions, "const.position_ids"));
    D5__TRY(embedding(b, &t, "embeddings.token_type_embeddings", 2, "const.token_type_ids"));
    d5_status s = D5_OK;
    char v[2][D5__MB_NAME];
    const char *e = binary(b, &s, v[0], "embeddings", "add_position", "Add",
                           "embeddings.word_embeddings", "embeddings.position_embeddings");
    e = binary(b, &s, v[1], "embeddings", "add_token_type", "Add", e,
               "embeddings.token_type_embeddings");
    if (s != D5_OK) return s;
    D5__TRY(layer_norm(b, &t, "embeddings.LayerNorm", e));
    char x[D5__MB_NAME] = "embeddings.LayerNorm";
    for (int32_t i = 0; i < t.layers; i++) {
        char p[D5__MB_NAME], n[7][D5__MB_NAME];
        d5__mb_name(p, "encoder.layer.%d", (int)i);
        D5__TRY(attention(b, &t, d5__mb_name(n[0], "%s.attention.self", p), x, n[0],
                          d5__mb_name(n[1], "%s.attention.output.dense", p), NULL));
        const char *r = binary(b, &s, n[2], p, "attention.residual", "Add", n[1], x);
        if (s != D5_OK) return s;
        D5__TRY(layer_norm(b, &t, d5__mb_name(n[3], "%s.attention.output.LayerNorm", p), r));
        D5__TRY(mlp(b, &t, d5__mb_name(n[6], "%s.intermediate", p), n[3],
                    d5__mb_name(n[4], "%s.intermediate.dense", p),
                    d5__mb_name(n[5], "%s.output.dense", p), NULL));
        r = binary(b, &s, n[2], p, "output.residual", "Add", n[5], n[3]);
        if (s != D5_OK) return s;
        D5__TRY(layer_norm(b, &t, d5__mb_name(x, "%s.output.LayerNorm", p), r));
    }
    D5__TRY(first_token(b, "pooler.first_token", x));
    D5__TRY(d5__mb_linear(b, "pooler.dense", "pooler.first_token", t.hidden, t.hidden, NULL));
    const char *pd = "pooler.dense";
    D5__TRY(d5__mb_node(b, "pooler.activation", "Tanh", &pd, 1, NULL, NULL, 0));
    return d5__mb_linear(b, "classifier", "pooler.activation", t.hidden, b->classes, "logits");
}

d5_status d5__model_gpt2(d5__mb *b, int32_t variant)
{
    tf_spec t;
    D5__TRY(sizes(b, variant, &t));
    const int64_t out[2] = {t.sequence, t.vocab};
    D5__TRY(d5__mb_graph_io(b, D5_I64, 2, &t.sequence, 3, out));
    D5__TRY(constants(b, &t));
    D5__TRY(embedding(b, &t, "transformer.wte", t.vocab, "input"));
    D5__TRY(embedding(b, &t, "transformer.wpe", t.positions, "const.position_ids"));
    d5_status s = D5_OK;
    char x[D5__MB_NAME];
    binary(b, &s, x, "transformer", "embeddings", "Add", "transformer.wte", "transformer.wpe");
    if (s != D5_OK) return s;
    static const pre_ln_names names = {"transformer.h.", "ln_1",          "attn", "attn.c_attn",
                                       "attn.c_proj",    "attn.residual", "ln_2", "mlp",
                                       "mlp.c_fc",       "mlp.c_proj"};
    for (int32_t i = 0; i < t.layers; i++) D5__TRY(pre_ln_block(b, &t, &names, i, x));
    D5__TRY(layer_norm(b, &t, "transformer.ln_f", x));
    /* The output projection tied to the token embedding: ln_f W_te^T. */
    const char *wte = "transformer.wte.weight";
    static const int64_t perm[2] = {1, 0};
    const d5_attr pa = d5__mb_ints("perm", perm, 2);
    D5__TRY(d5__mb_node(b, "lm_head.transpose", "Transpose", &wte, 1, NULL, &pa, 1));
    const char *in[2] = {"transformer.ln_f", "lm_head.transpose"};
    return d5__mb_node(b, "lm_head", "MatMul", in, 2, "logits", NULL, 0);
}

d5_status d5__model_vit(d5__mb *b, int32_t variant)
{
    tf_spec t;
    D5__TRY(sizes(b, variant, &t));
    const int64_t grid = t.image / t.patch, tokens = grid * grid;
    const int64_t in[3] = {3, t.image, t.image};
    D5__TRY(d5__mb_graph_io(b, D5_F32, 4, in, 2, &b->classes));
    D5__TRY(constants(b, &t));
    b->conv_torch_default = 1;
    D5__TRY(d5__mb_conv(b, "conv_proj", "input", 3, t.hidden, t.patch, t.patch, 0, 1));
    /* [N, H, g, g] -> [N, H, g g] -> [N, g g, H] */
    const int64_t flat[3] = {0, t.hidden, tokens}, three = 3, two = 2;
    D5__TRY(d5__mb_const(b, "const.patches_shape", D5_I64, 1, &three, flat));
    static const int64_t swap[3] = {0, 2, 1};
    const char *ri[2] = {"conv_proj", "const.patches_shape"};
    D5__TRY(d5__mb_node(b, "patches.reshape", "Reshape", ri, 2, NULL, NULL, 0));
    const char *pr = "patches.reshape";
    const d5_attr sa = d5__mb_ints("perm", swap, 3);
    D5__TRY(d5__mb_node(b, "patches", "Transpose", &pr, 1, NULL, &sa, 1));

    /* The class token expanded to the batch: [N, 1, H], N from the input's
     * shape when the batch is symbolic. */
    const int64_t cls_shape[3] = {1, 1, t.hidden}, pos_shape[3] = {1, tokens + 1, t.hidden};
    D5__TRY(d5__mb_init(b, "class_token", "weight", 3, cls_shape, D5__MB_NORMAL, INIT_STD, 1));
    D5__TRY(d5__mb_init(b, "encoder.pos_embedding", "weight", 3, pos_shape, D5__MB_NORMAL, INIT_STD,
                        1));
    const char *expand_shape = "const.class_shape";
    if (b->batch > 0) {
        const int64_t shape[3] = {b->batch, 1, t.hidden};
        D5__TRY(d5__mb_const(b, expand_shape, D5_I64, 1, &three, shape));
    } else {
        const int64_t first = 0, one = 1, rest[2] = {1, t.hidden};
        const char *input = "input";
        D5__TRY(d5__mb_node(b, "batch.shape", "Shape", &input, 1, NULL, NULL, 0));
        D5__TRY(d5__mb_const(b, "const.batch_axis", D5_I64, 1, &one, &first));
        const char *gi[2] = {"batch.shape", "const.batch_axis"};
        D5__TRY(d5__mb_node(b, "batch.size", "Gather", gi, 2, NULL, NULL, 0));
        D5__TRY(d5__mb_const(b, "const.class_rest", D5_I64, 1, &two, rest));
        const char *ci[2] = {"batch.size", "const.class_rest"};
        const d5_attr axis0 = d5__mb_int("axis", 0);
        D5__TRY(d5__mb_node(b, "batch.class_shape", "Concat", ci, 2, NULL, &axis0, 1));
        expand_shape = "batch.class_shape";
    }
    const char *ei[2] = {"class_token.weight", expand_shape};
    D5__TRY(d5__mb_node(b, "class_token", "Expand", ei, 2, NULL, NULL, 0));
    const char *ci[2] = {"class_token", "patches"};
    const d5_attr axis1 = d5__mb_int("axis", 1);
    D5__TRY(d5__mb_node(b, "tokens", "Concat", ci, 2, NULL, &axis1, 1));
    const char *pi[2] = {"tokens", "encoder.pos_embedding.weight"};
    char x[D5__MB_NAME] = "encoder.pos_embedding";
    D5__TRY(d5__mb_node(b, x, "Add", pi, 2, NULL, NULL, 0));

    static const pre_ln_names names = {"encoder.layers.encoder_layer_",
                                       "ln_1",
                                       "self_attention",
                                       "self_attention.in_proj",
                                       "self_attention.out_proj",
                                       "attention.residual",
                                       "ln_2",
                                       "mlp",
                                       "mlp.0",
                                       "mlp.3"};
    for (int32_t i = 0; i < t.layers; i++) D5__TRY(pre_ln_block(b, &t, &names, i, x));
    D5__TRY(layer_norm(b, &t, "encoder.ln", x));
    D5__TRY(first_token(b, "class_output", "encoder.ln"));
    return d5__mb_linear(b, "heads.head", "class_output", t.hidden, b->classes, "logits");
}
