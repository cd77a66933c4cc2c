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
 *   parkbench.root=disk   (optional: the image's filesystem is on the virtio disk, see below)
 * Dotted parameters are not passed to init's environment by the kernel; init reads /proc/cmdline.
 * Without parkbench.argv it only prints the guest line (a boot check).
 *
 * With parkbench.root=disk the initramfs holds only this init and, in /parkbench-modules, the
 * kernel modules that reach the disk (none when the kernel has them built in). The init loads
 * them in name order, mounts the disk's EROFS image (the probe image's filesystem) read-only
 * under a writable tmpfs layer with overlayfs, as a container's root is, frees the initramfs's
 * files and makes the overlay the root; then it goes on as above. Before the command starts, the
 * programs it names (its absolute-path arguments) and their ELF interpreter and libraries are read
 * into the page cache, as the initramfs had them in memory; with parkbench.warm=all (the driver
 * sets it under KVM) every file of the disk is. Files a program opens later (dlopen'd modules, data
 * files, programs found through PATH) are read from the disk when it opens them.
 * Unless the kernel has no networking, the loopback interface is brought up, as in a container.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#define MAX_WORDS 256
#define MODULES "/parkbench-modules"
#define MAX_MODULES 64
#define DISK "/dev/vda"

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

static int by_name(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Loads every module of MODULES in name order (a name's number gives its place) and deletes it. */
static void load_modules(void) {
    DIR *dir = opendir(MODULES);
    if (!dir)
        return;
    static char names[MAX_MODULES][300];
    char *sorted[MAX_MODULES];
    int n = 0;
    for (struct dirent *e; (e = readdir(dir)) != NULL && n < MAX_MODULES;)
        if (e->d_name[0] != '.') {
            snprintf(names[n], sizeof names[n], "%s/%s", MODULES, e->d_name);
            sorted[n] = names[n];
            n++;
        }
    closedir(dir);
    qsort(sorted, (size_t)n, sizeof sorted[0], by_name);
    for (int i = 0; i < n; i++) {
        int fd = open(sorted[i], O_RDONLY | O_CLOEXEC);
        if (fd < 0 || (syscall(SYS_finit_module, fd, "", 0) != 0 && errno != EEXIST))
            fail(sorted[i]);
        close(fd);
        unlink(sorted[i]);
    }
    rmdir(MODULES);
}

/* Waits up to 10 s for the disk's device node (its driver may probe it asynchronously). */
static void wait_for_disk(void) {
    struct timespec tick = {0, 10 * 1000 * 1000};
    for (int i = 0; i < 1000 && access(DISK, F_OK) != 0; i++)
        nanosleep(&tick, NULL);
    if (access(DISK, F_OK) != 0)
        fail(DISK);
}

static void mount_or_fail(const char *src, const char *dir, const char *type, unsigned long flags,
                          const char *options) {
    mkdir(dir, 0755);
    if (mount(src, dir, type, flags, options) != 0)
        fail(dir);
}

/* Reads the file at path into the page cache; returns its descriptor (or -1) for more reading. */
static int warm_path(const char *path) {
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOATIME);
    struct stat st;
    if (fd < 0)
        return -1;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return -1;
    }
    /* Read, not readahead(2): that only queues the reads, and pages still on their way when the
       probe starts would be neither mapped on its faults nor done loading before it is measured. */
    static char scratch[1 << 20];
    for (off_t at = 0; at < st.st_size;) {
        ssize_t n = pread(fd, scratch, sizeof scratch, at);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        at += n;
    }
    return fd;
}

/* nftw's callback: one file of the disk into the page cache. */
static int warm_file(const char *path, const struct stat *st, int type, struct FTW *ftw) {
    (void)ftw;
    if (type == FTW_F && S_ISREG(st->st_mode) && st->st_size > 0) {
        int fd = warm_path(path);
        if (fd >= 0)
            close(fd);
    }
    return 0;
}

/* The file offset of virtual address vaddr in an ELF file's loaded segments, or 0. */
static off_t file_offset(const Elf64_Phdr *ph, int n, Elf64_Addr vaddr) {
    for (int i = 0; i < n; i++)
        if (ph[i].p_type == PT_LOAD && vaddr >= ph[i].p_vaddr &&
            vaddr < ph[i].p_vaddr + ph[i].p_filesz)
            return (off_t)(ph[i].p_offset + (vaddr - ph[i].p_vaddr));
    return 0;
}

static void warm_program(const char *path, int depth);

/* A needed library, looked up where Debian's loader looks first. */
static void warm_library(const char *name, int depth) {
    static const char *const dirs[] = {"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu",
                                       "/lib64", "/usr/lib64", "/lib", "/usr/lib"};
    char path[600];
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", dirs[i], name);
        if (access(path, R_OK) == 0) {
            warm_program(path, depth);
            return;
        }
    }
}

/* A program into the page cache with its ELF interpreter and needed libraries (theirs too, to a
   few levels): the files its process maps when it starts. */
static void warm_program(const char *path, int depth) {
    int fd = warm_path(path);
    if (fd < 0)
        return;
    Elf64_Ehdr eh;
    Elf64_Phdr ph[64];
    Elf64_Dyn dyn[512];
    char text[512];
    if (depth > 0 && pread(fd, &eh, sizeof eh, 0) == (ssize_t)sizeof eh &&
        memcmp(eh.e_ident, ELFMAG, SELFMAG) == 0 && eh.e_ident[EI_CLASS] == ELFCLASS64 &&
        eh.e_phentsize == sizeof ph[0] && eh.e_phnum <= 64) {
        int n = eh.e_phnum, ndyn = 0;
        if (pread(fd, ph, n * sizeof ph[0], (off_t)eh.e_phoff) != (ssize_t)(n * sizeof ph[0]))
            n = 0;
        for (int i = 0; i < n; i++) {
            if (ph[i].p_type == PT_INTERP && ph[i].p_filesz < sizeof text &&
                pread(fd, text, ph[i].p_filesz, (off_t)ph[i].p_offset) == (ssize_t)ph[i].p_filesz) {
                text[ph[i].p_filesz] = '\0';
                int interp = warm_path(text);
                if (interp >= 0)
                    close(interp);
            }
            if (ph[i].p_type == PT_DYNAMIC) {
                size_t size = ph[i].p_filesz < sizeof dyn ? ph[i].p_filesz : sizeof dyn;
                ssize_t got = pread(fd, dyn, size, (off_t)ph[i].p_offset);
                ndyn = got > 0 ? (int)((size_t)got / sizeof dyn[0]) : 0;
            }
        }
        off_t strtab = 0;
        for (int i = 0; i < ndyn && dyn[i].d_tag != DT_NULL; i++)
            if (dyn[i].d_tag == DT_STRTAB)
                strtab = file_offset(ph, n, dyn[i].d_un.d_ptr);
        for (int i = 0; strtab && i < ndyn && dyn[i].d_tag != DT_NULL; i++)
            if (dyn[i].d_tag == DT_NEEDED &&
                pread(fd, text, sizeof text - 1, strtab + (off_t)dyn[i].d_un.d_val) > 0) {
                text[sizeof text - 1] = '\0';
                if (strchr(text, '/') == NULL)
                    warm_library(text, depth - 1);
            }
    }
    close(fd);
}

/* parkbench.root=disk: the probe image's filesystem from the disk, writable through an overlay. */
static void enter_disk_root(const char *cmdline) {
    char mode[32];
    mount_fs("devtmpfs", "/dev");
    load_modules();
    wait_for_disk();
    mount_or_fail(DISK, "/lower", "erofs", MS_RDONLY, NULL);
    /* parkbench.warm=all: every file in the page cache, as the initramfs had them all in memory. */
    if (param(cmdline, "parkbench.warm", mode, sizeof mode) && strcmp(mode, "all") == 0)
        nftw("/lower", warm_file, 64, FTW_PHYS | FTW_MOUNT);
    mount_or_fail("tmpfs", "/rw", "tmpfs", 0, "mode=0755");
    mkdir("/rw/upper", 0755);
    mkdir("/rw/work", 0755);
    mount_or_fail("overlay", "/root", "overlay", 0,
                  "lowerdir=/lower,upperdir=/rw/upper,workdir=/rw/work");
    /* The initramfs's own files are not needed any more (a running binary stays mapped). */
    unlink("/parkbench-init");
    if (umount2("/dev", MNT_DETACH) != 0 || umount2("/proc", MNT_DETACH) != 0)
        fail("unmounting the initramfs's /dev and /proc");
    if (chdir("/root") != 0 || mount(".", "/", NULL, MS_MOVE, NULL) != 0 || chroot(".") != 0 ||
        chdir("/") != 0)
        fail("switching to the disk's root");
}

/* The loopback interface up, as a container without a network has it (the kernel gives it
   127.0.0.1 when it comes up): the echo probes talk over it. A kernel without networking has no
   `lo`, and then nothing is done. */
static void loopback_up(void) {
    int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (s < 0)
        return;
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    strncpy(ifr.ifr_name, "lo", IFNAMSIZ - 1);
    if (ioctl(s, SIOCGIFFLAGS, &ifr) == 0) {
        ifr.ifr_flags |= IFF_UP;
        if (ioctl(s, SIOCSIFFLAGS, &ifr) != 0)
            fprintf(stderr, "parkbench-init: bringing lo up: %s\n", strerror(errno));
    }
    close(s);
}

int main(void) {
    static char cmdline[4096], hex[4096], argbuf[2048], envbuf[2048], thp[256], mode[32];
    char *argv[MAX_WORDS + 1], *envp[MAX_WORDS + 1];

    mount_fs("proc", "/proc");
    if (read_file("/proc/cmdline", cmdline, sizeof cmdline) < 0)
        fail("/proc/cmdline");
    if (param(cmdline, "parkbench.root", mode, sizeof mode) && strcmp(mode, "disk") == 0) {
        enter_disk_root(cmdline);
        mount_fs("proc", "/proc");
    }
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

    if (param(cmdline, "parkbench.thp", mode, sizeof mode))
        set_thp(mode);
    loopback_up();

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

    /* From the disk, the programs the command names (arguments that are files) go into the page
       cache first, with their libraries, so that the process maps them from memory as from the
       initramfs (or a container's warm cache), not through faults to the disk. */
    if (param(cmdline, "parkbench.root", mode, sizeof mode) && strcmp(mode, "disk") == 0)
        for (int i = 0; argv[i]; i++)
            if (argv[i][0] == '/')
                warm_program(argv[i], 3);

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
