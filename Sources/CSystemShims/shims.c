#define _GNU_SOURCE
#include <sched.h>
#include <unistd.h>
#include <sys/syscall.h>
#include "CSystemShims.h"
int hsl_setns(int fd, int nstype) { return setns(fd, nstype); }
int hsl_unshare(int flags) { return unshare(flags); }
pid_t hsl_gettid(void) { return (pid_t)syscall(SYS_gettid); }
int hsl_clone_newnet(void) { return CLONE_NEWNET; }
