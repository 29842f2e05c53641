package stripeapi_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/stripeapi"
	"github.com/payrecon/payrecon/stripesim"
)

func TestCheckAccess(t *testing.T) {
	t.Parallel()
	const key = "rk_test_51RestrictedKeyValue4321"
	all := stripeapi.AccessNeeds{Charges: true, Events: true}
	tests := []struct {
		name     string
		missing  []string
		forbid   bool
		needs    stripeapi.AccessNeeds
		want     string // the permission the Cause names; "" for no error
		requests map[string]int64
	}{
		{name: "everything granted", needs: all,
			requests: map[string]int64{stripesim.EndpointListIntents: 1, stripesim.EndpointListEvents: 1}},
		{name: "intents only", needs: stripeapi.AccessNeeds{},
			requests: map[string]int64{stripesim.EndpointListIntents: 1}},
		{name: "no PaymentIntents: Read", missing: []string{stripesim.PermissionPaymentIntentRead}, needs: all, want: "PaymentIntents: Read",
			requests: map[string]int64{stripesim.EndpointListIntents: 1}},
		{name: "no Charges: Read", missing: []string{stripesim.PermissionChargeRead}, needs: all, want: "Charges: Read",
			requests: map[string]int64{stripesim.EndpointListIntents: 1}},
		{name: "no Charges: Read, none needed", missing: []string{stripesim.PermissionChargeRead}, needs: stripeapi.AccessNeeds{Events: true},
			requests: map[string]int64{stripesim.EndpointListIntents: 1, stripesim.EndpointListEvents: 1}},
		{name: "no Events: Read", missing: []string{stripesim.PermissionEventRead}, needs: all, want: "Events: Read",
			requests: map[string]int64{stripesim.EndpointListIntents: 1, stripesim.EndpointListEvents: 1}},
		{name: "no Events: Read, none needed", missing: []string{stripesim.PermissionEventRead}, needs: stripeapi.AccessNeeds{Charges: true},
			requests: map[string]int64{stripesim.EndpointListIntents: 1}},
		{name: "no read access at all", forbid: true, needs: all, want: "PaymentIntents: Read",
			requests: map[string]int64{stripesim.EndpointListIntents: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, stripesim.Config{SecretKey: key, Faults: stripesim.Faults{MissingPermissions: tt.missing, Forbidden: tt.forbid}},
				func(c *stripeapi.Config) { c.SecretKey = key })
			// A charge for the expansion to render: the check must fail
			// whatever Stripe does about an empty list.
			b.sim.Put(stripesim.Intent{Status: payrecon.IntentSucceeded})
			err := b.gw.CheckAccess(context.Background(), tt.needs)
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
			} else {
				c := configError(t, err)
				if c.StatusCode != 403 || !strings.Contains(c.Cause, "lacks the "+tt.want+" permission") || strings.Contains(c.Cause, "\n") {
					t.Fatalf("cause %q, want one line naming %s", c.Cause, tt.want)
				}
				if msg := err.Error(); strings.Contains(msg, key) || strings.Contains(msg, "4321") || strings.Contains(msg, "rk_test") {
					t.Fatalf("error shows the key: %s", msg)
				}
			}
			st := b.sim.Stats()
			if st.Total() != int64(len(tt.requests)) {
				t.Errorf("requests %v, want %v", st.Requests, tt.requests)
			}
			for ep, n := range tt.requests {
				if st.Requests[ep] != n {
					t.Errorf("requests %v, want %v", st.Requests, tt.requests)
				}
			}
		})
	}
}

// TestCheckAccessUnnamedPermission: when Stripe's 403 names no permission
// (some restricted-key answers do not), the cause names what the operation
// needs.
func TestCheckAccessUnnamedPermission(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/payment_intents" && strings.Contains(r.URL.RawQuery, "data.latest_charge") {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"object":"list","data":[],"has_more":false,"url":"/v1/payment_intents"}`)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprint(w, `{"error":{"message":"The provided key 'rk_test_***abcd' does not have the required permissions for this endpoint on account 'acct_1'. This is a restricted API key, but the required permissions are not available for use by restricted keys.","type":"invalid_request_error"}}`)
	}))
	t.Cleanup(srv.Close)
	gw, err := stripeapi.New(stripeapi.Config{SecretKey: "rk_test_abcd", APIBase: srv.URL, HTTPClient: newClient(t)})
	if err != nil {
		t.Fatal(err)
	}
	err = gw.CheckAccess(context.Background(), stripeapi.AccessNeeds{Charges: true, Events: true})
	if c := configError(t, err); c.StatusCode != 403 || !strings.Contains(c.Cause, "a restricted key needs Events: Read") || strings.Contains(err.Error(), "abcd") {
		t.Fatalf("%v", err)
	}
	_, err = gw.RetrieveIntent(context.Background(), "pi_1")
	if c := configError(t, err); !strings.Contains(c.Cause, "a restricted key needs PaymentIntents: Read and Charges: Read") {
		t.Fatalf("%v", err)
	}
}

// TestCheckAccessUnavailable: a Stripe that cannot be asked is not a
// configuration error; the caller may retry the check.
func TestCheckAccessUnavailable(t *testing.T) {
	t.Parallel()
	b := setup(t, stripesim.Config{Faults: stripesim.Faults{ErrorRate: 1}}, nil)
	err := b.gw.CheckAccess(context.Background(), stripeapi.AccessNeeds{Charges: true, Events: true})
	unavailable(t, err)
	if errors.Is(err, payrecon.ErrConfig) {
		t.Fatal(err)
	}
}
