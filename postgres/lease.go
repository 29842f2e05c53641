package postgres

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/payrecon/payrecon"
)

// LeaseTimeoutDefault is how long a holder's heartbeat may be silent before
// a standby takes the lease over (--lease-timeout).
const LeaseTimeoutDefault = 30 * time.Second

// Lease is a job's lease: a row of payrecon_leases (migration 00015) whose
// epoch this holder set when it took it, kept alive by a heartbeat every
// third of the lease timeout on a dedicated connection, which also holds a
// session advisory lock on (job, epoch).
//
//   - A holder that dies (its session ends) loses the lease at once: a
//     standby sees the lock gone at its next poll.
//   - A holder that freezes (SIGSTOP, a paused VM, a long GC: the session
//     and the lock stay) loses it once its heartbeat is older than the
//     standby's lease timeout, by the database clock: the standby bumps the
//     epoch (compare-and-set).
//   - Fencing: every batch commits only under its epoch (Fence, checked in
//     the batch's transaction with the row locked FOR SHARE), so a holder
//     that wakes up after a takeover commits nothing; its heartbeat finds
//     another epoch and Alive says the lease is lost.
//
// The cursor's compare-and-set stays as the last safety net.
type Lease struct {
	pool    *pgxpool.Pool
	conn    *pgxpool.Conn
	job     string
	key     int32
	epoch   int64
	timeout time.Duration

	mu       sync.Mutex
	lost     error
	lastBeat time.Time
	stop     context.CancelFunc
	done     chan struct{}
}

// LeaseHolder describes the holder of a job's lease.
type LeaseHolder struct {
	// PID is the backend pid of the holder's lease session.
	PID             int32     `json:"pid"`
	ApplicationName string    `json:"application_name"`
	ClientAddr      string    `json:"client_addr"`
	Since           time.Time `json:"since"`
	// Epoch is the lease's fencing token; HeartbeatAt the holder's last
	// heartbeat (a stale one: the holder is frozen).
	Epoch       int64     `json:"epoch"`
	HeartbeatAt time.Time `json:"heartbeat_at"`
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

// LeaseLostError says a batch was not committed because the lease it ran
// under was taken over; it matches payrecon.ErrLeaseLost.
type LeaseLostError struct {
	Job         string
	Epoch, Now  int64
	Description string
}

func (e *LeaseLostError) Error() string {
	return fmt.Sprintf("lease %q lost: held under epoch %d, now %d (%s)", e.Job, e.Epoch, e.Now, e.Description)
}

// Is makes errors.Is(err, payrecon.ErrLeaseLost) true.
func (e *LeaseLostError) Is(target error) bool { return target == payrecon.ErrLeaseLost }

// leaseKey is the job's advisory lock key (the first of two int4 keys; the
// second is the epoch).
func leaseKey(job string) int32 {
	h := fnv.New32a()
	h.Write([]byte("payrecon.lease:" + job))
	return int32(h.Sum32() & 0x7fffffff)
}

// AcquireLease takes the job's lease with the default timeout
// (LeaseTimeoutDefault); see AcquireLeaseTimeout.
func AcquireLease(ctx context.Context, pool *pgxpool.Pool, job string, wait bool) (*Lease, error) {
	return AcquireLeaseTimeout(ctx, pool, job, wait, LeaseTimeoutDefault)
}

// AcquireLeaseTimeout takes the job's lease when it is free: never taken,
// released, its holder's session gone, or its heartbeat older than timeout.
// With wait it polls until it gets it or ctx ends; without, it returns a
// *LeaseHeldError at once. The lease then heartbeats every timeout/3 until
// Release.
func AcquireLeaseTimeout(ctx context.Context, pool *pgxpool.Pool, job string, wait bool, timeout time.Duration) (*Lease, error) {
	if timeout <= 0 {
		timeout = LeaseTimeoutDefault
	}
	poll := min(max(timeout/10, 50*time.Millisecond), time.Second)
	for {
		l, err := tryLease(ctx, pool, job, timeout)
		if err != nil || l != nil {
			return l, err
		}
		if !wait {
			holder, _ := LeaseHolderOf(ctx, pool, job)
			return nil, &LeaseHeldError{Job: job, Holder: holder}
		}
		if err := payrecon.Sleep(ctx, poll); err != nil {
			return nil, fmt.Errorf("wait for lease %q: %w", job, err)
		}
	}
}

// tryLease takes the lease if it is free; nil, nil when it is held.
func tryLease(ctx context.Context, pool *pgxpool.Pool, job string, timeout time.Duration) (*Lease, error) {
	key := leaseKey(job)
	secs := timeout.Seconds()
	var prev int64
	var free bool
	err := pool.QueryRow(ctx, queries.Get("lease_read"), pgx.StrictNamedArgs{"job": job, "key": key, "timeout_seconds": secs}).Scan(&prev, &free)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		prev, free = 0, true
	case err != nil:
		return nil, fmt.Errorf("read lease %q: %w", job, err)
	}
	if !free {
		return nil, nil
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("acquire lease %q: %w", job, err)
	}
	fail := func(err error) (*Lease, error) {
		_ = conn.Conn().Close(context.Background()) // its session locks go with it
		conn.Release()
		return nil, err
	}
	if _, err := conn.Exec(ctx, queries.Get("lease_session")); err != nil {
		return fail(fmt.Errorf("acquire lease %q: set keepalives: %w", job, err))
	}
	var locked bool
	if err := conn.QueryRow(ctx, queries.Get("lease_lock"), pgx.StrictNamedArgs{"key": key, "epoch": prev + 1}).Scan(&locked); err != nil {
		return fail(fmt.Errorf("acquire lease %q: %w", job, err))
	}
	if !locked { // another taker is on its way to the same epoch
		conn.Release()
		return nil, nil
	}
	var epoch int64
	err = conn.QueryRow(ctx, queries.Get("lease_take"), pgx.StrictNamedArgs{"job": job, "key": key, "prev": prev, "timeout_seconds": secs}).Scan(&epoch)
	if errors.Is(err, pgx.ErrNoRows) {
		if _, err := conn.Exec(ctx, queries.Get("lease_unlock"), pgx.StrictNamedArgs{"key": key, "epoch": prev + 1}); err != nil {
			return fail(fmt.Errorf("acquire lease %q: unlock: %w", job, err))
		}
		conn.Release()
		return nil, nil
	}
	if err != nil {
		return fail(fmt.Errorf("acquire lease %q: %w", job, err))
	}
	l := &Lease{pool: pool, conn: conn, job: job, key: key, epoch: epoch, timeout: timeout,
		lastBeat: time.Now(), done: make(chan struct{})}
	hctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	l.stop = cancel
	go l.heartbeat(hctx)
	return l, nil
}

// heartbeat renews the lease every timeout/3 until ctx ends or the lease is
// lost (taken over, or the session failed).
func (l *Lease) heartbeat(ctx context.Context) {
	defer close(l.done)
	t := time.NewTicker(l.timeout / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		bctx, cancel := context.WithTimeout(ctx, l.timeout/3)
		tag, err := l.conn.Exec(bctx, queries.Get("lease_heartbeat"), pgx.StrictNamedArgs{"job": l.job, "epoch": l.epoch})
		cancel()
		if ctx.Err() != nil {
			return
		}
		l.mu.Lock()
		switch {
		case err != nil:
			l.lost = fmt.Errorf("lease %q lost: heartbeat failed: %w", l.job, err)
		case tag.RowsAffected() != 1:
			l.lost = &LeaseLostError{Job: l.job, Epoch: l.epoch, Now: -1, Description: "taken over by another holder"}
		default:
			l.lastBeat = time.Now()
		}
		lost := l.lost != nil
		l.mu.Unlock()
		if lost {
			return
		}
	}
}

// Epoch is the lease's fencing token: pass it with every batch commit
// (payrecon.BatchCommit.Fence).
func (l *Lease) Epoch() int64 { return l.epoch }

// Alive reports whether the lease is still this holder's: its heartbeat
// has not found another epoch, has not failed, and has succeeded within the
// timeout (a holder that cannot heartbeat must assume a standby took over).
func (l *Lease) Alive(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lost != nil {
		return l.lost
	}
	if since := time.Since(l.lastBeat); since > l.timeout {
		return &LeaseLostError{Job: l.job, Epoch: l.epoch, Now: -1, Description: fmt.Sprintf("no heartbeat for %s", since.Round(time.Millisecond))}
	}
	return nil
}

// LeaseHolderOf returns the holder of the job's lease, or nil when nobody
// holds it.
func LeaseHolderOf(ctx context.Context, pool *pgxpool.Pool, job string) (*LeaseHolder, error) {
	var h LeaseHolder
	var addr *string
	err := pool.QueryRow(ctx, queries.Get("lease_holder"), pgx.StrictNamedArgs{"job": job, "key": leaseKey(job)}).
		Scan(&h.PID, &h.ApplicationName, &addr, &h.Since, &h.Epoch, &h.HeartbeatAt)
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

// Release gives the lease up: the heartbeat stops, the row is marked
// released (if still this holder's) and the session lock let go. It is safe
// to call more than once.
func (l *Lease) Release(ctx context.Context) error {
	if l == nil || l.conn == nil {
		return nil
	}
	l.stop()
	<-l.done
	conn := l.conn
	l.conn = nil
	defer conn.Release()
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err := conn.Exec(rctx, queries.Get("lease_release"), pgx.StrictNamedArgs{"job": l.job, "epoch": l.epoch})
	if err == nil {
		_, err = conn.Exec(rctx, queries.Get("lease_unlock"), pgx.StrictNamedArgs{"key": l.key, "epoch": l.epoch})
	}
	if err != nil {
		// The lock dies with the session: make sure the session dies too.
		_ = conn.Conn().Close(context.Background())
		return fmt.Errorf("release lease %q: %w", l.job, err)
	}
	return nil
}

// checkFence verifies, inside tx, that the job's lease is still at epoch
// (fence 0: no lease, nothing to check), locking its row FOR SHARE until
// tx ends.
func checkFence(ctx context.Context, tx pgx.Tx, job string, fence int64) error {
	if fence == 0 {
		return nil
	}
	var now int64
	err := tx.QueryRow(ctx, queries.Get("lease_fence"), pgx.StrictNamedArgs{"job": job}).Scan(&now)
	if errors.Is(err, pgx.ErrNoRows) {
		return &LeaseLostError{Job: job, Epoch: fence, Now: 0, Description: "released"}
	}
	if err != nil {
		return fmt.Errorf("check lease %q: %w", job, err)
	}
	if now != fence {
		return &LeaseLostError{Job: job, Epoch: fence, Now: now, Description: "taken over by another holder"}
	}
	return nil
}
