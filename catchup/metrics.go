package catchup

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/payrecon/payrecon"
)

// metrics is the catch-up's Prometheus instrumentation. The cursor's age and
// its resets as recorded in the database are the postgres collector's
// (payrecon_events_cursor_*): they hold whichever replica catches up.
type metrics struct {
	events *prometheus.CounterVec
	delay  prometheus.Histogram
	rounds *prometheus.CounterVec
	resets *prometheus.CounterVec
	leased prometheus.Gauge
}

// DelayBuckets are the detection delay histogram's buckets, in seconds:
// fine around one interval (30 s), coarse up to Stripe's 30 days.
var DelayBuckets = []float64{1, 2, 5, 10, 15, 20, 25, 30, 35, 45, 60, 120, 300, 900, 3600, 6 * 3600, 24 * 3600, 30 * 24 * 3600}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "payrecon_events_applied_total",
			Help: "Events the catch-up processed, by outcome: the canonical writer's (applied, already_in_target, moved_elsewhere, payment_missing), ignored, money_finding, held_for_review and not_applied (--repair-mode review, off), duplicate (the webhook or an earlier round had it) or refused (malformed).",
		}, []string{"outcome"}),
		delay: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "payrecon_events_detection_delay_seconds",
			Help:    "Time from an event's creation in Stripe to the catch-up applying it, for events the webhook had not delivered.",
			Buckets: DelayBuckets,
		}),
		rounds: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "payrecon_events_rounds_total",
			Help: "Catch-up rounds, by result: ok, unavailable (Stripe could not be asked), error, concurrent_run (another catcher moved the cursor).",
		}, []string{"result"}),
		resets: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "payrecon_events_cursor_restarts_total",
			Help: "Times this process restarted the events cursor from a time, by reason: expired (older than Stripe's 30 days) or refused (Stripe no longer has its event).",
		}, []string{"reason"}),
		leased: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "payrecon_events_lease_held",
			Help: "1 while this process holds the events catch-up lease (exactly one replica should).",
		}),
	}
	// Every outcome's series exists from the start, so that a rate over it
	// is 0, not absent, until the first event.
	for _, o := range []string{string(payrecon.Applied), string(payrecon.AlreadyInTarget), string(payrecon.MovedElsewhere),
		string(payrecon.PaymentMissing), payrecon.OutcomeIgnored, payrecon.OutcomeMoneyFinding, payrecon.OutcomeHeld,
		payrecon.OutcomeNotApplied, OutcomeDuplicate, OutcomeRefused} {
		m.events.WithLabelValues(o)
	}
	if reg != nil {
		reg.MustRegister(m.events, m.delay, m.rounds, m.resets, m.leased)
	}
	return m
}
