/* Operators that misbehave on purpose, to test that `d5 test-operator` survives
 * them: Crash dereferences NULL in forward, Hang never returns, ForkHang
 * leaves a spinning grandchild behind and never returns. */
#include "copy_create.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>
#include <unistd.h>

static d5_status crash(void *state, const d5_op_call *call)
{
    volatile int *p = (volatile int *)state;
    *p = 1; /* state is NULL */
    return D5_OK;
}

static d5_status hang(void *state, const d5_op_call *call)
{
    (void)state;
    for (;;) pause();
    return D5_OK;
}

/* Forks a grandchild that spins, writes its pid to $D5_TEST_PIDFILE, then
 * hangs: ending the operator's process must end the grandchild too. */
static d5_status fork_hang(void *state, const d5_op_call *call)
{
    (void)state;
    pid_t pid = fork();
    if (pid == 0)
        for (volatile unsigned long n = 0;; n++) {
        }
    const char *file = getenv("D5_TEST_PIDFILE");
    FILE *f = file ? fopen(file, "w") : NULL;
    if (f) {
        fprintf(f, "%ld\n", (long)pid);
        fclose(f);
    }
    for (;;) pause();
    return D5_OK;
}

/* clang-format off */
static const d5_op_desc crash_op = {
    .abi_version = D5_OP_ABI_VERSION, .flags = 0, .name = "Crash", .backend = "custom",
    .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1, .create = create,
    .forward = crash};
/* clang-format on */
/* clang-format off */
static const d5_op_desc hang_op = {
    .abi_version = D5_OP_ABI_VERSION, .flags = 0, .name = "Hang", .backend = "custom",
    .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1, .create = create,
    .forward = hang};
/* clang-format on */

/* clang-format off */
static const d5_op_desc fork_hang_op = {
    .abi_version = D5_OP_ABI_VERSION, .flags = 0, .name = "ForkHang", .backend = "custom",
    .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1, .create = create,
    .forward = fork_hang};
/* clang-format on */

D5_OPERATOR_EXPORT(&crash_op, &hang_op, &fork_hang_op)
