package demo

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/payrecon/payrecon"
)

// role is what the scenario does to one local payment.
type role int

const (
	// In sync once the webhooks have landed.
	roleUntouched  role = iota // pending; the intent still awaits payment
	rolePaid                   // payment_intent.succeeded delivered
	roleFailed                 // payment_intent.payment_failed delivered
	roleCanceled               // payment_intent.canceled delivered
	roleDuplicated             // succeeded (or canceled) delivered twice
	roleReordered              // payment_failed, then succeeded; delivered the other way round
	// Drift.
	roleMissedSuccess     // succeeded dropped
	roleMissedCancel      // canceled dropped
	rolePaidNotTaken      // marked paid by a buggy app; the intent awaits payment
	rolePaidCanceled      // marked paid by a buggy app; then canceled in Stripe
	roleFailedThenPaid    // payment_failed delivered; the retry's succeeded refused
	roleMissingExternally // no PaymentIntent in Stripe
	roleUnknownStatus     // a status payrecon does not know
	// Money drift: paid on both sides (succeeded delivered), but the money
	// differs.
	roleAmountMismatch    // the order's amount is not what Stripe took
	roleCurrencyMismatch  // the order is in another currency
	roleRefunded          // refunded in full in the Dashboard; the charge.refunded webhook delivered
	rolePartiallyRefunded // partly refunded in the Dashboard; its webhook dropped (the sweep finds it)
	roleDisputed          // disputed by the cardholder; the charge.dispute.created webhook delivered
	roleStuck             // authorised, never captured: first observed in requires_capture 150 h ago
	// Connect (Config.Accounts) only: pending, the intent awaits payment,
	// and a payment_intent.succeeded for it arrives from another account
	// (account_mismatch): it must not be applied.
	roleWrongAccount
	// Checkout Sessions: rows that record a session (cs_…) and no
	// PaymentIntent, whose intent is created when the customer pays (the
	// row's intentID names it in the simulator). Their webhooks are the
	// checkout.session.* events.
	roleSessionOpen           // the customer has not paid yet
	roleSessionPaid           // completed, checkout.session.completed delivered
	roleSessionAsync          // an asynchronous method: completed, then async_payment_succeeded, both delivered
	roleSessionExpired        // expired unpaid, checkout.session.expired delivered
	roleSessionMissedSuccess  // completed, checkout.session.completed dropped
	roleSessionMissedCancel   // expired, checkout.session.expired dropped
	roleSessionAmountMismatch // completed and delivered, but the order's amount is not what Stripe took
	roleSessionMissing        // no such Checkout Session in Stripe
	numRoles
)

// firstSessionRole and the roles after it are session rows.
const firstSessionRole = roleSessionOpen

// roleSpec describes a role: its share of the payments, its minimum count,
// the drift it injects (empty for in-sync roles), and the local state
// expected after the webhooks and after the run.
type roleSpec struct {
	name     string
	share    float64
	min      int
	kind     payrecon.Kind
	before   payrecon.LocalStatus // after the webhooks, before the sweep
	versionB int64
	after    payrecon.LocalStatus // after the run (differs only for repairs)
}

// roleSpecs is indexed by role. roleUntouched takes whatever the other
// roles leave.
func roleSpecs() [numRoles]roleSpec {
	const (
		pending = payrecon.StatusPending
		paid    = payrecon.StatusPaid
		failed  = payrecon.StatusFailed
	)
	return [numRoles]roleSpec{
		roleUntouched:         {"pending", 0, 3, "", pending, 0, pending},
		rolePaid:              {"paid", 0.29, 3, "", paid, 1, paid},
		roleFailed:            {"failed", 0.08, 3, "", failed, 1, failed},
		roleCanceled:          {"canceled", 0.05, 3, "", failed, 1, failed},
		roleDuplicated:        {"duplicated webhook", 0.03, 4, "", "", 1, ""}, // status set per row
		roleReordered:         {"reordered webhooks", 0.01, 3, "", paid, 1, paid},
		roleMissedSuccess:     {"dropped succeeded webhook", 0.02, 5, payrecon.KindMissedSuccess, pending, 0, paid},
		roleMissedCancel:      {"dropped canceled webhook", 0.01, 3, payrecon.KindMissedCancel, pending, 0, failed},
		rolePaidNotTaken:      {"marked paid, never paid", 0.003, 2, payrecon.KindPaidLocallyNotExternally, paid, 1, paid},
		rolePaidCanceled:      {"marked paid, canceled", 0.002, 2, payrecon.KindPaidLocallyNotExternally, paid, 1, paid},
		roleFailedThenPaid:    {"failed, then paid on retry", 0.005, 3, payrecon.KindFailedLocallyPaidExternally, failed, 1, failed},
		roleMissingExternally: {"no intent in Stripe", 0.005, 3, payrecon.KindMissingExternally, pending, 0, pending},
		roleUnknownStatus:     {"unknown Stripe status", 0.002, 2, payrecon.KindUnknownStatus, pending, 0, pending},
		roleAmountMismatch:    {"amount differs", 0.002, 2, payrecon.KindAmountMismatch, paid, 1, paid},
		roleCurrencyMismatch:  {"currency differs", 0.002, 2, payrecon.KindCurrencyMismatch, paid, 1, paid},
		roleRefunded:          {"refunded in the Dashboard", 0.002, 2, payrecon.KindRefundedExternally, paid, 1, paid},
		rolePartiallyRefunded: {"partly refunded, webhook dropped", 0.002, 2, payrecon.KindPartiallyRefunded, paid, 1, paid},
		roleDisputed:          {"disputed", 0.002, 2, payrecon.KindDisputed, paid, 1, paid},
		roleStuck:             {"stuck in requires_capture", 0.002, 2, payrecon.KindStuckInFlight, pending, 0, pending},
		roleWrongAccount:      {"webhook from another account", 0, 0, payrecon.KindAccountMismatch, pending, 0, pending}, // made by spread

		roleSessionOpen:           {"checkout session open", 0.01, 1, "", pending, 0, pending},
		roleSessionPaid:           {"checkout session paid", 0.03, 1, "", paid, 1, paid},
		roleSessionAsync:          {"checkout session, async payment", 0.005, 1, "", paid, 1, paid},
		roleSessionExpired:        {"checkout session expired", 0.01, 1, "", failed, 1, failed},
		roleSessionMissedSuccess:  {"dropped checkout.session.completed", 0.01, 2, payrecon.KindMissedSuccess, pending, 0, paid},
		roleSessionMissedCancel:   {"dropped checkout.session.expired", 0.005, 1, payrecon.KindMissedCancel, pending, 0, failed},
		roleSessionAmountMismatch: {"checkout session, amount differs", 0.002, 1, payrecon.KindAmountMismatch, paid, 1, paid},
		roleSessionMissing:        {"no such checkout session", 0.002, 1, payrecon.KindMissingExternally, pending, 0, pending},
	}
}

// Orphan intents (PaymentIntents with no local row) as a share of the
// payments, and their minimum.
const (
	orphanShare = 0.005
	orphanMin   = 3
)

// UnknownStripeStatus is the status given to the unknown_status intents: one
// Stripe uses for some card flows, but not one payrecon's decision table
// knows.
const UnknownStripeStatus payrecon.StripeStatus = "requires_reauthorization"

// MinPayments is the smallest scenario that gives every role its minimum.
const MinPayments = 100

// stuckSince is how long before the run the stuck rows were first observed
// in requires_capture (as if by an earlier run of payrecon): past the
// default limit of 144 h.
const stuckSince = 150 * time.Hour

// amount is the amount of row i's PaymentIntent in Stripe (minor units).
func (r row) amount() int64 { return 500 + int64(r.index%40)*250 }

// localMoney is the amount and currency the demo's payments row holds: what
// Stripe has, except where the row's role says otherwise.
func (r row) localMoney() (int64, string) {
	switch r.role {
	case roleAmountMismatch, roleSessionAmountMismatch:
		return r.amount() + 100, "usd"
	case roleCurrencyMismatch:
		return r.amount(), "eur"
	}
	return r.amount(), "usd"
}

// row is one planned local payment.
type row struct {
	index    int
	intentID string
	created  time.Time
	role     role
	// variant picks between the two flavours of a role (duplicated:
	// succeeded or canceled).
	variant int
	// account is the row's account, an index into plan.accounts (0, the
	// platform's own, without Config.Accounts).
	account int
}

// orphan is one planned PaymentIntent with no local row.
type orphan struct {
	intentID string
	created  time.Time
	status   payrecon.StripeStatus
	account  int // as row.account
}

// plan is the whole scenario, a pure function of (payments, seed, now).
type plan struct {
	rows    []row
	orphans []orphan
	counts  [numRoles]int
	// start and span are when the rows' creation times begin and how long
	// they last.
	start time.Time
	span  time.Duration
	// unsettled are the rows (indexes into rows) paid on both sides whose
	// charges the settlement phase leaves out of every payout:
	// paid_not_settled.
	unsettled map[int]bool
	// live are the rows whose intents succeed while the service runs,
	// after the sweep has passed them (indexes into rows, ascending): the
	// first of the untouched rows. Even positions lose their webhook (the
	// endpoint is down), odd ones get it.
	live []int
	// accounts are the accounts the rows are spread over (Config.Accounts):
	// "" (the platform's own) first, then the connected accounts; one
	// account, "", without them.
	accounts []string
	// now is when the plan was laid out.
	now time.Time
}

// liveShare is the share of the payments in the live phase, and liveMin its
// minimum.
const (
	liveShare = 0.005
	liveMin   = 6
)

// liveLost reports whether the live row at position i of plan.live loses
// its webhook.
func liveLost(i int) bool { return i%2 == 0 }

// newPlan lays out n payments created over span before now, in time order,
// assigns roles by a seeded shuffle, and interleaves the orphan intents in
// time among them.
func newPlan(n int, seed uint64, now time.Time, span time.Duration) (*plan, error) {
	if n < MinPayments {
		return nil, fmt.Errorf("the demo needs at least %d payments to inject every kind of drift, got %d", MinPayments, n)
	}
	rng := rand.New(rand.NewPCG(seed, seed^0x5deece66d))
	specs := roleSpecs()
	p := &plan{rows: make([]row, n), accounts: []string{""}, now: now}
	rest := n
	for r := role(1); r < numRoles; r++ {
		c := max(specs[r].min, int(float64(n)*specs[r].share))
		p.counts[r] = c
		rest -= c
	}
	if rest < specs[roleUntouched].min {
		return nil, fmt.Errorf("the demo needs more payments: %d leave %d untouched rows", n, rest)
	}
	p.counts[roleUntouched] = rest

	ids := newIDSource(rng)
	start := now.Add(-span).Truncate(time.Second)
	step := span / time.Duration(n)
	for i := range p.rows {
		p.rows[i] = row{index: i, intentID: ids.next(), created: start.Add(time.Duration(i) * step).Truncate(time.Second)}
	}
	perm := rng.Perm(n)
	k := 0
	for r := role(1); r < numRoles; r++ {
		for j := 0; j < p.counts[r]; j++ {
			p.rows[perm[k]].role = r
			p.rows[perm[k]].variant = j % 2
			k++
		}
	}

	// The live rows: the first untouched rows, so that the sweep passes
	// them early in its cycle (their events come after it did).
	nlive := max(liveMin, int(float64(n)*liveShare))
	for i := 0; i < n && len(p.live) < nlive; i++ {
		if p.rows[i].role == roleUntouched {
			p.live = append(p.live, i)
		}
	}

	p.start, p.span = start, span
	p.chooseUnsettled(now)

	// Orphans sit just after a local row (never the last one), so that
	// every one of them lies inside the creation-time window of the batch
	// that holds its neighbour, whatever the batch boundaries.
	norphans := max(orphanMin, int(float64(n)*orphanShare))
	statuses := []payrecon.StripeStatus{payrecon.IntentSucceeded, payrecon.IntentRequiresPaymentMethod, payrecon.IntentCanceled}
	anchors := rng.Perm(n - 1)[:norphans]
	for j, a := range anchors {
		gap := min(p.rows[a+1].created.Sub(p.rows[a].created)/2, 20*time.Second)
		p.orphans = append(p.orphans, orphan{
			intentID: ids.next(),
			created:  p.rows[a].created.Add(gap).Truncate(time.Second),
			status:   statuses[j%len(statuses)],
		})
	}
	return p, nil
}

// injected returns how many subjects the plan injects with each kind.
func (p *plan) injected() map[payrecon.Kind]int {
	specs := roleSpecs()
	out := make(map[payrecon.Kind]int, len(payrecon.Kinds))
	for r := role(0); r < numRoles; r++ {
		if k := specs[r].kind; k != "" {
			out[k] += p.counts[r]
		}
	}
	out[payrecon.KindMissingLocally] = len(p.orphans)
	for i := range p.rows {
		if k := p.settlementKind(i); k != "" {
			out[k]++
		}
	}
	for _, o := range p.orphans {
		if k := o.settlementKind(); k != "" {
			out[k]++
		}
	}
	return out
}

// Settlement: payouts every payoutEvery of the rows' span, and
// --settle-after a quarter of it, so that the rows of the first half have
// later payouts and can be paid_not_settled.
const (
	payoutsPerSpan     = 8
	settleAfterPerSpan = 4
	unsettledShare     = 0.002
	unsettledMin       = 2
)

// payoutEvery is the time between two of the demo's payouts.
func (p *plan) payoutEvery() time.Duration { return p.span / payoutsPerSpan }

// settleAfter is the demo's --settle-after.
func (p *plan) settleAfter() time.Duration { return p.span / settleAfterPerSpan }

// chooseUnsettled picks, evenly, paid rows created after the first two
// payouts and early enough to have a payout --settle-after later (the one
// at now): their charges stay out of every payout.
func (p *plan) chooseUnsettled(now time.Time) {
	lo, hi := p.start.Add(2*p.payoutEvery()), now.Add(-p.settleAfter()-2*p.payoutEvery())
	var eligible []int
	for i, r := range p.rows {
		if r.role == rolePaid && r.account == 0 && !r.created.Before(lo) && !r.created.After(hi) {
			eligible = append(eligible, i)
		}
	}
	n := min(len(eligible), max(unsettledMin, int(float64(len(p.rows))*unsettledShare)))
	p.unsettled = make(map[int]bool, n)
	for j := range n {
		p.unsettled[eligible[j*len(eligible)/n]] = true
	}
}

// settlementKind is the settlement drift row i is injected with ("" for
// none): a charge settled for an order marked failed, a settled gross that
// is not the order's amount, or a paid row whose charge stays out of every
// payout. Only the platform's own rows are paid out (see spread).
func (p *plan) settlementKind(i int) payrecon.Kind {
	switch {
	case p.rows[i].account != 0:
		return ""
	case p.unsettled[i]:
		return payrecon.KindPaidNotSettled
	case p.rows[i].role == roleFailedThenPaid:
		return payrecon.KindSettledNotPaidLocally
	case p.rows[i].role == roleAmountMismatch, p.rows[i].role == roleSessionAmountMismatch:
		return payrecon.KindSettledAmountMismatch
	}
	return ""
}

// settlementKind is what an orphan's settlement shows: a succeeded one is
// paid out with no local row.
func (o orphan) settlementKind() payrecon.Kind {
	if o.status == payrecon.IntentSucceeded && o.account == 0 {
		return payrecon.KindSettledNotPaidLocally
	}
	return ""
}

// expectedBefore returns the status and version a row must have once the
// webhooks have landed.
func (r row) expectedBefore() (payrecon.LocalStatus, int64) {
	s := roleSpecs()[r.role]
	if r.role == roleDuplicated {
		return r.duplicatedStatus(), 1
	}
	return s.before, s.versionB
}

// expectedAfter returns the status a row must have after the run.
func (r row) expectedAfter() payrecon.LocalStatus {
	if r.role == roleDuplicated {
		return r.duplicatedStatus()
	}
	return roleSpecs()[r.role].after
}

func (r row) duplicatedStatus() payrecon.LocalStatus {
	if r.variant == 0 {
		return payrecon.StatusPaid
	}
	return payrecon.StatusFailed
}

// kind is the drift the row is injected with, "" for in-sync rows.
func (r row) kind() payrecon.Kind { return roleSpecs()[r.role].kind }

// repairable reports whether the row's drift is repaired automatically.
func (r row) repairable() bool {
	switch r.role {
	case roleMissedSuccess, roleMissedCancel, roleSessionMissedSuccess, roleSessionMissedCancel:
		return true
	}
	return false
}

// session reports whether the row records a Checkout Session and no
// PaymentIntent.
func (r row) session() bool { return r.role >= firstSessionRole }

// sessionID is a session row's Checkout Session: its intent's id with the
// session's prefix.
func (r row) sessionID() string { return "cs_test_" + r.intentID[len("pi_"):] }

// idSource makes Stripe-shaped ids ("pi_" and 24 characters) from the
// scenario's seeded source, never the same twice.
type idSource struct {
	rng  *rand.Rand
	seen map[string]bool
}

func newIDSource(rng *rand.Rand) *idSource { return &idSource{rng: rng, seen: map[string]bool{}} }

const idAlphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

func (s *idSource) next() string {
	for {
		b := []byte("pi_")
		for range 24 {
			b = append(b, idAlphabet[s.rng.IntN(len(idAlphabet))])
		}
		if id := string(b); !s.seen[id] {
			s.seen[id] = true
			return id
		}
	}
}

// MaxAccounts is the most connected accounts a demo of n payments spreads
// its rows over (Config.Accounts): every account, the platform's own among
// them, gets at least one row of the most common drift (a dropped
// succeeded webhook), so that drift is injected in every account.
func MaxAccounts(n int) int {
	s := roleSpecs()[roleMissedSuccess]
	return min(max(s.min, int(float64(n)*s.share))-1, 1000)
}

// spread lays the plan out over the platform's own account and k connected
// accounts (Config.Accounts), a pure function of the seed: each role's
// rows, in id order, go round the accounts (starting one account further
// for each role, so that the remainders spread too), and so do the orphan
// intents. The settlement phase pays out the platform's own account's
// charges only (a connected account's payouts are its own; the simulator
// keeps one balance), so the settlement drifts are the platform's rows'.
func (p *plan) spread(k int, seed uint64) error {
	if k <= 0 {
		return nil
	}
	if k > MaxAccounts(len(p.rows)) {
		return fmt.Errorf("%d payments give drift to at most %d connected accounts, got %d", len(p.rows), MaxAccounts(len(p.rows)), k)
	}
	rng := rand.New(rand.NewPCG(seed^0xacc0, seed))
	seen := map[string]bool{}
	for len(p.accounts) < k+1 {
		b := []byte("acct_1")
		for range 15 {
			b = append(b, idAlphabet[rng.IntN(len(idAlphabet))])
		}
		if id := string(b); !seen[id] {
			seen[id] = true
			p.accounts = append(p.accounts, id)
		}
	}
	// One untouched row per account (never a live one) gets a webhook from
	// another account.
	live := make(map[int]bool, len(p.live))
	for _, i := range p.live {
		live[i] = true
	}
	var spare []int
	for i, r := range p.rows {
		if r.role == roleUntouched && !live[i] {
			spare = append(spare, i)
		}
	}
	if len(spare) < 2*(k+1) {
		return fmt.Errorf("%d payments leave too few untouched rows for %d connected accounts", len(p.rows), k)
	}
	for j := range k + 1 {
		p.rows[spare[j*len(spare)/(k+1)]].role = roleWrongAccount
	}
	p.counts[roleUntouched] -= k + 1
	p.counts[roleWrongAccount] = k + 1

	var next [numRoles]int
	for i := range p.rows {
		r := p.rows[i].role
		offset := int(r)
		if r == roleAmountMismatch || r == roleFailedThenPaid || r == roleWrongAccount || r == roleSessionAmountMismatch {
			offset = 0 // their first row is the platform's: its payouts show their settlement drift
		}
		p.rows[i].account = (next[r] + offset) % (k + 1)
		next[r]++
	}
	for j := range p.orphans {
		p.orphans[j].account = j % (k + 1)
	}
	p.chooseUnsettled(p.now)
	return nil
}

// accountOf returns the account of row i ("" for the platform's own).
func (p *plan) accountOf(i int) string { return p.accounts[p.rows[i].account] }
