package demo

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/payrecon/payrecon"
)

// Report is what a demo run found, read back from the database after the
// service stopped.
type Report struct {
	// Database is the demo database's name; DatabaseURL (password
	// redacted) is set when it was kept.
	Database    string `json:"database"`
	DatabaseURL string `json:"database_url,omitempty"`
	Kept        bool   `json:"kept"`
	Seed        uint64 `json:"seed"`
	// Payments counts the local rows; OrphanIntents the PaymentIntents
	// seeded with no local row.
	Payments      int `json:"payments"`
	OrphanIntents int `json:"orphan_intents"`
	// Kinds has one entry per finding kind, in payrecon.Kinds order.
	Kinds []KindReport `json:"kinds"`
	// FalseFindings counts findings on a row or intent that was not
	// injected with that kind.
	FalseFindings       int      `json:"false_findings"`
	FalseFindingSamples []string `json:"false_finding_samples,omitempty"`
	// InSyncRows counts the rows meant to be in sync; InSyncTouched those
	// whose status, version or updated_at changed while the service ran.
	InSyncRows    int `json:"in_sync_rows"`
	InSyncTouched int `json:"in_sync_touched"`
	// ReviewRows counts the rows injected with a drift that is never
	// repaired automatically; ReviewTouched those that changed anyway.
	ReviewRows     int      `json:"review_rows"`
	ReviewTouched  int      `json:"review_touched"`
	TouchedSamples []string `json:"touched_samples,omitempty"`
	// WrongState counts rows the webhooks did not leave in the state the
	// scenario expects (a duplicate applied twice, a late event applied):
	// checked before the service starts.
	WrongState        int      `json:"wrong_state"`
	WrongStateSamples []string `json:"wrong_state_samples,omitempty"`
	// Webhooks is the webhook scenario.
	Webhooks WebhookReport `json:"webhooks"`
	// GraceOff: the sweep ran without a grace window, because every
	// webhook had landed before it started.
	GraceOff bool        `json:"grace_off"`
	Sweep    SweepReport `json:"sweep"`
	// Events is the live phase: events caught up while the endpoint was
	// down.
	Events  EventsReport `json:"events"`
	Repairs RepairReport `json:"repairs"`
	// Notifications is the shop that hears every transition.
	Notifications NotificationReport `json:"notifications"`
	// Settlement is the payouts phase.
	Settlement SettlementReport `json:"settlement"`
	// Platform is `demo --accounts`'s: the scorecard per account (nil
	// without it).
	Platform *PlatformReport `json:"platform,omitempty"`
	// Sessions is the scorecard of the rows that record a Checkout Session
	// and no PaymentIntent (their drifts are in Kinds too).
	Sessions SessionReport `json:"sessions"`
	Timings  Timings       `json:"timings"`
}

// KindReport is one line of the table.
type KindReport struct {
	Kind payrecon.Kind `json:"kind"`
	// Repairable kinds are repaired automatically; the others wait for a
	// person.
	Repairable bool `json:"repairable"`
	// Injected counts rows (or, for missing_locally, intents) injected with
	// the kind; Detected those with a finding of the kind; Missed those
	// without.
	Injected int `json:"injected"`
	Detected int `json:"detected"`
	// Repaired counts findings resolved "repaired" whose payment is in the
	// repair's target state with its version exactly one higher than
	// before the run.
	Repaired int `json:"repaired"`
	// LeftForReview counts injected subjects with an open finding of the
	// kind.
	LeftForReview int `json:"left_for_review"`
	Missed        int `json:"missed"`
}

// SessionReport is the session rows' part of the scorecard.
type SessionReport struct {
	// Rows counts the session rows; Kinds has a line per kind injected on
	// them (settlement kinds included), in payrecon.Kinds order.
	Rows  int          `json:"rows"`
	Kinds []KindReport `json:"kinds"`
}

// problems lists what went wrong with the session rows.
func (s SessionReport) problems() []string {
	var out []string
	if s.Rows == 0 {
		out = append(out, "sessions: no session row was seeded")
	}
	for _, k := range s.Kinds {
		if k.Missed > 0 || (k.Repairable && k.Repaired != k.Injected) {
			out = append(out, fmt.Sprintf("sessions: %s on session rows: %d injected, %d detected, %d repaired", k.Kind, k.Injected, k.Detected, k.Repaired))
		}
	}
	return out
}

// SweepReport describes the one sweep cycle (on a platform, Config.Accounts,
// every account's: Rows is the sum of their cycles' rows; Batches and
// Verdicts are not known there, the batches running as River jobs, and stay
// zero and empty).
type SweepReport struct {
	// Rows were swept in Batches batches (the wrap not counted), in
	// Duration (from the service being ready to the cursor's wrap).
	Rows          int                      `json:"rows"`
	Batches       int                      `json:"batches"`
	Duration      time.Duration            `json:"cycle_ns"`
	RowsPerSecond float64                  `json:"rows_per_second"`
	Verdicts      map[payrecon.Verdict]int `json:"verdicts"`
	// StripeRequests counts the requests the simulator answered while the
	// service ran, in all and by endpoint.
	StripeRequests   int64            `json:"stripe_requests"`
	StripeByEndpoint map[string]int64 `json:"stripe_requests_by_endpoint"`
}

// RepairReport describes the repair queue.
type RepairReport struct {
	// Commands counts the repair commands queued; Applied those that moved
	// their payment; Unprocessed those left in the outbox.
	Commands    int `json:"commands"`
	Applied     int `json:"applied"`
	Unprocessed int `json:"unprocessed"`
	// MedianLatency and MaxLatency run from a finding's detection to its
	// repair.
	MedianLatency time.Duration `json:"median_latency_ns"`
	MaxLatency    time.Duration `json:"max_latency_ns"`
	// DrainAfterCycle is how long the queue took to empty after the
	// cycle completed.
	DrainAfterCycle time.Duration `json:"drain_after_cycle_ns"`
}

// Timings are the phases' wall-clock times.
type Timings struct {
	Setup    time.Duration `json:"setup_ns"`
	Seed     time.Duration `json:"seed_ns"`
	Webhooks time.Duration `json:"webhooks_ns"`
	Service  time.Duration `json:"service_ns"`
	Settle   time.Duration `json:"settle_ns"`
	Total    time.Duration `json:"total_ns"`
}

// OK reports whether payrecon did everything right: every injected drift
// detected, every repairable one repaired and nothing left in the outbox,
// no false finding, no row changed that should not have been, and the
// webhooks left every row where the scenario expects it.
func (r Report) OK() bool { return len(r.Kinds) > 0 && len(r.Problems()) == 0 }

// Problems lists, in words, why the report is not OK.
func (r Report) Problems() []string {
	var out []string
	for _, k := range r.Kinds {
		if k.Missed > 0 {
			out = append(out, fmt.Sprintf("%d of %d %s missed", k.Missed, k.Injected, k.Kind))
		}
		if k.Repairable && k.Repaired != k.Injected {
			out = append(out, fmt.Sprintf("%d of %d %s repaired", k.Repaired, k.Injected, k.Kind))
		}
	}
	if r.FalseFindings > 0 {
		out = append(out, fmt.Sprintf("%d false findings", r.FalseFindings))
	}
	if r.InSyncTouched > 0 {
		out = append(out, fmt.Sprintf("%d in-sync rows touched", r.InSyncTouched))
	}
	if r.ReviewTouched > 0 {
		out = append(out, fmt.Sprintf("%d rows left for review changed", r.ReviewTouched))
	}
	if r.WrongState > 0 {
		out = append(out, fmt.Sprintf("%d rows not in the state their webhooks should leave", r.WrongState))
	}
	if e := r.Events; e.Missed > 0 || e.AppliedTwice > 0 || e.CaughtUp != e.Lost || e.Events == 0 {
		out = append(out, fmt.Sprintf("live events: %d of %d lost events caught up, %d rows missed, %d applied twice", e.CaughtUp, e.Lost, e.Missed, e.AppliedTwice))
	}
	if r.Repairs.Unprocessed > 0 {
		out = append(out, fmt.Sprintf("%d repair commands left unprocessed", r.Repairs.Unprocessed))
	}
	out = append(out, r.Sessions.problems()...)
	out = append(out, r.Notifications.problems()...)
	out = append(out, r.Settlement.problems()...)
	out = append(out, r.Platform.problems()...)
	return out
}

// Kind returns the line of kind k.
func (r Report) Kind(k payrecon.Kind) KindReport {
	for _, kr := range r.Kinds {
		if kr.Kind == k {
			return kr
		}
	}
	return KindReport{Kind: k}
}

// finding is what the report reads of a finding.
type finding struct {
	paymentID  *int64
	intentID   string
	kind       payrecon.Kind
	open       bool
	resolution string
}

// subject names what a finding is about: a payment, or an intent with no
// payment.
type subject struct {
	payment int64
	intent  string
}

// collect reads the findings, the payments and the outbox into the report.
func (r *runner) collect(ctx context.Context) error {
	res, err := r.pool.Query(ctx, queries.Get("findings"))
	if err != nil {
		return fmt.Errorf("read findings: %w", err)
	}
	findings, err := pgx.CollectRows(res, func(row pgx.CollectableRow) (finding, error) {
		var f finding
		err := row.Scan(&f.paymentID, &f.intentID, &f.kind, &f.open, &f.resolution)
		return f, err
	})
	if err != nil {
		return fmt.Errorf("read findings: %w", err)
	}
	final, err := r.readRows(ctx)
	if err != nil {
		return err
	}

	orphans := make(map[string]orphan, len(r.plan.orphans))
	for _, o := range r.plan.orphans {
		orphans[o.intentID] = o
	}
	specs := roleSpecs()
	detected := map[payrecon.Kind]map[subject]bool{}
	open := map[payrecon.Kind]map[subject]bool{}
	repairedFinding := map[subject]bool{}
	mark := func(m map[payrecon.Kind]map[subject]bool, k payrecon.Kind, s subject) {
		if m[k] == nil {
			m[k] = map[subject]bool{}
		}
		m[k][s] = true
	}
	for _, f := range findings {
		var (
			s    subject
			want payrecon.Kind
			what string
		)
		var also payrecon.Kind // a settlement drift, beside want
		if f.paymentID != nil {
			s = subject{payment: *f.paymentID}
			if i, ok := r.byID[*f.paymentID]; ok {
				want, also = r.plan.rows[i].kind(), r.plan.settlementKind(i)
				what = fmt.Sprintf("payment %d (%s)", *f.paymentID, specs[r.plan.rows[i].role].name)
			} else {
				what = fmt.Sprintf("payment %d (not seeded by the demo)", *f.paymentID)
			}
		} else {
			s = subject{intent: f.intentID}
			what = "intent " + f.intentID
			if o, ok := orphans[f.intentID]; ok {
				want, also = payrecon.KindMissingLocally, o.settlementKind()
				what += " (orphan)"
			}
		}
		if f.kind != want && (also == "" || f.kind != also) {
			r.rep.FalseFindings++
			r.rep.FalseFindingSamples = sample(r.rep.FalseFindingSamples, fmt.Sprintf("%s on %s", f.kind, what))
			continue
		}
		mark(detected, f.kind, s)
		if f.open {
			mark(open, f.kind, s)
		}
		if f.resolution == string(payrecon.ResolvedRepaired) {
			repairedFinding[s] = true
		}
	}

	if err := r.collectLive(ctx, final); err != nil {
		return err
	}
	live := make(map[int]bool, len(r.plan.live))
	for _, i := range r.plan.live {
		live[i] = true
	}
	repaired := map[payrecon.Kind]int{}
	repairedBy := map[int]int{} // by account
	sessionRepaired := map[payrecon.Kind]int{}
	for i, pr := range r.plan.rows {
		id := r.ids[i]
		if live[i] { // moved on purpose in the live phase: checked by collectLive
			continue
		}
		before, after := r.snap[id], final[id]
		if pr.repairable() {
			if repairedFinding[subject{payment: id}] && after.status == pr.expectedAfter() && after.version == before.version+1 {
				repaired[pr.kind()]++
				repairedBy[pr.account]++
				if pr.session() {
					sessionRepaired[pr.kind()]++
				}
			}
			continue
		}
		if pr.kind() == "" {
			r.rep.InSyncRows++
		} else {
			r.rep.ReviewRows++
		}
		if after.same(before) {
			continue
		}
		if pr.kind() == "" {
			r.rep.InSyncTouched++
		} else {
			r.rep.ReviewTouched++
		}
		r.rep.TouchedSamples = sample(r.rep.TouchedSamples, fmt.Sprintf("payment %d (%s): %s v%d → %s v%d, updated_at %s → %s",
			id, specs[pr.role].name, before.status, before.version, after.status, after.version,
			before.updatedAt.Format(time.RFC3339Nano), after.updatedAt.Format(time.RFC3339Nano)))
	}

	injected := r.plan.injected()
	for _, k := range payrecon.Kinds {
		kr := KindReport{Kind: k, Injected: injected[k], Detected: len(detected[k]), Repaired: repaired[k], LeftForReview: len(open[k])}
		kr.Missed = kr.Injected - kr.Detected
		kr.Repairable = k == payrecon.KindMissedSuccess || k == payrecon.KindMissedCancel
		r.rep.Kinds = append(r.rep.Kinds, kr)
	}

	r.collectSessions(detected, open, sessionRepaired)

	if err := r.collectAccounts(ctx, detected, open, repairedBy); err != nil {
		return err
	}

	var median, maxLatency float64
	err = r.pool.QueryRow(ctx, queries.Get("repairs"), pgx.StrictNamedArgs{
		"applied": string(payrecon.Applied), "repaired": string(payrecon.ResolvedRepaired),
	}).Scan(&r.rep.Repairs.Commands, &r.rep.Repairs.Applied, &r.rep.Repairs.Unprocessed, &median, &maxLatency)
	if err != nil {
		return fmt.Errorf("read the outbox: %w", err)
	}
	r.rep.Repairs.MedianLatency = time.Duration(median * float64(time.Second))
	r.rep.Repairs.MaxLatency = time.Duration(maxLatency * float64(time.Second))
	return nil
}

// collectSessions counts, for the session rows, each kind injected and
// whether it was detected, repaired or left open.
func (r *runner) collectSessions(detected, open map[payrecon.Kind]map[subject]bool, repaired map[payrecon.Kind]int) {
	lines := map[payrecon.Kind]*KindReport{}
	count := func(k payrecon.Kind, s subject) {
		if k == "" {
			return
		}
		if lines[k] == nil {
			lines[k] = &KindReport{Kind: k, Repairable: k == payrecon.KindMissedSuccess || k == payrecon.KindMissedCancel}
		}
		l := lines[k]
		l.Injected++
		if detected[k][s] {
			l.Detected++
		} else {
			l.Missed++
		}
		if open[k][s] {
			l.LeftForReview++
		}
	}
	sr := SessionReport{Kinds: []KindReport{}}
	for i, pr := range r.plan.rows {
		if !pr.session() {
			continue
		}
		sr.Rows++
		s := subject{payment: r.ids[i]}
		count(pr.kind(), s)
		count(r.plan.settlementKind(i), s)
	}
	for _, k := range payrecon.Kinds {
		if l := lines[k]; l != nil {
			l.Repaired = repaired[k]
			sr.Kinds = append(sr.Kinds, *l)
		}
	}
	r.rep.Sessions = sr
}
