package sweep

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/payrecon/payrecon"
)

// metrics is the sweep's Prometheus instrumentation.
type metrics struct {
	rows          *prometheus.CounterVec
	batches       *prometheus.CounterVec
	batchDuration *prometheus.HistogramVec
	opened        *prometheus.CounterVec
	resolved      *prometheus.CounterVec
	commands      *prometheus.CounterVec
	cycles        *prometheus.CounterVec
	cycleDuration *prometheus.GaugeVec
	pauses        *prometheus.CounterVec
	leased        *prometheus.GaugeVec
}

// newMetrics builds the sweep's metrics and registers them with reg (nil:
// not registered, as in tests).
func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		rows: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "payrecon_sweep_rows_total", Help: "Rows checked by the sweep, by verdict.",
		}, []string{"job", "verdict"}),
		batches: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "payrecon_sweep_batches_total", Help: "Batches committed.",
		}, []string{"job"}),
		batchDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "payrecon_sweep_batch_duration_seconds", Help: "Time to read, check and commit one batch.",
			Buckets: prometheus.ExponentialBuckets(0.01, 2, 12),
		}, []string{"job"}),
		opened: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "payrecon_findings_opened_total", Help: "Findings opened, by kind.",
		}, []string{"job", "kind"}),
		resolved: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "payrecon_findings_resolved_by_sweep_total", Help: "Findings the sweep resolved (healed, superseded, local row appeared), by kind.",
		}, []string{"job", "kind"}),
		commands: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "payrecon_sweep_repair_commands_total", Help: "Repair commands queued to the outbox.",
		}, []string{"job"}),
		cycles: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "payrecon_sweep_cycles_total", Help: "Cycles completed (cursor wrapped).",
		}, []string{"job"}),
		cycleDuration: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "payrecon_sweep_last_cycle_duration_seconds", Help: "Duration of the last cycle this process completed.",
		}, []string{"job"}),
		leased: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "payrecon_sweep_lease_held", Help: "1 while this process holds the job's sweep lease (exactly one replica should).",
		}, []string{"job"}),
		pauses: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "payrecon_sweep_outage_pauses_total", Help: "Pauses because most Stripe calls of a batch failed.",
		}, []string{"job", "reason"}),
	}
	if reg != nil {
		// Several sweepers (a full job and its recent window) may share one
		// Registerer: their metrics carry the job as a label, so the second
		// one uses the collectors the first registered.
		m.rows = register(reg, m.rows)
		m.batches = register(reg, m.batches)
		m.batchDuration = register(reg, m.batchDuration)
		m.opened = register(reg, m.opened)
		m.resolved = register(reg, m.resolved)
		m.commands = register(reg, m.commands)
		m.cycles = register(reg, m.cycles)
		m.cycleDuration = register(reg, m.cycleDuration)
		m.pauses = register(reg, m.pauses)
		m.leased = register(reg, m.leased)
	}
	return m
}

// register registers c with reg, or returns the equal collector registered
// before it.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing
			}
		}
		panic(err)
	}
	return c
}

func (m *metrics) batchDone(job string, r BatchReport, d time.Duration) {
	for v, n := range r.Counts {
		m.rows.WithLabelValues(job, string(v)).Add(float64(n))
	}
	for k, n := range r.Opened {
		m.opened.WithLabelValues(job, string(k)).Add(float64(n))
	}
	for k, n := range r.Closed {
		m.resolved.WithLabelValues(job, string(k)).Add(float64(n))
	}
	m.commands.WithLabelValues(job).Add(float64(r.Commands))
	m.batches.WithLabelValues(job).Inc()
	m.batchDuration.WithLabelValues(job).Observe(d.Seconds())
}

func (m *metrics) cycleDone(job string, r CycleReport) {
	m.cycles.WithLabelValues(job).Inc()
	m.cycleDuration.WithLabelValues(job).Set(r.Duration.Seconds())
}

func (m *metrics) pausedFor(job string, err error) {
	reason := "outage"
	if errors.Is(err, payrecon.ErrConcurrentRun) {
		reason = "concurrent_run"
	}
	m.pauses.WithLabelValues(job, reason).Inc()
}

func (m *metrics) setLeased(job string, held bool) {
	v := 0.0
	if held {
		v = 1
	}
	m.leased.WithLabelValues(job).Set(v)
}

// retried counts a continuous sweep interrupted by a failure it retries
// (the database unavailable, the lease unobtainable).
func (m *metrics) retried(job string) {
	m.pauses.WithLabelValues(job, "interrupted").Inc()
}
