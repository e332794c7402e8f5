#include "support.h"

#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

Test(status, names_and_descriptions_come_from_one_list)
{
    cr_assert_str_eq(d5_status_name(D5_OK), "D5_OK");
    cr_assert_str_eq(d5_status_name(D5_ERR_IO), "D5_ERR_IO");
    cr_assert_str_eq(d5_status_str(D5_ERR_NOMEM), "out of memory");
    cr_assert_str_eq(d5_status_name(D5_ERR_TIMEOUT), "D5_ERR_TIMEOUT");
    cr_assert_str_eq(d5_status_str(D5_ERR_TIMEOUT), "timed out");
    cr_assert_eq(D5_ERR_TIMEOUT, D5_STATUS_COUNT - 1, "new statuses go at the end of the list");
    cr_assert_str_eq(d5_status_name((d5_status)999), "D5_UNKNOWN");
    cr_assert_str_eq(d5_status_str((d5_status)-1), "unknown status");
    for (int s = 0; s < D5_STATUS_COUNT; s++) {
        cr_assert(strncmp(d5_status_name((d5_status)s), "D5_", 3) == 0);
        cr_assert(strlen(d5_status_str((d5_status)s)) > 0);
    }
}

Test(status, detail_message_is_formatted_and_cleared)
{
    d5_status s = d5_error(D5_ERR_SHAPE, "node '%s' (%s): weight has %d dims, expected 4", "conv2",
                           "Conv", 3);
    cr_assert_eq(s, D5_ERR_SHAPE);
    cr_assert_str_eq(d5_last_error(), "node 'conv2' (Conv): weight has 3 dims, expected 4");
    d5_error_clear();
    cr_assert_str_eq(d5_last_error(), "");
}

Test(dtype, names_sizes_and_parsing)
{
    cr_assert_eq(d5_dtype_size(D5_F32), 4);
    cr_assert_eq(d5_dtype_size(D5_BF16), 2);
    cr_assert_eq(d5_dtype_size(D5_I64), 8);
    cr_assert_eq(d5_dtype_size(D5_DTYPE_INVALID), 0);
    cr_assert_str_eq(d5_dtype_name(D5_F64), "float64");
    d5_dtype t;
    cr_assert_eq(d5_dtype_parse("int8", &t), D5_OK);
    cr_assert_eq(t, D5_I8);
    cr_assert_eq(d5_dtype_parse("float128", &t), D5_ERR_NOTFOUND);
    cr_assert(strstr(d5_last_error(), "float128"));
}

Test(tensor, descriptors_are_checked)
{
    d5_tensor_desc d;
    int64_t shape[4] = {64, 3, 224, 224};
    cr_assert_eq(d5_tensor_desc_make(D5_F32, 4, shape, &d), D5_OK);
    cr_assert_eq(d5_tensor_desc_numel(&d), 64 * 3 * 224 * 224);
    size_t bytes;
    cr_assert_eq(d5_tensor_desc_bytes(&d, &bytes), D5_OK);
    cr_assert_eq(bytes, (size_t)64 * 3 * 224 * 224 * 4);
    char buf[64];
    d5_tensor_desc_format(&d, buf, sizeof buf);
    cr_assert_str_eq(buf, "float32[64,3,224,224]");

    cr_assert_eq(d5_tensor_desc_make(D5_F32, 9, shape, &d), D5_ERR_INVALID);
    int64_t neg[2] = {2, -1};
    cr_assert_eq(d5_tensor_desc_make(D5_F32, 2, neg, &d), D5_ERR_INVALID);
    cr_assert(strstr(d5_last_error(), "negative"));
    int64_t huge[3] = {INT64_C(1) << 40, INT64_C(1) << 40, 1 << 10};
    cr_assert_eq(d5_tensor_desc_make(D5_F64, 3, huge, &d), D5_OK);
    cr_assert_eq(d5_tensor_desc_bytes(&d, &bytes), D5_ERR_RANGE);

    d5_tensor_desc scalar;
    cr_assert_eq(d5_tensor_desc_make(D5_I32, 0, NULL, &scalar), D5_OK);
    cr_assert_eq(d5_tensor_desc_numel(&scalar), 1);
}

Test(tensor, alloc_is_zeroed_aligned_and_freed)
{
    d5_tensor_desc d;
    int64_t shape[2] = {3, 5};
    cr_assert_eq(d5_tensor_desc_make(D5_F32, 2, shape, &d), D5_OK);
    d5_tensor t;
    cr_assert_eq(d5_tensor_alloc(&d, &t), D5_OK);
    cr_assert_eq((uintptr_t)t.data % 64, 0);
    for (int i = 0; i < 15; i++) cr_assert_eq(((float *)t.data)[i], 0.0f);
    d5_tensor_free(&t);
    cr_assert_null(t.data);
    d5_tensor_free(&t); /* twice is harmless */
    d5_tensor_free(NULL);
}

Test(alloc, replaceable_allocator_sees_every_block_and_failures_are_reported)
{
    failing_alloc_install(0);
    d5_tensor_desc d;
    int64_t shape[1] = {16};
    cr_assert_eq(d5_tensor_desc_make(D5_F32, 1, shape, &d), D5_OK);
    d5_tensor t;
    cr_assert_eq(d5_tensor_alloc(&d, &t), D5_ERR_NOMEM);
    cr_assert(strstr(d5_last_error(), "float32[16]"));
    failing_alloc_install(-1);
    cr_assert_eq(d5_tensor_alloc(&d, &t), D5_OK);
    cr_assert_eq(failing_alloc_live(), 1);
    d5_tensor_free(&t);
    cr_assert_eq(failing_alloc_live(), 0);
    failing_alloc_remove();
}

Test(alloc, grow_keeps_the_elements_and_fails_cleanly)
{
    int *v = NULL;
    size_t cap = 0;
    for (int i = 0; i < 100; i++) {
        cr_assert_eq(d5_grow(&v, &cap, (size_t)i + 1, sizeof *v, "test ints"), D5_OK);
        cr_assert_geq(cap, (size_t)i + 1);
        v[i] = i;
    }
    for (int i = 0; i < 100; i++) cr_assert_eq(v[i], i, "element %d after growing", i);
    size_t before = cap;
    cr_assert_eq(d5_grow(&v, &cap, 10, sizeof *v, "test ints"), D5_OK);
    cr_assert_eq(cap, before, "room enough: nothing moves");
    int *kept = v;
    cr_assert_eq(d5_grow(&v, &cap, SIZE_MAX / 2, sizeof *v, "test ints"), D5_ERR_NOMEM);
    cr_assert_eq(d5_grow(&v, &cap, SIZE_MAX, 1, "test ints"), D5_ERR_NOMEM);
    cr_assert(strstr(d5_last_error(), "test ints"), "%s", d5_last_error());
    cr_assert_eq(v, kept);
    cr_assert_eq(cap, before);
    failing_alloc_install(0);
    cr_assert_eq(d5_grow(&v, &cap, cap + 1, sizeof *v, "test ints"), D5_ERR_NOMEM);
    failing_alloc_remove();
    cr_assert_eq(v, kept);
    cr_assert_eq(cap, before);
    cr_assert_eq(v[99], 99);
    d5_free(v);
}
