#include "hrdma_test.h"

#include <hrdma/hrdma.h>
#include <string.h>

int main(void)
{
    /* The GCM spec's test case 14: AES-256, zero key and nonce, 16 zero bytes */
    static const unsigned char ct14[16] = {
        0xce, 0xa7, 0x40, 0x3d, 0x4d, 0x60, 0x6b, 0x6e,
        0x07, 0x4e, 0xc5, 0xd3, 0xba, 0xf3, 0x9d, 0x18};
    static const unsigned char tag14[16] = {
        0xd0, 0xd1, 0xc8, 0xa7, 0x99, 0x99, 0x6b, 0xf0,
        0x26, 0x5b, 0x98, 0xb5, 0xd4, 0x8a, 0xb9, 0x19};
    static unsigned char a[100003 + 16], b[100003 + 16], plain[100003];
    unsigned char key[32] = {0}, nonce[12] = {0}, buf[32] = {0};
    hrdma_gcm_t *seal = NULL, *open = NULL;
    size_t i;

    if (!hrdma_gcm_available()) {
        CHECK_EQ(hrdma_gcm_create(key, 32, 1, &seal), HRDMA_ERR_UNSUPPORTED);
        OK("built without libcrypto: create says unsupported");
        printf("1..%d\n", hrdma_test_n);
        return 0;
    }
    CHECK_EQ(hrdma_gcm_create(key, 24, 1, &seal), HRDMA_ERR_INVALID);
    CHECK_EQ(hrdma_gcm_create(key, 32, 1, &seal), HRDMA_OK);
    CHECK_EQ(hrdma_gcm_create(key, 32, 0, &open), HRDMA_OK);
    CHECK_EQ(hrdma_gcm_seal(seal, nonce, buf, 16, buf), HRDMA_OK);
    CHECK(memcmp(buf, ct14, 16) == 0);
    CHECK(memcmp(buf + 16, tag14, 16) == 0);
    CHECK_EQ(hrdma_gcm_open(open, nonce, buf, 32), HRDMA_OK);
    for (i = 0; i < 16; i++) {
        CHECK_EQ(buf[i], 0);
    }
    OK("AES-256-GCM test case 14, in place both ways");

    /* an odd length, in place and across buffers: the same bytes */
    for (i = 0; i < sizeof(plain); i++) {
        plain[i] = (unsigned char)(i * 131 + 17);
    }
    memcpy(a, plain, sizeof(plain));
    nonce[11] = 7;
    CHECK_EQ(hrdma_gcm_seal(seal, nonce, a, sizeof(plain), a), HRDMA_OK);
    CHECK_EQ(hrdma_gcm_seal(seal, nonce, plain, sizeof(plain), b), HRDMA_OK);
    CHECK(memcmp(a, b, sizeof(a)) == 0);
    CHECK(memcmp(a, plain, 64) != 0);
    CHECK_EQ(hrdma_gcm_seal(seal, nonce, a + 8, 100, a), HRDMA_ERR_INVALID);
    CHECK_EQ(hrdma_gcm_open(open, nonce, a, sizeof(a)), HRDMA_OK);
    CHECK(memcmp(a, plain, sizeof(plain)) == 0);
    OK("odd length: in place equals across buffers; opened in place");

    /* a flipped byte, a flipped tag bit, another nonce, too short: refused */
    b[5000] ^= 1;
    CHECK_EQ(hrdma_gcm_open(open, nonce, b, sizeof(b)), HRDMA_ERR_AUTH);
    CHECK_EQ(hrdma_gcm_seal(seal, nonce, plain, sizeof(plain), b), HRDMA_OK);
    b[sizeof(b) - 1] ^= 0x80;
    CHECK_EQ(hrdma_gcm_open(open, nonce, b, sizeof(b)), HRDMA_ERR_AUTH);
    CHECK_EQ(hrdma_gcm_seal(seal, nonce, plain, sizeof(plain), b), HRDMA_OK);
    nonce[11] = 8;
    CHECK_EQ(hrdma_gcm_open(open, nonce, b, sizeof(b)), HRDMA_ERR_AUTH);
    CHECK_EQ(hrdma_gcm_open(open, nonce, b, 15), HRDMA_ERR_AUTH);
    CHECK_EQ(hrdma_gcm_seal(open, nonce, plain, 16, b), HRDMA_ERR_INVALID);
    OK("altered data, altered tag, wrong nonce, short message: refused");

    hrdma_gcm_destroy(seal);
    hrdma_gcm_destroy(open);
    printf("1..%d\n", hrdma_test_n);
    return 0;
}
