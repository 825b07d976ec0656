package throttle

import (
	"math/big"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// FuzzRetryAfter: whatever a server sends as Retry-After, the parser does not panic, its
// answer is between 0 and MaxRetryAfter (0 when it refuses the value), both forms read back
// what was written, and the wait made from it stays within the policy's cap.
func FuzzRetryAfter(f *testing.F) {
	f.Add("3", int64(1767268800), uint32(3), int64(7), 0)
	f.Add("Thu, 01 Jan 2026 12:00:07 GMT", int64(1767268800), uint32(0), int64(-60), 2)
	f.Add("9999999999", int64(0), uint32(1<<31), int64(1<<40), 40)
	f.Add("Fri, 31 Dec 9999 23:59:59 GMT", int64(-1<<40), uint32(4000), int64(-1<<62), -1)
	f.Add("Monday, 01-Jan-26 12:00:02 GMT", int64(1767268800), uint32(1), int64(3600), 1)
	f.Add("Thu Jan  1 12:00:03 2026", int64(1767268800), uint32(59), int64(86400), 5)
	f.Add(" -1 ", int64(1767268800), uint32(0), int64(0), 0)
	f.Fuzz(func(t *testing.T, v string, nowUnix int64, secs uint32, offset int64, retry int) {
		now := time.Unix(nowUnix, 0).UTC()
		check := func(v string) (time.Duration, bool) {
			t.Helper()
			d, ok := RetryAfter(http.Header{"Retry-After": {v}}, now)
			if d < 0 || d > MaxRetryAfter {
				t.Fatalf("Retry-After %q at %v = %v, outside [0, %v]", v, now, d, MaxRetryAfter)
			}
			if !ok && d != 0 {
				t.Fatalf("Retry-After %q refused but = %v", v, d)
			}
			for _, p := range []Policy{Default, {Retries: 3, BaseWait: time.Millisecond, MaxWait: 5 * time.Millisecond}} {
				if w := p.Wait(retry, d, ok); w < 0 || w > p.MaxWait+p.MaxWait/4 {
					t.Fatalf("Wait(%d, %v, %v) = %v, outside [0, %v + a quarter]", retry, d, ok, w, p.MaxWait)
				}
			}
			return d, ok
		}

		// Any value: delay-seconds are digits and read as their (capped) number.
		d, ok := check(v)
		if digits := strings.TrimSpace(v); digits != "" && strings.Trim(digits, "0123456789") == "" {
			n, _ := new(big.Int).SetString(digits, 10)
			want := MaxRetryAfter
			if n.Cmp(big.NewInt(int64(MaxRetryAfter/time.Second))) < 0 {
				want = time.Duration(n.Int64()) * time.Second
			}
			if !ok || d != want {
				t.Fatalf("Retry-After %q = %v, %v; want %v", v, d, ok, want)
			}
		} else if _, err := http.ParseTime(strings.TrimSpace(v)); (err == nil) != ok {
			t.Fatalf("Retry-After %q: ok = %v, but http.ParseTime says %v", v, ok, err)
		}

		// delay-seconds round trip.
		wantSecs := min(time.Duration(secs)*time.Second, MaxRetryAfter)
		if d, ok := check(strconv.FormatUint(uint64(secs), 10)); !ok || d != wantSecs {
			t.Fatalf("Retry-After %d = %v, %v; want %v", secs, d, ok, wantSecs)
		}

		// HTTP-date round trip, in the past (0) or the future, as far as the format reaches.
		at := now.Add(time.Duration(offset%(1<<40)) * time.Second)
		if y := at.Year(); y < 1 || y > 9999 {
			return
		}
		want := min(max(at.Sub(now), 0), MaxRetryAfter)
		for _, layout := range []string{http.TimeFormat, time.RFC850, time.ANSIC} {
			if d, ok := check(at.Format(layout)); !ok || d != want {
				// RFC 850 has two-digit years: only dates the parser reads back count.
				if back, err := time.Parse(layout, at.Format(layout)); err == nil && back.Equal(at) {
					t.Fatalf("Retry-After %q at %v = %v, %v; want %v", at.Format(layout), now, d, ok, want)
				}
			}
		}
	})
}
