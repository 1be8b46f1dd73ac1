#include "CTLSShim.h"
#include <string.h>

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
