#ifndef CTLSSHIM_H
#define CTLSSHIM_H
// Static inline wrappers for the OpenSSL macros that do not import into Swift (the swift-nio style).
// Prefixed hsl_ (HotspotLab). Used by the helper SDK's TLS client and the lab portal's TLS server.
#include <sys/types.h>
#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

/// SNI: SSL_set_tlsext_host_name (a macro around SSL_ctrl).
static inline int hsl_SSL_set_tlsext_host_name(SSL *ssl, const char *name) {
    return (int)SSL_set_tlsext_host_name(ssl, name);
}
/// SSL_CTX_set_min_proto_version (a macro around SSL_CTX_ctrl).
static inline int hsl_SSL_CTX_set_min_proto_version(SSL_CTX *ctx, int version) {
    return (int)SSL_CTX_set_min_proto_version(ctx, version);
}
static inline int hsl_TLS1_2_VERSION(void) { return TLS1_2_VERSION; }
/// A peer that closes without close_notify ends the stream (as plain TCP's EOF) instead of an error.
static inline void hsl_SSL_CTX_ignore_unexpected_eof(SSL_CTX *ctx) {
    SSL_CTX_set_options(ctx, SSL_OP_IGNORE_UNEXPECTED_EOF);
}
/// SSL_CTX_set_mode(ctx, SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_ENABLE_PARTIAL_WRITE) (a macro).
static inline void hsl_SSL_CTX_set_nonblocking_modes(SSL_CTX *ctx) {
    SSL_CTX_set_mode(ctx, SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_ENABLE_PARTIAL_WRITE);
}
static inline int hsl_SSL_VERIFY_PEER(void) { return SSL_VERIFY_PEER; }
static inline int hsl_SSL_FILETYPE_PEM(void) { return SSL_FILETYPE_PEM; }
static inline long hsl_X509_V_OK(void) { return X509_V_OK; }

struct sockaddr;
/// accept4(2) with SOCK_CLOEXEC (Glibc's Swift module does not export accept4): the lab runner's process serves the
/// lab internet while its other threads spawn daemons, and a connection must not live on in one of them.
int hsl_accept_cloexec(int listener, struct sockaddr *address, unsigned int *length);

/// SSL_connect / SSL_accept / SSL_read / SSL_write / SSL_shutdown with SIGPIPE blocked on the calling thread
/// (OpenSSL writes to the socket with write(2), so a peer that went away would otherwise kill the process with
/// SIGPIPE); a SIGPIPE raised meanwhile is consumed, errno is kept for SSL_get_error.
int hsl_SSL_connect(SSL *ssl);
int hsl_SSL_accept(SSL *ssl);
int hsl_SSL_read(SSL *ssl, void *buffer, int count);
int hsl_SSL_write(SSL *ssl, const void *buffer, int count);
int hsl_SSL_shutdown(SSL *ssl);
/// write(2) under the same guard, for a pipe or FIFO whose reader may be gone (perf's control FIFO): -1 and EPIPE
/// instead of a SIGPIPE (the process's own, a stop request in hotspot-lab, stays for its output).
ssize_t hsl_write_nosigpipe(int fd, const void *buf, size_t len);

/// The OpenSSL error queue as text ("error:0A000086:SSL routines::certificate verify failed; ..."),
/// emptied; writes at most size-1 bytes and a NUL. Returns the number of errors read.
int hsl_drain_errors(char *buffer, size_t size);
/// A server certificate for `name`, issued by the CA of ca_cert_file and ca_key_file (PEM), as
/// `openssl req -x509 -CA -newkey ec` makes it: a new P-256 key; a random 64-bit serial; valid from now for `days`
/// days; subject CN=name; subjectAltName `san` ("DNS:name" or "IP:address"); basicConstraints critical CA:FALSE;
/// keyUsage critical digitalSignature; extendedKeyUsage serverAuth; subject and authority key identifiers; signed
/// with SHA-256. Writes the certificate to cert_file and the key (PKCS#8, mode 0600) to key_file, as PEM.
/// Returns 1; 0 with what failed in errbuf (at most errlen-1 bytes and a NUL).
int hsl_issue_certificate(const char *ca_cert_file, const char *ca_key_file, const char *name, const char *san,
                          int days, const char *cert_file, const char *key_file, char *errbuf, size_t errlen);
#endif
