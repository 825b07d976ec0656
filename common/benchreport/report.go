// Package benchreport is the one format of `make bench` results: every provider's bench writes
// a Report as bin/bench/NAME.{json,md,svg}, and Summary merges the JSON files of all providers
// into one table. Rows carry stable keys (the Key* constants for the scenarios of issue 9), so
// the same measure lines up across providers.
package benchreport

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// SchemaVersion is written into every Report; Read rejects other versions.
const SchemaVersion = 1

// Keys of the measures every provider's bench should report when it runs the scenario.
const (
	KeyNodeInitNodes        = "node_init.nodes" // Nodes registered at once
	KeyNodeInitP50          = "node_init.p50_s" // time to initialised, median
	KeyNodeInitP99          = "node_init.p99_s" // time to initialised, 99th percentile
	KeyNodeInitAll          = "node_init.all_s" // until the last one
	KeyNodeInitCallsPerNode = "node_init.cloud_calls_per_node"
	KeyLBServices           = "lb.services" // LoadBalancer Services created at once
	KeyLBP50                = "lb.p50_s"    // time to an address, median
	KeyLBP99                = "lb.p99_s"    // time to an address, 99th percentile
	KeyLBAll                = "lb.all_s"    // until the last one
	KeyLBCallsPerService    = "lb.cloud_calls_per_service"
	KeyLBAllInD             = "lb.all_in_d"          // with a provisioning delay D: total time / D
	KeyRestartWrites        = "restart.cloud_writes" // restart with nothing changed
	KeyRestartReads         = "restart.cloud_reads"
	KeyNodeAddedLBs         = "node_added.lbs" // LB Services when one Node is added
	KeyNodeAddedWrites      = "node_added.cloud_writes"
	KeyNodeAddedAll         = "node_added.all_updated_s" // until every LB has the Node
	KeyMemoryPeakRSS        = "memory.peak_rss_mib"      // ccm peak RSS with many objects
)

// Report is one provider's bench run.
type Report struct {
	Schema   int       `json:"schema"`
	Provider string    `json:"provider"`
	Started  time.Time `json:"started"`
	Command  string    `json:"command,omitempty"` // how to reproduce the run
	Rows     []Row     `json:"rows"`
	// Latencies are the per-object samples the chart draws (seconds).
	Latencies []Distribution `json:"latencies,omitempty"`
}

// Row is one measure.
type Row struct {
	Key      string  `json:"key"`      // stable id, a Key* constant or "provider.something"
	Scenario string  `json:"scenario"` // e.g. "restart, nothing changed"
	Measure  string  `json:"measure"`  // e.g. "cloud writes"
	Value    float64 `json:"value"`
	Unit     string  `json:"unit,omitempty"` // "s", "MiB", or empty for a count
	Text     string  `json:"text,omitempty"` // shown instead of Value and Unit when set
	Target   string  `json:"target,omitempty"`
	Met      *bool   `json:"met,omitempty"` // whether Target is met, when the bench can tell
}

// Distribution is a latency sample set, one value per object.
type Distribution struct {
	Name    string    `json:"name"` // e.g. "time to initialised per Node (N=100)"
	Unit    string    `json:"unit"`
	Samples []float64 `json:"samples"`
}

// New starts a Report for provider.
func New(provider string) *Report {
	return &Report{Schema: SchemaVersion, Provider: provider, Started: time.Now().UTC()}
}

// Add appends a row and returns the Report, for chaining.
func (r *Report) Add(row Row) *Report {
	r.Rows = append(r.Rows, row)
	return r
}

// Met is a helper for Row.Met.
func Met(ok bool) *bool { return &ok }

// Percentile returns the q-quantile (0 < q <= 1) of samples by nearest rank; 0 for none.
func Percentile(samples []float64, q float64) float64 {
	if len(samples) == 0 {
		return 0
	}
	s := append([]float64(nil), samples...)
	sort.Float64s(s)
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// Validate checks what Summary relies on; errors name the field.
func (r *Report) Validate() error {
	var errs []error
	if r.Schema != SchemaVersion {
		errs = append(errs, fmt.Errorf("schema: want %d, got %d", SchemaVersion, r.Schema))
	}
	if r.Provider == "" || strings.ContainsAny(r.Provider, "/\\ ") {
		errs = append(errs, fmt.Errorf("provider: want a name without slashes or spaces, got %q", r.Provider))
	}
	for i, row := range r.Rows {
		if row.Key == "" {
			errs = append(errs, fmt.Errorf("rows[%d].key: empty", i))
		}
		if math.IsNaN(row.Value) || math.IsInf(row.Value, 0) {
			errs = append(errs, fmt.Errorf("rows[%d].value (%s): not a finite number", i, row.Key))
		}
	}
	for i, d := range r.Latencies {
		if d.Name == "" {
			errs = append(errs, fmt.Errorf("latencies[%d].name: empty", i))
		}
	}
	return errors.Join(errs...)
}

// Write writes dir/PROVIDER.json, .md and, when there are latencies, .svg.
func Write(dir string, r *Report) error {
	if err := r.Validate(); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	base := filepath.Join(dir, r.Provider)
	if err := os.WriteFile(base+".json", append(b, '\n'), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(base+".md", []byte(Markdown(r)), 0o644); err != nil {
		return err
	}
	if len(r.Latencies) > 0 {
		return os.WriteFile(base+".svg", SVG(r.Latencies), 0o644)
	}
	return nil
}

// Read reads and validates one Report.
func Read(path string) (*Report, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Report
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if err := r.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &r, nil
}
