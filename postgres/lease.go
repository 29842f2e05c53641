package postgres

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"payrecon"
)

// Lease is a job's sweep lease: a session-level advisory lock held on one
// dedicated connection. While one process holds it, a second sweeper of the
// same job waits (or gives up) instead of spending Stripe calls that the
// cursor's compare-and-set would throw away. The lock dies with the
// connection, so a crashed holder releases it at once; the cursor CAS stays
// as the safety net for everything a lease cannot promise (a connection lost
// mid-batch, a pooler that breaks session locks).
type Lease struct {
	conn *pgxpool.Conn
	key  int64
	job  string
}

// LeaseHolder describes the session holding a job's lease.
type LeaseHolder struct {
	PID             int32     `json:"pid"`
	ApplicationName string    `json:"application_name"`
	ClientAddr      string    `json:"client_addr"`
	Since           time.Time `json:"since"`
}

func (h LeaseHolder) String() string {
	s := fmt.Sprintf("backend pid %d", h.PID)
	if h.ApplicationName != "" {
		s += fmt.Sprintf(", application %q", h.ApplicationName)
	}
	if h.ClientAddr != "" {
		s += ", from " + h.ClientAddr
	}
	return s
}

// LeaseHeldError says who holds the lease; it matches payrecon.ErrLeaseHeld.
type LeaseHeldError struct {
	Job    string
	Holder *LeaseHolder
}

func (e *LeaseHeldError) Error() string {
	if e.Holder == nil {
		return fmt.Sprintf("job %q is being swept by another process", e.Job)
	}
	return fmt.Sprintf("job %q is being swept by another process (%s)", e.Job, e.Holder)
}

// Is makes errors.Is(err, payrecon.ErrLeaseHeld) true.
func (e *LeaseHeldError) Is(target error) bool { return target == payrecon.ErrLeaseHeld }

func leaseKey(job string) int64 {
	h := fnv.New64a()
	h.Write([]byte("payrecon.sweep:" + job))
	return int64(h.Sum64())
}

// AcquireLease takes the job's lease. With wait it blocks until the lease is
// free or ctx ends; without, it returns a *LeaseHeldError at once when
// another session holds it.
func AcquireLease(ctx context.Context, pool *pgxpool.Pool, job string, wait bool) (*Lease, error) {
	key := leaseKey(job)
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("acquire lease %q: %w", job, err)
	}
	if _, err := conn.Exec(ctx, queries.Get("lease_session")); err != nil {
		conn.Release()
		return nil, fmt.Errorf("acquire lease %q: set keepalives: %w", job, err)
	}
	if wait {
		if _, err := conn.Exec(ctx, queries.Get("lease_wait"), pgx.StrictNamedArgs{"key": key}); err != nil {
			conn.Release()
			return nil, fmt.Errorf("wait for lease %q: %w", job, err)
		}
		return &Lease{conn: conn, key: key, job: job}, nil
	}
	var ok bool
	if err := conn.QueryRow(ctx, queries.Get("lease_try"), pgx.StrictNamedArgs{"key": key}).Scan(&ok); err != nil {
		conn.Release()
		return nil, fmt.Errorf("acquire lease %q: %w", job, err)
	}
	if !ok {
		conn.Release()
		holder, _ := LeaseHolderOf(ctx, pool, job)
		return nil, &LeaseHeldError{Job: job, Holder: holder}
	}
	return &Lease{conn: conn, key: key, job: job}, nil
}

// LeaseHolderOf returns the session holding the job's lease, or nil.
func LeaseHolderOf(ctx context.Context, pool *pgxpool.Pool, job string) (*LeaseHolder, error) {
	key := uint64(leaseKey(job))
	var h LeaseHolder
	var addr *string
	err := pool.QueryRow(ctx, queries.Get("lease_holder"), pgx.StrictNamedArgs{
		"classid": int64(key >> 32), "objid": int64(key & 0xffffffff),
	}).Scan(&h.PID, &h.ApplicationName, &addr, &h.Since)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("look up lease holder %q: %w", job, err)
	}
	if addr != nil {
		h.ClientAddr = *addr
	}
	return &h, nil
}

// Alive checks that the lease's connection (and so the lock) still exists.
func (l *Lease) Alive(ctx context.Context) error {
	if err := l.conn.Ping(ctx); err != nil {
		return fmt.Errorf("lease %q lost: %w", l.job, err)
	}
	return nil
}

// Release gives the lease up. It is safe to call more than once.
func (l *Lease) Release(ctx context.Context) error {
	if l == nil || l.conn == nil {
		return nil
	}
	conn := l.conn
	l.conn = nil
	defer conn.Release()
	if _, err := conn.Exec(ctx, queries.Get("lease_release"), pgx.StrictNamedArgs{"key": l.key}); err != nil {
		// The lock dies with the session: make sure the session dies too.
		_ = conn.Conn().Close(context.Background())
		return fmt.Errorf("release lease %q: %w", l.job, err)
	}
	return nil
}
