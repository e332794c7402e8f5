/* The machine description and peaks as text and JSON. */
#include "d5/machine.h"
#include "d5/report.h"
#include "json.h"

#include <string.h>

static void print_rate(FILE *f, const char *what, const d5_stats *s, const char *unit,
                       const char *note)
{
    fprintf(f, "  %-26s: %.1f %s [%.1f, %.1f] median of %zu, best %.1f%s%s\n", what, s->median,
            unit, s->ci_low, s->ci_high, s->n, s->max, note[0] ? "  " : "", note);
}

/* The low-precision peaks that were asked for: two rates, or why there are none. */
static void print_lowp(FILE *f, const d5_machine_peaks *p)
{
    char note[128], what[64];
    for (int i = 0; i < D5_PEAK_KINDS; i++) {
        const d5_peak_lowp *l = &p->lowp[i];
        if (!l->name || (!l->measured && strcmp(l->reason, "not measured") == 0)) continue;
        if (!l->measured) {
            snprintf(what, sizeof what, "%s peak", l->name);
            fprintf(f, "  %-26s: %s\n", what, l->reason);
            continue;
        }
        const char *op = strcmp(l->unit, "GOP/s") == 0 ? "OP" : "FLOP";
        snprintf(note, sizeof note, "(%s, %s)", l->instruction, l->isa);
        if (l->ops_per_tick > 0)
            snprintf(note, sizeof note, "(%s, %s; %.0f %s per TSC tick)", l->instruction, l->isa,
                     l->ops_per_tick, op);
        snprintf(what, sizeof what, "%s peak, 1 core", l->name);
        print_rate(f, what, &l->core, l->unit, note);
        snprintf(what, sizeof what, "%s peak, %d threads", l->name, p->threads);
        print_rate(f, what, &l->all, l->unit, "");
    }
}

d5_status d5_machine_print(FILE *f, const d5_machine_info *m, const d5_machine_peaks *p)
{
    if (!f || !m) return d5_error(D5_ERR_INVALID, "d5_machine_print: NULL argument");
    char a[32], b[32];
    fprintf(f, "  %-26s: %s\n", "host", m->hostname);
    fprintf(f, "  %-26s: %s\n", "kernel", m->kernel);
    fprintf(f, "  %-26s: %s (%s)\n", "cpu", m->cpu_model, m->cpu_vendor);
    fprintf(f, "  %-26s: %d logical, %d physical cores; %s\n", "cpus", m->logical_cpus,
            m->physical_cores, m->isa[0] ? m->isa : "no vector extensions found");
    fprintf(f, "  %-26s: %s\n", "low-precision extensions", m->isa_lowp[0] ? m->isa_lowp : "none");
    if (m->invariant_tsc)
        fprintf(f, "  %-26s: invariant, %.3f GHz\n", "time-stamp counter", m->tsc_ghz);
    else
        fprintf(f, "  %-26s: not invariant (timers use CLOCK_MONOTONIC)\n", "time-stamp counter");
    fprintf(f, "  %-26s:", "caches");
    for (int i = 0; i < m->ncaches; i++) {
        d5_format_bytes((double)m->caches[i].size_bytes, a, sizeof a);
        fprintf(f, "%s L%d%s %s (shared by %d)", i ? "," : "", m->caches[i].level,
                strcmp(m->caches[i].type, "Data") == 0          ? "d"
                : strcmp(m->caches[i].type, "Instruction") == 0 ? "i"
                                                                : "",
                a, m->caches[i].shared_by);
    }
    fprintf(f, "%s\n", m->ncaches ? "" : " unknown");
    d5_format_bytes((double)m->memory_bytes, a, sizeof a);
    d5_format_bytes((double)m->memory_available_bytes, b, sizeof b);
    fprintf(f, "  %-26s: %s (%s available)\n", "memory", a, b);
    fprintf(f, "  %-26s: %s; core %s; %d threads\n", "openblas", m->openblas_config,
            m->openblas_core, m->openblas_threads);
    fprintf(f, "  %-26s: %s\n", "cuda", m->cuda_status);
    for (int i = 0; i < m->cuda_device_count; i++) {
        d5_format_bytes((double)m->cuda[i].memory_bytes, a, sizeof a);
        fprintf(f, "  %-26s: %s, compute %d.%d, %d SMs, %.0f MHz, %s\n", "  device",
                m->cuda[i].name, m->cuda[i].major, m->cuda[i].minor, m->cuda[i].multiprocessors,
                m->cuda[i].clock_mhz, a);
    }
    if (p) {
        char note[96], what[64];
        snprintf(note, sizeof note, "(%s kernel%s)", p->fma_isa, "");
        if (p->flop_per_cycle_core > 0)
            snprintf(note, sizeof note, "(%s kernel; %.1f FLOP per TSC tick)", p->fma_isa,
                     p->flop_per_cycle_core);
        print_rate(f, "fp32 fma peak, 1 core", &p->fp32_core, "GFLOP/s", note);
        snprintf(what, sizeof what, "fp32 fma peak, %d threads", p->threads);
        print_rate(f, what, &p->fp32_all, "GFLOP/s", "");
        print_lowp(f, p);
        d5_format_bytes((double)p->triad_bytes, a, sizeof a);
        snprintf(note, sizeof note, "(triad over %s, %d threads)", a, p->threads);
        print_rate(f, "memory bandwidth", &p->triad, "GB/s", note);
        if (p->contention.known)
            fprintf(f, "%-28s: %s%s\n", "cores while measuring", p->contention.reason,
                    p->contention.contended ? " -- the peaks are low, every %peak high" : "");
    }
    return ferror(f) ? d5_error(D5_ERR_IO, "cannot write the machine report") : D5_OK;
}

static json_t *machine_json(const d5_machine_info *m)
{
    json_t *caches = json_array(), *cuda = json_array();
    for (int i = 0; caches && i < m->ncaches; i++)
        json_array_append_new(caches, json_pack("{s:i, s:s, s:I, s:i}", "level", m->caches[i].level,
                                                "type", m->caches[i].type, "size_bytes",
                                                (json_int_t)m->caches[i].size_bytes, "shared_by",
                                                m->caches[i].shared_by));
    for (int i = 0; cuda && i < m->cuda_device_count; i++)
        json_array_append_new(
            cuda, json_pack("{s:s, s:i, s:i, s:I, s:i, s:f}", "name", m->cuda[i].name, "major",
                            m->cuda[i].major, "minor", m->cuda[i].minor, "memory_bytes",
                            (json_int_t)m->cuda[i].memory_bytes, "multiprocessors",
                            m->cuda[i].multiprocessors, "clock_mhz", m->cuda[i].clock_mhz));
    return json_pack(
        "{s:s, s:s, s:s, s:s, s:s, s:s, s:i, s:i, s:b, s:f, s:o, s:I, s:I, s:{s:s, s:s, s:i},"
        " s:{s:b, s:i, s:s, s:o}}",
        "hostname", m->hostname, "kernel", m->kernel, "cpu_model", m->cpu_model, "cpu_vendor",
        m->cpu_vendor, "isa", m->isa, "isa_lowp", m->isa_lowp, "logical_cpus", m->logical_cpus,
        "physical_cores", m->physical_cores, "invariant_tsc", m->invariant_tsc, "tsc_ghz",
        m->tsc_ghz, "caches", caches, "memory_bytes", (json_int_t)m->memory_bytes,
        "memory_available_bytes", (json_int_t)m->memory_available_bytes, "openblas", "config",
        m->openblas_config, "core", m->openblas_core, "threads", m->openblas_threads, "cuda",
        "built", m->cuda_built, "device_count", m->cuda_device_count, "status", m->cuda_status,
        "devices", cuda);
}

/* {"bf16_dot": {...}, ...}: every kernel, with its rates or the reason it has none. */
static json_t *lowp_json(const d5_machine_peaks *p)
{
    json_t *o = json_object();
    for (int i = 0; o && i < D5_PEAK_KINDS; i++) {
        const d5_peak_lowp *l = &p->lowp[i];
        if (!l->name) continue;
        char key[32];
        snprintf(key, sizeof key, "%s", l->name);
        key[strcspn(key, " ")] = '_';
        json_t *v =
            l->measured
                ? json_pack("{s:b, s:s, s:s, s:s, s:s, s:o, s:o, s:f}", "measured", 1, "dtype",
                            d5_dtype_name(l->dtype), "isa", l->isa, "instruction", l->instruction,
                            "unit", l->unit, "core", d5__json_stats(&l->core), "all",
                            d5__json_stats(&l->all), "ops_per_tick", l->ops_per_tick)
                : json_pack("{s:b, s:s, s:s, s:s}", "measured", 0, "dtype", d5_dtype_name(l->dtype),
                            "unit", l->unit, "reason", l->reason);
        if (!d5__json_set(o, key, v)) {
            json_decref(o);
            return NULL;
        }
    }
    return o;
}

static json_t *peaks_json(const d5_machine_peaks *p)
{
    const d5_contention *c = &p->contention;
    return json_pack("{s:s, s:i, s:{s:s, s:o}, s:{s:s, s:o}, s:f, s:{s:s, s:I, s:o}, "
                     "s:{s:b, s:b, s:s, s:f, s:f}, s:o}",
                     "fma_isa", p->fma_isa, "threads", p->threads, "fp32_core", "unit", "GFLOP/s",
                     "stats", d5__json_stats(&p->fp32_core), "fp32_all", "unit", "GFLOP/s", "stats",
                     d5__json_stats(&p->fp32_all), "flop_per_cycle_core", p->flop_per_cycle_core,
                     "triad", "unit", "GB/s", "bytes", (json_int_t)p->triad_bytes, "stats",
                     d5__json_stats(&p->triad), "contention", "known", c->known, "contended",
                     c->contended, "detail", c->reason, "others_cores", c->others_cores,
                     "steal_fraction", c->steal_fraction, "lowp", lowp_json(p));
}

d5_status d5_machine_write_json(const d5_machine_info *m, const d5_machine_peaks *p,
                                const char *path)
{
    if (!m || !path) return d5_error(D5_ERR_INVALID, "d5_machine_write_json: NULL argument");
    json_t *doc = json_pack("{s:o, s:o, s:o}", "context", d5__json_context(), "machine",
                            machine_json(m), "peaks", p ? peaks_json(p) : json_null());
    return d5__json_write(doc, path, JSON_INDENT(2));
}
