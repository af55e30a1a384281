"""cupy.cuda.graph's Graph: a captured CUDA graph, instantiated once, launched on a stream
(the current one by default), as CuPy's."""

import os
import tempfile

__all__ = ["Graph"]


class Graph:
    """A CUDA graph made by Stream.end_capture(); not made directly (as in CuPy)."""

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
        """Launch the graph on `stream` (default: the current stream)."""
        self._exec.launch(self._stream(stream))

    def upload(self, stream=None):
        """Upload the graph to the device on `stream` (default: the current stream)."""
        self._exec.upload(self._stream(stream))

    def debug_dot_str(self, flags=0):
        """The graph as a Graphviz DOT string (cudaGraphDebugDotPrint)."""
        fd, path = tempfile.mkstemp(suffix=".dot")
        os.close(fd)
        try:
            self._graph.debug_dot_print(path, flags)
            with open(path) as f:
                return f.read()
        finally:
            os.remove(path)

    def debug_dot_print(self, path, flags=0):
        """Write the graph as Graphviz DOT to `path`."""
        self._graph.debug_dot_print(path, flags)
