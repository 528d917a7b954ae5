/* Calibration: what this machine does at best for a config's data. The
 * pipeline in one loader worker with no training step (one core, the
 * loader's ceiling), memcpy bandwidth, the number of cores and, for GPU
 * pipelines or on request, the host-to-device copy of one batch as CUDA's
 * bandwidthTest measures it. A sweep states each point's efficiency
 * against it; `pbench calibrate` prints it. */
#ifndef PB_CALIBRATE_H
#define PB_CALIBRATE_H

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>

#include "bench/config/config.h"
#include "bench/result/result.h"
#include "pipelines/dataset.h"

/* The large host-to-device copy of calibrate --gpu: the link's peak. */
#define PB_CALIBRATE_H2D_LARGE_BYTES ((size_t)256 << 20)

/* The `-s` overrides calibration runs a config under, NULL-terminated:
 * one worker, no training step, one repeat, a short warm-up. */
extern const char *const pb_calibration_overrides[];

/* Measures spec (the config with pb_calibration_overrides applied and
 * validated) over ds into cal. The copy is measured apart, so spec's
 * to_device and GPU stages are dropped here (spec is changed). With gpu,
 * a failed host-to-device measurement is an error (PB_ERR_UNAVAILABLE);
 * without it, a GPU pipeline's copies are measured where a device is.
 * stop may be NULL. Returns PB_OK, PB_ERR_INTERRUPTED or the run's error,
 * with msg. */
int pb_calibrate(struct pb_spec *spec, const struct pb_dataset *ds, bool gpu,
                 volatile sig_atomic_t *stop, struct pb_calibration *cal, char *msg,
                 size_t msglen);

/* memcpy bandwidth in GB/s over 64 MiB buffers, the median of 8 copies
 * (bench/sys/refspeed.h); 0 when out of memory. */
double pb_memcpy_gb_per_s(void);

/* `pbench calibrate`'s table for the config called name. */
void pb_calibration_print(FILE *out, const char *name, const struct pb_calibration *cal);

#endif
