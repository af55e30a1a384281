"""cupy.cuda.graph's Graph: a captured CUDA graph, instantiated once, launched on a stream
(the current one by default), as CuPy's."""

import os
import tempfile

__all__ = ["Graph"]


class Graph:
    """A captured CUDA graph, instantiated once, as ``cupy.cuda.graph.Graph``.

    Made by `Stream.end_capture`; calling ``Graph()`` raises NotImplementedError, as in
    CuPy. launch() replays the captured work on a stream.

    Examples
    --------
    >>> from gpuhost.compat import cupy as cuda
    >>> s = cuda.Stream(non_blocking=True)
    >>> d = gpuhost.device_array(16, np.uint8)
    >>> s.begin_capture()
    >>> cuda.runtime.memsetAsync(d.device_ctypes_pointer.value, 7, 16, s.ptr)
    >>> g = s.end_capture()
    >>> g.launch(s)
    >>> s.synchronize()
    >>> d.copy_to_host()[:4]
    array([7, 7, 7, 7], dtype=uint8)
    """

    def __init__(self, *args, **kwargs):
        raise NotImplementedError(
            "currently this class cannot be initiated by the user and must be created via "
            "stream capture")

    @classmethod
    def _from_gpuhost(cls, graph):
        self = cls.__new__(cls)
        self._graph = graph
        self._exec = graph.instantiate()
        return self

    @staticmethod
    def _stream(stream):
        from .stream import get_current_stream

        return (stream if stream is not None else get_current_stream())._gpuhost()

    def launch(self, stream=None):
        """Launch the graph on a stream (cuGraphLaunch); the host does not wait.

        Parameters
        ----------
        stream : gpuhost.compat.cupy.stream.Stream, optional
            A `gpuhost.compat.cupy.Stream`; None: the current stream.

        Examples
        --------
        >>> from gpuhost.compat import cupy as cuda
        >>> s = cuda.Stream()
        >>> d = gpuhost.device_array(8, np.uint8)
        >>> s.begin_capture()
        >>> cuda.runtime.memsetAsync(d.device_ctypes_pointer.value, 1, 8, s.ptr)
        >>> g = s.end_capture()
        >>> with s:
        ...     g.launch()  # on the current stream: s
        >>> s.synchronize()
        """
        self._exec.launch(self._stream(stream))

    def upload(self, stream=None):
        """Upload the graph to the device ahead of its first launch (cuGraphUpload).

        Parameters
        ----------
        stream : gpuhost.compat.cupy.stream.Stream, optional
            A `gpuhost.compat.cupy.Stream`; None: the current stream.

        Examples
        --------
        >>> from gpuhost.compat import cupy as cuda
        >>> s = cuda.Stream()
        >>> d = gpuhost.device_array(8, np.uint8)
        >>> s.begin_capture()
        >>> cuda.runtime.memsetAsync(d.device_ctypes_pointer.value, 1, 8, s.ptr)
        >>> g = s.end_capture()
        >>> g.upload(s)
        >>> g.launch(s)
        >>> s.synchronize()
        """
        self._exec.upload(self._stream(stream))

    def debug_dot_str(self, flags=0):
        """The graph as a Graphviz DOT string (cudaGraphDebugDotPrint).

        Parameters
        ----------
        flags : int, optional
            CU_GRAPH_DEBUG_DOT_FLAGS_* bits, or-ed; 0: the default detail.

        Returns
        -------
        str

        Examples
        --------
        >>> from gpuhost.compat import cupy as cuda
        >>> s = cuda.Stream()
        >>> d = gpuhost.device_array(8, np.uint8)
        >>> s.begin_capture()
        >>> cuda.runtime.memsetAsync(d.device_ctypes_pointer.value, 1, 8, s.ptr)
        >>> g = s.end_capture()
        >>> g.debug_dot_str().startswith("digraph")
        True
        """
        fd, path = tempfile.mkstemp(suffix=".dot")
        os.close(fd)
        try:
            self._graph.debug_dot_print(path, flags)
            with open(path) as f:
                return f.read()
        finally:
            os.remove(path)

    def debug_dot_print(self, path, flags=0):
        """Write the graph as Graphviz DOT to a file (cudaGraphDebugDotPrint).

        Parameters
        ----------
        path : str
            The file to write.
        flags : int, optional
            CU_GRAPH_DEBUG_DOT_FLAGS_* bits, or-ed; 0: the default detail.

        Examples
        --------
        >>> import os, tempfile
        >>> from gpuhost.compat import cupy as cuda
        >>> s = cuda.Stream()
        >>> d = gpuhost.device_array(8, np.uint8)
        >>> s.begin_capture()
        >>> cuda.runtime.memsetAsync(d.device_ctypes_pointer.value, 1, 8, s.ptr)
        >>> g = s.end_capture()
        >>> path = os.path.join(tempfile.mkdtemp(), "graph.dot")
        >>> g.debug_dot_print(path)
        >>> open(path).read().startswith("digraph")
        True
        """
        self._graph.debug_dot_print(path, flags)
