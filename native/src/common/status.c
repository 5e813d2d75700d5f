#include "hrdma_int.h"

#include <stdarg.h>
#include <stdio.h>

const char *hrdma_status_str(int status)
{
    switch (status) {
    case HRDMA_INPROGRESS:      return "operation in progress";
    case HRDMA_OK:              return "success";
    case HRDMA_ERR_INVALID:     return "invalid argument or configuration";
    case HRDMA_ERR_NOMEM:       return "out of memory";
    case HRDMA_ERR_IO:          return "input/output error";
    case HRDMA_ERR_UNREACHABLE: return "destination unreachable";
    case HRDMA_ERR_PEER_FAILED: return "peer failed";
    case HRDMA_ERR_CANCELED:    return "operation canceled";
    case HRDMA_ERR_TIMEOUT:     return "timed out";
    case HRDMA_ERR_UNSUPPORTED: return "unsupported operation";
    case HRDMA_ERR_CLOSED:      return "object already closed";
    case HRDMA_ERR_CHECKSUM:    return "checksum mismatch";
    case HRDMA_ERR_BUSY:        return "resource busy";
    case HRDMA_ERR_NO_DEVICE:   return "no such device";
    case HRDMA_ERR_TRUNCATED:   return "message truncated";
    case HRDMA_ERR_AUTH:        return "authentication tag mismatch";
    default:                    return "unknown status";
    }
}

void hrdma_log_error(const char *fmt, ...)
{
    char line[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    fprintf(stderr, "hrdma: %s\n", line);
}

int hrdma_status_from_ucs(ucs_status_t status)
{
    switch (status) {
    case UCS_OK:
        return HRDMA_OK;
    case UCS_INPROGRESS:
        return HRDMA_INPROGRESS;
    case UCS_ERR_NO_MEMORY:
        return HRDMA_ERR_NOMEM;
    case UCS_ERR_INVALID_PARAM:
    case UCS_ERR_INVALID_ADDR:
    case UCS_ERR_NO_ELEM:
        return HRDMA_ERR_INVALID;
    case UCS_ERR_UNREACHABLE:
    case UCS_ERR_REJECTED:
    /* UCX 1.13 reports a refused client connection (no listener) as
     * NOT_CONNECTED; a connected peer that goes away gives CONNECTION_RESET
     * or ENDPOINT_TIMEOUT instead. */
    case UCS_ERR_NOT_CONNECTED:
        return HRDMA_ERR_UNREACHABLE;
    case UCS_ERR_CONNECTION_RESET:
    case UCS_ERR_ENDPOINT_TIMEOUT:
        return HRDMA_ERR_PEER_FAILED;
    case UCS_ERR_CANCELED:
        return HRDMA_ERR_CANCELED;
    case UCS_ERR_TIMED_OUT:
        return HRDMA_ERR_TIMEOUT;
    case UCS_ERR_UNSUPPORTED:
        return HRDMA_ERR_UNSUPPORTED;
    case UCS_ERR_BUSY:
    case UCS_ERR_ALREADY_EXISTS:
        return HRDMA_ERR_BUSY;
    case UCS_ERR_NO_DEVICE:
        return HRDMA_ERR_NO_DEVICE;
    case UCS_ERR_MESSAGE_TRUNCATED:
        return HRDMA_ERR_TRUNCATED;
    default:
        return HRDMA_ERR_IO;
    }
}
