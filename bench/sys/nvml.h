/* GPU clocks through NVML: the SM and memory clocks of a CUDA device and
 * why the driver lowered them (power cap, thermal, ...), so a result can
 * say that a GPU was throttled.
 *
 * NVML (libnvidia-ml.so.1, part of the driver) is opened with dlopen when
 * first needed, so it is not a link dependency: pbench starts on machines
 * without it and says why the clocks are missing. In a build without CUDA
 * or on a machine without a device the clocks are "not available", with
 * the reason. */
#ifndef PB_NVML_H
#define PB_NVML_H

#include <stdbool.h>

struct pb_gpu_clocks {
    bool available;               /* false: why says why                 */
    unsigned sm_mhz, mem_mhz;     /* current clocks                       */
    unsigned max_sm_mhz;          /* the SM clock's maximum               */
    unsigned long long throttle;  /* nvmlClocksThrottleReasons bit mask   */
    char throttle_text[128];      /* "power cap, thermal" or ""          */
    char why[160];
};

/* Reads the clocks of CUDA device `device` (matched to NVML by PCI bus
 * id). Returns 0 with c filled, or -1 with c->why set. */
int pb_gpu_clocks_read(int device, struct pb_gpu_clocks *c);

#endif
