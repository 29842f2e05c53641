package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/internal/sqlq"
)

// Day is 24 hours, the unit retentions are written in.
const Day = 24 * time.Hour

// Names of the built-in prune targets (PruneTargets): report and metric
// labels, and the --retain-<name> flags (with dashes).
const (
	PruneOutbox         = "outbox"
	PruneWebhookEvents  = "webhook_events"
	PruneConsoleSamples = "console_samples"
	PruneFindings       = "findings"
)

// Default retentions of the built-in targets; zero keeps rows for ever.
const (
	// RetainOutboxDefault: a processed repair command is the record of what
	// a repair did; findings show reads it. A month covers a monthly review
	// of findings; the finding keeps its repair outcome after the command
	// goes. (Debezium, if it reads the outbox, captured the row at insert.)
	RetainOutboxDefault = 30 * Day
	// RetainWebhookEventsDefault: the dedupe of Stripe events. Stripe
	// retries a webhook for up to 3 days and lists events (the events
	// catch-up feeds them through the same dedupe) for 30 days, so an event
	// id must outlive 30 days; 45 leaves two weeks of margin.
	RetainWebhookEventsDefault = 45 * Day
	// RetainWebhookEventsMin is the least retention of webhook events
	// payrecon accepts: Stripe's 30-day event window.
	RetainWebhookEventsMin = 30 * Day
	// RetainConsoleSamplesDefault: the console's charts; Prometheus keeps
	// the long history of the same figures.
	RetainConsoleSamplesDefault = 14 * Day
	// RetainFindingsDefault: findings are the audit trail: kept for ever
	// unless the operator says otherwise.
	RetainFindingsDefault time.Duration = 0
)

// PruneBatchDefault is how many rows one prune batch examines at most.
const PruneBatchDefault = 1000

// PruneTarget is one kind of history the pruner deletes: the rows of Table
// whose TimeColumn is older than now − Retention, except those Keep
// protects. Adding a target is one entry in PruneTargets (and, if some rows
// must stay however old, one prune/keep_<name>.sql).
type PruneTarget struct {
	// Name labels the target in reports, in payrecon_prune_rows_total and in
	// the --retain-<name> flag.
	Name string `json:"target"`
	// Table is the table (found through search_path). A target whose table
	// does not exist is skipped: a table another part of payrecon adds later.
	Table string `json:"table"`
	// TimeColumn is a row's age. It must lead an index: batches walk it in
	// order. A row where it is NULL is never pruned.
	TimeColumn string `json:"time_column"`
	// Keep names prune/keep_<Keep>.sql, a boolean SQL expression over the
	// row (alias t): rows for which it is true stay, however old. Empty:
	// none.
	Keep string `json:"-"`
	// Retention is how long rows are kept; zero keeps them for ever.
	Retention time.Duration `json:"-"`
	// MinRetention is the least non-zero Retention that is safe, and
	// MinReason says why.
	MinRetention time.Duration `json:"-"`
	MinReason    string        `json:"-"`
}

// RetentionError is a retention ValidatePruneTargets refuses.
type RetentionError struct {
	Target    string
	Retention time.Duration
	// Min is the least it may be (other than zero: for ever), Reason why.
	Min    time.Duration
	Reason string
}

func (e *RetentionError) Error() string {
	if e.Retention < 0 {
		return fmt.Sprintf("retention of %s must not be negative, not %s", e.Target, e.Retention)
	}
	return fmt.Sprintf("retention of %s must be at least %s (or forever), not %s: %s",
		e.Target, FormatRetention(e.Min), FormatRetention(e.Retention), e.Reason)
}

// PruneTargets returns the built-in targets with their default retentions:
// processed outbox commands, Stripe webhook events, the console's samples,
// and (only when given a retention) resolved findings. Completed River jobs
// are River's: its cleaner deletes them (relay.Config.RiverJobRetention).
func PruneTargets() []PruneTarget {
	return []PruneTarget{
		{Name: PruneOutbox, Table: "outbox", TimeColumn: "processed_at", Keep: "outbox", Retention: RetainOutboxDefault},
		{Name: PruneWebhookEvents, Table: "stripe_webhook_events", TimeColumn: "received_at",
			Retention: RetainWebhookEventsDefault, MinRetention: RetainWebhookEventsMin,
			MinReason: "Stripe can still send or list an event up to 30 days old, and the dedupe must know it"},
		// The console's samples (migration 00011): one row a minute for its
		// 7-day charts.
		{Name: PruneConsoleSamples, Table: "console_samples", TimeColumn: "minute", Retention: RetainConsoleSamplesDefault},
		{Name: PruneFindings, Table: "reconciliation_findings", TimeColumn: "resolved_at", Keep: "findings", Retention: RetainFindingsDefault},
	}
}

// ValidatePruneTargets reports the first target that cannot work: an
// unknown keep rule, a negative retention, or one below its minimum.
func ValidatePruneTargets(targets []PruneTarget) error {
	seen := map[string]bool{}
	for _, tg := range targets {
		switch {
		case tg.Name == "" || tg.Table == "" || tg.TimeColumn == "":
			return fmt.Errorf("prune target %q: name, table and time column are required", tg.Name)
		case seen[tg.Name]:
			return fmt.Errorf("prune target %q given twice", tg.Name)
		case tg.Retention < 0 || (tg.Retention > 0 && tg.Retention < tg.MinRetention):
			return &RetentionError{Target: tg.Name, Retention: tg.Retention, Min: tg.MinRetention, Reason: tg.MinReason}
		}
		if tg.Keep != "" && !pruneQueries.Has("keep_"+tg.Keep) {
			return fmt.Errorf("prune target %q: no keep rule prune/keep_%s.sql", tg.Name, tg.Keep)
		}
		seen[tg.Name] = true
	}
	return nil
}

// FormatRetention writes a retention as an operator would: "45d", "36h",
// "forever".
func FormatRetention(d time.Duration) string {
	switch {
	case d == 0:
		return "forever"
	case d%Day == 0:
		return fmt.Sprintf("%dd", d/Day)
	}
	return d.String()
}

// PrunerConfig configures a Pruner. The zero value is usable.
type PrunerConfig struct {
	// Targets are what to prune; nil means PruneTargets().
	Targets []PruneTarget
	// BatchSize bounds the rows one batch examines; default
	// PruneBatchDefault.
	BatchSize int
	// Clock gives "now" for the retentions; default the system clock.
	Clock payrecon.Clock
	// Logger receives a line per target that deleted something; nil
	// discards.
	Logger *slog.Logger
	// DeletedFunc, when set, hears how many rows each batch deleted (for
	// payrecon_prune_rows_total).
	DeletedFunc func(target string, rows int64)
}

// Pruner deletes history past its retention, a short bounded batch at a
// time, never holding a lock longer than one batch. It is safe to run from
// several processes at once: a row is deleted by exactly one of them.
type Pruner struct {
	pool *pgxpool.Pool
	cfg  PrunerConfig
}

// NewPruner returns a pruner on pool.
func NewPruner(pool *pgxpool.Pool, cfg PrunerConfig) (*Pruner, error) {
	if cfg.Targets == nil {
		cfg.Targets = PruneTargets()
	}
	if err := ValidatePruneTargets(cfg.Targets); err != nil {
		return nil, err
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = PruneBatchDefault
	}
	if cfg.Clock == nil {
		cfg.Clock = payrecon.SystemClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Pruner{pool: pool, cfg: cfg}, nil
}

// Targets returns the pruner's targets.
func (p *Pruner) Targets() []PruneTarget { return append([]PruneTarget(nil), p.cfg.Targets...) }

// PruneOpts are the options of one Prune.
type PruneOpts struct {
	// DryRun counts what would go, deleting nothing.
	DryRun bool
	// Deadline, when set, is when Prune stops starting batches; what is
	// left waits for the next run.
	Deadline time.Time
}

// PruneReport says what one Prune did.
type PruneReport struct {
	DryRun  bool           `json:"dry_run"`
	Targets []TargetReport `json:"targets"`
	// Deleted is the total deleted (or, in a dry run, that would be).
	Deleted int64 `json:"deleted"`
}

// TargetReport is what Prune did to one target.
type TargetReport struct {
	Target string `json:"target"`
	Table  string `json:"table"`
	// Retention as an operator writes it ("45d", "forever").
	Retention string `json:"retention"`
	// Before is the cutoff: rows older than this were candidates.
	Before time.Time `json:"before,omitzero"`
	// Deleted counts the rows deleted; in a dry run, those that would be.
	Deleted int64 `json:"deleted"`
	// Kept counts, in a dry run, the rows past the retention that a rule
	// keeps (an unprocessed command's job, an open finding…).
	Kept int64 `json:"kept"`
	// Batches and LongestBatch: how the deletion was cut up.
	Batches      int           `json:"batches"`
	LongestBatch time.Duration `json:"longest_batch_ns"`
	// Skipped says why the target was not pruned: kept for ever, the
	// table does not exist, the run's time was spent.
	Skipped string `json:"skipped,omitempty"`
	// Unfinished: the deadline came before the target was done.
	Unfinished bool `json:"unfinished,omitempty"`
}

// Prune runs every target in turn.
func (p *Pruner) Prune(ctx context.Context, opts PruneOpts) (PruneReport, error) {
	rep := PruneReport{DryRun: opts.DryRun}
	now := p.cfg.Clock.Now()
	for _, tg := range p.cfg.Targets {
		tr, err := p.pruneTarget(ctx, tg, now, opts)
		rep.Targets = append(rep.Targets, tr)
		rep.Deleted += tr.Deleted
		if err != nil {
			return rep, err
		}
	}
	return rep, nil
}

func (p *Pruner) pruneTarget(ctx context.Context, tg PruneTarget, now time.Time, opts PruneOpts) (TargetReport, error) {
	tr := TargetReport{Target: tg.Name, Table: tg.Table, Retention: FormatRetention(tg.Retention)}
	if tg.Retention == 0 {
		tr.Skipped = "kept for ever"
		return tr, nil
	}
	var exists bool
	if err := p.pool.QueryRow(ctx, queries.Get("relation_exists"), pgx.StrictNamedArgs{"name": tg.Table}).Scan(&exists); err != nil {
		return tr, fmt.Errorf("prune %s: look up table %s: %w", tg.Name, tg.Table, err)
	}
	if !exists {
		tr.Skipped = "table " + tg.Table + " does not exist"
		return tr, nil
	}
	tr.Before = now.Add(-tg.Retention)
	if opts.DryRun {
		err := p.pool.QueryRow(ctx, p.statement("count", tg), pgx.StrictNamedArgs{"before": tr.Before}).Scan(&tr.Deleted, &tr.Kept)
		if err != nil {
			return tr, fmt.Errorf("prune %s: count rows before %s: %w", tg.Name, tr.Before.Format(time.RFC3339), err)
		}
		return tr, nil
	}
	batch := p.statement("batch", tg)
	from := pgtype.Timestamptz{InfinityModifier: pgtype.NegativeInfinity, Valid: true}
	for {
		if !opts.Deadline.IsZero() && !p.cfg.Clock.Now().Before(opts.Deadline) {
			tr.Unfinished = true
			break
		}
		var (
			deleted  int64
			examined int
			last     *time.Time
		)
		start := time.Now() // a measurement of the batch, not the domain's time
		err := p.pool.QueryRow(ctx, batch, pgx.StrictNamedArgs{"from": from, "before": tr.Before, "limit": p.cfg.BatchSize}).
			Scan(&deleted, &examined, &last)
		if err != nil {
			return tr, fmt.Errorf("prune %s: batch from %s: %w", tg.Name, timeText(from), err)
		}
		tr.LongestBatch = max(tr.LongestBatch, time.Since(start))
		tr.Batches++
		tr.Deleted += deleted
		if deleted > 0 && p.cfg.DeletedFunc != nil {
			p.cfg.DeletedFunc(tg.Name, deleted)
		}
		if examined < p.cfg.BatchSize || last == nil {
			break // the range is exhausted
		}
		// The next batch starts at the last row examined: rows at that very
		// time not yet examined are not missed (the ones deleted are gone,
		// the kept ones are looked at again). Only a whole batch at one time
		// with nothing deleted (all kept, or held by another pruner, which
		// then deletes them) would hold the walk in place: step past it.
		next := *last
		if deleted == 0 && from.InfinityModifier == pgtype.Finite && !next.After(from.Time) {
			next = from.Time.Add(time.Microsecond)
		}
		from = pgtype.Timestamptz{Time: next, Valid: true}
	}
	if tr.Deleted > 0 {
		p.cfg.Logger.Info("prune: deleted history past its retention", slog.String("target", tg.Name),
			slog.Int64("rows", tr.Deleted), slog.Int("batches", tr.Batches), slog.String("retention", tr.Retention),
			slog.Duration("longest_batch", tr.LongestBatch), slog.Bool("unfinished", tr.Unfinished))
	}
	return tr, nil
}

// statement fills a prune template in for tg.
func (p *Pruner) statement(name string, tg PruneTarget) string {
	keep := "false"
	if tg.Keep != "" {
		keep = pruneQueries.Get("keep_" + tg.Keep)
	}
	return strings.NewReplacer(
		"{{table}}", pgx.Identifier{tg.Table}.Sanitize(),
		"{{time}}", pgx.Identifier{tg.TimeColumn}.Sanitize(),
		"{{keep}}", keep,
	).Replace(pruneQueries.Get(name))
}

func timeText(t pgtype.Timestamptz) string {
	if t.InfinityModifier != pgtype.Finite {
		return "the oldest row"
	}
	return t.Time.Format(time.RFC3339Nano)
}

// ErrNoPruneTarget: a retention names no target.
var ErrNoPruneTarget = errors.New("no such prune target")

// WithRetentions returns targets with the retentions of the named targets
// replaced; a name no target has is ErrNoPruneTarget.
func WithRetentions(targets []PruneTarget, retentions map[string]time.Duration) ([]PruneTarget, error) {
	out := append([]PruneTarget(nil), targets...)
	for name, r := range retentions {
		found := false
		for i := range out {
			if out[i].Name == name {
				out[i].Retention, found = r, true
			}
		}
		if !found {
			return nil, fmt.Errorf("retention for %q: %w", name, ErrNoPruneTarget)
		}
	}
	return out, nil
}

//go:embed prune/*.sql
var pruneFiles embed.FS

// pruneQueries are the prune templates and keep rules, by file name.
var pruneQueries = sqlq.New("postgres/prune", pruneFiles, "prune")
