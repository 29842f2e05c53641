package relay

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/internal/redact"
)

// NotifyKind is the River job kind of a transition's notification to the
// application.
const NotifyKind = "payrecon_notify"

// NotifyQueue is the River queue notifications are delivered on, apart from
// repairs so that a slow receiver never holds repairs up.
const NotifyQueue = "notifications"

// Defaults of NotifyConfig.
const (
	NotifyTimeoutDefault     = 10 * time.Second
	NotifyWorkersDefault     = 10
	NotifyRetryMaxDefault    = time.Hour
	NotifyMaxAttemptsDefault = 90
)

// NotifyConfig configures the notifications of transitions to the
// application (design.md, "Transitions and notifications"). Zero URL turns
// them off.
//
// With the defaults a failing notification is retried after about 2 s,
// 4 s, 8 s, … up to once an hour, 90 attempts in all: about 3 days and 4
// hours, after which River discards it (a dead letter, listed and retried
// like a repair's).
type NotifyConfig struct {
	// URL receives a POST per transition.
	URL string
	// Secret signs each notification (Payrecon-Signature). Required with
	// URL.
	Secret string
	// Timeout bounds one delivery attempt; default NotifyTimeoutDefault.
	Timeout time.Duration
	// Workers is how many notifications this process delivers at once;
	// default NotifyWorkersDefault.
	Workers int
	// MaxAttempts bounds the attempts of one notification (set on the job
	// when it is inserted); default NotifyMaxAttemptsDefault.
	MaxAttempts int
	// RetryMax caps the wait between two attempts (2^attempt seconds, with
	// ±10 % jitter, at most this); default NotifyRetryMaxDefault.
	RetryMax time.Duration
	// Jitter draws the retry's jitter, uniform in [0, 1); default
	// math/rand's. Tests inject their own, as they inject the relay's Clock,
	// which dates the retries.
	Jitter func() float64
	// Client sends the requests; default an http.Client without its own
	// timeout (each attempt has Timeout) that keeps a connection per worker
	// open to the receiver (the standard transport keeps only two). Whatever
	// the client, redirects are never followed: a 3xx answer is a failed
	// attempt (see NotifyConfig.withDefaults).
	Client *http.Client
}

func (c NotifyConfig) enabled() bool { return c.URL != "" }

func (c NotifyConfig) withDefaults() NotifyConfig {
	if c.Timeout == 0 {
		c.Timeout = NotifyTimeoutDefault
	}
	if c.Workers == 0 {
		c.Workers = NotifyWorkersDefault
	}
	if c.MaxAttempts == 0 {
		c.MaxAttempts = NotifyMaxAttemptsDefault
	}
	if c.RetryMax == 0 {
		c.RetryMax = NotifyRetryMaxDefault
	}
	if c.Jitter == nil {
		c.Jitter = rand.Float64 //nolint:gosec // jitter, not security
	}
	if c.Client == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConnsPerHost = c.Workers
		c.Client = &http.Client{Transport: t}
	}
	// A copy that never follows a redirect: following one turns a 301/302/303
	// into a bodiless GET (whose 200 would acknowledge a notification the
	// application never read) and sends a 307/308's signed body, with a
	// Referer, to whatever host the Location names.
	cl := *c.Client
	cl.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	c.Client = &cl
	return c
}

// ErrNotifySecret: a notify URL without a secret.
var ErrNotifySecret = errors.New("--notify-url needs --notify-secret (PAYRECON_NOTIFY_SECRET)")

// Validate reports the first setting that cannot work.
func (c NotifyConfig) Validate() error {
	if !c.enabled() {
		return nil
	}
	c = c.withDefaults()
	u, err := url.Parse(c.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("notify URL %s is not an http(s) URL", redact.URL(c.URL))
	}
	if c.Secret == "" {
		return ErrNotifySecret
	}
	if c.Timeout < 0 || c.Workers < 1 || c.Workers > river.QueueNumWorkersMax || c.MaxAttempts < 1 || c.RetryMax <= 0 {
		return fmt.Errorf("notify: timeout %s, workers %d, max attempts %d, retry max %s: out of range",
			c.Timeout, c.Workers, c.MaxAttempts, c.RetryMax)
	}
	return nil
}

// NotifyArgs are the arguments of a notification job: the transition, and
// its payment and version for the per-payment order.
type NotifyArgs struct {
	TransitionID int64 `json:"transition_id" river:"unique"`
	PaymentID    int64 `json:"payment_id"`
	Version      int64 `json:"version"`
}

// Kind implements river.JobArgs.
func (NotifyArgs) Kind() string { return NotifyKind }

// InsertOpts implements river.JobArgsWithInsertOpts: the notifications
// queue, unique by transition in every job state.
func (NotifyArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{
		Queue:      NotifyQueue,
		UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: rivertype.JobStates()},
	}
}

// enqueueNotification is the writer's transition hook: the notification's
// job is inserted in the transition's own transaction when this relay has
// a notify URL, or when another process recorded one in the database
// (RecordNotifications); otherwise there is nobody to notify.
func (r *Relay) enqueueNotification(ctx context.Context, tx pgx.Tx, t payrecon.PaymentTransition) error {
	maxAttempts := r.cfg.Notify.MaxAttempts
	if !r.cfg.Notify.enabled() {
		var on bool
		if err := tx.QueryRow(ctx, queries.Get("notifications_enabled")).Scan(&on); err != nil {
			return fmt.Errorf("enqueue notification of transition %d: are notifications configured: %w", t.ID, err)
		}
		if !on {
			return nil
		}
		maxAttempts = NotifyMaxAttemptsDefault
	}
	_, err := r.client.InsertTx(ctx, tx, NotifyArgs{TransitionID: t.ID, PaymentID: t.PaymentID, Version: t.Version},
		&river.InsertOpts{MaxAttempts: maxAttempts})
	if err != nil {
		return fmt.Errorf("enqueue notification of transition %d: %w", t.ID, err)
	}
	return nil
}

// notifyWorker POSTs one transition to the application.
type notifyWorker struct {
	river.WorkerDefaults[NotifyArgs]
	relay *Relay
}

// Timeout implements river.Worker: the HTTP timeout and a little.
func (w *notifyWorker) Timeout(*river.Job[NotifyArgs]) time.Duration {
	return w.relay.cfg.Notify.Timeout + 5*time.Second
}

// NextRetry implements river.Worker: 2^attempt seconds, ±10 %, capped at
// NotifyConfig.RetryMax.
func (w *notifyWorker) NextRetry(job *river.Job[NotifyArgs]) time.Time {
	n := w.relay.cfg.Notify
	return w.relay.cfg.Clock.Now().Add(notifyBackoff(job.Attempt, n.RetryMax, n.Jitter()))
}

// notifyBackoff is the wait before attempt+1: 2^attempt seconds, at most
// maxWait, scaled by 0.9 + 0.2 × jitter (jitter in [0, 1)).
func notifyBackoff(attempt int, maxWait time.Duration, jitter float64) time.Duration {
	d := maxWait
	if attempt < 40 {
		d = min(time.Duration(1<<attempt)*time.Second, maxWait)
	}
	return time.Duration(float64(d) * (0.9 + 0.2*jitter))
}

// Work delivers the notification. A 2xx answer acknowledges it; anything
// else, a connection error or the timeout is an error River retries (the
// last one discards the job: the dead letter). While an earlier transition
// of the same payment is undelivered the job is snoozed (no attempt
// counted): one payment's transitions arrive in version order.
func (w *notifyWorker) Work(ctx context.Context, job *river.Job[NotifyArgs]) error {
	r := w.relay
	a := job.Args
	n, earlier, due, err := r.loadNotification(ctx, a.TransitionID)
	if errors.Is(err, pgx.ErrNoRows) {
		r.metric.notified.WithLabelValues("dead_lettered").Inc()
		return river.JobCancel(fmt.Errorf("notify transition %d: no such transition", a.TransitionID))
	}
	if err != nil {
		return err
	}
	if earlier > 0 {
		wait := time.Minute
		if due != nil {
			wait = min(max(due.Sub(r.cfg.Clock.Now()), 0)+200*time.Millisecond, time.Minute)
		}
		r.metric.notified.WithLabelValues("waiting").Inc()
		r.log.Debug("relay: notification waits for an earlier transition", slog.Int64("transition_id", a.TransitionID),
			slog.Int64("payment_id", a.PaymentID), slog.Int64("version", a.Version), slog.Duration("wait", wait))
		return river.JobSnooze(wait)
	}
	start := r.cfg.Clock.Now()
	err = r.post(ctx, n)
	if err == nil {
		end := r.cfg.Clock.Now()
		r.metric.notified.WithLabelValues("delivered").Inc()
		r.metric.notifyDelay.Observe(end.Sub(n.OccurredAt).Seconds())
		r.metric.notifyPost.Observe(end.Sub(start).Seconds())
		r.log.Debug("relay: notified", slog.Int64("transition_id", n.ID), slog.Int64("payment_id", n.PaymentID))
		return nil
	}
	if errors.Is(ctx.Err(), context.Canceled) {
		return err // stopping: River puts the job back
	}
	r.metric.notified.WithLabelValues("failed").Inc()
	if job.Attempt >= job.MaxAttempts {
		r.metric.notified.WithLabelValues("dead_lettered").Inc()
		r.log.Error("relay: notification dead-lettered after its last attempt", slog.Int64("transition_id", a.TransitionID),
			slog.Int64("job_id", job.ID), slog.Int("attempt", job.Attempt), slog.String("error", err.Error()))
	} else {
		r.log.Warn("relay: notification failed; River retries it", slog.Int64("transition_id", a.TransitionID),
			slog.Int64("job_id", job.ID), slog.Int("attempt", job.Attempt), slog.Int("max_attempts", job.MaxAttempts),
			slog.String("error", err.Error()))
	}
	return err
}

// loadNotification reads the notification of transition id, how many
// notifications of earlier transitions of its payment are undelivered, and
// when the first of those is due (nil: none is waiting to run).
func (r *Relay) loadNotification(ctx context.Context, id int64) (n payrecon.Notification, earlier int, due *time.Time, err error) {
	n = payrecon.Notification{Type: payrecon.NotificationType}
	var order, intent *string
	err = r.pool.QueryRow(ctx, queries.Get("notify_transition"), pgx.StrictNamedArgs{"transition_id": id, "kind": NotifyKind}).
		Scan(&n.ID, &n.PaymentID, &order, &intent, &n.From, &n.To, &n.Version, &n.Source, &n.SourceRef, &n.OccurredAt, &earlier, &due)
	if err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return n, 0, nil, err
		}
		return n, 0, nil, fmt.Errorf("notify transition %d: load it: %w", id, err)
	}
	if order != nil {
		n.OrderID = *order
	}
	if intent != nil {
		n.StripePaymentIntentID = *intent
	}
	n.OccurredAt = n.OccurredAt.UTC()
	return n, earlier, due, nil
}

// post sends one signed notification; nil only for a 2xx answer.
func (r *Relay) post(ctx context.Context, n payrecon.Notification) error {
	if err := send(ctx, r.cfg.Notify, n, r.cfg.Clock.Now()); err != nil {
		return fmt.Errorf("notify transition %d: %w", n.ID, err)
	}
	return nil
}

// NotificationTestType is the type of PingNotify's test delivery: a
// receiver answers it 2xx and does nothing else.
const NotificationTestType = "payrecon.test"

// PingNotify sends one signed test delivery to c.URL, exactly as a
// notification is sent (the same headers, the same signature, c.Timeout),
// with type NotificationTestType, id 0 and no payment: `payrecon doctor
// --ping-notify`. It returns nil only for a 2xx answer.
func PingNotify(ctx context.Context, c NotifyConfig, now time.Time) error {
	if err := c.Validate(); err != nil {
		return err
	}
	if !c.enabled() {
		return errors.New("no notification URL")
	}
	own := c.Client == nil
	c = c.withDefaults()
	if own {
		defer c.Client.CloseIdleConnections()
	}
	return send(ctx, c, payrecon.Notification{Type: NotificationTestType, OccurredAt: now.UTC()}, now)
}

// send POSTs n signed with c.Secret at now.
func send(ctx context.Context, c NotifyConfig, n payrecon.Notification, now time.Time) error {
	body, err := json.Marshal(n)
	if err != nil {
		return fmt.Errorf("encode: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, c.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.URL, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "payrecon")
	req.Header.Set(payrecon.IdempotencyKeyHeader, strconv.FormatInt(n.ID, 10))
	req.Header.Set(payrecon.SignatureHeader, payrecon.SignNotification(body, c.Secret, now))
	resp, err := c.Client.Do(req)
	if err != nil {
		// net/http's *url.Error quotes the whole URL, query token included:
		// this error is logged and stored by River, so it names the URL
		// redacted instead.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("POST %s: %w", redact.URL(c.URL), err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // lets the connection be reused
	if resp.StatusCode >= 300 && resp.StatusCode <= 399 {
		to := "no Location"
		if loc, err := resp.Location(); err == nil {
			to = redact.URL(loc.String())
		}
		return fmt.Errorf("the application answered %s, a redirect to %s: not followed (only a 2xx acknowledges a notification; set --notify-url to the final URL)",
			resp.Status, to)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("the application answered %s", resp.Status)
	}
	return nil
}
