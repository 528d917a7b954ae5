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
#define DATASET_SIZE(f) sizeof(((struct pb_dataset_spec *)0)->f)
const struct pb_opt pb_dataset_opts[] = {
    {.name = "path", .type = PB_OPT_URL, .offset = DATASET(path), .size = PB_PATH_MAX, .def = "",
     .help = "Directory of samples (walked recursively) or a glob such as 'data/*.jpg'."},
    {.name = "shuffle", .type = PB_OPT_BOOL, .offset = DATASET(shuffle), .def = "true",
     .help = "Visit the samples in a new random order every epoch."},
    {.name = "seed", .type = PB_OPT_INT, .offset = DATASET(seed), .max = 4611686018427387904.0,
     .def = "0", .help = "Seed of the shuffle and of every per-sample random choice."},
    {.name = "epochs", .type = PB_OPT_INT, .offset = DATASET(epochs), .max = 1e9, .def = "0",
     .help = "Passes over the data at most; 0 lets the run's stopping rule decide."},
    {.name = "max_samples", .type = PB_OPT_INT, .offset = DATASET(max_samples), .max = 1e15,
     .def = "0", .help = "Use at most this many samples of the dataset; 0 uses them all."},
    {.name = "shard", .type = PB_OPT_SHARD, .offset = DATASET(shard), .def = "0/1",
     .help = "This process's part of the data as RANK/COUNT, as a distributed sampler splits it."},
    {.name = "cache", .type = PB_OPT_ENUM, .offset = DATASET(cache), .def = "warm",
     .allowed = pb_cache_mode_names,
     .help = "Page cache policy: warm reads through it as a DataLoader does; cold evicts the "
             "dataset's files before each repeat and each file after it is read, so every epoch "
             "reads storage; direct reads with O_DIRECT. Each repeat measures how much of the "
             "dataset was cached."},
    {.name = "format", .type = PB_OPT_ENUM, .offset = DATASET(format), .def = "files",
     .allowed = pb_dataset_format_names,
     .help = "files: one sample per file; tar: WebDataset tar shards (members grouped by key, "
             "the image member decoded), each worker reading its run of shards in order."},
    {.name = "shuffle_buffer", .type = PB_OPT_INT, .offset = DATASET(shuffle_buffer), .max = 1e7,
     .def = "0",
     .help = "tar: shuffle samples within windows of this many as each worker streams its shards "
             "(with dataset.shuffle); 0 keeps shard order."},
    {.name = "python", .type = PB_OPT_STRING, .offset = DATASET(python),
     .size = DATASET_SIZE(python), .def = "",
     .help = "loader.engine torch: your own Dataset, as 'module:callable' (a Dataset class or a "
             "function returning one), called with dataset.args; its transforms are timed one by "
             "one (docs/engines.md). Empty: the files at dataset.path through the pipeline."},
    {.name = "args", .type = PB_OPT_JSON, .offset = DATASET(args), .size = DATASET_SIZE(args),
     .def = "{}", .help = "The keyword arguments of dataset.python, as a mapping."},
    {.name = "endpoint", .type = PB_OPT_URL, .offset = DATASET(endpoint),
     .size = DATASET_SIZE(endpoint), .def = "",
     .help = "s3:// datasets: an S3-compatible endpoint (MinIO, Ceph, R2, ...) such as "
             "'http://127.0.0.1:9000'; empty: AWS (https://BUCKET.s3.REGION.amazonaws.com)."},
    {.name = "region", .type = PB_OPT_STRING, .offset = DATASET(region),
     .size = DATASET_SIZE(region), .def = "",
     .help = "s3:// datasets: the region requests are signed for; empty: $AWS_REGION, else "
             "$AWS_DEFAULT_REGION, else us-east-1."},
    {.name = "profile", .type = PB_OPT_STRING, .offset = DATASET(profile),
     .size = DATASET_SIZE(profile), .def = "",
     .help = "s3:// datasets: the profile of ~/.aws/credentials to use; empty: the "
             "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY variables when set, else $AWS_PROFILE, "
             "else default."},
    {.name = "addressing", .type = PB_OPT_ENUM, .offset = DATASET(addressing), .def = "auto",
     .allowed = pb_addressing_names,
     .help = "s3:// datasets: path-style (ENDPOINT/BUCKET/KEY) or virtual-hosted "
             "(BUCKET.HOST/KEY) requests; auto: path-style with dataset.endpoint, virtual-hosted "
             "on AWS."},
    {.name = "manifest", .type = PB_OPT_URL, .offset = DATASET(manifest),
     .size = DATASET_SIZE(manifest), .def = "",
     .help = "http(s):// datasets ending in '/': the manifest listing the objects (a name or "
             "URL); empty: manifest.txt there. One object per line (NAME or NAME SIZE), or a "
             "JSON list."},
    {.name = "requests_in_flight", .type = PB_OPT_INT, .offset = DATASET(requests_in_flight),
     .min = PB_REMOTE_REQUESTS_IN_FLIGHT_MIN, .max = PB_REMOTE_REQUESTS_IN_FLIGHT_MAX, .def = "1",
     .help = "Object storage: objects each worker keeps requested ahead of the one it decodes, "
             "so their latency overlaps; 1 reads one at a time, as a plain Dataset does."},
    {.name = "request_timeout_s", .type = PB_OPT_DOUBLE, .offset = DATASET(request_timeout_s),
     .min = 0.1, .max = 3600, .def = "30",
     .help = "Object storage: a request during which no byte arrives for this long (waiting for "
             "the first one included; counted in whole seconds) fails and is retried; a large "
             "object still arriving is not cut."},
    {.name = "retries", .type = PB_OPT_INT, .offset = DATASET(retries), .max = 100, .def = "5",
     .help = "Object storage: attempts after the first for a 5xx, SlowDown, reset connection or "
             "timeout, with exponential backoff (100 ms doubling, at most 5 s, jittered)."},
    {.name = "list", .type = PB_OPT_ENUM, .offset = DATASET(list), .def = "once",
     .allowed = pb_list_mode_names,
     .help = "Object storage under MPI: once (rank 0 lists and sends the listing to every rank) "
             "or per_rank (each rank lists)."},
    {.name = "list_max_mib", .type = PB_OPT_INT, .offset = DATASET(list_max_mib), .min = 1,
     .max = 1048576, .def = "2048",
     .help = "Object storage: the most memory the listing may hold (the names listed, a "
             "manifest's text), in MiB; a listing that needs more stops with an error saying so."},
    {.name = "ca_file", .type = PB_OPT_STRING, .offset = DATASET(ca_file), .size = PB_PATH_MAX,
     .def = "",
     .help = "https:// requests: a PEM file of the certificate authorities to trust (a private "
             "CA, a self-signed server); empty: the system's."},
    {0},
};

#define GENERATE(f) offsetof(struct pb_generate_spec, f)
const struct pb_opt pb_generate_opts[] = {
    {.name = "kind", .type = PB_OPT_ENUM, .offset = GENERATE(kind), .def = "files",
     .allowed = generate_kind_names,
     .help = "What to generate when dataset.path is missing or empty: files of random bytes, "
             "JPEG images or encoded videos."},
    {.name = "count", .type = PB_OPT_INT, .offset = GENERATE(count), .min = 1, .max = 1e7,
     .def = "256", .help = "Number of files to generate."},
    {.name = "size_bytes", .type = PB_OPT_INT, .offset = GENERATE(size_bytes), .min = 1,
     .max = 1073741824.0, .def = "65536", .help = "Size of each generated file, in bytes."},
    {.name = "seed", .type = PB_OPT_INT, .offset = GENERATE(seed), .max = 4611686018427387904.0,
     .def = "1", .help = "Seed of the generated contents, so every machine makes the same data."},
    {.name = "size", .type = PB_OPT_STRING, .offset = GENERATE(size), .size = 64, .def = "500x375",
     .help = "Image or video size as WxH, or a range WxH-WxH that sizes are spread over."},
    {.name = "quality", .type = PB_OPT_INT, .offset = GENERATE(quality), .min = 1, .max = 100,
     .def = "90", .help = "JPEG quality of generated images."},
    {.name = "progressive_fraction", .type = PB_OPT_DOUBLE,
     .offset = GENERATE(progressive_fraction), .max = 1, .def = "0",
     .help = "Share of generated JPEGs written progressive."},
    {.name = "grayscale_fraction", .type = PB_OPT_DOUBLE, .offset = GENERATE(grayscale_fraction),
     .max = 1, .def = "0", .help = "Share of generated JPEGs written grayscale."},
    {.name = "frames", .type = PB_OPT_INT, .offset = GENERATE(frames), .min = 1, .max = 100000,
     .def = "64", .help = "Frames in each generated video."},
    {.name = "fps", .type = PB_OPT_DOUBLE, .offset = GENERATE(fps), .min = 1, .max = 240,
     .def = "30", .help = "Frame rate of generated videos."},
    {.name = "codec", .type = PB_OPT_STRING, .offset = GENERATE(codec), .size = 32, .def = "h264",
     .help = "Codec of generated videos: h264 (libx264 when present), hevc, mpeg4, vp9, mjpeg, "
             "..."},
    {.name = "gop", .type = PB_OPT_INT, .offset = GENERATE(gop), .min = 1, .max = 10000,
     .def = "48", .help = "Keyframe interval of generated videos, in frames."},
    {.name = "corrupt_fraction", .type = PB_OPT_DOUBLE, .offset = GENERATE(corrupt_fraction),
     .max = 1, .def = "0",
     .help = "Share of generated files written truncated, to exercise run.on_error."},
    {.name = "shards", .type = PB_OPT_INT, .offset = GENERATE(shards), .max = 1e6, .def = "0",
     .help = "Pack the generated files into this many WebDataset tar shards (read them with "
             "dataset.format: tar); 0 leaves loose files."},
    {0},
};

const char *const pb_engine_names[] = {"pbench", "torch", "wrap", NULL};
_Static_assert(PB_ARRAY_LEN(pb_engine_names) == PB_ENGINE_ROW_COUNT + 1 &&
                   PB_ENGINE_COUNT == PB_ENGINE_ROW_COUNT,
               "one name and one row (bench/base/engine_rows.c) per value of loader.engine");
const char *const pb_torch_decode_names[] = {"pil", "torchvision", NULL};

#define LOADER(f) offsetof(struct pb_loader_spec, f)
const struct pb_opt pb_loader_opts[] = {
    {.name = "workers", .type = PB_OPT_INT, .offset = LOADER(workers), .max = 1024, .def = "2",
     .help = "Worker threads loading samples; 0 loads in the training loop's thread."},
    {.name = "batch_size", .type = PB_OPT_INT, .offset = LOADER(batch_size), .min = 1, .max = 65536,
     .def = "32", .help = "Samples per batch."},
    {.name = "prefetch_factor", .type = PB_OPT_INT, .offset = LOADER(prefetch_factor), .min = 1,
     .max = 1024, .def = "2",
     .help = "Batches each worker may have ready ahead of the training loop."},
    {.name = "pin_memory", .type = PB_OPT_BOOL, .offset = LOADER(pin_memory), .def = "false",
     .help = "Collate batches into page-locked memory for faster host-to-device copies."},
    {.name = "drop_last", .type = PB_OPT_BOOL, .offset = LOADER(drop_last), .def = "false",
     .help = "Drop an epoch's last batch when it is smaller than batch_size."},
    {.name = "in_order", .type = PB_OPT_BOOL, .offset = LOADER(in_order), .def = "true",
     .help = "Deliver batches in sampler order even when a later batch is ready first."},
    {.name = "device_prefetch", .type = PB_OPT_INT, .offset = LOADER(device_prefetch), .min = 1,
     .max = 64, .def = "2",
     .help = "Device buffers for batches in flight after to_device: 1 copies a batch only after "
             "the previous step is done, 2 or more overlap the next copy with the step."},
    {.name = "affinity", .type = PB_OPT_ENUM, .offset = LOADER(affinity), .def = "none",
     .allowed = pb_affinity_policy_names,
     .help = "Where the training loop and the workers run (hwloc): none leaves it to the OS; "
             "compact binds each thread to its own core, neighbours first; spread spaces them "
             "evenly over the cores (so neighbours land on different packages and NUMA nodes); "
             "numa binds each thread to a whole NUMA node, round robin (as compact, and said so, "
             "on a machine with one node). Under mpirun the ranks on a node split its cores "
             "first. The result records each thread's CPU set."},
    {.name = "engine", .type = PB_OPT_ENUM, .offset = LOADER(engine), .def = "pbench",
     .allowed = pb_engine_names,
     .help = "Which loader runs the pipeline: {engines}."},
    {.name = "persistent_workers", .type = PB_OPT_BOOL, .offset = LOADER(persistent_workers),
     .def = "false",
     .help = "torch: keep the worker processes between epochs and repeats (the DataLoader's own "
             "option); pbench's threads start per repeat either way."},
    {.name = "torch_decode", .type = PB_OPT_ENUM, .offset = LOADER(torch_decode), .def = "pil",
     .allowed = pb_torch_decode_names,
     .help = "torch: how JPEGs are decoded: pil (Image.open(f).convert('RGB'), as most training "
             "code does) or torchvision (torchvision.io.decode_jpeg)."},
    {.name = "python", .type = PB_OPT_STRING, .offset = LOADER(python), .size = PB_PATH_MAX,
     .def = "",
     .help = "torch: the Python interpreter; empty: $PBENCH_PYTHON, else /usr/bin/python3 "
             "(Debian's, where python3-torch lives)."},
    {.name = "python_path", .type = PB_OPT_STRING, .offset = LOADER(python_path),
     .size = PB_PATH_MAX, .def = "",
     .help = "torch: folders put in front of sys.path for your modules, ':'-separated, relative "
             "to the config file's folder."},
    {0},
};

#define RUN(f) offsetof(struct pb_run_spec, f)
const struct pb_opt pb_run_opts[] = {
    {.name = "warmup_batches", .type = PB_OPT_INT, .offset = RUN(warmup_batches), .max = 1e6,
     .def = "5", .help = "Batches consumed before measuring starts."},
    {.name = "min_time_s", .type = PB_OPT_DOUBLE, .offset = RUN(min_time_s), .max = 86400,
     .def = "2", .help = "Measure for at least this many seconds."},
    {.name = "max_time_s", .type = PB_OPT_DOUBLE, .offset = RUN(max_time_s), .min = 0.01,
     .max = 86400, .def = "10",
     .help = "Stop measuring after this many seconds even if throughput is still noisy."},
    {.name = "min_samples", .type = PB_OPT_INT, .offset = RUN(min_samples), .max = 1e12, .def = "0",
     .help = "Measure at least this many samples."},
    {.name = "target_noise", .type = PB_OPT_DOUBLE, .offset = RUN(target_noise), .min = 0.001,
     .max = 1, .def = "0.05",
     .help = "Stop once the relative noise of windowed throughput is below this."},
    {.name = "window_s", .type = PB_OPT_DOUBLE, .offset = RUN(window_s), .min = 0.01, .max = 60,
     .def = "0.25",
     .help = "Length of the throughput windows the noise rule looks at, in seconds."},
    {.name = "repeats", .type = PB_OPT_INT, .offset = RUN(repeats), .min = 1, .max = 1000,
     .def = "3",
     .help = "Separate measured rounds per point; repeats are the statistical replicates."},
    {.name = "step_ms", .type = PB_OPT_DOUBLE, .offset = RUN(step_ms), .max = 1e6, .def = "0",
     .help = "Simulated training step per batch, in milliseconds; 0 consumes as fast as possible."},
    {.name = "on_error", .type = PB_OPT_ENUM, .offset = RUN(on_error), .def = "skip",
     .allowed = on_error_names,
     .help = "What a corrupt sample does: skip it (counted and reported) or fail the run."},
    {.name = "stage_timing", .type = PB_OPT_BOOL, .offset = RUN(stage_timing), .def = "true",
     .help = "Time every stage of every sample (per-stage histograms and CPU time)."},
    {.name = "max_error_pct", .type = PB_OPT_DOUBLE, .offset = RUN(max_error_pct), .max = 100,
     .def = "50",
     .help = "A repeat fails (exit 1) when more than this share of its samples, in percent, are "
             "bad (skipped under on_error: skip); one that delivers no sample at all always "
             "fails."},
    {.name = "max_memory_mib", .type = PB_OPT_INT, .offset = RUN(max_memory_mib), .max = 1e9,
     .def = "0",
     .help = "Largest batch pool and worker buffers a point may allocate, in MiB; 0 allows what "
             "the machine has available (MemAvailable). A point needing more is refused before "
             "it allocates."},
    {.name = "trace", .type = PB_OPT_BOOL, .offset = RUN(trace), .def = "false",
     .help = "Write a CPU timeline beside the result (NAME.trace.json, Chrome trace-event JSON "
             "for Perfetto or chrome://tracing): a span per sample per stage on each worker's "
             "track, the training loop's wait, stages and step, and the queue depth. Needs "
             "stage_timing for the stage spans; pbench run --trace FILE names the file."},
    {.name = "stage_timeout_s", .type = PB_OPT_DOUBLE, .offset = RUN(stage_timeout_s), .max = 86400,
     .def = "0",
     .help = "A stage call on one sample that has not returned after this many seconds is stuck: "
             "pbench names it and the sample, writes what it measured and exits 1. 0 (the "
             "default) follows the run's own time: run.max_time_s plus 10 s, so a stuck stage "
             "ends a run near its own end while a slow one (a 4K video decode of a few seconds) "
             "is still allowed."},
    {0},
};

#define WRAP(f) offsetof(struct pb_wrap_spec, f)
const struct pb_opt pb_wrap_opts[] = {
    {.name = "command", .type = PB_OPT_STRING, .offset = WRAP(command), .size = PB_WRAP_COMMAND_MAX,
     .def = "",
     .help = "The training job's command line, as a shell would split it ('python3 train.py "
             "--epochs 2'); pbench wrap -- COMMAND sets it."},
    {.name = "loader", .type = PB_OPT_STRING, .offset = WRAP(loader), .size = PB_PATH_MAX,
     .def = "",
     .help = "The DataLoader measured, by the FILE:LINE that created it (or a suffix of it: "
             "train.py:40); empty: the first that delivers a batch."},
    {.name = "set", .type = PB_OPT_STRING, .offset = WRAP(set), .size = 256, .def = "",
     .help = "The loader keys whose values replace the job's own DataLoader arguments, "
             "','-separated (workers, batch_size, pin_memory, persistent_workers, "
             "prefetch_factor, drop_last); pbench wrap fills it from its -s and -a."},
    {.name = "batches", .type = PB_OPT_INT, .offset = WRAP(batches), .max = 1e9, .def = "0",
     .help = "Measured batches, after run.warmup_batches, before the job is ended; 0: the "
             "stopping rule of run.* decides."},
    {.name = "until_exit", .type = PB_OPT_BOOL, .offset = WRAP(until_exit), .def = "false",
     .help = "Measure until the job ends by itself rather than end it after the window."},
    {.name = "grace_s", .type = PB_OPT_DOUBLE, .offset = WRAP(grace_s), .max = 3600, .def = "10",
     .help = "After the window the job gets SIGINT, and SIGTERM (to its processes) this many "
             "seconds later if it is still running."},
    {.name = "ideal", .type = PB_OPT_INT, .offset = WRAP(ideal), .max = 1024, .def = "0",
     .help = "A loader that never waits: after the warm-up, this many of the batches the job "
             "received (at most 1 GiB of them) are kept and handed to it again instead of asking "
             "its DataLoader; 0 is off. pbench wrap --ideal compares the job with and without it."},
    {.name = "listen", .type = PB_OPT_STRING, .offset = WRAP(listen), .size = 256, .def = "",
     .help = "ADDR[:PORT] where the job's ranks on other machines send their records over TCP, "
             "each connection with this run's token (port 0 or none: any free one; 0.0.0.0: "
             "every interface, only when named). Empty: the default route's address where the "
             "command runs srun, mpirun or mpiexec, asks torchrun for --nnodes, or Slurm's "
             "environment spans nodes; no TCP otherwise."},
    {0},
};

static const char *const profile_gpu_names[] = {"events", "cupti", NULL};
static const char *const profile_level_names[] = {"basic", "detailed", "comprehensive", NULL};

const struct pb_opt pb_profile_opts[] = {
    {.name = "gpu", .type = PB_OPT_ENUM, .offset = offsetof(struct pb_profile_spec, gpu),
     .def = "events", .allowed = profile_gpu_names,
     .help = "GPU measurement: events (CUDA events around every copy, stage and step) or cupti "
             "(also a CUPTI activity trace of every kernel and copy, summarized and written as a "
             "Chrome trace beside the result)."},
    {.name = "level", .type = PB_OPT_ENUM, .offset = offsetof(struct pb_profile_spec, level),
     .def = "detailed", .allowed = profile_level_names,
     .help = "How much to measure: basic (throughput, stall, memory; no per-stage timing, the "
             "least overhead), detailed (also per-stage histograms and CPU time) or "
             "comprehensive (also the CPU trace as run.trace, per-stage perf counters: page "
             "faults and context switches, and cycles, instructions and cache misses where the "
             "machine allows; CUPTI with a GPU). docs/profiling.md measures each level's cost."},
    {0},
};


static const char *const gpu_policy_names[] = {"required", "optional", NULL};

/* The top-level scalars, each a one-entry table over its own value. */
#define SPEC_SIZE(f) sizeof(((struct pb_spec *)0)->f)
static const struct pb_opt name_opts[] = {
    {.name = "name", .type = PB_OPT_STRING, .offset = 0, .size = SPEC_SIZE(name),
     .help = "Name of the config in tables and result files; defaults to the file's base name."},
    {0},
};

static const struct pb_opt gpu_opts[] = {
    {.name = "gpu", .type = PB_OPT_ENUM, .offset = 0, .def = "required",
     .allowed = gpu_policy_names,
     .help = "With no CUDA device, a pipeline with to_device or GPU stages stops (required) or "
             "runs its CPU part with those stages skipped and says so (optional)."},
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

