/* device.c: the Device type (a CUdevice and what gpuhost knows of it). */
#ifndef GPUHOST_DEVICE_H
#define GPUHOST_DEVICE_H

#include "base/state.h"

typedef struct {
    PyObject_HEAD
    CUdevice handle;
    int id;
    PyObject *name;       /* str */
    PyObject *uuid;       /* str "GPU-..." */
    PyObject *pci_bus_id; /* str */
    PyObject *context;    /* the Device's Context, made on first use; or NULL */
    PyObject *weakreflist;
    size_t total_memory;
    int cc_major, cc_minor;
} gh_device;

int gh_device_init_type(PyObject *module, gh_state *st);
/* Number of devices; -1 with an exception set if the driver is unusable. */
int gh_device_count(void);
/* Borrowed reference to Device `ordinal` (0 <= ordinal < count), made on first use;
   NULL with InvalidDeviceError (which says how many devices exist) for a bad ordinal. */
gh_device *gh_device_get(gh_state *st, long ordinal);
/* Borrowed Device named by `obj`: a Device, a Context (its device) or an ordinal; NULL with
   TypeError naming `what`, or InvalidDeviceError. */
gh_device *gh_device_from_object(gh_state *st, PyObject *obj, const char *what);
/* *out = whether `dev` can access `peer`'s memory directly (1 for the same device); 0 or -1. */
int gh_device_can_access_peer(gh_device *dev, gh_device *peer, int *out);

#endif /* GPUHOST_DEVICE_H */
