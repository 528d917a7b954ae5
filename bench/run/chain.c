/* A pipeline's stages instantiated for one runner thread (bench/run/chain.h): the loader
 * workers' part, the consumer's part and the GPU part of a spec. */
#include "bench/run/chain.h"

#include <stdbool.h>
#include <stdio.h>

#include "bench/base/pb.h"

int pb_chain_split(const struct pb_spec *spec, int worker_spec[PB_MAX_STAGES], int *worker_count,
                   char *msg, size_t msglen)
{
    /* Worker-side stages first, then consumer-side ones. */
    bool seen_consumer = false;
    *worker_count = 0;
    for (int i = 0; i < spec->stage_count; i++) {
        const struct pb_stage_ops *ops = spec->stages[i].ops;
        if (ops->unavailable_reason) {
            snprintf(msg, msglen, "stage '%s' is not available in this build: %s", ops->name,
                     ops->unavailable_reason);
            return PB_ERR_UNAVAILABLE;
        }
        if (ops->flags & PB_STAGE_TO_DEVICE) {
            continue; /* the boundary: CPU stages after it run before the copy */
        } else if (ops->flags & PB_STAGE_CONSUMER) {
            seen_consumer = true;
        } else {
            if (seen_consumer) {
                snprintf(msg, msglen,
                         "stage '%s' runs in the loader workers and cannot follow a "
                         "consumer-side stage",
                         ops->name);
                return PB_ERR_CONFIG;
            }
            worker_spec[(*worker_count)++] = i;
        }
    }
    if (*worker_count == 0) {
        snprintf(msg, msglen, "the pipeline has no stage that runs in the loader workers");
        return PB_ERR_CONFIG;
    }
    return PB_OK;
}

/* What the nearest sizing stage downstream of stage index wants as input
 * (0 x 0 when none says). */
static void wanted_input(const struct pb_spec *spec, int index, struct pb_stage_plan *plan)
{
    plan->want_height = plan->want_width = 0;
    plan->window = NULL;
    plan->window_opts = NULL;
    if (index + 1 < spec->stage_count && spec->stages[index + 1].ops->window) {
        plan->window = spec->stages[index + 1].ops->window;
        plan->window_opts = spec->stages[index + 1].opts;
    }
    for (int j = index + 1; j < spec->stage_count; j++) {
        const struct pb_stage_spec *next = &spec->stages[j];
        if (next->ops->min_input) {
            next->ops->min_input(next->opts, &plan->want_height, &plan->want_width);
            break;
        }
    }
}

int pb_chain_init_loader(struct pb_chain *chain, const struct pb_spec *spec, const int *worker_spec,
                         int worker_count, uint64_t max_input_bytes, int worker,
                         struct pb_stage_stats *stats, struct pb_chain_sizes *sizes, char *msg,
                         size_t msglen)
{
    struct pb_stage_plan plan = {
        .shape = {.dtype = PB_DTYPE_BYTES, .frames = 1, .height = 1, .width = 0, .channels = 1},
        .max_bytes = max_input_bytes,
        .worker = worker,
        .cache = spec->dataset.cache,
        .dataset = &spec->dataset,
    };
    size_t scratch = 0;
    chain->count = 0;
    for (int k = 0; k < worker_count; k++) {
        const struct pb_stage_spec *ss = &spec->stages[worker_spec[k]];
        wanted_input(spec, worker_spec[k], &plan);
        struct pb_stage_plan out = plan;
        out.want_height = out.want_width = 0;
        out.window = NULL;
        out.window_opts = NULL;
        plan.next_mirrors = k + 1 == worker_count - 1 &&
                            (spec->stages[worker_spec[k + 1]].ops->flags & PB_STAGE_MIRRORS);
        out.next_mirrors = false;
        out.substages = out.counters = NULL;
        void *state = NULL;
        int rc = ss->ops->init(&state, ss->opts, &plan, &out, ss->decoder, ss->decoder_opts, msg,
                               msglen);
        if (rc != PB_OK)
            return rc;
        chain->stages[chain->count++] = (struct pb_stage_inst){ss->ops, state, worker_spec[k]};
        rc = ss->decoder ? pb_stage_stats_add(stats, ss->ops->name, ss->decoder->substages,
                                              ss->decoder->counters)
                         : pb_stage_stats_add(stats, ss->ops->name, out.substages, out.counters);
        if (rc != PB_OK)
            return rc;
        if (k < worker_count - 1 && out.max_bytes > scratch)
            scratch = out.max_bytes;
        plan = out;
        plan.substages = plan.counters = NULL;
    }
    sizes->scratch_bytes = scratch;
    sizes->slot_bytes = plan.max_bytes;
    sizes->sample_shape = plan.shape;
    return PB_OK;
}

int pb_chain_init_consumer(struct pb_chain *cpu, struct pb_chain *gpu, int gpu_max,
                           const struct pb_spec *spec, const struct pb_stage_plan *plan,
                           pb_chain_device_fn to_device, void *user, char *msg, size_t msglen)
{
    struct pb_stage_plan in = *plan;
    for (int i = 0; i < spec->stage_count; i++) {
        const struct pb_stage_spec *ss = &spec->stages[i];
        if (!(ss->ops->flags & PB_STAGE_CONSUMER))
            continue;
        if (ss->ops->flags & PB_STAGE_TO_DEVICE) {
            int rc = to_device(user, ss, msg, msglen);
            if (rc != PB_OK)
                return rc;
            continue;
        }
        bool on_gpu = (ss->ops->flags & PB_STAGE_GPU) != 0;
        if (on_gpu && gpu->count >= gpu_max) {
            snprintf(msg, msglen, "at most %d stages may run on the GPU", gpu_max);
            return PB_ERR_CONFIG;
        }
        struct pb_stage_plan out = in;
        void *state = NULL;
        int rc =
            ss->ops->init(&state, ss->opts, &in, &out, ss->decoder, ss->decoder_opts, msg, msglen);
        struct pb_chain *chain = on_gpu ? gpu : cpu;
        chain->stages[chain->count++] = (struct pb_stage_inst){ss->ops, state, i};
        if (rc != PB_OK)
            return rc;
        in = out;
    }
    return PB_OK;
}

void pb_chain_cleanup(struct pb_chain *chain)
{
    for (int k = 0; k < chain->count; k++)
        if (chain->stages[k].ops->cleanup)
            chain->stages[k].ops->cleanup(chain->stages[k].state);
    chain->count = 0;
}
