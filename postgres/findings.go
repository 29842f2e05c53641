package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"payrecon"
)

// Finding is one row of reconciliation_findings.
type Finding struct {
	ID             int64                `json:"id"`
	PaymentID      *int64               `json:"payment_id"`
	IntentID       string               `json:"stripe_payment_intent_id,omitempty"`
	Kind           payrecon.Kind        `json:"kind"`
	Verdict        payrecon.Verdict     `json:"verdict"`
	LocalStatus    string               `json:"local_status"`
	ExternalStatus string               `json:"external_status,omitempty"`
	Reason         string               `json:"reason,omitempty"`
	RepairCommand  payrecon.Command     `json:"repair_command,omitempty"`
	RepairOutcome  string               `json:"repair_outcome,omitempty"`
	Job            string               `json:"job,omitempty"`
	DetectedAt     time.Time            `json:"detected_at"`
	ResolvedAt     *time.Time           `json:"resolved_at,omitempty"`
	Resolution     *payrecon.Resolution `json:"resolution,omitempty"`
	ResolvedBy     string               `json:"resolved_by,omitempty"`
	ResolutionNote string               `json:"resolution_note,omitempty"`
}

// Open reports whether the finding is unresolved.
func (f Finding) Open() bool { return f.ResolvedAt == nil }

// FindingFilter selects findings. Zero fields do not filter.
type FindingFilter struct {
	Kinds    []payrecon.Kind
	Verdicts []payrecon.Verdict
	// State is "open" (default), "resolved" or "all".
	State string
	// DetectedBefore and DetectedAfter bound detected_at.
	DetectedBefore, DetectedAfter time.Time
	PaymentID                     int64
	// Limit bounds the rows returned; 0 means 100.
	Limit int
}

// Findings reads and resolves findings.
type Findings struct {
	pool  *pgxpool.Pool
	clock payrecon.Clock
}

// NewFindings returns the findings repository on pool.
func NewFindings(pool *pgxpool.Pool, clock payrecon.Clock) *Findings {
	if clock == nil {
		clock = payrecon.SystemClock{}
	}
	return &Findings{pool: pool, clock: clock}
}

const findingColumns = `id, payment_id, coalesce(stripe_payment_intent_id, ''), kind, verdict, local_status,
	coalesce(external_status, ''), reason, coalesce(repair_command, ''), coalesce(repair_outcome, ''), coalesce(job, ''),
	detected_at, resolved_at, resolution, coalesce(resolved_by, ''), coalesce(resolution_note, '')`

func scanFinding(row pgx.Row) (Finding, error) {
	var f Finding
	var resolution *string
	err := row.Scan(&f.ID, &f.PaymentID, &f.IntentID, &f.Kind, &f.Verdict, &f.LocalStatus, &f.ExternalStatus,
		&f.Reason, &f.RepairCommand, &f.RepairOutcome, &f.Job, &f.DetectedAt, &f.ResolvedAt, &resolution,
		&f.ResolvedBy, &f.ResolutionNote)
	if resolution != nil {
		r := payrecon.Resolution(*resolution)
		f.Resolution = &r
	}
	return f, err
}

// List returns findings matching the filter, newest first.
func (r *Findings) List(ctx context.Context, flt FindingFilter) ([]Finding, error) {
	var where []string
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("$%d", len(args))
	}
	switch flt.State {
	case "", "open":
		where = append(where, "resolved_at IS NULL")
	case "resolved":
		where = append(where, "resolved_at IS NOT NULL")
	case "all":
	default:
		return nil, fmt.Errorf("finding state %q: want open, resolved or all", flt.State)
	}
	if len(flt.Kinds) > 0 {
		ks := make([]string, len(flt.Kinds))
		for i, k := range flt.Kinds {
			ks[i] = string(k)
		}
		where = append(where, "kind = ANY("+arg(ks)+"::text[])")
	}
	if len(flt.Verdicts) > 0 {
		vs := make([]string, len(flt.Verdicts))
		for i, v := range flt.Verdicts {
			vs[i] = string(v)
		}
		where = append(where, "verdict = ANY("+arg(vs)+"::text[])")
	}
	if !flt.DetectedBefore.IsZero() {
		where = append(where, "detected_at < "+arg(flt.DetectedBefore))
	}
	if !flt.DetectedAfter.IsZero() {
		where = append(where, "detected_at > "+arg(flt.DetectedAfter))
	}
	if flt.PaymentID != 0 {
		where = append(where, "payment_id = "+arg(flt.PaymentID))
	}
	limit := flt.Limit
	if limit <= 0 {
		limit = 100
	}
	sql := "SELECT " + findingColumns + " FROM reconciliation_findings"
	if len(where) > 0 {
		sql += " WHERE " + strings.Join(where, " AND ")
	}
	sql += " ORDER BY detected_at DESC, id DESC LIMIT " + arg(limit)
	rows, err := r.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("list findings: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Finding, error) { return scanFinding(row) })
	if err != nil {
		return nil, fmt.Errorf("list findings: %w", err)
	}
	return out, nil
}

// Get returns one finding; payrecon.ErrNotFound when there is none.
func (r *Findings) Get(ctx context.Context, id int64) (Finding, error) {
	f, err := scanFinding(r.pool.QueryRow(ctx, "SELECT "+findingColumns+" FROM reconciliation_findings WHERE id = $1", id))
	if errors.Is(err, pgx.ErrNoRows) {
		return f, fmt.Errorf("finding %d: %w", id, payrecon.ErrNotFound)
	}
	if err != nil {
		return f, fmt.Errorf("finding %d: %w", id, err)
	}
	return f, nil
}

// ErrAlreadyResolved is returned when resolving a resolved finding.
var ErrAlreadyResolved = errors.New("finding is already resolved")

// Resolve closes a finding by hand, recording who and why.
func (r *Findings) Resolve(ctx context.Context, id int64, by, note string) (Finding, error) {
	if strings.TrimSpace(note) == "" {
		return Finding{}, errors.New("resolving a finding needs a note saying why")
	}
	if strings.TrimSpace(by) == "" {
		return Finding{}, errors.New("resolving a finding needs to say who resolves it")
	}
	tag, err := r.pool.Exec(ctx, `UPDATE reconciliation_findings
		SET resolved_at = $2, resolution = 'operator', resolved_by = $3, resolution_note = $4
		WHERE id = $1 AND resolved_at IS NULL`, id, r.clock.Now(), by, note)
	if err != nil {
		return Finding{}, fmt.Errorf("resolve finding %d: %w", id, err)
	}
	f, err := r.Get(ctx, id)
	if err != nil {
		return f, err
	}
	if tag.RowsAffected() == 0 {
		return f, fmt.Errorf("resolve finding %d: %w (%s by %s)", id, ErrAlreadyResolved, deref(f.Resolution), f.ResolvedBy)
	}
	return f, nil
}

func deref(r *payrecon.Resolution) string {
	if r == nil {
		return ""
	}
	return string(*r)
}

// PaymentDetail is a payments row as `findings show` prints it.
type PaymentDetail struct {
	ID               int64      `json:"id"`
	OrderID          string     `json:"order_id"`
	IntentID         string     `json:"stripe_payment_intent_id"`
	Status           string     `json:"status"`
	Version          int64      `json:"version"`
	CreatedAt        time.Time  `json:"created_at"`
	UpdatedAt        time.Time  `json:"updated_at"`
	ObservedStatus   string     `json:"observed_external_status,omitempty"`
	LastReconciledAt *time.Time `json:"last_reconciled_at,omitempty"`
}

// Payment reads one payment; payrecon.ErrNotFound when there is none.
func (r *Findings) Payment(ctx context.Context, id int64) (PaymentDetail, error) {
	var p PaymentDetail
	err := r.pool.QueryRow(ctx, `SELECT id, order_id, stripe_payment_intent_id, status, version, created_at, updated_at,
		coalesce(observed_external_status, ''), last_reconciled_at FROM payments WHERE id = $1`, id).
		Scan(&p.ID, &p.OrderID, &p.IntentID, &p.Status, &p.Version, &p.CreatedAt, &p.UpdatedAt, &p.ObservedStatus, &p.LastReconciledAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return p, fmt.Errorf("payment %d: %w", id, payrecon.ErrNotFound)
	}
	if err != nil {
		return p, fmt.Errorf("payment %d: %w", id, err)
	}
	return p, nil
}

// RepairCommandFor returns the outbox id of the repair command queued with
// the finding, or 0.
func (r *Findings) RepairCommandFor(ctx context.Context, findingID int64) (int64, error) {
	var id int64
	err := r.pool.QueryRow(ctx, `SELECT id FROM outbox WHERE payload ? 'finding_id' AND payload->>'finding_id' = $1::text
		ORDER BY id LIMIT 1`, fmt.Sprint(findingID)).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("repair command of finding %d: %w", findingID, err)
	}
	return id, nil
}

// SweepRow reads a payment as the sweep reads it (for a one-off recheck).
func (s *Store) SweepRow(ctx context.Context, id int64) (payrecon.PaymentRow, error) {
	var r payrecon.PaymentRow
	var status string
	err := s.pool.QueryRow(ctx, "SELECT id, stripe_payment_intent_id, status, version, created_at, updated_at FROM payments WHERE id = $1", id).
		Scan(&r.ID, &r.IntentID, &status, &r.Version, &r.CreatedAt, &r.UpdatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return r, fmt.Errorf("payment %d: %w", id, payrecon.ErrNotFound)
	}
	if err != nil {
		return r, fmt.Errorf("payment %d: %w", id, err)
	}
	r.Status = payrecon.LocalStatus(status)
	return r, nil
}
