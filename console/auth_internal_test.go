package console

import (
	"net/http"
	"testing"
)

// Rate limits apply to an IPv4 address, and to an IPv6 client's /64 (a
// machine is given a whole /64 to rotate through).
func TestClientKey(t *testing.T) {
	t.Parallel()
	for remote, want := range map[string]string{
		"127.0.0.5:1234":              "127.0.0.5",
		"[2001:db8:1:2:3:4:5:6]:443":  "2001:db8:1:2::/64",
		"[2001:db8:1:2:ffff::1]:8443": "2001:db8:1:2::/64",
		"[2001:db8:1:3::1]:443":       "2001:db8:1:3::/64",
		"[::ffff:10.0.0.1]:80":        "10.0.0.1",
		"not-an-address":              "not-an-address",
	} {
		if got := clientKey(&http.Request{RemoteAddr: remote}); got != want {
			t.Errorf("clientKey(%q) = %q, want %q", remote, got, want)
		}
	}
}
