package main

import (
	"os"
	"testing"

	"github.com/payrecon/payrecon/internal/pgtest"
)

// stripeMockURL returns Stripe's own stripe-mock (started by scripts/test),
// skipping the test when it is absent, unless CI requires it.
func stripeMockURL(t *testing.T) string {
	t.Helper()
	u := os.Getenv("STRIPE_MOCK_URL")
	if u == "" {
		if os.Getenv("PAYRECON_REQUIRE_STRIPE_MOCK") == "1" {
			t.Fatal("STRIPE_MOCK_URL is not set but PAYRECON_REQUIRE_STRIPE_MOCK=1: run the tests through scripts/test")
		}
		t.Skip("STRIPE_MOCK_URL not set (scripts/test starts stripe-mock)")
	}
	return u
}

// The built binary against stripe-mock, in every mode. stripe-mock answers
// every id with the same requires_payment_method fixture and lists a fixture
// created in 2009 whatever the filter: pending rows are in sync, paid rows
// paid_locally_not_externally, and the listed fixture (outside every window)
// is never reported missing_locally.
func TestScanAgainstStripeMock(t *testing.T) {
	t.Parallel()
	mock := stripeMockURL(t)
	for _, mode := range []string{"retrieve", "list", "auto"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			b.env["STRIPE_API_BASE"] = mock
			b.env["STRIPE_SECRET_KEY"] = "sk_test_123"
			rows := make([][2]string, 0, 40)
			for i := 0; i < 40; i++ {
				local := "pending"
				if i%4 == 0 {
					local = "paid"
				}
				rows = append(rows, [2]string{local, ""})
			}
			b.seed(t, rows)
			r := startBinary(t, b.env, "scan", "--once", "--mode", mode, "--rps", "0", "--batch", "15")
			if code, ok := r.wait(t, 60e9); !ok || code != 0 {
				t.Fatalf("scan exit %d (finished %v):\n%s", code, ok, r.stderr.String())
			}
			pool := pgtestPool(t, b.url)
			if n := pgtest.Count(t, pool, "SELECT count(*) FROM payments WHERE last_reconciled_at IS NULL OR observed_external_status <> 'requires_payment_method'"); n != 0 {
				t.Errorf("%d rows not verified as requires_payment_method", n)
			}
			if n := pgtest.Count(t, pool, "SELECT count(*) FROM reconciliation_findings WHERE kind = 'paid_locally_not_externally'"); n != 10 {
				t.Errorf("%d paid_locally_not_externally findings, want 10", n)
			}
			if n := pgtest.Count(t, pool, "SELECT count(*) FROM reconciliation_findings WHERE kind <> 'paid_locally_not_externally'"); n != 0 {
				t.Errorf("%d other findings (stripe-mock's fixture must not become missing_locally)", n)
			}
		})
	}
}
