/* The docstrings of gpuhost._core.JitLaunch and JitDispatcher (csrc/jit_launch.c), the C side
 * of gpuhost.jit: the types, their methods and properties, as PyDoc_STRVAR definitions that
 * jit_launch.c's method, member and property tables name.  numpydoc sections (docs/ renders
 * them through napoleon); the >>> examples run against the fake driver (tests/fakecuda) with
 * numba-cuda installed, as well as on a GPU.  Included by jit_launch.c only.
 */
#ifndef GH_JIT_LAUNCH_DOCS_H
#define GH_JIT_LAUNCH_DOCS_H

#include <Python.h>

PyDoc_STRVAR(jitlaunch_griddim_doc, "The grid, as (x, y, z).\n\n"
                                    "Examples\n"
                                    "--------\n"
                                    ">>> @gpuhost.jit\n"
                                    "... def scale(x, a):\n"
                                    "...     i = gpuhost.grid(1)\n"
                                    "...     if i < x.size:\n"
                                    "...         x[i] *= a\n"
                                    ">>> scale[(128, 2), 256].griddim\n"
                                    "(128, 2, 1)");

PyDoc_STRVAR(jitlaunch_blockdim_doc, "The block, as (x, y, z).\n\n"
                                     "Examples\n"
                                     "--------\n"
                                     ">>> @gpuhost.jit\n"
                                     "... def scale(x, a):\n"
                                     "...     i = gpuhost.grid(1)\n"
                                     "...     if i < x.size:\n"
                                     "...         x[i] *= a\n"
                                     ">>> scale[128, (32, 8)].blockdim\n"
                                     "(32, 8, 1)");

PyDoc_STRVAR(jitlaunch_sharedmem_doc, "Bytes of dynamic shared memory.\n\n"
                                      "Examples\n"
                                      "--------\n"
                                      ">>> @gpuhost.jit\n"
                                      "... def scale(x, a):\n"
                                      "...     i = gpuhost.grid(1)\n"
                                      "...     if i < x.size:\n"
                                      "...         x[i] *= a\n"
                                      ">>> scale[128, 256, None, 1024].sharedmem\n"
                                      "1024\n"
                                      ">>> scale[128, 256].sharedmem\n"
                                      "0");

PyDoc_STRVAR(jitlaunch_pre_launch_callbacks_doc,
             "Callables run as callback(kernel, launch) just before each launch.\n\n"
             "numba-cuda's pre-launch callbacks: a list to append to; they must not call CUDA.\n\n"
             "Examples\n"
             "--------\n"
             ">>> @gpuhost.jit\n"
             "... def scale(x, a):\n"
             "...     i = gpuhost.grid(1)\n"
             "...     if i < x.size:\n"
             "...         x[i] *= a\n"
             ">>> launch = scale[128, 256]\n"
             ">>> launch.pre_launch_callbacks\n"
             "[]\n"
             ">>> launch.pre_launch_callbacks.append(lambda kernel, launch: None)");

PyDoc_STRVAR(jitlaunch_dispatcher_doc, "The Dispatcher this launches.\n\n"
                                       "Examples\n"
                                       "--------\n"
                                       ">>> @gpuhost.jit\n"
                                       "... def scale(x, a):\n"
                                       "...     i = gpuhost.grid(1)\n"
                                       "...     if i < x.size:\n"
                                       "...         x[i] *= a\n"
                                       ">>> scale[128, 256].dispatcher is scale\n"
                                       "True");

PyDoc_STRVAR(jitlaunch_stream_doc, "The stream, as given.\n\n"
                                   "Examples\n"
                                   "--------\n"
                                   ">>> @gpuhost.jit\n"
                                   "... def scale(x, a):\n"
                                   "...     i = gpuhost.grid(1)\n"
                                   "...     if i < x.size:\n"
                                   "...         x[i] *= a\n"
                                   ">>> s = gpuhost.stream()\n"
                                   ">>> scale[128, 256, s].stream is s\n"
                                   "True\n"
                                   ">>> print(scale[128, 256].stream)\n"
                                   "None");

PyDoc_STRVAR(
    jitlaunch_doc,
    "A configured launch of a gpuhost.jit kernel: dispatcher[grid, block, stream, shared].\n\n"
    "Call it with the kernel's arguments.\n\n"
    "Examples\n"
    "--------\n"
    ">>> @gpuhost.jit\n"
    "... def scale(x, a):\n"
    "...     i = gpuhost.grid(1)\n"
    "...     if i < x.size:\n"
    "...         x[i] *= a\n"
    ">>> launch = scale[128, 256]\n"
    ">>> launch\n"
    "<JitLaunch of <gpuhost.jit Dispatcher of scale>: grid (128, 1, 1), block (256, 1, 1), "
    "shared 0, stream None>\n"
    ">>> launch(gpuhost.device_array(512, np.float32), np.float32(2))  # doctest: +SKIP");

PyDoc_STRVAR(jitdispatcher__jit_key_doc,
             "_jit_key($self, args, /)\n--\n\n"
             "(key, keep, portable) for a launch with `args` (a tuple).\n\n"
             "portable: the key names no address, so it means the same in another process.\n"
             "None when launches with such arguments are not keyed in C.");

PyDoc_STRVAR(jitdispatcher__jit_add_doc,
             "_jit_add($self, key, keep, plan, nargs, overload, kernel, cooperative, lcs_launch, "
             "/)\n--\n\n"
             "Launch arguments of `key` as `kernel` (in its context) packed by `plan`.\n\n"
             "False when the table is full.");

PyDoc_STRVAR(jitdispatcher__jit_clear_doc, "_jit_clear($self, /)\n--\n\n"
                                           "Forget every overload kept for C launches.");

PyDoc_STRVAR(jitdispatcher__jit_entries_doc, "_jit_entries($self, /)\n--\n\n"
                                             "[(key, plan, overload, n_kernels), ...].");

PyDoc_STRVAR(jitdispatcher__jit_pack_doc,
             "_jit_pack($self, plan, args, kernel, /)\n--\n\n"
             "The parameter bytes a launch of `kernel` passes for `args` by `plan`, or None.");

PyDoc_STRVAR(
    jitdispatcher_doc,
    "The C side of gpuhost.jit's Dispatcher.\n\n"
    "dispatcher[grid, block, stream, shared] makes a JitLaunch, whose call picks the compiled\n"
    "overload and packs numba's parameters in C.");

PyDoc_STRVAR(jit__jit_layout_doc,
             "_jit_layout(module, array, /)\n--\n\n"
             "(layout, readonly) of a DeviceArray.\n\n"
             "numba's layout of the array, 'C', 'F' or 'A', and whether its memory is read-only.");

PyDoc_STRVAR(jit__jit_context_doc,
             "_jit_context(module, stream, /)\n--\n\n"
             "The Context a gpuhost.jit launch on `stream` goes to, as the C launcher picks it.\n\n"
             "A gpuhost stream's own context (not a default or foreign stream's), else the\n"
             "current one (device 0's primary context made current if none is, as numba does).");

PyDoc_STRVAR(jit__jit_usable_doc, "_jit_usable(module, kernel, /)\n--\n\n"
                                  "Whether a Kernel's module is still loaded in a live context.");

#endif /* GH_JIT_LAUNCH_DOCS_H */
