#ifndef CNETLINKSHIM_H
#define CNETLINKSHIM_H
// Static inline wrappers for the libnl/libmnl macros that do not import into Swift.
// Prefixed hsl_ (HotspotLab). Owned by the Netlink module.
#include <libmnl/libmnl.h>
static inline size_t hsl_mnl_socket_buffer_size(void) { return MNL_SOCKET_BUFFER_SIZE; }
#endif
