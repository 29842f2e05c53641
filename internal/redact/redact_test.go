package redact_test

import (
	"strings"
	"testing"

	"github.com/payrecon/payrecon/internal/redact"
)

func TestURL(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"":                                   "(unset)",
		"postgres://app:s3cret@db:5432/shop": "postgres://app:xxxxx@db:5432/shop",
		"postgres://db/shop?password=s3cret": "postgres://db/shop?password=xxxxx",
		"postgresql://db/shop?sslpassword=s3cret":                                  "postgresql://db/shop?sslpassword=xxxxx",
		"postgres://app@db/shop?sslmode=require&connect_timeout=2&Password=s3cret": "postgres://app@db/shop?Password=xxxxx&connect_timeout=2&sslmode=require",
		"postgres://app@db/shop?unknown_later_setting=s3cret":                      "postgres://app@db/shop?unknown_later_setting=xxxxx",
		"host=db user=app password=s3cret":                                         "(set; not a URL, not shown)",
		"postgres://x:s3cret@[::1":                                                 "(set; not a URL, not shown)",
		"http://user:s3cret@127.0.0.1:12111":                                       "http://xxxxx@127.0.0.1:12111",
		"postgres://app@127.0.0.1/shop?sslmode=x":                                  "postgres://app@127.0.0.1/shop?sslmode=x",
		// A key as the user name of an HTTP URL is a password.
		"https://sk_live_s3cret@proxy:8443/v1": "https://xxxxx@proxy:8443/v1",
		"https://user:s3cret@proxy/":           "https://xxxxx@proxy/",
		"https://proxy/?token=s3cret&x=s3cret": "https://proxy/?token=xxxxx&x=xxxxx",
		// Outside postgres no query value is shown, whatever its name.
		"https://app.example/hook?sslmode=s3cret": "https://app.example/hook?sslmode=xxxxx",
		"https://app.example/hook#s3cret":         "https://app.example/hook#xxxxx",
		"https://app.example/hook?%zz=s3cret":     "https://app.example/hook?xxxxx",
		"mailto:s3cret@example.com":               "(set; not a URL, not shown)",
		"not a url with s3cret":                   "(set; not a URL, not shown)",
		"http://127.0.0.1:8080/hook":              "http://127.0.0.1:8080/hook",
	} {
		got := redact.URL(in)
		if got != want || strings.Contains(got, "s3cret") {
			t.Errorf("URL(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSecret(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"":                                     "(unset)",
		"sk_live_abcdefghijklmnop1234":         "sk_live_****1234",
		"rk_test_abcdefghijklmnop9876":         "rk_test_****9876",
		"whsec_oldoldoldold9999":               "whsec_****9999",
		"sk_live_short1234":                    "(set)",
		"Summer2024_!x":                        "(set)",
		"correct horse battery staple":         "(set)",
		"my_very_long_notification_secret_abc": "(set)",
	} {
		if got := redact.Secret(in); got != want {
			t.Errorf("Secret(%q) = %q, want %q", in, got, want)
		}
	}
	if got := redact.SecretList(" whsec_oldoldoldold9999, ,Summer2024_!x"); got != "whsec_****9999,(set)" {
		t.Errorf("SecretList = %q", got)
	}
}

// FuzzURL: whatever surrounds it, a secret planted where secrets go (the
// userinfo's password, a password or token parameter) is never in the
// output.
func FuzzURL(f *testing.F) {
	for _, s := range []string{"postgres://a:b@h/d?sslmode=disable", "https://h/?t=1#f", "http://h/p?a=1&b=2",
		"postgres://h/d?sslpassword=x&sslmode=disable", "h:5432/d", "x@y/z?password="} {
		f.Add(s)
	}
	const planted = "PLANTED9"
	f.Fuzz(func(t *testing.T, s string) {
		if strings.Contains(s, planted) {
			return
		}
		for _, in := range []string{
			"https://u:" + planted + "@" + s, "postgres://u:" + planted + "@" + s,
			"postgres://h/d?password=" + planted + "&" + s, "http://h/?" + s + "&token=" + planted,
			"postgres://h/d?" + s + "&sslpassword=" + planted,
		} {
			if got := redact.URL(in); strings.Contains(got, planted) {
				t.Errorf("URL(%q) = %q", in, got)
			}
		}
	})
}
