/* d5 machine: what this machine is and what it measurably does. */
#include "cli.h"

#include <stdlib.h>

int cmd_machine(int argc, char **argv)
{
    const char *json = NULL;
    int threads = 0, no_measure = 0;
    double seconds = 1.0;
    const cli_opt opts[] = {
        {"json", CLI_STRING, &json, "FILE", "also write the report as JSON to FILE", 0, 0},
        {"threads", CLI_INT, &threads, "N", "threads for the all-core figures (default: all CPUs)",
         0, 4096},
        {"time", CLI_DOUBLE, &seconds, "S",
         "time budget of each measurement in seconds (default 1)", 0.01, 600},
        {"no-measure", CLI_FLAG, &no_measure, NULL, "describe the machine only, measure nothing", 0,
         0},
    };
    const cli_spec spec = {CLI_SPEC(
        "machine", "[--json FILE] [--threads N] [--time S] [--no-measure]",
        "Describes the CPU, caches, memory, OpenBLAS and CUDA devices (or why there are none),\n"
        "then measures the FP32 FMA peak of one core and of all cores, the low-precision peaks\n"
        "of the instructions this CPU has (bf16 dot: AVX512_BF16 vdpbf16ps; f16 fma:\n"
        "AVX512_FP16; int8 dot: AVX512_VNNI or AVX-VNNI vpdpbusd; AMX tdpbf16ps and tdpbusd,\n"
        "once Linux permits the tile state), each counting 2 operations per multiply-add as a\n"
        "GEMM does, and the memory bandwidth of a STREAM-triad-like kernel. Each figure is the\n"
        "median over repetitions with its 95% confidence interval, and the best run; later\n"
        "commands use them for % of peak, each against the peak of its precision.",
        opts)};
    int rc = cli_parse(&spec, argc, argv);
    if (rc >= 0) return rc;
    cli_echo(stdout, &spec);
    if (!cli_output_ok("machine", "--json", json, 0)) return D5_EXIT_INPUT;

    d5_machine_info m;
    d5_status s = d5_machine_query(&m);
    if (s != D5_OK) return cli_fail("machine", s);
    d5_machine_peaks peaks;
    if (!no_measure) {
        d5_machine_measure_params mp = d5_machine_measure_default_params();
        mp.threads = threads;
        mp.max_time_s = seconds;
        cli_progress(1, 1, "measuring the FP32 and low-precision peaks and memory bandwidth");
        s = d5_machine_measure(&mp, &peaks);
        if (s != D5_OK) return cli_fail("machine", s);
    }
    s = d5_machine_print(stdout, &m, no_measure ? NULL : &peaks);
    if (s == D5_OK && json) {
        /* The machine's document, then the context and configuration of every --json. */
        char *tmp = cli_json_sibling(json);
        s = tmp ? d5_machine_write_json(&m, no_measure ? NULL : &peaks, tmp) : D5_ERR_NOMEM;
        if (s == D5_OK) s = cli_json_amend(&spec, NULL, tmp, json);
        free(tmp);
    }
    if (s != D5_OK) return cli_fail("machine", s);
    return D5_EXIT_OK;
}
