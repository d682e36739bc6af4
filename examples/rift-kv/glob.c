/*
 * glob.c - Redis's glob patterns (stringmatchlen), without its recursion.
 * See glob.h.
 */
#include <stdbool.h>

#include "glob.h"

static unsigned char fold(unsigned char c, int nocase)
{
	return nocase && c >= 'A' && c <= 'Z' ? (unsigned char)(c + 32) : c;
}

/*
 * Does the one-byte token at pat[*p] (not '*') match c?  *p moves past it
 * either way.  Byte for byte what Redis's stringmatchlen() does with a
 * token, its quirks included ("[a-]" is the range a..']').
 */
static bool token(const unsigned char *pat, size_t plen, size_t *p,
		  unsigned char c, int nocase)
{
	size_t i = *p;
	bool not, match = false;

	switch (pat[i]) {
	case '?':
		*p = i + 1;
		return true;
	case '\\':
		if (plen - i >= 2)
			i++;
		*p = i + 1;
		return fold(pat[i], nocase) == fold(c, nocase);
	case '[':
		break;
	default:
		*p = i + 1;
		return fold(pat[i], nocase) == fold(c, nocase);
	}
	i++;
	not = i < plen && pat[i] == '^';
	if (not)
		i++;
	for (;;) {
		if (i >= plen)
			break; /* unterminated: the class ends here */
		if (pat[i] == '\\' && plen - i >= 2) {
			i++;
			if (fold(pat[i], nocase) == fold(c, nocase))
				match = true;
		} else if (pat[i] == ']') {
			i++;
			break;
		} else if (plen - i >= 3 && pat[i + 1] == '-') {
			unsigned char lo = fold(pat[i], nocase);
			unsigned char hi = fold(pat[i + 2], nocase);
			unsigned char x = fold(c, nocase);

			if (lo > hi) {
				unsigned char t = lo;

				lo = hi;
				hi = t;
			}
			if (x >= lo && x <= hi)
				match = true;
			i += 2;
		} else if (fold(pat[i], nocase) == fold(c, nocase)) {
			match = true;
		}
		i++;
	}
	*p = i;
	return not ? !match : match;
}

int kv_glob_match(const char *pattern, size_t plen, const char *string,
		  size_t slen, int nocase)
{
	const unsigned char *pat = (const unsigned char *)pattern;
	const unsigned char *str = (const unsigned char *)string;
	size_t p = 0, s = 0, star_p = 0, star_s = 0;
	bool star = false;

	while (s < slen) {
		size_t next = p;

		if (p < plen && pat[p] == '*') {
			while (p < plen && pat[p] == '*')
				p++;
			if (p == plen)
				return 1;
			star = true;
			star_p = p;
			star_s = s;
			continue;
		}
		if (p < plen && token(pat, plen, &next, str[s], nocase)) {
			p = next;
			s++;
			continue;
		}
		if (!star)
			return 0;
		/* The last '*' takes one byte more, and the rest of the
		 * pattern is tried from the next byte. */
		s = ++star_s;
		p = star_p;
	}
	while (p < plen && pat[p] == '*')
		p++;
	return p == plen;
}
