"""The parameter types of a C++ kernel, read from its mangled name (the Itanium C++ ABI's
mangling, which NVRTC and nvcc use): ``_Z5twicePdi`` is ``twice(double *, int)``.

csrc/launch/kernel_types.c asks once per kernel, when Module.get_function makes it (the
kernel_param_types helper, registered by gpuhost/_code_images.py, which imports this
module on the first C++ kernel).  The launch then checks each argument against the type:
an array's element type for a pointer, a Python int's range for an integer.

Only what a kernel's parameters can be is read: builtin types, pointers, cv-qualifiers,
class and enum names (namespaces, templates, std::), template parameters and
substitutions.  Anything else (a lambda's closure type, decltype, a local class...) makes
the whole name "not known", and such a kernel is checked as an ``extern "C"`` one is: a
name read wrongly must never refuse good arguments.
"""

__all__ = ["declared_type", "kernel_param_types", "parameter_types"]

# builtin type codes: (C name, ctype, size); ctype as kernel_types.c takes it: 'i' signed,
# 'u' unsigned, 'n' char (either signedness), 'b' bool, 'f' floating point, '' no check
_BUILTINS = {
    "v": ("void", "", 0), "w": ("wchar_t", "i", 4), "b": ("bool", "b", 1),
    "c": ("char", "n", 1), "a": ("signed char", "i", 1), "h": ("unsigned char", "u", 1),
    "s": ("short", "i", 2), "t": ("unsigned short", "u", 2), "i": ("int", "i", 4),
    "j": ("unsigned int", "u", 4), "l": ("long", "i", 8), "m": ("unsigned long", "u", 8),
    "x": ("long long", "i", 8), "y": ("unsigned long long", "u", 8),
    "n": ("__int128", "", 16), "o": ("unsigned __int128", "", 16), "f": ("float", "f", 4),
    "d": ("double", "f", 8), "e": ("long double", "", 16), "g": ("__float128", "", 16),
    "z": ("...", "", 0),
}
_BUILTINS_D = {
    "Dh": ("_Float16", "f", 2), "Ds": ("char16_t", "u", 2), "Di": ("char32_t", "u", 4),
    "Du": ("char8_t", "u", 1), "Dn": ("decltype(nullptr)", "", 8), "Da": ("auto", "", 0),
    "Dc": ("decltype(auto)", "", 0),
}
_FLOATN = {"DF16_": ("_Float16", "f", 2), "DF32_": ("_Float32", "f", 4),
           "DF64_": ("_Float64", "f", 8), "DF16b": ("std::bfloat16_t", "", 2)}
# class names whose pointers take arrays of one element type: CUDA's half types
_SPECIAL = {"__half": ("f", 2), "__nv_bfloat16": ("B", 2)}
_STD_ABBREV = {"Sa": "std::allocator", "Sb": "std::basic_string", "Ss": "std::string",
               "Si": "std::istream", "So": "std::ostream", "Sd": "std::iostream"}
_QUALIFIERS = {"r": "__restrict__", "V": "volatile", "K": "const"}


class NotKnown(Exception):
    """The name holds something this reader does not read."""


# Types, as tuples: ("builtin", code), ("name", text, element), ("pointer", type),
# ("qualified", type, quals), ("other", text).


def _text(t):
    kind = t[0]
    if kind == "builtin":
        return (_BUILTINS.get(t[1]) or _BUILTINS_D.get(t[1]) or _FLOATN[t[1]])[0]
    if kind in ("name", "other"):
        return t[1]
    if kind == "qualified":
        inner, quals = t[1], t[2]
        if inner[0] == "pointer":
            return _text(inner) + " ".join(quals)
        return " ".join(quals) + " " + _text(inner)
    inner = t[1]  # a pointer
    base = _text(inner)
    if inner[0] == "pointer" or (inner[0] == "qualified" and inner[1][0] == "pointer"):
        return base + (" *" if inner[0] == "qualified" else "*")
    return base + " *"


def _unqualified(t):
    while t[0] == "qualified":
        t = t[1]
    return t


def _builtin(code):
    return _BUILTINS.get(code) or _BUILTINS_D.get(code) or _FLOATN.get(code)


def _param(t):
    """(C name, ctype, elem, elem_size, size) for a parameter of type `t`, or None (not
    checked: a struct by value, a 128-bit integer, long double ...)."""
    t = _unqualified(t)
    if t[0] == "pointer":
        pointee = _unqualified(t[1])
        elem, elem_size = "", 0
        if pointee[0] == "builtin":
            _, ctype, size = _builtin(pointee[1])
            if ctype and size == 1:  # char, signed/unsigned char, bool, char8_t: bytes
                elem, elem_size = "1", 1
            elif ctype:
                elem, elem_size = ctype, size
        elif pointee[0] == "pointer":
            elem, elem_size = "P", 8
        elif pointee[0] == "name" and pointee[2]:
            elem, elem_size = pointee[2]
        return (_text(t), "p", elem, elem_size, 8)
    if t[0] == "builtin":
        name, ctype, size = _builtin(t[1])
        return (name, ctype, "", 0, size) if ctype and size in (1, 2, 4, 8) else None
    if t[0] == "name" and t[2] and t[2][0] == "f":
        return (t[1], "f", "", 0, t[2][1])  # __half by value: a float at half precision
    return None


class _Reader:
    def __init__(self, text):
        self.s, self.i = text, 0
        self.subs = []     # substitution candidates, in order
        self.tparams = []  # the function template's arguments (T_, T0_, ...)
        self.tagged = False  # an ABI tag was read

    def peek(self, n=1):
        return self.s[self.i:self.i + n]

    def take(self, prefix):
        if self.s.startswith(prefix, self.i):
            self.i += len(prefix)
            return True
        return False

    def need(self, prefix):
        if not self.take(prefix):
            raise NotKnown(self.s[self.i:])

    def number(self):
        start = self.i
        while self.i < len(self.s) and self.s[self.i].isdigit():
            self.i += 1
        if start == self.i:
            raise NotKnown(self.s[start:])
        return int(self.s[start:self.i])

    def seq_id(self):
        """The <seq-id> of S<seq-id>_ / T<seq-id>_: '_' is 0, base-36 digits n+1."""
        if self.take("_"):
            return 0
        start = self.i
        while self.i < len(self.s) and (self.s[self.i].isdigit() or self.s[self.i].isupper()):
            self.i += 1
        if start == self.i:
            raise NotKnown(self.s[start:])
        value = int(self.s[start:self.i], 36)
        self.need("_")
        return value + 1

    # ---- names ----

    def source_name(self):
        n = self.number()
        name = self.s[self.i:self.i + n]
        if len(name) != n:
            raise NotKnown(name)
        self.i += n
        if name.startswith("_GLOBAL__N"):
            name = "(anonymous namespace)"
        while self.take("B"):  # ABI tags: [[gnu::abi_tag]], not part of the type
            self.source_name()
            self.tagged = True
        return name

    def unqualified_name(self):
        self.take("L")  # internal linkage (a static function)
        c = self.peek()
        if not c.isdigit():
            raise NotKnown(self.s[self.i:])  # operators, constructors, unnamed types
        return self.source_name()

    def template_args(self):
        self.need("I")
        args = []
        while not self.take("E"):
            args.append(self.template_arg())
        return args

    def template_arg(self):
        if self.take("L"):  # a literal, <type><value>E, or an external name _Z...E
            if self.take("_Z"):
                raise NotKnown("template argument naming an entity")
            t = self.type()
            start = self.i
            while self.i < len(self.s) and self.s[self.i] != "E":
                self.i += 1
            value = self.s[start:self.i]
            self.need("E")
            value = "-" + value[1:] if value.startswith("n") else value
            return ("other", value if t == ("builtin", "i") else "(%s)%s" % (_text(t), value))
        if self.take("J"):  # a pack
            items = []
            while not self.take("E"):
                items.append(self.template_arg())
            return ("other", ", ".join(_text(a) for a in items))
        if self.peek() == "X":
            raise NotKnown("template argument expression")
        return self.type()

    def template_text(self, name, args):
        text = "%s<%s>" % (name, ", ".join(_text(a) for a in args))
        return text.replace(">>", "> >")

    def nested_name(self):
        """N [qualifiers] prefix... E: (text, the last component's template arguments or
        None).  Each prefix followed by another component is a substitution candidate, and
        so is a template's name before its arguments; the whole name is the caller's to
        add (a type's is a candidate, a function's is not)."""
        while self.peek() in ("r", "V", "K", "R", "O"):
            self.i += 1  # a member function's qualifiers: none for kernels, skipped
        text, args, pending = None, None, False
        while not self.take("E"):
            if self.peek() == "I":
                if text is None:
                    raise NotKnown(self.s[self.i:])
                if pending:
                    self.subs.append(("name", text, None))  # the template's name
                args = self.template_args()
                text, pending = self.template_text(text, args), True
                continue
            if pending:
                self.subs.append(("name", text, None))
            args, pending = None, False
            if self.take("St"):
                text = "std"
            elif self.peek() == "S":
                text = _text(self.substitution())
            elif self.peek() == "T":
                t = self.template_param()
                self.subs.append(t)
                text = _text(t)
            else:
                name = self.unqualified_name()
                text, pending = (name if text is None else text + "::" + name), True
        if text is None:
            raise NotKnown("empty nested name")
        return text, args

    def name(self):
        """A name: (text, template args or None).  A type's name is added as a
        substitution by the caller; a function's final component is not a candidate."""
        if self.take("N"):
            text, args = self.nested_name()
            return text, args
        if self.peek() == "Z":
            raise NotKnown("local name")
        if self.peek() == "S" and self.peek(2) != "St":
            t = self.substitution()
            if self.peek() != "I":
                return _text(t), None
            args = self.template_args()
            return self.template_text(_text(t), args), args
        std = self.take("St")
        text = ("std::" if std else "") + self.unqualified_name()
        if self.peek() == "I":
            self.subs.append(("name", text, None))  # an unscoped template's name
            args = self.template_args()
            return self.template_text(text, args), args
        return text, None

    # ---- types ----

    def substitution(self):
        self.need("S")
        for abbrev, text in _STD_ABBREV.items():
            if self.take(abbrev[1:]):
                return ("name", text, None)
        index = self.seq_id()
        if index >= len(self.subs):
            raise NotKnown("substitution S%d_ past %d candidates" % (index, len(self.subs)))
        return self.subs[index]

    def template_param(self):
        self.need("T")
        index = self.seq_id()
        if index >= len(self.tparams):
            raise NotKnown("template parameter %d of %d" % (index, len(self.tparams)))
        return self.tparams[index]

    def type(self):
        c = self.peek()
        if c in _QUALIFIERS:
            quals = []
            while self.peek() in _QUALIFIERS:
                quals.append(_QUALIFIERS[self.peek()])
                self.i += 1
            inner = self.type()
            t = ("qualified", inner, sorted(quals, key=("const", "volatile", "__restrict__").index))
            self.subs.append(t)
            return t
        if c == "U":  # a vendor qualifier (an address space): skipped
            self.i += 1
            self.source_name()
            return self.type()
        if c == "P":
            self.i += 1
            t = ("pointer", self.type())
            self.subs.append(t)
            return t
        if c in ("R", "O"):
            raise NotKnown("reference parameter")
        if c in _BUILTINS:
            self.i += 1
            return ("builtin", c)
        if c == "D":
            two = self.peek(2)
            if two in _BUILTINS_D:
                self.i += 2
                return ("builtin", two)
            for code in _FLOATN:
                if self.take(code):
                    return ("builtin", code)
            raise NotKnown(self.s[self.i:])  # decltype, packs, vectors
        if c == "T":
            t = self.template_param()
            self.subs.append(t)
            if self.peek() == "I":
                args = self.template_args()
                t = ("name", self.template_text(_text(t), args), None)
                self.subs.append(t)
            return t
        if c == "S" and self.peek(2) != "St":
            t = self.substitution()
            if self.peek() == "I":
                args = self.template_args()
                t = ("name", self.template_text(_text(t), args), None)
                self.subs.append(t)
            return t
        if c.isdigit() or c in ("N", "S"):
            text, _ = self.name()
            t = ("name", text, _SPECIAL.get(text))
            self.subs.append(t)
            return t
        if c in ("F", "A", "M"):
            raise NotKnown("function, array or member pointer type")
        raise NotKnown(self.s[self.i:])

    def encoding(self):
        self.need("_Z")
        text, args = self.name()
        if self.tagged:
            # numba's kernels: their names carry ABI tags (the specialization's), and their
            # parameters are numba's data model's, not the types the name lists
            raise NotKnown("an ABI-tagged function name")
        if args is not None:
            self.tparams = args
            self.type()  # a function template's name is followed by its return type
        params = []
        while self.i < len(self.s):
            params.append(self.type())
        if not params:
            raise NotKnown("no parameter list")  # a function's has one type at least
        if len(params) == 1 and params[0] == ("builtin", "v"):
            params = []
        return text, params


# C type names as a program spells them, to the builtin codes above
_C_NAMES = {
    "void": "v", "bool": "b", "char": "c", "signed char": "a", "unsigned char": "h",
    "short": "s", "unsigned short": "t", "int": "i", "unsigned int": "j", "long": "l",
    "unsigned long": "m", "long long": "x", "unsigned long long": "y", "float": "f",
    "double": "d", "wchar_t": "w", "char16_t": "Ds", "char32_t": "Di",
    "int8_t": "a", "uint8_t": "h", "int16_t": "s", "uint16_t": "t", "int32_t": "i",
    "uint32_t": "j", "int64_t": "l", "uint64_t": "m", "size_t": "m", "ssize_t": "l",
    "ptrdiff_t": "l", "intptr_t": "l", "uintptr_t": "m",
}
_C_SPELLINGS = {"signed": "int", "unsigned": "unsigned int", "short int": "short",
                "signed short": "short", "unsigned short int": "unsigned short",
                "signed int": "int", "long int": "long", "signed long": "long",
                "unsigned long int": "unsigned long", "long long int": "long long",
                "signed long long": "long long", "unsigned long long int": "unsigned long long",
                "half": "__half"}


def declared_type(text):
    """What kernel_types.c takes for a C type spelt out ("const float *", "unsigned int",
    "__half *"), as kernel_param_types gives it; None where `text` is no such type.

    Examples
    --------
    >>> declared_type("const float *")
    ('const float *', 'p', 'f', 4, 8)
    >>> declared_type("i") is None
    True
    """
    words = text.replace("*", " * ").split()
    depth = words.count("*")
    if depth and any(w not in ("*", "const", "volatile", "__restrict__", "restrict")
                     for w in words[words.index("*"):]):
        return None
    words = words[:words.index("*")] if depth else words  # the rest qualifies pointers
    quals = [w for w in words if w in ("const", "volatile")]
    base = " ".join(w for w in words if w not in ("const", "volatile"))
    base = _C_SPELLINGS.get(base, base)
    if base in _C_NAMES:
        t = ("builtin", _C_NAMES[base])
    elif base in _SPECIAL:
        t = ("name", base, _SPECIAL[base])
    else:
        return None
    if quals:
        t = ("qualified", t, sorted(set(quals), key=("const", "volatile").index))
    for _ in range(depth):
        t = ("pointer", t)
    return _param(t)


def parameter_types(symbol):
    """The C++ types of the parameters of the function with mangled name `symbol`, as
    (name, [type text, ...]); None where the name is not one this reader reads.

    Examples
    --------
    >>> parameter_types("_Z5twicePdi")
    ('twice', ['double *', 'int'])
    >>> parameter_types("_Z4fillIfEvPT_S0_i")
    ('fill<float>', ['float *', 'float', 'int'])
    >>> parameter_types("twice") is None
    True
    """
    try:
        name, params = _Reader(symbol).encoding()
    except (NotKnown, IndexError, KeyError, ValueError, RecursionError):
        return None
    return name, [_text(t) for t in params]


def kernel_param_types(symbol):
    """What kernel_types.c takes for the kernel `symbol`: a tuple, one item per parameter,
    (C name, ctype, elem, elem_size, size) or None (not checked); None where the name is
    not read.

    Examples
    --------
    >>> kernel_param_types("_Z5twicePdi")
    (('double *', 'p', 'f', 8, 8), ('int', 'i', '', 0, 4))
    """
    try:
        _, params = _Reader(symbol).encoding()
    except (NotKnown, IndexError, KeyError, ValueError, RecursionError):
        return None
    return tuple(_param(t) for t in params)
