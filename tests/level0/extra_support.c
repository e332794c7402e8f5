/* Helpers shared by the tests of ref/ops_extra.def. */
#include "extra_support.h"

#include <criterion/criterion.h>

/* Runs `op` with every input known at create (float ones too, as constants
 * of a network are) and asserts success; the caller frees out[0..nout-1]. */
void run_given(const char *name, const d5_tensor *in, int32_t nin, const d5_attrs *attrs,
               d5_tensor *out, int32_t nout)
{
    const d5_op_desc *desc;
    d5_op *op;
    cr_assert_eq(d5_op_find(name, "ref", &desc), D5_OK);
    cr_assert_eq(d5_op_create(desc, in, nin, attrs, nout, &op), D5_OK, "%s: %s", name,
                 d5_last_error());
    for (int32_t i = 0; i < nout; i++)
        cr_assert_eq(d5_tensor_alloc(d5_op_output_desc(op, i), &out[i]), D5_OK);
    cr_assert_eq(d5_op_forward(op, in, out), D5_OK, "%s: %s", name, d5_last_error());
    d5_op_free(op);
}

/* check() for an operator whose float inputs must be known at create. */
void check_given(const char *op, d5_tensor *in, int32_t nin, const d5_attrs *attrs, d5_dtype dt,
                 int32_t ndim, const int64_t *shape, const double *want)
{
    d5_tensor y;
    run_given(op, in, nin, attrs, &y, 1);
    expect_tensor(&y, dt, ndim, shape, want, dt == D5_F32 ? 1e-6 : 1e-12, op);
    d5_tensor_free(&y);
    op_free_all(in, nin);
}
