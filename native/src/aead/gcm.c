/*
 * AES-GCM over registered memory with OpenSSL's libcrypto (EVP, which uses
 * AES-NI and carry-less multiply where the CPU has them). Why not the JDK's
 * cipher: it runs fast only once C2 has compiled its callers, copies direct
 * buffers through heap chunks, and on a loaded DataNode spent most of an
 * encrypted write in its interpreted GHASH.
 */
#include "hrdma/hrdma.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#ifdef HRDMA_HAVE_OPENSSL
#include <openssl/evp.h>

struct hrdma_gcm {
    EVP_CIPHER_CTX *ctx;
    int encrypt;
};

int hrdma_gcm_available(void)
{
    return 1;
}

int hrdma_gcm_create(const void *key, size_t key_len, int encrypt,
                     hrdma_gcm_t **out)
{
    const EVP_CIPHER *c;
    hrdma_gcm_t *g;
    int ok;

    if (key == NULL || out == NULL) {
        return HRDMA_ERR_INVALID;
    }
    c = key_len == 16 ? EVP_aes_128_gcm() : key_len == 32 ? EVP_aes_256_gcm()
                                                          : NULL;
    if (c == NULL) {
        return HRDMA_ERR_INVALID;
    }
    g = calloc(1, sizeof(*g));
    if (g == NULL) {
        return HRDMA_ERR_NOMEM;
    }
    g->ctx = EVP_CIPHER_CTX_new();
    if (g->ctx == NULL) {
        free(g);
        return HRDMA_ERR_NOMEM;
    }
    g->encrypt = encrypt != 0;
    /* the key schedule once; each message then sets only its nonce */
    ok = g->encrypt ? EVP_EncryptInit_ex(g->ctx, c, NULL, key, NULL)
                    : EVP_DecryptInit_ex(g->ctx, c, NULL, key, NULL);
    if (ok != 1) {
        EVP_CIPHER_CTX_free(g->ctx);
        free(g);
        return HRDMA_ERR_INVALID;
    }
    *out = g;
    return HRDMA_OK;
}

void hrdma_gcm_destroy(hrdma_gcm_t *g)
{
    if (g != NULL) {
        EVP_CIPHER_CTX_free(g->ctx); /* clears the key schedule */
        free(g);
    }
}

int hrdma_gcm_seal(hrdma_gcm_t *g, const uint8_t nonce[HRDMA_GCM_NONCE_BYTES],
                   const void *src, size_t len, void *dst)
{
    int n = 0, f = 0;

    if (g == NULL || !g->encrypt || nonce == NULL || len > INT_MAX
        || (len > 0 && (src == NULL || dst == NULL)) || dst == NULL) {
        return HRDMA_ERR_INVALID;
    }
    if (dst != src && (const char *)dst < (const char *)src + len
        && (const char *)src < (const char *)dst + len + HRDMA_GCM_TAG_BYTES) {
        return HRDMA_ERR_INVALID; /* partial overlap: EVP allows none */
    }
    if (EVP_EncryptInit_ex(g->ctx, NULL, NULL, NULL, nonce) != 1
        || (len > 0 && EVP_EncryptUpdate(g->ctx, dst, &n, src, (int)len) != 1)
        || EVP_EncryptFinal_ex(g->ctx, (unsigned char *)dst + n, &f) != 1
        || (size_t)n + (size_t)f != len
        || EVP_CIPHER_CTX_ctrl(g->ctx, EVP_CTRL_GCM_GET_TAG, HRDMA_GCM_TAG_BYTES,
                               (unsigned char *)dst + len) != 1) {
        return HRDMA_ERR_IO;
    }
    return HRDMA_OK;
}

int hrdma_gcm_open(hrdma_gcm_t *g, const uint8_t nonce[HRDMA_GCM_NONCE_BYTES],
                   void *buf, size_t len)
{
    unsigned char tag[HRDMA_GCM_TAG_BYTES];
    size_t plain;
    int n = 0, f = 0;

    if (g == NULL || g->encrypt || nonce == NULL || buf == NULL) {
        return HRDMA_ERR_INVALID;
    }
    if (len < HRDMA_GCM_TAG_BYTES) {
        return HRDMA_ERR_AUTH; /* no room for a tag: not a sealed message */
    }
    if (len - HRDMA_GCM_TAG_BYTES > INT_MAX) {
        return HRDMA_ERR_INVALID;
    }
    plain = len - HRDMA_GCM_TAG_BYTES;
    memcpy(tag, (unsigned char *)buf + plain, sizeof(tag));
    if (EVP_DecryptInit_ex(g->ctx, NULL, NULL, NULL, nonce) != 1
        || (plain > 0 && EVP_DecryptUpdate(g->ctx, buf, &n, buf, (int)plain) != 1)
        || EVP_CIPHER_CTX_ctrl(g->ctx, EVP_CTRL_GCM_SET_TAG, sizeof(tag), tag) != 1) {
        return HRDMA_ERR_IO;
    }
    if (EVP_DecryptFinal_ex(g->ctx, (unsigned char *)buf + n, &f) != 1
        || (size_t)n + (size_t)f != plain) {
        return HRDMA_ERR_AUTH;
    }
    return HRDMA_OK;
}

#else /* no libcrypto in this build: the JDK's cipher serves */

int hrdma_gcm_available(void)
{
    return 0;
}

int hrdma_gcm_create(const void *key, size_t key_len, int encrypt,
                     hrdma_gcm_t **out)
{
    (void)key; (void)key_len; (void)encrypt; (void)out;
    return HRDMA_ERR_UNSUPPORTED;
}

void hrdma_gcm_destroy(hrdma_gcm_t *g)
{
    (void)g;
}

int hrdma_gcm_seal(hrdma_gcm_t *g, const uint8_t nonce[HRDMA_GCM_NONCE_BYTES],
                   const void *src, size_t len, void *dst)
{
    (void)g; (void)nonce; (void)src; (void)len; (void)dst;
    return HRDMA_ERR_UNSUPPORTED;
}

int hrdma_gcm_open(hrdma_gcm_t *g, const uint8_t nonce[HRDMA_GCM_NONCE_BYTES],
                   void *buf, size_t len)
{
    (void)g; (void)nonce; (void)buf; (void)len;
    return HRDMA_ERR_UNSUPPORTED;
}
#endif
