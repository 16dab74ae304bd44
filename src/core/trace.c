/*
 * trace.c — Argus measures itself: with ARGUS_TRACE=file, named begin/end
 * pairs are recorded and written as Chrome-trace JSON ("B"/"E" events) when
 * the tool flushes at exit. Off (one getenv, cached) when the variable is
 * unset.
 */
#include "argus/core.h"

#include <stdlib.h>
#include <unistd.h>

typedef struct ev {
  const char *name; /* static or long-lived string */
  char ph;
  uint64_t ts_ns;
} ev;

static int state; /* 0 unknown, 1 on, -1 off */
static AG_VEC(ev) evs;

static int on(void) {
  if (!state)
    state = getenv("ARGUS_TRACE") ? 1 : -1;
  return state > 0;
}

static void rec(const char *name, char ph) {
  if (on())
    ag_vec_push(&evs, ((ev){name, ph, ag_now_ns()}));
}

void ag_trace_begin(const char *name) { rec(name, 'B'); }
void ag_trace_end(const char *name) { rec(name, 'E'); }

int ag_trace_flush(void) {
  if (!on() || !evs.n)
    return 0;
  ag_str s = AG_STR_INIT;
  ag_str_puts(&s, "{\"traceEvents\":[");
  for (size_t i = 0; i < evs.n; i++) {
    ag_str_puts(&s, i ? ",\n{\"name\":" : "\n{\"name\":");
    ag_str_json_quote(&s, evs.v[i].name);
    ag_str_printf(&s, ",\"ph\":\"%c\",\"ts\":%.3f,\"pid\":%ld,\"tid\":1}", evs.v[i].ph,
                  (double)evs.v[i].ts_ns / 1000.0, (long)getpid());
  }
  ag_str_puts(&s, "\n],\"displayTimeUnit\":\"ns\"}\n");
  int rc = s.oom ? AG_ENOMEM : ag_file_write_atomic(getenv("ARGUS_TRACE"), s.p, s.len);
  ag_str_release(&s);
  ag_vec_free(&evs);
  return rc;
}
