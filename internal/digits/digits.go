// Package digits formats integers for people: groups of three digits with
// a separator (the CLI's "5,000", the console's thin spaces).
package digits

import (
	"strconv"
	"strings"
)

// Group writes n with sep between groups of three digits: Group(-1234567,
// ",") is "-1,234,567".
func Group(n int64, sep string) string {
	return GroupString(strconv.FormatInt(n, 10), sep)
}

// GroupString puts sep between groups of three digits of s, a decimal
// integer as text with an optional leading minus.
func GroupString(s, sep string) string {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteString(sep)
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
