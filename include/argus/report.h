/*
 * argus/report.h — reports (src/report): every value says what it is
 * (signal, statistic, unit), where it applies (region, scope), how it was
 * obtained (qualification: observed, attributed with association entropy, or
 * derived) and from what (provenance: task IDs, program version, evidence).
 * What could not be measured or joined is part of the report, with the
 * reason. Rendered as schema-versioned JSON (docs/report.md) and as a short
 * text summary for people and agents' prompts: region first, biggest first.
 */
#ifndef ARGUS_REPORT_H
#define ARGUS_REPORT_H

#include "argus/plan.h"

#ifdef __cplusplus
extern "C" {
#endif

#define AG_REPORT_SCHEMA "argus.report/1"

typedef struct ag_provenance {
  const int *tasks; /* task ids in the plan */
  int ntasks;
  const char *program; /* program version (id or hash) */
  const char *variant; /* program variant the evidence came from, or NULL */
  const char *scope;   /* canonical scope text */
  const char *collector; /* the collection that recorded the evidence, the host
                            runtime's ARGUS_COLLECT value ("trace", "system"; two
                            joined by '+'), or NULL when no run did (the
                            compiler's report) */
} ag_provenance;

typedef struct ag_report ag_report;

ag_report *ag_report_new(const ag_query *q, const char *program);
void ag_report_free(ag_report *r);

/* Adds one value. entropy < 0: not applicable (only attributed values carry
 * association entropy). */
int ag_report_add(ag_report *r, const char *region, const char *signal, const char *stat,
                  double value, const char *unit, ag_qual qual, double entropy,
                  const ag_provenance *prov);
/* Adds a value that must not be read as a plain number (a derived value
 * that came out negative, ...): "value" is null, the number is "raw" and
 * "flag" says why; the text summary shows the flag. */
int ag_report_add_flagged(ag_report *r, const char *region, const char *signal,
                          const char *stat, double raw, const char *unit, ag_qual qual,
                          const char *why, const ag_provenance *prov);
/* Adds structured data that is not a single number (a breakdown, a file):
 * value is stolen. */
int ag_report_add_json(ag_report *r, const char *region, const char *signal, const char *stat,
                       json_t *value, const char *unit, ag_qual qual,
                       const ag_provenance *prov);
/* Something asked for and not delivered: signal (or NULL) and why. */
int ag_report_missing(ag_report *r, const char *region, const char *signal, const char *why);
/* Something the reader must know before trusting the values (the traced
 * build changed occupancy, tracing added more than the bound, ...). */
int ag_report_warning(ag_report *r, const char *what);
/* Two pieces of evidence not joined (incompatible program versions or scope
 * coordinates), and why. */
/* Attaches `key` (e.g. "dist": the spread of a pooled value, "instance":
 * the dynamic instance it stands for) to the value added last; takes the
 * reference to v. AG_EINVAL when no value was added. */
int ag_report_annotate_last(ag_report *r, const char *key, json_t *v);
int ag_report_not_joined(ag_report *r, const char *what, const char *why);
/* Attaches the plan (tasks, statuses, errors) as provenance detail. */
int ag_report_attach_plan(ag_report *r, const ag_plan *p);

/* Only values with identical program version and scope may be joined.
 * Returns 1 when compatible; otherwise 0 and a reason in why. */
int ag_report_joinable(const ag_provenance *a, const ag_provenance *b, ag_str *why);

json_t *ag_report_to_json(const ag_report *r); /* new reference */
/* Text summary: per region, biggest totals first, then what is missing. */
int ag_report_text(const ag_report *r, ag_str *out);
/* The same summary from a report's JSON (e.g. one read back from the
 * workspace). */
int ag_report_json_text(const json_t *report, ag_str *out);

/* ---- the prompt-sized summary for agents (summary.c, docs/report.md) */
/* Tokens are counted as AG_SUMMARY_BYTES_PER_TOKEN bytes each, rounded up:
 * more than byte-level BPE tokenizers count on this text (words, numbers
 * of three significant digits, region names). */
#define AG_SUMMARY_BYTES_PER_TOKEN 3
#define AG_SUMMARY_MIN_TOKENS 64     /* the header and the left-out line */
#define AG_SUMMARY_DEFAULT_TOKENS 256
#define AG_SUMMARY_MAX_TOKENS 1000000 /* what the CLI and the C API take */
/* The token count of `bytes` bytes of summary text under that rule. */
size_t ag_summary_tokens(size_t bytes);
/* Appends to out the summary of an argus.report/1 or argus.trace/1 report
 * in at most max_tokens tokens: the facts an optimizer acts on, each with
 * its qualification, ranked (qualifications first, then regions by share of
 * time, async sites by exposed wait, then what is missing); the last line
 * says what was left out for the budget. AG_EINVAL: not such a report;
 * AG_ERANGE: max_tokens < AG_SUMMARY_MIN_TOKENS. */
int ag_report_summary(const json_t *report, int max_tokens, ag_str *out);

#ifdef __cplusplus
}
#endif
#endif
