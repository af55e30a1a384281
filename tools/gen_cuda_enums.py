"""Regenerate csrc/cuda_errors.h and csrc/cuda_attrs.h from the enums in cuda.h.

gpuhost names driver errors itself where the driver cannot (the toolkit's stub library,
a failed load), and looks device attributes up by name, so it keeps those enums' names.
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
    with open(os.path.join(CSRC, name), "w", encoding="utf-8") as f:
        f.write("\n".join(lines))


def main(path):
    text = open(path, encoding="utf-8").read()
    errors = re.findall(r"^\s*(CUDA_(?:SUCCESS|ERROR_\w+))\s*=\s*(\d+)",
                        enum_body(text, "CUresult"), re.M)
    write("cuda_errors.h", "GPUHOST_CUDA_ERRORS_H", "GH_CUDA_ERROR_LIST", "E", errors,
          "CUresult names")
    attrs = re.findall(r"^\s*CU_DEVICE_ATTRIBUTE_(\w+)\s*=\s*(\d+)",
                       enum_body(text, "CUdevice_attribute"), re.M)
    attrs = [(n, v) for n, v in attrs if n != "MAX"]
    write("cuda_attrs.h", "GPUHOST_CUDA_ATTRS_H", "GH_DEVICE_ATTRIBUTE_LIST", "A", attrs,
          "CUdevice_attribute names without their CU_DEVICE_ATTRIBUTE_ prefix")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "/usr/local/cuda/include/cuda.h")
