package payrecon

// LocalStatus is the status of a row in the application's payments table.
type LocalStatus string

// The local statuses the seed's CHECK constraint allows.
const (
	StatusPending LocalStatus = "pending"
	StatusPaid    LocalStatus = "paid"
	StatusFailed  LocalStatus = "failed"
)

// NoLocalRow is the local status recorded on a finding about a
// PaymentIntent that has no payments row (missing_locally).
const NoLocalRow LocalStatus = "(none)"

// LocalStatuses lists every local status, in the order the decision table
// prints them.
var LocalStatuses = []LocalStatus{StatusPending, StatusPaid, StatusFailed}

// Valid reports whether s is one of the known local statuses.
func (s LocalStatus) Valid() bool {
	switch s {
	case StatusPending, StatusPaid, StatusFailed:
		return true
	}
	return false
}

// StripeStatus is the status of a Stripe PaymentIntent as observed by the
// reconciler, or one of the two pseudo statuses NotFound and Unknown that the
// decision table also covers.
type StripeStatus string

// The seven PaymentIntent statuses Stripe documents.
const (
	IntentRequiresPaymentMethod StripeStatus = "requires_payment_method"
	IntentRequiresConfirmation  StripeStatus = "requires_confirmation"
	IntentRequiresAction        StripeStatus = "requires_action"
	IntentProcessing            StripeStatus = "processing"
	IntentRequiresCapture       StripeStatus = "requires_capture"
	IntentCanceled              StripeStatus = "canceled"
	IntentSucceeded             StripeStatus = "succeeded"
)

// Pseudo statuses. NotFound is what the sweep classifies when Stripe answers
// 404 resource_missing for the row's PaymentIntent id; it is also the value
// stored in payments.observed_external_status for such rows. Unknown stands,
// in the printed table, for any status string Stripe may add in the future;
// Classify treats every unrecognised string that way. Neither can collide
// with a real status: Stripe statuses never contain parentheses.
const (
	NotFound StripeStatus = "(not_found)"
	Unknown  StripeStatus = "(unknown)"
)

// StripeStatuses lists the seven documented PaymentIntent statuses in the
// order of their life cycle.
var StripeStatuses = []StripeStatus{
	IntentRequiresPaymentMethod,
	IntentRequiresConfirmation,
	IntentRequiresAction,
	IntentProcessing,
	IntentRequiresCapture,
	IntentCanceled,
	IntentSucceeded,
}

// Valid reports whether s is one of the seven documented statuses.
func (s StripeStatus) Valid() bool {
	for _, k := range StripeStatuses {
		if s == k {
			return true
		}
	}
	return false
}
