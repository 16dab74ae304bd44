/*
 * log.c — levelled logging. The library never prints: messages go to the
 * sink a tool installs (tools/argus sends them to stderr). AG_LOG tests the
 * level before formatting, so disabled logging costs one compare.
 */
#include "argus/core.h"

int ag__log_level = AG_LOG_WARN;
static ag_log_sink sink;
static void *sink_ud;

void ag_log_set_level(int lvl) { ag__log_level = lvl; }

void ag_log_set_sink(ag_log_sink s, void *ud) {
  sink = s;
  sink_ud = ud;
}

void ag__log(ag_log_level lvl, const char *file, int line, const char *fmt, ...) {
  if (!sink)
    return;
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  sink(lvl, file, line, buf, sink_ud);
}
