package relay

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/payrecon/payrecon/postgres"
)

// metrics are the relay's Prometheus instrumentation.
type metrics struct {
	outcomes *prometheus.CounterVec
	apply    prometheus.Histogram
	delay    prometheus.Histogram
	pruned   *prometheus.CounterVec

	notified    *prometheus.CounterVec
	notifyDelay prometheus.Histogram
	notifyPost  prometheus.Histogram
}

func newMetrics(reg prometheus.Registerer, targets []postgres.PruneTarget) *metrics {
	m := &metrics{
		outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "payrecon_repairs_total",
			Help: "Repair command attempts by outcome: applied, already_done, unapplied (left for review), failed (retried), dead_lettered, held (a command held for review reached a worker without an approval: not applied, its job cancelled).",
		}, []string{"outcome"}),
		apply: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "payrecon_repair_apply_duration_seconds", Help: "Time to apply one repair command and complete its job (one transaction).",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14),
		}),
		delay: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "payrecon_repair_delay_seconds", Help: "Time from the repair command's commit (its job's insert) to its application; for a command held for review, the wait for approval included.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 18),
		}),
		pruned: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "payrecon_prune_rows_total",
			Help: "Rows of history deleted past their retention, by target (outbox, webhook_events, console_samples, findings; river_jobs when `prune --once` deletes them: in the service River's cleaner does, and logs it).",
		}, []string{"target"}),
		notified: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "payrecon_notifications_total",
			Help: "Notification attempts to the application by outcome: delivered (2xx), failed (retried), dead_lettered, waiting (an earlier transition of the payment is not delivered yet).",
		}, []string{"outcome"}),
		notifyDelay: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "payrecon_notification_delay_seconds", Help: "Time from a transition to its notification's acknowledgement by the application.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 24),
		}),
		notifyPost: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "payrecon_notification_post_duration_seconds", Help: "Time the application took to answer one successful notification.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}),
	}
	for _, o := range []string{"delivered", "failed", "dead_lettered", "waiting"} {
		m.notified.WithLabelValues(o)
	}
	for _, tg := range targets { // every target's series exists from the start
		m.pruned.WithLabelValues(tg.Name)
	}
	if reg != nil {
		reg.MustRegister(m.outcomes, m.apply, m.delay, m.pruned, m.notified, m.notifyDelay, m.notifyPost)
	}
	return m
}

func (m *metrics) observe(outcome string, took time.Duration, delay time.Duration) {
	m.outcomes.WithLabelValues(outcome).Inc()
	if took > 0 {
		m.apply.Observe(took.Seconds())
	}
	if delay > 0 {
		m.delay.Observe(delay.Seconds())
	}
}
