#include "hrdma_test.h"

#include <hrdma/hrdma.h>
#include <infiniband/verbs.h>
#include <string.h>

int main(void)
{
    char buf[8192];
    size_t needed = 0;
    int num = 0, status;
    struct ibv_device **devs = ibv_get_device_list(&num);

    if (devs != NULL) {
        ibv_free_device_list(devs);
    }
    status = hrdma_probe_devices(buf, sizeof(buf), &needed);
    CHECK_EQ(status, HRDMA_OK);
    CHECK_EQ(needed, strlen(buf) + 1);
    if (num == 0) {
        CHECK_EQ(strlen(buf), 0);
        OK("zero devices: success and empty");
    } else {
        CHECK(strstr(buf, "device=") != NULL);
        printf("# %s", buf);
        OK("devices listed");
    }

    /* Too small a buffer: truncated, NUL-terminated, says how much. */
    {
        char small[1] = {'x'};
        size_t need2 = 0;

        CHECK_EQ(hrdma_probe_devices(small, 0, &need2), HRDMA_ERR_TRUNCATED);
        CHECK_EQ(need2, needed);
        CHECK_EQ(small[0], 'x');
        status = hrdma_probe_devices(small, sizeof(small), &need2);
        CHECK_EQ(status, (needed > 1) ? HRDMA_ERR_TRUNCATED : HRDMA_OK);
        CHECK_EQ(small[0], '\0');
    }
    OK("truncation");
    CHECK(strcmp(hrdma_status_str(HRDMA_ERR_TRUNCATED), "message truncated") == 0);
    CHECK(hrdma_status_str(12345) != NULL);
    OK("status strings");
    printf("1..%d\n", hrdma_test_n);
    return 0;
}
