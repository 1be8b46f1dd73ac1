#define _GNU_SOURCE
#include <fcntl.h>
#include <sched.h>
#include <spawn.h>
#include <unistd.h>
#include <sys/mount.h>
#include <sys/syscall.h>
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
