/* The backend registry: its table agrees with the operator registry, names
 * that are no backend and backends that cannot run here are refused with the
 * lists a user needs, and the default preference list resolves. */
#include "support.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

TestSuite(backends, .timeout = D5_TIMEOUT(60));

Test(backends, table_agrees_with_the_operator_registry)
{
    const char *expected[] = {"ref", "blas", "dnnl", "cuda"};
    cr_assert_geq(d5_backend_count(), 4);
    for (size_t k = 0; k < 4; k++) {
        d5_backend_info b;
        cr_assert_eq(d5_backend_find(expected[k], &b), D5_OK, "%s", d5_last_error());
        cr_assert_str_eq(b.name, expected[k]);
    }
    for (size_t i = 0; i < d5_backend_count(); i++) {
        d5_backend_info b;
        cr_assert_eq(d5_backend_at(i, &b), D5_OK);
        cr_assert_str_eq(b.name, d5_backend_name(i));
        cr_assert(b.description && b.description[0], "%s", b.name);
        cr_assert(b.dtypes && strstr(b.dtypes, "float32"), "%s", b.name);
        int32_t ops = 0, device = 0;
        for (size_t j = 0; j < d5_op_count(); j++)
            if (strcmp(d5_op_at(j)->backend, b.name) == 0) {
                ops++;
                device += (d5_op_at(j)->flags & D5_OP_CUDA) != 0;
            }
        cr_assert_eq(b.operators, ops, "%s", b.name);
        cr_assert_eq(b.device_operators, device, "%s", b.name);
        char why[256];
        cr_assert_eq(d5_backend_available(b.name, why, sizeof why), b.available, "%s", b.name);
        if (b.available)
            cr_assert_str_eq(b.reason, "", "%s", b.name);
        else
            cr_assert(b.reason[0] && strcmp(b.reason, why) == 0, "%s: '%s' '%s'", b.name, b.reason,
                      why);
    }
    /* Every built-in operator belongs to a backend of the table. */
    for (size_t j = 0; j < d5_op_count(); j++) {
        d5_backend_info b;
        cr_assert_eq(d5_backend_find(d5_op_at(j)->backend, &b), D5_OK, "%s", d5_last_error());
    }
    d5_backend_info ref;
    cr_assert_eq(d5_backend_find("ref", &ref), D5_OK);
    cr_assert(ref.available && ref.operators > 100, "%d", (int)ref.operators);
    d5_backend_info b;
    cr_assert_eq(d5_backend_at(d5_backend_count(), &b), D5_ERR_RANGE);
    cr_assert_null(d5_backend_name(d5_backend_count()));
}

Test(backends, unknown_names_are_unsupported_and_named)
{
    cr_assert_eq(d5_backend_check_list("dnn", 0), D5_ERR_UNSUPPORTED);
    const char *e = d5_last_error();
    cr_assert(strstr(e, "unknown backend 'dnn'"), "%s", e);
    cr_assert(strstr(e, "backends: ref, blas, dnnl, cuda"), "%s", e);
    cr_assert(strstr(e, "available here: ref"), "%s", e);
    cr_assert_eq(d5_backend_check_list("ref,cudaa", 1), D5_ERR_UNSUPPORTED);
    cr_assert(strstr(d5_last_error(), "'cudaa'"), "%s", d5_last_error());
    cr_assert_eq(d5_backend_check_list("Ref", 0), D5_ERR_UNSUPPORTED); /* names are exact */
    cr_assert_eq(d5_backend_check_list("ref, blas", 0), D5_ERR_UNSUPPORTED);
    cr_assert(strstr(d5_last_error(), "' blas'"), "%s", d5_last_error());
    d5_backend_info b;
    cr_assert_eq(d5_backend_find("dnn", &b), D5_ERR_UNSUPPORTED);
    cr_assert(strstr(d5_last_error(), "'dnn'"), "%s", d5_last_error());
    char why[256];
    cr_assert_not(d5_backend_available("dnn", why, sizeof why));
    cr_assert(strstr(why, "unknown backend 'dnn'"), "%s", why);
}

/* Without a device, cuda is a known backend that cannot run: NODEVICE with
 * the probe's reason, never "unknown", never accepted. */
Test(backends, unavailable_cuda_is_refused_with_the_reason)
{
    d5_backend_info cuda;
    cr_assert_eq(d5_backend_find("cuda", &cuda), D5_OK);
    if (cuda.available) cr_skip_test("a CUDA device is present");
    cr_assert_eq(d5_backend_check_list("cuda", 0), D5_ERR_NODEVICE);
    const char *e = d5_last_error();
    cr_assert(strstr(e, "backend 'cuda' is unavailable here: "), "%s", e);
    cr_assert(strstr(e, cuda.reason), "%s", e);
    cr_assert(strstr(e, "available here: ref"), "%s", e);
    cr_assert_eq(d5_backend_check_list("ref,cuda", 1), D5_ERR_NODEVICE);
    cr_assert(strstr(cuda.reason, "no CUDA device") || strstr(cuda.reason, "built without"), "%s",
              cuda.reason);
}

Test(backends, default_list_resolves)
{
    const char *list = d5_backend_default_list();
    cr_assert_not_null(list);
    char buf[256], avail[256] = "";
    snprintf(buf, sizeof buf, "%s", list);
    int items = 0, available = 0, has_ref = 0;
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        d5_backend_info b;
        cr_assert_eq(d5_backend_find(t, &b), D5_OK, "%s", d5_last_error());
        items++;
        has_ref |= strcmp(t, "ref") == 0;
        if (!b.available) continue;
        snprintf(avail + strlen(avail), sizeof avail - strlen(avail), "%s%s", available ? "," : "",
                 t);
        available++;
    }
    cr_assert_gt(items, 0);
    cr_assert(has_ref, "%s", list);
    /* What runs of the default here is a valid explicit list. */
    cr_assert_gt(available, 0);
    cr_assert_eq(d5_backend_check_list(avail, 0), D5_OK, "%s: %s", avail, d5_last_error());
    if (available == items) cr_assert_eq(d5_backend_check_list(list, 0), D5_OK);
}

Test(backends, every_available_backend_is_accepted)
{
    for (size_t i = 0; i < d5_backend_count(); i++) {
        d5_backend_info b;
        cr_assert_eq(d5_backend_at(i, &b), D5_OK);
        d5_status s = d5_backend_check_list(b.name, 0);
        if (b.available)
            cr_assert_eq(s, D5_OK, "%s: %s", b.name, d5_last_error());
        else
            cr_assert_eq(s, D5_ERR_NODEVICE, "%s", b.name);
    }
    cr_assert_eq(d5_backend_check_list("blas,ref", 0), D5_OK, "%s", d5_last_error());
}

Test(backends, malformed_lists_are_invalid)
{
    const char *empty[] = {"", "ref,", ",ref", "ref,,blas"};
    for (size_t i = 0; i < sizeof empty / sizeof empty[0]; i++) {
        cr_assert_eq(d5_backend_check_list(empty[i], 1), D5_ERR_INVALID, "'%s'", empty[i]);
        cr_assert(strstr(d5_last_error(), "empty"), "%s", d5_last_error());
    }
    cr_assert_eq(d5_backend_check_list("ref,blas,ref", 0), D5_ERR_INVALID);
    cr_assert(strstr(d5_last_error(), "backend 'ref' appears twice"), "%s", d5_last_error());
    cr_assert_eq(d5_backend_check_list(NULL, 1), D5_ERR_INVALID);
    cr_assert_eq(d5_backend_check_list("auto", 1), D5_OK);
    cr_assert_eq(d5_backend_check_list("auto", 0), D5_ERR_INVALID);
    cr_assert(strstr(d5_last_error(), "'auto' is not accepted here"), "%s", d5_last_error());
    cr_assert_eq(d5_backend_check_list("auto,ref", 1), D5_ERR_INVALID);
    cr_assert(strstr(d5_last_error(), "'auto' stands alone"), "%s", d5_last_error());
}
