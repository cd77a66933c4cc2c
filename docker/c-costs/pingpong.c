/* pingpong: article 002's thread ping-pong, timed. Two threads hand a turn back and forth under
 * one mutex and one condition variable; each hand-off wakes the other thread through a futex.
 * The article shows the result (switches=200000 per_switch=1960.3 ns) but not its code; this is
 * the usual shape of that program.
 *
 *   pingpong [BATCHES [MIN_BATCH_MS]]      see batch.h
 *
 * The main thread is one player and times batches; the other player loops until told to stop.
 * One round trip is two hand-offs (two switches): main -> partner -> main. The sampler pins
 * both threads (e.g. --cpus 0 puts them on one CPU). */
#include <pthread.h>
#include <string.h>

#include "batch.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t turn_changed = PTHREAD_COND_INITIALIZER;
static int turn = 0;       /* 0: main's turn, 1: the partner's */
static int stop = 0;

static void *partner(void *arg) {
    (void)arg;
    pthread_mutex_lock(&lock);
    for (;;) {
        while (turn != 1)
            pthread_cond_wait(&turn_changed, &lock);
        if (stop)
            break;
        turn = 0;
        pthread_cond_signal(&turn_changed);
    }
    pthread_mutex_unlock(&lock);
    return NULL;
}

static void rounds(long n) {
    pthread_mutex_lock(&lock);
    for (long i = 0; i < n; i++) {
        turn = 1;
        pthread_cond_signal(&turn_changed);
        while (turn != 0)
            pthread_cond_wait(&turn_changed, &lock);
    }
    pthread_mutex_unlock(&lock);
}

int main(int argc, char **argv) {
    pthread_t t;
    int err = pthread_create(&t, NULL, partner, NULL);
    if (err) {
        fprintf(stderr, "pingpong: pthread_create: %s\n", strerror(err));
        return 1;
    }
    run_batches(argc, argv, rounds);

    pthread_mutex_lock(&lock);
    stop = 1;
    turn = 1;
    pthread_cond_signal(&turn_changed);
    pthread_mutex_unlock(&lock);
    pthread_join(t, NULL);
    return 0;
}
