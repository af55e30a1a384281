/* The docstrings of csrc/dlpack.c: the internal DLPack owner type, as
 * PyDoc_STRVAR definitions that dlpack.c's method table and type slots name.  numpydoc
 * sections (docs/ renders them through napoleon); the >>> examples run against the fake
 * driver (tests/fakecuda) as well as a GPU.  Included by dlpack.c only.
 */
#ifndef GH_DLPACK_DOCS_H
#define GH_DLPACK_DOCS_H

#include <Python.h>

PyDoc_STRVAR(dl_owner_doc, "Keeps a tensor imported through DLPack alive (gpuhost internal).");

#endif /* GH_DLPACK_DOCS_H */
