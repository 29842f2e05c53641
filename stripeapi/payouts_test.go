package stripeapi_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/internal/simtest"
	"github.com/payrecon/payrecon/stripeapi"
	"github.com/payrecon/payrecon/stripesim"
)

// settle stores n succeeded intents, refunds the second in part, disputes
// the third, and settles them all in one payout with a fee line.
func settle(t *testing.T, sim *stripesim.Server, n int) stripesim.Payout {
	t.Helper()
	ids := make([]string, n)
	for i := range ids {
		in, err := sim.Create(stripesim.Intent{Amount: 2000 + int64(i), Status: payrecon.IntentSucceeded})
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = in.ID
	}
	if _, err := sim.Refund(ids[1], 500); err != nil {
		t.Fatal(err)
	}
	if _, err := sim.Dispute(ids[2]); err != nil {
		t.Fatal(err)
	}
	po, err := sim.CreatePayout(stripesim.PayoutSpec{Intents: ids, Fees: []int64{100}})
	if err != nil {
		t.Fatal(err)
	}
	return po
}

// The reader pages through a payout's lines with their sources expanded:
// every charge, refund and dispute names its PaymentIntent and charge, the
// lines add up to the payout's amount, and one request reads 100 lines.
func TestPayoutLinesRead(t *testing.T) {
	t.Parallel()
	b := setup(t, stripesim.Config{}, nil)
	po := settle(t, b.sim, 150)
	ctx := context.Background()
	page, err := b.gw.ListPayouts(ctx, payrecon.PayoutQuery{})
	if err != nil || len(page.Payouts) != 1 || page.HasMore {
		t.Fatalf("%+v %v", page, err)
	}
	p := page.Payouts[0]
	if p.ID != po.ID || p.Amount != po.Amount || !p.Automatic || p.Status != payrecon.PayoutPaid || !p.Itemisable() ||
		p.Created.IsZero() || p.ArrivalDate.Before(p.Created) || p.Account != "" {
		t.Errorf("payout %+v, sim %+v", p, po)
	}
	got, err := b.gw.RetrievePayout(ctx, "", po.ID)
	if err != nil || got != p {
		t.Errorf("retrieved %+v %v, listed %+v", got, err, p)
	}
	var lines []payrecon.PayoutLine
	q := payrecon.PayoutLineQuery{PayoutID: po.ID}
	requests := 0
	for {
		pg, err := b.gw.ListPayoutLines(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		requests++
		lines = append(lines, pg.Lines...)
		if !pg.HasMore {
			break
		}
		q.StartingAfter = pg.Lines[len(pg.Lines)-1].ID
	}
	// 150 charges, a refund, a dispute, a fee, the payout's own.
	if len(lines) != 154 || requests != 2 {
		t.Fatalf("%d lines in %d requests", len(lines), requests)
	}
	byType := map[string]int{}
	for _, l := range lines {
		byType[l.Type]++
		switch l.Type {
		case "charge", "refund", "adjustment":
			if !strings.HasPrefix(l.IntentID, "pi_") || !strings.HasPrefix(l.ChargeID, "ch_") || l.SourceID == "" {
				t.Errorf("%s line %s: intent %q, charge %q, source %q", l.Type, l.ID, l.IntentID, l.ChargeID, l.SourceID)
			}
		case "stripe_fee":
			if l.IntentID != "" || l.SourceID != "" || l.Amount != -100 {
				t.Errorf("fee line %+v", l)
			}
		case "payout":
			if !l.OwnLine() || l.Amount != -po.Amount {
				t.Errorf("own line %+v", l)
			}
		}
		if l.PayoutID != po.ID || l.Currency != "usd" || l.Created.IsZero() || l.Net != l.Amount-l.Fee {
			t.Errorf("line %+v", l)
		}
	}
	if want := "map[adjustment:1 charge:150 payout:1 refund:1 stripe_fee:1]"; fmt.Sprint(byType) != want {
		t.Errorf("lines by type %v, want %s", byType, want)
	}
	if tot := payrecon.TotalsOf(payrecon.SumPayoutLines(lines)); tot.Net != po.Amount || tot.Refunds != -500 || tot.Disputes >= 0 {
		t.Errorf("totals %+v, payout %d", tot, po.Amount)
	}
	_, outcomes := b.rec.snapshot()
	if want := "[balance_transactions:ok balance_transactions:ok payouts:ok payouts:ok]"; fmt.Sprint(outcomes) != want {
		t.Errorf("metrics %v, want %s", outcomes, want)
	}
	if _, err := b.gw.RetrievePayout(ctx, "", "po_nope"); !errors.Is(err, payrecon.ErrNotFound) {
		t.Errorf("an unknown payout: %v", err)
	}
}

// A key without Payouts: Read or Balance: Read fails with a configuration
// error naming the permission as the Dashboard does.
func TestPayoutPermissionsNamed(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ missing, want string }{
		{stripesim.PermissionPayoutRead, "Payouts: Read"},
		{stripesim.PermissionBalanceRead, "Balance: Read"},
	} {
		b := setup(t, stripesim.Config{Faults: stripesim.Faults{MissingPermissions: []string{tc.missing}}}, nil)
		err := b.gw.CheckPayoutAccess(context.Background(), "")
		if c := configError(t, err); c.StatusCode != http.StatusForbidden || !strings.Contains(c.Cause, tc.want) {
			t.Errorf("without %s: %+v", tc.missing, c)
		}
	}
	b := setup(t, stripesim.Config{}, nil)
	if err := b.gw.CheckPayoutAccess(context.Background(), ""); err != nil {
		t.Errorf("with every permission: %v", err)
	}
}

// Every request for a connected account carries its Stripe-Account header,
// and a request for the platform none.
func TestPayoutReadsCarryTheAccount(t *testing.T) {
	t.Parallel()
	sim := simtest.Start(t, stripesim.Config{})
	po := settle(t, sim, 3)
	var (
		mu   sync.Mutex
		seen []string
	)
	client := newClient(t)
	base := client.Transport
	client.Transport = roundTripFunc(func(r *http.Request) (*http.Response, error) {
		mu.Lock()
		seen = append(seen, r.URL.Path+" "+r.Header.Get("Stripe-Account"))
		mu.Unlock()
		return base.RoundTrip(r)
	})
	gw, err := stripeapi.New(stripeapi.Config{SecretKey: sim.SecretKey(), APIBase: sim.URL(), HTTPClient: client})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, acct := range []string{"acct_1", ""} {
		if _, err := gw.ListPayouts(ctx, payrecon.PayoutQuery{Account: acct}); err != nil {
			t.Fatal(err)
		}
		if _, err := gw.RetrievePayout(ctx, acct, po.ID); err != nil {
			t.Fatal(err)
		}
		pg, err := gw.ListPayoutLines(ctx, payrecon.PayoutLineQuery{Account: acct, PayoutID: po.ID})
		if err != nil {
			t.Fatal(err)
		}
		if pg.Lines[0].Account != acct {
			t.Errorf("line account %q, want %q", pg.Lines[0].Account, acct)
		}
	}
	want := fmt.Sprintf("[/v1/payouts acct_1 /v1/payouts/%s acct_1 /v1/balance_transactions acct_1 /v1/payouts  /v1/payouts/%s  /v1/balance_transactions ]", po.ID, po.ID)
	if fmt.Sprint(seen) != want {
		t.Errorf("requests %v\nwant %s", seen, want)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// A proxy that drops expand[] makes every source an id: the reader refuses
// the page rather than take every payment for unsettled.
func TestPayoutLinesUnexpandedRefused(t *testing.T) {
	t.Parallel()
	sim := simtest.Start(t, stripesim.Config{})
	po := settle(t, sim, 3)
	target, _ := url.Parse(sim.URL())
	proxy := httputil.NewSingleHostReverseProxy(target)
	strip := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		for k := range q {
			if strings.HasPrefix(k, "expand") {
				q.Del(k)
			}
		}
		r.URL.RawQuery = q.Encode()
		proxy.ServeHTTP(w, r)
	})
	srv := httptest.NewServer(strip)
	t.Cleanup(srv.Close)
	gw, err := stripeapi.New(stripeapi.Config{SecretKey: sim.SecretKey(), APIBase: srv.URL, HTTPClient: newClient(t), Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	_, err = gw.ListPayoutLines(context.Background(), payrecon.PayoutLineQuery{PayoutID: po.ID})
	if c := configError(t, err); !strings.Contains(c.Cause, "unexpanded") {
		t.Errorf("%+v", c)
	}
}
