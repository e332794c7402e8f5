/* A training loop instrumented the way the MAELSTROM timer is used: EPOCH
 * around each epoch, BATCH around each batch, FORWARD and BACKWARD inside it,
 * and IO for loading a batch. The "model" is a small dense layer trained by
 * gradient descent on synthetic data, so that every region does real work.
 *
 *     ./training_loop [epochs]
 */
#include <d5/d5.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { N_IN = 256, N_OUT = 64, BATCH = 32, BATCHES = 20 };

#define CHECK(call)                                                                                \
    do {                                                                                           \
        d5_status s_ = (call);                                                                     \
        if (s_ != D5_OK) {                                                                         \
            fprintf(stderr, "%s: %s\n", #call, d5_last_error());                                   \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

static float w[N_OUT][N_IN], x[BATCH][N_IN], y[BATCH][N_OUT], target[BATCH][N_OUT];

static void load_batch(unsigned *seed)
{
    for (int b = 0; b < BATCH; b++) {
        for (int i = 0; i < N_IN; i++) x[b][i] = (float)(rand_r(seed) % 1000) / 1000.0f;
        for (int o = 0; o < N_OUT; o++) target[b][o] = x[b][o % N_IN];
    }
}

static float forward(void)
{
    float loss = 0;
    for (int b = 0; b < BATCH; b++)
        for (int o = 0; o < N_OUT; o++) {
            float acc = 0;
            for (int i = 0; i < N_IN; i++) acc += w[o][i] * x[b][i];
            y[b][o] = acc;
            loss += (acc - target[b][o]) * (acc - target[b][o]);
        }
    return loss / (BATCH * N_OUT);
}

static void backward(float lr)
{
    for (int o = 0; o < N_OUT; o++)
        for (int i = 0; i < N_IN; i++) {
            float g = 0;
            for (int b = 0; b < BATCH; b++) g += 2 * (y[b][o] - target[b][o]) * x[b][i];
            w[o][i] -= lr * g / (BATCH * N_OUT);
        }
}

int main(int argc, char **argv)
{
    int epochs = argc > 1 ? atoi(argv[1]) : 3;
    if (epochs < 1) epochs = 1;
    d5_timer *t;
    CHECK(d5_timer_create(NULL, &t));
    unsigned seed = 42;
    float loss = 0;
    for (int e = 0; e < epochs; e++) {
        CHECK(d5_timer_start(t, D5_KEY_EPOCH));
        for (int b = 0; b < BATCHES; b++) {
            CHECK(d5_timer_start(t, D5_KEY_BATCH));
            CHECK(d5_timer_start(t, D5_KEY_IO));
            load_batch(&seed);
            CHECK(d5_timer_end(t, D5_KEY_IO));
            CHECK(d5_timer_start(t, D5_KEY_FORWARD));
            loss = forward();
            CHECK(d5_timer_end(t, D5_KEY_FORWARD));
            CHECK(d5_timer_start(t, D5_KEY_BACKWARD));
            backward(0.05f);
            CHECK(d5_timer_end(t, D5_KEY_BACKWARD));
            CHECK(d5_timer_end(t, D5_KEY_BATCH));
        }
        CHECK(d5_timer_end(t, D5_KEY_EPOCH));
        printf("epoch %d: loss %.5f\n", e + 1, loss);
    }
    CHECK(d5_report_table(stdout, t));
    d5_timer_free(t);
    return 0;
}
