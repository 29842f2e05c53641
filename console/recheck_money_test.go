package console_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/internal/pgtest"
	"github.com/payrecon/payrecon/internal/simtest"
	"github.com/payrecon/payrecon/internal/testkit"
	"github.com/payrecon/payrecon/postgres"
	"github.com/payrecon/payrecon/service"
	"github.com/payrecon/payrecon/stripesim"
)

// The console's Recheck judges money as the sweep and `payrecon findings
// recheck` do (one finding-actions component): an amount_mismatch whose
// local amount was fixed heals when an operator rechecks it from the
// console; a currency_mismatch whose drift stands stays open.
func TestConsoleRecheckJudgesMoney(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewDB(t)
	sim := simtest.Start(t, stripesim.Config{})
	old := time.Now().Add(-2 * time.Hour)
	pgtest.Exec(t, pool, "ALTER TABLE payments ADD COLUMN amount integer, ADD COLUMN currency varchar(3)")
	ids := pgtest.InsertPayments(t, pool, []pgtest.Payment{
		{OrderID: "order-amount", IntentID: "pi_money_amount", Status: payrecon.StatusPaid, CreatedAt: old, UpdatedAt: old},
		{OrderID: "order-currency", IntentID: "pi_money_currency", Status: payrecon.StatusPaid, CreatedAt: old, UpdatedAt: old},
	})
	for _, id := range []string{"pi_money_amount", "pi_money_currency"} {
		sim.Put(stripesim.Intent{ID: id, Status: payrecon.IntentSucceeded, Created: old, Amount: 1000, Currency: "usd"})
	}
	pgtest.Exec(t, pool, "UPDATE payments SET amount = 1000, currency = 'USD'")
	pgtest.Exec(t, pool, "UPDATE payments SET amount = 999 WHERE id = $1", ids[0])
	pgtest.Exec(t, pool, "UPDATE payments SET currency = 'EUR' WHERE id = $1", ids[1])

	cols, err := postgres.DetectMoneyColumns(ctx, pool, "amount", "currency")
	if err != nil {
		t.Fatal(err)
	}
	if !cols.Amount || !cols.Currency {
		t.Fatalf("money columns not detected: %+v", cols)
	}
	cfg := serviceConfig(sim, password, &syncBuffer{})
	cfg.MoneyColumns = cols
	cfg.Sweep.Money = cols.Checks(nil)
	svc, err := service.New(pool, cfg)
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- svc.Run(runCtx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("service stopped with %v", err)
		}
	})
	testkit.WaitFor(t, "the service to listen", 30*time.Second, func() bool { return svc.AdminAddr() != "" })
	admin := "http://" + svc.AdminAddr()
	openOf := func(kind string) int {
		return pgtest.Count(t, pool, "SELECT count(*) FROM reconciliation_findings WHERE kind = $1 AND resolved_at IS NULL", kind)
	}
	testkit.WaitFor(t, "the sweep's money findings", 60*time.Second, func() bool {
		return openOf("amount_mismatch") == 1 && openOf("currency_mismatch") == 1
	})
	amount := int64(pgtest.Count(t, pool, "SELECT id FROM reconciliation_findings WHERE kind = 'amount_mismatch'"))
	currency := int64(pgtest.Count(t, pool, "SELECT id FROM reconciliation_findings WHERE kind = 'currency_mismatch'"))

	// The amount is fixed in the row; the currency is not.
	pgtest.Exec(t, pool, "UPDATE payments SET amount = 1000 WHERE id = $1", ids[0])
	c := login(t, admin, "alice")
	recheck := func(id int64) string {
		t.Helper()
		page := get(t, fmt.Sprintf("%s/console/findings/%d", admin, id), c)
		r := post(t, fmt.Sprintf("%s/console/findings/%d/recheck", admin, id), url.Values{"csrf": {csrfOf(t, page.body)}}, nil, c)
		if r.status != http.StatusSeeOther {
			t.Fatalf("recheck %d = %d %s", id, r.status, r.body)
		}
		return get(t, admin+r.header.Get("Location"), append(r.cookie, c)...).body
	}
	if body := recheck(amount); !strings.Contains(body, "resolved: healed") {
		t.Errorf("the recheck of the fixed amount_mismatch did not say it healed:\n%s", body)
	}
	if n := pgtest.Count(t, pool, "SELECT count(*) FROM reconciliation_findings WHERE id = $1 AND resolution = 'healed'", amount); n != 1 {
		t.Error("a console recheck left the amount_mismatch open after the row's amount was fixed")
	}
	recheck(currency)
	if n := pgtest.Count(t, pool, "SELECT count(*) FROM reconciliation_findings WHERE id = $1 AND resolved_at IS NULL", currency); n != 1 {
		t.Error("a console recheck closed the currency_mismatch while the drift stands")
	}
	for _, id := range []int64{amount, currency} {
		if n := pgtest.Count(t, pool, "SELECT count(*) FROM console_audit WHERE finding_id = $1 AND action = 'recheck' AND operator = 'alice'", id); n != 1 {
			t.Errorf("the recheck of finding %d is not audited", id)
		}
	}
}
