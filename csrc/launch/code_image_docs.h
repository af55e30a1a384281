/* The docstrings of gpuhost.Module and of link() (csrc/code_image.c): the type, its methods and
 * properties, as PyDoc_STRVAR definitions that code_image.c's method, member and property
 * tables name.  numpydoc sections (docs/ renders them through napoleon); the >>> examples run
 * against the fake driver (tests/fakecuda, which loads PTX text) as well as a GPU.  Included
 * by code_image.c only.
 */
#ifndef GH_CODE_IMAGE_DOCS_H
#define GH_CODE_IMAGE_DOCS_H

#include <Python.h>

PyDoc_STRVAR(
    module_get_function_doc,
    "get_function($self, name, /)\n--\n\n"
    "The kernel `name` of the module.\n\n"
    "Parameters\n"
    "----------\n"
    "name : str\n"
    "    The kernel's name: its extern \"C\" name, its mangled symbol, or a name\n"
    "    expression the source was compiled with ('scale<float>'), which is looked up by\n"
    "    its lowered name.\n\n"
    "Returns\n"
    "-------\n"
    "Kernel\n\n"
    "Raises\n"
    "------\n"
    "CudaAPIError\n"
    "    CUDA_ERROR_NOT_FOUND, listing the module's kernels, when it has no such kernel.\n\n"
    "Examples\n"
    "--------\n"
    ">>> scale = mod.get_function('scale')  # doctest: +SKIP\n"
    ">>> scale.num_params  # doctest: +SKIP\n"
    "3\n\n"
    "With a module of PTX text:\n\n"
    ">>> ptx = ('.version 7.0\\n.target sm_70\\n.address_size 64\\n.visible .entry '\n"
    "...        'scale(.param .u64 x, .param .f32 a, .param .u32 n) { ret; }')\n"
    ">>> mod = gpuhost.Module(ptx)\n"
    ">>> mod.get_function('scale')\n"
    "<gpuhost.Kernel 'scale' (3 parameters) on device 0>\n"
    ">>> mod.get_function('shift')\n"
    "Traceback (most recent call last):\n"
    "    ...\n"
    "gpuhost.errors.CudaAPIError: cuModuleGetFunction failed: [500] CUDA_ERROR_NOT_FOUND: named "
    "symbol not found\n"
    "the module has no kernel named 'shift' (its kernels: scale)");

PyDoc_STRVAR(module_get_global_doc,
             "get_global($self, /, name, dtype=None, shape=None)\n--\n\n"
             "A module's __device__ or __constant__ variable, as a DeviceArray viewing it.\n\n"
             "Writing to the array changes what the kernels read; no copy is made.\n\n"
             "Parameters\n"
             "----------\n"
             "name : str\n"
             "    The variable's name.\n"
             "dtype : dtype_like, optional\n"
             "    The element type; uint8 bytes if None.\n"
             "shape : int or tuple of int, optional\n"
             "    The array's shape; all of the variable if None.\n\n"
             "Returns\n"
             "-------\n"
             "DeviceArray\n\n"
             "Raises\n"
             "------\n"
             "CudaAPIError\n"
             "    CUDA_ERROR_NOT_FOUND when the module has no such variable.\n\n"
             "Examples\n"
             "--------\n"
             ">>> src = '__constant__ float coeffs[4];'\n"
             ">>> mod = gpuhost.Module(gpuhost.compile(src))  # doctest: +SKIP\n"
             ">>> coeffs = mod.get_global('coeffs', np.float32)  # doctest: +SKIP\n"
             ">>> coeffs.shape  # doctest: +SKIP\n"
             "(4,)\n"
             ">>> coeffs.copy_to_device(np.ones(4, np.float32))  # doctest: +SKIP");

PyDoc_STRVAR(module__get_global_doc, "_get_global($self, name, /)\n--\n\n"
                                     "(address, size in bytes) of the variable `name`.");

PyDoc_STRVAR(module_unload_doc,
             "unload($self, /)\n--\n\n"
             "Stop using the module: its kernels raise CudaAPIError from now on.\n\n"
             "The code is freed now, or once no array from get_global() refers to it. A Module\n"
             "is also a context manager that unloads it at the end of the block.\n\n"
             "Examples\n"
             "--------\n"
             ">>> with gpuhost.Module(code) as mod:  # doctest: +SKIP\n"
             "...     mod.get_function('scale')[4, 256](d, np.float32(2), d.size)\n"
             ">>> mod.unloaded  # doctest: +SKIP\n"
             "True\n\n"
             "With a module of PTX text:\n\n"
             ">>> ptx = ('.version 7.0\\n.target sm_70\\n.address_size 64\\n.visible .entry '\n"
             "...        'scale(.param .u64 x, .param .f32 a, .param .u32 n) { ret; }')\n"
             ">>> with gpuhost.Module(ptx) as mod:\n"
             "...     k = mod.get_function('scale')\n"
             ">>> mod.unloaded\n"
             "True");

PyDoc_STRVAR(module___enter___doc, "__enter__($self, /)\n--\n\n"
                                   "The module itself.");

PyDoc_STRVAR(module___exit___doc, "__exit__($self, *exc_info)\n--\n\n"
                                  "unload().");

PyDoc_STRVAR(module_info_log_doc,
             "What the JIT said while loading (empty for most cubins).\n\n"
             "A str; the JIT's warnings about PTX land here.\n\n"
             "Examples\n"
             "--------\n"
             ">>> ptx = ('.version 7.0\\n.target sm_70\\n.address_size 64\\n.visible .entry '\n"
             "...        'scale(.param .u64 x, .param .f32 a, .param .u32 n) { ret; }')\n"
             ">>> mod = gpuhost.Module(ptx)\n"
             ">>> mod.info_log\n"
             "''");

PyDoc_STRVAR(module_lowered_names_doc,
             "The compile's name expressions and their lowered names, or None.\n\n"
             "A dict `{name expression: lowered name}`: the name expressions are those given to\n"
             "gpuhost.compile(name_expressions=...); get_function() takes them.\n\n"
             "Examples\n"
             "--------\n"
             ">>> ptx = ('.version 7.0\\n.target sm_70\\n.address_size 64\\n.visible .entry '\n"
             "...        'scale(.param .u64 x, .param .f32 a, .param .u32 n) { ret; }')\n"
             ">>> mod = gpuhost.Module(ptx)\n"
             ">>> print(mod.lowered_names)  # not from gpuhost.compile()\n"
             "None\n"
             ">>> src = r'''\n"
             "... template <typename T> __global__ void scale(T *x, T a, int n) {\n"
             "...     int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
             "...     if (i < n) x[i] *= a;\n"
             "... }'''\n"
             ">>> code = gpuhost.compile(src, output='ptx', name_expressions=['scale<float>'])\n"
             ">>> mod = gpuhost.Module(code)\n"
             ">>> mod.lowered_names\n"
             "{'scale<float>': '_Z5scaleIfEvPT_S0_i'}\n"
             ">>> mod.get_function('scale<float>').symbol\n"
             "'_Z5scaleIfEvPT_S0_i'");

PyDoc_STRVAR(module_param_types_doc,
             "The kernels' parameter types read from the PTX, or None.\n\n"
             "A dict `{kernel symbol: ((kind, size, align), ...)}`; kind is 'i' (integer or\n"
             "pointer), 'f' (floating point) or 's' (struct). None for a cubin or fatbin.\n\n"
             "Examples\n"
             "--------\n"
             ">>> ptx = ('.version 7.0\\n.target sm_70\\n.address_size 64\\n.visible .entry '\n"
             "...        'scale(.param .u64 x, .param .f32 a, .param .u32 n) { ret; }')\n"
             ">>> mod = gpuhost.Module(ptx)\n"
             ">>> mod.param_types\n"
             "{'scale': (('i', 8, 8), ('f', 4, 4), ('i', 4, 4))}");

PyDoc_STRVAR(module_handle_doc,
             "The CUmodule as an int (0 once unloaded).\n\n"
             "Examples\n"
             "--------\n"
             ">>> ptx = ('.version 7.0\\n.target sm_70\\n.address_size 64\\n.visible .entry '\n"
             "...        'scale(.param .u64 x, .param .f32 a, .param .u32 n) { ret; }')\n"
             ">>> mod = gpuhost.Module(ptx)\n"
             ">>> mod.handle != 0\n"
             "True\n"
             ">>> mod.unload()\n"
             ">>> mod.handle\n"
             "0");

PyDoc_STRVAR(module_context_doc,
             "The Context the module was loaded in.\n\n"
             "Its kernels launch on that context's device only.\n\n"
             "Examples\n"
             "--------\n"
             ">>> ptx = ('.version 7.0\\n.target sm_70\\n.address_size 64\\n.visible .entry '\n"
             "...        'scale(.param .u64 x, .param .f32 a, .param .u32 n) { ret; }')\n"
             ">>> mod = gpuhost.Module(ptx)\n"
             ">>> mod.context is gpuhost.current_context()\n"
             "True");

PyDoc_STRVAR(module_unloaded_doc,
             "Whether the module was unloaded (or its context reset).\n\n"
             "Examples\n"
             "--------\n"
             ">>> ptx = ('.version 7.0\\n.target sm_70\\n.address_size 64\\n.visible .entry '\n"
             "...        'scale(.param .u64 x, .param .f32 a, .param .u32 n) { ret; }')\n"
             ">>> mod = gpuhost.Module(ptx)\n"
             ">>> mod.unloaded\n"
             "False\n"
             ">>> mod.unload()\n"
             ">>> mod.unloaded\n"
             "True");

PyDoc_STRVAR(module_doc,
             "Module(image)\n--\n\n"
             "A CUDA module: device code loaded into the current context.\n\n"
             "PTX is compiled by the driver's JIT; its log is kept in `info_log`.\n\n"
             "Parameters\n"
             "----------\n"
             "image : str, bytes, CompiledCode or path\n"
             "    PTX (str or bytes), cubin or fatbin bytes, a CompiledCode from\n"
             "    gpuhost.compile(), or the path of such a file.\n\n"
             "Raises\n"
             "------\n"
             "CudaAPIError\n"
             "    If the load fails; the message carries the JIT's error log.\n\n"
             "Examples\n"
             "--------\n"
             ">>> src = r'''\n"
             "... extern \"C\" __global__ void scale(float *x, float a, int n) {\n"
             "...     int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
             "...     if (i < n) x[i] *= a;\n"
             "... }'''\n"
             ">>> mod = gpuhost.Module(gpuhost.compile(src))  # doctest: +SKIP\n"
             ">>> scale = mod.get_function('scale')  # doctest: +SKIP\n"
             ">>> d = gpuhost.to_device(np.ones(1000, np.float32))\n"
             ">>> scale[4, 256](d, np.float32(2), d.size)  # doctest: +SKIP\n\n"
             "PTX text loads as it is (the driver's JIT compiles it):\n\n"
             ">>> ptx = ('.version 7.0\\n.target sm_70\\n.address_size 64\\n.visible .entry '\n"
             "...        'scale(.param .u64 x, .param .f32 a, .param .u32 n) { ret; }')\n"
             ">>> mod = gpuhost.Module(ptx)\n"
             ">>> mod\n"
             "<gpuhost.Module on device 0>\n"
             ">>> mod.get_function('scale')[4, 256](d, np.float32(2), d.size)");

PyDoc_STRVAR(code_image_link_doc,
             "link(inputs, max_registers=0, debug=False, lineinfo=False)\n--\n\n"
             "Link [(data, CUjitInputType, name), ...] with the driver's JIT linker.\n\n"
             "It links in the current context (gpuhost internal; see gpuhost.Linker).\n\n"
             "Returns\n"
             "-------\n"
             "tuple\n"
             "    (cubin bytes, info log).\n\n"
             "Raises\n"
             "------\n"
             "CudaAPIError\n"
             "    If linking fails, with the linker's error log.");

#endif /* GH_CODE_IMAGE_DOCS_H */
