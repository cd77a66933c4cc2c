/* leftover: a program that leaves things behind, for the kit's own test of `isolation: process`
 * (no article's). Says what it finds, then leaves a file in its working folder and a process
 * that sleeps an hour (in a session of its own, its output closed) and exits 0:
 *
 *   result files=F procs=P tmpdir_here=T
 *
 * F is the entries of its working folder, P the processes it sees in /proc (its container's,
 * itself and the sampler included), T is 1 when TMPDIR names its working folder. */
#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Entries of `path` (without . and ..); those whose name starts with a digit when `digits`. */
static int entries(const char *path, int digits)
{
    DIR *dir = opendir(path);
    if (!dir)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(dir)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        if (!digits || isdigit((unsigned char)e->d_name[0]))
            n++;
    }
    closedir(dir);
    return n;
}

int main(void)
{
    char here[PATH_MAX];
    const char *tmpdir = getenv("TMPDIR");
    int tmpdir_here = getcwd(here, sizeof here) && tmpdir && strcmp(tmpdir, here) == 0;
    printf("result files=%d procs=%d tmpdir_here=%d\n", entries(".", 0), entries("/proc", 1),
           tmpdir_here);
    fflush(stdout);
    int fd = open("left", O_CREAT | O_WRONLY, 0600);
    if (fd >= 0)
        close(fd);
    pid_t child = fork();
    if (child == 0) {
        setsid();
        int null = open("/dev/null", O_RDWR);
        dup2(null, 0);
        dup2(null, 1);
        dup2(null, 2);
        sleep(3600);
        _exit(0);
    }
    return child < 0;
}
