/* The storage side of a run: what each repeat's start does for
 * dataset.cache (evict, then measure page-cache residency into the
 * repeat), the result's description of the dataset, and the storage
 * ceiling `pbench calibrate` measures (cold sequential read of the
 * dataset's files). The mechanisms are pipelines/storage.h's. */
#ifndef PB_STORAGE_RUN_H
#define PB_STORAGE_RUN_H

#include "bench/config/config.h"
#include "bench/result/result.h"
#include "pipelines/dataset.h"

/* At a repeat's start: evicts the dataset's files for dataset.cache: cold
 * and direct, measures their residency into rep, and warns in point (once)
 * where the mode cannot do what it says on this file system: eviction that
 * leaves the pages cached, or O_DIRECT refused. */
void pb_storage_repeat_start(const struct pb_spec *spec, const struct pb_dataset *ds,
                             struct pb_point_result *point, struct pb_repeat_result *rep);

/* Fills info from spec's dataset section and the opened dataset ds,
 * checking what the cache mode can do here (into info->cache_note). */
void pb_storage_dataset_info(const struct pb_spec *spec, const struct pb_dataset *ds,
                             struct pb_dataset_info *info);

/* The storage ceiling: evicts the dataset's files, then reads them in
 * order (tar: the shards) in block_bytes reads with one thread, as
 * `fio --rw=read --invalidate=1` does, until max_bytes are read (0: all);
 * MB/s (1e6 bytes), 0 on failure with msg. The pages read stay cached. */
double pb_storage_cold_read_mb_per_s(const struct pb_dataset *ds, size_t block_bytes,
                                     uint64_t max_bytes, char *msg, size_t msglen);

/* Object storage's ceiling: the dataset's objects (dataset section d,
 * listed into ds) read in order by one reader with in_flight requests at
 * once, until max_bytes are read; MB/s (1e6 bytes) and *objects_per_s, 0
 * on failure with msg. */
double pb_storage_remote_mb_per_s(const struct pb_dataset_spec *d, const struct pb_dataset *ds,
                                  int in_flight, uint64_t max_bytes, double *objects_per_s,
                                  char *msg, size_t msglen);

/* The cold read a run measures up front under dataset.cache: cold or
 * direct, so its table can set the read rate against it (256 MiB). */
#define PB_STORAGE_PROBE_BYTES ((uint64_t)256 << 20)
/* What pbench calibrate reads of a dataset in object storage, per rate. */
#define PB_CALIBRATE_REMOTE_BYTES ((uint64_t)256 << 20)
/* What pbench calibrate reads of the dataset for its storage ceiling. */
#define PB_CALIBRATE_STORAGE_BYTES ((uint64_t)1 << 30)

#endif
