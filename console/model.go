package console

import (
	"context"
	"time"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/readmodel"
)

// ReadModel is what the console's pages read. Its methods only read: the
// console writes nothing except through Actions and the Sampler.
// postgres.ConsoleReader implements it.
type ReadModel interface {
	// Overview reads the headline figures at now.
	Overview(ctx context.Context, now time.Time) (Overview, error)
	// History returns the samples taken since, bucketed by bucket (the
	// largest lag and open-findings count within each bucket), oldest first.
	History(ctx context.Context, since time.Time, bucket time.Duration) ([]Sample, error)
	// Findings returns up to q.Limit findings matching q, newest first,
	// after q.After (keyset), and whether more follow.
	Findings(ctx context.Context, q FindingQuery) ([]payrecon.Finding, bool, error)
	// Finding returns one finding with its payment, repair and timeline;
	// payrecon.ErrNotFound when there is none.
	Finding(ctx context.Context, id int64) (FindingDetail, error)
	// Lookup finds payments by id, order id or PaymentIntent id, with their
	// findings.
	Lookup(ctx context.Context, q string) ([]PaymentMatch, error)
	// Audit returns the latest console actions, newest first.
	Audit(ctx context.Context, limit int) ([]AuditEntry, error)
	// HeldRepairs returns up to limit repair commands held for review
	// (--repair-mode review) whose finding is open, the longest-waiting
	// first.
	HeldRepairs(ctx context.Context, limit int) ([]HeldRepair, error)
}

// Actions are the console's writes. Each records an audit entry with the
// operator's name; the service implements them with the same code paths
// as the CLI (findings resolve, findings recheck, relay --retry).
type Actions interface {
	// Resolve closes an open finding with a note.
	Resolve(ctx context.Context, findingID int64, operator, note string) error
	// Recheck asks Stripe about the finding's payment now and returns what
	// happened, in words.
	Recheck(ctx context.Context, findingID int64, operator string) (string, error)
	// RetryDeadLetter makes a dead-lettered repair job run again and returns
	// what happened, in words.
	RetryDeadLetter(ctx context.Context, jobID int64, operator string) (string, error)
	// ApproveRepairs lets held repair commands through (every held one with
	// all, else outboxIDs), as `payrecon repairs approve`, and returns what
	// happened, in words: a command whose finding closed meanwhile is
	// dropped, never applied.
	ApproveRepairs(ctx context.Context, outboxIDs []int64, all bool, operator string) (string, error)
}

// SessionStore keeps the console's sessions on the server, shared by the
// replicas: a cookie opens the console only while its session is stored,
// so a logout on any replica ends it there and everywhere.
// postgres.ConsoleSessions implements it. Sessions are known by the
// SHA-256 of their id, never by the id the cookie carries.
type SessionStore interface {
	// StartSession records a session until expires (and may delete the
	// sessions expired at now).
	StartSession(ctx context.Context, idHash []byte, operator string, now, expires time.Time) error
	// SessionValid reports whether the session is recorded and unexpired
	// at now.
	SessionValid(ctx context.Context, idHash []byte, now time.Time) (bool, error)
	// EndSession deletes a session; one that is not there is no error.
	EndSession(ctx context.Context, idHash []byte) error
}

// The read model's types are package readmodel's (the adapter that
// implements ReadModel, package postgres, imports them, never the console).
type (
	HeldRepair    = readmodel.HeldRepair
	Overview      = readmodel.Overview
	Job           = readmodel.Job
	KindCount     = readmodel.KindCount
	Money         = readmodel.Money
	Queue         = readmodel.Queue
	DeadLetter    = readmodel.DeadLetter
	Sample        = readmodel.Sample
	FindingQuery  = readmodel.FindingQuery
	Cursor        = readmodel.Cursor
	FindingDetail = readmodel.FindingDetail
	Repair        = readmodel.Repair
	Event         = readmodel.Event
	PaymentMatch  = readmodel.PaymentMatch
	AuditEntry    = readmodel.AuditEntry
)

// StripeHealth is the Stripe client's state in this process.
type StripeHealth struct {
	// Rate is the limiter's current rate and Budget its ceiling, requests
	// per second (0: unlimited).
	Rate, Budget float64
	// Requests counts calls since the process started, by outcome (ok,
	// not_found, unavailable, rate_limited, config_error, canceled).
	Requests map[string]float64
}

// Errors sums the outcomes that are failures.
func (s StripeHealth) Errors() float64 {
	var n float64
	for k, v := range s.Requests {
		if k != "ok" && k != "not_found" && k != "canceled" {
			n += v
		}
	}
	return n
}

// Total sums every outcome.
func (s StripeHealth) Total() float64 {
	var n float64
	for _, v := range s.Requests {
		n += v
	}
	return n
}
