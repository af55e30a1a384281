#!/usr/bin/env bash
# A CPython from Debian's packages, unpacked into a private folder: nothing of the system is
# installed or replaced. CI uses it for a Python newer than the machine's (sid's 3.14 on
# bookworm) and for an arm64 one run under qemu-user.
#   tools/debian_python.sh DIR SUITE ARCH VERSION [QEMU]
# apt's own state for SUITE (its package lists for ARCH) lives in DIR/apt; the interpreter's
# packages, the libraries its standard library loads, and its C headers (libpython-dev) are
# downloaded there and unpacked with dpkg -x into DIR/root. The interpreter runs with the
# root's own C library: through the root's dynamic loader for the machine's architecture, under
# QEMU (a qemu-user binary) with DIR/root as its sysroot for another. Prints the path of a
# script that runs it (DIR/root/usr/bin/pythonVERSION-private) and gives it as sys.executable,
# so that the interpreter's subprocesses (the test suite starts some) run the same way.
set -euo pipefail
dir=$1 suite=$2 arch=$3 ver=$4 qemu=${5:-}
root=$dir/root apt=$dir/apt
mkdir -p "$apt/lists/partial" "$apt/archives/partial" "$apt/etc/preferences.d" \
    "$apt/etc/apt.conf.d" "$apt/etc/sources.list.d" "$root"
: >"$apt/status"
echo "deb [arch=$arch signed-by=/usr/share/keyrings/debian-archive-keyring.gpg]" \
    "http://deb.debian.org/debian $suite main" >"$apt/etc/sources.list"
opts=(-o "Dir::State=$apt" -o "Dir::State::Lists=$apt/lists" -o "Dir::State::status=$apt/status"
    -o "Dir::Cache=$apt" -o "Dir::Cache::Archives=$apt/archives" -o "Dir::Etc=$apt/etc"
    -o "Dir::Etc::SourceList=$apt/etc/sources.list" -o "Dir::Etc::SourceParts=$apt/etc/sources.list.d"
    -o "Dir::Etc::TrustedParts=/etc/apt/trusted.gpg.d" -o "APT::Architecture=$arch"
    -o "APT::Architectures::=$arch" -o "Debug::NoLocking=1" -o "APT::Sandbox::User=root")
apt-get "${opts[@]}" -qq update
# The interpreter, what its standard library links to (ssl, ctypes, lzma, bz2, sqlite3,
# decimal, uuid; curses and readline left out) and libstdc++, which NumPy's manylinux wheels
# take from the system; named one by one, since resolving dependencies would want a whole
# system.
packages=("python$ver-minimal" "libpython$ver-minimal" "libpython$ver-stdlib" "libpython$ver-dev"
    libc6 libgcc-s1 libexpat1 zlib1g libssl3t64 libffi8 libbz2-1.0 liblzma5 libzstd1
    libsqlite3-0 libuuid1 libmpdec4 libstdc++6)
(cd "$apt/archives" && apt-get "${opts[@]}" -qq download "${packages[@]/%/:$arch}")
for deb in "$apt"/archives/*.deb; do
    dpkg -x "$deb" "$root"
done
# The merged /usr's links, which base-files makes (the ELF interpreter is /lib/ld-linux-...).
for d in lib lib64 bin; do
    [ -e "$root/$d" ] || ln -s "usr/$d" "$root/$d"
done
# Debian's include/pythonX.Y/pyconfig.h includes <ARCH-linux-gnu/pythonX.Y/pyconfig.h>, found
# through /usr/include on Debian: the root's headers get the real one in its place.
real_config=("$root"/usr/include/*-linux-gnu/python$ver/pyconfig.h)
cp "${real_config[0]}" "$root/usr/include/python$ver/pyconfig.h"
echo "$(du -cb "$apt"/archives/*.deb | tail -n 1 | cut -f 1) bytes of packages from $suite" \
    "($arch): ${packages[*]}" >&2

python=$root/usr/bin/python$ver-private
if [ -z "$qemu" ]; then
    # The root's loader and libraries (sid's C library is newer than the machine's); argv[0] is
    # this script, so that sys.executable is too; the prefix is found from it (root/usr).
    loaders=("$root"/usr/lib64/ld-linux-*.so.*)
    libc=("$root"/usr/lib/*-linux-gnu/libc.so.6)
    loader=${loaders[0]} multiarch=$(basename "$(dirname "${libc[0]}")")
    cat >"$python" <<EOF
#!/bin/sh
exec "$loader" --argv0 "\$0" --library-path "$root/usr/lib/$multiarch:$root/lib/$multiarch" \\
    "$root/usr/bin/python$ver" "\$@"
EOF
else
    # qemu-user with the root as sysroot: the interpreter's /usr/... paths are the root's.
    cat >"$python" <<EOF
#!/bin/sh
exec "$qemu" -L "$root" -0 "\$0" "$root/usr/bin/python$ver" "\$@"
EOF
fi
chmod +x "$python"
echo "$python"
