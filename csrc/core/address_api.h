/* address_api.c: memcpy, mem_prefetch, mem_advise, device_by_pci_bus_id. */
#ifndef GPUHOST_ADDRESS_API_H
#define GPUHOST_ADDRESS_API_H

#include "base/state.h"

extern PyMethodDef gh_address_methods[];

#endif /* GPUHOST_ADDRESS_API_H */
