/* fakenvml: a test double of libnvidia-ml (NVML), the few calls gpuhost/_nvml.py makes, for
 * the suite running over tests/fakecuda (tests/conftest.py points $GPUHOST_NVML here).
 *
 * Every well-formed PCI bus id ("DDDD:BB:DD.F", a domain of 4 or 8 hex digits) is a device.
 * Each device's compute processes are $FAKENVML_PROCESSES, read at each call: a comma list of
 * "pid:bytes", where pid "self" is this process (unset: this process alone, "" none).
 * $FAKENVML_FAIL names a call to fail: "init" (NVML_ERROR_DRIVER_NOT_LOADED), "device"
 * (NVML_ERROR_NOT_FOUND) or "processes" (NVML_ERROR_NO_PERMISSION).  Answers as NVML's:
 * calls before nvmlInit_v2 are NVML_ERROR_UNINITIALIZED; a process list larger than the
 * caller's array is NVML_ERROR_INSUFFICIENT_SIZE with the count needed.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

enum {
    SUCCESS = 0,
    UNINITIALIZED = 1,
    INVALID_ARGUMENT = 2,
    NO_PERMISSION = 4,
    NOT_FOUND = 6,
    INSUFFICIENT_SIZE = 7,
    DRIVER_NOT_LOADED = 9,
};

typedef struct {
    unsigned int pid;
    unsigned long long usedGpuMemory;
    unsigned int gpuInstanceId, computeInstanceId;
} process_info;

typedef struct {
    int bus;
} fake_device;

static fake_device devices[256];
static int initialized;

EXPORT int nvmlInit_v2(void);
EXPORT int nvmlShutdown(void);
EXPORT const char *nvmlErrorString(int code);
EXPORT int nvmlDeviceGetHandleByPciBusId_v2(const char *bus_id, fake_device **device);
EXPORT int nvmlDeviceGetComputeRunningProcesses_v3(fake_device *device, unsigned int *count,
                                                   process_info *infos);

static int
failing(const char *call)
{
    const char *fail = getenv("FAKENVML_FAIL");
    return fail != NULL && strcmp(fail, call) == 0;
}

int
nvmlInit_v2(void)
{
    if (failing("init")) {
        return DRIVER_NOT_LOADED;
    }
    initialized++;
    return SUCCESS;
}

int
nvmlShutdown(void)
{
    if (initialized == 0) {
        return UNINITIALIZED;
    }
    initialized--;
    return SUCCESS;
}

const char *
nvmlErrorString(int code)
{
    switch (code) {
        case SUCCESS:
            return "Success";
        case UNINITIALIZED:
            return "Uninitialized";
        case INVALID_ARGUMENT:
            return "Invalid Argument";
        case NO_PERMISSION:
            return "Insufficient Permissions";
        case NOT_FOUND:
            return "Not Found";
        case INSUFFICIENT_SIZE:
            return "Insufficient Size";
        case DRIVER_NOT_LOADED:
            return "Driver Not Loaded";
        default:
            return "Unknown Error";
    }
}

/* n hex digits exactly at *p, then `end`: the value, *p moved past `end`; -1 otherwise. */
static long
hex(const char **p, int n, char end)
{
    long v = 0;
    for (int i = 0; i < n; i++, (*p)++) {
        if (!isxdigit((unsigned char)**p)) {
            return -1;
        }
        v = v * 16 +
            (isdigit((unsigned char)**p) ? **p - '0' : tolower((unsigned char)**p) - 'a' + 10);
    }
    if (**p != end) {
        return -1;
    }
    if (end != '\0') {
        (*p)++;
    }
    return v;
}

int
nvmlDeviceGetHandleByPciBusId_v2(const char *bus_id, fake_device **device)
{
    const char *p = bus_id;
    long bus;
    if (initialized == 0) {
        return UNINITIALIZED;
    }
    if (bus_id == NULL || device == NULL) {
        return INVALID_ARGUMENT;
    }
    if (failing("device")) {
        return NOT_FOUND;
    }
    if ((hex(&p, strlen(bus_id) > 12 ? 8 : 4, ':') < 0) || (bus = hex(&p, 2, ':')) < 0 ||
        hex(&p, 2, '.') < 0 || hex(&p, 1, '\0') < 0) {
        return NOT_FOUND;
    }
    devices[bus].bus = (int)bus;
    *device = &devices[bus];
    return SUCCESS;
}

/* The processes $FAKENVML_PROCESSES lists, into infos (when not NULL) up to max; their count. */
static unsigned int
processes(process_info *infos, unsigned int max)
{
    const char *spec = getenv("FAKENVML_PROCESSES");
    unsigned int n = 0;
    if (spec == NULL) {
        spec = "self:0";
    }
    while (*spec) {
        unsigned int pid;
        char *end;
        if (strncmp(spec, "self", 4) == 0) {
            pid = (unsigned int)getpid();
            end = (char *)spec + 4;
        }
        else {
            pid = (unsigned int)strtoul(spec, &end, 10);
        }
        unsigned long long bytes = *end == ':' ? strtoull(end + 1, &end, 10) : 0;
        if (infos != NULL && n < max) {
            infos[n] = (process_info){pid, bytes, 0xFFFFFFFFu, 0xFFFFFFFFu};
        }
        n++;
        spec = *end == ',' ? end + 1 : end + strlen(end);
    }
    return n;
}

int
nvmlDeviceGetComputeRunningProcesses_v3(fake_device *device, unsigned int *count,
                                        process_info *infos)
{
    unsigned int n;
    if (initialized == 0) {
        return UNINITIALIZED;
    }
    if (device == NULL || count == NULL || (*count > 0 && infos == NULL)) {
        return INVALID_ARGUMENT;
    }
    if (failing("processes")) {
        return NO_PERMISSION;
    }
    n = processes(infos, *count);
    if (n > *count) {
        *count = n;
        return INSUFFICIENT_SIZE;
    }
    *count = n;
    return SUCCESS;
}
