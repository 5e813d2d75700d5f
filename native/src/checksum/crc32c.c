/*
 * CRC32C in the HDFS layout, on ISA-L.
 *
 * ISA-L's crc32_iscsi(buf, len, init) runs the reflected Castagnoli CRC from
 * init without inverting on entry or exit, so the standard CRC-32C (the one
 * java.util.zip.CRC32C computes) is ~crc32_iscsi(buf, len, ~crc).
 */
#include "hrdma_int.h"

#include <isa-l/crc.h>
#include <string.h>

uint32_t hrdma_crc32c(uint32_t crc, const void *buf, size_t len)
{
    const unsigned char *p = buf;

    /* crc32_iscsi takes an int length: feed it in bounded pieces. */
    crc = ~crc;
    while (len > 0) {
        int n = (len > (1u << 30)) ? (1 << 30) : (int)len;

        crc = crc32_iscsi((unsigned char *)p, n, crc);
        p   += n;
        len -= (size_t)n;
    }
    return ~crc;
}

static int hrdma_crc32c_chunks_check(size_t len, uint32_t bpc, size_t sums_len)
{
    size_t chunks;

    if (bpc == 0) {
        return HRDMA_ERR_INVALID;
    }
    chunks = len / bpc + ((len % bpc) != 0);
    if (sums_len / 4 < chunks) {
        return HRDMA_ERR_INVALID;
    }
    return HRDMA_OK;
}

int hrdma_crc32c_chunks_compute(const void *data, size_t len,
                                uint32_t bytes_per_checksum,
                                void *sums, size_t sums_len)
{
    const unsigned char *p   = data;
    unsigned char       *out = sums;
    size_t off;
    int status;

    status = hrdma_crc32c_chunks_check(len, bytes_per_checksum, sums_len);
    if (status != HRDMA_OK) {
        return status;
    }
    for (off = 0; off < len; off += bytes_per_checksum) {
        size_t   n   = (len - off < bytes_per_checksum) ? len - off
                                                        : bytes_per_checksum;
        uint32_t crc = hrdma_crc32c(0, p + off, n);

        out[0] = (unsigned char)(crc >> 24);
        out[1] = (unsigned char)(crc >> 16);
        out[2] = (unsigned char)(crc >> 8);
        out[3] = (unsigned char)crc;
        out   += 4;
    }
    return HRDMA_OK;
}

int hrdma_crc32c_chunks_verify(const void *data, size_t len,
                               uint32_t bytes_per_checksum,
                               const void *sums, size_t sums_len,
                               size_t *bad_offset_p)
{
    const unsigned char *p  = data;
    const unsigned char *in = sums;
    size_t off;
    int status;

    status = hrdma_crc32c_chunks_check(len, bytes_per_checksum, sums_len);
    if (status != HRDMA_OK) {
        return status;
    }
    for (off = 0; off < len; off += bytes_per_checksum) {
        size_t   n   = (len - off < bytes_per_checksum) ? len - off
                                                        : bytes_per_checksum;
        uint32_t crc = hrdma_crc32c(0, p + off, n);
        uint32_t exp = ((uint32_t)in[0] << 24) | ((uint32_t)in[1] << 16) |
                       ((uint32_t)in[2] << 8) | (uint32_t)in[3];

        if (crc != exp) {
            if (bad_offset_p != NULL) {
                *bad_offset_p = off;
            }
            return HRDMA_ERR_CHECKSUM;
        }
        in += 4;
    }
    return HRDMA_OK;
}
