package httpapi

import "net/http"

// addRoutes is the map of the public listener (--http-addr): the Stripe
// webhook and health, nothing else. Whatever reaches the webhook reaches
// these routes, so nothing here may read or change more than an event does.
func addRoutes(mux *http.ServeMux, d Deps) {
	if len(d.Webhook.Secrets) > 0 {
		mux.Handle("POST /webhooks/stripe", handleStripeWebhook(d))
	}
	mux.Handle("GET /healthz", handleHealthz())
	if d.Ready != nil {
		mux.Handle("GET /readyz", d.Ready)
	}
}

// addAdminRoutes is the map of the admin listener (--admin-addr): health,
// metrics, the operator console and the repair queue's dashboard.
func addAdminRoutes(mux *http.ServeMux, d Deps) {
	mux.Handle("GET /healthz", handleHealthz())
	if d.Ready != nil {
		mux.Handle("GET /readyz", d.Ready)
	}
	if d.Metrics != nil {
		mux.Handle("GET /metrics", d.Metrics)
	}
	if d.Queue != nil {
		mux.Handle(d.QueuePrefix+"/", d.Queue)
	}
	if d.Console != nil {
		mux.Handle(ConsolePrefix, d.Console)
	}
}
