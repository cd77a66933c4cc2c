/*
 * The guest's init (PID 1, `rdinit=/parkbench-init`): the initramfs is a probe image's own
 * filesystem, so the guest runs the probe with the image's sampler exactly as a container does.
 *
 * It mounts proc, sys and devtmpfs, sends its output to the serial console, prints one
 * `parkbench-guest {...}` line (kernel release, THP mode, CPUs, memory), runs the command given on
 * the kernel command line and powers the VM off when it ends. The command comes as
 *   parkbench.argv=<hex of the arguments, each ended by a NUL byte>
 *   parkbench.env=<hex of KEY=VALUE entries, each ended by a NUL byte>
 *   parkbench.thp=always|madvise|never   (optional: set the THP mode before the command runs)
 * Dotted parameters are not passed to init's environment by the kernel; init reads /proc/cmdline.
 * Without parkbench.argv it only prints the guest line (a boot check).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#define MAX_WORDS 256

static void power_off(void) {
    fflush(stdout);
    fflush(stderr);
    /* Let the serial port send everything before the VM stops. */
    tcdrain(1);
    sync();
    reboot(RB_POWER_OFF);
    _exit(0); /* not reached; with panic=-1 and -no-reboot QEMU ends anyway */
}

static void fail(const char *what) {
    fprintf(stderr, "parkbench-init: %s: %s\n", what, strerror(errno));
    power_off();
}

static void mount_fs(const char *type, const char *dir) {
    mkdir(dir, 0755);
    if (mount(type, dir, type, 0, NULL) != 0 && errno != EBUSY)
        fail(dir);
}

/* Reads a whole small file into buf (NUL-terminated); returns its length or -1. */
static ssize_t read_file(const char *path, char *buf, size_t size) {
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return -1;
    size_t n = 0;
    ssize_t r;
    while (n + 1 < size && (r = read(fd, buf + n, size - 1 - n)) > 0)
        n += (size_t)r;
    close(fd);
    buf[n] = '\0';
    return (ssize_t)n;
}

/* The value of `name=` on the command line, copied into out; 0 when absent. */
static int param(const char *cmdline, const char *name, char *out, size_t size) {
    size_t len = strlen(name);
    for (const char *p = cmdline; (p = strstr(p, name)) != NULL; p += len) {
        if ((p == cmdline || p[-1] == ' ') && p[len] == '=') {
            const char *v = p + len + 1;
            size_t n = strcspn(v, " \n");
            if (n >= size)
                n = size - 1;
            memcpy(out, v, n);
            out[n] = '\0';
            return 1;
        }
    }
    return 0;
}

static int nibble(char c) {
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

/* Decodes hex into NUL-ended words; returns their count or -1 on bad input. */
static int words(const char *hex, char *buf, size_t size, char **out, int max) {
    size_t n = 0;
    for (const char *h = hex; h[0] && h[1]; h += 2) {
        int hi = nibble(h[0]), lo = nibble(h[1]);
        if (hi < 0 || lo < 0 || n + 1 >= size)
            return -1;
        buf[n++] = (char)(hi << 4 | lo);
    }
    int count = 0;
    for (size_t i = 0; i < n && count < max; count++) {
        out[count] = buf + i;
        i += strlen(buf + i) + 1;
    }
    out[count] = NULL;
    return count;
}

/* The selected mode of "always [madvise] never". */
static void selected(const char *modes, char *out, size_t size) {
    const char *a = strchr(modes, '['), *b = a ? strchr(a, ']') : NULL;
    size_t n = (a && b) ? (size_t)(b - a - 1) : 0;
    if (n >= size)
        n = size - 1;
    memcpy(out, n ? a + 1 : "", n);
    out[n] = '\0';
}

static long meminfo_kib(const char *key) {
    static char buf[8192];
    if (read_file("/proc/meminfo", buf, sizeof buf) < 0)
        return -1;
    const char *p = strstr(buf, key);
    return p ? atol(p + strlen(key)) : -1;
}

static void set_thp(const char *mode) {
    int fd = open("/sys/kernel/mm/transparent_hugepage/enabled", O_WRONLY);
    if (fd < 0 || write(fd, mode, strlen(mode)) < 0)
        fprintf(stderr, "parkbench-init: setting THP to %s: %s\n", mode, strerror(errno));
    if (fd >= 0)
        close(fd);
}

int main(void) {
    static char cmdline[4096], hex[4096], argbuf[2048], envbuf[2048], thp[256], mode[32];
    char *argv[MAX_WORDS + 1], *envp[MAX_WORDS + 1];

    mount_fs("proc", "/proc");
    mount_fs("sysfs", "/sys");
    mount_fs("devtmpfs", "/dev");
    int console = open("/dev/console", O_RDWR);
    if (console >= 0) {
        dup2(console, 0);
        dup2(console, 1);
        dup2(console, 2);
        if (console > 2)
            close(console);
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    mkdir("/tmp", 01777);

    if (read_file("/proc/cmdline", cmdline, sizeof cmdline) < 0)
        fail("/proc/cmdline");
    if (param(cmdline, "parkbench.thp", mode, sizeof mode))
        set_thp(mode);

    struct utsname u;
    uname(&u);
    if (read_file("/sys/kernel/mm/transparent_hugepage/enabled", thp, sizeof thp) < 0)
        strcpy(thp, "");
    selected(thp, mode, sizeof mode);
    printf("parkbench-guest {\"kernel_release\":\"%s\",\"thp\":\"%s\",\"cpus\":%ld,"
           "\"memory_kib\":%ld}\n",
           u.release, mode, sysconf(_SC_NPROCESSORS_ONLN), meminfo_kib("MemTotal:"));

    if (!param(cmdline, "parkbench.argv", hex, sizeof hex))
        power_off();
    if (words(hex, argbuf, sizeof argbuf, argv, MAX_WORDS) < 1) {
        fprintf(stderr, "parkbench-init: parkbench.argv is not hex of NUL-ended words\n");
        power_off();
    }
    envp[0] = NULL;
    if (param(cmdline, "parkbench.env", hex, sizeof hex) &&
        words(hex, envbuf, sizeof envbuf, envp, MAX_WORDS) < 0) {
        fprintf(stderr, "parkbench-init: parkbench.env is not hex of NUL-ended words\n");
        power_off();
    }

    pid_t child = fork();
    if (child < 0)
        fail("fork");
    if (child == 0) {
        execve(argv[0], argv, envp);
        fprintf(stderr, "parkbench-init: exec %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    int status = 0;
    /* As PID 1 it also reaps orphans; it stops when the command itself ends. */
    for (pid_t p; (p = wait(&status)) != child;)
        if (p < 0 && errno != EINTR)
            fail("wait");
    if (WIFEXITED(status))
        printf("parkbench-guest-exit %d\n", WEXITSTATUS(status));
    else if (WIFSIGNALED(status))
        printf("parkbench-guest-signal %d\n", WTERMSIG(status));
    power_off();
    return 0;
}
