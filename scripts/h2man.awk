# h2man.awk - rift(3) from include/rift.h, the reference manual: the
# header's opening comment is the DESCRIPTION, each of its banner sections
# ("Errors", "Connections", ...) a section of the page, shown as written
# (contracts above declarations), without the include guards.
# scripts/man.sh runs it.
#
#   expand include/rift.h | awk -v version=V -v summary=S -v see=S \
#       -f scripts/h2man.awk > rift.3
#   expand include/rift.h | awk -v list=1 -f scripts/h2man.awk
#       the names to link to rift(3): functions, function-like macros and
#       typedefs, one a line

function out(s) {
	gsub(/\\/, "\\e", s)
	gsub(/-/, "\\-", s)
	if (s ~ /^[.']/)
		s = "\\&" s
	print s
}

# Preformatted text: one block per section, blank lines as they are.
function open_block() {
	if (!inblock) {
		# the header is 80 columns wide: from the margin, it fits a
		# terminal of 80
		print ".nf"
		print ".in 0"
		inblock = 1
	}
}

function close_block() {
	if (inblock) {
		print ".fi"
		inblock = 0
	}
}

function section(title) {
	close_block()
	print ".SH \"" toupper(title) "\""
	pending_blank = 0
}

function body(s) {
	if (s ~ /^[ \t]*$/) {
		if (inblock)
			pending_blank = 1
		return
	}
	open_block()
	if (pending_blank)
		print ""
	pending_blank = 0
	out(s)
}

list {
	if ($0 ~ /^typedef (struct|enum) rift_[a-z0-9_]+/) {
		name = $3
		print name
	} else if ($0 ~ /^#define rift_[a-z0-9_]+\(/) {
		name = $2
		sub(/\(.*/, "", name)
		print name
	} else if ($0 ~ /^[a-z]/ && $0 !~ /^typedef/ &&
		   match($0, /[ *]rift_[a-z0-9_]+\(/)) {
		name = substr($0, RSTART + 1, RLENGTH - 2)
		if (name !~ /^rift__/)
			print name
	}
	next
}

NR == 1 {
	print ".\\\" Generated from include/rift.h by scripts/h2man.awk; edit that."
	print ".TH RIFT 3 \"\" \"rift " version "\" \"rift manual\""
	print ".nh"
	print ".SH NAME"
	print "rift \\- " summary
	print ".SH SYNOPSIS"
	print ".nf"
	print "\\fB#include <rift.h>\\fR"
	print ""
	out("cc app.c $(pkg-config --cflags --libs rift)")
	print ".fi"
	print ".PP"
	out("Every function and type below has a page of its own name that " \
	    "is this one (man rift_ctx_run_mode).")
	section("Description")
	intro = 1
	next
}

# The opening comment, without its "rift.h - ..." line and stars.
intro {
	if ($0 ~ /^ \*\//) {
		intro = 0
		section("Library version")
		next
	}
	if ($0 ~ /^ \* rift\.h - /)
		next
	line = $0
	sub(/^ \* ?/, "", line)
	sub(/^ \*$/, "", line)
	body(line)
	next
}

# Include guards, C++ linkage and standard includes are not the API.
/^#(ifndef|ifdef|endif|include)/ || /^#define RIFT_H$/ ||
/^extern "C" \{$/ || /^}$/ { next }

/^\/\* -+ \*\/$/ { prev = $0; next }

/^\/\* [A-Z][^*]* +\*\/$/ && prev ~ /^\/\* -+ \*\/$/ {
	t = $0
	sub(/^\/\* /, "", t)
	sub(/ +\*\/$/, "", t)
	section(t)
	prev = $0
	next
}

{
	body($0)
	prev = $0
}

END {
	if (list)
		exit
	close_block()
	print ".SH \"SEE ALSO\""
	out(see)
}
