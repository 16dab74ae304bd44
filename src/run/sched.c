/*
 * sched.c — the dependency-driven scheduler. One scheduler thread owns the
 * plan's bookkeeping (remaining-dependency counts, dependents, statuses);
 * worker threads only run executors and post completions back. CPU tasks go
 * to a pool; GPU tasks to one lane per device, so at most one collection
 * runs on a device at a time. Control tasks expand the plan from the
 * scheduler thread. Overhead: a few microseconds per task (bench_plan).
 */
#include "argus/run.h"

#include <pthread.h>
#include <string.h>
#include <unistd.h>

typedef struct queue {
  AG_VEC(int) items;
  size_t head;
} queue;

static int q_push(queue *q, int v) { return ag_vec_push(&q->items, v); }
static int q_empty(const queue *q) { return q->head >= q->items.n; }
static int q_pop(queue *q) { return q->items.v[q->head++]; }

typedef struct sched {
  ag_plan *plan;
  const ag_run_opts *o;
  pthread_mutex_t mu;
  pthread_cond_t work_cv; /* workers wait for work */
  pthread_cond_t done_cv; /* scheduler waits for completions */
  queue cpu_q;
  queue *gpu_q;    /* one per device */
  int *gpu_busy;   /* per device */
  queue done_q;    /* completed task ids, posted by workers */
  int stop;
  /* scheduler-thread state, indexed by task id */
  AG_VEC(int) remaining;
  AG_VEC(int) failed_deps;
  AG_VEC(int) deps_seen; /* how many of a task's deps are accounted for */
  AG_VEC(char) deferred; /* left pending: a type not run this time, or downstream of one */
  AG_VEC(AG_VEC(int)) dependents;
  int finished, total;
  int inflight; /* queued or running on a worker */
} sched;

typedef struct worker {
  sched *s;
  int device; /* -1: CPU pool */
} worker;

static ag_exec_fn find_exec(const ag_run_opts *o, const char *op) {
  ag_exec_fn any = NULL;
  for (size_t i = 0; i < o->nexecs; i++) {
    if (!strcmp(o->execs[i].op, op))
      return o->execs[i].fn;
    if (!strcmp(o->execs[i].op, "*"))
      any = o->execs[i].fn;
  }
  return any;
}

static void set_error(ag_task *t, const char *fmt, const char *a) {
  ag_str e = AG_STR_INIT;
  ag_str_printf(&e, fmt, a);
  ag_free(t->error);
  t->error = ag_str_detach(&e);
}

int ag_task_compute_key(const ag_plan *p, ag_task *t) {
  ag_sha256 h;
  int rc = ag_sha256_begin(&h);
  if (rc)
    return rc;
  char *cfg = ag_json_canonical(t->config);
  ag_str buf = AG_STR_INIT;
  ag_str_printf(&buf, "argus %s\ntype %s\nop %s\nprogram %s\nconfig %s\n", AG_VERSION_STRING,
                ag_task_type_name(t->type), t->op, t->program ? t->program : "",
                cfg ? cfg : "");
  /* inputs: dependencies' outputs in ascending id order */
  int ids[256];
  size_t n = t->deps.n < 256 ? t->deps.n : 256;
  if (n)
    memcpy(ids, t->deps.v, n * sizeof(int));
  for (size_t i = 1; i < n; i++)
    for (size_t j = i; j > 0 && ids[j - 1] > ids[j]; j--) {
      int x = ids[j];
      ids[j] = ids[j - 1];
      ids[j - 1] = x;
    }
  for (size_t i = 0; i < n; i++) {
    const ag_task *d = ag_plan_task(p, ids[i]);
    char *o = d && d->outputs ? ag_json_canonical(d->outputs) : NULL;
    ag_str_printf(&buf, "input %s\n", o ? o : "null");
    ag_free(o);
  }
  ag_free(cfg);
  if (buf.oom) {
    ag_sha256_abort(&h);
    ag_str_release(&buf);
    return AG_ENOMEM;
  }
  ag_sha256_update(&h, buf.p, buf.len);
  ag_str_release(&buf);
  return ag_sha256_end(&h, NULL, t->key);
}

static void run_one(sched *s, ag_task *t, int device) {
  ag_exec_ctx cx = {s->plan, device, s->o->ud};
  uint64_t t0 = ag_now_ns();
  ag_exec_fn fn = find_exec(s->o, t->op);
  int rc;
  json_t *shared = NULL;
  if (t->memo_busy && s->o->memo.wait && s->o->memo.wait(s->o->memo.ud, t, &shared) == 1) {
    json_decref(t->outputs); /* another process ran it: its result is this task's */
    t->outputs = shared;
    t->wall_s = (double)(ag_now_ns() - t0) / 1e9;
    t->status = shared ? AG_TS_CACHED : AG_TS_FAILED;
    if (!shared && !t->error)
      set_error(t, "%s", "an identical run of another process failed");
    return;
  }
  if (!fn) {
    set_error(t, "no executor for task op '%s'", t->op);
    rc = AG_EUNSUPPORTED;
  } else {
    rc = fn(&cx, t);
    if (rc && !t->error)
      set_error(t, "%s", ag_strerror(rc));
  }
  t->wall_s = (double)(ag_now_ns() - t0) / 1e9;
  t->ran = 1;
  t->status = rc ? AG_TS_FAILED : AG_TS_OK;
  if (!rc && !t->outputs)
    t->outputs = json_object();
}

static void *worker_main(void *arg) {
  worker *w = arg;
  sched *s = w->s;
  pthread_mutex_lock(&s->mu);
  for (;;) {
    queue *q = w->device < 0 ? &s->cpu_q : &s->gpu_q[w->device];
    while (!s->stop && q_empty(q))
      pthread_cond_wait(&s->work_cv, &s->mu);
    if (s->stop)
      break;
    int id = q_pop(q);
    ag_task *t = ag_plan_task(s->plan, id);
    pthread_mutex_unlock(&s->mu);
    run_one(s, t, w->device);
    pthread_mutex_lock(&s->mu);
    q_push(&s->done_q, id);
    pthread_cond_signal(&s->done_cv);
  }
  pthread_mutex_unlock(&s->mu);
  return NULL;
}

/* Grows the per-task bookkeeping to cover tasks added by an expander, and
 * accounts for dependencies an expander added to tasks that have not been
 * released yet (e.g. the report gaining the new branches). */
static int track_new_tasks(sched *s) {
  ag_plan *p = s->plan;
  size_t old = s->remaining.n;
  if (ag_vec_reserve(&s->remaining, p->tasks.n) || ag_vec_reserve(&s->failed_deps, p->tasks.n) ||
      ag_vec_reserve(&s->dependents, p->tasks.n) || ag_vec_reserve(&s->deps_seen, p->tasks.n) ||
      ag_vec_reserve(&s->deferred, p->tasks.n))
    return AG_ENOMEM;
  for (size_t i = old; i < p->tasks.n; i++) {
    s->remaining.v[s->remaining.n++] = 0;
    s->failed_deps.v[s->failed_deps.n++] = 0;
    s->deps_seen.v[s->deps_seen.n++] = 0;
    s->deferred.v[s->deferred.n++] = 0;
    memset(&s->dependents.v[s->dependents.n++], 0, sizeof s->dependents.v[0]);
    s->total++;
  }
  for (size_t i = 0; i < p->tasks.n; i++) {
    ag_task *t = p->tasks.v[i];
    if (t->status != AG_TS_PENDING && i < old)
      continue;
    for (size_t k = (size_t)s->deps_seen.v[i]; k < t->deps.n; k++) {
      int d = t->deps.v[k];
      ag_task *dt = ag_plan_task(p, d);
      if (!dt || d == (int)i)
        return AG_EINVAL;
      if (dt->status == AG_TS_OK || dt->status == AG_TS_CACHED)
        continue;
      if (dt->status == AG_TS_FAILED || dt->status == AG_TS_SKIPPED) {
        s->failed_deps.v[i]++;
        continue;
      }
      s->remaining.v[i]++;
      if (ag_vec_push(&s->dependents.v[d], (int)i))
        return AG_ENOMEM;
    }
    s->deps_seen.v[i] = (int)t->deps.n;
  }
  return 0;
}

static void finish(sched *s, ag_task *t);

/* Leaves t and everything downstream pending for this run. */
static void defer(sched *s, int id) {
  if (s->deferred.v[id])
    return;
  s->deferred.v[id] = 1;
  s->finished++;
  AG_VEC(int) *deps = (void *)&s->dependents.v[id];
  for (size_t k = 0; k < deps->n; k++)
    defer(s, deps->v[k]);
}

/* A task whose dependencies are all done either runs, or is skipped when an
 * input failed (unless it tolerates that). */
static void make_ready(sched *s, ag_task *t) {
  if (s->deferred.v[t->id])
    return;
  if (s->o->types && !(s->o->types & (1u << t->type))) {
    defer(s, t->id);
    return;
  }
  if (s->failed_deps.v[t->id] && !t->partial_ok) {
    for (size_t k = 0; k < t->deps.n; k++) {
      ag_task *d = ag_plan_task(s->plan, t->deps.v[k]);
      if (d->status == AG_TS_FAILED || d->status == AG_TS_SKIPPED) {
        ag_str e = AG_STR_INIT;
        ag_str_printf(&e, "input #%d (%s) %s", d->id, d->op,
                      d->status == AG_TS_FAILED ? "failed" : "was skipped");
        if (d->error)
          ag_str_printf(&e, ": %s", d->error);
        ag_free(t->error);
        t->error = ag_str_detach(&e);
        break;
      }
    }
    t->status = AG_TS_SKIPPED;
    finish(s, t);
    return;
  }
  json_t *out = NULL;
  if (s->o->memo.lookup && s->o->memo.lookup(s->o->memo.ud, t, &out) == 1) {
    json_decref(t->outputs);
    t->outputs = out;
    t->status = AG_TS_CACHED;
    finish(s, t);
    return;
  }
  t->status = AG_TS_RUNNING;
  if (t->needs_gpu) {
    if (s->o->ndevices <= 0) {
      set_error(t, "%s", "needs a GPU, and this machine has none (see 'argus doctor')");
      t->status = AG_TS_FAILED;
      finish(s, t);
      return;
    }
    /* the least-loaded lane: independent runs spread across devices */
    int best = 0;
    for (int d = 1; d < s->o->ndevices; d++)
      if (s->gpu_q[d].items.n - s->gpu_q[d].head < s->gpu_q[best].items.n - s->gpu_q[best].head)
        best = d;
    q_push(&s->gpu_q[best], t->id);
  } else {
    q_push(&s->cpu_q, t->id);
  }
  s->inflight++;
  pthread_cond_broadcast(&s->work_cv);
}

static void finish(sched *s, ag_task *t) {
  s->finished++;
  /* every attempt the workspace recorded ends with its true status and
   * reason, also one the scheduler failed without running it (no GPU) */
  if ((t->status == AG_TS_OK || t->status == AG_TS_FAILED) && (t->ran || t->memo_id) &&
      s->o->memo.publish)
    s->o->memo.publish(s->o->memo.ud, t);
  /* a Control task taken from the workspace (cached) expands too: its
   * branches are this plan's */
  if ((t->status == AG_TS_OK || t->status == AG_TS_CACHED) && t->type == AG_TASK_CONTROL &&
      s->plan->expand) {
    size_t before = s->plan->tasks.n;
    int rc = s->plan->expand(s->plan, t, s->plan->expand_ud);
    if (rc) {
      t->status = AG_TS_FAILED;
      set_error(t, "expanding discovered branches failed: %s",
                t->error ? t->error : ag_strerror(rc));
    } else {
      ag_plan_partition(s->plan);
      if (track_new_tasks(s) == 0)
        for (size_t i = before; i < s->plan->tasks.n; i++) {
          ag_task *n = s->plan->tasks.v[i];
          if (n->status == AG_TS_PENDING && s->remaining.v[i] == 0)
            make_ready(s, n);
        }
    }
  }
  if (s->o->progress)
    s->o->progress(s->o->progress_ud, s->plan, t, s->finished, s->total);
  int bad = t->status == AG_TS_FAILED || t->status == AG_TS_SKIPPED;
  AG_VEC(int) *deps = (void *)&s->dependents.v[t->id];
  for (size_t k = 0; k < deps->n; k++) {
    int d = deps->v[k];
    if (bad)
      s->failed_deps.v[d]++;
    ag_task *dt = ag_plan_task(s->plan, d);
    if (--s->remaining.v[d] == 0 && !s->deferred.v[d]) {
      if (dt->status == AG_TS_PENDING)
        make_ready(s, dt);
      else if (dt->status == AG_TS_SKIPPED) /* skipped by an expansion: not run */
        finish(s, dt);
    }
  }
}

int ag_run_plan(ag_plan *p, const ag_run_opts *o, ag_run_stats *stats) {
  memset(stats, 0, sizeof *stats);
  uint64_t t0 = ag_now_ns();
  sched s;
  memset(&s, 0, sizeof s);
  s.plan = p;
  s.o = o;
  int rc = 0;
  int ncpu = o->cpu_workers > 0 ? o->cpu_workers : (int)sysconf(_SC_NPROCESSORS_ONLN);
  if (ncpu < 1)
    ncpu = 1;
  int ndev = o->ndevices > 0 ? o->ndevices : 0;
  pthread_mutex_init(&s.mu, NULL);
  pthread_cond_init(&s.work_cv, NULL);
  pthread_cond_init(&s.done_cv, NULL);
  s.gpu_q = ag_calloc((size_t)ndev + 1, sizeof *s.gpu_q);
  worker *ws = ag_calloc((size_t)(ncpu + ndev), sizeof *ws);
  pthread_t *th = ag_calloc((size_t)(ncpu + ndev), sizeof *th);
  int started = 0;
  if (!s.gpu_q || !ws || !th) {
    rc = AG_ENOMEM;
    goto out;
  }
  if (o->only_failed)
    for (size_t i = 0; i < p->tasks.n; i++) {
      ag_task *t = p->tasks.v[i];
      if (t->status == AG_TS_FAILED || t->status == AG_TS_SKIPPED) {
        t->status = AG_TS_PENDING;
        ag_free(t->error);
        t->error = NULL;
      }
    }
  pthread_mutex_lock(&s.mu);
  /* tasks already finished (a rerun) count as done inputs */
  size_t ndone_before = 0;
  for (size_t i = 0; i < p->tasks.n; i++)
    ndone_before += p->tasks.v[i]->status != AG_TS_PENDING;
  if ((rc = track_new_tasks(&s))) {
    pthread_mutex_unlock(&s.mu);
    goto out;
  }
  s.finished = (int)ndone_before;
  for (int i = 0; i < ncpu + ndev; i++) {
    ws[i] = (worker){&s, i < ncpu ? -1 : i - ncpu};
    if (pthread_create(&th[i], NULL, worker_main, &ws[i]) != 0) {
      rc = AG_ENOMEM;
      break;
    }
    started++;
  }
  if (!rc) {
    for (size_t i = 0; i < p->tasks.n; i++) {
      ag_task *t = p->tasks.v[i];
      if (t->status == AG_TS_PENDING && s.remaining.v[i] == 0)
        make_ready(&s, t);
    }
    for (;;) {
      while (!q_empty(&s.done_q)) {
        int id = q_pop(&s.done_q);
        s.inflight--;
        finish(&s, ag_plan_task(p, id));
      }
      if (s.finished >= s.total)
        break;
      /* nothing queued or running, yet unfinished tasks: a cycle */
      if (s.inflight == 0) {
        for (size_t i = 0; i < p->tasks.n; i++)
          if (p->tasks.v[i]->status == AG_TS_PENDING && !s.deferred.v[i]) {
            p->tasks.v[i]->status = AG_TS_FAILED;
            set_error(p->tasks.v[i], "%s", "dependency cycle: the task can never start");
          }
        break;
      }
      pthread_cond_wait(&s.done_cv, &s.mu);
    }
  }
  s.stop = 1;
  pthread_cond_broadcast(&s.work_cv);
  pthread_mutex_unlock(&s.mu);
out:
  for (int i = 0; i < started; i++)
    pthread_join(th[i], NULL);
  for (size_t i = 0; i < p->tasks.n; i++) {
    ag_task_status st = p->tasks.v[i]->status;
    stats->total++;
    stats->ok += st == AG_TS_OK;
    stats->failed += st == AG_TS_FAILED;
    stats->skipped += st == AG_TS_SKIPPED;
    stats->cached += st == AG_TS_CACHED;
  }
  stats->wall_s = (double)(ag_now_ns() - t0) / 1e9;
  for (size_t i = 0; i < s.dependents.n; i++)
    ag_vec_free(&s.dependents.v[i]);
  ag_vec_free(&s.dependents);
  ag_vec_free(&s.remaining);
  ag_vec_free(&s.failed_deps);
  ag_vec_free(&s.deps_seen);
  ag_vec_free(&s.deferred);
  ag_vec_free(&s.cpu_q.items);
  ag_vec_free(&s.done_q.items);
  for (int d = 0; s.gpu_q && d < ndev; d++)
    ag_vec_free(&s.gpu_q[d].items);
  ag_free(s.gpu_q);
  ag_free(ws);
  ag_free(th);
  pthread_mutex_destroy(&s.mu);
  pthread_cond_destroy(&s.work_cv);
  pthread_cond_destroy(&s.done_cv);
  return rc;
}
