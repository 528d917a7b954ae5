/* The config's shape (see spec.h): the option table of each section and
 * the table of sections, in the order messages and `pbench list` show
 * them. */
#include "bench/config/spec.h"

#include <stddef.h>
#include <string.h>

#include "bench/sys/affinity.h"
#include "pipelines/remote.h"
#include "pipelines/storage.h"

static const char *const on_error_names[] = {"skip", "fail", NULL};
static const char *const generate_kind_names[] = {"files", "jpeg", "video", NULL};

#define DATASET(f) offsetof(struct pb_dataset_spec, f)
const struct pb_opt pb_dataset_opts[] = {
    {"path", PB_OPT_URL, DATASET(path), 0, PB_PATH_MAX, "", NULL,
     "Directory of samples (walked recursively) or a glob such as 'data/*.jpg'."},
    {"shuffle", PB_OPT_BOOL, DATASET(shuffle), 0, 0, "true", NULL,
     "Visit the samples in a new random order every epoch."},
    {"seed", PB_OPT_INT, DATASET(seed), 0, 4611686018427387904.0, "0", NULL,
     "Seed of the shuffle and of every per-sample random choice."},
    {"epochs", PB_OPT_INT, DATASET(epochs), 0, 1e9, "0", NULL,
     "Passes over the data at most; 0 lets the run's stopping rule decide."},
    {"max_samples", PB_OPT_INT, DATASET(max_samples), 0, 1e15, "0", NULL,
     "Use at most this many samples of the dataset; 0 uses them all."},
    {"shard", PB_OPT_SHARD, DATASET(shard), 0, 0, "0/1", NULL,
     "This process's part of the data as RANK/COUNT, as a distributed sampler splits it."},
    {"cache", PB_OPT_ENUM, DATASET(cache), 0, 0, "warm", pb_cache_mode_names,
     "Page cache policy: warm reads through it as a DataLoader does; cold evicts the dataset's "
     "files before each repeat and each file after it is read, so every epoch reads storage; "
     "direct reads with O_DIRECT. Each repeat measures how much of the dataset was cached."},
    {"format", PB_OPT_ENUM, DATASET(format), 0, 0, "files", pb_dataset_format_names,
     "files: one sample per file; tar: WebDataset tar shards (members grouped by key, the "
     "image member decoded), each worker reading its run of shards in order."},
    {"shuffle_buffer", PB_OPT_INT, DATASET(shuffle_buffer), 0, 1e7, "0", NULL,
     "tar: shuffle samples within windows of this many as each worker streams its shards "
     "(with dataset.shuffle); 0 keeps shard order."},
    {"python", PB_OPT_STRING, DATASET(python), 0, sizeof(((struct pb_dataset_spec *)0)->python),
     "", NULL,
     "loader.engine torch: your own Dataset, as 'module:callable' (a Dataset class or a function "
     "returning one), called with dataset.args; its transforms are timed one by one "
     "(docs/engines.md). Empty: the files at dataset.path through the pipeline."},
    {"args", PB_OPT_JSON, DATASET(args), 0, sizeof(((struct pb_dataset_spec *)0)->args), "{}",
     NULL, "The keyword arguments of dataset.python, as a mapping."},
    {"endpoint", PB_OPT_URL, DATASET(endpoint), 0,
     sizeof(((struct pb_dataset_spec *)0)->endpoint), "", NULL,
     "s3:// datasets: an S3-compatible endpoint (MinIO, Ceph, R2, ...) such as "
     "'http://127.0.0.1:9000'; empty: AWS (https://BUCKET.s3.REGION.amazonaws.com)."},
    {"region", PB_OPT_STRING, DATASET(region), 0, sizeof(((struct pb_dataset_spec *)0)->region),
     "", NULL, "s3:// datasets: the region requests are signed for; empty: $AWS_REGION, else "
     "$AWS_DEFAULT_REGION, else us-east-1."},
    {"profile", PB_OPT_STRING, DATASET(profile), 0,
     sizeof(((struct pb_dataset_spec *)0)->profile), "", NULL,
     "s3:// datasets: the profile of ~/.aws/credentials to use; empty: the AWS_ACCESS_KEY_ID "
     "and AWS_SECRET_ACCESS_KEY variables when set, else $AWS_PROFILE, else default."},
    {"addressing", PB_OPT_ENUM, DATASET(addressing), 0, 0, "auto", pb_addressing_names,
     "s3:// datasets: path-style (ENDPOINT/BUCKET/KEY) or virtual-hosted (BUCKET.HOST/KEY) "
     "requests; auto: path-style with dataset.endpoint, virtual-hosted on AWS."},
    {"manifest", PB_OPT_URL, DATASET(manifest), 0,
     sizeof(((struct pb_dataset_spec *)0)->manifest), "", NULL,
     "http(s):// datasets ending in '/': the manifest listing the objects (a name or URL); "
     "empty: manifest.txt there. One object per line (NAME or NAME SIZE), or a JSON list."},
    {"requests_in_flight", PB_OPT_INT, DATASET(requests_in_flight), PB_REMOTE_REQUESTS_IN_FLIGHT_MIN,
     PB_REMOTE_REQUESTS_IN_FLIGHT_MAX, "1", NULL,
     "Object storage: objects each worker keeps requested ahead of the one it decodes, so "
     "their latency overlaps; 1 reads one at a time, as a plain Dataset does."},
    {"request_timeout_s", PB_OPT_DOUBLE, DATASET(request_timeout_s), 0.1, 3600, "30", NULL,
     "Object storage: a request during which no byte arrives for this long (waiting for the "
     "first one included; counted in whole seconds) fails and is retried; a large object "
     "still arriving is not cut."},
    {"retries", PB_OPT_INT, DATASET(retries), 0, 100, "5", NULL,
     "Object storage: attempts after the first for a 5xx, SlowDown, reset connection or "
     "timeout, with exponential backoff (100 ms doubling, at most 5 s, jittered)."},
    {"list", PB_OPT_ENUM, DATASET(list), 0, 0, "once", pb_list_mode_names,
     "Object storage under MPI: once (rank 0 lists and sends the listing to every rank) or "
     "per_rank (each rank lists)."},
    {"list_max_mib", PB_OPT_INT, DATASET(list_max_mib), 1, 1048576, "2048", NULL,
     "Object storage: the most memory the listing may hold (the names listed, a manifest's "
     "text), in MiB; a listing that needs more stops with an error saying so."},
    {"ca_file", PB_OPT_STRING, DATASET(ca_file), 0, PB_PATH_MAX, "", NULL,
     "https:// requests: a PEM file of the certificate authorities to trust (a private CA, a "
     "self-signed server); empty: the system's."},
    {0},
};

#define GENERATE(f) offsetof(struct pb_generate_spec, f)
const struct pb_opt pb_generate_opts[] = {
    {"kind", PB_OPT_ENUM, GENERATE(kind), 0, 0, "files", generate_kind_names,
     "What to generate when dataset.path is missing or empty: files of random bytes, "
     "JPEG images or encoded videos."},
    {"count", PB_OPT_INT, GENERATE(count), 1, 1e7, "256", NULL,
     "Number of files to generate."},
    {"size_bytes", PB_OPT_INT, GENERATE(size_bytes), 1, 1073741824.0, "65536", NULL,
     "Size of each generated file, in bytes."},
    {"seed", PB_OPT_INT, GENERATE(seed), 0, 4611686018427387904.0, "1", NULL,
     "Seed of the generated contents, so every machine makes the same data."},
    {"size", PB_OPT_STRING, GENERATE(size), 0, 64, "500x375", NULL,
     "Image or video size as WxH, or a range WxH-WxH that sizes are spread over."},
    {"quality", PB_OPT_INT, GENERATE(quality), 1, 100, "90", NULL,
     "JPEG quality of generated images."},
    {"progressive_fraction", PB_OPT_DOUBLE, GENERATE(progressive_fraction), 0, 1, "0", NULL,
     "Share of generated JPEGs written progressive."},
    {"grayscale_fraction", PB_OPT_DOUBLE, GENERATE(grayscale_fraction), 0, 1, "0", NULL,
     "Share of generated JPEGs written grayscale."},
    {"frames", PB_OPT_INT, GENERATE(frames), 1, 100000, "64", NULL,
     "Frames in each generated video."},
    {"fps", PB_OPT_DOUBLE, GENERATE(fps), 1, 240, "30", NULL,
     "Frame rate of generated videos."},
    {"codec", PB_OPT_STRING, GENERATE(codec), 0, 32, "h264", NULL,
     "Codec of generated videos: h264 (libx264 when present), hevc, mpeg4, vp9, mjpeg, ..."},
    {"gop", PB_OPT_INT, GENERATE(gop), 1, 10000, "48", NULL,
     "Keyframe interval of generated videos, in frames."},
    {"corrupt_fraction", PB_OPT_DOUBLE, GENERATE(corrupt_fraction), 0, 1, "0", NULL,
     "Share of generated files written truncated, to exercise run.on_error."},
    {"shards", PB_OPT_INT, GENERATE(shards), 0, 1e6, "0", NULL,
     "Pack the generated files into this many WebDataset tar shards (read them with "
     "dataset.format: tar); 0 leaves loose files."},
    {0},
};

const char *const pb_engine_names[] = {"pbench", "torch", "wrap", NULL};
_Static_assert(PB_ARRAY_LEN(pb_engine_names) == PB_ENGINE_ROW_COUNT + 1 &&
                   PB_ENGINE_WRAP + 1 == PB_ENGINE_ROW_COUNT,
               "one name and one row (bench/base/engine_rows.c) per value of loader.engine");
const char *const pb_torch_decode_names[] = {"pil", "torchvision", NULL};

#define LOADER(f) offsetof(struct pb_loader_spec, f)
const struct pb_opt pb_loader_opts[] = {
    {"workers", PB_OPT_INT, LOADER(workers), 0, 1024, "2", NULL,
     "Worker threads loading samples; 0 loads in the training loop's thread."},
    {"batch_size", PB_OPT_INT, LOADER(batch_size), 1, 65536, "32", NULL,
     "Samples per batch."},
    {"prefetch_factor", PB_OPT_INT, LOADER(prefetch_factor), 1, 1024, "2", NULL,
     "Batches each worker may have ready ahead of the training loop."},
    {"pin_memory", PB_OPT_BOOL, LOADER(pin_memory), 0, 0, "false", NULL,
     "Collate batches into page-locked memory for faster host-to-device copies."},
    {"drop_last", PB_OPT_BOOL, LOADER(drop_last), 0, 0, "false", NULL,
     "Drop an epoch's last batch when it is smaller than batch_size."},
    {"in_order", PB_OPT_BOOL, LOADER(in_order), 0, 0, "true", NULL,
     "Deliver batches in sampler order even when a later batch is ready first."},
    {"device_prefetch", PB_OPT_INT, LOADER(device_prefetch), 1, 64, "2", NULL,
     "Device buffers for batches in flight after to_device: 1 copies a batch only after the "
     "previous step is done, 2 or more overlap the next copy with the step."},
    {"affinity", PB_OPT_ENUM, LOADER(affinity), 0, 0, "none", pb_affinity_policy_names,
     "Where the training loop and the workers run (hwloc): none leaves it to the OS; compact "
     "binds each thread to its own core, neighbours first; spread spaces them evenly over the "
     "cores (so neighbours land on different packages and NUMA nodes); numa binds each thread to a whole NUMA node, round "
     "robin (as compact, and said so, on a machine with one node). Under mpirun the ranks on "
     "a node split its cores first. The result records each thread's CPU set."},
    {"engine", PB_OPT_ENUM, LOADER(engine), 0, 0, "pbench", pb_engine_names,
     "Which loader runs the pipeline: {engines}."},
    {"persistent_workers", PB_OPT_BOOL, LOADER(persistent_workers), 0, 0, "false", NULL,
     "torch: keep the worker processes between epochs and repeats (the DataLoader's own "
     "option); pbench's threads start per repeat either way."},
    {"torch_decode", PB_OPT_ENUM, LOADER(torch_decode), 0, 0, "pil", pb_torch_decode_names,
     "torch: how JPEGs are decoded: pil (Image.open(f).convert('RGB'), as most training code "
     "does) or torchvision (torchvision.io.decode_jpeg)."},
    {"python", PB_OPT_STRING, LOADER(python), 0, PB_PATH_MAX, "", NULL,
     "torch: the Python interpreter; empty: $PBENCH_PYTHON, else /usr/bin/python3 (Debian's, "
     "where python3-torch lives)."},
    {"python_path", PB_OPT_STRING, LOADER(python_path), 0, PB_PATH_MAX, "", NULL,
     "torch: folders put in front of sys.path for your modules, ':'-separated, relative to "
     "the config file's folder."},
    {0},
};

#define RUN(f) offsetof(struct pb_run_spec, f)
const struct pb_opt pb_run_opts[] = {
    {"warmup_batches", PB_OPT_INT, RUN(warmup_batches), 0, 1e6, "5", NULL,
     "Batches consumed before measuring starts."},
    {"min_time_s", PB_OPT_DOUBLE, RUN(min_time_s), 0, 86400, "2", NULL,
     "Measure for at least this many seconds."},
    {"max_time_s", PB_OPT_DOUBLE, RUN(max_time_s), 0.01, 86400, "10", NULL,
     "Stop measuring after this many seconds even if throughput is still noisy."},
    {"min_samples", PB_OPT_INT, RUN(min_samples), 0, 1e12, "0", NULL,
     "Measure at least this many samples."},
    {"target_noise", PB_OPT_DOUBLE, RUN(target_noise), 0.001, 1, "0.05", NULL,
     "Stop once the relative noise of windowed throughput is below this."},
    {"window_s", PB_OPT_DOUBLE, RUN(window_s), 0.01, 60, "0.25", NULL,
     "Length of the throughput windows the noise rule looks at, in seconds."},
    {"repeats", PB_OPT_INT, RUN(repeats), 1, 1000, "3", NULL,
     "Separate measured rounds per point; repeats are the statistical replicates."},
    {"step_ms", PB_OPT_DOUBLE, RUN(step_ms), 0, 1e6, "0", NULL,
     "Simulated training step per batch, in milliseconds; 0 consumes as fast as possible."},
    {"on_error", PB_OPT_ENUM, RUN(on_error), 0, 0, "skip", on_error_names,
     "What a corrupt sample does: skip it (counted and reported) or fail the run."},
    {"stage_timing", PB_OPT_BOOL, RUN(stage_timing), 0, 0, "true", NULL,
     "Time every stage of every sample (per-stage histograms and CPU time)."},
    {"max_error_pct", PB_OPT_DOUBLE, RUN(max_error_pct), 0, 100, "50", NULL,
     "A repeat fails (exit 1) when more than this share of its samples, in percent, are bad "
     "(skipped under on_error: skip); one that delivers no sample at all always fails."},
    {"max_memory_mib", PB_OPT_INT, RUN(max_memory_mib), 0, 1e9, "0", NULL,
     "Largest batch pool and worker buffers a point may allocate, in MiB; 0 allows what the "
     "machine has available (MemAvailable). A point needing more is refused before it "
     "allocates."},
    {"trace", PB_OPT_BOOL, RUN(trace), 0, 0, "false", NULL,
     "Write a CPU timeline beside the result (NAME.trace.json, Chrome trace-event JSON for "
     "Perfetto or chrome://tracing): a span per sample per stage on each worker's track, the "
     "training loop's wait, stages and step, and the queue depth. Needs stage_timing for the "
     "stage spans; pbench run --trace FILE names the file."},
    {"stage_timeout_s", PB_OPT_DOUBLE, RUN(stage_timeout_s), 0, 86400, "0", NULL,
     "A stage call on one sample that has not returned after this many seconds is stuck: "
     "pbench names it and the sample, writes what it measured and exits 1. 0 (the default) "
     "follows the run's own time: run.max_time_s plus 10 s, so a stuck stage ends a run near "
     "its own end while a slow one (a 4K video decode of a few seconds) is still allowed."},
    {0},
};

#define WRAP(f) offsetof(struct pb_wrap_spec, f)
const struct pb_opt pb_wrap_opts[] = {
    {"command", PB_OPT_STRING, WRAP(command), 0, PB_WRAP_COMMAND_MAX, "", NULL,
     "The training job's command line, as a shell would split it ('python3 train.py --epochs "
     "2'); pbench wrap -- COMMAND sets it."},
    {"loader", PB_OPT_STRING, WRAP(loader), 0, PB_PATH_MAX, "", NULL,
     "The DataLoader measured, by the FILE:LINE that created it (or a suffix of it: "
     "train.py:40); empty: the first that delivers a batch."},
    {"set", PB_OPT_STRING, WRAP(set), 0, 256, "", NULL,
     "The loader keys whose values replace the job's own DataLoader arguments, ','-separated "
     "(workers, batch_size, pin_memory, persistent_workers, prefetch_factor, drop_last); "
     "pbench wrap fills it from its -s and -a."},
    {"batches", PB_OPT_INT, WRAP(batches), 0, 1e9, "0", NULL,
     "Measured batches, after run.warmup_batches, before the job is ended; 0: the stopping "
     "rule of run.* decides."},
    {"until_exit", PB_OPT_BOOL, WRAP(until_exit), 0, 0, "false", NULL,
     "Measure until the job ends by itself rather than end it after the window."},
    {"grace_s", PB_OPT_DOUBLE, WRAP(grace_s), 0, 3600, "10", NULL,
     "After the window the job gets SIGINT, and SIGTERM (to its processes) this many seconds "
     "later if it is still running."},
    {"ideal", PB_OPT_INT, WRAP(ideal), 0, 1024, "0", NULL,
     "A loader that never waits: after the warm-up, this many of the batches the job received "
     "(at most 1 GiB of them) are kept and handed to it again instead of asking its "
     "DataLoader; 0 is off. pbench wrap --ideal compares the job with and without it."},
    {0},
};

static const char *const profile_gpu_names[] = {"events", "cupti", NULL};
static const char *const profile_level_names[] = {"basic", "detailed", "comprehensive", NULL};

const struct pb_opt pb_profile_opts[] = {
    {"gpu", PB_OPT_ENUM, offsetof(struct pb_profile_spec, gpu), 0, 0, "events",
     profile_gpu_names,
     "GPU measurement: events (CUDA events around every copy, stage and step) or cupti (also "
     "a CUPTI activity trace of every kernel and copy, summarized and written as a Chrome "
     "trace beside the result)."},
    {"level", PB_OPT_ENUM, offsetof(struct pb_profile_spec, level), 0, 0, "detailed",
     profile_level_names,
     "How much to measure: basic (throughput, stall, memory; no per-stage timing, the least "
     "overhead), detailed (also per-stage histograms and CPU time) or comprehensive (also the "
     "CPU trace as run.trace, per-stage perf counters: page faults and context switches, and "
     "cycles, instructions and cache misses where the machine allows; CUPTI with a GPU). "
     "docs/profiling.md measures each level's cost."},
    {0},
};


static const char *const gpu_policy_names[] = {"required", "optional", NULL};

/* The top-level scalars, each a one-entry table over its own value. */
static const struct pb_opt name_opts[] = {
    {"name", PB_OPT_STRING, 0, 0, sizeof(((struct pb_spec *)0)->name), NULL, NULL,
     "Name of the config in tables and result files; defaults to the file's base name."},
    {0},
};

static const struct pb_opt gpu_opts[] = {
    {"gpu", PB_OPT_ENUM, 0, 0, 0, "required", gpu_policy_names,
     "With no CUDA device, a pipeline with to_device or GPU stages stops (required) or runs "
     "its CPU part with those stages skipped and says so (optional)."},
    {0},
};

#define SPEC(f) offsetof(struct pb_spec, f)
const struct pb_section pb_sections[] = {
    {"name", PB_SECTION_VALUE, name_opts, SPEC(name), 0,
     "The config's name in tables and result files.", NULL},
    {"dataset", PB_SECTION_OPTIONS, pb_dataset_opts, SPEC(dataset), 0,
     "The samples: where they are, their order, and this process's shard.", NULL},
    {"dataset.generate", PB_SECTION_OPTIONS, pb_generate_opts, SPEC(dataset.generate),
     SPEC(dataset.has_generate),
     "Data pbench makes on first use when dataset.path is missing or empty "
     "(also 'pbench gen').",
     NULL},
    {"pipeline", PB_SECTION_PIPELINE, NULL, 0, 0,
     "The stages each sample and batch go through, in order.",
     "a list of '- STAGE: {KEY: VALUE}' (see the stages below); a decode stage also takes "
     "'decoder: NAME' and that decoder's options"},
    {"loader", PB_SECTION_OPTIONS, pb_loader_opts, SPEC(loader), 0,
     "How batches are made, as PyTorch's DataLoader: workers, batch size, prefetch, pinning.",
     NULL},
    {"run", PB_SECTION_OPTIONS, pb_run_opts, SPEC(run), 0,
     "How long each point is measured and repeated, the simulated step, corrupt samples.",
     NULL},
    {"sweep", PB_SECTION_SWEEP, NULL, 0, 0,
     "Settings to try: every combination of the axes' values is a point (also '-a').",
     "'SECTION.KEY: [V1, V2, ...]' for any key -s can set (pipeline.STAGE.KEY too); "
     "'zip: [[AXIS, AXIS]]' moves axes together; 'exclude: [{AXIS: VALUE, ...}]' leaves "
     "points out"},
    {"gpu", PB_SECTION_VALUE, gpu_opts, SPEC(gpu), 0,
     "What a GPU pipeline does on a machine without a CUDA device.", NULL},
    {"profile", PB_SECTION_OPTIONS, pb_profile_opts, SPEC(profile), 0,
     "How much is measured (profile.level) and how the GPU side is (profile.gpu).", NULL},
    {"wrap", PB_SECTION_OPTIONS, pb_wrap_opts, SPEC(wrap), SPEC(has_wrap),
     "Your training job, measured in place (loader.engine: wrap; pbench wrap -- COMMAND).",
     NULL},
    {"analysis", PB_SECTION_OPTIONS, pb_analysis_opts, SPEC(analysis), 0,
     "The verdict's thresholds: input-bound bands, ties, the utilization target, the knee.",
     NULL},
};
const size_t pb_section_count = PB_ARRAY_LEN(pb_sections);

const char *const pb_wrap_settable[] = {
    "loader.workers", "loader.batch_size", "loader.pin_memory", "loader.persistent_workers",
    "loader.prefetch_factor", "loader.drop_last", "wrap.*", "run.warmup_batches",
    "run.min_time_s", "run.max_time_s", "run.min_samples", "run.target_noise", "run.window_s",
    "run.repeats", "run.stage_timing", "run.trace", "run.stage_timeout_s", "profile.level",
    "analysis.*", "name", NULL};

bool pb_wrap_settable_key(const char *assignment)
{
    size_t len = strcspn(assignment, "=");
    for (int i = 0; pb_wrap_settable[i]; i++) {
        const char *key = pb_wrap_settable[i];
        size_t n = strlen(key);
        bool section = n > 2 && strcmp(key + n - 2, ".*") == 0;
        if (section ? len > n - 1 && strncmp(assignment, key, n - 1) == 0
                    : len == n && strncmp(assignment, key, n) == 0)
            return true;
    }
    return false;
}

void pb_wrap_settable_text(char *buf, size_t buflen, bool loader)
{
    size_t used = 0;
    const char *section = "";
    if (buflen)
        buf[0] = '\0';
    for (int i = 0; pb_wrap_settable[i] && used < buflen; i++) {
        const char *key = pb_wrap_settable[i], *dot = strchr(key, '.');
        if ((strncmp(key, "loader.", 7) == 0) != loader)
            continue;
        size_t prefix = dot ? (size_t)(dot - key + 1) : 0;
        bool same = prefix && strncmp(section, key, prefix) == 0 && key[prefix] != '*';
        const char *next = pb_wrap_settable[i + 1];
        bool last_of = !prefix || !next || strncmp(next, key, prefix) != 0;
        int n = snprintf(buf + used, buflen - used, "%s%s",
                         !used ? "" : same ? (last_of ? " and " : ", ") : "; ",
                         same ? key + prefix : key);
        used += n > 0 ? (size_t)n : 0;
        section = key;
    }
}

const struct pb_section *pb_section_find(const char *name)
{
    for (size_t i = 0; i < pb_section_count; i++)
        if (strcmp(pb_sections[i].name, name) == 0)
            return &pb_sections[i];
    return NULL;
}

