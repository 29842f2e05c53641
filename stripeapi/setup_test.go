package stripeapi_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/payrecon/payrecon/internal/simtest"
	"github.com/payrecon/payrecon/stripeapi"
	"github.com/payrecon/payrecon/stripesim"
)

// testBundle is a simulator and a gateway to it whose waits, logs and
// observations are recorded instead of slept, written and exported.
type testBundle struct {
	sim  *stripesim.Server
	gw   *stripeapi.Gateway
	rec  *recorder
	logs *syncBuffer
}

// recorder records the gateway's waits, and holds the registry its metrics
// go to.
type recorder struct {
	mu    sync.Mutex
	waits []time.Duration
	reg   *prometheus.Registry
}

func (r *recorder) sleep(ctx context.Context, d time.Duration) error {
	r.mu.Lock()
	r.waits = append(r.waits, d)
	r.mu.Unlock()
	return ctx.Err()
}

// snapshot returns the waits in order, and the calls counted by
// payrecon_stripe_requests_total as "op:outcome", one per call, sorted.
func (r *recorder) snapshot() ([]time.Duration, []string) {
	r.mu.Lock()
	waits := append([]time.Duration(nil), r.waits...)
	r.mu.Unlock()
	var outcomes []string
	families, err := r.reg.Gather()
	if err != nil {
		panic(err)
	}
	for _, f := range families {
		if f.GetName() != "payrecon_stripe_requests_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			for range int(m.GetCounter().GetValue()) {
				outcomes = append(outcomes, labels["op"]+":"+labels["outcome"])
			}
		}
	}
	slices.Sort(outcomes)
	return waits, outcomes
}

// syncBuffer is a goroutine-safe log sink.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// setup starts a simulator and a gateway to it. edit may change the
// gateway's config before New.
func setup(t testing.TB, simCfg stripesim.Config, edit func(*stripeapi.Config)) *testBundle {
	t.Helper()
	sim := simtest.Start(t, simCfg)
	b := &testBundle{sim: sim, rec: &recorder{reg: prometheus.NewRegistry()}, logs: &syncBuffer{}}
	cfg := stripeapi.Config{
		SecretKey:  sim.SecretKey(),
		APIBase:    sim.URL(),
		HTTPClient: newClient(t),
		SleepFunc:  b.rec.sleep,
		JitterFunc: func() float64 { return 0.5 },
		Logger:     slog.New(slog.NewTextHandler(b.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Registerer: b.rec.reg,
	}
	if edit != nil {
		edit(&cfg)
	}
	gw, err := stripeapi.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	b.gw = gw
	return b
}

// newClient returns a client with a transport of its own, closed at the end
// of the test.
func newClient(t testing.TB) *http.Client {
	tr := &http.Transport{MaxIdleConnsPerHost: 16}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}
