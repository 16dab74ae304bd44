/*
 * backends.c — the built-in backend adapters of `argus observe`, one
 * src/run/backend_<name>.c each (docs/backends.md). A new backend adds its
 * file, its recipe rows (src/plan/recipe.c) and one line here.
 */
#include "argus/backend.h"

extern const ag_backend ag__backend_trace, ag__backend_time, ag__backend_probe,
    ag__backend_static, ag__backend_map, ag__backend_sass, ag__backend_system,
    ag__backend_stalls, ag__backend_pm, ag__backend_counters;

static const ag_backend *const builtin[] = {
    &ag__backend_trace,
    &ag__backend_time,
    &ag__backend_probe,
    &ag__backend_static,
    &ag__backend_map,
    &ag__backend_sass,
    &ag__backend_system,
    &ag__backend_stalls,
    &ag__backend_pm,
    &ag__backend_counters,
    NULL,
};

const ag_backend *const *ag_backends_builtin(void) { return builtin; }
