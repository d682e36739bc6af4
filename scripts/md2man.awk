# md2man.awk - a man page from one of rift's markdown documents, so that
# docs/*.md stay the one source of both (scripts/man.sh runs it).
#
#   expand docs/X.md | awk -v version=0.1.0 -v src=docs/X.md \
#       -v see='rift(3), ...' -f scripts/md2man.awk > X.N
#
# The document's first line names the page:
#   <!-- man: NAME SECTION one-line summary -->
# It handles the markdown these documents use, no more: headings (# is the
# document's title, ## a section, ### a subsection), paragraphs, fenced
# code, bullet and numbered lists, tables (as tagged paragraphs: a row's
# first cell is the tag, its other cells "header: cell" lines, since a
# terminal has no room for seven columns), `code`, **bold**, *emphasis*
# and [links](target).  Non-ASCII text is left to preconv(1), which man(1)
# runs.

function out(s) {
	# a text line must not start a request
	if (s ~ /^[.']/)
		s = "\\&" s
	print s
}

function esc(s) {
	gsub(/\\/, "\\e", s)
	return s
}

# Emphasis and links in text outside code spans.
function prose(s,    t, u, rep) {
	while (match(s, /\*[^* ][^*]*\*/))
		s = substr(s, 1, RSTART - 1) "\\fI" \
		    substr(s, RSTART + 1, RLENGTH - 2) "\\fR" \
		    substr(s, RSTART + RLENGTH)
	while (match(s, /\[[^]]*\]\([^)]*\)/)) {
		t = substr(s, RSTART, RLENGTH)
		u = t
		sub(/^\[[^]]*\]\(/, "", u)
		sub(/\)$/, "", u)
		sub(/\]\(.*$/, "", t)
		sub(/^\[/, "", t)
		rep = t
		if (u ~ /^https?:/)
			rep = t " <" u ">"
		s = substr(s, 1, RSTART - 1) rep substr(s, RSTART + RLENGTH)
	}
	return s
}

# Inline markdown of one block of text to roff.
function inline(s,    n, parts, i, r) {
	s = esc(s)
	while (match(s, /\*\*[^*]+\*\*/))
		s = substr(s, 1, RSTART - 1) "\\fB" \
		    substr(s, RSTART + 2, RLENGTH - 4) "\\fR" \
		    substr(s, RSTART + RLENGTH)
	n = split(s, parts, "`")
	r = ""
	for (i = 1; i <= n; i++) {
		if (i % 2 == 0 && i < n) {
			gsub(/-/, "\\-", parts[i])
			r = r "\\fB" parts[i] "\\fR"
		} else {
			r = r (i % 2 == 0 ? "`" : "") prose(parts[i])
		}
	}
	return r
}

function trim(s) {
	sub(/^[ \t]+/, "", s)
	sub(/[ \t]+$/, "", s)
	return s
}

# Write out the paragraph or list item being gathered.
function flush() {
	if (text == "")
		return
	if (kind == "bullet")
		print ".IP \\(bu 2"
	else if (kind == "number")
		print ".IP " tag " 4"
	else if (kind == "initem")
		print ".IP \"\" " indent
	else
		print ".PP"
	out(inline(text))
	text = ""
}

function cells(line, arr,    n, i) {
	gsub(/\\\|/, "\001", line)
	sub(/^[ \t]*\|/, "", line)
	sub(/\|[ \t]*$/, "", line)
	n = split(line, arr, "|")
	for (i = 1; i <= n; i++) {
		gsub(/\001/, "|", arr[i])
		arr[i] = trim(arr[i])
	}
	return n
}

function table_row(line,    n, c, i) {
	n = cells(line, c)
	if (nhead == 0) {
		nhead = n
		for (i = 1; i <= n; i++)
			head[i] = c[i]
		return
	}
	if (line ~ /^[ \t]*\|[ \t]*:?-/)
		return
	print ".TP"
	out(inline(c[1]))
	if (nhead == 2) {
		out(inline(c[2]))
		return
	}
	for (i = 2; i <= n; i++) {
		if (c[i] == "")
			continue
		out(inline(head[i] ": " c[i]))
		if (i < n)
			print ".br"
	}
}

BEGIN {
	kind = ""
	text = ""
	blank = 1
	fence = 0
	titled = 0
	nhead = 0
}

NR == 1 {
	if ($0 !~ /^<!-- man: [^ ]+ [1-9] .* -->$/) {
		print src ": first line is not <!-- man: NAME SECTION summary -->" \
		    > "/dev/stderr"
		exit 1
	}
	name = $3
	section = $4
	summary = $0
	sub(/^<!-- man: [^ ]+ [1-9] /, "", summary)
	sub(/ -->$/, "", summary)
	print ".\\\" Generated from " src " by scripts/md2man.awk; edit that."
	print ".TH \"" toupper(name) "\" " section " \"\" \"rift " version \
	    "\" \"rift manual\""
	print ".nh"
	print ".SH NAME"
	out(esc(name) " \\- " esc(summary))
	print ".SH DESCRIPTION"
	next
}

fence {
	if ($0 ~ /^[ \t]*```/) {
		fence = 0
		print ".fi"
		print ".RE"
		next
	}
	line = esc($0)
	gsub(/-/, "\\-", line)
	out(line)
	next
}

/^[ \t]*```/ {
	flush()
	nhead = 0
	fence = 1
	print ".PP"
	print ".RS " (kind != "" ? 6 : 4)
	print ".nf"
	blank = 0
	next
}

/^<!--.*-->[ \t]*$/ { next }

/^[ \t]*$/ {
	flush()
	nhead = 0
	blank = 1
	next
}

/^#+ / {
	flush()
	nhead = 0
	kind = ""
	level = index($0, " ") - 1
	h = $0
	sub(/^#+ +/, "", h)
	if (level == 1 && !titled) {
		titled = 1
	} else if (level <= 2) {
		print ".SH \"" inline(toupper(h)) "\""
	} else {
		print ".SS \"" inline(h) "\""
	}
	blank = 0
	next
}

/^[ \t]*\|/ {
	flush()
	kind = ""
	table_row($0)
	blank = 0
	next
}

/^[-*] / || (/^[0-9]+\. / && (blank || kind != "")) {
	flush()
	nhead = 0
	if ($0 ~ /^[-*] /) {
		kind = "bullet"
		indent = 2
	} else {
		kind = "number"
		tag = $1
		indent = 4
	}
	text = $0
	sub(/^([-*]|[0-9]+\.) +/, "", text)
	blank = 0
	next
}

{
	line = trim($0)
	if (text == "") {
		# a paragraph of its own: in a list when indented under it
		if (kind != "" && $0 ~ /^[ \t]/ && blank)
			kind = "initem"
		else if (kind != "" && blank)
			kind = ""
		text = line
	} else {
		text = text " " line
	}
	blank = 0
}

END {
	flush()
	if (see != "") {
		print ".SH \"SEE ALSO\""
		out(see)
	}
}
