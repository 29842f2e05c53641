package postgres

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/payrecon/payrecon"
)

// PayoutsCollector exposes the payouts check's figures to Prometheus, read
// on each scrape over the payouts created within the check's window: how
// many there are, how many are flagged by their own check (by problem),
// how many automatic ones still wait for their lines, and how many lines
// name a PaymentIntent with no local payment.
type PayoutsCollector struct {
	pool   *pgxpool.Pool
	since  time.Duration
	clock  payrecon.Clock
	logger *slog.Logger

	payouts, flagged, awaiting, unmatched *prometheus.Desc
}

var _ prometheus.Collector = (*PayoutsCollector)(nil)

// NewPayoutsCollector returns a collector over the payouts created within
// since of now.
func NewPayoutsCollector(pool *pgxpool.Pool, since time.Duration, clock payrecon.Clock, logger *slog.Logger) *PayoutsCollector {
	if clock == nil {
		clock = payrecon.SystemClock{}
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &PayoutsCollector{pool: pool, since: since, clock: clock, logger: logger,
		payouts:   prometheus.NewDesc("payrecon_payouts", "Payouts read, created within the payouts check's window (--since).", nil, nil),
		flagged:   prometheus.NewDesc("payrecon_payouts_flagged", "Payouts of the window flagged by their own check, by problem: lines_do_not_add_up (the lines read in full do not add up to the amount), failed_after_paid, canceled_after_paid.", []string{"problem"}, nil),
		awaiting:  prometheus.NewDesc("payrecon_payouts_awaiting_lines", "Automatic payouts of the window whose lines are not read yet (Stripe's reconciliation in progress, or a read that failed).", nil, nil),
		unmatched: prometheus.NewDesc("payrecon_payout_lines_unmatched", "Lines of the window's payouts that name a PaymentIntent with no local payment.", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *PayoutsCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.payouts, c.flagged, c.awaiting, c.unmatched} {
		ch <- d
	}
}

// Collect implements prometheus.Collector; a failed read is logged and
// exports nothing (payrecon_monitor_up says whether the database answers).
func (c *PayoutsCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var total, lines, failed, canceled, awaiting, unmatched int64
	err := c.pool.QueryRow(ctx, queries.Get("payouts_flagged"), pgx.StrictNamedArgs{
		"since": c.clock.Now().Add(-c.since), "failed": string(payrecon.PayoutFailed), "canceled": string(payrecon.PayoutCanceled),
	}).Scan(&total, &lines, &failed, &canceled, &awaiting, &unmatched)
	if err != nil {
		c.logger.Warn("read the payout figures for metrics", "error", err)
		return
	}
	g := func(d *prometheus.Desc, v int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v), labels...)
	}
	g(c.payouts, total)
	g(c.flagged, lines, string(payrecon.ProblemLinesDoNotAddUp))
	g(c.flagged, failed, string(payrecon.ProblemFailedAfterPaid))
	g(c.flagged, canceled, string(payrecon.ProblemCanceledAfterPaid))
	g(c.awaiting, awaiting)
	g(c.unmatched, unmatched)
}
