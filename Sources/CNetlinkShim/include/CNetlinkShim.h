#ifndef CNETLINKSHIM_H
#define CNETLINKSHIM_H
// Static inline wrappers for the libnl/libmnl macros that do not import into Swift.
// Prefixed hsl_ (HotspotLab). Owned by the Netlink module.
#include <libmnl/libmnl.h>
#include <netlink/netlink.h>
#include <netlink/msg.h>
#include <netlink/attr.h>
#include <netlink/handlers.h>
#include <netlink/genl/genl.h>
#include <netlink/genl/ctrl.h>

static inline size_t hsl_mnl_socket_buffer_size(void) { return MNL_SOCKET_BUFFER_SIZE; }
static inline unsigned int hsl_mnl_socket_autopid(void) { return MNL_SOCKET_AUTOPID; }
static inline size_t hsl_nlmsg_align(size_t len) { return MNL_ALIGN(len); }
static inline int hsl_nl_auto_port(void) { return NL_AUTO_PORT; }
static inline int hsl_nl_auto_seq(void) { return NL_AUTO_SEQ; }
static inline int hsl_nlmsgerr_error(const struct nlmsgerr *err) { return err->error; }
#endif
