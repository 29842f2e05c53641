package action_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/action"
	"github.com/payrecon/payrecon/internal/pgtest"
	"github.com/payrecon/payrecon/postgres"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// pgx pools of finished tests close their connections asynchronously.
		goleak.IgnoreTopFunction("github.com/jackc/pgx/v5/pgxpool.(*Pool).backgroundHealthCheck"),
	)
}

// A resolution is one statement: with By.Audit the audit entry is written
// with it, without it none; a resolved finding is not resolved twice, and
// a missing one is ErrNotFound.
func TestResolveAuditIsAnOptionOfOneStatement(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewDB(t)
	ids := pgtest.InsertPayments(t, pool, []pgtest.Payment{{IntentID: "pi_resolve_0", Status: payrecon.StatusPaid}})
	for _, kind := range []string{"paid_locally_not_externally", "amount_mismatch"} {
		pgtest.Exec(t, pool, `INSERT INTO reconciliation_findings (payment_id, kind, local_status, external_status)
			VALUES ($1, $2, 'paid', 'canceled')`, ids[0], kind)
	}
	acts, err := action.New(pool, action.Config{Clock: fixedClock{time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}})
	if err != nil {
		t.Fatal(err)
	}
	f, err := acts.Resolve(ctx, 1, action.By{Operator: "alice", Audit: true}, "refunded by hand")
	if err != nil || f.Open() || f.ResolvedBy != "alice" || *f.Resolution != payrecon.ResolvedOperator {
		t.Fatalf("Resolve with audit = %+v, %v", f, err)
	}
	if n := pgtest.Count(t, pool, "SELECT count(*) FROM console_audit WHERE finding_id = 1 AND action = 'resolve' AND operator = 'alice' AND note = 'refunded by hand'"); n != 1 {
		t.Errorf("%d audit entries for the audited resolution, want 1", n)
	}
	if _, err := acts.Resolve(ctx, 2, action.By{Operator: "bob"}, "cli"); err != nil {
		t.Fatal(err)
	}
	if n := pgtest.Count(t, pool, "SELECT count(*) FROM console_audit WHERE finding_id = 2"); n != 0 {
		t.Errorf("%d audit entries for a resolution without audit, want 0", n)
	}
	if _, err := acts.Resolve(ctx, 1, action.By{Operator: "bob", Audit: true}, "again"); !errors.Is(err, postgres.ErrAlreadyResolved) {
		t.Errorf("resolving a resolved finding = %v, want ErrAlreadyResolved", err)
	}
	if n := pgtest.Count(t, pool, "SELECT count(*) FROM console_audit"); n != 1 {
		t.Errorf("%d audit entries after a refused resolution, want 1", n)
	}
	if _, err := acts.Resolve(ctx, 99, action.By{Operator: "bob", Audit: true}, "none"); !errors.Is(err, payrecon.ErrNotFound) {
		t.Errorf("resolving a missing finding = %v, want ErrNotFound", err)
	}
}

type fixedClock struct{ t time.Time }

func (c fixedClock) Now() time.Time { return c.t }
