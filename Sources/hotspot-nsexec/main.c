// hotspot-nsexec: enter a network namespace and exec a command (same pid).
//   hotspot-nsexec [--die-with PID] [--resolv-conf FILE] NETNS-PATH|-|--new-netns -- command [args...]
// `--new-netns`: a fresh network namespace with only `lo`, up (the evaluation provider's sandbox).
//   hotspot-nsexec --guard PID JOURNAL
// `--guard`: a lab's guardian. It waits for its parent PID to end; if the parent ends first (even by SIGKILL),
// it SIGKILLs every process of the lab's journal (`process PID STARTTIME` lines, start time checked against
// /proc so a reused pid is spared), then exits. SIGTERM while the parent lives (the lab's own teardown) ends it
// quietly. It covers daemons that drop the parent-death signal themselves (dnsmasq changes credentials).
// NETNS-PATH `-` stays in the current namespace. `--die-with PID` asks the kernel for SIGKILL when the
// thread that started us ends (PR_SET_PDEATHSIG, kept across exec), and exits at once when our parent is
// no longer PID (it died before the request took hold): a lab's daemons end with the lab's process, even
// when that process is killed with SIGKILL.
// `--resolv-conf FILE`: the command sees FILE as /etc/resolv.conf. hotspot-nsexec unshares a private mount
// namespace (slave of the current one, so later host mounts still propagate in) and bind-mounts FILE over
// /etc/resolv.conf there; the command and everything it starts resolve names with FILE's servers (glibc,
// curl, Python, busybox), and nothing outside changes. A lab station's FILE is its DHCP client's resolv.conf,
// rewritten in place on each lease (the bind holds the inode), so processes started before the lease see it.
// `ip netns exec` does the same with /etc/netns/NAME/resolv.conf, but only for `ip netns` names and a
// writable /etc (the VM's root is the host's, read-only over 9p).
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

static volatile sig_atomic_t guard_signal = 0;
static void on_guard_signal(int sig) { guard_signal = sig; }

// Field 22 of /proc/PID/stat (start time in clock ticks), 0 when unreadable.
static unsigned long long start_time(long pid) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    FILE *file = fopen(path, "re");
    if (!file) return 0;
    char buffer[4096];
    size_t count = fread(buffer, 1, sizeof buffer - 1, file);
    fclose(file);
    buffer[count] = '\0';
    char *close = strrchr(buffer, ')');
    if (!close) return 0;
    // After ") ": field 3 (state) is the first; field 22 is the 20th.
    char *cursor = close + 1;
    for (int field = 3; field < 22 && cursor; field++) {
        cursor = strchr(cursor + 1, ' ');
    }
    return cursor ? strtoull(cursor + 1, NULL, 10) : 0;
}

static int guard(long parent, const char *journal) {
    signal(SIGINT, SIG_IGN);   // the terminal's Ctrl-C is for the lab's process, which tears down
    signal(SIGHUP, SIG_IGN);
    signal(SIGPIPE, SIG_IGN);
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = on_guard_signal;
    sigemptyset(&action.sa_mask);
    sigaction(SIGTERM, &action, NULL);
    sigaction(SIGUSR1, &action, NULL);
    if (prctl(PR_SET_PDEATHSIG, SIGUSR1) != 0) {
        fprintf(stderr, "hotspot-nsexec --guard: prctl PR_SET_PDEATHSIG: %s\n", strerror(errno));
        return 127;
    }
    for (;;) {
        if (getppid() != (pid_t)parent) break;            // the parent is gone
        if (guard_signal == SIGTERM) return 0;             // the lab tears itself down
        guard_signal = 0;
        sleep(1);  // woken early by either signal; the loop rechecks
    }
    FILE *file = fopen(journal, "re");
    if (!file) return 0;  // nothing journaled (or already cleaned)
    char line[256];
    while (fgets(line, sizeof line, file)) {
        long pid = 0;
        unsigned long long start = 0;
        if (sscanf(line, "process %ld %llu", &pid, &start) == 2 && pid > 1 && start != 0 && start_time(pid) == start) {
            kill((pid_t)pid, SIGKILL);
        }
    }
    fclose(file);
    return 0;
}

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

// A private mount namespace in which `file` is /etc/resolv.conf. Returns 0, or 127 after printing why.
static int bind_resolv_conf(const char *file) {
    static const char target[] = "/etc/resolv.conf";
    int fd = open(file, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        fprintf(stderr, "hotspot-nsexec: --resolv-conf %s: %s\n", file, strerror(errno));
        return 127;
    }
    close(fd);
    struct stat target_stat;
    if (stat(target, &target_stat) != 0 && errno == ENOENT) {
        // Nothing to mount over (no /etc/resolv.conf, or a dangling symlink such as systemd-resolved's stub when
        // it is not running): names resolve as they would outside, which without the file is not at all.
        fprintf(stderr, "hotspot-nsexec: warning: %s does not exist (or is a dangling symlink); --resolv-conf %s not bound\n",
                target, file);
        return 0;
    }
    if (unshare(CLONE_NEWNS) != 0) {
        fprintf(stderr, "hotspot-nsexec: unshare(CLONE_NEWNS) for --resolv-conf %s: %s\n", file, strerror(errno));
        return 127;
    }
    // Slave, not private: mounts made outside later (a new lab namespace under /run/netns) still appear here,
    // and the bind below never propagates out.
    if (mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) != 0) {
        fprintf(stderr, "hotspot-nsexec: make / a slave mount for --resolv-conf %s: %s\n", file, strerror(errno));
        return 127;
    }
    if (mount(file, target, NULL, MS_BIND, NULL) != 0) {
        fprintf(stderr, "hotspot-nsexec: bind-mount %s over %s: %s\n", file, target, strerror(errno));
        return 127;
    }
    return 0;
}

static int usage(void) {
    fprintf(stderr, "usage: hotspot-nsexec [--die-with PID] [--resolv-conf FILE] NETNS-PATH|-|--new-netns -- COMMAND [ARG...]\n"
                    "       hotspot-nsexec --guard PID JOURNAL\n");
    return 2;
}

int main(int argc, char **argv) {
    int first = 1;
    if (argc == 4 && strcmp(argv[1], "--guard") == 0) {
        char *end = NULL;
        long parent = strtol(argv[2], &end, 10);
        if (end == argv[2] || *end != '\0' || parent <= 1) {
            fprintf(stderr, "hotspot-nsexec --guard %s: expected a process id\n", argv[2]);
            return 2;
        }
        return guard(parent, argv[3]);
    }
    if (argc > 2 && strcmp(argv[1], "--die-with") == 0) {
        char *end = NULL;
        errno = 0;
        long parent = strtol(argv[2], &end, 10);
        if (errno != 0 || end == argv[2] || *end != '\0' || parent <= 1) {
            fprintf(stderr, "hotspot-nsexec: --die-with %s: expected a process id\n", argv[2]);
            return 2;
        }
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) {
            fprintf(stderr, "hotspot-nsexec: prctl PR_SET_PDEATHSIG: %s\n", strerror(errno));
            return 127;
        }
        if (getppid() != (pid_t)parent) {
            const char *name = "";
            for (int i = 3; i + 1 < argc; i++) {
                if (strcmp(argv[i], "--") == 0) { name = argv[i + 1]; break; }
            }
            fprintf(stderr, "hotspot-nsexec: parent %ld already gone; not starting %s\n", parent, name);
            return 127;
        }
        first = 3;
    }
    const char *resolv_conf = NULL;
    if (argc - first > 1 && strcmp(argv[first], "--resolv-conf") == 0) {
        resolv_conf = argv[first + 1];
        first += 2;
    }
    if (argc - first < 3 || strcmp(argv[first + 1], "--") != 0) return usage();
    const char *netns = argv[first];
    char **command = &argv[first + 2];
    if (strcmp(netns, "--new-netns") == 0) {
        int rc = new_netns();
        if (rc != 0) return rc;
    } else if (strcmp(netns, "-") != 0) {
        int fd = open(netns, O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            fprintf(stderr, "hotspot-nsexec: open netns %s: %s\n", netns, strerror(errno));
            return 127;
        }
        if (setns(fd, CLONE_NEWNET) != 0) {
            fprintf(stderr, "hotspot-nsexec: setns %s: %s\n", netns, strerror(errno));
            return 127;
        }
        close(fd);
    }
    if (resolv_conf) {
        int rc = bind_resolv_conf(resolv_conf);
        if (rc != 0) return rc;
    }
    execvp(command[0], command);
    fprintf(stderr, "hotspot-nsexec: exec %s: %s\n", command[0], strerror(errno));
    return 127;
}
