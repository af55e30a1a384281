"""The fake driver's control API (tests/fakecuda/fakecuda.h) through ctypes: faults, call
counts, live resources, the work gate, the kernels mode and its records of launches.  The
suite's fixtures (tests/conftest.py) and the processes tests start use it.
"""
import ctypes


class FakeDriver:
    """The fake driver's control API (tests/fakecuda/fakecuda.h), through ctypes."""

    def __init__(self, path):
        lib = ctypes.CDLL(path)
        lib.fakecuda_fail.argtypes = [ctypes.c_char_p, ctypes.c_long, ctypes.c_int, ctypes.c_long]
        lib.fakecuda_calls.argtypes = [ctypes.c_char_p]
        lib.fakecuda_calls.restype = ctypes.c_long
        lib.fakecuda_live.argtypes = [ctypes.c_char_p]
        lib.fakecuda_live.restype = ctypes.c_long
        lib.fakecuda_pending.restype = ctypes.c_long
        lib.fakecuda_profiler_state.restype = ctypes.c_long
        lib.fakecuda_take_fault_site.restype = ctypes.c_void_p
        lib.fakecuda_kernels.argtypes = [ctypes.c_int]
        lib.fakecuda_kernels.restype = None
        lib.fakecuda_launches.restype = ctypes.c_long
        lib.fakecuda_last_launch.argtypes = [ctypes.c_void_p, ctypes.c_long,
                                             ctypes.POINTER(ctypes.c_uint)]
        lib.fakecuda_last_launch.restype = ctypes.c_long
        lib.fakecuda_last_launch_info.argtypes = [ctypes.c_char_p, ctypes.c_long,
                                                  ctypes.POINTER(ctypes.c_void_p),
                                                  ctypes.POINTER(ctypes.c_uint)]
        lib.fakecuda_last_launch_info.restype = ctypes.c_long
        self._lib = lib

    def fail(self, name, code, nth=1, times=1):
        """Make the nth next call of `name` return `code`, `times` times (-1: always)."""
        if self._lib.fakecuda_fail(name.encode(), nth, int(code), times) != 0:
            raise ValueError("fake driver has no entry point %r" % name)

    def clear_faults(self):
        self._lib.fakecuda_clear_faults()

    def take_fault_site(self):
        """Address of the call site the last injected fault returned to (then forgotten),
        or None."""
        return self._lib.fakecuda_take_fault_site()

    def calls(self, name):
        return self._lib.fakecuda_calls(name.encode())

    def live(self, kind):
        return self._lib.fakecuda_live(kind.encode())

    def stack_depth(self):
        return self._lib.fakecuda_thread_stack_depth()

    def gate_close(self):
        """Hold all queued work (callbacks, event records) until gate_open()."""
        self._lib.fakecuda_gate_close()

    def gate_open(self):
        self._lib.fakecuda_gate_open()

    def pending(self):
        return self._lib.fakecuda_pending()

    def profiler_state(self):
        return self._lib.fakecuda_profiler_state()

    def kernels(self, enable=True):
        """Turn the fake's kernels mode on or off (fakecuda_kernels): while on, PTX modules
        load and launches are recorded, never run.  Forgets the recorded launches."""
        self._lib.fakecuda_kernels(1 if enable else 0)

    def launches(self):
        """How many launches were recorded since kernels() was last called."""
        return self._lib.fakecuda_launches()

    def last_launch(self):
        """(params, dims) of the last recorded launch: the kernel's parameter buffer as
        bytes (each argument at its parameter's offset, padding zero) and dims = (grid x,
        y, z, block x, y, z, dynamic shared bytes); None if no launch was recorded."""
        dims = (ctypes.c_uint * 7)()
        size = self._lib.fakecuda_last_launch(None, 0, dims)
        if size < 0:
            return None
        buf = ctypes.create_string_buffer(max(size, 1))
        size = self._lib.fakecuda_last_launch(buf, size, dims)
        return buf.raw[:size], tuple(dims)

    def last_launch_info(self):
        """(kernel name, stream handle as int, cooperative, (cluster x, y, z)) of the last
        recorded launch (cooperative and cluster are 0 unless cuLaunchKernelEx set them);
        None if no launch was recorded."""
        stream = ctypes.c_void_p()
        ex = (ctypes.c_uint * 4)()
        length = self._lib.fakecuda_last_launch_info(None, 0, None, None)
        if length < 0:
            return None
        name = ctypes.create_string_buffer(length + 1)
        self._lib.fakecuda_last_launch_info(name, length + 1, ctypes.byref(stream), ex)
        return name.value.decode(), stream.value or 0, ex[0], tuple(ex[1:])
