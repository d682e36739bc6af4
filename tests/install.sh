#!/bin/sh
# tests/install.sh - `make test-install`: install the way a packager does,
# twice, with two prefixes in a row in one build tree, and use each install
# the way users will: every example built with pkg-config against the
# shared library and run, the tools' versions, the man pages rendered.
# Nothing from the source tree but the examples.
#
#   tests/install.sh STAGE     (STAGE: an absolute scratch directory)
set -eu

stage=${1:?usage: tests/install.sh STAGE}
make=${MAKE:-make}
version=$(sed -n 's/^VERSION *:= *//p' Makefile)
fail() {
	echo "test-install: FAILED: $*" >&2
	exit 1
}

rm -rf "$stage"
n=0
for prefix in /usr/local /opt/rift-alt; do
	n=$((n + 1))
	dest=$stage/dest$n
	root=$dest$prefix
	echo "test-install: make install DESTDIR=$dest PREFIX=$prefix"
	$make --no-print-directory install DESTDIR="$dest" PREFIX="$prefix" \
		>"$stage.log" 2>&1 || { cat "$stage.log" >&2; fail "make install"; }

	for f in include/rift.h lib/librift.a lib/librift.so \
		lib/librift.so.0 lib/pkgconfig/rift.pc bin/rift-info \
		bin/rift-perf share/man/man1/rift-info.1 \
		share/man/man1/rift-perf.1 share/man/man3/rift.3 \
		share/man/man3/rift_ctx_run_mode.3 share/man/man5/rift.toml.5; do
		[ -e "$root/$f" ] || fail "$prefix: $f was not installed"
	done

	# pkg-config as a user of this install sees it.
	export PKG_CONFIG_SYSROOT_DIR="$dest"
	export PKG_CONFIG_PATH="$root/lib/pkgconfig"
	got=$(env -u PKG_CONFIG_SYSROOT_DIR pkg-config --variable=prefix rift)
	[ "$got" = "$prefix" ] ||
		fail "$prefix: rift.pc says prefix=$got (a stale rift.pc?)"
	cflags=$(pkg-config --cflags rift)
	libs=$(pkg-config --libs rift)
	case " $cflags " in *" -I$root/include "*) ;;
	*) fail "$prefix: pkg-config --cflags rift is '$cflags'" ;;
	esac
	for ex in examples/*.c; do
		bin=$stage/$(basename "$ex" .c)$n
		# shellcheck disable=SC2086
		cc -std=c11 -Wall -Wextra -Werror "$ex" -o "$bin" $cflags $libs ||
			fail "$prefix: $ex does not build against the install"
		LD_LIBRARY_PATH=$root/lib "$bin" >"$stage.log" 2>&1 ||
			{ cat "$stage.log" >&2; fail "$prefix: $ex failed"; }
		LD_LIBRARY_PATH=$root/lib ldd "$bin" |
			grep -q "$root/lib/librift.so" ||
			fail "$prefix: $ex did not run on the installed librift"
	done
	unset PKG_CONFIG_SYSROOT_DIR PKG_CONFIG_PATH

	for tool in rift-info rift-perf; do
		out=$("$root/bin/$tool" -V) || fail "$tool -V failed"
		case $out in *"$version"*) ;;
		*) fail "$tool -V printed '$out', not the version $version" ;;
		esac
	done

	# The man pages render without a warning, and man finds them.
	for page in "$root"/share/man/man*/*; do
		[ -L "$page" ] && continue
		warn=$(groff -man -Tutf8 -ww -z "$page" 2>&1 >/dev/null) ||
			fail "groff $page"
		[ -z "$warn" ] || fail "$page: $warn"
	done
	for name in rift-info rift-perf rift rift_ctx_run_mode rift.toml; do
		man -M "$root/share/man" -w "$name" >/dev/null 2>&1 ||
			fail "$prefix: man does not find $name"
	done
	man -M "$root/share/man" -P cat rift_ctx_run_mode 2>/dev/null |
		grep -q RIFT_RUN_ONCE ||
		fail "$prefix: man rift_ctx_run_mode does not show the API"
done
rm -f "$stage.log"
echo "test-install: ok: every example built and run against each of two installs"
