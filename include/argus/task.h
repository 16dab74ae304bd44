/*
 * argus/task.h — the four task types shared by the planner (plan.h) and the
 * workspace's task records (store.h).
 */
#ifndef ARGUS_TASK_H
#define ARGUS_TASK_H

typedef enum ag_task_type {
  AG_TASK_TRANSFORM = 0, /* artifact -> artifact */
  AG_TASK_COLLECT,       /* run a variant with a backend -> evidence */
  AG_TASK_SYNTHESIZE,    /* evidence -> derived data / report */
  AG_TASK_CONTROL        /* discovery; materializes new branches */
} ag_task_type;

const char *ag_task_type_name(ag_task_type t); /* "transform"; static text */

#endif
