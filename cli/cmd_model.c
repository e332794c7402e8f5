/* d5 model: writes one of the built-in models (include/d5/models.h) as an
 * ONNX file, or lists them. */
#include "cli.h"

#include "d5/models.h"
#include "d5/onnx.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* The most arguments `d5 model` takes (each option and its value). */
#define MAX_ARGS 32

static int list_models(void)
{
    printf("%-18s %12s  %s\n", "model", "parameters", "summary");
    for (int32_t i = 0; i < d5_model_count(); i++) {
        int64_t params = 0;
        d5_status s = d5_model_param_elements(d5_model_name(i), NULL, &params);
        if (s != D5_OK) return cli_fail("model", s);
        printf("%-18s %12lld  %s\n", d5_model_name(i), (long long)params, d5_model_summary(i));
    }
    printf("\nparameters: weights, biases and batch normalization scales and shifts (as PyTorch\n"
           "counts them) with the model's default number of classes.\n");
    return D5_EXIT_OK;
}

/* Parses --seed: any unsigned 64-bit integer. */
static int parse_seed(const char *text, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno || end == text || *end || text[0] == '-') {
        fprintf(stderr,
                "d5 model: --seed expects an integer in 0..18446744073709551615, got '%s' "
                "(see 'd5 model --help')\n",
                text);
        return 0;
    }
    *out = (uint64_t)v;
    return 1;
}

int cmd_model(int argc, char **argv)
{
    const char *name = NULL, *output = NULL, *seed_text = "0";
    int batch = 0, classes = 0, opset = 0, list = 0, sequence = 0, layers = 0, hidden = 0,
        heads = 0;
    const cli_opt opts[] = {
        {"output", CLI_STRING, &output, "FILE", "the ONNX file to write (also -o FILE)", 0, 0},
        {"batch", CLI_INT, &batch, "N", "batch size of the input; 0: the symbolic dimension N", 0,
         1 << 30},
        {"classes", CLI_INT, &classes, "K", "outputs of the classifier; 0: the model's default", 0,
         1000000},
        {"seed", CLI_STRING, &seed_text, "S", "seed of the random weights (default 0)", 0, 0},
        {"opset", CLI_INT, &opset, "V",
         "ai.onnx opset to declare, 7..22 (17..22 for the transformers); 0: d5's default (17)", 0,
         22},
        {"sequence", CLI_INT, &sequence, "S",
         "bert-*, gpt2-*: tokens per input (default 128; at most 512 for bert, 1024 for gpt2)", 0,
         1 << 20},
        {"layers", CLI_INT, &layers, "L", "transformers: blocks (default: the model's)", 0, 1024},
        {"hidden", CLI_INT, &hidden, "H",
         "transformers: the width; the heads stay 64 wide unless --heads (default: the model's)", 0,
         65536},
        {"heads", CLI_INT, &heads, "A", "transformers: attention heads, dividing the width", 0,
         65536},
        {"list", CLI_FLAG, &list, NULL, "list the models with their parameter counts, then exit", 0,
         0},
    };
    /* "-o FILE" is the short form of --output; with --list no NAME is needed. */
    static char long_output[] = "--output";
    char *args[MAX_ARGS];
    if (argc > MAX_ARGS) {
        fprintf(stderr, "d5 model: too many arguments (see 'd5 model --help')\n");
        return D5_EXIT_USAGE;
    }
    int want_name = 1;
    for (int i = 0; i < argc; i++) {
        args[i] = strcmp(argv[i], "-o") == 0 ? long_output : argv[i];
        if (i > 0 && strcmp(argv[i], "--list") == 0) want_name = 0;
    }
    const cli_spec spec = {
        CLI_SPEC(
            "model",
            "NAME [--batch N] [--classes K] [--seed S] [--opset V] [--sequence S] [--layers L]\n"
            "       [--hidden H] [--heads A] -o FILE.onnx | --list",
            "Builds a built-in model with seeded random weights and writes it as an ONNX file\n"
            "(graph input 'input' [N,C,H,W] float32, output 'logits' [N,classes]). The same\n"
            "NAME, options and seed give the same file. Models: lenet, mlp (MNIST); resnet18,\n"
            "resnet34, resnet50 (ImageNet, as torchvision); resnet20/32/44/56, resnet18-cifar\n"
            "and wide-resnet-28-10 (CIFAR); the transformers bert-tiny, bert-base (input token\n"
            "ids int64 [N,S], a classifier on the first token), gpt2-small (token ids, causal,\n"
            "logits [N,S,vocabulary]; --classes sets the vocabulary) and vit-tiny, vit-b16\n"
            "(images 3x224x224), written as PyTorch exports them. 'd5 model --list' shows them\n"
            "with their parameter counts; docs/models.md describes each.",
            opts),
        .positional = want_name ? "NAME" : NULL, .pos_value = want_name ? &name : NULL};
    int rc = cli_parse(&spec, argc, args);
    if (rc >= 0) return rc;
    if (list) return list_models();
    if (!output) {
        fprintf(stderr, "d5 model: missing -o FILE (see 'd5 model --help')\n");
        return D5_EXIT_USAGE;
    }
    if (!cli_output_ok("model", "-o", output, 0)) return D5_EXIT_INPUT;
    d5_model_params p = d5_model_default_params();
    if (!parse_seed(seed_text, &p.seed)) return D5_EXIT_USAGE;
    p.batch = batch;
    p.classes = classes;
    p.opset = opset;
    p.sequence = sequence;
    p.layers = layers;
    p.hidden = hidden;
    p.heads = heads;
    int64_t params = 0;
    d5_status s = d5_model_param_elements(name, &p, &params);
    if (s != D5_OK) return cli_fail("model", s);
    cli_echo(stdout, &spec);
    cli_progress(1, 2, "building %s (%lld parameters)", name, (long long)params);
    d5_network *net = NULL;
    s = d5_model_build(name, &p, &net);
    if (s != D5_OK) return cli_fail("model", s);
    cli_progress(2, 2, "writing %s", output);
    s = d5_onnx_save(net, output);
    const int32_t nodes = d5_network_node_count(net);
    d5_network_free(net);
    if (s != D5_OK) return cli_fail("model", s);

    struct stat st;
    const double mb = stat(output, &st) == 0 ? (double)st.st_size / 1e6 : 0.0;
    printf("wrote %s to %s: %lld parameters, %d nodes, %.1f MB\n", name, output, (long long)params,
           (int)nodes, mb);
    return D5_EXIT_OK;
}
