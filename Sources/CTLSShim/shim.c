#include "CTLSShim.h"
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <time.h>

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
