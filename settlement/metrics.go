package settlement

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/payrecon/payrecon"
)

type metrics struct {
	rounds *prometheus.CounterVec
	lines  prometheus.Counter
	read   prometheus.Counter
	opened *prometheus.CounterVec
	healed *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		rounds: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "payrecon_payouts_rounds_total",
			Help: "Payouts check rounds and single payout reads, by result: ok, unavailable (Stripe could not be asked), config_error (a key without Payouts: Read or Balance: Read), error.",
		}, []string{"result"}),
		lines: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "payrecon_payout_lines_read_total",
			Help: "Balance transactions read from Stripe as payout lines.",
		}),
		read: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "payrecon_payouts_read_total",
			Help: "Payouts whose lines were read in full.",
		}),
		opened: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "payrecon_settlement_findings_opened_total",
			Help: "Settlement findings opened by the payouts check, by kind.",
		}, []string{"kind"}),
		healed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "payrecon_settlement_findings_healed_total",
			Help: "Settlement findings the payouts check healed (the drift went), by kind.",
		}, []string{"kind"}),
	}
	if reg != nil {
		reg.MustRegister(m.rounds, m.lines, m.read, m.opened, m.healed)
	}
	return m
}

func (m *metrics) observe(rep *Report, err error) {
	result := "ok"
	switch {
	case err == nil:
	case errors.Is(err, payrecon.ErrConfig):
		result = "config_error"
	case errors.Is(err, payrecon.ErrUnavailable):
		result = "unavailable"
	default:
		result = "error"
	}
	m.rounds.WithLabelValues(result).Inc()
	m.lines.Add(float64(rep.Lines))
	m.read.Add(float64(rep.Read))
	for k, n := range rep.Opened {
		m.opened.WithLabelValues(string(k)).Add(float64(n))
	}
	for k, n := range rep.Healed {
		m.healed.WithLabelValues(string(k)).Add(float64(n))
	}
}
