/*
 * task.c — names of the task types (argus/task.h).
 */
#include "argus/task.h"

const char *ag_task_type_name(ag_task_type t) {
  static const char *const names[] = {"transform", "collect", "synthesize", "control"};
  return (unsigned)t < 4 ? names[t] : "?";
}
