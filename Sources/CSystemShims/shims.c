#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <spawn.h>
#include <unistd.h>
#include <poll.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <sys/socket.h>
#include <string.h>
#include <time.h>
#include <sys/uio.h>
#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include "CSystemShims.h"
int hsl_setns(int fd, int nstype) { return setns(fd, nstype); }
int hsl_unshare(int flags) { return unshare(flags); }
pid_t hsl_gettid(void) { return (pid_t)syscall(SYS_gettid); }
int hsl_clone_newnet(void) { return CLONE_NEWNET; }

int hsl_spawn_file_actions_addchdir(posix_spawn_file_actions_t *actions, const char *path) {
    return posix_spawn_file_actions_addchdir_np(actions, path);
}

int hsl_spawn_file_actions_addclosefrom(posix_spawn_file_actions_t *actions, int from) {
    return posix_spawn_file_actions_addclosefrom_np(actions, from);
}

int hsl_bind_mount(const char *source, const char *target) {
    return mount(source, target, "none", MS_BIND, NULL);
}
int hsl_make_shared_rec(const char *target) {
    return mount("", target, "none", MS_SHARED | MS_REC, NULL);
}
int hsl_make_self_bind(const char *target) {
    return mount(target, target, "none", MS_BIND | MS_REC, NULL);
}
int hsl_umount_detach(const char *target) { return umount2(target, MNT_DETACH); }
int hsl_pipe_cloexec(int fds[2]) { return pipe2(fds, O_CLOEXEC); }

int hsl_packet_ipv4_open(int ifindex) {
    int fd = socket(AF_PACKET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    struct sockaddr_ll addr;
    memset(&addr, 0, sizeof addr);
    addr.sll_family = AF_PACKET;
    addr.sll_protocol = htons(ETH_P_IP);
    addr.sll_ifindex = ifindex;
    if (bind(fd, (struct sockaddr *)&addr, sizeof addr) != 0) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    return fd;
}

int hsl_packet_hwaddr(int fd, unsigned char out[6]) {
    struct sockaddr_ll addr;
    socklen_t length = sizeof addr;
    memset(&addr, 0, sizeof addr);
    if (getsockname(fd, (struct sockaddr *)&addr, &length) != 0) return -1;
    if (addr.sll_halen != 6) { errno = EAFNOSUPPORT; return -1; }
    memcpy(out, addr.sll_addr, 6);
    return 0;
}

ssize_t hsl_packet_send_broadcast(int fd, int ifindex, const void *buf, size_t len) {
    struct sockaddr_ll addr;
    memset(&addr, 0, sizeof addr);
    addr.sll_family = AF_PACKET;
    addr.sll_protocol = htons(ETH_P_IP);
    addr.sll_ifindex = ifindex;
    addr.sll_halen = 6;
    memset(addr.sll_addr, 0xff, 6);
    return sendto(fd, buf, len, 0, (struct sockaddr *)&addr, sizeof addr);
}

ssize_t hsl_packet_receive(int fd, void *buf, size_t len, int *outgoing) {
    struct sockaddr_ll addr;
    socklen_t length = sizeof addr;
    memset(&addr, 0, sizeof addr);
    ssize_t n = recvfrom(fd, buf, len, 0, (struct sockaddr *)&addr, &length);
    if (n >= 0 && outgoing) *outgoing = addr.sll_pkttype == PACKET_OUTGOING;
    return n;
}

int hsl_packet_capture_open(int ifindex) {
    int fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    int on = 1;
    if (setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof on) != 0) goto fail;
    struct sockaddr_ll addr;
    memset(&addr, 0, sizeof addr);
    addr.sll_family = AF_PACKET;
    addr.sll_protocol = htons(ETH_P_ALL);
    addr.sll_ifindex = ifindex;
    if (bind(fd, (struct sockaddr *)&addr, sizeof addr) != 0) goto fail;
    return fd;
fail:;
    int saved = errno;
    close(fd);
    errno = saved;
    return -1;
}

ssize_t hsl_packet_capture_receive(int fd, void *buf, size_t len, size_t *wire_length, long long *seconds, long *nanoseconds, int dont_wait) {
    struct iovec vector = { .iov_base = buf, .iov_len = len };
    union { struct cmsghdr header; char space[CMSG_SPACE(sizeof(struct timespec))]; } control;
    struct msghdr message;
    memset(&message, 0, sizeof message);
    message.msg_iov = &vector;
    message.msg_iovlen = 1;
    message.msg_control = control.space;
    message.msg_controllen = sizeof control.space;
    ssize_t n = recvmsg(fd, &message, MSG_TRUNC | (dont_wait ? MSG_DONTWAIT : 0));
    if (n < 0) return -1;
    *wire_length = (size_t)n;
    struct timespec stamp = { 0, 0 };
    int stamped = 0;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&message); c; c = CMSG_NXTHDR(&message, c)) {
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
            memcpy(&stamp, CMSG_DATA(c), sizeof stamp);
            stamped = 1;
        }
    }
    if (!stamped) clock_gettime(CLOCK_REALTIME, &stamp);
    *seconds = stamp.tv_sec;
    *nanoseconds = stamp.tv_nsec;
    return (size_t)n > len ? (ssize_t)len : n;
}

/* Async-signal-safe (poll(2) on the stack, no allocation): standard output or standard error is a pipe or socket
   whose reader is gone (POLLERR or POLLHUP). SignalService's SIGPIPE handler asks. */
int hsl_output_gone(void) {
    struct pollfd fds[2] = {{.fd = STDOUT_FILENO, .events = 0}, {.fd = STDERR_FILENO, .events = 0}};
    if (poll(fds, 2, 0) <= 0) return 0;
    return ((fds[0].revents | fds[1].revents) & (POLLERR | POLLHUP)) != 0;
}
