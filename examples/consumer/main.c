/* Uses an installed d5: times a region and prints the statistics. */
#include <d5/d5.h>

#include <stdio.h>

int main(void)
{
    d5_timer *t;
    if (d5_timer_create(NULL, &t) != D5_OK) {
        fprintf(stderr, "timer: %s\n", d5_last_error());
        return 1;
    }
    volatile double acc = 0;
    for (int r = 0; r < 10; r++) {
        if (d5_timer_start(t, "sum") != D5_OK) return 1;
        for (int i = 0; i < 100000; i++) acc += i * 0.5;
        if (d5_timer_end(t, "sum") != D5_OK) return 1;
    }
    d5_stats s;
    if (d5_timer_stats(t, "sum", D5_TIMER_CPU, &s) != D5_OK) return 1;
    printf("d5 %s: sum median %.0f ns over %zu samples\n", d5_version(), s.median, s.n);
    d5_timer_free(t);
    return 0;
}
