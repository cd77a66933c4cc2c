/* fork-bomb: a runaway program, for the kit's own test that a probe's container holds it (no
 * article's). Forks children that each hold one task (paused until it ends) until fork fails or
 * CAP children exist, says how many it made and what stopped it, and exits 1 when fork failed, 0
 * when CAP was reached. Its children die with it (PR_SET_PDEATHSIG) and close its stdout, so the
 * sampler sees its end at once.
 *
 *   fork-bomb [CAP]             CAP defaults to 100000
 *
 *   result children=K errno=E cap=CAP pids_current=… pids_max=…
 *   note fork failed after K children: EAGAIN (…)
 *   note limit: pids cgroup pids.max … reached (pids.current …)
 *
 * errno is fork's error number, 0 when CAP was reached; a reading that cannot be read (or is
 * unlimited) is left out of the result line. The CAP keeps it from taking a host's pids where
 * nothing else stops it. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "thread_limits.h"

/* A child: holds its task until the bomb ends (the pipe to the sampler is not its to keep). */
static void hold(pid_t bomb)
{
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != bomb)
        _exit(0);
    close(STDOUT_FILENO);
    for (;;)
        pause();
}

int main(int argc, char **argv)
{
    char *end = NULL;
    long cap = argc == 2 ? strtol(argv[1], &end, 10) : 100000;
    if (argc > 2 || (end && *end) || cap < 1) {
        fprintf(stderr, "usage: fork-bomb [CAP] (CAP >= 1, default 100000)\n");
        return 2;
    }
    fflush(stdout);
    pid_t self = getpid();
    long made = 0;
    int err = 0;
    while (made < cap) {
        pid_t pid = fork();
        if (pid < 0) {
            err = errno;
            break;
        }
        if (pid == 0)
            hold(self);
        made++;
    }
    long current = read_either("/sys/fs/cgroup/pids.current", "/sys/fs/cgroup/pids/pids.current");
    long max = read_either("/sys/fs/cgroup/pids.max", "/sys/fs/cgroup/pids/pids.max");

    printf("result children=%ld errno=%d cap=%ld", made, err, cap);
    if (current >= 0)
        printf(" pids_current=%ld", current);
    if (max >= 0)
        printf(" pids_max=%ld", max);
    printf("\n");
    if (!err) {
        printf("note cap of %ld children reached; fork did not fail\n", cap);
        return 0;
    }
    printf("note fork failed after %ld children: %s (%s)\n", made, errno_name(err), strerror(err));
    if (max > 0 && current >= 0 && current + 1 > max)
        printf("note limit: pids cgroup pids.max %ld reached (pids.current %ld)\n", max, current);
    return 1;
}
