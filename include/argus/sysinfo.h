/*
 * argus/sysinfo.h — what this machine can do for Argus: the CUDA driver and
 * its devices, the CUDA tools (nvcc, ptxas, nvJitLink, CUPTI), whether
 * hardware profiling is permitted. Loaded at run time (dlopen), so it works
 * and says what is missing on a machine without a GPU or without CUDA.
 */
#ifndef ARGUS_SYSINFO_H
#define ARGUS_SYSINFO_H

#include "argus/core.h"

/* Builds a JSON object (new reference in *out):
 *   {"driver": {"available": bool, "version": "13.0", "error": "..."},
 *    "devices": [{"index","name","cc","sm_count","clock_khz","mem_clock_khz",
 *                 "memory_bytes","l2_bytes"}],
 *    "tools": {"nvcc": {"path","version"}|{"error"}, "ptxas": ..., 
 *              "nvjitlink": {"version"}|{"error"}, "cupti": {"api_version"}|{"error"}},
 *    "profiling": {"permitted": bool|null, "reason": "..."}}
 * cuda_home: toolkit root (e.g. /usr/local/cuda) searched after PATH. */
int ag_sysinfo_collect(const char *cuda_home, json_t **out);

#endif
