#define _GNU_SOURCE
#include "CTLSShim.h"
#include <sys/socket.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/bn.h>

typedef struct { sigset_t old; int pending_before; } hsl_sigpipe_state;

static void hsl_sigpipe_block(hsl_sigpipe_state *state) {
    sigset_t block, pending;
    sigemptyset(&block);
    sigaddset(&block, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &block, &state->old);
    sigemptyset(&pending);
    sigpending(&pending);
    state->pending_before = sigismember(&pending, SIGPIPE) == 1;
}

static void hsl_sigpipe_restore(const hsl_sigpipe_state *state) {
    int saved = errno;
    if (!state->pending_before) {
        sigset_t pending, block;
        sigemptyset(&pending);
        sigpending(&pending);
        if (sigismember(&pending, SIGPIPE) == 1) {
            struct timespec zero = {0, 0};
            sigemptyset(&block);
            sigaddset(&block, SIGPIPE);
            sigtimedwait(&block, NULL, &zero);
        }
    }
    pthread_sigmask(SIG_SETMASK, &state->old, NULL);
    errno = saved;
}

#define HSL_NOSIGPIPE(call) do { hsl_sigpipe_state s; hsl_sigpipe_block(&s); int rc = (call); hsl_sigpipe_restore(&s); return rc; } while (0)

int hsl_SSL_connect(SSL *ssl) { HSL_NOSIGPIPE(SSL_connect(ssl)); }
int hsl_SSL_accept(SSL *ssl) { HSL_NOSIGPIPE(SSL_accept(ssl)); }
int hsl_SSL_read(SSL *ssl, void *buffer, int count) { HSL_NOSIGPIPE(SSL_read(ssl, buffer, count)); }
int hsl_SSL_write(SSL *ssl, const void *buffer, int count) { HSL_NOSIGPIPE(SSL_write(ssl, buffer, count)); }
int hsl_SSL_shutdown(SSL *ssl) { HSL_NOSIGPIPE(SSL_shutdown(ssl)); }

ssize_t hsl_write_nosigpipe(int fd, const void *buf, size_t len) {
    hsl_sigpipe_state s;
    hsl_sigpipe_block(&s);
    ssize_t n = write(fd, buf, len);
    hsl_sigpipe_restore(&s);
    return n;
}

int hsl_drain_errors(char *buffer, size_t size) {
    if (size == 0) return 0;
    buffer[0] = 0;
    int count = 0;
    unsigned long code;
    while ((code = ERR_get_error()) != 0) {
        char one[256];
        ERR_error_string_n(code, one, sizeof one);
        size_t used = strlen(buffer);
        if (count > 0 && used + 2 < size) { strcat(buffer, "; "); used += 2; }
        if (used + 1 < size) strncat(buffer, one, size - used - 1);
        count++;
    }
    return count;
}

/* hsl_issue_certificate: errbuf gets "what: the OpenSSL errors" (or errno's text for a file). */
static void hsl_fail(char *errbuf, size_t errlen, const char *what) {
    char queue[512];
    if (hsl_drain_errors(queue, sizeof queue) > 0) snprintf(errbuf, errlen, "%s: %s", what, queue);
    else snprintf(errbuf, errlen, "%s", what);
}

static int hsl_add_extension(X509 *cert, X509V3_CTX *ctx, int nid, const char *value) {
    X509_EXTENSION *ext = X509V3_EXT_conf_nid(NULL, ctx, nid, value);
    if (ext == NULL) return 0;
    int ok = X509_add_ext(cert, ext, -1);
    X509_EXTENSION_free(ext);
    return ok;
}

int hsl_issue_certificate(const char *ca_cert_file, const char *ca_key_file, const char *name, const char *san,
                          int days, const char *cert_file, const char *key_file, char *errbuf, size_t errlen) {
    int ok = 0;
    X509 *ca = NULL, *cert = NULL;
    EVP_PKEY *ca_key = NULL, *key = NULL;
    BIGNUM *serial = NULL;
    char what[600];
    if (errlen > 0) errbuf[0] = 0;
    ERR_clear_error();

    BIO *in = BIO_new_file(ca_cert_file, "r");
    if (in != NULL) ca = PEM_read_bio_X509(in, NULL, NULL, NULL);
    BIO_free(in);
    in = ca == NULL ? NULL : BIO_new_file(ca_key_file, "r");
    if (in != NULL) ca_key = PEM_read_bio_PrivateKey(in, NULL, NULL, NULL);
    BIO_free(in);
    if (ca == NULL || ca_key == NULL) {
        snprintf(what, sizeof what, ca == NULL ? "read the CA certificate %s" : "read the CA key %s", ca == NULL ? ca_cert_file : ca_key_file);
        hsl_fail(errbuf, errlen, what);
        goto done;
    }
    if ((key = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256")) == NULL) { hsl_fail(errbuf, errlen, "make a P-256 key"); goto done; }

    unsigned char bytes[8];
    if (RAND_bytes(bytes, sizeof bytes) != 1) { hsl_fail(errbuf, errlen, "make a serial number"); goto done; }
    bytes[0] &= 0x7f;  /* positive */
    bytes[0] |= 0x01;  /* and never zero */
    cert = X509_new();
    serial = BN_bin2bn(bytes, sizeof bytes, NULL);
    X509_NAME *subject = X509_NAME_new();
    int built = cert != NULL && serial != NULL && subject != NULL
        && X509_set_version(cert, 2)
        && BN_to_ASN1_INTEGER(serial, X509_get_serialNumber(cert)) != NULL
        && X509_gmtime_adj(X509_getm_notBefore(cert), 0) != NULL
        && X509_gmtime_adj(X509_getm_notAfter(cert), (long)days * 86400L) != NULL
        && X509_NAME_add_entry_by_txt(subject, "CN", MBSTRING_UTF8, (const unsigned char *)name, -1, -1, 0)
        && X509_set_subject_name(cert, subject)
        && X509_set_issuer_name(cert, X509_get_subject_name(ca))
        && X509_set_pubkey(cert, key);
    X509_NAME_free(subject);
    if (!built) { snprintf(what, sizeof what, "build the certificate of %s", name); hsl_fail(errbuf, errlen, what); goto done; }

    X509V3_CTX ctx;
    X509V3_set_ctx(&ctx, ca, cert, NULL, NULL, 0);
    if (!hsl_add_extension(cert, &ctx, NID_subject_alt_name, san)
        || !hsl_add_extension(cert, &ctx, NID_basic_constraints, "critical,CA:FALSE")
        || !hsl_add_extension(cert, &ctx, NID_key_usage, "critical,digitalSignature")
        || !hsl_add_extension(cert, &ctx, NID_ext_key_usage, "serverAuth")
        || !hsl_add_extension(cert, &ctx, NID_subject_key_identifier, "hash")
        || !hsl_add_extension(cert, &ctx, NID_authority_key_identifier, "keyid:always")) {
        snprintf(what, sizeof what, "add the extensions of %s (subjectAltName %s)", name, san);
        hsl_fail(errbuf, errlen, what);
        goto done;
    }
    if (X509_sign(cert, ca_key, EVP_sha256()) <= 0) {
        snprintf(what, sizeof what, "sign the certificate of %s with %s", name, ca_key_file);
        hsl_fail(errbuf, errlen, what);
        goto done;
    }

    int fd = open(key_file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    FILE *file = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (file == NULL) {
        int error = errno;
        if (fd >= 0) close(fd);
        snprintf(errbuf, errlen, "write the key %s: %s", key_file, strerror(error));
        goto done;
    }
    int written = PEM_write_PrivateKey(file, key, NULL, NULL, 0, NULL, NULL);
    if (fclose(file) != 0 || written != 1) {
        snprintf(what, sizeof what, "write the key %s", key_file);
        hsl_fail(errbuf, errlen, what);
        goto done;
    }
    BIO *out = BIO_new_file(cert_file, "w");
    written = out != NULL && PEM_write_bio_X509(out, cert) == 1;
    if (out == NULL || BIO_free(out) != 1 || !written) {
        snprintf(what, sizeof what, "write the certificate %s", cert_file);
        hsl_fail(errbuf, errlen, what);
        goto done;
    }
    ok = 1;
done:
    BN_free(serial);
    X509_free(cert);
    X509_free(ca);
    EVP_PKEY_free(key);
    EVP_PKEY_free(ca_key);
    return ok;
}

int hsl_accept_cloexec(int listener, struct sockaddr *address, unsigned int *length) {
    socklen_t size = *length;
    int fd = accept4(listener, address, &size, SOCK_CLOEXEC);
    *length = size;
    return fd;
}
