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

Test(alpha_beta, ring_allreduce_by_hand)
{
    /* alpha = 2 us, beta = 0.1 ns/B (10 GB/s), S = 1 MiB on 4 ranks:
     * 2 * 3 * 2 us = 12 us of latency, 2 * 3/4 * 1048576 B * 0.1 ns/B
     * = 157286.4 ns of transfer: 169.2864 us in all. */
    double t = d5_alpha_beta_ring_allreduce_s(2e-6, 1e-10, 1048576, 4);
    cr_expect(fabs(t - 169.2864e-6) < 1e-15, "%.12g", t);
    /* 16 ranks, 246824 B (LeNet-5's float32 parameters): 30 alpha + 1.875 S beta. */
    t = d5_alpha_beta_ring_allreduce_s(2e-6, 1e-10, 246824, 16);
    cr_expect(fabs(t - (60e-6 + 1.875 * 246824 * 1e-10)) < 1e-15, "%.12g", t);
    /* Two ranks: 2 alpha + S beta, the pingpong time of S twice over half the size. */
    t = d5_alpha_beta_ring_allreduce_s(1e-6, 1e-9, 1000, 2);
    cr_expect(fabs(t - 3e-6) < 1e-18, "%.12g", t);
    /* One rank moves nothing; 0 bytes cost the latencies alone. */
    cr_expect_eq(d5_alpha_beta_ring_allreduce_s(2e-6, 1e-10, 1048576, 1), 0.0);
    cr_expect(fabs(d5_alpha_beta_ring_allreduce_s(2e-6, 1e-10, 0, 3) - 8e-6) < 1e-18);
}

Test(alpha_beta, ring_allreduce_refuses_nonsense)
{
    cr_expect(isnan(d5_alpha_beta_ring_allreduce_s(1e-6, 1e-9, 1000, 0)));
    cr_expect(isnan(d5_alpha_beta_ring_allreduce_s(1e-6, 1e-9, 1000, -2)));
    cr_expect(isnan(d5_alpha_beta_ring_allreduce_s(1e-6, 1e-9, -1, 2)));
    cr_expect(isnan(d5_alpha_beta_ring_allreduce_s(NAN, 1e-9, 1000, 2)));
    cr_expect(isnan(d5_alpha_beta_ring_allreduce_s(1e-6, INFINITY, 1000, 2)));
    cr_expect(isnan(d5_alpha_beta_ring_allreduce_s(1e-6, 1e-9, INFINITY, 2)));
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
