package service_test

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/payrecon/payrecon/internal/testkit"
	"github.com/payrecon/payrecon/service"
)

// openConnections reads payrecon_http_connections{listener} from the
// service's registry: the connections its server has accepted and not yet
// closed (each one a file descriptor).
func openConnections(t *testing.T, svc *service.Service, listener string) float64 {
	t.Helper()
	mfs, err := svc.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "payrecon_http_connections" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "listener" && l.GetValue() == listener {
					return m.GetGauge().GetValue()
				}
			}
		}
	}
	t.Fatalf("no payrecon_http_connections{listener=%q}", listener)
	return 0
}

// A flood of connections that send nothing, four times the public
// listener's cap: the server never holds more than the cap open (the
// newest connection closes the oldest silent one), every flood connection
// is closed within the header timeout (plus slack), and a request sent
// behind the flood is answered before the flood's connections time out:
// the flood does not keep it waiting. Connections in the middle of a
// request are never closed to make room: a request behind them waits
// until the read timeout cuts them off.
func TestPublicListenerCapsConnections(t *testing.T) {
	t.Parallel()
	const (
		limit = 50
		flood = 4 * limit
		bound = 2 * time.Second
		slack = 10 * time.Second // generous: the machine is shared
	)
	b := start(t, 0, func(c *service.Config) {
		c.HTTPMaxConns = limit
		c.Timeouts = service.Timeouts{ReadHeader: bound, Read: bound, PublicWrite: bound, AdminWrite: bound, Idle: bound}
	})
	select {
	case <-b.ready:
	case <-time.After(30 * time.Second):
		t.Fatal("the service did not become ready")
	}
	if got := openConnections(t, b.svc, "public"); got != 0 {
		t.Fatalf("%v connections open before the flood", got)
	}
	cl := &http.Client{Timeout: bound + slack, Transport: &http.Transport{DisableKeepAlives: true}}
	healthz := func() (time.Duration, error) {
		start := time.Now()
		resp, err := cl.Get("http://" + b.svc.Addr() + "/healthz")
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return 0, fmt.Errorf("status %d", resp.StatusCode)
		}
		return time.Since(start), nil
	}
	// sample reads the count until done closes and returns its peak.
	sample := func(done <-chan struct{}) float64 {
		peak := 0.0
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return max(peak, openConnections(t, b.svc, "public"))
			case <-tick.C:
				peak = max(peak, openConnections(t, b.svc, "public"))
			}
		}
	}

	t.Run("silent flood", func(t *testing.T) {
		h := holdConns(t, b.svc.Addr(), flood, "", bound+slack)
		answered, err := healthz()
		if err != nil {
			t.Errorf("/healthz behind the flood: %v", err)
		}
		peak := sample(h.done)
		longest := slices.Max(h.lasted)
		t.Logf("peak %v open connections (cap %d) during a flood of %d; the last closed after %s; /healthz answered in %s",
			peak, limit, flood, longest.Round(time.Millisecond), answered.Round(time.Millisecond))
		if peak > limit || peak < limit/2 {
			t.Errorf("peak %v open connections on the public listener, want at most the cap %d (and the flood to reach it)", peak, limit)
		}
		if longest > bound+slack {
			t.Errorf("a flood connection was held %s, want within %s", longest, bound+slack)
		}
		if answered == 0 || answered >= bound {
			t.Errorf("/healthz behind the flood answered in %s, want before the header timeout (%s): the flood kept it out", answered, bound)
		}
	})

	t.Run("requests in progress are kept", func(t *testing.T) {
		// Every slot holds a request being read (its header whole, its
		// body not sent): none is closed to make room, and a new request
		// waits for the read timeout to free one.
		began := time.Now()
		h := holdConns(t, b.svc.Addr(), limit, "POST /webhooks/stripe HTTP/1.1\r\nHost: x\r\nStripe-Signature: t=1,v1=00\r\n"+
			"Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{", bound+slack)
		testkit.WaitFor(t, "the requests to occupy every slot", 30*time.Second, func() bool {
			return openConnections(t, b.svc, "public") == limit
		})
		answered, err := healthz()
		if err != nil {
			t.Errorf("/healthz behind requests in progress: %v", err)
		}
		waited := time.Since(began)
		<-h.done
		if shortest := slices.Min(h.lasted); shortest < bound*9/10 {
			t.Errorf("a request in progress was closed after %s, before the read timeout (%s)", shortest, bound)
		}
		if answered == 0 || waited < bound*9/10 {
			t.Errorf("/healthz answered in %s, %s after the requests began; want it to wait for a slot", answered, waited)
		}
	})
}

// held are connections holdConns opened: done closes once the server has
// closed them all; lasted then says how long each was held.
type held struct {
	done   chan struct{}
	lasted []time.Duration
}

// holdConns opens n connections to addr, sends what on each (nothing when
// empty), and reads each until the server closes it (within, at most).
func holdConns(t *testing.T, addr string, n int, what string, within time.Duration) *held {
	t.Helper()
	h := &held{done: make(chan struct{}), lasted: make([]time.Duration, n)}
	began := time.Now()
	var wg sync.WaitGroup
	for i := range n {
		c := dial(t, addr)
		if what != "" {
			fmt.Fprint(c, what)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = c.SetReadDeadline(time.Now().Add(within))
			_, _ = io.Copy(io.Discard, c) // until the server closes it
			h.lasted[i] = time.Since(began)
		}()
	}
	go func() { wg.Wait(); close(h.done) }()
	return h
}
