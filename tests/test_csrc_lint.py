"""A lint of the C sources (csrc/*.c, *.h), as msgspec's tests/test_cpylint.py lints its own:
mistakes the compiler does not see and that crash, or corrupt memory, only at run time.

- No Python C-API call while the GIL is released: between Py_BEGIN_ALLOW_THREADS and
  Py_END_ALLOW_THREADS, PyEval_SaveThread() and PyEval_RestoreThread(), and in the file's
  own functions called there (docs/development/architecture.md, decision 6).
- Every PyArg_Parse* format matches its arguments: their number, their C types where the
  declarations in the function tell them, and the kwlist's length.
- Every PyType_Spec is immutable (Py_TPFLAGS_IMMUTABLETYPE), and every method, member,
  getset and slot table ends with its sentinel (and has no sentinel before its end).
- Every *.md a comment of csrc/ or gpuhost/ cites is in the repository.

The sources are read as text: comments and string literals are blanked first (keeping
every offset, so findings name file:line), string literals kept aside for the formats.
Each check is also run on small snippets with a violation, to show it finds it.  It needs
no build and no GPU.
"""
import os
import re

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CSRC = os.path.join(ROOT, "csrc")
PACKAGE = os.path.join(ROOT, "gpuhost")


# ---- reading C ----

class Source:
    """One C file: `code` is its text with comments and the contents of string and char
    literals blanked (same offsets, same lines); `strings` maps the offset of each string
    literal's opening quote to its contents, escapes undone."""

    def __init__(self, text, name="<snippet>"):
        self.name = name
        self.text = text
        self.code, self.strings, self.comments = _blank(text)
        self._lines = [m.start() for m in re.finditer("\n", text)]

    def line(self, pos):
        lo, hi = 0, len(self._lines)
        while lo < hi:
            mid = (lo + hi) // 2
            if self._lines[mid] < pos:
                lo = mid + 1
            else:
                hi = mid
        return lo + 1

    def where(self, pos):
        return "%s:%d" % (self.name, self.line(pos))


_LEXEME = re.compile(r'//[^\n]*|/\*.*?(?:\*/|\Z)|"(?:\\.|[^"\\\n])*"?|\'(?:\\.|[^\'\\\n])*\'?',
                    re.S)
_ESCAPE = re.compile(r"\\(.)", re.S)
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "0": "\0"}


def _blank(text):
    out, strings, comments, last = [], {}, [], 0
    for m in _LEXEME.finditer(text):
        lexeme = m.group()
        out.append(text[last:m.start()])
        last = m.end()
        if lexeme[0] == "/":
            comments.append((m.start(), lexeme))
            out.append(re.sub(r"[^\n]", " ", lexeme))
            continue
        quote, inner = lexeme[0], lexeme[1:-1] if len(lexeme) > 1 and lexeme[-1] == lexeme[0] \
            else lexeme[1:]
        if quote == '"':
            strings[m.start()] = _ESCAPE.sub(lambda e: _ESCAPES.get(e.group(1), e.group(1)),
                                             inner)
        out.append(quote + " " * (len(lexeme) - 2) + quote if len(lexeme) > 1 else quote)
    out.append(text[last:])
    return "".join(out), strings, comments


_BRACKET = re.compile(r"[()\[\]{}]")


def closing(code, pos):
    """The offset of the bracket that closes the one at `pos`."""
    depth = 0
    for m in _BRACKET.finditer(code, pos):
        if m.group() in "([{":
            depth += 1
        else:
            depth -= 1
            if depth == 0:
                return m.start()
    raise ValueError("unbalanced bracket at offset %d" % pos)


def split_top(code, start, end):
    """Spans (s, e) of the comma-separated items of code[start:end], split at depth 0;
    an empty last item (a trailing comma) is dropped."""
    spans, depth, s = [], 0, start
    for k in range(start, end):
        ch = code[k]
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            spans.append((s, k))
            s = k + 1
    spans.append((s, end))
    if spans and not code[spans[-1][0]:spans[-1][1]].strip():
        spans.pop()
    return spans


def literal(src, s, e):
    """The value of code[s:e] if it is only string literals (adjacent ones joined), else
    None."""
    parts, k = [], s
    while k < e:
        if src.code[k].isspace():
            k += 1
        elif src.code[k] == '"' and k in src.strings:
            parts.append(src.strings[k])
            k = src.code.index('"', k + 1) + 1
        else:
            return None
    return "".join(parts) if parts else None


class Function:
    def __init__(self, name, params, body):
        self.name, self.params, self.body = name, params, body  # spans (s, e), inside brackets


def functions(src):
    """Every function definition: a brace at depth 0 right after a parameter list."""
    if getattr(src, "_functions", None) is None:
        src._functions = _functions(src)
    return src._functions


def _functions(src):
    found, code = [], src.code
    k = code.find("{")
    while k >= 0:
        end = closing(code, k)
        close = k - 1
        while close >= 0 and code[close].isspace():
            close -= 1
        if close >= 0 and code[close] == ")":
            depth, open_ = 0, None
            for j in range(close, -1, -1):
                if code[j] == ")":
                    depth += 1
                elif code[j] == "(":
                    depth -= 1
                    if depth == 0:
                        open_ = j
                        break
            m = re.search(r"(\w+)\s*$", code[max(0, open_ - 200):open_])
            if m is not None and m.group(1) not in _KEYWORDS:
                found.append(Function(m.group(1), (open_ + 1, close), (k + 1, end)))
        k = code.find("{", end + 1)
    return found


def enclosing(funcs, pos):
    for f in funcs:
        if f.body[0] <= pos < f.body[1]:
            return f
    return None


_KEYWORDS = {"if", "for", "while", "switch", "return", "sizeof", "do", "else", "goto", "case",
             "break", "continue", "default", "typedef"}
_QUALIFIERS = {"const", "volatile", "static", "register", "struct", "enum", "union", "extern",
               "inline"}
_BUILTIN = {"unsigned", "signed", "long", "short", "int", "char", "float", "double", "void",
            "_Bool"}


def _normal_type(words, stars):
    words = [w for w in words if w not in _QUALIFIERS]
    if words and all(w in _BUILTIN for w in words):  # one spelling of each builtin type
        if words != ["signed", "char"]:
            words = [w for w in words if w != "signed"] or ["int"]
        if len(words) > 1 and "int" in words:  # long int, unsigned short int, ...
            words = [w for w in words if w != "int"]
        if words == ["unsigned"]:
            words = ["unsigned", "int"]
    return " ".join(words) + "*" * stars


_DECLARATOR = re.compile(r"\s*(\**)\s*(?:const\s*)?(\w+)\s*((?:\[[^\]]*\]\s*)*)(?:=.*)?\s*$",
                         re.S)


def _declaration(chunk):
    """{name: type} of one declaration statement or parameter, {} if it is none."""
    words = re.match(r"\s*((?:[A-Za-z_]\w*\s+|[A-Za-z_]\w*(?=\s*\*))+)", chunk)
    if words is None:
        return {}
    names = words.group(1).split()
    base = []
    for w in names:
        if w in _KEYWORDS:
            return {}
        if base and base[-1] not in _QUALIFIERS and not (w in _BUILTIN and base[-1] in _BUILTIN):
            break  # the type is complete; w is the first declarator's name
        base.append(w)
        if w not in _QUALIFIERS and w not in _BUILTIN:
            break  # a typedef name ends the type
    if not base or all(w in _QUALIFIERS for w in base):
        return {}
    rest = chunk[words.start(1):]
    for w in base:
        rest = rest[rest.index(w) + len(w):]
    decls = {}
    for a, b in split_top(rest, 0, len(rest)):
        m = _DECLARATOR.match(rest[a:b])
        if m is None:
            return {}
        stars = len(m.group(1)) + m.group(3).count("[")
        decls[m.group(2)] = _normal_type(base, stars)
    return decls


def declarations(src, func, pos):
    """{name: normalized type} declared in the function's parameters and in its body before
    `pos`, the nearest declaration before `pos` where a name is declared twice (in two
    blocks)."""
    decls = {}
    for s, e in split_top(src.code, *func.params):
        decls.update(_declaration(src.code[s:e]))
    body = src.code[func.body[0]:min(pos, func.body[1])]
    body = re.sub(r"^[ \t]*#.*$", lambda m: " " * len(m.group()), body, flags=re.M)
    for chunk in re.split(r"[;{}]|\bfor\s*\(", body):
        chunk = re.sub(r"^\s*(?:\w+\s*:(?!:))+", "", chunk)  # labels
        decls.update(_declaration(chunk))
    return decls


def c_sources():
    return sorted(os.path.join(dirpath, f) for dirpath, _, files in os.walk(CSRC)
                  for f in files if f.endswith((".c", ".h")))


_CACHE = {}


def read(path):
    if path not in _CACHE:
        with open(path) as fh:
            _CACHE[path] = Source(fh.read(), os.path.relpath(path, ROOT))
    return _CACHE[path]


# ---- a. no Python C-API while the GIL is released ----

# Py-prefixed names that are safe without the GIL: the raw allocator and PyThread's locks
# are documented as callable without it; the rest are compile-time macros.
GIL_FREE = re.compile(r"PyMem_Raw\w+|PyThread_\w+|PyGILState_Check|Py_ARRAY_LENGTH|Py_MIN|"
                      r"Py_MAX|Py_ABS|Py_UNUSED|Py_UNREACHABLE|Py_BUILD_ASSERT\w*|"
                      r"Py_SAFE_DOWNCAST|Py_CHARMASK")
_GIL_CALLS = {"PyEval_SaveThread", "PyEval_RestoreThread"}
_GIL_TOKEN = re.compile(r"\b(Py_BEGIN_ALLOW_THREADS|Py_END_ALLOW_THREADS|Py_BLOCK_THREADS|"
                        r"Py_UNBLOCK_THREADS)\b|\b([A-Za-z_]\w*)(?!\w)\s*\(|([{}])")


def gil_findings(src):
    """file:line findings of Python C-API calls made with the GIL released."""
    findings = []
    funcs = {f.name: f for f in functions(src)}
    released, start, depth, ensured = False, None, 0, 0
    for m in _GIL_TOKEN.finditer(src.code):
        macro, call, brace = m.groups()
        if not released and call is not None and call not in _GIL_CALLS:
            continue
        where = src.where(m.start())
        if brace == "{":
            depth += 1
        elif brace == "}":
            depth -= 1
            if depth == 0 and released:
                findings.append("%s: the function ends with the GIL released (released at "
                                "line %d)" % (where, start))
                released = False
        elif macro in ("Py_BEGIN_ALLOW_THREADS", "Py_UNBLOCK_THREADS") or \
                call == "PyEval_SaveThread":
            if released:
                findings.append("%s: %s with the GIL already released (at line %d)"
                                % (where, macro or call, start))
            released, start, ensured = True, src.line(m.start()), 0
        elif macro in ("Py_END_ALLOW_THREADS", "Py_BLOCK_THREADS") or \
                call == "PyEval_RestoreThread":
            if not released:
                findings.append("%s: %s with the GIL held" % (where, macro or call))
            released = False
        elif not released or call is None:
            continue
        elif call == "PyGILState_Ensure":
            ensured += 1
        elif call == "PyGILState_Release" and ensured:
            ensured -= 1
        elif ensured:
            continue
        elif re.fullmatch(r"_?Py\w*", call):
            if not GIL_FREE.fullmatch(call):
                findings.append("%s: %s() with the GIL released (since line %d)"
                                % (where, call, start))
        elif call in funcs:
            for name, line in _python_calls(src, funcs, call, set()):
                findings.append("%s: %s() with the GIL released (since line %d): it calls "
                                "%s() at line %d" % (where, call, start, name, line))
    return findings


_CALL = re.compile(r"\b([A-Za-z_]\w*)(?!\w)\s*\(")


def _python_calls(src, funcs, name, seen):
    """(Python C-API name, line) that the file's function `name` calls, itself or through
    the file's other functions."""
    if name in seen:
        return []
    seen.add(name)
    f = funcs[name]
    calls = []
    for m in _CALL.finditer(src.code, f.body[0], f.body[1]):
        callee = m.group(1)
        if re.fullmatch(r"_?Py\w*", callee) and not GIL_FREE.fullmatch(callee):
            calls.append((callee, src.line(m.start())))
        elif callee in funcs and callee != name:
            calls.extend(_python_calls(src, funcs, callee, seen))
    return calls


# ---- b. PyArg_Parse* formats ----

_INT_UNITS = {"b": "unsigned char", "B": "unsigned char", "h": "short", "H": "unsigned short",
              "i": "int", "I": "unsigned int", "l": "long", "k": "unsigned long",
              "L": "long long", "K": "unsigned long long", "n": "Py_ssize_t", "c": "char",
              "C": "int", "f": "float", "d": "double", "D": "Py_complex", "p": "int"}
OBJECT, TYPE, CONVERTER, ANY = "PyObject*", "PyTypeObject*", "<converter>", "<any>"
# Typedefs the sources use for a converter's C type: CUdeviceptr is cuda.h's unsigned long
# long on every 64-bit platform.
ALIASES = {"unsigned long long": {"CUdeviceptr", "CUdeviceptr_v2"}}


def format_units(fmt):
    """([(unit, [pointee type of each argument it takes])], error or None) of a
    PyArg_Parse* format; the types are those the arguments point to."""
    units, k, depth, seen_bar = [], 0, 0, False
    body = re.split(r"[:;]", fmt, maxsplit=1)[0]
    while k < len(body):
        ch = body[k]
        nxt = body[k + 1] if k + 1 < len(body) else ""
        if ch == "|":
            if seen_bar:
                return units, "'|' twice"
            seen_bar = True
        elif ch == "$":
            if not seen_bar:
                return units, "'$' before '|' (keyword-only arguments must be optional)"
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth < 0:
                return units, "')' without '('"
        elif ch in _INT_UNITS:
            units.append((ch, [_INT_UNITS[ch]]))
        elif ch in "OSUY":
            if ch == "O" and nxt == "!":
                units.append(("O!", [TYPE, OBJECT]))
                k += 1
            elif ch == "O" and nxt == "&":
                units.append(("O&", [CONVERTER, ANY]))
                k += 1
            else:
                units.append((ch, [OBJECT]))
        elif ch in "szy":
            if nxt == "*":
                units.append((ch + "*", ["Py_buffer"]))
                k += 1
            elif nxt == "#":
                units.append((ch + "#", ["char*", "Py_ssize_t"]))
                k += 1
            else:
                units.append((ch, ["char*"]))
        elif ch == "w" and nxt == "*":
            units.append(("w*", ["Py_buffer"]))
            k += 1
        elif ch == "e" and nxt in ("s", "t"):
            if body[k + 2:k + 3] == "#":
                units.append(("e" + nxt + "#", ["char", "char*", "Py_ssize_t"]))
                k += 2
            else:
                units.append(("e" + nxt, ["char", "char*"]))
                k += 1
        else:
            return units, "unknown format unit %r" % ch
        k += 1
    if depth:
        return units, "'(' without ')'"
    return units, None


_PARSERS = {"PyArg_ParseTupleAndKeywords": 2, "PyArg_ParseTuple": 1, "PyArg_Parse": 1}


def _formats(src, func, s, e):
    """[(format, offset)] the format argument code[s:e] can be: a literal, either side of a
    conditional, a buffer the function fills with snprintf, or a parameter of a function
    whose callers in the file pass a literal.  None where none of these."""
    value = literal(src, s, e)
    if value is not None:
        return [(value, s)]
    text = src.code[s:e]
    cond = re.fullmatch(r"([^?]*)\?(.*)", text, re.S)
    if cond is not None:
        q = s + text.index("?") + 1
        items = [(a, b) for a, b in _split_colon(src, q, e)]
        values = [literal(src, a, b) for a, b in items]
        if len(values) == 2 and None not in values:
            return [(v, a) for v, (a, _) in zip(values, items)]
        return None
    name = text.strip()
    if not re.fullmatch(r"\w+", name) or func is None:
        return None
    body = src.code[func.body[0]:func.body[1]]
    m = re.search(r"\bsnprintf\s*\(\s*%s\s*," % name, body)
    if m is not None:
        at = func.body[0] + m.start() + body[m.start():].index("(")
        args = split_top(src.code, at + 1, closing(src.code, at))
        value = literal(src, *args[2]) if len(args) > 2 else None
        return None if value is None else [(value, args[2][0])]
    params = split_top(src.code, *func.params)
    position = [i for i, (a, b) in enumerate(params)
                if re.search(r"\b%s\s*$" % name, src.code[a:b])]
    if not position:
        return None
    found = []
    for call in re.finditer(r"\b%s\s*\(" % func.name, src.code):
        if func.params[0] - 1 == call.end() - 1:
            continue  # the definition itself
        open_ = call.end() - 1
        args = split_top(src.code, open_ + 1, closing(src.code, open_))
        if len(args) <= position[0]:
            return None
        value = literal(src, *args[position[0]])
        if value is None:
            return None
        found.append((value, args[position[0]][0]))
    return found or None


def _split_colon(src, start, end):
    depth = 0
    for k in range(start, end):
        if src.code[k] in "([{":
            depth += 1
        elif src.code[k] in ")]}":
            depth -= 1
        elif src.code[k] == ":" and depth == 0:
            return [(start, k), (k + 1, end)]
    return [(start, end)]


def _arg_type(decls, expr):
    """The type an argument points to, where its declaration tells: `&x` points to x's
    type, `x` to one star less.  None where unknown (a member, an index, a cast)."""
    expr = expr.strip()
    m = re.fullmatch(r"&\s*(\w+)", expr)
    if m is not None:
        return decls.get(m.group(1))
    m = re.fullmatch(r"\w+", expr)
    if m is not None and decls.get(expr, "").endswith("*"):
        return decls[expr][:-1]
    return None


def _fits(expected, actual):
    if expected in (ANY, CONVERTER):
        return True
    if expected in (OBJECT, TYPE):
        # any object pointer: PyObject *, PyTypeObject *, a gpuhost struct's pointer
        return actual.count("*") == 1 and not set(actual[:-1].split()) & _BUILTIN
    return actual == expected or actual in ALIASES.get(expected, ())


def _kwlist(src, func, name):
    """(number of names, error or None) of the kwlist array `name`."""
    pattern = re.compile(r"\b%s\s*\[\s*\w*\s*\]\s*=\s*\{" % re.escape(name))
    for scope in ([func.body] if func else []) + [(0, len(src.code))]:
        m = pattern.search(src.code, *scope)
        if m is not None:
            open_ = m.end() - 1
            items = [src.code[a:b].strip() for a, b in
                     split_top(src.code, open_ + 1, closing(src.code, open_))]
            if not items or items[-1] not in ("NULL", "0"):
                return len(items), "does not end with NULL"
            return len(items) - 1, None
    return None, None


def parse_findings(src):
    findings = []
    funcs = functions(src)
    pattern = r"\b(%s)\s*\(" % "|".join(sorted(_PARSERS, key=len, reverse=True))
    for m in re.finditer(pattern, src.code):
        parser, open_ = m.group(1), m.end() - 1
        where = src.where(m.start())
        args = split_top(src.code, open_ + 1, closing(src.code, open_))
        nfixed = _PARSERS[parser]
        func = enclosing(funcs, m.start())
        formats = _formats(src, func, *args[nfixed])
        if formats is None:
            findings.append("%s: %s's format is not a literal this lint can read"
                            % (where, parser))
            continue
        keywords = parser.endswith("AndKeywords")
        targets = args[nfixed + 1 + keywords:]
        decls = declarations(src, func, m.start()) if func else {}
        for fmt, at in formats:
            head = "%s: %s(%r)" % (src.where(at), parser, fmt)
            units, error = format_units(fmt)
            if error is not None:
                findings.append("%s: %s" % (head, error))
                continue
            if "$" in fmt.split(":")[0] and not keywords:
                findings.append("%s: '$' is for PyArg_ParseTupleAndKeywords only" % head)
            wanted = [t for _, types in units for t in types]
            if len(wanted) != len(targets):
                findings.append("%s: the format takes %d C arguments (%s), %d are passed"
                                % (head, len(wanted), " ".join(u for u, _ in units),
                                   len(targets)))
                continue
            for (unit, types), k in zip(units, _offsets(units)):
                for j, expected in enumerate(types):
                    expr = src.code[slice(*targets[k + j])]
                    actual = _arg_type(decls, expr)
                    if actual is not None and not _fits(expected, actual):
                        findings.append("%s: '%s' wants %s *, argument %d (%s) is a %s *"
                                        % (head, unit, expected, k + j + 1, expr.strip(),
                                           actual))
            if keywords:
                name = src.code[slice(*args[nfixed + 1])].strip()
                count, error = _kwlist(src, func, name)
                if error is not None:
                    findings.append("%s: kwlist %s %s" % (head, name, error))
                elif count is None:
                    findings.append("%s: kwlist %s not found" % (head, name))
                elif count != len(units):
                    findings.append("%s: kwlist %s names %d arguments, the format has %d"
                                    % (head, name, count, len(units)))
    return findings


def _offsets(units):
    k, out = 0, []
    for _, types in units:
        out.append(k)
        k += len(types)
    return out


# ---- c. immutable types, tables with sentinels ----

# PyType_Specs allowed to be mutable, with the reason.  None: every type is immutable
# (gpuhost's own Python code extends them through _core._attach, and Python subclasses of
# an immutable base stay mutable).
MUTABLE_TYPES = {}

_TABLES = r"PyMethodDef|PyMemberDef|PyGetSetDef|PyType_Slot|PyModuleDef_Slot"
_SENTINEL = re.compile(r"\{\s*(?:(?:NULL|0)\s*(?:,\s*)?)*\}")


def type_findings(src):
    findings = []
    for m in re.finditer(r"\bPyType_Spec\s+(\w+)\s*=\s*\{", src.code):
        open_ = m.end() - 1
        items = [src.code[a:b].strip() for a, b in
                 split_top(src.code, open_ + 1, closing(src.code, open_))]
        flags = [i for i in items if re.match(r"\.flags\s*=", i)]
        if not flags and len(items) >= 4 and not items[0].startswith("."):
            flags = [items[3]]
        immutable = bool(flags) and re.search(r"\bPy_TPFLAGS_IMMUTABLETYPE\b", flags[0])
        if not immutable and m.group(1) not in MUTABLE_TYPES:
            findings.append("%s: PyType_Spec %s lacks Py_TPFLAGS_IMMUTABLETYPE"
                            % (src.where(m.start()), m.group(1)))
    pattern = r"\b(%s)\s+(\w+)\s*\[\s*\w*\s*\]\s*=\s*\{" % _TABLES
    for m in re.finditer(pattern, src.code):
        open_ = m.end() - 1
        close = closing(src.code, open_)
        items = [(a, re.sub(r"^\s*#.*$", "", src.code[a:b], flags=re.M).strip())
                 for a, b in split_top(src.code, open_ + 1, close)]
        what = "%s %s[]" % (m.group(1), m.group(2))
        if not items or not _SENTINEL.fullmatch(items[-1][1]):
            findings.append("%s: %s does not end with a sentinel ({NULL})"
                            % (src.where(m.start()), what))
        for a, item in items[:-1]:
            if _SENTINEL.fullmatch(item):
                findings.append("%s: %s has a sentinel before its end: the entries after it "
                                "are never seen" % (src.where(a), what))
    return findings


# ---- d. the documents comments cite ----

def _repository_files():
    names, paths = set(), set()
    for top, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if not d.startswith(".") and d not in
                   ("build", "__pycache__", "node_modules", "_build")]
        for f in files:
            names.add(f)
            paths.add(os.path.relpath(os.path.join(top, f), ROOT))
    return names, paths


_MD = re.compile(r"(?<![\w./:-])((?:[\w.-]+/)*[\w.-]*\w\.md)\b")


def cited_documents(text):
    """[(offset, name)] of the *.md documents a text names, web addresses left out."""
    found = []
    for m in _MD.finditer(text):
        before = text[:m.start()].rsplit(None, 1)[-1] if text[:m.start()].strip() else ""
        if "://" in before or before.endswith(("http", "https", "www.")):
            continue
        found.append((m.start(), m.group(1)))
    return found


def document_findings(path, text, names, paths):
    rel = os.path.relpath(path, ROOT)
    if path.endswith((".c", ".h")):
        src = Source(text, rel)
        pieces = src.comments
    else:
        src, pieces = None, [(0, text)]  # Python: comments and docstrings alike
    findings = []
    for start, piece in pieces:
        for offset, name in cited_documents(piece):
            present = (name in paths or os.path.normpath(name) in paths) if "/" in name \
                else name in names
            if not present:
                line = text.count("\n", 0, start + offset) + 1
                findings.append("%s:%d: cites %s, which is not in the repository"
                                % (rel, line, name))
    return findings


# ---- the checks on the real sources ----

def _all(check):
    findings = []
    for path in c_sources():
        findings.extend(check(read(path)))
    return findings


def test_no_python_c_api_while_the_gil_is_released():
    assert _all(gil_findings) == []


def test_every_pyarg_format_matches_its_arguments():
    assert _all(parse_findings) == []


def test_every_type_is_immutable_and_every_table_ends_with_a_sentinel():
    assert _all(type_findings) == []


def test_every_document_a_comment_cites_is_in_the_repository():
    names, paths = _repository_files()
    findings = []
    for top in (CSRC, PACKAGE):
        for dirpath, dirs, files in os.walk(top):
            dirs[:] = [d for d in dirs if d != "__pycache__"]
            for f in sorted(files):
                if f.endswith((".c", ".h", ".py", ".pyi")):
                    path = os.path.join(dirpath, f)
                    with open(path) as fh:
                        findings.extend(document_findings(path, fh.read(), names, paths))
    assert findings == []


def test_the_lint_reads_the_real_sources():
    """Guards against a parser that silently finds nothing: the real sources hold many
    GIL-released regions, PyArg_Parse* calls, type specs and tables."""
    regions = calls = specs = tables = 0
    for path in c_sources():
        code = read(path).code
        regions += len(re.findall(r"\bPy_BEGIN_ALLOW_THREADS\b", code))
        calls += len(re.findall(r"\bPyArg_Parse\w*\s*\(", code))
        specs += len(re.findall(r"\bPyType_Spec\s+\w+\s*=", code))
        tables += len(re.findall(r"\b(?:%s)\s+\w+\s*\[" % _TABLES, code))
    assert regions > 40 and calls > 50 and specs > 15 and tables > 50


# ---- each check finds what it is for ----

def _lines(findings):
    return [f.split(": ", 1)[0] for f in findings]


def test_blanking_keeps_offsets_and_hides_comments_and_strings():
    src = Source('int a; /* Py_INCREF( */ char *s = "Py_DECREF(x) \\" }";\n'
                 "// PyErr_Clear();\nchar c = '}';\n")
    assert len(src.code) == len(src.text) and src.code.count("\n") == 3
    assert "Py" not in src.code and "}" not in src.code
    assert list(src.strings.values()) == ['Py_DECREF(x) " }']


GIL_OK = """
static void helper(int *x) { *x = 1; }
static int
f(PyObject *list)
{
    Py_ssize_t n = PyList_GET_SIZE(list);  /* Py_INCREF(list) in a comment is no call */
    int x;
    void *p;
    PyThreadState *save;
    Py_BEGIN_ALLOW_THREADS
    helper(&x);
    p = PyMem_RawMalloc((size_t)n);
    PyMem_RawFree(p);
    puts("PyErr_Clear()");
    Py_END_ALLOW_THREADS
    save = PyEval_SaveThread();
    x += 1;
    PyEval_RestoreThread(save);
    Py_BEGIN_ALLOW_THREADS
    {
        PyGILState_STATE g = PyGILState_Ensure();
        PyErr_WarnEx(NULL, "taken back", 1);
        PyGILState_Release(g);
    }
    Py_END_ALLOW_THREADS
    return x;
}
"""


def test_gil_check_passes_correct_code():
    assert gil_findings(Source(GIL_OK)) == []


@pytest.mark.parametrize("body, line, what", [
    ("Py_BEGIN_ALLOW_THREADS\n n = PyList_GET_SIZE(o);\nPy_END_ALLOW_THREADS", 4,
     "PyList_GET_SIZE() with the GIL released (since line 3)"),
    ("Py_BEGIN_ALLOW_THREADS\n Py_DECREF(o);\nPy_END_ALLOW_THREADS", 4, "Py_DECREF()"),
    ("Py_BEGIN_ALLOW_THREADS\n if (n) { PyErr_SetString(e, \"x\"); }\nPy_END_ALLOW_THREADS", 4,
     "PyErr_SetString()"),
    ("PyThreadState *s = PyEval_SaveThread();\n Py_INCREF(o);\nPyEval_RestoreThread(s);", 4,
     "Py_INCREF()"),
    ("Py_BEGIN_ALLOW_THREADS\n n = uses_python(o);\nPy_END_ALLOW_THREADS", 4,
     "uses_python() with the GIL released (since line 3): it calls PyObject_Length() at line 1"),
    ("Py_BEGIN_ALLOW_THREADS\n n = 1;\n", 6,
     "the function ends with the GIL released (released at line 3)"),
    ("Py_END_ALLOW_THREADS\n", 3, "Py_END_ALLOW_THREADS with the GIL held"),
])
def test_gil_check_finds_python_calls_without_the_gil(body, line, what):
    snippet = ("static Py_ssize_t uses_python(PyObject *o) { return PyObject_Length(o); }\n"
               "static void f(PyObject *o, PyObject *e) { Py_ssize_t n;\n%s\n}\n" % body)
    findings = gil_findings(Source(snippet, "x.c"))
    assert len(findings) == 1 and what in findings[0], findings
    assert _lines(findings) == ["x.c:%d" % line]


PARSE_OK = r"""
static int conv(PyObject *o, void *p);
static PyObject *
f(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"a", "b", "c", "d", "e", "f", "g", NULL};
    int a = 0, h;
    unsigned long long b;
    Py_ssize_t c, len;
    const char *d, *buf;
    PyObject *e = NULL;
    PyTypeObject *tp;
    CUdeviceptr g;
    void *out;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "iK|ns#O&$pK:f", kwlist, &a, &b, &c, &d,
                                     &len, conv, &out, &h, &g)) {
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "O!(iy#)es:g", &PyType_Type, &tp, &a, &buf, &len, "utf-8",
                          &d)) {
        return NULL;
    }
    for (int i = 0; i < 2; i++) {
        unsigned int c;  /* shadows the outer c: the nearest declaration counts */
        if (!PyArg_ParseTuple(args, "I", &c)) {
            return NULL;
        }
    }
    return PyArg_Parse(e, "O", &e) ? e : NULL;
}
"""


def test_parse_check_passes_correct_code():
    assert parse_findings(Source(PARSE_OK)) == []


@pytest.mark.parametrize("call, what", [
    ('PyArg_ParseTuple(args, "ii", &a)', "the format takes 2 C arguments (i i), 1 are passed"),
    ('PyArg_ParseTuple(args, "O!", &o)', "takes 2 C arguments"),
    ('PyArg_ParseTuple(args, "O&", &o)', "takes 2 C arguments"),
    ('PyArg_ParseTuple(args, "s#", &s)', "takes 2 C arguments"),
    ('PyArg_ParseTuple(args, "es", &s)', "takes 2 C arguments"),
    ('PyArg_ParseTuple(args, "es#", "ascii", &s)', "takes 3 C arguments"),
    ('PyArg_ParseTuple(args, "|i:name;why", &a, &a)', "takes 1 C arguments"),
    ('PyArg_ParseTuple(args, "i", &s)', "'i' wants int *, argument 1 (&s) is a char* *"),
    ('PyArg_ParseTuple(args, "n", &a)', "'n' wants Py_ssize_t *, argument 1 (&a) is a int *"),
    ('PyArg_ParseTuple(args, "K", &size)', "'K' wants unsigned long long *"),
    ('PyArg_ParseTuple(args, "C", &ch)', "'C' wants int *, argument 1 (&ch) is a char *"),
    ('PyArg_ParseTuple(args, "O", &a)', "'O' wants PyObject* *"),
    ('PyArg_ParseTuple(args, "s", &o)', "'s' wants char* *"),
    ('PyArg_ParseTuple(args, "s#", &s, &a)', "'s#' wants Py_ssize_t *, argument 2"),
    ('PyArg_ParseTuple(args, "i", ip)', ""),  # a pointer parameter passed as it is: fine
    ('PyArg_ParseTuple(args, "n", ip)', "'n' wants Py_ssize_t *, argument 1 (ip) is a int *"),
    ('PyArg_ParseTuple(args, "$i", &a)', "'$' before '|'"),
    ('PyArg_ParseTuple(args, "|i$i", &a, &a)', "'$' is for PyArg_ParseTupleAndKeywords only"),
    ('PyArg_ParseTuple(args, "(ii", &a, &a)', "'(' without ')'"),
    ('PyArg_ParseTuple(args, "u", &s)', "unknown format unit 'u'"),
    ('PyArg_ParseTupleAndKeywords(args, kw, "i|i", kwlist, &a, &a)',
     "kwlist kwlist names 3 arguments, the format has 2"),
    ('PyArg_ParseTupleAndKeywords(args, kw, "i", nolist, &a)', "kwlist nolist not found"),
    ('PyArg_ParseTupleAndKeywords(args, kw, "i", unended, &a)', "does not end with NULL"),
    ('PyArg_ParseTupleAndKeywords(args, kw, c ? "i:f" : "ii:g", one, &a)',
     "the format takes 2 C arguments (i i), 1 are passed"),
    ('PyArg_ParseTuple(args, fmt_unknown, &a)', "format is not a literal"),
])
def test_parse_check_finds_mismatched_arguments(call, what):
    snippet = ("static int f(PyObject *args, PyObject *kw, int *ip, const char *fmt_unknown)\n"
               "{\n"
               "    static char *kwlist[] = {\"a\", \"b\", \"c\", NULL};\n"
               "    static char *one[] = {\"a\", NULL};\n"
               "    static char *unended[] = {\"a\"};\n"
               "    int a, c = 1; char ch; size_t size; const char *s; PyObject *o;\n"
               "    return %s;\n"
               "}\n" % call)
    findings = parse_findings(Source(snippet, "x.c"))
    if not what:
        assert findings == []
        return
    assert len(findings) == 1 and what in findings[0], findings
    assert _lines(findings) == ["x.c:7"]


def test_parse_check_follows_a_format_built_or_passed_in():
    snippet = r"""
static int parse(PyObject *args, const char *fmt, int *a)
{
    return PyArg_ParseTuple(args, fmt, a);
}
static int g(PyObject *args)
{
    int a;
    char format[32];
    snprintf(format, sizeof(format), "ii:%s", "g");
    return parse(args, "i:one", &a) + parse(args, "ii:two", &a) +
           PyArg_ParseTuple(args, format, &a);
}
"""
    findings = parse_findings(Source(snippet, "x.c"))
    assert [f.split(": ", 2)[:2] for f in findings] == [
        ["x.c:11", "PyArg_ParseTuple('ii:two')"], ["x.c:10", "PyArg_ParseTuple('ii:%s')"]]


def test_format_units_count_each_converters_arguments():
    def count(fmt):
        units, error = format_units(fmt)
        assert error is None
        return sum(len(types) for _, types in units)

    assert [count(f) for f in ["", "O", "O!", "O&", "s#", "y#", "z#", "s*", "es", "es#",
                               "et#", "|$:name", "(ii)", "iKn;message"]] == \
        [0, 1, 2, 2, 2, 2, 2, 1, 2, 3, 3, 0, 2, 3]


TYPES_OK = """
static PyMethodDef methods[] = {
    {"f", f, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};
static PyMemberDef members[] = {
    {"x", T_INT, 0, READONLY, NULL},
#ifdef SOMETHING
    {"y", T_INT, 4, READONLY, NULL},
#endif
    {NULL},
};
static PyGetSetDef getset[] = {{"g", get, NULL, NULL, NULL}, {0}};
static PyType_Slot slots[] = {{Py_tp_methods, methods}, {0, NULL}};
static PyType_Spec spec = {
    .name = "m.T",
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE,
    .slots = slots,
};
static PyType_Spec positional = {"m.U", 0, 0, Py_TPFLAGS_IMMUTABLETYPE, slots};
"""


def test_type_check_passes_correct_code():
    assert type_findings(Source(TYPES_OK)) == []


@pytest.mark.parametrize("snippet, what", [
    ('static PyType_Spec s = {.name = "m.T", .flags = Py_TPFLAGS_DEFAULT, .slots = x};',
     "PyType_Spec s lacks Py_TPFLAGS_IMMUTABLETYPE"),
    ('static PyType_Spec s = {"m.T", 0, 0, Py_TPFLAGS_DEFAULT, x};',
     "PyType_Spec s lacks Py_TPFLAGS_IMMUTABLETYPE"),
    ('static PyType_Spec s = {.name = "m.T", .slots = x};',
     "PyType_Spec s lacks Py_TPFLAGS_IMMUTABLETYPE"),
    ('static PyMethodDef m[] = {\n{"f", f, METH_O, NULL},\n};',
     "PyMethodDef m[] does not end with a sentinel"),
    ('static PyMemberDef m[] = {{"x", T_INT, 0, 0, NULL}};',
     "PyMemberDef m[] does not end with a sentinel"),
    ('static PyGetSetDef m[] = {{"g", get, NULL, NULL, NULL}, {"h", get}};',
     "PyGetSetDef m[] does not end with a sentinel"),
    ('PyMethodDef gh_m[] = {{NULL}, {"f", f, METH_O, NULL}, {NULL}};',
     "PyMethodDef gh_m[] has a sentinel before its end"),
    ("static PyType_Slot m[] = {{Py_tp_doc, doc}};", "PyType_Slot m[] does not end"),
])
def test_type_check_finds_mutable_types_and_missing_sentinels(snippet, what):
    findings = type_findings(Source("\n" + snippet, "x.c"))
    assert len(findings) == 1 and what in findings[0], findings
    assert findings[0].startswith("x.c:2: ")


def test_document_check_finds_a_missing_document(tmp_path):
    names, paths = {"architecture.md", "README.md"}, {"docs/development/architecture.md"}
    path = os.path.join(CSRC, "x.c")
    text = ('/* numba\'s model (DESIGN.md point 4); docs/development/architecture.md,\n'
            ' * decision 4; README.md; https://example.org/NOTES.md is a web page. */\n'
            'const char *s = "TODO.md in a string is not a comment";\n'
            '// see docs/gone.md\n')
    assert document_findings(path, text, names, paths) == [
        "csrc/x.c:1: cites DESIGN.md, which is not in the repository",
        "csrc/x.c:4: cites docs/gone.md, which is not in the repository"]
    assert document_findings(os.path.join(PACKAGE, "x.py"), '"""See ANCHORS.md."""\n',
                             names, paths) == [
        "gpuhost/x.py:1: cites ANCHORS.md, which is not in the repository"]
