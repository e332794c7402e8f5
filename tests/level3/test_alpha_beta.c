/* The alpha-beta fit and the piecewise model (no MPI needed). */
#include "d5/distributed.h"
#include "support.h"

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

/* Two regimes, as a transport's eager and rendezvous protocols: below 4 KiB
 * 1 us + 0.1 ns/B, from 4 KiB on 3 us + 0.05 ns/B. The piecewise fit finds
 * both lines and a breakpoint between 2 and 4 KiB; one line cannot. */
Test(alpha_beta, piecewise_finds_a_protocol_switch)
{
    double s[16], t[16];
    for (int i = 0; i < 16; i++) {
        s[i] = (double)(64u << i); /* 64 B .. 2 MiB */
        t[i] = s[i] < 4096 ? 1e-6 + 1e-10 * s[i] : 3e-6 + 5e-11 * s[i];
    }
    d5_piecewise m;
    cr_assert_eq(d5_piecewise_fit(s, t, 16, D5_PIECEWISE_MAX, &m), D5_OK, "%s", d5_last_error());
    cr_assert_eq(m.nseg, 2, "%d segments", (int)m.nseg);
    cr_expect(m.from_bytes[1] > 2048 && m.from_bytes[1] < 4096, "breakpoint %g", m.from_bytes[1]);
    cr_expect(fabs(m.alpha_s[0] / 1e-6 - 1) < 1e-6 && fabs(m.alpha_s[1] / 3e-6 - 1) < 1e-6,
              "alphas %g %g", m.alpha_s[0], m.alpha_s[1]);
    cr_expect(fabs(m.beta_s_per_byte[1] / 5e-11 - 1) < 1e-6, "beta %g", m.beta_s_per_byte[1]);
    for (int i = 0; i < 16; i++)
        cr_expect(fabs(d5_piecewise_time_s(&m, s[i]) / t[i] - 1) < 1e-9, "size %g", s[i]);
    d5_alpha_beta f;
    cr_assert_eq(d5_alpha_beta_fit(s, t, 16, &f), D5_OK);
    double worst = 0;
    for (int i = 0; i < 16; i++)
        worst = fmax(worst, fabs((f.alpha_s + f.beta_s_per_byte * s[i]) / t[i] - 1));
    cr_expect(worst > 0.2, "one line fits within %g", worst);
}

/* One straight line with noise stays one segment: a second must pay for
 * itself (the Bayesian information criterion). */
Test(alpha_beta, piecewise_keeps_one_line_for_one_regime)
{
    double s[12], t[12];
    for (int i = 0; i < 12; i++) {
        s[i] = (double)(1u << (2 * i));
        t[i] = (1e-6 + 1e-10 * s[i]) * (i % 2 ? 1.02 : 0.98);
    }
    d5_piecewise m;
    cr_assert_eq(d5_piecewise_fit(s, t, 12, 3, &m), D5_OK, "%s", d5_last_error());
    cr_expect_eq(m.nseg, 1);
    cr_expect_eq(d5_piecewise_fit(s, t, 12, 0, &m), D5_ERR_INVALID);
    double down[3] = {8, 4, 2};
    cr_expect_eq(d5_piecewise_fit(down, t, 3, 1, &m), D5_ERR_INVALID);
    EXPECT_HAS(d5_last_error(), "out of order");
}

/* The ring from its steps: 2 (P - 1) exchanges of S / P and P - 1 sums. */
Test(alpha_beta, piecewise_ring_allreduce_by_hand)
{
    d5_piecewise x = {.nseg = 1, .alpha_s = {2e-6}, .beta_s_per_byte = {1e-10}};
    d5_alpha_beta r = {.alpha_s = 1e-7, .beta_s_per_byte = 5e-11};
    /* P = 4, S = 1 MiB: chunk 262144 B; 6 exchanges of 2 us + 26.2144 us,
     * 3 sums of 0.1 us + 13.1072 us. */
    double t = d5_piecewise_ring_allreduce_s(&x, &r, 1048576, 4);
    double want = 6 * (2e-6 + 262144 * 1e-10) + 3 * (1e-7 + 262144 * 5e-11);
    cr_expect(fabs(t - want) < 1e-15, "%.12g, expected %.12g", t, want);
    cr_expect_eq(d5_piecewise_ring_allreduce_s(&x, &r, 1048576, 1), 0);
    cr_expect(isnan(d5_piecewise_ring_allreduce_s(NULL, &r, 1, 2)));
    cr_expect(isnan(d5_piecewise_time_s(&x, -1)));
}

Test(alpha_beta, reduce_sum_adds_what_came_in)
{
    float d[5] = {1, 2, 3, 4, 5}, s[5] = {10, 20, 30, 40, 50};
    d5_comm_reduce_sum(d, s, 5, D5_F32);
    for (int i = 0; i < 5; i++) cr_expect_eq(d[i], 11.0f * (float)(i + 1));
    double e[2] = {0.5, 1}, f[2] = {0.25, 2};
    d5_comm_reduce_sum(e, f, 2, D5_F64);
    cr_expect(e[0] == 0.75 && e[1] == 3);
}
