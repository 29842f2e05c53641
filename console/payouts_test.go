package console_test

import (
	"context"
	"encoding/csv"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/console"
	"github.com/payrecon/payrecon/internal/pgtest"
	"github.com/payrecon/payrecon/internal/simtest"
	"github.com/payrecon/payrecon/internal/testkit"
	"github.com/payrecon/payrecon/service"
	"github.com/payrecon/payrecon/stripesim"
)

// The Payouts page lists the payouts the service's own payouts round read,
// flags the one whose lines do not add up, shows a payout's lines with
// their order ids and matches, and exports the same CSV as `payrecon
// payouts export`, cells defused.
func TestPayoutsPage(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewDB(t)
	sim := simtest.Start(t, stripesim.Config{})
	old := time.Now().Add(-2 * time.Hour)
	var ps []pgtest.Payment
	for _, id := range []string{"pi_po_a", "pi_po_b", "pi_po_c"} {
		ps = append(ps, pgtest.Payment{OrderID: "=order-" + id, IntentID: id, Status: payrecon.StatusPaid, CreatedAt: old, UpdatedAt: old})
	}
	pgtest.InsertPayments(t, pool, ps)
	for _, id := range []string{"pi_po_a", "pi_po_b", "pi_po_c", "pi_po_orphan"} {
		sim.Put(stripesim.Intent{ID: id, Status: payrecon.IntentSucceeded, Created: old, Amount: 1250, Currency: "usd"})
	}
	good, err := sim.CreatePayout(stripesim.PayoutSpec{ID: "po_good", Intents: []string{"pi_po_a", "pi_po_b", "pi_po_orphan"}, Fees: []int64{40}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sim.CreatePayout(stripesim.PayoutSpec{ID: "po_bad", Intents: []string{"pi_po_c"}, AmountDelta: -3}); err != nil {
		t.Fatal(err)
	}
	cfg := serviceConfig(sim, "", &syncBuffer{})
	cfg.Payouts = service.PayoutsConfig{Interval: time.Hour, SettleAfter: payrecon.DefaultSettleAfter}
	svc, err := service.New(pool, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- svc.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("service stopped with %v", err)
		}
	})
	// The periodic round runs once at start.
	testkit.WaitFor(t, "the payouts round", 60*time.Second, func() bool {
		return pgtest.Count(t, pool, "SELECT count(*) FROM stripe_payouts WHERE lines_read_at IS NOT NULL") == 2
	})
	admin := "http://" + svc.AdminAddr()

	r := get(t, admin+"/console/payouts")
	if r.status != 200 || !strings.Contains(r.body, "po_good") || !strings.Contains(r.body, "po_bad") ||
		!strings.Contains(r.body, "lines_do_not_add_up") || !strings.Contains(r.body, "ok: lines add up") {
		t.Fatalf("payouts page %d:\n%s", r.status, r.body)
	}
	r = get(t, admin+"/console/payouts/po_good")
	if r.status != 200 || !strings.Contains(r.body, "=order-pi_po_a") || !strings.Contains(r.body, payrecon.MatchNoLocalPayment) ||
		!strings.Contains(r.body, "the payout itself") || !strings.Contains(r.body, "Gross") {
		t.Fatalf("payout page %d:\n%s", r.status, r.body)
	}
	if r := get(t, admin+"/console/payouts/po_nope"); r.status != 404 {
		t.Errorf("an unknown payout: %d", r.status)
	}

	until := time.Now().UTC().AddDate(0, 0, 7).Format(time.DateOnly) // arrival: two days after creation
	r = get(t, admin+"/console/payouts.csv?from=2020-01-01&to="+until)
	if r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "text/csv") {
		t.Fatalf("CSV %d %s", r.status, r.body)
	}
	recs, err := csv.NewReader(strings.NewReader(r.body)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(recs[0], ",") != strings.Join(console.PayoutCSVHeader, ",") {
		t.Errorf("header %v", recs[0])
	}
	// po_good: 3 charges, a fee, its own line; po_bad: a charge, its own.
	if len(recs) != 1+5+2 {
		t.Fatalf("%d CSV records:\n%s", len(recs), r.body)
	}
	var net int64
	orders := 0
	for _, rec := range recs[1:] {
		if rec[0] == "po_good" && rec[3] != "payout" {
			n, err := strconv.ParseInt(rec[7], 10, 64)
			if err != nil {
				t.Fatalf("net %q is not a number: %v", rec[7], err)
			}
			net += n
		}
		if strings.HasPrefix(rec[11], "'=order-") {
			orders++
		} else if strings.HasPrefix(rec[11], "=") {
			t.Errorf("a formula reached the CSV: %q", rec[11])
		}
	}
	if net != good.Amount || orders != 3 {
		t.Errorf("CSV net of po_good %d (payout %d), %d defused order ids", net, good.Amount, orders)
	}
	// The same file as the export of one payout, through the same writer.
	one := get(t, admin+"/console/payouts.csv?payout=po_bad")
	if n := strings.Count(one.body, "\n"); one.status != 200 || n != 3 {
		t.Errorf("one payout's CSV: %d, %d lines\n%s", one.status, n, one.body)
	}
	for _, bad := range []string{"?from=x&to=y", "?from=2026-02-02&to=2026-01-01", "?payout=ch_1", "?from=2020-01-01&to=2020-01-02&account=x"} {
		if r := get(t, admin+"/console/payouts.csv"+bad); r.status != 400 {
			t.Errorf("%s: %d", bad, r.status)
		}
	}
}
