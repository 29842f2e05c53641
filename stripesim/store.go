package stripesim

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"time"

	"github.com/payrecon/payrecon"
)

// Errors returned by the state methods.
var (
	// ErrNoSuchIntent: no PaymentIntent with that id.
	ErrNoSuchIntent = errors.New("stripesim: no such payment intent")
	// ErrDuplicateID: Create or Seed was given an id that already exists.
	ErrDuplicateID = errors.New("stripesim: duplicate payment intent id")
	// ErrNoCharge: Refund or Dispute of an intent that has no charge (it
	// has not succeeded).
	ErrNoCharge = errors.New("stripesim: payment intent has no charge")
	// ErrInvalidAmount: a negative amount, or money that contradicts itself
	// (more refunded than captured).
	ErrInvalidAmount = errors.New("stripesim: invalid amount")
	// ErrRefundTooLarge: a refund of more than the charge has left
	// unrefunded (Stripe's amount_too_large).
	ErrRefundTooLarge = errors.New("stripesim: refund amount is greater than the unrefunded amount")
	// ErrAlreadyRefunded: a refund of a charge that is fully refunded
	// (Stripe's charge_already_refunded).
	ErrAlreadyRefunded = errors.New("stripesim: charge already refunded")
	// ErrChargeDisputed: a refund of a disputed charge (Stripe's
	// charge_disputed), or a second dispute of one.
	ErrChargeDisputed = errors.New("stripesim: charge is disputed")
)

// Intent is a PaymentIntent as the simulator stores it. Zero fields get
// defaults when stored: a generated "pi_…" ID, Amount 1000, Currency "usd",
// Status requires_payment_method and Created = the simulator's clock.
//
// A succeeded intent has a charge ("ch_" + the intent id's suffix) that
// captured AmountReceived; AmountRefunded and Disputed are that charge's
// state. Other statuses have no charge, and Stripe shows amount_received 0
// for them.
type Intent struct {
	ID     string
	Amount int64
	// AmountReceived is what the charge captures when the intent succeeds;
	// zero means Amount. Less than Amount is an intent captured for less.
	AmountReceived int64
	// Currency is stored lower case, as Stripe shows it.
	Currency string
	Status   payrecon.StripeStatus
	// Created is kept in whole seconds, as Stripe does.
	Created  time.Time
	Metadata map[string]string
	// AmountRefunded is the charge's refunded total. Refund changes it
	// and records the event; setting it here records none.
	AmountRefunded int64
	// Disputed is the charge's disputed flag. Dispute sets it and records
	// the event; setting it here records none.
	Disputed bool
	// Account is the connected account the intent lives on ("acct_…"; ""
	// for the platform's own): it is read, listed and its events listed
	// only with that Stripe-Account header, and is answered 404 under any
	// other (Stats.WrongAccount counts those), as Stripe does for direct
	// charges.
	Account string
}

// validate refuses money Stripe never shows: negative amounts, or more
// refunded than captured.
func (in Intent) validate() error {
	if in.Amount < 0 || in.AmountReceived < 0 || in.AmountRefunded < 0 {
		return fmt.Errorf("intent %q: negative amount: %w", in.ID, ErrInvalidAmount)
	}
	if in.AmountRefunded > cmp.Or(in.AmountReceived, in.Amount, 1000) {
		return fmt.Errorf("intent %q: refunded %d of %d captured: %w", in.ID, in.AmountRefunded, cmp.Or(in.AmountReceived, in.Amount, 1000), ErrInvalidAmount)
	}
	return nil
}

// record is one stored intent. Records are ordered newest first: created
// descending, then id descending as the stable tie-break.
type record struct {
	id         string
	created    int64
	amount     int64
	received   int64 // captured when succeeded
	currency   string
	status     payrecon.StripeStatus
	canceledAt int64
	failed     bool // the last payment attempt failed: last_payment_error is set
	metadata   map[string]string
	chargedAt  int64 // the charge's created; 0 means the intent's created
	refunded   int64 // the charge's amount_refunded
	disputed   bool
	account    string // the connected account; "" for the platform
}

func (r *record) intent() Intent {
	return Intent{
		ID:             r.id,
		Amount:         r.amount,
		AmountReceived: r.received,
		Currency:       r.currency,
		Status:         r.status,
		Created:        time.Unix(r.created, 0).UTC(),
		Metadata:       maps.Clone(r.metadata),
		AmountRefunded: r.refunded,
		Disputed:       r.disputed,
		Account:        r.account,
	}
}

// cmpRecord orders records newest first.
func cmpRecord(a, b *record) int {
	if c := cmp.Compare(b.created, a.created); c != 0 {
		return c
	}
	return cmp.Compare(b.id, a.id)
}

// intentIndex holds the intents by id and in list order. It is not safe for
// concurrent use; Server guards it with its state lock.
type intentIndex struct {
	byID  map[string]*record
	order []*record // sorted by cmpRecord
}

func newIntentIndex() *intentIndex {
	return &intentIndex{byID: make(map[string]*record)}
}

// pos returns the position of r in order, or where it would be inserted.
func (x *intentIndex) pos(r *record) int {
	i, _ := slices.BinarySearchFunc(x.order, r, cmpRecord)
	return i
}

// put inserts or replaces one record.
func (x *intentIndex) put(r *record) {
	if old, ok := x.byID[r.id]; ok {
		x.remove(old)
	}
	x.byID[r.id] = r
	x.order = slices.Insert(x.order, x.pos(r), r)
}

func (x *intentIndex) remove(r *record) {
	i := x.pos(r)
	if i < len(x.order) && x.order[i] == r {
		x.order = slices.Delete(x.order, i, i+1)
	}
	delete(x.byID, r.id)
}

// seed adds many new records with one sort. It fails, changing nothing, if
// an id exists already or repeats.
func (x *intentIndex) seed(recs []*record) error {
	for i, r := range recs {
		if _, dup := x.byID[r.id]; dup {
			for _, added := range recs[:i] {
				delete(x.byID, added.id)
			}
			return fmt.Errorf("seed intent %q: %w", r.id, ErrDuplicateID)
		}
		x.byID[r.id] = r
	}
	x.order = append(x.order, recs...)
	slices.SortFunc(x.order, cmpRecord)
	return nil
}

// createdRange returns the half-open range of positions whose created time
// lies in [lo, hi]. Order is newest first, so the range starts at the first
// record created at or before hi.
func (x *intentIndex) createdRange(lo, hi int64) (int, int) {
	if lo > hi {
		return 0, 0
	}
	start := sort.Search(len(x.order), func(i int) bool { return x.order[i].created <= hi })
	end := sort.Search(len(x.order), func(i int) bool { return x.order[i].created < lo })
	return start, end
}
