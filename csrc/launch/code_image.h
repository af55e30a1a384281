/* code_image.c: the Module type (a loaded CUmodule: a code image in a context). */
#ifndef GPUHOST_CODE_IMAGE_H
#define GPUHOST_CODE_IMAGE_H

#include "core/context.h"

/* A loaded CUmodule. */
typedef struct {
    PyObject_HEAD
    gh_context *context; /* strong */
    uint64_t generation;
    CUmodule handle;       /* NULL once freed */
    PyObject *param_types; /* {symbol: ((kind, size, align), ...)} from the PTX, or None */
    PyObject *lowered;     /* {name expression: lowered name}, or None */
    PyObject *info_log;    /* str */
    int unloaded;          /* unload() was called: no more launches */
    int globals_out;       /* get_global() handed out addresses: free only at dealloc */
    PyObject *weakreflist;
} gh_module;

int gh_code_image_init_type(PyObject *module, gh_state *st);
/* 0 if module `m` can still be used by call `id`; else CudaAPIError and -1 (unloaded, or
   its context reset or closed). */
int gh_module_check_usable(gh_module *m, gh_cu_id id);

#endif /* GPUHOST_CODE_IMAGE_H */
