/* The docstrings of csrc/nccl_register.c: gpuhost.nccl.Registration (Communicator.register's
 * result) and the memory of ncclMemAlloc (gpuhost.nccl.device_array's owner), as
 * PyDoc_STRVAR definitions.  numpydoc sections; the >>> examples run against the fake driver
 * and the fake NCCL (tests/fakecuda) as well as a GPU.  Included by nccl_register.c only.
 */
#ifndef GH_NCCL_REGISTER_DOCS_H
#define GH_NCCL_REGISTER_DOCS_H

#include <Python.h>

PyDoc_STRVAR(reg_doc,
             "A device array registered with a Communicator (Communicator.register).\n\n"
             "While it is open, NCCL may move the array's memory directly (ncclCommRegister);\n"
             "`close` (or the end of a with-block, or the communicator's end) deregisters it\n"
             "(ncclCommDeregister).  It keeps the array and the communicator alive.\n\n"
             "Attributes\n"
             "----------\n"
             "array : gpuhost.DeviceArray\n"
             "    The array registered.\n"
             "nbytes : int\n"
             "    The bytes registered.\n"
             "closed : bool\n"
             "    Whether it was deregistered.\n\n"
             "Examples\n"
             "--------\n"
             ">>> from gpuhost import nccl\n"
             ">>> [comm] = nccl.Communicator.init_all(1)\n"
             ">>> x = nccl.device_array(256, np.float32)\n"
             ">>> with comm.register(x) as reg:\n"
             "...     out = comm.all_reduce(x, x)\n"
             ">>> reg.closed\n"
             "True");

PyDoc_STRVAR(reg_array_doc, "The DeviceArray registered.\n\n"
                            "Examples\n"
                            "--------\n"
                            ">>> from gpuhost import nccl\n"
                            ">>> [comm] = nccl.Communicator.init_all(1)\n"
                            ">>> x = nccl.device_array(8)\n"
                            ">>> comm.register(x).array is x\n"
                            "True");

PyDoc_STRVAR(reg_nbytes_doc, "The number of bytes registered (the whole array).\n\n"
                             "Examples\n"
                             "--------\n"
                             ">>> from gpuhost import nccl\n"
                             ">>> [comm] = nccl.Communicator.init_all(1)\n"
                             ">>> comm.register(nccl.device_array((4, 4), np.float32)).nbytes\n"
                             "64");

PyDoc_STRVAR(reg_closed_doc, "Whether the buffer was deregistered.\n\n"
                             "Examples\n"
                             "--------\n"
                             ">>> from gpuhost import nccl\n"
                             ">>> [comm] = nccl.Communicator.init_all(1)\n"
                             ">>> reg = comm.register(nccl.device_array(8))\n"
                             ">>> reg.closed\n"
                             "False\n"
                             ">>> reg.close()\n"
                             ">>> reg.closed\n"
                             "True");

PyDoc_STRVAR(reg_close_doc,
             "close($self, /)\n--\n\n"
             "Deregister the buffer (ncclCommDeregister); a second call does nothing.\n\n"
             "Raises\n"
             "------\n"
             "gpuhost.errors.NcclError\n"
             "    NCCL refused.\n\n"
             "Examples\n"
             "--------\n"
             ">>> from gpuhost import nccl\n"
             ">>> [comm] = nccl.Communicator.init_all(1)\n"
             ">>> reg = comm.register(nccl.device_array(8))\n"
             ">>> reg.close()\n"
             ">>> reg.close()  # again: nothing");

PyDoc_STRVAR(reg_enter_doc, "__enter__($self, /)\n--\n\n"
                            "The Registration itself; the block's end closes it.\n\n"
                            "Examples\n"
                            "--------\n"
                            ">>> from gpuhost import nccl\n"
                            ">>> [comm] = nccl.Communicator.init_all(1)\n"
                            ">>> with comm.register(nccl.device_array(8)) as reg:\n"
                            "...     print(reg.closed)\n"
                            "False");

PyDoc_STRVAR(reg_exit_doc, "__exit__($self, *exc_info)\n--\n\n"
                           "Deregister the buffer (close()).\n\n"
                           "Examples\n"
                           "--------\n"
                           ">>> from gpuhost import nccl\n"
                           ">>> [comm] = nccl.Communicator.init_all(1)\n"
                           ">>> with comm.register(nccl.device_array(8)) as reg:\n"
                           "...     pass\n"
                           ">>> reg.closed\n"
                           "True");

PyDoc_STRVAR(mem_doc, "Device memory from NCCL's allocator (ncclMemAlloc), freed with\n"
                      "ncclMemFree when dropped: the owner of gpuhost.nccl.device_array's "
                      "arrays.");

PyDoc_STRVAR(mem_size_doc, "Its size in bytes.");
PyDoc_STRVAR(mem_ptr_doc, "Its device address.");
PyDoc_STRVAR(mem_device_doc, "The Device it is on.");

PyDoc_STRVAR(nccl_mem_alloc_doc,
             "nccl_mem_alloc(nbytes, device=None)\n--\n\n"
             "`nbytes` of device memory from ncclMemAlloc on `device` (None: the current one).\n\n"
             "Raises NcclSupportError where the loaded libnccl lacks it (before NCCL 2.19).");

#endif /* GH_NCCL_REGISTER_DOCS_H */
