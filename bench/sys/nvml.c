/* SM and memory clocks and throttle reasons through NVML, which is opened
 * with dlopen on first use. */
#include "bench/sys/nvml.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "bench/base/pb.h"
#include "kernels/gpu_rt.h"

#if PB_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

#if PB_HAVE_CUDA

/* The few NVML declarations used here, as nvml.h defines them (the
 * toolkit does not always ship nvml.h; the ABI is the driver's). */
typedef int nvml_return;                    /* nvmlReturn_t, NVML_SUCCESS = 0 */
typedef struct nvml_device_st *nvml_device; /* nvmlDevice_t               */
enum { NVML_OK = 0, NVML_CLOCK_TYPE_SM = 1, NVML_CLOCK_TYPE_MEM = 2 };

/* nvmlClocksThrottleReasons (nvmlClocksEventReasons) bits that mean the
 * clock was lowered to protect the GPU. Idle, application clocks, sync
 * boost and display clock settings are not slowdowns. */
static const struct {
    unsigned long long bit;
    const char *name;
} slowdown_reasons[] = {
    {0x4ull, "power cap"},    /* SwPowerCap           */
    {0x8ull, "hw slowdown"},  /* HwSlowdown           */
    {0x20ull, "thermal"},     /* SwThermalSlowdown    */
    {0x40ull, "hw thermal"},  /* HwThermalSlowdown    */
    {0x80ull, "power brake"}, /* HwPowerBrakeSlowdown */
};

static struct {
    bool ready;
    nvml_return (*init)(void);
    nvml_return (*handle_by_pci_bus_id)(const char *bus_id, nvml_device *device);
    nvml_return (*clock_info)(nvml_device device, int type, unsigned *mhz);
    nvml_return (*max_clock_info)(nvml_device device, int type, unsigned *mhz);
    nvml_return (*throttle_reasons)(nvml_device device, unsigned long long *reasons);
    const char *(*error_string)(nvml_return result);
    char why[160];
} nvml;
static pthread_once_t nvml_once = PTHREAD_ONCE_INIT;

static void nvml_load(void)
{
    void *lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        snprintf(nvml.why, sizeof(nvml.why), "NVML not available: %s", dlerror());
        return;
    }
    static const char *const required[] = {
        "nvmlInit_v2",
        "nvmlDeviceGetHandleByPciBusId_v2",
        "nvmlDeviceGetClockInfo",
        "nvmlDeviceGetMaxClockInfo",
        "nvmlErrorString",
    };
    void *symbols[PB_ARRAY_LEN(required)];
    for (size_t i = 0; i < PB_ARRAY_LEN(required); i++) {
        symbols[i] = dlsym(lib, required[i]);
        if (!symbols[i]) {
            snprintf(nvml.why, sizeof(nvml.why), "NVML not available: libnvidia-ml.so.1 lacks %s",
                     required[i]);
            dlclose(lib);
            return;
        }
    }
    nvml.init = (nvml_return(*)(void))symbols[0];
    nvml.handle_by_pci_bus_id = (nvml_return(*)(const char *, nvml_device *))symbols[1];
    nvml.clock_info = (nvml_return(*)(nvml_device, int, unsigned *))symbols[2];
    nvml.max_clock_info = (nvml_return(*)(nvml_device, int, unsigned *))symbols[3];
    nvml.error_string = (const char *(*)(nvml_return))symbols[4];
    /* Renamed in NVML 12.x; the old name stays for compatibility. */
    void *reasons = dlsym(lib, "nvmlDeviceGetCurrentClocksEventReasons");
    if (!reasons)
        reasons = dlsym(lib, "nvmlDeviceGetCurrentClocksThrottleReasons");
    nvml.throttle_reasons = (nvml_return(*)(nvml_device, unsigned long long *))reasons;
    nvml_return rc = nvml.init();
    if (rc != NVML_OK) {
        snprintf(nvml.why, sizeof(nvml.why), "NVML not available: nvmlInit: %s",
                 nvml.error_string(rc));
        dlclose(lib);
        return;
    }
    nvml.ready = true; /* the library stays loaded for the process */
}

static void describe_throttle(unsigned long long reasons, char *text, size_t size)
{
    size_t used = 0;
    text[0] = '\0';
    for (size_t i = 0; i < PB_ARRAY_LEN(slowdown_reasons); i++) {
        if (!(reasons & slowdown_reasons[i].bit))
            continue;
        int n =
            snprintf(text + used, size - used, "%s%s", used ? ", " : "", slowdown_reasons[i].name);
        if (n < 0 || (size_t)n >= size - used)
            break;
        used += (size_t)n;
    }
}

#endif /* PB_HAVE_CUDA */

int pb_gpu_clocks_read(int device, struct pb_gpu_clocks *c)
{
    memset(c, 0, sizeof(*c));
    int count = pb_gpu_device_count(c->why, sizeof(c->why));
    if (count <= 0)
        return PB_ERR;
#if !PB_HAVE_CUDA
    (void)device;
    return PB_ERR; /* not reached: without CUDA there is no device */
#else
    if (device < 0 || device >= count) {
        snprintf(c->why, sizeof(c->why), "no CUDA device %d (%d found)", device, count);
        return PB_ERR;
    }
    char bus_id[32];
    cudaError_t err = cudaDeviceGetPCIBusId(bus_id, (int)sizeof(bus_id), device);
    if (err != cudaSuccess) {
        snprintf(c->why, sizeof(c->why), "cannot read the PCI bus id of CUDA device %d: %s", device,
                 cudaGetErrorString(err));
        return PB_ERR;
    }
    pthread_once(&nvml_once, nvml_load);
    if (!nvml.ready) {
        snprintf(c->why, sizeof(c->why), "%s", nvml.why);
        return PB_ERR;
    }
    nvml_device handle;
    nvml_return rc = nvml.handle_by_pci_bus_id(bus_id, &handle);
    if (rc != NVML_OK) {
        snprintf(c->why, sizeof(c->why), "NVML has no device at PCI %s: %s", bus_id,
                 nvml.error_string(rc));
        return PB_ERR;
    }
    const char *failed = NULL;
    if ((rc = nvml.clock_info(handle, NVML_CLOCK_TYPE_SM, &c->sm_mhz)) != NVML_OK)
        failed = "nvmlDeviceGetClockInfo(SM)";
    else if ((rc = nvml.clock_info(handle, NVML_CLOCK_TYPE_MEM, &c->mem_mhz)) != NVML_OK)
        failed = "nvmlDeviceGetClockInfo(MEM)";
    else if ((rc = nvml.max_clock_info(handle, NVML_CLOCK_TYPE_SM, &c->max_sm_mhz)) != NVML_OK)
        failed = "nvmlDeviceGetMaxClockInfo(SM)";
    if (failed) {
        snprintf(c->why, sizeof(c->why), "%s: %s", failed, nvml.error_string(rc));
        return PB_ERR;
    }
    /* Throttle reasons are an extra: a driver without them leaves 0. */
    if (nvml.throttle_reasons && nvml.throttle_reasons(handle, &c->throttle) != NVML_OK)
        c->throttle = 0;
    describe_throttle(c->throttle, c->throttle_text, sizeof(c->throttle_text));
    c->available = true;
    return PB_OK;
#endif
}
