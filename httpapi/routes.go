package httpapi

import "net/http"

// addRoutes is the one map of the API.
func addRoutes(mux *http.ServeMux, d Deps) {
	if len(d.Webhook.Secrets) > 0 {
		mux.Handle("POST /webhooks/stripe", handleStripeWebhook(d))
	}
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
}
