/* Why pthread_create failed: the readings and the diagnosis shared by pthreads and thread-limit.
 *
 * read_limits() takes its readings while the threads that were created are still alive. Each
 * reading is -1 when it cannot be read (or is unlimited). diagnose() names the limit the readings
 * show as reached, the first of:
 *
 *   vm.max_map_count    this process's /proc/self/maps has no room for one more thread (its stack
 *                       and its guard page are two mappings)
 *   pids.max            the pids cgroup (v2 /sys/fs/cgroup/pids.max, v1 /sys/fs/cgroup/pids/…)
 *                       is at its maximum
 *   kernel.threads-max  the threads of the whole system (/proc/loadavg's total) are at it
 *   kernel.pid_max      the same count is at the highest pid number
 *   RLIMIT_NPROC        this process alone has as many threads as the soft limit (other processes
 *                       of the same user count too, and are not seen here; root is exempt)
 *   memory              ENOMEM, or the memory cgroup at its maximum
 *
 * or says that none of them is (the readings are printed either way). */
#ifndef THREAD_LIMITS_H
#define THREAD_LIMITS_H

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

struct limits {
    long maps, max_map_count, threads_max, pid_max, tasks_total, nproc_soft;
    long pids_current, pids_max, mem_current, mem_max;
};

/* The first number in a file, or -1 ("max" and unreadable files included). */
static inline long read_number(const char *path)
{
    FILE *f = fopen(path, "r");
    long v = -1;
    if (f) {
        if (fscanf(f, "%ld", &v) != 1)
            v = -1;
        fclose(f);
    }
    return v;
}

/* The first of two files that can be read, as a number: cgroup v2's path, then v1's. */
static inline long read_either(const char *v2, const char *v1)
{
    long v = read_number(v2);
    return v >= 0 ? v : read_number(v1);
}

static inline long count_lines(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    long lines = 0;
    int c;
    while ((c = getc(f)) != EOF)
        lines += c == '\n';
    fclose(f);
    return lines;
}

/* The second number of "running/total" in /proc/loadavg: the scheduling entities of the system. */
static inline long tasks_total(void)
{
    FILE *f = fopen("/proc/loadavg", "r");
    long running, total = -1;
    if (f) {
        if (fscanf(f, "%*s %*s %*s %ld/%ld", &running, &total) != 2)
            total = -1;
        fclose(f);
    }
    return total;
}

static inline struct limits read_limits(void)
{
    struct limits l;
    struct rlimit rl;
    l.maps = count_lines("/proc/self/maps");
    l.max_map_count = read_number("/proc/sys/vm/max_map_count");
    l.threads_max = read_number("/proc/sys/kernel/threads-max");
    l.pid_max = read_number("/proc/sys/kernel/pid_max");
    l.tasks_total = tasks_total();
    l.nproc_soft = getrlimit(RLIMIT_NPROC, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY
                       ? (long)rl.rlim_cur : -1;
    l.pids_current = read_either("/sys/fs/cgroup/pids.current", "/sys/fs/cgroup/pids/pids.current");
    l.pids_max = read_either("/sys/fs/cgroup/pids.max", "/sys/fs/cgroup/pids/pids.max");
    l.mem_current = read_either("/sys/fs/cgroup/memory.current",
                                "/sys/fs/cgroup/memory/memory.usage_in_bytes");
    l.mem_max = read_either("/sys/fs/cgroup/memory.max",
                            "/sys/fs/cgroup/memory/memory.limit_in_bytes");
    return l;
}

/* " key=value" for each reading that could be read, for a `result` line. */
static inline void print_limits(FILE *out, const struct limits *l)
{
    const struct { const char *key; long v; } r[] = {
        {"maps", l->maps}, {"max_map_count", l->max_map_count},
        {"threads_max", l->threads_max}, {"pid_max", l->pid_max},
        {"tasks_total", l->tasks_total}, {"nproc_soft", l->nproc_soft},
        {"pids_current", l->pids_current}, {"pids_max", l->pids_max},
    };
    for (size_t i = 0; i < sizeof r / sizeof r[0]; i++)
        if (r[i].v >= 0)
            fprintf(out, " %s=%ld", r[i].key, r[i].v);
}

static inline const char *errno_name(int err)
{
    switch (err) {
    case 0: return "none";
    case EAGAIN: return "EAGAIN";
    case ENOMEM: return "ENOMEM";
    case EINVAL: return "EINVAL";
    case EPERM: return "EPERM";
    default: return "other";
    }
}

/* `note` lines: the error of pthread_create after `threads` threads, and the limit reached. */
static inline void print_diagnosis(FILE *out, int err, long threads,
                                   const struct limits *l)
{
    fprintf(out, "note pthread_create failed after %ld threads: %s (%s)\n",
            threads, errno_name(err), strerror(err));
    /* Slack for what else the system or the process may hold meanwhile. */
    const long slack = 64;
    if (l->maps >= 0 && l->max_map_count > 0 && l->maps + 2 > l->max_map_count)
        fprintf(out, "note limit: vm.max_map_count %ld reached (%ld maps; each thread adds its "
                     "stack and its guard page)\n", l->max_map_count, l->maps);
    else if (l->pids_max > 0 && l->pids_current >= 0 && l->pids_current + 1 > l->pids_max)
        fprintf(out, "note limit: pids cgroup pids.max %ld reached (pids.current %ld)\n",
                l->pids_max, l->pids_current);
    else if (l->threads_max > 0 && l->tasks_total >= 0 && l->tasks_total + slack > l->threads_max)
        fprintf(out, "note limit: kernel.threads-max %ld reached (%ld threads in the system)\n",
                l->threads_max, l->tasks_total);
    else if (l->pid_max > 0 && l->tasks_total >= 0 && l->tasks_total + slack > l->pid_max)
        fprintf(out, "note limit: kernel.pid_max %ld reached (%ld threads in the system, each "
                     "with a pid)\n", l->pid_max, l->tasks_total);
    else if (l->nproc_soft >= 0 && geteuid() != 0 && threads + 1 >= l->nproc_soft)
        fprintf(out, "note limit: RLIMIT_NPROC %ld reached (%ld threads in this process)\n",
                l->nproc_soft, threads + 1);
    else if (err == ENOMEM || (l->mem_max > 0 && l->mem_current >= 0
                               && l->mem_current + (1L << 20) > l->mem_max))
        fprintf(out, "note limit: memory (memory cgroup %ld of %ld bytes)\n",
                l->mem_current, l->mem_max);
    else
        fprintf(out, "note limit: none of those read is reached (maps %ld of %ld, system threads "
                     "%ld of threads-max %ld and pid_max %ld, pids cgroup %ld of %ld, "
                     "RLIMIT_NPROC %ld; -1 = unreadable or unlimited)\n",
                l->maps, l->max_map_count, l->tasks_total, l->threads_max, l->pid_max,
                l->pids_current, l->pids_max, l->nproc_soft);
}

#endif
