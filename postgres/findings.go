package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/payrecon/payrecon"
)

// FindingFilter selects findings. Zero fields do not filter.
type FindingFilter struct {
	Kinds    []payrecon.Kind
	Verdicts []payrecon.Verdict
	// State is "open" (default), "resolved" or "all".
	State string
	// DetectedBefore and DetectedAfter bound detected_at.
	DetectedBefore, DetectedAfter time.Time
	PaymentID                     int64
	// Account, with Accounts found, keeps the findings of one account's
	// payments ("" the platform's own); nil keeps all.
	Account  *string
	Accounts AccountColumn
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

// scanFinding scans a finding's columns, in the order every findings
// query selects them (findings.sql, console_finding*.sql), then extra.
func scanFinding(row pgx.Row, extra ...any) (payrecon.Finding, error) {
	var f payrecon.Finding
	var resolution *string
	var details []byte
	err := row.Scan(append([]any{&f.ID, &f.PaymentID, &f.IntentID, &f.OrderID, &f.Kind, &f.Verdict, &f.LocalStatus, &f.ExternalStatus,
		&f.Reason, &f.RepairCommand, &f.RepairOutcome, &f.Job, &f.DetectedAt, &f.ResolvedAt, &resolution,
		&f.ResolvedBy, &f.ResolutionNote, &details}, extra...)...)
	if err == nil && len(details) > 0 {
		var d payrecon.FindingDetails
		if json.Unmarshal(details, &d) == nil {
			f.Details = &d
		}
	}
	if resolution != nil {
		r := payrecon.Resolution(*resolution)
		f.Resolution = &r
	}
	return f, err
}

// List returns findings matching the filter, newest first.
func (r *Findings) List(ctx context.Context, flt FindingFilter) ([]payrecon.Finding, error) {
	state := flt.State
	switch state {
	case "":
		state = "open"
	case "open", "resolved", "all":
	default:
		return nil, fmt.Errorf("finding state %q: want open, resolved or all", flt.State)
	}
	kinds := make([]string, len(flt.Kinds))
	for i, k := range flt.Kinds {
		kinds[i] = string(k)
	}
	verdicts := make([]string, len(flt.Verdicts))
	for i, v := range flt.Verdicts {
		verdicts[i] = string(v)
	}
	limit := flt.Limit
	if limit <= 0 {
		limit = 100
	}
	if flt.Account != nil && !flt.Accounts.Found {
		return nil, fmt.Errorf("list the findings of account %q: payments has no account column", *flt.Account)
	}
	rows, err := r.pool.Query(ctx, accountSQL(queries.Get("findings"), flt.Accounts), pgx.StrictNamedArgs{
		"id": nil, "state": state, "kinds": kinds, "verdicts": verdicts,
		"before": optionalTime(flt.DetectedBefore), "after": optionalTime(flt.DetectedAfter),
		"payment_id": optionalID(flt.PaymentID), "account": flt.Account, "limit": limit,
	})
	if err != nil {
		return nil, fmt.Errorf("list findings: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (payrecon.Finding, error) { return scanFinding(row) })
	if err != nil {
		return nil, fmt.Errorf("list findings: %w", err)
	}
	return out, nil
}

// Get returns one finding; payrecon.ErrNotFound when there is none.
func (r *Findings) Get(ctx context.Context, id int64) (payrecon.Finding, error) {
	f, err := scanFinding(r.pool.QueryRow(ctx, queries.Get("findings"), pgx.StrictNamedArgs{
		"id": id, "state": "all", "kinds": []string{}, "verdicts": []string{},
		"before": nil, "after": nil, "payment_id": nil, "account": nil, "limit": 1,
	}))
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

// Resolve is a resolution by hand: who, why, and whether the console's
// audit trail records it.
type Resolve struct {
	ID   int64
	By   string
	Note string
	// Audit records the action in console_audit (action ConsoleActionResolve)
	// in the same statement that closes the finding.
	Audit bool
}

// Resolve closes an open finding by hand, recording who and why (and, with
// res.Audit, the audit entry), in one statement. A finding that does not
// exist is payrecon.ErrNotFound; one already resolved ErrAlreadyResolved.
func (r *Findings) Resolve(ctx context.Context, res Resolve) (payrecon.Finding, error) {
	if strings.TrimSpace(res.Note) == "" {
		return payrecon.Finding{}, errors.New("resolving a finding needs a note saying why")
	}
	if strings.TrimSpace(res.By) == "" {
		return payrecon.Finding{}, errors.New("resolving a finding needs to say who resolves it")
	}
	var id int64
	err := r.pool.QueryRow(ctx, queries.Get("resolve_finding"), pgx.StrictNamedArgs{
		"id": res.ID, "now": r.clock.Now(), "resolution": string(payrecon.ResolvedOperator), "by": res.By, "note": res.Note,
		"audit": res.Audit, "action": ConsoleActionResolve, "outcome": "resolved",
	}).Scan(&id)
	resolved := true
	if errors.Is(err, pgx.ErrNoRows) {
		resolved, err = false, nil
	}
	if err != nil {
		return payrecon.Finding{}, fmt.Errorf("resolve finding %d: %w", res.ID, err)
	}
	got, err := r.Get(ctx, res.ID)
	if err != nil {
		return got, err
	}
	if !resolved {
		return got, fmt.Errorf("resolve finding %d: %w (%s by %s)", res.ID, ErrAlreadyResolved, deref(got.Resolution), got.ResolvedBy)
	}
	return got, nil
}

func deref(r *payrecon.Resolution) string {
	if r == nil {
		return ""
	}
	return string(*r)
}

// Payment reads one payment; payrecon.ErrNotFound when there is none.
func (r *Findings) Payment(ctx context.Context, id int64) (payrecon.Payment, error) {
	var p payrecon.Payment
	err := r.pool.QueryRow(ctx, queries.Get("payment_detail"), pgx.StrictNamedArgs{"id": id}).
		Scan(&p.ID, &p.OrderID, &p.IntentID, &p.Status, &p.Version, &p.CreatedAt, &p.UpdatedAt, &p.ObservedStatus, &p.LastReconciledAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return p, fmt.Errorf("payment %d: %w", id, payrecon.ErrNotFound)
	}
	if err != nil {
		return p, fmt.Errorf("payment %d: %w", id, err)
	}
	return p, nil
}

// PaymentSession returns the Checkout Session payment id records, "" when
// it records none or payments has no session column (col not found).
func (r *Findings) PaymentSession(ctx context.Context, col SessionColumn, id int64) (string, error) {
	if !col.Found {
		return "", nil
	}
	var s string
	if err := r.pool.QueryRow(ctx, sessionSQL(queries.Get("payment_session"), col), pgx.StrictNamedArgs{"id": id}).Scan(&s); err != nil {
		return "", fmt.Errorf("the checkout session of payment %d: %w", id, err)
	}
	return s, nil
}

// PaymentIDBySession returns the payment that records a Checkout Session,
// or 0 (also when payments has no session column: col not found).
func (r *Findings) PaymentIDBySession(ctx context.Context, col SessionColumn, session string) (int64, error) {
	if !col.Found {
		return 0, nil
	}
	var id int64
	if err := r.pool.QueryRow(ctx, sessionSQL(queries.Get("payment_id_by_session"), col), pgx.StrictNamedArgs{"session_id": session}).Scan(&id); err != nil {
		return 0, fmt.Errorf("look up the payment of checkout session %s: %w", session, err)
	}
	return id, nil
}

// RepairCommandFor returns the outbox id of the repair command queued with
// the finding, or 0.
func (r *Findings) RepairCommandFor(ctx context.Context, findingID int64) (int64, error) {
	var id int64
	err := r.pool.QueryRow(ctx, queries.Get("finding_command"), pgx.StrictNamedArgs{"finding_id": fmt.Sprint(findingID)}).Scan(&id)
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
	var (
		r        payrecon.PaymentRow
		status   string
		amount   *int64
		currency *string
	)
	err := s.pool.QueryRow(ctx, s.read("sweep_row"), pgx.StrictNamedArgs{"id": id}).
		Scan(&r.ID, &r.IntentID, &status, &r.Version, &r.CreatedAt, &r.UpdatedAt, &amount, &currency, &r.Account, &r.SessionID)
	if errors.Is(err, pgx.ErrNoRows) {
		return r, fmt.Errorf("payment %d: %w", id, payrecon.ErrNotFound)
	}
	if err != nil {
		return r, fmt.Errorf("payment %d: %w", id, err)
	}
	r.Status = payrecon.LocalStatus(status)
	r.Money = s.localMoney(amount, currency)
	return r, nil
}

// PaymentIDByIntent returns the local payment of a PaymentIntent, or 0.
func (r *Findings) PaymentIDByIntent(ctx context.Context, intent string) (int64, error) {
	var id int64
	if err := r.pool.QueryRow(ctx, queries.Get("payment_id_by_intent"), pgx.StrictNamedArgs{"intent_id": intent}).Scan(&id); err != nil {
		return 0, fmt.Errorf("look up the local row of %s: %w", intent, err)
	}
	return id, nil
}

// IntentEvent is a Stripe event recorded for a PaymentIntent.
type IntentEvent struct {
	EventID    string    `json:"event_id"`
	EventType  string    `json:"event_type"`
	ReceivedAt time.Time `json:"received_at"`
	Outcome    string    `json:"outcome"`
}

// IntentEvents returns up to limit events recorded for a PaymentIntent,
// oldest first.
func (r *Findings) IntentEvents(ctx context.Context, intent string, limit int) ([]IntentEvent, error) {
	if intent == "" {
		return []IntentEvent{}, nil
	}
	rows, err := r.pool.Query(ctx, queries.Get("intent_events"), pgx.StrictNamedArgs{"intent_id": intent, "limit": limit})
	if err != nil {
		return nil, fmt.Errorf("events of %s: %w", intent, err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[IntentEvent])
	if err != nil {
		return nil, fmt.Errorf("events of %s: %w", intent, err)
	}
	return out, nil
}

// RowsAhead counts the payments ahead of the job's cursor: what the current
// cycle has left to do.
func (s *Store) RowsAhead(ctx context.Context, job string) (int64, error) {
	var n int64
	if err := s.pool.QueryRow(ctx, s.read("rows_ahead"), s.scoped(pgx.StrictNamedArgs{"job": job})).Scan(&n); err != nil {
		return 0, fmt.Errorf("count rows ahead of the cursor of %q: %w", job, err)
	}
	return n, nil
}
