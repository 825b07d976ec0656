package main

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// getFunc fetches a path from the ccm's secure port with a bearer token: (*testenv.CCM).Get.
type getFunc func(path, token string) (int, string, error)

// metrics is one parsed scrape of /metrics: every sample line, as written, with its value.
type metrics struct {
	samples []sample
}

type sample struct {
	series string // name{labels} as the line has it
	value  float64
}

// scrape reads /metrics once. A scrape that fails in any way is an error naming what failed,
// never a zero: a bench that read a refused connection as "0 writes" would report its best
// figure exactly when it measured nothing.
func scrape(get getFunc, token string) (*metrics, error) {
	code, body, err := get("/metrics", token)
	if err != nil {
		return nil, fmt.Errorf("scraping the ccm's /metrics: %w", err)
	}
	if code != http.StatusOK {
		return nil, fmt.Errorf("scraping the ccm's /metrics: HTTP %d: %s", code, firstLine(body))
	}
	m, err := parseMetrics(body)
	if err != nil {
		return nil, fmt.Errorf("scraping the ccm's /metrics: %w", err)
	}
	return m, nil
}

// parseMetrics reads the Prometheus text format strictly: every line is a comment, blank, or
// `series value [timestamp]` with a number for value. A body with no sample at all (an empty
// answer, an HTML page) is an error too: the ccm always exports its process and Go metrics.
func parseMetrics(body string) (*metrics, error) {
	m := &metrics{}
	for i, line := range strings.Split(body, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		// Label values may hold spaces: the value follows the closing brace, if any.
		series, rest := line, ""
		if j := strings.LastIndexByte(line, '}'); j >= 0 {
			series, rest = line[:j+1], line[j+1:]
		} else if j := strings.IndexByte(line, ' '); j >= 0 {
			series, rest = line[:j], line[j:]
		}
		f := strings.Fields(rest)
		if len(f) < 1 || len(f) > 2 || !validSeries(series) {
			return nil, fmt.Errorf("line %d is not a metric sample: %q", i+1, shorten(line, 120))
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			return nil, fmt.Errorf("line %d: value %q is not a number", i+1, f[0])
		}
		m.samples = append(m.samples, sample{series: series, value: v})
	}
	if len(m.samples) == 0 {
		return nil, fmt.Errorf("the answer holds no metric sample (%d bytes: %q)", len(body), shorten(body, 80))
	}
	return m, nil
}

func validSeries(s string) bool {
	name, labels, hasLabels := strings.Cut(s, "{")
	if name == "" || (hasLabels && !strings.HasSuffix(labels, "}")) {
		return false
	}
	for i, r := range name {
		ok := r == '_' || r == ':' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (i > 0 && r >= '0' && r <= '9')
		if !ok {
			return false
		}
	}
	return true
}

// sum adds the samples whose series starts with prefix (a metric name with some of its
// labels, e.g. `ccm_cloud_api_requests_total{operation="Update"`). No such sample is 0: a
// counter with no children yet is absent from /metrics.
func (m *metrics) sum(prefix string) float64 {
	var s float64
	for _, x := range m.samples {
		if strings.HasPrefix(x.series, prefix) {
			s += x.value
		}
	}
	return s
}

// sumWith adds the samples of metric name whose labels include every one of labels (each
// written as in the exposition, e.g. `verb="GET"`).
func (m *metrics) sumWith(name string, labels ...string) float64 {
	var s float64
next:
	for _, x := range m.samples {
		if !strings.HasPrefix(x.series, name+"{") {
			continue
		}
		for _, l := range labels {
			if !strings.Contains(x.series, "{"+l) && !strings.Contains(x.series, ","+l) {
				continue next
			}
		}
		s += x.value
	}
	return s
}

// value is the sample of a series without labels (go_memstats_heap_inuse_bytes), 0 if absent.
func (m *metrics) value(series string) float64 {
	for _, x := range m.samples {
		if x.series == series {
			return x.value
		}
	}
	return 0
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return shorten(line, 120)
}

func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
