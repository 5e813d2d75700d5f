#include "hrdma_test.h"

#include <hrdma/hrdma.h>
#include <string.h>

/* Bitwise reference CRC-32C (reflected, poly 0x82F63B78, init/xorout ~0). */
static uint32_t ref_crc32c(const unsigned char *p, size_t len)
{
    uint32_t crc = 0xFFFFFFFFu;
    size_t i;
    int k;

    for (i = 0; i < len; i++) {
        crc ^= p[i];
        for (k = 0; k < 8; k++) {
            crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1u)));
        }
    }
    return ~crc;
}

static uint32_t be32(const unsigned char *p)
{
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) |
           ((uint32_t)p[2] << 8) | p[3];
}

int main(void)
{
    static unsigned char data[3 * 4096 + 17];
    static unsigned char sums[4 * 64];
    const size_t sizes[] = {0, 1, 511, 512, 513, 4096, 4097, sizeof(data)};
    const uint32_t bpcs[] = {512, 4096};
    size_t i, s, b, bad;
    uint32_t crc;

    for (i = 0; i < sizeof(data); i++) {
        data[i] = (unsigned char)(i * 31 + 7);
    }

    CHECK_EQ(hrdma_crc32c(0, "123456789", 9), 0xE3069283u);
    CHECK_EQ(hrdma_crc32c(0, "", 0), 0);
    /* RFC 3720 B.4: 32 bytes of zeros -> 0x8A9136AA. */
    CHECK_EQ(hrdma_crc32c(0, data + sizeof(data) - 0, 0), 0);
    {
        unsigned char zeros[32] = {0};
        CHECK_EQ(hrdma_crc32c(0, zeros, 32), 0x8A9136AAu);
    }
    OK("known vectors");

    for (i = 0; i <= 100; i++) {
        crc = hrdma_crc32c(0, data, i);
        crc = hrdma_crc32c(crc, data + i, sizeof(data) - i);
        CHECK_EQ(crc, ref_crc32c(data, sizeof(data)));
    }
    OK("chunked equals whole, equals reference");

    for (b = 0; b < 2; b++) {
        for (s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
            size_t len = sizes[s], bpc = bpcs[b];
            size_t chunks = (len + bpc - 1) / bpc, c;

            memset(sums, 0xAA, sizeof(sums));
            CHECK_EQ(hrdma_crc32c_chunks_compute(data, len, (uint32_t)bpc, sums,
                                                 4 * chunks), 0);
            for (c = 0; c < chunks; c++) {
                size_t n = (len - c * bpc < bpc) ? len - c * bpc : bpc;
                CHECK_EQ(be32(sums + 4 * c), ref_crc32c(data + c * bpc, n));
            }
            CHECK_EQ(sums[4 * chunks], 0xAA); /* wrote nothing past the end */
            CHECK_EQ(hrdma_crc32c_chunks_verify(data, len, (uint32_t)bpc, sums,
                                                4 * chunks, &bad), 0);
            if (chunks > 0) {
                /* Too small a sums buffer is rejected. */
                CHECK_EQ(hrdma_crc32c_chunks_compute(data, len, (uint32_t)bpc,
                                                     sums, 4 * chunks - 1),
                         HRDMA_ERR_INVALID);
                /* Flip a byte in the last chunk and in the first. */
                size_t pos = len - 1;
                data[pos] ^= 0x01;
                bad = (size_t)-1;
                CHECK_EQ(hrdma_crc32c_chunks_verify(data, len, (uint32_t)bpc,
                                                    sums, 4 * chunks, &bad),
                         HRDMA_ERR_CHECKSUM);
                CHECK_EQ(bad, (pos / bpc) * bpc);
                data[pos] ^= 0x01;
                data[0] ^= 0x80;
                CHECK_EQ(hrdma_crc32c_chunks_verify(data, len, (uint32_t)bpc,
                                                    sums, 4 * chunks, &bad),
                         HRDMA_ERR_CHECKSUM);
                CHECK_EQ(bad, 0);
                data[0] ^= 0x80;
            }
        }
    }
    /* A flipped byte in a middle chunk reports that chunk's offset. */
    CHECK_EQ(hrdma_crc32c_chunks_compute(data, sizeof(data), 512, sums,
                                         sizeof(sums)), 0);
    data[5 * 512 + 100] ^= 0xFF;
    CHECK_EQ(hrdma_crc32c_chunks_verify(data, sizeof(data), 512, sums,
                                        sizeof(sums), &bad), HRDMA_ERR_CHECKSUM);
    CHECK_EQ(bad, 5 * 512);
    data[5 * 512 + 100] ^= 0xFF;
    CHECK_EQ(hrdma_crc32c_chunks_compute(data, 10, 0, sums, sizeof(sums)),
             HRDMA_ERR_INVALID);
    OK("chunk layout, big-endian sums, bad chunk offset (bpc 512, 4096)");
    printf("1..%d\n", hrdma_test_n);
    return 0;
}
