// Package redact is payrecon's one way of showing a secret or a URL that may
// hold one: every value printed (config), logged (the start log, a failed
// delivery's warning) or stored as an error (River's job errors) goes
// through URL, Secret or SecretList first.
package redact

import (
	"net/url"
	"strings"
)

// Hidden replaces whatever is redacted.
const Hidden = "xxxxx"

// notURL is what a set value that does not parse as a URL is shown as: a
// libpq keyword/value string may hold a password anywhere in it.
const notURL = "(set; not a URL, not shown)"

// pgSafe are the connection parameters of libpq and pgx that hold no
// secret: a postgres URL shows their values. Every other parameter
// (password, sslpassword, and whatever a later version adds) is hidden.
var pgSafe = map[string]bool{
	"host": true, "hostaddr": true, "port": true, "dbname": true, "user": true, "connect_timeout": true,
	"client_encoding": true, "options": true, "application_name": true, "fallback_application_name": true,
	"keepalives": true, "keepalives_idle": true, "keepalives_interval": true, "keepalives_count": true,
	"tcp_user_timeout": true, "replication": true, "gssencmode": true, "sslmode": true, "sslnegotiation": true,
	"sslcompression": true, "sslcert": true, "sslkey": true, "sslrootcert": true, "sslcrl": true, "sslcrldir": true,
	"sslsni": true, "requirepeer": true, "ssl_min_protocol_version": true, "ssl_max_protocol_version": true,
	"krbsrvname": true, "gsslib": true, "target_session_attrs": true, "load_balance_hosts": true,
	"channel_binding": true, "search_path": true, "timezone": true,
	"pool_max_conns": true, "pool_min_conns": true, "pool_min_idle_conns": true, "pool_max_conn_lifetime": true,
	"pool_max_conn_lifetime_jitter": true, "pool_max_conn_idle_time": true, "pool_health_check_period": true,
	"statement_cache_capacity": true, "description_cache_capacity": true, "default_query_exec_mode": true,
}

func isPostgres(scheme string) bool {
	return strings.EqualFold(scheme, "postgres") || strings.EqualFold(scheme, "postgresql")
}

// URL returns a connection string or URL fit to print, keeping what tells
// one endpoint from another (scheme, host, port, path, user name) and
// hiding what could let someone in:
//
//   - the userinfo's password; and, outside postgres URLs, the whole
//     userinfo (an HTTP user name is often a key: Stripe's, a proxy's);
//   - every query value, except, in a postgres URL, the libpq and pgx
//     settings known to hold no secret (sslmode, connect_timeout, …): so
//     password, sslpassword, token, sig, key… are hidden;
//   - the fragment.
//
// "" is "(unset)"; a value that is not a URL is not shown at all.
func URL(raw string) string {
	if raw == "" {
		return "(unset)"
	}
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || u.Opaque != "" {
		return notURL
	}
	pg := isPostgres(u.Scheme)
	if u.User != nil {
		_, hasPassword := u.User.Password()
		switch {
		case !pg:
			u.User = url.User(Hidden)
		case hasPassword:
			u.User = url.UserPassword(u.User.Username(), Hidden)
		}
	}
	if u.RawQuery != "" {
		q, err := url.ParseQuery(u.RawQuery)
		if err != nil {
			u.RawQuery = Hidden
		} else {
			for k, vs := range q {
				if pg && pgSafe[strings.ToLower(k)] {
					continue
				}
				for i := range vs {
					vs[i] = Hidden
				}
			}
			u.RawQuery = q.Encode()
		}
	}
	if u.Fragment != "" || u.RawFragment != "" {
		u.Fragment, u.RawFragment = Hidden, ""
	}
	return u.String()
}

// stripePrefixes are the kinds of Stripe secrets: shown, since a test key
// and a live key, or a restricted one, are worth telling apart.
var stripePrefixes = []string{"sk_live_", "sk_test_", "rk_live_", "rk_test_", "whsec_"}

// showTailAfter is how long a Stripe secret's random part must be before
// its last four characters are shown: Stripe's are 24 and more.
const showTailAfter = 16

// Secret returns a secret fit to print: a Stripe key or signing secret
// keeps its kind and, when its random part is long enough that four
// characters say nothing useful, its last four ("sk_live_****1234"), so
// that two keys can be told apart; any other secret (a password, the
// notification secret, a short or unknown key) is "(set)". "" is
// "(unset)".
func Secret(s string) string {
	if s == "" {
		return "(unset)"
	}
	for _, p := range stripePrefixes {
		if rest, ok := strings.CutPrefix(s, p); ok && len(rest) >= showTailAfter {
			return p + "****" + rest[len(rest)-4:]
		}
	}
	return "(set)"
}

// SecretList is Secret for a comma-separated list (webhook secrets during a
// rotation), each redacted; blanks and empty items are dropped.
func SecretList(s string) string {
	if s == "" {
		return "(unset)"
	}
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, Secret(p))
		}
	}
	return strings.Join(out, ",")
}
