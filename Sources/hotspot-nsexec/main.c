// hotspot-nsexec: enter a network namespace and exec a command.
//   hotspot-nsexec /run/netns/NAME -- command [args...]
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc < 4 || strcmp(argv[2], "--") != 0) {
        fprintf(stderr, "usage: hotspot-nsexec NETNS-PATH -- COMMAND [ARG...]\n");
        return 2;
    }
    int fd = open(argv[1], O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        fprintf(stderr, "hotspot-nsexec: open netns %s: %s\n", argv[1], strerror(errno));
        return 127;
    }
    if (setns(fd, CLONE_NEWNET) != 0) {
        fprintf(stderr, "hotspot-nsexec: setns %s: %s\n", argv[1], strerror(errno));
        return 127;
    }
    close(fd);
    execvp(argv[3], &argv[3]);
    fprintf(stderr, "hotspot-nsexec: exec %s: %s\n", argv[3], strerror(errno));
    return 127;
}
