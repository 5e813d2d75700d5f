/*
 * Registered memory regions: page-aligned anonymous mappings registered once
 * with ucp_mem_map and counted in the context.
 */
#include "hrdma_int.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int hrdma_mem_map(hrdma_ctx_t *ctx, size_t length, hrdma_mem_t **mem_p)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    ucp_mem_map_params_t params;
    ucs_status_t ucs;
    hrdma_mem_t *mem;
    int status;

    if ((ctx == NULL) || (mem_p == NULL) || (length == 0) ||
        (length > SIZE_MAX - page)) {
        return HRDMA_ERR_INVALID;
    }
    mem = calloc(1, sizeof(*mem));
    if (mem == NULL) {
        return HRDMA_ERR_NOMEM;
    }
    mem->ctx     = ctx;
    mem->length  = (length + page - 1) & ~(page - 1);
    mem->address = mmap(NULL, mem->length, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem->address == MAP_FAILED) {
        hrdma_log_error("mmap of %zu bytes failed: %s", mem->length,
                        hrdma_status_str(HRDMA_ERR_NOMEM));
        status = HRDMA_ERR_NOMEM;
        goto err_free;
    }

    memset(&params, 0, sizeof(params));
    params.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS |
                        UCP_MEM_MAP_PARAM_FIELD_LENGTH;
    params.address    = mem->address;
    params.length     = mem->length;
    ucs = ucp_mem_map(ctx->ucp_ctx, &params, &mem->memh);
    if (ucs != UCS_OK) {
        status = hrdma_status_from_ucs(ucs);
        hrdma_log_error("ucp_mem_map of %zu bytes failed: %s", mem->length,
                        ucs_status_string(ucs));
        goto err_unmap;
    }

    HRDMA_COUNT(ctx, bytes_registered, mem->length);
    HRDMA_COUNT(ctx, regions, 1);
    *mem_p = mem;
    return HRDMA_OK;

err_unmap:
    munmap(mem->address, mem->length);
err_free:
    free(mem);
    return status;
}

void *hrdma_mem_address(const hrdma_mem_t *mem)
{
    return mem->address;
}

size_t hrdma_mem_length(const hrdma_mem_t *mem)
{
    return mem->length;
}

int hrdma_mem_pack_rkey(hrdma_mem_t *mem, void *buf, size_t buf_len,
                        size_t *len_p)
{
    void *packed;
    size_t size;
    ucs_status_t ucs;

    if ((mem == NULL) || (len_p == NULL) || ((buf == NULL) && (buf_len > 0))) {
        return HRDMA_ERR_INVALID;
    }
    ucs = ucp_rkey_pack(mem->ctx->ucp_ctx, mem->memh, &packed, &size);
    if (ucs != UCS_OK) {
        hrdma_log_error("ucp_rkey_pack failed: %s", ucs_status_string(ucs));
        return hrdma_status_from_ucs(ucs);
    }
    *len_p = size;
    if (size > buf_len) {
        ucp_rkey_buffer_release(packed);
        return HRDMA_ERR_TRUNCATED;
    }
    memcpy(buf, packed, size);
    ucp_rkey_buffer_release(packed);
    return HRDMA_OK;
}

int hrdma_mem_unmap(hrdma_mem_t *mem)
{
    hrdma_ctx_t *ctx;
    ucs_status_t ucs;

    if (mem == NULL) {
        return HRDMA_ERR_INVALID;
    }
    ctx = mem->ctx;
    ucs = ucp_mem_unmap(ctx->ucp_ctx, mem->memh);
    if (ucs != UCS_OK) {
        hrdma_log_error("ucp_mem_unmap failed: %s", ucs_status_string(ucs));
        return hrdma_status_from_ucs(ucs);
    }
    munmap(mem->address, mem->length);
    HRDMA_COUNT(ctx, bytes_registered, -(int64_t)mem->length);
    HRDMA_COUNT(ctx, regions, -1);
    free(mem);
    return HRDMA_OK;
}
