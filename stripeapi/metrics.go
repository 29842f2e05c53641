package stripeapi

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics is the gateway's Prometheus instrumentation: one count and one
// latency per call (retries included), by operation and outcome.
type metrics struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
}

// newMetrics builds the gateway's metrics and registers them with reg
// (nil: not registered).
func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "payrecon_stripe_requests_total", Help: "Stripe API calls (after our retries), by operation and outcome.",
		}, []string{"op", "outcome"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "payrecon_stripe_request_duration_seconds", Help: "Stripe API call latency, retries included.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 12),
		}, []string{"op"}),
	}
	if reg != nil {
		reg.MustRegister(m.requests, m.latency)
	}
	return m
}

func (m *metrics) observe(op, outcome string, d time.Duration) {
	m.requests.WithLabelValues(op, outcome).Inc()
	m.latency.WithLabelValues(op).Observe(d.Seconds())
}
