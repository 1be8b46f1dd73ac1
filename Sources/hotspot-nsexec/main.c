// hotspot-nsexec: enter a network namespace and exec a command.
//   hotspot-nsexec /run/netns/NAME -- command [args...]
//   hotspot-nsexec --new-netns -- command [args...]
//     (a fresh network namespace with only `lo`, up: the evaluation provider's sandbox)
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

// Unshares the network namespace and brings its loopback up. Returns 0, or 127 after printing why.
static int new_netns(void) {
    if (unshare(CLONE_NEWNET) != 0) {
        fprintf(stderr, "hotspot-nsexec: unshare(CLONE_NEWNET): %s\n", strerror(errno));
        return 127;
    }
    int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (s < 0) {
        fprintf(stderr, "hotspot-nsexec: socket for lo in the new netns: %s\n", strerror(errno));
        return 127;
    }
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    strncpy(ifr.ifr_name, "lo", IFNAMSIZ - 1);
    if (ioctl(s, SIOCGIFFLAGS, &ifr) != 0) {
        fprintf(stderr, "hotspot-nsexec: SIOCGIFFLAGS lo in the new netns: %s\n", strerror(errno));
        close(s);
        return 127;
    }
    ifr.ifr_flags |= IFF_UP;
    if (ioctl(s, SIOCSIFFLAGS, &ifr) != 0) {
        fprintf(stderr, "hotspot-nsexec: bring lo up in the new netns: %s\n", strerror(errno));
        close(s);
        return 127;
    }
    close(s);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 4 || strcmp(argv[2], "--") != 0) {
        fprintf(stderr, "usage: hotspot-nsexec NETNS-PATH -- COMMAND [ARG...]\n"
                        "       hotspot-nsexec --new-netns -- COMMAND [ARG...]\n");
        return 2;
    }
    if (strcmp(argv[1], "--new-netns") == 0) {
        int rc = new_netns();
        if (rc != 0) return rc;
    } else {
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
    }
    execvp(argv[3], &argv[3]);
    fprintf(stderr, "hotspot-nsexec: exec %s: %s\n", argv[3], strerror(errno));
    return 127;
}
