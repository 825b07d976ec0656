package benchreport

import (
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"strings"
)

// FormatValue renders a row's value: its Text if set, else the number with its unit.
func FormatValue(row Row) string {
	if row.Text != "" {
		return row.Text
	}
	var n string
	switch {
	case row.Unit == "s":
		n = fmt.Sprintf("%.2f", row.Value)
	case row.Value == math.Trunc(row.Value) && math.Abs(row.Value) < 1e15:
		n = fmt.Sprintf("%.0f", row.Value)
	default:
		n = fmt.Sprintf("%.2f", row.Value)
	}
	if row.Unit != "" {
		n += " " + row.Unit
	}
	return n
}

func target(row Row) string {
	switch {
	case row.Target == "":
		return ""
	case row.Met == nil:
		return row.Target
	case *row.Met:
		return row.Target + " (met)"
	default:
		return row.Target + " (**not met**)"
	}
}

func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

// Markdown renders one Report as a table.
func Markdown(r *Report) string {
	var b strings.Builder
	fmt.Fprintf(&b, "## %s\n\n", r.Provider)
	if r.Command != "" {
		fmt.Fprintf(&b, "`%s` (%s)\n\n", r.Command, r.Started.Format("2006-01-02 15:04 MST"))
	}
	b.WriteString("| scenario | measure | value | target |\n| --- | --- | --- | --- |\n")
	for _, row := range r.Rows {
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", cell(row.Scenario), cell(row.Measure), cell(FormatValue(row)), cell(target(row)))
	}
	if len(r.Latencies) > 0 {
		fmt.Fprintf(&b, "\n![latency distributions](%s.svg)\n", r.Provider)
	}
	return b.String()
}

// standardLabels name the standard keys in the summary without any one provider's sizes
// (its scenario text has them: "100 Nodes at once"); the size rows show each one's.
var standardLabels = map[string]string{
	KeyNodeInitNodes:        "N Nodes at once: Nodes initialised",
	KeyNodeInitP50:          "N Nodes at once: time to initialised p50",
	KeyNodeInitP99:          "N Nodes at once: time to initialised p99",
	KeyNodeInitAll:          "N Nodes at once: all initialised",
	KeyNodeInitCallsPerNode: "N Nodes at once: cloud calls per Node",
	KeyLBServices:           "M LB Services at once: Services addressed",
	KeyLBP50:                "M LB Services at once: time to an address p50",
	KeyLBP99:                "M LB Services at once: time to an address p99",
	KeyLBAll:                "M LB Services at once: all addressed",
	KeyLBCallsPerService:    "M LB Services at once: cloud calls per Service",
	KeyLBAllInD:             "M LB Services with provisioning delay D: total time in D",
	KeyRestartWrites:        "restart, nothing changed: cloud writes",
	KeyRestartReads:         "restart, nothing changed: cloud reads",
	KeyNodeAddedLBs:         "one Node added: LBs updated",
	KeyNodeAddedWrites:      "one Node added: cloud writes",
	KeyNodeAddedAll:         "one Node added: until every LB has it",
	KeyMemoryPeakRSS:        "memory: ccm peak RSS",
}

// Summary merges several providers' Reports into one Markdown page: a table with one column
// per provider for every key (in the order they first appear; standard keys under a label
// without sizes, since those differ between providers), then each provider's own table.
func Summary(reports []*Report) string {
	rs := append([]*Report(nil), reports...)
	sort.Slice(rs, func(i, j int) bool { return rs[i].Provider < rs[j].Provider })
	type line struct {
		label, target string
		values        map[string]string
	}
	var order []string
	lines := map[string]*line{}
	for _, r := range rs {
		for _, row := range r.Rows {
			l := lines[row.Key]
			if l == nil {
				label := standardLabels[row.Key]
				if label == "" {
					label = row.Scenario + ": " + row.Measure
				}
				l = &line{label: label, target: row.Target, values: map[string]string{}}
				lines[row.Key] = l
				order = append(order, row.Key)
			}
			v := FormatValue(row)
			if row.Met != nil && !*row.Met {
				v = "**" + v + "**"
			}
			l.values[r.Provider] = v
		}
	}
	var b strings.Builder
	b.WriteString("# Bench summary\n\nBold: target not met. Empty: the provider's bench does not run that scenario.\n\n| measure | target |")
	for _, r := range rs {
		fmt.Fprintf(&b, " %s |", cell(r.Provider))
	}
	b.WriteString("\n| --- | --- |" + strings.Repeat(" --- |", len(rs)) + "\n")
	for _, k := range order {
		l := lines[k]
		fmt.Fprintf(&b, "| %s | %s |", cell(l.label), cell(l.target))
		for _, r := range rs {
			fmt.Fprintf(&b, " %s |", cell(l.values[r.Provider]))
		}
		b.WriteString("\n")
	}
	for _, r := range rs {
		b.WriteString("\n" + Markdown(r))
	}
	return b.String()
}

// ReadDir reads every *.json in dir as a Report; a file that is not one is an error.
func ReadDir(dir string) ([]*Report, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	var out []*Report
	for _, p := range paths {
		r, err := Read(p)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}
