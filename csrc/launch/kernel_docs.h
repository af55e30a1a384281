/* The docstrings of gpuhost.Kernel and gpuhost.LaunchConfig (csrc/kernel.c): the types, their
 * methods and properties (the function attributes among them), as PyDoc_STRVAR definitions
 * that kernel.c's method, member and property tables name.  numpydoc sections (docs/ renders
 * them through napoleon); the >>> examples run against the fake driver (tests/fakecuda, which
 * loads PTX and records launches without running them) as well as a GPU.  Included by
 * kernel.c only.
 */
#ifndef GH_KERNEL_DOCS_H
#define GH_KERNEL_DOCS_H

#include <Python.h>

PyDoc_STRVAR(config_griddim_doc,
             "The grid, (x, y, z).\n\n"
             "Examples\n"
             "--------\n"
             ">>> ptx = ('.version 7.0\\n.target sm_70\\n.address_size 64\\n.visible .entry '\n"
             "...        'scale(.param .u64 x, .param .f32 a, .param .u32 n) { ret; }')\n"
             ">>> k = gpuhost.Module(ptx).get_function('scale')\n"
             ">>> k[(8, 2), 128].griddim\n"
             "(8, 2, 1)");

PyDoc_STRVAR(config_blockdim_doc,
             "The block, (x, y, z).\n\n"
             "Examples\n"
             "--------\n"
             ">>> ptx = ('.version 7.0\\n.target sm_70\\n.address_size 64\\n.visible .entry '\n"
             "...        'scale(.param .u64 x, .param .f32 a, .param .u32 n) { ret; }')\n"
             ">>> k = gpuhost.Module(ptx).get_function('scale')\n"
             ">>> k[8, (32, 4)].blockdim\n"
             "(32, 4, 1)");

PyDoc_STRVAR(config_cluster_doc,
             "The cluster, (x, y, z), or None.\n\n"
             "Set by configure(cluster=...) (compute capability 9.0 and later).\n\n"
             "Examples\n"
             "--------\n"
             ">>> ptx = ('.version 7.0\\n.target sm_70\\n.address_size 64\\n.visible .entry '\n"
             "...        'scale(.param .u64 x, .param .f32 a, .param .u32 n) { ret; }')\n"
             ">>> k = gpuhost.Module(ptx).get_function('scale')\n"
             ">>> print(k[4, 256].cluster)\n"
             "None\n"
             ">>> k.configure(4, 256, cluster=(2, 1, 1)).cluster\n"
             "(2, 1, 1)");

PyDoc_STRVAR(config_stream_doc,
             "The stream (None for the default stream).\n\n"
             "Examples\n"
             "--------\n"
             ">>> ptx = ('.version 7.0\\n.target sm_70\\n.address_size 64\\n.visible .entry '\n"
             "...        'scale(.param .u64 x, .param .f32 a, .param .u32 n) { ret; }')\n"
             ">>> k = gpuhost.Module(ptx).get_function('scale')\n"
             ">>> s = gpuhost.stream()\n"
             ">>> k[4, 256, s].stream is s\n"
             "True\n"
             ">>> print(k[4, 256].stream)\n"
             "None");

PyDoc_STRVAR(config_sharedmem_doc,
             "Bytes of dynamic shared memory.\n\n"
             "Examples\n"
             "--------\n"
             ">>> ptx = ('.version 7.0\\n.target sm_70\\n.address_size 64\\n.visible .entry '\n"
             "...        'scale(.param .u64 x, .param .f32 a, .param .u32 n) { ret; }')\n"
             ">>> k = gpuhost.Module(ptx).get_function('scale')\n"
             ">>> k[4, 256, None, 1024].sharedmem\n"
             "1024");

PyDoc_STRVAR(config_cooperative_doc,
             "Whether it is a cooperative launch.\n\n"
             "Set by configure(cooperative=True): the grid may synchronize as a whole.\n\n"
             "Examples\n"
             "--------\n"
             ">>> ptx = ('.version 7.0\\n.target sm_70\\n.address_size 64\\n.visible .entry '\n"
             "...        'scale(.param .u64 x, .param .f32 a, .param .u32 n) { ret; }')\n"
             ">>> k = gpuhost.Module(ptx).get_function('scale')\n"
             ">>> k[4, 256].cooperative\n"
             "False\n"
             ">>> k.configure(4, 256, cooperative=True).cooperative\n"
             "True");

PyDoc_STRVAR(config_kernel_doc,
             "The Kernel it launches.\n\n"
             "Examples\n"
             "--------\n"
             ">>> ptx = ('.version 7.0\\n.target sm_70\\n.address_size 64\\n.visible .entry '\n"
             "...        'scale(.param .u64 x, .param .f32 a, .param .u32 n) { ret; }')\n"
             ">>> k = gpuhost.Module(ptx).get_function('scale')\n"
             ">>> k[4, 256].kernel is k\n"
             "True");

PyDoc_STRVAR(
    config_doc,
    "A kernel with its launch configuration: call it with the kernel's arguments to launch.\n\n"
    "Made by kernel[grid, block, stream, shared] or kernel.configure(); keep one to launch the\n"
    "same configuration again without parsing it.\n\n"
    "Examples\n"
    "--------\n"
    ">>> launch = scale[4, 256]  # doctest: +SKIP\n"
    ">>> launch.griddim, launch.blockdim  # doctest: +SKIP\n"
    "((4, 1, 1), (256, 1, 1))\n"
    ">>> for _ in range(10):  # doctest: +SKIP\n"
    "...     launch(d, np.float32(2), d.size)\n\n"
    "With a kernel of PTX text:\n\n"
    ">>> ptx = ('.version 7.0\\n.target sm_70\\n.address_size 64\\n.visible .entry '\n"
    "...        'scale(.param .u64 x, .param .f32 a, .param .u32 n) { ret; }')\n"
    ">>> k = gpuhost.Module(ptx).get_function('scale')\n"
    ">>> d = gpuhost.to_device(np.ones(1000, np.float32))\n"
    ">>> launch = k[4, 256]\n"
    ">>> launch\n"
    "<gpuhost.LaunchConfig of 'scale': grid (4, 1, 1), block (256, 1, 1), shared 0>\n"
    ">>> for _ in range(10):\n"
    "...     launch(d, np.float32(2), d.size)");

PyDoc_STRVAR(kernel_num_regs_doc,
             "Registers per thread.\n\n"
             "Examples\n"
             "--------\n"
             ">>> ptx = ('.version 7.0\\n.target sm_70\\n.address_size 64\\n.visible .entry '\n"
             "...        'scale(.param .u64 x, .param .f32 a, .param .u32 n) { ret; }')\n"
             ">>> k = gpuhost.Module(ptx).get_function('scale')\n"
             ">>> 0 <= k.num_regs <= 255\n"
             "True");

PyDoc_STRVAR(kernel_shared_size_bytes_doc,
             "Bytes of static shared memory per block.\n\n"
             "Examples\n"
             "--------\n"
             ">>> ptx = ('.version 7.0\\n.target sm_70\\n.address_size 64\\n.visible .entry '\n"
             "...        'scale(.param .u64 x, .param .f32 a, .param .u32 n) { ret; }')\n"
             ">>> k = gpuhost.Module(ptx).get_function('scale')\n"
             ">>> k.shared_size_bytes\n"
             "0");

PyDoc_STRVAR(kernel_const_size_bytes_doc,
             "Bytes of user constant memory.\n\n"
             "Examples\n"
             "--------\n"
             ">>> ptx = ('.version 7.0\\n.target sm_70\\n.address_size 64\\n.visible .entry '\n"
             "...        'scale(.param .u64 x, .param .f32 a, .param .u32 n) { ret; }')\n"
             ">>> k = gpuhost.Module(ptx).get_function('scale')\n"
             ">>> k.const_size_bytes\n"
             "0");

PyDoc_STRVAR(kernel_local_size_bytes_doc,
             "Bytes of local memory per thread.\n\n"
             "Examples\n"
             "--------\n"
             ">>> ptx = ('.version 7.0\\n.target sm_70\\n.address_size 64\\n.visible .entry '\n"
             "...        'scale(.param .u64 x, .param .f32 a, .param .u32 n) { ret; }')\n"
             ">>> k = gpuhost.Module(ptx).get_function('scale')\n"
             ">>> k.local_size_bytes\n"
             "0");

PyDoc_STRVAR(kernel_max_threads_per_block_doc,
             "The most threads a block of this kernel can have.\n\n"
             "It can be fewer than the device's MAX_THREADS_PER_BLOCK for a kernel that uses many\n"
             "registers.\n\n"
             "Examples\n"
             "--------\n"
             ">>> ptx = ('.version 7.0\\n.target sm_70\\n.address_size 64\\n.visible .entry '\n"
             "...        'scale(.param .u64 x, .param .f32 a, .param .u32 n) { ret; }')\n"
             ">>> k = gpuhost.Module(ptx).get_function('scale')\n"
             ">>> k.max_threads_per_block <= gpuhost.gpus[0].MAX_THREADS_PER_BLOCK\n"
             "True");

PyDoc_STRVAR(kernel_ptx_version_doc,
             "The PTX virtual architecture it was compiled for, e.g. 90.\n\n"
             "Examples\n"
             "--------\n"
             ">>> ptx = ('.version 7.0\\n.target sm_70\\n.address_size 64\\n.visible .entry '\n"
             "...        'scale(.param .u64 x, .param .f32 a, .param .u32 n) { ret; }')\n"
             ">>> k = gpuhost.Module(ptx).get_function('scale')\n"
             ">>> k.ptx_version  # .target sm_70\n"
             "70");

PyDoc_STRVAR(kernel_binary_version_doc,
             "The binary architecture it was compiled for, e.g. 90.\n\n"
             "For PTX, the device's: the JIT compiles it for the device it is loaded on.\n\n"
             "Examples\n"
             "--------\n"
             ">>> ptx = ('.version 7.0\\n.target sm_70\\n.address_size 64\\n.visible .entry '\n"
             "...        'scale(.param .u64 x, .param .f32 a, .param .u32 n) { ret; }')\n"
             ">>> k = gpuhost.Module(ptx).get_function('scale')\n"
             ">>> major, minor = gpuhost.gpus[0].compute_capability\n"
             ">>> k.binary_version == 10 * major + minor\n"
             "True");

PyDoc_STRVAR(kernel_max_dynamic_shared_size_bytes_doc,
             "The most dynamic shared memory a launch may ask for, in bytes (settable).\n\n"
             "It can be raised up to the device's opt-in limit less the static shared memory; a\n"
             "launch that asks for more than 48 KiB needs it raised first.\n\n"
             "Examples\n"
             "--------\n"
             ">>> ptx = ('.version 7.0\\n.target sm_70\\n.address_size 64\\n.visible .entry '\n"
             "...        'scale(.param .u64 x, .param .f32 a, .param .u32 n) { ret; }')\n"
             ">>> k = gpuhost.Module(ptx).get_function('scale')\n"
             ">>> k.max_dynamic_shared_size_bytes\n"
             "49152\n"
             ">>> k.max_dynamic_shared_size_bytes = 65536\n"
             ">>> k.max_dynamic_shared_size_bytes\n"
             "65536");

PyDoc_STRVAR(kernel_preferred_shared_memory_carveout_doc,
             "The preferred shared memory share of L1, in percent (settable; -1 for none).\n\n"
             "Examples\n"
             "--------\n"
             ">>> ptx = ('.version 7.0\\n.target sm_70\\n.address_size 64\\n.visible .entry '\n"
             "...        'scale(.param .u64 x, .param .f32 a, .param .u32 n) { ret; }')\n"
             ">>> k = gpuhost.Module(ptx).get_function('scale')\n"
             ">>> k.preferred_shared_memory_carveout\n"
             "-1\n"
             ">>> k.preferred_shared_memory_carveout = 50\n"
             ">>> k.preferred_shared_memory_carveout\n"
             "50");

PyDoc_STRVAR(kernel_num_params_doc,
             "The number of parameters.\n\n"
             "Examples\n"
             "--------\n"
             ">>> ptx = ('.version 7.0\\n.target sm_70\\n.address_size 64\\n.visible .entry '\n"
             "...        'scale(.param .u64 x, .param .f32 a, .param .u32 n) { ret; }')\n"
             ">>> k = gpuhost.Module(ptx).get_function('scale')\n"
             ">>> k.num_params\n"
             "3");

PyDoc_STRVAR(kernel_param_info_doc,
             "((offset, size, kind), ...) per parameter, as the kernel takes its arguments.\n\n"
             "kind is 'i' (integer or pointer), 'f' (floating point), 's' (struct) or '?' (not\n"
             "known: the module was not PTX).\n\n"
             "Examples\n"
             "--------\n"
             ">>> ptx = ('.version 7.0\\n.target sm_70\\n.address_size 64\\n.visible .entry '\n"
             "...        'scale(.param .u64 x, .param .f32 a, .param .u32 n) { ret; }')\n"
             ">>> k = gpuhost.Module(ptx).get_function('scale')\n"
             ">>> k.param_info  # scale(float *x, float a, unsigned n)\n"
             "((0, 8, 'i'), (8, 4, 'f'), (12, 4, 'i'))");

PyDoc_STRVAR(kernel_param_types_doc,
             "Each parameter's C type where it is known, else None; None for the whole tuple\n"
             "where none is.\n\n"
             "Known for a C++ kernel (its mangled name says them, read once when the kernel is\n"
             "got) and after prepare(); an ``extern \"C\"`` kernel's name says nothing, so its\n"
             "arguments are checked by count and size alone. Where a pointer's type is known,\n"
             "an array passed must have its element type (``double *`` takes float64); where\n"
             "an integer's is, a Python int must be in its range.\n\n"
             "Examples\n"
             "--------\n"
             ">>> src = '__global__ void twice(double *a, unsigned n) {}'\n"
             ">>> code = gpuhost.compile(src, name_expressions=['twice'])  # C++\n"
             ">>> code.lowered_names['twice']\n"
             "'_Z5twicePdj'\n"
             ">>> gpuhost.Module(code).get_function('twice').param_types  # doctest: +SKIP\n"
             "('double *', 'unsigned int')\n"
             ">>> ptx = ('.version 7.0\\n.target sm_70\\n.address_size 64\\n.visible .entry '\n"
             "...        '_Z5twicePdj(.param .u64 a, .param .u32 n) { ret; }')\n"
             ">>> twice = gpuhost.Module(ptx).get_function('_Z5twicePdj')\n"
             ">>> twice.param_types\n"
             "('double *', 'unsigned int')\n"
             ">>> twice[1, 32](gpuhost.device_array(32, np.float32), 32)\n"
             "Traceback (most recent call last):\n"
             "    ...\n"
             "TypeError: _Z5twicePdj(): parameter 0 (double *) takes an array of float64, "
             "not a gpuhost.DeviceArray of float32");

PyDoc_STRVAR(kernel_set_param_types_doc,
             "_set_param_types(types, /)\n--\n\n"
             "Set the parameters' C types: None (none known) or one item per parameter, None\n"
             "or (name, ctype, elem, elem_size, size); an item whose size or kind is not the\n"
             "parameter's is not taken. prepare() calls it.");

PyDoc_STRVAR(kernel_handle_doc,
             "The CUfunction as an int.\n\n"
             "Examples\n"
             "--------\n"
             ">>> ptx = ('.version 7.0\\n.target sm_70\\n.address_size 64\\n.visible .entry '\n"
             "...        'scale(.param .u64 x, .param .f32 a, .param .u32 n) { ret; }')\n"
             ">>> k = gpuhost.Module(ptx).get_function('scale')\n"
             ">>> k.handle != 0\n"
             "True");

PyDoc_STRVAR(kernel_name_doc,
             "The name it was asked for by.\n\n"
             "Examples\n"
             "--------\n"
             ">>> ptx = ('.version 7.0\\n.target sm_70\\n.address_size 64\\n.visible .entry '\n"
             "...        'scale(.param .u64 x, .param .f32 a, .param .u32 n) { ret; }')\n"
             ">>> k = gpuhost.Module(ptx).get_function('scale')\n"
             ">>> k.name\n"
             "'scale'");

PyDoc_STRVAR(kernel_symbol_doc,
             "Its symbol in the module (the lowered name of a name expression).\n\n"
             "The name itself for an extern \"C\" kernel.\n\n"
             "Examples\n"
             "--------\n"
             ">>> ptx = ('.version 7.0\\n.target sm_70\\n.address_size 64\\n.visible .entry '\n"
             "...        'scale(.param .u64 x, .param .f32 a, .param .u32 n) { ret; }')\n"
             ">>> k = gpuhost.Module(ptx).get_function('scale')\n"
             ">>> k.symbol\n"
             "'scale'");

PyDoc_STRVAR(kernel_module_doc,
             "The Module it belongs to.\n\n"
             "Examples\n"
             "--------\n"
             ">>> ptx = ('.version 7.0\\n.target sm_70\\n.address_size 64\\n.visible .entry '\n"
             "...        'scale(.param .u64 x, .param .f32 a, .param .u32 n) { ret; }')\n"
             ">>> k = gpuhost.Module(ptx).get_function('scale')\n"
             ">>> k.module\n"
             "<gpuhost.Module on device 0>\n"
             ">>> k.module.get_function('scale').module is k.module\n"
             "True");

PyDoc_STRVAR(kernel_configure_doc,
             "configure($self, /, grid, block, stream=None, shared=0, *, cooperative=False, "
             "cluster=None)\n--\n\n"
             "The kernel with a launch configuration: call it with the kernel's arguments.\n\n"
             "kernel[grid, block, stream, shared] is the same without the keywords.\n\n"
             "Parameters\n"
             "----------\n"
             "grid, block : int or tuple of int\n"
             "    Blocks in the grid and threads in a block, (x, y, z) or fewer.\n"
             "stream : Stream, optional\n"
             "    The stream to launch on; None: the default stream.\n"
             "shared : int, optional\n"
             "    Bytes of dynamic shared memory per block.\n"
             "cooperative : bool, optional\n"
             "    A cooperative launch: the grid may synchronize as a whole.\n"
             "cluster : tuple of int, optional\n"
             "    (x, y, z) blocks per thread-block cluster (compute capability 9.0+).\n\n"
             "Returns\n"
             "-------\n"
             "LaunchConfig\n\n"
             "Raises\n"
             "------\n"
             "ValueError\n"
             "    For dimensions past the device's limits, quoting them.\n\n"
             "Examples\n"
             "--------\n"
             ">>> s = gpuhost.stream()\n"
             ">>> launch = scale.configure(4, 256, stream=s)  # doctest: +SKIP\n"
             ">>> launch(d, np.float32(2), d.size)  # doctest: +SKIP\n"
             ">>> s.synchronize()");

PyDoc_STRVAR(kernel_max_active_blocks_per_multiprocessor_doc,
             "max_active_blocks_per_multiprocessor($self, /, block_size, "
             "dynamic_shared_memory_size=0)\n--\n\n"
             "How many blocks can be resident on one multiprocessor at once (occupancy).\n\n"
             "Parameters\n"
             "----------\n"
             "block_size : int\n"
             "    Threads per block.\n"
             "dynamic_shared_memory_size : int, optional\n"
             "    Bytes of dynamic shared memory per block.\n\n"
             "Returns\n"
             "-------\n"
             "int\n\n"
             "Examples\n"
             "--------\n"
             ">>> blocks = scale.max_active_blocks_per_multiprocessor(256)  # doctest: +SKIP\n"
             ">>> per_sm = gpuhost.gpus[0].MAX_THREADS_PER_MULTIPROCESSOR\n"
             ">>> occupancy = blocks * 256 / per_sm  # doctest: +SKIP");

PyDoc_STRVAR(
    kernel_max_potential_block_size_doc,
    "max_potential_block_size($self, /, dynamic_shared_memory_size=0, block_size_limit=0)\n--\n\n"
    "The block size that maximizes occupancy (cuOccupancyMaxPotentialBlockSize).\n\n"
    "Parameters\n"
    "----------\n"
    "dynamic_shared_memory_size : int, optional\n"
    "    Bytes of dynamic shared memory per block.\n"
    "block_size_limit : int, optional\n"
    "    The largest block size to consider; 0: no limit.\n\n"
    "Returns\n"
    "-------\n"
    "tuple of int\n"
    "    (min_grid_size, block_size): the block size, and the smallest grid that reaches\n"
    "    full occupancy with it.\n\n"
    "Examples\n"
    "--------\n"
    ">>> _, block = scale.max_potential_block_size()  # doctest: +SKIP\n"
    ">>> scale[(d.size + block - 1) // block, block](d, np.float32(2), d.size)  # doctest: +SKIP");

PyDoc_STRVAR(
    kernel_max_active_clusters_doc,
    "max_active_clusters($self, /, grid, block, cluster, shared=0)\n--\n\n"
    "How many thread-block clusters of a launch shape can be resident at once.\n\n"
    "cuOccupancyMaxActiveClusters: the occupancy query for launches with clusters (compute\n"
    "capability 9.0 and later), to size a grid that keeps every cluster resident.\n\n"
    "Parameters\n"
    "----------\n"
    "grid : int or tuple of int\n"
    "    The grid, as for configure(); each dimension a multiple of the cluster's.\n"
    "block : int or tuple of int\n"
    "    Threads per block.\n"
    "cluster : int or tuple of int\n"
    "    Blocks per cluster, (x, y, z).\n"
    "shared : int, optional\n"
    "    Bytes of dynamic shared memory per block.\n\n"
    "Returns\n"
    "-------\n"
    "int\n"
    "    0 when such a cluster cannot be resident at all.\n\n"
    "Raises\n"
    "------\n"
    "gpuhost.CudaAPIError\n"
    "    If the device or the kernel does not support clusters of that size.\n\n"
    "Examples\n"
    "--------\n"
    ">>> k = module.get_function('reduce')  # doctest: +SKIP\n"
    ">>> k.max_active_clusters((16, 1, 1), (128, 1, 1), (2, 1, 1))  # doctest: +SKIP\n"
    "66");

PyDoc_STRVAR(
    kernel_doc,
    "A kernel of a loaded Module; get one from Module.get_function().\n\n"
    "Launch it with `kernel[grid, block, stream, shared](*args)`,\n"
    "`kernel(*args, grid=..., block=..., stream=..., shared=...)` or\n"
    "`kernel.configure(...)(*args)`; launches are asynchronous.\n"
    "Arguments are checked against the kernel's parameters: device arrays and objects\n"
    "exporting the CUDA array interface or DLPack go as pointers, NumPy scalars and bytes\n"
    "by their bytes (exact size), Python numbers converted to the parameter's width.\n"
    "The function attributes (num_regs, max_threads_per_block, ...) read as properties.\n\n"
    "Examples\n"
    "--------\n"
    ">>> scale = gpuhost.Module(code).get_function('scale')  # doctest: +SKIP\n"
    ">>> d = gpuhost.to_device(np.ones(1000, np.float32))\n"
    ">>> scale[4, 256](d, np.float32(2), d.size)  # doctest: +SKIP\n"
    ">>> scale(d, 2.0, d.size, grid=4, block=256)  # doctest: +SKIP\n"
    ">>> d.copy_to_host()[:3]  # doctest: +SKIP\n"
    "array([4., 4., 4.], dtype=float32)\n\n"
    "A kernel of PTX text, which the driver compiles when the module loads:\n\n"
    ">>> ptx = ('.version 7.0\\n.target sm_70\\n.address_size 64\\n.visible .entry '\n"
    "...        'scale(.param .u64 x, .param .f32 a, .param .u32 n) { ret; }')\n"
    ">>> k = gpuhost.Module(ptx).get_function('scale')\n"
    ">>> k\n"
    "<gpuhost.Kernel 'scale' (3 parameters) on device 0>\n"
    ">>> k[4, 256](d, np.float32(2), d.size)\n"
    ">>> k(d, np.float32(2), d.size)  # no grid and block\n"
    "Traceback (most recent call last):\n"
    "    ...\n"
    "TypeError: scale() needs block= (and grid=) to launch: kernel(*args, grid=..., block=...), "
    "or kernel[grid, block](*args)");

#endif /* GH_KERNEL_DOCS_H */
