package stripesim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// apiError is the "error" object of Stripe's error body.
type apiError struct {
	Code          string `json:"code,omitempty"`
	DocURL        string `json:"doc_url,omitempty"`
	Message       string `json:"message"`
	Param         string `json:"param,omitempty"`
	RequestLogURL string `json:"request_log_url,omitempty"`
	Type          string `json:"type"`
}

func docURL(code string) string {
	return "https://stripe.com/docs/error-codes/" + strings.ReplaceAll(code, "_", "-")
}

// writeError writes Stripe's error body {"error":{…}} with the request's log
// URL filled in.
func (s *Server) writeError(w http.ResponseWriter, status int, e apiError) {
	if e.Code != "" && e.DocURL == "" {
		e.DocURL = docURL(e.Code)
	}
	if id := w.Header().Get("Request-Id"); id != "" && e.Type != "api_error" {
		e.RequestLogURL = "https://dashboard.stripe.com/test/logs/" + id
	}
	writeJSON(w, status, struct {
		Error apiError `json:"error"`
	}{e})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		http.Error(w, "stripesim: encode response: "+err.Error(), http.StatusInternalServerError)
		return
	}
	body = append(body, '\n')
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("Cache-Control", "no-cache, no-store")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

func badRequest(param, code, msg string) *apiError {
	return &apiError{Type: "invalid_request_error", Code: code, Param: param, Message: msg}
}

func noSuchIntent(id, param string) apiError {
	return apiError{
		Type:    "invalid_request_error",
		Code:    "resource_missing",
		Param:   param,
		Message: fmt.Sprintf("No such payment_intent: '%s'", id),
	}
}

func rateLimitError() apiError {
	return apiError{
		Type:    "invalid_request_error",
		Code:    "rate_limit",
		Message: "Request rate limit exceeded. You can learn more about rate limits here https://stripe.com/docs/rate-limits.",
	}
}

// Restricted-key permissions, as Stripe names them in its 403 answers (the
// Dashboard calls them "PaymentIntents: Read", "Charges: Read", "Events:
// Read").
const (
	PermissionPaymentIntentRead = "rak_payment_intent_read"
	PermissionChargeRead        = "rak_charge_read"
	PermissionEventRead         = "rak_event_read"
)

// endpointPermission is the permission an endpoint itself needs.
func endpointPermission(endpoint string) string {
	switch endpoint {
	case EndpointListEvents:
		return PermissionEventRead
	case EndpointListPayouts, EndpointRetrievePayout:
		return PermissionPayoutRead
	case EndpointListBalanceTransactions:
		return PermissionBalanceRead
	case EndpointRetrieveSession, EndpointListSessions:
		return PermissionCheckoutSessionRead
	}
	return PermissionPaymentIntentRead
}

// requiredPermissions is what a restricted key needs for r, the endpoint's
// own permission first.
func requiredPermissions(endpoint string, r *http.Request) []string {
	perms := []string{endpointPermission(endpoint)}
	if endpoint == EndpointRetrieveSession || endpoint == EndpointListSessions {
		for _, v := range expansions(r.URL.Query()) {
			if strings.Contains(v, "payment_intent") {
				perms = append(perms, PermissionPaymentIntentRead)
				break
			}
		}
	}
	if endpoint == EndpointRetrieveIntent || endpoint == EndpointListIntents || endpoint == EndpointRetrieveSession || endpoint == EndpointListSessions {
		for _, v := range expansions(r.URL.Query()) {
			if strings.HasSuffix(v, "latest_charge") {
				perms = append(perms, PermissionChargeRead)
				break
			}
		}
	}
	return perms
}

// writeForbidden answers 403 as Stripe does for a restricted key that lacks
// perm.
func (s *Server) writeForbidden(w http.ResponseWriter, perm, key string) {
	s.writeError(w, http.StatusForbidden, apiError{
		Type: "invalid_request_error",
		Message: fmt.Sprintf("The provided key '%s' does not have the required permissions for this endpoint "+
			"on account 'acct_sim'. Having the '%s' permission would allow this request to continue.", maskKey(key), perm),
	})
}

// writeFailure answers an injected failure; see Failure for the bodies.
func (s *Server) writeFailure(w http.ResponseWriter, endpoint string, f Failure) {
	h := w.Header()
	if f.RetryAfter > 0 {
		h.Set("Retry-After", retryAfterHeader(f.RetryAfter))
	}
	if f.ShouldRetry != "" {
		h.Set("Stripe-Should-Retry", f.ShouldRetry)
	}
	msg := func(def string) string {
		if f.Message != "" {
			return f.Message
		}
		return def
	}
	switch st := f.Status; {
	case st == http.StatusTooManyRequests:
		h.Set("Stripe-Rate-Limited-Reason", "global-rate")
		e := rateLimitError()
		e.Message = msg(e.Message)
		s.writeError(w, st, e)
	case st == http.StatusUnauthorized:
		s.writeError(w, st, apiError{Type: "invalid_request_error", Message: msg("Invalid API Key provided: " + maskKey(s.key))})
	case st == http.StatusForbidden:
		s.writeForbidden(w, endpointPermission(endpoint), s.key)
	case st == http.StatusNotFound:
		s.writeError(w, st, apiError{Type: "invalid_request_error", Code: "resource_missing", Message: msg("No such object")})
	case st == http.StatusConflict:
		s.writeError(w, st, apiError{Type: "idempotency_error", Code: "idempotency_key_in_use",
			Message: msg("There is currently another in-progress request using this Stripe-Idempotency-Key. Please try again later.")})
	case st == http.StatusInternalServerError:
		s.writeError(w, st, apiError{Type: "api_error",
			Message: msg("Sorry, something went wrong. We've already been notified of the problem, but if you need any help, you can reach us at https://support.stripe.com/contact.")})
	case st >= 500:
		text := http.StatusText(st)
		body := fmt.Sprintf("<html>\r\n<head><title>%d %s</title></head>\r\n<body>\r\n<center><h1>%d %s</h1></center>\r\n</body>\r\n</html>\r\n", st, text, st, text)
		h.Set("Content-Type", "text/html")
		h.Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(st)
		_, _ = w.Write([]byte(body))
	default:
		s.writeError(w, st, apiError{Type: "invalid_request_error", Message: msg("Invalid request")})
	}
}

// writeRateLimited answers the rate limiter's 429.
func (s *Server) writeRateLimited(w http.ResponseWriter, rl RateLimit) {
	h := w.Header()
	if rl.PerEndpoint {
		h.Set("Stripe-Rate-Limited-Reason", "endpoint-rate")
	} else {
		h.Set("Stripe-Rate-Limited-Reason", "global-rate")
	}
	if rl.RetryAfter > 0 {
		h.Set("Retry-After", retryAfterHeader(rl.RetryAfter))
	}
	if rl.ShouldRetry != "" {
		h.Set("Stripe-Should-Retry", rl.ShouldRetry)
	}
	s.writeError(w, http.StatusTooManyRequests, rateLimitError())
}

func (s *Server) handleUnknown(w http.ResponseWriter, r *http.Request) {
	s.writeError(w, http.StatusNotFound, apiError{
		Type: "invalid_request_error",
		Message: fmt.Sprintf("Unrecognized request URL (%s: %s). Please see https://stripe.com/docs or we can help at https://support.stripe.com/.",
			r.Method, r.URL.Path),
	})
}
