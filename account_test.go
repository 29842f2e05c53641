package payrecon_test

import (
	"testing"

	"github.com/payrecon/payrecon"
)

func TestAccountJobs(t *testing.T) {
	t.Parallel()
	const base = "payments-vs-stripe"
	if got := payrecon.AccountJob(base, ""); got != base {
		t.Errorf("platform job %q", got)
	}
	if got := payrecon.AccountJob(base, "acct_1Ab"); got != base+"/acct_1Ab" {
		t.Errorf("account job %q", got)
	}
	for job, want := range map[string]string{base: "", base + "/acct_1Ab": "acct_1Ab"} {
		if acct, ok := payrecon.AccountOfJob(base, job); !ok || acct != want {
			t.Errorf("AccountOfJob(%q) = %q, %v", job, acct, ok)
		}
	}
	for _, job := range []string{base + "/recent", "events", base + "/acct_", base + "/acct_a/b", "other/acct_1"} {
		if acct, ok := payrecon.AccountOfJob(base, job); ok {
			t.Errorf("AccountOfJob(%q) = %q, true", job, acct)
		}
	}
	for s, want := range map[string]bool{"acct_1Ab": true, "acct_": false, "acct_a b": false, "cus_1": false, "": false, "acct_x\n": false} {
		if payrecon.ValidAccountID(s) != want {
			t.Errorf("ValidAccountID(%q) = %v", s, !want)
		}
	}
}
