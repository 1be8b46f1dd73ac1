#ifndef CSYSTEMSHIMS_H
#define CSYSTEMSHIMS_H
// System calls and macros Glibc's module map does not expose. Prefixed hsl_.
#include <sys/types.h>
#include <spawn.h>
int hsl_setns(int fd, int nstype);
int hsl_unshare(int flags);
/* Standard output or error is a pipe or socket whose reader is gone (POLLERR/POLLHUP); async-signal-safe. */
int hsl_output_gone(void);
pid_t hsl_gettid(void);
int hsl_clone_newnet(void);

// posix_spawn: change directory in the child (glibc's _np extension, hidden without _GNU_SOURCE).
int hsl_spawn_file_actions_addchdir(posix_spawn_file_actions_t *actions, const char *path);
// posix_spawn: close every descriptor >= from in the child (glibc 2.34+).
int hsl_spawn_file_actions_addclosefrom(posix_spawn_file_actions_t *actions, int from);

// pipe2(O_CLOEXEC).
int hsl_pipe_cloexec(int fds[2]);

// Mounts for iproute2-compatible named namespaces (/run/netns/NAME).
int hsl_bind_mount(const char *source, const char *target);
int hsl_make_shared_rec(const char *target);
int hsl_make_self_bind(const char *target);
int hsl_umount_detach(const char *target);

// AF_PACKET (netpacket/packet.h is not in Glibc's module map): a SOCK_DGRAM packet socket for IPv4 on one
// interface, what a DHCP client uses before the interface has an address. Created with protocol 0 and then bound,
// so the bind is the socket's first registration (no RCU grace period, as re-binding a running one costs).
int hsl_packet_ipv4_open(int ifindex);
// The interface's hardware address (6 bytes) from the bound socket's name; -1 and errno on failure.
int hsl_packet_hwaddr(int fd, unsigned char out[6]);
// One IPv4 datagram to the Ethernet broadcast address on ifindex.
ssize_t hsl_packet_send_broadcast(int fd, int ifindex, const void *buf, size_t len);
// The next IPv4 datagram; *outgoing is 1 when it is one this host sent (packet sockets see both directions).
ssize_t hsl_packet_receive(int fd, void *buf, size_t len, int *outgoing);
// A capture of everything on one interface (SOCK_RAW, ETH_P_ALL, kernel timestamps on): the air on hwsim0.
int hsl_packet_capture_open(int ifindex);
// The next frame, at most len bytes of it; *wire_length is its whole length, *seconds and *nanoseconds the kernel's
// receive time (the clock's when the kernel gave none). dont_wait: only a frame already queued (MSG_DONTWAIT).
// Returns the bytes stored, -1 and errno on failure (EAGAIN: none queued, or none within the receive timeout).
ssize_t hsl_packet_capture_receive(int fd, void *buf, size_t len, size_t *wire_length, long long *seconds, long *nanoseconds, int dont_wait);
#endif
