/* The device side of a point in the terminal and Markdown summary
 * (bench/report/report_gpu.c): copy bandwidth against this machine's
 * calibrated peak, overlap, how busy the GPU was, the loop's waits on it,
 * device memory, SM clocks and the repeats NVML found slowed. */
#ifndef PB_REPORT_GPU_H
#define PB_REPORT_GPU_H

#include "bench/base/table.h"
#include "bench/result/result.h"

/* Adds label/value rows for point p of result to t (p->gpu.used). */
void pb_report_gpu_summary(struct pb_table *t, const struct pb_result *result,
                           const struct pb_point_result *p);

#endif
