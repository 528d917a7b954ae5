/* A shared object with the ABI version but no pb_plugin_stage: pbench
 * must say which symbol is missing (tests/test_plugin.c). */
#include "pipelines/plugin.h"

__attribute__((visibility("default"))) const unsigned pb_plugin_abi_version =
    PB_PLUGIN_ABI_VERSION;
