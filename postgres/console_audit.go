package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/readmodel"
)

// Console actions, as recorded in console_audit.action.
const (
	ConsoleActionResolve = "resolve"
	ConsoleActionRecheck = "recheck"
	ConsoleActionRetry   = "retry_dead_letter"
	ConsoleActionApprove = "approve_repair"
)

// ConsoleAudit writes the console's audit trail (a resolution's entry is
// written with it, by Findings.Resolve).
type ConsoleAudit struct {
	pool  *pgxpool.Pool
	clock payrecon.Clock
}

// NewConsoleAudit returns the console's writer on pool.
func NewConsoleAudit(pool *pgxpool.Pool, clock payrecon.Clock) *ConsoleAudit {
	if clock == nil {
		clock = payrecon.SystemClock{}
	}
	return &ConsoleAudit{pool: pool, clock: clock}
}

// Record appends an entry to the audit trail (its At is the clock's now).
func (a *ConsoleAudit) Record(ctx context.Context, e readmodel.AuditEntry) error {
	var finding, job any
	if e.FindingID != 0 {
		finding = e.FindingID
	}
	if e.JobID != 0 {
		job = e.JobID
	}
	var id int64
	if err := a.pool.QueryRow(ctx, consoleQuery("console_audit_insert"), pgx.StrictNamedArgs{"at": a.clock.Now(), "operator": e.Operator,
		"action": e.Action, "finding_id": finding, "job_id": job, "note": e.Note, "outcome": e.Outcome}).Scan(&id); err != nil {
		return fmt.Errorf("record console action %s by %s: %w", e.Action, e.Operator, err)
	}
	return nil
}

// FindingOfJob returns the finding a repair job's command was queued with,
// or 0.
func (a *ConsoleAudit) FindingOfJob(ctx context.Context, jobID int64) (int64, error) {
	var id int64
	if err := a.pool.QueryRow(ctx, consoleQuery("console_job_finding"), pgx.StrictNamedArgs{"job_id": jobID}).Scan(&id); err != nil {
		return 0, fmt.Errorf("finding of job %d: %w", jobID, err)
	}
	return id, nil
}
