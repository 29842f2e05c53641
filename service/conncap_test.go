package service_test

import (
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

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
// listener's cap: the server never holds more than the cap open (it
// accepts the rest as earlier ones are cut off by the header timeout), every
// flood connection is closed within its share of the queue (flood / cap ×
// the timeout, plus slack), and a request sent behind the flood is
// answered within the same bound.
func TestPublicListenerCapsConnections(t *testing.T) {
	t.Parallel()
	const (
		limit = 50
		flood = 4 * limit
		bound = time.Second
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
	began := time.Now()
	var closed sync.WaitGroup
	lasted := make(chan time.Duration, flood)
	for range flood {
		c := dial(t, b.svc.Addr())
		closed.Add(1)
		go func() {
			defer closed.Done()
			_ = c.SetReadDeadline(time.Now().Add(flood/limit*bound + slack))
			_, _ = io.Copy(io.Discard, c) // until the server closes it
			lasted <- time.Since(began)
		}()
	}
	answered := make(chan time.Duration, 1)
	go func() {
		cl := &http.Client{Timeout: flood/limit*bound + slack, Transport: &http.Transport{DisableKeepAlives: true}}
		resp, err := cl.Get("http://" + b.svc.Addr() + "/healthz")
		if err != nil {
			t.Errorf("/healthz behind the flood: %v", err)
			answered <- 0
			return
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("/healthz behind the flood = %d", resp.StatusCode)
		}
		answered <- time.Since(began)
	}()
	// The count, sampled until every flood connection is closed.
	done := make(chan struct{})
	go func() { closed.Wait(); close(done) }()
	peak := 0.0
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
sample:
	for {
		select {
		case <-done:
			break sample
		case <-tick.C:
			peak = max(peak, openConnections(t, b.svc, "public"))
		}
	}
	close(lasted)
	var longest time.Duration
	for d := range lasted {
		longest = max(longest, d)
	}
	healthz := <-answered
	t.Logf("peak %v open connections (cap %d) during a flood of %d; the last closed after %s; /healthz answered after %s",
		peak, limit, flood, longest.Round(time.Millisecond), healthz.Round(time.Millisecond))
	if peak > limit || peak < limit/2 {
		t.Errorf("peak %v open connections on the public listener, want at most the cap %d (and the flood to reach it)", peak, limit)
	}
	if longest > flood/limit*bound+slack {
		t.Errorf("a flood connection was held %s, want within %s", longest, flood/limit*bound+slack)
	}
	if healthz == 0 || healthz > flood/limit*bound+slack {
		t.Errorf("/healthz behind the flood answered after %s", healthz)
	}
}
