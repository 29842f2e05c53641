package console

import (
	"embed"
	"fmt"
	"github.com/payrecon/payrecon"
	"html/template"
	"io/fs"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/payrecon/payrecon/internal/digits"
)

//go:embed templates/*.html
var templateFiles embed.FS

//go:embed assets
var assetFiles embed.FS

// assetHandler serves the embedded CSS (and the favicon), cacheable for a
// day: they change only with the binary.
func assetHandler() http.Handler {
	sub, err := fs.Sub(assetFiles, "assets")
	if err != nil {
		panic(err)
	}
	fsrv := http.FileServerFS(sub)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=86400")
		fsrv.ServeHTTP(w, r)
	})
}

// pageNames are the templates rendered as whole pages, each with layout.
var pageNames = []string{"overview", "findings", "finding", "lookup", "audit", "repairs", "login", "error", "payouts", "payout", "accounts", "account"}

func parsePages() (map[string]*template.Template, error) {
	out := map[string]*template.Template{}
	for _, name := range pageNames {
		t, err := template.New(name).Funcs(funcs).ParseFS(templateFiles, "templates/layout.html", "templates/partials.html", "templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("console: parse template %s: %w", name, err)
		}
		out[name] = t
	}
	return out, nil
}

var funcs = template.FuncMap{
	"ago":       ago,
	"dur":       formatDuration,
	"ts":        formatTime,
	"pct":       func(f float64) string { return fmt.Sprintf("%.1f %%", 100*f) },
	"perHour":   func(f float64) string { return formatCount(f) + " / h" },
	"count":     func(f float64) string { return formatCount(f) },
	"rate":      formatRate,
	"money":     formatMoney,
	"amount":    formatAmount,
	"deref":     func(p *int64) int64 { return *p },
	"derefTime": func(p *time.Time) time.Time { return *p },
	"rowsAt":    func(now time.Time, rows []payrecon.Finding) findingRows { return findingRows{Now: now, Rows: rows} },
	"countInt":  func(n int64) string { return formatCount(float64(n)) },
	"progress":  func(f float64) int { return int(math.Round(math.Min(1, math.Max(0, f)) * 100)) },
	"label":     sourceLabel,
	"isoTime":   func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
	"f1":        func(f float64) string { return fmt.Sprintf("%.1f", f) },
	"date":      func(t time.Time) string { return t.UTC().Format(time.DateOnly) },
}

// sourceLabel names a timeline source; a new source needs one entry here
// and one query in the read model.
func sourceLabel(source string) string {
	if l, ok := sourceLabels[source]; ok {
		return l
	}
	return source
}

var sourceLabels = map[string]string{
	"finding":  "Finding",
	"sweep":    "Sweep",
	"webhook":  "Webhook",
	"repair":   "Repair",
	"operator": "Operator",
	// Transitions of the payment (payment_transitions) and their
	// notifications.
	"transition": "Transition",
}

func ago(now, t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	d := now.Sub(t)
	if d < 0 {
		return "in " + formatDuration(-d)
	}
	if d < time.Second {
		return "just now"
	}
	return formatDuration(d) + " ago"
}

// formatDuration writes a duration in at most two units: "2 h 13 min".
func formatDuration(d time.Duration) string {
	if d < 0 {
		d = -d
	}
	switch {
	case d < time.Second:
		return fmt.Sprintf("%d ms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%d s", int(d.Seconds()))
	case d < time.Hour:
		m, s := int(d.Minutes()), int(d.Seconds())%60
		if s == 0 {
			return fmt.Sprintf("%d min", m)
		}
		return fmt.Sprintf("%d min %d s", m, s)
	case d < 48*time.Hour:
		h, m := int(d.Hours()), int(d.Minutes())%60
		if m == 0 {
			return fmt.Sprintf("%d h", h)
		}
		return fmt.Sprintf("%d h %d min", h, m)
	}
	days, h := int(d.Hours())/24, int(d.Hours())%24
	if h == 0 {
		return fmt.Sprintf("%d d", days)
	}
	return fmt.Sprintf("%d d %d h", days, h)
}

func formatTime(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}

func formatCount(f float64) string {
	if f == math.Trunc(f) && math.Abs(f) < 1e15 {
		return groupDigits(strconv.FormatInt(int64(f), 10))
	}
	if math.Abs(f) >= 100 {
		return groupDigits(strconv.FormatInt(int64(math.Round(f)), 10))
	}
	return fmt.Sprintf("%.1f", f)
}

func formatRate(f float64) string {
	if math.IsInf(f, 1) || f >= math.MaxFloat64 { // rate.Inf
		return "unlimited"
	}
	return fmt.Sprintf("%.1f / s", f)
}

// groupDigits puts thin spaces between groups of three digits.
func groupDigits(s string) string { return digits.GroupString(s, "\u202f") }

// currencyExponent is the number of minor-unit digits, per Stripe's lists
// of zero- and three-decimal currencies; two for every other.
func currencyExponent(cur string) int {
	switch strings.ToLower(cur) {
	case "bif", "clp", "djf", "gnf", "jpy", "kmf", "krw", "mga", "pyg", "rwf", "ugx", "vnd", "vuv", "xaf", "xof", "xpf":
		return 0
	case "bhd", "jod", "kwd", "omr", "tnd":
		return 3
	}
	return 2
}

// formatAmount writes minor units in the currency's major unit:
// 123456 usd → "1 234.56 USD".
func formatAmount(minor int64, cur string) string {
	exp := currencyExponent(cur)
	neg := minor < 0
	if neg {
		minor = -minor
	}
	s := strconv.FormatInt(minor, 10)
	whole, frac := s, ""
	if exp > 0 {
		for len(s) <= exp {
			s = "0" + s
		}
		whole, frac = s[:len(s)-exp], "."+s[len(s)-exp:]
	}
	out := groupDigits(whole) + frac
	if neg {
		out = "-" + out
	}
	if cur == "" {
		return out
	}
	return out + " " + strings.ToUpper(cur)
}

func formatMoney(m Money) string { return formatAmount(m.Amount, m.Currency) }

// findingRows is what the findingRows template gets.
type findingRows struct {
	Now  time.Time
	Rows []payrecon.Finding
}
