/* {{name}}: a {{kind}} probe, as `parkbench new probe` wrote it. A task here is a POSIX thread;
 * replace the work with your program's. What a {{kind}} probe prints: docs/study-files.md (kinds
 * of measurement) and docker/README.md (the probe protocol, `result`, `latency` and `note` lines). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The index-th argument as a number, or def. */
static long arg(int argc, char **argv, int index, long def) {
    if (argc <= index) return def;
    char *end;
    long n = strtol(argv[index], &end, 10);
    if (*end != '\0' || n < 0) {
        fprintf(stderr, "probe: argument %d must be a whole number, got \"%s\"\n", index, argv[index]);
        exit(2);
    }
    return n;
}

/* Starts n threads running fn, or says why not and exits 1. */
static pthread_t *start(long n, void *(*fn)(void *), void *data) {
    pthread_t *threads = calloc(n ? n : 1, sizeof *threads);
    for (long i = 0; i < n; i++) {
        int e = pthread_create(&threads[i], NULL, fn, data);
        if (e != 0) {
            printf("note pthread_create failed after %ld threads: %s\n", i, strerror(e));
            exit(1);
        }
    }
    return threads;
}

static void join(pthread_t *threads, long n) {
    for (long i = 0; i < n; i++) pthread_join(threads[i], NULL);
    free(threads);
}

static long long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

// @kind steady
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
static long parked = 0;
static int open_gate = 0;

static void *park(void *unused) {
    (void)unused;
    pthread_mutex_lock(&lock);
    parked++;
    pthread_cond_broadcast(&changed);
    while (!open_gate) pthread_cond_wait(&changed, &lock);
    pthread_mutex_unlock(&lock);
    return NULL;
}

static void wait_line(void) {
    char line[256];
    if (!fgets(line, sizeof line, stdin)) {
        fprintf(stderr, "probe: stdin closed\n");
        exit(1);
    }
}

/* probe N: the probe protocol. N threads parked on one condition variable, released at once. */
int main(int argc, char **argv) {
    long n = arg(argc, argv, 1, 1000);
    (void)now_ns;
    printf("baseline\n");
    fflush(stdout);
    wait_line();
    pthread_t *threads = start(n, park, NULL);
    pthread_mutex_lock(&lock);
    while (parked < n) pthread_cond_wait(&changed, &lock);
    pthread_mutex_unlock(&lock);
    printf("ready tasks=%ld\n", n);
    fflush(stdout);
    wait_line();
    pthread_mutex_lock(&lock);
    open_gate = 1;
    pthread_cond_broadcast(&changed);
    pthread_mutex_unlock(&lock);
    join(threads, n);
    printf("done completed=%ld\n", n);
    return 0;
}
// @end
// @kind peak
static void *sleep_for(void *ms) {
    long m = *(long *)ms;
    struct timespec t = {m / 1000, (m % 1000) * 1000000L};
    nanosleep(&t, NULL);
    return NULL;
}

/* probe N [SLEEP_MS]: N threads, each sleeping SLEEP_MS (500); the sampler measures the peak memory
 * of the whole run. */
int main(int argc, char **argv) {
    long n = arg(argc, argv, 1, 1000), ms = arg(argc, argv, 2, 500);
    (void)now_ns;
    join(start(n, sleep_for, &ms), n);
    printf("note every thread slept and was joined\n");
    return 0;
}
// @end
// @kind timed
static void *nothing(void *unused) { return unused; }

/* probe [BATCHES [OPS]]: BATCHES (20) batches of OPS (200) thread starts and joins, one `result`
 * line each. */
int main(int argc, char **argv) {
    long batches = arg(argc, argv, 1, 20), ops = arg(argc, argv, 2, 200);
    for (long b = 0; b < batches; b++) {
        long long t0 = now_ns();
        for (long i = 0; i < ops; i++) join(start(1, nothing, NULL), 1);
        printf("result ns_per_op=%.1f\n", (double)(now_ns() - t0) / (double)ops);
        fflush(stdout);
    }
    return 0;
}
// @end
// @kind latency
static void *stamp(void *started) {
    *(long long *)started = now_ns();
    return NULL;
}

/* probe [OPS]: OPS (1000) times, the time from starting a thread to its first instruction, each
 * printed as one `latency` line (the sampler merges them into one histogram). */
int main(int argc, char **argv) {
    long ops = arg(argc, argv, 1, 1000);
    for (long i = 0; i < ops; i++) {
        long long started = 0, t0 = now_ns();
        join(start(1, stamp, &started), 1);
        printf("latency value_ns=%lld count=1\n", started - t0);
    }
    return 0;
}
// @end
// @kind reported
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long count = 0;

static void *count_me(void *unused) {
    pthread_mutex_lock(&lock);
    count++;
    pthread_mutex_unlock(&lock);
    return unused;
}

/* probe N: N threads, each counting itself; prints what it counted as one `result` line (values
 * the program computes itself: sizes, counts, limits). */
int main(int argc, char **argv) {
    long n = arg(argc, argv, 1, 1000);
    (void)now_ns;
    join(start(n, count_me, NULL), n);
    printf("result completed=%ld pthread_t_bytes=%zu\n", count, sizeof(pthread_t));
    return 0;
}
// @end
