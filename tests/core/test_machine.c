#include "support.h"

#include <criterion/criterion.h>
#include <string.h>

Test(machine, query_describes_this_machine)
{
    d5_machine_info m;
    cr_assert_eq(d5_machine_query(&m), D5_OK);
    cr_assert_geq(m.logical_cpus, 1);
    cr_assert_geq(m.physical_cores, 1);
    cr_assert_leq(m.physical_cores, m.logical_cpus);
    cr_assert(strlen(m.cpu_model) > 0);
    cr_assert_gt(m.memory_bytes, 0);
    cr_assert(strstr(m.openblas_config, "OpenBLAS"));
    cr_assert(strlen(m.cuda_status) > 0, "a reason must be given when there are no devices");
    if (m.cuda_device_count == 0)
        cr_assert(strstr(m.cuda_status, "CUDA") || strstr(m.cuda_status, "cuda"));
    for (int i = 0; i < m.ncaches; i++) {
        cr_assert(m.caches[i].level >= 1 && m.caches[i].level <= 4);
        cr_assert_gt(m.caches[i].size_bytes, 0);
    }
    if (m.invariant_tsc) cr_assert(m.tsc_ghz > 0.1 && m.tsc_ghz < 10);
}

Test(machine, measure_gives_positive_rates)
{
    d5_machine_measure_params p = d5_machine_measure_default_params();
    p.max_time_s = 0.05;
    p.threads = 2;
    p.triad_bytes = 24u << 20;
    d5_machine_peaks r;
    cr_assert_eq(d5_machine_measure(&p, &r), D5_OK);
    cr_assert_gt(r.fp32_core.median, 0);
    cr_assert_gt(r.fp32_all.median, 0);
    cr_assert_gt(r.triad.median, 0);
    cr_assert_eq(r.threads, 2);
    cr_assert_eq(r.triad_bytes, (size_t)(24u << 20) / 24 * 24);
    cr_assert_not_null(r.fma_isa);
    cr_assert_geq(r.fp32_core.n, 10);
}

Test(machine, bad_parameters)
{
    d5_machine_measure_params p = d5_machine_measure_default_params();
    d5_machine_peaks r;
    p.threads = -1;
    cr_assert_eq(d5_machine_measure(&p, &r), D5_ERR_INVALID);
    p = d5_machine_measure_default_params();
    p.max_time_s = 0;
    cr_assert_eq(d5_machine_measure(&p, &r), D5_ERR_INVALID);
    p = d5_machine_measure_default_params();
    p.triad_bytes = 100;
    p.max_time_s = 0.01;
    cr_assert_eq(d5_machine_measure(&p, &r), D5_ERR_INVALID);
    cr_assert(strstr(d5_last_error(), "too small"));
}
