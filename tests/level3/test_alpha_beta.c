/* The alpha-beta fit (no MPI needed). */
#include "d5/distributed.h"

#include <criterion/criterion.h>
#include <math.h>

Test(alpha_beta, recovers_an_exact_line)
{
    double s[8], t[8];
    for (int i = 0; i < 8; i++) {
        s[i] = (double)(1u << (3 * i));
        t[i] = 2e-6 + 1e-10 * s[i];
    }
    d5_alpha_beta f;
    cr_assert_eq(d5_alpha_beta_fit(s, t, 8, &f), D5_OK);
    cr_expect_float_eq(f.alpha_s, 2e-6, 1e-15);
    cr_expect_float_eq(f.beta_s_per_byte, 1e-10, 1e-19);
    cr_expect_float_eq(f.r2, 1.0, 1e-12);
    cr_expect_eq(f.n, 8);
}

Test(alpha_beta, weighs_small_messages_by_relative_error)
{
    /* 10% noise alternating in sign: the latency stays within 10% of the
     * truth although the largest time is 10^4 times the smallest. */
    double s[12], t[12];
    for (int i = 0; i < 12; i++) {
        s[i] = (double)(1u << (2 * i));
        t[i] = (1e-6 + 1e-10 * s[i]) * (i % 2 ? 1.1 : 0.9);
    }
    d5_alpha_beta f;
    cr_assert_eq(d5_alpha_beta_fit(s, t, 12, &f), D5_OK);
    cr_expect(fabs(f.alpha_s / 1e-6 - 1) < 0.1, "alpha %g", f.alpha_s);
    cr_expect(fabs(f.beta_s_per_byte / 1e-10 - 1) < 0.1, "beta %g", f.beta_s_per_byte);
    cr_expect(f.r2 > 0.9 && f.r2 < 1, "r2 %g", f.r2);
}

Test(alpha_beta, refuses_what_cannot_be_fitted)
{
    double s[3] = {8, 8, 8}, t[3] = {1e-6, 2e-6, 3e-6}, bad[3] = {1e-6, 0, 1e-6};
    double s2[3] = {1, 2, 3};
    d5_alpha_beta f;
    cr_expect_eq(d5_alpha_beta_fit(s, t, 1, &f), D5_ERR_INVALID);
    cr_expect_eq(d5_alpha_beta_fit(s, t, 3, &f), D5_ERR_INVALID);
    cr_expect(strstr(d5_last_error(), "same size") != NULL, "%s", d5_last_error());
    cr_expect_eq(d5_alpha_beta_fit(s2, bad, 3, &f), D5_ERR_INVALID);
    cr_expect_eq(d5_alpha_beta_fit(NULL, t, 3, &f), D5_ERR_INVALID);
}

Test(alpha_beta, backends_are_listed_in_every_build)
{
    const char *want[] = {"mpi", "ring", "recdbl", "nccl"};
    cr_assert_eq(d5_comm_backend_count(), 4);
    for (size_t i = 0; i < 4; i++) {
        d5_comm_backend_info b;
        cr_assert_eq(d5_comm_backend_at(i, &b), D5_OK);
        cr_expect_str_eq(b.name, want[i]);
        cr_expect(b.description && b.description[0]);
    }
    d5_comm_backend_info b;
    cr_expect_eq(d5_comm_backend_at(4, &b), D5_ERR_RANGE);
    cr_expect_str_eq(d5_comm_op_name(D5_COMM_OP_ALL), "all");
    cr_expect_str_eq(d5_comm_op_name(D5_COMM_OP_AGREE), "agree");
}
