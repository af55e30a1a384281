"""cuBLAS and cuSOLVER handles for Device.cublas_handle / Device.cusolver_handle.

libcublas and libcusolver are loaded with ctypes on first use, never at import. Search
order: GPUHOST_CUBLAS_LIBRARY / GPUHOST_CUSOLVER_LIBRARY (a file path; when set, the only
one tried), then CUDA_HOME and CUDA_PATH, /usr/local/cuda, the pip wheels on sys.path
(nvidia/cublas/lib, nvidia/cusolver/lib, nvidia/cu13/lib), then the system loader.
One handle per device and library, made with the device's primary context current and
kept for the life of the process: destroying it at exit crashed the process where the CUDA
runtime those libraries use, or the context, was already gone (the driver reclaims it with
the process anyway).  destroy_handles() destroys them on request.
"""
import ctypes
import os
import sys
import threading
import warnings

from ... import _core
from ...errors import CudaSupportError

__all__ = ["CUBLASError", "CUSOLVERError", "cublas_handle", "cusolver_handle"]


_CUBLAS_STATUS = {
    1: "CUBLAS_STATUS_NOT_INITIALIZED", 3: "CUBLAS_STATUS_ALLOC_FAILED",
    7: "CUBLAS_STATUS_INVALID_VALUE", 8: "CUBLAS_STATUS_ARCH_MISMATCH",
    11: "CUBLAS_STATUS_MAPPING_ERROR", 13: "CUBLAS_STATUS_EXECUTION_FAILED",
    14: "CUBLAS_STATUS_INTERNAL_ERROR", 15: "CUBLAS_STATUS_NOT_SUPPORTED",
    16: "CUBLAS_STATUS_LICENSE_ERROR",
}
_CUSOLVER_STATUS = {
    1: "CUSOLVER_STATUS_NOT_INITIALIZED", 2: "CUSOLVER_STATUS_ALLOC_FAILED",
    3: "CUSOLVER_STATUS_INVALID_VALUE", 4: "CUSOLVER_STATUS_ARCH_MISMATCH",
    5: "CUSOLVER_STATUS_MAPPING_ERROR", 6: "CUSOLVER_STATUS_EXECUTION_FAILED",
    7: "CUSOLVER_STATUS_INTERNAL_ERROR", 8: "CUSOLVER_STATUS_MATRIX_TYPE_NOT_SUPPORTED",
    9: "CUSOLVER_STATUS_NOT_SUPPORTED",
}


class _StatusError(RuntimeError):
    """A library call failed with status `status` (named from the class's table)."""

    _names, _unknown = {}, ""

    def __init__(self, status, call=""):
        self.status = status
        name = self._names.get(status, self._unknown)
        super().__init__("%s%s (%d)" % ("%s failed: " % call if call else "", name, status))


class CUBLASError(_StatusError):
    """A cuBLAS call failed; ``status`` is its cublasStatus_t."""

    _names, _unknown = _CUBLAS_STATUS, "CUBLAS_STATUS_UNKNOWN"


class CUSOLVERError(_StatusError):
    """A cuSOLVER call failed; ``status`` is its cusolverStatus_t."""

    _names, _unknown = _CUSOLVER_STATUS, "CUSOLVER_STATUS_UNKNOWN"


class _Library:
    """One of the two libraries: where to look, its create/destroy pair, its handles."""

    def __init__(self, title, stem, env, majors, wheel_dirs, create, destroy, error):
        self.title, self.stem, self.env, self.majors = title, stem, env, majors
        self.wheel_dirs, self.create_name, self.destroy_name = wheel_dirs, create, destroy
        self.error = error
        self.lib = None
        self.handles = {}  # device id -> (handle, Device)

    def candidates(self):
        """The paths to try, in order (a name alone goes to the system loader)."""
        explicit = os.environ.get(self.env)
        if explicit:
            return [explicit]
        names = ["%s.so.%d" % (self.stem, m) for m in self.majors]
        roots = [os.environ.get(var) for var in ("CUDA_HOME", "CUDA_PATH")]
        dirs = [os.path.join(r, sub) for r in roots + ["/usr/local/cuda"] if r
                for sub in ("lib64", "lib")]
        dirs += [os.path.join(p, "nvidia", sub, "lib") for p in sys.path if p
                 for sub in self.wheel_dirs]
        out = []
        for d in dirs:
            for name in names:
                path = os.path.join(d, name)
                if path not in out and os.path.exists(path):
                    out.append(path)
        return out + names

    def load(self):
        if self.lib is not None:
            return self.lib
        tried = []
        for path in self.candidates():
            try:
                lib = ctypes.CDLL(path)
                create, destroy = getattr(lib, self.create_name), getattr(lib, self.destroy_name)
            except (OSError, AttributeError) as e:
                tried.append("%s (%s)" % (path, e))
                continue
            create.argtypes, create.restype = [ctypes.POINTER(ctypes.c_void_p)], ctypes.c_int
            destroy.argtypes, destroy.restype = [ctypes.c_void_p], ctypes.c_int
            self.lib = lib
            return lib
        raise CudaSupportError(
            "%s (%s) could not be loaded; tried:\n  %s\nInstall the CUDA toolkit or its pip "
            "wheel, or set %s to the library's path."
            % (self.title, self.stem, "\n  ".join(tried), self.env))

    def handle(self, device_id):
        with _lock:
            entry = self.handles.get(device_id)
            if entry is not None:
                return entry[0]
            lib = self.load()
            dev = _core.get_device(device_id)
            handle = ctypes.c_void_p()
            with dev:  # the device's primary context, which the CUDA runtime shares
                status = getattr(lib, self.create_name)(ctypes.byref(handle))
            if status != 0:
                raise self.error(status, self.create_name)
            self.handles[device_id] = (handle.value, dev)
            return handle.value

    def destroy_all(self):
        """Destroy every handle; a failure is a warning (cleanup never raises)."""
        destroy = getattr(self.lib, self.destroy_name, None) if self.lib else None
        while self.handles:
            _, (handle, dev) = self.handles.popitem()
            try:
                with dev:
                    status = destroy(handle)
            except Exception as e:  # the context may be gone already
                warnings.warn("%s failed: %s" % (self.destroy_name, e), RuntimeWarning)
                continue
            if status != 0:
                warnings.warn(str(self.error(status, self.destroy_name)), RuntimeWarning)


_lock = threading.RLock()

CUBLAS = _Library("cuBLAS", "libcublas", "GPUHOST_CUBLAS_LIBRARY", (13, 12, 11),
                  ("cublas", "cu13"), "cublasCreate_v2", "cublasDestroy_v2", CUBLASError)
CUSOLVER = _Library("cuSOLVER", "libcusolver", "GPUHOST_CUSOLVER_LIBRARY", (12, 11),
                    ("cusolver", "cu13"), "cusolverDnCreate", "cusolverDnDestroy", CUSOLVERError)


def destroy_handles():
    """Destroy the cuBLAS and cuSOLVER handles of every device; the next use makes new
    ones.  Not done at exit (see the module's docstring)."""
    with _lock:
        CUSOLVER.destroy_all()  # cuSOLVER's may use cuBLAS: it goes first
        CUBLAS.destroy_all()


def cublas_handle(device_id):
    """Device `device_id`'s cuBLAS handle (an int), made on first use."""
    return CUBLAS.handle(device_id)


def cusolver_handle(device_id):
    """Device `device_id`'s cuSOLVER dense handle (an int), made on first use."""
    return CUSOLVER.handle(device_id)
