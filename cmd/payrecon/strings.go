package main

import (
	"strings"

	"github.com/payrecon/payrecon/internal/redact"
)

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// apiBaseShown is STRIPE_API_BASE as printed: Stripe's own when unset.
func apiBaseShown(raw string) string {
	if raw == "" {
		return "https://api.stripe.com"
	}
	return redact.URL(raw)
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
