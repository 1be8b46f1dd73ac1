#ifndef CSYSTEMSHIMS_H
#define CSYSTEMSHIMS_H
// System calls and macros Glibc's module map does not expose. Prefixed hsl_.
#include <sys/types.h>
int hsl_setns(int fd, int nstype);
int hsl_unshare(int flags);
pid_t hsl_gettid(void);
int hsl_clone_newnet(void);
#endif
