"""Kernel parameters' C types (csrc/launch/kernel_types.c, gpuhost/_demangle.py,
Kernel.prepare in gpuhost/kernels.py): a C++ kernel's mangled name read, pycuda's prepare(),
and the launches' checks against them: an array's element type for a typed pointer, a
Python int's C range.

The mangled names are checked without a driver; the launches on the fake driver's kernels
mode, which records the exact parameter bytes.
"""
import re
import struct

import numpy as np
import pytest

import gpuhost
from conftest import DlpackOnly, fake_last_launch
from gpuhost._demangle import kernel_param_types, parameter_types

rng = np.random.default_rng()

# ---- mangled names, without a driver ----

# (mangled name as NVRTC lowers it, its function and parameter types as c++filt spells them
# but with the qualifier in front, as C programmers write it)
NAMES = [
    ("_Z5twicePdi", "twice", ["double *", "int"]),
    ("_ZL5twicePdi", "twice", ["double *", "int"]),
    ("_ZN2ns5twiceEPdi", "ns::twice", ["double *", "int"]),
    ("_Z4fillIfEvPT_S0_i", "fill<float>", ["float *", "float", "int"]),
    ("_Z2tkIdLin3EEvPT_PKS0_S0_i", "tk<double, -3>",
     ["double *", "const double *", "double", "int"]),
    ("_Z2tkIN2ns1PELi2EEvPT_PKS2_S2_i", "tk<ns::P, 2>",
     ["ns::P *", "const ns::P *", "ns::P", "int"]),
    ("_Z3twoIfiEvPT_PT0_S0_S2_PKS0_PKS2_", "two<float, int>",
     ["float *", "int *", "float", "int", "const float *", "const int *"]),
    ("_Z3twoIN2ns3BoxIiEES2_EvPT_PT0_S3_S5_PKS3_PKS5_", "two<ns::Box<int>, ns::Box<int> >",
     ["ns::Box<int> *", "ns::Box<int> *", "ns::Box<int>", "ns::Box<int>",
      "const ns::Box<int> *", "const ns::Box<int> *"]),
    ("_Z3twoI6__halfS0_EvPT_PT0_S1_S3_PKS1_PKS3_", "two<__half, __half>",
     ["__half *", "__half *", "__half", "__half", "const __half *", "const __half *"]),
    ("_Z2tkIN2ns3BoxINS0_5inner1QEEELi1EEvPT_PKS5_S5_i", "tk<ns::Box<ns::inner::Q>, 1>",
     ["ns::Box<ns::inner::Q> *", "const ns::Box<ns::inner::Q> *", "ns::Box<ns::inner::Q>",
      "int"]),
    ("_ZN5outer6nestedEPfPNS_5Mode2ES1_", "outer::nested",
     ["float *", "outer::Mode2 *", "outer::Mode2"]),
    ("_Z4manyPKfjlyachsb6__halfN2ns1PEPS3_6float2S0_PKdPVimlP13__nv_bfloat16P7__half2NS2_4Mode"
     "EPNS2_3BoxIfEEPNS2_5inner1QESJ_PvPKvPPitxwDsDidf", "many",
     ["const float *", "unsigned int", "long", "unsigned long long", "signed char", "char",
      "unsigned char", "short", "bool", "__half", "ns::P", "ns::P *", "float2",
      "const float *", "const double *", "volatile int *", "unsigned long", "long",
      "__nv_bfloat16 *", "__half2 *", "ns::Mode", "ns::Box<float> *", "ns::inner::Q *",
      "ns::inner::Q", "void *", "const void *", "int **", "unsigned short", "long long",
      "wchar_t", "char16_t", "char32_t", "double", "float"]),
    ("_ZN12_GLOBAL__N_13fooEPfPKS0_", "(anonymous namespace)::foo",
     ["float *", "float *const *"]),
    ("_Z3vecPSt7complexIfE", "vec", ["std::complex<float> *"]),
    ("_Z1kN4cuda3std7complexIfEEPS2_", "k",
     ["cuda::std::complex<float>", "cuda::std::complex<float> *"]),
    ("_Z1kPSaIcEPSs", "k", ["std::allocator<char> *", "std::string *"]),
    ("_Z5emptyv", "empty", []),
    ("_Z1kPNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE", "k",
     ["std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > *"]),
]


@pytest.mark.parametrize("mangled, name, params", NAMES, ids=[n[1] for n in NAMES])
def test_mangled_names_are_read_as_cplusplus_filt_reads_them(mangled, name, params):
    assert parameter_types(mangled) == (name, params)
    assert len(kernel_param_types(mangled)) == len(params)


@pytest.mark.parametrize("mangled", [
    "twice",                      # extern "C": no mangling at all
    "_Z5twice",                   # cut short
    "_Z5twicePdiX",               # something past the parameters
    "_Z1kPFviE",                  # a function pointer
    "_Z1kRi",                     # a reference
    "_Z1kUlvE_",                  # a lambda's closure type
    "_ZZ4mainE1k",                # a local name
    "_Z1kIXadL_Z1gvEEEvv",        # an expression as a template argument
    "_Z1kDTfp_E",                 # decltype
    "_Z1kS3_",                    # a substitution that was never made
    "_Z1kT_",                     # a template parameter of no template
    "_Z99k",                      # a name longer than the symbol
    "_Z3tagB5cxx11Pf",            # an ABI-tagged function: numba's kernels, below
    # a gpuhost.jit kernel (numba-cuda's name for it): an array is 7 parameters there
    "_ZN8__main__1kB2v1B104cw51cXTLSUwv1sDUaKthqaNgoKmjgOR3W3Cw6igA9duC0hkwnNGiHEkYkrqQBFBTDEwC"
    "yQe21eqwcFW3UoDGjzpQEsgzrtUEAA_3d_3dE5ArrayIdLi1E1C7mutable7alignedEd",
])
def test_names_not_read_are_not_known_never_a_guess(mangled):
    assert parameter_types(mangled) is None
    assert kernel_param_types(mangled) is None


def test_element_types_of_pointers_and_ranges_of_scalars():
    types = kernel_param_types("_Z5typedPfPKdPjPhPvP6__halfP13__nv_bfloat16PS_PN2ns1PEjlbcafS5_SB_")
    assert types == (
        ("float *", "p", "f", 4, 8), ("const double *", "p", "f", 8, 8),
        ("unsigned int *", "p", "u", 4, 8), ("unsigned char *", "p", "1", 1, 8),
        ("void *", "p", "", 0, 8), ("__half *", "p", "f", 2, 8),
        ("__nv_bfloat16 *", "p", "B", 2, 8), ("float **", "p", "P", 8, 8),
        ("ns::P *", "p", "", 0, 8), ("unsigned int", "u", "", 0, 4), ("long", "i", "", 0, 8),
        ("bool", "b", "", 0, 1), ("char", "n", "", 0, 1), ("signed char", "i", "", 0, 1),
        ("float", "f", "", 0, 4), ("__half", "f", "", 0, 2), None)


# ---- launches on the fake driver ----

TYPED = "_Z5typedPfPKdPjPhPvP6__halfP13__nv_bfloat16PS_PN2ns1PEjlbcafS5_SB_"
# typed(float *a, const double *b, unsigned int *c, unsigned char *d, void *e, __half *f,
#       __nv_bfloat16 *g, float **h, ns::P *p, unsigned int u, long l, bool flag, char ch,
#       signed char sc, float x, __half hx, ns::P byval), as NVRTC declares it
PTX = """.version 8.0
.target sm_75
.address_size 64
.visible .entry %s(
%s
)
{
ret;
}
.visible .entry plain(.param .u64 plain_param_0, .param .u32 plain_param_1)
{
ret;
}
.visible .entry _Z5twicePdi(.param .u64 _Z5twicePdi_param_0, .param .u32 _Z5twicePdi_param_1)
{
ret;
}
.visible .entry _Z1kPFviE(.param .u64 _Z1kPFviE_param_0)
{
ret;
}
""" % (TYPED, ",\n".join(
    "\t.param %s %s_param_%d%s" % (decl, TYPED, i, suffix) for i, (decl, suffix) in enumerate(
        [(".u64", "")] * 9 + [(".u32", ""), (".u64", ""), (".u8", ""), (".u8", ""),
                              (".u8", ""), (".f32", ""), (".align 2 .b8", "[2]"),
                              (".align 4 .b8", "[8]")])))
# (offset, size) of typed's parameters
LAYOUT = [(8 * i, 8) for i in range(9)] + [(72, 4), (80, 8), (88, 1), (89, 1), (90, 1),
                                            (92, 4), (96, 2), (100, 8)]
PAIR = np.dtype([("a", "<i4"), ("b", "<f4")])


@pytest.fixture
def module(fake_kernels):
    code = gpuhost.CompiledCode(PTX.encode(), "ptx", "compute_75",
                                lowered_names={"typed": TYPED, "twice": "_Z5twicePdi"})
    m = gpuhost.Module(code)
    yield m
    m.unload()


@pytest.fixture
def typed(module):
    return module.get_function("typed")


def typed_args():
    """Arguments typed takes: arrays of each pointer's element, scalars in range."""
    pair = np.array([(int(rng.integers(-100, 100)), 0.5)], PAIR)[0]
    return [gpuhost.device_array(4, np.float32), gpuhost.device_array(4, np.float64),
            gpuhost.device_array(4, np.uint32), gpuhost.device_array(4, np.uint8),
            gpuhost.device_array(4, np.complex128), gpuhost.device_array(4, np.float16),
            gpuhost.device_array(4, np.dtype("V2")),
            gpuhost.device_array(4, np.uint64), gpuhost.device_array(4, PAIR),
            int(rng.integers(0, 2 ** 32)), int(rng.integers(-2 ** 63, 2 ** 63)), True,
            int(rng.integers(-128, 256)), int(rng.integers(-128, 128)),
            float(np.float32(rng.standard_normal())), 1.5, pair]


def packed(args):
    """The parameter buffer typed's launch must record for `args` (typed_args' kinds)."""
    out = bytearray(108)
    ptrs = [a.ptr for a in args[:9]]
    for i, p in enumerate(ptrs):
        out[8 * i:8 * i + 8] = struct.pack("<Q", p)
    out[72:76] = struct.pack("<I", args[9])
    out[80:88] = struct.pack("<q", args[10])
    out[88] = 1 if args[11] else 0
    out[89] = args[12] & 0xFF
    out[90] = args[13] & 0xFF
    out[92:96] = struct.pack("<f", args[14])
    out[96:98] = np.float16(args[15]).tobytes()
    out[100:108] = args[16].tobytes()
    return bytes(out)


def test_a_cplusplus_kernel_knows_its_parameters_types(typed, module):
    assert typed.param_types == (
        "float *", "const double *", "unsigned int *", "unsigned char *", "void *", "__half *",
        "__nv_bfloat16 *", "float **", "ns::P *", "unsigned int", "long", "bool", "char",
        "signed char", "float", "__half", None)
    assert [(o, s) for o, s, _ in typed.param_info] == LAYOUT
    assert module.get_function("plain").param_types is None  # extern "C": nothing said
    assert module.get_function("_Z1kPFviE").param_types is None  # not read: not known


def test_arguments_of_the_right_types_are_packed_exactly(typed):
    for _ in range(3):  # the first launch and the fast path after it
        args = typed_args()
        typed[1, 1](*args)
        assert fake_last_launch()[0] == packed(args)


@pytest.mark.parametrize("index, dtype, text", [
    (0, np.float64, "parameter 0 (float *) takes an array of float32, not a "
                    "gpuhost.DeviceArray of float64"),
    (1, np.float32, "parameter 1 (const double *) takes an array of float64, not a "
                    "gpuhost.DeviceArray of float32"),
    (2, np.int32, "parameter 2 (unsigned int *) takes an array of uint32, not a "
                  "gpuhost.DeviceArray of int32"),
    (3, np.int16, "parameter 3 (unsigned char *) takes an array of int8, uint8 or bool, not a "
                  "gpuhost.DeviceArray of int16"),
    (5, np.float32, "parameter 5 (__half *) takes an array of float16, not a "
                    "gpuhost.DeviceArray of float32"),
    (6, np.float32, "parameter 6 (__nv_bfloat16 *) takes an array of bfloat16, not a "
                    "gpuhost.DeviceArray of float32"),
    (7, np.float64, "parameter 7 (float **) takes an array of int64 or uint64 (device "
                    "addresses), not a gpuhost.DeviceArray of float64"),
])
def test_an_array_of_another_element_type_is_a_type_error(typed, index, dtype, text):
    args = typed_args()
    typed[1, 1](*args)  # the launch the fast path has seen
    args[index] = gpuhost.device_array(4, dtype)
    with pytest.raises(TypeError) as info:
        typed[1, 1](*args)
    assert str(info.value) == "typed(): " + text


@pytest.mark.parametrize("index, dtype", [
    (3, np.int8), (3, np.bool_), (4, np.float32), (4, np.int8), (8, np.float64),
    (8, np.uint8), (7, np.int64)])
def test_untyped_and_byte_pointers_take_what_c_would(typed, index, dtype):
    args = typed_args()
    args[index] = gpuhost.device_array(4, dtype)
    typed[1, 1](*args)
    assert fake_last_launch()[0] == packed(args)


def test_other_libraries_arrays_are_checked_too(typed):
    class OnlyCai:
        def __init__(self, a):
            self.__cuda_array_interface__ = a.__cuda_array_interface__

    args = typed_args()
    good = list(args)
    good[0], good[1] = OnlyCai(args[0]), DlpackOnly(args[1])
    typed[1, 1](*good)
    assert fake_last_launch()[0] == packed(args)
    for wrap, text in ((OnlyCai, "OnlyCai of float64"), (DlpackOnly, "DlpackOnly of float64")):
        bad = list(args)
        bad[0] = wrap(gpuhost.device_array(4, np.float64))
        with pytest.raises(TypeError) as info:
            typed[1, 1](*bad)
        assert str(info.value) == ("typed(): parameter 0 (float *) takes an array of float32, "
                                   "not a %s" % text)


def test_bfloat16_arrays_through_dlpack_go_to_bfloat16_pointers(typed):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    args = typed_args()
    args[6] = gpuhost.device_array(4, ml_dtypes.bfloat16)
    typed[1, 1](*args)
    assert fake_last_launch()[0] == packed(args)
    args[6] = DlpackOnly(gpuhost.device_array(4, np.float16))
    with pytest.raises(TypeError, match=r"\(__nv_bfloat16 \*\) takes an array of bfloat16, "
                                        r"not a DlpackOnly of float16"):
        typed[1, 1](*args)


@pytest.mark.parametrize("index, value, exc, text", [
    (9, -1, OverflowError, "parameter 9 (unsigned int) cannot hold -1"),
    (9, 2 ** 32, OverflowError, "parameter 9 (unsigned int) cannot hold 4294967296"),
    (10, 2 ** 63, OverflowError, "parameter 10 (long) cannot hold 9223372036854775808"),
    (13, 128, OverflowError, "parameter 13 (signed char) cannot hold 128"),
    (12, 256, OverflowError, "parameter 12 (char) cannot hold 256"),
    (9, np.int64(-3), OverflowError, "parameter 9 (unsigned int) cannot hold -3"),
    (9, 1.0, TypeError, "parameter 9 (unsigned int) cannot take float"),
    (9, np.float32(1), TypeError, "parameter 9 (unsigned int) cannot take a numpy.float32"),
    (14, np.int32(1), TypeError, "parameter 14 (float) cannot take a numpy.int32"),
    (14, 1e39, OverflowError, "parameter 14 (float) cannot hold 1e+39"),
    (10, "x", TypeError, "parameter 10 (long) cannot take str"),
    (0, 2.5, TypeError, "parameter 0 (float *) cannot take float"),
    (0, True, TypeError, "parameter 0 (float *) cannot take bool"),
    (0, -8, OverflowError, "parameter 0 (float *) cannot hold -8"),
    (9, None, TypeError, "parameter 9 (unsigned int) cannot take a device pointer from NoneType"),
])
def test_scalars_out_of_their_c_types_are_refused_naming_it(typed, index, value, exc, text):
    args = typed_args()
    args[index] = value
    with pytest.raises(exc) as info:
        typed[1, 1](*args)
    assert str(info.value) == "typed(): " + text


def test_a_device_array_for_an_integer_is_a_type_error(typed):
    args = typed_args()
    typed[1, 1](*args)
    args[10] = gpuhost.device_array(4, np.int64)
    with pytest.raises(TypeError) as info:
        typed[1, 1](*args)
    assert str(info.value) == ("typed(): parameter 10 (long) cannot take a device pointer from "
                               "gpuhost.DeviceArray")


def test_range_edges_and_values_of_known_types(typed):
    args = typed_args()
    args[9], args[10], args[12], args[13] = 2 ** 32 - 1, -2 ** 63, -128, -128
    typed[1, 1](*args)
    assert fake_last_launch()[0] == packed(args)
    args[9], args[10], args[12], args[13] = 0, 2 ** 63 - 1, 255, 127
    typed[1, 1](*args)
    assert fake_last_launch()[0] == packed(args)


def test_numpy_scalars_go_by_value_where_the_type_is_known(typed):
    args = typed_args()
    args[10] = int(rng.integers(0, 2 ** 32))  # in a uint32's range too, for np.uint32 below
    by_numpy = list(args)
    by_numpy[9], by_numpy[10] = np.int64(args[9]), np.uint32(args[10])
    by_numpy[11], by_numpy[13] = np.bool_(args[11]), np.int64(args[13])
    by_numpy[14], by_numpy[15] = np.float64(args[14]), np.float16(args[15])
    typed[1, 1](*by_numpy)
    assert fake_last_launch()[0] == packed(args)


def test_bool_and_half_parameters_take_python_numbers_as_cplusplus_converts_them(typed):
    args = typed_args()
    args[11], args[15] = 5, 3  # bool(5) is true; 3 is 3.0 at half precision
    typed[1, 1](*args)
    got = fake_last_launch()[0]
    assert got[88] == 1 and got[96:98] == np.float16(3).tobytes()


def test_raw_addresses_and_null_pointers_still_go_to_pointers(typed):
    args = typed_args()
    args[0], args[4] = args[0].ptr, None
    typed[1, 1](*args)
    got = fake_last_launch()[0]
    assert got[0:8] == struct.pack("<Q", args[0]) and got[32:40] == bytes(8)


def test_an_extern_c_kernel_is_checked_by_size_alone(module):
    plain = module.get_function("plain")
    d = gpuhost.device_array(4, np.float64)
    plain[1, 1](d, -1)  # nothing says it is not a double * and a signed int: taken
    assert fake_last_launch()[0] == struct.pack("<Qi", d.ptr, -1)


def test_name_expressions_name_the_kernel_in_messages(module):
    twice = module.get_function("twice")
    assert twice.symbol == "_Z5twicePdi" and twice.param_types == ("double *", "int")
    with pytest.raises(TypeError, match=r"^twice\(\): parameter 0 \(double \*\) takes an array "
                                        r"of float64, not a gpuhost.DeviceArray of float32$"):
        twice[1, 32](gpuhost.device_array(8, np.float32), 8)


def test_nvrtc_names_are_read_when_nvrtc_is_here(fake_kernels):
    src = r"""
    template <typename T> __global__ void scale(T *x, T a, unsigned int n) {}
    """
    try:
        code = gpuhost.compile(src, "ptx", cc=(7, 5), name_expressions=["scale<float>"])
    except gpuhost.NvrtcSupportError as e:  # no libnvrtc here (an ImportError)
        pytest.skip("NVRTC is not available: %s" % e)
    k = gpuhost.Module(code).get_function("scale<float>")
    assert k.param_types == ("float *", "float", "unsigned int")
    x = gpuhost.to_device(np.random.rand(16))  # float64, as np.random.rand makes
    with pytest.raises(TypeError, match=r"scale<float>\(\): parameter 0 \(float \*\) takes an "
                                        r"array of float32, not a gpuhost.DeviceArray of float64"):
        k[1, 16](x, 2.0, 16)
    x32 = gpuhost.to_device(np.random.rand(16).astype(np.float32))
    k[1, 16](x32, 2.0, 16)
    assert fake_last_launch()[0] == struct.pack("<QfI", x32.ptr, 2.0, 16)


# ---- Kernel.prepare, pycuda's ----

def test_prepare_declares_an_extern_c_kernels_types(module, fake_kernels):
    plain = module.get_function("plain")
    assert plain.prepare("PI") is plain
    assert plain.param_types == ("void *", "unsigned int")
    d = gpuhost.device_array(4, np.float64)
    plain.prepared_call((1, 1), (32, 1, 1), d, 7)
    params, dims = fake_last_launch()
    assert params == struct.pack("<QI", d.ptr, 7) and dims == (1, 1, 1, 32, 1, 1, 0)
    with pytest.raises(OverflowError, match=r"^plain\(\): parameter 1 \(unsigned int\) cannot "
                                            r"hold -1$"):
        plain[1, 1](d, -1)  # every launch checks, not only prepared_call
    s = gpuhost.stream()
    plain.prepared_async_call(2, 64, s, d, 3, shared_size=128)
    assert fake_last_launch()[1] == (2, 1, 1, 64, 1, 1, 128)
    assert fake_kernels.last_launch_info()[1] == s.handle
    seconds = plain.prepared_timed_call(1, 1, d, 4)()
    assert isinstance(seconds, float) and seconds >= 0


@pytest.mark.parametrize("arg_types, names", [
    ("@ P i", ("void *", "int")),
    ([np.intp, np.uint32], ("long", "unsigned int")),
    ([np.dtype(np.uint64), "i"], ("unsigned long", "int")),
    (["P", np.int32], ("void *", "int")),
    ((object, np.int32), ("unsigned long", "int")),  # pycuda: anything else is a uintp
])
def test_prepare_takes_what_pycudas_does(module, arg_types, names):
    plain = module.get_function("plain")
    plain.prepare(arg_types)
    assert plain.param_types == names
    d = gpuhost.device_array(4, np.float32)
    plain[1, 1](d, 5)  # an 8-byte integer takes an array's address, as pycuda packs one
    assert fake_last_launch()[0] == struct.pack("<Qi", d.ptr, 5)


@pytest.mark.parametrize("arg_types, exc, text", [
    ("PII", TypeError, "prepare(): plain() takes 2 arguments; 'PII' gives 3"),
    (["float *"], TypeError, "prepare(): plain() takes 2 arguments; ['float *'] gives 1"),
    (["double *", "double"], TypeError, "prepare(): plain(): parameter 1 is 4 bytes, not 8 "
                                        "('double', double)"),
    ("Pq", TypeError, "prepare(): plain(): parameter 1 is 4 bytes, not 8 ('q', long long)"),
    ("Pf", TypeError, "prepare(): plain(): parameter 1 is 4 bytes of an integer or pointer; "
                      "'f' is float"),
    ("P!", ValueError, "prepare(): '!' in the format 'P!' is no type code"),
    ("P3", ValueError, "prepare(): the format 'P3' ends in a count"),
])
def test_prepare_refuses_formats_that_do_not_fit(module, arg_types, exc, text):
    plain = module.get_function("plain")
    with pytest.raises(exc) as info:
        plain.prepare(arg_types)
    assert str(info.value).startswith(text)
    assert plain.param_types is None
    with pytest.raises(NotImplementedError, match="texture references"):
        plain.prepare("Pi", texrefs=[object()])


@pytest.mark.parametrize("arg_types, names", [
    (["float *", "unsigned"], ("float *", "unsigned int")),
    (["const float*", np.uint32], ("const float *", "unsigned int")),
    (["float const *", "uint32_t"], ("const float *", "unsigned int")),
])
def test_prepare_takes_c_types_spelt_out_for_an_extern_c_kernel(module, arg_types, names):
    plain = module.get_function("plain")
    plain.prepare(arg_types)
    assert plain.param_types == names
    with pytest.raises(TypeError, match=r"^plain\(\): parameter 0 \(%s\) takes an array of "
                                        r"float32, not a gpuhost.DeviceArray of float64$"
                                        % re.escape(names[0])):
        plain[1, 1](gpuhost.to_device(np.random.rand(8)), 8)
    d = gpuhost.to_device(np.random.rand(8).astype(np.float32))
    plain[1, 1](d, 8)
    assert fake_last_launch()[0] == struct.pack("<QI", d.ptr, 8)


def test_prepare_keeps_what_a_cplusplus_name_says_more_precisely(module):
    twice = module.get_function("twice")
    twice.prepare("Pi")
    assert twice.param_types == ("double *", "int")
    with pytest.raises(TypeError, match=r"\(double \*\) takes an array of float64"):
        twice.prepared_call(1, 1, gpuhost.device_array(2, np.float32), 2)


def test_prepare_with_counts_and_struct_bytes(typed):
    typed.prepare("9P I l ? c b f 2s 8s")
    assert typed.param_types[:9] == (
        "float *", "const double *", "unsigned int *", "unsigned char *", "void *",
        "__half *", "__nv_bfloat16 *", "float **", "ns::P *")
    assert typed.param_types[15:] == ("__half", None)
    args = typed_args()
    typed.prepared_call(1, 1, *args)
    assert fake_last_launch()[0] == packed(args)


def test_set_param_types_checks_its_input(module):
    plain = module.get_function("plain")
    with pytest.raises(TypeError, match="plain has 2 parameters: their types are a tuple of 2"):
        plain._set_param_types(("int",))
    with pytest.raises(TypeError, match="a parameter type is"):
        plain._set_param_types((None, 5))
    plain._set_param_types((None, ("int", "i", "", 0, 8)))  # not the parameter's size
    assert plain.param_types is None
    plain._set_param_types((("double *", "p", "f", 8, 8), None))
    assert plain.param_types == ("double *", None)
    plain._set_param_types(None)
    assert plain.param_types is None
