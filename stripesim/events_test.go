package stripesim_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/stripesim"
)

type eventBody struct {
	ID         string `json:"id"`
	Object     string `json:"object"`
	APIVersion string `json:"api_version"`
	Created    int64  `json:"created"`
	Type       string `json:"type"`
	Pending    int    `json:"pending_webhooks"`
	Data       struct {
		Object struct {
			ID     string `json:"id"`
			Object string `json:"object"`
			Status string `json:"status"`
		} `json:"object"`
		Previous map[string]string `json:"previous_attributes"`
	} `json:"data"`
}

func (l list) events(t testing.TB) []eventBody {
	t.Helper()
	out := make([]eventBody, len(l.Data))
	for i, raw := range l.Data {
		if err := json.Unmarshal(raw, &out[i]); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func TestEventsRecordStatusChanges(t *testing.T) {
	t.Parallel()
	b := setup(t, stripesim.Config{})
	if _, err := b.sim.Create(stripesim.Intent{ID: "pi_1"}); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		status payrecon.StripeStatus
		event  string
	}{
		{payrecon.IntentProcessing, "payment_intent.processing"},
		{payrecon.IntentRequiresPaymentMethod, "payment_intent.payment_failed"},
		{payrecon.IntentRequiresConfirmation, ""},
		{payrecon.IntentRequiresAction, "payment_intent.requires_action"},
		{payrecon.IntentRequiresCapture, "payment_intent.amount_capturable_updated"},
		{payrecon.IntentSucceeded, "payment_intent.succeeded"},
		{payrecon.IntentSucceeded, ""}, // no change, no event
		{payrecon.IntentCanceled, "payment_intent.canceled"},
	}
	for _, s := range steps {
		b.clock.Advance(time.Second)
		id, err := b.sim.SetStatus("pi_1", s.status)
		if err != nil {
			t.Fatal(err)
		}
		if (id == "") != (s.event == "") {
			t.Fatalf("SetStatus(%s) event id %q, want an event of type %q", s.status, id, s.event)
		}
	}
	var wantTypes []string
	for _, s := range slices.Backward(steps) {
		if s.event != "" {
			wantTypes = append(wantTypes, s.event)
		}
	}
	wantTypes = append(wantTypes, "payment_intent.created")

	evs := b.get(t, "/v1/events?limit=100").list(t).events(t)
	var gotTypes []string
	for _, e := range evs {
		gotTypes = append(gotTypes, e.Type)
		if e.Object != "event" || e.APIVersion == "" || e.Data.Object.ID != "pi_1" || e.Data.Object.Object != "payment_intent" || e.Pending != 1 {
			t.Errorf("event %+v", e)
		}
	}
	if !slices.Equal(gotTypes, wantTypes) {
		t.Fatalf("types newest first: %v, want %v", gotTypes, wantTypes)
	}
	succeeded := evs[1]
	if succeeded.Data.Object.Status != "succeeded" || succeeded.Data.Previous["status"] != "requires_capture" {
		t.Errorf("succeeded event: %+v", succeeded)
	}
	if got := b.sim.Events(); len(got) != len(wantTypes) || got[0].Type != "payment_intent.created" || got[0].Attempts != 0 {
		t.Errorf("Events(): %+v", got)
	}
}

func TestListEventsFilters(t *testing.T) {
	t.Parallel()
	b := setup(t, stripesim.Config{})
	start := b.clock.Now()
	var succeeded []string
	for i := range 6 {
		id := fmt.Sprintf("pi_%d", i)
		b.sim.Put(stripesim.Intent{ID: id})
		b.clock.Advance(time.Second)
		status := payrecon.IntentSucceeded
		if i%2 == 1 {
			status = payrecon.IntentCanceled
		}
		ev, err := b.sim.SetStatus(id, status)
		if err != nil {
			t.Fatal(err)
		}
		if status == payrecon.IntentSucceeded {
			succeeded = append([]string{ev}, succeeded...)
		}
	}
	ids := func(path string) []string {
		var out []string
		for _, e := range b.get(t, path).list(t).events(t) {
			out = append(out, e.ID)
		}
		return out
	}
	if got := ids("/v1/events?type=payment_intent.succeeded"); !slices.Equal(got, succeeded) {
		t.Errorf("type: %v, want %v", got, succeeded)
	}
	if got := ids("/v1/events?types[]=payment_intent.succeeded"); !slices.Equal(got, succeeded) {
		t.Errorf("types[]: %v, want %v", got, succeeded)
	}
	if got := ids("/v1/events?types[0]=payment_intent.succeeded&types[1]=payment_intent.canceled"); len(got) != 6 {
		t.Errorf("types[0],types[1]: %d events", len(got))
	}
	if got := ids("/v1/events?type=payment_intent.*"); len(got) != 6 {
		t.Errorf("wildcard: %d events", len(got))
	}
	// Events at start+1 … start+6; gte start+5 keeps two.
	if got := ids(fmt.Sprintf("/v1/events?created[gte]=%d", start.Unix()+5)); len(got) != 2 {
		t.Errorf("created[gte]: %v", got)
	}
	page1 := b.get(t, "/v1/events?limit=2&type=payment_intent.succeeded").list(t)
	if got := page1.ids(t); !slices.Equal(got, succeeded[:2]) || !page1.HasMore {
		t.Errorf("page 1: %v %v", got, page1.HasMore)
	}
	page2 := b.get(t, "/v1/events?limit=2&type=payment_intent.succeeded&starting_after="+succeeded[1]).list(t)
	if got := page2.ids(t); !slices.Equal(got, succeeded[2:]) || page2.HasMore {
		t.Errorf("page 2: %v %v", got, page2.HasMore)
	}
	back := b.get(t, "/v1/events?limit=1&type=payment_intent.succeeded&ending_before="+succeeded[2]).list(t)
	if got := back.ids(t); !slices.Equal(got, succeeded[1:2]) || !back.HasMore {
		t.Errorf("ending_before: %v %v", got, back.HasMore)
	}
	for _, q := range []string{"delivery_success=maybe", "type=a&types[]=b", "starting_after=evt_nope", "foo=1"} {
		if r := b.get(t, "/v1/events?"+q); r.status != http.StatusBadRequest {
			t.Errorf("%s: status %d", q, r.status)
		}
	}
}
