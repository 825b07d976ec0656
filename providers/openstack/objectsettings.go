package openstack

import (
	"fmt"
	"strings"
)

// Settings of the objects ccm makes that no annotation or config key chooses: the listener's,
// pool's and monitor's admin_state_up, each member's weight, backup and admin_state_up, and an
// HTTP monitor's http_method and expected_codes. ccm creates its objects with these values
// (Octavia's defaults, which it leaves to Octavia, except an HTTP monitor's method and codes,
// which it sends as the upstream CCM does), so a different value was set out of band: a
// disabled listener or pool closes the port, a disabled or backup member or a weight of 0 takes
// a Node out of rotation, and a monitor with another method, other codes or disabled marks
// members down, or up, wrongly. planPool compares them at every sync and writes only the field
// that differs, in the update of its object.

// wantedUp is the admin_state_up of every listener, pool, monitor and member ccm makes.
const wantedUp = true

// memberSettings are a member's weight, backup and admin_state_up.
type memberSettings struct {
	Weight     int
	Backup, Up bool
}

// wantedMemberSettings: every member ccm makes is an enabled, non-backup member of weight 1.
// No annotation sets a weight (the upstream CCM has none either): Nodes serve alike.
var wantedMemberSettings = memberSettings{Weight: 1, Up: wantedUp}

// memberState is an observed member with its settings.
type memberState struct {
	ID, Address string
	Port        int
	memberSettings
}

// memberFix is the update of one member: the wanted value of each setting that differs (nil:
// not written).
type memberFix struct {
	ID, Address string
	Port        int
	Weight      *int
	Backup, Up  *bool
}

// planMemberSettings compares the settings of each observed member that is a wanted one
// (address and port; a member not wanted goes with the member update anyway) with want. Pure.
func planMemberSettings(key string, want memberSettings, wanted []memberKey, have []memberState) (fixes []memberFix, repairs []string) {
	for _, m := range have {
		if !wantedMember(wanted, m.Address, m.Port) {
			continue
		}
		f := memberFix{ID: m.ID, Address: m.Address, Port: m.Port}
		var was []string
		if m.Weight != want.Weight {
			f.Weight, was = &want.Weight, append(was, fmt.Sprintf("weight=%d", m.Weight))
		}
		if m.Backup != want.Backup {
			f.Backup, was = &want.Backup, append(was, fmt.Sprintf("backup=%t", m.Backup))
		}
		if m.Up != want.Up {
			f.Up, was = &want.Up, append(was, fmt.Sprintf("admin_state_up=%t", m.Up))
		}
		if len(was) > 0 {
			fixes = append(fixes, f)
			repairs = append(repairs, fmt.Sprintf("member %s:%d of %s was %s", m.Address, m.Port, key, strings.Join(was, " ")))
		}
	}
	return fixes, repairs
}

func wantedMember(wanted []memberKey, address string, port int) bool {
	for _, w := range wanted {
		if w.Address == address && w.Port == port {
			return true
		}
	}
	return false
}

// monitorHTTP is the http_method and expected_codes ccm creates a monitor of type typ with,
// and then compares: GET and 200 for the HTTP and HTTPS types (what the upstream CCM sends, and
// Octavia's defaults), none for the others, which have neither.
func monitorHTTP(typ string) (method, codes string) {
	if typ == "HTTP" || typ == "HTTPS" {
		return "GET", "200"
	}
	return "", ""
}

// monitorChange is a health monitor update: the wanted value of each field that differs, nil
// for the others, which are not written.
type monitorChange struct {
	Delay, Timeout, MaxRetries, MaxRetriesDown *int
	URLPath, HTTPMethod, ExpectedCodes         *string
	Up                                         *bool
	// timings, others: the observed values of the differing fields, for the repair's message.
	// A timing differs when an annotation changed (then no drift); the others ccm alone sets.
	timings, others []string
}

// diffMonitor is the update that makes the observed monitor h the wanted w (same type). Pure.
func diffMonitor(w, h *observedMonitor) monitorChange {
	var c monitorChange
	ints := []struct {
		name      string
		want, got int
		to        **int
	}{{"delay", w.Delay, h.Delay, &c.Delay}, {"timeout", w.Timeout, h.Timeout, &c.Timeout},
		{"retries", w.MaxRetries, h.MaxRetries, &c.MaxRetries}, {"retries-down", w.MaxRetriesDown, h.MaxRetriesDown, &c.MaxRetriesDown}}
	for _, f := range ints {
		if f.want != f.got {
			v := f.want
			*f.to, c.timings = &v, append(c.timings, fmt.Sprintf("%s=%d", f.name, f.got))
		}
	}
	type str struct {
		name      string
		want, got string
		to        **string
	}
	strs := []str{{"url_path", w.URLPath, h.URLPath, &c.URLPath}}
	if w.HTTPMethod != "" {
		// Only the types that have them: nothing could write another type's "none" (an empty
		// value is not sent), so comparing it would write at every sync.
		strs = append(strs, str{"http_method", w.HTTPMethod, h.HTTPMethod, &c.HTTPMethod}, str{"expected_codes", w.ExpectedCodes, h.ExpectedCodes, &c.ExpectedCodes})
	}
	for _, f := range strs {
		if f.want != f.got {
			v := f.want
			*f.to, c.others = &v, append(c.others, fmt.Sprintf("%s=%q", f.name, f.got))
		}
	}
	if w.Up != h.Up {
		v := w.Up
		c.Up, c.others = &v, append(c.others, fmt.Sprintf("admin_state_up=%t", h.Up))
	}
	return c
}

// any: the update writes a field.
func (c monitorChange) any() bool { return len(c.timings)+len(c.others) > 0 }

// repair is the message of the out-of-band part of c ("" if none): the timings only when no
// annotation sets them (byAnnotation).
func (c monitorChange) repair(key string, byAnnotation bool) string {
	was := c.others
	if !byAnnotation {
		was = append(append([]string(nil), c.timings...), c.others...)
	}
	if len(was) == 0 {
		return ""
	}
	return fmt.Sprintf("health monitor of %s settings were %s", key, strings.Join(was, " "))
}

// upRepair is the message about an object of kind found disabled (or enabled) out of band.
func upRepair(kind, key string, have bool) string {
	return fmt.Sprintf("%s %s admin_state_up was %t", kind, key, have)
}
