package postgres

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/payrecon/payrecon"
)

// Collector exposes the database's reconciliation figures to Prometheus,
// read on each scrape with the planner's row estimate (never count(*)).
type Collector struct {
	// NotifyKind, when set before the collector is registered, is River's
	// job kind of notifications (relay.NotifyKind): their backlog and dead
	// letters are exported too.
	NotifyKind string
	// Accounts, when set before the collector is registered, is the base
	// sweep job of a platform's accounts (Connect): the lag is then its
	// worst account's, and the accounts' figures are exported without a
	// label per account.
	Accounts string

	monitor    *Monitor
	repairKind string
	clock      payrecon.Clock
	logger     *slog.Logger
	timeout    time.Duration

	up, lag, rows, growth, openFindings, backlog, backlogAge, deadLetters    *prometheus.Desc
	cycleAge, sinceCycle, lastCycle, progress, throughput, projected, margin *prometheus.Desc
	rechecks, resolvedDay                                                    *prometheus.Desc
	eventsAge, eventsResets, eventsLosses                                    *prometheus.Desc
	notifyBacklog, notifyDead                                                *prometheus.Desc
	held, heldAge                                                            *prometheus.Desc
	accountsBehind, accountsEventsAge, accountsEventsDelay                   *prometheus.Desc
}

var _ prometheus.Collector = (*Collector)(nil)

// NewCollector returns a collector on monitor; repairKind is River's job
// kind for repair commands (for dead letters).
func NewCollector(monitor *Monitor, repairKind string, clock payrecon.Clock, logger *slog.Logger) *Collector {
	if clock == nil {
		clock = payrecon.SystemClock{}
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, labels, nil)
	}
	return &Collector{
		monitor: monitor, repairKind: repairKind, clock: clock, logger: logger, timeout: 5 * time.Second,
		up:             d("payrecon_monitor_up", "1 when the reconciliation figures could be read from the database."),
		lag:            d("payrecon_reconciliation_lag_seconds", "Age of the verification of the row least recently verified (its creation if never)."),
		rows:           d("payrecon_payments_rows", "Rows in payments (planner estimate)."),
		growth:         d("payrecon_payments_new_rows_per_hour", "New payments rows per hour over the last 24 hours (G)."),
		openFindings:   d("payrecon_findings_open", "Open findings, by kind.", "kind"),
		backlog:        d("payrecon_outbox_backlog", "Repair commands in the outbox not yet applied."),
		backlogAge:     d("payrecon_outbox_oldest_age_seconds", "Age of the oldest unapplied repair command (0 when none)."),
		deadLetters:    d("payrecon_outbox_dead_letters", "Repair deliveries River gave up on (discarded or cancelled), waiting for an operator."),
		cycleAge:       d("payrecon_sweep_cycle_age_seconds", "Age of the current sweep cycle.", "job"),
		sinceCycle:     d("payrecon_sweep_since_last_cycle_seconds", "Time since the last completed cycle (absent when none completed).", "job"),
		lastCycle:      d("payrecon_sweep_cycle_duration_seconds", "Duration of the last completed cycle.", "job"),
		progress:       d("payrecon_sweep_cycle_progress_ratio", "Share of the table swept in the current cycle.", "job"),
		throughput:     d("payrecon_sweep_throughput_rows_per_second", "Measured sweep throughput (rows per second of sweeping).", "job"),
		projected:      d("payrecon_sweep_projected_cycle_seconds", "Projected cycle time from N, G and the measured throughput; +Inf when a cycle never completes.", "job"),
		margin:         d("payrecon_sweep_capacity_margin_rows_per_hour", "Sweep capacity minus growth (B × R − G); a cycle never completes when ≤ 0.", "job"),
		rechecks:       d("payrecon_sweep_rechecks_queued", "Rows queued for an early recheck, by reason.", "job", "reason"),
		eventsAge:      d("payrecon_events_cursor_age_seconds", "How far behind the events catch-up may be: time since a round last reached the newest event Stripe listed (since its start when none did).", "job"),
		eventsResets:   d("payrecon_events_cursor_resets_total", "Times the events cursor restarted from a time because its event was older than Stripe keeps or Stripe refused it.", "job"),
		eventsLosses:   d("payrecon_events_cursor_losses_total", "Resets that left events uncaught (older than Stripe's 30 days): those are left to the sweep.", "job"),
		notifyBacklog:  d("payrecon_notifications_backlog", "Notifications to the application not yet acknowledged (waiting, running or retrying)."),
		notifyDead:     d("payrecon_notifications_dead_letters", "Notifications River gave up on (discarded after about 3 days of attempts, or cancelled), waiting for an operator."),
		held:           d("payrecon_repairs_held", "Repair commands held for review (--repair-mode review) whose finding is open, waiting for an approval (payrecon repairs approve, the console)."),
		heldAge:        d("payrecon_repairs_held_oldest_age_seconds", "How long the longest-waiting held repair command has waited for an approval (0 when none)."),
		accountsBehind: d("payrecon_platform_accounts_behind", "Connect: accounts that completed no cycle within 24 h."),
		accountsEventsAge: d("payrecon_platform_events_worst_age_seconds",
			"Connect: how far behind the furthest-behind connected account's events catch-up may be."),
		accountsEventsDelay: d("payrecon_platform_events_worst_delay_seconds",
			"Connect: the longest last detection delay (Stripe's created to applied) among the connected accounts' events catch-ups."),
		resolvedDay: d("payrecon_findings_resolved_last_day", "Findings resolved in the last 24 hours, by kind and resolution (repaired, already_in_target, healed, superseded, local_row_appeared, operator).", "kind", "resolution"),
	}
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.up, c.lag, c.rows, c.growth, c.openFindings, c.backlog, c.backlogAge, c.deadLetters,
		c.cycleAge, c.sinceCycle, c.lastCycle, c.progress, c.throughput, c.projected, c.margin, c.rechecks, c.resolvedDay,
		c.eventsAge, c.eventsResets, c.eventsLosses, c.notifyBacklog, c.notifyDead, c.held, c.heldAge,
		c.accountsBehind, c.accountsEventsAge, c.accountsEventsDelay} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	st, as, err := c.monitor.Figures(ctx, c.clock.Now(), false, c.repairKind, c.Accounts)
	if errors.Is(err, ErrAccountsFigures) { // the platform's were read
		c.logger.Warn("read the accounts' figures for metrics", "error", err)
		err = nil
	}
	if err != nil {
		c.logger.Warn("read reconciliation figures for metrics", "error", err)
		ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 0)
		return
	}
	if as != nil {
		ch <- prometheus.MustNewConstMetric(c.accountsBehind, prometheus.GaugeValue, float64(as.Behind))
		ch <- prometheus.MustNewConstMetric(c.accountsEventsAge, prometheus.GaugeValue, as.EventsWorstAge.Seconds())
		ch <- prometheus.MustNewConstMetric(c.accountsEventsDelay, prometheus.GaugeValue, as.EventsWorstDelay.Seconds())
	}
	g := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	g(c.up, 1)
	if st.LagKnown {
		g(c.lag, st.Lag.Seconds())
	}
	g(c.rows, float64(st.Rows))
	g(c.growth, st.NewRowsPerHour)
	for _, k := range payrecon.Kinds {
		g(c.openFindings, float64(st.OpenFindings[k]), string(k))
	}
	for _, rc := range st.ResolvedLastDay {
		g(c.resolvedDay, float64(rc.Count), string(rc.Kind), string(rc.Resolution))
	}
	g(c.backlog, float64(st.OutboxBacklog))
	age := 0.0
	if !st.OutboxOldest.IsZero() {
		age = st.Now.Sub(st.OutboxOldest).Seconds()
	}
	g(c.backlogAge, age)
	g(c.deadLetters, float64(st.DeadLetters))
	g(c.held, float64(st.HeldRepairs))
	heldAge := 0.0
	if !st.HeldOldest.IsZero() {
		heldAge = max(0, st.Now.Sub(st.HeldOldest).Seconds())
	}
	g(c.heldAge, heldAge)
	if c.NotifyKind != "" {
		if q, err := c.monitor.Queue(ctx, c.NotifyKind); err != nil {
			c.logger.Warn("read the notifications' queue for metrics", "error", err)
		} else {
			g(c.notifyBacklog, float64(q.Backlog))
			g(c.notifyDead, float64(q.DeadLetters))
		}
	}
	for _, j := range st.Jobs {
		g(c.cycleAge, j.CycleAge.Seconds(), j.Job)
		if !j.LastCycleCompletedAt.IsZero() {
			g(c.sinceCycle, j.SinceLastCycle.Seconds(), j.Job)
			g(c.lastCycle, j.LastCycleDuration.Seconds(), j.Job)
		}
		g(c.throughput, j.Throughput, j.Job)
		if !j.Recent {
			g(c.progress, j.Progress, j.Job)
		}
		if j.Throughput > 0 && !j.Recent {
			proj := j.Projection.CycleTime.Seconds()
			if !j.Projection.Completes {
				proj = posInf
			}
			g(c.projected, proj, j.Job)
			g(c.margin, j.Projection.MarginPerHour, j.Job)
		}
		for _, reason := range []string{payrecon.RecheckUnverifiable, payrecon.RecheckGrace, payrecon.RecheckChanged} {
			g(c.rechecks, float64(j.Rechecks[reason]), j.Job, reason)
		}
	}
	for _, e := range st.Events {
		g(c.eventsAge, e.Age.Seconds(), e.Job)
		ch <- prometheus.MustNewConstMetric(c.eventsResets, prometheus.CounterValue, float64(e.Resets), e.Job)
		ch <- prometheus.MustNewConstMetric(c.eventsLosses, prometheus.CounterValue, float64(e.Losses), e.Job)
	}
}

var posInf = math.Inf(1)
