/* The docstrings of gpuhost.Device (csrc/device.c): the type, its methods and properties, as
 * PyDoc_STRVAR definitions that device.c's method, member and property tables name.
 * numpydoc sections (docs/ renders them through napoleon); the >>> examples run against the
 * fake driver (tests/fakecuda: device 0 is 'gpuhost fake H100', device 1 'gpuhost fake
 * A100') as well as a GPU.  Included by device.c only.
 */
#ifndef GH_DEVICE_DOCS_H
#define GH_DEVICE_DOCS_H

#include <Python.h>

PyDoc_STRVAR(device_get_attribute_doc,
             "get_attribute($self, attr, /)\n--\n\n"
             "Read one device attribute (cuDeviceGetAttribute).\n\n"
             "The same value reads as an attribute of the device: dev.MAX_THREADS_PER_BLOCK.\n\n"
             "Parameters\n"
             "----------\n"
             "attr : str or int\n"
             "    A CU_DEVICE_ATTRIBUTE_* name, with or without the prefix\n"
             "    ('MAX_THREADS_PER_BLOCK'), or its number.\n\n"
             "Returns\n"
             "-------\n"
             "int\n\n"
             "Raises\n"
             "------\n"
             "ValueError\n"
             "    For an unknown attribute.\n"
             "CudaAPIError\n"
             "    If the driver refuses it.\n\n"
             "Examples\n"
             "--------\n"
             ">>> dev = gpuhost.gpus[0]\n"
             ">>> dev.get_attribute('WARP_SIZE'), dev.WARP_SIZE\n"
             "(32, 32)");

PyDoc_STRVAR(device_can_access_peer_doc,
             "can_access_peer($self, other, /)\n--\n\n"
             "Whether kernels on this device can use `other`'s memory directly "
             "(cuDeviceCanAccessPeer).\n\n"
             "Access needs Context.enable_peer_access(other) first. Copies between the two\n"
             "devices work either way; without peer access the driver stages them through the\n"
             "host.\n\n"
             "Parameters\n"
             "----------\n"
             "other : Device, Context or int\n"
             "    The other device, or its id.\n\n"
             "Returns\n"
             "-------\n"
             "bool\n"
             "    True for the device itself.\n\n"
             "Examples\n"
             "--------\n"
             ">>> gpuhost.gpus[0].can_access_peer(0)\n"
             "True");

PyDoc_STRVAR(device_get_primary_context_doc,
             "get_primary_context($self, /)\n--\n\n"
             "The device's primary Context, retained if gpuhost does not hold it yet.\n\n"
             "It is not made current: use `with dev:`, select_device() or Context.push().\n\n"
             "Examples\n"
             "--------\n"
             ">>> ctx = gpuhost.gpus[0].get_primary_context()\n"
             ">>> ctx.device is gpuhost.gpus[0]\n"
             "True");

PyDoc_STRVAR(device_reset_doc,
             "reset($self, /, *, force=False)\n--\n\n"
             "Reset the device's primary context in this process (numba's Device.reset()).\n\n"
             "First what gpuhost made in it is freed (Context.reset()) and gpuhost lets go of\n"
             "the context; then, as cuDevicePrimaryCtxReset, the context is destroyed. No\n"
             "context is made current; the next call that needs one makes it anew. Objects\n"
             "made before raise an error that says so when used.\n\n"
             "Where other libraries of this process still hold the context (PyTorch, CuPy, JAX,\n"
             "numba's own driver), a DeviceResetWarning names them, and the context is left\n"
             "to them: destroying it would end their arrays, handles and streams, and CuPy's\n"
             "handles can then crash the process when they are freed at exit. gpuhost's part\n"
             "is done all the same (as gpuhost.close() for this device).\n\n"
             "Parameters\n"
             "----------\n"
             "force : bool, optional\n"
             "    Destroy the context even while other libraries hold it (the warning still\n"
             "    says whom that hurts): what recovering from an error that broke the context\n"
             "    for everyone (an illegal address) takes.\n\n"
             "Warns\n"
             "-----\n"
             "DeviceResetWarning\n"
             "    Another library holds the context. With the warning made an error, nothing\n"
             "    is destroyed and the error is raised.\n\n"
             "Raises\n"
             "------\n"
             "StreamCaptureError\n"
             "    A gpuhost stream is capturing a graph in the context.\n\n"
             "Examples\n"
             "--------\n"
             ">>> dev = gpuhost.get_current_device()\n"
             ">>> dev.reset()\n"
             ">>> gpuhost.to_device(np.arange(2)).copy_to_host()\n"
             "array([0, 1])");

PyDoc_STRVAR(device___enter___doc, "__enter__($self, /)\n--\n\n"
                                   "Push the device's primary context on this thread's stack.\n\n"
                                   "`with dev:` makes the device current for the block.\n\n"
                                   "Returns\n"
                                   "-------\n"
                                   "Device\n"
                                   "    The device itself.\n\n"
                                   "Examples\n"
                                   "--------\n"
                                   ">>> with gpuhost.gpus[1] as dev:\n"
                                   "...     gpuhost.current_context().device is dev\n"
                                   "True");

PyDoc_STRVAR(device___exit___doc, "__exit__($self, *exc_info)\n--\n\n"
                                  "Pop the context pushed by __enter__.\n\n"
                                  "Examples\n"
                                  "--------\n"
                                  ">>> with gpuhost.gpus[1]:\n"
                                  "...     pass\n"
                                  ">>> gpuhost.current_context().device is gpuhost.gpus[1]\n"
                                  "False");

PyDoc_STRVAR(device___dir___doc, "__dir__($self, /)\n--\n\n"
                                 "The usual names plus every device attribute name.\n\n"
                                 "Examples\n"
                                 "--------\n"
                                 ">>> 'MAX_THREADS_PER_BLOCK' in dir(gpuhost.gpus[0])\n"
                                 "True");

PyDoc_STRVAR(device__repr_html__doc,
             "_repr_html_($self, /)\n--\n\n"
             "An HTML table of the device's facts, for Jupyter.\n\n"
             "Returns\n"
             "-------\n"
             "str\n\n"
             "Examples\n"
             "--------\n"
             ">>> gpuhost.gpus[0]._repr_html_()\n"
             "'<table class=\"gpuhost\"><caption style=\"text-align:left\">CUDA device "
             "0</caption>...</table>'");

PyDoc_STRVAR(device__repr_pretty__doc,
             "_repr_pretty_($self, p, cycle, /)\n--\n\n"
             "IPython's pretty printer: the repr, then the device's facts one per line.\n\n"
             "Examples\n"
             "--------\n"
             ">>> from IPython.lib.pretty import pretty  # doctest: +SKIP\n"
             ">>> print(pretty(gpuhost.gpus[0]))  # doctest: +SKIP\n"
             "<CUDA device 0 'gpuhost fake H100'>\n"
             "  name: gpuhost fake H100\n"
             "  compute capability: 9.0\n"
             "  ...");

PyDoc_STRVAR(device_id_doc,
             "The device's ordinal.\n\n"
             "It is the index in gpuhost.gpus and the number select_device() takes.\n\n"
             "Examples\n"
             "--------\n"
             ">>> gpuhost.gpus[1].id\n"
             "1");

PyDoc_STRVAR(device_name_doc, "The device's name (str).\n\n"
                              "Examples\n"
                              "--------\n"
                              ">>> gpuhost.gpus[0].name\n"
                              "'gpuhost fake H100'");

PyDoc_STRVAR(
    device_uuid_doc,
    "The device's UUID as nvidia-smi shows it, `GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`.\n\n"
    "Examples\n"
    "--------\n"
    ">>> gpuhost.gpus[0].uuid\n"
    "'GPU-...-...-...-...-...'");

PyDoc_STRVAR(device_pci_bus_id_doc,
             "The PCI bus id, in hex.\n\n"
             "Its form is `domain:bus:device.function` with a 4-digit domain, as CUDA documents\n"
             "it and CuPy reads it, the form cuDeviceGetByPCIBusId takes back (nvidia-smi's\n"
             "8-digit domain it refuses).\n\n"
             "Examples\n"
             "--------\n"
             ">>> gpuhost.gpus[0].pci_bus_id\n"
             "'0000:1B:00.0'");

PyDoc_STRVAR(device_compute_capability_doc, "The compute capability as a (major, minor) tuple.\n\n"
                                            "Examples\n"
                                            "--------\n"
                                            ">>> gpuhost.gpus[0].compute_capability\n"
                                            "(9, 0)\n"
                                            ">>> gpuhost.gpus[0].compute_capability >= (8, 0)\n"
                                            "True");

PyDoc_STRVAR(device_total_memory_doc,
             "The device's memory in bytes.\n\n"
             "Examples\n"
             "--------\n"
             ">>> dev = gpuhost.gpus[0]\n"
             ">>> dev.total_memory\n"
             "85520809984\n"
             ">>> dev.total_memory == dev.get_primary_context().get_memory_info().total\n"
             "True");

PyDoc_STRVAR(device_attributes_doc,
             "Every device attribute this driver knows, as a dict.\n\n"
             "The keys are the names without the `CU_DEVICE_ATTRIBUTE_` prefix.\n\n"
             "Examples\n"
             "--------\n"
             ">>> attrs = gpuhost.gpus[0].attributes\n"
             ">>> attrs['WARP_SIZE']\n"
             "32");

PyDoc_STRVAR(device_supports_float16_doc,
             "Whether the device has native half precision (compute capability 5.3 or newer).\n\n"
             "Examples\n"
             "--------\n"
             ">>> gpuhost.gpus[0].supports_float16\n"
             "True");

PyDoc_STRVAR(device_supports_bfloat16_doc,
             "Whether the device has native bfloat16 (compute capability 8.0 or newer).\n\n"
             "Examples\n"
             "--------\n"
             ">>> dev = gpuhost.gpus[0]\n"
             ">>> dev.supports_bfloat16 == (dev.compute_capability >= (8, 0))\n"
             "True");

PyDoc_STRVAR(device_doc,
             "A CUDA device, numba.cuda's Device.\n\n"
             "Get one from gpuhost.gpus[i] or get_current_device(); it is not made directly.\n"
             "Every CU_DEVICE_ATTRIBUTE_* reads as an attribute: dev.MAX_THREADS_PER_BLOCK.\n"
             "`with dev:` makes the device's primary context current for the block.\n\n"
             "Examples\n"
             "--------\n"
             ">>> dev = gpuhost.gpus[0]\n"
             ">>> major, minor = dev.compute_capability\n"
             ">>> dev.MAX_THREADS_PER_BLOCK\n"
             "1024\n"
             ">>> with dev:\n"
             "...     d = gpuhost.to_device(np.arange(3))  # on device 0\n"
             ">>> d.device is dev\n"
             "True");

#endif /* GH_DEVICE_DOCS_H */
