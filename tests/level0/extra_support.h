/* Helpers shared by the tests of ref/ops_extra.def (test_ref_extra_index.c,
 * test_ref_extra_math.c, test_ref_extra_training.c). */
#ifndef D5_TEST_EXTRA_SUPPORT_H
#define D5_TEST_EXTRA_SUPPORT_H

#include "more_support.h"

/* Runs `op` with every input known at create (float ones too, as constants
 * of a network are) and asserts success; the caller frees out[0..nout-1]. */
void run_given(const char *name, const d5_tensor *in, int32_t nin, const d5_attrs *attrs,
               d5_tensor *out, int32_t nout);
/* check() for an operator whose float inputs must be known at create; frees
 * the inputs. */
void check_given(const char *op, d5_tensor *in, int32_t nin, const d5_attrs *attrs, d5_dtype dt,
                 int32_t ndim, const int64_t *shape, const double *want);

#endif
