#include "op_support.h"
#include "support.h"

#include <criterion/criterion.h>
#include <string.h>

Test(attrs, typed_getters)
{
    const int64_t pads[4] = {1, 1, 2, 2};
    d5_attr items[] = {attr_int("group", 2), attr_float("alpha", 0.5), attr_string("mode", "x"),
                       attr_ints("pads", pads, 4)};
    d5_attrs a = {items, 4};
    int64_t i;
    double f;
    const char *s;
    const int64_t *v;
    int64_t n;
    cr_assert_eq(d5_attrs_int(&a, "group", 1, &i), D5_OK);
    cr_assert_eq(i, 2);
    cr_assert_eq(d5_attrs_int(&a, "missing", 7, &i), D5_OK);
    cr_assert_eq(i, 7);
    cr_assert_eq(d5_attrs_float(&a, "alpha", 1, &f), D5_OK);
    cr_assert_eq(f, 0.5);
    cr_assert_eq(d5_attrs_string(&a, "mode", "", &s), D5_OK);
    cr_assert_str_eq(s, "x");
    cr_assert_eq(d5_attrs_ints(&a, "pads", &v, &n), D5_OK);
    cr_assert_eq(n, 4);
    cr_assert_eq(v[2], 2);
    cr_assert_eq(d5_attrs_int(&a, "alpha", 0, &i), D5_ERR_INVALID);
    cr_assert_str_eq(d5_last_error(), "attribute 'alpha' is of type float, expected int");
    cr_assert_eq(d5_attrs_ints(NULL, "pads", &v, &n), D5_OK);
    cr_assert_eq(n, 0);
}

Test(registry, lookups_name_what_is_missing)
{
    const d5_op_desc *d;
    cr_assert_eq(d5_op_find("Gemm", "ref", &d), D5_OK);
    cr_assert_str_eq(d->name, "Gemm");
    cr_assert_eq(d->abi_version, D5_OP_ABI_VERSION);
    cr_assert(d->flags & D5_OP_HAS_BACKWARD);
    cr_assert_eq(d5_op_find("NoSuchOp", "ref", &d), D5_ERR_UNSUPPORTED);
    cr_assert(strstr(d5_last_error(), "NoSuchOp"));
    cr_assert_eq(d5_op_find("Relu", "nonesuch", &d), D5_ERR_UNSUPPORTED);
    cr_assert(strstr(d5_last_error(), "has no nonesuch backend (it has: "), "%s", d5_last_error());
    cr_assert_gt(d5_op_count(), 0);
    for (size_t i = 0; i < d5_op_count(); i++) {
        const d5_op_desc *o = d5_op_at(i);
        cr_assert_eq(o->abi_version, D5_OP_ABI_VERSION);
        cr_assert(o->min_inputs <= o->max_inputs && o->min_outputs <= o->max_outputs, "%s",
                  o->name);
        cr_assert_not_null(o->create);
        cr_assert_not_null(o->forward);
    }
    char why[256];
    cr_assert(d5_backend_available("ref", why, sizeof why));
    cr_assert_not(d5_backend_available("tpu", why, sizeof why));
    cr_assert(strstr(why, "unknown backend 'tpu'"));
}

Test(instance, counts_and_shapes_are_checked)
{
    const d5_op_desc *d;
    cr_assert_eq(d5_op_find("Gemm", "ref", &d), D5_OK);
    d5_tensor_desc in[2];
    in[0] = op_fdesc(2, SHAPE(2, 3));
    in[1] = op_fdesc(2, SHAPE(4, 5));
    d5_op *op;
    cr_assert_eq(d5_op_create_desc(d, in, 2, NULL, 0, &op), D5_ERR_SHAPE);
    cr_assert(strstr(d5_last_error(), "Gemm: A' is 2x3 but B' is 4x5"), "%s", d5_last_error());
    cr_assert_eq(d5_op_create_desc(d, in, 1, NULL, 0, &op), D5_ERR_INVALID);
    cr_assert(strstr(d5_last_error(), "takes 2..3 inputs, got 1"));
    in[1] = op_fdesc(2, SHAPE(3, 5));
    cr_assert_eq(d5_op_create_desc(d, in, 2, NULL, 0, &op), D5_OK);
    cr_assert_eq(d5_op_output_desc(op, 0)->shape[0], 2);
    cr_assert_eq(d5_op_output_desc(op, 0)->shape[1], 5);
    double flops, bytes;
    d5_op_cost(op, &flops, &bytes);
    cr_assert_eq(flops, 2.0 * 2 * 5 * 3);
    cr_assert_eq(bytes, 4.0 * (6 + 15 + 10));
    d5_tensor a = tf32(2, SHAPE(2, 3), NULL), b = tf32(2, SHAPE(3, 4), NULL),
              y = tf32(2, SHAPE(2, 5), NULL);
    d5_tensor ins[2] = {a, b};
    cr_assert_eq(d5_op_forward(op, ins, &y), D5_ERR_SHAPE);
    cr_assert(strstr(d5_last_error(), "input 1 is float32[3,4], created for float32[3,5]"), "%s",
              d5_last_error());
    d5_op_free(op);
    d5_tensor_free(&a);
    d5_tensor_free(&b);
    d5_tensor_free(&y);
}

static d5_status bad_create(const d5_op_create_args *args, void **s)
{
    (void)args;
    (void)s;
    return D5_OK;
}
static d5_status bad_forward(void *s, const d5_op_call *call)
{
    (void)call;
    (void)s;
    return D5_OK;
}

Test(instance, another_abi_version_is_refused)
{
    /* clang-format off */
    d5_op_desc d = {
        .abi_version = D5_OP_ABI_VERSION + 1, .flags = 0, .name = "Old", .backend = "custom",
        .min_inputs = 0, .max_inputs = 1, .min_outputs = 0, .max_outputs = 1, .create = bad_create,
        .forward = bad_forward};
    /* clang-format on */
    d5_op *op;
    cr_assert_eq(d5_op_create_desc(&d, NULL, 0, NULL, 0, &op), D5_ERR_UNSUPPORTED);
    cr_assert(strstr(d5_last_error(), "operator table built against operator ABI 3, newer than "
                                      "the ABI 2 this d5 loads"),
              "%s", d5_last_error());
}

Test(library, unloadable_libraries_are_reported)
{
    d5_op_library *lib;
    cr_assert_eq(d5_op_library_open("/nonexistent/libop.so", &lib), D5_ERR_IO);
    cr_assert(strstr(d5_last_error(), "/nonexistent/libop.so"));
    /* A real shared object without the entry symbol. */
    cr_assert_eq(d5_op_library_open("libm.so.6", &lib), D5_ERR_IO); /* bare names are paths */
}

/* A table that declares another ABI version is refused on that version alone
 * (once read after dlclose: signal 11). */
Test(library, a_table_of_another_abi_is_refused)
{
    d5_op_library *lib = NULL;
    cr_assert_eq(d5_op_library_open(D5_FUTURE_ABI_LIB, &lib), D5_ERR_UNSUPPORTED, "%s",
                 d5_last_error());
    cr_assert(strstr(d5_last_error(), "operator 0 was built against operator ABI 99, newer than "
                                      "the ABI 2 this d5 loads"),
              "%s", d5_last_error());
    cr_assert(strstr(d5_last_error(), D5_FUTURE_ABI_LIB), "%s", d5_last_error());
    cr_assert_null(lib);
}

/* A library built against operator ABI 1 (the tests' fixture declares that
 * table itself) is refused with a status that says how to rebuild it; none of
 * its functions runs. */
Test(library, a_library_of_abi_1_is_refused_with_how_to_rebuild_it)
{
    d5_op_library *lib = NULL;
    cr_assert_eq(d5_op_library_open(D5_ABI_V1_LIB, &lib), D5_ERR_UNSUPPORTED, "%s",
                 d5_last_error());
    const char *e = d5_last_error();
    cr_assert(strstr(e, "operator library '" D5_ABI_V1_LIB "' was built against operator ABI 1; "
                        "d5 loads ABI 2: rebuild it against this d5's include/d5/operator.h"),
              "%s", e);
    cr_assert(strstr(e, "d5_op_call") && strstr(e, "docs/level0.md"), "%s", e);
    cr_assert_null(lib);
}

/* An entry point that returns no list with a count of 3 is refused, not read. */
Test(library, an_entry_without_a_list_is_refused)
{
    d5_op_library *lib = NULL;
    cr_assert_eq(d5_op_library_open(D5_BAD_ENTRY_LIB, &lib), D5_ERR_FORMAT, "%s", d5_last_error());
    cr_assert(strstr(d5_last_error(), "no list with a count of 3"), "%s", d5_last_error());
    cr_assert_null(lib);
}

Test(rng, reproducible_streams)
{
    d5_rng a, b;
    d5_rng_seed(&a, 42);
    d5_rng_seed(&b, 42);
    for (int i = 0; i < 100; i++) cr_assert_eq(d5_rng_next(&a), d5_rng_next(&b));
    double sum = 0;
    for (int i = 0; i < 10000; i++) {
        double u = d5_rng_uniform(&a);
        cr_assert(u >= 0 && u < 1);
        sum += u;
    }
    cr_assert(sum / 10000 > 0.48 && sum / 10000 < 0.52);
    for (int i = 0; i < 1000; i++) cr_assert_lt(d5_rng_below(&a, 7), 7);
}

/* One table holds the operators' properties for the graph layers. */
Test(registry, operator_properties_come_from_one_table)
{
    d5_op_meta m;
    d5_op_meta_get("Reshape", &m);
    cr_assert(m.view);
    d5_op_meta_get("BatchNormalization", &m);
    cr_assert_not(m.view);
    cr_assert_eq(m.first_setting, 3);
    cr_assert_eq(m.last_setting, 4);
    d5_op_meta_get("Conv", &m);
    cr_assert_not(m.view);
    cr_assert_eq(m.first_setting, -1);
    d5_op_meta_get(NULL, &m);
    cr_assert_eq(m.first_setting, -1);
}
