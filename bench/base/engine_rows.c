/* The engines' rows (bench/base/engine_row.h): each engine pbench runs,
 * what it is called, how it starts, what it accepts and what a result's
 * readers need to know of it. */
#include "bench/base/engine_row.h"

#include <stdio.h>
#include <string.h>

#define PIL_REDUCED "PIL decodes whole images or, with Image.draft, reduced"
#define PIL_RGB "PIL converts to RGB or L, not BGR"
#define NO_AREA "torchvision has no area filter"
#define NO_EXIF "torchvision's decode_jpeg cannot apply EXIF orientation"
#define NO_DCT_SCALE "torchvision's decode_jpeg has no DCT scaling"
#define ACCURATE "PIL decodes with libjpeg's accurate integer DCT only"
#define FANCY "PIL always uses fancy upsampling"
#define CMYK "PIL converts CMYK images to RGB and cannot reject them"
#define TV "loader.torch_decode: torchvision", "loader.torch_decode: pil"

/* engines/engine_rules.json describes these too (its "torch" rules, in this
 * order), for the engine's Python; tests/test_engine_rules.c compares. */
static const struct pb_engine_rule torch_rules[] = {
    {"jpeg", "scale", {"1", "auto"}, "PIL decodes whole images or, with Image.draft, at 1/2, 1/4 "
                                     "and 1/8 (auto); it has no window decode", NULL, NULL},
    {"image", "scale", {"1", "auto"}, PIL_REDUCED, NULL, NULL},
    {"auto", "scale", {"1", "auto"}, PIL_REDUCED, NULL, NULL},
    {"jpeg", "dct", {"accurate"}, ACCURATE, NULL, NULL},
    {"auto", "dct", {"accurate"}, ACCURATE, NULL, NULL},
    {"jpeg", "fast_upsample", {"false"}, FANCY, NULL, NULL},
    {"auto", "fast_upsample", {"false"}, FANCY, NULL, NULL},
    {"jpeg", "cmyk", {"convert"}, CMYK, NULL, NULL},
    {"auto", "cmyk", {"convert"}, CMYK, NULL, NULL},
    {"video", "clips_per_visit", {"1"}, "a Dataset's __getitem__ returns one clip per call", NULL,
     NULL},
    {"normalize", "layout", {"chw", "cthw"}, "ToTensor gives CHW images, clips are CTHW", NULL,
     NULL},
    {"normalize", "dtype", {"float32", "float16"}, "ToTensor and Normalize give floats", NULL,
     NULL},
    {"resize", "interpolation", {"bilinear", "nearest"}, NO_AREA, NULL, NULL},
    {"random_resized_crop", "interpolation", {"bilinear", "nearest"}, NO_AREA, NULL, NULL},
    {"jpeg", "output", {"rgb", "gray"}, PIL_RGB, NULL, NULL},
    {"image", "output", {"rgb", "gray"}, PIL_RGB, NULL, NULL},
    {"auto", "output", {"rgb", "gray"}, PIL_RGB, NULL, NULL},
    {"video", "discard", {"none"}, "PyAV decodes every frame it is given", NULL, NULL},
    {"jpeg", "exif_orientation", {"false"}, NO_EXIF, TV},
    {"auto", "exif_orientation", {"false"}, NO_EXIF, TV},
    {"jpeg", "scale", {"1"}, NO_DCT_SCALE, TV},
    {"image", "scale", {"1"}, NO_DCT_SCALE, TV},
    {"auto", "scale", {"1"}, NO_DCT_SCALE, TV},
};

static const char *const torch_stages[] = {"read", "decode", "resize", "center_crop",
                                           "random_crop", "random_resized_crop", "flip",
                                           "color_jitter", "normalize", "python", NULL};
static const char *const torch_decoders[] = {"jpeg", "image", "auto", "video", NULL};

const struct pb_engine_row pb_engine_torch_row = {
    .name = "torch",
    .title = "the torch engine",
    .interpreter = "/usr/bin/python3",
    .interpreter_env = "PBENCH_PYTHON",
    .args = {"-m", "pbench_torch", NULL},
    .folder = "torch",
    .needs = "a Python 3 with Debian's python3-torch python3-torchvision python3-av "
             "(scripts/setup.sh installs them for /usr/bin/python3)",
    .stuck_tag = "pbench_torch: ",
    .starting = "importing torch, or your Dataset's constructor",
    .stages = torch_stages,
    .decoders = torch_decoders,
    .rules = torch_rules,
    .rule_count = sizeof torch_rules / sizeof torch_rules[0],
    .runs_python = true,
    .in_order_false_why = "the DataLoader always delivers in order",
    .cache_direct_why = "Python's open() reads through the page cache",
    .affinity_why = "the DataLoader's worker processes are placed by the OS",
    .summary = "a real PyTorch DataLoader with torchvision transforms, in worker processes; "
               "docs/engines.md",
    .checked_first = true,
    .versions = {{"python", "Python"}, {"torch", "torch"}, {"torchvision", "torchvision"},
                 {"pillow", "Pillow"}, {"av", "PyAV"}},
    .command = "run",
    .engine_option = true,
    .epoch_workers = true,
};

static const char *const no_stages[] = {NULL};

/* The wrapped job: `python3 -m pbench_wrap` starts the job with pbench's
 * hook in each of its Python processes and relays their records; the job's
 * own code makes and transforms the samples, so it takes no pipeline. */
const struct pb_engine_row pb_engine_wrap_row = {
    .name = "wrap",
    .title = "the wrapped job",
    .interpreter = "/usr/bin/python3",
    .interpreter_env = "PBENCH_PYTHON",
    .args = {"-m", "pbench_wrap", NULL},
    .folder = "torch",
    .needs = "a Python 3 to relay the job's records (the job runs its own interpreter)",
    .stuck_tag = NULL,
    .starting = "starting the job's relay",
    .stages = no_stages,
    .decoders = no_stages,
    .rules = NULL,
    .rule_count = 0,
    .runs_python = false,
    .job_sizes = true,
    .pass_terminal = true,
    .in_order_false_why = "the job's DataLoader keeps its own order",
    .cache_direct_why = "the job reads its files itself",
    .affinity_why = "the job's processes are placed by the OS",
    .summary = "your own training job's DataLoaders, measured in place: pbench wrap, "
               "docs/wrap.md",
    .section = "wrap",
    .required = "command",
    .required_why = "runs your training job: wrap.command names it (pbench wrap -- python3 "
                    "train.py sets it)",
    .versions = {{"python", "Python"}, {"torch", "torch"}},
    .command = "wrap", /* the job's own command: it sets the engine */
};

/* pbench's own engine: its C threads in pbench's process, so nothing to
 * start (no interpreter); the measurement loop drives its threads
 * (bench/run/runner.h), and a result's readers read the rest. */
const struct pb_engine_row pb_engine_pbench_row = {
    .name = "pbench",
    .in_process = true,
    .title = "pbench's own engine",
    .summary = "its own C threads",
    .command = "run",
};

/* By enum pb_engine. */
static const struct pb_engine_row *const rows[] = {&pb_engine_pbench_row, &pb_engine_torch_row,
                                                   &pb_engine_wrap_row};
_Static_assert(sizeof rows / sizeof rows[0] == PB_ENGINE_ROW_COUNT,
               "one row per value of loader.engine (pb_engine_names[])");

const struct pb_engine_row *pb_engine_row(int engine)
{
    return engine >= 0 && (size_t)engine < sizeof rows / sizeof rows[0] ? rows[engine] : NULL;
}

const struct pb_engine_row *pb_engine_row_named(const char *name)
{
    for (size_t i = 0; name && i < sizeof rows / sizeof rows[0]; i++)
        if (rows[i] && strcmp(rows[i]->name, name) == 0)
            return rows[i];
    return NULL;
}

void pb_engine_rows_text(char *buf, size_t buflen)
{
    size_t used = 0, n = 0, last = 0;
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        if (rows[i] && rows[i]->summary)
            last = i;
    if (buflen)
        buf[0] = '\0';
    for (size_t i = 0; i < sizeof rows / sizeof rows[0] && used < buflen; i++) {
        if (!rows[i] || !rows[i]->summary)
            continue;
        used += (size_t)snprintf(buf + used, buflen - used, "%s%s (%s)",
                                 n == 0 ? "" : i == last ? " or " : ", ", rows[i]->name,
                                 rows[i]->summary);
        n++;
    }
}

const struct pb_engine_row *pb_engine_python_row(void)
{
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        if (rows[i] && rows[i]->runs_python)
            return rows[i];
    return NULL;
}

void pb_engine_row_list(const char *const *list, const char *last_join, char *buf, size_t buflen)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; list[i] && used < buflen; i++)
        used += (size_t)snprintf(buf + used, buflen - used, "%s%s",
                                 i == 0                     ? ""
                                 : list[i + 1] || !last_join ? ", "
                                                             : last_join,
                                 list[i]);
}
