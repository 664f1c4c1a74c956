/*
 * A fake libamd_smi.so for plurm's tests: answers the AMD SMI calls that the
 * real `amdsmi` Python package makes for plurm's amdsmi backend.  The package
 * binds every library symbol when it is imported, so the test build adds a
 * generated stub (returning AMDSMI_STATUS_NOT_SUPPORTED) for each symbol not
 * defined here; see tests/accel/fakelibs.py.
 *
 * The file named by $FAKE_AMDSMI_CONFIG has one directive per line:
 *   device name=AMD Instinct MI300X;uuid=...;bdf=0000:c1:00.0;vram_mb=196592;
 *          vram_used_mb=512;gfx=12;temp=50;hotspot=60;ecc=0;numa=1
 *   hang FUNCTION | crash FUNCTION | init_error N
 * Written from the AMD SMI documentation's signatures and struct layouts.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define OK 0
#define INVAL 1
#define NOT_SUPPORTED 2
#define NOT_INIT 32
#define MAXDEV 64

typedef struct {
    char name[256], uuid[64];
    unsigned domain, bus, dev, fn;
    uint64_t vram, vram_used, ecc;
    unsigned gfx;
    int64_t temp, hotspot;
    int numa;
} fake_dev;

#pragma pack(push, 1)
typedef struct {
    char market_name[256];
    uint32_t vendor_id;
    char vendor_name[256];
    uint32_t subvendor_id;
    uint64_t device_id;
    uint32_t rev_id;
    char asic_serial[256];
    uint32_t oam_id;
    uint32_t num_of_compute_units;
    uint8_t padding[4];
    uint64_t target_graphics_version;
    uint32_t subsystem_id;
    uint32_t reserved[21];
} asic_info;
typedef struct { uint32_t gfx, umc, mm, reserved[13]; } engine_usage;
typedef struct { uint64_t correctable, uncorrectable, deferred, reserved[5]; } error_count;
#pragma pack(pop)

static fake_dev devs[MAXDEV];
static int ndev, loaded, initialized, init_error;
static char hang_fn[128], crash_fn[128];
static int socket_token;

static void set_field(fake_dev *d, const char *key, const char *val) {
    if (!strcmp(key, "name")) snprintf(d->name, sizeof d->name, "%s", val);
    else if (!strcmp(key, "uuid")) snprintf(d->uuid, sizeof d->uuid, "%s", val);
    else if (!strcmp(key, "bdf")) sscanf(val, "%x:%x:%x.%x", &d->domain, &d->bus, &d->dev, &d->fn);
    else if (!strcmp(key, "vram_mb")) d->vram = strtoull(val, 0, 10) << 20;
    else if (!strcmp(key, "vram_used_mb")) d->vram_used = strtoull(val, 0, 10) << 20;
    else if (!strcmp(key, "ecc")) d->ecc = strtoull(val, 0, 10);
    else if (!strcmp(key, "gfx")) d->gfx = (unsigned)atoi(val);
    else if (!strcmp(key, "temp")) d->temp = atoll(val);
    else if (!strcmp(key, "hotspot")) d->hotspot = atoll(val);
    else if (!strcmp(key, "numa")) d->numa = atoi(val);
}

static void load(void) {
    const char *path = getenv("FAKE_AMDSMI_CONFIG");
    char line[2048];
    FILE *f;
    if (loaded) return;
    loaded = 1;
    if (!path || !(f = fopen(path, "r"))) return;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = 0;
        if (!strncmp(line, "device ", 7) && ndev < MAXDEV) {
            fake_dev *d = &devs[ndev++];
            char *save = 0, *item;
            memset(d, 0, sizeof *d);
            d->numa = -1;
            for (item = strtok_r(line + 7, ";", &save); item; item = strtok_r(0, ";", &save)) {
                char *eq = strchr(item, '=');
                if (!eq) continue;
                *eq = 0;
                set_field(d, item, eq + 1);
            }
        } else if (!strncmp(line, "hang ", 5)) {
            snprintf(hang_fn, sizeof hang_fn, "%.120s", line + 5);
        } else if (!strncmp(line, "crash ", 6)) {
            snprintf(crash_fn, sizeof crash_fn, "%.120s", line + 6);
        } else if (!strncmp(line, "init_error ", 11)) {
            init_error = atoi(line + 11);
        }
    }
    fclose(f);
}

static void enter(const char *fn) {
    load();
    if (!strcmp(fn, hang_fn))
        for (;;) sleep(1000);
    if (!strcmp(fn, crash_fn)) {
        volatile int *p = 0;
        *p = 1;
    }
}

static fake_dev *dev_of(void *h) {
    fake_dev *d = (fake_dev *)h;
    return (d >= devs && d < devs + ndev) ? d : 0;
}

#define DEVICE_ENTRY(fn)                       \
    fake_dev *d;                               \
    enter(fn);                                 \
    if (!initialized) return NOT_INIT;         \
    if (!(d = dev_of(h))) return INVAL

int amdsmi_init(uint64_t flags) {
    (void)flags;
    enter("amdsmi_init");
    if (init_error) return init_error;
    initialized = 1;
    return OK;
}

int amdsmi_shut_down(void) {
    enter("amdsmi_shut_down");
    initialized = 0;
    return OK;
}

/* One socket holding every device; a NULL array asks for the count. */
int amdsmi_get_socket_handles(uint32_t *count, void **handles) {
    enter("amdsmi_get_socket_handles");
    if (!initialized) return NOT_INIT;
    if (handles && *count >= 1) handles[0] = &socket_token;
    *count = 1;
    return OK;
}

int amdsmi_get_processor_handles(void *socket, uint32_t *count, void **handles) {
    int i;
    enter("amdsmi_get_processor_handles");
    if (!initialized) return NOT_INIT;
    if (socket != &socket_token) return INVAL;
    if (handles)
        for (i = 0; i < ndev && (uint32_t)i < *count; i++) handles[i] = &devs[i];
    *count = (uint32_t)ndev;
    return OK;
}

int amdsmi_get_gpu_device_uuid(void *h, uint32_t *length, char *uuid) {
    DEVICE_ENTRY("amdsmi_get_gpu_device_uuid");
    snprintf(uuid, *length, "%s", d->uuid);
    return OK;
}

int amdsmi_get_gpu_asic_info(void *h, asic_info *info) {
    DEVICE_ENTRY("amdsmi_get_gpu_asic_info");
    memset(info, 0, sizeof *info);
    snprintf(info->market_name, sizeof info->market_name, "%s", d->name);
    snprintf(info->vendor_name, sizeof info->vendor_name, "Advanced Micro Devices Inc.");
    info->vendor_id = 0x1002;
    info->device_id = 0x74a1;
    info->num_of_compute_units = 304;
    info->target_graphics_version = 0x942;
    return OK;
}

int amdsmi_get_gpu_device_bdf(void *h, uint64_t *bdf) {
    DEVICE_ENTRY("amdsmi_get_gpu_device_bdf");
    /* function:3, device:5, bus:8, domain:48, low bits first */
    *bdf = (uint64_t)(d->fn & 7) | ((uint64_t)(d->dev & 31) << 3) |
           ((uint64_t)(d->bus & 255) << 8) | ((uint64_t)d->domain << 16);
    return OK;
}

int amdsmi_get_gpu_memory_total(void *h, int type, uint64_t *total) {
    DEVICE_ENTRY("amdsmi_get_gpu_memory_total");
    if (type != 0) return NOT_SUPPORTED;
    *total = d->vram;
    return OK;
}

int amdsmi_get_gpu_memory_usage(void *h, int type, uint64_t *used) {
    DEVICE_ENTRY("amdsmi_get_gpu_memory_usage");
    if (type != 0) return NOT_SUPPORTED;
    *used = d->vram_used;
    return OK;
}

int amdsmi_get_gpu_activity(void *h, engine_usage *u) {
    DEVICE_ENTRY("amdsmi_get_gpu_activity");
    memset(u, 0, sizeof *u);
    u->gfx = d->gfx;
    return OK;
}

int amdsmi_get_temp_metric(void *h, int sensor, int metric, int64_t *value) {
    DEVICE_ENTRY("amdsmi_get_temp_metric");
    if (metric != 0) return NOT_SUPPORTED;
    if (sensor == 0) *value = d->temp;
    else if (sensor == 1) *value = d->hotspot;
    else return NOT_SUPPORTED;
    return OK;
}

int amdsmi_get_gpu_total_ecc_count(void *h, error_count *ec) {
    DEVICE_ENTRY("amdsmi_get_gpu_total_ecc_count");
    memset(ec, 0, sizeof *ec);
    ec->uncorrectable = d->ecc;
    return OK;
}

int amdsmi_topo_get_numa_node_number(void *h, uint32_t *node) {
    DEVICE_ENTRY("amdsmi_topo_get_numa_node_number");
    if (d->numa < 0) return NOT_SUPPORTED;
    *node = (uint32_t)d->numa;
    return OK;
}
