/* d5 machine: what this machine is and what it measurably does. */
#include "output_options.h"

#include "d5/precision.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>

/* The GPU's peaks as text. */
static void print_gpu(const d5_gpu_peaks *g)
{
    printf("\nGPU peaks (%s; cuBLAS products of %d^3 timed with CUDA events, median and best):\n",
           g->device, (int)g->peak[0].size);
    for (int k = 0; k < D5_GPU_PEAK_KINDS; k++) {
        const d5_gpu_peak *p = &g->peak[k];
        if (p->measured)
            printf("  %-5s %9.1f %s  (best %.1f)\n", d5_gpu_peak_name(k), p->median * 1e-12,
                   k == D5_GPU_PEAK_INT8 ? "TOP/s  " : "TFLOP/s", p->best * 1e-12);
        else
            printf("  %-5s %s\n", d5_gpu_peak_name(k), p->note);
    }
    printf("  copy  %9.2f TB/s   (best %.2f; bytes read + written, %.0f MiB device to device)\n",
           g->bandwidth_median * 1e-12, g->bandwidth_best * 1e-12,
           (double)g->copy_bytes / (1 << 20));
}

/* Adds "gpu_peaks" to the JSON document at `path`. */
static d5_status write_gpu_json(const d5_gpu_peaks *g, const char *path)
{
    json_error_t e;
    json_t *root = json_load_file(path, 0, &e);
    if (!root) return d5_error(D5_ERR_IO, "machine: cannot read back %s: %s", path, e.text);
    json_t *o = json_object(), *peaks = json_object();
    json_object_set_new(o, "device", json_string(g->device));
    for (int k = 0; k < D5_GPU_PEAK_KINDS; k++) {
        const d5_gpu_peak *p = &g->peak[k];
        json_t *row = json_object();
        json_object_set_new(row, "measured", json_boolean(p->measured));
        json_object_set_new(row, "size", json_integer(p->size));
        if (p->measured) {
            json_object_set_new(row, "median_per_s", json_real(p->median));
            json_object_set_new(row, "best_per_s", json_real(p->best));
        } else {
            json_object_set_new(row, "note", json_string(p->note));
        }
        json_object_set_new(peaks, d5_gpu_peak_name(k), row);
    }
    json_object_set_new(o, "products", peaks);
    json_object_set_new(o, "copy_bytes", json_integer((json_int_t)g->copy_bytes));
    json_object_set_new(o, "bandwidth_median_bytes_per_s", json_real(g->bandwidth_median));
    json_object_set_new(o, "bandwidth_best_bytes_per_s", json_real(g->bandwidth_best));
    json_object_set_new(root, "gpu_peaks", o);
    /* Written beside, then renamed over: never a half-written file. */
    char *tmp = cli_json_sibling(path);
    int rc = tmp ? json_dump_file(root, tmp, JSON_INDENT(2)) : -1;
    json_decref(root);
    if (rc == 0 && rename(tmp, path) != 0) rc = -1;
    if (rc != 0 && tmp) remove(tmp);
    free(tmp);
    return rc == 0 ? D5_OK : d5_error(D5_ERR_IO, "machine: cannot write %s", path);
}

int cmd_machine(int argc, char **argv)
{
    cli_outputs o = {0};
    int threads = 0, no_measure = 0, gpu_size = 8192;
    double seconds = 1.0;
    const cli_opt opts[] = {
        CLI_OUTPUT_JSON_AS(&o, "also write the report as JSON to FILE"),
        {"threads", CLI_INT, &threads, "N", "threads for the all-core figures (default: all CPUs)",
         0, 4096},
        {"time", CLI_DOUBLE, &seconds, "S",
         "time budget of each measurement in seconds (default 1)", 0.01, 600},
        {"no-measure", CLI_FLAG, &no_measure, NULL, "describe the machine only, measure nothing", 0,
         0},
        {"gpu-size", CLI_INT, &gpu_size, "N",
         "size of the GPU's square products for its peaks (default 8192)", 256, 32768},
    };
    const cli_spec spec = {CLI_SPEC(
        "machine", "[--json FILE] [--threads N] [--time S] [--no-measure] [--gpu-size N]",
        "Describes the CPU, caches, memory, OpenBLAS and CUDA devices (or why there are none),\n"
        "then measures the FP32 FMA peak of one core and of all cores, the low-precision peaks\n"
        "of the instructions this CPU has (bf16 dot: AVX512_BF16 vdpbf16ps; f16 fma:\n"
        "AVX512_FP16; int8 dot: AVX512_VNNI or AVX-VNNI vpdpbusd; AMX tdpbf16ps and tdpbusd,\n"
        "once Linux permits the tile state), each counting 2 operations per multiply-add as a\n"
        "GEMM does, and the memory bandwidth of a STREAM-triad-like kernel. Each figure is the\n"
        "median over repetitions with its 95% confidence interval, and the best run; later\n"
        "commands use them for % of peak, each against the peak of its precision.\n\n"
        "Where the cuda backend can run, the GPU's peaks too: square products on cuBLAS in\n"
        "FP32 (no TF32), TF32, BF16, FP16, FP8 (cuBLASLt, E4M3) and INT8, each timed with\n"
        "CUDA events after warm-up (median and best), and the device memory bandwidth of a\n"
        "device-to-device copy (bytes read plus written).",
        opts)};
    int rc = cli_parse(&spec, argc, argv);
    if (rc >= 0) return rc;
    cli_echo(stdout, &spec);
    if (!cli_outputs_check("machine", &o)) return D5_EXIT_INPUT;

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
    d5_gpu_peaks gpu;
    int have_gpu = 0;
    if (s == D5_OK && !no_measure && d5_backend_available("cuda", NULL, 0)) {
        cli_progress(1, 1, "measuring the GPU's peaks (products of %d^3) and bandwidth", gpu_size);
        s = d5_gpu_peaks_measure(gpu_size, seconds, &gpu);
        have_gpu = s == D5_OK;
        if (have_gpu) print_gpu(&gpu);
    }
    if (s == D5_OK && o.json) {
        /* The machine's document, then the context and configuration of every --json. */
        char *tmp = cli_json_sibling(o.json);
        s = tmp ? d5_machine_write_json(&m, no_measure ? NULL : &peaks, tmp) : D5_ERR_NOMEM;
        if (s == D5_OK) s = cli_json_amend(&spec, NULL, tmp, o.json);
        if (s == D5_OK && have_gpu) s = write_gpu_json(&gpu, o.json);
        free(tmp);
    }
    if (s != D5_OK) return cli_fail("machine", s);
    return D5_EXIT_OK;
}
