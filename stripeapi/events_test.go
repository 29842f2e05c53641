package stripeapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v85"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/internal/testkit"
	"github.com/payrecon/payrecon/stripeapi"
	"github.com/payrecon/payrecon/stripesim"
)

// eventsBundle is a simulator on a fake clock with a history of events of
// several types, several per second, and a gateway to it.
type eventsBundle struct {
	*testBundle
	clock *testkit.Clock
	all   []stripesim.Event // oldest first
}

func setupEvents(t *testing.T) *eventsBundle {
	t.Helper()
	clock := testkit.NewClock(time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC))
	b := setup(t, stripesim.Config{Clock: clock}, nil)
	for i := range 15 {
		id := fmt.Sprintf("pi_%02d", i)
		b.sim.Put(stripesim.Intent{ID: id, Amount: 1000})
		if _, err := b.sim.SetStatus(id, payrecon.IntentSucceeded); err != nil {
			t.Fatal(err)
		}
		switch i % 4 {
		case 0:
			if _, err := b.sim.Refund(id, 250); err != nil {
				t.Fatal(err)
			}
		case 1:
			if _, err := b.sim.Dispute(id); err != nil {
				t.Fatal(err)
			}
		case 2:
			if _, err := b.sim.SetStatus(id, payrecon.IntentCanceled); err != nil {
				t.Fatal(err)
			}
		}
		if i%2 == 1 {
			clock.Advance(time.Second)
		}
	}
	return &eventsBundle{testBundle: b, clock: clock, all: b.sim.Events()}
}

// ids returns the ids of the recorded events that pass keep, newest first.
func (eb *eventsBundle) ids(keep func(stripesim.Event) bool) []string {
	var out []string
	for _, e := range slices.Backward(eb.all) {
		if keep(e) {
			out = append(out, e.ID)
		}
	}
	return out
}

func eventIDs(page payrecon.EventPage) []string {
	out := make([]string, len(page.Events))
	for i, e := range page.Events {
		out[i] = e.ID
	}
	return out
}

func TestListEventsRawJSON(t *testing.T) {
	t.Parallel()
	eb := setupEvents(t)
	page, err := eb.gw.ListEvents(context.Background(), payrecon.EventQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := eventIDs(page), eb.ids(func(stripesim.Event) bool { return true }); !slices.Equal(got, want) || page.HasMore {
		t.Fatalf("one page of everything: %v has_more=%v, want %v", got, page.HasMore, want)
	}
	byID := map[string]stripesim.Event{}
	for _, e := range eb.all {
		byID[e.ID] = e
	}
	for _, raw := range page.Events {
		want, err := eb.sim.EventPayload(raw.ID)
		if err != nil {
			t.Fatal(err)
		}
		// Byte for byte what Stripe (the simulator) renders for the event.
		if !bytes.Equal(raw.JSON, want) {
			t.Fatalf("event %s:\n got %s\nwant %s", raw.ID, raw.JSON, want)
		}
		if e := byID[raw.ID]; raw.Type != e.Type || !raw.Created.Equal(e.Created) || raw.Created.Location() != time.UTC {
			t.Errorf("event %s: %s at %s, recorded %s at %s", raw.ID, raw.Type, raw.Created, e.Type, e.Created)
		}
		var ev stripe.Event
		if err := json.Unmarshal(raw.JSON, &ev); err != nil || ev.ID != raw.ID || string(ev.Type) != raw.Type || ev.Data == nil || len(ev.Data.Raw) == 0 {
			t.Errorf("event %s does not parse as a Stripe event: %v", raw.ID, err)
		}
	}
	if _, outcomes := eb.rec.snapshot(); !slices.Equal(outcomes, []string{"events:ok"}) {
		t.Errorf("outcomes %v", outcomes)
	}
}

func TestListEventsFilters(t *testing.T) {
	t.Parallel()
	eb := setupEvents(t)
	start := eb.all[0].Created
	types := []string{"charge.refunded", "charge.dispute.created"}
	tests := []struct {
		name string
		q    payrecon.EventQuery
		keep func(stripesim.Event) bool
	}{
		{"types", payrecon.EventQuery{Types: types},
			func(e stripesim.Event) bool { return slices.Contains(types, e.Type) }},
		{"created ≥ (inclusive, sub-second truncated)", payrecon.EventQuery{CreatedGTE: start.Add(3*time.Second + 500*time.Millisecond)},
			func(e stripesim.Event) bool { return !e.Created.Before(start.Add(3 * time.Second)) }},
		{"created < (exclusive)", payrecon.EventQuery{CreatedLT: start.Add(2 * time.Second)},
			func(e stripesim.Event) bool { return e.Created.Before(start.Add(2 * time.Second)) }},
		{"types and a window", payrecon.EventQuery{Types: []string{"payment_intent.succeeded"}, CreatedGTE: start.Add(time.Second), CreatedLT: start.Add(5 * time.Second)},
			func(e stripesim.Event) bool {
				return e.Type == "payment_intent.succeeded" && !e.Created.Before(start.Add(time.Second)) && e.Created.Before(start.Add(5*time.Second))
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			page, err := eb.gw.ListEvents(context.Background(), tt.q)
			if err != nil {
				t.Fatal(err)
			}
			want := eb.ids(tt.keep)
			if got := eventIDs(page); !slices.Equal(got, want) || len(want) == 0 || page.HasMore {
				t.Fatalf("got %v has_more=%v, want %v", got, page.HasMore, want)
			}
		})
	}
}

// TestListEventsPaging walks the events in both directions a page at a
// time, one request per page.
func TestListEventsPaging(t *testing.T) {
	t.Parallel()
	eb := setupEvents(t)
	ctx := context.Background()
	types := []string{"payment_intent.succeeded", "payment_intent.canceled", "charge.refunded", "charge.dispute.created"}
	want := eb.ids(func(e stripesim.Event) bool { return slices.Contains(types, e.Type) }) // newest first
	if len(want) < 10 {
		t.Fatalf("only %d events", len(want))
	}

	t.Run("backwards with StartingAfter", func(t *testing.T) {
		var got []string
		q := payrecon.EventQuery{Types: types, Limit: 4}
		for pages := 1; ; pages++ {
			eb.sim.ResetStats()
			page, err := eb.gw.ListEvents(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			if n := eb.sim.Stats().Total(); n != 1 {
				t.Fatalf("page %d took %d requests", pages, n)
			}
			if len(page.Events) > 4 {
				t.Fatalf("%d events on a page of 4", len(page.Events))
			}
			got = append(got, eventIDs(page)...)
			if !page.HasMore {
				break
			}
			q.StartingAfter = page.Events[len(page.Events)-1].ID
		}
		if !slices.Equal(got, want) {
			t.Fatalf("got %v\nwant %v", got, want)
		}
	})

	t.Run("forwards with EndingBefore", func(t *testing.T) {
		// From the oldest matching event, as the catch-up walks: each page
		// is the events just newer than the cursor, newest first.
		oldest := want[len(want)-1]
		var got []string
		q := payrecon.EventQuery{Types: types, Limit: 4, EndingBefore: oldest}
		for pages := 1; pages < 20; pages++ {
			page, err := eb.gw.ListEvents(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			ids := eventIDs(page)
			// Newest first within the page.
			for i := 1; i < len(page.Events); i++ {
				if page.Events[i].Created.After(page.Events[i-1].Created) {
					t.Fatalf("page %v is not newest first", ids)
				}
			}
			for _, id := range slices.Backward(ids) {
				got = append(got, id)
			}
			if !page.HasMore {
				break
			}
			q.EndingBefore = ids[0]
		}
		wantForward := slices.Clone(want[:len(want)-1])
		slices.Reverse(wantForward)
		if !slices.Equal(got, wantForward) {
			t.Fatalf("got %v\nwant %v", got, wantForward)
		}
		// At the newest event there is nothing newer.
		page, err := eb.gw.ListEvents(ctx, payrecon.EventQuery{Types: types, EndingBefore: want[0]})
		if err != nil || len(page.Events) != 0 || page.HasMore {
			t.Fatalf("after the newest: %v %v", eventIDs(page), err)
		}
	})
}

func TestListEventsErrors(t *testing.T) {
	t.Parallel()
	eb := setupEvents(t)
	ctx := context.Background()

	// A cursor Stripe no longer keeps is "not found", for the catch-up to
	// tell from a configuration error.
	for _, q := range []payrecon.EventQuery{{StartingAfter: "evt_expired"}, {EndingBefore: "evt_expired"}} {
		_, err := eb.gw.ListEvents(ctx, q)
		if !errors.Is(err, payrecon.ErrNotFound) || errors.Is(err, payrecon.ErrConfig) || errors.Is(err, payrecon.ErrUnavailable) || !strings.Contains(err.Error(), "evt_expired") {
			t.Errorf("%+v: %v", q, err)
		}
	}

	// Refused before any request.
	eb.sim.ResetStats()
	for _, q := range []payrecon.EventQuery{
		{StartingAfter: "evt_a", EndingBefore: "evt_b"},
		{Types: slices.Repeat([]string{"charge.refunded"}, 21)},
	} {
		if _, err := eb.gw.ListEvents(ctx, q); !errors.Is(err, payrecon.ErrConfig) {
			t.Errorf("%+v: %v", q, err)
		}
	}
	if n := eb.sim.Stats().Total(); n != 0 {
		t.Errorf("%d requests for queries refused locally", n)
	}

	// The same retries and translation as the other reads.
	eb.sim.FailNext(stripesim.Failure{Status: 429}, stripesim.Failure{Status: 503})
	if _, err := eb.gw.ListEvents(ctx, payrecon.EventQuery{Limit: 1}); err != nil {
		t.Fatalf("after two retried failures: %v", err)
	}
	eb.sim.SetFaults(stripesim.Faults{ErrorRate: 1})
	_, err := eb.gw.ListEvents(ctx, payrecon.EventQuery{Limit: 1})
	if u := unavailable(t, err); u.StatusCode != 500 {
		t.Fatalf("%+v", u)
	}
	eb.sim.SetFaults(stripesim.Faults{MissingPermissions: []string{stripesim.PermissionEventRead}})
	_, err = eb.gw.ListEvents(ctx, payrecon.EventQuery{Limit: 1})
	if c := configError(t, err); c.StatusCode != 403 || !strings.Contains(c.Cause, "Events: Read") {
		t.Fatalf("cause %q", c.Cause)
	}
	_, outcomes := eb.rec.snapshot()
	if want := []string{"events:config_error", "events:not_found", "events:not_found", "events:ok", "events:unavailable"}; !slices.Equal(outcomes, want) {
		t.Errorf("outcomes %v, want %v", outcomes, want)
	}
}

// TestListEventsUnreadableBody: a 200 that is not a list of events is
// unavailable (retried), never a page of nothing.
func TestListEventsUnreadableBody(t *testing.T) {
	t.Parallel()
	srvURL := serveJSON(t, `{"object":"list","data":[{"object":"plan","id":"plan_1"}],"has_more":false,"url":"/v1/events"}`)
	gw, err := stripeapi.New(stripeapi.Config{SecretKey: "sk_test_x", APIBase: srvURL, HTTPClient: newClient(t), MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	_, err = gw.ListEvents(context.Background(), payrecon.EventQuery{})
	if u := unavailable(t, err); u.StatusCode != 200 || !strings.Contains(err.Error(), "not an event") {
		t.Fatalf("%+v: %v", u, err)
	}
}

// serveJSON starts a server that answers every request 200 with body.
func serveJSON(t *testing.T, body string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// An event whose created is 2^63-1 is not a time: the page is refused
// (unavailable, retried) instead of storing a time that wraps to 1969.
func TestListEventsCreatedOutOfRange(t *testing.T) {
	t.Parallel()
	for _, created := range []string{"9223372036854775807", "-1", "253402300800"} {
		srvURL := serveJSON(t, `{"object":"list","data":[{"object":"event","id":"evt_1","type":"payment_intent.succeeded","created":`+created+`}],"has_more":false,"url":"/v1/events"}`)
		gw, err := stripeapi.New(stripeapi.Config{SecretKey: "sk_test_x", APIBase: srvURL, HTTPClient: newClient(t), MaxRetries: -1})
		if err != nil {
			t.Fatal(err)
		}
		_, err = gw.ListEvents(context.Background(), payrecon.EventQuery{})
		if u := unavailable(t, err); u.StatusCode != 200 || !strings.Contains(err.Error(), "is not a time") {
			t.Errorf("created %s: %+v: %v", created, u, err)
		}
	}
}
