package stripeapi

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// NewMetrics registers Stripe request metrics with reg (nil: not
// registered) and returns the ObserveFunc that feeds them.
func NewMetrics(reg prometheus.Registerer) func(op, outcome string, d time.Duration) {
	requests := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "payrecon_stripe_requests_total", Help: "Stripe API calls (after our retries), by operation and outcome.",
	}, []string{"op", "outcome"})
	latency := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "payrecon_stripe_request_duration_seconds", Help: "Stripe API call latency, retries included.",
		Buckets: prometheus.ExponentialBuckets(0.005, 2, 12),
	}, []string{"op"})
	if reg != nil {
		reg.MustRegister(requests, latency)
	}
	return func(op, outcome string, d time.Duration) {
		requests.WithLabelValues(op, outcome).Inc()
		latency.WithLabelValues(op).Observe(d.Seconds())
	}
}
