package payrecon

import "strings"

// Platforms on Stripe Connect keep one payments table for many accounts: a
// column (--account-column) holds each row's connected account ("acct_…"),
// NULL or empty for the platform's own. Each account is its own sweep job,
// and every Stripe request for its rows is made on its behalf
// (Stripe-Account).

// AccountPrefix starts every connected account id.
const AccountPrefix = "acct_"

// ConnectKinds are the finding kinds only a platform on Connect can have
// (its table has the account column): a single account's demo injects none.
var ConnectKinds = []Kind{KindAccountMismatch}

// IsConnectOnly reports whether k is one of ConnectKinds.
func (k Kind) IsConnectOnly() bool {
	for _, c := range ConnectKinds {
		if k == c {
			return true
		}
	}
	return false
}

// AccountJob names the sweep job of one account's rows: base itself for
// the platform's (account ""), base + "/" + account for a connected
// account's ("payments-vs-stripe/acct_1A2b…").
func AccountJob(base, account string) string {
	if account == "" {
		return base
	}
	return base + "/" + account
}

// AccountOfJob is the account whose rows job sweeps, when job is base's or
// one of its account jobs; ok is false for any other job (another base, a
// recent window).
func AccountOfJob(base, job string) (account string, ok bool) {
	if job == base {
		return "", true
	}
	rest, found := strings.CutPrefix(job, base+"/")
	if !found || !ValidAccountID(rest) {
		return "", false
	}
	return rest, true
}

// ValidAccountID reports whether s looks like a Stripe account id: acct_
// then letters and digits, at most 255 bytes in all.
func ValidAccountID(s string) bool {
	rest, ok := strings.CutPrefix(s, AccountPrefix)
	if !ok || rest == "" || len(s) > 255 {
		return false
	}
	for _, r := range rest {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}
