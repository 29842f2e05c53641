// Package sweep is the scanner: it walks every payments row with a keyset
// cursor, reads each row's PaymentIntent from Stripe outside any
// transaction, classifies the pair with payrecon.Classify, and commits the
// results, findings, repair commands and the cursor advance in one
// transaction (RunBatch). RunCycle drives batches until the cursor wraps.
//
// Guarantees, from the seed and its corrections:
//   - every row is checked once per cycle (keyset cursor, wrap with CAS);
//   - no transaction or lock is held while Stripe is called;
//   - a batch whose cursor moved under it is discarded whole (ErrConcurrentRun);
//   - rows inside the grace window are in_flight, not judged;
//   - a row that names no PaymentIntent gets an invalid_local_row finding
//     (needs_review) without a call, and the sweep goes on past it;
//   - last_reconciled_at advances only for rows Stripe was actually read for;
//   - Stripe calls run concurrently up to Config.Concurrency, within one
//     shared rate budget that backs off on 429;
//   - a configuration error (401, 403, other 4xx) stops the sweep at once
//     with nothing written; a systemic outage pauses it without advancing
//     past the failing rows; rows left unverifiable are rechecked early.
package sweep

import (
	"cmp"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/payrecon/payrecon"
)

// DefaultJob is the seed's job name.
const DefaultJob = "payments-vs-stripe"

// Sweeper runs batches and cycles of one job.
type Sweeper struct {
	store   payrecon.SweepStore
	gateway payrecon.Gateway
	cfg     Config
	metrics *metrics

	lister lister
	// sessions is the gateway's SessionGateway (nil when it has none), and
	// sessionLister list mode's listed sessions (session rows).
	sessions      payrecon.SessionGateway
	sessionLister lister
	// sawSessions is set once a batch held a session row; from then on
	// list mode's orphans wait for the rows created before them
	// (deferOrphans), kept in pending meanwhile.
	sawSessions atomic.Bool
	pendingMu   sync.Mutex
	pending     []payrecon.Orphan
	// slots holds one token per Stripe request in flight (Config.Concurrency).
	slots chan struct{}
	// fence is the epoch of the lease held now (0: none).
	fence atomic.Int64
	// batch, when positive, replaces Config.Batch (SetBatch).
	batch atomic.Int64
}

// SetBatch changes the number of cursor rows of the next batches (n ≤ 0:
// Config.Batch again): a platform's account sweep sizes its batches to
// what the account's budget allows in a few seconds.
func (s *Sweeper) SetBatch(n int) { s.batch.Store(int64(n)) }

// New returns a sweeper, or an error when cfg is invalid (Config.Validate).
// cfg's zero fields take DefaultConfig's values; its metrics are
// registered with cfg.Registerer (so one Registerer takes one sweeper per
// job: the metrics carry the job as a label).
func New(store payrecon.SweepStore, gateway payrecon.Gateway, cfg Config) (*Sweeper, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("new sweeper %s: %w", cmp.Or(cfg.Job, DefaultJob), err)
	}
	cfg = cfg.withDefaults()
	s := &Sweeper{store: store, gateway: gateway, cfg: cfg, metrics: newMetrics(cfg.Registerer),
		slots: make(chan struct{}, cfg.Concurrency)}
	s.sessions, _ = gateway.(payrecon.SessionGateway)
	s.sessionLister.sessions = true
	return s, nil
}

// Config returns the effective configuration.
func (s *Sweeper) Config() Config { return s.cfg }
