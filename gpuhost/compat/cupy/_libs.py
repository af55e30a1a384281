"""cuBLAS, cuSOLVER and cuSPARSE handles for Device.cublas_handle / cusolver_handle /
cusparse_handle.

The libraries are loaded with ctypes on first use, never at import. Search order:
GPUHOST_CUBLAS_LIBRARY / GPUHOST_CUSOLVER_LIBRARY / GPUHOST_CUSPARSE_LIBRARY (a file path;
when set, the only one tried), then CUDA_HOME and CUDA_PATH, /usr/local/cuda, the pip
wheels on sys.path (nvidia/<library>/lib, nvidia/cu13/lib), then the system loader.
As in CuPy, each thread has its own handle per device and library (a handle must not be
used by two threads at once), made with the device's primary context current.  A thread's
handles are destroyed when the thread ends; the main thread's are kept for the life of the
process: destroying them at exit crashed the process where the CUDA runtime those
libraries use, or the context, was already gone (the driver reclaims them with the process
anyway).  destroy_handles() destroys this thread's on request.
"""
import ctypes
import os
import sys
import threading
import warnings

from ... import _core
from ...errors import CudaSupportError

__all__ = ["CUBLASError", "CUSOLVERError", "CUSPARSEError", "cublas_handle", "cusolver_handle",
           "cusparse_handle"]


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

_CUSPARSE_STATUS = {
    1: "CUSPARSE_STATUS_NOT_INITIALIZED", 2: "CUSPARSE_STATUS_ALLOC_FAILED",
    3: "CUSPARSE_STATUS_INVALID_VALUE", 4: "CUSPARSE_STATUS_ARCH_MISMATCH",
    5: "CUSPARSE_STATUS_MAPPING_ERROR", 6: "CUSPARSE_STATUS_EXECUTION_FAILED",
    7: "CUSPARSE_STATUS_INTERNAL_ERROR", 8: "CUSPARSE_STATUS_MATRIX_TYPE_NOT_SUPPORTED",
    9: "CUSPARSE_STATUS_ZERO_PIVOT", 10: "CUSPARSE_STATUS_NOT_SUPPORTED",
    11: "CUSPARSE_STATUS_INSUFFICIENT_RESOURCES",
}


class _StatusError(RuntimeError):
    """A library call failed with status `status` (named from the class's table)."""

    _names, _unknown = {}, ""

    def __init__(self, status, call=""):
        self.status = status
        name = self._names.get(status, self._unknown)
        super().__init__("%s%s (%d)" % ("%s failed: " % call if call else "", name, status))


class CUBLASError(_StatusError):
    """A cuBLAS call failed (CuPy's ``cupy_backends.cuda.libs`` exception of that name).

    Raised by `cublas_handle` when the library cannot make a handle, and by code calling cuBLAS
    through those handles. ``status`` is the cublasStatus_t the call returned; the message is
    ``"<call> failed: <STATUS_NAME> (<status>)"`` (without the call when none is given).

    Parameters
    ----------
    status : int
        The cublasStatus_t value, kept as ``status``.
    call : str, optional
        The name of the function that failed.

    Examples
    --------
    >>> from gpuhost.compat.cupy._libs import CUBLASError
    >>> e = CUBLASError(7, "cublasSgemm")
    >>> e.status
    7
    >>> print(e)
    cublasSgemm failed: CUBLAS_STATUS_INVALID_VALUE (7)
    """

    _names, _unknown = _CUBLAS_STATUS, "CUBLAS_STATUS_UNKNOWN"


class CUSOLVERError(_StatusError):
    """A cuSOLVER call failed (CuPy's ``cupy_backends.cuda.libs`` exception of that name).

    Raised by `cusolver_handle` when the library cannot make a handle, and by code calling cuSOLVER
    through those handles. ``status`` is the cusolverStatus_t the call returned; the message is
    ``"<call> failed: <STATUS_NAME> (<status>)"`` (without the call when none is given).

    Parameters
    ----------
    status : int
        The cusolverStatus_t value, kept as ``status``.
    call : str, optional
        The name of the function that failed.

    Examples
    --------
    >>> from gpuhost.compat.cupy._libs import CUSOLVERError
    >>> e = CUSOLVERError(3, "cusolverDnSgetrf")
    >>> e.status
    3
    >>> print(e)
    cusolverDnSgetrf failed: CUSOLVER_STATUS_INVALID_VALUE (3)
    """

    _names, _unknown = _CUSOLVER_STATUS, "CUSOLVER_STATUS_UNKNOWN"


class CUSPARSEError(_StatusError):
    """A cuSPARSE call failed (CuPy's ``cupy_backends.cuda.libs`` exception of that name).

    Raised by `cusparse_handle` when the library cannot make a handle, and by code calling cuSPARSE
    through those handles. ``status`` is the cusparseStatus_t the call returned; the message is
    ``"<call> failed: <STATUS_NAME> (<status>)"`` (without the call when none is given).

    Parameters
    ----------
    status : int
        The cusparseStatus_t value, kept as ``status``.
    call : str, optional
        The name of the function that failed.

    Examples
    --------
    >>> from gpuhost.compat.cupy._libs import CUSPARSEError
    >>> e = CUSPARSEError(3, "cusparseSpMV")
    >>> e.status
    3
    >>> print(e)
    cusparseSpMV failed: CUSPARSE_STATUS_INVALID_VALUE (3)
    """

    _names, _unknown = _CUSPARSE_STATUS, "CUSPARSE_STATUS_UNKNOWN"


class _ThreadHandles(threading.local):
    """This thread's handles: (library, device id) -> (handle, Device)."""

    def __init__(self):
        self.holder = _HandleHolder()


class _HandleHolder:
    """Destroys a finished thread's handles (the main thread's live as long as the
    process)."""

    def __init__(self):
        self.handles = {}

    def __del__(self):
        if sys.is_finalizing():
            return
        for (library, _), (handle, dev) in list(self.handles.items()):
            library.destroy(handle, dev)
        self.handles.clear()


_threads = _ThreadHandles()


class _Library:
    """One of the two libraries: where to look, its create/destroy pair, its handles."""

    def __init__(self, title, stem, env, majors, wheel_dirs, create, destroy, error):
        self.title, self.stem, self.env, self.majors = title, stem, env, majors
        self.wheel_dirs, self.create_name, self.destroy_name = wheel_dirs, create, destroy
        self.error = error
        self.lib = None

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
        handles = _threads.holder.handles
        entry = handles.get((self, device_id))
        if entry is not None:
            return entry[0]
        with _lock:
            lib = self.load()
        dev = _core.get_device(device_id)
        handle = ctypes.c_void_p()
        with dev:  # the device's primary context, which the CUDA runtime shares
            status = getattr(lib, self.create_name)(ctypes.byref(handle))
        if status != 0:
            raise self.error(status, self.create_name)
        handles[(self, device_id)] = (handle.value, dev)
        return handle.value

    def destroy(self, handle, dev):
        """Destroy one handle; a failure is a warning (cleanup never raises)."""
        try:
            with dev:
                status = getattr(self.lib, self.destroy_name)(handle)
        except Exception as e:  # the context may be gone already
            warnings.warn("%s failed: %s" % (self.destroy_name, e), RuntimeWarning)
            return
        if status != 0:
            warnings.warn(str(self.error(status, self.destroy_name)), RuntimeWarning)


_lock = threading.RLock()

CUBLAS = _Library("cuBLAS", "libcublas", "GPUHOST_CUBLAS_LIBRARY", (13, 12, 11),
                  ("cublas", "cu13"), "cublasCreate_v2", "cublasDestroy_v2", CUBLASError)
CUSOLVER = _Library("cuSOLVER", "libcusolver", "GPUHOST_CUSOLVER_LIBRARY", (12, 11),
                    ("cusolver", "cu13"), "cusolverDnCreate", "cusolverDnDestroy", CUSOLVERError)
CUSPARSE = _Library("cuSPARSE", "libcusparse", "GPUHOST_CUSPARSE_LIBRARY", (12, 11),
                    ("cusparse", "cu13"), "cusparseCreate", "cusparseDestroy", CUSPARSEError)


def destroy_handles():
    """Destroy this thread's cuBLAS, cuSOLVER and cuSPARSE handles, on every device.

    The next `cublas_handle`, `cusolver_handle` or `cusparse_handle` call makes new ones.
    A handle that fails to be destroyed is a RuntimeWarning, not an error. Handles are not
    destroyed at exit (the module's docstring says why); a thread's are destroyed when the
    thread ends.

    Examples
    --------
    >>> from gpuhost.compat.cupy import _libs
    >>> _libs.destroy_handles()  # none made yet: nothing to do
    """
    handles = _threads.holder.handles
    order = {CUSOLVER: 0, CUSPARSE: 1, CUBLAS: 2}  # cuSOLVER's may use cuBLAS: it goes first
    for key in sorted(handles, key=lambda k: order[k[0]]):
        handle, dev = handles.pop(key)
        key[0].destroy(handle, dev)


def cublas_handle(device_id):
    """This thread's cuBLAS handle for a device, made on first use.

    The library is loaded on the first call (GPUHOST_CUBLAS_LIBRARY, CUDA_HOME,
    CUDA_PATH, /usr/local/cuda, the pip wheels, then the system loader); the handle is
    made with the device's primary context current and is kept for this thread and
    device (a handle must not be shared between threads). `gpuhost.compat.cupy.Device`'s
    ``cublas_handle`` returns it.

    Parameters
    ----------
    device_id : int
        The device.

    Returns
    -------
    int
        The cublasHandle_t.

    Raises
    ------
    gpuhost.CudaSupportError
        cuBLAS could not be loaded.
    gpuhost.compat.cupy._libs.CUBLASError
        cuBLAS failed to make the handle.

    Examples
    --------
    >>> from gpuhost.compat.cupy import _libs
    >>> h = _libs.cublas_handle(0)  # doctest: +SKIP
    >>> h == _libs.cublas_handle(0)  # the same handle in this thread  # doctest: +SKIP
    True
    """
    return CUBLAS.handle(device_id)


def cusolver_handle(device_id):
    """This thread's cuSOLVER handle for a device, made on first use.

    The library is loaded on the first call (GPUHOST_CUSOLVER_LIBRARY, CUDA_HOME,
    CUDA_PATH, /usr/local/cuda, the pip wheels, then the system loader); the handle is
    made with the device's primary context current and is kept for this thread and
    device (a handle must not be shared between threads). `gpuhost.compat.cupy.Device`'s
    ``cusolver_handle`` returns it.

    Parameters
    ----------
    device_id : int
        The device.

    Returns
    -------
    int
        The cusolverDnHandle_t.

    Raises
    ------
    gpuhost.CudaSupportError
        cuSOLVER could not be loaded.
    gpuhost.compat.cupy._libs.CUSOLVERError
        cuSOLVER failed to make the handle.

    Examples
    --------
    >>> from gpuhost.compat.cupy import _libs
    >>> h = _libs.cusolver_handle(0)  # doctest: +SKIP
    >>> h == _libs.cusolver_handle(0)  # the same handle in this thread  # doctest: +SKIP
    True
    """
    return CUSOLVER.handle(device_id)


def cusparse_handle(device_id):
    """This thread's cuSPARSE handle for a device, made on first use.

    The library is loaded on the first call (GPUHOST_CUSPARSE_LIBRARY, CUDA_HOME,
    CUDA_PATH, /usr/local/cuda, the pip wheels, then the system loader); the handle is
    made with the device's primary context current and is kept for this thread and
    device (a handle must not be shared between threads). `gpuhost.compat.cupy.Device`'s
    ``cusparse_handle`` returns it.

    Parameters
    ----------
    device_id : int
        The device.

    Returns
    -------
    int
        The cusparseHandle_t.

    Raises
    ------
    gpuhost.CudaSupportError
        cuSPARSE could not be loaded.
    gpuhost.compat.cupy._libs.CUSPARSEError
        cuSPARSE failed to make the handle.

    Examples
    --------
    >>> from gpuhost.compat.cupy import _libs
    >>> h = _libs.cusparse_handle(0)  # doctest: +SKIP
    >>> h == _libs.cusparse_handle(0)  # the same handle in this thread  # doctest: +SKIP
    True
    """
    return CUSPARSE.handle(device_id)
