package main

import (
	"errors"
	"fmt"
	"math"
	"net"
	"strconv"
	"strings"
	"time"
)

// Flag checks: each returns a usageError naming the flag and the value, so
// that a value that makes no sense is refused in one line (exit 2) instead
// of silently becoming a default or meaning "unlimited".

// checkFinite refuses NaN and ±Inf, and a negative value unless negOK.
func checkFinite(flag string, v float64, negOK bool) error {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return usageError{fmt.Errorf("%s must be a finite number, got %g", flag, v)}
	case !negOK && v < 0:
		return usageError{fmt.Errorf("%s must not be negative, got %g", flag, v)}
	}
	return nil
}

// checkPositiveDuration refuses zero and negative durations.
func checkPositiveDuration(flag string, d time.Duration) error {
	if d <= 0 {
		return usageError{fmt.Errorf("%s must be positive, got %s", flag, d)}
	}
	return nil
}

// checkNonNegativeDuration refuses negative durations (zero has a meaning of
// its own: off, or no minimum).
func checkNonNegativeDuration(flag string, d time.Duration) error {
	if d < 0 {
		return usageError{fmt.Errorf("%s must not be negative, got %s", flag, d)}
	}
	return nil
}

// checkPositiveInt refuses zero and negative counts.
func checkPositiveInt(flag string, n int) error {
	if n <= 0 {
		return usageError{fmt.Errorf("%s must be positive, got %d", flag, n)}
	}
	return nil
}

// checkName refuses an empty (or all-blank) name and control characters.
func checkName(flag, s string) error {
	if strings.TrimSpace(s) == "" {
		return usageError{fmt.Errorf("%s must not be empty", flag)}
	}
	if strings.ContainsFunc(s, isControl) {
		return usageError{fmt.Errorf("%s %q contains control characters", flag, s)}
	}
	return nil
}

// checkListenAddr refuses an address net.Listen cannot take: host:port with
// a numeric port (the host may be empty: every interface).
func checkListenAddr(flag, addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return usageError{fmt.Errorf("%s %q is not host:port: %w", flag, addr, unwrapAddrErr(err))}
	}
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || (n == 0 && port != "0") {
		return usageError{fmt.Errorf("%s %q: the port must be a number from 0 to 65535", flag, addr)}
	}
	return nil
}

func unwrapAddrErr(err error) error {
	var ae *net.AddrError
	if errors.As(err, &ae) {
		return errors.New(ae.Err)
	}
	return err
}

// checkSecretList refuses a list that is set but holds no secret once split
// (" , "): that would silently disable what the secret enables.
func checkSecretList(flag, raw string) error {
	if raw != "" && len(splitList(raw)) == 0 {
		return configError{fmt.Errorf("%s is set but holds no secret (%d characters, only commas and blanks): unset it to disable the endpoint, or give the secret", flag, len(raw))}
	}
	return nil
}

// isControl reports C0/C1 control characters and DEL.
func isControl(r rune) bool { return r < 0x20 || (r >= 0x7f && r < 0xa0) }

// term makes a value from the database safe to print on a terminal: control
// characters (escape sequences, carriage returns, tabs and newlines that
// would break the layout) are shown escaped, Go style, and never sent raw.
func term(s string) string {
	if !strings.ContainsFunc(s, isControl) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if !isControl(r) {
			b.WriteRune(r)
			continue
		}
		q := strconv.QuoteRune(r) // '\x1b', '\n'
		b.WriteString(q[1 : len(q)-1])
	}
	return b.String()
}
