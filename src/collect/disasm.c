/*
 * disasm.c — the opcodes of a cubin on the CPU side, through the SASS-metrics
 * collector's nvdisasm helper and parser (src/collect/sass_metrics.c: the
 * same tool lookup, ARGUS_NVDISASM first, and the same `nvdisasm -c`
 * reading). It writes them as sass_metrics.json does, with no metric and no
 * row, so argus/sass_ev.h reads them: the attributed synthesis derives
 * inst_mix and barriers from the map when the SASS-metrics run gave nothing
 * (docs/attribution.md, "Without SASS metrics"). One nvdisasm run per call
 * (about 0.5 s for a 2,200-instruction cubin).
 */
#include "argus/collect.h"

#include <string.h>

#include "evwrite.h"
#include "sass_metrics.h"

int ag_collect_disasm(const char *cubin_path, const char *id, char **text, size_t *len) {
  *text = NULL;
  *len = 0;
  ag_sassm *s = ag_sassm_new_offline();
  if (!s || ag_sassm_offline_cubin(s, 0, 0)) {
    ag_sassm_close(s);
    return AG_ENOMEM;
  }
  ag_sassm_disasm(s, cubin_path); /* a failure is its status, not an error */
  ag_jb j = {0};
  ag_jb_printf(&j, "{\"format\":\"%s\",\"version\":%d,\"variant\":{\"id\":", AG_SASSM_FORMAT,
               AG_SASSM_VERSION);
  ag_jb_str(&j, id);
  ag_jb_puts(&j, ",\"path\":");
  ag_jb_str(&j, cubin_path);
  ag_jb_puts(&j, "},\"launches_total\":0,");
  ag_sassm_json_rows(s, &j);
  ag_jb_puts(&j, "}");
  ag_sassm_close(s);
  int rc = j.oom ? AG_ENOMEM : 0;
  if (!rc && !(*text = ag_malloc(j.len + 1)))
    rc = AG_ENOMEM;
  if (!rc) {
    memcpy(*text, j.p, j.len + 1);
    *len = j.len;
  }
  ag_jb_release(&j);
  return rc;
}
