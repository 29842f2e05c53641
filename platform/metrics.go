package platform

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/payrecon/payrecon/sweep"
)

// metrics are the platform's figures, bounded in cardinality however many
// accounts there are: no label per account.
type metrics struct {
	accounts atomic.Int64 // accounts seen by the last discovery
	replicas atomic.Int64 // replicas sharing the platform budget
	batches  atomic.Int64 // account batches run by this replica
	rows     atomic.Int64 // rows they checked
	cycles   atomic.Int64 // account cycles they completed
}

func newMetrics() *metrics { return &metrics{} }

func (m *metrics) batch(b sweep.BatchReport) {
	m.batches.Add(1)
	m.rows.Add(int64(b.Scanned + b.Rechecked))
	if b.Wrapped {
		m.cycles.Add(1)
	}
}

// Collectors export the platform's figures (payrecon_platform_*), for the
// service's registry.
func (p *Platform) Collectors() []prometheus.Collector {
	m := p.metrics
	gauge := func(name, help string, v *atomic.Int64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, func() float64 { return float64(v.Load()) })
	}
	counter := func(name, help string, v *atomic.Int64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, func() float64 { return float64(v.Load()) })
	}
	return []prometheus.Collector{
		gauge("payrecon_platform_accounts", "Accounts payments has rows of (the platform's own included), at the last discovery.", &m.accounts),
		gauge("payrecon_platform_replicas", "Replicas sharing --platform-rps, as this one counts them.", &m.replicas),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "payrecon_platform_budget_rps",
			Help: "This replica's share of --platform-rps, in requests per second."}, func() float64 { return p.budget.Budget() }),
		counter("payrecon_platform_batches_total", "Account batches this replica ran.", &m.batches),
		counter("payrecon_platform_rows_total", "Rows those batches checked.", &m.rows),
		counter("payrecon_platform_cycles_total", "Account cycles this replica completed.", &m.cycles),
	}
}
