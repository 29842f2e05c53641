package stripesim_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/stripesim"
)

type btBody struct {
	ID                string          `json:"id"`
	Object            string          `json:"object"`
	Type              string          `json:"type"`
	ReportingCategory string          `json:"reporting_category"`
	Amount            int64           `json:"amount"`
	Fee               int64           `json:"fee"`
	Net               int64           `json:"net"`
	Source            json.RawMessage `json:"source"`
}

type btList struct {
	Data    []btBody `json:"data"`
	HasMore bool     `json:"has_more"`
}

func (b *testBundle) balanceTransactions(t testing.TB, path string) btList {
	t.Helper()
	r := b.get(t, path)
	if r.status != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, r.status, r.body)
	}
	var l btList
	if err := json.Unmarshal(r.body, &l); err != nil {
		t.Fatal(err)
	}
	return l
}

// succeeded stores n succeeded intents, the i-th for 1000+i, and returns
// their ids.
func succeeded(t testing.TB, sim *stripesim.Server, n int, prefix string) []string {
	t.Helper()
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("pi_%s%03d", prefix, i)
		if _, err := sim.Create(stripesim.Intent{ID: ids[i], Amount: 1000 + int64(i), Status: payrecon.IntentSucceeded}); err != nil {
			t.Fatal(err)
		}
	}
	return ids
}

// An automatic payout lists its charges, refunds, disputes, fees,
// adjustments and its own line, which add up to its amount; sources
// expand; pages follow each other; a charge is settled once.
func TestPayoutLines(t *testing.T) {
	t.Parallel()
	b := setup(t, stripesim.Config{})
	ids := succeeded(t, b.sim, 5, "a")
	if _, err := b.sim.Refund(ids[1], 300); err != nil {
		t.Fatal(err)
	}
	if _, err := b.sim.Dispute(ids[2]); err != nil {
		t.Fatal(err)
	}
	po, err := b.sim.CreatePayout(stripesim.PayoutSpec{ID: "po_a", Intents: ids, Fees: []int64{200}, Adjustments: []int64{-50}})
	if err != nil {
		t.Fatal(err)
	}
	// 5 charges, 1 refund, 1 dispute, 1 fee, 1 adjustment, its own.
	if po.Lines != 10 || !po.Automatic || po.Status != payrecon.PayoutPaid || po.ReconciliationStatus != "completed" {
		t.Fatalf("payout %+v", po)
	}
	var all []btBody
	after := ""
	for pages := 0; ; pages++ {
		path := "/v1/balance_transactions?payout=po_a&limit=3&expand[]=data.source"
		if after != "" {
			path += "&starting_after=" + after
		}
		l := b.balanceTransactions(t, path)
		all = append(all, l.Data...)
		if !l.HasMore {
			break
		}
		after = l.Data[len(l.Data)-1].ID
		if pages > 10 {
			t.Fatal("pages never end")
		}
	}
	if len(all) != 10 {
		t.Fatalf("%d lines listed, want 10", len(all))
	}
	var sum, own int64
	cats := map[string]int{}
	for _, l := range all {
		if l.Net != l.Amount-l.Fee {
			t.Errorf("%s: net %d ≠ amount %d − fee %d", l.ID, l.Net, l.Amount, l.Fee)
		}
		cats[l.ReportingCategory]++
		if l.Type == "payout" {
			own = l.Amount
			continue
		}
		sum += l.Net
		var src struct {
			Object        string `json:"object"`
			PaymentIntent string `json:"payment_intent"`
		}
		if err := json.Unmarshal(l.Source, &src); err != nil {
			t.Fatalf("%s: source %s: %v", l.ID, l.Source, err)
		}
		if want := map[string]string{"charge": "charge", "refund": "refund", "dispute": "dispute"}[l.ReportingCategory]; src.Object != want || (want != "" && src.PaymentIntent == "") {
			t.Errorf("%s (%s): source %s", l.ID, l.ReportingCategory, l.Source)
		}
	}
	if sum != po.Amount || own != -po.Amount {
		t.Errorf("lines add up to %d, own line %d, payout %d", sum, own, po.Amount)
	}
	if want := map[string]int{"charge": 5, "refund": 1, "dispute": 1, "fee": 1, "other_adjustment": 1, "payout": 1}; fmt.Sprint(cats) != fmt.Sprint(want) {
		t.Errorf("categories %v, want %v", cats, want)
	}
	// Without the expansion a source is its id.
	l := b.balanceTransactions(t, "/v1/balance_transactions?payout=po_a&limit=100")
	for _, x := range l.Data {
		if x.Type == "charge" && x.Source[0] != '"' {
			t.Errorf("unexpanded source %s", x.Source)
		}
	}
	if _, err := b.sim.CreatePayout(stripesim.PayoutSpec{Intents: ids[:1]}); !errors.Is(err, stripesim.ErrAlreadySettled) {
		t.Errorf("settling a charge twice: %v", err)
	}
	if _, err := b.sim.CreatePayout(stripesim.PayoutSpec{Intents: []string{"pi_nope"}}); !errors.Is(err, stripesim.ErrNoSuchIntent) {
		t.Errorf("an unknown intent: %v", err)
	}
	if _, err := b.sim.CreatePayout(stripesim.PayoutSpec{AmountDelta: 7}); err != nil {
		t.Fatal(err)
	}
}

// Payouts list newest first with cursors and created filters; a manual
// payout has no lines and Stripe refuses to list them; each change of a
// payout records its event.
func TestPayoutsListAndEvents(t *testing.T) {
	t.Parallel()
	b := setup(t, stripesim.Config{})
	base := b.clock.Now()
	for i := range 5 {
		if _, err := b.sim.CreatePayout(stripesim.PayoutSpec{ID: fmt.Sprintf("po_%d", i), Created: base.Add(time.Duration(i) * time.Hour)}); err != nil {
			t.Fatal(err)
		}
	}
	man, err := b.sim.CreatePayout(stripesim.PayoutSpec{ID: "po_manual", Manual: true, Amount: 5000, Created: base.Add(10 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if man.Automatic || man.ReconciliationStatus != "not_applicable" || man.Amount != 5000 {
		t.Errorf("manual payout %+v", man)
	}
	var ids []string
	after := ""
	for {
		path := "/v1/payouts?limit=4"
		if after != "" {
			path += "&starting_after=" + after
		}
		r := b.get(t, path)
		var l struct {
			Data []struct {
				ID        string `json:"id"`
				Automatic bool   `json:"automatic"`
			} `json:"data"`
			HasMore bool `json:"has_more"`
		}
		if err := json.Unmarshal(r.body, &l); err != nil || r.status != http.StatusOK {
			t.Fatalf("%d %s %v", r.status, r.body, err)
		}
		for _, p := range l.Data {
			ids = append(ids, p.ID)
		}
		if !l.HasMore {
			break
		}
		after = l.Data[len(l.Data)-1].ID
	}
	if want := []string{"po_manual", "po_4", "po_3", "po_2", "po_1", "po_0"}; !slices.Equal(ids, want) {
		t.Errorf("listed %v, want %v", ids, want)
	}
	var before struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
		HasMore bool `json:"has_more"`
	}
	if err := json.Unmarshal(b.get(t, "/v1/payouts?ending_before=po_1&limit=2").body, &before); err != nil ||
		len(before.Data) != 2 || before.Data[0].ID != "po_3" || before.Data[1].ID != "po_2" || !before.HasMore {
		t.Errorf("ending_before po_1: %+v %v", before, err)
	}
	r := b.get(t, fmt.Sprintf("/v1/payouts?created[gte]=%d&created[lt]=%d", base.Add(2*time.Hour).Unix(), base.Add(4*time.Hour).Unix()))
	if n := len(r.object(t)["data"].([]any)); n != 2 {
		t.Errorf("created window: %d payouts, want 2", n)
	}
	if r := b.get(t, "/v1/balance_transactions?payout=po_manual"); r.status != http.StatusBadRequest {
		t.Errorf("lines of a manual payout: %d %s", r.status, r.body)
	}
	if r := b.get(t, "/v1/payouts/po_nope"); r.status != http.StatusNotFound {
		t.Errorf("an unknown payout: %d", r.status)
	}
	if r := b.get(t, "/v1/payouts?arrival_date=1"); r.status != http.StatusBadRequest {
		t.Errorf("an unknown parameter: %d", r.status)
	}

	if _, err := b.sim.SetPayoutStatus("po_1", payrecon.PayoutFailed); err != nil {
		t.Fatal(err)
	}
	p := b.get(t, "/v1/payouts/po_1").object(t)
	if p["status"] != "failed" || p["failure_code"] != "account_closed" || p["object"] != "payout" {
		t.Errorf("failed payout %v", p)
	}
	ip, err := b.sim.CreatePayout(stripesim.PayoutSpec{ID: "po_ip", InProgress: true})
	if err != nil || ip.ReconciliationStatus != "in_progress" {
		t.Fatalf("%+v %v", ip, err)
	}
	if _, err := b.sim.CompletePayoutReconciliation("po_ip"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.sim.CompletePayoutReconciliation("po_manual"); !errors.Is(err, stripesim.ErrPayoutState) {
		t.Errorf("reconciling a manual payout: %v", err)
	}
	counts := map[string]int{}
	for _, e := range b.sim.Events() {
		counts[e.Type]++
	}
	want := map[string]int{"payout.created": 7, "payout.paid": 7, "payout.reconciliation_completed": 6, "payout.failed": 1}
	if fmt.Sprint(counts) != fmt.Sprint(want) {
		t.Errorf("events %v, want %v", counts, want)
	}
	payload, err := b.sim.EventPayload(b.sim.Events()[len(b.sim.Events())-1].ID)
	if err != nil {
		t.Fatal(err)
	}
	ev, err := payrecon.ParseEvent(payload)
	if err != nil || ev.PayoutID() != "po_ip" || ev.Type != payrecon.EventPayoutReconciliationCompleted {
		t.Errorf("payout event parsed as %+v, %v", ev, err)
	}
}

// A restricted key without Payouts: Read or Balance: Read is answered 403
// naming the permission.
func TestPayoutPermissions(t *testing.T) {
	t.Parallel()
	b := setup(t, stripesim.Config{Faults: stripesim.Faults{MissingPermissions: []string{stripesim.PermissionBalanceRead}}})
	if r := b.get(t, "/v1/payouts"); r.status != http.StatusOK {
		t.Errorf("payouts with Payouts: Read: %d", r.status)
	}
	r := b.get(t, "/v1/balance_transactions")
	if r.status != http.StatusForbidden || !json.Valid(r.body) || !strings.Contains(string(r.body), stripesim.PermissionBalanceRead) {
		t.Errorf("balance transactions without Balance: Read: %d %s", r.status, r.body)
	}
	b.sim.SetFaults(stripesim.Faults{MissingPermissions: []string{stripesim.PermissionPayoutRead}})
	if r := b.get(t, "/v1/payouts/po_x"); r.status != http.StatusForbidden || !strings.Contains(string(r.body), stripesim.PermissionPayoutRead) {
		t.Errorf("a payout without Payouts: Read: %d %s", r.status, r.body)
	}
	if st := b.sim.Stats(); st.Requests[stripesim.EndpointListBalanceTransactions] != 1 || st.Requests[stripesim.EndpointRetrievePayout] != 1 {
		t.Errorf("stats %v", st.Requests)
	}
}
