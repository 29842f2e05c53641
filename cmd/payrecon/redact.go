package main

import "net/url"

// redactURL hides a connection string's password.
func redactURL(raw string) string {
	if raw == "" {
		return "(unset)"
	}
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" {
		return "(set; not a URL, not shown)"
	}
	// url.URL.Redacted hides the userinfo password; libpq also accepts one
	// as a query parameter.
	q := u.Query()
	if q.Has("password") {
		q.Set("password", "xxxxx")
		u.RawQuery = q.Encode()
	}
	return u.Redacted()
}
