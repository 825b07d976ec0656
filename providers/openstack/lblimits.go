package openstack

import (
	"fmt"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// Per-Service listener limits and health monitor settings, as upstream reads them
// (makeSvcConf): each annotation overrides a default, and the listener or monitor is updated in
// place when it differs (these fields are not in the listener's fingerprint, so a change never
// recreates a listener).
const (
	annConnLimit            = annPrefix + "connection-limit"
	annTimeoutClientData    = annPrefix + "timeout-client-data"
	annTimeoutMemberConnect = annPrefix + "timeout-member-connect"
	annTimeoutMemberData    = annPrefix + "timeout-member-data"
	annTimeoutTCPInspect    = annPrefix + "timeout-tcp-inspect"
	annMonitorDelay         = annPrefix + "health-monitor-delay"
	annMonitorTimeout       = annPrefix + "health-monitor-timeout"
	annMonitorMaxRetries    = annPrefix + "health-monitor-max-retries"
	annMonitorRetriesDown   = annPrefix + "health-monitor-max-retries-down"
)

var limitAnnotations = []string{annConnLimit, annTimeoutClientData, annTimeoutMemberConnect, annTimeoutMemberData, annTimeoutTCPInspect}

var monitorAnnotations = []string{annMonitorDelay, annMonitorTimeout, annMonitorMaxRetries, annMonitorRetriesDown}

// listenerLimits are a listener's connection_limit and timeouts (milliseconds). Timeouts is
// false with the OVN provider, which has none (upstream sets them only where Octavia supports
// them): they are then neither written nor compared.
type listenerLimits struct {
	ConnLimit                                         int
	Timeouts                                          bool
	ClientData, MemberConnect, MemberData, TCPInspect int
	// byAnnotation: one of the annotations is set; a difference is then the Service's, not
	// drift.
	byAnnotation bool
}

// monitorValues are a health monitor's timing, as compared and written.
type monitorValues struct {
	Delay, Timeout, MaxRetries, MaxRetriesDown int
}

// intAnns reads the Service's integer annotations, adding a warning to warn for each bad value.
type intAnns struct {
	svc  *v1.Service
	warn *[]string
}

// get reads the integer annotation key within [lo, hi]; a bad value is a warning and def
// stands (upstream logs it and uses its default too).
func (a intAnns) get(key string, def, lo, hi int) int {
	v, ok := a.svc.Annotations[key]
	if !ok {
		return def
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < lo || n > hi {
		*a.warn = append(*a.warn, fmt.Sprintf("annotation %s: %q is not an integer from %d to %d; using %d", key, v, lo, hi, def))
		return def
	}
	return n
}

// limitsOf are the Service's listener limits: its annotations, else Octavia's defaults (which
// upstream writes explicitly): no connection limit, 50 s client and member data, 5 s member
// connect, 0 TCP inspect.
func limitsOf(svc *v1.Service, provider string, warn *[]string) listenerLimits {
	const maxMillis = 31536000000 // Octavia's bound: one year
	ann := intAnns{svc, warn}
	l := listenerLimits{ConnLimit: ann.get(annConnLimit, -1, -1, 1<<31-1), Timeouts: provider != providerOVN}
	if l.Timeouts {
		l.ClientData = ann.get(annTimeoutClientData, 50000, 0, maxMillis)
		l.MemberConnect = ann.get(annTimeoutMemberConnect, 5000, 0, maxMillis)
		l.MemberData = ann.get(annTimeoutMemberData, 50000, 0, maxMillis)
		l.TCPInspect = ann.get(annTimeoutTCPInspect, 0, 0, maxMillis)
	}
	for _, a := range limitAnnotations {
		if _, ok := svc.Annotations[a]; ok {
			l.byAnnotation = true
		}
	}
	return l
}

// monitorValuesOf are the monitor timings: the annotations, else the config's (seconds).
func monitorValuesOf(svc *v1.Service, cfg LBConfig, warn *[]string) (monitorValues, bool) {
	d := monitorValues{Delay: secs(cfg.MonitorDelay.Seconds()), Timeout: secs(cfg.MonitorTimeout.Seconds()),
		MaxRetries: cfg.MonitorMaxRetries, MaxRetriesDown: cfg.maxRetriesDown()}
	ann := intAnns{svc, warn}
	v := monitorValues{
		Delay:          ann.get(annMonitorDelay, d.Delay, 1, 1<<31-1),
		Timeout:        ann.get(annMonitorTimeout, d.Timeout, 1, 1<<31-1),
		MaxRetries:     ann.get(annMonitorMaxRetries, d.MaxRetries, 1, 10),
		MaxRetriesDown: ann.get(annMonitorRetriesDown, d.MaxRetriesDown, 1, 10),
	}
	if v.Timeout > v.Delay {
		*warn = append(*warn, fmt.Sprintf("annotation %s: %d is more than the delay %d (Octavia refuses it); using delay %d and timeout %d", annMonitorTimeout, v.Timeout, v.Delay, d.Delay, d.Timeout))
		v.Delay, v.Timeout = d.Delay, d.Timeout
	}
	return v, v != d
}

// maxRetriesDown is [LoadBalancer] monitor-max-retries-down, 3 when unset or 0 (upstream's
// default; upstream sends 0 as no value, so Octavia's default 3 applies). Above 10 is a config
// error (Validate).
func (c LBConfig) maxRetriesDown() int {
	if c.MonitorMaxRetriesDown == nil || *c.MonitorMaxRetriesDown == 0 {
		return 3
	}
	return int(*c.MonitorMaxRetriesDown)
}

// same compares wanted limits (l) with observed ones (o): the connection limit always, the
// timeouts only where they are written.
func (l listenerLimits) same(o listenerLimits) bool {
	if l.ConnLimit != o.ConnLimit {
		return false
	}
	return !l.Timeouts || (l.ClientData == o.ClientData && l.MemberConnect == o.MemberConnect && l.MemberData == o.MemberData && l.TCPInspect == o.TCPInspect)
}

func (l listenerLimits) String() string {
	return fmt.Sprintf("connection_limit=%d timeouts=%d/%d/%d/%d", l.ConnLimit, l.ClientData, l.MemberConnect, l.MemberData, l.TCPInspect)
}

// opts are the listener create/update fields: the connection limit, and the timeouts unless
// the provider has none (nil: not sent).
func (l listenerLimits) opts() (conn, clientData, memberConnect, memberData, tcpInspect *int) {
	conn = &l.ConnLimit
	if !l.Timeouts {
		return conn, nil, nil, nil, nil
	}
	return conn, &l.ClientData, &l.MemberConnect, &l.MemberData, &l.TCPInspect
}
