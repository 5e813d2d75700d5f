#include "hrdma_test.h"

#include <hrdma/hrdma.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

int main(void)
{
    hrdma_ctx_t *ctx;
    hrdma_mem_t *mem, *mem2;
    hrdma_ctx_stats_t st;
    unsigned char rkey[1024];
    size_t rkey_len = 0, len2 = 0;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    char info[4096];

    CHECK_EQ(hrdma_ctx_create("TLS=tcp", &ctx), HRDMA_OK);
    CHECK_EQ(hrdma_ctx_info(ctx, info, sizeof(info)), HRDMA_OK);
    OK("ctx create, info");

    CHECK_EQ(hrdma_mem_map(ctx, 1000, &mem), HRDMA_OK);
    CHECK_EQ(hrdma_mem_length(mem), page);
    CHECK_EQ((uintptr_t)hrdma_mem_address(mem) % page, 0);
    memset(hrdma_mem_address(mem), 0x5A, hrdma_mem_length(mem));
    CHECK_EQ(hrdma_mem_map(ctx, 3 * page + 1, &mem2), HRDMA_OK);
    CHECK_EQ(hrdma_mem_length(mem2), 4 * page);
    hrdma_ctx_stats(ctx, &st);
    CHECK_EQ(st.regions, 2);
    CHECK_EQ(st.bytes_registered, 5 * page);
    CHECK_EQ(hrdma_mem_map(ctx, 0, &mem2), HRDMA_ERR_INVALID);
    OK("map: page-aligned, rounded, counted");

    CHECK_EQ(hrdma_mem_pack_rkey(mem, rkey, sizeof(rkey), &rkey_len), HRDMA_OK);
    CHECK(rkey_len > 0);
    CHECK_EQ(hrdma_mem_pack_rkey(mem, rkey, 0, &len2), HRDMA_ERR_TRUNCATED);
    CHECK_EQ(len2, rkey_len);
    OK("pack rkey, truncation reports length");

    CHECK_EQ(hrdma_ctx_destroy(ctx), HRDMA_ERR_BUSY);
    OK("ctx destroy busy while mapped");

    CHECK_EQ(hrdma_mem_unmap(mem), HRDMA_OK);
    CHECK_EQ(hrdma_mem_unmap(mem2), HRDMA_OK);
    hrdma_ctx_stats(ctx, &st);
    CHECK_EQ(st.regions, 0);
    CHECK_EQ(st.bytes_registered, 0);
    CHECK_EQ(hrdma_ctx_destroy(ctx), HRDMA_OK);
    OK("unmap, counters back to zero, destroy");
    printf("1..%d\n", hrdma_test_n);
    return 0;
}
