/*
 * A fake libnvidia-ml.so.1 for plurm's tests: answers the NVML calls that
 * pynvml makes for plurm's nvml backend, from an inventory the test writes.
 * The real pynvml loads it (LD_LIBRARY_PATH) and runs unchanged.
 *
 * The file named by $FAKE_NVML_CONFIG has one directive per line:
 *   device name=NVIDIA H200;uuid=GPU-1;bus=00000000:17:00.0;mem_total_mb=143771;
 *          mem_used_mb=1024;util=37;temp=45;ecc=0;xids=79,48;numa=0;minor=0;lost=0
 *   hang FUNCTION      the named function never returns (sleeps)
 *   crash FUNCTION     the named function dereferences NULL (SIGSEGV)
 *   init_error N       nvmlInitWithFlags returns N (9: driver not loaded)
 * Written from the NVML API documentation's signatures and struct layouts.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NVML_SUCCESS 0
#define NVML_ERROR_UNINITIALIZED 1
#define NVML_ERROR_INVALID_ARGUMENT 2
#define NVML_ERROR_NOT_SUPPORTED 3
#define NVML_ERROR_TIMEOUT 10
#define NVML_ERROR_GPU_IS_LOST 15
#define XID_EVENT 0x8ULL
#define MAXDEV 64
#define MAXXID 16

typedef struct {
    char name[96], uuid[96], bus[32];
    unsigned long long mem_total, mem_used, ecc;
    unsigned util, temp, minor;
    int numa, lost, nxid, xid_next, registered;
    unsigned long long xids[MAXXID];
} fake_dev;

typedef struct {
    char busIdLegacy[16];
    unsigned domain, bus, device, pciDeviceId, pciSubSystemId;
    char busId[32];
} pci_info;
typedef struct { unsigned long long total, free, used; } memory_info;
typedef struct { unsigned gpu, memory; } utilization;
typedef struct {
    void *device;
    unsigned long long eventType, eventData;
    unsigned gpuInstanceId, computeInstanceId;
} event_data;

static fake_dev devs[MAXDEV];
static int ndev, loaded, initialized, init_error;
static char hang_fn[128], crash_fn[128];
static int event_set_token;

static void set_field(fake_dev *d, const char *key, const char *val) {
    if (!strcmp(key, "name")) snprintf(d->name, sizeof d->name, "%s", val);
    else if (!strcmp(key, "uuid")) snprintf(d->uuid, sizeof d->uuid, "%s", val);
    else if (!strcmp(key, "bus")) snprintf(d->bus, sizeof d->bus, "%s", val);
    else if (!strcmp(key, "mem_total_mb")) d->mem_total = strtoull(val, 0, 10) << 20;
    else if (!strcmp(key, "mem_used_mb")) d->mem_used = strtoull(val, 0, 10) << 20;
    else if (!strcmp(key, "ecc")) d->ecc = strtoull(val, 0, 10);
    else if (!strcmp(key, "util")) d->util = (unsigned)atoi(val);
    else if (!strcmp(key, "temp")) d->temp = (unsigned)atoi(val);
    else if (!strcmp(key, "minor")) d->minor = (unsigned)atoi(val);
    else if (!strcmp(key, "numa")) d->numa = atoi(val);
    else if (!strcmp(key, "lost")) d->lost = atoi(val);
    else if (!strcmp(key, "xids")) {
        char buf[256], *save = 0, *tok;
        snprintf(buf, sizeof buf, "%s", val);
        for (tok = strtok_r(buf, ",", &save); tok && d->nxid < MAXXID;
             tok = strtok_r(0, ",", &save))
            d->xids[d->nxid++] = strtoull(tok, 0, 10);
    }
}

static void parse_device(char *spec) {
    fake_dev *d;
    char *save = 0, *item;
    if (ndev >= MAXDEV) return;
    d = &devs[ndev++];
    memset(d, 0, sizeof *d);
    d->numa = -1;
    for (item = strtok_r(spec, ";", &save); item; item = strtok_r(0, ";", &save)) {
        char *eq = strchr(item, '=');
        if (!eq) continue;
        *eq = 0;
        set_field(d, item, eq + 1);
    }
}

static void load(void) {
    const char *path = getenv("FAKE_NVML_CONFIG");
    char line[2048];
    FILE *f;
    if (loaded) return;
    loaded = 1;
    if (!path || !(f = fopen(path, "r"))) return;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = 0;
        if (!strncmp(line, "device ", 7)) parse_device(line + 7);
        else if (!strncmp(line, "hang ", 5)) snprintf(hang_fn, sizeof hang_fn, "%s", line + 5);
        else if (!strncmp(line, "crash ", 6)) snprintf(crash_fn, sizeof crash_fn, "%s", line + 6);
        else if (!strncmp(line, "init_error ", 11)) init_error = atoi(line + 11);
    }
    fclose(f);
}

/* Every entry point starts here: read the inventory, then misbehave if asked. */
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

#define DEVICE_ENTRY(fn)                                   \
    fake_dev *d;                                           \
    enter(fn);                                             \
    if (!initialized) return NVML_ERROR_UNINITIALIZED;     \
    if (!(d = dev_of(h))) return NVML_ERROR_INVALID_ARGUMENT; \
    if (d->lost) return NVML_ERROR_GPU_IS_LOST

int nvmlInitWithFlags(unsigned flags) {
    (void)flags;
    enter("nvmlInitWithFlags");
    if (init_error) return init_error;
    initialized = 1;
    return NVML_SUCCESS;
}

int nvmlInit_v2(void) { return nvmlInitWithFlags(0); }

int nvmlShutdown(void) {
    enter("nvmlShutdown");
    initialized = 0;
    return NVML_SUCCESS;
}

const char *nvmlErrorString(int result) {
    switch (result) {
    case NVML_SUCCESS: return "Success";
    case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
    case 9: return "Driver Not Loaded";
    case NVML_ERROR_TIMEOUT: return "Timeout";
    case NVML_ERROR_GPU_IS_LOST: return "GPU is lost";
    default: return "Unknown Error";
    }
}

int nvmlDeviceGetCount_v2(unsigned *count) {
    enter("nvmlDeviceGetCount_v2");
    if (!initialized) return NVML_ERROR_UNINITIALIZED;
    *count = (unsigned)ndev;
    return NVML_SUCCESS;
}

int nvmlDeviceGetHandleByIndex_v2(unsigned index, void **handle) {
    enter("nvmlDeviceGetHandleByIndex_v2");
    if (!initialized) return NVML_ERROR_UNINITIALIZED;
    if (index >= (unsigned)ndev) return NVML_ERROR_INVALID_ARGUMENT;
    *handle = &devs[index];
    return NVML_SUCCESS;
}

int nvmlDeviceGetName(void *h, char *name, unsigned length) {
    DEVICE_ENTRY("nvmlDeviceGetName");
    snprintf(name, length, "%s", d->name);
    return NVML_SUCCESS;
}

int nvmlDeviceGetUUID(void *h, char *uuid, unsigned length) {
    DEVICE_ENTRY("nvmlDeviceGetUUID");
    snprintf(uuid, length, "%s", d->uuid);
    return NVML_SUCCESS;
}

int nvmlDeviceGetPciInfo_v3(void *h, pci_info *pci) {
    DEVICE_ENTRY("nvmlDeviceGetPciInfo_v3");
    memset(pci, 0, sizeof *pci);
    snprintf(pci->busId, sizeof pci->busId, "%s", d->bus);
    snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "%s", d->bus);
    sscanf(d->bus, "%x:%x:%x", &pci->domain, &pci->bus, &pci->device);
    return NVML_SUCCESS;
}

int nvmlDeviceGetMemoryInfo(void *h, memory_info *mem) {
    DEVICE_ENTRY("nvmlDeviceGetMemoryInfo");
    mem->total = d->mem_total;
    mem->used = d->mem_used;
    mem->free = d->mem_total - d->mem_used;
    return NVML_SUCCESS;
}

int nvmlDeviceGetUtilizationRates(void *h, utilization *u) {
    DEVICE_ENTRY("nvmlDeviceGetUtilizationRates");
    u->gpu = d->util;
    u->memory = d->mem_total ? (unsigned)(100 * d->mem_used / d->mem_total) : 0;
    return NVML_SUCCESS;
}

int nvmlDeviceGetTemperature(void *h, int sensor, unsigned *temp) {
    DEVICE_ENTRY("nvmlDeviceGetTemperature");
    if (sensor != 0) return NVML_ERROR_NOT_SUPPORTED;
    *temp = d->temp;
    return NVML_SUCCESS;
}

int nvmlDeviceGetTotalEccErrors(void *h, int error_type, int counter_type,
                                unsigned long long *count) {
    DEVICE_ENTRY("nvmlDeviceGetTotalEccErrors");
    (void)counter_type;
    *count = error_type == 1 ? d->ecc : 0; /* 1: uncorrected */
    return NVML_SUCCESS;
}

int nvmlDeviceGetNumaNodeId(void *h, int *node) {
    DEVICE_ENTRY("nvmlDeviceGetNumaNodeId");
    if (d->numa < 0) return NVML_ERROR_NOT_SUPPORTED;
    *node = d->numa;
    return NVML_SUCCESS;
}

int nvmlDeviceGetMinorNumber(void *h, unsigned *minor) {
    DEVICE_ENTRY("nvmlDeviceGetMinorNumber");
    *minor = d->minor;
    return NVML_SUCCESS;
}

int nvmlEventSetCreate(void **set) {
    enter("nvmlEventSetCreate");
    if (!initialized) return NVML_ERROR_UNINITIALIZED;
    *set = &event_set_token;
    return NVML_SUCCESS;
}

int nvmlDeviceRegisterEvents(void *h, unsigned long long types, void *set) {
    DEVICE_ENTRY("nvmlDeviceRegisterEvents");
    if (set != &event_set_token) return NVML_ERROR_INVALID_ARGUMENT;
    if (types & XID_EVENT) d->registered = 1;
    return NVML_SUCCESS;
}

/* Queued XIDs of registered devices come out one per call, then TIMEOUT. */
int nvmlEventSetWait_v2(void *set, event_data *data, unsigned timeout_ms) {
    int i;
    enter("nvmlEventSetWait_v2");
    (void)timeout_ms;
    if (set != &event_set_token) return NVML_ERROR_INVALID_ARGUMENT;
    for (i = 0; i < ndev; i++) {
        fake_dev *d = &devs[i];
        if (d->registered && d->xid_next < d->nxid) {
            memset(data, 0, sizeof *data);
            data->device = d;
            data->eventType = XID_EVENT;
            data->eventData = d->xids[d->xid_next++];
            return NVML_SUCCESS;
        }
    }
    return NVML_ERROR_TIMEOUT;
}

int nvmlEventSetFree(void *set) {
    enter("nvmlEventSetFree");
    return set == &event_set_token ? NVML_SUCCESS : NVML_ERROR_INVALID_ARGUMENT;
}
