/* thread-limit: how many threads with 64 KiB stacks (article 002's) this process can create, and
 * what stops it. Creates threads parked on one condition variable until pthread_create fails or
 * CAP threads exist, reads the limits while they are all alive, then releases and joins every
 * one and exits 0.
 *
 *   thread-limit [CAP]          CAP defaults to 100000
 *
 *   result threads=K errno=E cap=CAP maps=… max_map_count=… threads_max=… pid_max=…
 *          tasks_total=… nproc_soft=… pids_current=… pids_max=…
 *   note …                      the error and the limit reached (thread_limits.h)
 *
 * errno is pthread_create's error number, 0 when CAP was reached; a reading that cannot be read
 * (or is unlimited) is left out of the result line. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "thread_limits.h"

#define STACK_BYTES 65536

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t released_cond = PTHREAD_COND_INITIALIZER;
static int released = 0;

static void *park(void *arg) {
    (void)arg;
    pthread_mutex_lock(&lock);
    while (!released)
        pthread_cond_wait(&released_cond, &lock);
    pthread_mutex_unlock(&lock);
    return NULL;
}

int main(int argc, char **argv) {
    char *end = NULL;
    long cap = argc == 2 ? strtol(argv[1], &end, 10) : 100000;
    if (argc > 2 || (end && *end) || cap < 1) {
        fprintf(stderr, "usage: thread-limit [CAP] (CAP >= 1, default 100000)\n");
        return 2;
    }
    pthread_t *threads = calloc((size_t)cap, sizeof *threads);
    if (!threads) {
        fprintf(stderr, "thread-limit: no memory for %ld thread handles\n", cap);
        return 1;
    }
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, STACK_BYTES);

    long created = 0;
    int err = 0;
    while (created < cap && (err = pthread_create(&threads[created], &attr, park, NULL)) == 0)
        created++;
    struct limits l = read_limits();

    printf("result threads=%ld errno=%d cap=%ld", created, err, cap);
    print_limits(stdout, &l);
    printf("\n");
    if (err)
        print_diagnosis(stdout, err, created, &l);
    else
        printf("note cap of %ld threads reached; pthread_create did not fail\n", cap);
    fflush(stdout);

    pthread_mutex_lock(&lock);
    released = 1;
    pthread_cond_broadcast(&released_cond);
    pthread_mutex_unlock(&lock);
    for (long i = 0; i < created; i++)
        pthread_join(threads[i], NULL);
    return 0;
}
