/* d5 compare: two results files compared benchmark by benchmark, with a
 * verdict per benchmark and an exit status that can gate CI. */
#include "output_options.h"

#include <stdlib.h>

/* "# A = results.json (d5, 12 benchmarks, samples from results.json)". */
static void echo_set(const char *which, const d5_bench_set *set)
{
    size_t with = 0;
    const char *source = "";
    for (size_t i = 0; i < d5_bench_set_count(set); i++) {
        d5_bench_entry e;
        if (d5_bench_set_at(set, i, &e) == D5_OK && e.n > 0) {
            with++;
            source = e.source;
        }
    }
    size_t n = d5_bench_set_count(set);
    printf("#   %-14s = %s (%s, %zu benchmark%s, %zu with samples%s%s)\n", which,
           d5_bench_set_label(set), d5_bench_set_format(set), n, n == 1 ? "" : "s", with,
           with ? " from " : "", source);
}

int cmd_compare(int argc, char **argv)
{
    cli_outputs outs = {0};
    double threshold = 5, alpha = 0.05;
    const char **files = NULL;
    int nfiles = 0;
    const cli_opt opts[] = {
        {"threshold", CLI_DOUBLE, &threshold, "PCT",
         "smallest change of the median, in percent, that is a verdict (default 5)", 0, 1000},
        {"alpha", CLI_DOUBLE, &alpha, "P",
         "significance level of the Mann-Whitney U test (default 0.05)", 1e-9, 0.5},
        CLI_OUTPUT_JSON_AS(&outs, "also write the comparison as JSON"),
    };
    const cli_spec spec = {
        CLI_SPEC("compare", "A B [--threshold PCT] [--alpha P] [--json FILE]",
                 "Compares two results files benchmark by benchmark: d5 results JSON (a d5 bench\n"
                 "folder stands for its results.json; `d5 run --json` and others write the same)\n"
                 "or Google Benchmark JSON (--benchmark_out_format=json; with\n"
                 "--benchmark_repetitions=N the repetitions are the samples). For each benchmark:\n"
                 "the medians of A and B with their 95% confidence intervals, the ratio B/A, the\n"
                 "two-sided Mann-Whitney U p-value of the samples, and a verdict. B is slower or\n"
                 "faster only when p < alpha and B/A lies beyond 1 +/- threshold; without samples\n"
                 "on both sides there is no test and no verdict. Times in ns, us, ms and s are\n"
                 "converted. Exit status 1 when a benchmark is significantly slower in B.",
                 opts),
        .positional = "A B", .pos_list = &files, .pos_count = &nfiles};
    int rc = cli_parse(&spec, argc, argv);
    if (rc < 0 && nfiles != 2) {
        fprintf(stderr,
                "d5 compare: expected two results files, A and B; got %d (see 'd5 compare "
                "--help')\n",
                nfiles);
        rc = D5_EXIT_USAGE;
    }
    if (rc >= 0) {
        free(files);
        return rc;
    }
    cli_echo(stdout, &spec);
    if (!cli_outputs_check("compare", &outs)) {
        free(files);
        return D5_EXIT_INPUT;
    }
    d5_bench_set *a = NULL, *b = NULL;
    d5_status s = d5_bench_set_load(files[0], &a);
    if (s == D5_OK) s = d5_bench_set_load(files[1], &b);
    free(files);
    if (s != D5_OK) {
        d5_bench_set_free(a);
        return cli_fail("compare", s);
    }
    echo_set("A", a);
    echo_set("B", b);
    printf("\n");
    d5_compare_params p = d5_compare_default_params();
    p.alpha = alpha;
    p.threshold = threshold / 100;
    d5_comparison c;
    s = d5_compare_sets(a, b, &p, &c);
    d5_bench_set_free(a);
    d5_bench_set_free(b);
    if (s != D5_OK) return cli_fail("compare", s);
    s = d5_comparison_print(stdout, &c);
    if (s == D5_OK && outs.json) {
        /* The comparison's document, then the context and configuration of every --json. */
        char *tmp = cli_json_sibling(outs.json);
        s = tmp ? d5_comparison_write_json(&c, tmp) : D5_ERR_NOMEM;
        if (s == D5_OK) s = cli_json_amend(&spec, NULL, tmp, outs.json);
        free(tmp);
    }
    size_t slower = c.count[D5_VERDICT_SLOWER];
    d5_comparison_free(&c);
    if (s != D5_OK) return cli_fail("compare", s);
    if (slower) {
        fprintf(stderr, "d5 compare: %zu benchmark%s significantly slower in B\n", slower,
                slower == 1 ? " is" : "s are");
        return D5_EXIT_CHECK;
    }
    return D5_EXIT_OK;
}
