package redact_test

import (
	"strings"
	"testing"

	"github.com/payrecon/payrecon/internal/redact"
)

func TestURL(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"":                                        "(unset)",
		"postgres://app:s3cret@db:5432/shop":      "postgres://app:xxxxx@db:5432/shop",
		"postgres://db/shop?password=s3cret":      "postgres://db/shop?password=xxxxx",
		"host=db user=app password=s3cret":        "(set; not a URL, not shown)",
		"http://user:s3cret@127.0.0.1:12111":      "http://user:xxxxx@127.0.0.1:12111",
		"postgres://app@127.0.0.1/shop?sslmode=x": "postgres://app@127.0.0.1/shop?sslmode=x",
	} {
		got := redact.URL(in)
		if got != want || strings.Contains(got, "s3cret") {
			t.Errorf("URL(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestAPIBase(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"":                                     "https://api.stripe.com",
		"http://127.0.0.1:12111":               "http://127.0.0.1:12111",
		"https://sk_live_s3cret@proxy:8443/v1": "https://xxxxx@proxy:8443/v1",
		"https://user:s3cret@proxy/":           "https://xxxxx@proxy/",
		"https://proxy/?token=s3cret&x=s3cret": "https://proxy/?token=xxxxx&x=xxxxx",
		"not a url with s3cret":                "(set; not a URL, not shown)",
	} {
		got := redact.APIBase(in, "https://api.stripe.com")
		if got != want || strings.Contains(got, "s3cret") {
			t.Errorf("APIBase(%q) = %q, want %q", in, got, want)
		}
	}
}
