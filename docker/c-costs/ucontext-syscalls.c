/* ucontext-syscalls: the system calls behind one swapcontext, counted with ptrace (article 002
 * counts them with `strace -c` over 1000 swapcontext calls and reads them off objdump).
 *
 *   ucontext-syscalls [ROUND_TRIPS]        default 1000
 *
 * A forked child asks to be traced (PTRACE_TRACEME), stops itself (SIGSTOP), sets up the ucontext
 * program's coroutine (ucontext.c), calls getppid() as a marker, makes ROUND_TRIPS round trips
 * (two swapcontext calls each) and calls getppid() again. The parent sets PTRACE_O_TRACESYSGOOD,
 * follows the child from system call to system call (PTRACE_SYSCALL) and counts, by number, the
 * system call entries between the two markers.
 *
 *   result syscalls_per_switch=… rt_sigprocmask_per_switch=… rt_sigprocmask_per_round_trip=…
 *          switches=… syscalls=…
 *   note the system calls seen, by name and count
 *
 * One switch is one swapcontext call. If ptrace is refused, no result line: a `note` with the
 * error, exit status 1. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <unistd.h>

#define MAX_NR 1024

static ucontext_t main_ctx, co_ctx;
static char stack[64 * 1024];

static void co_entry(void) {
    for (;;) {
        swapcontext(&co_ctx, &main_ctx);   /* yield */
    }
}

static void child(long round_trips) {
    if (ptrace(PTRACE_TRACEME, 0, NULL, NULL) == -1)
        _exit(errno > 0 && errno < 100 ? errno : 99);
    raise(SIGSTOP);

    getcontext(&co_ctx);
    co_ctx.uc_stack.ss_sp   = stack;
    co_ctx.uc_stack.ss_size = sizeof(stack);
    co_ctx.uc_link          = &main_ctx;
    makecontext(&co_ctx, co_entry, 0);

    getppid();                             /* marker: counting starts */
    for (long i = 0; i < round_trips; i++)
        swapcontext(&main_ctx, &co_ctx);   /* resume */
    getppid();                             /* marker: counting ends */
    _exit(0);
}

static const char *syscall_name(long nr) {
    switch (nr) {
    case SYS_rt_sigprocmask: return "rt_sigprocmask";
    case SYS_rt_sigaction: return "rt_sigaction";
    case SYS_sigaltstack: return "sigaltstack";
    case SYS_getppid: return "getppid";
    case SYS_write: return "write";
    case SYS_futex: return "futex";
    case SYS_mmap: return "mmap";
    case SYS_munmap: return "munmap";
    case SYS_mprotect: return "mprotect";
    case SYS_brk: return "brk";
    case SYS_arch_prctl: return "arch_prctl";
    default: return NULL;
    }
}

static int refused(const char *what, int err, pid_t pid) {
    printf("note %s refused: %s (%s); no count\n", what,
           err == EPERM ? "EPERM" : err == EACCES ? "EACCES" : err == ENOSYS ? "ENOSYS" : "error",
           strerror(err));
    fflush(stdout);
    if (pid > 0) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
    }
    return 1;
}

int main(int argc, char **argv) {
    char *end = NULL;
    long round_trips = argc == 2 ? strtol(argv[1], &end, 10) : 1000;
    if (argc > 2 || (end && *end) || round_trips < 1) {
        fprintf(stderr, "usage: ucontext-syscalls [ROUND_TRIPS] (>= 1, default 1000)\n");
        return 2;
    }
    fflush(stdout);
    pid_t pid = fork();
    if (pid == -1) {
        perror("ucontext-syscalls: fork");
        return 1;
    }
    if (pid == 0)
        child(round_trips);

    int status;
    if (waitpid(pid, &status, 0) == -1) {
        perror("ucontext-syscalls: waitpid");
        return 1;
    }
    if (WIFEXITED(status))
        return refused("ptrace(PTRACE_TRACEME)", WEXITSTATUS(status), -1);
    if (!WIFSTOPPED(status) || WSTOPSIG(status) != SIGSTOP) {
        fprintf(stderr, "ucontext-syscalls: the child did not stop with SIGSTOP (status %#x)\n",
                status);
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        return 1;
    }
    if (ptrace(PTRACE_SETOPTIONS, pid, NULL,
               (void *)(long)(PTRACE_O_TRACESYSGOOD | PTRACE_O_EXITKILL)) == -1)
        return refused("ptrace(PTRACE_SETOPTIONS)", errno, pid);

    static long counts[MAX_NR];
    long markers = 0, total = 0, unknown = 0;
    int sig = 0;
    for (;;) {
        if (ptrace(PTRACE_SYSCALL, pid, NULL, (void *)(long)sig) == -1)
            return refused("ptrace(PTRACE_SYSCALL)", errno, pid);
        sig = 0;
        if (waitpid(pid, &status, 0) == -1) {
            perror("ucontext-syscalls: waitpid");
            return 1;
        }
        if (WIFEXITED(status) || WIFSIGNALED(status))
            break;
        if (!WIFSTOPPED(status))
            continue;
        if (WSTOPSIG(status) != (SIGTRAP | 0x80)) {
            sig = WSTOPSIG(status);        /* a signal for the child: deliver it */
            continue;
        }
        struct __ptrace_syscall_info info;
        if (ptrace(PTRACE_GET_SYSCALL_INFO, pid, (void *)sizeof info, &info) == -1)
            return refused("ptrace(PTRACE_GET_SYSCALL_INFO)", errno, pid);
        if (info.op != PTRACE_SYSCALL_INFO_ENTRY)
            continue;
        long nr = (long)info.entry.nr;
        if (nr == SYS_getppid && markers < 2) {
            markers++;
            continue;
        }
        if (markers == 1) {
            total++;
            if (nr >= 0 && nr < MAX_NR)
                counts[nr]++;
            else
                unknown++;
        }
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || markers != 2) {
        fprintf(stderr, "ucontext-syscalls: the child ended (status %#x) after %ld of 2 markers\n",
                status, markers);
        return 1;
    }

    long switches = 2 * round_trips;
    /* Per round trip too: the article counts 2,001 calls for "1000 switches" while its loop counts
       round trips, so both readings are reported. */
    printf("result syscalls_per_switch=%.4f rt_sigprocmask_per_switch=%.4f "
           "rt_sigprocmask_per_round_trip=%.4f switches=%ld syscalls=%ld\n",
           (double)total / switches, (double)counts[SYS_rt_sigprocmask] / switches,
           (double)counts[SYS_rt_sigprocmask] / round_trips, switches, total);
    printf("note system calls over %ld swapcontext calls (%ld round trips):", switches,
           round_trips);
    if (total == 0)
        printf(" none");
    for (long nr = 0; nr < MAX_NR; nr++) {
        if (!counts[nr])
            continue;
        const char *name = syscall_name(nr);
        if (name)
            printf(" %s x%ld", name, counts[nr]);
        else
            printf(" syscall_%ld x%ld", nr, counts[nr]);
    }
    if (unknown)
        printf(" out-of-range x%ld", unknown);
    printf("\n");
    fflush(stdout);
    return 0;
}
