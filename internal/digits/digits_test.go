package digits_test

import (
	"testing"

	"github.com/payrecon/payrecon/internal/digits"
)

func TestGroup(t *testing.T) {
	for n, want := range map[int64]string{
		0: "0", 5: "5", 999: "999", 1000: "1,000", 5000: "5,000", 123456: "123,456",
		1234567: "1,234,567", -1000: "-1,000", -999: "-999",
		-9223372036854775808: "-9,223,372,036,854,775,808",
	} {
		if got := digits.Group(n, ","); got != want {
			t.Errorf("Group(%d) = %q, want %q", n, got, want)
		}
	}
	if got := digits.GroupString("1234", "\u202f"); got != "1\u202f234" {
		t.Errorf("GroupString with a thin space = %q", got)
	}
}
