package stripeapi_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"sync"
	"testing"
	"time"

	"payrecon/internal/simtest"
	"payrecon/stripeapi"
	"payrecon/stripesim"
)

// testBundle is a simulator and a gateway to it whose waits, logs and
// observations are recorded instead of slept, written and exported.
type testBundle struct {
	sim  *stripesim.Server
	gw   *stripeapi.Gateway
	rec  *recorder
	logs *syncBuffer
}

// recorder records the gateway's waits and observations.
type recorder struct {
	mu       sync.Mutex
	waits    []time.Duration
	outcomes []string
}

func (r *recorder) sleep(ctx context.Context, d time.Duration) error {
	r.mu.Lock()
	r.waits = append(r.waits, d)
	r.mu.Unlock()
	return ctx.Err()
}

func (r *recorder) observe(op, outcome string, _ time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.outcomes = append(r.outcomes, op+":"+outcome)
}

func (r *recorder) snapshot() ([]time.Duration, []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]time.Duration(nil), r.waits...), append([]string(nil), r.outcomes...)
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
	b := &testBundle{sim: sim, rec: &recorder{}, logs: &syncBuffer{}}
	cfg := stripeapi.Config{
		SecretKey:   sim.SecretKey(),
		APIBase:     sim.URL(),
		HTTPClient:  newClient(t),
		SleepFunc:   b.rec.sleep,
		JitterFunc:  func() float64 { return 0.5 },
		Logger:      slog.New(slog.NewTextHandler(b.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		ObserveFunc: b.rec.observe,
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
