/* d5 recipe: named training configurations with the test accuracy they must
 * reach (Deep500's recipes: fixed components and acceptable metrics). `list`
 * prints the table, `show NAME` one recipe and its d5 train command lines,
 * `run NAME` trains through d5 train (in this process), then compares the
 * final test accuracy with the target: PASS or FAIL, and the time to the
 * target. The recipes themselves are in recipes.def. */
#define _XOPEN_SOURCE 700
#include "output_options.h"
#include "train_results.h"
#include "train_run.h"

#include <errno.h>
#include <ftw.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define RECIPE_MAX_PHASES 4

/* Whole epochs at one learning rate. */
typedef struct recipe_phase {
    int32_t epochs;
    double lr;
} recipe_phase;

typedef struct recipe {
    const char *name;
    const char *summary;   /* one line for `list` */
    const char *model;     /* d5 train --model */
    const char *dataset;   /* d5 train --dataset: mnist, fashion-mnist or cifar10 */
    const char *optimizer; /* d5 train --optimizer */
    double momentum, weight_decay;
    recipe_phase phases[RECIPE_MAX_PHASES]; /* up to the first with 0 epochs */
    int32_t batch;
    int32_t max_batches; /* 0: whole epochs; else each phase stops after this many */
    const char *augment; /* d5 train --augment */
    int32_t seed;
    double target;         /* test accuracy to reach, 0..1 */
    int user_data;         /* the data is not installed by d5's setup: the user supplies it */
    const char *source;    /* the reference in a few words, for `list` */
    const char *reference; /* where the target comes from */
    const char *notes;     /* how the setting follows or departs from the reference */
} recipe;

#define RECIPE(...) {__VA_ARGS__},
static const recipe recipes[] = {
#include "recipes.def"
};
#undef RECIPE
#define NRECIPES (sizeof recipes / sizeof recipes[0])

static int32_t phase_count(const recipe *r)
{
    int32_t n = 0;
    while (n < RECIPE_MAX_PHASES && r->phases[n].epochs > 0) n++;
    return n;
}

static int32_t epoch_count(const recipe *r)
{
    int32_t e = 0;
    for (int32_t k = 0; k < phase_count(r); k++) e += r->phases[k].epochs;
    return e;
}

/* The recipe called `name`, or NULL after listing the names on stderr. */
static const recipe *find_recipe(const char *command, const char *name)
{
    for (size_t i = 0; i < NRECIPES; i++)
        if (strcmp(recipes[i].name, name) == 0) return &recipes[i];
    fprintf(stderr, "d5 %s: unknown recipe '%s'; the recipes are:", command, name);
    for (size_t i = 0; i < NRECIPES; i++) fprintf(stderr, "%s %s", i ? "," : "", recipes[i].name);
    fprintf(stderr, " (see 'd5 recipe list')\n");
    return NULL;
}

/* ---- The d5 train configuration of each phase ---- */

/* What a run changes in a recipe, and where its files go. */
typedef struct run_cfg {
    const char *dataset; /* "mnist:DIR", or the recipe's name alone for `show` */
    int seed;
    int threads; /* -1: not passed (show) */
    const char *backend;
    int full;        /* train every epoch: no --target-accuracy */
    int max_batches; /* per phase, 0: none */
    const char *dir; /* the phases' files; NULL for `show` (names only) */
    int keep;        /* --out: d5 train's results folder and the model of every phase */
} run_cfg;

/* "DIR/train-2.json", or "DIR/train.json" for a recipe of one phase (ext
 * NULL: "DIR/train-2", a folder). DIR is at most 4096 + 32 characters
 * (cli_output_ok, then the ".partial-PID" suffix): the callers' buffers hold
 * it. */
static void phase_file(char *buf, size_t size, const char *dir, const char *stem, int32_t k,
                       int32_t nph, const char *ext)
{
    char name[64];
    if (nph > 1)
        snprintf(name, sizeof name, "%s-%d%s%s", stem, (int)k + 1, ext ? "." : "", ext ? ext : "");
    else
        snprintf(name, sizeof name, "%s%s%s", stem, ext ? "." : "", ext ? ext : "");
    int n = snprintf(buf, size, "%s%s%s", dir ? dir : "", dir ? "/" : "", name);
    if (n < 0 || (size_t)n >= size) buf[0] = '\0';
}

/* Epochs before phase k: its seed offset, so that phase k draws the batches
 * and augmentations of those epochs in one continuous run (the sampler seeds
 * epoch e with seed + e). */
static int32_t epochs_before(const recipe *r, int32_t k)
{
    int32_t e = 0;
    for (int32_t j = 0; j < k; j++) e += r->phases[j].epochs;
    return e;
}

/* Phase k of a recipe as d5 train's typed options, with the paths they
 * point to. */
typedef struct phase {
    train_options o;
    char model[4200], checkpoint[4200], out[4200];
} phase;

/* The options of phase k (the recipe's augmentations parsed by level 2). */
static d5_status phase_options(const recipe *r, const run_cfg *c, int32_t k, phase *p)
{
    int32_t nph = phase_count(r);
    train_options *o = &p->o;
    d5_train_config *cfg = &o->cfg;
    train_options_default(o);
    if (k > 0) phase_file(p->model, sizeof p->model, c->dir, "model", k - 1, nph, "onnx");
    cfg->model = k > 0 ? p->model : r->model;
    cfg->dataset = c->dataset;
    cfg->optimizer = r->optimizer;
    cfg->lr = r->phases[k].lr;
    cfg->momentum = r->momentum;
    cfg->weight_decay = r->weight_decay;
    cfg->batch = r->batch;
    cfg->epochs = r->phases[k].epochs;
    cfg->max_batches = c->max_batches;
    cfg->seed = c->seed + epochs_before(r, k);
    cfg->target_accuracy = c->full ? 0 : r->target;
    cfg->backend = c->backend;
    o->threads = c->threads > 0 ? c->threads : 0;
    if (k + 1 < nph || (c->dir && c->keep)) {
        phase_file(p->checkpoint, sizeof p->checkpoint, c->dir, "model", k, nph, "onnx");
        cfg->checkpoint = p->checkpoint;
    }
    /* With --out, d5 train's results folder. */
    if (c->dir && c->keep) {
        phase_file(p->out, sizeof p->out, c->dir, "train", k, nph, NULL);
        o->outs.out = p->out;
    }
    d5_status s = d5_train_parse_augment(r->augment, &cfg->augment);
    if (s == D5_OK) s = train_options_check(o);
    return s;
}

/* A word of the command line as a shell takes it back: in single quotes when
 * it has characters other than [A-Za-z0-9_./:,=+-]. */
static void print_word(FILE *f, const char *w)
{
    int plain = *w != '\0';
    for (const char *p = w; *p; p++)
        if (!strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./:,=+-", *p))
            plain = 0;
    if (plain) {
        fprintf(f, " %s", w);
        return;
    }
    fputs(" '", f);
    for (const char *p = w; *p; p++)
        if (*p == '\'')
            fputs("'\\''", f);
        else
            fputc(*p, f);
    fputc('\'', f);
}

/* One flag and its value: printed on f and appended to words (either may
 * be NULL). */
static void flag(FILE *f, json_t *words, const char *name, const char *fmt, ...) D5_PRINTF(4, 5);

static void flag(FILE *f, json_t *words, const char *name, const char *fmt, ...)
{
    char value[4200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(value, sizeof value, fmt, ap);
    va_end(ap);
    if (f) print_word(f, name), print_word(f, value);
    if (words) json_array_append_new(words, json_string(name));
    if (words) json_array_append_new(words, json_string(value));
}

/* The d5 train command line that runs phase p, generated from its options
 * (for reproducing the phase by hand): printed on f ending the line, and as
 * the words of the recipe's JSON file (new reference; NULL without words).
 * `threads` < 0 leaves --threads out (show). */
static json_t *phase_command(FILE *f, const phase *p, int threads, int words)
{
    const d5_train_config *c = &p->o.cfg;
    json_t *w = words ? json_array() : NULL;
    if (f) fprintf(f, "d5 train");
    if (w) json_array_append_new(w, json_string("train"));
    char augment[128];
    d5_train_augment_spec(&c->augment, augment, sizeof augment);
    flag(f, w, "--model", "%s", c->model);
    flag(f, w, "--dataset", "%s", c->dataset);
    flag(f, w, "--optimizer", "%s", c->optimizer);
    flag(f, w, "--lr", "%g", c->lr);
    flag(f, w, "--momentum", "%g", c->momentum);
    flag(f, w, "--weight-decay", "%g", c->weight_decay);
    flag(f, w, "--batch", "%d", (int)c->batch);
    flag(f, w, "--epochs", "%d", (int)c->epochs);
    if (c->max_batches > 0) flag(f, w, "--max-batches", "%lld", (long long)c->max_batches);
    flag(f, w, "--augment", "%s", augment);
    flag(f, w, "--seed", "%d", (int)c->seed);
    if (c->target_accuracy > 0) flag(f, w, "--target-accuracy", "%g", c->target_accuracy);
    if (threads >= 0) flag(f, w, "--threads", "%d", threads);
    if (c->backend) flag(f, w, "--backend", "%s", c->backend);
    if (c->checkpoint) flag(f, w, "--checkpoint", "%s", c->checkpoint);
    if (p->o.outs.out) flag(f, w, "--out", "%s", p->o.outs.out);
    if (f) fputc('\n', f);
    return w;
}

/* ---- list and show ---- */

/* "lr 0.1 for epochs 1-82, 0.01 for 83-123, 0.001 for 124-164". */
static void format_schedule(const recipe *r, char *buf, size_t size)
{
    size_t used = 0;
    buf[0] = 0;
    for (int32_t k = 0, first = 1; k < phase_count(r) && used < size; k++) {
        int32_t last = first + r->phases[k].epochs - 1;
        char span[32];
        if (last > first)
            snprintf(span, sizeof span, "%d-%d", (int)first, (int)last);
        else
            snprintf(span, sizeof span, "%d", (int)first);
        used += (size_t)snprintf(buf + used, size - used, "%s%g for epoch%s %s", k ? ", " : "lr ",
                                 r->phases[k].lr, last > first ? "s" : "", span);
        first = last + 1;
    }
}

static int list_recipes(void)
{
    printf("%-20s %-9s %-14s %7s  %s\n", "recipe", "model", "dataset", "target", "target from");
    for (size_t i = 0; i < NRECIPES; i++) {
        const recipe *r = &recipes[i];
        printf("%-20s %-9s %-14s %6.2f%%  %s\n", r->name, r->model, r->dataset, 100 * r->target,
               r->source);
    }
    printf("\n'd5 recipe show NAME' prints a recipe's configuration and its d5 train command\n"
           "lines; 'd5 recipe run NAME' trains it and checks the target.\n");
    return D5_EXIT_OK;
}

/* One configuration line, "  name             value", the value wrapped at
 * 79 columns under itself. */
static void field(const char *name, const char *fmt, ...) D5_PRINTF(2, 3);

static void field(const char *name, const char *fmt, ...)
{
    char text[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    const int indent = 19, width = 79 - indent;
    printf("  %-16s ", name);
    for (const char *p = text; *p;) {
        int n = (int)strlen(p);
        if (n > width) {
            n = width;
            while (n > 0 && p[n] != ' ') n--;
            if (n == 0) n = width; /* one long word */
        }
        printf("%.*s\n", n, p);
        p += n;
        while (*p == ' ') p++;
        if (*p) printf("%*s", indent, "");
    }
    if (!*text) putchar('\n');
}

static int show_recipe(const recipe *r)
{
    char sched[256];
    format_schedule(r, sched, sizeof sched);
    printf("recipe %s: %s\n", r->name, r->summary);
    field("model", "%s", r->model);
    field("dataset", "%s%s", r->dataset, r->user_data ? " (supplied by the user: --data DIR)" : "");
    field("optimizer", "%s", r->optimizer);
    field("momentum", "%g", r->momentum);
    field("weight decay", "%g", r->weight_decay);
    field("schedule", "%s", sched);
    field("batch", "%d", (int)r->batch);
    field("epochs", "%d", (int)epoch_count(r));
    if (r->max_batches > 0) field("max batches", "%d", (int)r->max_batches);
    field("augmentations", "%s", r->augment);
    field("seed", "%d", (int)r->seed);
    field("target", "%.2f%% test accuracy", 100 * r->target);
    field("reference", "%s", r->reference);
    field("notes", "%s", r->notes);
    int32_t nph = phase_count(r);
    char dataset[64];
    snprintf(dataset, sizeof dataset, "%s%s", r->dataset, r->user_data ? ":DIR" : "");
    run_cfg c = {dataset, r->seed, -1, NULL, 0, r->max_batches, NULL, 0};
    printf("\nthe same with d5 train%s:\n",
           nph > 1 ? " (one run per learning rate, each from the previous one's checkpoint)" : "");
    for (int32_t k = 0; k < nph; k++) {
        phase p;
        d5_status s = phase_options(r, &c, k, &p);
        if (s != D5_OK) return cli_fail("recipe show", s);
        phase_command(stdout, &p, -1, 0);
    }
    printf("\n--target-accuracy stops a run once the test accuracy, evaluated after each epoch,\n"
           "reaches the target; the time to it is training time, evaluation excluded.\n");
    return D5_EXIT_OK;
}

/* ---- run ---- */

/* Where each dataset comes from, for the message when it is missing. */
static const char *data_howto(const char *dataset)
{
    if (strcmp(dataset, "mnist") == 0)
        return "scripts/setup_data.sh (run by scripts/setup.sh) puts MNIST's four IDX files into "
               "data/mnist; or pass --data DIR with train-images-idx3-ubyte, "
               "train-labels-idx1-ubyte, t10k-images-idx3-ubyte and t10k-labels-idx1-ubyte "
               "(plain or .gz)";
    if (strcmp(dataset, "fashion-mnist") == 0)
        return "Debian's dataset-fashion-mnist installs it into /usr/share/datasets/fashion-mnist "
               "(apt-get install dataset-fashion-mnist); or pass --data DIR with its four IDX "
               "files";
    return "d5 does not download CIFAR-10: get the binary version, cifar-10-binary.tar.gz "
           "('CIFAR-10 binary version (suitable for C programs)'), from "
           "https://www.cs.toronto.edu/~kriz/cifar.html, unpack it with 'mkdir -p DIR && tar "
           "-xzf cifar-10-binary.tar.gz -C DIR' and pass --data DIR (docs/level2.md, 'Where "
           "the data comes from')";
}

/* Resolves the data folder (--data, else d5's default folder of the dataset)
 * into dir and checks that the test split opens. Returns -1 to go on, or
 * D5_EXIT_INPUT after saying what is missing and how to get it. */
static int check_data(const recipe *r, const char *data, char *dir, size_t size)
{
    if (data)
        snprintf(dir, size, "%s", data);
    else
        d5_dataset_default_dir(r->dataset, dir, size);
    d5_dataset *ds = NULL;
    d5_status s = strcmp(r->dataset, "cifar10") == 0 ? d5_dataset_open_cifar(dir, 0, 10, &ds)
                                                     : d5_dataset_open_mnist(dir, 0, &ds);
    d5_dataset_free(ds);
    if (s == D5_OK) return -1;
    fprintf(stderr, "d5 recipe run: %s needs %s, and '%s'%s does not hold it: %s\n  %s\n", r->name,
            r->dataset, dir, data ? " (--data)" : " (the default folder)", d5_last_error(),
            data_howto(r->dataset));
    return D5_EXIT_INPUT;
}

/* The figures of one phase, from d5 train's outcome. */
typedef struct phase_result {
    int32_t epochs;  /* epochs that ran */
    int64_t batches; /* batches that ran */
    double seconds;  /* training time, evaluation excluded */
    double final_accuracy;
    double tta_s; /* time to the target in this phase, NAN when not reached */
    const char *stop;
    int contended;
} phase_result;

static json_t *number_or_null(double x)
{
    return isfinite(x) ? json_real(x) : json_null();
}

/* The outcome of phase k; appends its epochs, numbered from `first`, to
 * `rows`. */
static d5_status phase_figures(const train_outcome *t, int32_t k, int32_t first, double lr,
                               json_t *rows, phase_result *out)
{
    if (t->nepochs == 0 || isnan(t->final_test_accuracy))
        return d5_error(D5_ERR_INVALID,
                        "phase %d: d5 train ran no epoch or gave no final test "
                        "accuracy",
                        (int)k + 1);
    memset(out, 0, sizeof *out);
    out->epochs = t->nepochs;
    out->batches = t->batches;
    out->seconds = t->seconds;
    out->final_accuracy = t->final_test_accuracy;
    out->tta_s = t->time_to_accuracy_s;
    out->stop = train_stop_name(t->stop);
    out->contended = t->contended;
    for (int32_t i = 0; i < t->nepochs; i++) {
        const d5_epoch_stats *e = &t->epochs[i];
        json_array_append_new(
            rows, json_pack("{s:i, s:f, s:I, s:o, s:o, s:o, s:f}", "epoch", (int)(first + i), "lr",
                            lr, "batches", (json_int_t)e->batches, "train_loss",
                            number_or_null(e->train_loss), "train_accuracy",
                            number_or_null(e->train_accuracy), "test_accuracy",
                            number_or_null(e->test_accuracy), "seconds", e->seconds));
    }
    return D5_OK;
}

/* Removes the run's own folder (a temporary one, or --out's unfinished
 * ".partial-PID" one) with what is in it. */
static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    return remove(path) == 0 || errno == ENOENT ? 0 : -1;
}

static void remove_tree(const char *dir)
{
    if (nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS) != 0)
        fprintf(stderr, "d5 recipe run: could not remove all of '%s': %s\n", dir, strerror(errno));
}

/* The files of the run's folder that a signal removes (the folder itself goes
 * only once empty: d5 train's folders of finished phases stay, in a folder
 * named .partial-PID, or under the temporary folder). */
static void register_unfinished(const recipe *r, const run_cfg *c)
{
    char path[4200];
    cli_unfinished_clear();
    for (int32_t k = 0; k < phase_count(r); k++) {
        phase_file(path, sizeof path, c->dir, "model", k, phase_count(r), "onnx");
        cli_unfinished_add(path);
    }
    cli_unfinished_add(c->dir);
}

static json_t *recipe_json(const recipe *r, const char *data_dir)
{
    json_t *phases = json_array();
    for (int32_t k = 0; k < phase_count(r); k++)
        json_array_append_new(phases, json_pack("{s:i, s:f}", "epochs", (int)r->phases[k].epochs,
                                                "lr", r->phases[k].lr));
    return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:f, s:f, s:o, s:i, s:i, s:i, s:s, s:i, "
                     "s:f, s:s, s:s}",
                     "name", r->name, "summary", r->summary, "model", r->model, "dataset",
                     r->dataset, "data_dir", data_dir, "optimizer", r->optimizer, "momentum",
                     r->momentum, "weight_decay", r->weight_decay, "schedule", phases, "batch",
                     (int)r->batch, "epochs", (int)epoch_count(r), "max_batches",
                     (int)r->max_batches, "augment", r->augment, "seed", (int)r->seed,
                     "target_accuracy", r->target, "reference", r->reference, "notes", r->notes);
}

/* A temporary folder for the phases' files when --out is not given. */
static int make_tmpdir(char *buf, size_t size)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(buf, size, "%s/d5-recipe-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (mkdtemp(buf)) return 1;
    fprintf(stderr, "d5 recipe run: cannot create a temporary folder '%s': %s\n", buf,
            strerror(errno));
    return 0;
}

typedef struct run_state {
    const recipe *r;
    run_cfg c;
    json_t *rows, *phases, *commands;
    double seconds, tta_s, final_accuracy;
    int32_t epochs_run;
    int64_t batches_run;
    int contended;
} run_state;

/* Runs the phases through d5 train. Returns -1 when they ran (whatever the
 * accuracy), or the exit code of the failed phase. */
static int run_phases(run_state *st)
{
    const recipe *r = st->r;
    int32_t nph = phase_count(r);
    st->tta_s = NAN;
    for (int32_t k = 0; k < nph; k++) {
        phase ph;
        d5_status s = phase_options(r, &st->c, k, &ph);
        if (s != D5_OK) return cli_fail("recipe run", s);
        printf("\n== recipe %s, phase %d of %d: lr %g for %d epoch%s ==\n", r->name, (int)k + 1,
               (int)nph, r->phases[k].lr, (int)r->phases[k].epochs,
               r->phases[k].epochs == 1 ? "" : "s");
        json_array_append_new(st->commands, phase_command(stdout, &ph, st->c.threads, 1));
        fflush(stdout);
        register_unfinished(r, &st->c);
        train_outcome t;
        int rc = train_run(&ph.o, &t);
        fflush(stdout);
        if (rc != D5_EXIT_OK) {
            fprintf(stderr, "d5 recipe run: %s: phase %d failed (d5 train exit status %d)\n",
                    r->name, (int)k + 1, rc);
            return rc;
        }
        phase_result p;
        s = phase_figures(&t, k, st->epochs_run + 1, r->phases[k].lr, st->rows, &p);
        train_outcome_free(&t);
        if (s != D5_OK) return cli_fail("recipe run", s);
        if (isnan(st->tta_s) && isfinite(p.tta_s)) st->tta_s = st->seconds + p.tta_s;
        st->seconds += p.seconds;
        st->epochs_run += p.epochs;
        st->batches_run += p.batches;
        st->final_accuracy = p.final_accuracy;
        st->contended |= p.contended;
        json_array_append_new(st->phases, json_pack("{s:i, s:f, s:i, s:f, s:f, s:o, s:s, s:b}",
                                                    "phase", (int)k + 1, "lr", r->phases[k].lr,
                                                    "epochs", (int)p.epochs, "seconds", p.seconds,
                                                    "final_test_accuracy", p.final_accuracy,
                                                    "time_to_accuracy_s", number_or_null(p.tta_s),
                                                    "stop", p.stop, "contended", p.contended));
        if (!st->c.full && isfinite(p.tta_s)) break; /* the target is reached */
    }
    /* With --full the time to the target comes from the epochs' evaluations. */
    if (st->c.full) {
        double t = 0;
        size_t i;
        json_t *e;
        json_array_foreach(st->rows, i, e)
        {
            t += json_number_value(json_object_get(e, "seconds"));
            json_t *acc = json_object_get(e, "test_accuracy");
            if (json_is_number(acc) && json_number_value(acc) >= st->r->target) {
                st->tta_s = t;
                break;
            }
        }
    }
    return -1;
}

static int run_recipe(int argc, char **argv)
{
    const char *name = NULL, *data = NULL, *backend = NULL;
    cli_outputs outs = {0};
    int threads = 0, seed = -1, full = 0, max_batches = -1;
    char backend_help[96];
    snprintf(backend_help, sizeof backend_help, "executor backends, or auto (default %s)",
             d5_backend_default_list());
    const cli_opt opts[] = {
        {"data", CLI_STRING, &data, "DIR",
         "the dataset's folder (default: d5's folder for it; CIFAR-10 is the user's to supply)", 0,
         0},
        CLI_OUTPUT_OUT(
            &outs,
            "keep the run's files in a new folder: recipe.json, and per phase d5 train's results "
            "folder (train/ or train-K/) and the trained model (model.onnx or model-K.onnx)"),
        CLI_OUTPUT_JSON_AS(&outs, "the verdict, the epochs and a context block as JSON"),
        {"seed", CLI_INT, &seed, "S",
         "seed of weights, shuffling and augmentation (default: the "
         "recipe's)",
         0, 2147483647},
        {"full", CLI_FLAG, &full, NULL,
         "train every epoch of the schedule, also after the target is reached (default: stop "
         "there, as time-to-accuracy benchmarks do)",
         0, 0},
        {"max-batches", CLI_INT, &max_batches, "N",
         "stop each phase after N batches (a quick check that a recipe runs; default: the "
         "recipe's)",
         1, 1 << 30},
        {"threads", CLI_INT, &threads, "N", CLI_THREADS_HELP, 0, 4096},
        {"backend", CLI_STRING, &backend, "LIST", backend_help, 0, 0},
    };
    const cli_spec spec = {
        CLI_SPEC("recipe run",
                 "NAME [--data DIR] [--out DIR] [--json FILE] [--seed S] [--full]\n"
                 "       [--max-batches N] [--threads N] [--backend LIST]",
                 "Trains the recipe NAME with d5 train (one run per learning rate of its\n"
                 "schedule, each from the previous one's checkpoint), then compares the final\n"
                 "test accuracy with the recipe's target: PASS or FAIL with both numbers and\n"
                 "the time to the target (training time, evaluation excluded). Exit status 1\n"
                 "on FAIL. 'd5 recipe list' names the recipes.",
                 opts),
        .positional = "NAME", .pos_value = &name};
    int rc = cli_parse(&spec, argc, argv);
    if (rc >= 0) return rc;
    const recipe *r = find_recipe("recipe run", name);
    if (!r) return D5_EXIT_INPUT;
    if (seed < 0) seed = r->seed;
    if ((int64_t)seed + epoch_count(r) > 2147483647) {
        fprintf(stderr,
                "d5 recipe run: --seed %d: the phases of %s take seeds up to %d above it, past "
                "2147483647 (see 'd5 recipe run --help')\n",
                seed, r->name, (int)epoch_count(r));
        return D5_EXIT_USAGE;
    }
    if (max_batches < 0) max_batches = r->max_batches;
    if ((rc = cli_check_backends("recipe run", "backend", backend, 1)) >= 0) return rc;
    struct stat sb;
    if (outs.out && stat(outs.out, &sb) == 0) {
        fprintf(stderr, "d5 recipe run: --out folder '%s' already exists; choose another\n",
                outs.out);
        return D5_EXIT_USAGE;
    }
    if (!cli_outputs_check("recipe run", &outs)) return D5_EXIT_INPUT;
    char dir[4096];
    if ((rc = check_data(r, data, dir, sizeof dir)) >= 0) return rc;
    data = dir;
    cli_echo(stdout, &spec);
    char dataset[4200];
    snprintf(dataset, sizeof dataset, "%s:%s", r->dataset, dir);

    char work[4200];
    if (outs.out) snprintf(work, sizeof work, "%s.partial-%ld", outs.out, (long)getpid());
    if (outs.out && mkdir(work, 0777) != 0) {
        fprintf(stderr, "d5 recipe run: cannot create '%s': %s\n", work, strerror(errno));
        return D5_EXIT_INPUT;
    }
    if (!outs.out && !make_tmpdir(work, sizeof work)) return D5_EXIT_INPUT;

    run_state st;
    memset(&st, 0, sizeof st);
    st.r = r;
    st.c = (run_cfg){dataset, seed, threads, backend, full, max_batches, work, outs.out != NULL};
    st.rows = json_array();
    st.phases = json_array();
    st.commands = json_array();
    printf("recipe %s: %s; target %.2f%% test accuracy (%s)\n", r->name, r->summary,
           100 * r->target, r->reference);
    fflush(stdout);
    rc = run_phases(&st);
    int pass = rc < 0 && st.final_accuracy >= r->target;
    json_t *doc = NULL;
    if (rc < 0) {
        doc = json_pack("{s:{s:s, s:b}, s:o, s:o, s:o, s:o, s:s, s:f, s:f, s:o, s:f, s:i, s:I}",
                        "context", "recipe", r->name, "contended", st.contended, "recipe",
                        recipe_json(r, dir), "train_commands", st.commands, "phases", st.phases,
                        "epochs", st.rows, "verdict", pass ? "PASS" : "FAIL", "final_test_accuracy",
                        st.final_accuracy, "target_accuracy", r->target, "time_to_accuracy_s",
                        number_or_null(st.tta_s), "training_seconds", st.seconds, "epochs_run",
                        (int)st.epochs_run, "batches_run", (json_int_t)st.batches_run);
        st.rows = st.phases = st.commands = NULL;
        d5_status s = doc ? D5_OK : d5_error(D5_ERR_NOMEM, "out of memory for the verdict");
        char path[4300];
        snprintf(path, sizeof path, "%s/recipe.json", work);
        if (s == D5_OK && outs.out) s = cli_json_write(&spec, NULL, json_incref(doc), path);
        if (s == D5_OK && outs.out && rename(work, outs.out) != 0)
            s = d5_error(D5_ERR_IO, "cannot rename '%s' to '%s': %s", work, outs.out,
                         strerror(errno));
        if (s == D5_OK && outs.json) s = cli_json_write(&spec, NULL, json_incref(doc), outs.json);
        if (s != D5_OK) rc = cli_fail("recipe run", s);
    }
    cli_unfinished_clear();
    /* Without --out, or when the run failed, the folder goes. */
    struct stat wb;
    if (stat(work, &wb) == 0) remove_tree(work);
    json_decref(doc);
    json_decref(st.rows);
    json_decref(st.phases);
    json_decref(st.commands);
    if (rc >= 0) return rc;

    printf("\nrecipe %s: %s: test accuracy %.2f%% %s target %.2f%% after %d epoch%s (%lld "
           "batch%s)",
           r->name, pass ? "PASS" : "FAIL", 100 * st.final_accuracy, pass ? ">=" : "<",
           100 * r->target, (int)st.epochs_run, st.epochs_run == 1 ? "" : "s",
           (long long)st.batches_run, st.batches_run == 1 ? "" : "es");
    if (isfinite(st.tta_s))
        printf("; time to %.2f%%: %.2f s of training (evaluation excluded)\n", 100 * r->target,
               st.tta_s);
    else
        printf("; the target was not reached in %.2f s of training\n", st.seconds);
    printf("target from: %s\n", r->reference);
    if (st.contended)
        printf("note: other processes competed for the cores during training: the times are "
               "not those of a quiet machine\n");
    if (outs.out) printf("files in %s/\n", outs.out);
    return pass ? D5_EXIT_OK : D5_EXIT_CHECK;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: d5 recipe list\n"
               "       d5 recipe show NAME\n"
               "       d5 recipe run NAME [--data DIR] [--out DIR] [--json FILE] [--seed S] "
               "[--full]\n"
               "                          [--max-batches N] [--threads N] [--backend LIST]\n\n"
               "Convergence recipes, as Deep500's: a named training configuration (model, data,\n"
               "optimizer, learning-rate schedule, batch, epochs, augmentations, seed) and the\n"
               "test accuracy it must reach, with the paper or recipe that target comes from.\n"
               "'run' trains through d5 train and prints PASS or FAIL with the final accuracy,\n"
               "the target and the time to it; 'd5 recipe run --help' lists its options.\n\n"
               "exit status: 0 success (PASS), 1 FAIL or the run failed, 2 bad usage, 3 bad "
               "input\n");
}

int cmd_recipe(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "d5 recipe: missing list, show or run (see 'd5 recipe --help')\n");
        return D5_EXIT_USAGE;
    }
    const char *sub = argv[1];
    if (strcmp(sub, "--help") == 0 || strcmp(sub, "-h") == 0 || strcmp(sub, "help") == 0) {
        usage(stdout);
        return D5_EXIT_OK;
    }
    if (strcmp(sub, "run") == 0) return run_recipe(argc - 1, argv + 1);
    const cli_opt none[1] = {{"", CLI_FLAG, NULL, NULL, "", 0, 0}};
    const char *name = NULL;
    if (strcmp(sub, "list") == 0) {
        const cli_spec spec = {.command = "recipe list",
                               .synopsis = "",
                               .description = "Prints the recipes: name, model, dataset, target "
                                              "test accuracy and where the target comes from.",
                               .opts = none,
                               .nopts = 0};
        int rc = cli_parse(&spec, argc - 1, argv + 1);
        return rc >= 0 ? rc : list_recipes();
    }
    if (strcmp(sub, "show") == 0) {
        const cli_spec spec = {
            .command = "recipe show",
            .synopsis = "NAME",
            .description = "Prints a recipe's whole configuration, its target and reference, and\n"
                           "the d5 train command lines that train it.",
            .opts = none,
            .nopts = 0,
            .positional = "NAME",
            .pos_value = &name};
        int rc = cli_parse(&spec, argc - 1, argv + 1);
        if (rc >= 0) return rc;
        const recipe *r = find_recipe("recipe show", name);
        return r ? show_recipe(r) : D5_EXIT_INPUT;
    }
    fprintf(stderr,
            "d5 recipe: unknown subcommand '%s'; expected list, show or run (see 'd5 "
            "recipe --help')\n",
            sub);
    return D5_EXIT_USAGE;
}
