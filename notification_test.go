package payrecon

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestVerifyNotification(t *testing.T) {
	t.Parallel()
	const secret = "whsec_shop"
	body := []byte(`{"id":7,"type":"payment.transitioned"}`)
	now := time.Unix(1_800_000_000, 0)
	good := SignNotification(body, secret, now)
	if !strings.HasPrefix(good, "t=1800000000,v1=") || len(good) != len("t=1800000000,v1=")+64 {
		t.Fatalf("header %q", good)
	}
	tests := []struct {
		name      string
		body      []byte
		header    string
		secret    string
		tolerance time.Duration
		want      error
	}{
		{"good", body, good, secret, 5 * time.Minute, nil},
		{"good, two signatures (secret rotation)", body, SignNotification(body, "old", now) + "," + strings.Split(good, ",")[1], secret, 5 * time.Minute, nil},
		{"good, no time check", body, SignNotification(body, secret, now.Add(-48*time.Hour)), secret, 0, nil},
		{"other secret", body, good, "whsec_other", 5 * time.Minute, ErrSignatureMismatch},
		{"changed body", []byte(`{"id":8,"type":"payment.transitioned"}`), good, secret, 5 * time.Minute, ErrSignatureMismatch},
		{"changed timestamp", body, strings.Replace(good, "t=1800000000", "t=1800000001", 1), secret, 5 * time.Minute, ErrSignatureMismatch},
		{"expired", body, SignNotification(body, secret, now.Add(-6*time.Minute)), secret, 5 * time.Minute, ErrSignatureExpired},
		{"from the future", body, SignNotification(body, secret, now.Add(6*time.Minute)), secret, 5 * time.Minute, ErrSignatureExpired},
		{"empty header", body, "", secret, 5 * time.Minute, ErrSignatureHeader},
		{"no v1", body, "t=1800000000", secret, 5 * time.Minute, ErrSignatureHeader},
		{"no t", body, strings.Split(good, ",")[1], secret, 5 * time.Minute, ErrSignatureHeader},
		{"v1 not hex", body, "t=1800000000,v1=zz", secret, 5 * time.Minute, ErrSignatureHeader},
	}
	for _, tt := range tests {
		err := verifyNotificationAt(tt.body, tt.header, tt.secret, tt.tolerance, now)
		if tt.want == nil && err != nil || tt.want != nil && !errors.Is(err, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, err, tt.want)
		}
	}
	if err := VerifyNotification(body, good, "", 0); err == nil {
		t.Error("an empty secret verified")
	}
	// The exported function checks against the real clock.
	if err := VerifyNotification(body, SignNotification(body, secret, time.Now()), secret, time.Minute); err != nil {
		t.Errorf("fresh signature: %v", err)
	}
	if err := VerifyNotification(body, good, secret, time.Minute); !errors.Is(err, ErrSignatureExpired) {
		t.Errorf("old signature: %v", err)
	}
}
