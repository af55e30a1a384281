"""Regenerate csrc/base/cuda_errors.h and csrc/core/cuda_attrs.h from the enums in cuda.h, and
gpuhost/compat/cupy/_runtime_enums.py from the runtime's (driver_types.h beside it).

gpuhost names driver errors itself where the driver cannot (the toolkit's stub library,
a failed load), and looks device attributes up by name, so it keeps those enums' names.
gpuhost.compat.cupy.runtime speaks the runtime API's names (cudaErrorInvalidDevice,
cudaDevAttrMaxThreadsPerBlock) without loading libcudart, so it keeps those too.
Run after a CUDA toolkit upgrade:  python3 tools/gen_cuda_enums.py [path/to/cuda.h]
"""
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
CSRC = os.path.join(HERE, os.pardir, "csrc")


def enum_body(text, typedef):
    return re.search(r"typedef enum \w+ \{(.*?)\} %s;" % typedef, text, re.S).group(1)


def write(name, guard, macro, letter, entries, what):
    lines = [
        "/* %s, generated from cuda.h by tools/gen_cuda_enums.py: do not edit. */" % what,
        "#ifndef %s" % guard,
        "#define %s" % guard,
        "",
        "#define %s(%s) \\" % (macro, letter),
    ]
    lines += ["    %s(%s, %s) \\" % (letter, n, v) for n, v in entries]
    lines[-1] = lines[-1].rstrip(" \\")
    lines += ["", "#endif /* %s */" % guard, ""]
    with open(os.path.join(CSRC, *name.split("/")), "w", encoding="utf-8") as f:
        f.write("\n".join(lines))


def main(path):
    text = open(path, encoding="utf-8").read()
    errors = re.findall(r"^\s*(CUDA_(?:SUCCESS|ERROR_\w+))\s*=\s*(\d+)",
                        enum_body(text, "CUresult"), re.M)
    write("base/cuda_errors.h", "GPUHOST_CUDA_ERRORS_H", "GH_CUDA_ERROR_LIST", "E", errors,
          "CUresult names")
    attrs = re.findall(r"^\s*CU_DEVICE_ATTRIBUTE_(\w+)\s*=\s*(\d+)",
                       enum_body(text, "CUdevice_attribute"), re.M)
    attrs = [(n, v) for n, v in attrs if n != "MAX"]
    write("core/cuda_attrs.h", "GPUHOST_CUDA_ATTRS_H", "GH_DEVICE_ATTRIBUTE_LIST", "A", attrs,
          "CUdevice_attribute names without their CU_DEVICE_ATTRIBUTE_ prefix")


def write_runtime_enums(path):
    """The runtime's cudaError and cudaDeviceAttr enums, as Python dicts."""
    text = open(path, encoding="utf-8").read()
    errors = re.search(r"enum __device_builtin__ cudaError\s*\{(.*?)\};", text, re.S).group(1)
    errors = re.findall(r"^\s*(cuda(?:Success|Error\w+))\s*=\s*(\d+)", errors, re.M)
    attrs = re.search(r"enum __device_builtin__ cudaDeviceAttr\s*\{(.*?)\};", text, re.S).group(1)
    attrs = re.findall(r"^\s*cudaDevAttr(\w+)\s*=\s*(\d+)", attrs, re.M)
    attrs = [(n, v) for n, v in attrs if n != "Max"]
    lines = ['"""The CUDA runtime\'s cudaError and cudaDeviceAttr enums, generated from driver_types.h',
             'by tools/gen_cuda_enums.py: do not edit."""', "", "ERROR_NAMES = {"]
    lines += ["    %s: \"%s\"," % (v, n) for n, v in errors]
    lines += ["}", "", "# cudaDevAttr<Name> = value, by <Name>", "DEVICE_ATTRIBUTES = {"]
    lines += ["    \"%s\": %s," % (n, v) for n, v in attrs]
    lines += ["}", ""]
    out = os.path.join(HERE, os.pardir, "gpuhost", "compat", "cupy", "_runtime_enums.py")
    with open(out, "w", encoding="utf-8") as f:
        f.write("\n".join(lines))


if __name__ == "__main__":
    cuda_h = sys.argv[1] if len(sys.argv) > 1 else "/usr/local/cuda/include/cuda.h"
    main(cuda_h)
    write_runtime_enums(os.path.join(os.path.dirname(cuda_h), "driver_types.h"))
