// Package redact hides secrets in what payrecon prints and logs.
package redact

import "net/url"

// URL returns a connection string or base URL fit to print: the password
// of its userinfo (and a libpq password query parameter) replaced by
// "xxxxx". A string that is not a URL is not shown at all (a libpq
// keyword/value string may hold a password anywhere); "" is "(unset)".
func URL(raw string) string {
	if raw == "" {
		return "(unset)"
	}
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" {
		return "(set; not a URL, not shown)"
	}
	q := u.Query()
	if q.Has("password") {
		q.Set("password", "xxxxx")
		u.RawQuery = q.Encode()
	}
	return u.Redacted()
}

// APIBase returns a base URL (STRIPE_API_BASE) fit to print: its whole
// userinfo (a key passed as the user name is as secret as a password) and
// every query value replaced by "xxxxx"; "" is the default, shown as dflt.
// A string that is not a URL is not shown.
func APIBase(raw, dflt string) string {
	if raw == "" {
		return dflt
	}
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" {
		return "(set; not a URL, not shown)"
	}
	if u.User != nil {
		u.User = url.User("xxxxx")
	}
	if u.RawQuery != "" {
		q := u.Query()
		for k := range q {
			q.Set(k, "xxxxx")
		}
		u.RawQuery = q.Encode()
	}
	return u.String()
}
