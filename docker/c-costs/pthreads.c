/* pthreads: article 002's threads with 64 KiB stacks, as a steady probe (the probe protocol).
 * N threads, each created with pthread_attr_setstacksize(65536), park on one mutex and one
 * condition variable until released.
 *
 *   pthreads N
 *
 *   baseline
 *   ready tasks=N created=K stack_bytes=65536
 *   done completed=K
 *
 * If pthread_create fails at thread K, `note` lines before `ready` give the error and the limit
 * that was reached (thread_limits.h), and the probe goes on with the K threads it has. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "thread_limits.h"

#define STACK_BYTES 65536

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t released_cond = PTHREAD_COND_INITIALIZER;
static pthread_cond_t parked_cond = PTHREAD_COND_INITIALIZER;
static long parked = 0;
static int released = 0;

static void *park(void *arg) {
    (void)arg;
    pthread_mutex_lock(&lock);
    parked++;
    pthread_cond_signal(&parked_cond);
    while (!released)
        pthread_cond_wait(&released_cond, &lock);
    pthread_mutex_unlock(&lock);
    return NULL;
}

/* Waits for the sampler's line on stdin; exits if stdin ends. */
static void await_line(const char *phase) {
    char buf[256];
    if (!fgets(buf, sizeof buf, stdin)) {
        fprintf(stderr, "pthreads: stdin ended while waiting after %s\n", phase);
        exit(1);
    }
}

int main(int argc, char **argv) {
    char *end = NULL;
    long n = argc == 2 ? strtol(argv[1], &end, 10) : -1;
    if (argc != 2 || *end || n < 1) {
        fprintf(stderr, "usage: pthreads N (N >= 1: threads to create)\n");
        return 2;
    }
    pthread_t *threads = calloc((size_t)n, sizeof *threads);
    if (!threads) {
        fprintf(stderr, "pthreads: no memory for %ld thread handles\n", n);
        return 1;
    }
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, STACK_BYTES);

    printf("baseline\n");
    fflush(stdout);
    await_line("baseline");

    long created = 0;
    for (; created < n; created++) {
        int err = pthread_create(&threads[created], &attr, park, NULL);
        if (err) {
            struct limits l = read_limits();
            print_diagnosis(stdout, err, created, &l);
            break;
        }
    }
    pthread_mutex_lock(&lock);
    while (parked < created)
        pthread_cond_wait(&parked_cond, &lock);
    pthread_mutex_unlock(&lock);

    printf("ready tasks=%ld created=%ld stack_bytes=%d\n", n, created, STACK_BYTES);
    fflush(stdout);
    await_line("ready");

    pthread_mutex_lock(&lock);
    released = 1;
    pthread_cond_broadcast(&released_cond);
    pthread_mutex_unlock(&lock);
    long completed = 0;
    for (long i = 0; i < created; i++)
        completed += pthread_join(threads[i], NULL) == 0;

    printf("done completed=%ld\n", completed);
    fflush(stdout);
    return 0;
}
