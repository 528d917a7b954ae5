/* Calibration: the pipeline on one core, memcpy, host-to-device copies. */
#include "bench/session/calibrate.h"

#include "bench/run/storage_run.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/analyze/analysis.h"
#include "bench/base/pb.h"
#include "bench/run/repeat.h"
#include "bench/sys/h2d_bandwidth.h"
#include "bench/sys/refspeed.h"

const char *const pb_calibration_overrides[] = {
    "loader.workers=1", "run.step_ms=0", "run.repeats=1", "run.warmup_batches=2", NULL,
};

double pb_memcpy_gb_per_s(void)
{
    return pb_memcpy_gb_s(64u << 20, 8);
}

/* Object storage: one request at a time against several in flight
 * (dataset.requests_in_flight when above 1, else 8), each over the same
 * objects in order (up to PB_CALIBRATE_REMOTE_BYTES). */
static void remote_rates(const struct pb_spec *spec, const struct pb_dataset *ds,
                         struct pb_calibration *cal)
{
    char why[PB_MSG_MAX];
    int many = spec->dataset.requests_in_flight > 1 ? (int)spec->dataset.requests_in_flight : 8;
    cal->remote_streams = many;
    cal->remote_one_mb_per_s = pb_storage_remote_mb_per_s(
        &spec->dataset, ds, 1, PB_CALIBRATE_REMOTE_BYTES, &cal->remote_one_objects_per_s, why,
        sizeof(why));
    cal->remote_many_mb_per_s = pb_storage_remote_mb_per_s(
        &spec->dataset, ds, many, PB_CALIBRATE_REMOTE_BYTES, &cal->remote_many_objects_per_s, why,
        sizeof(why));
}

/* Host-to-device copies of one batch of this pipeline, as CUDA's
 * bandwidthTest measures them (pinned and pageable); asked for (required:
 * calibrate --gpu), also one copy of 256 MiB, the link's peak. */
static int measure_h2d(const struct pb_point_result *point, bool required,
                       struct pb_calibration *cal, char *msg, size_t msglen)
{
    struct pb_h2d_bandwidth bw;
    char why[PB_MSG_MAX];
    size_t bytes = point->batch_bytes ? point->batch_bytes : (size_t)32 << 20;
    if (pb_gpu_h2d_bandwidth(bytes, 20, &bw, why, sizeof(why)) == 0) {
        cal->h2d_bytes = bw.bytes;
        cal->h2d_pinned_gb_s = bw.pinned_gb_s;
        cal->h2d_pageable_gb_s = bw.pageable_gb_s;
        if (required && pb_gpu_h2d_bandwidth(PB_CALIBRATE_H2D_LARGE_BYTES, 5, &bw, why,
                                             sizeof(why)) == 0) {
            cal->h2d_large_bytes = bw.bytes;
            cal->h2d_large_pinned_gb_s = bw.pinned_gb_s;
            cal->h2d_large_pageable_gb_s = bw.pageable_gb_s;
        }
    } else if (required) {
        snprintf(msg, msglen, "calibrate --gpu: %s", why);
        return PB_ERR_UNAVAILABLE;
    }
    return PB_OK;
}

int pb_calibrate(struct pb_spec *spec, const struct pb_dataset *ds, bool gpu,
                 volatile sig_atomic_t *stop, struct pb_calibration *cal, char *msg,
                 size_t msglen)
{
    /* The loader's ceiling is the CPU part; the copy is measured apart. */
    bool uses_gpu = pb_spec_uses_gpu(spec);
    char dropped[PB_MSG_MAX];
    pb_spec_drop_gpu(spec, dropped, sizeof(dropped));
    /* A one-point result, so pb_result_free releases what the run made. */
    struct pb_result holder = {.point_count = 1, .points = calloc(1, sizeof(*holder.points))};
    if (!holder.points)
        return PB_ERR_NOMEM;
    struct pb_point_result *point = &holder.points[0];
    struct pb_run_hooks hooks = {.stop = stop};
    int rc = pb_run_point(spec, ds, &hooks, point, msg, msglen);
    if (rc == PB_OK) {
        cal->single_core_samples_per_s = point->samples_per_s;
        cal->other_cpu_pct = point->other_cpu_pct;
        cal->steal_pct = point->steal_pct;
        cal->busy = pb_machine_disturbed(point->other_cpu_pct, point->steal_pct,
                                         pb_point_median_throttled(point));
        double amp, ns_frame, frames;
        if (pb_decode_figures(point, &amp, &ns_frame, &frames))
            cal->decode_ns_per_frame = ns_frame;
        cal->memcpy_gb_per_s = pb_memcpy_gb_per_s();
        long pus = sysconf(_SC_NPROCESSORS_ONLN);
        cal->cores = pus > 0 ? (int)pus : 1;
        cal->measured = true;
        char why[PB_MSG_MAX];
        if (ds->remote)
            remote_rates(spec, ds, cal);
        else
            cal->storage_cold_mb_per_s = pb_storage_cold_read_mb_per_s(
                ds, (size_t)1 << 20, PB_CALIBRATE_STORAGE_BYTES, why, sizeof(why));
        if (uses_gpu || gpu)
            rc = measure_h2d(point, gpu, cal, msg, msglen);
    }
    pb_result_free(&holder);
    return rc;
}

void pb_calibration_print(FILE *out, const char *name, const struct pb_calibration *cal)
{
    fprintf(out, "%s on this machine, at best:\n", name);
    fprintf(out, "  one core        %.1f samples/s  (the whole pipeline in one worker, no step)\n",
            cal->single_core_samples_per_s);
    if (cal->busy)
        fprintf(out, "                  measured beside other processes (%.0f%% of the machine's "
                     "CPU, steal %.0f%%): a floor, not this machine's ceiling; calibrate again "
                     "on a quiet machine\n",
                cal->other_cpu_pct, cal->steal_pct);
    char cores[32];
    snprintf(cores, sizeof(cores), "all %d cores", cal->cores);
    fprintf(out, "  %-15s %.1f samples/s  if the pipeline scaled perfectly\n", cores,
            cal->single_core_samples_per_s * cal->cores);
    fprintf(out, "  memcpy          %.1f GB/s\n", cal->memcpy_gb_per_s);
    if (cal->storage_cold_mb_per_s > 0)
        fprintf(out, "  storage         %.1f MB/s cold  (the dataset's files read once in order, "
                     "up to 1 GiB in 1 MiB reads, after posix_fadvise DONTNEED)\n",
                cal->storage_cold_mb_per_s);
    if (cal->remote_one_mb_per_s > 0 || cal->remote_many_mb_per_s > 0)
        fprintf(out, "  object storage  %.1f MB/s (%.0f objects/s) one request at a time; %.1f MB/s "
                     "(%.0f objects/s) with %d in flight  (the dataset's objects read in order, "
                     "up to 256 MiB, by one reader)\n",
                cal->remote_one_mb_per_s, cal->remote_one_objects_per_s,
                cal->remote_many_mb_per_s, cal->remote_many_objects_per_s, cal->remote_streams);
    if (cal->decode_ns_per_frame > 0)
        fprintf(out, "  video decode    %.1f frames/s on one core (demux + decode, frames decoded)\n",
                1e9 / cal->decode_ns_per_frame);
    if (cal->h2d_bytes)
        fprintf(out, "  host-to-device  pinned %.1f GB/s, pageable %.1f GB/s  (cudaMemcpyAsync of "
                     "one %.1f MiB batch, as bandwidthTest)\n",
                cal->h2d_pinned_gb_s, cal->h2d_pageable_gb_s, (double)cal->h2d_bytes / 1048576.0);
    if (cal->h2d_large_bytes && cal->h2d_large_pinned_gb_s > 0)
        fprintf(out, "                  pinned %.1f GB/s, pageable %.1f GB/s  (one %.0f MiB copy: "
                     "the link's peak; a batch copies at %.0f%% of it pinned)\n",
                cal->h2d_large_pinned_gb_s, cal->h2d_large_pageable_gb_s,
                (double)cal->h2d_large_bytes / 1048576.0,
                100.0 * cal->h2d_pinned_gb_s / cal->h2d_large_pinned_gb_s);
}
