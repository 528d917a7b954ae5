/* The engines' rows (bench/config/engine_row.h): each engine pbench runs as
 * another process, what it is called, how it starts and what it accepts. */
#include "bench/config/engine_row.h"

#include <stdio.h>
#include <string.h>

#include "bench/config/spec.h"

static bool torchvision_decode(const struct pb_spec *spec)
{
    return spec->loader.torch_decode == PB_TORCH_DECODE_TORCHVISION;
}

#define PIL_REDUCED "PIL decodes whole images or, with Image.draft, reduced"
#define PIL_RGB "PIL converts to RGB or L, not BGR"
#define NO_AREA "torchvision has no area filter"
#define NO_EXIF "torchvision's decode_jpeg cannot apply EXIF orientation"
#define NO_DCT_SCALE "torchvision's decode_jpeg has no DCT scaling"
#define ACCURATE "PIL decodes with libjpeg's accurate integer DCT only"
#define FANCY "PIL always uses fancy upsampling"
#define CMYK "PIL converts CMYK images to RGB and cannot reject them"
#define TV "loader.torch_decode: torchvision", "loader.torch_decode: pil"

static const struct pb_engine_rule torch_rules[] = {
    {"jpeg", "scale", {"1", "auto"}, "PIL decodes whole images or, with Image.draft, at 1/2, 1/4 "
                                     "and 1/8 (auto); it has no window decode", NULL, NULL, NULL},
    {"image", "scale", {"1", "auto"}, PIL_REDUCED, NULL, NULL, NULL},
    {"auto", "scale", {"1", "auto"}, PIL_REDUCED, NULL, NULL, NULL},
    {"jpeg", "dct", {"accurate"}, ACCURATE, NULL, NULL, NULL},
    {"auto", "dct", {"accurate"}, ACCURATE, NULL, NULL, NULL},
    {"jpeg", "fast_upsample", {"false"}, FANCY, NULL, NULL, NULL},
    {"auto", "fast_upsample", {"false"}, FANCY, NULL, NULL, NULL},
    {"jpeg", "cmyk", {"convert"}, CMYK, NULL, NULL, NULL},
    {"auto", "cmyk", {"convert"}, CMYK, NULL, NULL, NULL},
    {"video", "clips_per_visit", {"1"}, "a Dataset's __getitem__ returns one clip per call", NULL,
     NULL, NULL},
    {"normalize", "layout", {"chw", "cthw"}, "ToTensor gives CHW images, clips are CTHW", NULL,
     NULL, NULL},
    {"normalize", "dtype", {"float32", "float16"}, "ToTensor and Normalize give floats", NULL,
     NULL, NULL},
    {"resize", "interpolation", {"bilinear", "nearest"}, NO_AREA, NULL, NULL, NULL},
    {"random_resized_crop", "interpolation", {"bilinear", "nearest"}, NO_AREA, NULL, NULL, NULL},
    {"jpeg", "output", {"rgb", "gray"}, PIL_RGB, NULL, NULL, NULL},
    {"image", "output", {"rgb", "gray"}, PIL_RGB, NULL, NULL, NULL},
    {"auto", "output", {"rgb", "gray"}, PIL_RGB, NULL, NULL, NULL},
    {"video", "discard", {"none"}, "PyAV decodes every frame it is given", NULL, NULL, NULL},
    {"jpeg", "exif_orientation", {"false"}, NO_EXIF, torchvision_decode, TV},
    {"auto", "exif_orientation", {"false"}, NO_EXIF, torchvision_decode, TV},
    {"jpeg", "scale", {"1"}, NO_DCT_SCALE, torchvision_decode, TV},
    {"image", "scale", {"1"}, NO_DCT_SCALE, torchvision_decode, TV},
    {"auto", "scale", {"1"}, NO_DCT_SCALE, torchvision_decode, TV},
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
};

const struct pb_engine_row pb_engine_pbench_row = {
    .name = "pbench",
    .in_process = true,
    .title = "pbench's own engine",
};

/* By enum pb_engine. */
static const struct pb_engine_row *const rows[] = {&pb_engine_pbench_row, &pb_engine_torch_row,
                                                   &pb_engine_wrap_row};
_Static_assert(sizeof rows / sizeof rows[0] == PB_ENGINE_WRAP + 1,
               "one row per value of loader.engine (pb_engine_names[])");

const struct pb_engine_row *pb_engine_row(int engine)
{
    return engine >= 0 && (size_t)engine < sizeof rows / sizeof rows[0] ? rows[engine] : NULL;
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
