/* The timing method of the timed probes (pingpong, ucontext, asm-switch).
 *
 *   PROGRAM [BATCHES [MIN_BATCH_MS]]     defaults: 40 batches of at least 10 ms
 *
 * The program hands run_batches() a function that makes n round trips. A round trip is two
 * switches: two one-way transfers of control (two swapcontext or co_switch calls, two hand-offs
 * between the threads). Calibration doubles n, from 1, until one batch takes at least
 * MIN_BATCH_MS; a warm-up of 10 x MIN_BATCH_MS follows (doubling n again whenever a batch comes in
 * under it), and then BATCHES batches of n round trips, each timed with
 * clock_gettime(CLOCK_MONOTONIC) and printed as it ends:
 *
 *   result ns_per_switch=<ns> ns_per_round_trip=<ns>
 *
 * preceded by one `note` line with n. The smaller arguments are for tests. */
#ifndef BATCH_H
#define BATCH_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static inline long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static inline long long time_rounds(void (*rounds)(long), long n)
{
    long long start = now_ns();
    rounds(n);
    return now_ns() - start;
}

static inline long positive_arg(const char *prog, const char *name, const char *text)
{
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno || *end || end == text || v < 1) {
        fprintf(stderr, "%s: %s must be a whole number >= 1, got \"%s\"\n"
                        "usage: %s [BATCHES [MIN_BATCH_MS]]\n",
                prog, name, text, prog);
        exit(2);
    }
    return v;
}

static inline void run_batches(int argc, char **argv, void (*rounds)(long))
{
    if (argc > 3) {
        fprintf(stderr, "usage: %s [BATCHES [MIN_BATCH_MS]]\n", argv[0]);
        exit(2);
    }
    long batches = argc > 1 ? positive_arg(argv[0], "BATCHES", argv[1]) : 40;
    long min_ms = argc > 2 ? positive_arg(argv[0], "MIN_BATCH_MS", argv[2]) : 10;
    long long min_ns = min_ms * 1000000LL;

    long n = 1;
    while (time_rounds(rounds, n) < min_ns)
        n *= 2;
    long long warm_start = now_ns();
    while (now_ns() - warm_start < 10 * min_ns)
        if (time_rounds(rounds, n) < min_ns)
            n *= 2;

    printf("note %ld round trips per batch (each batch >= %ld ms when calibrated), %ld batches\n",
           n, min_ms, batches);
    fflush(stdout);
    for (long b = 0; b < batches; b++) {
        double per_round_trip = (double)time_rounds(rounds, n) / (double)n;
        printf("result ns_per_switch=%.3f ns_per_round_trip=%.3f\n",
               per_round_trip / 2, per_round_trip);
        fflush(stdout);
    }
}

#endif
